"""Check time of every history in ../shared/histories with the local engine, next to the
times Porcupine took on the same files (recorded in the MANIFEST notes, "measured here").

Usage: python -m bench.linearizability [--repeat N]

Each history is checked `--repeat` times in this process and the fastest run is kept; the
time is the whole `verify_history` call (read, pair, split, search), which is what a user
waits for. Porcupine's numbers were measured on a machine of the same kind (Go 1.19, 2 cores).
"""

from __future__ import annotations

import argparse
import csv
import re
import time
from pathlib import Path

from spark_checks.checking import Budget
from spark_checks.engine import VerifyOptions, verify_history

HISTORIES = Path(__file__).resolve().parents[2] / "shared" / "histories"
EXPECTED = {"linearizable": "valid", "not-linearizable": "invalid"}


def manifest_rows(manifest: Path) -> list[dict[str, str]]:
    lines = [line for line in manifest.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def porcupine_milliseconds(notes: str) -> float | None:
    found = re.search(r"median ([0-9.]+) ?ms", notes)
    return float(found.group(1)) if found else None


def model_for(row: dict[str, str]) -> str:
    described = row["model"]
    if described.startswith("kv"):
        return "kv"
    if described.startswith("multi-register"):
        return "multi-register"
    return "cas-register"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    print(
        f"{'history':44} {'ops':>6} {'verdict':>8} {'expected':>9} {'kafkaspec ms':>13} {'porcupine ms':>13}"
    )
    total = 0.0
    mismatches = 0
    for manifest in sorted(HISTORIES.glob("*/MANIFEST.tsv")):
        for row in manifest_rows(manifest):
            expected = EXPECTED.get(row["expected_verdict"])
            if expected is None:
                continue
            path = manifest.parent / row["file"]
            options = VerifyOptions(model=model_for(row), engine="local", budget=Budget(max_seconds=60))
            best = float("inf")
            verdict = ""
            for _ in range(arguments.repeat):
                started = time.perf_counter()
                report = verify_history(path, options)
                best = min(best, time.perf_counter() - started)
                verdict = report.verdict.value
            total += best
            mismatches += verdict != expected
            porcupine = porcupine_milliseconds(row.get("notes", ""))
            name = f"{manifest.parent.name}/{row['file'].split('/', 1)[-1]}"
            print(
                f"{name[-44:]:44} {row['ops_count']:>6} {verdict:>8} {expected:>9} {best * 1000:>13.1f} "
                f"{porcupine if porcupine is not None else '-':>13}"
            )
    print(f"\ntotal {total:.2f} s; {mismatches} verdicts differ from the manifests")


if __name__ == "__main__":
    main()
