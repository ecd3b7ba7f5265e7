"""Fuzz `kafkaspec verify` at length: malformed histories of every format, on each engine.

Usage: python -m bench.fuzz [--seconds N] [--engines local,spark] [--formats jsonl,edn,...]
                            [--timeout S] [--keep DIR]

The inputs come from the fuzz tests' Hypothesis strategies (`tests.fuzz.strategies`: mutations
of generated histories and of the real ones in ../shared/histories); each is verified in this
process by `tests.fuzz.harness.run_verify`, as `kafkaspec verify FILE --engine E --max-seconds 5`
(the Spark engine reuses one SparkSession, started before the clock). The time is shared
evenly among the (format, engine) pairs. A table gives, per format and engine:

    runs              inputs verified
    tracebacks        internal errors (exit 70) and exceptions out of the command (target 0)
    outside contract  exit codes other than 0, 1, 2, 3, 70, and input errors that are not one
                      stderr line naming the file (target 0)
    hangs             runs stopped by the per-run watchdog, --timeout seconds (target 0)
    verdicts, input errors   how the rest ended (exit 0/1/3, exit 2)

Every input that broke the contract is kept (in --keep, or a new temporary folder) and listed
with its command and first stderr line.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

from tests.fuzz.harness import EXIT_BAD_INPUT, VERDICTS, run_verify
from tests.fuzz.strategies import CASES, FuzzCase

CHUNK = 50
"""Examples per Hypothesis run (runs repeat until the pair's time is up)."""


@dataclass
class Tally:
    """What the runs of one (format, engine) pair did."""

    runs: int = 0
    tracebacks: int = 0
    outside: int = 0
    hangs: int = 0
    verdicts: int = 0
    input_errors: int = 0
    seconds: float = 0.0
    findings: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)


def fuzz_pair(fmt: str, engine: str, seconds: float, timeout: float, keep: Path) -> Tally:
    """Verify inputs of `fmt` on `engine` for about `seconds`."""
    tally = Tally()
    started = time.monotonic()
    folder = keep / f"{fmt}-{engine}"
    folder.mkdir(parents=True, exist_ok=True)

    @settings(
        max_examples=CHUNK,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(CASES[fmt]())
    def one(case: FuzzCase) -> None:
        if time.monotonic() - started > seconds:
            return
        path = folder / f"history-{tally.runs}{case.extension}"
        path.write_bytes(case.content)
        argv = case.argv(path, engine, 5)
        run = run_verify(argv, timeout)
        tally.runs += 1
        problem = ""
        if run.hung:
            tally.hangs += 1
            problem = "hang"
        elif run.traceback:
            tally.tracebacks += 1
            problem = (run.escaped.strip().splitlines() or ["?"])[-1] or run.stderr.strip()
            if not run.escaped:
                problem = run.stderr.strip().splitlines()[-1]
        elif breach := run.breach(str(path)):
            tally.outside += 1
            problem = f"{breach}: {run.stderr.strip()[:200]}"
        elif run.code in VERDICTS:
            tally.verdicts += 1
        elif run.code == EXIT_BAD_INPUT:
            tally.input_errors += 1
        if problem:
            signature = _signature(problem, str(path))
            tally.findings[signature] += 1
            tally.examples.setdefault(signature, "kafkaspec " + " ".join(argv))
        else:
            path.unlink()
            path.with_suffix(".html").unlink(missing_ok=True)

    while time.monotonic() - started < seconds:
        one()
    tally.seconds = time.monotonic() - started
    return tally


def _signature(problem: str, path: str) -> str:
    """A finding without the file's name and the traceback file's, so alike ones group."""
    text = problem.replace(path, "FILE")
    if "traceback written to" in text:
        text = text.split("traceback written to")[0] + "traceback written to ..."
    return text[:300]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=300.0, help="total time, shared by the pairs")
    parser.add_argument("--engines", default="local", help="comma-separated: local, spark")
    parser.add_argument("--formats", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a run counts as a hang")
    parser.add_argument(
        "--keep", type=Path, default=None, help="folder for the inputs that broke the contract"
    )
    arguments = parser.parse_args()
    engines = [engine.strip() for engine in arguments.engines.split(",") if engine.strip()]
    formats = [fmt.strip() for fmt in arguments.formats.split(",") if fmt.strip()]
    unknown = [fmt for fmt in formats if fmt not in CASES] + [
        e for e in engines if e not in ("local", "spark")
    ]
    if unknown:
        parser.error(f"unknown format or engine: {', '.join(unknown)}")
    keep = arguments.keep or Path(tempfile.mkdtemp(prefix="kafkaspec-fuzz-"))
    if "spark" in engines:
        from spark_checks.spark_session import spark_session

        spark_session()  # started once, before the clock; every run reuses it (getOrCreate)
    share = arguments.seconds / (len(engines) * len(formats))
    tallies: dict[tuple[str, str], Tally] = {}
    for engine in engines:
        for fmt in formats:
            tallies[fmt, engine] = fuzz_pair(fmt, engine, share, arguments.timeout, keep)
    _print(tallies, keep)


def _print(tallies: dict[tuple[str, str], Tally], keep: Path) -> None:
    header = (
        f"{'format':16} {'engine':6} {'runs':>6} {'tracebacks':>10} {'outside contract':>16} "
        f"{'hangs':>5} {'verdicts':>8} {'input errors':>12} {'seconds':>7}"
    )
    print(header)
    total = Tally()
    for (fmt, engine), tally in tallies.items():
        print(
            f"{fmt:16} {engine:6} {tally.runs:>6,} {tally.tracebacks:>10} {tally.outside:>16} "
            f"{tally.hangs:>5} {tally.verdicts:>8,} {tally.input_errors:>12,} {tally.seconds:>7.0f}"
        )
        for name in ("runs", "tracebacks", "outside", "hangs", "verdicts", "input_errors", "seconds"):
            setattr(total, name, getattr(total, name) + getattr(tally, name))
    print(
        f"{'all':16} {'':6} {total.runs:>6,} {total.tracebacks:>10} {total.outside:>16} "
        f"{total.hangs:>5} {total.verdicts:>8,} {total.input_errors:>12,} {total.seconds:>7.0f}"
    )
    findings = [(pair, tally) for pair, tally in tallies.items() if tally.findings]
    if not findings:
        print("no input broke the contract")
        return
    print(f"inputs that broke the contract (kept in {keep}):")
    for (fmt, engine), tally in findings:
        for signature, count in tally.findings.most_common():
            print(f"  {fmt}/{engine} x{count}: {signature}")
            print(f"      e.g. {tally.examples[signature]}")


if __name__ == "__main__":
    main()
