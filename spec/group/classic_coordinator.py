"""The group coordinator's side of the classic protocol: one `ClassicGroup` and its request handlers.

What it is
    A classic group is a small state machine over the states of `ClassicGroupState`:

    * Empty: no members (a new group, or every member left); offsets may expire;
    * PreparingRebalance: a rebalance began; members must send JoinGroup again; the join phase
      completes when every known member has rejoined (`hasAllMembersJoined`) or when the
      rebalance timeout fires (members that did not rejoin are then removed);
    * CompletingRebalance: the join phase completed: the generation id grew by one, every member
      got its JoinGroup response (the leader, the member that joined first, also got every
      member's subscription) and the coordinator waits for the leader's SyncGroup with the
      assignment; followers' SyncGroups wait for it;
    * Stable: the leader's assignment is stored and sent to every member;
    * Dead: the group is gone (its offsets expired, or the coordinator moved).

    Exactly the transitions of `ClassicGroupState.addValidPreviousStates` are allowed
    (`VALID_PREVIOUS_STATES`); any other is a bug in the spec (`transition` raises).

    The handlers are `handle_join_group`, `handle_sync_group`, `handle_heartbeat`,
    `handle_leave_group`, `handle_offset_commit` and `handle_offset_fetch`, and the timer
    expirations `expire_session`, `expire_rebalance_timeout` and `expire_pending_sync`, plus
    `expire_offsets`. Each is a pure function from the group (and a request) to the new group, the
    immediate answer to the sender (None when the request is parked, as JoinGroup and SyncGroup
    are until the phase completes), and the answers to parked requests that this step completed
    (`Delivery`: to the connection that sent them).

Where it comes from
    Kafka's group coordinator (`group-coordinator` module, Kafka 3.7+; the Scala
    `GroupCoordinator` before it had the same machine): `ClassicGroup`, `ClassicGroupState`,
    `ClassicGroupMember`, and in `GroupMetadataManager` the methods `classicGroupJoin*`,
    `completeClassicGroupJoin`, `prepareRebalance`, `maybePrepareRebalanceOrCompleteJoin`,
    `updateStaticMemberThenRebalanceOrCompleteJoin`, `classicGroupSync`,
    `classicGroupHeartbeat`, `classicGroupLeave`, `expireClassicGroupMemberHeartbeat`,
    `expirePendingSync`; offset validation in `ClassicGroup.validateOffsetCommit`. KIP-62
    (rebalance timeout), KIP-345 (static membership), KIP-394 (MEMBER_ID_REQUIRED), KIP-389
    (`group.max.size`).

What is abstracted
    One group; time (timers are separate actions whose guards say when they may fire); the
    persistence of the group to `__consumer_offsets` (every write succeeds at once); the initial
    rebalance delay is the rebalance-timeout action firing in a PreparingRebalance entered from
    Empty. Tie-breaking in protocol selection, which depends on a Java `HashMap`'s order in
    Kafka, is by protocol name here.

Rules that Kafka changed over time are named functions or `CoordinatorRules` fields, so the old
and the new behaviour can be checked side by side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init, replace
from spec.group.types import (
    EMPTY_ASSIGNMENT,
    NO_OFFSET,
    UNKNOWN_MEMBER_ID,
    Assignment,
    ClassicGroupState,
    Errors,
    GroupInstanceId,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberId,
    MemberResponse,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartition,
)

EMPTY = ClassicGroupState.EMPTY
PREPARING_REBALANCE = ClassicGroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = ClassicGroupState.COMPLETING_REBALANCE
STABLE = ClassicGroupState.STABLE
DEAD = ClassicGroupState.DEAD

VALID_PREVIOUS_STATES: Mapping[ClassicGroupState, frozenset[ClassicGroupState]] = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}
"""`ClassicGroupState.addValidPreviousStates`: the states each state may be entered from."""


class IllegalStateTransitionError(AssertionError):
    """Kafka's `IllegalStateException` from `ClassicGroup.assertValidTransition`: a transition
    the table does not allow. Raised only if the spec itself is wrong."""


@dataclass(frozen=True)
class CoordinatorRules:
    """Behaviours of the coordinator that Kafka changed, each a switch (Kafka's today by default).

    * `static_join_rebalances_when_completing`: a known static member that joins with an unknown
      member id while the group is CompletingRebalance forces a new rebalance (KAFKA-9801,
      Kafka 2.5.1/2.6). Before, it got the current generation and no rebalance; the leader's
      assignment, computed for the old member id, then gave the new member id nothing.
    * `offset_commit_checks_generation`: OffsetCommit from a member refuses a generation other
      than the group's with ILLEGAL_GENERATION (`ClassicGroup.validateOffsetCommit`). Off, a
      commit sent in an earlier generation lands after a rebalance moved the partition.
    """

    static_join_rebalances_when_completing: bool = True
    offset_commit_checks_generation: bool = True
    group_max_size: int = 2**31 - 1


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Member:
    """`ClassicGroupMember` as far as the protocol needs it.

    `client` names the connection the member's requests come from: Kafka answers a parked
    JoinGroup or SyncGroup on the connection that sent it (the response future), which is how
    a new member learns the id it was given. `awaiting_join`/`awaiting_sync` say that a
    JoinGroup/SyncGroup of this member is parked (`isAwaitingJoin`, `isAwaitingSync`).
    """

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    client: int
    protocols: tuple[JoinGroupRequestProtocol, ...]
    awaiting_join: bool = False
    awaiting_sync: bool = False
    assignment: Assignment = EMPTY_ASSIGNMENT
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def metadata(self, protocol_name: str | None) -> JoinGroupResponseMember:
        """The member as the leader sees it: its metadata for the selected protocol."""
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return JoinGroupResponseMember(self.member_id, self.group_instance_id, protocol.metadata)
        raise ValueError(f"member {self.member_id} does not support {protocol_name}")


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Commit:
    """A committed offset with who committed it: the member id and generation the OffsetCommit
    carried (kept so properties can say whose commit landed)."""

    offset: int
    member_id: MemberId
    generation: int
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ClassicGroup:
    """The coordinator's state of one classic group (`ClassicGroup`).

    `members` keeps the order in which members were added (Kafka elects a new leader from the
    first remaining member); `pending_members` are ids handed out with MEMBER_ID_REQUIRED that
    have not joined yet (KIP-394); `pending_sync` are members of the current generation that
    have not sent SyncGroup yet; `next_member_number` makes member ids unique (Kafka appends a
    UUID).
    """

    state: ClassicGroupState = EMPTY
    previous_state: ClassicGroupState = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: MemberId | None = None
    members: tuple[Member, ...] = ()
    pending_members: tuple[MemberId, ...] = ()
    pending_sync: tuple[MemberId, ...] = ()
    offsets: tuple[tuple[TopicPartition, Commit], ...] = ()
    next_member_number: int = 0
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def member(self, member_id: MemberId) -> Member | None:
        """The member with this id, or None."""
        for member in self.members:
            if member.member_id == member_id:
                return member
        return None

    def static_member_id(self, group_instance_id: GroupInstanceId) -> MemberId | None:
        """`staticMemberId`: the member id a `group.instance.id` is mapped to."""
        for member in self.members:
            if member.group_instance_id == group_instance_id:
                return member.member_id
        return None

    def committed(self, partition: TopicPartition) -> Commit | None:
        """The commit stored for a partition, or None."""
        for stored, commit in self.offsets:
            if stored == partition:
                return commit
        return None


Delivery = tuple[int, JoinGroupResponse | SyncGroupResponse]
"""A parked JoinGroup or SyncGroup answered: (the connection that sent it, the response)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Outcome:
    """What a handler returns: the new group, the immediate answer to the request (None when
    parked or for a timer), and the parked requests it answered."""

    group: ClassicGroup
    reply: JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse | None = None
    deliveries: tuple[Delivery, ...] = ()


# --- small pieces of ClassicGroup -------------------------------------------------------------


def transition(group: ClassicGroup, target: ClassicGroupState) -> ClassicGroup:
    """`ClassicGroup.transitionTo`: move to `target`, which must list the current state among
    its valid previous states."""
    if group.state not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransitionError(f"{group.state} -> {target} is not a valid transition")
    return replace(group, state=target, previous_state=group.state)


def can_rebalance(group: ClassicGroup) -> bool:
    """`canRebalance`: the group may enter PreparingRebalance from its state."""
    return group.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]


def _protocol_names(protocols: tuple[JoinGroupRequestProtocol, ...]) -> tuple[str, ...]:
    return tuple(protocol.name for protocol in protocols)


def supports_protocols(
    group: ClassicGroup, protocol_type: str, protocols: tuple[JoinGroupRequestProtocol, ...]
) -> bool:
    """`supportsProtocols`: an Empty group takes any non-empty type and protocol list; otherwise
    the type must be the group's and one of the protocols must be supported by every member."""
    names = _protocol_names(protocols)
    if group.state is EMPTY:
        return bool(protocol_type) and bool(names)
    if group.protocol_type != protocol_type:
        return False
    return any(all(name in _protocol_names(member.protocols) for member in group.members) for name in names)


def candidate_protocols(group: ClassicGroup) -> tuple[str, ...]:
    """The protocols every member supports (`candidateProtocols`), sorted by name."""
    names = {name for member in group.members for name in _protocol_names(member.protocols)}
    return tuple(
        sorted(
            name
            for name in names
            if all(name in _protocol_names(member.protocols) for member in group.members)
        )
    )


def select_protocol(group: ClassicGroup) -> str:
    """`selectProtocol`: every member votes for the first protocol in its own preference order
    that all members support; the protocol with the most votes wins (ties: the first by name)."""
    if not group.members:
        raise ValueError("cannot select a protocol for an empty group")
    candidates = candidate_protocols(group)
    votes: dict[str, int] = {}
    for member in group.members:
        vote = next(name for name in _protocol_names(member.protocols) if name in candidates)
        votes[vote] = votes.get(vote, 0) + 1
    return max(sorted(votes), key=lambda name: votes[name])


def leader_after_add(group: ClassicGroup, member_id: MemberId) -> MemberId:
    """`ClassicGroup.add`: the first member to join leads; later joiners never replace it."""
    return group.leader if group.leader is not None else member_id


def add_member(group: ClassicGroup, member: Member, protocol_type: str) -> ClassicGroup:
    """`ClassicGroup.add`: the first member fixes the group's protocol type; the member leaves
    the pending set."""
    return replace(
        group,
        protocol_type=protocol_type if not group.members else group.protocol_type,
        leader=leader_after_add(group, member.member_id),
        members=(*group.members, member),
        pending_members=tuple(pending for pending in group.pending_members if pending != member.member_id),
    )


def remove_member(group: ClassicGroup, member_id: MemberId) -> ClassicGroup:
    """`ClassicGroup.remove`: a removed leader is replaced by the first remaining member."""
    members = tuple(member for member in group.members if member.member_id != member_id)
    leader = group.leader
    if leader == member_id:
        leader = members[0].member_id if members else None
    return replace(
        group,
        members=members,
        leader=leader,
        pending_members=tuple(pending for pending in group.pending_members if pending != member_id),
        pending_sync=tuple(pending for pending in group.pending_sync if pending != member_id),
    )


def _with_member(group: ClassicGroup, updated: Member) -> ClassicGroup:
    members = tuple(updated if member.member_id == updated.member_id else member for member in group.members)
    return replace(group, members=members)


def has_all_members_joined(group: ClassicGroup) -> bool:
    """`hasAllMembersJoined`: every member's JoinGroup is parked and no id handed out with
    MEMBER_ID_REQUIRED is still to join."""
    return all(member.awaiting_join for member in group.members) and not group.pending_members


def new_member_id(group: ClassicGroup, prefix: str) -> tuple[ClassicGroup, MemberId]:
    """`generateMemberId`: the client id (or `group.instance.id`) and a unique suffix."""
    member_id = f"{prefix}-{group.next_member_number}"
    return replace(group, next_member_number=group.next_member_number + 1), member_id


def validate_member(
    group: ClassicGroup, member_id: MemberId, group_instance_id: GroupInstanceId | None
) -> Errors:
    """`ClassicGroup.validateMember`: a static member's instance id must map to this member id
    (FENCED_INSTANCE_ID when it maps to another: a newer instance replaced it); the member must
    exist (UNKNOWN_MEMBER_ID)."""
    if group_instance_id is not None:
        existing = group.static_member_id(group_instance_id)
        if existing is None:
            return Errors.UNKNOWN_MEMBER_ID
        if existing != member_id:
            return Errors.FENCED_INSTANCE_ID
    if group.member(member_id) is None:
        return Errors.UNKNOWN_MEMBER_ID
    return Errors.NONE


def accept_joining_member(group: ClassicGroup, member_id: MemberId, group_max_size: int) -> bool:
    """`acceptJoiningMember` (KIP-389 `group.max.size`): Empty and Dead groups take anyone; while
    PreparingRebalance a parked member or one more up to the limit of parked joins; otherwise an
    existing member or one more up to the limit of members."""
    if group.state in (EMPTY, DEAD):
        return True
    member = group.member(member_id)
    if group.state is PREPARING_REBALANCE:
        awaiting = sum(1 for candidate in group.members if candidate.awaiting_join)
        return (member is not None and member.awaiting_join) or awaiting < group_max_size
    return member is not None or len(group.members) < group_max_size


# --- rebalancing ------------------------------------------------------------------------------


def _join_response(group: ClassicGroup, member: Member) -> JoinGroupResponse:
    """The JoinGroup response of the current generation; the leader's lists every member."""
    is_leader = member.member_id == group.leader
    return JoinGroupResponse(
        error=Errors.NONE,
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader or UNKNOWN_MEMBER_ID,
        member_id=member.member_id,
        members=tuple(other.metadata(group.protocol_name) for other in group.members) if is_leader else (),
    )


def prepare_rebalance(group: ClassicGroup) -> Outcome:
    """`prepareRebalance`: parked SyncGroups are answered REBALANCE_IN_PROGRESS and every
    assignment is reset (`resetAndPropagateAssignmentWithError`), then PreparingRebalance. From
    Empty this is the initial rebalance, which waits for the initial delay; otherwise the join
    phase completes at once if every member is already parked."""
    deliveries: list[Delivery] = []
    if group.state is COMPLETING_REBALANCE:
        members = []
        for member in group.members:
            if member.awaiting_sync:
                deliveries.append((member.client, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)))
            members.append(replace(member, awaiting_sync=False, assignment=Assignment()))
        group = replace(group, members=tuple(members))
    initial = group.state is EMPTY
    group = replace(transition(group, PREPARING_REBALANCE), pending_sync=())
    if not initial and has_all_members_joined(group):
        completed = complete_join(group)
        return Outcome(completed.group, None, (*deliveries, *completed.deliveries))
    return Outcome(group, None, tuple(deliveries))


def maybe_complete_join_phase(group: ClassicGroup) -> Outcome:
    """`maybeCompleteJoinPhase`: complete the join phase when PreparingRebalance, not the
    initial rebalance (it waits for its delay), and every member has rejoined."""
    if group.state is not PREPARING_REBALANCE or group.previous_state is EMPTY:
        return Outcome(group)
    if not has_all_members_joined(group):
        return Outcome(group)
    return complete_join(group)


def maybe_prepare_rebalance_or_complete_join(group: ClassicGroup) -> Outcome:
    """`maybePrepareRebalanceOrCompleteJoin`."""
    if can_rebalance(group):
        return prepare_rebalance(group)
    return maybe_complete_join_phase(group)


def _elect_joined_leader(group: ClassicGroup) -> tuple[ClassicGroup, bool]:
    """`maybeElectNewJoinedLeader`: keep the leader if it rejoined, else the first member that
    did; False when nobody rejoined."""
    if group.leader is None:
        return group, False
    leader = group.member(group.leader)
    if leader is not None and leader.awaiting_join:
        return group, True
    for member in group.members:
        if member.awaiting_join:
            return replace(group, leader=member.member_id), True
    return group, False


def complete_join(group: ClassicGroup) -> Outcome:
    """`completeClassicGroupJoin`: remove the dynamic members that did not rejoin; if nobody
    rejoined but static members remain, wait again; otherwise start the next generation
    (`initNextGeneration`): generation + 1, the protocol every member can run with the most
    votes, CompletingRebalance, every parked JoinGroup answered and every member pending sync;
    with no member left, Empty."""
    for member in group.members:
        if not member.awaiting_join and member.group_instance_id is None:
            group = remove_member(group, member.member_id)
    if group.state is DEAD:
        return Outcome(group)
    group, elected = _elect_joined_leader(group)
    if not elected and group.members:
        return Outcome(group)  # the rebalance timer is armed again
    generation = group.generation + 1
    if not group.members:
        group = replace(transition(group, EMPTY), generation=generation, protocol_name=None, pending_sync=())
        return Outcome(group)
    group = replace(group, generation=generation, protocol_name=select_protocol(group))
    group = transition(group, COMPLETING_REBALANCE)
    deliveries = [
        (member.client, _join_response(group, member)) for member in group.members if member.awaiting_join
    ]
    members = tuple(replace(member, awaiting_join=False) for member in group.members)
    group = replace(
        group, members=members, pending_sync=tuple(sorted(member.member_id for member in members))
    )
    return Outcome(group, None, tuple(deliveries))


# --- JoinGroup ----------------------------------------------------------------------------------


def _matches(member: Member, protocols: tuple[JoinGroupRequestProtocol, ...]) -> bool:
    """`ClassicGroupMember.matches`: the same protocols with the same metadata, in order."""
    return member.protocols == protocols


def _join_error(error: Errors, member_id: MemberId = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    return JoinGroupResponse(error=error, member_id=member_id)


def _add_member_and_rebalance(
    group: ClassicGroup, request: JoinGroupRequest, member_id: MemberId, client: int
) -> Outcome:
    """`addMemberThenRebalanceOrCompleteJoin`: a new member, its JoinGroup parked."""
    member = Member(member_id, request.group_instance_id, client, request.protocols, awaiting_join=True)
    group = add_member(group, member, request.protocol_type)
    return maybe_prepare_rebalance_or_complete_join(group)


def _update_member_and_rebalance(
    group: ClassicGroup, member: Member, request: JoinGroupRequest, client: int
) -> Outcome:
    """`updateMemberThenRebalanceOrCompleteJoin`: new metadata, JoinGroup parked."""
    group = _with_member(
        group, replace(member, protocols=request.protocols, awaiting_join=True, client=client)
    )
    return maybe_prepare_rebalance_or_complete_join(group)


def static_replacement_rebalances(group: ClassicGroup, rules: CoordinatorRules) -> bool:
    """Whether a known static member joining with a new member id forces a rebalance
    (`updateStaticMemberThenRebalanceOrCompleteJoin`): in Stable only if the group would select
    another protocol (KIP-345: a restart does not rebalance); in CompletingRebalance always
    (KAFKA-9801: the leader may already hold the member list with the old id)."""
    if group.state is COMPLETING_REBALANCE and rules.static_join_rebalances_when_completing:
        return True
    return group.protocol_name != select_protocol(group)


def _replace_static_member(
    group: ClassicGroup,
    request: JoinGroupRequest,
    old_member_id: MemberId,
    client: int,
    rules: CoordinatorRules,
) -> Outcome:
    """`updateStaticMemberThenRebalanceOrCompleteJoin` with `replaceStaticMember`: the instance
    gets a new member id that keeps the old one's assignment; the old id's parked requests are
    answered FENCED_INSTANCE_ID, and any later request carrying it is fenced too."""
    old = group.member(old_member_id)
    assert old is not None and request.group_instance_id is not None
    current_leader = group.leader
    group, member_id = new_member_id(group, request.group_instance_id)
    deliveries: list[Delivery] = []
    if old.awaiting_join:
        deliveries.append((old.client, JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id=old_member_id)))
    if old.awaiting_sync:
        deliveries.append((old.client, SyncGroupResponse(Errors.FENCED_INSTANCE_ID)))
    new = Member(member_id, old.group_instance_id, client, request.protocols, True, False, old.assignment)
    group = replace(
        group,
        members=tuple(new if member.member_id == old_member_id else member for member in group.members),
        leader=member_id if group.leader == old_member_id else group.leader,
    )  # the old id stays pending sync, as in Kafka: the pending-sync timer may then rebalance
    if group.state in (STABLE, COMPLETING_REBALANCE):
        if static_replacement_rebalances(group, rules):
            outcome = prepare_rebalance(group)
            return Outcome(outcome.group, None, (*deliveries, *outcome.deliveries))
        group = _with_member(group, replace(new, awaiting_join=False))
        if group.state is COMPLETING_REBALANCE:
            # the rule before KAFKA-9801: the current generation, as the group was before the
            # replacement (leader id of the old member, no member list)
            reply = JoinGroupResponse(
                error=Errors.NONE,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=current_leader or UNKNOWN_MEMBER_ID,
                member_id=member_id,
            )
            return Outcome(group, reply, tuple(deliveries))
        # Stable, no rebalance: answer at once with the current generation (JoinGroup v9+: a
        # static leader is told to skip computing the assignment again)
        is_leader = group.leader == member_id
        reply = JoinGroupResponse(
            error=Errors.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader or UNKNOWN_MEMBER_ID,
            skip_assignment=is_leader,
            member_id=member_id,
            members=tuple(member.metadata(group.protocol_name) for member in group.members)
            if is_leader
            else (),
        )
        return Outcome(group, reply, tuple(deliveries))
    if group.state in (EMPTY, DEAD):
        raise IllegalStateTransitionError(f"a static member cannot be known in a {group.state} group")
    outcome = maybe_complete_join_phase(group)
    return Outcome(outcome.group, None, (*deliveries, *outcome.deliveries))


def handle_join_group(
    group: ClassicGroup, request: JoinGroupRequest, client: int, rules: CoordinatorRules
) -> Outcome:
    """`classicGroupJoinToClassicGroup`: admit, assign ids, park, and maybe start or complete a
    rebalance. `client` names the connection (and `client` prefix of new member ids)."""
    member_id = request.member_id
    if not accept_joining_member(group, member_id, rules.group_max_size):
        group = remove_member(group, member_id)
        return Outcome(group, _join_error(Errors.GROUP_MAX_SIZE_REACHED))
    if member_id == UNKNOWN_MEMBER_ID:
        return _join_new_member(group, request, client, rules)
    return _join_existing_member(group, request, client)


def _join_new_member(
    group: ClassicGroup, request: JoinGroupRequest, client: int, rules: CoordinatorRules
) -> Outcome:
    """`classicGroupJoinNewMember`."""
    if group.state is DEAD:
        return Outcome(group, _join_error(Errors.COORDINATOR_NOT_AVAILABLE))
    if not supports_protocols(group, request.protocol_type, request.protocols):
        return Outcome(group, _join_error(Errors.INCONSISTENT_GROUP_PROTOCOL))
    if request.group_instance_id is not None:
        existing = group.static_member_id(request.group_instance_id)
        if existing is not None:
            return _replace_static_member(group, request, existing, client, rules)
        group, member_id = new_member_id(group, request.group_instance_id)
        return _add_member_and_rebalance(group, request, member_id, client)
    group, member_id = new_member_id(group, f"c{client}")
    if request.require_known_member_id:
        # KIP-394: hand out the id and ask the member to join again with it
        group = replace(group, pending_members=(*group.pending_members, member_id))
        return Outcome(group, _join_error(Errors.MEMBER_ID_REQUIRED, member_id))
    return _add_member_and_rebalance(group, request, member_id, client)


def _join_existing_member(group: ClassicGroup, request: JoinGroupRequest, client: int) -> Outcome:
    """`classicGroupJoinExistingMember`."""
    member_id = request.member_id
    if group.state is DEAD:
        return Outcome(group, _join_error(Errors.COORDINATOR_NOT_AVAILABLE, member_id))
    if not supports_protocols(group, request.protocol_type, request.protocols):
        return Outcome(group, _join_error(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id))
    if member_id in group.pending_members:
        if request.group_instance_id is not None:
            # pending ids are only handed to dynamic members: Kafka throws IllegalStateException,
            # which the coordinator service answers as UNKNOWN_SERVER_ERROR, changing nothing
            return Outcome(group, _join_error(Errors.UNKNOWN_SERVER_ERROR))
        return _add_member_and_rebalance(group, request, member_id, client)
    error = validate_member(group, member_id, request.group_instance_id)
    if error is not Errors.NONE:
        return Outcome(group, _join_error(error, member_id))
    member = group.member(member_id)
    assert member is not None
    if group.state is PREPARING_REBALANCE:
        return _update_member_and_rebalance(group, member, request, client)
    if group.state is COMPLETING_REBALANCE:
        if _matches(member, request.protocols):
            # it missed its JoinGroup response: the same generation again
            return Outcome(group, _join_response(group, member))
        return _update_member_and_rebalance(group, member, request, client)
    if group.state is STABLE:
        if group.leader == member_id or not _matches(member, request.protocols):
            # the leader rejoining always rebalances (it may have seen a metadata change)
            return _update_member_and_rebalance(group, member, request, client)
        reply = replace(_join_response(group, member), members=())
        return Outcome(group, reply)
    return Outcome(group, _join_error(Errors.UNKNOWN_MEMBER_ID, member_id))


# --- SyncGroup ----------------------------------------------------------------------------------


def validate_sync_group(group: ClassicGroup, request: SyncGroupRequest) -> Errors:
    """`validateSyncGroup`: Dead; the member and instance; the generation; the protocol."""
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    error = validate_member(group, request.member_id, request.group_instance_id)
    if error is not Errors.NONE:
        return error
    if request.generation_id != group.generation:
        return Errors.ILLEGAL_GENERATION
    if request.protocol_type is not None and request.protocol_type != group.protocol_type:
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    if request.protocol_name is not None and request.protocol_name != group.protocol_name:
        return Errors.INCONSISTENT_GROUP_PROTOCOL
    return Errors.NONE


def handle_sync_group(group: ClassicGroup, request: SyncGroupRequest, client: int) -> Outcome:
    """`classicGroupSync`: followers park until the leader's SyncGroup brings the assignment;
    the leader's is stored (members it left out get an empty assignment), every parked SyncGroup
    is answered with its member's assignment and the group becomes Stable. In Stable a SyncGroup
    gets the stored assignment; in PreparingRebalance REBALANCE_IN_PROGRESS."""
    if group.state is EMPTY:
        return Outcome(group, SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID))
    error = validate_sync_group(group, request)
    if error is not Errors.NONE:
        return Outcome(group, SyncGroupResponse(error))
    if group.state is PREPARING_REBALANCE:
        return Outcome(group, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS))
    member = group.member(request.member_id)
    assert member is not None
    pending_sync = tuple(pending for pending in group.pending_sync if pending != request.member_id)
    if group.state is STABLE:
        group = replace(group, pending_sync=pending_sync)
        return Outcome(group, _sync_response(group, member.assignment))
    # CompletingRebalance
    group = replace(
        _with_member(group, replace(member, awaiting_sync=True, client=client)), pending_sync=pending_sync
    )
    if group.leader != request.member_id:
        return Outcome(group)
    given = {entry.member_id: entry.assignment for entry in request.assignments}
    deliveries: list[Delivery] = []
    members = []
    for other in group.members:
        assignment = given.get(other.member_id, Assignment())
        if other.awaiting_sync:
            deliveries.append((other.client, _sync_response(group, assignment)))
        members.append(replace(other, assignment=assignment, awaiting_sync=False))
    group = transition(replace(group, members=tuple(members)), STABLE)
    return Outcome(group, None, tuple(deliveries))


def _sync_response(group: ClassicGroup, assignment: Assignment) -> SyncGroupResponse:
    return SyncGroupResponse(Errors.NONE, group.protocol_type, group.protocol_name, assignment)


# --- Heartbeat and LeaveGroup -------------------------------------------------------------------

HEARTBEAT_ERROR_BY_STATE: Mapping[ClassicGroupState, Errors] = {
    EMPTY: Errors.UNKNOWN_MEMBER_ID,
    PREPARING_REBALANCE: Errors.REBALANCE_IN_PROGRESS,
    COMPLETING_REBALANCE: Errors.NONE,
    STABLE: Errors.NONE,
}
"""`classicGroupHeartbeatToClassicGroup`: a valid member's heartbeat is answered by the group's
state. REBALANCE_IN_PROGRESS is how a member learns it must rejoin (answering NONE there hides the
rebalance: the stuck check catches it). In CompletingRebalance the member already has its
JoinGroup response and is about to sync, so the heartbeat is accepted (consumers heartbeat from
the JoinGroup response on, apache/kafka PR #8834); that keeps a member that never syncs alive,
which is why the pending-sync timer exists (KAFKA-12890, `expire_pending_sync`)."""


def handle_heartbeat(group: ClassicGroup, request: HeartbeatRequest) -> Outcome:
    """`classicGroupHeartbeat`: Dead; the member and instance; the generation; then the state."""
    if group.state is DEAD:
        return Outcome(group, HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE))
    error = validate_member(group, request.member_id, request.group_instance_id)
    if error is Errors.NONE and request.generation_id != group.generation:
        error = Errors.ILLEGAL_GENERATION
    if error is Errors.NONE:
        error = HEARTBEAT_ERROR_BY_STATE[group.state]
    return Outcome(group, HeartbeatResponse(error))


def _remove_and_answer_join(group: ClassicGroup, member: Member) -> tuple[ClassicGroup, tuple[Delivery, ...]]:
    """A parked JoinGroup of a removed member is answered UNKNOWN_MEMBER_ID first."""
    deliveries: tuple[Delivery, ...] = ()
    if member.awaiting_join:
        deliveries = ((member.client, _join_error(Errors.UNKNOWN_MEMBER_ID)),)
    return remove_member(group, member.member_id), deliveries


def handle_leave_group(group: ClassicGroup, request: LeaveGroupRequest) -> Outcome:
    """`classicGroupLeaveToClassicGroup`: each member leaves (by member id, or by instance id
    alone); then the group rebalances, or completes a join phase that only waited for them."""
    if group.state is DEAD:
        return Outcome(group, LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE))
    answers: list[MemberResponse] = []
    deliveries: list[Delivery] = []
    removed = False
    for identity in request.members:
        error = Errors.NONE
        if identity.member_id == UNKNOWN_MEMBER_ID:
            existing = (
                group.static_member_id(identity.group_instance_id) if identity.group_instance_id else None
            )
            if existing is None:
                error = Errors.UNKNOWN_MEMBER_ID
            else:
                member = group.member(existing)
                assert member is not None
                group, answered = _remove_and_answer_join(group, member)
                deliveries.extend(answered)
        elif identity.member_id in group.pending_members:
            group = remove_member(group, identity.member_id)
        else:
            error = validate_member(group, identity.member_id, identity.group_instance_id)
            if error is Errors.NONE:
                member = group.member(identity.member_id)
                assert member is not None
                group, answered = _remove_and_answer_join(group, member)
                deliveries.extend(answered)
        removed = removed or error is Errors.NONE
        answers.append(MemberResponse(identity.member_id, identity.group_instance_id, error))
    outcome = Outcome(group)
    if removed and group.state in (STABLE, COMPLETING_REBALANCE):
        outcome = maybe_prepare_rebalance_or_complete_join(group)
    elif removed and group.state is PREPARING_REBALANCE:
        outcome = maybe_complete_join_phase(group)
    reply = LeaveGroupResponse(Errors.NONE, tuple(answers))
    return Outcome(outcome.group, reply, (*deliveries, *outcome.deliveries))


# --- timers -------------------------------------------------------------------------------------


def heartbeat_satisfied_by_parked_request(member: Member) -> bool:
    """`ClassicGroupMember.hasSatisfiedHeartbeat` for a known member: a parked JoinGroup or
    SyncGroup counts as a heartbeat (its session timer does not expire it)."""
    return member.awaiting_join or member.awaiting_sync


def expire_session(group: ClassicGroup, member_id: MemberId) -> Outcome:
    """`expireClassicGroupMemberHeartbeat`: a pending member is dropped; a member whose
    heartbeat is not satisfied is removed (`removeMemberAndUpdateClassicGroup`): Stable and
    CompletingRebalance groups rebalance, a PreparingRebalance group completes its join phase
    if it only waited for this member."""
    if group.state is DEAD:
        return Outcome(group)
    if member_id in group.pending_members:
        group = remove_member(group, member_id)
        if group.state is PREPARING_REBALANCE and has_all_members_joined(group):
            return complete_join(group)
        return Outcome(group)
    member = group.member(member_id)
    if member is None or heartbeat_satisfied_by_parked_request(member):
        return Outcome(group)
    group, deliveries = _remove_and_answer_join(group, member)
    if group.state in (STABLE, COMPLETING_REBALANCE):
        outcome = maybe_prepare_rebalance_or_complete_join(group)
    elif group.state is PREPARING_REBALANCE and has_all_members_joined(group):
        outcome = complete_join(group)
    else:
        outcome = Outcome(group)
    return Outcome(outcome.group, None, (*deliveries, *outcome.deliveries))


def expire_rebalance_timeout(group: ClassicGroup) -> Outcome:
    """The `DelayedJoin` (or, after Empty, `InitialDelayedJoin`) expiring: complete the join
    phase with whoever rejoined."""
    if group.state is not PREPARING_REBALANCE:
        return Outcome(group)
    return complete_join(group)


def expire_pending_sync(group: ClassicGroup) -> Outcome:
    """`expirePendingSync`: members of the current generation that never sent SyncGroup within
    the rebalance timeout are removed and the group rebalances."""
    if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync:
        return Outcome(group)
    for member_id in group.pending_sync:
        group = remove_member(group, member_id)
    return prepare_rebalance(group)


def offsets_may_expire(group: ClassicGroup) -> bool:
    """`ClassicGroup.offsetExpirationCondition` for a consumer group whose members subscribe to
    every committed topic: offsets expire (after `offsets.retention.minutes`) only once the
    group is Empty; a group with members keeps them."""
    return group.state is EMPTY


def expire_offsets(group: ClassicGroup) -> ClassicGroup:
    """`cleanupGroupMetadata`: drop the expired offsets; an Empty group left without offsets is
    deleted (Dead, with a tombstone)."""
    group = replace(group, offsets=())
    if group.state is EMPTY:
        group = transition(group, DEAD)
    return group


# --- OffsetCommit and OffsetFetch ---------------------------------------------------------------


def validate_offset_commit(
    group: ClassicGroup, request: OffsetCommitRequest, rules: CoordinatorRules
) -> Errors:
    """`ClassicGroup.validateOffsetCommit` (non-transactional), in Kafka's order:

    1. Dead: COORDINATOR_NOT_AVAILABLE;
    2. generation < 0 in an Empty group: accepted (admin tools, consumers using `assign`);
    3. a member commit (generation >= 0, a member id or an instance id): the member must exist
       (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) and the generation must be the group's
       (ILLEGAL_GENERATION);
    4. no member id and no generation on a non-empty group: UNKNOWN_MEMBER_ID;
    5. CompletingRebalance: REBALANCE_IN_PROGRESS (the member already has the next generation's
       JoinGroup response; it must sync first). PreparingRebalance still accepts commits of the
       current generation, so members can commit before they give partitions up.
    """
    generation = request.generation_id_or_member_epoch
    if group.state is DEAD:
        return Errors.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.state is EMPTY:
        return Errors.NONE
    if generation >= 0 or request.member_id != UNKNOWN_MEMBER_ID or request.group_instance_id is not None:
        error = validate_member(group, request.member_id, request.group_instance_id)
        if error is not Errors.NONE:
            return error
        if rules.offset_commit_checks_generation and generation != group.generation:
            return Errors.ILLEGAL_GENERATION
    elif group.state is not EMPTY:
        return Errors.UNKNOWN_MEMBER_ID
    if group.state is COMPLETING_REBALANCE:
        return Errors.REBALANCE_IN_PROGRESS
    return Errors.NONE


def handle_offset_commit(
    group: ClassicGroup, request: OffsetCommitRequest, rules: CoordinatorRules
) -> tuple[ClassicGroup, OffsetCommitResponse]:
    """`OffsetMetadataManager.commitOffset` for a classic group: validate, then store every
    offset with the member id and generation it was committed under."""
    error = validate_offset_commit(group, request, rules)
    answers = tuple(OffsetCommitPartitionResponse(partition, error) for partition, _ in request.offsets)
    if error is not Errors.NONE:
        return group, OffsetCommitResponse(answers)
    stored = dict(group.offsets)
    for partition, offset in request.offsets:
        stored[partition] = Commit(offset, request.member_id, request.generation_id_or_member_epoch)
    return replace(group, offsets=tuple(sorted(stored.items()))), OffsetCommitResponse(answers)


def handle_offset_fetch(group: ClassicGroup, request: OffsetFetchRequest) -> OffsetFetchResponse:
    """`OffsetMetadataManager.fetchOffsets` for a classic group: any client may read (no member
    check for classic groups); a Dead group is GROUP_ID_NOT_FOUND."""
    if group.state is DEAD:
        return OffsetFetchResponse(Errors.GROUP_ID_NOT_FOUND)
    wanted = (
        request.partitions
        if request.partitions is not None
        else tuple(partition for partition, _ in group.offsets)
    )
    answers = []
    for partition in wanted:
        commit = group.committed(partition)
        answers.append(
            OffsetFetchPartitionResponse(partition, commit.offset if commit is not None else NO_OFFSET)
        )
    return OffsetFetchResponse(Errors.NONE, tuple(answers))


__all__ = [
    "COMPLETING_REBALANCE",
    "DEAD",
    "EMPTY",
    "HEARTBEAT_ERROR_BY_STATE",
    "PREPARING_REBALANCE",
    "STABLE",
    "VALID_PREVIOUS_STATES",
    "ClassicGroup",
    "Commit",
    "CoordinatorRules",
    "Delivery",
    "IllegalStateTransitionError",
    "Member",
    "Outcome",
    "accept_joining_member",
    "add_member",
    "can_rebalance",
    "candidate_protocols",
    "complete_join",
    "expire_offsets",
    "expire_pending_sync",
    "expire_rebalance_timeout",
    "expire_session",
    "handle_heartbeat",
    "handle_join_group",
    "handle_leave_group",
    "handle_offset_commit",
    "handle_offset_fetch",
    "handle_sync_group",
    "has_all_members_joined",
    "heartbeat_satisfied_by_parked_request",
    "leader_after_add",
    "maybe_complete_join_phase",
    "maybe_prepare_rebalance_or_complete_join",
    "new_member_id",
    "offsets_may_expire",
    "prepare_rebalance",
    "remove_member",
    "select_protocol",
    "static_replacement_rebalances",
    "supports_protocols",
    "transition",
    "validate_member",
    "validate_offset_commit",
    "validate_sync_group",
]
