"""Model-checker throughput on every named scenario, against 2x TLC's rate (issue 10, "Scale of
the state space").

Usage: python -m bench.model_check [--repeat N] [--max-depth D] [--workers W] [--baseline REV]
                                   [--machine NAME ...] [--scenario NAME ...]

For each scenario of `kafkaspec check --all` it prints the distinct states, the transitions, and
the distinct states per second of

* one process, per CPU second of this process (`1p/cpu-s`): what the check costs, and what it
  runs at on an idle core; the wall-clock seconds are printed too (`1p s`), but on the shared
  2-core machine they also count waiting for a core;
* `--workers` processes, per wall-clock second (`Np/s`): what `kafkaspec check --workers N`
  delivers (helpers' CPU is not this process's, so only wall clock says it), with the
  speed-up over one process's wall clock (`Np x`); on a loaded machine the processes wait
  for a core, so `load` (the one-minute load average after the scenario) says how far the
  wall clocks can be read, and the CPU seconds say what idle cores would give: `Np cpu` is
  the run's critical path in CPU seconds (the caller's CPU, or the part before the fork plus
  the busiest helper's, whichever is larger), `cpu x` one process's CPU seconds over it, and
  `Np wait` the longest a process waited for the others (`-`: no level was large enough to
  fork);
* with `--baseline REV`, the same one-process run of the spec and checker as they were at git
  revision REV (`git archive REV spec`, run in a process of its own that the bench asks for one
  scenario at a time, so the two versions alternate under the same load), with the speed-up `x`
  (per CPU second). The result (states, transitions, depth, the counterexample's property and
  actions) must be identical, or the bench stops.

Every run starts with every `functools.lru_cache` in the process emptied (the spec memoizes
pure helpers), and the compiled spec's memos of the same helpers, so no run profits from another's
warm caches.
Each scenario is run `--repeat` times at least, and again until its runs add up to
`MEASURED_SECONDS` (at most `MAX_RUNS` runs); the fastest run is kept, so a check of a tenth of a
second is not judged by one hiccup of the machine.

`--floor` first checks a model that does nothing but what every spec action does at least
once: copy one frozen part (one counter of four bumped), build the new state around it, and
let the checker hash it and look it up. Its cost per transition is the least any scenario can
cost in this design (same checker, same frozen dataclasses), so at a scenario's transitions
per state it bounds the rate that scenario could reach (`floor` column: 1 / (floor seconds per
transition x the scenario's transitions per state)).

The target: TLC on the public Kafka replication spec (hachikuji/kafka-specification, KIP-320,
2-3 replicas) ran 9,000-24,000 distinct states per second on this 2-core machine; kafkaspec
must stay at least 2x that on every scenario. The verdict column says `2x best` when the
better of `1p/cpu-s` and `Np/s` reaches 48,000 (2x TLC's best rate), `2x low` when it reaches
18,000 (2x TLC's lowest), `below` otherwise. A scenario checked in a few milliseconds has no
meaningful rate (fixed costs dominate): it is marked `tiny` and counted apart. The totals say
how long `check --all` spends checking (one process, and N processes), against its 5-minute
budget on 2 cores.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec import _compiled, checker
from spec._frozen import cache_hash, fast_init, replace
from spec.machines import Scenario
from spec.scenarios import SCENARIOS

TLC_STATES_PER_SECOND = (9_000.0, 24_000.0)
"""TLC on hachikuji/kafka-specification (KIP-320, 2-3 replicas), one or two workers, this machine."""

TARGET_BEST = 2 * TLC_STATES_PER_SECOND[1]
TARGET_LOW = 2 * TLC_STATES_PER_SECOND[0]
TARGET_TOTAL_SECONDS = 300.0
"""`kafkaspec check --all` on 2 cores: under 5 minutes."""

TINY_SECONDS = 0.05
"""A check shorter than this has no meaningful rate (model building and first calls dominate)."""


def clear_caches() -> None:
    """Empty every functools.lru_cache in the process (the spec's `@memoized` helpers), and the
    compiled spec's memos of them (`kafkaspec.native`) when it runs."""
    for item in gc.get_objects():
        if isinstance(item, functools._lru_cache_wrapper):
            item.cache_clear()
    compiled_memos = sys.modules.get("spec._native_support")
    if compiled_memos is not None:
        compiled_memos.clear_memos()


BASELINE_SERVER = """
import functools, gc, json, sys, time
from spec.scenarios import SCENARIOS_BY_NAME
from spec.checker import check
for line in sys.stdin:
    name, depth = line.split()
    scenario = SCENARIOS_BY_NAME.get(name)
    if scenario is None:  # newer than the baseline
        print("null")
        sys.stdout.flush()
        continue
    for item in gc.get_objects():
        if isinstance(item, functools._lru_cache_wrapper):
            item.cache_clear()
    model = scenario.machine.model(scenario.config, scenario.invariants, scenario.witnesses)
    started = time.process_time()
    result = check(model, int(depth))
    cpu = time.process_time() - started
    violation = result.violation
    trace = None
    if violation is not None:
        trace = [violation.property_name, [repr(step.action) for step in violation.trace]]
    print(json.dumps([result.distinct_states, result.transitions, result.depth, result.complete, trace, cpu]))
    sys.stdout.flush()
"""
"""Run in the baseline tree: checks the scenarios named on stdin, one JSON line each."""


class Baseline:
    """The spec and checker of git revision `revision`, exported to a temporary directory and
    run in a process of its own that checks one scenario at a time when asked (so the two
    versions alternate scenario by scenario, under the same load)."""

    def __init__(self, revision: str) -> None:
        root = Path(__file__).resolve().parent.parent
        self.directory = tempfile.TemporaryDirectory(prefix="kafkaspec-baseline-")
        archive = subprocess.run(
            ["git", "archive", revision, "spec"], cwd=root, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", self.directory.name], input=archive, check=True)
        self.process = subprocess.Popen(
            [sys.executable, "-c", BASELINE_SERVER],
            cwd=self.directory.name,
            env={**os.environ, _compiled.SWITCH: "0"},  # the baseline is always the interpreted source
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, scenario: Scenario[Any], max_depth: int) -> tuple[tuple[Any, ...], float] | None:
        """(signature, CPU seconds) of the baseline's check of `scenario`; None when the
        baseline has no scenario of that name."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{scenario.name} {max_depth}\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if answer is None:
            return None
        states, transitions, depth, complete, trace, cpu = answer
        return (states, transitions, depth, complete, None if trace is None else (trace[0], trace[1])), cpu

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()
        self.directory.cleanup()


@dataclass(frozen=True)
class Run:
    """One check of one scenario."""

    result: Any  # the checker's CheckResult (the baseline's own class for the baseline)
    cpu: float  # CPU seconds of this process

    @property
    def per_cpu_second(self) -> float:
        return self.result.distinct_states / self.cpu if self.cpu > 0 else 0.0


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class _Counter:
    """One part of the floor model's state (a second field, as spec parts have several)."""

    value: int
    other: int = 0
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class _FloorState:
    counters: tuple[_Counter, ...]
    history: int = 0
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@fast_init
@dataclass(frozen=True, slots=True)
class _Bump:
    index: int


FLOOR_LIMIT, FLOOR_COUNTERS = 12, 4
"""The floor model: four counters from 0 to 12, any one bumped at a time (28,561 states,
105,456 transitions, 3.7 transitions per state: about the scenarios' own ratio)."""


def floor_model() -> checker.Model[_FloorState, _Bump]:
    """The least work a transition of the spec does: one part copied with one field changed
    (`replace`), a new tuple of parts and a new state, hashed and looked up by the checker;
    one invariant per new state."""
    actions = tuple(_Bump(index) for index in range(FLOOR_COUNTERS))

    def step(state: _FloorState, action: _Bump) -> _FloorState | None:
        counter = state.counters[action.index]
        if counter.value >= FLOOR_LIMIT:
            return None
        counters = state.counters
        bumped = replace(counter, value=counter.value + 1)
        return _FloorState((*counters[: action.index], bumped, *counters[action.index + 1 :]), state.history)

    initial = _FloorState(tuple(_Counter(0) for _ in range(FLOOR_COUNTERS)))
    return checker.Model((initial,), lambda state: actions, step, {"bounded": lambda state: True})


def floor_seconds_per_transition(repeat: int) -> tuple[float, Any]:
    """CPU seconds per transition of the floor model (best of `repeat`), and its result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = checker.check(floor_model(), 10**6)
        best = min(best, (time.process_time() - started) / result.transitions)
    return best, result


def run_once(scenario: Scenario[Any], check: Callable[..., Any], max_depth: int, workers: int) -> Run:
    clear_caches()
    machine = scenario.machine
    model = machine.model(scenario.config, scenario.invariants, scenario.witnesses)
    started = time.process_time()
    result = check(model, max_depth, workers=workers) if workers > 1 else check(model, max_depth)
    return Run(result, time.process_time() - started)


MEASURED_SECONDS = 1.0
"""A scenario is run `--repeat` times at least, and more (up to `MAX_RUNS`) until its runs add up
to this many seconds: the best of three 0.1-s checks still took a passing hiccup of the machine
for the scenario's rate (zk-clean-election 32,943 states per CPU-s in a whole run, 62,808-65,566
alone or late in a run of all 107 with the same caches emptied)."""

MAX_RUNS = 20


def best_run(
    repeat: int, scenario: Scenario[Any], check: Callable[..., Any], max_depth: int, workers: int = 1
) -> Run:
    def seconds(run: Run) -> float:
        return run.cpu if workers == 1 else run.result.seconds

    runs = [run_once(scenario, check, max_depth, workers) for _ in range(repeat)]
    while len(runs) < MAX_RUNS and sum(map(seconds, runs)) < MEASURED_SECONDS:
        runs.append(run_once(scenario, check, max_depth, workers))
    return min(runs, key=seconds)


def signature(result: Any) -> tuple[Any, ...]:
    """What must not depend on the checker version or the number of processes."""
    violation = result.violation
    trace = None
    if violation is not None:
        trace = (violation.property_name, [repr(step.action) for step in violation.trace])
    return (result.distinct_states, result.transitions, result.depth, result.complete, trace)


def best_baseline(
    repeat: int, baseline: Baseline, scenario: Scenario[Any], max_depth: int
) -> tuple[Any, float] | None:
    runs = [baseline.run(scenario, max_depth) for _ in range(repeat)]
    measured = [run for run in runs if run is not None]
    return min(measured, key=lambda run: run[1]) if measured else None


def critical_cpu(caller_cpu: float, processes: tuple[tuple[float, float], ...]) -> float:
    """CPU seconds on the critical path of a check in several processes: the caller's own
    CPU (before the fork, its share, the trace), or the part before the fork plus the
    busiest helper's CPU from the fork on, whichever is larger (`processes`: each process's
    CPU and waiting seconds from the fork on, the caller first; empty: no fork)."""
    if not processes:
        return caller_cpu
    before_fork = caller_cpu - processes[0][0]
    return max(caller_cpu, before_fork + max(cpu for cpu, _ in processes))


def verdict(rate: float, seconds: float) -> str:
    if seconds < TINY_SECONDS:
        return "tiny"
    if rate >= TARGET_BEST:
        return "2x best"
    if rate >= TARGET_LOW:
        return "2x low"
    return "below"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per scenario at least (more until they add up to MEASURED_SECONDS); the fastest is kept",
    )
    parser.add_argument("--max-depth", type=int, default=None, help="default: each scenario's own")
    parser.add_argument("--workers", type=int, default=2, help="processes of the parallel run (1: none)")
    parser.add_argument(
        "--baseline", default=None, help="git revision of spec/ (machines and checker) to time side by side"
    )
    parser.add_argument("--machine", action="append", default=[], help="only this machine's scenarios")
    parser.add_argument("--scenario", action="append", default=[], help="only this scenario")
    parser.add_argument(
        "--floor", action="store_true", help="measure the floor model first and bound each scenario's rate"
    )
    arguments = parser.parse_args()
    workers: int = arguments.workers
    baseline = Baseline(arguments.baseline) if arguments.baseline else None
    chosen = [
        scenario
        for scenario in SCENARIOS
        if (not arguments.machine or scenario.machine.name in arguments.machine)
        and (not arguments.scenario or scenario.name in arguments.scenario)
    ]

    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, best of {arguments.repeat}+ runs "
        f"({MEASURED_SECONDS:.0f} s of runs at least); targets: 2x TLC's best "
        f"{TARGET_BEST:,.0f} states/s, 2x TLC's low {TARGET_LOW:,.0f}"
        + (f"; baseline: spec/ at {arguments.baseline}" if baseline else "")
    )
    print(f"spec: {_compiled.describe()}")  # compiled by default where built; KAFKASPEC_NATIVE=0: the source
    floor = 0.0
    if arguments.floor:
        floor, floor_result = floor_seconds_per_transition(max(3, arguments.repeat))
        per_state = floor_result.transitions / floor_result.distinct_states
        print(
            f"floor model: {floor_result.distinct_states:,} states, {floor_result.transitions:,} "
            f"transitions, {floor * 1e6:.2f} us per transition, {1 / (floor * per_state):,.0f} "
            f"states per CPU-s at its {per_state:.2f} transitions per state"
        )
    header = (
        f"{'scenario':44} {'found':5} {'states':>8} {'trans':>8} {'1p s':>6} {'1p cpu':>6} {'1p/cpu-s':>8}"
    )
    if baseline:
        header += f" {'base/cpu-s':>10} {'x':>5}"
    if workers > 1:
        header += f" {f'{workers}p s':>6} {f'{workers}p/s':>8} {f'{workers}p x':>5} {f'{workers}p cpu':>6}"
        header += f" {'cpu x':>5} {f'{workers}p wait':>7}"
    if floor:
        header += f" {'floor':>8}"
    print(header + f" {'verdict':>8} {'load':>5}")
    totals = {"one": 0.0, "cpu": 0.0, "base": 0.0, "common": 0.0, "parallel": 0.0, "states": 0.0}
    verdicts: dict[str, list[str]] = {}
    started = time.perf_counter()
    for scenario in chosen:
        depth = scenario.max_depth if arguments.max_depth is None else arguments.max_depth
        line_rates: list[float] = []
        base_text = ""
        before = best_baseline(arguments.repeat, baseline, scenario, depth) if baseline else None
        one = best_run(arguments.repeat, scenario, checker.check, depth)
        result = one.result
        if baseline is not None:
            base_text = f" {'-':>10} {'-':>5}"  # a scenario newer than the baseline
        if before is not None:
            before_signature, before_cpu = before
            assert before_signature == signature(result), f"{scenario.name}: the versions disagree"
            totals["base"] += before_cpu
            totals["common"] += one.cpu
            speedup = before_cpu / one.cpu if one.cpu > 0 else 0.0
            base_text = f" {result.distinct_states / before_cpu:>10,.0f} {speedup:>5.2f}"
        line_rates.append(one.per_cpu_second)
        parallel_text = ""
        if workers > 1:
            together = best_run(arguments.repeat, scenario, checker.check, depth, workers)
            assert signature(together.result) == signature(result), f"{scenario.name}: the processes disagree"
            totals["parallel"] += together.result.seconds
            line_rates.append(together.result.states_per_second)
            processes = together.result.processes
            speedup = result.seconds / together.result.seconds if together.result.seconds > 0 else 0.0
            critical = critical_cpu(together.cpu, processes)
            wait_text = f"{max(wait for _, wait in processes):>7.2f}" if processes else f"{'-':>7}"
            parallel_text = (
                f" {together.result.seconds:>6.2f} {together.result.states_per_second:>8,.0f}"
                f" {speedup:>5.2f} {critical:>6.2f} {one.cpu / critical if critical > 0 else 0.0:>5.2f}"
                f" {wait_text}"
            )
        floor_text = ""
        if floor and result.transitions:
            floor_text = f" {result.distinct_states / (floor * result.transitions):>8,.0f}"
        totals["one"] += result.seconds
        totals["cpu"] += one.cpu
        totals["states"] += result.distinct_states
        found = "cex" if result.violation is not None else "none"
        judged = verdict(max(line_rates), one.cpu)
        verdicts.setdefault(judged, []).append(scenario.name)
        print(
            f"{scenario.name:44} {found:5} {result.distinct_states:>8,} {result.transitions:>8,} "
            f"{result.seconds:>6.2f} {one.cpu:>6.2f} {one.per_cpu_second:>8,.0f}"
            + base_text
            + parallel_text
            + floor_text
            + f" {judged:>8} {os.getloadavg()[0]:>5.1f}",
            flush=True,
        )
    wall = time.perf_counter() - started
    states = totals["states"]
    print(
        f"\n{len(chosen)} scenarios, {states:,.0f} distinct states. Verdicts: "
        + ", ".join(
            f"{name} {len(verdicts.get(name, []))}" for name in ("2x best", "2x low", "below", "tiny")
        )
    )
    print(
        f"check --all, 1 process: {totals['one']:.1f} s of checking ({totals['cpu']:.1f} CPU-s, "
        f"{states / totals['cpu']:,.0f} states per CPU-s overall)"
        + (
            f"; on the scenarios the baseline has: {totals['common']:.1f} CPU-s, baseline "
            f"{totals['base']:.1f} ({totals['base'] / totals['common']:.2f}x)"
            if totals["common"]
            else ""
        )
    )
    if workers > 1:
        print(
            f"check --all, {workers} processes: {totals['parallel']:.1f} s of checking "
            f"({states / totals['parallel']:,.0f} states/s overall)"
        )
    best_total = min(totals["one"], totals["parallel"]) if workers > 1 else totals["one"]
    print(
        f"target: check --all under {TARGET_TOTAL_SECONDS:.0f} s: "
        f"{'met' if best_total < TARGET_TOTAL_SECONDS else 'NOT met'} ({best_total:.1f} s); "
        f"{wall:.1f} s wall for this whole bench"
    )
    if baseline is not None:
        baseline.close()
    below = verdicts.get("below", [])
    if below:
        print("below 2x TLC's low rate: " + ", ".join(below))


if __name__ == "__main__":
    main()
