"""Budgets of `kafkaspec verify`: every checker honours the deadline, bad budgets are refused.

The Kafka checks read the clock as they go and answer `unknown` at the deadline; a part
reached after it is not checked; `--max-seconds` bounds the whole command (nan, zero and
negative are bad input); `--max-memory` bounds the linearizability search's cache.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from spark_checks import kafka_checker
from spark_checks.checking import Budget, Plan, check_part, kafka_context, split_calls
from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import Call, Operation, OpType, Verdict, pair_calls
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import write_jsonl
from tests.helpers import run_cli

C50_BAD = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "histories"
    / "porcupine"
    / "test_data"
    / "kv"
    / "c50-bad.txt"
)


@pytest.fixture
def hard_kv(tmp_path: Path) -> Path:
    """c50-bad with an empty append to each key first: no key is traceable any more (an empty
    append hides from the reads, see `spark_checks.traceable`), so the search checks every key and
    its four hard keys (0, 5, 7, 9) are too hard for any budget; the others are refuted in ms."""
    lines = C50_BAD.read_text().splitlines()
    keys = sorted({line.split(':key "')[1].split('"')[0] for line in lines if ':key "' in line})
    empty = [
        f'{{:process {1000 + number}, :type :{kind}, :f :append, :key "{key}", :value ""}}'
        for number, key in enumerate(keys)
        for kind in ("invoke", "ok")
    ]
    path = tmp_path / "c50-bad-untraceable.txt"
    path.write_text("\n".join(empty + lines) + "\n")
    return path


def kafka_calls(n_calls: int, n_keys: int = 4) -> list[Call]:
    return list(pair_calls(generate_history(n_calls, n_keys, seed=7)))


def test_a_kafka_check_past_its_deadline_is_unknown() -> None:
    calls = kafka_calls(60_000, n_keys=2)
    assert kafka_checker.check_kafka(calls).verdict is Verdict.VALID
    started = time.perf_counter()
    result = kafka_checker.check_kafka(calls, deadline=time.time() + 0.05)
    elapsed = time.perf_counter() - started
    assert result.verdict is Verdict.UNKNOWN
    assert result.evidence == {"reason": "time budget exhausted"}
    assert result.operations == len(calls)
    assert elapsed < 0.5, elapsed  # the whole check takes seconds
    key_result, decided = kafka_checker.check_kafka_key_deciding_commits("0", calls, deadline=time.time())
    assert key_result.verdict is Verdict.UNKNOWN
    assert decided == frozenset()


def test_parts_reached_after_the_deadline_are_not_checked() -> None:
    calls = kafka_calls(2_000)
    plan = Plan("kafka", budget=Budget(deadline=time.time() - 1)).with_kafka_context(kafka_context(calls))
    parts: dict[str, list[Call]] = {}
    for key_json, piece in split_calls(plan, calls):
        parts.setdefault(key_json, []).append(piece)
    for key_json, part in parts.items():
        result = check_part(plan, key_json, part)
        assert result.verdict is Verdict.UNKNOWN
        assert result.evidence["reason"] == "not checked: time budget exhausted"
        assert result.partition == json.loads(key_json)
    in_time = Plan("kafka").with_kafka_context(kafka_context(calls))
    assert {check_part(in_time, k, p).verdict for k, p in parts.items()} == {Verdict.VALID}


@pytest.mark.parametrize(
    "fields",
    [{"max_seconds": math.nan}, {"max_seconds": 0.0}, {"max_seconds": -1.0}, {"max_memory_bytes": 0}],
)
def test_a_budget_that_is_not_positive_is_a_value_error(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be a positive number"):
        Budget(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["nan", "NaN", "-1", "0", "-0.0", "soon"])
def test_verify_refuses_a_bad_time_budget(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, out, err = run_cli(capsys, "verify", str(C50_BAD), "--max-seconds", value)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert "--max-seconds" in err and "not a positive number" in err


def test_verify_max_seconds_bounds_a_kafka_history(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    history = tmp_path / "kafka.jsonl"
    write_jsonl(history, generate_history(40_000, 1, seed=3))
    started = time.perf_counter()
    code, out, _ = run_cli(capsys, "verify", str(history), "--max-seconds", "0.05", "--json")
    assert time.perf_counter() - started < 5
    assert code == 3, out
    (report,) = json.loads(out)["histories"]
    assert len(report["failing"]) == report["parts"]
    assert {part["verdict"] for part in report["failing"]} == {"unknown"}
    assert all("time budget exhausted" in part["evidence"]["reason"] for part in report["failing"])


@pytest.mark.skipif(not C50_BAD.is_file(), reason="needs ../shared/histories")
def test_verify_max_seconds_bounds_the_whole_command(
    capsys: pytest.CaptureFixture[str], hard_kv: Path
) -> None:
    # Four of c50-bad's ten keys are too hard for any budget; the six others are refuted in
    # milliseconds (key 3 in 3,097 states), and each part gets a share of the time left, so
    # the verdict is invalid.
    started = time.perf_counter()
    code, out, _ = run_cli(capsys, "verify", str(hard_kv), "--max-seconds", "4", "--json")
    elapsed = time.perf_counter() - started
    assert elapsed < 5, elapsed
    assert code == 1
    (report,) = json.loads(out)["histories"]
    verdicts = {part["part"]: part["verdict"] for part in report["failing"]}
    assert verdicts["3"] == "invalid"
    assert {"0", "5", "7", "9"} <= {key for key, verdict in verdicts.items() if verdict == "unknown"}


@pytest.mark.skipif(not C50_BAD.is_file(), reason="needs ../shared/histories")
def test_verify_max_memory_bounds_the_search_cache(capsys: pytest.CaptureFixture[str], hard_kv: Path) -> None:
    code, out, _ = run_cli(capsys, "verify", str(hard_kv), "--max-memory", "2", "--json")
    assert code == 1
    (report,) = json.loads(out)["histories"]
    reasons = [part["evidence"]["reason"] for part in report["failing"] if part["verdict"] == "unknown"]
    assert reasons and all(reason.startswith("memory budget of 2 MB exhausted") for reason in reasons)


@pytest.mark.skipif(not C50_BAD.is_file(), reason="needs ../shared/histories")
def test_the_kafkaspec_program_ends_within_a_second_of_its_budget(hard_kv: Path) -> None:
    # As a program the budget counts from the process's start: loading Python and the tool
    # (0.6-1.6 s here) is inside it, and the search frees its cache before the deadline.
    budget = 6.0
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "kafkaspec.cli", "verify", str(hard_kv), "--max-seconds", str(budget)],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    assert completed.returncode in (1, 3), completed.stderr  # invalid, or unknown on a loaded machine
    assert elapsed < budget + 1, elapsed


@pytest.mark.parametrize("model", ["kafka", "kv"])
def test_both_engines_answer_unknown_past_the_deadline(spark: Any, tmp_path: Path, model: str) -> None:
    # The deadline travels with the plan into the Spark tasks: a part they reach after it is
    # not checked, as on the local engine.
    history = tmp_path / f"{model}.jsonl"
    if model == "kafka":
        write_jsonl(history, generate_history(400, 3, seed=5))
    else:
        write_jsonl(history, pair_free_kv_operations())
    late = Budget(deadline=time.time() - 1)
    for engine in ("local", "spark"):
        report = verify_history(history, VerifyOptions(engine=engine, budget=late), spark=spark)
        assert report.verdict is Verdict.UNKNOWN, engine
        assert {result.evidence["reason"] for result in report.results} == {
            "not checked: time budget exhausted"
        }, engine
        in_time = verify_history(history, VerifyOptions(engine=engine), spark=spark)
        assert in_time.verdict is Verdict.VALID, engine


def pair_free_kv_operations() -> list[Operation]:
    """Sequential appends and reads on two keys: linearizable."""
    operations: list[Operation] = []
    for number in range(6):
        key = f"k{number % 2}"
        for kind in (OpType.INVOKE, OpType.OK):
            operations.append(Operation(len(operations), 0, kind, "append", f"<{number}>", key))
    return operations
