"""The consumer's side of the classic protocol: what a Kafka consumer does with each answer.

What it is
    Under the classic protocol the coordinator never decides which consumer reads a partition:
    the consumers do. A consumer joins (JoinGroup), the leader among them computes the
    assignment with a client-side assignor (`spec.group.assignors`) and sends it in SyncGroup,
    and each consumer starts and stops reading partitions when its own SyncGroup is answered.
    So whether two consumers ever read one partition at once depends on the clients' rules:

    * eager (`RebalanceProtocol.EAGER`, `range` and `roundrobin`): before it sends JoinGroup a
      consumer revokes everything it owns (`onJoinPrepare`); it owns nothing until its SyncGroup
      is answered, so a partition is never read by its old and its new owner at once;
    * cooperative (KIP-429, `cooperative-sticky`): a consumer keeps what it owns while it
      rejoins and reports it (`ownedPartitions`, with its generation: KIP-792); the leader's
      assignor never gives a partition to a new owner in the round in which it takes it from the
      old one; a consumer whose new assignment lacks partitions it owns revokes them and rejoins
      at once, and the next round hands them over.

    A consumer that learns it is no longer in the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION
    on a heartbeat, its JoinGroup or SyncGroup) gives up what it owns as *lost*
    (`onPartitionsLost`) before it reads again; FENCED_INSTANCE_ID (another instance took its
    `group.instance.id`, KIP-345) and GROUP_MAX_SIZE_REACHED are fatal.

Where it comes from
    Kafka's Java client: `AbstractCoordinator` (`JoinGroupResponseHandler`,
    `SyncGroupResponseHandler`, `HeartbeatResponseHandler`, `resetStateAndGeneration`) and
    `ConsumerCoordinator` (`onJoinPrepare`, `onJoinComplete`, `onLeaderElected`,
    `validateCooperativeAssignment`), `MemberState` (UNJOINED, PREPARING_REBALANCE,
    COMPLETING_REBALANCE, STABLE: here JOINING for PREPARING_REBALANCE, and JOINED then SYNCING
    for COMPLETING_REBALANCE, because the spec lets a consumer be slow between the two).

The rule that changed (`ConsumerRules.failed_sync_gives_up_partitions`)
    When a SyncGroup fails because the group moved on (REBALANCE_IN_PROGRESS, or the member was
    removed meanwhile: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION), today's consumer resets its
    generation and gives up its partitions before it rejoins (KAFKA-13419, KAFKA-13891,
    KAFKA-14639; and KAFKA-12983, which made the reset call `onJoinPrepare`). Before, it kept
    its generation and its partitions and rejoined with them, still reading partitions the
    rest of the group had already moved on from.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.group.assignors import ASSIGNORS, COOPERATIVE_STICKY, MemberSubscription, sticky_assign
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_GENERATION_ID,
    UNKNOWN_MEMBER_ID,
    Assignment,
    Errors,
    GroupInstanceId,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    MemberId,
    OffsetCommitRequest,
    RebalanceProtocol,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    TopicPartition,
)


class ClientStatus(enum.Enum):
    """Whether the consumer's process runs. PAUSED covers a crash and a long GC pause alike:
    the process neither reads nor sends; it may come back (`max.resumes`) or never."""

    NOT_STARTED = "not started"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"

    __hash__ = object.__hash__


class ClientPhase(enum.Enum):
    """Where the consumer is in a rebalance (`AbstractCoordinator.MemberState`, finer)."""

    UNJOINED = "unjoined"  # must send JoinGroup
    JOINING = "joining"  # JoinGroup sent, its answer parked at the coordinator
    JOINED = "joined"  # JoinGroup answered; SyncGroup not sent yet
    SYNCING = "syncing"  # SyncGroup sent, its answer parked
    STABLE = "stable"  # has its assignment

    __hash__ = object.__hash__


@dataclass(frozen=True)
class ConsumerRules:
    """What every consumer of the group is configured with.

    `strategy` is `partition.assignment.strategy` (assignor names in order of preference);
    `protocol` the rebalance protocol it implies; `withhold_transferring_partitions` whether the
    leader's cooperative-sticky assignor leaves a moving partition unassigned for a round (off:
    the partition is revoked and assigned in one round, which `validateCooperativeAssignment`
    forbids).
    """

    topics: tuple[tuple[str, int], ...]
    strategy: tuple[str, ...]
    protocol: RebalanceProtocol
    failed_sync_gives_up_partitions: bool = True
    withhold_transferring_partitions: bool = True

    @property
    def subscription(self) -> tuple[str, ...]:
        """The topics every consumer subscribes to."""
        return tuple(topic for topic, _ in self.topics)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Consumer:
    """One consumer's own view: its member id and generation as it last heard them, the
    partitions it owns (reads), and the JoinGroup/SyncGroup answers that reached it but that
    it has not handled yet."""

    status: ClientStatus = ClientStatus.RUNNING
    phase: ClientPhase = ClientPhase.UNJOINED
    member_id: MemberId = UNKNOWN_MEMBER_ID
    generation: int = UNKNOWN_GENERATION_ID
    protocol_name: str | None = None
    leader_members: tuple[JoinGroupResponseMember, ...] = ()
    owned: tuple[TopicPartition, ...] = ()
    rejoin_needed: bool = False
    join_response: JoinGroupResponse | None = None
    sync_response: SyncGroupResponse | None = None
    fatal_error: Errors | None = None
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def reading(self) -> tuple[TopicPartition, ...]:
        """The partitions this consumer reads now: what it owns while its process runs."""
        return self.owned if self.status is ClientStatus.RUNNING else ()


def _lost(consumer: Consumer) -> Consumer:
    """`onPartitionsLost`: drop everything without committing."""
    return replace(consumer, owned=())


def prepare_join(rules: ConsumerRules, consumer: Consumer) -> Consumer:
    """`ConsumerCoordinator.onJoinPrepare`: without a generation or a member id everything is
    lost; eager revokes everything; cooperative keeps what it owns (all of it is still
    subscribed)."""
    if consumer.generation == UNKNOWN_GENERATION_ID or consumer.member_id == UNKNOWN_MEMBER_ID:
        return _lost(consumer)
    if rules.protocol is RebalanceProtocol.EAGER:
        return replace(consumer, owned=())
    return consumer


def join_request(
    rules: ConsumerRules, consumer: Consumer, group_instance_id: GroupInstanceId | None
) -> JoinGroupRequest:
    """The JoinGroup a consumer sends: one protocol per configured assignor, each with the
    subscription, the partitions it owns and its generation (`ConsumerCoordinator.metadata`)."""
    subscription = Subscription(rules.subscription, consumer.owned, consumer.generation)
    protocols = tuple(JoinGroupRequestProtocol(name, subscription) for name in rules.strategy)
    return JoinGroupRequest(consumer.member_id, group_instance_id, CONSUMER_PROTOCOL_TYPE, protocols)


def _reset(consumer: Consumer, error: Errors) -> Consumer:
    """`resetStateAndGeneration` and then `onJoinPrepare` with no generation: everything lost."""
    member_id = UNKNOWN_MEMBER_ID if error is Errors.UNKNOWN_MEMBER_ID else consumer.member_id
    return replace(
        _lost(consumer),
        phase=ClientPhase.UNJOINED,
        member_id=member_id,
        generation=UNKNOWN_GENERATION_ID,
        leader_members=(),
        rejoin_needed=False,
    )


def _fatal(consumer: Consumer, error: Errors) -> Consumer:
    """A fatal error: the consumer stops and reads nothing more."""
    return replace(
        _lost(consumer),
        status=ClientStatus.STOPPED,
        fatal_error=error,
        join_response=None,
        sync_response=None,
        leader_members=(),
    )


FATAL_ERRORS = frozenset(
    {Errors.FENCED_INSTANCE_ID, Errors.GROUP_MAX_SIZE_REACHED, Errors.INCONSISTENT_GROUP_PROTOCOL}
)
"""Errors a consumer does not retry (`AbstractCoordinator` raises them to the application)."""


def on_join_response(consumer: Consumer, response: JoinGroupResponse) -> Consumer:
    """`JoinGroupResponseHandler`: success starts COMPLETING_REBALANCE with the generation and,
    for the leader, the members to assign; MEMBER_ID_REQUIRED gives the id to join with;
    UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION reset; REBALANCE_IN_PROGRESS and
    COORDINATOR_NOT_AVAILABLE retry. An answer that finds the consumer no longer joining (it
    was reset meanwhile) is ignored, as the handler's `state != PREPARING_REBALANCE` check does."""
    if consumer.phase is not ClientPhase.JOINING:
        return consumer
    error = response.error
    if error is Errors.NONE:
        is_leader = response.leader == response.member_id and not response.skip_assignment
        return replace(
            consumer,
            phase=ClientPhase.JOINED,
            member_id=response.member_id,
            generation=response.generation_id,
            protocol_name=response.protocol_name,
            leader_members=response.members if is_leader else (),
            rejoin_needed=False,
        )
    if error is Errors.MEMBER_ID_REQUIRED:
        return replace(consumer, phase=ClientPhase.UNJOINED, member_id=response.member_id)
    if error in FATAL_ERRORS:
        return _fatal(consumer, error)
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        return _reset(consumer, error)
    return replace(consumer, phase=ClientPhase.UNJOINED)


def leader_assignment(rules: ConsumerRules, consumer: Consumer) -> tuple[SyncGroupRequestAssignment, ...]:
    """`ConsumerCoordinator.onLeaderElected`: run the selected assignor over every member's
    subscription (nothing when this consumer is not the leader)."""
    if not consumer.leader_members or consumer.protocol_name is None:
        return ()
    return _assign(rules, consumer.protocol_name, consumer.leader_members)


@memoized  # the same members are assigned in many interleavings (callgrind: 3.4% fewer instructions)
def _assign(
    rules: ConsumerRules, protocol_name: str, leader_members: tuple[JoinGroupResponseMember, ...]
) -> tuple[SyncGroupRequestAssignment, ...]:
    """The selected assignor's result for `leader_members`, one entry per member in their order
    (memoized; measured on classic-late-sync-fixed)."""
    members = [
        MemberSubscription(
            member.member_id,
            member.group_instance_id,
            member.metadata.topics,
            member.metadata.owned_partitions,
            member.metadata.generation_id,
        )
        for member in leader_members
    ]
    partitions = dict(rules.topics)
    if protocol_name == COOPERATIVE_STICKY:
        result = sticky_assign(partitions, members, rules.withhold_transferring_partitions)
    else:
        result = ASSIGNORS[protocol_name](partitions, members)
    return tuple(
        SyncGroupRequestAssignment(member.member_id, Assignment(result.get(member.member_id, ())))
        for member in leader_members
    )


def sync_request(
    rules: ConsumerRules, consumer: Consumer, group_instance_id: GroupInstanceId | None
) -> SyncGroupRequest:
    """The SyncGroup a consumer sends after its JoinGroup response (with the assignment if it leads)."""
    return SyncGroupRequest(
        consumer.member_id,
        consumer.generation,
        group_instance_id,
        CONSUMER_PROTOCOL_TYPE,
        consumer.protocol_name,
        leader_assignment(rules, consumer),
    )


def on_sync_response(rules: ConsumerRules, consumer: Consumer, response: SyncGroupResponse) -> Consumer:
    """`SyncGroupResponseHandler` and `ConsumerCoordinator.onJoinComplete`.

    Success: eager takes the assignment; cooperative revokes what the assignment no longer has,
    takes the rest, and rejoins at once if it revoked anything (the second round of KIP-429).
    A failure because the group moved on resets and loses everything (or, under the old rule,
    keeps the generation and the partitions and just rejoins); FENCED_INSTANCE_ID is fatal.
    An answer that finds the consumer no longer syncing (its generation was reset meanwhile)
    is ignored (`hasGenerationReset`: the handler raises ILLEGAL_GENERATION to retry the join).
    """
    if consumer.phase is not ClientPhase.SYNCING:
        return consumer
    error = response.error
    if error is Errors.NONE:
        assigned = tuple(sorted(response.assignment.partitions))
        revoked = set(consumer.owned) - set(assigned)
        cooperative = rules.protocol is RebalanceProtocol.COOPERATIVE
        return replace(
            consumer,
            phase=ClientPhase.STABLE,
            owned=assigned,
            leader_members=(),
            rejoin_needed=consumer.rejoin_needed or (cooperative and bool(revoked)),
        )
    if error in FATAL_ERRORS:
        return _fatal(consumer, error)
    if error in (Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        if rules.failed_sync_gives_up_partitions:
            return _reset(consumer, error)
        return replace(consumer, phase=ClientPhase.UNJOINED, leader_members=(), rejoin_needed=False)
    return replace(consumer, phase=ClientPhase.UNJOINED, leader_members=())


def heartbeat_request(consumer: Consumer, group_instance_id: GroupInstanceId | None) -> HeartbeatRequest:
    """The heartbeat the consumer's heartbeat thread sends."""
    return HeartbeatRequest(consumer.member_id, consumer.generation, group_instance_id)


def on_heartbeat_response(consumer: Consumer, response: HeartbeatResponse) -> Consumer:
    """`HeartbeatResponseHandler`: REBALANCE_IN_PROGRESS asks to rejoin; UNKNOWN_MEMBER_ID and
    ILLEGAL_GENERATION reset (partitions lost before the next read); FENCED_INSTANCE_ID is fatal."""
    error = response.error
    if error is Errors.REBALANCE_IN_PROGRESS:
        return replace(consumer, rejoin_needed=True)
    if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
        return _reset(consumer, error)
    if error in FATAL_ERRORS:
        return _fatal(consumer, error)
    return consumer


def may_heartbeat(consumer: Consumer) -> bool:
    """The heartbeat thread runs from the JoinGroup response on (`HeartbeatThread`)."""
    return consumer.phase in (ClientPhase.JOINED, ClientPhase.SYNCING, ClientPhase.STABLE)


def commit_request(
    consumer: Consumer, group_instance_id: GroupInstanceId | None, offset: int
) -> OffsetCommitRequest:
    """`commitOffsetsAsync` of every partition the consumer owns, under its generation."""
    offsets = tuple((partition, offset) for partition in consumer.owned)
    return OffsetCommitRequest(consumer.member_id, consumer.generation, group_instance_id, offsets)


def leave(consumer: Consumer) -> Consumer:
    """`KafkaConsumer.close` of a dynamic member: revoke everything, then LeaveGroup."""
    return replace(
        consumer,
        status=ClientStatus.STOPPED,
        owned=(),
        join_response=None,
        sync_response=None,
        leader_members=(),
    )


__all__ = [
    "FATAL_ERRORS",
    "ClientPhase",
    "ClientStatus",
    "Consumer",
    "ConsumerRules",
    "commit_request",
    "heartbeat_request",
    "join_request",
    "leader_assignment",
    "leave",
    "may_heartbeat",
    "on_heartbeat_response",
    "on_join_response",
    "on_sync_response",
    "prepare_join",
    "sync_request",
]
