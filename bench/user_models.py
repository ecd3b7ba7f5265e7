"""What a user's model costs against the built-in one, and what the power-set construction for
nondeterministic models costs (`spark_checks.user_models`).

Usage: python -m bench.user_models [--repeat N]

For Knossos's cas-register histories and Porcupine's kv logs (c01, c10, c50-ok) in ../shared/histories,
each history is read and paired once; then its calls are checked (`check_linearizability`, the
search alone: without the decision procedure for traceable values, which only built-in models
have) with the built-in model, the same model written as a user's deterministic model,
and as a nondeterministic one (a step returns a list of one state), `--repeat` times each, the
fastest kept. The models below are written as a user writes them (`kafkaspec.model`).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from kafkaspec.model import UNKNOWN, Input
from spark_checks.history import pair_calls
from spark_checks.linearizability import check_linearizability, overall_verdict
from spark_checks.readers import open_history

HISTORIES = Path(__file__).resolve().parents[2] / "shared" / "histories"


class CasRegister:
    """Knossos's cas-register, 0 initially; a nil read tells nothing."""

    def init(self) -> Any:
        return 0

    def step(self, state: Any, input: Input, output: Any) -> Any:
        if input.f == "write":
            return input.value
        if input.f == "cas":
            return input.value[1] if state == input.value[0] else None
        return state if output is UNKNOWN or output is None or output == state else None


class NondeterministicCasRegister(CasRegister):
    """The same object as a nondeterministic model: every step has at most one next state."""

    nondeterministic = True

    def init(self) -> Any:
        return [0]

    def step(self, state: Any, input: Input, output: Any) -> Any:
        after = CasRegister.step(self, state, input, output)
        return [] if after is None else [after]


class KeyValue:
    """Porcupine's kvModel, one part per key."""

    def partition(self, input: Input) -> Any:
        return input.key

    def init(self) -> str:
        return ""

    def step(self, state: str, input: Input, output: Any) -> str | None:
        if input.f == "get":
            return state if output is UNKNOWN or output == state else None
        value: str = input.value
        return value if input.f == "put" else state + value


class NondeterministicKeyValue(KeyValue):
    """The same object as a nondeterministic model."""

    nondeterministic = True

    def init(self) -> Any:
        return [""]

    def step(self, state: str, input: Input, output: Any) -> Any:
        after = KeyValue.step(self, state, input, output)
        return [] if after is None else [after]


KV_LOGS = ("c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-ok")
MODULE = "bench.user_models"

SUITES: list[tuple[str, list[Path], tuple[str, str, str]]] = [
    (
        "knossos cas-register",
        sorted((HISTORIES / "knossos" / "data" / "cas-register").glob("*/*.edn")),
        ("cas-register", f"{MODULE}:CasRegister", f"{MODULE}:NondeterministicCasRegister"),
    ),
    (
        "porcupine kv c01, c10, c50-ok",
        [HISTORIES / "porcupine" / "test_data" / "kv" / f"{name}.txt" for name in KV_LOGS],
        ("kv", f"{MODULE}:KeyValue", f"{MODULE}:NondeterministicKeyValue"),
    ),
]


def best_seconds(calls: list[Any], model: str, conventions: dict[str, Any], repeat: int) -> tuple[float, str]:
    best = float("inf")
    verdict = ""
    for _ in range(repeat):
        started = time.perf_counter()
        results = check_linearizability(calls, model, conventions, traceable_first=False)
        best = min(best, time.perf_counter() - started)
        verdict = overall_verdict(results).value
    return best, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    for title, files, models in SUITES:
        times: dict[str, list[float]] = {model: [] for model in models}
        for path in files:
            info, operations = open_history(path)
            calls = list(pair_calls(operations))
            verdicts = set()
            for model in models:
                seconds, verdict = best_seconds(calls, model, dict(info.conventions), repeat)
                times[model].append(seconds)
                verdicts.add(verdict)
            if len(verdicts) != 1:
                raise SystemExit(f"{path.name}: the models disagree: {verdicts}")
        print(f"{title}: {len(files)} histories, search time per history (best of {repeat})")
        for model in models:
            total, median = sum(times[model]), statistics.median(times[model])
            print(f"  {model:55} total {total * 1000:8.1f} ms  median {median * 1000:7.2f} ms")


if __name__ == "__main__":
    main()
