"""`ClassicCoordinatorUnderTest` over the optimized group coordinator (`impl.coordinator`).

What it is
    The adapter the coordinator suites drive when the target is `impl`: requests go straight
    to `impl.coordinator.GroupCoordinator`, `deliveries()` drains its outbox, and `observe()`
    turns `describe()` into the plain `GroupView` compared with the reference.

Timers
    The suites fire timers as commands; the coordinator has a clock and a timer wheel. The
    adapter keeps the clock still (every timer the coordinator arms is due a positive
    timeout from now, so nothing fires on its own) and maps "fire this timer" onto the
    wheel: if the coordinator has that timer armed, it is made due now and the wheel runs
    (`GroupCoordinator.expire_now`), through the same pop-and-fire path as a clock tick. A
    timer the coordinator did not arm changes nothing, so a coordinator that forgets to arm
    one (or arms it in the wrong state) diverges from the spec.

Why an adapter
    `impl/` may not import the conformance suite, so the implementation has its own config
    and description types; this module maps them.
"""

from __future__ import annotations

from conformance.coordinator_sut import CoordinatorSettings, Delivery, GroupId, GroupView, MemberView
from impl.coordinator import OFFSETS, PENDING_SYNC, REBALANCE, CoordinatorConfig, GroupCoordinator, TimerTask
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


class ImplCoordinator:
    """A fresh `impl.coordinator.GroupCoordinator` with the suite's settings."""

    def __init__(self, settings: CoordinatorSettings) -> None:
        self.coordinator = GroupCoordinator(CoordinatorConfig(group_max_size=settings.group_max_size))

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        return self.coordinator.join_group(group_id, request, client)

    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None:
        return self.coordinator.sync_group(group_id, request, client)

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        return self.coordinator.heartbeat(group_id, request)

    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return self.coordinator.leave_group(group_id, request)

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.coordinator.offset_commit(group_id, request)

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.coordinator.offset_fetch(group_id, request)

    def _fire(self, task: TimerTask | None) -> None:
        if task is not None:
            self.coordinator.expire_now(task)

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        self._fire(self.coordinator.session_timer(group_id, member_id))

    def expire_rebalance(self, group_id: GroupId) -> None:
        self._fire(self.coordinator.group_timer(group_id, REBALANCE))

    def expire_pending_sync(self, group_id: GroupId) -> None:
        self._fire(self.coordinator.group_timer(group_id, PENDING_SYNC))

    def expire_offsets(self, group_id: GroupId) -> None:
        self._fire(self.coordinator.group_timer(group_id, OFFSETS))

    def deliveries(self) -> tuple[Delivery, ...]:
        return tuple(
            Delivery(group_id, client, response)
            for group_id, client, response in self.coordinator.take_deliveries()
        )

    def observe(self, group_id: GroupId) -> GroupView:
        described = self.coordinator.describe(group_id)
        return GroupView(
            state=described.state,
            generation=described.generation,
            protocol_type=described.protocol_type,
            protocol_name=described.protocol_name,
            leader=described.leader,
            members=tuple(
                MemberView(
                    member.member_id,
                    member.group_instance_id,
                    member.client,
                    member.protocols,
                    member.awaiting_join,
                    member.awaiting_sync,
                    member.assignment,
                )
                for member in described.members
            ),
            pending_members=described.pending_members,
            pending_sync=described.pending_sync,
            offsets=described.offsets,
        )

    def close(self) -> None:
        """Nothing to release."""
