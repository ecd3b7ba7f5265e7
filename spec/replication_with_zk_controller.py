"""One replicated partition whose leadership comes from the ZooKeeper-era controller.

What it is
    The composition of the replicated partition (`spec.partition`) with the ZooKeeper-era
    controller's pieces (`spec.controller.zookeeper`: sessions, the partition state znode with
    its zkVersion, watches; `spec.controller.zk_requests`: LeaderAndIsr requests and their
    channels; `spec.controller.zk_states`: the election strategies), replacing the partition
    spec's placeholder controller. The partition spec already describes this generation's
    replication; what the composition adds is how slowly and through what the decisions
    travel:

    * A broker becomes leader or follower only by accepting a LeaderAndIsr request with a
      newer leader epoch from its channel (`ReplicaManager.becomeLeaderOrFollower`), applied
      as the partition spec's `ReplicaBecomeLeaderOrFollower` applies it; requests queue per
      broker, and one from before a bounce is refused by its broker epoch (KIP-380).
    * The controller learns of a crash only when the broker's ZooKeeper session expires and
      it handles the BrokerChange event the watch queued (`onBrokerFailure`: the ISR loses the
      broker, a leader is chosen by `offline_election`), and of a restart the same way
      (`onBrokerStartup`: LeaderAndIsr to the new broker, an offline partition elects).
    * The leader changes the ISR itself by a conditional write of the state znode with the
      zkVersion it knows (BADVERSION when it is stale), then notifies the controller, which
      refreshes its cached leadership only when it handles the IsrChangeNotification event:
      until then the controller's context holds an ISR that ZooKeeper no longer holds.
    * The controller's elections read the znode and write it back in one atomic
      read-modify-write (what Kafka's retry on BADVERSION achieves), bumping the leader epoch.

Not composed (yet): controller failover and zombie controllers (one controller, broker R,
whose session never expires), zombie brokers (the session of a live broker never expires),
lost or duplicated requests, UpdateMetadata and StopReplica, controlled shutdown and
reassignment (a leadership move is a preferred-replica-style election of a chosen live ISR
member).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from spec import partition
from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.controller.zk_requests import (
    Request,
    RequestKind,
    Rule,
    Verdict,
    accepts_leader_epoch,
    broker_verdict,
    with_request,
)
from spec.controller.zk_states import offline_election
from spec.controller.zookeeper import (
    NO_LEADER,
    NO_SESSION,
    Event,
    PartitionZnode,
    ZooKeeper,
    end_session,
    open_session,
    write_partition,
)
from spec.partition import (
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    ControllerState,
    FetchPhase,
    FollowerHandleFetchResponse,
    FollowerTruncate,
    History,
    LeaderAdvanceLogStartOffset,
    LeaderHandleFetch,
    LeaderShrinkIsr,
    PartitionConfig,
    PartitionState,
    ProducerSend,
    Replica,
    ReplicaBecomeLeaderOrFollower,
    Role,
)
from spec.replication_with_controller import ComposedConfig, partition_config
from spec.types import ReplicaId

_BROKER_EPOCH_RULES = frozenset({Rule.BROKER_EPOCHS, Rule.STALE_CONTROLLER_EPOCH})
"""The broker-side request checks applied (KIP-380 broker epochs; controller epochs)."""

CONTROLLER_EPOCH = 1
"""The one controller's epoch (controller failover is not composed)."""


# ---------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ZkComposedState:
    """The replicas, ZooKeeper, the controller's context (live brokers and cached
    leadership as it last read them, its pending events), the LeaderAndIsr requests on
    their way to each broker, the zkVersion each broker knows, and the ghost history."""

    replicas: tuple[Replica, ...]
    zk: ZooKeeper
    live: tuple[tuple[int, int], ...]  # the controller's live brokers with their epochs
    cached: PartitionZnode  # the controller's cached leadership (`partitionLeadershipInfo`)
    events: frozenset[Event]  # the controller's pending events (a set: they re-read ZooKeeper)
    channels: tuple[tuple[Request, ...], ...]  # per broker, LeaderAndIsr requests in flight
    zk_versions: tuple[int, ...]  # per broker: the state znode's version it knows
    leader_moves: int = 0
    history: History = field(default_factory=History)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    _partition: PartitionState | None = field(default=None, init=False, repr=False, compare=False)


@memoized
def controller_state(znode: PartitionZnode) -> ControllerState:
    """The state znode as the partition spec's `ControllerState`."""
    leader = ReplicaId(znode.leader) if znode.leader != NO_LEADER else None
    return ControllerState(leader, znode.leader_epoch, frozenset(znode.isr))


def as_partition_state(state: ZkComposedState) -> PartitionState:
    """The replicas and history with ZooKeeper's partition state: what `spec.partition`'s
    functions, invariants and views read."""
    projected = state._partition
    if projected is None:
        znode = state.zk.partition
        assert znode is not None
        projected = PartitionState(state.replicas, controller_state(znode), state.history)
        object.__setattr__(state, "_partition", projected)  # a cache, like `_hash`
    return projected


def _znode(state: ZkComposedState) -> PartitionZnode:
    znode = state.zk.partition
    assert znode is not None
    return znode


def initial_state(config: ComposedConfig) -> ZkComposedState:
    """Brokers 0..R-1 host the partition, broker R is the controller; every session is
    open (broker b's epoch is b + 1), broker 0 leads epoch 0 with the full ISR and every
    replica has applied it."""
    replicas = tuple(config.replica_ids)
    count = len(replicas)
    znode = PartitionZnode(0, 0, replicas, CONTROLLER_EPOCH, 0)
    zk = ZooKeeper(
        next_zxid=count + 2,
        sessions=tuple(range(1, count + 2)),
        controller=count,
        controller_epoch=CONTROLLER_EPOCH,
        partition=znode,
        assignment=replicas,
        watchers=frozenset({count}),
    )
    start = partition.initial_state(partition_config(config))
    return ZkComposedState(
        start.replicas,
        zk,
        tuple((b, b + 1) for b in replicas),
        znode,
        frozenset(),
        tuple(() for _ in replicas),
        tuple(0 for _ in replicas),
        0,
        start.history,
    )


# ---------------------------------------------------------------------------------------
# Actions (the partition's classes, and these)
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class SessionExpire:
    """ZooKeeper expires the session of `broker`, whose process is down."""

    broker: int


@fast_init
@dataclass(frozen=True, slots=True)
class ControllerHandleBrokerChange:
    """The controller handles its BrokerChange event (`processBrokerChange`)."""


@fast_init
@dataclass(frozen=True, slots=True)
class ControllerHandleIsrChange:
    """The controller handles its IsrChangeNotification event (refreshes its cache)."""


@fast_init
@dataclass(frozen=True, slots=True)
class BrokerReceiveLeaderAndIsr:
    """`broker` handles the first LeaderAndIsr request of its channel."""

    broker: int


Action = (
    ProducerSend
    | LeaderHandleFetch
    | FollowerHandleFetchResponse
    | FollowerTruncate
    | LeaderShrinkIsr
    | ClockTick
    | LeaderAdvanceLogStartOffset
    | ControllerMoveLeadership
    | BrokerCrash
    | BrokerRestart
    | SessionExpire
    | ControllerHandleBrokerChange
    | ControllerHandleIsrChange
    | BrokerReceiveLeaderAndIsr
)


def _set(items: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*items[:index], value, *items[index + 1 :])


def _with_replicas(state: ZkComposedState, after: PartitionState) -> ZkComposedState:
    return replace(state, replicas=after.replicas, history=after.history)


# ---------------------------------------------------------------------------------------
# Replica-side actions
# ---------------------------------------------------------------------------------------


def _on_replicas(
    function: Callable[[PartitionConfig, PartitionState, Any], PartitionState | None],
    config: ComposedConfig,
    state: ZkComposedState,
    action: Any,
) -> ZkComposedState | None:
    """Apply a `spec.partition` action; an ISR it writes becomes the leader's conditional
    write of the state znode with the zkVersion it knows, and an IsrChangeNotification."""
    projected = as_partition_state(state)
    after = function(partition_config(config), projected, action)
    if after is None:
        return None
    if after.controller is projected.controller:
        return _with_replicas(state, after)
    # Only the leader of ZooKeeper's epoch gets here (`_is_true_leader`); its write fails
    # with BADVERSION when the zkVersion it knows is stale (a LeaderAndIsr built from the
    # controller's cached leadership, which missed an ISR change: KAFKA-2729's stuck ISR).
    znode = _znode(state)
    leader = znode.leader
    assert after.controller.leader_epoch == znode.leader_epoch and leader != NO_LEADER
    isr = tuple(sorted(after.controller.isr))
    written = PartitionZnode(leader, znode.leader_epoch, isr, znode.controller_epoch, znode.zk_version + 1)
    zk = write_partition(state.zk, state.zk_versions[leader], written)
    if zk is None:
        if not isinstance(action, LeaderHandleFetch):
            return None  # the shrink is not made; the leader keeps its ISR
        return _fetch_without_expansion(config, state, after, leader)
    return replace(
        _with_replicas(state, after),
        zk=zk,
        zk_versions=_set(state.zk_versions, leader, written.zk_version),
        events=state.events | {Event.ISR_CHANGE},
    )


def _fetch_without_expansion(
    config: ComposedConfig, state: ZkComposedState, after: PartitionState, leader_id: int
) -> ZkComposedState:
    """A fetch whose ISR expansion failed (BADVERSION): the leader keeps its ISR, its HW is
    what that ISR allows, and the response carries that HW."""
    old_isr = state.replicas[leader_id].isr
    leader = replace(after.replicas[leader_id], isr=old_isr)
    reverted = PartitionState(
        _set(after.replicas, leader_id, leader), as_partition_state(state).controller, after.history
    )
    reverted = partition.advance_leader_high_watermark(
        partition_config(config), reverted, ReplicaId(leader_id)
    )
    high_watermark = reverted.replicas[leader_id].log.high_watermark
    replicas = list(reverted.replicas)
    for replica_id, replica in enumerate(replicas):
        response = replica.fetch_in_flight
        if response is not None and replica.fetch_in_flight is not state.replicas[replica_id].fetch_in_flight:
            replicas[replica_id] = replace(
                replica, fetch_in_flight=replace(response, leader_high_watermark=high_watermark)
            )
    return replace(state, replicas=tuple(replicas), history=reverted.history)


def producer_send(
    config: ComposedConfig, state: ZkComposedState, action: ProducerSend
) -> ZkComposedState | None:
    """`spec.partition.producer_send` (a zombie leader accepts writes until a LeaderAndIsr demotes it)."""
    return _on_replicas(partition.producer_send, config, state, action)


def leader_handle_fetch(
    config: ComposedConfig, state: ZkComposedState, action: LeaderHandleFetch
) -> ZkComposedState | None:
    """`spec.partition.leader_handle_fetch`; an ISR expansion is the leader's znode write."""
    return _on_replicas(partition.leader_handle_fetch, config, state, action)


def follower_handle_fetch_response(
    config: ComposedConfig, state: ZkComposedState, action: FollowerHandleFetchResponse
) -> ZkComposedState | None:
    """`spec.partition.follower_handle_fetch_response`."""
    return _on_replicas(partition.follower_handle_fetch_response, config, state, action)


def follower_truncate(
    config: ComposedConfig, state: ZkComposedState, action: FollowerTruncate
) -> ZkComposedState | None:
    """`spec.partition.follower_truncate`."""
    return _on_replicas(partition.follower_truncate, config, state, action)


def leader_shrink_isr(
    config: ComposedConfig, state: ZkComposedState, action: LeaderShrinkIsr
) -> ZkComposedState | None:
    """`spec.partition.leader_shrink_isr`; the shrink is the leader's znode write."""
    return _on_replicas(partition.leader_shrink_isr, config, state, action)


def clock_tick(config: ComposedConfig, state: ZkComposedState, action: ClockTick) -> ZkComposedState | None:
    """`spec.partition.clock_tick`."""
    return _on_replicas(partition.clock_tick, config, state, action)


def leader_advance_log_start_offset(
    config: ComposedConfig, state: ZkComposedState, action: LeaderAdvanceLogStartOffset
) -> ZkComposedState | None:
    """`spec.partition.leader_advance_log_start_offset`."""
    return _on_replicas(partition.leader_advance_log_start_offset, config, state, action)


# ---------------------------------------------------------------------------------------
# Brokers, ZooKeeper and the controller
# ---------------------------------------------------------------------------------------


def broker_crash(
    config: ComposedConfig, state: ZkComposedState, action: BrokerCrash
) -> ZkComposedState | None:
    """The broker's process dies, its disk keeping offsets below `surviving_end`; its session
    lives on until ZooKeeper expires it, so nobody knows yet."""
    replica = state.replicas[action.replica]
    history = state.history
    if not replica.alive or history.crashes >= config.max_crashes:
        return None
    log = replica.log
    if not log.log_start_offset <= action.surviving_end <= log.log_end_offset:
        return None
    lossy = action.surviving_end < log.log_end_offset
    if lossy and history.lossy_crashes >= config.max_lossy_crashes:
        return None
    return replace(
        state,
        replicas=_set(state.replicas, action.replica, partition.crashed_replica(log, action.surviving_end)),
        history=partition.history_after_crash(history, lossy, False),
    )


def session_expire(
    config: ComposedConfig, state: ZkComposedState, action: SessionExpire
) -> ZkComposedState | None:
    """ZooKeeper expires a dead broker's session: its registration goes, the controller's
    BrokerChange watch fires."""
    if state.replicas[action.broker].alive or state.zk.sessions[action.broker] == NO_SESSION:
        return None
    zk, _ = end_session(state.zk, action.broker)
    return replace(state, zk=zk, events=state.events | {Event.BROKER_CHANGE})


def broker_restart(
    config: ComposedConfig, state: ZkComposedState, action: BrokerRestart
) -> ZkComposedState | None:
    """A new process starts with the log its disk kept and registers with a new session
    (its broker epoch) once the old one expired; the controller's watch fires."""
    replica = state.replicas[action.replica]
    if replica.alive or state.zk.sessions[action.replica] != NO_SESSION:
        return None
    zk, _ = open_session(state.zk, action.replica)
    return replace(
        state,
        replicas=_set(state.replicas, action.replica, replace(replica, alive=True)),
        zk=zk,
        zk_versions=_set(state.zk_versions, action.replica, -1),
        events=state.events | {Event.BROKER_CHANGE},
    )


def _send_leader_and_isr(
    state: ZkComposedState, znode: PartitionZnode, to: tuple[int, ...]
) -> ZkComposedState:
    """`sendRequestsToBrokers`: a LeaderAndIsr with `znode` to each broker of `to`, with the
    broker epoch the controller knows for it."""
    epochs = dict(state.live)
    channels = state.channels
    for broker in to:
        request = Request(
            RequestKind.LEADER_AND_ISR,
            CONTROLLER_EPOCH,
            epochs[broker],
            znode.leader,
            znode.leader_epoch,
            znode.isr,
            znode.zk_version,
            state.zk.assignment,
        )
        channels = _set(channels, broker, with_request(channels[broker], request))
    return replace(state, channels=channels)


def _elect(
    config: ComposedConfig, state: ZkComposedState, leader: int, isr: tuple[int, ...], unclean: bool
) -> ZkComposedState:
    """Write the controller's decision (a new leader epoch) and tell the live replicas."""
    znode = _znode(state)
    written = PartitionZnode(leader, znode.leader_epoch + 1, isr, CONTROLLER_EPOCH, znode.zk_version + 1)
    zk = write_partition(state.zk, znode.zk_version, written)
    assert zk is not None  # read and written in one step
    history = state.history
    if unclean:
        history = replace(history, unclean_elections=history.unclean_elections + 1)
    state = replace(state, zk=zk, cached=written, history=history)
    return _send_leader_and_isr(state, written, tuple(broker for broker, _ in state.live))


def controller_handle_broker_change(
    config: ComposedConfig, state: ZkComposedState, action: ControllerHandleBrokerChange
) -> ZkComposedState | None:
    """`processBrokerChange`: read `/brokers/ids`; brokers gone or re-registered with a new
    epoch are dead (`onBrokerFailure`: each leaves the ISR unless it is the last member; a
    leader is replaced by `offline_election`); new ones (`onBrokerStartup`) get the cached
    leadership in a LeaderAndIsr, and an offline partition elects."""
    if Event.BROKER_CHANGE not in state.events:
        return None
    known = dict(state.live)
    registered = {b: epoch for b, epoch in state.zk.registered() if b in config.replica_ids}
    dead = tuple(b for b in config.replica_ids if b in known and registered.get(b) != known[b])
    started = tuple(b for b in config.replica_ids if b in registered and known.get(b) != registered[b])
    # `onBrokerFailure` first, with the bounced brokers not yet live (KIP-380) ...
    surviving = tuple((b, epoch) for b, epoch in sorted(registered.items()) if b not in started)
    state = replace(state, live=surviving, events=state.events - {Event.BROKER_CHANGE})
    znode = _znode(state)
    leader, isr = znode.leader, znode.isr
    for failed in dead:
        if failed in isr and len(isr) > 1:
            isr = tuple(member for member in isr if member != failed)
        if leader == failed:
            leader = NO_LEADER
    state = _elect_if_offline(config, state, leader, isr)
    # ... then `onBrokerStartup`: the new brokers get the (updated) cached leadership, and an
    # offline partition elects among every live broker.
    state = replace(state, live=tuple(sorted(registered.items())))
    if started:
        state = _send_leader_and_isr(state, state.cached, started)
        znode = _znode(state)
        state = _elect_if_offline(config, state, znode.leader, znode.isr)
    return state


def _elect_if_offline(
    config: ComposedConfig, state: ZkComposedState, leader: int, isr: tuple[int, ...]
) -> ZkComposedState:
    """Write `leader` and `isr` if they differ from the znode, electing first by
    `offline_election` among the controller's live brokers when there is no leader."""
    unclean = False
    if leader == NO_LEADER:
        live = frozenset(broker for broker, _ in state.live)
        election = offline_election(state.zk.assignment, isr, live, config.unclean_leader_election)
        if election is not None:
            leader, isr, unclean = election.leader, election.isr, election.unclean
    znode = _znode(state)
    if (leader, isr) == (znode.leader, znode.isr):
        return state
    return _elect(config, state, leader, isr, unclean)


def controller_handle_isr_change(
    config: ComposedConfig, state: ZkComposedState, action: ControllerHandleIsrChange
) -> ZkComposedState | None:
    """`processIsrChangeNotification`: re-read the state znode into the cached leadership."""
    if Event.ISR_CHANGE not in state.events:
        return None
    return replace(state, cached=_znode(state), events=state.events - {Event.ISR_CHANGE})


def controller_move_leadership(
    config: ComposedConfig, state: ZkComposedState, action: ControllerMoveLeadership
) -> ZkComposedState | None:
    """A leader change without a failure (preferred-replica election of a chosen replica):
    the controller reads the znode and moves leadership to a live ISR member."""
    if not config.controller_elections or state.leader_moves >= config.max_leader_moves:
        return None
    znode = _znode(state)
    live = dict(state.live)
    if (
        action.new_leader == znode.leader
        or action.new_leader not in znode.isr
        or action.new_leader not in live
    ):
        return None
    state = replace(state, leader_moves=state.leader_moves + 1)
    return _elect(config, state, action.new_leader, znode.isr, False)


def broker_receive_leader_and_isr(
    config: ComposedConfig, state: ZkComposedState, action: BrokerReceiveLeaderAndIsr
) -> ZkComposedState | None:
    """`becomeLeaderOrFollower`: a request from before the broker's current registration
    is refused (STALE_BROKER_EPOCH); one with a newer leader epoch is applied as the
    partition spec applies a LeaderAndIsr; an older or equal one is ignored."""
    replica = state.replicas[action.broker]
    channel = state.channels[action.broker]
    if not replica.alive or not channel:
        return None
    request = channel[0]
    state = replace(state, channels=_set(state.channels, action.broker, channel[1:]))
    own_epoch = state.zk.sessions[action.broker]
    if broker_verdict(_BROKER_EPOCH_RULES, request, own_epoch, CONTROLLER_EPOCH) is not Verdict.ACCEPT:
        return state
    if not accepts_leader_epoch(request.leader_epoch, replica.leader_epoch):
        return state
    leader = ReplicaId(request.leader) if request.leader != NO_LEADER else None
    told = ControllerState(leader, request.leader_epoch, frozenset(request.isr))
    projected = PartitionState(state.replicas, told, state.history)
    after = partition.replica_become_leader_or_follower(
        partition_config(config), projected, ReplicaBecomeLeaderOrFollower(ReplicaId(action.broker))
    )
    assert after is not None
    return replace(
        state,
        replicas=after.replicas,
        history=after.history,
        zk_versions=_set(state.zk_versions, action.broker, request.zk_version),
    )


# ---------------------------------------------------------------------------------------
# The transition relation
# ---------------------------------------------------------------------------------------


_ACTION_FUNCTIONS: Mapping[type, Callable[[ComposedConfig, ZkComposedState, Any], ZkComposedState | None]] = {
    ProducerSend: producer_send,
    LeaderHandleFetch: leader_handle_fetch,
    FollowerHandleFetchResponse: follower_handle_fetch_response,
    FollowerTruncate: follower_truncate,
    LeaderShrinkIsr: leader_shrink_isr,
    ClockTick: clock_tick,
    LeaderAdvanceLogStartOffset: leader_advance_log_start_offset,
    ControllerMoveLeadership: controller_move_leadership,
    BrokerCrash: broker_crash,
    BrokerRestart: broker_restart,
    SessionExpire: session_expire,
    ControllerHandleBrokerChange: controller_handle_broker_change,
    ControllerHandleIsrChange: controller_handle_isr_change,
    BrokerReceiveLeaderAndIsr: broker_receive_leader_and_isr,
}


def step(config: ComposedConfig, state: ZkComposedState, action: Action) -> ZkComposedState | None:
    """Apply `action` if it is enabled in `state`; None otherwise."""
    return _ACTION_FUNCTIONS[type(action)](config, state, action)


_BROKER_CHANGE = ControllerHandleBrokerChange()
_ISR_CHANGE = ControllerHandleIsrChange()
_crash_action = memoized(BrokerCrash)
_retention_action = memoized(LeaderAdvanceLogStartOffset)


@memoized
def _per_replica(config: ComposedConfig) -> tuple[tuple[Any, ...], ...]:
    """Per replica: its produce actions, then fetch response, fetch, truncate, move,
    restart, session expiry, request delivery, and the shrinks of each follower."""
    table = []
    for r in config.replica_ids:
        replica = ReplicaId(r)
        table.append(
            (
                tuple(ProducerSend(replica, acks) for acks in config.producer_acks),
                FollowerHandleFetchResponse(replica),
                LeaderHandleFetch(replica),
                FollowerTruncate(replica),
                ControllerMoveLeadership(replica),
                BrokerRestart(replica),
                SessionExpire(r),
                BrokerReceiveLeaderAndIsr(r),
                tuple(LeaderShrinkIsr(replica, ReplicaId(f)) for f in config.replica_ids),
            )
        )
    return tuple(table)


def candidate_actions(config: ComposedConfig, state: ZkComposedState) -> Iterator[Action]:
    """A cheap superset of the enabled actions; `step` applies the full guards."""
    history = state.history
    znode = _znode(state)
    may_crash = history.crashes < config.max_crashes
    lossy_allowed = history.lossy_crashes < config.max_lossy_crashes
    may_move = config.controller_elections and state.leader_moves < config.max_leader_moves
    for replica_id, replica in enumerate(state.replicas):
        produce, response, fetch, truncate, move, restart, expire, receive, shrink = _per_replica(config)[
            replica_id
        ]
        if not replica.alive:
            yield expire if state.zk.sessions[replica_id] != NO_SESSION else restart
        else:
            if state.channels[replica_id]:
                yield receive
            if replica.role is Role.LEADER:
                if history.next_value < config.max_records:
                    yield from produce
                for follower in replica.isr:
                    if follower != replica_id:
                        yield shrink[follower]
                if config.retention:
                    for new_start in range(replica.log.log_start_offset + 1, replica.log.high_watermark + 1):
                        yield _retention_action(replica_id, new_start)
            elif replica.role is Role.FOLLOWER:
                if replica.fetch_in_flight is not None:
                    yield response
                elif replica.phase is FetchPhase.FETCHING:
                    yield fetch
                else:
                    yield truncate
            if may_crash:
                log = replica.log
                first_end = log.log_start_offset if lossy_allowed else log.log_end_offset
                for surviving_end in range(first_end, log.log_end_offset + 1):
                    yield _crash_action(replica_id, surviving_end)
        if may_move and replica_id in znode.isr and replica_id != znode.leader:
            yield move
    if Event.BROKER_CHANGE in state.events:
        yield _BROKER_CHANGE
    if Event.ISR_CHANGE in state.events:
        yield _ISR_CHANGE
    if partition.time_matters(partition_config(config), as_partition_state(state)):
        yield ClockTick()


# ---------------------------------------------------------------------------------------
# Properties: the partition spec's, on ZooKeeper's partition state
# ---------------------------------------------------------------------------------------


def _on_partition(function: Callable[[PartitionState], bool]) -> Callable[[ZkComposedState], bool]:
    def holds(state: ZkComposedState) -> bool:
        return function(as_partition_state(state))

    holds.__doc__ = function.__doc__
    return holds


def _step_on_partition(
    function: Callable[[PartitionState, PartitionState], bool],
) -> Callable[[ZkComposedState, ZkComposedState], bool]:
    def holds(before: ZkComposedState, after: ZkComposedState) -> bool:
        return function(as_partition_state(before), as_partition_state(after))

    holds.__doc__ = function.__doc__
    return holds


def maximal_isr_covers_controller_isr(state: ZkComposedState) -> bool:
    """The ISR the true leader's HW waits for contains the ISR in ZooKeeper, so the HW never
    passes a replica the controller could elect. Holds because the leader changes its cached
    ISR only after its own conditional write succeeded, and every controller write bumps the
    leader epoch (the leader is not the true leader until it accepts it)."""
    projected = as_partition_state(state)
    leader_id = partition.true_leader(projected)
    if leader_id is None:
        return True
    return projected.controller.isr <= state.replicas[leader_id].isr


INVARIANTS: dict[str, Callable[[ZkComposedState], bool]] = {
    **{name: _on_partition(function) for name, function in partition.INVARIANTS.items()},
    "maximal_isr_covers_controller_isr": maximal_isr_covers_controller_isr,
}
"""`spec.partition`'s invariants, with ZooKeeper's partition state as the controller's."""

STEP_PROPERTIES: dict[str, Callable[[ZkComposedState, ZkComposedState], bool]] = {
    name: _step_on_partition(function) for name, function in partition.STEP_PROPERTIES.items()
}

WITNESSES: dict[str, Callable[[ZkComposedState], bool]] = {
    name: _on_partition(function) for name, function in partition.WITNESSES.items()
}
