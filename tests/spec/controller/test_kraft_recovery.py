"""KIP-704's leader recovery state through `PartitionChangeBuilder`: an unclean election marks a
partition RECOVERING, and the AlterPartition in which its leader says RECOVERED ends it (the
builder's `setTargetLeaderRecoveryState`), in the spec, the reference and the implementation."""

from __future__ import annotations

import pytest

from conformance.controller_sut import make_controller
from spec.controller.kraft_partitions import (
    Election,
    ElrRule,
    LastKnownLeaderRule,
    LeaderRecoveryState,
    PartitionRegistration,
    build_partition_change,
)
from spec.controller.types import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerSettings,
    CreatePartitionRequest,
    KafkaError,
    UncleanElectionRequest,
)

RECOVERING = PartitionRegistration(
    (0, 1), frozenset({1}), 1, 3, 5, leader_recovery_state=LeaderRecoveryState.RECOVERING
)


def change(
    partition: PartitionRegistration, target: LeaderRecoveryState | None
) -> LeaderRecoveryState | None:
    outcome = build_partition_change(
        partition,
        partition.isr,
        lambda broker: True,
        1,
        Election.ONLINE,
        ElrRule.DISABLED,
        LastKnownLeaderRule.ACCEPTABLE,
        target_recovery=target,
    )
    return None if outcome.record is None else outcome.record.leader_recovery_state


def test_the_leader_saying_recovered_ends_recovering() -> None:
    assert change(RECOVERING, LeaderRecoveryState.RECOVERED) is LeaderRecoveryState.RECOVERED


def test_no_target_or_the_same_state_writes_nothing() -> None:
    assert change(RECOVERING, None) is None
    assert change(RECOVERING, LeaderRecoveryState.RECOVERING) is None


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_an_unclean_leader_recovers_through_alter_partition(target: str) -> None:
    controller = make_controller(
        target, ControllerSettings(min_insync_replicas=1, eligible_leader_replicas=False)
    )
    for broker in (0, 1):
        epoch = controller.register_broker(BrokerRegistrationRequest(broker, 0)).broker_epoch
        controller.heartbeat(BrokerHeartbeatRequest(broker, epoch, controller.observe().log_end - 1))
    controller.create_partition(CreatePartitionRequest(0, (0, 1), True))
    epochs = {view.broker_id: view.epoch for view in controller.observe().brokers}
    partition = controller.observe().partitions[0]
    # the leader shrinks the ISR to itself, then dies: broker 1 is elected uncleanly
    shrink = AlterPartitionRequest(
        0, 0, epochs[0], partition.leader_epoch, partition.partition_epoch, ((0, epochs[0]),)
    )
    assert controller.alter_partition(shrink).error is KafkaError.NONE
    controller.set_unclean_leader_election(UncleanElectionRequest(0, True))
    controller.expire_session(0)
    partition = controller.observe().partitions[0]
    assert partition.leader == 1
    assert partition.leader_recovery_state is LeaderRecoveryState.RECOVERING
    recovered = AlterPartitionRequest(
        0,
        1,
        epochs[1],
        partition.leader_epoch,
        partition.partition_epoch,
        ((1, epochs[1]),),
        LeaderRecoveryState.RECOVERED,
    )
    answer = controller.alter_partition(recovered)
    assert answer.error is KafkaError.NONE
    assert controller.observe().partitions[0].leader_recovery_state is LeaderRecoveryState.RECOVERED
