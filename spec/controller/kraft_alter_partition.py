"""AlterPartition validation as the KRaft controller answers it (`ReplicationControlManager.alterPartition`).

What it is
    A partition leader changes the ISR only by asking the controller: it sends
    `AlterPartition` with the leader epoch and partition epoch it knows, the new ISR with
    each member's broker epoch (KIP-903: the epoch the member's last fetch carried, -1 when
    unknown, which skips the check) and its leader recovery state (KIP-704). The controller
    answers each partition with the first error below, in this order, or accepts and writes
    a `PartitionChangeRecord` built by `PartitionChangeBuilder`
    (`spec.controller.kraft_partitions.build_partition_change`):

    ===========================  =========================================================
    error                        when
    ===========================  =========================================================
    STALE_BROKER_EPOCH           the requesting broker's epoch is not its registration's
                                 (the whole request fails: `checkBrokerEpoch`)
    UNKNOWN_TOPIC_OR_PARTITION   no such partition (not reachable in this model)
    NOT_CONTROLLER               leader or partition epoch newer than the controller's
                                 (the requester saw a newer controller)
    FENCED_LEADER_EPOCH          leader epoch older than the controller's
    INVALID_REQUEST              the requester is not the leader
    INVALID_UPDATE_VERSION       partition epoch older than the controller's
    INVALID_REQUEST              ISR not within the replicas, or without the leader, or
                                 RECOVERING with more than one member, or RECOVERED ->
                                 RECOVERING
    INELIGIBLE_REPLICA           a member is not registered, in controlled shutdown, fenced,
                                 or (KIP-903) its broker epoch is not the registered one
                                 (OPERATION_NOT_ATTEMPTED for request versions 0-1)
    NEW_LEADER_ELECTED           accepted, but the change completed a reassignment that
                                 moved the leader (the record is still written)
    ===========================  =========================================================

    KIP-841 introduced the fenced / shutting-down checks (INELIGIBLE_REPLICA,
    NEW_LEADER_ELECTED), KIP-903 the broker epochs in the new ISR.

Rules
    `AlterPartitionRule.BROKER_EPOCHS` (KIP-903, Kafka 3.5+) checks each member's broker
    epoch; `AlterPartitionRule.NO_BROKER_EPOCHS` is the earlier rule, under which a replica
    whose last fetch came from a process that has since crashed and re-registered can be
    added to the ISR on the strength of that stale fetch (KAFKA-14139's data-loss story).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init
from spec.controller.kraft_brokers import BrokerRegistration, check_broker_epoch
from spec.controller.kraft_errors import KafkaError
from spec.controller.kraft_partitions import LeaderRecoveryState, PartitionRegistration

BrokerId = int

UNKNOWN_BROKER_EPOCH = -1
"""A member's broker epoch the leader does not know: the controller skips the check (KIP-903)."""


class AlterPartitionRule(enum.Enum):
    """Whether the controller checks the broker epochs of the proposed ISR members (KIP-903)."""

    BROKER_EPOCHS = "kip-903"
    NO_BROKER_EPOCHS = "pre-kip-903"

    __hash__ = object.__hash__


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """One partition of an `AlterPartitionRequest` (version 3: topic ids, broker epochs)."""

    broker_id: BrokerId
    broker_epoch: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[BrokerId, int], ...]  # (member, its broker epoch or UNKNOWN_BROKER_EPOCH), sorted
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def isr(self) -> frozenset[BrokerId]:
        """The proposed ISR, without the epochs."""
        return frozenset(member for member, _ in self.new_isr)


def validate_alter_partition(
    request: AlterPartitionRequest,
    partition: PartitionRegistration | None,
    registrations: Mapping[BrokerId, BrokerRegistration],
    rule: AlterPartitionRule,
    request_version: int = 3,
) -> KafkaError:
    """The error `ReplicationControlManager` answers for this partition of the request
    (`checkBrokerEpoch`, then `validateAlterPartitionData`), or NONE."""
    broker_epoch_error = check_broker_epoch(registrations.get(request.broker_id), request.broker_epoch)
    if broker_epoch_error is not KafkaError.NONE:
        return broker_epoch_error
    if partition is None:
        return KafkaError.UNKNOWN_TOPIC_OR_PARTITION
    if request.leader_epoch > partition.leader_epoch or request.partition_epoch > partition.partition_epoch:
        return KafkaError.NOT_CONTROLLER
    if request.leader_epoch < partition.leader_epoch:
        return KafkaError.FENCED_LEADER_EPOCH
    if request.broker_id != partition.leader:
        return KafkaError.INVALID_REQUEST
    if request.partition_epoch < partition.partition_epoch:
        return KafkaError.INVALID_UPDATE_VERSION
    new_isr = request.isr
    if not new_isr <= frozenset(partition.replicas) or partition.leader not in new_isr:
        return KafkaError.INVALID_REQUEST
    recovering = request.leader_recovery_state is LeaderRecoveryState.RECOVERING
    if recovering and len(new_isr) > 1:
        return KafkaError.INVALID_REQUEST
    if recovering and partition.leader_recovery_state is LeaderRecoveryState.RECOVERED:
        return KafkaError.INVALID_REQUEST
    for member, member_epoch in request.new_isr:
        if not _eligible(registrations.get(member), member_epoch, rule):
            return (
                KafkaError.INELIGIBLE_REPLICA if request_version > 1 else KafkaError.OPERATION_NOT_ATTEMPTED
            )
    return KafkaError.NONE


def _eligible(registration: BrokerRegistration | None, member_epoch: int, rule: AlterPartitionRule) -> bool:
    """`ineligibleReplicasForIsr`: registered, not shutting down, not fenced, and (KIP-903)
    the broker epoch the leader saw is the registered one, unless unknown."""
    if registration is None or registration.in_controlled_shutdown or registration.fenced:
        return False
    if rule is AlterPartitionRule.NO_BROKER_EPOCHS or member_epoch == UNKNOWN_BROKER_EPOCH:
        return True
    return registration.epoch == member_epoch
