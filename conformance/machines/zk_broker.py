"""Hypothesis state machine: a ZooKeeper-era broker under test beside the reference.

What it is
    The random half of the ZooKeeper-era broker suite (`kafkaspec conformance --suite
    zk-broker`, `zk-broker-machine`). Each test case builds a fresh target
    (`conformance.zk_broker_sut.make_zk_broker`) and `reference.zk_broker.ReferenceZkBroker`
    for broker 0, and sends both the same control requests from a succession of
    controllers: LeaderAndIsr (making broker 0 leader or follower, or leaving it out of the
    assignment), StopReplica (with and without deleting the log) and UpdateMetadata, each
    from the current controller or from a zombie (an older controller epoch), addressed to
    the current incarnation of the broker or to an older one (KIP-380), with leader epochs
    around the broker's own; controller failovers and broker restarts happen between them.

    After every command the answer and the whole `observe()` view must equal the
    reference's; the first differing field is named. The reference is held to the spec
    (refinement): a request the broker accepted never carries an older controller epoch than
    the newest it had seen (`spec.controller.zk_controller`'s
    `brokers_never_obey_an_older_controller`), and within one incarnation the applied leader
    epoch only grows except when StopReplica deletes the partition
    (`leader_epochs_only_grow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.guard import (
    DEFAULT_COMMAND_SECONDS,
)
from conformance.target_calls import TargetCalls, bound_machine, first_difference
from conformance.zk_broker_sut import ZkBrokerUnderTest, make_zk_broker, resolve_zk_broker_target
from reference.zk_broker import ReferenceZkBroker
from spec.controller.types import (
    ControlRequest,
    ControlResponse,
    KafkaError,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    ZkBrokerSettings,
    ZkBrokerView,
)

T = TypeVar("T")

BROKER = 0
OTHERS = (1, 2)
UNKNOWN_BROKER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class Restart:
    """The broker's process stops and starts again, registered with `broker_epoch`."""

    broker_epoch: int


Command = ControlRequest | Restart


def perform(broker: ZkBrokerUnderTest, command: Command) -> ControlResponse | None:
    """Give `command` to `broker`; its answer (None for a restart)."""
    if isinstance(command, Restart):
        broker.restart(command.broker_epoch)
        return None
    return broker.handle(command)


def refinement_broken(
    before: ZkBrokerView, command: Command, answer: ControlResponse | None, after: ZkBrokerView
) -> str | None:
    """Which of the spec's broker properties the reference's step from `before` to `after` breaks."""
    if isinstance(command, Restart) or answer is None:
        return None
    if answer.error is KafkaError.NONE and command.controller_epoch < before.controller_epoch:
        return "brokers_never_obey_an_older_controller"
    deleted = after.log_deleted > before.log_deleted
    if after.leader_epoch < before.leader_epoch and not deleted:
        return "leader_epochs_only_grow"
    return None


class ZkBrokerPair(TargetCalls[ZkBrokerSettings]):
    """A target and the reference, given the same commands; every answer and view compared."""

    def __init__(self, target: str, settings: ZkBrokerSettings, command_seconds: float) -> None:
        self.settings = settings
        self.command_seconds = command_seconds
        self.hung = False
        self.commands: list[str] = []
        self.reference = ReferenceZkBroker(settings)
        self.sut: ZkBrokerUnderTest = self.guarded(
            "creating the broker", lambda: make_zk_broker(target, settings), usage_errors=True
        )

    def run(self, command: Command) -> ControlResponse | None:
        """Give `command` to both, compare the answers and the views, check the reference
        against the spec's properties; the reference's answer."""
        before = self.reference.observe()
        expected = perform(self.reference, command)
        self.commands.append(f"{command!r} -> {expected!r}")
        broken = refinement_broken(before, command, expected, self.reference.observe())
        if broken is not None:
            raise self.fail(f"{command!r}: the reference breaks the spec's {broken}")
        answer, view = self.guarded(
            type(command).__name__, lambda: (perform(self.sut, command), self.sut.observe())
        )
        if answer != expected:
            raise self.fail(f"{command!r}: target answered {answer!r}, reference answered {expected!r}")
        difference = first_difference(view, self.reference.observe())
        if difference is not None:
            path, mine, theirs = difference
            raise self.fail(f"{path} after {command!r}: target has {mine!r}, reference has {theirs!r}")
        return expected


class ZkBrokerConformanceMachine(RuleBasedStateMachine):
    """Drives `make_zk_broker(target, settings)` and the reference with the same commands."""

    target: ClassVar[str] = "reference"
    command_seconds: float = DEFAULT_COMMAND_SECONDS

    def __init__(self) -> None:
        super().__init__()
        self._pair: ZkBrokerPair | None = None
        self.controller_epoch = 1  # the current controller's; a zombie's is older
        self.broker_epoch = 1  # the current incarnation's registration
        self.leader_epoch = 0  # the newest leader epoch a controller has written

    @property
    def pair(self) -> ZkBrokerPair:
        """The target and the reference (built by `start`)."""
        assert self._pair is not None, "start() builds the target before any command"
        return self._pair

    @initialize(broker_epoch=st.integers(1, 5))
    def start(self, broker_epoch: int) -> None:
        """Both brokers start, registered with the same broker epoch."""
        self.broker_epoch = broker_epoch
        self._pair = ZkBrokerPair(self.target, ZkBrokerSettings(BROKER, broker_epoch), self.command_seconds)

    def _epochs(self, controller_off: int, broker_epoch_kind: str) -> tuple[int, int]:
        controller_epoch = max(self.controller_epoch + controller_off, 0)
        broker_epoch = {
            "own": self.broker_epoch,
            "older": self.broker_epoch - 1,
            "newer": self.broker_epoch + 1,
            "unknown": UNKNOWN_BROKER_EPOCH,
        }[broker_epoch_kind]
        return controller_epoch, broker_epoch

    @rule(
        controller_off=st.sampled_from((0, 0, 0, -1, -2, 1)),
        broker_epoch_kind=st.sampled_from(("own", "own", "own", "older", "newer", "unknown")),
        epoch_off=st.sampled_from((1, 1, 1, 0, -1, 2)),
        leader=st.sampled_from((BROKER, BROKER, *OTHERS)),
        in_assignment=st.sampled_from((True, True, True, False)),
        isr_size=st.integers(1, 3),
        zk_version=st.integers(0, 3),
    )
    def leader_and_isr(
        self,
        controller_off: int,
        broker_epoch_kind: str,
        epoch_off: int,
        leader: int,
        in_assignment: bool,
        isr_size: int,
        zk_version: int,
    ) -> None:
        """A LeaderAndIsr: leader epoch around the newest written, leader broker 0 or another."""
        controller_epoch, broker_epoch = self._epochs(controller_off, broker_epoch_kind)
        replicas = (BROKER, *OTHERS) if in_assignment else OTHERS
        if leader not in replicas:
            leader = replicas[0]
        leader_epoch = max(self.leader_epoch + epoch_off, 0)
        self.leader_epoch = max(self.leader_epoch, leader_epoch)
        isr = tuple(sorted({leader, *replicas[:isr_size]}))
        self.pair.run(
            LeaderAndIsrRequest(
                controller_epoch, broker_epoch, leader, leader_epoch, isr, zk_version, replicas
            )
        )

    @rule(
        controller_off=st.sampled_from((0, 0, -1, 1)),
        broker_epoch_kind=st.sampled_from(("own", "own", "older", "unknown")),
        delete=st.booleans(),
    )
    def stop_replica(self, controller_off: int, broker_epoch_kind: str, delete: bool) -> None:
        """A StopReplica, deleting the log or not."""
        controller_epoch, broker_epoch = self._epochs(controller_off, broker_epoch_kind)
        self.pair.run(StopReplicaRequest(controller_epoch, broker_epoch, delete))

    @rule(
        controller_off=st.sampled_from((0, 0, -1, 1)),
        broker_epoch_kind=st.sampled_from(("own", "own", "older", "unknown")),
    )
    def update_metadata(self, controller_off: int, broker_epoch_kind: str) -> None:
        """An UpdateMetadata (a new controller's first words to a broker)."""
        controller_epoch, broker_epoch = self._epochs(controller_off, broker_epoch_kind)
        self.pair.run(UpdateMetadataRequest(controller_epoch, broker_epoch))

    @rule()
    def failover(self) -> None:
        """A new controller is elected; the old one may live on as a zombie."""
        self.controller_epoch += 1

    @rule(step=st.integers(1, 2))
    def restart(self, step: int) -> None:
        """The broker restarts and registers anew (a broker epoch is a czxid: it grows)."""
        self.broker_epoch += step
        self.pair.run(Restart(self.broker_epoch))


def zk_broker_machine_for(
    target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> type[ZkBrokerConformanceMachine]:
    """The machine bound to `target` (``reference``, ``impl`` or ``MODULE:FACTORY``), each call
    into the target stopped after `command_seconds`."""
    return bound_machine(ZkBrokerConformanceMachine, target, command_seconds, resolve_zk_broker_target)
