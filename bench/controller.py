"""Benchmark of the KRaft controller: `impl.controller` beside `reference.controller`, re-elections at scale.

What it measures, in one run
    1. The same workload on both controllers (`ControllerUnderTest` requests): a cluster of
       brokers registers and unfences, partitions are created round-robin with replication
       factor 3, then brokers are bounced one after another: the session expires (the broker
       leaves every ISR, the partitions it led elect), it registers again after an unclean
       shutdown, heartbeats while it catches up (every other broker heartbeating too, as they
       do every `broker.heartbeat.interval.ms`) until it is unfenced, and every leader sends
       the AlterPartition that adds it back to the ISR. Seconds for each, the ratio, and a
       check that both images are equal at the end.
    2. Re-election after one broker fails, with 100,000 partitions of replication factor 3:
       spread over 100 brokers (the failed broker leads about 1,000 and is in about 3,000
       ISRs), and the worst case, every partition on the same 3 brokers and led by the one
       that fails (100,000 elections). CPU seconds (`time.process_time`: the machine is
       shared, and the controller is one thread) for the `expire_session` request alone (one
       event, one batch of records), impl and reference side by side; impl's is the best of
       `--repeat` runs, each on a freshly built cluster (the reference runs once: it is the
       yardstick, not the target); the target is under 1 s for impl.

Usage: ``python -m bench.controller [--quick] [--repeat N]`` (``--quick``: smaller sizes, a few
seconds; ``--repeat``: impl's failover runs, 3 by default).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from conformance.controller_sut import ControllerUnderTest
from impl.controller import KRaftController
from reference.controller import ReferenceController
from spec.controller.types import (
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    ControllerSettings,
    CreatePartitionRequest,
    KafkaError,
)

SETTINGS = ControllerSettings(min_insync_replicas=2, eligible_leader_replicas=True)
Factory = Callable[[ControllerSettings], ControllerUnderTest]
FACTORIES: dict[str, Factory] = {"impl": KRaftController, "reference": ReferenceController}


def start_cluster(factory: Factory, brokers: int) -> ControllerUnderTest:
    """Every broker registered and unfenced."""
    controller = factory(SETTINGS)
    for broker_id in range(brokers):
        controller.register_broker(BrokerRegistrationRequest(broker_id, 0))
    for broker_id in range(brokers):
        epoch = next(view.epoch for view in controller.observe().brokers if view.broker_id == broker_id)
        controller.heartbeat(BrokerHeartbeatRequest(broker_id, epoch, brokers - 1))
    return controller


def create_partitions(
    controller: ControllerUnderTest, partitions: int, assign: Callable[[int], tuple[int, ...]]
) -> None:
    for partition_id in range(partitions):
        response = controller.create_partition(CreatePartitionRequest(partition_id, assign(partition_id)))
        assert response.error is KafkaError.NONE, response


def round_robin(brokers: int) -> Callable[[int], tuple[int, ...]]:
    """Replication factor 3, leaders spread evenly."""
    return lambda partition_id: tuple((partition_id + offset) % brokers for offset in range(3))


def heartbeats(controller: ControllerUnderTest, epochs: dict[int, int], offset: int) -> int:
    """Every broker heartbeats once (what a controller serves most: one per broker every
    `broker.heartbeat.interval.ms`); the requests sent."""
    for broker_id, epoch in epochs.items():
        controller.heartbeat(BrokerHeartbeatRequest(broker_id, epoch, offset))
    return len(epochs)


def bounce(controller: ControllerUnderTest, broker_id: int, incarnation: int, epochs: dict[int, int]) -> int:
    """Expire the broker's session, re-register it (unclean), let it heartbeat while it catches
    up (three rounds of every broker's heartbeats, its own behind), unfence it, and have every
    leader add it back to the ISR; the requests sent."""
    controller.expire_session(broker_id)
    epoch = controller.register_broker(BrokerRegistrationRequest(broker_id, incarnation)).broker_epoch
    epochs[broker_id] = epoch
    sent = 2
    for _ in range(3):
        others = {other: other_epoch for other, other_epoch in epochs.items() if other != broker_id}
        sent += heartbeats(controller, others, epoch)
        controller.heartbeat(BrokerHeartbeatRequest(broker_id, epoch, epoch - 1))  # not caught up yet
        sent += 1
    controller.heartbeat(BrokerHeartbeatRequest(broker_id, epoch, epoch))
    sent += 1
    view = controller.observe()
    for partition in view.partitions:
        if broker_id in partition.replicas and broker_id not in partition.isr and partition.leader >= 0:
            members = tuple(sorted({*partition.isr, broker_id}))
            request = AlterPartitionRequest(
                partition.partition,
                partition.leader,
                epochs[partition.leader],
                partition.leader_epoch,
                partition.partition_epoch,
                tuple((member, epochs[member]) for member in members),
            )
            controller.alter_partition(request)
            sent += 1
    return sent


def same_workload(brokers: int, partitions: int, bounces: int) -> None:
    print(f"1. same workload: {brokers} brokers, {partitions:,} partitions (RF 3), {bounces} broker bounces")
    print(f"   {'target':<10} {'seconds':>8}  requests")
    seconds: dict[str, float] = {}
    images = {}
    for name, factory in FACTORIES.items():
        started = time.perf_counter()
        controller = start_cluster(factory, brokers)
        create_partitions(controller, partitions, round_robin(brokers))
        requests = 2 * brokers + partitions
        epochs = {broker.broker_id: broker.epoch for broker in controller.observe().brokers}
        for number in range(bounces):
            requests += bounce(controller, number % brokers, 1 + number // brokers, epochs)
        seconds[name] = time.perf_counter() - started
        images[name] = controller.observe()
        print(f"   {name:<10} {seconds[name]:8.2f}  {requests:,}")
    same = images["impl"] == images["reference"]
    print(f"   impl is {seconds['reference'] / seconds['impl']:.1f}x faster; final images equal: {same}")


def failover(brokers: int, partitions: int, skewed: bool, repeat: int) -> None:
    layout = "all on brokers 0-2, led by 0" if skewed else f"round-robin over {brokers} brokers"
    print(f"   {partitions:,} partitions, {layout}; broker 0's session expires:")
    assign = (lambda partition_id: (0, 1, 2)) if skewed else round_robin(brokers)
    for name, factory in FACTORIES.items():
        runs: list[float] = []
        for _ in range(repeat if name == "impl" else 1):
            controller = start_cluster(factory, brokers)
            create_partitions(controller, partitions, assign)
            before = {partition.partition: partition.leader for partition in controller.observe().partitions}
            log_end = controller.observe().log_end
            started = time.process_time()
            controller.expire_session(0)
            runs.append(time.process_time() - started)
        elapsed = min(runs)
        after = controller.observe()
        elections = sum(
            1 for partition in after.partitions if partition.leader != before[partition.partition]
        )
        records = after.log_end - log_end
        verdict = (
            "" if name != "impl" else ("  (target < 1 s: met)" if elapsed < 1 else "  (target < 1 s: MISSED)")
        )
        spread = f" (best of {len(runs)}: {', '.join(f'{run:.3f}' for run in runs)})" if len(runs) > 1 else ""
        counts = f"{elections:,} elections, {records:,} records"
        print(f"     {name:<10} {elapsed:7.3f} CPU-s  {counts}{verdict}{spread}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=3, help="impl's failover runs (the best is shown)")
    arguments = parser.parse_args(argv)
    scale = 10 if arguments.quick else 1
    same_workload(brokers=20, partitions=2_000 // scale, bounces=10)
    print("2. re-election after one broker fails (one expire_session request)")
    failover(brokers=100, partitions=100_000 // scale, skewed=False, repeat=arguments.repeat)
    failover(brokers=3, partitions=100_000 // scale, skewed=True, repeat=arguments.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
