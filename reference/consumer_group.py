"""The definitional KIP-848 consumer-group coordinator: many groups, each a `spec.group.consumer` coordinator.

What it is
    A small mutable holder around one spec `Coordinator` per group id (and the group's
    committed offsets). Every operation is a function of the consumer protocol's spec
    (`spec.group.consumer`): a ConsumerGroupHeartbeat is `handle_heartbeat`
    (`GroupMetadataManager.consumerGroupHeartbeat`), an OffsetCommit is `commit_error`
    (`ConsumerGroup.validateOffsetCommit`) per partition, the session timer is `fence_member`
    and the rebalance timer is `fence_member` under the guard of the spec's
    `CoordinatorRebalanceTimeout` (the timer fires only while the member is at the epoch it was
    armed at). Nothing else changes a coordinator, so every group this object holds is one the
    spec reaches. It is the oracle of the consumer-group conformance suites.

Where the spec stops (and this module adds the least it can)
    The spec checks commits but keeps no offsets, and has no OffsetFetch or offset expiry.
    Here an accepted commit stores its offset; OffsetFetch follows
    `ConsumerGroup.validateOffsetFetch` (no member id and a negative epoch: the admin path,
    always answered; otherwise UNKNOWN_MEMBER_ID for a member the group does not have and
    STALE_MEMBER_EPOCH for an epoch other than the member's); offset retention expires a group's
    offsets only while it has no member (`ConsumerGroup.isSubscribedToTopic` is true for every
    member's one topic). The group itself stays after its offsets expire (Kafka deletes an empty
    group without offsets, and a later join starts it again at epoch 0).

Member ids
    The spec numbers its consumers; the suites' consumer ``m<k>`` is the spec's consumer k
    (`conformance.consumer_group_sut`). A member id outside `config.members` is outside the
    spec's domain and raises ValueError.

`last_step` records each operation's coordinator and offsets before and after.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec.group.consumer import (
    ConsumerGroupConfig,
    Coordinator,
    HeartbeatRequest,
    commit_error,
    fence_member,
    handle_heartbeat,
    initial_state,
)
from spec.group.types import (
    NO_OFFSET,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Errors,
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
TOPIC = "t0"


@dataclass(frozen=True, slots=True)
class Step:
    """One operation on one group: its coordinator and offsets before and after."""

    group_id: GroupId
    before: Coordinator
    after: Coordinator
    offsets_before: tuple[tuple[int, int], ...]
    offsets_after: tuple[tuple[int, int], ...]


def client_of(config: ConsumerGroupConfig, member_id: MemberId) -> int:
    """The spec's consumer behind member id ``m<k>`` (ValueError outside the domain)."""
    if not member_id.startswith("m") or not member_id[1:].isdigit() or int(member_id[1:]) >= config.members:
        raise ValueError(f"member id {member_id!r} is not one of the spec's {config.members} consumers")
    return int(member_id[1:])


def partitions_of(partitions: tuple[TopicPartition, ...] | None) -> frozenset[int] | None:
    """The spec's owned partitions for a request's topic partitions."""
    if partitions is None:
        return None
    return frozenset(partition.partition for partition in partitions)


def topic_partitions(partitions: frozenset[int]) -> tuple[TopicPartition, ...]:
    """The partitions of the one topic, sorted."""
    return tuple(TopicPartition(TOPIC, p) for p in sorted(partitions))


def rebalance_timer_fires(coordinator: Coordinator, client: int) -> bool:
    """The guard of the spec's `CoordinatorRebalanceTimeout`: the member's rebalance timer is
    armed at its current epoch."""
    member = coordinator.members[client]
    return (
        member is not None
        and member.rebalance_deadline is not None
        and member.rebalance_deadline == member.epoch
    )


class ReferenceConsumerGroupCoordinator:
    """Consumer groups by id, each stepped only by the spec's functions (see the module docstring)."""

    def __init__(self, config: ConsumerGroupConfig) -> None:
        self.config = config
        self._empty = initial_state(config).coordinator
        self._groups: dict[GroupId, Coordinator] = {}
        self._offsets: dict[GroupId, dict[int, int]] = {}
        self.last_step: Step | None = None

    def group(self, group_id: GroupId) -> Coordinator:
        """The group's coordinator state (an empty epoch-0 group if it was never used)."""
        return self._groups.get(group_id, self._empty)

    def offsets(self, group_id: GroupId) -> dict[int, int]:
        """The group's committed offsets by partition (a copy)."""
        return dict(self._offsets.get(group_id, {}))

    def _keep(
        self, group_id: GroupId, before: Coordinator, after: Coordinator, offsets: tuple[tuple[int, int], ...]
    ) -> None:
        self._groups[group_id] = after
        self.last_step = Step(
            group_id, before, after, offsets, tuple(sorted(self._offsets.get(group_id, {}).items()))
        )

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        """`handle_heartbeat`."""
        client = client_of(self.config, request.member_id)
        before = self.group(request.group_id)
        offsets = tuple(sorted(self._offsets.get(request.group_id, {}).items()))
        spec_request = HeartbeatRequest(request.member_epoch, partitions_of(request.topic_partitions))
        after, response = handle_heartbeat(self.config, before, client, spec_request)
        self._keep(request.group_id, before, after, offsets)
        if response.error is not Errors.NONE:
            return ConsumerGroupHeartbeatResponse(response.error)
        assignment = None if response.assignment is None else topic_partitions(response.assignment)
        return ConsumerGroupHeartbeatResponse(
            Errors.NONE, request.member_id, response.member_epoch, assignment
        )

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """`commit_error` for each partition; an accepted partition's offset is stored."""
        client = client_of(self.config, request.member_id)
        before = self.group(group_id)
        stored = self._offsets.setdefault(group_id, {})
        offsets = tuple(sorted(stored.items()))
        member = before.members[client]
        answers = []
        for partition, offset in request.offsets:
            error = commit_error(
                member, partition.partition, request.generation_id_or_member_epoch, self.config.commit_rule
            )
            if error is Errors.NONE:
                stored[partition.partition] = offset
            answers.append(OffsetCommitPartitionResponse(partition, error))
        self._keep(group_id, before, before, offsets)
        return OffsetCommitResponse(tuple(answers))

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """`ConsumerGroup.validateOffsetFetch`, then the committed offsets (the group does not change)."""
        coordinator = self.group(group_id)
        stored = self._offsets.get(group_id, {})
        offsets = tuple(sorted(stored.items()))
        self._keep(group_id, coordinator, coordinator, offsets)
        if request.member_id is not None or request.member_epoch >= 0:
            member = None
            if request.member_id is not None:
                member = coordinator.members[client_of(self.config, request.member_id)]
            if member is None:
                return OffsetFetchResponse(Errors.UNKNOWN_MEMBER_ID)
            if request.member_epoch != member.epoch:
                return OffsetFetchResponse(Errors.STALE_MEMBER_EPOCH)
        wanted = request.partitions if request.partitions is not None else topic_partitions(frozenset(stored))
        return OffsetFetchResponse(
            Errors.NONE,
            tuple(
                OffsetFetchPartitionResponse(partition, stored.get(partition.partition, NO_OFFSET))
                if partition.topic == TOPIC
                else OffsetFetchPartitionResponse(partition, NO_OFFSET)
                for partition in wanted
            ),
        )

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        """The member's session timer fires: `fence_member` (nothing for a member the group does not have)."""
        client = client_of(self.config, member_id)
        before = self.group(group_id)
        offsets = tuple(sorted(self._offsets.get(group_id, {}).items()))
        after = before if before.members[client] is None else fence_member(before, client)
        self._keep(group_id, before, after, offsets)

    def expire_rebalance(self, group_id: GroupId, member_id: MemberId) -> None:
        """The member's rebalance timer fires: `fence_member` if it is armed at the member's epoch."""
        client = client_of(self.config, member_id)
        before = self.group(group_id)
        offsets = tuple(sorted(self._offsets.get(group_id, {}).items()))
        after = fence_member(before, client) if rebalance_timer_fires(before, client) else before
        self._keep(group_id, before, after, offsets)

    def expire_offsets(self, group_id: GroupId) -> None:
        """Offset retention passes: a group without members loses its offsets."""
        before = self.group(group_id)
        offsets = tuple(sorted(self._offsets.get(group_id, {}).items()))
        if all(member is None for member in before.members):
            self._offsets.pop(group_id, None)
        self._keep(group_id, before, before, offsets)
