"""The definitional replicated partition: a leader and its followers as running brokers keep them.

What it is
    A small mutable holder around a `spec.partition.PartitionState`. Every operation is one
    action of the replication spec (`spec.partition`): the holder builds the action, asks
    `spec.partition.step` for the successor state and, when the action is enabled, replaces
    the held state with it. Nothing else ever changes the state, so every state this object
    is in is one the spec reaches, and a refused operation changes nothing. It is the oracle
    the partition conformance suite (`conformance.machines.partition`) compares other
    implementations against.

The configuration of a running broker
    `PartitionConfig` mixes Kafka settings with the model checker's exploration bounds
    (records produced, crashes, leader moves, ...). A running broker has no such bounds:
    `running_config` sets them out of the way and turns on everything the checker may leave
    off (controller elections, retention, every acks setting). One bound remains inside
    `producer_send`: it answers only the first NOT_ENOUGH_REPLICAS of a run (a second
    rejection teaches the checker nothing new). A broker answers every one, so before each
    produce the holder resets that ghost counter to zero; the counter appears in no guard
    but that one and in no invariant. `last_transition` records the state the spec was
    given, so a caller can check the step against the spec.

Values
    The spec draws a record's value itself: the n-th record any producer appended gets value
    n (`History.next_value`, which counts appended records, whether later lost or not, and
    not rejected or refused sends). `produce` takes the caller's value and requires it to be
    exactly that next value (`next_value`), raising ValueError otherwise: a caller that sends
    0, 1, 2, ... in the order its sends are appended sees its own values in every log, and no
    remapping table can go wrong. A send that is refused or rejected does not use up a value.

What it adds to the spec
    The bookkeeping a running broker owes its clients and the spec keeps only as ghost state:
    the answer to each produce (`ProduceResult`: the offset, NOT_ENOUGH_REPLICAS, or "waiting
    for the high watermark" for acks=all), the acks=all sends still waiting, those that will
    never be acknowledged (their leader was demoted or died, or the ISR shrank below
    min.insync.replicas before the HW passed them), and the acknowledged set.

What it is not
    Fast: every action copies tuples. There is no network, disk or clock: a command is an
    action, and the caller chooses the interleaving.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from spec import partition as spec_partition
from spec.partition import (
    Action,
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    FollowerHandleFetchResponse,
    FollowerTruncate,
    LeaderAdvanceLogStartOffset,
    LeaderHandleFetch,
    LeaderShrinkIsr,
    PartitionConfig,
    PartitionState,
    ProducerSend,
    ReplicaBecomeLeaderOrFollower,
    Role,
)
from spec.types import Acks, ErrorCode, ReplicaId, TruncationRule

UNBOUNDED = sys.maxsize
"""An exploration bound no running broker reaches."""


def running_config(
    *,
    replication_factor: int,
    min_insync_replicas: int,
    unclean_leader_election: bool,
    truncation: TruncationRule,
    replica_lag_ticks: int,
) -> PartitionConfig:
    """The spec configuration of a running broker with these Kafka settings: every
    exploration bound out of the way, every acks setting allowed, controller elections and
    retention possible."""
    if replication_factor < 1:
        raise ValueError(f"replication factor must be at least 1, got {replication_factor}")
    if min_insync_replicas < 1:
        raise ValueError(f"min.insync.replicas must be at least 1, got {min_insync_replicas}")
    if replica_lag_ticks < 0:
        raise ValueError(f"replica lag ticks must not be negative, got {replica_lag_ticks}")
    return PartitionConfig(
        replication_factor=replication_factor,
        min_insync_replicas=min_insync_replicas,
        producer_acks=(Acks.NONE, Acks.LEADER, Acks.ALL),
        unclean_leader_election=unclean_leader_election,
        truncation=truncation,
        replica_lag_ticks=replica_lag_ticks,
        max_records=UNBOUNDED,
        max_leader_moves=UNBOUNDED,
        max_crashes=UNBOUNDED,
        max_lossy_crashes=UNBOUNDED,
        controller_elections=True,
        retention=True,
    )


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """What a producer is told when its send is handled.

    acks=0 and acks=1: error NONE and the offset, completed. acks=all with the leader's ISR
    below min.insync.replicas: NOT_ENOUGH_REPLICAS, nothing appended, completed. acks=all
    appended: error NONE and the offset, not completed; the acknowledgement comes when the
    high watermark passes the record (possibly in this same step, with a one-member ISR) and
    shows in `ReferencePartition.acknowledged`.
    """

    error: ErrorCode
    offset: int | None  # None when nothing was appended
    completed: bool


@dataclass(frozen=True, slots=True)
class Transition:
    """One action as the spec saw it: the state it was given and what `step` returned."""

    before: PartitionState  # the held state, with the produce-rejection counter reset for sends
    action: Action
    after: PartitionState | None  # None: the action was not enabled, nothing changed


def _ready_for(action: Action, state: PartitionState) -> PartitionState:
    """The state to hand the spec for `action`: for a send, with the checker's
    produce-rejection bound reset (a broker answers every NOT_ENOUGH_REPLICAS)."""
    if isinstance(action, ProducerSend) and state.history.produce_rejections:
        return replace(state, history=replace(state.history, produce_rejections=0))
    return state


class ReferencePartition:
    """A partition replicated on `config.replication_factor` brokers, one spec action at a time."""

    def __init__(self, config: PartitionConfig) -> None:
        self.config = config
        self.state: PartitionState = spec_partition.initial_state(config)  # the current spec state
        self.last_transition: Transition | None = None  # the newest action tried, enabled or not
        self.sent_acks_all: frozenset[tuple[int, int]] = frozenset()  # (offset, value) appended with acks=all

    # -- observers --------------------------------------------------------------------

    @property
    def next_value(self) -> int:
        """The value the next appended record must carry (see the module docstring)."""
        return self.state.history.next_value

    @property
    def acknowledged(self) -> frozenset[tuple[int, int]]:
        """Every (offset, value) acknowledged to a producer so far (acks=1 and acks=all)."""
        return self.state.history.acknowledged

    @property
    def pending_acks_all(self) -> frozenset[tuple[int, int]]:
        """acks=all sends appended and still waiting for a live leader's high watermark."""
        return frozenset(
            entry
            for replica in self.state.replicas
            if replica.alive and replica.role is Role.LEADER
            for entry in replica.waiting_acks_all
        )

    @property
    def failed_acks_all(self) -> frozenset[tuple[int, int]]:
        """acks=all sends that were appended but will never be acknowledged: their leader
        was demoted or died before the HW passed them, or the ISR had shrunk below
        min.insync.replicas when it did (NOT_ENOUGH_REPLICAS_AFTER_APPEND)."""
        return self.sent_acks_all - self.state.history.acknowledged_all - self.pending_acks_all

    def is_replica(self, replica: ReplicaId) -> bool:
        """Whether `replica` names one of the partition's brokers."""
        return replica in self.config.replica_ids

    def would_accept(self, action: Action) -> bool:
        """Whether `action` is enabled now (nothing changes)."""
        if not self._names_replicas(action):
            return False
        return spec_partition.step(self.config, _ready_for(action, self.state), action) is not None

    def enabled_actions(self) -> tuple[Action, ...]:
        """Every action enabled now, in the order of `spec.partition.candidate_actions`."""
        return tuple(
            action
            for action in spec_partition.candidate_actions(self.config, self.state)
            if self.would_accept(action)
        )

    # -- the generic operation ----------------------------------------------------------

    def apply(self, action: Action) -> bool:
        """Take `action` if the spec enables it; return whether it did.

        A replica id outside the assignment names no broker: such an action is refused
        (the spec indexes replicas by id and would not say).
        """
        if not self._names_replicas(action):
            self.last_transition = Transition(self.state, action, None)
            return False
        before = _ready_for(action, self.state)
        after = spec_partition.step(self.config, before, action)
        self.last_transition = Transition(before, action, after)
        if after is None:
            return False
        self.state = after
        return True

    def _names_replicas(self, action: Action) -> bool:
        match action:
            case ProducerSend(leader=replica) | LeaderAdvanceLogStartOffset(leader=replica):
                return self.is_replica(replica)
            case LeaderShrinkIsr(leader=leader, follower=follower):
                return self.is_replica(leader) and self.is_replica(follower)
            case ControllerMoveLeadership(new_leader=replica):
                return self.is_replica(replica)
            case (
                LeaderHandleFetch(follower=replica)
                | FollowerHandleFetchResponse(follower=replica)
                | FollowerTruncate(follower=replica)
            ):
                return self.is_replica(replica)
            case BrokerCrash(replica=replica) | BrokerRestart(replica=replica):
                return self.is_replica(replica)
            case ReplicaBecomeLeaderOrFollower(replica=replica):
                return self.is_replica(replica)
            case ClockTick():
                return True
        raise TypeError(f"not a spec.partition action: {action!r}")

    # -- one method per action ----------------------------------------------------------

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceResult | None:
        """`ProducerSend(leader, acks)` carrying `value`, which must be `next_value`.

        None when `leader` does not act as leader (a real broker answers
        NOT_LEADER_OR_FOLLOWER and appends nothing).
        """
        if value != self.next_value:
            raise ValueError(
                f"produce: value {value} is not the partition's next value {self.next_value} "
                "(values are 0, 1, 2, ... in the order records are appended)"
            )
        offset = self.state.replicas[leader].log.log_end_offset if self.is_replica(leader) else None
        if not self.apply(ProducerSend(leader, acks)):
            return None
        if self.next_value == value:  # enabled, yet nothing was appended: the ISR is too small
            return ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS, None, True)
        if acks is Acks.ALL:
            assert offset is not None
            self.sent_acks_all = self.sent_acks_all | {(offset, value)}
            return ProduceResult(ErrorCode.NONE, offset, False)
        return ProduceResult(ErrorCode.NONE, offset, True)

    def leader_handle_fetch(self, follower: ReplicaId) -> bool:
        """`LeaderHandleFetch(follower)`."""
        return self.apply(LeaderHandleFetch(follower))

    def follower_handle_fetch_response(self, follower: ReplicaId) -> bool:
        """`FollowerHandleFetchResponse(follower)`."""
        return self.apply(FollowerHandleFetchResponse(follower))

    def follower_truncate(self, follower: ReplicaId) -> bool:
        """`FollowerTruncate(follower)`."""
        return self.apply(FollowerTruncate(follower))

    def leader_shrink_isr(self, leader: ReplicaId, follower: ReplicaId) -> bool:
        """`LeaderShrinkIsr(leader, follower)`."""
        return self.apply(LeaderShrinkIsr(leader, follower))

    def clock_tick(self) -> bool:
        """`ClockTick()`."""
        return self.apply(ClockTick())

    def controller_move_leadership(self, new_leader: ReplicaId) -> bool:
        """`ControllerMoveLeadership(new_leader)`."""
        return self.apply(ControllerMoveLeadership(new_leader))

    def broker_crash(self, replica: ReplicaId, surviving_end: int) -> bool:
        """`BrokerCrash(replica, surviving_end)`."""
        return self.apply(BrokerCrash(replica, surviving_end))

    def broker_restart(self, replica: ReplicaId) -> bool:
        """`BrokerRestart(replica)`."""
        return self.apply(BrokerRestart(replica))

    def become_leader_or_follower(self, replica: ReplicaId) -> bool:
        """`ReplicaBecomeLeaderOrFollower(replica)`."""
        return self.apply(ReplicaBecomeLeaderOrFollower(replica))

    def advance_log_start_offset(self, leader: ReplicaId, new_start: int) -> bool:
        """`LeaderAdvanceLogStartOffset(leader, new_start)`."""
        return self.apply(LeaderAdvanceLogStartOffset(leader, new_start))
