"""Deliberately broken KIP-848 consumer-group coordinators, loaded by the consumer-group
conformance tests as MODULE:FACTORY targets (`FACTORY(settings)`). Each is the optimized
coordinator with one bug."""

from __future__ import annotations

from dataclasses import replace

from conformance.consumer_group_sut import GroupId
from conformance.impl_consumer_group import ImplConsumerGroupCoordinator
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Errors,
    OffsetCommitRequest,
    OffsetCommitResponse,
)


class AcceptsNextEpoch(ImplConsumerGroupCoordinator):
    """A heartbeat one epoch ahead of the member's is taken for the member's own (the epoch
    check off by one): a client that invents an epoch is not fenced."""

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        group = self.coordinator.describe(request.group_id)
        for member in group.members:
            if member.member_id == request.member_id and request.member_epoch == member.member_epoch + 1 > 1:
                request = replace(request, member_epoch=member.member_epoch)
        return super().consumer_group_heartbeat(request)


class AcceptsStaleCommits(ImplConsumerGroupCoordinator):
    """An OffsetCommit from a member is checked as if it carried the member's current epoch: a
    stale (zombie) commit lands."""

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        for member in self.coordinator.describe(group_id).members:
            if member.member_id == request.member_id:
                request = replace(request, generation_id_or_member_epoch=member.member_epoch)
        return super().offset_commit(group_id, request)


class StaticLeaveIsLeave(ImplConsumerGroupCoordinator):
    """A static member's temporary leave (-2) is handled as a leave for good (-1): its
    partitions go to others at once instead of waiting for it."""

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        if request.member_epoch == -2 and request.instance_id is not None:
            answer = super().consumer_group_heartbeat(replace(request, member_epoch=-1))
            return replace(answer, member_epoch=-2) if answer.error is Errors.NONE else answer
        return super().consumer_group_heartbeat(request)


class OffsetsNeverExpire(ImplConsumerGroupCoordinator):
    """Offset retention never runs: a group without members keeps its offsets."""

    def expire_offsets(self, group_id: GroupId) -> None:
        return None
