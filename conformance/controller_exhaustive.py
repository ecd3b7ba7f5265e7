"""Exhaustive conformance of the KRaft controller: every state the KRaft spec reaches within a depth.

What it is
    The random machine (`conformance.machines.controller`) samples requests; this suite
    leaves nothing to chance up to a bound. For every named KRaft scenario whose controller
    follows Kafka's current rules (`spec.controller.kraft_scenarios`, with its brokers,
    assignment, settings and bounds) a breadth-first search of the whole system model
    (`spec.controller.kraft`: the controller, its brokers and their logs) finds every
    distinct state within `depth` actions and a shortest path to it. The paths to the leaves
    of the search tree cover every state; each is replayed on a fresh target beside the
    reference (`ControllerPair`), as the requests the controller sees along it:

    ==================================  =====================================================
    spec action                         request
    ==================================  =====================================================
    BrokerStart, BrokerRegister         BrokerRegistration (the process's incarnation; the
                                        clean-shutdown file's broker epoch, or none)
    BrokerHeartbeat                     BrokerHeartbeat (the broker's epoch, the last offset it
                                        replayed, whether it wants to shut down), preceded by
                                        a heartbeat of every other live, active broker (what
                                        the controller knows of their replay positions)
    ControllerFenceBroker               the broker's session expires
    ControllerAlterPartition            the AlterPartition in flight
    ControllerReassign                  AlterPartitionReassignments to the scenario's target
    anything else                       nothing: brokers and their logs act on their own
    ==================================  =====================================================

    Every answer and the whole image are compared with the reference's, and the reference is
    checked against the spec after every action (refinement): its image (log end, every
    broker registration, the partition registration) is exactly the spec controller's, and
    the registration and AlterPartition answers are the spec's.

The prelude and offsets
    The scenarios start with every broker registered and unfenced and the partition created.
    The replay builds that image with requests: each broker registers (offsets 0..n-1, as in
    the spec), then heartbeats to be unfenced (n records the spec does not write), then the
    partition is created. So a spec offset k is offset k (k < n) or k + n on the controller;
    the suite translates the offsets and broker epochs it sends and compares.

Near misses
    In each state, the first time a replay passes through it, requests the spec refuses are
    given too: AlterPartition from the leader with an older leader epoch, an older or newer
    partition epoch, or its previous broker epoch, or naming a member (a replica outside the
    ISR if there is one) with a broker epoch that is not its registration's; from a follower
    with current epochs; a heartbeat one broker epoch off.

Which scenarios, and what the spec does not cover
    Those under Kafka's current rules: `last.known.leader=acceptable` (KAFKA-19522's fix) and
    KIP-903's broker epochs. The broker-side rules (`leader.isr`, `high.watermark`) do not
    change what the controller sees, so their scenarios stay. Known spec gap, found by the
    random machine: `build_partition_change` completing a reassignment to fewer replicas
    than min.insync.replicas keeps removed replicas in the ELR (its effective min ISR is the
    old assignment's), so `partition_state_valid` fails; the random machine reassigns to at
    least min.insync.replicas replicas, and no scenario reaches it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from conformance.controller_sut import resolve_controller_target
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.machines.controller import (
    Command,
    ControllerPair,
    ExpireSession,
)
from conformance.target_calls import DivergenceError
from reference.controller import broker_view, partition_view
from spec.controller import kraft
from spec.controller.kraft_alter_partition import AlterPartitionRule
from spec.controller.kraft_partitions import ElrRule, LastKnownLeaderRule
from spec.controller.kraft_scenarios import SCENARIOS
from spec.controller.types import (
    NO_BROKER_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    BrokerView,
    ControllerSettings,
    CreatePartitionRequest,
    KafkaError,
    ReassignPartitionRequest,
)

PARTITION = 0
"""The scenarios' one partition."""


@dataclass(frozen=True, slots=True)
class ExhaustiveResult:
    """The outcome of the exhaustive controller suite."""

    passed: bool
    failure: str | None
    states: int
    paths: int
    seconds: float


def conforming_scenarios() -> list[tuple[str, kraft.KRaftConfig]]:
    """The KRaft scenarios under Kafka's current controller rules."""
    return [
        (scenario.name, scenario.config)
        for scenario in SCENARIOS
        if isinstance(scenario.config, kraft.KRaftConfig)
        and scenario.config.last_known_leader is LastKnownLeaderRule.ACCEPTABLE
        and scenario.config.alter_partition is AlterPartitionRule.BROKER_EPOCHS
    ]


def settings_of(config: kraft.KRaftConfig) -> ControllerSettings:
    """The controller settings of a spec configuration."""
    return ControllerSettings(
        min_insync_replicas=config.min_insync_replicas,
        eligible_leader_replicas=config.elr is ElrRule.ENABLED,
    )


def search(
    config: kraft.KRaftConfig, depth: int
) -> tuple[dict[kraft.KRaftState, tuple[kraft.KRaftState, kraft.Action] | None], list[kraft.KRaftState]]:
    """Breadth-first: every state within `depth` actions with its parent and the action from
    it (None for the initial state), and the leaves of the search tree."""
    initial = kraft.initial_state(config)
    parents: dict[kraft.KRaftState, tuple[kraft.KRaftState, kraft.Action] | None] = {initial: None}
    has_child: set[kraft.KRaftState] = set()
    frontier = [initial]
    for _ in range(depth):
        following: list[kraft.KRaftState] = []
        for state in frontier:
            for action in kraft.candidate_actions(config, state):
                successor = kraft.step(config, state, action)
                if successor is not None and successor not in parents:
                    parents[successor] = (state, action)
                    has_child.add(state)
                    following.append(successor)
        frontier = following
    return parents, [state for state in parents if state not in has_child]


def path_to(
    parents: dict[kraft.KRaftState, tuple[kraft.KRaftState, kraft.Action] | None], state: kraft.KRaftState
) -> list[tuple[kraft.KRaftState, kraft.Action, kraft.KRaftState]]:
    """The (before, action, after) steps from the initial state to `state`."""
    steps: list[tuple[kraft.KRaftState, kraft.Action, kraft.KRaftState]] = []
    link = parents[state]
    while link is not None:
        before, action = link
        steps.append((before, action, state))
        state = before
        link = parents[state]
    steps.reverse()
    return steps


class Replay:
    """One path replayed on a target beside the reference."""

    def __init__(self, target: str, config: kraft.KRaftConfig, command_seconds: float) -> None:
        self.config = config
        self.brokers = config.brokers
        # Refinement here is equality with the spec's state (`check_image`), which implies its properties.
        self.pair = ControllerPair(target, settings_of(config), command_seconds, check_properties=False)

    def offset(self, spec_offset: int) -> int:
        """A spec metadata offset (or broker epoch) as the controller numbers it."""
        return spec_offset if spec_offset < self.brokers else spec_offset + self.brokers

    def prelude(self, initial: kraft.KRaftState) -> None:
        """Register and unfence every broker, create the partition."""
        brokers = range(self.brokers)
        prelude: list[Command] = [BrokerRegistrationRequest(broker_id, 0) for broker_id in brokers]
        # broker b registered at offset b; each caught up to the last registration
        prelude += [BrokerHeartbeatRequest(broker_id, broker_id, self.brokers - 1) for broker_id in brokers]
        prelude.append(
            CreatePartitionRequest(PARTITION, self.config.replicas, self.config.unclean_leader_election)
        )
        self.pair.run_batch(prelude)
        self.check_image(initial, "the prelude")

    def check_image(self, state: kraft.KRaftState, after: str) -> None:
        """Refinement: the reference's image is the spec controller's (offsets translated)."""
        reference = self.pair.reference
        controller = state.controller
        expected_log_end = self.offset(controller.log_end)
        problems: list[str] = []
        if reference.log_end != expected_log_end:
            problems.append(f"log end {reference.log_end}, spec {expected_log_end}")
        for broker_id, registration in enumerate(controller.registrations):
            if registration is None:
                continue
            expected = BrokerView(
                broker_id,
                self.offset(registration.epoch),
                registration.incarnation,
                registration.fenced,
                registration.in_controlled_shutdown,
                self.offset(registration.controlled_shutdown_offset),
            )
            actual = reference.registrations.get(broker_id)
            if actual is None or broker_view(broker_id, actual) != expected:
                problems.append(f"broker {broker_id} {actual!r}, spec {expected!r}")
        if reference.partitions.get(PARTITION) != controller.partition:
            problems.append(
                f"partition {reference.partitions.get(PARTITION)!r}, spec {controller.partition!r}"
            )
        if problems:
            raise self.pair.fail(
                f"after {after} the reference's image is not the spec's: {'; '.join(problems)}"
            )

    def commands(
        self, before: kraft.KRaftState, action: kraft.Action, after: kraft.KRaftState
    ) -> Iterator[tuple[object, object | None]]:
        """Give the requests `action` makes the controller see; yields each answer with what the
        spec expects of it (None when the spec says nothing about the answer)."""
        if isinstance(action, (kraft.BrokerStart, kraft.BrokerRegister)):
            broker = after.brokers[action.broker]
            previous = before.brokers[action.broker].clean_shutdown_epoch
            request = BrokerRegistrationRequest(action.broker, broker.incarnation, self.offset(previous))
            expected = (
                BrokerRegistrationResponse(KafkaError.NONE, self.offset(broker.broker_epoch))
                if broker.broker_epoch != kraft.NOT_REGISTERED
                else BrokerRegistrationResponse(KafkaError.DUPLICATE_BROKER_REGISTRATION, NO_BROKER_EPOCH)
            )
            yield self.pair.run(request), expected
        elif isinstance(action, kraft.BrokerHeartbeat):
            for other, broker in enumerate(before.brokers):
                registration = before.controller.registrations[other]
                if (
                    other != action.broker
                    and broker.up
                    and registration is not None
                    and registration.active
                    and registration.epoch == broker.broker_epoch
                    and not broker.wants_shutdown
                ):
                    self.pair.run(self._heartbeat(before, other))
            yield self.pair.run(self._heartbeat(before, action.broker)), None
        elif isinstance(action, kraft.ControllerFenceBroker):
            yield self.pair.run(ExpireSession(action.broker)), None
        elif isinstance(action, kraft.ControllerAlterPartition):
            in_flight = before.alter_requests[action.broker]
            answer = after.alter_answers[action.broker]
            assert in_flight is not None and answer is not None
            _, error, partition = answer
            expected_answer = AlterPartitionResponse(
                error,
                partition_view(PARTITION, partition, self.config.unclean_leader_election)
                if error is KafkaError.NONE
                else None,
            )
            translated = AlterPartitionRequest(
                PARTITION,
                in_flight.broker_id,
                self.offset(in_flight.broker_epoch),
                in_flight.leader_epoch,
                in_flight.partition_epoch,
                tuple((member, self.offset(epoch)) for member, epoch in in_flight.new_isr),
                in_flight.leader_recovery_state,
            )
            yield self.pair.run(translated), expected_answer
        elif isinstance(action, kraft.ControllerReassign):
            yield self.pair.run(ReassignPartitionRequest(PARTITION, self.config.reassignment_target)), None

    def _heartbeat(self, state: kraft.KRaftState, broker_id: int) -> BrokerHeartbeatRequest:
        broker = state.brokers[broker_id]
        return BrokerHeartbeatRequest(
            broker_id,
            self.offset(broker.broker_epoch),
            self.offset(broker.metadata_offset - 1),
            broker.wants_shutdown,
        )

    def near_misses(self, state: kraft.KRaftState) -> None:
        """Requests the spec refuses in `state`; the image must not change."""
        partition = state.controller.partition
        registrations = self.pair.reference.registrations
        requests: list[Command] = []
        if partition.has_leader and partition.leader in registrations:
            leader_broker_epoch = registrations[partition.leader].epoch
            isr = tuple((member, -1) for member in sorted(partition.isr | {partition.leader}))
            base = (
                PARTITION,
                partition.leader,
                leader_broker_epoch,
                partition.leader_epoch,
                partition.partition_epoch,
            )
            for broker_id, broker_epoch, epoch, partition_epoch in (
                (base[1], base[2], base[3] - 1, base[4]),
                (base[1], base[2], base[3], base[4] - 1),
                (base[1], base[2], base[3], base[4] + 1),
                (base[1], base[2] - 1, base[3], base[4]),
            ):
                requests.append(
                    AlterPartitionRequest(PARTITION, broker_id, broker_epoch, epoch, partition_epoch, isr)
                )
            # a member with a broker epoch that is not its registration's (KIP-903)
            joining = next((replica for replica in partition.replicas if replica not in partition.isr), None)
            member = partition.leader if joining is None else joining
            if member in registrations:
                epochs = {
                    broker_id: registrations[broker_id].epoch
                    for broker_id in partition.isr
                    if broker_id in registrations
                }
                epochs[member] = registrations[member].epoch + 1
                epochs[partition.leader] = leader_broker_epoch + (member == partition.leader)
                stale_member = tuple(sorted(epochs.items()))
                requests.append(AlterPartitionRequest(PARTITION, *base[1:], stale_member))
            requests.extend(
                AlterPartitionRequest(
                    PARTITION,
                    follower,
                    registrations[follower].epoch,
                    partition.leader_epoch,
                    partition.partition_epoch,
                    isr,
                )
                for follower in partition.replicas
                if follower != partition.leader and follower in registrations
            )
        for broker_id, registration in sorted(registrations.items()):
            requests.append(
                BrokerHeartbeatRequest(broker_id, registration.epoch - 1, self.pair.reference.log_end - 1)
            )
        self.pair.run_batch(requests)
        self.check_image(state, "near misses")


def run_exhaustive(
    target: str, depth: int, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> ExhaustiveResult:
    """Replay every state within `depth` actions of every conforming KRaft scenario on `target`."""
    resolve_controller_target(target)
    started = time.perf_counter()
    total_states = 0
    total_paths = 0
    for name, config in conforming_scenarios():
        parents, leaves = search(config, depth)
        total_states += len(parents)
        visited: set[kraft.KRaftState] = set()
        for leaf in leaves:
            total_paths += 1
            replay = Replay(target, config, command_seconds)
            initial = kraft.initial_state(config)
            done: list[str] = []
            try:
                replay.prelude(initial)
                if initial not in visited:
                    visited.add(initial)
                    replay.near_misses(initial)
                for before, action, after in path_to(parents, leaf):
                    done.append(repr(action))
                    for answer, expected in replay.commands(before, action, after):
                        if expected is not None and answer != expected:
                            raise replay.pair.fail(
                                f"{action!r}: the reference answered {answer!r}, the spec {expected!r}"
                            )
                    replay.check_image(after, repr(action))
                    if after not in visited:
                        visited.add(after)
                        replay.near_misses(after)
            except DivergenceError as error:
                path = "\n".join(f"  {number}. {step}" for number, step in enumerate(done, 1))
                failure = f"scenario {name}, spec path ({len(done)} actions):\n{path}\n{error}"
                return ExhaustiveResult(
                    False, failure, total_states, total_paths, time.perf_counter() - started
                )
    return ExhaustiveResult(True, None, total_states, total_paths, time.perf_counter() - started)
