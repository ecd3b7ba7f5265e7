"""The definitional classic group coordinator: many groups, each a `spec.group.classic_coordinator` group.

What it is
    A small mutable holder around one `ClassicGroup` per group id. Every operation is one
    handler of the classic protocol's spec (`spec.group.classic_coordinator`): the holder
    passes the group and the request to `handle_join_group`, `handle_sync_group`,
    `handle_heartbeat`, `handle_leave_group`, `handle_offset_commit` or `handle_offset_fetch`,
    or fires a timer with `expire_session`, `expire_rebalance_timeout`, `expire_pending_sync`
    or `expire_offsets`, and keeps the group the spec returns. Nothing else ever changes a
    group, so every group this object holds is one the spec reaches. It is the oracle the
    coordinator conformance suites (`conformance.machines.coordinator`,
    `conformance.coordinator_exhaustive`) compare other coordinators against, as
    `reference.partition` is for replication.

Groups
    A group id the coordinator has never seen is an Empty group at generation 0
    (`ClassicGroup()`): Kafka creates the group on its first JoinGroup and answers the other
    APIs as for an empty group (no member, no offset).

Parked requests
    The spec answers a parked JoinGroup or SyncGroup later, as a `Delivery` to the connection
    that sent it. The holder keeps the deliveries each operation produced, with the group id,
    in order, until `deliveries()` takes them.

Timers
    Time is abstract in the spec: a timer is an operation the caller fires. Offset expiry
    applies the spec's expiration condition first (`offsets_may_expire`: only an Empty group's
    offsets expire, and only a group that has some), as `spec.group.classic`'s `ExpireOffsets`
    action does; the other timers are the spec's functions as they are (each is a no-op when
    its timer would not be armed).

`last_step` records each operation's group before and after, so a caller can check the step
against the spec.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec.group.classic_coordinator import (
    ClassicGroup,
    CoordinatorRules,
    Delivery,
    Outcome,
    expire_offsets,
    expire_pending_sync,
    expire_rebalance_timeout,
    expire_session,
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_offset_commit,
    handle_offset_fetch,
    handle_sync_group,
    offsets_may_expire,
)
from spec.group.types import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberId,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

GroupId = str


@dataclass(frozen=True, slots=True)
class Step:
    """One operation on one group: the group before and after, and the parked requests it
    answered (`Delivery`: connection, response)."""

    group_id: GroupId
    before: ClassicGroup
    after: ClassicGroup
    deliveries: tuple[Delivery, ...] = ()


def offset_expiry(group: ClassicGroup) -> ClassicGroup:
    """The offset-retention timer: `expire_offsets` when the spec's expiration condition
    holds (an Empty group with offsets), else the group unchanged."""
    if group.offsets and offsets_may_expire(group):
        return expire_offsets(group)
    return group


class ReferenceClassicCoordinator:
    """Classic groups by id, each stepped only by the spec's handlers (see the module docstring)."""

    def __init__(self, rules: CoordinatorRules | None = None) -> None:
        self.rules = rules if rules is not None else CoordinatorRules()
        self._groups: dict[GroupId, ClassicGroup] = {}
        self._deliveries: list[tuple[GroupId, Delivery]] = []
        self.last_step: Step | None = None

    def group(self, group_id: GroupId) -> ClassicGroup:
        """The group's state (an Empty generation-0 group if it was never used)."""
        return self._groups.get(group_id, ClassicGroup())

    def group_ids(self) -> tuple[GroupId, ...]:
        """Every group id an operation has touched, in the order first seen."""
        return tuple(self._groups)

    def _keep(self, group_id: GroupId, before: ClassicGroup, outcome: Outcome) -> None:
        self._groups[group_id] = outcome.group
        self._deliveries.extend((group_id, delivery) for delivery in outcome.deliveries)
        self.last_step = Step(group_id, before, outcome.group, outcome.deliveries)

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        """`handle_join_group`; None when the JoinGroup is parked."""
        before = self.group(group_id)
        outcome = handle_join_group(before, request, client, self.rules)
        self._keep(group_id, before, outcome)
        assert outcome.reply is None or isinstance(outcome.reply, JoinGroupResponse)
        return outcome.reply

    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None:
        """`handle_sync_group`; None when the SyncGroup is parked."""
        before = self.group(group_id)
        outcome = handle_sync_group(before, request, client)
        self._keep(group_id, before, outcome)
        assert outcome.reply is None or isinstance(outcome.reply, SyncGroupResponse)
        return outcome.reply

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        """`handle_heartbeat`."""
        before = self.group(group_id)
        outcome = handle_heartbeat(before, request)
        self._keep(group_id, before, outcome)
        assert isinstance(outcome.reply, HeartbeatResponse)
        return outcome.reply

    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse:
        """`handle_leave_group`."""
        before = self.group(group_id)
        outcome = handle_leave_group(before, request)
        self._keep(group_id, before, outcome)
        assert isinstance(outcome.reply, LeaveGroupResponse)
        return outcome.reply

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """`handle_offset_commit`."""
        before = self.group(group_id)
        after, response = handle_offset_commit(before, request, self.rules)
        self._keep(group_id, before, Outcome(after))
        return response

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """`handle_offset_fetch` (the group does not change)."""
        before = self.group(group_id)
        self.last_step = Step(group_id, before, before)
        return handle_offset_fetch(before, request)

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        """The member's (or pending member id's) session timer fires: `expire_session`."""
        before = self.group(group_id)
        self._keep(group_id, before, expire_session(before, member_id))

    def expire_rebalance(self, group_id: GroupId) -> None:
        """The join phase's rebalance timer fires: `expire_rebalance_timeout`."""
        before = self.group(group_id)
        self._keep(group_id, before, expire_rebalance_timeout(before))

    def expire_pending_sync(self, group_id: GroupId) -> None:
        """The pending-sync timer fires: `expire_pending_sync`."""
        before = self.group(group_id)
        self._keep(group_id, before, expire_pending_sync(before))

    def expire_offsets(self, group_id: GroupId) -> None:
        """Offset retention passes: `offset_expiry`."""
        before = self.group(group_id)
        self._keep(group_id, before, Outcome(offset_expiry(before)))

    def deliveries(self) -> tuple[tuple[GroupId, Delivery], ...]:
        """The parked requests answered since the last call, with their group, in the order
        they were answered."""
        taken = tuple(self._deliveries)
        self._deliveries.clear()
        return taken
