"""The Spark engine's task code run in this process (no JVM): byte ranges of a file pair into
exactly the calls of the whole file, and stage 1 + stage 2 + the driver's second run give
exactly the local engine's results."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks import distributed
from spark_checks.checking import Plan
from spark_checks.engine import VerifyOptions, verify_history
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
from spark_checks.kafka_checker import analysed_value, split_call
from spark_checks.kafka_histories import KafkaHistoryBuilder, generate_history
from spark_checks.readers import open_history, write_jsonl
from spark_checks.readers.jsonl import operation_to_json

TARGETS = [101, 7, 55, 13]  # any distinct values: Spark's hash picks them in the engine


def calls_by_ranges(path: Path, count: int) -> tuple[list[Call], distributed.RangeBorder]:
    border = distributed.RangeBorder()
    calls = [
        call
        for start, end in distributed.byte_ranges(path.stat().st_size, count)
        for call in distributed.range_calls(str(path), start, end, str(path), border)
    ]
    return sorted(calls, key=lambda call: call.invoke_index), border


def whole_file_calls(path: Path) -> list[Call]:
    return sorted(pair_calls(open_history(path)[1], str(path)), key=lambda call: call.invoke_index)


def run_stages(plan: Plan, path: Path, ranges: int) -> list[CheckResult]:
    """What `engine.verify_spark` does, with lists in place of Spark's shuffle."""

    def job(
        committed: frozenset[int] | None = None, cycles: bool = False, parts: frozenset[str] | None = None
    ) -> distributed.Gathered:
        by_target: dict[int, list[tuple[int, str, bytes]]] = {target: [] for target in TARGETS}
        for start, end in distributed.byte_ranges(path.stat().st_size, ranges):
            for target, kind, part, payload in distributed.range_rows(
                plan, str(path), start, end, TARGETS, str(path), cycles, parts
            ):
                by_target[target].append((kind, part, payload))
        return distributed.gather(
            row for rows in by_target.values() for row in distributed.check_rows(plan, rows, committed)
        )

    gathered = job(cycles=plan.model == "kafka")  # the whole-history part, in the first pass
    assert gathered.first_error() is None
    again = gathered.recheck()
    if again:
        gathered.replace(job(frozenset(gathered.committed), False, again))
    assert gathered.first_error() is None
    return sorted(gathered.results, key=lambda result: json.dumps(result.partition))


def comparable(results: list[CheckResult]) -> list[Any]:
    return [(r.partition, r.verdict, r.operations, r.evidence, r.conventions) for r in results]


def local_results(path: Path) -> list[CheckResult]:
    """The local engine's general path (reader, `pair_calls`, `split_calls`, `check_part`)."""
    report = verify_history(path, VerifyOptions(engine="local"), general=True)
    return sorted(report.results, key=lambda result: json.dumps(result.partition))


def test_byte_ranges_cover_the_file_in_order():
    assert distributed.byte_ranges(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert distributed.byte_ranges(2, 5) == [(0, 1), (1, 2)]
    assert distributed.byte_ranges(0, 4) == [(0, 0)]


@pytest.mark.parametrize("count", [1, 2, 7, 64, 997])
def test_ranges_pair_exactly_the_calls_of_the_whole_file(tmp_path, count):
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(1500, 5, seed=3, anomalies=["lost-write", "duplicate"]))
    calls, border = calls_by_ranges(path, count)
    assert calls == whole_file_calls(path)
    lines = path.read_bytes().count(b"\n")
    assert (border.operations, border.calls) == (lines, len(calls))  # counted once, whatever the ranges
    assert set(border.orphans) <= set(border.claims)  # every leading completion was paired


def test_open_calls_nemesis_lines_blank_lines_and_missing_indices(tmp_path):
    path = tmp_path / "history.jsonl"
    lines = [
        {"process": 0, "type": "invoke", "f": "write", "value": 1},
        {"process": "nemesis", "type": "info", "f": "kill"},
        {"process": 1, "type": "invoke", "f": "read"},
        {"process": 0, "type": "ok", "f": "write", "value": 1},
        {"process": 2, "type": "invoke", "f": "write", "value": 2},  # never completes
        {"process": 1, "type": "ok", "f": "read", "value": 1},
        {"process": 3, "type": "invoke", "f": "read"},
        {"process": 3, "type": "info", "f": "read"},
    ]
    text = "\n \n".join(json.dumps(line) for line in lines) + "\n\n"
    path.write_text(text)
    expected = whole_file_calls(path)
    assert any(call.complete_index is None for call in expected)  # process 2 never completes
    for count in range(1, len(text) + 1, 3):
        calls, border = calls_by_ranges(path, count)
        assert calls == expected, count
        assert (border.operations, border.calls) == (len(lines), len(expected)), count


def test_an_invocation_while_open_across_a_border_is_an_error(tmp_path):
    path = tmp_path / "history.jsonl"
    operations = [
        Operation(0, 0, OpType.INVOKE, "read"),
        Operation(1, 1, OpType.INVOKE, "read"),
        Operation(2, 1, OpType.OK, "read", 3),
        Operation(3, 0, OpType.INVOKE, "read"),
    ]
    write_jsonl(path, operations)
    with pytest.raises(HistoryError, match="invokes 'read' while its 'read' \\(index 0\\)"):
        calls_by_ranges(path, 4)


def test_a_completion_without_invocation_across_a_border_is_reported(tmp_path):
    path = tmp_path / "history.jsonl"
    operations = [
        Operation(0, 0, OpType.INVOKE, "read"),
        Operation(1, 0, OpType.OK, "read", 1),
        Operation(2, 1, OpType.INVOKE, "read"),
        Operation(3, 1, OpType.OK, "read", 1),
        Operation(4, 0, OpType.OK, "read", 1),  # process 0 has nothing open
    ]
    write_jsonl(path, operations)
    size = path.stat().st_size
    offset = size - len(path.read_text().splitlines()[-1]) - 1
    plan = Plan("register")
    rows = [
        (kind, part, payload)
        for start, end in [(0, offset), (offset, size)]
        for _, kind, part, payload in distributed.range_rows(plan, str(path), start, end, [0], str(path))
    ]
    gathered = distributed.gather(distributed.check_rows(plan, rows, None))
    error = gathered.first_error()
    assert error is not None and "without an open invocation" in error[1]


@given(
    st.lists(st.sampled_from(["lost-write", "duplicate", "poll-skip", "nonmonotonic-poll"]), max_size=2),
    st.integers(1, 40),
    st.integers(0, 2**16),
)
@settings(max_examples=15, deadline=None)
def test_stages_give_the_local_engines_results(anomalies, ranges, seed):
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"kafkaspec-distributed-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"history-{seed}-{ranges}.jsonl"
    write_jsonl(path, generate_history(400, 4, seed=seed, anomalies=anomalies), overwrite=True)
    try:
        assert comparable(run_stages(Plan("kafka"), path, ranges)) == comparable(local_results(path))
    finally:
        path.unlink()


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
    for ranges in (1, 3):
        results = run_stages(Plan("kafka"), path, ranges)
        assert comparable(results) == comparable(expected)


def test_transactions_get_the_cycle_part(tmp_path):
    builder = KafkaHistoryBuilder()
    builder.invoke(1, "txn", [["send", "x", 1], ["poll"]])
    builder.invoke(2, "txn", [["send", "y", 2], ["poll"]])
    builder.complete(1, "ok", [["send", "x", [0, 1]], ["poll", {"y": [[0, 2]]}]])
    builder.complete(2, "ok", [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    path = tmp_path / "txn.jsonl"
    write_jsonl(path, builder.operations)
    results = run_stages(Plan("kafka"), path, 2)
    assert comparable(results) == comparable(local_results(path))
    assert any(r.partition == "cross-key cycles" and r.verdict is Verdict.INVALID for r in results)


def test_calls_survive_the_trip_through_bytes():
    call = Call(
        "nemesis", "cas", [1, 2**70], {"a": [None, 1.5]}, distributed._OUTCOME_BY_CODE["ok"], 3, 4, "k\ud800"
    )
    assert distributed.decode_call(distributed.encode_call(call)) == call


@pytest.mark.parametrize(
    ("output", "completion"), [(1, True), ([1, 0], [True, False]), (2, 2.0), ({"a": 1}, {"a": True})]
)
def test_an_output_equal_but_not_identical_to_the_completion_keeps_its_types(output, completion):
    ok = distributed._OUTCOME_BY_CODE["ok"]
    call = Call(0, "read", None, output, ok, 3, 4, completion_value=completion)
    back = distributed.decode_call(distributed.encode_call(call))
    assert json.dumps(back.output) == json.dumps(output)
    assert json.dumps(back.completion_value) == json.dumps(completion)


def fast_pieces(invocation: distributed.Op, completion: distributed.Op) -> list[tuple[str, list[Any]]] | None:
    """`distributed._fast_pieces` as a list of (key, fields) in the order they were added."""
    added: dict[str, list[bytes]] = {}
    if not distributed._fast_pieces(invocation, completion, added):
        assert not added
        return None
    return [(key, distributed._loads(encoded)) for key, entries in added.items() for encoded in entries]


def pieces_of(call: Call) -> list[tuple[str, list[Any]]]:
    """What stage 1 ships of a call the general way (`split_call`, then `_piece_fields`)."""
    split = split_call(call)
    several = len(split) > 1 and call.outcome is Outcome.INFO and distributed._sends_to_several_keys(call)
    return [(key, distributed._piece_fields(piece) + ([1] if several else [])) for key, piece in split]


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


def _pairs_of(path: Path) -> list[tuple[distributed.Op, distributed.Op | None]]:
    border = distributed.RangeBorder()
    size = path.stat().st_size
    return list(distributed.range_pairs(str(path), 0, size, str(path), border))


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
        for invocation, completion in _pairs_of(path):
            if completion is None:
                continue
            pieces = fast_pieces(invocation, completion)
            if pieces is None:
                continue
            fast += 1
            call = distributed._call(invocation, completion)
            assert pieces == pieces_of(call)
            for key, fields in pieces:
                shipped = distributed._piece_from_fields(fields, key)
                assert checked_view(shipped) == checked_view(dict(split_call(call))[key])
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
    pieces = fast_pieces(invocation, completion)
    call = distributed._call(invocation, completion)
    try:
        expected = pieces_of(call)
    except HistoryError:
        assert pieces is None  # the general way reports it
        return
    assert pieces is None or pieces == expected


def test_new_call_makes_the_same_call_as_the_constructor():
    fields = ("nemesis", "cas", [1, 2], {"a": None}, Outcome.FAIL, 3, None, "k", 5, None, [7])
    made = new_call(*fields)
    assert made == Call(*fields)
    assert repr(made) == repr(Call(*fields))
    with pytest.raises(AttributeError):
        made.f = "read"  # type: ignore[misc]  # still frozen


@pytest.mark.parametrize(
    ("given", "done", "shared"),
    [
        ([1, 2], [1, 2], True),
        ([1, 2], [1, 3], False),
        ([1], [True], False),
        ([1], [1.0], False),
        (None, [1], False),
    ],
)
def test_an_assignment_travels_with_its_keys_once_and_comes_back_equal(given, done, shared):
    call = Call(3, "assign", given, done, Outcome.OK, 1, 2, None, 5, 6, done)
    [fields] = distributed._unpack(distributed._pack([distributed._subscription_fields(call)]))
    back = distributed._call_from_fields(fields)
    assert back == call
    assert [type(v) for v in back.input or []] == [type(v) for v in given or []]
    assert (back.input is back.completion_value) is shared


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 20])
def test_long_integers_are_read_exactly_whatever_the_blocks(tmp_path, monkeypatch, block):
    # orjson would read these as floats (beyond 2**64, below -2**63); the blocks checked for
    # long integers must send each such line, wherever it falls, the standard library's way.
    monkeypatch.setattr(distributed, "_CHECKED_BYTES", block)
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
        calls = calls_by_ranges(path, count)[0]
        assert calls == expected
        assert [type(call.input) for call in calls] == [type(call.input) for call in expected]


@pytest.mark.parametrize("window", [1, 2, 7])
def test_pieces_packed_in_windows_give_the_same_results(tmp_path, monkeypatch, window):
    monkeypatch.setattr(distributed, "_WINDOW_CALLS", window)
    path = tmp_path / "history.jsonl"
    write_jsonl(
        path, generate_history(300, 4, seed=window, anomalies=["lost-write", "poll-skip"], txn_share=0.1)
    )
    for ranges in (1, 5):
        assert comparable(run_stages(Plan("kafka"), path, ranges)) == comparable(local_results(path))


ODD_JSON = [
    float("nan"),
    float("inf"),
    -float("inf"),
    2**70,
    -(2**63) - 1,
    "lone \ud800 surrogate",
    None,
    [1.5, None, {"k": [float("nan")]}],
]


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values, types and all, with NaN equal to NaN."""
    return json.dumps(left) == json.dumps(right)


@pytest.mark.parametrize("value", ODD_JSON)
def test_values_orjson_cannot_write_exactly_travel_exactly(value):
    # orjson writes NaN and infinities as null, and refuses long integers and lone surrogates.
    assert same_json(distributed._loads(distributed._dumps(value)), value)
    call = Call(2, "write", value, value, Outcome.OK, 4, 5, None, None, None, value)
    back = distributed.decode_call(distributed.encode_call(call))
    assert same_json([back.input, back.output, back.completion_value], [value] * 3)


def test_pieces_joined_come_back_as_they_went_whatever_their_encoding():
    pieces = [[3, "send", value, "ok", index, index + 1] for index, value in enumerate([*ODD_JSON, 7, "x"])]
    joined = distributed._join_pieces([distributed._dumps(piece) for piece in pieces])
    assert same_json(distributed._loads(joined), pieces)
    plain = pieces[-2:]
    assert distributed._join_pieces([distributed._dumps(piece) for piece in plain]) == orjson.dumps(plain)


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
    for ranges in (1, 3):
        assert comparable(run_stages(Plan("kafka"), path, ranges)) == comparable(local)
