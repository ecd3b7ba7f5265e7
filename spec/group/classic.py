"""The classic consumer-group protocol as one state machine: the coordinator and its consumers.

What it is
    The coordinator (`spec.group.classic_coordinator`) and every consumer
    (`spec.group.classic_consumer`) are actors. Each action is one thing one of them does:

    * a consumer starts, sends JoinGroup, handles its JoinGroup answer, sends SyncGroup (the
      leader with the assignment its assignor computed), handles its SyncGroup answer,
      heartbeats, commits offsets, leaves, pauses (crashes or stalls) and resumes;
    * the network loses a SyncGroup (`max.lost.syncs`): the consumer waits for an answer that
      never comes while it keeps heartbeating;
    * the network delivers an OffsetCommit sent earlier (a consumer's commit can land after the
      group moved on: the zombie case);
    * the coordinator's timers fire: a member's session timeout, the rebalance timeout of a
      join phase (`DelayedJoin`, or `InitialDelayedJoin` after Empty), the pending-sync timeout,
      and offset expiry (`offsets.retention.minutes`).

    A request is handled by the coordinator when the consumer sends it, with the consumer's view
    at that moment (its member id and generation may already be stale: that is what fencing is
    about); its answer is handled at once unless the coordinator parks it (JoinGroup and
    SyncGroup wait for the phase to complete), in which case it reaches the consumer later and
    the consumer handles it in a separate step. A consumer may be slow between any two of its
    steps, so "late SyncGroup" and "late JoinGroup" interleavings are all explored.

Time
    Only whether a timeout *may* fire matters. A timer fires only for members that stopped
    answering (their process is paused, crashed or gone) or, for the pending-sync timer, whose
    SyncGroup was lost: a running consumer heartbeats within its session timeout, rejoins within
    the rebalance timeout once told to, and sends SyncGroup within it (so the model never
    removes a healthy member, which in Kafka only a misconfigured timeout does). With
    `session_timeouts` off, every pause ends (or a static member is restarted)
    within `session.timeout.ms`. A paused process reads nothing; when it resumes it first
    handles what reached it and talks to the coordinator (SyncGroup if it was about to, else a
    heartbeat) before it reads again: `KafkaConsumer.poll` runs the coordinator before it
    fetches. (A consumer that reads between its resume and the coordinator's answer is a
    zombie the classic protocol cannot stop; KIP-848 and broker-side fencing narrow that gap,
    and offset commits are fenced by generation for this reason.) A new instance of a static
    member starts only when the old process is paused or gone (two live processes with one
    `group.instance.id` is a misconfiguration).

Properties (`INVARIANTS`, `STEP_PROPERTIES`; `WITNESSES` say a pass is not vacuous)
    Each property's docstring says what Kafka guarantees and under which rules. The
    "stuck" check (`rebalance_not_stuck`) fails in a reachable state where a running consumer
    waits for a JoinGroup or SyncGroup answer and no action can change anything.

Bounds
    The configuration's `max_*` fields bound what the environment does (spontaneous rejoins,
    pauses, resumes, commits, leaves, lost SyncGroups); they never appear in the protocol's guards. Each
    consumer process that is not an initial member starts at most once. Generations and member
    ids then stay bounded too: every rebalance and every new id has one of these events behind
    it, so each scenario's state space is finite and the checker explores all of it.

Symmetry
    None is used: consumers are not interchangeable (the first member leads, member ids carry
    the client's name, the range and round-robin assignors order members by id), so sorting
    them would merge states the protocol tells apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from spec._frozen import cache_hash, fast_init, replace
from spec.group import classic_consumer as consumer_side
from spec.group.assignors import ASSIGNORS, MemberSubscription, rebalance_protocol
from spec.group.classic_consumer import ClientPhase, ClientStatus, Consumer, ConsumerRules
from spec.group.classic_coordinator import (
    VALID_PREVIOUS_STATES,
    ClassicGroup,
    CoordinatorRules,
    Delivery,
    Member,
    expire_offsets,
    expire_pending_sync,
    expire_rebalance_timeout,
    expire_session,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_offset_commit,
    handle_sync_group,
    heartbeat_satisfied_by_parked_request,
    offsets_may_expire,
)
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    Assignment,
    ClassicGroupState,
    Errors,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    RebalanceProtocol,
    Subscription,
    SyncGroupResponse,
    TopicPartition,
)

# --- configuration ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsumerProcess:
    """One consumer process: its name, its `group.instance.id` (static membership, KIP-345) and
    whether it is a member of the Stable group the model starts from (otherwise it starts later:
    a new consumer, or a restarted static instance)."""

    name: str
    group_instance_id: str | None = None
    initial_member: bool = True


@dataclass(frozen=True)
class ClassicConfig:
    """A classic group and its consumers, the rules they follow, and the exploration bounds.

    Kafka settings: `topics` (partitions per topic, every consumer subscribes to all),
    `partition_assignment_strategy` (`partition.assignment.strategy`), `rebalance_protocol`
    (None: implied by the strategy, as `ConsumerCoordinator` does), `group_max_size`
    (`group.max.size`).

    Rules Kafka changed (True is today's behaviour; see `CoordinatorRules` and `ConsumerRules`):
    `static_join_rebalances_when_completing` (KAFKA-9801), `offset_commit_checks_generation`,
    `failed_sync_gives_up_partitions` (KAFKA-13419 and related), `withhold_transferring_partitions`
    (KIP-429's first round), `pending_sync_timer` (KAFKA-12890: members that never sent SyncGroup
    are removed after the rebalance timeout; before, a member that heartbeated during
    CompletingRebalance but never synced kept the group waiting forever).

    Exploration bounds: `session_timeouts` (whether a paused member's session may expire),
    `max_rejoins` (spontaneous rejoins: the leader saw a metadata change, or `enforceRebalance`),
    `max_pauses`, `max_resumes`, `max_commits`, `max_leaves`, `max_lost_syncs`.
    """

    topics: tuple[tuple[str, int], ...] = (("t0", 2),)
    consumers: tuple[ConsumerProcess, ...] = (ConsumerProcess("c0"), ConsumerProcess("c1"))
    partition_assignment_strategy: tuple[str, ...] = ("range",)
    rebalance_protocol: RebalanceProtocol | None = None
    group_max_size: int = 2**31 - 1
    static_join_rebalances_when_completing: bool = True
    offset_commit_checks_generation: bool = True
    failed_sync_gives_up_partitions: bool = True
    withhold_transferring_partitions: bool = True
    pending_sync_timer: bool = True
    session_timeouts: bool = True
    max_rejoins: int = 0
    max_pauses: int = 0
    max_resumes: int = 0
    max_commits: int = 0
    max_leaves: int = 0
    max_lost_syncs: int = 0

    @cached_property
    def coordinator_rules(self) -> CoordinatorRules:
        """The coordinator's switches."""
        return CoordinatorRules(
            static_join_rebalances_when_completing=self.static_join_rebalances_when_completing,
            offset_commit_checks_generation=self.offset_commit_checks_generation,
            group_max_size=self.group_max_size,
        )

    @cached_property
    def consumer_rules(self) -> ConsumerRules:
        """What every consumer runs with."""
        protocol = self.rebalance_protocol or rebalance_protocol(self.partition_assignment_strategy)
        return ConsumerRules(
            topics=self.topics,
            strategy=self.partition_assignment_strategy,
            protocol=protocol,
            failed_sync_gives_up_partitions=self.failed_sync_gives_up_partitions,
            withhold_transferring_partitions=self.withhold_transferring_partitions,
        )

    @cached_property
    def client_actions(self) -> tuple[_ClientActions, ...]:
        """Every action object of each consumer, built once (`candidate_actions` runs once per
        state; callgrind: 2.5% fewer instructions on classic-late-sync-fixed than building them
        there, 1.5% on classic-zombie-commit-fenced)."""
        return tuple(
            _ClientActions(
                DeliverOffsetCommit(c),
                StartConsumer(c),
                ResumeConsumer(c),
                ReceiveJoinGroupResponse(c),
                ReceiveSyncGroupResponse(c),
                SendJoinGroup(c),
                SendSyncGroup(c),
                LoseSyncGroup(c),
                SendHeartbeat(c),
                LeaveGroup(c),
                SendOffsetCommit(c),
                PauseConsumer(c),
            )
            for c in range(len(self.consumers))
        )

    @cached_property
    def partitions(self) -> tuple[TopicPartition, ...]:
        """Every partition of every topic."""
        return tuple(TopicPartition(topic, number) for topic, count in self.topics for number in range(count))


# --- state --------------------------------------------------------------------------------------


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Budget:
    """How much of each exploration bound has been used."""

    rejoins: int = 0
    pauses: int = 0
    resumes: int = 0
    commits: int = 0
    leaves: int = 0
    lost_syncs: int = 0
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class InFlightCommit:
    """An OffsetCommit on its way from a consumer to the coordinator."""

    client: int
    request: OffsetCommitRequest
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


NOTED_ERRORS = frozenset({Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID})
"""Fencing answers the state remembers having given (per API), so witnesses can ask for them."""


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ClassicState:
    """The coordinator's group, every consumer (by its position in `ClassicConfig.consumers`),
    the commits in flight, the bounds used, and the fencing answers given so far.
    `partitions` (every partition of the subscribed topics) is constant, kept for explanations."""

    group: ClassicGroup
    consumers: tuple[Consumer, ...]
    in_flight: tuple[InFlightCommit, ...] = ()
    used: Budget = Budget()
    answered: frozenset[tuple[str, Errors]] = frozenset()
    partitions: tuple[TopicPartition, ...] = field(default=(), compare=False)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


def _initial_member_ids(config: ClassicConfig) -> tuple[str, ...]:
    ids: list[str] = []
    for index, process in enumerate(config.consumers):
        if process.initial_member:
            prefix = process.group_instance_id if process.group_instance_id is not None else f"c{index}"
            ids.append(f"{prefix}-{len(ids)}")
    return tuple(ids)


def initial_state(config: ClassicConfig) -> ClassicState:
    """The group after its first rebalance: every initial member Stable in generation 1 with
    the assignment the first configured assignor gives (the first member leads); the other
    processes not started. Without initial members, an Empty group at generation 0."""
    rules = config.consumer_rules
    member_ids = _initial_member_ids(config)
    initial = [index for index, process in enumerate(config.consumers) if process.initial_member]
    if not initial:
        consumers = tuple(Consumer(status=ClientStatus.NOT_STARTED) for _ in config.consumers)
        return ClassicState(ClassicGroup(), consumers, partitions=config.partitions)
    protocol_name = rules.strategy[0]
    subscriptions = [
        MemberSubscription(member_id, config.consumers[index].group_instance_id, rules.subscription)
        for member_id, index in zip(member_ids, initial, strict=True)
    ]
    assignment = ASSIGNORS[protocol_name](dict(config.topics), subscriptions)
    members: list[Member] = []
    started: list[Consumer] = []
    by_index = dict(zip(initial, member_ids, strict=True))
    for index, process in enumerate(config.consumers):
        member_id = by_index.get(index)
        if member_id is None:
            started.append(Consumer(status=ClientStatus.NOT_STARTED))
            continue
        owned = assignment[member_id]
        metadata = Subscription(rules.subscription, (), -1)
        protocols = tuple(JoinGroupRequestProtocol(name, metadata) for name in rules.strategy)
        members.append(
            Member(member_id, process.group_instance_id, index, protocols, assignment=Assignment(owned))
        )
        started.append(
            Consumer(
                status=ClientStatus.RUNNING,
                phase=ClientPhase.STABLE,
                member_id=member_id,
                generation=1,
                protocol_name=protocol_name,
                owned=owned,
            )
        )
    group = ClassicGroup(
        state=ClassicGroupState.STABLE,
        previous_state=ClassicGroupState.COMPLETING_REBALANCE,
        generation=1,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_name=protocol_name,
        leader=member_ids[0],
        members=tuple(members),
        next_member_number=len(member_ids),
    )
    return ClassicState(group, tuple(started), partitions=config.partitions)


def initial_generation(config: ClassicConfig) -> int:
    """The generation the model starts at (1 with initial members, else 0)."""
    return 1 if any(process.initial_member for process in config.consumers) else 0


# --- actions ------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class StartConsumer:
    """A consumer process starts (a new consumer, or a new instance of a static member)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class SendJoinGroup:
    """A consumer prepares (`onJoinPrepare`: eager revokes everything) and sends JoinGroup:
    because it has no member yet, because it was told to rejoin, or on its own (`max.rejoins`)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ReceiveJoinGroupResponse:
    """A consumer handles the answer to its parked JoinGroup."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class SendSyncGroup:
    """A consumer sends SyncGroup; the leader computes and sends the assignment."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class LoseSyncGroup:
    """A consumer sends SyncGroup and the request is lost: the coordinator never sees it."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ReceiveSyncGroupResponse:
    """A consumer handles the answer to its parked SyncGroup (its assignment, or an error)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class SendHeartbeat:
    """A consumer's heartbeat thread sends a heartbeat and handles its answer."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class SendOffsetCommit:
    """A consumer sends an OffsetCommit for the partitions it owns (it lands later)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class DeliverOffsetCommit:
    """The oldest OffsetCommit in flight from a consumer reaches the coordinator."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class LeaveGroup:
    """A dynamic consumer closes: it revokes everything and sends LeaveGroup."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class PauseConsumer:
    """A consumer process stops answering: a crash, or a long GC pause."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ResumeConsumer:
    """A paused consumer process runs again: it handles what reached it and talks to the
    coordinator before it reads."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class SessionTimeout:
    """The coordinator's session timer of a member (or of a pending member id) fires."""

    member_id: str


@fast_init
@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The join phase's rebalance timer (or the initial rebalance delay) fires."""


@fast_init
@dataclass(frozen=True, slots=True)
class PendingSyncTimeout:
    """The pending-sync timer fires: members that never sent SyncGroup are removed."""


@fast_init
@dataclass(frozen=True, slots=True)
class ExpireOffsets:
    """Offset retention passes: the coordinator's cleanup expires what it may."""


Action = (
    StartConsumer
    | SendJoinGroup
    | ReceiveJoinGroupResponse
    | SendSyncGroup
    | LoseSyncGroup
    | ReceiveSyncGroupResponse
    | SendHeartbeat
    | SendOffsetCommit
    | DeliverOffsetCommit
    | LeaveGroup
    | PauseConsumer
    | ResumeConsumer
    | SessionTimeout
    | RebalanceTimeout
    | PendingSyncTimeout
    | ExpireOffsets
)


# --- helpers ------------------------------------------------------------------------------------


def _with_consumer(state: ClassicState, client: int, consumer: Consumer) -> ClassicState:
    consumers = (*state.consumers[:client], consumer, *state.consumers[client + 1 :])
    return replace(state, consumers=consumers)


def _note(state: ClassicState, api: str, error: Errors) -> ClassicState:
    if error not in NOTED_ERRORS or (api, error) in state.answered:
        return state
    return replace(state, answered=state.answered | {(api, error)})


def _deliver(state: ClassicState, deliveries: tuple[Delivery, ...]) -> ClassicState:
    """Answers to parked requests reach their consumers (a stopped process drops them)."""
    for client, response in deliveries:
        consumer = state.consumers[client]
        if consumer.status is ClientStatus.STOPPED:
            continue
        if isinstance(response, JoinGroupResponse):
            consumer = replace(consumer, join_response=response)
        else:
            consumer = replace(consumer, sync_response=response)
        state = _with_consumer(state, client, consumer)
    return state


def responsive(state: ClassicState, client: int) -> bool:
    """Whether a consumer process answers the coordinator (its timers then never fire)."""
    return state.consumers[client].status is ClientStatus.RUNNING


def _member_id_responsive(state: ClassicState, member_id: str) -> bool:
    member = state.group.member(member_id)
    if member is not None:
        return responsive(state, member.client)
    return any(
        consumer.member_id == member_id and consumer.status is ClientStatus.RUNNING
        for consumer in state.consumers
    )


def _instance_id(config: ClassicConfig, client: int) -> str | None:
    return config.consumers[client].group_instance_id


def _handle_join_answer(state: ClassicState, client: int, response: JoinGroupResponse) -> ClassicState:
    state = _note(state, "JoinGroup", response.error)
    return _with_consumer(state, client, consumer_side.on_join_response(state.consumers[client], response))


def _handle_sync_answer(
    config: ClassicConfig, state: ClassicState, client: int, response: SyncGroupResponse
) -> ClassicState:
    state = _note(state, "SyncGroup", response.error)
    consumer = consumer_side.on_sync_response(config.consumer_rules, state.consumers[client], response)
    return _with_consumer(state, client, consumer)


def _send_sync(config: ClassicConfig, state: ClassicState, client: int) -> ClassicState:
    consumer = state.consumers[client]
    request = consumer_side.sync_request(config.consumer_rules, consumer, _instance_id(config, client))
    outcome = handle_sync_group(state.group, request, client)
    state = _with_consumer(
        replace(state, group=outcome.group),
        client,
        replace(consumer, phase=ClientPhase.SYNCING, leader_members=()),
    )
    state = _deliver(state, outcome.deliveries)
    if isinstance(outcome.reply, SyncGroupResponse):
        state = _handle_sync_answer(config, state, client, outcome.reply)
    return state


def _send_heartbeat(config: ClassicConfig, state: ClassicState, client: int) -> ClassicState:
    consumer = state.consumers[client]
    outcome = handle_heartbeat(
        state.group, consumer_side.heartbeat_request(consumer, _instance_id(config, client))
    )
    assert outcome.reply is not None and not isinstance(outcome.reply, JoinGroupResponse | SyncGroupResponse)
    error = outcome.reply.error
    if error is Errors.NONE:
        return state  # nothing changes: the common case, kept cheap
    state = _note(state, "Heartbeat", error)
    return _with_consumer(state, client, consumer_side.on_heartbeat_response(consumer, outcome.reply))  # type: ignore[arg-type]


def _running(state: ClassicState, client: int) -> Consumer | None:
    consumer = state.consumers[client]
    return consumer if consumer.status is ClientStatus.RUNNING else None


# --- the actions' guards and effects ------------------------------------------------------------


def start_consumer(config: ClassicConfig, state: ClassicState, action: StartConsumer) -> ClassicState | None:
    """A process that has not run yet starts. A static instance starts only when no other
    running process has its `group.instance.id`."""
    consumer = state.consumers[action.client]
    if consumer.status is not ClientStatus.NOT_STARTED:
        return None
    instance = _instance_id(config, action.client)
    if instance is not None and any(
        other.status is ClientStatus.RUNNING and _instance_id(config, index) == instance
        for index, other in enumerate(state.consumers)
    ):
        return None
    return _with_consumer(state, action.client, Consumer(status=ClientStatus.RUNNING))


def send_join_group(config: ClassicConfig, state: ClassicState, action: SendJoinGroup) -> ClassicState | None:
    """Enabled for a running consumer that has no member yet, or whose last answer told it to
    rejoin, or (within `max.rejoins`) a Stable consumer rejoining on its own."""
    consumer = _running(state, action.client)
    if consumer is None:
        return None
    used = state.used
    if consumer.phase is ClientPhase.STABLE and not consumer.rejoin_needed:
        if used.rejoins >= config.max_rejoins:
            return None
        used = replace(used, rejoins=used.rejoins + 1)
    elif consumer.phase not in (ClientPhase.UNJOINED, ClientPhase.STABLE):
        return None
    rules = config.consumer_rules
    consumer = replace(
        consumer_side.prepare_join(rules, consumer), phase=ClientPhase.JOINING, rejoin_needed=False
    )
    request = consumer_side.join_request(rules, consumer, _instance_id(config, action.client))
    outcome = handle_join_group(state.group, request, action.client, config.coordinator_rules)
    state = _with_consumer(replace(state, group=outcome.group, used=used), action.client, consumer)
    state = _deliver(state, outcome.deliveries)
    if isinstance(outcome.reply, JoinGroupResponse):
        state = _handle_join_answer(state, action.client, outcome.reply)
    return state


def receive_join_group_response(
    config: ClassicConfig, state: ClassicState, action: ReceiveJoinGroupResponse
) -> ClassicState | None:
    """A running consumer handles a JoinGroup answer that reached it."""
    consumer = _running(state, action.client)
    if consumer is None or consumer.join_response is None:
        return None
    response = consumer.join_response
    state = _with_consumer(state, action.client, replace(consumer, join_response=None))
    return _handle_join_answer(state, action.client, response)


def send_sync_group(config: ClassicConfig, state: ClassicState, action: SendSyncGroup) -> ClassicState | None:
    """A running consumer with its JoinGroup answer sends SyncGroup."""
    consumer = _running(state, action.client)
    if consumer is None or consumer.phase is not ClientPhase.JOINED:
        return None
    return _send_sync(config, state, action.client)


def lose_sync_group(config: ClassicConfig, state: ClassicState, action: LoseSyncGroup) -> ClassicState | None:
    """A running consumer's SyncGroup is lost (within `max.lost.syncs`): it waits for an answer,
    heartbeating meanwhile (heartbeats are accepted during CompletingRebalance)."""
    consumer = _running(state, action.client)
    if consumer is None or consumer.phase is not ClientPhase.JOINED:
        return None
    if state.used.lost_syncs >= config.max_lost_syncs:
        return None
    state = replace(state, used=replace(state.used, lost_syncs=state.used.lost_syncs + 1))
    return _with_consumer(
        state, action.client, replace(consumer, phase=ClientPhase.SYNCING, leader_members=())
    )


def receive_sync_group_response(
    config: ClassicConfig, state: ClassicState, action: ReceiveSyncGroupResponse
) -> ClassicState | None:
    """A running consumer handles a SyncGroup answer that reached it."""
    consumer = _running(state, action.client)
    if consumer is None or consumer.sync_response is None:
        return None
    response = consumer.sync_response
    state = _with_consumer(state, action.client, replace(consumer, sync_response=None))
    return _handle_sync_answer(config, state, action.client, response)


def send_heartbeat(config: ClassicConfig, state: ClassicState, action: SendHeartbeat) -> ClassicState | None:
    """A running member heartbeats (from its JoinGroup answer on)."""
    consumer = _running(state, action.client)
    if (
        consumer is None
        or consumer.member_id == UNKNOWN_MEMBER_ID
        or not consumer_side.may_heartbeat(consumer)
    ):
        return None
    return _send_heartbeat(config, state, action.client)


def send_offset_commit(
    config: ClassicConfig, state: ClassicState, action: SendOffsetCommit
) -> ClassicState | None:
    """A running consumer that owns partitions commits them (within `max.commits`); the offset
    is a fresh number so every commit is told apart."""
    consumer = _running(state, action.client)
    if consumer is None or not consumer.owned or state.used.commits >= config.max_commits:
        return None
    request = consumer_side.commit_request(consumer, _instance_id(config, action.client), state.used.commits)
    return replace(
        state,
        in_flight=(*state.in_flight, InFlightCommit(action.client, request)),
        used=replace(state.used, commits=state.used.commits + 1),
    )


def deliver_offset_commit(
    config: ClassicConfig, state: ClassicState, action: DeliverOffsetCommit
) -> ClassicState | None:
    """A consumer's oldest OffsetCommit in flight lands (one connection keeps its order)."""
    for position, flight in enumerate(state.in_flight):
        if flight.client == action.client:
            group, response = handle_offset_commit(state.group, flight.request, config.coordinator_rules)
            in_flight = state.in_flight[:position] + state.in_flight[position + 1 :]
            state = replace(state, group=group, in_flight=in_flight)
            for answer in response.partitions:
                state = _note(state, "OffsetCommit", answer.error)
            return state
    return None


def leave_group(config: ClassicConfig, state: ClassicState, action: LeaveGroup) -> ClassicState | None:
    """A running dynamic member closes (within `max.leaves`). A static member does not send
    LeaveGroup on close (KIP-345): its session timeout removes it."""
    consumer = _running(state, action.client)
    if (
        consumer is None
        or consumer.member_id == UNKNOWN_MEMBER_ID
        or _instance_id(config, action.client) is not None
        or state.used.leaves >= config.max_leaves
    ):
        return None
    request = LeaveGroupRequest((MemberIdentity(consumer.member_id),))
    outcome = handle_leave_group(state.group, request)
    state = replace(state, group=outcome.group, used=replace(state.used, leaves=state.used.leaves + 1))
    state = _with_consumer(state, action.client, consumer_side.leave(consumer))
    return _deliver(state, outcome.deliveries)


def pause_consumer(config: ClassicConfig, state: ClassicState, action: PauseConsumer) -> ClassicState | None:
    """A running process stops answering (within `max.pauses`)."""
    consumer = _running(state, action.client)
    if consumer is None or state.used.pauses >= config.max_pauses:
        return None
    state = replace(state, used=replace(state.used, pauses=state.used.pauses + 1))
    return _with_consumer(state, action.client, replace(consumer, status=ClientStatus.PAUSED))


def resume_consumer(
    config: ClassicConfig, state: ClassicState, action: ResumeConsumer
) -> ClassicState | None:
    """A paused process runs again (within `max.resumes`): it handles the answers that reached
    it, then sends the SyncGroup it was about to send or a heartbeat, and only then reads."""
    consumer = state.consumers[action.client]
    if consumer.status is not ClientStatus.PAUSED or state.used.resumes >= config.max_resumes:
        return None
    state = replace(state, used=replace(state.used, resumes=state.used.resumes + 1))
    state = _with_consumer(state, action.client, replace(consumer, status=ClientStatus.RUNNING))
    state = receive_join_group_response(config, state, ReceiveJoinGroupResponse(action.client)) or state
    state = receive_sync_group_response(config, state, ReceiveSyncGroupResponse(action.client)) or state
    consumer = state.consumers[action.client]
    if consumer.status is not ClientStatus.RUNNING:
        return state
    if consumer.phase is ClientPhase.JOINED:
        return _send_sync(config, state, action.client)
    if consumer.member_id != UNKNOWN_MEMBER_ID and consumer_side.may_heartbeat(consumer):
        return _send_heartbeat(config, state, action.client)
    return state


def session_timeout(
    config: ClassicConfig, state: ClassicState, action: SessionTimeout
) -> ClassicState | None:
    """A member (or pending member id) whose process stopped answering is expired; a member
    with a parked JoinGroup or SyncGroup counts as heartbeating."""
    if not config.session_timeouts:
        return None
    member = state.group.member(action.member_id)
    if member is None and action.member_id not in state.group.pending_members:
        return None
    if member is not None and heartbeat_satisfied_by_parked_request(member):
        return None
    if _member_id_responsive(state, action.member_id):
        return None
    outcome = expire_session(state.group, action.member_id)
    return _deliver(replace(state, group=outcome.group), outcome.deliveries)


def rebalance_timeout(
    config: ClassicConfig, state: ClassicState, action: RebalanceTimeout
) -> ClassicState | None:
    """The join phase completes without the members that did not rejoin: the initial delay may
    end at any time; otherwise the timer fires only if every member still to join (and every
    pending member id) belongs to a process that stopped answering."""
    group = state.group
    if group.state is not ClassicGroupState.PREPARING_REBALANCE:
        return None
    if group.previous_state is not ClassicGroupState.EMPTY:
        late = [member.member_id for member in group.members if not member.awaiting_join]
        if any(_member_id_responsive(state, member_id) for member_id in (*late, *group.pending_members)):
            return None
    outcome = expire_rebalance_timeout(group)
    return _deliver(replace(state, group=outcome.group), outcome.deliveries)


def _sync_never_arrives(state: ClassicState, member_id: str) -> bool:
    """The member's consumer waits for a SyncGroup answer whose request the coordinator never got."""
    member = state.group.member(member_id)
    if member is None or member.awaiting_sync:
        return False
    consumer = state.consumers[member.client]
    return consumer.member_id == member_id and consumer.phase is ClientPhase.SYNCING


def pending_sync_timeout(
    config: ClassicConfig, state: ClassicState, action: PendingSyncTimeout
) -> ClassicState | None:
    """The pending-sync timer (KAFKA-12890, `pending_sync_timer`) fires when every member still
    to send SyncGroup will not send it within the rebalance timeout: its process stopped
    answering, it is gone, or its SyncGroup was lost."""
    group = state.group
    if not config.pending_sync_timer:
        return None
    if (
        group.state not in (ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE)
        or not group.pending_sync
    ):
        return None
    if any(
        _member_id_responsive(state, member_id) and not _sync_never_arrives(state, member_id)
        for member_id in group.pending_sync
    ):
        return None
    outcome = expire_pending_sync(group)
    return _deliver(replace(state, group=outcome.group), outcome.deliveries)


def expire_group_offsets(
    config: ClassicConfig, state: ClassicState, action: ExpireOffsets
) -> ClassicState | None:
    """Offsets expire when the group's expiration condition allows (`offsets_may_expire`)."""
    if not state.group.offsets or not offsets_may_expire(state.group):
        return None
    return replace(state, group=expire_offsets(state.group))


_STEPS: Mapping[type, Callable[[ClassicConfig, ClassicState, Action], ClassicState | None]] = {
    StartConsumer: start_consumer,  # type: ignore[dict-item]
    SendJoinGroup: send_join_group,  # type: ignore[dict-item]
    ReceiveJoinGroupResponse: receive_join_group_response,  # type: ignore[dict-item]
    SendSyncGroup: send_sync_group,  # type: ignore[dict-item]
    LoseSyncGroup: lose_sync_group,  # type: ignore[dict-item]
    ReceiveSyncGroupResponse: receive_sync_group_response,  # type: ignore[dict-item]
    SendHeartbeat: send_heartbeat,  # type: ignore[dict-item]
    SendOffsetCommit: send_offset_commit,  # type: ignore[dict-item]
    DeliverOffsetCommit: deliver_offset_commit,  # type: ignore[dict-item]
    LeaveGroup: leave_group,  # type: ignore[dict-item]
    PauseConsumer: pause_consumer,  # type: ignore[dict-item]
    ResumeConsumer: resume_consumer,  # type: ignore[dict-item]
    SessionTimeout: session_timeout,  # type: ignore[dict-item]
    RebalanceTimeout: rebalance_timeout,  # type: ignore[dict-item]
    PendingSyncTimeout: pending_sync_timeout,  # type: ignore[dict-item]
    ExpireOffsets: expire_group_offsets,  # type: ignore[dict-item]
}


@fast_init
@dataclass(frozen=True, slots=True)
class _ClientActions:
    """Every action object of one consumer (built once per configuration:
    `ClassicConfig.client_actions`)."""

    deliver_commit: DeliverOffsetCommit
    start: StartConsumer
    resume: ResumeConsumer
    receive_join: ReceiveJoinGroupResponse
    receive_sync: ReceiveSyncGroupResponse
    send_join: SendJoinGroup
    send_sync: SendSyncGroup
    lose_sync: LoseSyncGroup
    heartbeat: SendHeartbeat
    leave: LeaveGroup
    commit: SendOffsetCommit
    pause: PauseConsumer


def _consumer_actions(
    config: ClassicConfig, state: ClassicState, client: int, actions: _ClientActions
) -> Iterator[Action]:
    """The actions of one consumer whose guards might hold (a cheap filter; `step` decides)."""
    consumer = state.consumers[client]
    status = consumer.status
    if any(flight.client == client for flight in state.in_flight):
        yield actions.deliver_commit
    if status is ClientStatus.NOT_STARTED:
        yield actions.start
        return
    used = state.used
    if status is ClientStatus.PAUSED:
        if used.resumes < config.max_resumes:
            yield actions.resume
        return
    if status is not ClientStatus.RUNNING:
        return
    if consumer.join_response is not None:
        yield actions.receive_join
    if consumer.sync_response is not None:
        yield actions.receive_sync
    phase = consumer.phase
    if phase is ClientPhase.UNJOINED or (
        phase is ClientPhase.STABLE and (consumer.rejoin_needed or used.rejoins < config.max_rejoins)
    ):
        yield actions.send_join
    if phase is ClientPhase.JOINED:
        yield actions.send_sync
        if used.lost_syncs < config.max_lost_syncs:
            yield actions.lose_sync
    if consumer.member_id != UNKNOWN_MEMBER_ID:
        yield actions.heartbeat
        if used.leaves < config.max_leaves:
            yield actions.leave
    if consumer.owned and used.commits < config.max_commits:
        yield actions.commit
    if used.pauses < config.max_pauses:
        yield actions.pause


def candidate_actions(config: ClassicConfig, state: ClassicState) -> Iterator[Action]:
    """Every action whose guard might hold (`step` checks each guard)."""
    for client, actions in enumerate(config.client_actions):
        yield from _consumer_actions(config, state, client, actions)
    group = state.group
    if config.session_timeouts:
        for member in group.members:
            yield SessionTimeout(member.member_id)
        for member_id in group.pending_members:
            yield SessionTimeout(member_id)
    if group.state is ClassicGroupState.PREPARING_REBALANCE:
        yield RebalanceTimeout()
    if group.pending_sync and config.pending_sync_timer:
        yield PendingSyncTimeout()
    if group.offsets:
        yield ExpireOffsets()


def step(config: ClassicConfig, state: ClassicState, action: Action) -> ClassicState | None:
    """The state after `action`, or None when its guard refuses it."""
    return _STEPS[type(action)](config, state, action)


# --- properties ---------------------------------------------------------------------------------


def partition_read_by_one_consumer(config: ClassicConfig, state: ClassicState) -> bool:
    """No partition is read by two running consumers at once.

    The coordinator does not enforce this under the classic protocol: the clients do. It holds
    when every consumer follows the eager rule (revoke everything before JoinGroup) or the
    cooperative rule (KIP-429: keep, report, and revoke before the partition is handed over in
    a later round), and when a consumer that finds itself out of the group gives its partitions
    up before it reads again. The scenarios show what breaks it: a cooperative assignment that
    moves a partition in one round, and a consumer that keeps its partitions after a failed
    SyncGroup (KAFKA-13419)."""
    seen: set[TopicPartition] = set()
    for consumer in state.consumers:
        for partition in consumer.reading:
            if partition in seen:
                return False
            seen.add(partition)
    return True


def stable_group_assigns_every_partition(config: ClassicConfig, state: ClassicState) -> bool:
    """In a Stable group every subscribed partition has exactly one owner among the members of
    the current generation: no partition is assigned to two members, and each is assigned to
    one, except (KIP-429) a partition withheld in a cooperative first round, which the member
    that reported owning it in this generation's JoinGroup still holds until it revokes it.
    KAFKA-9801 broke it: a static member that rejoined during CompletingRebalance got an empty
    assignment, and its partitions no owner."""
    group = state.group
    if group.state is not ClassicGroupState.STABLE:
        return True
    assigned: set[TopicPartition] = set()
    for member in group.members:
        for partition in member.assignment.partitions:
            if partition in assigned:
                return False
            assigned.add(partition)
    claimed = {
        partition
        for member in group.members
        for protocol in member.protocols
        if protocol.name == group.protocol_name
        for partition in protocol.metadata.owned_partitions
    }
    return all(partition in assigned or partition in claimed for partition in config.partitions)


def leader_is_a_member(config: ClassicConfig, state: ClassicState) -> bool:
    """A group with members has a leader among them; an empty group has none."""
    group = state.group
    if not group.members:
        return group.leader is None
    return group.member(group.leader or "") is not None


def one_member_per_instance(config: ClassicConfig, state: ClassicState) -> bool:
    """A `group.instance.id` maps to at most one member id (KIP-345)."""
    instances = [
        member.group_instance_id for member in state.group.members if member.group_instance_id is not None
    ]
    return len(instances) == len(set(instances))


def static_restart_keeps_generation(config: ClassicConfig, state: ClassicState) -> bool:
    """KIP-345: a static member restarted within its session timeout takes its place again
    without a rebalance, so the generation never moves (checked where nothing else rebalances)."""
    return state.group.generation == initial_generation(config)


def rebalance_waiting(state: ClassicState) -> bool:
    """Some running consumer waits for a parked JoinGroup or SyncGroup to be answered."""
    return any(
        consumer.status is ClientStatus.RUNNING
        and consumer.phase in (ClientPhase.JOINING, ClientPhase.SYNCING)
        and consumer.join_response is None
        and consumer.sync_response is None
        for consumer in state.consumers
    )


def valid_state_transitions(config: ClassicConfig, before: ClassicState, after: ClassicState) -> bool:
    """The group moves only along `ClassicGroupState`'s valid previous states (a step may pass
    through several states; each is checked by `transition`, this checks the endpoints too
    when the step made one move)."""
    old, new = before.group.state, after.group.state
    if old is new:
        return True
    if old in VALID_PREVIOUS_STATES[new]:
        return True
    # two moves in one step, e.g. Stable -> PreparingRebalance -> CompletingRebalance
    return any(
        old in VALID_PREVIOUS_STATES[middle] and middle in VALID_PREVIOUS_STATES[new]
        for middle in ClassicGroupState
    )


def generations_only_grow(config: ClassicConfig, before: ClassicState, after: ClassicState) -> bool:
    """The generation id never goes back, and the consumers' generations never pass it."""
    if after.group.generation < before.group.generation:
        return False
    return all(consumer.generation <= after.group.generation for consumer in after.consumers)


def stale_commits_never_land(config: ClassicConfig, before: ClassicState, after: ClassicState) -> bool:
    """An offset is stored only from a member of the group's current generation (or, in an
    Empty group, from outside the group with no generation): a fenced or stale member's commit
    never lands. `ClassicGroup.validateOffsetCommit` guarantees it with the member and
    generation checks; without the generation check a commit sent before a rebalance lands
    after it, over the new owner's progress."""
    if after.group.offsets == before.group.offsets:
        return True
    group = before.group
    for partition, commit in after.group.offsets:
        if before.group.committed(partition) == commit:
            continue
        if (
            commit.generation < 0
            and commit.member_id == UNKNOWN_MEMBER_ID
            and group.state is ClassicGroupState.EMPTY
        ):
            continue
        if group.member(commit.member_id) is None or commit.generation != group.generation:
            return False
    return True


def offsets_expire_only_when_empty(config: ClassicConfig, before: ClassicState, after: ClassicState) -> bool:
    """No committed offset of a non-empty group expires: offsets are dropped only while the
    group is Empty (`ClassicGroup.offsetExpirationCondition`)."""
    for partition, _ in before.group.offsets:
        if after.group.committed(partition) is None and before.group.state is not ClassicGroupState.EMPTY:
            return False
    return True


def leader_stays_while_it_rejoins(config: ClassicConfig, before: ClassicState, after: ClassicState) -> bool:
    """The first member to join leads, and keeps leading while it is a member: another member
    leads only once the leader left, was removed or replaced, or did not rejoin before the join
    phase completed (`ClassicGroup.add`, `remove`, `maybeElectNewJoinedLeader`)."""
    old, new = before.group.leader, after.group.leader
    if old is None or old == new:
        return True
    if after.group.member(old) is None:
        return True
    leader = before.group.member(old)
    rejoined = leader is not None and leader.awaiting_join
    return after.group.generation > before.group.generation and not rejoined


INVARIANTS: Mapping[str, Callable[[ClassicConfig, ClassicState], bool]] = {
    "partition_read_by_one_consumer": partition_read_by_one_consumer,
    "stable_group_assigns_every_partition": stable_group_assigns_every_partition,
    "leader_is_a_member": leader_is_a_member,
    "one_member_per_instance": one_member_per_instance,
    "static_restart_keeps_generation": static_restart_keeps_generation,
}
"""Properties of every reachable state (`rebalance_not_stuck` is built per model: `STUCK`)."""

STUCK = "rebalance_not_stuck"
"""The stuck check: a running consumer waits for its JoinGroup or SyncGroup answer and no
action can change anything (`spec.machines.not_stuck` over `rebalance_waiting`)."""

STEP_PROPERTIES: Mapping[str, Callable[[ClassicConfig, ClassicState, ClassicState], bool]] = {
    "valid_state_transitions": valid_state_transitions,
    "generations_only_grow": generations_only_grow,
    "stale_commits_never_land": stale_commits_never_land,
    "offsets_expire_only_when_empty": offsets_expire_only_when_empty,
    "leader_stays_while_it_rejoins": leader_stays_while_it_rejoins,
}
"""Properties of every transition."""


# --- witnesses ----------------------------------------------------------------------------------


def settled_after_rebalance(config: ClassicConfig, state: ClassicState) -> bool:
    """A rebalance happened and is over: the group is Stable past its first generation, every
    running consumer is stable and owns exactly its stored assignment, and every partition is
    read by some running consumer."""
    group = state.group
    if group.state is not ClassicGroupState.STABLE or group.generation <= initial_generation(config):
        return False
    reading: set[TopicPartition] = set()
    for consumer in state.consumers:
        if consumer.status is not ClientStatus.RUNNING:
            continue
        member = group.member(consumer.member_id)
        if consumer.phase is not ClientPhase.STABLE or consumer.rejoin_needed or member is None:
            return False
        if consumer.owned != tuple(sorted(member.assignment.partitions)):
            return False
        reading.update(consumer.owned)
    return reading == set(config.partitions)


def idle_consumer_settled(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled with a running member that owns nothing (more consumers than partitions)."""
    return settled_after_rebalance(config, state) and any(
        consumer.status is ClientStatus.RUNNING and not consumer.owned for consumer in state.consumers
    )


def crashed_member_replaced(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled after a paused member's session expired: its partitions are read by others."""
    return settled_after_rebalance(config, state) and any(
        consumer.status is ClientStatus.PAUSED and state.group.member(consumer.member_id) is None
        for consumer in state.consumers
    )


def member_left_and_settled(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled after a member left with LeaveGroup."""
    return settled_after_rebalance(config, state) and any(
        consumer.status is ClientStatus.STOPPED and consumer.fatal_error is None
        for consumer in state.consumers
    )


def stale_commit_refused(config: ClassicConfig, state: ClassicState) -> bool:
    """An OffsetCommit was refused as stale or fenced."""
    return bool(
        {("OffsetCommit", Errors.ILLEGAL_GENERATION), ("OffsetCommit", Errors.UNKNOWN_MEMBER_ID)}
        & state.answered
    )


def static_member_restarted_in_place(config: ClassicConfig, state: ClassicState) -> bool:
    """A restarted static instance reads its partitions in the generation it started in."""
    if state.group.state is not ClassicGroupState.STABLE or state.group.generation != initial_generation(
        config
    ):
        return False
    for index, consumer in enumerate(state.consumers):
        process = config.consumers[index]
        if process.initial_member or process.group_instance_id is None:
            continue
        member = state.group.member(consumer.member_id)
        if (
            consumer.status is ClientStatus.RUNNING
            and consumer.phase is ClientPhase.STABLE
            and member is not None
            and consumer.owned
            and consumer.owned == member.assignment.partitions
        ):
            return True
    return False


def old_instance_fenced(config: ClassicConfig, state: ClassicState) -> bool:
    """An old static instance was told FENCED_INSTANCE_ID and stopped."""
    return any(consumer.fatal_error is Errors.FENCED_INSTANCE_ID for consumer in state.consumers)


def offsets_expired_and_group_deleted(config: ClassicConfig, state: ClassicState) -> bool:
    """Every member left, the group's offsets expired and the group was deleted (Dead)."""
    return state.group.state is ClassicGroupState.DEAD and not state.group.offsets


def joiner_refused_at_max_size(config: ClassicConfig, state: ClassicState) -> bool:
    """A consumer was refused with GROUP_MAX_SIZE_REACHED while the group stayed Stable."""
    return state.group.state is ClassicGroupState.STABLE and any(
        consumer.fatal_error is Errors.GROUP_MAX_SIZE_REACHED for consumer in state.consumers
    )


def late_sync_refused(config: ClassicConfig, state: ClassicState) -> bool:
    """A SyncGroup was answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: it came too late."""
    return bool(
        {("SyncGroup", Errors.ILLEGAL_GENERATION), ("SyncGroup", Errors.UNKNOWN_MEMBER_ID)} & state.answered
    )


def moved_in_two_rounds(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled two generations on: a cooperative rebalance revoked in one round and assigned in
    the next."""
    return settled_after_rebalance(config, state) and state.group.generation >= initial_generation(config) + 2


def lost_sync_member_removed(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled after a member whose SyncGroup was lost was removed and told so by a heartbeat."""
    return ("Heartbeat", Errors.UNKNOWN_MEMBER_ID) in state.answered and settled_after_rebalance(
        config, state
    )


def static_rejoin_settled(config: ClassicConfig, state: ClassicState) -> bool:
    """Settled after a rebalance with a restarted static instance reading partitions."""
    if not settled_after_rebalance(config, state):
        return False
    return any(
        not config.consumers[index].initial_member
        and config.consumers[index].group_instance_id is not None
        and consumer.status is ClientStatus.RUNNING
        and consumer.owned
        for index, consumer in enumerate(state.consumers)
    )


WITNESSES: Mapping[str, Callable[[ClassicConfig, ClassicState], bool]] = {
    "settled_after_rebalance": settled_after_rebalance,
    "idle_consumer_settled": idle_consumer_settled,
    "crashed_member_replaced": crashed_member_replaced,
    "member_left_and_settled": member_left_and_settled,
    "stale_commit_refused": stale_commit_refused,
    "static_member_restarted_in_place": static_member_restarted_in_place,
    "old_instance_fenced": old_instance_fenced,
    "late_sync_refused": late_sync_refused,
    "joiner_refused_at_max_size": joiner_refused_at_max_size,
    "offsets_expired_and_group_deleted": offsets_expired_and_group_deleted,
    "moved_in_two_rounds": moved_in_two_rounds,
    "static_rejoin_settled": static_rejoin_settled,
    "lost_sync_member_removed": lost_sync_member_removed,
}
"""States a no-violation scenario must reach, so its pass is not vacuous."""


__all__ = [
    "INVARIANTS",
    "NOTED_ERRORS",
    "STEP_PROPERTIES",
    "STUCK",
    "WITNESSES",
    "Action",
    "Budget",
    "ClassicConfig",
    "ClassicState",
    "ConsumerProcess",
    "DeliverOffsetCommit",
    "ExpireOffsets",
    "InFlightCommit",
    "LeaveGroup",
    "LoseSyncGroup",
    "PauseConsumer",
    "PendingSyncTimeout",
    "RebalanceTimeout",
    "ReceiveJoinGroupResponse",
    "ReceiveSyncGroupResponse",
    "ResumeConsumer",
    "SendHeartbeat",
    "SendJoinGroup",
    "SendOffsetCommit",
    "SendSyncGroup",
    "SessionTimeout",
    "StartConsumer",
    "candidate_actions",
    "crashed_member_replaced",
    "deliver_offset_commit",
    "expire_group_offsets",
    "generations_only_grow",
    "idle_consumer_settled",
    "initial_generation",
    "initial_state",
    "joiner_refused_at_max_size",
    "late_sync_refused",
    "leader_is_a_member",
    "leader_stays_while_it_rejoins",
    "leave_group",
    "lose_sync_group",
    "lost_sync_member_removed",
    "member_left_and_settled",
    "moved_in_two_rounds",
    "offsets_expire_only_when_empty",
    "offsets_expired_and_group_deleted",
    "old_instance_fenced",
    "one_member_per_instance",
    "partition_read_by_one_consumer",
    "pause_consumer",
    "pending_sync_timeout",
    "rebalance_timeout",
    "rebalance_waiting",
    "receive_join_group_response",
    "receive_sync_group_response",
    "responsive",
    "resume_consumer",
    "send_heartbeat",
    "send_join_group",
    "send_offset_commit",
    "send_sync_group",
    "session_timeout",
    "settled_after_rebalance",
    "stable_group_assigns_every_partition",
    "stale_commit_refused",
    "stale_commits_never_land",
    "start_consumer",
    "static_member_restarted_in_place",
    "static_rejoin_settled",
    "static_restart_keeps_generation",
    "step",
    "valid_state_transitions",
]
