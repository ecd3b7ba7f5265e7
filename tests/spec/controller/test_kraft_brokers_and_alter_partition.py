"""Broker control states, broker epochs, registration refusals, and AlterPartition validation codes."""

from __future__ import annotations

import pytest

from spec.controller.kraft_alter_partition import (
    UNKNOWN_BROKER_EPOCH,
    AlterPartitionRequest,
    AlterPartitionRule,
    validate_alter_partition,
)
from spec.controller.kraft_brokers import (
    BrokerControlState,
    BrokerRegistration,
    Heartbeat,
    check_broker_epoch,
    next_broker_state,
    registration_refusal,
)
from spec.controller.kraft_errors import KafkaError
from spec.controller.kraft_partitions import LeaderRecoveryState, PartitionRegistration

FENCED = BrokerRegistration(epoch=10, incarnation=1, fenced=True)
UNFENCED = BrokerRegistration(epoch=10, incarnation=1, fenced=False)
SHUTTING = BrokerRegistration(
    epoch=10, incarnation=1, fenced=False, in_controlled_shutdown=True, controlled_shutdown_offset=20
)
S = BrokerControlState


@pytest.mark.parametrize(
    ("registration", "offset", "wants_shutdown", "leads", "lowest_active", "expected"),
    [
        (FENCED, 9, False, False, 99, S.FENCED),  # not caught up to its own registration record
        (FENCED, 10, False, False, 99, S.UNFENCED),  # caught up: unfenced
        (FENCED, 10, True, False, 99, S.SHUTDOWN_NOW),
        (UNFENCED, 30, False, True, 99, S.UNFENCED),
        (UNFENCED, 30, True, True, 99, S.CONTROLLED_SHUTDOWN),  # leads something: move it first
        (UNFENCED, 30, True, False, 99, S.SHUTDOWN_NOW),  # leads nothing: stop at once
        (SHUTTING, 30, True, True, 99, S.CONTROLLED_SHUTDOWN),  # still leads
        (SHUTTING, 30, True, False, 19, S.CONTROLLED_SHUTDOWN),  # an active broker has not replayed it
        (SHUTTING, 30, True, False, 20, S.SHUTDOWN_NOW),
    ],
)
def test_next_broker_state(registration, offset, wants_shutdown, leads, lowest_active, expected):
    heartbeat = Heartbeat(broker_epoch=10, current_metadata_offset=offset, want_shut_down=wants_shutdown)
    assert next_broker_state(registration, heartbeat, leads, lowest_active) is expected


def test_control_state_and_activity_of_a_registration():
    assert (FENCED.control_state, FENCED.active) == (S.FENCED, False)
    assert (UNFENCED.control_state, UNFENCED.active) == (S.UNFENCED, True)
    assert (SHUTTING.control_state, SHUTTING.active) == (S.CONTROLLED_SHUTDOWN, False)
    assert S.SHUTDOWN_NOW.fenced and S.FENCED.fenced and not S.CONTROLLED_SHUTDOWN.fenced


@pytest.mark.parametrize(
    ("registration", "epoch", "expected"),
    [
        (UNFENCED, 10, KafkaError.NONE),
        (UNFENCED, 7, KafkaError.STALE_BROKER_EPOCH),  # a heartbeat from the previous incarnation
        (None, 10, KafkaError.STALE_BROKER_EPOCH),  # not registered
    ],
)
def test_a_stale_broker_epoch_is_refused(registration, epoch, expected):
    assert check_broker_epoch(registration, epoch) is expected


@pytest.mark.parametrize(
    ("existing", "incarnation", "expected"),
    [
        (None, 2, KafkaError.NONE),
        (UNFENCED, 2, KafkaError.DUPLICATE_BROKER_REGISTRATION),  # old session still valid
        (FENCED, 2, KafkaError.NONE),  # the controller fenced the old session
        (SHUTTING, 2, KafkaError.NONE),  # after a controlled shutdown at once (KAFKA-19047)
        (UNFENCED, 1, KafkaError.NONE),  # the same incarnation amends its registration
    ],
)
def test_registration_refusal(existing, incarnation, expected):
    assert registration_refusal(existing, incarnation) is expected


# --- AlterPartition validation (ReplicationControlManager.validateAlterPartitionData) -----------

PARTITION = PartitionRegistration(
    replicas=(0, 1, 2), isr=frozenset({0, 1}), leader=0, leader_epoch=5, partition_epoch=9
)
REGISTRATIONS = {
    0: BrokerRegistration(epoch=100, incarnation=0, fenced=False),
    1: BrokerRegistration(epoch=101, incarnation=0, fenced=False),
    2: BrokerRegistration(epoch=102, incarnation=0, fenced=False),
}


def request(
    broker=0,
    broker_epoch=100,
    leader_epoch=5,
    partition_epoch=9,
    isr=((0, 100), (1, 101), (2, 102)),
    recovery=None,
) -> AlterPartitionRequest:
    return AlterPartitionRequest(
        broker_id=broker,
        broker_epoch=broker_epoch,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        new_isr=tuple(isr),
        leader_recovery_state=recovery or LeaderRecoveryState.RECOVERED,
    )


def with_registration(broker: int, registration: BrokerRegistration | None) -> dict[int, BrokerRegistration]:
    registrations = dict(REGISTRATIONS)
    if registration is None:
        del registrations[broker]
    else:
        registrations[broker] = registration
    return registrations


@pytest.mark.parametrize(
    ("case", "req", "registrations", "partition", "expected"),
    [
        ("valid expansion", request(), REGISTRATIONS, PARTITION, KafkaError.NONE),
        ("valid shrink", request(isr=((0, 100),)), REGISTRATIONS, PARTITION, KafkaError.NONE),
        (
            "requester's epoch stale",
            request(broker_epoch=99),
            REGISTRATIONS,
            PARTITION,
            KafkaError.STALE_BROKER_EPOCH,
        ),
        ("no partition", request(), REGISTRATIONS, None, KafkaError.UNKNOWN_TOPIC_OR_PARTITION),
        ("leader epoch newer", request(leader_epoch=6), REGISTRATIONS, PARTITION, KafkaError.NOT_CONTROLLER),
        (
            "partition epoch newer",
            request(partition_epoch=10),
            REGISTRATIONS,
            PARTITION,
            KafkaError.NOT_CONTROLLER,
        ),
        (
            "leader epoch older",
            request(leader_epoch=4),
            REGISTRATIONS,
            PARTITION,
            KafkaError.FENCED_LEADER_EPOCH,
        ),
        (
            "older leader epoch wins over older partition epoch",
            request(leader_epoch=4, partition_epoch=8),
            REGISTRATIONS,
            PARTITION,
            KafkaError.FENCED_LEADER_EPOCH,
        ),
        (
            "not the leader",
            request(broker=1, broker_epoch=101, isr=((0, 100), (1, 101))),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_REQUEST,
        ),
        (
            "partition epoch older",
            request(partition_epoch=8),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_UPDATE_VERSION,
        ),
        (
            "ISR without the leader",
            request(isr=((1, 101),)),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_REQUEST,
        ),
        (
            "ISR outside the replicas",
            request(isr=((0, 100), (3, 7))),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_REQUEST,
        ),
        (
            "RECOVERING with two members",
            request(isr=((0, 100), (1, 101)), recovery=LeaderRecoveryState.RECOVERING),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_REQUEST,
        ),
        (
            "RECOVERED back to RECOVERING",
            request(isr=((0, 100),), recovery=LeaderRecoveryState.RECOVERING),
            REGISTRATIONS,
            PARTITION,
            KafkaError.INVALID_REQUEST,
        ),
        (
            "member fenced",
            request(),
            with_registration(2, BrokerRegistration(epoch=102, incarnation=0, fenced=True)),
            PARTITION,
            KafkaError.INELIGIBLE_REPLICA,
        ),
        (
            "member in controlled shutdown",
            request(),
            with_registration(
                2, BrokerRegistration(epoch=102, incarnation=0, fenced=False, in_controlled_shutdown=True)
            ),
            PARTITION,
            KafkaError.INELIGIBLE_REPLICA,
        ),
        (
            "member not registered",
            request(),
            with_registration(2, None),
            PARTITION,
            KafkaError.INELIGIBLE_REPLICA,
        ),
        (
            "member re-registered since the leader saw it (KIP-903)",
            request(),
            with_registration(2, BrokerRegistration(epoch=140, incarnation=1, fenced=False)),
            PARTITION,
            KafkaError.INELIGIBLE_REPLICA,
        ),
        (
            "member epoch unknown: not checked",
            request(isr=((0, 100), (1, 101), (2, UNKNOWN_BROKER_EPOCH))),
            with_registration(2, BrokerRegistration(epoch=140, incarnation=1, fenced=False)),
            PARTITION,
            KafkaError.NONE,
        ),
    ],
)
def test_alter_partition_validation(case, req, registrations, partition, expected):
    assert (
        validate_alter_partition(req, partition, registrations, AlterPartitionRule.BROKER_EPOCHS) is expected
    )


def test_version_1_requests_get_operation_not_attempted_for_ineligible_replicas():
    registrations = with_registration(2, BrokerRegistration(epoch=102, incarnation=0, fenced=True))
    answer = validate_alter_partition(
        request(), PARTITION, registrations, AlterPartitionRule.BROKER_EPOCHS, 1
    )
    assert answer is KafkaError.OPERATION_NOT_ATTEMPTED


def test_before_kip_903_a_member_with_a_stale_broker_epoch_is_accepted():
    registrations = with_registration(2, BrokerRegistration(epoch=140, incarnation=1, fenced=False))
    assert validate_alter_partition(
        request(), PARTITION, registrations, AlterPartitionRule.NO_BROKER_EPOCHS
    ) is (KafkaError.NONE)
    fenced = with_registration(2, BrokerRegistration(epoch=140, incarnation=1, fenced=True))
    assert validate_alter_partition(request(), PARTITION, fenced, AlterPartitionRule.NO_BROKER_EPOCHS) is (
        KafkaError.INELIGIBLE_REPLICA
    )
