"""The KIP-848 consumer group protocol: one group, its coordinator and its consumers.

What it is
    The state machine of a consumer group under the *consumer* rebalance protocol
    (`group.protocol=consumer`, KIP-848, Kafka 4.x), as the group coordinator implements it
    (`GroupMetadataManager.consumerGroupHeartbeat`, `ConsumerGroup`, `ConsumerGroupMember`,
    `CurrentAssignmentBuilder`, `TargetAssignmentBuilder`) and as the consumer drives it with the
    `ConsumerGroupHeartbeat` API. The group consumes one topic; every consumer subscribes to it.
    Every action is a pure function `GroupState -> GroupState | None` (None: not enabled).

The coordinator's epochs
    * the **group epoch** grows by one whenever membership or subscriptions change: a member
      joins (its subscription is new), leaves (epoch -1) or is fenced (session or rebalance
      timeout);
    * the **target assignment** is recomputed by the server-side assignor (`uniform` or
      `range`, `spec.group.server_assignors`) at the first heartbeat that finds the group epoch
      ahead of the **assignment epoch**, which then takes the group epoch;
    * each **member epoch** says which target the member has reconciled to; members converge
      one heartbeat at a time (`spec.group.consumer_reconciliation`: STABLE,
      UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), and a member moves to a newer epoch only
      after its client has revoked what the new target takes away. Rule `revocation_epoch`: a
      member that has revoked and must revoke again stays in UNREVOKED_PARTITIONS at epoch + 1
      (`bump`, Kafka up to 4.1) or at its epoch (`keep`, Kafka 4.2+, KAFKA-19974);
    * each **partition epoch** (`ConsumerGroup.currentPartitionEpoch`) is the epoch of the member
      that holds the partition (assigned or pending revocation); a partition is given to a member
      only when no other member holds it, so under this protocol it is the *coordinator* that
      keeps a partition to one owner at a time (under the classic protocol only the clients'
      assignor and their good behaviour do).

Heartbeat epoch rules (`throwIfConsumerGroupHeartbeatRequestIsInvalid`,
`throwIfConsumerGroupMemberEpochIsInvalid`, `consumerGroupLeave`)
    * epoch 0: join or rejoin with an empty owned list; a static member (KIP-345) replaces the
      instance that left with -2, and is refused with UNRELEASED_INSTANCE_ID while that
      instance has not left;
    * epoch -1: leave; the member is removed and the group epoch bumped;
    * epoch -2: a static member leaves for now: it keeps its assignment (its partitions stay
      unassigned to others) until it returns with epoch 0 or its session expires;
    * a larger epoch than the member's, or a smaller one, is FENCED_MEMBER_EPOCH: the client
      loses its partitions without committing and rejoins with epoch 0 ...
    * ... except the member's *previous* epoch when the owned partitions are a subset of its
      assignment: the response carrying the bumped epoch may have been lost;
    * rule `static_rejoin`: a static member's epoch-0 join while its instance is active is
      UNRELEASED_INSTANCE_ID (`replace`, Kafka 4.x), even from that instance's own consumer, or
      handled in place like a dynamic member's (`in-place`, apache/kafka #23542);
    * rule `rejoin`: before KAFKA-19233 (fixed January 2026, apache/kafka #21305) the epoch-0
      rejoin of a member the coordinator still has went through the same check and was refused
      (`old`); now epoch 0 is always accepted (`fixed`).

Offset commits (`ConsumerGroup.validateOffsetCommit`)
    A consumer-protocol member commits with its member epoch. Rule `commit_rule`:
    * `exact` (Kafka up to 4.2): the epoch must equal the member's epoch, else STALE_MEMBER_EPOCH;
    * `range` (KIP-1251, Kafka 4.3, KAFKA-20066): the partition must be the member's and
      assignment epoch(partition) <= commit epoch <= member epoch. The exact rule refuses a
      legitimate commit whose client has not yet seen a bump (KAFKA-19779); both refuse a
      zombie's commit (one for a partition since given to another member).

Timers
    Time is abstracted to "expired or not": an armed timer may expire at any moment, since
    nothing bounds message delays against timeouts. The session timeout
    (`group.consumer.session.timeout.ms`) removes a static member that left with -2 and did not
    return (always explored), and may expire for a running consumer too, a false suspicion
    after a pause (bounded by `max_session_timeouts`). The rebalance timeout is armed when a
    member enters UNREVOKED_PARTITIONS and fences it if it is still at that epoch when it fires.

What the consumer does (the client's view, `ConsumerMembershipManager`)
    A client knows only what the coordinator's responses told it: its member epoch, its latest
    assignment, and the partitions it owns (processes). It takes newly assigned partitions as
    the response arrives and gives up revoked ones later (`ClientRevokePartitions`: the
    `onPartitionsRevoked` callback and the commit before it), then reports them gone in its next
    heartbeat. On FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID it loses everything and rejoins with
    epoch 0 and the same member id (Kafka 4.0 clients keep their member id, KIP-1082).

Messages
    A heartbeat is built from the client's view at the moment it is sent, so it may carry a
    stale epoch and owned list. It is usually handled at once (`ClientHeartbeat`: request,
    handling and response in one step), may lose its response (`ClientHeartbeatResponseLost`:
    the coordinator acted, the client never learns of it) or may be handled later
    (`ClientSendHeartbeat` then `CoordinatorHandleHeartbeat`, while the client goes on revoking
    and committing). A client has one heartbeat in flight at a time, as Kafka's
    `HeartbeatRequestManager`. Offset commits are handled at once (`ClientCommitOffset`) or later
    (`ClientSendCommit` then `CoordinatorHandleCommit`: a retry after a disconnect), possibly
    retried with the newest epoch the consumer has heard of in between (`ClientRetryCommit`, as
    Kafka's `CommitRequestManager` stamps every attempt).

What is abstracted
    One topic, one group, no subscription changes other than joining and leaving, no regex
    subscriptions, no classic-protocol members in the group, no upgrade or downgrade, no
    coordinator failover. Heartbeats always carry the owned list (Kafka sends it only when it
    changed). A client takes newly assigned partitions when the response arrives; in Kafka it
    does so a little later, and a partition the coordinator has since released cannot be started
    then because its offset fetch carries the older epoch (`ConsumerGroup.validateOffsetFetch`).

Properties (`INVARIANTS`, `STEP_PROPERTIES`, and the stuck check `rebalance_completes`)
    * `one_owner_per_partition`: no partition is owned by two consumers that are members;
    * `no_member_holds_reassigned_partition`: a member never holds a partition the coordinator
      has given to another member (at a newer epoch); `partition_epochs_consistent`: the
      partition epoch table is what the members hold, and never hits Kafka's assertion;
    * `epochs_are_ordered` (member <= assignment <= group epoch) and `epochs_only_grow`;
    * `no_zombie_commit`: a fenced or stale member's commit never lands; `no_false_fencing`:
      a legitimate commit is never refused (fails under the exact rule, KIP-1251);
      `no_self_fencing`: a static consumer is never refused its own instance id;
    * `no_partition_processed_twice`: not a guarantee; a consumer fenced by a timeout goes on
      processing until it hears so, which is why commits are fenced;
    * `rebalance_completes`: no reachable state where consumers wait and none of the protocol's
      own actions can move them on (KAFKA-19233 under the old rule).

Reading the code
    `@fast_init`, `@cache_hash`, `replace` and `@memoized` come from `spec._frozen` and only make
    the model checker's copies cheaper (see `spec.partition`). `handle_heartbeat`,
    `heartbeat_request`, `target_assignment`, `_observe` and the other `@memoized` helpers are
    memoized pure functions: code that patches a function they call (a mutation test) must clear
    their caches (`cache_clear()`); `_canonical` hands back equal parts as one object.

Ghost state
    `History` is not part of Kafka: the bounds' counters and the facts the invariants and
    witnesses read ("a zombie commit landed", "a fenced member rejoined"), with, per partition,
    how many times the coordinator gave it to another member, and per consumer, how many
    members the coordinator created for it (what makes a late commit a zombie's).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.group.consumer_reconciliation import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    NO_EPOCH,
    MemberState,
    ServerMember,
    new_member,
    reconcile,
)
from spec.group.server_assignors import range_assignment, uniform_assignment
from spec.group.types import Errors

# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------


class ServerAssignor(enum.Enum):
    """The server-side assignor (`group.consumer.assignors`; the heartbeat's `ServerAssignor`)."""

    UNIFORM = "uniform"
    RANGE = "range"

    __hash__ = object.__hash__


class RejoinRule(enum.Enum):
    """Whether an epoch-0 heartbeat of a member the coordinator still has is validated like any
    other epoch (`old`, before KAFKA-19233) or always accepted as a rejoin (`fixed`)."""

    OLD = "old"
    FIXED = "fixed"

    __hash__ = object.__hash__


class RevocationEpochRule(enum.Enum):
    """The epoch a member that has revoked recomputes at when it must revoke again: one more
    (`bump`, Kafka up to 4.1) or the same (`keep`, Kafka 4.2+, KAFKA-19974)."""

    BUMP = "bump"
    KEEP = "keep"

    __hash__ = object.__hash__


class StaticRejoinRule(enum.Enum):
    """What an epoch-0 join of a static member whose instance is still active gets: always
    UNRELEASED_INSTANCE_ID, fatal for the client, even when it is that instance's own consumer
    rejoining after a lost response or FENCED_MEMBER_EPOCH (`replace`, Kafka 4.x); or, when it is
    the same member id, its member back as a dynamic member would (`in-place`, apache/kafka
    #23542). One process per instance id runs at a time in this spec, so such a join always
    comes from the member's own consumer."""

    REPLACE = "replace"
    IN_PLACE = "in-place"

    __hash__ = object.__hash__


class CommitEpochRule(enum.Enum):
    """How an OffsetCommit's member epoch is validated: equal to the member's (`exact`) or
    assignment epoch <= commit epoch <= member epoch (`range`, KIP-1251)."""

    EXACT = "exact"
    RANGE = "range"

    __hash__ = object.__hash__


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """Protocol rules, group shape and exploration bounds of one model-checking run.

    The `max_*` fields and the `leaves`/`static_leaves`/`commits` switches only bound or
    enable what the environment may do (faults, consumers' decisions); no protocol guard reads
    them."""

    members: int = 2  # consumers, numbered 0..members-1 (member m<i>)
    partitions: int = 2  # partitions of the one subscribed topic
    static_members: int = 0  # consumers 0..k-1 have a group.instance.id (KIP-345)
    assignor: ServerAssignor = ServerAssignor.UNIFORM
    rejoin: RejoinRule = RejoinRule.FIXED
    commit_rule: CommitEpochRule = CommitEpochRule.EXACT
    revocation_epoch: RevocationEpochRule = RevocationEpochRule.BUMP
    static_rejoin: StaticRejoinRule = StaticRejoinRule.REPLACE
    commits: bool = False  # explore OffsetCommit from the consumers
    leaves: bool = False  # explore a consumer leaving with epoch -1 (once each)
    static_leaves: bool = False  # explore a static consumer leaving with epoch -2
    max_static_restarts: int = 0  # bound: static consumers coming back after -2
    max_lost_responses: int = 0  # bound: heartbeat responses lost
    max_late_heartbeats: int = 0  # bound: heartbeats handled later than sent
    max_session_timeouts: int = 0  # bound: session expiries
    max_rebalance_timeouts: int = 0  # bound: rebalance (revocation) timeouts that fence
    max_late_commits: int = 0  # bound: offset commits handled later than sent
    restamped_retries: bool = False  # explore a late commit retried with the consumer's newest epoch
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def is_static(self, client: int) -> bool:
        """The consumer has a group.instance.id."""
        return client < self.static_members


# ---------------------------------------------------------------------------------------
# Messages
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """`ConsumerGroupHeartbeatRequest` with the fields the protocol reads: the member epoch and
    the owned partitions (`TopicPartitions`; None: not sent). The member id and instance id are
    the sending consumer's own."""

    member_epoch: int
    owned: frozenset[int] | None


@fast_init
@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """`ConsumerGroupHeartbeatResponse`: an error, the member epoch and the assignment (None when
    the response carries none)."""

    error: Errors
    member_epoch: int = NO_EPOCH
    assignment: frozenset[int] | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """`OffsetCommitRequest` (v9+) for one partition: the member epoch the consumer knew when it
    sent it. `tenure` and `releases` are ghost: how many times the coordinator had given the
    partition to another member (a commit landing in a later tenure is a zombie's), and how many
    times any member had let it go, -1 when its maker did not hold it then (a commit landing
    after another release is no longer its maker's own)."""

    member_epoch: int
    partition: int
    tenure: int
    releases: int


# ---------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Coordinator:
    """The coordinator's record of the group (`ConsumerGroup`), indexed by consumer.

    `target` is the target assignment per member (None: no entry); `owners` is the partition
    epoch table, per partition (member, epoch) or None when free (Kafka keeps only the epoch;
    the owner is kept here so properties can name it). `illegal_state` is set when an update
    of the partition epochs would have thrown IllegalStateException in Kafka."""

    group_epoch: int
    assignment_epoch: int
    members: tuple[ServerMember | None, ...]
    target: tuple[frozenset[int] | None, ...]
    owners: tuple[tuple[int, int] | None, ...]
    illegal_state: bool = False
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


class ClientStatus(enum.Enum):
    """Where a consumer is in its membership (`MemberState` of the client, folded: JOINING,
    FENCED and RECONCILING/ACKNOWLEDGING become JOINING and MEMBER)."""

    JOINING = "joining"  # will heartbeat with epoch 0
    MEMBER = "member"  # has an epoch > 0 (stable or reconciling)
    UNSUBSCRIBED = "unsubscribed"  # left with epoch -1
    STOPPED = "stopped"  # a static consumer that left with -2 (the process stopped), or a fatal error

    __hash__ = object.__hash__


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Client:
    """One consumer's own view: what the coordinator's responses told it, and what it owns."""

    status: ClientStatus = ClientStatus.JOINING
    epoch: int = JOIN_GROUP_MEMBER_EPOCH  # the member epoch it last heard
    assignment: frozenset[int] = frozenset()  # the assignment it last heard
    owned: frozenset[int] = frozenset()  # what it processes; owned - assignment is still to revoke
    in_flight: HeartbeatRequest | None = None  # a heartbeat sent and not yet handled
    commit_in_flight: OffsetCommit | None = None  # an offset commit sent and not yet handled
    was_fenced: bool = False  # ghost: it has been told FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


class Event(enum.Enum):
    """Facts the ghost history records (each once)."""

    MEMBER_JOINED = "a consumer got its first assignment"
    GROUP_STABLE = "every member was stable at the group epoch with 2+ members"
    PARTITION_MOVED = "a partition was owned by one consumer, then by another"
    IDLE_MEMBER = "a stable member had no partition"
    MEMBER_LEFT = "a member left with epoch -1"
    STATIC_MEMBER_LEFT = "a static member left with epoch -2"
    STATIC_MEMBER_RETURNED = "a static member came back and got its partitions again"
    REVOKED_AGAIN = "a member that had revoked had to revoke more (a second revocation round)"
    PREVIOUS_EPOCH_ACCEPTED = "a heartbeat with the member's previous epoch was accepted (a bump was lost)"
    CLIENT_FENCED = "a consumer was told FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID"
    SELF_FENCED = "a static consumer was refused its own instance id (UNRELEASED_INSTANCE_ID)"
    STATIC_REJOINED_IN_PLACE = "a static consumer rejoined with epoch 0 and got its active member back"
    FENCED_MEMBER_REJOINED = "a fenced consumer rejoined and got an assignment"
    FENCED_WHILE_REVOKING = "the rebalance timeout fenced a member that was revoking"
    ZOMBIE_HOLDS_PARTITION = "a fenced consumer still owned a partition given to another member"
    COMMIT_ACCEPTED = "an offset commit was accepted"
    STALE_COMMIT_ACCEPTED = "a commit with an epoch older than the member's was accepted"
    ZOMBIE_COMMIT_REFUSED = "a fenced or stale consumer's commit was refused"
    ZOMBIE_COMMIT_LANDED = "a commit landed for a partition the committer did not hold"
    LEGITIMATE_COMMIT_REFUSED = "a commit for a partition the member held was refused"

    __hash__ = object.__hash__


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class History:
    """Ghost state: the bounds' counters and the facts that happened."""

    lost_responses: int = 0
    late_heartbeats: int = 0
    late_commits: int = 0
    session_timeouts: int = 0
    rebalance_timeouts: int = 0
    static_restarts: int = 0
    events: frozenset[Event] = frozenset()
    previous_owner: tuple[int | None, ...] = ()  # the last consumer that owned each partition
    holder: tuple[int | None, ...] = ()  # per partition: the last member the coordinator gave it to
    tenure: tuple[int, ...] = ()  # per partition: how many times the coordinator gave it to another member
    holding: tuple[int | None, ...] = ()  # per partition: the member that holds it now (None: free)
    releases: tuple[int, ...] = ()  # per partition: how many times a member let it go
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class GroupState:
    """The whole system: the coordinator, every consumer, the ghost history."""

    coordinator: Coordinator
    clients: tuple[Client, ...]
    history: History
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


def initial_state(config: ConsumerGroupConfig) -> GroupState:
    """An empty group at epoch 0; every consumer has subscribed and is about to join."""
    coordinator = Coordinator(
        group_epoch=0,
        assignment_epoch=0,
        members=(None,) * config.members,
        target=(None,) * config.members,
        owners=(None,) * config.partitions,
    )
    history = History(
        previous_owner=(None,) * config.partitions,
        holder=(None,) * config.partitions,
        tenure=(0,) * config.partitions,
        holding=(None,) * config.partitions,
        releases=(0,) * config.partitions,
    )
    return GroupState(coordinator, (Client(),) * config.members, history)


# ---------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class ClientHeartbeat:
    """`client` heartbeats and hears the answer (request, handling, response in one step)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientHeartbeatResponseLost:
    """`client` heartbeats; the coordinator handles it; the response never arrives (the client's
    request times out and it goes on with its old view)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientSendHeartbeat:
    """`client` sends a heartbeat that the coordinator will handle later."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class CoordinatorHandleHeartbeat:
    """The coordinator handles `client`'s heartbeat in flight; the client hears the answer."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientRevokePartitions:
    """`client` gives up the partitions its latest assignment no longer has (after
    `onPartitionsRevoked`); its next heartbeat reports them gone."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientCommitOffset:
    """`client` commits an offset for `partition`, which it owns, with the member epoch it knows
    (OffsetCommit v9+)."""

    client: int
    partition: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientSendCommit:
    """`client` sends an OffsetCommit for `partition` that the coordinator handles later."""

    client: int
    partition: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientRetryCommit:
    """`client`'s commit in flight failed (STALE_MEMBER_EPOCH, a timeout) and is sent again with
    the newest member epoch the consumer knows (`CommitRequestManager` rebuilds each attempt with
    `memberInfo.memberEpoch`), its offsets unchanged."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class CoordinatorHandleCommit:
    """The coordinator handles `client`'s OffsetCommit in flight."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientLeaveGroup:
    """`client` unsubscribes: it gives up its partitions and heartbeats with epoch -1."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientStaticLeave:
    """Static `client` shuts down: it gives up its partitions and heartbeats with epoch -2."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class ClientStaticRestart:
    """Static `client` starts again with the same group.instance.id and rejoins with epoch 0."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class CoordinatorSessionTimeout:
    """`client`'s member's session expires: the coordinator fences it (removes it)."""

    client: int


@fast_init
@dataclass(frozen=True, slots=True)
class CoordinatorRebalanceTimeout:
    """`client`'s member's rebalance timeout fires while it is still at the epoch the timer was
    armed at: the coordinator fences it."""

    client: int


Action = (
    ClientHeartbeat
    | ClientHeartbeatResponseLost
    | ClientSendHeartbeat
    | CoordinatorHandleHeartbeat
    | ClientRevokePartitions
    | ClientCommitOffset
    | ClientSendCommit
    | ClientRetryCommit
    | CoordinatorHandleCommit
    | ClientLeaveGroup
    | ClientStaticLeave
    | ClientStaticRestart
    | CoordinatorSessionTimeout
    | CoordinatorRebalanceTimeout
)


# ---------------------------------------------------------------------------------------
# The coordinator's rules (pure functions an implementation must agree with)
# ---------------------------------------------------------------------------------------


def request_error(request: HeartbeatRequest, is_static: bool) -> Errors | None:
    """`throwIfConsumerGroupHeartbeatRequestIsInvalid`, the member-epoch part: epoch 0 must carry
    an empty owned list; -2 needs a group.instance.id; any other negative epoch but -1 is
    invalid. None when the request is well formed."""
    epoch = request.member_epoch
    if epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.owned is None or request.owned:
            return Errors.INVALID_REQUEST  # "TopicPartitions must be empty when (re-)joining."
        return None
    if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return None if is_static else Errors.INVALID_REQUEST
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        return None
    return Errors.INVALID_REQUEST  # "MemberEpoch is invalid."


def member_epoch_error(
    member: ServerMember, received_epoch: int, owned: frozenset[int] | None, rejoin: RejoinRule
) -> Errors | None:
    """`throwIfConsumerGroupMemberEpochIsInvalid`: FENCED_MEMBER_EPOCH for an epoch ahead of the
    member's, or behind it unless it is the previous epoch and the owned partitions are a subset
    of the assignment (the response with the bumped epoch may have been lost). Under the fixed
    rule an epoch-0 rejoin is accepted before any check (KAFKA-19233)."""
    if rejoin is RejoinRule.FIXED and received_epoch == JOIN_GROUP_MEMBER_EPOCH:
        return None
    if received_epoch > member.epoch:
        return Errors.FENCED_MEMBER_EPOCH
    if received_epoch < member.epoch and (
        received_epoch != member.previous_epoch or owned is None or not owned <= member.assigned
    ):
        return Errors.FENCED_MEMBER_EPOCH
    return None


def commit_error(
    member: ServerMember | None, partition: int, commit_epoch: int, rule: CommitEpochRule
) -> Errors:
    """`ConsumerGroup.validateOffsetCommit` for a consumer-protocol member: UNKNOWN_MEMBER_ID for
    a member the group does not have; then the epoch rule (`CommitEpochRule`), STALE_MEMBER_EPOCH
    when it fails. Under KIP-1251 a partition the member does not hold (assigned or pending
    revocation) is refused too."""
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    if rule is CommitEpochRule.EXACT:
        return Errors.NONE if commit_epoch == member.epoch else Errors.STALE_MEMBER_EPOCH
    assigned_at = member.assignment_epoch(partition)
    if assigned_at is None or not assigned_at <= commit_epoch <= member.epoch:
        return Errors.STALE_MEMBER_EPOCH
    return Errors.NONE


@memoized
def target_assignment(
    config: ConsumerGroupConfig, members: tuple[int, ...], current: tuple[frozenset[int] | None, ...]
) -> tuple[frozenset[int] | None, ...]:
    """`TargetAssignmentBuilder` with the configured assignor: the new target per consumer (None
    for consumers that are not members). `uniform` starts from the current target."""
    if config.assignor is ServerAssignor.UNIFORM:
        previous = {m: current[m] or frozenset() for m in members}
        result = uniform_assignment(members, config.partitions, previous)
    else:
        static = frozenset(m for m in members if config.is_static(m))
        result = range_assignment(members, config.partitions, static)
    return tuple(result.get(m) if m in result else None for m in range(config.members))


def _with_member(coordinator: Coordinator, client: int, member: ServerMember | None) -> Coordinator:
    """The coordinator with `client`'s member record replaced, and the partition epochs updated
    as `ConsumerGroup.updateMember`/`removeMember` do: the old record's partitions are removed at
    its epoch, the new record's added at its epoch; a removal at the wrong epoch or an addition
    to a partition someone holds is Kafka's IllegalStateException (`illegal_state`)."""
    old = coordinator.members[client]
    owners = list(coordinator.owners)
    illegal = coordinator.illegal_state
    if old is not None:
        for p in sorted(old.holds()):
            if owners[p] != (client, old.epoch):
                illegal = True
            owners[p] = None
    if member is not None:
        for p in sorted(member.holds()):
            if owners[p] is not None:
                illegal = True
            owners[p] = (client, member.epoch)
    members = (*coordinator.members[:client], member, *coordinator.members[client + 1 :])
    target = coordinator.target
    if member is None:  # removeMember also deletes the member's target assignment
        target = (*target[:client], None, *target[client + 1 :])
    return replace(coordinator, members=members, owners=tuple(owners), target=target, illegal_state=illegal)


def fence_member(coordinator: Coordinator, client: int) -> Coordinator:
    """`consumerGroupFenceMember`: remove the member (its partitions become free, its target
    entry and timers go) and bump the group epoch."""
    removed = _with_member(coordinator, client, None)
    return replace(removed, group_epoch=coordinator.group_epoch + 1)


@memoized  # pure, and many interleavings send the same request to the same coordinator state
def handle_heartbeat(
    config: ConsumerGroupConfig, coordinator: Coordinator, client: int, request: HeartbeatRequest
) -> tuple[Coordinator, HeartbeatResponse]:
    """`GroupMetadataManager.consumerGroupHeartbeat` (and `consumerGroupLeave`): validate, then
    leave (-1), leave for now (-2) or join/heartbeat: (1) create or update the member, bumping
    the group epoch for a new member; (2) recompute the target assignment when the group epoch
    is ahead of the assignment epoch; (3) reconcile the member towards its target; answer its
    epoch and assignment."""
    is_static = config.is_static(client)
    invalid = request_error(request, is_static)
    if invalid is not None:
        return coordinator, HeartbeatResponse(invalid)
    epoch = request.member_epoch
    member = coordinator.members[client]
    if epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if member is None:
            return coordinator, HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        return fence_member(coordinator, client), HeartbeatResponse(Errors.NONE, LEAVE_GROUP_MEMBER_EPOCH)
    if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if member is None:
            return coordinator, HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        # consumerGroupStaticMemberGroupLeave: epoch -2, pending revocations dropped, assignment kept
        leaving = replace(
            member,
            epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            pending_revocation=frozenset(),
            assignment_epochs=tuple(pair for pair in member.assignment_epochs if pair[0] in member.assigned),
        )
        return _with_member(coordinator, client, leaving), HeartbeatResponse(
            Errors.NONE, LEAVE_GROUP_STATIC_MEMBER_EPOCH
        )
    group_epoch = coordinator.group_epoch
    if member is None:
        if epoch != JOIN_GROUP_MEMBER_EPOCH:
            return coordinator, HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        member = new_member()
        group_epoch += 1  # a new subscription: the group epoch is bumped
    elif (
        epoch == JOIN_GROUP_MEMBER_EPOCH
        and is_static
        and (
            member.epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
            or config.static_rejoin is StaticRejoinRule.REPLACE
        )
    ):
        # getOrMaybeSubscribeStaticConsumerGroupMember: replace the instance iff it left with -2
        if member.epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            return coordinator, HeartbeatResponse(Errors.UNRELEASED_INSTANCE_ID)
        # the new member id takes the old member's record (assignment and its epochs) at epoch 0
        member = replace(member, epoch=JOIN_GROUP_MEMBER_EPOCH, previous_epoch=JOIN_GROUP_MEMBER_EPOCH)
    else:
        fenced = member_epoch_error(member, epoch, request.owned, config.rejoin)
        if fenced is not None:
            return coordinator, HeartbeatResponse(fenced)
    updated = _with_member(replace(coordinator, group_epoch=group_epoch), client, member)
    if group_epoch > updated.assignment_epoch:
        members = tuple(m for m in range(config.members) if updated.members[m] is not None)
        updated = replace(
            updated,
            target=target_assignment(config, members, updated.target),
            assignment_epoch=group_epoch,
        )
    target = updated.target[client] or frozenset()
    owners = updated.owners

    def partition_epoch(partition: int) -> int:
        owner = owners[partition]
        return NO_EPOCH if owner is None else owner[1]

    bump = config.revocation_epoch is RevocationEpochRule.BUMP
    reconciled = reconcile(member, updated.assignment_epoch, target, partition_epoch, request.owned, bump)
    if reconciled is not member:
        updated = _with_member(updated, client, reconciled)
    return _canonical(updated), HeartbeatResponse(Errors.NONE, reconciled.epoch, reconciled.assigned)


# ---------------------------------------------------------------------------------------
# The client's rules
# ---------------------------------------------------------------------------------------


@memoized
def heartbeat_request(client: Client) -> HeartbeatRequest:
    """What the consumer sends: epoch 0 and nothing owned while joining, else its epoch and what
    it owns (revoked partitions count until `ClientRevokePartitions`). Memoized, so that the
    same client sends the same request object, which `handle_heartbeat`'s memo then meets by
    identity (callgrind, compiled, the check alone: consumer-two-revocation-rounds 567 -> 547 M
    instructions)."""
    if client.status is ClientStatus.JOINING:
        return HeartbeatRequest(JOIN_GROUP_MEMBER_EPOCH, frozenset())
    return HeartbeatRequest(client.epoch, client.owned)


def apply_response(client: Client, response: HeartbeatResponse) -> Client:
    """`ConsumerMembershipManager.onHeartbeatSuccess` / `onHeartbeatFailure`: on success take the
    epoch and assignment (and the newly assigned partitions); when fenced or unknown, lose every
    partition without committing (`onPartitionsLost`) and rejoin with epoch 0; on
    UNRELEASED_INSTANCE_ID or FENCED_INSTANCE_ID stop (fatal)."""
    if client.status not in (ClientStatus.JOINING, ClientStatus.MEMBER):
        return client
    if response.error is Errors.NONE:
        assignment = client.assignment if response.assignment is None else response.assignment
        return replace(
            client,
            status=ClientStatus.MEMBER,
            epoch=response.member_epoch,
            assignment=assignment,
            owned=client.owned | assignment,
        )
    if response.error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
        return replace(
            client,
            status=ClientStatus.JOINING,
            epoch=JOIN_GROUP_MEMBER_EPOCH,
            assignment=frozenset(),
            owned=frozenset(),
            was_fenced=True,
        )
    if response.error in (Errors.UNRELEASED_INSTANCE_ID, Errors.FENCED_INSTANCE_ID):
        return replace(client, status=ClientStatus.STOPPED, assignment=frozenset(), owned=frozenset())
    return client


# ---------------------------------------------------------------------------------------
# Helpers for the ghost history
# ---------------------------------------------------------------------------------------


Part = TypeVar("Part", Coordinator, Client, History)


@memoized
def _canonical(part: Part) -> Part:
    """The first part equal to `part` met in this run (hash-consing): the memoized functions that
    build a coordinator, a client or a history hand it back through here, so that equal parts
    built from different inputs are the same object, and the states holding them, met again, are
    compared by identity in the memos' lookups and the checker's (callgrind, compiled, the check
    alone, against the parts built afresh, with `_record` taking its events as one argument, a C
    call where `*events` was a generic one: consumer-two-revocation-rounds 643 -> 567 M
    instructions)."""
    return part


@memoized
def _counted(history: History, bound: str) -> History:
    """`history` with one more use of the bound `bound` (a counter of `History`). Memoized, so
    that equal histories are the same object (as `_heard`; callgrind: 2.1% fewer instructions
    on kafka-19974-exact-zombie-commit, 1.8% on consumer-late-heartbeat)."""
    changed: History = replace(history, **{bound: getattr(history, bound) + 1})
    return _canonical(changed)


def _with_client(state: GroupState, index: int, client: Client) -> GroupState:
    clients = (*state.clients[:index], client, *state.clients[index + 1 :])
    return GroupState(state.coordinator, clients, state.history)


def _record(state: GroupState, events: Collection[Event] = ()) -> GroupState:
    """Add facts to the history, and the facts every state change may create."""
    history = state.history
    if events and not history.events.issuperset(events):
        history = _canonical(replace(history, events=history.events.union(events)))
        state = GroupState(state.coordinator, state.clients, history)
    return _observe(state)


@memoized
def _observe(state: GroupState) -> GroupState:
    """The state after a change, with its history brought up to date: partitions that moved
    between consumers, fenced consumers still holding partitions given away, the group stable,
    and each partition's coordinator-side tenure. `state` itself when nothing is new.

    Memoized on the whole state, because many interleavings reach the same state: the state
    handed back is the one computed the first time, so the checker, which met that same object
    then, finds it known by identity instead of comparing it part by part (callgrind, against
    memoizing the history on the three parts: 3.8% fewer instructions on
    consumer-late-heartbeat, 7.6% on kafka-19974-exact-zombie-commit)."""
    coordinator, clients, history = state.coordinator, state.clients, state.history
    found: set[Event] = set()
    previous_owner = list(history.previous_owner)
    for index, client in enumerate(clients):
        for p in client.owned:
            if previous_owner[p] is not None and previous_owner[p] != index:
                found.add(Event.PARTITION_MOVED)
            previous_owner[p] = index
        if coordinator.members[index] is None and client.status is ClientStatus.MEMBER:
            for p in client.owned:
                owner = coordinator.owners[p]
                if owner is not None and owner[0] != index:
                    found.add(Event.ZOMBIE_HOLDS_PARTITION)
    present = [m for m in coordinator.members if m is not None]
    if (
        len(present) >= 2
        and coordinator.assignment_epoch == coordinator.group_epoch
        and all(m.state is MemberState.STABLE and m.epoch == coordinator.group_epoch for m in present)
    ):
        found.add(Event.GROUP_STABLE)
        if any(not m.assigned for m in present):
            found.add(Event.IDLE_MEMBER)
    holder = list(history.holder)
    tenure = list(history.tenure)
    for p, owner in enumerate(coordinator.owners):
        if owner is not None and owner[0] != holder[p]:
            holder[p] = owner[0]
            tenure[p] += 1
    holding = tuple(None if owner is None else owner[0] for owner in coordinator.owners)
    releases = tuple(
        count + 1 if was is not None and now != was else count
        for count, was, now in zip(history.releases, history.holding, holding, strict=True)
    )
    events_now = history.events | found
    owners_now = tuple(previous_owner)
    holder_now, tenure_now = tuple(holder), tuple(tenure)
    if (
        events_now == history.events
        and owners_now == history.previous_owner
        and tenure_now == history.tenure
        and holder_now == history.holder
        and holding == history.holding
    ):
        return state
    history = replace(
        history,
        events=events_now,
        previous_owner=owners_now,
        holder=holder_now,
        tenure=tenure_now,
        holding=holding,
        releases=releases,
    )
    return GroupState(coordinator, clients, _canonical(history))


def _response_events(before: Client, after: Client) -> list[Event]:
    """What a client's answer teaches the history."""
    events: list[Event] = []
    if after.was_fenced and not before.was_fenced:
        events.append(Event.CLIENT_FENCED)
    if before.status is ClientStatus.JOINING and after.status is ClientStatus.MEMBER:
        events.append(Event.MEMBER_JOINED)
        if before.was_fenced:
            events.append(Event.FENCED_MEMBER_REJOINED)
    return events


def _exchange(
    config: ConsumerGroupConfig, state: GroupState, index: int, request: HeartbeatRequest, delivered: bool
) -> GroupState:
    """The coordinator handles `request` from consumer `index`; the consumer hears the answer
    when `delivered`."""
    previous = state.coordinator.members[index]
    coordinator, response = handle_heartbeat(config, state.coordinator, index, request)
    before = state.clients[index]
    after = _heard(before, response if delivered else None)
    events: list[Event] = []
    member = coordinator.members[index]
    if response.error is Errors.NONE and previous is not None and 0 < request.member_epoch < previous.epoch:
        events.append(Event.PREVIOUS_EPOCH_ACCEPTED)
    if response.error is Errors.UNRELEASED_INSTANCE_ID:
        events.append(Event.SELF_FENCED)
    if (
        response.error is Errors.NONE
        and config.is_static(index)
        and request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        and previous is not None
        and previous.epoch > 0
    ):
        events.append(Event.STATIC_REJOINED_IN_PLACE)
    if (
        previous is not None
        and member is not None
        and previous.state is MemberState.UNREVOKED_PARTITIONS
        and member.state is MemberState.UNREVOKED_PARTITIONS
        and member.pending_revocation != previous.pending_revocation
    ):
        events.append(Event.REVOKED_AGAIN)
    if (
        response.error is Errors.NONE
        and previous is not None
        and previous.epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        and member is not None
        and member.assigned
    ):
        events.append(Event.STATIC_MEMBER_RETURNED)
    events.extend(_response_events(before, after))
    clients = (*state.clients[:index], after, *state.clients[index + 1 :])
    return _record(GroupState(coordinator, clients, state.history), events)


@memoized
def _heard(client: Client, response: HeartbeatResponse | None) -> Client:
    """The client once the coordinator has handled its heartbeat: nothing in flight, and the
    response applied when it arrives (None: lost). Memoized, so that equal clients are the
    same object and the states holding them compare by identity (callgrind: 8.9% fewer
    instructions on consumer-late-heartbeat, 16.3% on kafka-19974-exact-zombie-commit)."""
    after = replace(client, in_flight=None)
    return _canonical(after if response is None else apply_response(after, response))


# ---------------------------------------------------------------------------------------
# One function per action
# ---------------------------------------------------------------------------------------


def _may_heartbeat(client: Client) -> bool:
    return client.status in (ClientStatus.JOINING, ClientStatus.MEMBER) and client.in_flight is None


def client_heartbeat(
    config: ConsumerGroupConfig, state: GroupState, action: ClientHeartbeat
) -> GroupState | None:
    """A heartbeat handled at once; the client hears the answer."""
    client = state.clients[action.client]
    if not _may_heartbeat(client):
        return None
    return _exchange(config, state, action.client, heartbeat_request(client), delivered=True)


def client_heartbeat_response_lost(
    config: ConsumerGroupConfig, state: GroupState, action: ClientHeartbeatResponseLost
) -> GroupState | None:
    """A heartbeat handled at once whose response is lost (bounded by `max_lost_responses`)."""
    client = state.clients[action.client]
    if not _may_heartbeat(client) or state.history.lost_responses >= config.max_lost_responses:
        return None
    state = replace(state, history=_counted(state.history, "lost_responses"))
    return _exchange(config, state, action.client, heartbeat_request(client), delivered=False)


def client_send_heartbeat(
    config: ConsumerGroupConfig, state: GroupState, action: ClientSendHeartbeat
) -> GroupState | None:
    """A heartbeat leaves the client and waits in the network (bounded by `max_late_heartbeats`)."""
    client = state.clients[action.client]
    if not _may_heartbeat(client) or state.history.late_heartbeats >= config.max_late_heartbeats:
        return None
    history = _counted(state.history, "late_heartbeats")
    client = replace(client, in_flight=heartbeat_request(client))
    return replace(_with_client(state, action.client, client), history=history)


def coordinator_handle_heartbeat(
    config: ConsumerGroupConfig, state: GroupState, action: CoordinatorHandleHeartbeat
) -> GroupState | None:
    """The coordinator handles the heartbeat in flight, built from what the client knew when it
    sent it; the client applies the answer to what it knows now."""
    request = state.clients[action.client].in_flight
    if request is None:
        return None
    return _exchange(config, state, action.client, request, delivered=True)


def client_revoke_partitions(
    config: ConsumerGroupConfig, state: GroupState, action: ClientRevokePartitions
) -> GroupState | None:
    """The consumer finishes revoking what its latest assignment dropped."""
    client = state.clients[action.client]
    if client.status is not ClientStatus.MEMBER or client.owned <= client.assignment:
        return None
    client = replace(client, owned=client.owned & client.assignment)
    return _record(_with_client(state, action.client, client))


def _handle_commit(
    config: ConsumerGroupConfig, state: GroupState, index: int, commit: OffsetCommit
) -> GroupState:
    """The coordinator validates an OffsetCommit from consumer `index`. The history records
    whether it landed as a zombie's (another member has been given the partition since the commit
    was made, so it may overwrite that member's offsets), or was refused although the member that
    made it has held the partition without a break since (a false fencing). A late commit
    for a partition nobody else has held since is neither, even from a consumer fenced and back
    in the group meanwhile: it carries progress made while the consumer held it."""
    coordinator = state.coordinator
    member = coordinator.members[index]
    error = commit_error(member, commit.partition, commit.member_epoch, config.commit_rule)
    owner = coordinator.owners[commit.partition]
    undisturbed = state.history.tenure[commit.partition] == commit.tenure
    kept = state.history.releases[commit.partition] == commit.releases
    # a member that left for now (-2) is not expected to commit: its late commits may be refused
    holds = member is not None and member.epoch >= 0 and owner is not None and owner[0] == index and kept
    if error is Errors.NONE:
        events = [Event.COMMIT_ACCEPTED]
        if not undisturbed:
            events.append(Event.ZOMBIE_COMMIT_LANDED)
        if member is not None and commit.member_epoch < member.epoch:
            events.append(Event.STALE_COMMIT_ACCEPTED)
        return _record(state, events)
    return _record(state, [Event.LEGITIMATE_COMMIT_REFUSED if holds else Event.ZOMBIE_COMMIT_REFUSED])


def _new_commit(state: GroupState, index: int, partition: int) -> OffsetCommit:
    """An OffsetCommit consumer `index` makes now for `partition`, with its ghost marks: the
    partition's tenure, and its release count if the coordinator has the consumer as its holder
    now (-1 otherwise: a fenced consumer's commit is never its holder's own)."""
    owner = state.coordinator.owners[partition]
    held = owner is not None and owner[0] == index
    history = state.history
    return OffsetCommit(
        state.clients[index].epoch,
        partition,
        history.tenure[partition],
        history.releases[partition] if held else -1,
    )


def _may_commit(config: ConsumerGroupConfig, client: Client, partition: int) -> bool:
    return config.commits and client.status is ClientStatus.MEMBER and partition in client.owned


def client_commit_offset(
    config: ConsumerGroupConfig, state: GroupState, action: ClientCommitOffset
) -> GroupState | None:
    """An OffsetCommit for a partition the consumer owns, with the epoch it knows, handled at once."""
    client = state.clients[action.client]
    if not _may_commit(config, client, action.partition):
        return None
    commit = _new_commit(state, action.client, action.partition)
    return _handle_commit(config, state, action.client, commit)


def client_send_commit(
    config: ConsumerGroupConfig, state: GroupState, action: ClientSendCommit
) -> GroupState | None:
    """An OffsetCommit that the coordinator will handle later (a retry after a disconnect, a slow
    network), bounded by `max_late_commits`; one at a time per consumer."""
    client = state.clients[action.client]
    if not _may_commit(config, client, action.partition) or client.commit_in_flight is not None:
        return None
    if state.history.late_commits >= config.max_late_commits:
        return None
    commit = _new_commit(state, action.client, action.partition)
    history = _counted(state.history, "late_commits")
    return replace(
        _with_client(state, action.client, replace(client, commit_in_flight=commit)), history=history
    )


def client_retry_commit(
    config: ConsumerGroupConfig, state: GroupState, action: ClientRetryCommit
) -> GroupState | None:
    """The commit in flight is sent again stamped with the consumer's newest epoch (only while it
    is a member; explored when `restamped_retries`)."""
    client = state.clients[action.client]
    commit = client.commit_in_flight
    if not config.restamped_retries or commit is None or client.status is not ClientStatus.MEMBER:
        return None
    if commit.member_epoch == client.epoch:
        return None
    client = replace(client, commit_in_flight=replace(commit, member_epoch=client.epoch))
    return _with_client(state, action.client, client)


def coordinator_handle_commit(
    config: ConsumerGroupConfig, state: GroupState, action: CoordinatorHandleCommit
) -> GroupState | None:
    """The coordinator handles the consumer's commit in flight, against the group as it is now."""
    client = state.clients[action.client]
    commit = client.commit_in_flight
    if commit is None:
        return None
    state = _with_client(state, action.client, _commit_handled(client))
    return _handle_commit(config, state, action.client, commit)


@memoized
def _commit_handled(client: Client) -> Client:
    """The client once its commit in flight has reached the coordinator; memoized like `_heard`
    (callgrind, with the identity tests in `epochs_only_grow`: 1.2% fewer instructions on
    kafka-19974-exact-zombie-commit)."""
    return _canonical(replace(client, commit_in_flight=None))


def client_leave_group(
    config: ConsumerGroupConfig, state: GroupState, action: ClientLeaveGroup
) -> GroupState | None:
    """The consumer unsubscribes: it revokes everything, then heartbeats with epoch -1."""
    client = state.clients[action.client]
    if not config.leaves or client.status is not ClientStatus.MEMBER or client.in_flight is not None:
        return None
    left = Client(
        ClientStatus.UNSUBSCRIBED,
        LEAVE_GROUP_MEMBER_EPOCH,
        commit_in_flight=client.commit_in_flight,
        was_fenced=client.was_fenced,
    )
    coordinator, response = handle_heartbeat(
        config, state.coordinator, action.client, HeartbeatRequest(LEAVE_GROUP_MEMBER_EPOCH, frozenset())
    )
    events = (Event.MEMBER_LEFT,) if response.error is Errors.NONE else ()
    return _record(
        _with_client(GroupState(coordinator, state.clients, state.history), action.client, left), events
    )


def client_static_leave(
    config: ConsumerGroupConfig, state: GroupState, action: ClientStaticLeave
) -> GroupState | None:
    """A static consumer shuts down: it revokes everything, then heartbeats with epoch -2."""
    client = state.clients[action.client]
    if (
        not config.static_leaves
        or not config.is_static(action.client)
        or client.status is not ClientStatus.MEMBER
        or client.in_flight is not None
    ):
        return None
    stopped = Client(
        ClientStatus.STOPPED,
        LEAVE_GROUP_STATIC_MEMBER_EPOCH,
        commit_in_flight=client.commit_in_flight,
        was_fenced=client.was_fenced,
    )
    coordinator, response = handle_heartbeat(
        config,
        state.coordinator,
        action.client,
        HeartbeatRequest(LEAVE_GROUP_STATIC_MEMBER_EPOCH, frozenset()),
    )
    events = (Event.STATIC_MEMBER_LEFT,) if response.error is Errors.NONE else ()
    return _record(
        _with_client(GroupState(coordinator, state.clients, state.history), action.client, stopped), events
    )


def client_static_restart(
    config: ConsumerGroupConfig, state: GroupState, action: ClientStaticRestart
) -> GroupState | None:
    """The static consumer's process starts again; it will rejoin with epoch 0 and its
    group.instance.id (bounded by `max_static_restarts`)."""
    client = state.clients[action.client]
    if (
        not config.is_static(action.client)
        or client.status is not ClientStatus.STOPPED
        or state.history.static_restarts >= config.max_static_restarts
    ):
        return None
    history = _counted(state.history, "static_restarts")
    restarted = Client(commit_in_flight=client.commit_in_flight, was_fenced=client.was_fenced)
    return replace(_with_client(state, action.client, restarted), history=history)


def coordinator_session_timeout(
    config: ConsumerGroupConfig, state: GroupState, action: CoordinatorSessionTimeout
) -> GroupState | None:
    """The member's session expires (`scheduleConsumerGroupSessionTimeout`): it is fenced. For a
    static member that left with -2 this is the designed end of its absence, always enabled and
    not counted; for a consumer still running it is a false suspicion (a long pause, a slow
    network), bounded by `max_session_timeouts`."""
    member = state.coordinator.members[action.client]
    if member is None:
        return None
    history = state.history
    if member.epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if history.session_timeouts >= config.max_session_timeouts:
            return None
        history = _counted(history, "session_timeouts")
    coordinator = fence_member(state.coordinator, action.client)
    return _record(GroupState(coordinator, state.clients, history))


def coordinator_rebalance_timeout(
    config: ConsumerGroupConfig, state: GroupState, action: CoordinatorRebalanceTimeout
) -> GroupState | None:
    """The rebalance timeout armed when the member started revoking fires while the member is
    still at that epoch (`scheduleConsumerGroupRebalanceTimeout`): it is fenced."""
    member = state.coordinator.members[action.client]
    if member is None or member.rebalance_deadline is None or member.rebalance_deadline != member.epoch:
        return None
    if state.history.rebalance_timeouts >= config.max_rebalance_timeouts:
        return None
    history = _counted(state.history, "rebalance_timeouts")
    coordinator = fence_member(state.coordinator, action.client)
    return _record(GroupState(coordinator, state.clients, history), [Event.FENCED_WHILE_REVOKING])


# ---------------------------------------------------------------------------------------
# The transition relation
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class _ClientActions:
    """Every action object of one consumer (built once per configuration)."""

    heartbeat: tuple[Action, ...]  # ClientHeartbeat, and the lost / late variants when enabled
    handle: CoordinatorHandleHeartbeat
    revoke: ClientRevokePartitions
    session_timeout: CoordinatorSessionTimeout
    commit: tuple[tuple[Action, ...], ...]  # per partition: commit at once, and late when enabled
    handle_commit: CoordinatorHandleCommit
    retry_commit: tuple[Action, ...]
    leave: tuple[Action, ...]  # ClientLeaveGroup / ClientStaticLeave when enabled
    restart: tuple[Action, ...]
    timeouts: tuple[Action, ...]  # session and rebalance timeouts when enabled


@memoized
def _actions_of(config: ConsumerGroupConfig) -> tuple[_ClientActions, ...]:
    """Every action object of each consumer (built once per configuration)."""
    table: list[_ClientActions] = []
    for c in range(config.members):
        heartbeat: list[Action] = [ClientHeartbeat(c)]
        if config.max_lost_responses:
            heartbeat.append(ClientHeartbeatResponseLost(c))
        if config.max_late_heartbeats:
            heartbeat.append(ClientSendHeartbeat(c))
        commit: list[tuple[Action, ...]] = []
        for p in range(config.partitions):
            per_partition: list[Action] = []
            if config.commits:
                per_partition.append(ClientCommitOffset(c, p))
                if config.max_late_commits:
                    per_partition.append(ClientSendCommit(c, p))
            commit.append(tuple(per_partition))
        leave: list[Action] = []
        if config.leaves:
            leave.append(ClientLeaveGroup(c))
        if config.is_static(c) and config.static_leaves:
            leave.append(ClientStaticLeave(c))
        restart: list[Action] = []
        if config.is_static(c) and config.max_static_restarts:
            restart.append(ClientStaticRestart(c))
        timeouts: list[Action] = []
        if config.max_session_timeouts:
            timeouts.append(CoordinatorSessionTimeout(c))
        if config.max_rebalance_timeouts:
            timeouts.append(CoordinatorRebalanceTimeout(c))
        table.append(
            _ClientActions(
                tuple(heartbeat),
                CoordinatorHandleHeartbeat(c),
                ClientRevokePartitions(c),
                CoordinatorSessionTimeout(c),
                tuple(commit),
                CoordinatorHandleCommit(c),
                (ClientRetryCommit(c),) if config.restamped_retries else (),
                tuple(leave),
                tuple(restart),
                tuple(timeouts),
            )
        )
    return tuple(table)


def candidate_actions(config: ConsumerGroupConfig, state: GroupState) -> list[Action]:
    """The actions worth trying in `state`: a cheap superset of the enabled ones (it skips the
    actions of consumers plainly in the wrong status); `step` applies the full guards.

    A list, not a generator: the checker tries every action of every state it expands, and a
    compiled generator resumes once per action (callgrind, compiled, the check alone, with the
    stuck check's shared action objects, `progress_actions`: consumer-two-revocation-rounds
    547 -> 512 M instructions, kafka-19974-exact-zombie-commit 140 -> 134 M, consumer-late-heartbeat
    55.7 -> 53.0 M)."""
    offered: list[Action] = []
    members = state.coordinator.members
    for index, (client, actions) in enumerate(zip(state.clients, _actions_of(config), strict=True)):
        status = client.status
        if status is ClientStatus.JOINING or status is ClientStatus.MEMBER:
            if client.in_flight is None:
                offered.extend(actions.heartbeat)
            else:
                offered.append(actions.handle)
        if status is ClientStatus.MEMBER:
            if not client.owned <= client.assignment:
                offered.append(actions.revoke)
            for p in client.owned:
                offered.extend(actions.commit[p])
            offered.extend(actions.leave)
        elif status is ClientStatus.STOPPED:
            offered.extend(actions.restart)
        if client.commit_in_flight is not None:
            offered.append(actions.handle_commit)
            offered.extend(actions.retry_commit)
        member = members[index]
        if member is not None:
            offered.extend(actions.timeouts)
            if member.epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and not config.max_session_timeouts:
                offered.append(actions.session_timeout)
    return offered


_ACTION_FUNCTIONS: dict[type, Callable[[ConsumerGroupConfig, GroupState, Any], GroupState | None]] = {
    ClientHeartbeat: client_heartbeat,
    ClientHeartbeatResponseLost: client_heartbeat_response_lost,
    ClientSendHeartbeat: client_send_heartbeat,
    CoordinatorHandleHeartbeat: coordinator_handle_heartbeat,
    ClientRevokePartitions: client_revoke_partitions,
    ClientCommitOffset: client_commit_offset,
    ClientSendCommit: client_send_commit,
    ClientRetryCommit: client_retry_commit,
    CoordinatorHandleCommit: coordinator_handle_commit,
    ClientLeaveGroup: client_leave_group,
    ClientStaticLeave: client_static_leave,
    ClientStaticRestart: client_static_restart,
    CoordinatorSessionTimeout: coordinator_session_timeout,
    CoordinatorRebalanceTimeout: coordinator_rebalance_timeout,
}


def step(config: ConsumerGroupConfig, state: GroupState, action: Action) -> GroupState | None:
    """Apply `action` if it is enabled in `state`; None otherwise."""
    return _ACTION_FUNCTIONS[type(action)](config, state, action)


# ---------------------------------------------------------------------------------------
# Invariants (safety properties of every reachable state)
# ---------------------------------------------------------------------------------------


def _is_member(state: GroupState, index: int) -> bool:
    """The consumer is running and the coordinator still counts it as a member."""
    return state.clients[index].status is ClientStatus.MEMBER and state.coordinator.members[index] is not None


def one_owner_per_partition(state: GroupState) -> bool:
    """No partition is owned by two consumers at once, among the consumers the coordinator still
    counts as members. Under the consumer protocol the coordinator enforces it: a partition is
    given to a member only when its partition epoch is free, and it is freed only once the
    previous owner's heartbeat no longer lists it. A consumer the coordinator has fenced may
    still hold partitions until it hears so (see `no_partition_processed_twice`): the coordinator
    cannot stop it, only refuse its commits."""
    seen: set[int] = set()
    for index, client in enumerate(state.clients):
        if not client.owned or not _is_member(state, index):
            continue
        if not seen.isdisjoint(client.owned):
            return False
        seen |= client.owned
    return True


def no_partition_processed_twice(state: GroupState) -> bool:
    """No partition is owned by two running consumers at once, fenced ones included. Not a
    guarantee: a consumer fenced by a timeout (a long pause, a slow revocation) keeps processing
    until its next heartbeat tells it, while the coordinator has already given its partitions
    to others; Kafka makes such a zombie harmless by refusing its commits."""
    seen: set[int] = set()
    for client in state.clients:
        if client.status is not ClientStatus.MEMBER:
            continue
        if not seen.isdisjoint(client.owned):
            return False
        seen |= client.owned
    return True


def partition_epochs_consistent(state: GroupState) -> bool:
    """The partition epoch table is exactly what the members hold: every partition assigned or
    pending revocation to a member carries that member's epoch, no partition is held by two
    members, a free partition is held by none, and no update ever hit Kafka's
    IllegalStateException (adding an epoch to an owned partition, removing one at another epoch)."""
    coordinator = state.coordinator
    if coordinator.illegal_state:
        return False
    expected: list[tuple[int, int] | None] = [None] * len(coordinator.owners)
    for index, member in enumerate(coordinator.members):
        if member is None:
            continue
        for p in member.holds():
            if expected[p] is not None:
                return False
            expected[p] = (index, member.epoch)
    return tuple(expected) == coordinator.owners


def no_member_holds_reassigned_partition(state: GroupState) -> bool:
    """A member never holds a partition the coordinator has given to another member (which does so
    at a newer epoch): for every consumer still a member, each partition it owns has that member as
    its owner in the partition epoch table. Vanlightly's TLA+ draft of KIP-848 checks the same
    safety property as NoDoubleClientAssignment."""
    owners = state.coordinator.owners
    for index, client in enumerate(state.clients):
        if not client.owned or not _is_member(state, index):
            continue
        for p in client.owned:
            owner = owners[p]
            if owner is not None and owner[0] != index:
                return False
    return True


def epochs_are_ordered(state: GroupState) -> bool:
    """member epoch <= assignment epoch <= group epoch, and no consumer knows an epoch newer than
    its member's on the coordinator (a consumer learns epochs only from the coordinator)."""
    coordinator = state.coordinator
    if coordinator.assignment_epoch > coordinator.group_epoch:
        return False
    for index, member in enumerate(coordinator.members):
        if member is None:
            continue
        if member.epoch > coordinator.assignment_epoch:
            return False
        client = state.clients[index]
        if client.status is ClientStatus.MEMBER and member.epoch >= 0 and client.epoch > member.epoch:
            return False
    return True


def no_zombie_commit(state: GroupState) -> bool:
    """A fenced or stale member's commit never lands where it does harm: no OffsetCommit is
    accepted for a partition that another member has been given since the commit was made (it
    may overwrite the new owner's offsets: KIP-1251's "zombie commit"). Every accepted commit
    comes from a member of the group (UNKNOWN_MEMBER_ID otherwise), so a fenced consumer's old
    commit lands only once it is back in the group, and only if nobody held the partition in
    between. With the exact rule it holds only while a commit keeps the epoch it was made
    with and the member's epoch moves on once it has revoked (`revocation_epoch` bump): a
    partition leaves a member only when the member moves to a newer epoch or is removed. A late
    commit gets through when the epoch is kept after a revocation (KAFKA-19974) or when the
    consumer retries it with an epoch learned since (`restamped_retries`). KIP-1251's range rule
    checks the partition is still the member's and closes both, except when the partition has
    come back to the member meanwhile: a restamped retry then passes the rule too."""
    return Event.ZOMBIE_COMMIT_LANDED not in state.history.events


def no_self_fencing(state: GroupState) -> bool:
    """A static consumer is never refused its own group.instance.id: UNRELEASED_INSTANCE_ID, fatal
    for the Java client, is for a second instance while the first has not left. Fails under the
    `replace` rule when the instance's own consumer rejoins with epoch 0 after a lost response or
    FENCED_MEMBER_EPOCH (apache/kafka #23542)."""
    return Event.SELF_FENCED not in state.history.events


def no_false_fencing(state: GroupState) -> bool:
    """A legitimate commit is never refused: a commit for a partition the member holds on the
    coordinator, with an epoch the member had, is accepted. Fails under the exact rule when the
    coordinator bumped the member's epoch (keeping the partition) and the consumer has not heard
    of it yet (KAFKA-19779); KIP-1251's range rule fixes it."""
    return Event.LEGITIMATE_COMMIT_REFUSED not in state.history.events


# ---------------------------------------------------------------------------------------
# The stuck check (a rebalance no action can complete)
# ---------------------------------------------------------------------------------------


def members_wait(state: GroupState) -> bool:
    """A running consumer waits for the group: it is (re)joining, or its member is not yet
    reconciled to the group epoch, or the target is behind the group epoch."""
    coordinator = state.coordinator
    for index, client in enumerate(state.clients):
        if client.status is ClientStatus.JOINING:
            return True
        if client.status is not ClientStatus.MEMBER:
            continue
        member = coordinator.members[index]
        if member is None or member.epoch < 0:
            continue
        if coordinator.assignment_epoch < coordinator.group_epoch:
            return True
        if member.state is not MemberState.STABLE or member.epoch != coordinator.assignment_epoch:
            return True
    return False


def progress_actions(config: ConsumerGroupConfig, state: GroupState) -> Iterator[Action]:
    """The actions by which the protocol itself completes a rebalance: heartbeats that arrive,
    revocations the consumers finish, and the session timeout of a static member that left
    with -2 (the designed way its partitions come back). Not faults (lost responses), not
    consumers' decisions (leaving, restarting), and not the timeouts that fence a running
    consumer: those end a wait only by treating a live member as dead, which costs the group
    a session or rebalance timeout (45 s / 5 min by default) with partitions unconsumed."""
    # The action objects `candidate_actions` offers, so that the successors the stuck check
    # keeps for the checker (`spec._frozen.SharedSteps`) are found by identity, with their
    # hashes already known (measured with the list of `candidate_actions`, see there).
    for c, actions in enumerate(_actions_of(config)):
        yield actions.heartbeat[0]  # ClientHeartbeat
        yield actions.handle
        yield actions.revoke
        member = state.coordinator.members[c]
        if member is not None and member.epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            yield actions.session_timeout


def rebalance_completes(
    config: ConsumerGroupConfig, apply: Callable[[GroupState, Action], GroupState | None] | None = None
) -> Callable[[GroupState], bool]:
    """The stuck check: it fails in a state where consumers wait (`members_wait`) and none of the
    protocol's own actions (`progress_actions`) changes anything. Under the old rejoin rule a
    consumer fenced with FENCED_MEMBER_EPOCH while the coordinator still has its member rejoins
    with epoch 0 and is refused again and again (KAFKA-19233): only its session timeout can end
    the wait. `apply` is `step` under `config` (the model passes one that keeps the successors
    for the checker, `spec._frozen.SharedSteps`)."""
    from spec.machines import not_stuck

    return not_stuck(
        members_wait,
        lambda state: progress_actions(config, state),
        apply or (lambda state, action: step(config, state, action)),
    )


INVARIANTS: dict[str, Callable[[GroupState], bool]] = {
    "one_owner_per_partition": one_owner_per_partition,
    "no_partition_processed_twice": no_partition_processed_twice,
    "partition_epochs_consistent": partition_epochs_consistent,
    "no_member_holds_reassigned_partition": no_member_holds_reassigned_partition,
    "epochs_are_ordered": epochs_are_ordered,
    "no_zombie_commit": no_zombie_commit,
    "no_false_fencing": no_false_fencing,
    "no_self_fencing": no_self_fencing,
}
"""Every state invariant of the consumer group, by name (the stuck check `rebalance_completes`
depends on the configuration and is built by `invariants_for`)."""


def invariants_for(
    config: ConsumerGroupConfig, apply: Callable[[GroupState, Action], GroupState | None] | None = None
) -> dict[str, Callable[[GroupState], bool]]:
    """Every invariant, the stuck check included, for `config` (`apply`: see `rebalance_completes`)."""
    return {**INVARIANTS, "rebalance_completes": rebalance_completes(config, apply)}


# ---------------------------------------------------------------------------------------
# Step properties
# ---------------------------------------------------------------------------------------


def epochs_only_grow(before: GroupState, after: GroupState) -> bool:
    """Epochs only grow: the group and assignment epochs never decrease; a member's epoch never
    decreases while it stays in the group, except that a static member's goes to -2 when it
    leaves for now and to 0 when a new instance replaces it; a running consumer's known epoch
    never decreases except when it rejoins (0) or leaves (-1, -2)."""
    old, new = before.coordinator, after.coordinator
    if new is not old:
        if new.group_epoch < old.group_epoch or new.assignment_epoch < old.assignment_epoch:
            return False
        for was, now in zip(old.members, new.members, strict=True):
            if was is None or now is None or now is was:
                continue
            if now.epoch < was.epoch and now.epoch not in (
                LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                JOIN_GROUP_MEMBER_EPOCH,
            ):
                return False
            if now.epoch == JOIN_GROUP_MEMBER_EPOCH and was.epoch not in (LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0):
                return False
    if after.clients is before.clients:
        return True
    for was_client, now_client in zip(before.clients, after.clients, strict=True):
        if now_client is was_client or now_client.status is not ClientStatus.MEMBER:
            continue
        if was_client.status is ClientStatus.MEMBER and now_client.epoch < was_client.epoch:
            return False
    return True


STEP_PROPERTIES: dict[str, Callable[[GroupState, GroupState], bool]] = {"epochs_only_grow": epochs_only_grow}


# ---------------------------------------------------------------------------------------
# Witnesses (states that must be reachable, so no property holds vacuously)
# ---------------------------------------------------------------------------------------


def _happened(event: Event) -> Callable[[GroupState], bool]:
    def witness(state: GroupState) -> bool:
        return event in state.history.events

    witness.__doc__ = f"Reachable: {event.value}."
    witness.__name__ = event.name.lower()
    return witness


WITNESSES: dict[str, Callable[[GroupState], bool]] = {event.name.lower(): _happened(event) for event in Event}
"""Reachability goals, one per ghost fact (`Event`): e.g. `group_stable`, `partition_moved`,
`static_member_returned`, `fenced_while_revoking`, `zombie_commit_refused`."""


__all__ = [
    "INVARIANTS",
    "STEP_PROPERTIES",
    "WITNESSES",
    "Action",
    "Client",
    "ClientCommitOffset",
    "ClientHeartbeat",
    "ClientHeartbeatResponseLost",
    "ClientLeaveGroup",
    "ClientRetryCommit",
    "ClientRevokePartitions",
    "ClientSendCommit",
    "ClientSendHeartbeat",
    "ClientStaticLeave",
    "ClientStaticRestart",
    "ClientStatus",
    "CommitEpochRule",
    "ConsumerGroupConfig",
    "Coordinator",
    "CoordinatorHandleCommit",
    "CoordinatorHandleHeartbeat",
    "CoordinatorRebalanceTimeout",
    "CoordinatorSessionTimeout",
    "Event",
    "GroupState",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "History",
    "OffsetCommit",
    "RejoinRule",
    "RevocationEpochRule",
    "ServerAssignor",
    "StaticRejoinRule",
    "apply_response",
    "candidate_actions",
    "commit_error",
    "epochs_only_grow",
    "fence_member",
    "handle_heartbeat",
    "heartbeat_request",
    "initial_state",
    "invariants_for",
    "member_epoch_error",
    "members_wait",
    "progress_actions",
    "rebalance_completes",
    "request_error",
    "step",
    "target_assignment",
]
