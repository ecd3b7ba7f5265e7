"""A vacuous check is refused; an empty history is unknown (`spark_checks.vacuous`).

A history of which the chosen model checks no operation (a register history under `--model
kafka`, a history of `crash` calls, a history of a nemesis's lines only) is bad input: exit 2,
one line naming the file, the model and why. A history with no operation at all is `unknown`
(exit 3) whatever the model: the empty etcd log of Porcupine's test data keeps its manifest
verdict, `unknown`. A history of assign calls alone is checked, not refused: Jepsen's
`empty-history-test` calls it invalid (`empty-transaction-graph`). Both engines answer alike.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import HistoryError, Verdict
from spark_checks.vacuous import EMPTY_HISTORY_REASON
from tests.helpers import run_cli

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
REGISTER_EDN = HISTORIES / "knossos" / "data" / "cas-register" / "bad" / "bad-analysis.edn"
EMPTY_ETCD_LOG = HISTORIES / "porcupine" / "test_data" / "jepsen" / "etcd_095.log"

CRASHES = [
    {"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "crash", "value": None},
    {"index": 1, "time": 2, "type": "info", "process": 0, "f": "crash", "value": None},
]
NEMESIS_ONLY = [
    {
        "index": 0,
        "time": 1,
        "type": "info",
        "process": "nemesis",
        "f": "start-partition",
        "value": "majority",
    },
    {"index": 1, "time": 2, "type": "info", "process": "nemesis", "f": "stop-partition", "value": None},
]
ASSIGN_ONLY = [
    {"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "assign", "value": ["x"]},
    {"index": 1, "time": 1, "type": "ok", "process": 0, "f": "assign", "value": ["x"]},
]


def write_jsonl(path: Path, operations: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(operation) + "\n" for operation in operations), encoding="utf-8")
    return path


def write_edn(path: Path, operations: list[dict[str, Any]]) -> Path:
    def edn(value: Any) -> str:
        if value is None:
            return "nil"
        if isinstance(value, list):
            return "[" + " ".join(edn(item) for item in value) + "]"
        return json.dumps(value)

    lines = []
    for operation in operations:
        fields = []
        for name, value in operation.items():
            is_keyword = name in ("type", "f") or (name == "process" and isinstance(value, str))
            fields.append(f":{name} {':' + value if is_keyword else edn(value)}")
        lines.append("{" + ", ".join(fields) + "}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def refusal(path: Path, model: str, **options: Any) -> str:
    with pytest.raises(HistoryError) as raised:
        verify_history(path, VerifyOptions(model=model, **options))
    return str(raised.value)


# ---------------------------------------------------------------------------------------
# Refused: the model checks no operation
# ---------------------------------------------------------------------------------------


def test_kafka_model_on_a_register_history_is_refused_naming_file_model_and_functions() -> None:
    message = refusal(REGISTER_EDN, "kafka", engine="local")
    assert message.startswith(f"{REGISTER_EDN}: no operation of this history is one the kafka model checks")
    assert "its operations' functions are read, write" in message
    assert "the kafka model checks send, poll, txn, assign and subscribe" in message


def test_the_cli_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "verify", "--model", "kafka", str(REGISTER_EDN))
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert str(REGISTER_EDN) in line and "kafka model" in line and "read, write" in line


@pytest.mark.parametrize("writer", [write_jsonl, write_edn], ids=["jsonl", "edn"])
def test_a_history_of_crashes_checks_nothing_for_kafka(tmp_path: Path, writer: Any) -> None:
    path = writer(tmp_path / ("crashes." + ("jsonl" if writer is write_jsonl else "edn")), CRASHES)
    message = refusal(path, "kafka", engine="local")
    assert "its operations' functions are crash;" in message


@pytest.mark.parametrize("model", ["register", "cas-register", "kv", "kafka"])
def test_a_nemesis_alone_checks_nothing(tmp_path: Path, model: str) -> None:
    path = write_jsonl(tmp_path / "nemesis.jsonl", NEMESIS_ONLY)
    message = refusal(path, model, engine="local")
    assert f"the {model} model checks" in message
    assert "start-partition, stop-partition" in message
    if model != "kafka":
        assert "it has no invocation" in message


def test_assign_calls_alone_are_checked_as_jepsen_does(tmp_path: Path) -> None:
    # jepsen.tests.kafka-test/empty-history-test: invalid, the graph has no edge.
    path = write_jsonl(tmp_path / "assign.jsonl", ASSIGN_ONLY)
    report = verify_history(path, VerifyOptions(model="kafka", engine="local"))
    assert report.verdict is Verdict.INVALID
    found = {name for result in report.results for name in result.evidence.get("error_types", [])}
    assert found == {"empty-transaction-graph"}


def test_a_history_the_model_checks_is_not_refused(tmp_path: Path) -> None:
    report = verify_history(REGISTER_EDN, VerifyOptions(model="cas-register", engine="local"))
    assert report.verdict is Verdict.INVALID  # the manifest's verdict, untouched


# ---------------------------------------------------------------------------------------
# Unknown: nothing was recorded
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["auto", "cas-register", "kafka", "kv"])
def test_the_empty_etcd_log_is_unknown_whatever_the_model(model: str) -> None:
    report = verify_history(EMPTY_ETCD_LOG, VerifyOptions(model=model, engine="local"))
    assert report.verdict is Verdict.UNKNOWN
    (result,) = report.results
    assert result.evidence == {"reason": EMPTY_HISTORY_REASON}
    assert report.model == ("none" if model == "auto" else model)
    assert (report.operations, report.calls) == (0, 0)


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.edn", "blank.edn"])
def test_empty_files_of_every_format_are_unknown(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("\n\n" if name.startswith("blank") else "", encoding="utf-8")
    report = verify_history(path, VerifyOptions(model="kafka", engine="local"))
    assert report.verdict is Verdict.UNKNOWN


def test_the_cli_exits_3_on_an_empty_history(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "verify", str(EMPTY_ETCD_LOG))
    assert code == 3
    assert "UNKNOWN" in out and "the history is empty" in out


def test_every_manifest_unknown_is_still_unknown() -> None:
    # The manifests' "unknown" rows (Porcupine's tests skip them) get that answer from verify.
    rows: list[Path] = []
    for manifest in sorted(HISTORIES.glob("*/MANIFEST.tsv")):
        lines = [
            line for line in manifest.read_text(encoding="utf-8").splitlines() if not line.startswith("#")
        ]
        rows.extend(
            manifest.parent / row["file"]
            for row in csv.DictReader(lines, delimiter="\t")
            if row["expected_verdict"] == "unknown"
        )
    assert EMPTY_ETCD_LOG in rows
    for path in rows:
        assert verify_history(path, VerifyOptions(engine="local")).verdict is Verdict.UNKNOWN


# ---------------------------------------------------------------------------------------
# Both engines
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("general", [False, True], ids=["jsonl-stages", "general-path"])
def test_local_paths_agree(tmp_path: Path, general: bool) -> None:
    path = write_jsonl(tmp_path / "crashes.jsonl", CRASHES)
    with pytest.raises(HistoryError, match="kafka model checks"):
        verify_history(path, VerifyOptions(model="kafka", engine="local"), general=general)


def test_spark_engine_refuses_and_answers_unknown_alike(tmp_path: Path, spark: Any) -> None:
    crashes = write_jsonl(tmp_path / "crashes.jsonl", CRASHES)
    local = refusal(crashes, "kafka", engine="local")
    with pytest.raises(HistoryError) as raised:
        verify_history(crashes, VerifyOptions(model="kafka", engine="spark"), spark=spark)
    assert str(raised.value) == local
    nemesis = write_edn(tmp_path / "nemesis.edn", NEMESIS_ONLY)
    local = refusal(nemesis, "register", engine="local")
    with pytest.raises(HistoryError) as raised:
        verify_history(nemesis, VerifyOptions(model="register", engine="spark"), spark=spark)
    assert str(raised.value) == local
    report = verify_history(EMPTY_ETCD_LOG, VerifyOptions(model="cas-register", engine="spark"), spark=spark)
    assert report.verdict is Verdict.UNKNOWN
    assigns = write_jsonl(tmp_path / "assign.jsonl", ASSIGN_ONLY)
    spark_report = verify_history(assigns, VerifyOptions(model="kafka", engine="spark"), spark=spark)
    assert spark_report.verdict is Verdict.INVALID
