"""`PartitionUnderTest` over the optimized replication state machine (`impl.replication`).

What it is
    The adapter the partition conformance machine drives when the target is `impl`: each
    protocol method forwards to the same-named action of `impl.replication.ReplicatedPartition`
    (which refuses exactly what the spec's guards refuse) and `observe()` turns its mutable
    state into the plain `PartitionView` compared with the reference after every step.

Why an adapter
    `impl/` may not import the conformance suite (the layout rules `tests/test_layout.py`
    checks, on the documentation's architecture page), so the
    implementation has its own config and result types; this module maps them.
"""

from __future__ import annotations

from conformance.partition_sut import (
    PartitionView,
    ProduceOutcome,
    ReplicationSettings,
    ReplicaView,
)
from impl.replication import ReplicatedPartition, ReplicationConfig
from spec.types import Acks, ReplicaId


def replication_config(settings: ReplicationSettings) -> ReplicationConfig:
    """The implementation's config for the suite's settings (same fields, same meaning)."""
    return ReplicationConfig(
        replication_factor=settings.replication_factor,
        min_insync_replicas=settings.min_insync_replicas,
        unclean_leader_election=settings.unclean_leader_election,
        truncation=settings.truncation,
        replica_lag_ticks=settings.replica_lag_ticks,
    )


class ImplPartition:
    """A fresh `impl.replication.ReplicatedPartition` in the spec's initial state."""

    def __init__(self, settings: ReplicationSettings) -> None:
        self.settings = settings
        self.partition = ReplicatedPartition(replication_config(settings))

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceOutcome | None:
        """See `PartitionUnderTest.produce`."""
        result = self.partition.produce(leader, acks, value)
        if result is None:
            return None
        return ProduceOutcome(result.error, result.offset, result.completed)

    def leader_handle_fetch(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.leader_handle_fetch`."""
        return self.partition.leader_handle_fetch(follower)

    def follower_handle_fetch_response(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.follower_handle_fetch_response`."""
        return self.partition.follower_handle_fetch_response(follower)

    def follower_truncate(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.follower_truncate`."""
        return self.partition.follower_truncate(follower)

    def leader_shrink_isr(self, leader: ReplicaId, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.leader_shrink_isr`."""
        return self.partition.leader_shrink_isr(leader, follower)

    def clock_tick(self) -> bool:
        """See `PartitionUnderTest.clock_tick`."""
        return self.partition.clock_tick()

    def controller_move_leadership(self, new_leader: ReplicaId) -> bool:
        """See `PartitionUnderTest.controller_move_leadership`."""
        return self.partition.controller_move_leadership(new_leader)

    def broker_crash(self, replica: ReplicaId, surviving_end: int) -> bool:
        """See `PartitionUnderTest.broker_crash`."""
        return self.partition.broker_crash(replica, surviving_end)

    def broker_restart(self, replica: ReplicaId) -> bool:
        """See `PartitionUnderTest.broker_restart`."""
        return self.partition.broker_restart(replica)

    def become_leader_or_follower(self, replica: ReplicaId) -> bool:
        """See `PartitionUnderTest.become_leader_or_follower`."""
        return self.partition.become_leader_or_follower(replica)

    def advance_log_start_offset(self, leader: ReplicaId, new_start: int) -> bool:
        """See `PartitionUnderTest.advance_log_start_offset`."""
        return self.partition.advance_log_start_offset(leader, new_start)

    def observe(self) -> PartitionView:
        """See `PartitionUnderTest.observe`."""
        partition = self.partition
        replicas = tuple(
            ReplicaView(
                alive=replica.alive,
                role=replica.role.value,
                leader_epoch=replica.leader_epoch,
                leader=replica.leader,
                log_start_offset=replica.log.log_start_offset,
                records=replica.log.records(),
                high_watermark=replica.log.high_watermark,
                epoch_cache=replica.log.epoch_cache.entries,
                isr=frozenset(replica.isr),
            )
            for replica in partition.replicas
        )
        controller = partition.controller
        return PartitionView(
            replicas=replicas,
            controller_leader=controller.leader,
            controller_epoch=controller.leader_epoch,
            controller_isr=controller.isr,
            acknowledged=frozenset(partition.acknowledged),
        )

    def close(self) -> None:
        """Nothing to release: the state is in memory."""
