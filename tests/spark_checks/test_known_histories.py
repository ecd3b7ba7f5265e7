"""Every history in ../shared/histories/*/MANIFEST.tsv gets its upstream verdict.

The manifests list Porcupine's test data (102 Jepsen etcd logs, 6 kv logs) and Knossos's
(cas-register and multi-register EDN histories) with the verdicts their own test suites
assert. Each file is read with `spark_checks.readers.open_history` (format sniffed) and
checked with the model the manifest names and the conventions the reader reports, which
must be the source's: Knossos drops failed operations and leaves nil reads unconstrained,
Porcupine's etcd parser treats a failed CAS as "returned false" and a nil read as "absent".

Like Porcupine's own tests, a partitioned history stops at the first partition that is not
linearizable (`stop_on_invalid`): c50-bad has keys neither Porcupine nor this checker decides
in 20 s, and one illegal key settles the verdict. `test_c50_bad_every_key` checks them all
with a short budget and expects those keys `unknown`, never a guess.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from spark_checks.history import Call, CheckResult, Verdict, pair_calls
from spark_checks.linearizability import check_linearizability, overall_verdict
from spark_checks.readers import open_history

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
EXPECTED = {"linearizable": Verdict.VALID, "not-linearizable": Verdict.INVALID}

# What each source's conventions must be (manifest model text prefix -> model, conventions).
KNOSSOS = {"nil_read": "unconstrained", "failed_cas": "did-not-happen"}
ETCD = {"initial": None, "nil_read": "absent", "failed_cas": "no-effect"}
MODEL_TEXTS: list[tuple[str, str, dict[str, Any]]] = [
    ("etcd-cas-register", "cas-register", ETCD),
    ("cas-register (knossos", "cas-register", {**KNOSSOS, "initial": 0}),
    ("multi-register", "multi-register", {**KNOSSOS, "initial": 0}),
    ("kv-append", "kv", {"initial": ""}),
    ("mutex", "mutex", KNOSSOS),
    ("fifo-queue", "fifo-queue", KNOSSOS),
    ("register", "register", {}),
]


class Row(NamedTuple):
    path: Path
    model_text: str
    expected: str


def manifest_rows() -> list[Row]:
    rows: list[Row] = []
    for manifest in sorted(HISTORIES.glob("*/MANIFEST.tsv")):
        lines = [
            line for line in manifest.read_text(encoding="utf-8").splitlines() if not line.startswith("#")
        ]
        rows.extend(
            Row(manifest.parent / record["file"], record["model"], record["expected_verdict"])
            for record in csv.DictReader(lines, delimiter="\t")
        )
    return rows


ROWS = manifest_rows()


def model_for(model_text: str) -> tuple[str, dict[str, Any]]:
    for prefix, model, conventions in MODEL_TEXTS:
        if model_text.startswith(prefix):
            return model, conventions
    raise AssertionError(f"no model for manifest model text {model_text!r}")


def check_file(path: Path, model: str, **options: Any) -> tuple[list[CheckResult], dict[str, Any], float]:
    """Read and check one history; returns the results, the conventions and the check time."""
    info, operations = open_history(path)
    calls: list[Call] = list(pair_calls(operations, str(path)))
    started = time.perf_counter()
    results = check_linearizability(calls, model, info.conventions, **options)
    return results, dict(info.conventions), time.perf_counter() - started


def test_both_manifests_are_there() -> None:
    sources = {row.path.relative_to(HISTORIES).parts[0] for row in ROWS}
    assert sources == {"knossos", "porcupine"}
    assert len(ROWS) >= 100


@pytest.mark.parametrize("row", ROWS, ids=[str(row.path.relative_to(HISTORIES)) for row in ROWS])
def test_known_verdict(row: Row) -> None:
    if row.expected not in EXPECTED:
        pytest.skip(f"manifest verdict {row.expected!r}: nothing to assert")
    model, expected_conventions = model_for(row.model_text)
    results, conventions, seconds = check_file(row.path, model, max_seconds=30.0, stop_on_invalid=True)
    for name, value in expected_conventions.items():
        assert conventions[name] == value, f"reader convention {name}"
    assert all(result.conventions == results[0].conventions for result in results)
    verdict = overall_verdict(results)
    assert verdict is EXPECTED[row.expected], [(r.partition, r.verdict, r.evidence) for r in results][:3]
    assert seconds < 10, f"checking took {seconds:.1f} s"


def test_c50_bad_every_key() -> None:
    # Without stopping, every key is searched: most are refuted quickly; the others are too
    # hard for a 0.5 s budget (Porcupine leaves 4 keys undecided after 20 s each) and come
    # back unknown, which does not change the verdict of the whole.
    path = HISTORIES / "porcupine" / "test_data" / "kv" / "c50-bad.txt"
    results, _, seconds = check_file(path, "kv", max_seconds=0.5)
    verdicts = {result.partition: result.verdict for result in results}
    assert len(verdicts) == 10
    assert overall_verdict(results) is Verdict.INVALID
    invalid = {key for key, verdict in verdicts.items() if verdict is Verdict.INVALID}
    assert {"1", "2", "3", "4", "6"} <= invalid
    for result in results:
        if result.verdict is Verdict.UNKNOWN:
            assert result.evidence["reason"] == "time budget exhausted"
    assert seconds < 15
