"""Model-checker throughput on every named scenario (issue: `check --all` < 60 s, >= 50,000 states/s).

Usage: python -m bench.model_check [--repeat N] [--max-depth D]

Prints, for each scenario, distinct states, transitions, states per second and the time
to the first counterexample, then the totals next to their targets. Each scenario is run
`--repeat` times in this one process and the fastest run is kept (the machines are noisy).
`cpu s` is the process CPU time of that run: on a shared machine it says how much work the
run took, while `seconds` (wall clock, what the target is about) also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from functools import partial

from spec.scenarios import DEFAULT_MAX_DEPTH, SCENARIOS, ScenarioOutcome, run_scenario

TARGET_TOTAL_SECONDS = 60.0
TARGET_STATES_PER_SECOND = 50_000.0


def timed(run: Callable[[], ScenarioOutcome]) -> tuple[ScenarioOutcome, float]:
    """The outcome of `run` and the CPU seconds it took."""
    started = time.process_time()
    outcome = run()
    return outcome, time.process_time() - started


def best_of(repeat: int, run: Callable[[], ScenarioOutcome]) -> tuple[ScenarioOutcome, float]:
    runs = [timed(run) for _ in range(repeat)]
    return min(runs, key=lambda measured: measured[0].result.seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--max-depth", type=int, default=DEFAULT_MAX_DEPTH)
    arguments = parser.parse_args()

    print(
        f"python {platform.python_version()} on {platform.machine()}, max depth {arguments.max_depth}, "
        f"best of {arguments.repeat}"
    )
    header = f"{'scenario':26} {'found':15} {'states':>9} {'transitions':>12} {'seconds':>8} {'states/s':>9} "
    print(header + f"{'cpu s':>7} {'to counterexample':>18}")
    total_states = 0
    total_seconds = 0.0
    total_cpu = 0.0
    started = time.perf_counter()
    for scenario in SCENARIOS:
        outcome, cpu = best_of(arguments.repeat, partial(run_scenario, scenario, arguments.max_depth))
        result = outcome.result
        total_states += result.distinct_states
        total_seconds += result.seconds
        total_cpu += cpu
        to_violation = (
            f"{result.seconds_to_violation:.3f} s" if result.seconds_to_violation is not None else "-"
        )
        print(
            f"{scenario.name:26} {outcome.found:15} {result.distinct_states:>9,} {result.transitions:>12,} "
            f"{result.seconds:>8.2f} {result.states_per_second:>9,.0f} {cpu:>7.2f} {to_violation:>18}"
            + ("" if outcome.as_expected else "  UNEXPECTED")
        )
    wall = time.perf_counter() - started
    rate = total_states / total_seconds
    print(
        f"\ncheck --all: {total_seconds:.1f} s of checking ({wall:.1f} s wall for all repeats); "
        f"target < {TARGET_TOTAL_SECONDS:.0f} s: {total_seconds / TARGET_TOTAL_SECONDS:.2f} of the budget"
    )
    print(
        f"throughput: {rate:,.0f} distinct states/s overall; target {TARGET_STATES_PER_SECOND:,.0f}: "
        f"ratio {rate / TARGET_STATES_PER_SECOND:.2f}"
    )
    print(f"cpu: {total_cpu:.1f} s, {total_states / total_cpu:,.0f} distinct states per cpu second")


if __name__ == "__main__":
    main()
