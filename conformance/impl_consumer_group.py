"""`ConsumerGroupCoordinatorUnderTest` over the optimized consumer-group coordinator (`impl.consumer_group`).

What it is
    The adapter the consumer-group suites drive when the target is `impl`: heartbeats and
    offset requests go straight to `impl.consumer_group.ConsumerGroupCoordinator`, and
    `observe()` turns `describe()` into the plain `ConsumerGroupView` compared with the
    reference.

Timers
    As for the classic coordinator (`conformance.impl_coordinator`): the clock stays still, so
    nothing fires on its own, and "fire this timer" makes the coordinator's own timer task due
    now and runs the wheel (`ConsumerGroupCoordinator.expire_now`). A timer the coordinator did
    not arm changes nothing, so arming one in the wrong state, or forgetting to, diverges.

Why an adapter
    `impl/` may not import the conformance suite, so the implementation has its own config
    and description types; this module maps them.
"""

from __future__ import annotations

from conformance.consumer_group_sut import (
    ConsumerGroupSettings,
    ConsumerGroupView,
    ConsumerMemberView,
    GroupId,
)
from impl.consumer_group import REBALANCE, SESSION, ConsumerGroupCoordinator, ConsumerGroupCoordinatorConfig
from impl.coordinator import TimerTask
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    MemberId,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)


def impl_config(settings: ConsumerGroupSettings) -> ConsumerGroupCoordinatorConfig:
    """The implementation's broker settings for the suite's `settings`."""
    return ConsumerGroupCoordinatorConfig(
        partitions=settings.partitions,
        assignor=settings.assignor,
        rejoin_always_accepted=settings.rejoin == "fixed",
        commit_range_rule=settings.commit_rule == "range",
        bump_after_revocation=settings.revocation_epoch == "bump",
        static_rejoin_in_place=settings.static_rejoin == "in-place",
    )


class ImplConsumerGroupCoordinator:
    """A fresh `impl.consumer_group.ConsumerGroupCoordinator` with the suite's settings."""

    def __init__(self, settings: ConsumerGroupSettings) -> None:
        self.coordinator = ConsumerGroupCoordinator(impl_config(settings))

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        return self.coordinator.consumer_group_heartbeat(request)

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.coordinator.offset_commit(group_id, request)

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.coordinator.offset_fetch(group_id, request)

    def _fire(self, task: TimerTask | None) -> None:
        if task is not None:
            self.coordinator.expire_now(task)

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        self._fire(self.coordinator.member_timer(group_id, member_id, SESSION))

    def expire_rebalance(self, group_id: GroupId, member_id: MemberId) -> None:
        self._fire(self.coordinator.member_timer(group_id, member_id, REBALANCE))

    def expire_offsets(self, group_id: GroupId) -> None:
        self._fire(self.coordinator.offsets_timer(group_id))

    def observe(self, group_id: GroupId) -> ConsumerGroupView:
        described = self.coordinator.describe(group_id)
        return ConsumerGroupView(
            group_epoch=described.group_epoch,
            assignment_epoch=described.assignment_epoch,
            target=described.target,
            members=tuple(
                ConsumerMemberView(
                    member.member_id,
                    member.instance_id,
                    member.member_epoch,
                    member.previous_member_epoch,
                    member.state,
                    member.assigned,
                    member.pending_revocation,
                    member.assignment_epochs,
                    member.rebalance_timer_epoch,
                )
                for member in described.members
            ),
            partition_owners=described.partition_owners,
            offsets=described.offsets,
        )

    def close(self) -> None:
        """Nothing to release."""
