"""The classic-coordinator machine: a coordinator under test and the reference, one request at a time.

What it is
    A Hypothesis `RuleBasedStateMachine` that builds a `ClassicCoordinatorUnderTest` (named by
    a target string, see `conformance.coordinator_sut`) and the definitional
    `reference.coordinator.ReferenceClassicCoordinator` with the same `CoordinatorSettings`
    (`group.max.size` 2, 3 or unlimited, drawn per test case) and gives both the same
    commands (`Command`): the six classic group requests (JoinGroup, SyncGroup, Heartbeat,
    LeaveGroup, OffsetCommit, OffsetFetch) from four connections to two groups, and the four
    coordinator timers (a member's session, the rebalance timeout, the pending-sync timeout,
    offset retention).

Which commands
    Each command is three drawn numbers (group, kind, a small seed for the details:
    `build_command`), so a failure shrinks by deleting commands, down to its minimal
    sequence. Half the commands are the next step of a well-behaved member
    (`draw_progress`: the JoinGroups a rebalance waits for, the leader's SyncGroup, the
    SyncGroups still due, heartbeats and commits under the current generation, a new member
    or a rejoining leader), so whole rebalances happen and the states after them (replaced
    assignments, re-elected leaders) are reached. The other half are of a kind drawn from the
    test case's swarm, built from the reference's state so most of them mean something: a
    member rejoins with its own id and metadata (or new metadata, which rebalances), the
    leader syncs with an assignment of the group's members, a member commits under its
    generation. About a third of those are near misses, one field off: a generation one behind or
    ahead, a member id that was removed or never handed out, another member's
    `group.instance.id`, a protocol name the group did not select, a commit from outside the
    group while it has members, a timer for a member that is parked. Requests in the "wrong"
    state come for free: nothing stops a SyncGroup in Stable or a Heartbeat while the group
    rebalances. Each test case leans on up to three kinds of command and leaves out up to two
    (swarm testing, Groce et al. 2012: many rejoins without syncs, or many timers without
    heartbeats), which reaches deep states (a leader replaced twice in one rebalance, a
    static member replaced while its SyncGroup is parked) that evenly weighted runs rarely do.

What is compared
    After every command: the answer (the response, or None for a parked JoinGroup or
    SyncGroup), the answers to parked requests it completed (`deliveries()`, as a multiset:
    the order in which a coordinator answers different connections is not observable), and
    `observe()` of every group; the failure names the first differing field
    (`members[1].awaiting_sync`, `offsets`, ...) and lists every command so far.

Refinement (the reference against the spec)
    After every command the reference's step must be the spec's: its group before the step
    is the group it held, and the spec's handler (`spec.group.classic_coordinator`) applied to
    that group gives exactly its new group, answer and deliveries. The properties of
    `spec.group.classic` that are about one coordinator must hold: the invariants
    `leader_is_a_member` and `one_member_per_instance`, and the step properties
    `valid_state_transitions`, `generations_only_grow`, `offsets_expire_only_when_empty`,
    `leader_stays_while_it_rejoins` and `stale_commits_never_land` (the last except for a
    commit with a negative generation to an Empty group, which Kafka and the spec accept
    from anyone, member id or not, while the property exempts only an empty member id).

    A JoinGroup that carries a member id handed out with MEMBER_ID_REQUIRED (a pending id,
    only ever given to dynamic members) together with a `group.instance.id` is sent too: Kafka
    throws IllegalStateException for it (`classicGroupJoinExistingMember`: "pending member
    cannot be a static member"), which its coordinator service answers UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Protocol, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.coordinator_sut import (
    DEFAULT_GROUP_MAX_SIZE,
    ClassicCoordinatorUnderTest,
    CoordinatorSettings,
    Delivery,
    GroupId,
    GroupView,
    coordinator_rules,
    make_coordinator,
    resolve_coordinator_target,
    view_of,
)
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.target_calls import TargetCalls, bound_machine
from reference.coordinator import ReferenceClassicCoordinator, offset_expiry
from spec.group import classic
from spec.group import classic_coordinator as coordinator_spec
from spec.group.classic_coordinator import ClassicGroup, CoordinatorRules, Outcome
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_GENERATION_ID,
    UNKNOWN_MEMBER_ID,
    Assignment,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberId,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    TopicPartition,
)

T = TypeVar("T")

# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------


class _Shown:
    """Commands print as `command_text` (a failing sequence is listed with them)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return command_text(self)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, repr=False)
class JoinGroup(_Shown):
    group_id: GroupId
    request: JoinGroupRequest
    client: int


@dataclass(frozen=True, slots=True, repr=False)
class SyncGroup(_Shown):
    group_id: GroupId
    request: SyncGroupRequest
    client: int


@dataclass(frozen=True, slots=True, repr=False)
class Heartbeat(_Shown):
    group_id: GroupId
    request: HeartbeatRequest


@dataclass(frozen=True, slots=True, repr=False)
class LeaveGroup(_Shown):
    group_id: GroupId
    request: LeaveGroupRequest


@dataclass(frozen=True, slots=True, repr=False)
class OffsetCommit(_Shown):
    group_id: GroupId
    request: OffsetCommitRequest


@dataclass(frozen=True, slots=True, repr=False)
class OffsetFetch(_Shown):
    group_id: GroupId
    request: OffsetFetchRequest


@dataclass(frozen=True, slots=True, repr=False)
class ExpireSession(_Shown):
    group_id: GroupId
    member_id: MemberId


@dataclass(frozen=True, slots=True, repr=False)
class ExpireRebalance(_Shown):
    group_id: GroupId


@dataclass(frozen=True, slots=True, repr=False)
class ExpirePendingSync(_Shown):
    group_id: GroupId


@dataclass(frozen=True, slots=True, repr=False)
class ExpireOffsets(_Shown):
    group_id: GroupId


Command = (
    JoinGroup
    | SyncGroup
    | Heartbeat
    | LeaveGroup
    | OffsetCommit
    | OffsetFetch
    | ExpireSession
    | ExpireRebalance
    | ExpirePendingSync
    | ExpireOffsets
)

Answer = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | None
)


class Requests(Protocol):
    """The request and timer methods `perform` calls: those of `ClassicCoordinatorUnderTest`,
    which the reference coordinator has too."""

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None: ...
    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None: ...
    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse: ...
    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse: ...
    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse: ...
    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse: ...
    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None: ...
    def expire_rebalance(self, group_id: GroupId) -> None: ...
    def expire_pending_sync(self, group_id: GroupId) -> None: ...
    def expire_offsets(self, group_id: GroupId) -> None: ...


def perform(target: Requests, command: Command) -> Answer:
    """Call the method of `target` that performs `command`."""
    if isinstance(command, JoinGroup):
        return target.join_group(command.group_id, command.request, command.client)
    if isinstance(command, SyncGroup):
        return target.sync_group(command.group_id, command.request, command.client)
    if isinstance(command, Heartbeat):
        return target.heartbeat(command.group_id, command.request)
    if isinstance(command, LeaveGroup):
        return target.leave_group(command.group_id, command.request)
    if isinstance(command, OffsetCommit):
        return target.offset_commit(command.group_id, command.request)
    if isinstance(command, OffsetFetch):
        return target.offset_fetch(command.group_id, command.request)
    if isinstance(command, ExpireSession):
        target.expire_session(command.group_id, command.member_id)
    elif isinstance(command, ExpireRebalance):
        target.expire_rebalance(command.group_id)
    elif isinstance(command, ExpirePendingSync):
        target.expire_pending_sync(command.group_id)
    else:
        target.expire_offsets(command.group_id)
    return None


def spec_outcome(
    group: ClassicGroup, command: Command, rules: CoordinatorRules
) -> tuple[ClassicGroup, Answer, tuple[coordinator_spec.Delivery, ...]]:
    """What the spec's handler does with `command` on `group`: the new group, the answer and
    the parked requests answered."""
    outcome: Outcome
    if isinstance(command, JoinGroup):
        outcome = coordinator_spec.handle_join_group(group, command.request, command.client, rules)
    elif isinstance(command, SyncGroup):
        outcome = coordinator_spec.handle_sync_group(group, command.request, command.client)
    elif isinstance(command, Heartbeat):
        outcome = coordinator_spec.handle_heartbeat(group, command.request)
    elif isinstance(command, LeaveGroup):
        outcome = coordinator_spec.handle_leave_group(group, command.request)
    elif isinstance(command, OffsetCommit):
        after, committed = coordinator_spec.handle_offset_commit(group, command.request, rules)
        return after, committed, ()
    elif isinstance(command, OffsetFetch):
        return group, coordinator_spec.handle_offset_fetch(group, command.request), ()
    elif isinstance(command, ExpireSession):
        outcome = coordinator_spec.expire_session(group, command.member_id)
    elif isinstance(command, ExpireRebalance):
        outcome = coordinator_spec.expire_rebalance_timeout(group)
    elif isinstance(command, ExpirePendingSync):
        outcome = coordinator_spec.expire_pending_sync(group)
    else:
        outcome = Outcome(offset_expiry(group))
    return outcome.group, outcome.reply, outcome.deliveries


def _protocols_text(protocols: tuple[JoinGroupRequestProtocol, ...]) -> str:
    names = ",".join(protocol.name for protocol in protocols)
    if not protocols:
        return "[]"
    metadata = protocols[0].metadata
    owned = ",".join(str(partition) for partition in metadata.owned_partitions)
    return f"[{names} owned={{{owned}}} gen={metadata.generation_id}]"


def command_text(command: Command) -> str:
    """The command as a short line: `JoinGroup(g0, client=1, member='c1-0', ...)`."""
    group = command.group_id
    if isinstance(command, JoinGroup):
        request = command.request
        return (
            f"JoinGroup({group}, client={command.client}, member={request.member_id!r}, "
            f"instance={request.group_instance_id!r}, type={request.protocol_type!r}, "
            f"protocols={_protocols_text(request.protocols)}, "
            f"require_known={request.require_known_member_id})"
        )
    if isinstance(command, SyncGroup):
        sync = command.request
        assignments = "; ".join(
            f"{entry.member_id}:{','.join(str(partition) for partition in entry.assignment.partitions)}"
            for entry in sync.assignments
        )
        return (
            f"SyncGroup({group}, client={command.client}, member={sync.member_id!r}, "
            f"generation={sync.generation_id}, instance={sync.group_instance_id!r}, "
            f"type={sync.protocol_type!r}, protocol={sync.protocol_name!r}, assignments={{{assignments}}})"
        )
    if isinstance(command, Heartbeat):
        beat = command.request
        return (
            f"Heartbeat({group}, member={beat.member_id!r}, generation={beat.generation_id}, "
            f"instance={beat.group_instance_id!r})"
        )
    if isinstance(command, LeaveGroup):
        leaving = ", ".join(
            f"{identity.member_id!r}/{identity.group_instance_id!r}" for identity in command.request.members
        )
        return f"LeaveGroup({group}, members=[{leaving}])"
    if isinstance(command, OffsetCommit):
        commit = command.request
        offsets = ", ".join(f"{partition}={offset}" for partition, offset in commit.offsets)
        return (
            f"OffsetCommit({group}, member={commit.member_id!r}, generation="
            f"{commit.generation_id_or_member_epoch}, instance={commit.group_instance_id!r}, {{{offsets}}})"
        )
    if isinstance(command, OffsetFetch):
        wanted = command.request.partitions
        shown = "all" if wanted is None else ",".join(str(partition) for partition in wanted)
        return f"OffsetFetch({group}, partitions={shown})"
    if isinstance(command, ExpireSession):
        return f"ExpireSession({group}, member={command.member_id!r})"
    return f"{type(command).__name__}({group})"


# ---------------------------------------------------------------------------------------
# Drawing commands from the reference's state
# ---------------------------------------------------------------------------------------

GROUPS: tuple[GroupId, ...] = ("g0", "g1")
CLIENTS = 4
INSTANCES = ("i0", "i1")
TOPIC = "t0"
PARTITIONS = tuple(TopicPartition(TOPIC, number) for number in range(3))
STRATEGIES: tuple[tuple[str, ...], ...] = (
    ("range",),
    ("range", "roundrobin"),
    ("roundrobin",),
    ("roundrobin", "range"),
    ("cooperative-sticky",),
)
OWNED = ((), PARTITIONS[:1], PARTITIONS[1:])
GARBAGE_MEMBER_ID = "c9-99"
"""A member id no group ever hands out in these runs."""

INDEX = st.integers(0, 59)
"""A choice is an index taken modulo the number of choices (60 is a multiple of every count
up to 6; an index shrinks towards the first choice)."""

KIND_INDEX = st.integers(0, 119)
"""The kind of a command: odd is the next step of a well-behaved member, even a kind of the
test case's swarm (half of it, uniform over up to 60 kinds; shrinks towards a swarm kind)."""

SEED = st.integers(0, 1023)
"""Each command's details (which member, which generation, which metadata) come from one
seeded generator: three Hypothesis choices per command instead of a dozen, and small ones, so
the shrinker spends its budget deleting commands rather than minimising each detail."""

Pick = Callable[[st.SearchStrategy[int]], int]
"""Where a choice comes from: `draw` itself, or `_Seeded`."""


class _Seeded:
    """A `Pick` that answers from a seeded generator (see `SEED`)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def __call__(self, strategy: st.SearchStrategy[int]) -> int:
        return self._random.randrange(60)


def _choose(draw: Pick, choices: Sequence[T]) -> T:
    return choices[draw(INDEX) % len(choices)]


def _near_miss(draw: Pick) -> bool:
    """About one draw in three is a near miss."""
    return draw(INDEX) % 3 == 2


KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("join", 6),
    ("sync", 5),
    ("heartbeat", 3),
    ("leave", 2),
    ("commit", 3),
    ("fetch", 1),
    ("session", 2),
    ("rebalance", 2),
    ("pending_sync", 1),
    ("offsets", 1),
)
KIND_NAMES = tuple(name for name, _ in KIND_WEIGHTS)
SWARM_BOOST = 4


def weighted_kinds(emphasis: frozenset[str], omitted: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Every kind repeated by its weight, `emphasis` `SWARM_BOOST` times more, `omitted` not at
    all (swarm testing; see the module docstring). Never empty."""
    kinds = tuple(
        name
        for name, weight in KIND_WEIGHTS
        if name not in omitted
        for _ in range(weight * (SWARM_BOOST if name in emphasis else 1))
    )
    return kinds or KIND_NAMES


def _protocols(draw: Pick, generation: int) -> tuple[JoinGroupRequestProtocol, ...]:
    names = _choose(draw, STRATEGIES)
    metadata = Subscription(
        (TOPIC,), _choose(draw, OWNED), _choose(draw, (UNKNOWN_GENERATION_ID, generation))
    )
    return tuple(JoinGroupRequestProtocol(name, metadata) for name in names)


def _instance(draw: Pick) -> str | None:
    return _choose(draw, (None, *INSTANCES))


def _other_instance(draw: Pick, instance: str | None) -> str | None:
    return _choose(draw, tuple(choice for choice in (None, *INSTANCES) if choice != instance))


def _generation(draw: Pick, group: ClassicGroup) -> int:
    if _near_miss(draw):
        return _choose(draw, (group.generation - 1, group.generation + 1, UNKNOWN_GENERATION_ID))
    return group.generation


def _member(draw: Pick, group: ClassicGroup) -> coordinator_spec.Member | None:
    return _choose(draw, group.members) if group.members else None


def _next_to_act(draw: Pick, group: ClassicGroup) -> coordinator_spec.Member | None:
    """Two times in three the member whose request moves the group on (one that has not
    rejoined while it rebalances, the leader or one still to sync after a join phase), else
    any member: random requests then complete rebalances often enough to reach the states
    after them (assignments replaced, leaders re-elected)."""
    if draw(INDEX) % 3 == 2:
        return _member(draw, group)
    state = group.state
    if state is coordinator_spec.PREPARING_REBALANCE:
        waiting = tuple(member for member in group.members if not member.awaiting_join)
    elif state is coordinator_spec.COMPLETING_REBALANCE and group.leader is not None and draw(INDEX) % 2:
        waiting = tuple(member for member in group.members if member.member_id == group.leader)
    else:
        waiting = tuple(member for member in group.members if member.member_id in group.pending_sync)
    return _choose(draw, waiting) if waiting else _member(draw, group)


def draw_join(draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId]) -> JoinGroup:
    situation = _choose(draw, ("new", "new", "member", "member", "pending", "static", "stale"))
    client = draw(INDEX) % CLIENTS
    protocol_type = CONSUMER_PROTOCOL_TYPE
    if draw(INDEX) % 12 == 11:
        protocol_type = _choose(draw, ("connect", ""))
    protocols = _protocols(draw, group.generation)
    require_known = draw(INDEX) % 5 != 4
    member = _next_to_act(draw, group)
    if situation == "member" and member is not None:
        instance = (
            member.group_instance_id
            if not _near_miss(draw)
            else _other_instance(draw, member.group_instance_id)
        )
        if draw(INDEX) % 3 != 2:
            protocols = member.protocols  # the same metadata: a rejoin that need not rebalance
        if draw(INDEX) % 3 != 2:
            client = member.client
        return JoinGroup(
            group_id, JoinGroupRequest(member.member_id, instance, protocol_type, protocols), client
        )
    if situation == "pending" and group.pending_members:
        member_id = _choose(draw, group.pending_members)
        request = JoinGroupRequest(member_id, None, protocol_type, protocols, require_known)
        return JoinGroup(group_id, request, client)
    if situation == "static":
        request = JoinGroupRequest(UNKNOWN_MEMBER_ID, _choose(draw, INSTANCES), protocol_type, protocols)
        return JoinGroup(group_id, request, client)
    if situation == "stale":
        member_id = _choose(draw, (*seen, GARBAGE_MEMBER_ID))
        instance = _instance(draw)
        request = JoinGroupRequest(member_id, instance, protocol_type, protocols, require_known)
        return JoinGroup(group_id, request, client)
    request = JoinGroupRequest(UNKNOWN_MEMBER_ID, None, protocol_type, protocols, require_known)
    return JoinGroup(group_id, request, client)


def _assignments(draw: Pick, group: ClassicGroup) -> tuple[SyncGroupRequestAssignment, ...]:
    """An assignment of the partitions to the group's members (some may be left out, one in
    twelve names a member that is not there)."""
    owners = [member.member_id for member in group.members]
    if draw(INDEX) % 12 == 11:
        owners.append(GARBAGE_MEMBER_ID)
    if not owners:
        return ()
    given: dict[MemberId, list[TopicPartition]] = {owner: [] for owner in owners if draw(INDEX) % 6 != 5}
    for partition in PARTITIONS:
        if given:
            given[_choose(draw, tuple(given))].append(partition)
    return tuple(
        SyncGroupRequestAssignment(owner, Assignment(tuple(parts))) for owner, parts in given.items()
    )


def draw_sync(draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId]) -> SyncGroup:
    member = _next_to_act(draw, group)
    client = draw(INDEX) % CLIENTS
    if member is None or _near_miss(draw):
        member_id = _choose(draw, (*seen, GARBAGE_MEMBER_ID))
        instance = _instance(draw)
    else:
        member_id, instance = member.member_id, member.group_instance_id
        if draw(INDEX) % 3 != 2:
            client = member.client
        if draw(INDEX) % 6 == 5:
            instance = _other_instance(draw, instance)
    protocol_type: str | None = CONSUMER_PROTOCOL_TYPE
    protocol_name = group.protocol_name
    if _near_miss(draw):
        protocol_type = _choose(draw, (None, "connect"))
        protocol_name = _choose(draw, (None, "roundrobin", "range"))
    leads = member_id == group.leader or draw(INDEX) % 4 == 3
    assignments = _assignments(draw, group) if leads else ()
    request = SyncGroupRequest(
        member_id, _generation(draw, group), instance, protocol_type, protocol_name, assignments
    )
    return SyncGroup(group_id, request, client)


def draw_heartbeat(draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId]) -> Heartbeat:
    member = _member(draw, group)
    if member is None or draw(INDEX) % 6 == 5:
        return Heartbeat(
            group_id, HeartbeatRequest(_choose(draw, (*seen, GARBAGE_MEMBER_ID)), group.generation)
        )
    instance = (
        member.group_instance_id if draw(INDEX) % 6 != 5 else _other_instance(draw, member.group_instance_id)
    )
    return Heartbeat(group_id, HeartbeatRequest(member.member_id, _generation(draw, group), instance))


def draw_leave(draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId]) -> LeaveGroup:
    identities: list[MemberIdentity] = []
    for _ in range(1 + draw(INDEX) % 2):
        situation = _choose(draw, ("member", "member", "static", "pending", "stale"))
        member = _member(draw, group)
        if situation == "member" and member is not None:
            instance = (
                member.group_instance_id
                if not _near_miss(draw)
                else _other_instance(draw, member.group_instance_id)
            )
            identities.append(MemberIdentity(member.member_id, instance))
        elif situation == "static":
            identities.append(MemberIdentity(UNKNOWN_MEMBER_ID, _instance(draw)))
        elif situation == "pending" and group.pending_members:
            identities.append(MemberIdentity(_choose(draw, group.pending_members)))
        else:
            identities.append(MemberIdentity(_choose(draw, (*seen, GARBAGE_MEMBER_ID)), _instance(draw)))
    return LeaveGroup(group_id, LeaveGroupRequest(tuple(identities)))


def draw_commit(
    draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId], value: int
) -> OffsetCommit:
    partitions = (_choose(draw, PARTITIONS),) if draw(INDEX) % 3 else PARTITIONS[:2]
    offsets = tuple((partition, value) for partition in partitions)
    member = _member(draw, group)
    situation = _choose(draw, ("member", "member", "member", "admin", "stale"))
    if situation == "member" and member is not None:
        instance = (
            member.group_instance_id
            if draw(INDEX) % 6 != 5
            else _other_instance(draw, member.group_instance_id)
        )
        request = OffsetCommitRequest(member.member_id, _generation(draw, group), instance, offsets)
    elif situation == "admin" or (member is None and draw(INDEX) % 2):
        request = OffsetCommitRequest(UNKNOWN_MEMBER_ID, UNKNOWN_GENERATION_ID, None, offsets)
    else:
        member_id = _choose(draw, (*seen, GARBAGE_MEMBER_ID))
        request = OffsetCommitRequest(member_id, _generation(draw, group), _instance(draw), offsets)
    return OffsetCommit(group_id, request)


def draw_fetch(draw: Pick, group_id: GroupId) -> OffsetFetch:
    wanted = _choose(draw, (None, PARTITIONS[:1], PARTITIONS))
    return OffsetFetch(group_id, OffsetFetchRequest(wanted))


def draw_session(
    draw: Pick, group_id: GroupId, group: ClassicGroup, seen: Sequence[MemberId]
) -> ExpireSession:
    candidates = (*(member.member_id for member in group.members), *group.pending_members)
    if not candidates or _near_miss(draw):
        candidates = (*seen, GARBAGE_MEMBER_ID)
    return ExpireSession(group_id, _choose(draw, candidates))


def draw_progress(draw: Pick, group_id: GroupId, group: ClassicGroup, value: int) -> Command:
    """The request a well-behaved member would send next, so the group moves through whole
    rebalances: an empty group gets a new member (or the pending one joins; or, if it holds
    offsets, a time in four they expire), a rebalancing
    group the JoinGroup of a member that has not rejoined (or, when all have, the rebalance
    timer), a CompletingRebalance group the leader's SyncGroup, a Stable group the SyncGroups
    still due, then heartbeats, commits under the current generation, a new member or a
    rejoining leader."""
    state = group.state
    if state is coordinator_spec.DEAD:
        return draw_fetch(draw, group_id)
    if group.pending_members:
        member_id = _choose(draw, group.pending_members)
        protocols = _protocols(draw, group.generation)
        return JoinGroup(
            group_id,
            JoinGroupRequest(member_id, None, CONSUMER_PROTOCOL_TYPE, protocols),
            draw(INDEX) % CLIENTS,
        )
    if state is coordinator_spec.EMPTY and group.offsets and draw(INDEX) % 4 == 3:
        return ExpireOffsets(group_id)  # the group stayed empty for `offsets.retention.minutes`
    if not group.members or (state is coordinator_spec.STABLE and draw(INDEX) % 8 == 7):
        protocols = group.members[0].protocols if group.members else _protocols(draw, group.generation)
        require_known = draw(INDEX) % 2 == 0
        request = JoinGroupRequest(UNKNOWN_MEMBER_ID, None, CONSUMER_PROTOCOL_TYPE, protocols, require_known)
        return JoinGroup(group_id, request, draw(INDEX) % CLIENTS)
    if state is coordinator_spec.PREPARING_REBALANCE:
        waiting = tuple(member for member in group.members if not member.awaiting_join)
        if not waiting:
            return ExpireRebalance(group_id)
        member = _choose(draw, waiting)
        request = JoinGroupRequest(
            member.member_id, member.group_instance_id, CONSUMER_PROTOCOL_TYPE, member.protocols
        )
        return JoinGroup(group_id, request, member.client)
    leader = group.member(group.leader or "")
    due = [
        member
        for member in group.members
        if member.member_id in group.pending_sync and not member.awaiting_sync
    ]
    if leader in due and draw(INDEX) % 2:
        due = [leader]  # followers' SyncGroups wait (parked) for the leader's
    if due:
        member = _choose(draw, due)
        assignments = _assignments(draw, group) if member is leader else ()
        sync = SyncGroupRequest(
            member.member_id,
            group.generation,
            member.group_instance_id,
            CONSUMER_PROTOCOL_TYPE,
            group.protocol_name,
            assignments,
        )
        return SyncGroup(group_id, sync, member.client)
    member = _choose(draw, group.members)
    action = draw(INDEX) % 6
    if action < 3:
        return Heartbeat(
            group_id, HeartbeatRequest(member.member_id, group.generation, member.group_instance_id)
        )
    if action < 5:
        offsets = tuple((partition, value) for partition in member.assignment.partitions) or (
            (PARTITIONS[0], value),
        )
        commit = OffsetCommitRequest(member.member_id, group.generation, member.group_instance_id, offsets)
        return OffsetCommit(group_id, commit)
    rejoining = leader if leader is not None else member
    request = JoinGroupRequest(
        rejoining.member_id, rejoining.group_instance_id, CONSUMER_PROTOCOL_TYPE, rejoining.protocols
    )
    return JoinGroup(group_id, request, rejoining.client)


def build_command(
    reference: ReferenceClassicCoordinator,
    kinds: tuple[str, ...],
    seen: dict[GroupId, tuple[MemberId, ...]],
    value: int,
    choice: tuple[int, int, int],
) -> Command:
    """One command from three drawn numbers `choice` (group, kind, seed), for a group (the
    first three times in four), built from the reference's state of that group with the
    seed's generator: half the time the next step of a well-behaved member
    (`draw_progress`), else a command of a kind from `kinds`; `value` is the offset a
    commit carries.
    Plain Python, not a strategy: a strategy built afresh at every step costs Hypothesis more
    than the step itself."""
    group_index, kind_index, seed = choice
    group_id = GROUPS[1] if group_index % 4 == 3 else GROUPS[0]
    group = reference.group(group_id)
    known = seen.get(group_id, ())
    pick = _Seeded(seed)
    if kind_index % 2:
        return draw_progress(pick, group_id, group, value)
    kind = kinds[kind_index // 2 % len(kinds)]
    if kind == "join":
        return draw_join(pick, group_id, group, known)
    if kind == "sync":
        return draw_sync(pick, group_id, group, known)
    if kind == "heartbeat":
        return draw_heartbeat(pick, group_id, group, known)
    if kind == "leave":
        return draw_leave(pick, group_id, group, known)
    if kind == "commit":
        return draw_commit(pick, group_id, group, known, value)
    if kind == "fetch":
        return draw_fetch(pick, group_id)
    if kind == "session":
        return draw_session(pick, group_id, group, known)
    if kind == "rebalance":
        return ExpireRebalance(group_id)
    if kind == "pending_sync":
        return ExpirePendingSync(group_id)
    return ExpireOffsets(group_id)


# ---------------------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------------------


def first_difference(target: GroupView, reference: GroupView) -> tuple[str, object, object] | None:
    """The first field (in declaration order, member by member) where `target` differs from
    `reference`: (its path, the target's value, the reference's value); None if equal."""
    for view_field in fields(GroupView):
        name = view_field.name
        mine, theirs = getattr(target, name), getattr(reference, name)
        if name != "members":
            if isinstance(theirs, tuple) and isinstance(mine, list):
                mine = tuple(mine)
            if mine != theirs:
                return name, mine, theirs
            continue
        if len(mine) != len(theirs):
            return (
                "members (count)",
                [member.member_id for member in mine],
                [member.member_id for member in theirs],
            )
        for index, (target_member, reference_member) in enumerate(zip(mine, theirs, strict=True)):
            for member_field in fields(reference_member):
                left = getattr(target_member, member_field.name)
                right = getattr(reference_member, member_field.name)
                if left != right:
                    return f"members[{index}].{member_field.name}", left, right
    return None


COORDINATOR_INVARIANTS = ("leader_is_a_member", "one_member_per_instance")
"""`spec.group.classic` invariants that are about the coordinator's group alone."""

COORDINATOR_STEP_PROPERTIES = (
    "valid_state_transitions",
    "generations_only_grow",
    "offsets_expire_only_when_empty",
    "leader_stays_while_it_rejoins",
    "stale_commits_never_land",
)
"""`spec.group.classic` step properties that are about the coordinator's group alone."""

_PROPERTY_CONFIG = classic.ClassicConfig()


def _system_state(group: ClassicGroup) -> classic.ClassicState:
    return classic.ClassicState(group, ())


def properties_violated(before: ClassicGroup, after: ClassicGroup, command: Command) -> list[str]:
    """The coordinator-level spec properties the step from `before` to `after` breaks."""
    broken = [
        name
        for name in COORDINATOR_INVARIANTS
        if not classic.INVARIANTS[name](_PROPERTY_CONFIG, _system_state(after))
    ]
    exempt = (
        isinstance(command, OffsetCommit)
        and command.request.generation_id_or_member_epoch < 0
        and before.state is coordinator_spec.EMPTY
    )
    for name in COORDINATOR_STEP_PROPERTIES:
        if name == "stale_commits_never_land" and exempt:
            continue
        if not classic.STEP_PROPERTIES[name](_PROPERTY_CONFIG, _system_state(before), _system_state(after)):
            broken.append(name)
    return broken


# ---------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------


class CoordinatorConformanceMachine(TargetCalls[CoordinatorSettings], RuleBasedStateMachine):
    """Drives `make_coordinator(target, settings)` and the reference with the same commands."""

    target: ClassVar[str] = "reference"
    command_seconds: float = DEFAULT_COMMAND_SECONDS

    def __init__(self) -> None:
        super().__init__()
        self._sut: ClassicCoordinatorUnderTest | None = None
        self.hung = False
        self.settings = CoordinatorSettings()
        self.reference = ReferenceClassicCoordinator(coordinator_rules(self.settings))
        self.commands: list[str] = []
        self.seen: dict[GroupId, tuple[MemberId, ...]] = {}
        self.offset_value = 0
        self._kinds = weighted_kinds(frozenset())

    @property
    def sut(self) -> ClassicCoordinatorUnderTest:
        """The coordinator under test (built by `begin`)."""
        assert self._sut is not None, "start() builds the target before any command"
        return self._sut

    def teardown(self) -> None:
        """Release the target's resources (not after a hang: the target is stuck)."""
        if self._sut is not None and not self.hung:
            self.guarded("close()", self._sut.close)

    # -- helpers ------------------------------------------------------------------------

    def begin(self, settings: CoordinatorSettings) -> None:
        """Build the target and the reference with `settings`; both start with no groups."""
        self.settings = settings
        self.reference = ReferenceClassicCoordinator(coordinator_rules(settings))
        self._sut = self.guarded(
            "creating the coordinator", lambda: make_coordinator(self.target, settings), usage_errors=True
        )
        self._observe_all("start")

    def _compare_view(self, group_id: GroupId, view: GroupView, after: str) -> None:
        expected = view_of(self.reference.group(group_id))
        try:
            difference = first_difference(view, expected)
        except (AttributeError, TypeError) as error:
            raise self.fail(f"observe({group_id}) after {after}: not a GroupView: {error}") from error
        if difference is not None:
            path, mine, theirs = difference
            raise self.fail(f"{group_id} {path} after {after}: target has {mine!r}, reference has {theirs!r}")

    def _observe_all(self, after: str) -> None:
        views = self.guarded(
            f"observe() after {after}", lambda: tuple(self.sut.observe(group_id) for group_id in GROUPS)
        )
        for group_id, view in zip(GROUPS, views, strict=True):
            self._compare_view(group_id, view, after)

    def _check_refinement(self, before: ClassicGroup, command: Command, answer: Answer, text: str) -> None:
        step = self.reference.last_step
        where = f"{text}: the reference left the spec"
        if step is None or step.group_id != command.group_id or step.before != before:
            raise self.fail(f"{where}: it did not step from the group it held")
        group, expected, deliveries = spec_outcome(before, command, self.reference.rules)
        if group != step.after or expected != answer or deliveries != step.deliveries:
            raise self.fail(f"{where}: the spec's handler gives {group!r}, {expected!r}, {deliveries!r}")
        broken = properties_violated(before, step.after, command)
        if broken:
            raise self.fail(
                f"{text}: the spec's properties {', '.join(broken)} do not hold in {step.after!r}"
            )

    def run(self, command: Command) -> None:
        """Give `command` to the reference and the target and compare everything."""
        text = command_text(command)
        before = self.reference.group(command.group_id)
        expected = perform(self.reference, command)
        expected_deliveries = tuple(
            Delivery(group_id, client, response)
            for group_id, (client, response) in self.reference.deliveries()
        )
        shown = f"{text} -> {expected!r}"
        if expected_deliveries:
            shown += f"; answered parked: {[(d.client, d.response) for d in expected_deliveries]!r}"
        self.commands.append(shown)
        self._check_refinement(before, command, expected, text)
        group = self.reference.group(command.group_id)
        self.seen[command.group_id] = tuple(
            sorted(
                {
                    *self.seen.get(command.group_id, ()),
                    *(member.member_id for member in group.members),
                    *group.pending_members,
                }
            )
        )
        # one guarded call per command (the watchdog costs a timer signal per call)
        answer, delivered, views = self.guarded(text, lambda: self._perform_and_observe(command))
        if answer != expected:
            raise self.fail(f"{text}: target answered {answer!r}, reference answered {expected!r}")
        try:
            same = Counter(delivered) == Counter(expected_deliveries)
        except TypeError as error:
            raise self.fail(f"deliveries() after {text}: not Delivery values: {error}") from error
        if not same:
            raise self.fail(
                f"deliveries() after {text}: target gave {list(delivered)!r}, "
                f"reference gave {list(expected_deliveries)!r}"
            )
        for group_id, view in zip(GROUPS, views, strict=True):
            self._compare_view(group_id, view, text)

    def _perform_and_observe(
        self, command: Command
    ) -> tuple[Answer, tuple[Delivery, ...], tuple[GroupView, ...]]:
        answer = perform(self.sut, command)
        return answer, self.sut.deliveries(), tuple(self.sut.observe(group_id) for group_id in GROUPS)

    # -- rules --------------------------------------------------------------------------

    @initialize(
        group_max_size=st.sampled_from((DEFAULT_GROUP_MAX_SIZE, 2, 3)),
        emphasis=st.frozensets(st.sampled_from(KIND_NAMES), max_size=3),
        omitted=st.frozensets(st.sampled_from(KIND_NAMES), max_size=2),
    )
    def start(self, group_max_size: int, emphasis: frozenset[str], omitted: frozenset[str]) -> None:
        """Build both with the drawn `group.max.size`; `emphasis` and `omitted` name the kinds
        of command this test case leans on and leaves out (swarm testing)."""
        self._kinds = weighted_kinds(emphasis, omitted)
        self.begin(CoordinatorSettings(group_max_size))

    @rule(group=INDEX, kind=KIND_INDEX, seed=SEED)
    def command(self, group: int, kind: int, seed: int) -> None:
        """A request or a timer, built from the reference's state (`build_command`)."""
        self.offset_value += 1
        self.run(
            build_command(self.reference, self._kinds, self.seen, self.offset_value, (group, kind, seed))
        )


def coordinator_machine_for(
    target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> type[CoordinatorConformanceMachine]:
    """The machine bound to `target` (``reference``, ``impl`` or ``MODULE:FACTORY``), each
    call into the target stopped after `command_seconds`."""
    return bound_machine(CoordinatorConformanceMachine, target, command_seconds, resolve_coordinator_target)


class ReferenceCoordinatorConformance(CoordinatorConformanceMachine):
    """The machine against the reference itself (a self-check of the machine and the refinement)."""

    target = "reference"
