"""Deliberately broken classic coordinators, loaded by the coordinator conformance tests as
MODULE:FACTORY targets (`FACTORY(settings)`). Each is the optimized coordinator with one bug."""

from __future__ import annotations

from conformance.coordinator_sut import CoordinatorSettings, GroupId
from conformance.impl_coordinator import ImplCoordinator
from impl.coordinator import CoordinatorConfig, GroupCoordinator, _Group
from spec.group.types import Errors, HeartbeatRequest, HeartbeatResponse, OffsetCommitRequest


class HeartbeatIgnoresRebalance(ImplCoordinator):
    """A heartbeat during PreparingRebalance is answered NONE: members never learn to rejoin."""

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        answer = super().heartbeat(group_id, request)
        if answer.error is Errors.REBALANCE_IN_PROGRESS:
            return HeartbeatResponse(Errors.NONE)
        return answer


class _AcceptsStaleCommits(GroupCoordinator):
    def _validate_offset_commit(self, group: _Group, request: OffsetCommitRequest) -> Errors:
        if request.member_id in group.members:
            return Errors.NONE  # a member's commit lands whatever generation it carries
        return super()._validate_offset_commit(group, request)


class AcceptsStaleCommits(ImplCoordinator):
    """An OffsetCommit from a member is accepted without checking its generation."""

    def __init__(self, settings: CoordinatorSettings) -> None:
        super().__init__(settings)
        self.coordinator = _AcceptsStaleCommits(CoordinatorConfig(group_max_size=settings.group_max_size))


class OffsetsNeverExpire(ImplCoordinator):
    """Offset retention never runs: an Empty group keeps its offsets (and never dies)."""

    def expire_offsets(self, group_id: GroupId) -> None:
        return None
