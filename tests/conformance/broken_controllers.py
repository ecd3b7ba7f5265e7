"""Deliberately broken KRaft controllers (`--target tests.conformance.broken_controllers:NAME
--suite controller`): each one bug of the kind the controller suites exist to catch."""

from __future__ import annotations

from impl.controller import KRaftController
from spec.controller.types import AlterPartitionRequest, KafkaError


class AcceptsStalePartitionEpoch(KRaftController):
    """An AlterPartition built on an older partition epoch is accepted (INVALID_UPDATE_VERSION lost)."""

    def _validate_alter_partition(self, request: AlterPartitionRequest) -> KafkaError:
        partition = self.partitions.get(request.partition)
        if partition is not None and request.partition_epoch < partition.partition_epoch:
            request = AlterPartitionRequest(
                request.partition,
                request.broker_id,
                request.broker_epoch,
                request.leader_epoch,
                partition.partition_epoch,
                request.new_isr,
                request.leader_recovery_state,
            )
        return super()._validate_alter_partition(request)


class ElectsFencedBrokers(KRaftController):
    """A fenced broker is acceptable as leader."""

    def _acceptable(self, remove: int = -1, add: int = -1, unclean: int = -1) -> frozenset[int]:
        return frozenset(self.brokers) - {remove, unclean}


class ForgetsExpiredSessions(KRaftController):
    """A broker whose session expired is not fenced."""

    def expire_session(self, broker_id: int) -> None:
        return None
