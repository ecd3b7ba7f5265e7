"""The stages every engine runs, in this process (no JVM): splits of a file pair into exactly
the calls of the whole file however it is split (calls crossing split borders are paired at
the border), and the stages give exactly the local engine's results on the reader's
operations, whichever way the file is read and split."""

from __future__ import annotations

import json
import math
import os
import zlib
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks import distributed
from spark_checks.checking import CYCLES_PART, Plan
from spark_checks.engine import VerifyOptions, merge_whole_history_part, verify_history
from spark_checks.history import (
    Call,
    CheckResult,
    HistoryError,
    Operation,
    OpType,
    Outcome,
    Verdict,
    new_call,
    pair_calls,
)
from spark_checks.kafka_checker import CallFacts, analysed_value, call_facts, split_call
from spark_checks.kafka_histories import KafkaHistoryBuilder, generate_history
from spark_checks.parallel import WorkerPool, start_order
from spark_checks.readers import open_history, write_jsonl
from spark_checks.readers.jsonl import operation_to_json


def split_lines(path: Path, count: int) -> list[tuple[int, list[bytes], int]]:
    """The file's lines in `count` consecutive splits: (split, its lines, its first line)."""
    lines = path.read_bytes().splitlines(keepends=True)
    size = max(1, -(-len(lines) // max(count, 1)))
    return [(start, lines[start : start + size], start + 1) for start in range(0, len(lines), size)] or [
        (0, [], 1)
    ]


def stage_rows(plan: Plan, path: Path, count: int, ordinals: bool = True) -> list[distributed.Row]:
    """Stage 1 and border pairing over `count` splits of a JSON Lines file, as the engines run
    them; with `ordinals` each split knows its first line and ordinal (else counted from 1)."""
    splits = []
    ordinal = 0
    for split, lines, first in split_lines(path, count):
        start_line, start_ordinal = (first, ordinal) if ordinals else (1, None)
        splits.append((split, distributed.jsonl_ops([lines], str(path), start_line, start_ordinal)))
        ordinal += sum(1 for line in lines if line.strip())
    return list(distributed.stage1_rows(plan, splits, str(path)))


def calls_by_splits(path: Path, count: int) -> tuple[list[Call], distributed.Facts]:
    """The calls the stages make of a history split `count` ways (a register plan: a call is
    its own piece), with the facts they gathered."""
    facts = distributed.Facts()
    calls: list[Call] = []
    for kind, _part, split, line, payload in stage_rows(Plan("register"), path, count):
        if kind == distributed.CALLS:
            calls.extend(distributed.decode_part([payload])[0])
        else:
            facts.add(kind, split, line, payload)
    return sorted(calls, key=lambda call: call.invoke_index), facts


def whole_file_calls(path: Path) -> list[Call]:
    return sorted(pair_calls(open_history(path)[1], str(path)), key=lambda call: call.invoke_index)


def run_stages(plan: Plan, path: Path, count: int) -> list[CheckResult]:
    """What the engines do, with lists in place of Spark's shuffles."""
    facts = distributed.Facts()
    parts: dict[str, list[bytes]] = defaultdict(list)
    for kind, part, split, line, payload in stage_rows(plan, path, count):
        if kind == distributed.CALLS:
            parts[part].append(payload)
        else:
            facts.add(kind, split, line, payload)
    assert facts.first_error() is None
    gathered = distributed.gather(distributed.check_rows(plan, parts, None))
    again = gathered.recheck() | merge_whole_history_part(plan, gathered)
    if CYCLES_PART in again and not plan.ships_whole_calls():
        # The whole-history part in full: stage 1 shipped its calls' facts; read its calls again.
        plan = replace(plan, whole_calls=True)
        rows = stage_rows(plan, path, count)
        parts[CYCLES_PART] = [row[4] for row in rows if row[:2] == (distributed.CALLS, CYCLES_PART)]
    if again:
        chosen = {part: parts[part] for part in again | {distributed.SUBSCRIPTIONS_PART}}
        gathered.replace(
            distributed.gather(distributed.check_rows(plan, chosen, frozenset(gathered.committed)))
        )
    assert not gathered.errors
    return sorted(gathered.results, key=lambda result: json.dumps(result.partition))


def comparable(results: list[CheckResult]) -> list[Any]:
    return [(r.partition, r.verdict, r.operations, r.evidence, r.conventions) for r in results]


def local_results(path: Path) -> list[CheckResult]:
    """The local engine reading the file through its reader's operations."""
    report = verify_history(path, VerifyOptions(engine="local"), general=True)
    return sorted(report.results, key=lambda result: json.dumps(result.partition))


@pytest.mark.parametrize("count", [1, 2, 7, 64, 997])
def test_splits_pair_exactly_the_calls_of_the_whole_file(tmp_path, count):
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(1500, 5, seed=3, anomalies=["lost-write", "duplicate"]))
    calls, facts = calls_by_splits(path, count)
    assert calls == whole_file_calls(path)
    lines = path.read_bytes().count(b"\n")
    assert (facts.operations, facts.calls) == (lines, len(calls))  # counted once, whatever the splits
    assert facts.first_error() is None


def test_open_calls_nemesis_lines_blank_lines_and_missing_indices(tmp_path):
    path = tmp_path / "history.jsonl"
    lines = [
        {"process": 0, "type": "invoke", "f": "write", "value": 1},
        {"process": "nemesis", "type": "info", "f": "kill"},
        {"process": 1, "type": "invoke", "f": "read"},
        {"process": 0, "type": "ok", "f": "write", "value": 1},
        {"process": 2, "type": "invoke", "f": "write", "value": 2},  # never completes
        {"process": 1, "type": "ok", "f": "read", "value": 1},
        {"process": "nemesis", "type": "info", "f": "kill"},
        {"process": 3, "type": "invoke", "f": "read"},
        {"process": 3, "type": "info", "f": "read"},
    ]
    text = "\n \n".join(json.dumps(line) for line in lines) + "\n\n"
    path.write_text(text)
    expected = whole_file_calls(path)
    assert any(call.complete_index is None for call in expected)  # process 2 never completes
    for count in range(1, text.count("\n") + 2):
        calls, facts = calls_by_splits(path, count)
        assert calls == expected, count
        assert (facts.operations, facts.calls) == (len(lines), len(expected)), count


def test_a_split_without_its_ordinals_asks_for_them(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"process": 0, "type": "invoke", "f": "read"}) + "\n")
    rows = stage_rows(Plan("register"), path, 1, ordinals=False)
    facts = distributed.Facts()
    for kind, _part, split, line, payload in rows:
        if kind != distributed.CALLS:
            facts.add(kind, split, line, payload)
    first = facts.first_error()
    assert first is not None and first[2] == distributed.Problem.ORDINALS


def first_error(path: Path, count: int) -> tuple[int, int, str, str] | None:
    facts = distributed.Facts()
    for kind, _part, split, line, payload in stage_rows(Plan("register"), path, count):
        if kind != distributed.CALLS:
            facts.add(kind, split, line, payload)
    return facts.first_error()


def local_error(path: Path) -> HistoryError:
    with pytest.raises(HistoryError) as caught:
        for _ in pair_calls(open_history(path)[1], str(path)):
            pass
    return caught.value


@pytest.mark.parametrize(
    "operations",
    [
        [  # an invocation while one is open, across a border
            Operation(0, 0, OpType.INVOKE, "read"),
            Operation(1, 1, OpType.INVOKE, "read"),
            Operation(2, 1, OpType.OK, "read", 3),
            Operation(3, 0, OpType.INVOKE, "read"),
        ],
        [  # a completion without an invocation, first of its process in its split
            Operation(0, 0, OpType.INVOKE, "read"),
            Operation(1, 0, OpType.OK, "read", 1),
            Operation(2, 1, OpType.INVOKE, "read"),
            Operation(3, 1, OpType.OK, "read", 1),
            Operation(4, 0, OpType.OK, "read", 1),
        ],
        [  # two errors: the earlier one is reported, whatever the splits
            Operation(0, 0, OpType.INVOKE, "read"),
            Operation(1, 2, OpType.OK, "read"),
            Operation(2, 1, OpType.INVOKE, "read"),
            Operation(3, 0, OpType.INVOKE, "read"),
        ],
    ],
)
def test_a_pairing_error_across_borders_names_the_local_line(tmp_path, operations):
    path = tmp_path / "history.jsonl"
    write_jsonl(path, operations)
    expected = local_error(path)
    for count in range(1, len(operations) + 1):
        found = first_error(path, count)
        assert found is not None, count
        _split, line, problem, message = found
        assert problem == distributed.Problem.LINE
        # pair_calls names the operation's index; the engine names its line (index + 1 here)
        assert expected.position.index is not None
        assert (line, message) == (expected.position.index + 1, expected.message), count


def test_a_malformed_line_names_its_line_in_its_split(tmp_path):
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(40, 2, seed=1))
    lines = path.read_text().splitlines(keepends=True)
    lines[25] = '{"index": 25, "process": 0\n'
    path.write_text("".join(lines))
    expected = local_error(path)
    for count in (1, 3, 9):
        found = first_error(path, count)
        assert found is not None
        assert (found[1], found[3]) == (expected.position.line, expected.message)


@given(
    st.lists(st.sampled_from(["lost-write", "duplicate", "poll-skip", "nonmonotonic-poll"]), max_size=2),
    st.integers(1, 40),
    st.integers(0, 2**16),
)
@settings(max_examples=15, deadline=None)
def test_stages_give_the_local_engines_results(anomalies, count, seed):
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"kafkaspec-distributed-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"history-{seed}-{count}.jsonl"
    write_jsonl(path, generate_history(400, 4, seed=seed, anomalies=anomalies), overwrite=True)
    try:
        assert comparable(run_stages(Plan("kafka"), path, count)) == comparable(local_results(path))
    finally:
        path.unlink()


@pytest.mark.parametrize("seed", [1, 2])
def test_the_fast_line_reader_gives_the_readers_report(tmp_path, seed):
    # `jsonl_ops` (the JSON Lines fast path) against the reader's operations (`general`).
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(2000, 6, seed=seed, anomalies=["lost-write"], txn_share=0.1))
    fast = verify_history(path, VerifyOptions(engine="local"))
    plain = verify_history(path, VerifyOptions(engine="local"), general=True)
    assert (fast.operations, fast.calls, fast.verdict) == (plain.operations, plain.calls, plain.verdict)
    assert comparable(fast.results) == comparable(plain.results)


def test_an_info_send_to_several_keys_committed_through_another_part(tmp_path):
    # The info send's value to x was read, its value to y never: y's part alone would say the
    # call did not commit (no lost write); the whole history says it did (y's value is lost).
    builder = KafkaHistoryBuilder()
    builder.invoke(0, "assign", ["x", "y"])
    builder.complete(0, "ok")
    builder.invoke(1, "send", [["send", "x", 1], ["send", "y", 2]])
    builder.complete(1, "info")
    builder.invoke(2, "send", [["send", "y", 3]])
    builder.complete(2, "ok", [["send", "y", [1, 3]]])
    builder.invoke(0, "poll", [["poll"]])
    builder.complete(0, "ok", [["poll", {"x": [[0, 1]], "y": [[1, 3]]}]])
    path = tmp_path / "history.jsonl"
    write_jsonl(path, builder.operations)
    expected = local_results(path)
    for count in (1, 3, 8):
        results = run_stages(Plan("kafka"), path, count)
        assert comparable(results) == comparable(expected)


def test_transactions_get_the_cycle_part(tmp_path):
    builder = KafkaHistoryBuilder()
    builder.invoke(1, "txn", [["send", "x", 1], ["poll"]])
    builder.invoke(2, "txn", [["send", "y", 2], ["poll"]])
    builder.complete(1, "ok", [["send", "x", [0, 1]], ["poll", {"y": [[0, 2]]}]])
    builder.complete(2, "ok", [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    path = tmp_path / "txn.jsonl"
    write_jsonl(path, builder.operations)
    for count in (1, 2, 3):
        results = run_stages(Plan("kafka"), path, count)
        assert comparable(results) == comparable(local_results(path))
    assert any(r.partition == "cross-key cycles" and r.verdict is Verdict.INVALID for r in results)


def round_trip(call: Call) -> Call:
    """A call through the one encoding stages ship (`call_fields` in a `dumps` payload)."""
    return distributed.call_from_fields(distributed.loads(distributed.dumps(distributed.call_fields(call))))


def test_calls_survive_the_trip_through_bytes():
    call = Call("nemesis", "cas", [1, 2**70], {"a": [None, 1.5]}, Outcome.OK, 3, 4, "k\ud800")
    assert round_trip(call) == call


def test_the_subscriptions_ship_compressed_and_read_back_alike(tmp_path):
    # Every bucket of stage 2 gets a copy of the assign/subscribe calls (`_Sink.take`).
    path = tmp_path / "kafka.jsonl"
    write_jsonl(path, generate_history(2000, 40, seed=5))
    rows = stage_rows(Plan("kafka"), path, 1)
    subscriptions = [row[4] for row in rows if row[:2] == (distributed.CALLS, distributed.SUBSCRIPTIONS_PART)]
    others = [
        row[4] for row in rows if row[0] == distributed.CALLS and row[1] != distributed.SUBSCRIPTIONS_PART
    ]
    assert subscriptions and others
    for payload in subscriptions:
        entries = distributed.loads(payload)
        assert entries and all(entry[1] in ("assign", "subscribe") for entry in entries)
        assert len(payload) * 4 < len(distributed.dumps(entries))  # 15x smaller at 10^6 bench operations
    assert all(payload[:1] == b"[" for payload in others)  # the other parts' JSON as it is
    odd = distributed.dumps([[2**70, "\ud800"]])  # the standard library's, behind its marker
    assert distributed.loads(zlib.compress(odd, 1)) == [[2**70, "\ud800"]]


@pytest.mark.parametrize(
    ("output", "completion"), [(1, True), ([1, 0], [True, False]), (2, 2.0), ({"a": 1}, {"a": True})]
)
def test_an_output_equal_but_not_identical_to_the_completion_keeps_its_types(output, completion):
    call = Call(0, "read", None, output, Outcome.OK, 3, 4, completion_value=completion)
    back = round_trip(call)
    assert json.dumps(back.output) == json.dumps(output)
    assert json.dumps(back.completion_value) == json.dumps(completion)


def fast_pieces(
    invocation: distributed.Op, completion: distributed.Op, plan: Plan
) -> list[tuple[str, list[Any]]] | None:
    """`distributed._fast_pieces` as a list of (part, fields) in the order they were added."""
    sink = distributed._Sink(plan)
    if not distributed._fast_pieces(invocation, completion, sink):
        assert not sink.pieces
        return None
    return [(part, fields) for part, entries in sink.pieces.items() for fields in entries]


def pieces_of(call: Call, plan: Plan) -> list[tuple[str, list[Any]]]:
    """What stage 1 ships of a call the general way (`_Sink.add_call`: `split_call`, then
    `kafka_fields`), the whole-history part's entry included (the call's `CallFacts`, or the
    call whole under `Plan.whole_calls`)."""
    sink = distributed._Sink(plan)
    sink.add_call(call)
    return [(part, fields) for part, entries in sink.pieces.items() for fields in entries]


def checked_view(call: Call) -> tuple[Any, ...]:
    """What the Kafka checks read of a call: all a shipped piece must keep."""
    return (
        call.process,
        call.f,
        analysed_value(call),
        call.outcome,
        call.invoke_index,
        call.complete_index,
        call.key,
    )


def pairs_of(path: Path) -> list[tuple[distributed.Op, distributed.Op]]:
    """The (invocation, completion) operations of a file's completed calls."""
    open_calls: dict[Any, distributed.Op] = {}
    pairs = []
    for _line, operation in distributed.jsonl_ops([path.read_bytes().splitlines()], str(path), 1, 0):
        if operation[2] == "invoke":
            open_calls[operation[1]] = operation
        elif operation[1] in open_calls:
            pairs.append((open_calls.pop(operation[1]), operation))
    return pairs


@given(st.integers(0, 2**16), st.sampled_from([0.0, 0.2]), st.sampled_from([0.0, 0.1]))
@settings(max_examples=20, deadline=None)
def test_fast_pieces_are_split_calls_pieces(seed, txn_share, fail_share):
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"kafkaspec-distributed-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"pieces-{seed}.jsonl"
    operations = generate_history(
        300, 5, seed=seed, txn_share=txn_share, fail_share=fail_share, info_share=fail_share
    )
    write_jsonl(path, operations, overwrite=True)
    try:
        fast = 0
        for invocation, completion in pairs_of(path):
            for plan in (Plan("kafka"), Plan("kafka", whole_calls=True)):
                pieces = fast_pieces(invocation, completion, plan)
                if pieces is None:
                    continue
                fast += 1
                call = distributed._call(invocation, completion)
                assert sorted(pieces, key=str) == sorted(pieces_of(call, plan), key=str)
                for part, fields in pieces:
                    if part == CYCLES_PART and not plan.whole_calls:
                        assert CallFacts.from_fields(fields) == call_facts(call)
                        continue
                    shipped = distributed.call_from_fields(fields)
                    whole = part == CYCLES_PART
                    assert checked_view(shipped) == checked_view(
                        call if whole else dict(split_call(call))[json.loads(part)]
                    )
        assert fast
    finally:
        path.unlink()


@pytest.mark.parametrize(
    ("given", "done"),
    [
        ([["send", 7, 1]], [["send", 7, [0, 1]]]),  # an integer key
        ([["send", "x", 1]], [["send", "x", 1]]),  # no offset
        ([["send", "x", 1]], [["send", "x", [0, 1, 2]]]),  # malformed: split_call says so
        ([["send", "x", 1], ["send", "y", 2]], None),  # two keys
        ([["send", "x", 1], ["send", 7, 2]], [["send", "x", [0, 1]], ["send", 7, [0, 2]]]),
        ([["send", "x", 1], ["send", "x", 2]], [["send", "x", [0, 1]], ["send", "x", [1, 2]]]),
        ([["send", "x", 1], ["send", "y", 2]], [["send", "x", [0, 1]], ["send", "y", [0, 2, 3]]]),
        ([["send", "x", 1], ["poll"]], [["send", "x", [0, 1]], ["poll", {"x": [[0, 1]]}]]),
        ([["send", "x", 1], ["send", "y"]], None),
        ([["poll"]], [["poll", {"x": [[0, 1]], "y": [[3, 4]], "z": []}]]),
        ([["poll"]], [["poll", {}]]),
        ([["poll"]], [["poll"]]),
        ([["poll"]], [["poll", {"x": [[0, 1]]}, "extra"]]),
        ([["poll"]], [["poll", {"x": "not pairs"}]]),
        ([["poll"]], [["poll", [["x", 1]]]]),
        ([["poll"]], [[1, 2]]),
        ([["poll"]], 5),
        ([["poll"]], []),
        ([["poll"]], None),
    ],
)
@pytest.mark.parametrize("kind", [OpType.OK, OpType.FAIL, OpType.INFO])
def test_fast_pieces_of_odd_shapes(given, done, kind):
    f = "poll" if given[0][0] == "poll" else "send"
    invocation = (4, 1, "invoke", f, given, None, 10)
    completion = (5, 1, kind.value, f, done, None, 11)
    call = distributed._call(invocation, completion)
    for plan in (Plan("kafka"), Plan("kafka", whole_calls=True)):
        pieces = fast_pieces(invocation, completion, plan)
        try:
            expected = pieces_of(call, plan)
        except HistoryError:
            assert pieces is None  # the general way reports it
            continue
        assert pieces is None or sorted(pieces, key=str) == sorted(expected, key=str)


def test_new_call_makes_the_same_call_as_the_constructor():
    fields = ("nemesis", "cas", [1, 2], {"a": None}, Outcome.FAIL, 3, None, "k", 5, None, [7])
    made = new_call(*fields)
    assert made == Call(*fields)
    assert repr(made) == repr(Call(*fields))
    with pytest.raises(AttributeError):
        made.f = "read"  # type: ignore[misc]  # still frozen


def test_long_integers_are_read_exactly_whatever_the_splits(tmp_path):
    # orjson would read these as floats (beyond 2**64, below -2**63); the chunks checked for
    # long integers must send each such line, wherever it falls, the standard library's way.
    path = tmp_path / "history.jsonl"
    operations = []
    for index in range(0, 40, 2):
        value = 2**70 + index if index % 6 == 0 else -(2**63) - 1 - index if index % 6 == 2 else index
        operations.append(Operation(index, index % 3, OpType.INVOKE, "write", value))
        operations.append(Operation(index + 1, index % 3, OpType.OK, "write", value))
    write_jsonl(path, operations)
    expected = whole_file_calls(path)
    assert any(call.input == 2**70 for call in expected)
    assert any(call.input == -(2**63) - 3 for call in expected)
    for count in (1, 3, 17):
        calls = calls_by_splits(path, count)[0]
        assert calls == expected
        assert [type(call.input) for call in calls] == [type(call.input) for call in expected]


@pytest.mark.parametrize("window", [1, 2, 7])
def test_pieces_packed_in_windows_give_the_same_results(tmp_path, monkeypatch, window):
    monkeypatch.setattr(distributed, "WINDOW_CALLS", window)
    path = tmp_path / "history.jsonl"
    write_jsonl(
        path, generate_history(300, 4, seed=window, anomalies=["lost-write", "poll-skip"], txn_share=0.1)
    )
    for count in (1, 5):
        assert comparable(run_stages(Plan("kafka"), path, count)) == comparable(local_results(path))


ODD_JSON = [  # no NaN nor infinity: no history holds one (every reader refuses them)
    2**70,
    -(2**63) - 1,
    "lone \ud800 surrogate",
    None,
    [1.5, None, {"k": [2**64, "\udfff"]}],
]


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values, types and all, with NaN equal to NaN."""
    return json.dumps(left) == json.dumps(right)


@pytest.mark.parametrize("value", ODD_JSON)
def test_values_orjson_cannot_write_exactly_travel_exactly(value):
    # orjson refuses long integers and lone surrogates.
    assert same_json(distributed.loads(distributed.dumps(value)), value)
    call = Call(2, "write", value, value, Outcome.OK, 4, 5, None, None, None, value)
    back = round_trip(call)
    assert same_json([back.input, back.output, back.completion_value], [value] * 3)


def test_a_kafka_history_with_odd_values_gives_the_local_results_on_the_stages(tmp_path):
    builder = KafkaHistoryBuilder()
    values = [2**70, "lone \ud800 surrogate", -(2**63) - 1, 1.5]
    for offset, value in enumerate(values):
        builder.invoke(1, "send", [["send", "k", value]])
        builder.complete(1, "ok", [["send", "k", [offset, value]]])
    builder.invoke(2, "poll", [["poll"]])
    polled = [[offset, value] for offset, value in enumerate(values[1:], 1)]
    builder.complete(2, "ok", [["poll", {"k": polled}]])
    path = tmp_path / "odd.jsonl"
    # The standard library writes the lone surrogate as an escape (write_jsonl refuses it).
    path.write_text("".join(json.dumps(operation_to_json(op)) + "\n" for op in builder.operations))
    local = local_results(path)
    assert any("lost-write" in result.evidence.get("anomalies", {}) for result in local)  # 2**70 was lost
    for count in (1, 3):
        assert comparable(run_stages(Plan("kafka"), path, count)) == comparable(local)


NOT_TRANSPORT = {
    "distributed.py": {
        # what reads a history: the operation tuple, the EDN line reader
        *("Op", "_TYPES", "_INVOKE", "_OK_TYPE", "_INFO_TYPE", "_OUTCOMES", "_OUTCOME_BY_CODE", "Starts"),
        *("OrdinalsNeededError", "operation_op", "EDN_RUN_LINES", "SPANS_LINES", "edn_ops", "_edn_run"),
        *("_EDN_OPENER", "_EDN_CLOSER", "_EMPTY_EDN_LINE", "_refuse_continuation", "no_cyclic_gc"),
    },
    "spark_read.py": {
        # what Spark reads (lines, Parquet rows, the head, the split starts), and the re-reads
        # of the error paths
        *("TEXT_FORMATS", "READ_FORMATS", "WHOLE_FORMATS", "_PYTHON_SPACE", "JSONL_OPERATION_LINE"),
        *("EDN_OPERATION_LINE", "json_text", "lines_frame", "count_starts", "_parquet_frame", "HEAD_LINES"),
        *("head", "_lacks_indexes", "_one_file", "_parquet_head", "parquet_conventions", "_local_copy"),
        *("_located_ops", "whole_file_answer"),
    },
}
ENGINE_TRANSPORT = {"verify_spark", "_jobs", "_raise_check_error"}


def transport_lines(path: Path, counted: Any) -> int:
    """The non-blank lines of the top-level definitions of a module whose names `counted`
    accepts (a constant with the docstring after it, a definition with its decorators and the
    comment lines right above it); module docstring and imports left out."""
    import ast

    lines = path.read_text(encoding="utf-8").splitlines()
    body = ast.parse("\n".join(lines)).body
    total = 0
    for number, node in enumerate(body):
        names = (
            {node.name}
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            else {
                target.id
                for target in getattr(node, "targets", [getattr(node, "target", None)])
                if isinstance(target, ast.Name)
            }
        )
        if not names or not counted(names):
            continue
        start = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
        while lines[start - 2].lstrip().startswith("#") and not lines[start - 2].startswith("# ---"):
            start -= 1
        end = node.end_lineno or node.lineno
        after = body[number + 1] if number + 1 < len(body) else None
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(after, ast.Expr):
            end = after.end_lineno or end  # the constant's docstring
        total += sum(1 for line in lines[start - 1 : end] if line.strip())
    return total


def test_the_transport_between_stages_stays_within_its_budget():
    # Issue 13: the rows, encodings, frames, shuffles, border handling and fast paths beside a
    # slow path (`jsonl_ops`, `_fast_pieces`) at most half of the ~1,500 lines they were: 750.
    # The README's Engines paragraph gives the rule; 944 lines at e7399ec by it.
    package = Path(distributed.__file__).parent
    counted = sum(
        transport_lines(package / name, lambda names, skip=skipped: not names & skip)
        for name, skipped in NOT_TRANSPORT.items()
    )
    counted += transport_lines(package / "engine.py", lambda names: bool(names & ENGINE_TRANSPORT))
    assert counted <= 750, counted


class StartOrderPool(WorkerPool):
    """A pool that checks in this process, recording the order `WorkerPool.run` starts its
    tasks in (`parallel.start_order`: the order a pool of workers takes them)."""

    def __init__(self) -> None:
        super().__init__(isolate=True)  # taken whatever the history's size (`worth_workers`)
        self.started: list[str] = []

    def run(self, tasks: Any, **options: Any) -> Any:
        order = start_order(tasks, options.get("large_first_from", math.inf))
        self.started = [tasks[index].name for index in order]
        return WorkerPool().run(tasks, **options)


def test_the_whole_history_part_starts_first_in_a_pool_of_workers(tmp_path):
    # The largest part, started last, would run alone after the keys' parts.
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(400, 4, seed=3), overwrite=True)
    parts: dict[str, list[bytes]] = defaultdict(list)
    for kind, part, _split, _line, payload in stage_rows(Plan("kafka"), path, 2):
        if kind == distributed.CALLS:
            parts[part].append(payload)
    pool = StartOrderPool()
    answers = distributed.check_rows(Plan("kafka"), parts, None, pool=pool)
    assert pool.started[0] == CYCLES_PART
    keys = pool.started[1:]
    assert len(keys) == 4 and keys == sorted(keys, key=lambda name: (sum(map(len, parts[name])), name))
    assert {answer.name for answer in answers} == set(parts) - {distributed.SUBSCRIPTIONS_PART}
