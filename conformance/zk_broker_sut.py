"""The system under test: what a ZooKeeper-era broker must offer to be checked for conformance.

What it is
    `ZkBrokerUnderTest` is the typed Protocol the ZooKeeper-era broker suites drive
    (`conformance.machines.zk_broker`, `conformance.zk_broker_exhaustive`): the broker half of
    the ZooKeeper-era controller protocol, which is where a zombie controller is fenced. A
    broker that implements it answers the three control requests of a ZooKeeper-mode
    controller (Kafka's `KafkaApis.handleLeaderAndIsrRequest`, `handleStopReplicaRequest`,
    `handleUpdateMetadataRequest`), one partition each, with the plain types of
    `spec.controller.types`:

    * `handle(request)` (`LeaderAndIsrRequest`, `StopReplicaRequest`,
      `UpdateMetadataRequest`): the top-level error (STALE_BROKER_EPOCH for a broker epoch
      older than its own, KIP-380; STALE_CONTROLLER_EPOCH for a controller epoch older than
      the newest it has seen) and, for LeaderAndIsr, the partition's error (an older leader
      epoch: STALE_CONTROLLER_EPOCH; a newer one that leaves the broker out of the
      assignment: UNKNOWN_TOPIC_OR_PARTITION);
    * `restart(broker_epoch)`: the process stops and starts again, registered with a new
      broker epoch; it keeps only its disk;
    * `observe()`: `ZkBrokerView`, what it knows of the controller and the partition.

Plugging in your own
    ``--target MODULE:FACTORY --suite zk-broker``: ``FACTORY(settings)`` takes a
    `ZkBrokerSettings` (its broker id and the broker epoch its registration got) and returns
    a broker that has just started: it has seen no controller (epoch 0) and hosts nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from conformance.sut import resolve_factory
from reference.zk_broker import ReferenceZkBroker
from spec.controller.types import ControlRequest, ControlResponse, ZkBrokerSettings, ZkBrokerView


@runtime_checkable
class ZkBrokerUnderTest(Protocol):
    """A ZooKeeper-era broker's control plane (see the module docstring)."""

    def handle(self, request: ControlRequest) -> ControlResponse:
        """Handle a LeaderAndIsr, StopReplica or UpdateMetadata for the partition."""
        ...

    def restart(self, broker_epoch: int) -> None:
        """Stop and start again, registered with `broker_epoch`."""
        ...

    def observe(self) -> ZkBrokerView:
        """What the broker knows now."""
        ...


ZkBrokerFactory = Callable[[ZkBrokerSettings], ZkBrokerUnderTest]

IMPL_MODULE = "conformance.impl_zk_broker"
"""Where kafkaspec's own ZooKeeper-era broker adapter lives (imported only when asked for)."""


def _reference_factory(settings: ZkBrokerSettings) -> ZkBrokerUnderTest:
    return ReferenceZkBroker(settings)


def resolve_zk_broker_target(target: str) -> ZkBrokerFactory:
    """The factory named by `target`: ``reference``, ``impl`` or ``MODULE:FACTORY``; a
    ValueError saying what is accepted for anything else."""
    checked: ZkBrokerFactory = resolve_factory(
        target,
        _reference_factory,
        (IMPL_MODULE, "ImplZkBroker", "the ZooKeeper-era broker"),
        "it must take ZkBrokerSettings and return a ZkBrokerUnderTest",
    )
    return checked


def make_zk_broker(target: str, settings: ZkBrokerSettings) -> ZkBrokerUnderTest:
    """A fresh broker for `target`, checked to implement `ZkBrokerUnderTest`."""
    made = resolve_zk_broker_target(target)(settings)
    if not isinstance(made, ZkBrokerUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, not a ZkBrokerUnderTest"
        )
    return made
