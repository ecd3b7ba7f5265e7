"""Run the replica-log conformance machine against a named target and report the outcome.

`run_conformance("impl", examples=200, seed=0)` drives `conformance.machines.log` against the
target for `examples` generated command sequences. With a seed the run is deterministic
(Hypothesis's `@seed`: the same seed gives the same sequences); the example database is never used, so a run
depends only on its arguments. A divergence comes back as `passed=False` with the minimal
failing command sequence exactly as Hypothesis printed it. A bad target string raises
`ValueError` (the CLI maps it to exit code 2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as fixed_seed
from hypothesis.errors import FlakyFailure
from hypothesis.reporting import with_reporter
from hypothesis.stateful import get_state_machine_test

from conformance.machines.log import machine_for

STEPS_PER_EXAMPLE = 40


@dataclass(frozen=True, slots=True)
class ConformanceResult:
    """The outcome of one conformance run."""

    target: str
    examples: int
    passed: bool
    failure: str | None  # the minimal failing command sequence and the divergence, when not passed
    seconds: float


def run_conformance(
    target: str, examples: int, seed: int | None = None, *, shrink: bool = True
) -> ConformanceResult:
    """Drive `target` beside the reference for `examples` command sequences.

    `shrink=False` reports the first failing sequence as found (faster; for mutation runs
    that only ask whether a divergence is detected).
    """
    if examples < 1:
        raise ValueError(f"examples must be at least 1, got {examples}")
    machine = machine_for(target)
    run_settings = settings(
        max_examples=examples,
        stateful_step_count=STEPS_PER_EXAMPLE,
        derandomize=False,  # a given seed fixes the run instead (derandomize would ignore it)
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
        phases=tuple(Phase) if shrink else tuple(phase for phase in Phase if phase is not Phase.shrink),
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
        return ConformanceResult(target, examples, False, failure, time.perf_counter() - started)
    return ConformanceResult(target, examples, True, None, time.perf_counter() - started)
