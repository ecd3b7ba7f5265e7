"""A KIP-848 consumer-group coordinator built for many groups: O(1) heartbeats, timers on a wheel.

What it is
    The optimized counterpart of the consumer protocol's spec (`spec.group.consumer`): one
    broker's coordinator for any number of consumer groups, each a mutable object updated in
    place. `consumer_group_heartbeat` follows Kafka's `GroupMetadataManager.consumerGroupHeartbeat`
    (validation as `throwIfConsumerGroupHeartbeatRequestIsInvalid` and
    `throwIfConsumerGroupMemberEpochIsInvalid`; leave with -1, a static member's temporary
    leave with -2, `getOrMaybeSubscribeStaticConsumerGroupMember`; the target assignment
    recomputed when the group epoch is ahead of the assignment epoch, `TargetAssignmentBuilder`
    with the `uniform` or `range` assignor; each member reconciled as `CurrentAssignmentBuilder`
    does), OffsetCommit as `ConsumerGroup.validateOffsetCommit`, OffsetFetch as
    `validateOffsetFetch`. Timers run on a clock in milliseconds (`advance_to`):

        session timeout      `group.consumer.session.timeout.ms` after a member's last heartbeat
                             (a static member that left with -2 keeps its assignment until then)
        rebalance timeout    the member's rebalance timeout, armed when it must revoke
                             partitions (UNREVOKED_PARTITIONS); it fences the member if it is
                             still at that epoch when it fires
        offset retention     `offsets.retention.minutes` after a group lost its last member

    Kafka's rule changes are settings (`ConsumerGroupCoordinatorConfig`): the epoch-0 rejoin
    (KAFKA-19233), the commit epoch rule (KIP-1251), the epoch after a revocation (KAFKA-19974)
    and a static member's epoch-0 rejoin (apache/kafka #23542).

Why it is fast (and the spec is not)
    * A group keeps its members in a dict by member id, its target assignment in a dict, and
      the partition epoch table as a dict from partition to (holder, epoch): a partition's
      owner is one lookup, and a member's record update touches only its own partitions.
    * A heartbeat from a member that is stable at the assignment epoch with its own epoch is
      O(1): a dict lookup, the epoch check, the session timer moved on the wheel. The owned
      partitions are read only when the epoch check or the reconciliation needs them. The
      target is recomputed (O(members + partitions)) only when the group epoch moved.
    * Timers live in `impl.coordinator.TimerWheel` (buckets by tick, a heap of the ticks):
      moving a session timer at each heartbeat is O(1), and expiry visits only what is due.
    * Offsets are a dict per group; their retention is one more timer, armed only for a group
      that has offsets and no member, so expiry never scans the groups that keep theirs.

Deviations (as in the spec)
    One subscribed topic per coordinator setting (`topic`, `partitions`); an empty group stays
    after its offsets expire. Members of `range` are ordered static first by instance id,
    then dynamic by member id, and `uniform` visits members by member id (Kafka: hash order).

This module reimplements the rules; it imports only the plain data of `spec.group.types` and
the timer wheel of `impl.coordinator` (`tests/test_layout.py` enforces the first).
"""

from __future__ import annotations

from dataclasses import dataclass

from impl.coordinator import TimerTask, TimerWheel
from spec.group.types import (
    NO_OFFSET,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Errors,
    GroupInstanceId,
    MemberId,
    OffsetCommitPartitionResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartition,
)

GroupId = str

JOIN = 0
LEAVE = -1
STATIC_LEAVE = -2
NO_EPOCH = -1

STABLE = "stable"
UNREVOKED = "unrevoked_partitions"
UNRELEASED = "unreleased_partitions"

SESSION = "session"
REBALANCE = "rebalance"
OFFSETS = "offsets"

_EMPTY: frozenset[int] = frozenset()


class IllegalStateError(AssertionError):
    """A partition epoch update Kafka refuses (`IllegalStateException`): a bug in this module."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupCoordinatorConfig:
    """Broker settings (Kafka's names and defaults) and the rule versions."""

    topic: str = "t0"
    partitions: int = 3
    assignor: str = "uniform"  # group.consumer.assignors: uniform or range
    rejoin_always_accepted: bool = True  # KAFKA-19233 fixed
    commit_range_rule: bool = False  # KIP-1251
    bump_after_revocation: bool = True  # Kafka <= 4.1; False: 4.2+ (KAFKA-19974)
    static_rejoin_in_place: bool = False  # apache/kafka #23542
    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    rebalance_timeout_ms: int = 300_000  # the consumer's max.poll.interval.ms default
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    tick_ms: int = 1


class _Member:
    """`ConsumerGroupMember`: the fields the protocol reads, mutable."""

    __slots__ = (
        "assigned",
        "assigned_reply",
        "assignment_epochs",
        "epoch",
        "instance_id",
        "member_id",
        "pending",
        "previous_epoch",
        "rebalance",
        "rebalance_deadline",
        "rebalance_timeout_ms",
        "reply",
        "session",
        "state",
    )

    def __init__(self, group_id: GroupId, member_id: MemberId, instance_id: GroupInstanceId | None) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.epoch = 0
        self.previous_epoch = NO_EPOCH
        self.state = STABLE
        self.assigned: frozenset[int] = _EMPTY
        self.assigned_reply: tuple[TopicPartition, ...] = ()  # `assigned` as the response lists it
        self.pending: frozenset[int] = _EMPTY
        self.assignment_epochs: dict[int, int] = {}
        self.rebalance_deadline: int | None = None
        self.rebalance_timeout_ms = 0
        self.reply: ConsumerGroupHeartbeatResponse | None = None  # the last answer (immutable, reused)
        self.session = TimerTask(SESSION, group_id, member_id)
        self.rebalance = TimerTask(REBALANCE, group_id, member_id)


class _Group:
    """One consumer group (`ConsumerGroup`)."""

    __slots__ = (
        "assignment_epoch",
        "group_epoch",
        "group_id",
        "members",
        "offsets",
        "offsets_timer",
        "owners",
        "target",
    )

    def __init__(self, group_id: GroupId) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[MemberId, _Member] = {}
        self.target: dict[MemberId, frozenset[int]] = {}
        self.owners: dict[int, tuple[MemberId, int]] = {}
        self.offsets: dict[int, int] = {}
        self.offsets_timer = TimerTask(OFFSETS, group_id)


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """One member, as plain data."""

    member_id: MemberId
    instance_id: GroupInstanceId | None
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned: tuple[TopicPartition, ...]
    pending_revocation: tuple[TopicPartition, ...]
    assignment_epochs: tuple[tuple[TopicPartition, int], ...]
    rebalance_timer_epoch: int | None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """One group, as plain data, sorted (members and targets by id, partitions ascending)."""

    group_epoch: int
    assignment_epoch: int
    target: tuple[tuple[MemberId, tuple[TopicPartition, ...]], ...]
    members: tuple[MemberDescription, ...]
    partition_owners: tuple[tuple[TopicPartition, MemberId, int], ...]
    offsets: tuple[tuple[TopicPartition, int], ...]


def uniform(
    members: list[_Member], partitions: int, current: dict[MemberId, frozenset[int]]
) -> dict[MemberId, frozenset[int]]:
    """`UniformAssignor`, homogeneous: balance, then stickiness to the current target."""
    ordered = sorted(member.member_id for member in members)
    if not ordered:
        return {}
    minimum, extra = divmod(partitions, len(ordered))
    held = {p for member_id in ordered for p in current.get(member_id, _EMPTY) if 0 <= p < partitions}
    free = [p for p in range(partitions) if p not in held]
    kept: dict[MemberId, frozenset[int]] = {}
    room: dict[MemberId, int] = {}
    for index, member_id in enumerate(ordered):
        quota = minimum + (1 if index < extra else 0)
        mine = sorted(p for p in current.get(member_id, _EMPTY) if 0 <= p < partitions)
        kept[member_id] = frozenset(mine[:quota])
        free.extend(mine[quota:])
        room[member_id] = quota - len(kept[member_id])
    result: dict[MemberId, frozenset[int]] = {}
    cursor = 0
    for member_id in ordered:
        take = free[cursor : cursor + room[member_id]]
        cursor += len(take)
        result[member_id] = kept[member_id] | frozenset(take)
    return result


def range_(members: list[_Member], partitions: int) -> dict[MemberId, frozenset[int]]:
    """`RangeAssignor`, homogeneous: contiguous ranges, static members first by instance id."""
    ordered = sorted(
        members,
        key=lambda m: (m.instance_id is None, m.instance_id if m.instance_id is not None else m.member_id),
    )
    if not ordered:
        return {}
    minimum, extra = divmod(partitions, len(ordered))
    result: dict[MemberId, frozenset[int]] = {}
    start = 0
    for index, member in enumerate(ordered):
        end = min(start + minimum + (1 if index < extra else 0), partitions)
        result[member.member_id] = frozenset(range(start, end))
        start = end
    return result


class ConsumerGroupCoordinator:
    """Consumer groups by id on one broker (see the module docstring)."""

    def __init__(self, config: ConsumerGroupCoordinatorConfig | None = None) -> None:
        self.config = config if config is not None else ConsumerGroupCoordinatorConfig()
        self.now_ms = 0
        self.timers = TimerWheel(self.config.tick_ms)
        self._groups: dict[GroupId, _Group] = {}
        self._topic = self.config.topic

    # -- clock and timers ---------------------------------------------------------------

    def advance_to(self, now_ms: int) -> None:
        """Move the clock to `now_ms` (never back) and fire every timer due by then."""
        self.now_ms = max(self.now_ms, now_ms)
        while (task := self.timers.pop_due(self.now_ms)) is not None:
            self._fire(task)

    def expire_now(self, task: TimerTask) -> bool:
        """Make an armed `task` due now and run the wheel; False when it is not armed."""
        if task.tick is None:
            return False
        self.timers.schedule(task, self.now_ms)
        self.advance_to(self.now_ms)
        return True

    def member_timer(self, group_id: GroupId, member_id: MemberId, kind: str) -> TimerTask | None:
        """The member's session or rebalance timer task, if the member exists."""
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return None
        return member.session if kind == SESSION else member.rebalance

    def offsets_timer(self, group_id: GroupId) -> TimerTask | None:
        """The group's offset-retention timer task (None: no such group)."""
        group = self._groups.get(group_id)
        return None if group is None else group.offsets_timer

    def _fire(self, task: TimerTask) -> None:
        group = self._groups.get(task.group_id)
        if group is None:
            return
        if task.kind == OFFSETS:
            if not group.members:
                group.offsets.clear()
            return
        member = group.members.get(task.member_id)
        if member is None:
            return
        session_expired = task.kind == SESSION and member.session is task
        # the rebalance timer fences only a member still at the epoch it was armed at
        still_revoking = (
            task.kind == REBALANCE
            and member.rebalance is task
            and member.rebalance_deadline is not None
            and member.rebalance_deadline == member.epoch
        )
        if session_expired or still_revoking:
            self._fence(group, member)

    def _group(self, group_id: GroupId) -> _Group:
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = _Group(group_id)
        return group

    def group_count(self) -> int:
        """How many groups the coordinator holds."""
        return len(self._groups)

    # -- the partition epoch table ------------------------------------------------------

    def _release(self, group: _Group, member: _Member) -> None:
        """`ConsumerGroup.removePartitionEpochs`: the member's partitions at its epoch."""
        owners = group.owners
        key = (member.member_id, member.epoch)
        for p in member.assigned | member.pending:
            if owners.get(p) != key:
                raise IllegalStateError(f"partition {p} is not held by {key}: {owners.get(p)}")
            del owners[p]

    def _claim(self, group: _Group, member: _Member) -> None:
        """`ConsumerGroup.addPartitionEpochs`: the member's partitions at its epoch."""
        owners = group.owners
        key = (member.member_id, member.epoch)
        for p in member.assigned | member.pending:
            if p in owners:
                raise IllegalStateError(f"partition {p} is already held: {owners[p]}")
            owners[p] = key

    def _fence(self, group: _Group, member: _Member) -> None:
        """`consumerGroupFenceMember`: remove the member, its target and timers; bump the epoch."""
        self._release(group, member)
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        self.timers.cancel(member.session)
        self.timers.cancel(member.rebalance)
        group.group_epoch += 1
        if not group.members and group.offsets:
            self.timers.schedule(group.offsets_timer, self.now_ms + self.config.offsets_retention_ms)

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------

    def _owned(self, request: ConsumerGroupHeartbeatRequest) -> frozenset[int] | None:
        partitions = request.topic_partitions
        if partitions is None:
            return None
        topic = self._topic
        return frozenset(tp.partition for tp in partitions if tp.topic == topic)

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        """`GroupMetadataManager.consumerGroupHeartbeat` (see the module docstring)."""
        epoch = request.member_epoch
        static = request.instance_id is not None
        if epoch == JOIN:
            if request.topic_partitions:  # None or non-empty
                return ConsumerGroupHeartbeatResponse(Errors.INVALID_REQUEST)
            if request.topic_partitions is None:
                return ConsumerGroupHeartbeatResponse(Errors.INVALID_REQUEST)
        elif epoch == STATIC_LEAVE:
            if not static:
                return ConsumerGroupHeartbeatResponse(Errors.INVALID_REQUEST)
        elif epoch < 0 and epoch != LEAVE:
            return ConsumerGroupHeartbeatResponse(Errors.INVALID_REQUEST)
        group = self._groups.get(request.group_id)
        member = None if group is None else group.members.get(request.member_id)
        if epoch in (LEAVE, STATIC_LEAVE):
            if member is None or group is None:
                return ConsumerGroupHeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
            if epoch == LEAVE:
                self._fence(group, member)
            else:
                self._static_leave(group, member)
            return ConsumerGroupHeartbeatResponse(Errors.NONE, request.member_id, epoch)
        owned: frozenset[int] | None = None
        owned_read = False
        if member is None:
            if epoch != JOIN:
                return ConsumerGroupHeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
            group = self._group(request.group_id)
            member = _Member(request.group_id, request.member_id, request.instance_id)
            member.rebalance_timeout_ms = (
                request.rebalance_timeout_ms
                if request.rebalance_timeout_ms > 0
                else self.config.rebalance_timeout_ms
            )
            group.members[request.member_id] = member
            group.group_epoch += 1
            self.timers.cancel(group.offsets_timer)
        else:
            assert group is not None
            if (
                epoch == JOIN
                and static
                and (member.epoch == STATIC_LEAVE or not self.config.static_rejoin_in_place)
            ):
                if member.epoch != STATIC_LEAVE:
                    return ConsumerGroupHeartbeatResponse(Errors.UNRELEASED_INSTANCE_ID)
                self._release(group, member)
                member.epoch = JOIN
                member.previous_epoch = JOIN
                self._claim(group, member)
            elif epoch != member.epoch and not (epoch == JOIN and self.config.rejoin_always_accepted):
                if epoch > member.epoch or epoch != member.previous_epoch:
                    return ConsumerGroupHeartbeatResponse(Errors.FENCED_MEMBER_EPOCH)
                owned, owned_read = self._owned(request), True
                if owned is None or not owned <= member.assigned:
                    return ConsumerGroupHeartbeatResponse(Errors.FENCED_MEMBER_EPOCH)
        self.timers.schedule(member.session, self.now_ms + self.config.session_timeout_ms)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        if not (member.state == STABLE and member.epoch == group.assignment_epoch):
            if not owned_read:
                owned = self._owned(request)
            self._reconcile(group, member, owned)
        reply = member.reply
        if (
            reply is None
            or reply.member_epoch != member.epoch
            or reply.assignment is not member.assigned_reply
        ):
            reply = member.reply = ConsumerGroupHeartbeatResponse(
                Errors.NONE, member.member_id, member.epoch, member.assigned_reply
            )
        return reply

    def _topic_partitions(self, partitions: frozenset[int]) -> tuple[TopicPartition, ...]:
        topic = self._topic
        return tuple(TopicPartition(topic, p) for p in sorted(partitions))

    def _static_leave(self, group: _Group, member: _Member) -> None:
        """`consumerGroupStaticMemberGroupLeave`: epoch -2, revocations dropped, assignment kept."""
        self._release(group, member)
        member.epoch = STATIC_LEAVE
        member.pending = _EMPTY
        member.assignment_epochs = {p: e for p, e in member.assignment_epochs.items() if p in member.assigned}
        self._claim(group, member)
        self.timers.schedule(member.session, self.now_ms + self.config.session_timeout_ms)

    def _compute_target(self, group: _Group) -> None:
        """`TargetAssignmentBuilder`: every member's target at the group epoch."""
        members = list(group.members.values())
        if self.config.assignor == "range":
            group.target = range_(members, self.config.partitions)
        else:
            group.target = uniform(members, self.config.partitions, group.target)
        group.assignment_epoch = group.group_epoch

    def _reconcile(self, group: _Group, member: _Member, owned: frozenset[int] | None) -> None:
        """`maybeReconcile` and `CurrentAssignmentBuilder.build` / `computeNextAssignment`."""
        target_epoch = group.assignment_epoch
        if member.state == UNREVOKED:
            if owned is None or not owned.isdisjoint(member.pending):
                return  # still owns partitions it must revoke
            member_epoch = member.epoch + 1 if self.config.bump_after_revocation else member.epoch
        else:
            member_epoch = member.epoch
        target = group.target.get(member.member_id, _EMPTY)
        kept = member.assigned & target
        revoking = member.assigned - kept
        wanted = target - kept
        owners = group.owners
        unreleased = frozenset(p for p in wanted if p in owners and owners[p][1] != NO_EPOCH)
        known = member.assignment_epochs
        if revoking and (owned is None or not owned.isdisjoint(revoking)):
            epoch, state, assigned, pending = member_epoch, UNREVOKED, kept, revoking
            new_epochs = {p: known.get(p, member_epoch) for p in kept | revoking}
        else:
            epoch, pending = target_epoch, _EMPTY
            assigned = kept | (wanted - unreleased)
            state = UNRELEASED if unreleased else STABLE
            new_epochs = {p: known.get(p, target_epoch) for p in assigned}
        if (
            epoch == member.epoch
            and member.previous_epoch == member.epoch
            and state == member.state
            and assigned == member.assigned
            and pending == member.pending
            and new_epochs == known
        ):
            return  # nothing changes: the rebalance timer stays as it is
        self._release(group, member)
        member.previous_epoch = member.epoch
        member.epoch = epoch
        member.state = state
        if assigned != member.assigned:
            member.assigned = assigned
            member.assigned_reply = self._topic_partitions(assigned)
        member.pending = pending
        member.assignment_epochs = new_epochs
        self._claim(group, member)
        if state == UNREVOKED:
            member.rebalance_deadline = epoch
            self.timers.schedule(member.rebalance, self.now_ms + member.rebalance_timeout_ms)
        else:
            member.rebalance_deadline = None
            self.timers.cancel(member.rebalance)

    # -- OffsetCommit and OffsetFetch ---------------------------------------------------

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """`ConsumerGroup.validateOffsetCommit` per partition; accepted offsets are stored."""
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(request.member_id)
        commit_epoch = request.generation_id_or_member_epoch
        answers = []
        for partition, offset in request.offsets:
            if member is None:
                error = Errors.UNKNOWN_MEMBER_ID
            elif not self.config.commit_range_rule:
                error = Errors.NONE if commit_epoch == member.epoch else Errors.STALE_MEMBER_EPOCH
            else:
                assigned_at = member.assignment_epochs.get(partition.partition)
                in_range = assigned_at is not None and assigned_at <= commit_epoch <= member.epoch
                error = Errors.NONE if in_range else Errors.STALE_MEMBER_EPOCH
            if error is Errors.NONE and group is not None:
                group.offsets[partition.partition] = offset
            answers.append(OffsetCommitPartitionResponse(partition, error))
        return OffsetCommitResponse(tuple(answers))

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """`ConsumerGroup.validateOffsetFetch`, then the committed offsets."""
        group = self._groups.get(group_id)
        offsets = {} if group is None else group.offsets
        if request.member_id is not None or request.member_epoch >= 0:
            member = None
            if group is not None and request.member_id is not None:
                member = group.members.get(request.member_id)
            if member is None:
                return OffsetFetchResponse(Errors.UNKNOWN_MEMBER_ID)
            if request.member_epoch != member.epoch:
                return OffsetFetchResponse(Errors.STALE_MEMBER_EPOCH)
        wanted = (
            request.partitions
            if request.partitions is not None
            else self._topic_partitions(frozenset(offsets))
        )
        topic = self._topic
        return OffsetFetchResponse(
            Errors.NONE,
            tuple(
                OffsetFetchPartitionResponse(
                    tp, offsets.get(tp.partition, NO_OFFSET) if tp.topic == topic else NO_OFFSET
                )
                for tp in wanted
            ),
        )

    # -- description --------------------------------------------------------------------

    def describe(self, group_id: GroupId) -> GroupDescription:
        """The group as plain data (a group never used: epoch 0, nothing in it)."""
        group = self._groups.get(group_id)
        if group is None:
            return GroupDescription(0, 0, (), (), (), ())
        topic = self._topic
        members = tuple(
            MemberDescription(
                member.member_id,
                member.instance_id,
                member.epoch,
                member.previous_epoch,
                member.state,
                self._topic_partitions(member.assigned),
                self._topic_partitions(member.pending),
                tuple((TopicPartition(topic, p), e) for p, e in sorted(member.assignment_epochs.items())),
                member.rebalance_deadline,
            )
            for _, member in sorted(group.members.items())
        )
        return GroupDescription(
            group.group_epoch,
            group.assignment_epoch,
            tuple((member_id, self._topic_partitions(t)) for member_id, t in sorted(group.target.items())),
            members,
            tuple(
                (TopicPartition(topic, p), owner[0], owner[1]) for p, owner in sorted(group.owners.items())
            ),
            tuple((TopicPartition(topic, p), offset) for p, offset in sorted(group.offsets.items())),
        )
