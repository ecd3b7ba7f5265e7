"""Hypothesis state machine: a KRaft controller under test beside the reference, request by request.

What it is
    The controller's random conformance suite (`kafkaspec conformance --suite controller`, the
    `controller-machine` half). Each test case draws `min.insync.replicas` (1-3) and whether
    KIP-966's eligible leader replicas are on, builds a fresh target
    (`conformance.controller_sut.make_controller`) and `reference.controller.ReferenceController`
    with them, creates three partitions on both, and sends both the same requests from four
    brokers about those partitions and two more:
    broker registrations (a restarted process, or a retry of a refused one; claiming a clean
    shutdown or not), heartbeats (catching up, wanting to shut down), session expiries,
    partition creation with a manual assignment, reassignments, the unclean-election
    setting, and AlterPartition requests built from the reference's current view (expand or
    shrink the ISR by one member).

    After every request the answer and the whole `observe()` image must equal the
    reference's; the first differing field is named (e.g. `partitions[1].leader_epoch`). And
    the reference is held to the spec (refinement): for every partition, the KRaft spec's
    invariants about the controller's image hold (`spec.controller.kraft`:
    `online_leader_in_isr`, `leader_not_fenced`, `partition_state_valid`,
    `isr_members_are_active`) and its step property `epochs_only_grow` holds from one
    request to the next.

Near misses and swarm testing
    Half the AlterPartition requests (a rule of their own) and a third of the heartbeats are
    *near misses*: one field off
    by one or from the wrong broker (an older leader epoch, an older or newer partition
    epoch, the requester's or a member's previous broker epoch, a follower asking, RECOVERING
    with two members, a heartbeat one epoch off), which the controller must refuse exactly as
    the spec does. Each test case leaves out up to two kinds of request (swarm testing, Groce
    et al. 2012): many expiries without registrations, or AlterPartitions without
    reassignments, reach states an even mix rarely does.

`ControllerPair` is the comparison itself; the exhaustive suite
(`conformance.controller_exhaustive`) replays spec paths through it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.controller_sut import ControllerUnderTest, make_controller, resolve_controller_target
from conformance.guard import (
    DEFAULT_COMMAND_SECONDS,
)
from conformance.target_calls import TargetCalls, bound_machine, first_difference
from reference.controller import ReferenceController
from spec.controller import kraft
from spec.controller.kraft_brokers import BrokerRegistration
from spec.controller.kraft_partitions import PartitionRegistration
from spec.controller.types import (
    NO_BROKER_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    AlterPartitionRequest,
    BrokerHeartbeatRequest,
    BrokerId,
    BrokerRegistrationRequest,
    ControllerSettings,
    ControllerView,
    CreatePartitionRequest,
    LeaderRecoveryState,
    PartitionId,
    ReassignPartitionRequest,
    UncleanElectionRequest,
)

T = TypeVar("T")

BROKERS = (0, 1, 2, 3)
PARTITIONS = (0, 1, 2, 3)
INITIAL_PARTITIONS = (0, 1, 2)


@dataclass(frozen=True, slots=True)
class ExpireSession:
    """The broker's session timed out."""

    broker_id: BrokerId


Command = (
    BrokerRegistrationRequest
    | BrokerHeartbeatRequest
    | ExpireSession
    | AlterPartitionRequest
    | CreatePartitionRequest
    | ReassignPartitionRequest
    | UncleanElectionRequest
)


def perform(controller: ControllerUnderTest, command: Command) -> object:
    """Give `command` to `controller`; its answer (None for a session expiry)."""
    if isinstance(command, BrokerRegistrationRequest):
        return controller.register_broker(command)
    if isinstance(command, BrokerHeartbeatRequest):
        return controller.heartbeat(command)
    if isinstance(command, ExpireSession):
        controller.expire_session(command.broker_id)
        return None
    if isinstance(command, AlterPartitionRequest):
        return controller.alter_partition(command)
    if isinstance(command, CreatePartitionRequest):
        return controller.create_partition(command)
    if isinstance(command, ReassignPartitionRequest):
        return controller.reassign(command)
    return controller.set_unclean_leader_election(command)


# ---------------------------------------------------------------------------------------
# Refinement: the spec's properties of the controller's image
# ---------------------------------------------------------------------------------------

IMAGE_INVARIANTS = (
    "online_leader_in_isr",
    "leader_not_fenced",
    "partition_state_valid",
    "isr_members_are_active",
)
"""`spec.controller.kraft` invariants that are about the controller's image alone."""


def spec_state(
    reference: ReferenceController, partition: PartitionRegistration
) -> tuple[kraft.KRaftConfig, kraft.KRaftState]:
    """One partition of the reference's image as a state of the one-partition KRaft spec
    (the brokers' data plane left empty: the image invariants do not read it)."""
    size = max([*reference.registrations, *partition.replicas], default=-1) + 1
    registrations: tuple[BrokerRegistration | None, ...] = tuple(
        reference.registrations.get(broker_id) for broker_id in range(size)
    )
    config = kraft.KRaftConfig(
        brokers=size,
        replicas=partition.replicas,
        min_insync_replicas=reference.settings.min_insync_replicas,
        elr=reference.elr,
    )
    controller = kraft.Controller(reference.log_end, registrations, partition)
    return config, kraft.KRaftState(controller, (), (), ())


def image_properties_violated(
    reference: ReferenceController, before: dict[PartitionId, PartitionRegistration]
) -> list[str]:
    """The image invariants that fail in some partition of `reference`, and `epochs_only_grow`
    from `before` (the partitions before the last request)."""
    broken: list[str] = []
    for partition_id, partition in sorted(reference.partitions.items()):
        config, state = spec_state(reference, partition)
        broken.extend(
            f"{name} (partition {partition_id})"
            for name in IMAGE_INVARIANTS
            if not kraft.INVARIANTS[name](config, state)
        )
        previous = before.get(partition_id)
        if previous is not None:
            _, old = spec_state(reference, previous)
            if not kraft.epochs_only_grow(old, state):
                broken.append(f"epochs_only_grow (partition {partition_id})")
    return broken


# ---------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------


class ControllerPair(TargetCalls[ControllerSettings]):
    """A target and the reference, given the same commands; every answer and image compared."""

    def __init__(
        self, target: str, settings: ControllerSettings, command_seconds: float, check_properties: bool = True
    ) -> None:
        self.settings = settings
        self.command_seconds = command_seconds
        self.check_properties = check_properties
        self.hung = False
        self.commands: list[str] = []
        self.reference = ReferenceController(settings)
        self.sut: ControllerUnderTest = self.guarded(
            "creating the controller", lambda: make_controller(target, settings), usage_errors=True
        )

    def run(self, command: Command) -> object:
        """Give `command` to both, compare the answers and the images, check the reference
        against the spec; the reference's answer."""
        before = dict(self.reference.partitions) if self.check_properties else {}
        expected = perform(self.reference, command)
        self.commands.append(f"{command!r} -> {expected!r}")
        if self.check_properties:
            broken = image_properties_violated(self.reference, before)
            if broken:
                raise self.fail(f"{command!r}: the reference breaks the spec's {', '.join(broken)}")
        answer, view = self.guarded(
            type(command).__name__, lambda: (perform(self.sut, command), self.sut.observe())
        )
        if answer != expected:
            difference = first_difference(answer, expected)
            where = f" ({difference[0]})" if difference else ""
            raise self.fail(
                f"{command!r}: target answered {answer!r}, reference answered {expected!r}{where}"
            )
        self.compare_images(view, repr(command))
        return expected

    def run_batch(self, commands: list[Command]) -> None:
        """`run` for several commands in one guarded call into the target (its watchdog costs
        a timer signal per call), the image compared once, after the last."""
        expected: list[object] = []
        for command in commands:
            expected.append(perform(self.reference, command))
            self.commands.append(f"{command!r} -> {expected[-1]!r}")
        answers, view = self.guarded(
            f"{len(commands)} requests",
            lambda: ([perform(self.sut, command) for command in commands], self.sut.observe()),
        )
        for command, answer, reference_answer in zip(commands, answers, expected, strict=True):
            if answer != reference_answer:
                raise self.fail(
                    f"{command!r}: target answered {answer!r}, reference answered {reference_answer!r}"
                )
        self.compare_images(view, f"{commands[-1]!r}")

    def compare_images(self, view: ControllerView, after: str) -> None:
        """The target's image must be the reference's."""
        difference = first_difference(view, self.reference.observe())
        if difference is not None:
            path, mine, theirs = difference
            raise self.fail(f"{path} after {after}: target has {mine!r}, reference has {theirs!r}")


# ---------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------

ASSIGNMENTS = st.permutations(BROKERS).flatmap(
    lambda order: st.integers(1, 3).map(lambda n: tuple(order[:n]))
)
"""Replica assignments: one to three distinct brokers, in any order."""

KINDS = ("register", "heartbeat", "expire", "alter", "create", "reassign", "unclean")

NEAR_MISSES = (
    "older-leader-epoch",
    "older-partition-epoch",
    "newer-partition-epoch",
    "stale-requester-epoch",
    "stale-member-epoch",
    "not-the-leader",
    "recovering-with-two",
)


class ControllerConformanceMachine(RuleBasedStateMachine):
    """Drives `make_controller(target, settings)` and the reference with the same requests."""

    target: ClassVar[str] = "reference"
    command_seconds: float = DEFAULT_COMMAND_SECONDS

    def __init__(self) -> None:
        super().__init__()
        self._pair: ControllerPair | None = None
        self.disabled: frozenset[str] = frozenset()
        self.incarnations: dict[BrokerId, int] = {}
        self.registered: dict[BrokerId, int] = {}  # the incarnation each broker registered last

    @property
    def pair(self) -> ControllerPair:
        """The target and the reference (built by `start`)."""
        assert self._pair is not None, "start() builds the target before any command"
        return self._pair

    @initialize(
        min_isr=st.integers(1, 3),
        elr=st.booleans(),
        disabled=st.sets(st.sampled_from(KINDS[1:]), max_size=2),
        assignments=st.tuples(ASSIGNMENTS, ASSIGNMENTS, ASSIGNMENTS),
        unclean=st.sampled_from((False, False, True)),
    )
    def start(
        self,
        min_isr: int,
        elr: bool,
        disabled: set[str],
        assignments: tuple[tuple[BrokerId, ...], ...],
        unclean: bool,
    ) -> None:
        """Both controllers start empty; every broker registers and catches up, and three
        partitions are created, so every test case has a cluster to work with."""
        settings = ControllerSettings(min_insync_replicas=min_isr, eligible_leader_replicas=elr)
        self._pair = ControllerPair(self.target, settings, self.command_seconds)
        self.disabled = frozenset(disabled)
        for broker_id in BROKERS:
            self.incarnations[broker_id] = 0
            self.registered[broker_id] = 0
            self.pair.run(BrokerRegistrationRequest(broker_id, 0))
            epoch = self.pair.reference.registrations[broker_id].epoch
            self.pair.run(BrokerHeartbeatRequest(broker_id, epoch, self.pair.reference.log_end - 1))
        for partition, replicas in zip(INITIAL_PARTITIONS, assignments, strict=True):
            self.pair.run(CreatePartitionRequest(partition, replicas, unclean))

    def _enabled(self, kind: str) -> bool:
        return kind not in self.disabled

    def _epoch(self, broker_id: BrokerId) -> int:
        registration = self.pair.reference.registrations.get(broker_id)
        return NO_BROKER_EPOCH if registration is None else registration.epoch

    @rule(broker_id=st.sampled_from(BROKERS), restart=st.booleans(), clean=st.booleans())
    def register(self, broker_id: BrokerId, restart: bool, clean: bool) -> None:
        """A restarted process registers (claiming a clean shutdown or not), or a refused one retries."""
        if restart or self.registered.get(broker_id) == self.incarnations[broker_id]:
            self.incarnations[broker_id] += 1
        previous = self._epoch(broker_id) if clean else NO_BROKER_EPOCH
        incarnation = self.incarnations[broker_id]
        self.pair.run(BrokerRegistrationRequest(broker_id, incarnation, previous))
        if self.pair.reference.registrations[broker_id].incarnation == incarnation:
            self.registered[broker_id] = incarnation

    @precondition(lambda self: self._pair is not None and self._enabled("heartbeat"))
    @rule(
        broker_id=st.sampled_from(BROKERS),
        lag=st.sampled_from((0, 0, 0, 1, 2, 5)),
        want_shut_down=st.sampled_from((False, False, False, True)),
        epoch_off=st.sampled_from((0, 0, 0, 0, 0, -1, 1)),
    )
    def heartbeat(self, broker_id: BrokerId, lag: int, want_shut_down: bool, epoch_off: int) -> None:
        """A heartbeat, caught up or `lag` records behind; near misses one epoch off."""
        offset = max(self.pair.reference.log_end - 1 - lag, -1)
        epoch = self._epoch(broker_id) + epoch_off
        self.pair.run(BrokerHeartbeatRequest(broker_id, epoch, offset, want_shut_down))

    @precondition(lambda self: self._pair is not None and self._enabled("expire"))
    @rule(broker_id=st.sampled_from(BROKERS))
    def expire(self, broker_id: BrokerId) -> None:
        """The broker's session times out."""
        self.pair.run(ExpireSession(broker_id))

    @precondition(lambda self: self._pair is not None and self._enabled("create"))
    @rule(
        partition=st.sampled_from((*PARTITIONS, 4)),
        replicas=ASSIGNMENTS,
        unclean=st.sampled_from((False, False, True)),
    )
    def create(self, partition: PartitionId, replicas: tuple[BrokerId, ...], unclean: bool) -> None:
        """Create a partition (one that exists: TOPIC_ALREADY_EXISTS)."""
        self.pair.run(CreatePartitionRequest(partition, replicas, unclean))

    @precondition(lambda self: self._pair is not None and self._enabled("reassign"))
    @rule(
        partition=st.sampled_from(PARTITIONS),
        replicas=ASSIGNMENTS,
    )
    def reassign(self, partition: PartitionId, replicas: tuple[BrokerId, ...]) -> None:
        """Reassign a partition, to at least min.insync.replicas replicas: a reassignment below
        it leaves removed replicas in the ELR under the spec's builder (see the report in
        `conformance.controller_exhaustive`'s docstring), which no suite should trip over."""
        spare = [broker_id for broker_id in BROKERS if broker_id not in replicas]
        while len(replicas) < self.pair.settings.min_insync_replicas:
            replicas = (*replicas, spare.pop(0))
        self.pair.run(ReassignPartitionRequest(partition, replicas))

    @precondition(lambda self: self._pair is not None and self._enabled("unclean"))
    @rule(partition=st.sampled_from(PARTITIONS), enabled=st.booleans())
    def unclean(self, partition: PartitionId, enabled: bool) -> None:
        """Set the topic's unclean.leader.election.enable."""
        self.pair.run(UncleanElectionRequest(partition, enabled))

    @precondition(lambda self: self._pair is not None and self._enabled("alter"))
    @rule(
        partition=st.sampled_from(PARTITIONS),
        member=st.sampled_from(BROKERS),
        unknown_epochs=st.booleans(),
    )
    def alter(self, partition: PartitionId, member: BrokerId, unknown_epochs: bool) -> None:
        """The leader asks to add a replica to the ISR or to remove it."""
        self._alter(partition, member, unknown_epochs, None)

    @precondition(lambda self: self._pair is not None and self._enabled("alter"))
    @rule(
        partition=st.sampled_from(PARTITIONS),
        member=st.sampled_from(BROKERS),
        unknown_epochs=st.booleans(),
        near=st.sampled_from(NEAR_MISSES),
    )
    def alter_near_miss(
        self, partition: PartitionId, member: BrokerId, unknown_epochs: bool, near: str
    ) -> None:
        """The same request with one field off: refused."""
        self._alter(partition, member, unknown_epochs, near)

    def _alter(
        self, partition: PartitionId, member: BrokerId, unknown_epochs: bool, near: str | None
    ) -> None:
        """The leader asks to add a replica (the `member`-th, cyclically) to the ISR or to
        remove it (whichever changes it), with the epochs it knows; or a near miss."""
        partitions = self.pair.reference.partitions
        registration = partitions.get(partition)
        if registration is not None and not registration.has_leader:
            # a leaderless partition answers INVALID_REQUEST to everyone: ask about one with a leader
            partition = next(
                (key for key, value in sorted(partitions.items()) if value.has_leader), partition
            )
            registration = partitions[partition]
        if registration is not None:
            member = registration.replicas[member % len(registration.replicas)]  # mostly a replica
        if registration is None:
            self.pair.run(
                AlterPartitionRequest(partition, member, self._epoch(member), 0, 0, ((member, -1),))
            )
            return
        requester = registration.leader if registration.leader >= 0 else member
        isr = set(registration.isr) ^ {member} if member != requester else set(registration.isr)
        isr.add(requester)
        epochs = {
            broker_id: UNKNOWN_BROKER_EPOCH if unknown_epochs else self._epoch(broker_id) for broker_id in isr
        }
        leader_epoch, partition_epoch = registration.leader_epoch, registration.partition_epoch
        requester_epoch = self._epoch(requester)
        recovery = LeaderRecoveryState.RECOVERED
        if near == "older-leader-epoch":
            leader_epoch -= 1
        elif near == "older-partition-epoch":
            partition_epoch -= 1
        elif near == "newer-partition-epoch":
            partition_epoch += 1
        elif near == "stale-requester-epoch":
            requester_epoch -= 1
        elif near == "stale-member-epoch":
            epochs[member] = max(self._epoch(member) - 1, 1)  # never -1, which skips the check
        elif near == "not-the-leader":
            requester = member
            requester_epoch = self._epoch(member)
        elif near == "recovering-with-two":
            recovery = LeaderRecoveryState.RECOVERING
        new_isr = tuple(sorted(epochs.items()))
        request = AlterPartitionRequest(
            partition, requester, requester_epoch, leader_epoch, partition_epoch, new_isr, recovery
        )
        self.pair.run(request)


def controller_machine_for(
    target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> type[ControllerConformanceMachine]:
    """The machine bound to `target` (``reference``, ``impl`` or ``MODULE:FACTORY``), each call
    into the target stopped after `command_seconds`."""
    return bound_machine(ControllerConformanceMachine, target, command_seconds, resolve_controller_target)
