"""A classic-protocol group coordinator built for many groups: O(1) heartbeats, timers on a wheel.

What it is
    The optimized counterpart of the classic protocol's coordinator spec
    (`spec.group.classic_coordinator`): one broker's group coordinator serving any number of
    classic groups, each a mutable object updated in place. The handlers follow Kafka's
    `GroupMetadataManager` for classic groups (`classicGroupJoin`, `classicGroupSync`,
    `classicGroupHeartbeat`, `classicGroupLeave`, offset commit and fetch) with the same
    answers as the spec in every state; timers run on a real clock (milliseconds, advanced by
    `advance_to`):

        session timeout      a member's (or a MEMBER_ID_REQUIRED id's) `session.timeout.ms`
                             since its last heartbeat, JoinGroup or SyncGroup
        rebalance timeout    the join phase (`DelayedJoin`; `group.initial.rebalance.delay.ms`
                             after Empty, `InitialDelayedJoin`)
        pending sync         members of a new generation that did not send SyncGroup in time
                             (`expirePendingSync`)
        offset retention     `offsets.retention.minutes` after an Empty group's last commit or
                             its becoming Empty (KIP-211)

    The spec's requests carry no timeouts (it abstracts time), so they are broker settings
    here (`CoordinatorConfig`), the same for every member.

Why it is fast (and the spec is not)
    * Members are in a dict per group in join order (the leader is the first to join, a new
      leader the first remaining member), with counters kept up to date instead of scans:
      how many members have a JoinGroup parked (`hasAllMembersJoined` is O(1)), how many
      members support each protocol (`supportsProtocols` is O(protocols)), and an index from
      `group.instance.id` to member id. A rebalance costs O(members) once, a JoinGroup or a
      follower's SyncGroup O(1) in the group's size.
    * Timers live in a `TimerWheel`: tasks in buckets by expiration tick, and a heap of the
      ticks that have a bucket, as Kafka's `SystemTimer` keeps `TimerTaskList`s in a
      `DelayQueue`. Rescheduling a task (every heartbeat) moves it between two buckets:
      O(1), no heap operation unless the new tick has no bucket yet. Advancing the clock
      visits only the buckets whose tick passed and pops only the tasks in them: expiry costs
      what expires, not what exists. (Kafka's hierarchical wheel exists to bound the number
      of buckets; a dict of buckets keyed by tick needs no hierarchy.)
    * Offsets are a dict per group; their expiry is one more timer per Empty group with
      offsets, so retention never scans the groups that keep theirs.

Answers to parked requests
    JoinGroup and SyncGroup return None when parked; the answer is given later to the
    connection (`client`) that sent the request, and `take_deliveries()` drains those answers
    in order.

Deviations from Kafka (as in the spec)
    A Dead group (its offsets expired) stays Dead (Kafka deletes it, and a later JoinGroup
    creates a new one); member ids are ``c{client}-{n}`` or ``{group.instance.id}-{n}``
    instead of a client id and a UUID, so they are comparable with the spec's.

This module reimplements the rules; it imports only the plain data of `spec.group.types`
(`tests/test_layout.py` enforces it), so comparing it with the spec means something.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

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

GroupId = str

EMPTY = ClassicGroupState.EMPTY
PREPARING_REBALANCE = ClassicGroupState.PREPARING_REBALANCE
COMPLETING_REBALANCE = ClassicGroupState.COMPLETING_REBALANCE
STABLE = ClassicGroupState.STABLE
DEAD = ClassicGroupState.DEAD

VALID_PREVIOUS_STATES = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}
"""`ClassicGroupState.addValidPreviousStates`."""

CAN_REBALANCE = VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

HEARTBEAT_ANSWERS = {
    EMPTY: HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID),
    PREPARING_REBALANCE: HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS),
    COMPLETING_REBALANCE: HeartbeatResponse(Errors.NONE),
    STABLE: HeartbeatResponse(Errors.NONE),
}
"""A valid member's heartbeat is answered by its group's state (responses are immutable, so
one object per answer serves every heartbeat)."""

_HEARTBEAT_UNKNOWN_MEMBER = HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
_HEARTBEAT_FENCED = HeartbeatResponse(Errors.FENCED_INSTANCE_ID)
_HEARTBEAT_ILLEGAL_GENERATION = HeartbeatResponse(Errors.ILLEGAL_GENERATION)
_HEARTBEAT_NOT_AVAILABLE = HeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE)


class IllegalStateError(AssertionError):
    """A transition `VALID_PREVIOUS_STATES` does not allow: a bug in this module."""


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker settings (Kafka's names and defaults)."""

    group_max_size: int = 2**31 - 1  # group.max.size
    session_timeout_ms: int = 45_000  # the consumer's session.timeout.ms default
    rebalance_timeout_ms: int = 300_000  # the consumer's max.poll.interval.ms default
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    tick_ms: int = 1  # the timer wheel's resolution (Kafka's SystemTimer: 1 ms)


# --- the timer wheel ------------------------------------------------------------------------


class TimerTask:
    """One timer: a member's session, or a group's rebalance, pending-sync or offset-retention
    timer. `tick` is the bucket it waits in (None: not armed). Hashed by identity."""

    __slots__ = ("group_id", "kind", "member_id", "tick")

    def __init__(self, kind: str, group_id: GroupId, member_id: MemberId = UNKNOWN_MEMBER_ID) -> None:
        self.kind = kind
        self.group_id = group_id
        self.member_id = member_id
        self.tick: int | None = None


SESSION = "session"
REBALANCE = "rebalance"
PENDING_SYNC = "pending-sync"
OFFSETS = "offsets"


class _Bucket:
    """The tasks due at one tick. `removed` counts deletions since the dict was last rebuilt:
    a dict never shrinks on deletion, so a bucket that most tasks left (they heartbeated) is
    compacted once deletions outnumber what is left, keeping pops O(1) amortized."""

    __slots__ = ("removed", "tasks")

    def __init__(self) -> None:
        self.tasks: dict[TimerTask, None] = {}
        self.removed = 0


class TimerWheel:
    """Timer tasks in buckets by expiration tick, with a min-heap of the ticks that have a
    bucket (see the module docstring). `operations` counts the buckets visited and the tasks
    popped by `pop_due`, so tests can check that expiry costs what expires."""

    __slots__ = ("_buckets", "_ticks", "operations", "tick_ms")

    def __init__(self, tick_ms: int = 1) -> None:
        if tick_ms < 1:
            raise ValueError(f"tick_ms must be at least 1, got {tick_ms}")
        self.tick_ms = tick_ms
        self._buckets: dict[int, _Bucket] = {}
        self._ticks: list[int] = []
        self.operations = 0

    def schedule(self, task: TimerTask, deadline_ms: int) -> None:
        """Arm `task` to fire at `deadline_ms` (rounded up to a tick: never early), moving it
        if it was armed already."""
        tick = -(-deadline_ms // self.tick_ms)
        old = task.tick
        if old == tick:
            return
        buckets = self._buckets
        if old is not None:  # `_remove`, inlined: this is every heartbeat's path
            left = buckets[old]
            tasks = left.tasks
            del tasks[task]
            left.removed += 1
            if left.removed > 32 and left.removed > 2 * len(tasks):
                left.tasks = dict(tasks)
                left.removed = 0
        bucket = buckets.get(tick)
        if bucket is None:
            bucket = buckets[tick] = _Bucket()
            heapq.heappush(self._ticks, tick)
        bucket.tasks[task] = None
        task.tick = tick

    def cancel(self, task: TimerTask) -> None:
        """Disarm `task` (nothing if it is not armed)."""
        if task.tick is not None:
            self._remove(self._buckets[task.tick], task)
            task.tick = None

    @staticmethod
    def _remove(bucket: _Bucket, task: TimerTask) -> None:
        tasks = bucket.tasks
        del tasks[task]
        bucket.removed += 1
        if bucket.removed > 32 and bucket.removed > 2 * len(tasks):
            bucket.tasks = dict(tasks)
            bucket.removed = 0

    def pop_due(self, now_ms: int) -> TimerTask | None:
        """A task whose tick is at or before `now_ms` (disarmed now), or None."""
        now_tick = now_ms // self.tick_ms
        ticks = self._ticks
        while ticks and ticks[0] <= now_tick:
            self.operations += 1
            bucket = self._buckets[ticks[0]]
            if bucket.tasks:
                task, _ = bucket.tasks.popitem()
                task.tick = None
                return task
            del self._buckets[heapq.heappop(ticks)]
        return None

    def __len__(self) -> int:
        """How many tasks are armed."""
        return sum(len(bucket.tasks) for bucket in self._buckets.values())


# --- groups and members ---------------------------------------------------------------------


class _Member:
    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client",
        "group_instance_id",
        "member_id",
        "names",
        "protocols",
        "session",
    )

    def __init__(
        self,
        member_id: MemberId,
        group_instance_id: GroupInstanceId | None,
        client: int,
        protocols: tuple[JoinGroupRequestProtocol, ...],
        session: TimerTask,
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client = client
        self.protocols = protocols
        self.names = frozenset(protocol.name for protocol in protocols)
        self.awaiting_join = False
        self.awaiting_sync = False
        self.assignment = EMPTY_ASSIGNMENT
        self.session = session

    def metadata(self, protocol_name: str | None) -> JoinGroupResponseMember:
        for protocol in self.protocols:
            if protocol.name == protocol_name:
                return JoinGroupResponseMember(self.member_id, self.group_instance_id, protocol.metadata)
        raise IllegalStateError(f"member {self.member_id} does not support {protocol_name}")


class _Group:
    __slots__ = (
        "awaiting_join",
        "generation",
        "group_id",
        "join_timer",
        "leader",
        "members",
        "next_member_number",
        "offsets",
        "offsets_timer",
        "pending_members",
        "pending_sync",
        "previous_state",
        "protocol_name",
        "protocol_type",
        "state",
        "static_members",
        "support",
        "sync_timer",
    )

    def __init__(self, group_id: GroupId) -> None:
        self.group_id = group_id
        self.state = EMPTY
        self.previous_state = EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: MemberId | None = None
        self.members: dict[MemberId, _Member] = {}
        self.pending_members: dict[MemberId, TimerTask] = {}
        self.pending_sync: set[MemberId] = set()
        self.offsets: dict[TopicPartition, int] = {}
        self.next_member_number = 0
        self.awaiting_join = 0  # members with a JoinGroup parked
        self.support: dict[str, int] = {}  # protocol name -> members that support it
        self.static_members: dict[GroupInstanceId, MemberId] = {}
        self.join_timer = TimerTask(REBALANCE, group_id)
        self.sync_timer = TimerTask(PENDING_SYNC, group_id)
        self.offsets_timer = TimerTask(OFFSETS, group_id)

    def has_all_members_joined(self) -> bool:
        return self.awaiting_join == len(self.members) and not self.pending_members


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member as `describe` shows it."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    client: int
    protocols: tuple[JoinGroupRequestProtocol, ...]
    awaiting_join: bool
    awaiting_sync: bool
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group's state as plain data (members in join order, offsets sorted by partition)."""

    state: ClassicGroupState
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: MemberId | None
    members: tuple[MemberDescription, ...]
    pending_members: tuple[MemberId, ...]
    pending_sync: tuple[MemberId, ...]
    offsets: tuple[tuple[TopicPartition, int], ...]


Delivery = tuple[GroupId, int, JoinGroupResponse | SyncGroupResponse]
"""An answer to a parked request: (group, the connection that sent it, the response)."""


def _join_error(error: Errors, member_id: MemberId = UNKNOWN_MEMBER_ID) -> JoinGroupResponse:
    return JoinGroupResponse(error=error, member_id=member_id)


class GroupCoordinator:
    """Classic groups by id on one broker (see the module docstring)."""

    def __init__(self, config: CoordinatorConfig | None = None) -> None:
        self.config = config if config is not None else CoordinatorConfig()
        self.now_ms = 0
        self.timers = TimerWheel(self.config.tick_ms)
        self._groups: dict[GroupId, _Group] = {}
        self._outbox: list[Delivery] = []
        self._session_ms = self.config.session_timeout_ms

    # -- clock and timers ---------------------------------------------------------------

    def advance_to(self, now_ms: int) -> None:
        """Move the clock to `now_ms` (never back) and fire every timer due by then."""
        self.now_ms = max(self.now_ms, now_ms)
        while (task := self.timers.pop_due(self.now_ms)) is not None:
            self._fire(task)

    def expire_now(self, task: TimerTask) -> bool:
        """Make an armed `task` due now and run the wheel (an operator's "expire now"; the
        conformance adapter maps the suite's timer commands onto it). False when `task`
        is not armed."""
        if task.tick is None:
            return False
        self.timers.schedule(task, self.now_ms)
        self.advance_to(self.now_ms)
        return True

    def session_timer(self, group_id: GroupId, member_id: MemberId) -> TimerTask | None:
        """The session timer task of a member or pending member id, if there is one."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        member = group.members.get(member_id)
        if member is not None:
            return member.session
        return group.pending_members.get(member_id)

    def group_timer(self, group_id: GroupId, kind: str) -> TimerTask | None:
        """The group's rebalance, pending-sync or offsets timer task (None: no such group)."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        return {REBALANCE: group.join_timer, PENDING_SYNC: group.sync_timer, OFFSETS: group.offsets_timer}[
            kind
        ]

    def _fire(self, task: TimerTask) -> None:
        group = self._groups.get(task.group_id)
        if group is None:
            return
        if task.kind == SESSION:
            self._expire_session(group, task.member_id)
        elif task.kind == REBALANCE:
            if group.state is PREPARING_REBALANCE:
                self._complete_join(group)
        elif task.kind == PENDING_SYNC:
            self._expire_pending_sync(group)
        else:
            self._expire_offsets(group)

    def _arm_session(self, task: TimerTask) -> None:
        self.timers.schedule(task, self.now_ms + self._session_ms)

    def take_deliveries(self) -> Sequence[Delivery]:
        """The answers to parked requests given since the last call, in order (most calls find
        none: then no new list is made)."""
        taken = self._outbox
        if not taken:
            return ()
        self._outbox = []
        return taken

    # -- groups -------------------------------------------------------------------------

    def _group(self, group_id: GroupId) -> _Group:
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = _Group(group_id)
        return group

    def group_count(self) -> int:
        """How many groups the coordinator holds."""
        return len(self._groups)

    def describe(self, group_id: GroupId) -> GroupDescription:
        """The group as plain data (a group never used: Empty, generation 0)."""
        group = self._groups.get(group_id) or _Group(group_id)
        return GroupDescription(
            state=group.state,
            generation=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader,
            members=tuple(
                MemberDescription(
                    member.member_id,
                    member.group_instance_id,
                    member.client,
                    member.protocols,
                    member.awaiting_join,
                    member.awaiting_sync,
                    member.assignment,
                )
                for member in group.members.values()
            ),
            pending_members=tuple(group.pending_members),
            pending_sync=tuple(sorted(group.pending_sync)),
            offsets=tuple(sorted(group.offsets.items())),
        )

    def _transition(self, group: _Group, target: ClassicGroupState) -> None:
        if group.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateError(f"{group.state} -> {target} is not a valid transition")
        group.previous_state = group.state
        group.state = target
        if target is EMPTY and group.offsets:
            self.timers.schedule(group.offsets_timer, self.now_ms + self.config.offsets_retention_ms)
        elif group.previous_state is EMPTY:
            self.timers.cancel(group.offsets_timer)

    # -- membership bookkeeping ---------------------------------------------------------

    def _new_member_id(self, group: _Group, prefix: str) -> MemberId:
        member_id = f"{prefix}-{group.next_member_number}"
        group.next_member_number += 1
        return member_id

    def _add_member(self, group: _Group, member: _Member, protocol_type: str) -> None:
        if not group.members:
            group.protocol_type = protocol_type
        if group.leader is None:
            group.leader = member.member_id
        group.members[member.member_id] = member
        group.pending_members.pop(member.member_id, None)
        for name in member.names:
            group.support[name] = group.support.get(name, 0) + 1
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if member.awaiting_join:
            group.awaiting_join += 1

    def _set_protocols(
        self, group: _Group, member: _Member, protocols: tuple[JoinGroupRequestProtocol, ...]
    ) -> None:
        if protocols == member.protocols:
            return  # a rejoin with the same metadata (the usual case): nothing to recount
        support = group.support
        for name in member.names:
            support[name] -= 1
        member.protocols = protocols
        member.names = frozenset(protocol.name for protocol in protocols)
        for name in member.names:
            support[name] = support.get(name, 0) + 1

    def _set_awaiting_join(self, group: _Group, member: _Member, awaiting: bool) -> None:
        if member.awaiting_join != awaiting:
            member.awaiting_join = awaiting
            group.awaiting_join += 1 if awaiting else -1

    def _remove_member(self, group: _Group, member_id: MemberId) -> None:
        """`ClassicGroup.remove` (also of a pending member id): a removed leader is replaced
        by the first remaining member."""
        member = group.members.pop(member_id, None)
        if member is not None:
            for name in member.names:
                group.support[name] -= 1
            if member.awaiting_join:
                group.awaiting_join -= 1
            if (
                member.group_instance_id is not None
                and group.static_members.get(member.group_instance_id) == member_id
            ):
                del group.static_members[member.group_instance_id]
            self.timers.cancel(member.session)
        if group.leader == member_id:
            group.leader = next(iter(group.members), None)
        pending = group.pending_members.pop(member_id, None)
        if pending is not None:
            self.timers.cancel(pending)
        if member_id in group.pending_sync:
            group.pending_sync.discard(member_id)
            if not group.pending_sync:
                self.timers.cancel(group.sync_timer)

    def _remove_and_answer_join(self, group: _Group, member: _Member) -> None:
        if member.awaiting_join:
            self._outbox.append((group.group_id, member.client, _join_error(Errors.UNKNOWN_MEMBER_ID)))
        self._remove_member(group, member.member_id)

    def _validate_member(
        self, group: _Group, member_id: MemberId, group_instance_id: GroupInstanceId | None
    ) -> Errors:
        if group_instance_id is not None:
            existing = group.static_members.get(group_instance_id)
            if existing is None:
                return Errors.UNKNOWN_MEMBER_ID
            if existing != member_id:
                return Errors.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return Errors.UNKNOWN_MEMBER_ID
        return Errors.NONE

    def _supports_protocols(
        self, group: _Group, protocol_type: str, protocols: tuple[JoinGroupRequestProtocol, ...]
    ) -> bool:
        if group.state is EMPTY:
            return bool(protocol_type) and bool(protocols)
        if group.protocol_type != protocol_type:
            return False
        count = len(group.members)
        support = group.support
        return any(support.get(protocol.name, 0) == count for protocol in protocols)

    def _select_protocol(self, group: _Group) -> str:
        count = len(group.members)
        candidates = {name for name, supporters in group.support.items() if supporters == count}
        votes: dict[str, int] = {}
        for member in group.members.values():
            vote = next(protocol.name for protocol in member.protocols if protocol.name in candidates)
            votes[vote] = votes.get(vote, 0) + 1
        return max(sorted(votes), key=lambda name: votes[name])

    # -- rebalancing --------------------------------------------------------------------

    def _join_response(self, group: _Group, member: _Member, with_members: bool = True) -> JoinGroupResponse:
        is_leader = member.member_id == group.leader
        return JoinGroupResponse(
            error=Errors.NONE,
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader or UNKNOWN_MEMBER_ID,
            member_id=member.member_id,
            members=tuple(other.metadata(group.protocol_name) for other in group.members.values())
            if is_leader and with_members
            else (),
        )

    def _prepare_rebalance(self, group: _Group) -> None:
        """`prepareRebalance`."""
        if group.state is COMPLETING_REBALANCE:
            rebalancing = SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
            for member in group.members.values():
                if member.awaiting_sync:
                    self._outbox.append((group.group_id, member.client, rebalancing))
                    member.awaiting_sync = False
                member.assignment = EMPTY_ASSIGNMENT
        initial = group.state is EMPTY
        self._transition(group, PREPARING_REBALANCE)
        group.pending_sync.clear()
        self.timers.cancel(group.sync_timer)
        delay = self.config.initial_rebalance_delay_ms if initial else self.config.rebalance_timeout_ms
        self.timers.schedule(group.join_timer, self.now_ms + delay)
        if not initial and group.has_all_members_joined():
            self._complete_join(group)

    def _maybe_complete_join_phase(self, group: _Group) -> None:
        if group.state is not PREPARING_REBALANCE or group.previous_state is EMPTY:
            return
        if group.has_all_members_joined():
            self._complete_join(group)

    def _maybe_prepare_rebalance_or_complete_join(self, group: _Group) -> None:
        if group.state in CAN_REBALANCE:
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _elect_joined_leader(self, group: _Group) -> bool:
        if group.leader is None:
            return False
        leader = group.members.get(group.leader)
        if leader is not None and leader.awaiting_join:
            return True
        for member in group.members.values():
            if member.awaiting_join:
                group.leader = member.member_id
                return True
        return False

    def _complete_join(self, group: _Group) -> None:
        """`completeClassicGroupJoin` and `initNextGeneration`."""
        for member in [member for member in group.members.values() if not member.awaiting_join]:
            if member.group_instance_id is None:
                self._remove_member(group, member.member_id)
        if group.state is DEAD:
            return
        if not self._elect_joined_leader(group) and group.members:
            self.timers.schedule(group.join_timer, self.now_ms + self.config.rebalance_timeout_ms)
            return
        self.timers.cancel(group.join_timer)
        group.generation += 1
        if not group.members:
            self._transition(group, EMPTY)
            group.protocol_name = None
            group.pending_sync.clear()
            return
        group.protocol_name = self._select_protocol(group)
        self._transition(group, COMPLETING_REBALANCE)
        outbox = self._outbox
        for member in group.members.values():
            if member.awaiting_join:
                outbox.append((group.group_id, member.client, self._join_response(group, member)))
                member.awaiting_join = False
        group.awaiting_join = 0
        group.pending_sync = set(group.members)
        self.timers.schedule(group.sync_timer, self.now_ms + self.config.rebalance_timeout_ms)

    # -- JoinGroup ----------------------------------------------------------------------

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        """`classicGroupJoin`: the answer, or None when the JoinGroup is parked."""
        group = self._group(group_id)
        member_id = request.member_id
        if not self._accept_joining_member(group, member_id):
            self._remove_member(group, member_id)  # as Kafka: a member or pending id over the limit leaves
            return _join_error(Errors.GROUP_MAX_SIZE_REACHED)
        if member_id == UNKNOWN_MEMBER_ID:
            return self._join_new_member(group, request, client)
        return self._join_existing_member(group, request, client)

    def _accept_joining_member(self, group: _Group, member_id: MemberId) -> bool:
        if group.state is EMPTY or group.state is DEAD:
            return True
        member = group.members.get(member_id)
        limit = self.config.group_max_size
        if group.state is PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join) or group.awaiting_join < limit
        return member is not None or len(group.members) < limit

    def _join_new_member(
        self, group: _Group, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        if group.state is DEAD:
            return _join_error(Errors.COORDINATOR_NOT_AVAILABLE)
        if not self._supports_protocols(group, request.protocol_type, request.protocols):
            return _join_error(Errors.INCONSISTENT_GROUP_PROTOCOL)
        instance = request.group_instance_id
        if instance is not None:
            existing = group.static_members.get(instance)
            if existing is not None:
                return self._replace_static_member(group, request, existing, client)
            member_id = self._new_member_id(group, instance)
            return self._add_member_and_rebalance(group, request, member_id, client)
        member_id = self._new_member_id(group, f"c{client}")
        if request.require_known_member_id:
            task = TimerTask(SESSION, group.group_id, member_id)
            group.pending_members[member_id] = task
            self._arm_session(task)
            return _join_error(Errors.MEMBER_ID_REQUIRED, member_id)
        return self._add_member_and_rebalance(group, request, member_id, client)

    def _add_member_and_rebalance(
        self, group: _Group, request: JoinGroupRequest, member_id: MemberId, client: int
    ) -> JoinGroupResponse | None:
        session = group.pending_members.get(member_id) or TimerTask(SESSION, group.group_id, member_id)
        member = _Member(member_id, request.group_instance_id, client, request.protocols, session)
        member.awaiting_join = True
        self._add_member(group, member, request.protocol_type)
        self._arm_session(session)
        self._maybe_prepare_rebalance_or_complete_join(group)
        return None  # parked

    def _join_existing_member(
        self, group: _Group, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        member_id = request.member_id
        if group.state is DEAD:
            return _join_error(Errors.COORDINATOR_NOT_AVAILABLE, member_id)
        if not self._supports_protocols(group, request.protocol_type, request.protocols):
            return _join_error(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id)
        if member_id in group.pending_members:
            if request.group_instance_id is not None:  # Kafka throws: a pending member is never static
                return _join_error(Errors.UNKNOWN_SERVER_ERROR)
            return self._add_member_and_rebalance(group, request, member_id, client)
        error = self._validate_member(group, member_id, request.group_instance_id)
        if error is not Errors.NONE:
            return _join_error(error, member_id)
        member = group.members[member_id]
        self._arm_session(member.session)
        state = group.state
        if state is PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, request, client)
        if state is COMPLETING_REBALANCE:
            if member.protocols == request.protocols:
                return self._join_response(group, member)  # it missed its JoinGroup response
            return self._update_member_and_rebalance(group, member, request, client)
        if state is STABLE:
            if group.leader == member_id or member.protocols != request.protocols:
                return self._update_member_and_rebalance(group, member, request, client)
            return self._join_response(group, member, with_members=False)
        return _join_error(Errors.UNKNOWN_MEMBER_ID, member_id)

    def _update_member_and_rebalance(
        self, group: _Group, member: _Member, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        self._set_protocols(group, member, request.protocols)
        self._set_awaiting_join(group, member, True)
        member.client = client
        self._maybe_prepare_rebalance_or_complete_join(group)
        return None  # parked

    def _static_replacement_rebalances(self, group: _Group) -> bool:
        if group.state is COMPLETING_REBALANCE:
            return True  # KAFKA-9801: the leader may hold the member list with the old id
        return group.protocol_name != self._select_protocol(group)

    def _replace_static_member(
        self, group: _Group, request: JoinGroupRequest, old_member_id: MemberId, client: int
    ) -> JoinGroupResponse | None:
        """`updateStaticMemberThenRebalanceOrCompleteJoin` with `replaceStaticMember`."""
        old = group.members[old_member_id]
        instance = old.group_instance_id
        assert instance is not None
        member_id = self._new_member_id(group, instance)
        if old.awaiting_join:
            fenced = JoinGroupResponse(Errors.FENCED_INSTANCE_ID, member_id=old_member_id)
            self._outbox.append((group.group_id, old.client, fenced))
        if old.awaiting_sync:
            self._outbox.append((group.group_id, old.client, SyncGroupResponse(Errors.FENCED_INSTANCE_ID)))
        new = _Member(
            member_id, instance, client, request.protocols, TimerTask(SESSION, group.group_id, member_id)
        )
        new.awaiting_join = True
        new.assignment = old.assignment
        # the new id takes the old one's place in join order (a rebuild: static restarts are rare)
        group.members = {
            (member_id if key == old_member_id else key): (new if key == old_member_id else value)
            for key, value in group.members.items()
        }
        support = group.support
        for name in old.names:
            support[name] -= 1
        for name in new.names:
            support[name] = support.get(name, 0) + 1
        group.awaiting_join += 1 - old.awaiting_join
        group.static_members[instance] = member_id
        self.timers.cancel(old.session)
        self._arm_session(new.session)
        if group.leader == old_member_id:
            group.leader = member_id
        # the old id stays pending sync, as in Kafka: the pending-sync timer may then rebalance
        if group.state is STABLE or group.state is COMPLETING_REBALANCE:
            if self._static_replacement_rebalances(group):
                self._prepare_rebalance(group)
                return None
            self._set_awaiting_join(group, new, False)
            is_leader = group.leader == member_id
            return JoinGroupResponse(
                error=Errors.NONE,
                generation_id=group.generation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader or UNKNOWN_MEMBER_ID,
                skip_assignment=is_leader,
                member_id=member_id,
                members=tuple(member.metadata(group.protocol_name) for member in group.members.values())
                if is_leader
                else (),
            )
        if group.state is EMPTY or group.state is DEAD:
            raise IllegalStateError(f"a static member cannot be known in a {group.state} group")
        self._maybe_complete_join_phase(group)
        return None

    # -- SyncGroup ----------------------------------------------------------------------

    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None:
        """`classicGroupSync`: the answer, or None when the SyncGroup is parked."""
        group = self._groups.get(group_id)
        if group is None or group.state is EMPTY:
            return SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)
        error = self._validate_sync_group(group, request)
        if error is not Errors.NONE:
            return SyncGroupResponse(error)
        if group.state is PREPARING_REBALANCE:
            return SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)
        member_id = request.member_id
        member = group.members[member_id]
        self._arm_session(member.session)
        if member_id in group.pending_sync:
            group.pending_sync.discard(member_id)
            if not group.pending_sync:
                self.timers.cancel(group.sync_timer)
        if group.state is STABLE:
            return SyncGroupResponse(Errors.NONE, group.protocol_type, group.protocol_name, member.assignment)
        # CompletingRebalance: followers wait for the leader's assignment
        member.awaiting_sync = True
        member.client = client
        if group.leader != member_id:
            return None
        given = {entry.member_id: entry.assignment for entry in request.assignments}
        outbox = self._outbox
        for other in group.members.values():
            assignment = given.get(other.member_id, EMPTY_ASSIGNMENT)
            if other.awaiting_sync:
                response = SyncGroupResponse(
                    Errors.NONE, group.protocol_type, group.protocol_name, assignment
                )
                outbox.append((group_id, other.client, response))
                other.awaiting_sync = False
            other.assignment = assignment
        self._transition(group, STABLE)
        return None

    def _validate_sync_group(self, group: _Group, request: SyncGroupRequest) -> Errors:
        if group.state is DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, request.member_id, request.group_instance_id)
        if error is not Errors.NONE:
            return error
        if request.generation_id != group.generation:
            return Errors.ILLEGAL_GENERATION
        if request.protocol_type is not None and request.protocol_type != group.protocol_type:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        if request.protocol_name is not None and request.protocol_name != group.protocol_name:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return Errors.NONE

    # -- Heartbeat and LeaveGroup -------------------------------------------------------

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        """`classicGroupHeartbeat`: O(1) (two dict lookups and a timer move)."""
        group = self._groups.get(group_id)
        if group is None:
            return _HEARTBEAT_UNKNOWN_MEMBER
        if group.state is DEAD:
            return _HEARTBEAT_NOT_AVAILABLE
        instance = request.group_instance_id
        if instance is not None:
            existing = group.static_members.get(instance)
            if existing is None:
                return _HEARTBEAT_UNKNOWN_MEMBER
            if existing != request.member_id:
                return _HEARTBEAT_FENCED
        member = group.members.get(request.member_id)
        if member is None:
            return _HEARTBEAT_UNKNOWN_MEMBER
        if request.generation_id != group.generation:
            return _HEARTBEAT_ILLEGAL_GENERATION
        self.timers.schedule(member.session, self.now_ms + self._session_ms)
        return HEARTBEAT_ANSWERS[group.state]

    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse:
        """`classicGroupLeave`: each member leaves; then the group rebalances or completes a
        join phase that only waited for them."""
        group = self._groups.get(group_id) or _Group(group_id)
        if group.state is DEAD:
            return LeaveGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        answers: list[MemberResponse] = []
        removed = False
        for identity in request.members:
            error = Errors.NONE
            if identity.member_id == UNKNOWN_MEMBER_ID:
                existing = (
                    group.static_members.get(identity.group_instance_id)
                    if identity.group_instance_id
                    else None
                )
                if existing is None:
                    error = Errors.UNKNOWN_MEMBER_ID
                else:
                    self._remove_and_answer_join(group, group.members[existing])
            elif identity.member_id in group.pending_members:
                self._remove_member(group, identity.member_id)
            else:
                error = self._validate_member(group, identity.member_id, identity.group_instance_id)
                if error is Errors.NONE:
                    self._remove_and_answer_join(group, group.members[identity.member_id])
            removed = removed or error is Errors.NONE
            answers.append(MemberResponse(identity.member_id, identity.group_instance_id, error))
        if removed and (group.state is STABLE or group.state is COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif removed and group.state is PREPARING_REBALANCE:
            self._maybe_complete_join_phase(group)
        return LeaveGroupResponse(Errors.NONE, tuple(answers))

    # -- timers' effects ----------------------------------------------------------------

    def _expire_session(self, group: _Group, member_id: MemberId) -> None:
        """`expireClassicGroupMemberHeartbeat`."""
        if group.state is DEAD:
            return
        if member_id in group.pending_members:
            self._remove_member(group, member_id)
            if group.state is PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None:
            return
        if member.awaiting_join or member.awaiting_sync:
            self._arm_session(member.session)  # a parked request counts as a heartbeat
            return
        self._remove_and_answer_join(group, member)
        if group.state is STABLE or group.state is COMPLETING_REBALANCE:
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group)

    def _expire_pending_sync(self, group: _Group) -> None:
        """`expirePendingSync`."""
        if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync:
            return
        for member_id in sorted(group.pending_sync):
            self._remove_member(group, member_id)
        self._prepare_rebalance(group)

    def _expire_offsets(self, group: _Group) -> None:
        """`cleanupGroupMetadata`: an Empty group's offsets expire and the group is Dead. The
        timer itself encodes the condition: it is armed exactly while the group is Empty and
        has offsets (armed on a commit to an Empty group and on becoming Empty with offsets,
        cancelled on leaving Empty), so nothing here looks at the group's state."""
        if group.offsets:
            group.offsets.clear()
            self._transition(group, DEAD)

    # -- OffsetCommit and OffsetFetch ---------------------------------------------------

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """Validate (`ClassicGroup.validateOffsetCommit`), then store every offset."""
        group = self._groups.get(group_id) or _Group(group_id)
        error = self._validate_offset_commit(group, request)
        answers = tuple(OffsetCommitPartitionResponse(partition, error) for partition, _ in request.offsets)
        if error is Errors.NONE and request.offsets:
            group = self._group(group_id)
            for partition, offset in request.offsets:
                group.offsets[partition] = offset
            if group.state is EMPTY:
                self.timers.schedule(group.offsets_timer, self.now_ms + self.config.offsets_retention_ms)
        return OffsetCommitResponse(answers)

    def _validate_offset_commit(self, group: _Group, request: OffsetCommitRequest) -> Errors:
        generation = request.generation_id_or_member_epoch
        if group.state is DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and group.state is EMPTY:
            return Errors.NONE
        if generation >= 0 or request.member_id != UNKNOWN_MEMBER_ID or request.group_instance_id is not None:
            error = self._validate_member(group, request.member_id, request.group_instance_id)
            if error is not Errors.NONE:
                return error
            if generation != group.generation:
                return Errors.ILLEGAL_GENERATION
        elif group.state is not EMPTY:
            return Errors.UNKNOWN_MEMBER_ID
        if group.state is COMPLETING_REBALANCE:
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """The committed offsets (NO_OFFSET for a partition without one); anyone may read a
        classic group's offsets; a Dead group is GROUP_ID_NOT_FOUND."""
        group = self._groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        if group is not None and group.state is DEAD:
            return OffsetFetchResponse(Errors.GROUP_ID_NOT_FOUND)
        wanted = request.partitions if request.partitions is not None else tuple(sorted(offsets))
        return OffsetFetchResponse(
            Errors.NONE,
            tuple(
                OffsetFetchPartitionResponse(partition, offsets.get(partition, NO_OFFSET))
                for partition in wanted
            ),
        )
