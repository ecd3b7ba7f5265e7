"""The system under test: what a KRaft controller must offer to be checked for conformance.

What it is
    `ControllerUnderTest` is the typed Protocol the controller suites drive
    (`conformance.machines.controller`, `conformance.controller_exhaustive`): what the
    controller of a Kafka-compatible cluster implements, as Kafka's `QuorumController` does
    with `ClusterControlManager` and `ReplicationControlManager`. One method per request it
    answers, taking and returning the plain types of `spec.controller.types`:

    * `register_broker` (`BrokerRegistration`): DUPLICATE_BROKER_REGISTRATION while another
      incarnation's registration is active; otherwise the new broker epoch, which is the
      offset of its registration record, the broker starting fenced. A broker whose
      `previous_broker_epoch` is not its last registration's (it did not shut down cleanly)
      leaves every ISR and ELR first (KIP-966, KAFKA-18106);
    * `heartbeat` (`BrokerHeartbeat`): STALE_BROKER_EPOCH for another epoch; otherwise the
      broker's control state moves as `BrokerHeartbeatManager` says (unfence once caught up to
      its registration; controlled shutdown; shutdown now), with the partition changes each
      move makes;
    * `expire_session(broker)`: the broker's session timed out: it is fenced, leaves every
      ISR, and the partitions it led elect (`handleBrokerFenced`);
    * `alter_partition` (`AlterPartition`, one partition): validated in Kafka's order
      (STALE_BROKER_EPOCH, NOT_CONTROLLER, FENCED_LEADER_EPOCH, INVALID_REQUEST,
      INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA), then the change; the answer carries the
      partition as the change left it;
    * `create_partition`, `reassign`, `set_unclean_leader_election`: a partition with a
      manual assignment, a reassignment (completed by the AlterPartition that brings the ISR
      up to the target), the topic's `unclean.leader.election.enable`;
    * `observe()`: the image (`ControllerView`): every broker registration (epoch,
      incarnation, fenced, in controlled shutdown and since which offset) and partition
      registration (replicas, ISR, ELR, last known ELR, leader, leader epoch, partition
      epoch, reassignment, leader recovery state), and the metadata log's end offset.

    Every change is a record at the next offset of the metadata log: one per broker
    registration change, one per partition change (`PartitionChangeBuilder`: a record that
    would change nothing is not written), one per partition created, one per config change.
    So the log end and the broker epochs are part of what must agree.

Plugging in your own
    ``--target MODULE:FACTORY --suite controller``: ``FACTORY(settings)`` takes a
    `ControllerSettings` (`min.insync.replicas`, eligible leader replicas on or off) and
    returns a fresh controller with no broker and no partition, whose metadata log is
    empty (the first record is at offset 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from conformance.sut import resolve_factory
from reference.controller import ReferenceController
from spec.controller.types import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerId,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    ControllerResponse,
    ControllerSettings,
    ControllerView,
    CreatePartitionRequest,
    ReassignPartitionRequest,
    UncleanElectionRequest,
)


@runtime_checkable
class ControllerUnderTest(Protocol):
    """A KRaft controller (see the module docstring)."""

    def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        """Handle a BrokerRegistration."""
        ...

    def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        """Handle a BrokerHeartbeat."""
        ...

    def expire_session(self, broker_id: BrokerId) -> None:
        """The broker's session timed out (`broker.session.timeout.ms` without a heartbeat)."""
        ...

    def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """Handle one partition of an AlterPartition."""
        ...

    def create_partition(self, request: CreatePartitionRequest) -> ControllerResponse:
        """Create a partition with a manual assignment."""
        ...

    def reassign(self, request: ReassignPartitionRequest) -> ControllerResponse:
        """Reassign a partition."""
        ...

    def set_unclean_leader_election(self, request: UncleanElectionRequest) -> ControllerResponse:
        """Set the partition's topic's unclean.leader.election.enable."""
        ...

    def observe(self) -> ControllerView:
        """The image as it is now."""
        ...


ControllerFactory = Callable[[ControllerSettings], ControllerUnderTest]

IMPL_MODULE = "conformance.impl_controller"
"""Where kafkaspec's optimized controller adapter lives (imported only when asked for)."""


def _reference_factory(settings: ControllerSettings) -> ControllerUnderTest:
    return ReferenceController(settings)


def resolve_controller_target(target: str) -> ControllerFactory:
    """The factory named by `target`: ``reference``, ``impl`` or ``MODULE:FACTORY``; a
    ValueError saying what is accepted for anything else."""
    checked: ControllerFactory = resolve_factory(
        target,
        _reference_factory,
        (IMPL_MODULE, "ImplController", "the optimized controller"),
        "it must take ControllerSettings and return a ControllerUnderTest",
    )
    return checked


def make_controller(target: str, settings: ControllerSettings) -> ControllerUnderTest:
    """A fresh controller for `target`, checked to implement `ControllerUnderTest`."""
    made = resolve_controller_target(target)(settings)
    if not isinstance(made, ControllerUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, "
            "not a ControllerUnderTest"
        )
    return made
