"""A ZooKeeper-era broker's control plane: LeaderAndIsr, StopReplica and UpdateMetadata.

What it is
    The part of a ZooKeeper-mode Kafka broker that obeys the controller (Kafka's
    `KafkaApis.handleLeaderAndIsrRequest` / `handleStopReplicaRequest` /
    `handleUpdateMetadataRequest` and `ReplicaManager.becomeLeaderOrFollower`,
    `stopReplicas`, `maybeUpdateMetadataCache`), written as Kafka writes it: mutable, one
    lock-free handler per request, partitions in a dict (`ReplicaManager.allPartitions`),
    and a request carrying many partitions handled in one pass (`become_leader_or_follower`,
    `stop_replicas`). `handle` and `observe` are the one-partition face the conformance
    suites drive (`conformance.zk_broker_sut`); `reference.zk_broker` is its oracle.

The checks, in Kafka's order
    1. KIP-380 (`KafkaApis.isBrokerEpochStale`): a request carrying a broker epoch older than
       the broker's own registration is refused with STALE_BROKER_EPOCH (-1 means the
       controller does not know it, and is not checked).
    2. The controller epoch: older than the newest this broker has seen is refused with
       STALE_CONTROLLER_EPOCH; otherwise it becomes the newest seen. This is what fences a
       zombie controller whose ZooKeeper session expired.
    3. LeaderAndIsr, per partition: a newer leader epoch is applied when the broker is in the
       assignment (it leads or follows), UNKNOWN_TOPIC_OR_PARTITION when it is not; an equal
       one changes nothing; an older one is ignored and answered STALE_CONTROLLER_EPOCH
       (Kafka's code for it). StopReplica (before KIP-570, no leader epoch) stops the
       replica, and with `delete` removes the partition and its log, forgetting its epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from spec.controller.types import (
    NO_LEADER,
    ControlRequest,
    ControlResponse,
    KafkaError,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    ZkBrokerSettings,
    ZkBrokerView,
)

UNKNOWN_BROKER_EPOCH = -1
INITIAL_CONTROLLER_EPOCH = 0  # `KafkaController.InitialControllerEpoch`
NO_EPOCH = -1  # a partition the broker does not host has no leader epoch


@dataclass(slots=True)
class HostedPartition:
    """A partition this broker hosts (`kafka.cluster.Partition`'s control-plane fields)."""

    leader_epoch: int = NO_EPOCH
    role: str = "none"
    leader: int = NO_LEADER
    isr: tuple[int, ...] = ()
    zk_version: int = -1  # as leader: the zkVersion its next conditional ISR write expects
    controller_epoch: int = 0  # as leader: the epoch of the controller that made it leader
    log_deleted: int = 0


class ZkBroker:
    """One ZooKeeper-era broker's replica manager (see the module docstring)."""

    def __init__(self, settings: ZkBrokerSettings) -> None:
        self.broker_id = settings.broker_id
        self.broker_epoch = settings.broker_epoch
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.partitions: dict[int, HostedPartition] = {}
        self.deleted_logs: dict[int, int] = {}  # partition -> how many times its log was deleted

    # -- the control requests -------------------------------------------------------------

    def _fenced(self, controller_epoch: int, broker_epoch: int) -> KafkaError:
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < self.broker_epoch:
            return KafkaError.STALE_BROKER_EPOCH
        if controller_epoch < self.controller_epoch:
            return KafkaError.STALE_CONTROLLER_EPOCH
        self.controller_epoch = controller_epoch
        return KafkaError.NONE

    def become_leader_or_follower(
        self, controller_epoch: int, broker_epoch: int, states: Mapping[int, LeaderAndIsrRequest]
    ) -> tuple[KafkaError, dict[int, KafkaError]]:
        """A LeaderAndIsr for several partitions: the top-level error and each partition's."""
        error = self._fenced(controller_epoch, broker_epoch)
        if error is not KafkaError.NONE:
            return error, {}
        answers: dict[int, KafkaError] = {}
        for partition_id, state in states.items():
            partition = self.partitions.setdefault(partition_id, HostedPartition())
            if state.leader_epoch < partition.leader_epoch:
                answers[partition_id] = KafkaError.STALE_CONTROLLER_EPOCH
            elif state.leader_epoch == partition.leader_epoch:
                answers[partition_id] = KafkaError.NONE
            elif self.broker_id not in state.replicas:
                answers[partition_id] = KafkaError.UNKNOWN_TOPIC_OR_PARTITION
            else:
                self._apply(partition, state, controller_epoch)
                answers[partition_id] = KafkaError.NONE
        return KafkaError.NONE, answers

    def _apply(self, partition: HostedPartition, state: LeaderAndIsrRequest, controller_epoch: int) -> None:
        partition.leader_epoch = state.leader_epoch
        partition.leader = state.leader
        if state.leader == self.broker_id:  # `Partition.makeLeader`
            partition.role = "leader"
            partition.isr = state.isr
            partition.zk_version = state.zk_version
            partition.controller_epoch = controller_epoch
        else:  # `Partition.makeFollower`: the ISR is the leader's business
            partition.role = "follower"
            partition.isr = ()
            partition.zk_version = -1

    def stop_replicas(
        self, controller_epoch: int, broker_epoch: int, deletes: Mapping[int, bool]
    ) -> KafkaError:
        """A StopReplica for several partitions (each with its `delete` flag)."""
        error = self._fenced(controller_epoch, broker_epoch)
        if error is not KafkaError.NONE:
            return error
        for partition_id, delete in deletes.items():
            partition = self.partitions.get(partition_id)
            if delete:
                self.partitions.pop(partition_id, None)
                self.deleted_logs[partition_id] = self.deleted_logs.get(partition_id, 0) + 1
            elif partition is not None:
                partition.role, partition.leader, partition.isr, partition.zk_version = (
                    "none",
                    NO_LEADER,
                    (),
                    -1,
                )
        return KafkaError.NONE

    def update_metadata(self, controller_epoch: int, broker_epoch: int) -> KafkaError:
        """An UpdateMetadata: its fencing is all a replica manager sees of it."""
        return self._fenced(controller_epoch, broker_epoch)

    def restart(self, broker_epoch: int) -> None:
        """The process restarts and registers with `broker_epoch`; the logs stay on disk, the
        control state (controller epoch, hosted partitions) is rebuilt from requests."""
        self.broker_epoch = broker_epoch
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH
        self.partitions = {}

    # -- the one-partition face -----------------------------------------------------------

    def handle(self, request: ControlRequest, partition_id: int = 0) -> ControlResponse:
        """One control request about one partition."""
        if isinstance(request, LeaderAndIsrRequest):
            error, answers = self.become_leader_or_follower(
                request.controller_epoch, request.broker_epoch, {partition_id: request}
            )
            return ControlResponse(error, answers.get(partition_id, KafkaError.NONE))
        if isinstance(request, StopReplicaRequest):
            return ControlResponse(
                self.stop_replicas(
                    request.controller_epoch, request.broker_epoch, {partition_id: request.delete}
                )
            )
        return ControlResponse(self.update_metadata(request.controller_epoch, request.broker_epoch))

    def observe(self, partition_id: int = 0) -> ZkBrokerView:
        """What the broker knows of the controller and of one partition."""
        partition = self.partitions.get(partition_id, HostedPartition())
        return ZkBrokerView(
            broker_epoch=self.broker_epoch,
            controller_epoch=self.controller_epoch,
            role=partition.role,
            leader=partition.leader,
            leader_epoch=partition.leader_epoch,
            isr=partition.isr,
            zk_version=partition.zk_version,
            leader_controller_epoch=partition.controller_epoch if partition.role == "leader" else 0,
            log_deleted=self.deleted_logs.get(partition_id, 0),
        )
