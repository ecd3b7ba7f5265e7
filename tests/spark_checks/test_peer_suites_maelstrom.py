"""Maelstrom's kafka workload on the example its own documentation gives
(jepsen-io/maelstrom `src/maelstrom/workload/kafka.clj`, the namespace docstring): a poll-skip
found by Maelstrom's checker, `{:key "56", :delta 3, :skipped (7 8), :ops [poll of [[4 5] [5
6]], poll of [[8 9]]]}`, rebuilt as the `history.edn` a run leaves (one op map per line, some
printed as `#jepsen.history.Op{...}` records). Maelstrom has no tests of its own for the
workload; its checker is Jepsen's (`test_peer_suites_kafka.py` restates it), with `:sub-via
#{:assign}`, so a skip is an error, plus Jepsen's stats checker. The fixtures of
`test_maelstrom_kafka.py` cover the other anomalies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_checks.history import Operation, OpType
from tests.helpers import run_cli
from tests.spark_checks.test_peer_suites_kafka import as_ops, jepsen_error_types


def doc_example() -> list[dict[str, Any]]:
    """Process 0 assigns key "56" and polls messages 5 and 6 (offsets 4, 5), then 9 (offset
    8); process 1 sent 5 to 9 at offsets 4 to 8, so 7 and 8 were skipped."""
    ops: list[dict[str, Any]] = [
        {"process": 0, "type": "invoke", "f": "assign", "value": ["56"]},
        {"process": 0, "type": "ok", "f": "assign", "value": ["56"]},
    ]
    for offset, message in enumerate(range(5, 10), start=4):
        ops.append({"process": 1, "type": "invoke", "f": "send", "value": [["send", "56", message]]})
        ops.append({"process": 1, "type": "ok", "f": "send", "value": [["send", "56", [offset, message]]]})
    for polled in ([[4, 5], [5, 6]], [[8, 9]]):
        ops.append({"process": 0, "type": "invoke", "f": "poll", "value": [["poll"]]})
        ops.append({"process": 0, "type": "ok", "f": "poll", "value": [["poll", {"56": polled}]]})
    return ops


def edn(value: Any) -> str:
    if isinstance(value, list):
        if value and value[0] in ("send", "poll"):
            return "[" + " ".join([f":{value[0]}", *(edn(v) for v in value[1:])]) + "]"
        return "[" + " ".join(edn(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn(k)} {edn(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def write_history_edn(path: Path, ops: list[dict[str, Any]]) -> Path:
    lines = []
    for index, op in enumerate(ops):
        body = (
            f":index {index}, :time {index * 1000}, :type :{op['type']}, :process {op['process']}, "
            f":f :{op['f']}, :value {edn(op['value'])}"
        )
        # Completions as Maelstrom's results print them, the rest as plain maps.
        lines.append(("#jepsen.history.Op{" if op["type"] == "ok" else "{") + body + "}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_documented_poll_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_history_edn(tmp_path / "history.edn", doc_example())
    code, out, err = run_cli(capsys, "verify", str(path), "--json")
    assert code == 1, err
    (history,) = json.loads(out)["histories"]
    assert history["model"] == "maelstrom-kafka"
    found: dict[str, list[Any]] = {}
    for part in history["failing"]:
        for name, records in part["evidence"].get("anomalies", {}).items():
            found.setdefault(name, []).extend(records)
    (skip,) = found["poll-skip"]
    assert (skip["key"], skip["delta"], skip["skipped"]) == ("56", 3, [7, 8])
    # 7 and 8 lie below the 9 read and were never read (lost-write), though sent by ok calls
    # (unseen): the whole set is Jepsen's analysis of the same history.
    operations = [
        Operation(n, op["process"], OpType(op["type"]), op["f"], op["value"])
        for n, op in enumerate(doc_example())
    ]
    assert set(found) == jepsen_error_types(as_ops(operations)) == {"poll-skip", "lost-write", "unseen"}
