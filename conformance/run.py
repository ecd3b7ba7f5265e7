"""Run the conformance suites against a named target and report the outcome.

Replication suites: ``log`` (`conformance.machines.log`: one replica's log, `conformance.sut`),
``partition`` (`conformance.machines.partition`: a replicated partition driven action by
action, `conformance.partition_sut`) and ``exhaustive`` (`conformance.exhaustive`: every
state the replication spec reaches within `depth` actions, replayed on the same partition
interface). The classic group coordinator's suites (``coordinator`` names both,
`conformance.coordinator_sut`): ``coordinator-exhaustive`` (`conformance.coordinator_exhaustive`:
every state of the classic group spec within `depth` actions, as the coordinator's requests)
and ``coordinator-machine`` (`conformance.machines.coordinator`: random requests and timers).
The KRaft controller's suites (``controller`` names both, `conformance.controller_sut`):
``controller-exhaustive`` (`conformance.controller_exhaustive`: every state of the KRaft spec
within `depth` actions, as the controller's requests) and ``controller-machine``
(`conformance.machines.controller`: random requests with near misses). The KIP-848
consumer-group coordinator's suites (``consumer-group`` names both,
`conformance.consumer_group_sut`): ``consumer-group-exhaustive``
(`conformance.consumer_group_exhaustive`: every state of `spec.group.consumer` within `depth`
actions in each consumer scenario, as the coordinator's requests) and
``consumer-group-machine`` (`conformance.machines.consumer_group`: random requests and timers).
The ZooKeeper-era broker's suites (``zk-broker`` names both, `conformance.zk_broker_sut`: the
broker half of the ZooKeeper-era controller protocol, where zombie controllers are fenced):
``zk-broker-exhaustive`` (`conformance.zk_broker_exhaustive`: every short sequence of control
requests around the broker's epochs) and ``zk-broker-machine``
(`conformance.machines.zk_broker`: random requests from successive controllers and zombies).
`run_conformance("impl", examples=200, seed=0)` runs every suite that applies to the target,
the random ones each for `examples` generated command sequences.

Which suites run
    ``suite="all"`` runs them all; it is the default for the built-in targets ``impl`` and
    ``reference``. A ``MODULE:FACTORY`` target implements one interface, so it names its
    suite: ``log`` (the default, as before the partition suite existed: ``FACTORY()``
    returns a `LogUnderTest`), ``partition`` or ``exhaustive`` (``FACTORY(settings)``
    returns a `PartitionUnderTest`), ``coordinator`` (``FACTORY(settings)`` returns a
    `ClassicCoordinatorUnderTest`), ``controller`` (``FACTORY(settings)`` returns a
    `ControllerUnderTest`), ``consumer-group`` (``FACTORY(settings)`` returns a
    `ConsumerGroupCoordinatorUnderTest`) or ``zk-broker`` (``FACTORY(settings)`` returns a
    `ZkBrokerUnderTest`); ``all`` with ``MODULE:FACTORY`` raises ValueError.

Determinism and failures
    With a seed a run is deterministic (Hypothesis's `@seed`: the same seed gives the same
    sequences); the example database is never used, so a run depends only on its arguments.
    A divergence comes back as `passed=False` with the minimal failing command sequence
    exactly as Hypothesis printed it. A bad target or suite raises `ValueError` (the CLI
    maps it to exit code 2).

A target that escapes
    Every call into the target runs under `conformance.guard`: a target that calls
    `sys.exit` (or raises `SystemExit`) diverges like one that raises, and a call that does
    not return within `command_seconds` (default 10 s) is stopped and reported as a
    divergence naming the command, unshrunk (each replay would wait as long again).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as fixed_seed
from hypothesis.errors import FlakyFailure
from hypothesis.reporting import with_reporter
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

from conformance import (
    consumer_group_exhaustive,
    controller_exhaustive,
    coordinator_exhaustive,
    zk_broker_exhaustive,
)
from conformance.exhaustive import DEFAULT_DEPTH, run_exhaustive
from conformance.guard import DEFAULT_COMMAND_SECONDS, TargetHungError, check_command_seconds
from conformance.machines.consumer_group import consumer_group_machine_for
from conformance.machines.controller import controller_machine_for
from conformance.machines.coordinator import coordinator_machine_for
from conformance.machines.log import machine_for
from conformance.machines.partition import partition_machine_for
from conformance.machines.zk_broker import zk_broker_machine_for

STEPS_PER_EXAMPLE = {
    "log": 40,
    "partition": 100,
    "coordinator-machine": 60,
    "controller-machine": 50,
    "consumer-group-machine": 60,
    "zk-broker-machine": 40,
}
"""Commands per generated sequence. Replication needs longer ones: the states where
implementations differ (several truncation rounds after repeated leader changes, a follower
below the leader's log start) lie a few dozen commands deep."""

SUITES = (
    "log",
    "partition",
    "exhaustive",
    "coordinator-exhaustive",
    "coordinator-machine",
    "controller-exhaustive",
    "controller-machine",
    "consumer-group-exhaustive",
    "consumer-group-machine",
    "zk-broker-exhaustive",
    "zk-broker-machine",
)
"""Every suite, in the order `all` runs them."""

SUITE_GROUPS = {
    "coordinator": ("coordinator-exhaustive", "coordinator-machine"),
    "controller": ("controller-exhaustive", "controller-machine"),
    "consumer-group": ("consumer-group-exhaustive", "consumer-group-machine"),
    "zk-broker": ("zk-broker-exhaustive", "zk-broker-machine"),
}
"""Names for several suites of one interface: ``coordinator`` is the classic group
coordinator's exhaustive suite and its random machine (`conformance.coordinator_sut`)."""

SUITE_CHOICES = (*SUITES, *SUITE_GROUPS, "all")

BUILTIN_TARGETS = ("impl", "reference")


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """The outcome of one suite."""

    suite: str
    passed: bool
    failure: str | None  # the minimal failing command sequence and the divergence, when not passed
    seconds: float


@dataclass(frozen=True, slots=True)
class ConformanceResult:
    """The outcome of one conformance run: every suite that ran, in order."""

    target: str
    examples: int  # command sequences per suite
    passed: bool
    failure: str | None  # every failing suite's report, each headed by the suite's name
    seconds: float
    suites: tuple[SuiteResult, ...] = ()

    @property
    def suite_names(self) -> tuple[str, ...]:
        """The suites that ran."""
        return tuple(result.suite for result in self.suites)


def suites_for(target: str, suite: str | None) -> tuple[str, ...]:
    """The suites to run: `suite` (``log``, ``partition`` or ``all``) or, when None, the
    default (``all`` for built-in targets, ``log`` for ``MODULE:FACTORY``)."""
    if suite is None:
        suite = "all" if target in BUILTIN_TARGETS else "log"
    if suite not in SUITE_CHOICES:
        raise ValueError(f"unknown conformance suite {suite!r}: expected one of {', '.join(SUITE_CHOICES)}")
    if suite in SUITE_GROUPS:
        return SUITE_GROUPS[suite]
    if suite != "all":
        return (suite,)
    if target not in BUILTIN_TARGETS:
        raise ValueError(
            f"conformance target {target!r}: a MODULE:FACTORY target implements one interface, "
            "so name its suite: log (FACTORY() returns a LogUnderTest), partition "
            "(FACTORY(settings) returns a PartitionUnderTest), coordinator (FACTORY(settings) "
            "returns a ClassicCoordinatorUnderTest), consumer-group (FACTORY(settings) returns a "
            "ConsumerGroupCoordinatorUnderTest), controller (FACTORY(settings) returns a "
            "ControllerUnderTest) or zk-broker (FACTORY(settings) returns a ZkBrokerUnderTest)"
        )
    return SUITES


def run_conformance(
    target: str,
    examples: int,
    seed: int | None = None,
    *,
    suite: str | None = None,
    shrink: bool = True,
    depth: int = DEFAULT_DEPTH,
    command_seconds: float = DEFAULT_COMMAND_SECONDS,
) -> ConformanceResult:
    """Drive `target` beside the reference for `examples` command sequences in each suite.

    `suite` is ``log``, ``partition``, ``exhaustive``, ``coordinator`` (or one of its two
    suites), ``all`` or None (the default for the target, see the module docstring); `depth`
    bounds the exhaustive suites. `shrink=False`
    reports the first failing sequence as found (faster; for mutation runs that only ask
    whether a divergence is detected). A call into the target that takes longer than
    `command_seconds` is stopped and reported as a divergence.
    """
    if examples < 1:
        raise ValueError(f"examples must be at least 1, got {examples}")
    check_command_seconds(command_seconds)
    names = suites_for(target, suite)
    # Resolve every machine first, so a bad target fails before any suite runs.
    machines = [_machine(name, target, command_seconds) for name in names]
    results = tuple(
        _run_exhaustive(target, depth, command_seconds, name)
        if name.endswith("exhaustive")
        else _run_machine(name, machine, examples, seed, shrink)
        for name, machine in zip(names, machines, strict=True)
    )
    failures = [
        f"{result.suite} suite:\n{result.failure}" for result in results if result.failure is not None
    ]
    return ConformanceResult(
        target=target,
        examples=examples,
        passed=all(result.passed for result in results),
        failure="\n\n".join(failures) if failures else None,
        seconds=sum(result.seconds for result in results),
        suites=results,
    )


_MACHINES: tuple[tuple[str, Callable[[str, float], type[RuleBasedStateMachine]]], ...] = (
    ("log", machine_for),
    ("coordinator", coordinator_machine_for),
    ("controller", controller_machine_for),
    ("consumer-group", consumer_group_machine_for),
    ("zk-broker", zk_broker_machine_for),
)
"""The state machine of each interface, by the suite name's prefix (the partition's otherwise)."""


def _machine(suite: str, target: str, command_seconds: float) -> type[RuleBasedStateMachine]:
    """The state machine a suite drives `target` with (the exhaustive suites replay paths
    through one too)."""
    for prefix, machine_for_target in _MACHINES:
        if suite.startswith(prefix):
            return machine_for_target(target, command_seconds)
    return partition_machine_for(target, command_seconds)


class _ExhaustiveOutcome(Protocol):
    """What every exhaustive suite's result says (each suite's own result class has more)."""

    @property
    def passed(self) -> bool: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def seconds(self) -> float: ...


_EXHAUSTIVE_RUNS: Mapping[str, Callable[[str, int, float], _ExhaustiveOutcome]] = {
    "exhaustive": lambda target, depth, seconds: run_exhaustive(target, depth, command_seconds=seconds),
    "coordinator-exhaustive": lambda target, depth, seconds: coordinator_exhaustive.run_exhaustive(
        target, depth, command_seconds=seconds
    ),
    "controller-exhaustive": lambda target, depth, seconds: controller_exhaustive.run_exhaustive(
        target, depth, command_seconds=seconds
    ),
    "consumer-group-exhaustive": lambda target, depth, seconds: consumer_group_exhaustive.run_exhaustive(
        target, depth, command_seconds=seconds
    ),
    "zk-broker-exhaustive": lambda target, depth, seconds: zk_broker_exhaustive.run_exhaustive(
        target, depth, command_seconds=seconds
    ),
}
"""Each exhaustive suite's run: (target, depth, seconds per command) -> its result."""


def _run_exhaustive(
    target: str, depth: int, command_seconds: float, suite: str = "exhaustive"
) -> SuiteResult:
    started = time.perf_counter()
    try:
        result = _EXHAUSTIVE_RUNS[suite](target, depth, command_seconds)
    except TargetHungError as hung:
        return SuiteResult(suite, False, str(hung), time.perf_counter() - started)
    return SuiteResult(suite, result.passed, result.failure, result.seconds)


def _run_machine(
    suite: str, machine: type[RuleBasedStateMachine], examples: int, seed: int | None, shrink: bool
) -> SuiteResult:
    run_settings = settings(
        max_examples=examples,
        stateful_step_count=STEPS_PER_EXAMPLE[suite],
        derandomize=False,  # a given seed fixes the run instead (derandomize would ignore it)
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        # No explain phase: it traces every line of the failing case (slow) to say which
        # lines only failing cases ran, which adds nothing to the command sequence.
        phases=tuple(
            phase for phase in Phase if phase is not Phase.explain and (shrink or phase is not Phase.shrink)
        ),
    )
    test = get_state_machine_test(machine, settings=run_settings)
    if seed is not None:
        test = fixed_seed(seed)(test)
    lines: list[str] = []
    started = time.perf_counter()
    try:
        with with_reporter(lambda value: lines.append(str(value))):
            test()
    except (AssertionError, FlakyFailure) as error:  # a divergence, even if not reproducible
        notes = [str(note) for note in getattr(error, "__notes__", [])]
        failure = "\n".join([*lines, *notes, f"{type(error).__name__}: {error}"])
        return SuiteResult(suite, False, failure, time.perf_counter() - started)
    except TargetHungError as hung:  # not shrunk: see `conformance.guard`
        failure = "\n".join([*lines, f"TargetHungError: {hung}"])
        return SuiteResult(suite, False, failure, time.perf_counter() - started)
    except ExceptionGroup as group:  # Hypothesis found several distinct divergences
        divergences, others = group.split(AssertionError)
        if divergences is None or others is not None:
            raise
        reports = [
            "\n".join([*map(str, getattr(error, "__notes__", [])), f"{type(error).__name__}: {error}"])
            for error in divergences.exceptions
        ]
        failure = "\n\n".join([*lines, *reports])
        return SuiteResult(suite, False, failure, time.perf_counter() - started)
    return SuiteResult(suite, True, None, time.perf_counter() - started)
