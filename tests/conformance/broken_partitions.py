"""Deliberately broken partitions under test, loaded by the partition conformance tests as
MODULE:FACTORY targets (`FACTORY(settings)`). Each wraps the reference with one bug."""

from __future__ import annotations

from dataclasses import replace

from conformance.partition_sut import (
    PartitionView,
    ProduceOutcome,
    ReferencePartitionTarget,
    ReplicationSettings,
)
from spec import partition as spec_partition
from spec.log import with_high_watermark
from spec.partition import FollowerTruncate, Role
from spec.types import Acks, ErrorCode, ReplicaId, TruncationRule


class HighWatermarkOffByOne(ReferencePartitionTarget):
    """A leader reports a high watermark one past the real one while records are uncommitted."""

    def observe(self) -> PartitionView:
        view = super().observe()
        replicas = tuple(
            replace(replica, high_watermark=replica.high_watermark + 1)
            if replica.role == "leader" and replica.high_watermark < replica.log_end_offset
            else replica
            for replica in view.replicas
        )
        return replace(view, replicas=replicas)


class IsrNeverShrinks(ReferencePartitionTarget):
    """The leader never drops a lagging follower from the ISR."""

    def leader_shrink_isr(self, leader: ReplicaId, follower: ReplicaId) -> bool:
        return False


class FollowerHighWatermarkFromLeaderEnd(ReferencePartitionTarget):
    """A follower takes its HW from the leader's log end offset in a fetch response instead
    of min(leader HW, own LEO). (Dropping only the cap, HW := leader HW, is no bug here: a
    response carries every record up to the leader's LEO, so the follower's new LEO is never
    below the leader's HW.)"""

    def follower_handle_fetch_response(self, follower: ReplicaId) -> bool:
        response = self.partition.state.replicas[follower].fetch_in_flight
        if not super().follower_handle_fetch_response(follower):
            return False
        if response is not None and response.error is ErrorCode.NONE:
            state = self.partition.state
            replica = state.replicas[follower]
            if replica.leader_epoch == response.leader_epoch:
                log = with_high_watermark(replica.log, response.leader_log_end_offset)
                replicas = list(state.replicas)
                replicas[follower] = replace(replica, log=log)
                self.partition.state = replace(state, replicas=tuple(replicas))
        return True


class TruncatesToHighWatermark(ReferencePartitionTarget):
    """A new follower truncates to its own high watermark even under the epoch rule (pre-0.11)."""

    def follower_truncate(self, follower: ReplicaId) -> bool:
        config = replace(self.partition.config, truncation=TruncationRule.HIGH_WATERMARK)
        state = self.partition.state
        if not self.partition.would_accept(FollowerTruncate(follower)):
            return False
        after = spec_partition.step(config, state, FollowerTruncate(follower))
        assert after is not None
        self.partition.state = after
        return True


class AcksAllBeforeHighWatermark(ReferencePartitionTarget):
    """acks=all is acknowledged as soon as the leader appended the record."""

    def __init__(self, settings: ReplicationSettings) -> None:
        super().__init__(settings)
        self.early: frozenset[tuple[int, int]] = frozenset()

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceOutcome | None:
        outcome = super().produce(leader, acks, value)
        if outcome is not None and acks is Acks.ALL and outcome.offset is not None:
            self.early = self.early | {(outcome.offset, value)}
            return replace(outcome, completed=True)
        return outcome

    def observe(self) -> PartitionView:
        view = super().observe()
        return replace(view, acknowledged=view.acknowledged | self.early)


class AcceptsProduceOnFollower(ReferencePartitionTarget):
    """A live follower answers a produce as if it led (and appends nothing)."""

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceOutcome | None:
        outcome = super().produce(leader, acks, value)
        replicas = self.partition.state.replicas
        if outcome is None and 0 <= leader < len(replicas) and replicas[leader].role is Role.FOLLOWER:
            return ProduceOutcome(ErrorCode.NONE, replicas[leader].log.log_end_offset, True)
        return outcome


def make_reference(settings: ReplicationSettings) -> ReferencePartitionTarget:
    """A working target, to check that MODULE:FACTORY loading works."""
    return ReferencePartitionTarget(settings)


def make_nothing(settings: ReplicationSettings) -> object:
    """A factory that returns something that is not a partition."""
    return object()
