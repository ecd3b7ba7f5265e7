"""The optimized KRaft controller (`impl.controller`): records and broker epochs, elections on
failure touching only the failed broker's partitions, per-broker batching, and agreement with
the reference on a larger cluster than the conformance suites use."""

from __future__ import annotations

import random

from impl.controller import KRaftController
from reference.controller import ReferenceController
from spec.controller.types import (
    NO_LEADER,
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerSettings,
    CreatePartitionRequest,
    KafkaError,
    UncleanElectionRequest,
)

SETTINGS = ControllerSettings(min_insync_replicas=2, eligible_leader_replicas=True)


def cluster(brokers: int, settings: ControllerSettings = SETTINGS) -> KRaftController:
    controller = KRaftController(settings)
    for broker_id in range(brokers):
        assert controller.register_broker(BrokerRegistrationRequest(broker_id, 0)).broker_epoch == broker_id
    for broker_id in range(brokers):
        answer = controller.heartbeat(BrokerHeartbeatRequest(broker_id, broker_id, brokers - 1))
        assert not answer.is_fenced
    return controller


def test_a_broker_epoch_is_the_offset_of_its_registration_record() -> None:
    controller = cluster(3)  # 3 registrations, 3 unfence records
    assert controller.log_end == 6
    answer = controller.register_broker(BrokerRegistrationRequest(1, 1))
    assert answer.error is KafkaError.DUPLICATE_BROKER_REGISTRATION  # the old registration is active
    controller.expire_session(1)
    assert controller.log_end == 7
    answer = controller.register_broker(BrokerRegistrationRequest(1, 1))
    assert (answer.error, answer.broker_epoch) == (KafkaError.NONE, 7)
    stale = controller.heartbeat(BrokerHeartbeatRequest(1, 1, 7))
    assert stale.error is KafkaError.STALE_BROKER_EPOCH
    behind = controller.heartbeat(BrokerHeartbeatRequest(1, 7, 6))
    assert behind.is_fenced  # has not replayed its own registration yet
    assert not controller.heartbeat(BrokerHeartbeatRequest(1, 7, 7)).is_fenced


def test_a_failure_elects_from_the_isr_and_touches_only_the_failed_brokers_partitions() -> None:
    controller = cluster(6)
    for partition_id in range(30):
        replicas = tuple((partition_id + offset) % 6 for offset in range(3))
        assert (
            controller.create_partition(CreatePartitionRequest(partition_id, replicas)).error
            is KafkaError.NONE
        )
    before = controller.observe()
    controller.take_broker_updates()
    log_end, batches = controller.log_end, controller.batches
    controller.expire_session(0)
    after = controller.observe()
    in_isr = [partition for partition in before.partitions if 0 in partition.isr]
    assert after.log_end == log_end + len(in_isr) + 1  # one change per partition, then the fence
    assert controller.batches == batches + 1  # one event, one batch
    for old, new in zip(before.partitions, after.partitions, strict=True):
        if 0 not in old.isr:
            assert new == old
            continue
        assert 0 not in new.isr and new.partition_epoch == old.partition_epoch + 1
        if old.leader == 0:
            assert new.leader == next(replica for replica in old.replicas if replica in new.isr)
            assert new.leader_epoch == old.leader_epoch + 1
        else:
            assert (new.leader, new.leader_epoch) == (old.leader, old.leader_epoch)
    updates = controller.take_broker_updates()
    touched = {partition.partition for partition in in_isr}
    for broker_id, partition_ids in updates.items():
        assert set(partition_ids) == {
            partition.partition for partition in in_isr if broker_id in partition.replicas
        }
        assert set(partition_ids) <= touched
    assert controller.take_broker_updates() == {}


def test_with_unclean_election_off_a_partition_without_isr_stays_offline() -> None:
    controller = cluster(2, ControllerSettings(min_insync_replicas=1, eligible_leader_replicas=False))
    controller.create_partition(CreatePartitionRequest(0, (0, 1)))
    shrink = AlterPartitionRequest(0, 0, 0, 0, 0, ((0, 0),))
    assert controller.alter_partition(shrink).error is KafkaError.NONE
    assert controller.alter_partition(shrink).error is KafkaError.INVALID_UPDATE_VERSION  # stale now
    controller.expire_session(0)
    partition = controller.observe().partitions[0]
    assert partition.leader == NO_LEADER and partition.isr == (0,)  # the last replica standing
    controller.set_unclean_leader_election(UncleanElectionRequest(0, True))
    partition = controller.observe().partitions[0]
    assert partition.leader == 1 and partition.isr == (1,)


def test_the_impl_agrees_with_the_reference_on_a_random_workload() -> None:
    generator = random.Random(7)
    impl, reference = KRaftController(SETTINGS), ReferenceController(SETTINGS)
    brokers = 8
    for controller in (impl, reference):
        for broker_id in range(brokers):
            controller.register_broker(BrokerRegistrationRequest(broker_id, 0))
        for broker_id in range(brokers):
            controller.heartbeat(BrokerHeartbeatRequest(broker_id, broker_id, brokers - 1))
        for partition_id in range(40):
            replicas = tuple(random.Random(partition_id).sample(range(brokers), 3))
            controller.create_partition(CreatePartitionRequest(partition_id, replicas))
    incarnations = [0] * brokers
    for _ in range(300):
        broker_id = generator.randrange(brokers)
        view = reference.observe()
        epoch = next(broker.epoch for broker in view.brokers if broker.broker_id == broker_id)
        choice = generator.random()
        if choice < 0.2:
            requests: list[object] = ["expire", broker_id]
        elif choice < 0.4:
            incarnations[broker_id] += 1
            requests = ["register", BrokerRegistrationRequest(broker_id, incarnations[broker_id])]
        elif choice < 0.7:
            request = BrokerHeartbeatRequest(broker_id, epoch, view.log_end - 1, generator.random() < 0.1)
            requests = ["heartbeat", request]
        else:
            partition = view.partitions[generator.randrange(len(view.partitions))]
            if partition.leader < 0:
                continue
            epochs = {broker.broker_id: broker.epoch for broker in view.brokers}
            isr = set(partition.isr) ^ {generator.choice(partition.replicas)} | {partition.leader}
            new_isr = tuple((member, epochs[member]) for member in sorted(isr))
            request_epoch = partition.partition_epoch - (generator.random() < 0.2)
            requests = [
                "alter",
                AlterPartitionRequest(
                    partition.partition,
                    partition.leader,
                    epochs[partition.leader],
                    partition.leader_epoch,
                    request_epoch,
                    new_isr,
                ),
            ]
        kind, argument = requests
        answers: list[object] = []
        for controller in (impl, reference):
            if kind == "expire":
                assert isinstance(argument, int)
                answers.append(controller.expire_session(argument))
            elif kind == "register":
                assert isinstance(argument, BrokerRegistrationRequest)
                answers.append(controller.register_broker(argument))
            elif kind == "heartbeat":
                assert isinstance(argument, BrokerHeartbeatRequest)
                answers.append(controller.heartbeat(argument))
            else:
                assert isinstance(argument, AlterPartitionRequest)
                answers.append(controller.alter_partition(argument))
        assert answers[0] == answers[1], (kind, argument)
        assert impl.observe() == reference.observe(), (kind, argument)


def test_a_change_shared_by_many_partitions_takes_one_offset_per_partition() -> None:
    """Partitions of the same shape share one change entry in the batch (`SharedPartitionChange`);
    the log, the broker epochs and the image must be as if each had its own record."""
    impl, reference = KRaftController(SETTINGS), ReferenceController(SETTINGS)
    shapes = [(0, 1, 2)] * 20 + [(0, 1, 3)] * 7 + [(3, 0, 1)] + [(1, 2, 3)] * 4
    for controller in (impl, reference):
        for broker_id in range(4):
            controller.register_broker(BrokerRegistrationRequest(broker_id, 0))
        for broker_id in range(4):
            controller.heartbeat(BrokerHeartbeatRequest(broker_id, broker_id, 3))
        for partition_id, replicas in enumerate(shapes):
            controller.create_partition(CreatePartitionRequest(partition_id, replicas))
    log_end = impl.log_end
    batches = impl.batches
    for controller in (impl, reference):
        controller.expire_session(0)  # 28 partitions change (3 shapes), then the fence record
    assert impl.log_end == log_end + 28 + 1
    assert impl.batches == batches + 1
    assert impl.observe() == reference.observe()
    # An unclean restart of a broker in many ISRs and ELRs: its epoch is the offset after every
    # change of its batch.
    for controller in (impl, reference):
        controller.expire_session(1)
    log_end = impl.log_end
    answers = [
        controller.register_broker(BrokerRegistrationRequest(1, 1)) for controller in (impl, reference)
    ]
    assert answers[0] == answers[1]
    assert answers[0].broker_epoch == impl.log_end - 1 > log_end + 1
    assert impl.observe() == reference.observe()
    updates = impl.take_broker_updates()
    assert updates[2] == tuple(range(20)) + tuple(range(28, 32))
