"""Model-checker throughput on every named scenario (issue: `check --all` < 60 s, >= 50,000 states/s).

Usage: python -m bench.model_check [--repeat N] [--max-depth D] [--workers W]

Prints, for each scenario, distinct states, transitions, states per second and the time
to the first counterexample, in one process and then with `--workers` processes (what
`kafkaspec check` uses by default), side by side in this one run, then the totals next to
their targets. Each run is repeated `--repeat` times and the fastest kept (the machines are
noisy). `cpu s` is the process CPU time of the one-process run: on a shared machine it says
how much work the run took, while `seconds` (wall clock, what the target is about) also
counts waiting for a core. The parallel speed-up needs idle cores: it is ~1 on a machine
whose other core is busy.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from spec.checker import default_workers
from spec.scenarios import SCENARIOS, ScenarioOutcome, run_scenario

TARGET_TOTAL_SECONDS = 60.0
TARGET_STATES_PER_SECOND = 50_000.0


def timed(run: Callable[[], ScenarioOutcome[Any]]) -> tuple[ScenarioOutcome[Any], float]:
    """The outcome of `run` and the CPU seconds it took."""
    started = time.process_time()
    outcome = run()
    return outcome, time.process_time() - started


def best_of(repeat: int, run: Callable[[], ScenarioOutcome[Any]]) -> tuple[ScenarioOutcome[Any], float]:
    runs = [timed(run) for _ in range(repeat)]
    return min(runs, key=lambda measured: measured[0].result.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=None, help="default: each scenario's own")
    parser.add_argument("--workers", type=int, default=max(2, default_workers()))
    arguments = parser.parse_args()
    workers = arguments.workers

    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"max depth {arguments.max_depth or 'per scenario'}, "
        f"best of {arguments.repeat}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    header = f"{'scenario':26} {'found':15} {'states':>9} {'transitions':>12} {'seconds':>8} {'states/s':>9} "
    print(
        header + f"{'cpu s':>7} {'to counterexample':>18} {f'{workers} procs s':>11} {'states/s':>9} {'x':>5}"
    )
    totals = {"states": 0, "seconds": 0.0, "cpu": 0.0, "parallel": 0.0}
    started = time.perf_counter()
    for scenario in SCENARIOS:
        outcome, cpu = best_of(arguments.repeat, partial(run_scenario, scenario, arguments.max_depth))
        together, _ = best_of(
            arguments.repeat, partial(run_scenario, scenario, arguments.max_depth, workers=workers)
        )
        result, parallel = outcome.result, together.result
        assert parallel.distinct_states == result.distinct_states, "the processes disagree"
        totals["states"] += result.distinct_states
        totals["seconds"] += result.seconds
        totals["cpu"] += cpu
        totals["parallel"] += parallel.seconds
        to_violation = (
            f"{result.seconds_to_violation:.3f} s" if result.seconds_to_violation is not None else "-"
        )
        print(
            f"{scenario.name:26} {outcome.found:15} {result.distinct_states:>9,} {result.transitions:>12,} "
            f"{result.seconds:>8.2f} {result.states_per_second:>9,.0f} {cpu:>7.2f} {to_violation:>18} "
            f"{parallel.seconds:>11.2f} {parallel.states_per_second:>9,.0f} "
            f"{result.seconds / parallel.seconds:>5.2f}" + ("" if outcome.as_expected else "  UNEXPECTED")
        )
    wall = time.perf_counter() - started
    states = totals["states"]
    for label, seconds in (("1 process", totals["seconds"]), (f"{workers} processes", totals["parallel"])):
        rate = states / seconds
        print(
            f"\ncheck --all, {label}: {seconds:.1f} s of checking; target < {TARGET_TOTAL_SECONDS:.0f} s: "
            f"{seconds / TARGET_TOTAL_SECONDS:.2f} of the budget"
        )
        print(
            f"throughput, {label}: {rate:,.0f} distinct states/s overall; "
            f"target {TARGET_STATES_PER_SECOND:,.0f}: ratio {rate / TARGET_STATES_PER_SECOND:.2f}"
        )
    print(
        f"\ncpu (1 process): {totals['cpu']:.1f} s, "
        f"{states / totals['cpu']:,.0f} distinct states per cpu second; "
        f"{wall:.1f} s wall for everything"
    )


if __name__ == "__main__":
    main()
