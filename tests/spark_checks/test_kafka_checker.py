"""The Kafka checker: one small history per anomaly, validity rules, P-compositionality, scale."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks.history import Call, CheckResult, HistoryError, Outcome, Verdict, pair_calls
from spark_checks.kafka_checker import (
    ALL_KEYS,
    PER_KEY_ANOMALY_TYPES,
    Assignments,
    _parse,
    _restrict,
    _restrict_each,
    check_kafka,
    check_kafka_key,
    committed_info_calls,
    merge_results,
    partition_key,
    split_by_key,
    split_call,
)
from spark_checks.kafka_histories import (
    INJECTABLE_ANOMALIES,
    HistoryGenerator,
    KafkaHistoryBuilder,
    generate_history,
)

# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def check(builder: KafkaHistoryBuilder, **options: Any) -> CheckResult:
    return check_kafka(builder.calls(), **options)


def anomalies(result: CheckResult) -> dict[str, list[dict[str, Any]]]:
    found = result.evidence["anomalies"]
    assert isinstance(found, dict)
    return found


def the(result: CheckResult, name: str) -> dict[str, Any]:
    """The one record of this anomaly type."""
    records = anomalies(result)[name]
    assert len(records) == 1, records
    return records[0]


def at(record: dict[str, Any]) -> tuple[int, int | None]:
    """A record's operation as (invoke index, complete index)."""
    return (record["invoke_index"], record["complete_index"])


def per_key(calls: list[Call], **options: Any) -> CheckResult:
    """Check every key separately and merge (what the engine does)."""
    committed = committed_info_calls(calls)
    results = [
        check_kafka_key(key, part, committed_info=committed, **options)
        for key, part in split_by_key(calls).items()
    ]
    return merge_results(results)


def per_key_types(result: CheckResult) -> dict[str, Any]:
    return {name: records for name, records in anomalies(result).items() if name in PER_KEY_ANOMALY_TYPES}


def three_sends(builder: KafkaHistoryBuilder, key: str = "x") -> list[tuple[int, int | None]]:
    calls = []
    for value in (10, 11, 12):
        builder.send(0, key, value)
        calls.append(builder.last_call)
    return calls


# ---------------------------------------------------------------------------------------
# valid histories
# ---------------------------------------------------------------------------------------


def test_valid_history_with_several_producers_and_consumers() -> None:
    b = KafkaHistoryBuilder()
    b.assign(10, ["x", "y"])
    b.assign(11, ["x"])
    # Overlapping sends by three producers; offsets are assigned in completion order.
    b.invoke(0, "send", [["send", "x", 1]])
    b.invoke(1, "send", [["send", "y", 2]])
    b.invoke(2, "send", [["send", "x", 3], ["send", "y", 4]])
    b.complete(1, "ok", [["send", "y", [b.record("y", 2), 2]]])
    b.complete(0, "ok", [["send", "x", [b.record("x", 1), 1]]])
    b.poll(10, {"x": [0], "y": [0]})
    b.complete(2, "ok", [["send", "x", [b.record("x", 3), 3]], ["send", "y", [b.record("y", 4), 4]]])
    b.poll(11, {"x": [0, 1]})
    b.send(1, "x", 5)
    b.poll(10, {"x": [1, 2], "y": [1]})
    b.poll(11, {"x": [2]})
    b.poll(10, {})
    result = check(b)
    assert result.verdict is Verdict.VALID
    assert result.evidence["anomalies"] == {}
    assert result.evidence["invalid_because"] == []
    assert result.checker == "kafka" and result.model == "kafka" and result.partition is None
    assert result.operations == len(b.calls())
    assert result.conventions["sub_via"] == ["assign"]
    assert per_key(b.calls()).verdict is Verdict.VALID


def test_crash_commit_and_debug_calls_are_tolerated() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, "x", 1)
    b.other(9, "debug-topic-partitions", ["x"])
    b.assign(1, ["x"])
    b.poll(1, {"x": [0]})
    b.other(1, "commit", {"x": 0})
    b.crash(1)
    b.send(0, "x", 2)
    b.invoke(0, "start-partition")  # a call that never completes
    b.assign(2, ["x"])
    b.poll(2, {"x": [0, 1]})
    result = check(b)
    assert result.verdict is Verdict.VALID, result.evidence


def test_keys_are_compared_as_strings() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, 7, 100)  # JSON: ["send", 7, 100]
    b.poll(1, {7: [0]})  # JSON: ["poll", {"7": [[0, 100]]}]
    result = check(b)
    assert result.verdict is Verdict.VALID
    assert result.evidence["keys"] == 1
    assert partition_key(b.calls()[0]) == ("7",)


# ---------------------------------------------------------------------------------------
# lost writes, and what is not one
# ---------------------------------------------------------------------------------------


def test_lost_write() -> None:
    b = KafkaHistoryBuilder()
    sends = three_sends(b)  # 10, 11, 12 at offsets 0, 1, 2
    b.poll(1, {"x": [0]})
    b.poll(2, {"x": [2]})
    max_read = b.last_call
    result = check(b)
    lost = the(result, "lost-write")
    assert (lost["key"], lost["value"], lost["offset"], lost["index"], lost["max-read-index"]) == (
        "x",
        11,
        1,
        1,
        2,
    )
    assert at(lost["writer"]) == sends[1]
    assert at(lost["max-read"]) == max_read
    # Nobody read 11: it is also unseen. Different processes polled, so no poll-skip.
    assert set(anomalies(result)) == {"lost-write", "unseen"}
    assert result.verdict is Verdict.INVALID
    assert result.evidence["invalid_because"] == ["lost-write", "unseen"]


def test_unread_values_above_the_highest_read_are_unseen_not_lost() -> None:
    b = KafkaHistoryBuilder()
    sends = three_sends(b)
    b.poll(1, {"x": [0, 1]})
    result = check(b)
    assert set(anomalies(result)) == {"unseen"}
    unseen = the(result, "unseen")
    assert (unseen["key"], unseen["count"], unseen["values"]) == ("x", 1, [12])
    assert [at(w) for w in unseen["writers"]] == [sends[2]]
    assert result.verdict is Verdict.INVALID  # unseen at the end is an error (jepsen checker)


def test_indeterminate_send_never_read_is_not_lost() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, "x", 10)
    b.send(1, "x", 11, outcome="info")  # may or may not have happened: its completion has no offset
    b.reserve("x")  # ... and it did not (a hole at offset 1)
    b.send(0, "x", 12)
    b.send(0, "x", 13, outcome="fail")  # definitely did not happen
    b.poll(2, {"x": [0, 2]})
    result = check(b)
    assert result.verdict is Verdict.VALID, anomalies(result)
    assert anomalies(result) == {}


def test_lost_writes_below_a_read_value_of_an_indeterminate_send() -> None:
    """a at 0, b at 1 and d at 3 acknowledged; an info send of c is read at offset 2: a and b
    should have been read (d is above: only unseen)."""
    b = KafkaHistoryBuilder()
    b.send(0, "x", "a")
    send_a = b.last_call
    b.send_many(0, [("x", "b"), ("x", "d")], offsets=[1, 3])
    send_bd = b.last_call
    b.send(1, "x", "c", outcome="info", logged=True, offset=2)
    b.poll(0, {"x": [2]})
    poll = b.last_call
    result = check(b)
    lost = anomalies(result)["lost-write"]
    assert [
        (r["value"], r["index"], r["max-read-index"], at(r["writer"]), at(r["max-read"])) for r in lost
    ] == [
        ("a", 0, 2, send_a, poll),
        ("b", 1, 2, send_bd, poll),
    ]


def test_lost_write_hidden_by_an_inconsistent_offset() -> None:
    """a is acknowledged at 0, then b at 0 and c at 2; reading b and c means a was lost,
    although the version order may represent offset 0 by either value."""
    b = KafkaHistoryBuilder()
    b.send(0, "x", "a", offset=0)
    send_a = b.last_call
    b.send_many(0, [("x", "b"), ("x", "c")], offsets=[0, 2])
    b.poll(0, {"x": [(0, "b"), (2, "c")]})
    poll = b.last_call
    result = check(b)
    lost = the(result, "lost-write")
    assert (lost["value"], lost["index"], lost["max-read-index"]) == ("a", 0, 1)
    assert (at(lost["writer"]), at(lost["max-read"])) == (send_a, poll)
    assert the(result, "inconsistent-offsets")["values"] == ["a", "b"]


def test_version_order_from_polls_and_committed_indeterminate_sends() -> None:
    b = KafkaHistoryBuilder()
    b.poll(0, {"x": [(0, "a"), (1, "b")]}, f="txn")
    b.invoke(1, "txn", [["send", "x", "c"], ["send", "x", "b"], ["send", "x", "d"]])
    b.complete(1, "info", [["send", "x", [1, "c"]], ["send", "x", [3, "b"]], ["send", "x", [4, "d"]]])
    result = check(b)
    clash = the(result, "inconsistent-offsets")  # b was read, so the info txn committed
    assert (clash["offset"], clash["index"], clash["values"]) == (1, 1, ["b", "c"])
    assert the(result, "duplicate")["offsets"] == [1, 3]


def test_indeterminate_send_with_a_read_value_must_have_committed() -> None:
    """An info send of a to x and b to y (offset 0 known); c is later read at y's offset 1.
    Only if some value of the send was read (a, on another key) must b have been written,
    and then b is lost."""

    def history(read_a: bool) -> KafkaHistoryBuilder:
        b = KafkaHistoryBuilder()
        b.invoke(0, "send", [["send", "x", "a"], ["send", "y", "b"]])
        b.complete(0, "info", [["send", "x", "a"], ["send", "y", [0, "b"]]])
        b.send(1, "y", "c", outcome="info", logged=True, offset=1)
        if read_a:
            b.poll(2, {"x": [(0, "a")]})
        b.poll(3, {"y": [1]})
        return b

    assert check(history(read_a=False)).verdict is Verdict.VALID
    with_a = history(read_a=True)
    result = check(with_a)
    lost = the(result, "lost-write")
    assert (lost["key"], lost["value"], lost["index"], lost["max-read-index"]) == ("y", "b", 0, 1)
    assert at(lost["writer"]) == (0, 1)
    assert lost["writer"]["type"] == "info"
    # Per key, the evidence is on another key: exact only with committed_info.
    calls = with_a.calls()
    y_alone = check_kafka_key("y", split_by_key(calls)["y"])
    assert "lost-write" not in anomalies(y_alone)
    assert per_key_types(per_key(calls)) == per_key_types(result)


# ---------------------------------------------------------------------------------------
# duplicates and inconsistent offsets
# ---------------------------------------------------------------------------------------


def test_duplicate() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, "x", 10)
    writer = b.last_call
    b.record("x", 10)  # the broker stores it again at offset 1
    b.poll(1, {"x": [0, 1]})
    reader = b.last_call
    result = check(b)
    duplicate = the(result, "duplicate")
    assert (duplicate["key"], duplicate["value"], duplicate["count"], duplicate["offsets"]) == (
        "x",
        10,
        2,
        [0, 1],
    )
    assert at(duplicate["writer"]) == writer
    assert at(duplicate["first_reader"]) == reader
    assert result.verdict is Verdict.INVALID
    assert "duplicate" in result.evidence["invalid_because"]


def test_inconsistent_offsets() -> None:
    """Two acknowledged sends at the same offset (Jepsen's real-world example); the log
    kept the second, so the first is also lost."""
    b = KafkaHistoryBuilder()
    b.send(379, 11, 641, offset=537)
    first = b.last_call
    b.send(363, 11, 645, offset=537)
    second = b.last_call
    b.poll(5, {11: [537]})
    result = check(b)
    clash = the(result, "inconsistent-offsets")
    assert (clash["key"], clash["offset"], clash["index"], clash["values"]) == ("11", 537, 0, [641, 645])
    assert [at(w) for w in clash["writers"]] == [first, second]
    assert set(anomalies(result)) == {"inconsistent-offsets", "lost-write", "unseen"}
    assert the(result, "lost-write")["value"] == 641
    assert result.verdict is Verdict.INVALID


def test_an_unread_info_send_does_not_make_offsets_inconsistent() -> None:
    b = KafkaHistoryBuilder()
    b.invoke(0, "send", [["send", "x", 1], ["send", "y", 1]])
    b.complete(0, "info", [["send", "x", [0, 1]], ["send", "y", 1]])
    b.send(1, "x", 2, offset=0)
    b.poll(2, {"x": [0]})
    assert "inconsistent-offsets" not in anomalies(check(b))
    b.poll(3, {"y": [(5, 1)]})  # the info send's y value was read: it committed
    assert the(check(b), "inconsistent-offsets")["values"] == [1, 2]


# ---------------------------------------------------------------------------------------
# per-process order: poll-skip, nonmonotonic-poll, nonmonotonic-send
# ---------------------------------------------------------------------------------------


def skipping(subscription: str) -> tuple[KafkaHistoryBuilder, tuple[int, int | None], tuple[int, int | None]]:
    b = KafkaHistoryBuilder()
    three_sends(b)
    getattr(b, subscription)(1, ["x"])
    b.poll(1, {"x": [0]})
    first = b.last_call
    b.poll(1, {"x": [2]})  # 11 skipped
    second = b.last_call
    b.poll(2, {"x": [1]})  # another consumer reads it: no lost write
    return b, first, second


def test_poll_skip_is_an_error_under_assign() -> None:
    b, first, second = skipping("assign")
    result = check(b)
    skip = the(result, "poll-skip")
    assert (skip["key"], skip["delta"], skip["skipped"], skip["values"]) == ("x", 2, [11], [10, 12])
    assert [at(op) for op in skip["ops"]] == [first, second]
    assert set(anomalies(result)) == {"poll-skip"}
    assert result.verdict is Verdict.INVALID
    assert result.evidence["invalid_because"] == ["poll-skip"]


def test_poll_skip_is_allowed_under_subscribe() -> None:
    b, first, second = skipping("subscribe")
    result = check(b)
    assert [at(op) for op in the(result, "poll-skip")["ops"]] == [first, second]  # still reported
    assert result.verdict is Verdict.VALID
    assert result.evidence["invalid_because"] == []
    assert result.conventions["sub_via"] == ["subscribe"]
    assert "poll-skip" in result.conventions["allowed_error_types"]
    # The test's configuration, when given, wins over what the history shows.
    assert check(b, sub_via={"assign"}).verdict is Verdict.INVALID


def test_assign_without_the_key_forgets_its_position() -> None:
    def history(*middle: tuple[str, list[str], str]) -> KafkaHistoryBuilder:
        b = KafkaHistoryBuilder()
        three_sends(b)
        b.poll(1, {"x": [0]})
        for f, keys, outcome in middle:
            getattr(b, f)(1, keys, outcome=outcome)
        b.poll(1, {"x": [2]})
        b.poll(2, {"x": [1]})
        return b

    assert "poll-skip" not in anomalies(check(history(("assign", ["y"], "ok"), ("assign", ["x"], "ok"))))
    assert "poll-skip" not in anomalies(check(history(("subscribe", ["y"], "info"))))
    assert "poll-skip" in anomalies(check(history(("assign", ["y"], "fail"))))
    assert "poll-skip" in anomalies(check(history(("assign", ["x", "y"], "ok"))))


def test_nonmonotonic_poll() -> None:
    b = KafkaHistoryBuilder()
    three_sends(b)
    b.assign(1, ["x"])
    b.poll(1, {"x": [0, 1]})
    first = b.last_call
    b.poll(1, {"x": [1, 2]})  # reads 11 again
    second = b.last_call
    result = check(b)
    backwards = the(result, "nonmonotonic-poll")
    assert (backwards["values"], backwards["delta"], backwards["offsets"]) == ([11, 11], 0, [1, 1])
    assert [at(op) for op in backwards["ops"]] == [first, second]
    assert result.verdict is Verdict.INVALID
    b.subscribe(1, ["x"])
    assert check(b).verdict is Verdict.VALID


def test_failed_and_indeterminate_polls_are_compared_but_do_not_move_the_position() -> None:
    """Jepsen's 'txn abort' cases: an aborted transaction's polls must start where the last
    committed one left off, and the next one starts there again."""

    def history(second: list[int], third: list[int], last: list[int]) -> KafkaHistoryBuilder:
        b = KafkaHistoryBuilder()
        b.send_many(0, [("x", v) for v in range(6)])
        b.poll(1, {"x": [0]}, f="txn")
        b.poll(1, {"x": second}, f="txn", outcome="fail")
        b.poll(1, {"x": third}, f="txn", outcome="info")
        b.poll(1, {"x": last}, f="txn")
        b.poll(2, {"x": [1, 2, 3, 4, 5]})
        return b

    assert check(history([1, 2], [1, 2], [1, 2, 3, 4, 5])).verdict is Verdict.VALID
    b = history([1, 2], [3, 4], [5])
    result = check(b)
    skips = anomalies(result)["poll-skip"]
    ok_poll = (2, 3)
    assert [(s["delta"], s["skipped"], [at(op) for op in s["ops"]]) for s in skips] == [
        (3, [1, 2], [ok_poll, (6, 7)]),
        (5, [1, 2, 3, 4], [ok_poll, (8, 9)]),
    ]
    assert skips[0]["ops"][1]["type"] == "info"


def test_nonmonotonic_send() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, "x", 10, offset=1)
    first = b.last_call
    b.send(0, "x", 11, offset=0)  # the same producer's next send lands before it
    second = b.last_call
    b.poll(1, {"x": [0, 1]})
    result = check(b)
    backwards = the(result, "nonmonotonic-send")
    assert (backwards["values"], backwards["delta"], backwards["offsets"]) == ([10, 11], -1, [1, 0])
    assert [at(op) for op in backwards["ops"]] == [first, second]
    assert set(anomalies(result)) == {"nonmonotonic-send"}
    assert result.verdict is Verdict.INVALID


# ---------------------------------------------------------------------------------------
# inside one call: int-*
# ---------------------------------------------------------------------------------------


def test_int_poll_skip() -> None:
    b = KafkaHistoryBuilder()
    three_sends(b)
    b.poll(1, {"x": [0, 2]})
    poll = b.last_call
    b.poll(2, {"x": [1]})
    result = check(b)
    skip = the(result, "int-poll-skip")
    assert (skip["values"], skip["delta"], skip["skipped"]) == ([10, 12], 2, [11])
    assert at(skip["op"]) == poll
    assert set(anomalies(result)) == {"int-poll-skip"}
    assert result.verdict is Verdict.INVALID


def test_int_nonmonotonic_poll() -> None:
    b = KafkaHistoryBuilder()
    three_sends(b)
    b.poll(1, {"x": [0, 2, 1]})
    result = check(b)
    records = anomalies(result)
    assert [(r["values"], r["delta"]) for r in records["int-nonmonotonic-poll"]] == [([12, 11], -1)]
    assert [(r["values"], r["delta"]) for r in records["int-poll-skip"]] == [([10, 12], 2)]
    assert result.verdict is Verdict.INVALID


def test_int_send_skip_is_allowed() -> None:
    b = KafkaHistoryBuilder()
    b.send_many(0, [("x", 10), ("x", 12)], offsets=[0, 2])
    call = b.last_call
    b.send(1, "x", 11, offset=1)  # another producer's value lands between them
    b.poll(2, {"x": [0, 1, 2]})
    result = check(b)
    skip = the(result, "int-send-skip")
    assert (skip["values"], skip["delta"], skip["skipped"]) == ([10, 12], 2, [11])
    assert at(skip["op"]) == call
    assert result.verdict is Verdict.VALID  # transactions interleave: always allowed


def test_int_nonmonotonic_send() -> None:
    b = KafkaHistoryBuilder()
    b.send_many(0, [("x", 10), ("x", 11)], offsets=[1, 0])
    call = b.last_call
    b.poll(2, {"x": [0, 1]})
    result = check(b)
    backwards = the(result, "int-nonmonotonic-send")
    assert (backwards["values"], backwards["delta"]) == ([10, 11], -1)
    assert at(backwards["op"]) == call
    assert result.verdict is Verdict.INVALID


# ---------------------------------------------------------------------------------------
# transactions: aborted reads, own writes, cycles
# ---------------------------------------------------------------------------------------


def test_aborted_read_G1a() -> None:
    b = KafkaHistoryBuilder()
    b.send_many(0, [("x", 2), ("y", 3)], outcome="fail", logged=True)  # failed, yet stored
    writer = b.last_call
    b.poll(1, {"x": [0]})
    reader = b.last_call
    result = check(b)
    g1a = the(result, "G1a")
    assert (g1a["key"], g1a["value"], g1a["offset"]) == ("x", 2, 0)
    assert at(g1a["writer"]) == writer and g1a["writer"]["type"] == "fail"
    assert at(g1a["reader"]) == reader
    assert set(anomalies(result)) == {"G1a"}
    assert result.verdict is Verdict.INVALID
    assert per_key_types(per_key(b.calls())) == per_key_types(result)  # G1a is per key


def test_precommitted_read() -> None:
    b = KafkaHistoryBuilder()
    b.invoke(0, "txn", [["send", "x", 5], ["poll"]])
    b.complete(0, "ok", [["send", "x", [0, 5]], ["poll", {"x": [[0, 5]]}]])
    txn = b.last_call
    result = check(b)
    own = the(result, "precommitted-read")
    assert (own["key"], own["value"]) == ("x", 5)
    assert at(own["op"]) == txn
    assert result.verdict is Verdict.INVALID


def test_valid_transactions() -> None:
    b = KafkaHistoryBuilder()
    b.send(0, "in", 1)
    b.send(0, "in", 2)
    b.assign(1, ["in"])
    b.txn(1, [("poll", {"in": [0]}), ("send", "out", 101)])  # read-process-write
    b.txn(1, [("poll", {"in": [1]}), ("send", "out", 102)])
    b.txn(2, [("poll", {"out": [0, 1]})])
    b.txn(0, [("send", "in", 3), ("send", "out", 103)], outcome="fail")
    result = check(b)
    assert result.verdict is Verdict.VALID, anomalies(result)


def test_G1c_cycle_between_two_transactions() -> None:
    b = KafkaHistoryBuilder()
    b.invoke(1, "txn", [["send", "x", 1], ["poll"]])
    b.invoke(2, "txn", [["send", "y", 2], ["poll"]])
    b.complete(1, "ok", [["send", "x", [0, 1]], ["poll", {"y": [[0, 2]]}]])
    t1 = b.last_call
    b.complete(2, "ok", [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    t2 = b.last_call
    result = check(b)
    cycle = the(result, "G1c")
    assert sorted(at(op) for op in cycle["cycle"]) == [t1, t2]
    assert {(step["type"], step["key"]) for step in cycle["steps"]} == {("wr", "x"), ("wr", "y")}
    assert "G1c-realtime" not in anomalies(result)  # implied by G1c in the same component
    assert result.verdict is Verdict.INVALID
    # Whole-history only: the per-key parts cannot see it.
    assert per_key(b.calls()).verdict is Verdict.VALID


def test_G1c_realtime_read_from_the_future() -> None:
    b = KafkaHistoryBuilder()
    b.poll(1, {"x": [(0, 7)]})  # completes before the send of 7 was invoked
    poll = b.last_call
    b.send(0, "x", 7, offset=0)
    send = b.last_call
    result = check(b)
    cycle = the(result, "G1c-realtime")
    assert [at(op) for op in cycle["cycle"]] == [poll, send] or [at(op) for op in cycle["cycle"]] == [
        send,
        poll,
    ]
    assert sorted(step["type"] for step in cycle["steps"]) == ["realtime", "wr"]
    assert result.verdict is Verdict.INVALID
    assert per_key(b.calls()).verdict is Verdict.VALID


def test_G1c_realtime_through_transactions() -> None:
    """T1 reads T2's value, T2 reads the value of a send invoked after T1 completed: a
    three-call cycle with one realtime edge and no pure wr cycle."""
    b = KafkaHistoryBuilder()
    b.invoke(2, "txn", [["poll"], ["send", "y", 20]])
    b.invoke(1, "txn", [["poll"]])
    b.complete(1, "ok", [["poll", {"y": [[0, 20]]}]])
    b.send(0, "x", 30)
    b.complete(2, "ok", [["poll", {"x": [[0, 30]]}], ["send", "y", [0, 20]]])
    result = check(b)
    cycle = the(result, "G1c-realtime")
    assert len(cycle["cycle"]) == 3
    assert sorted(step["type"] for step in cycle["steps"]) == ["realtime", "wr", "wr"]


# ---------------------------------------------------------------------------------------
# other cases
# ---------------------------------------------------------------------------------------


def test_value_without_a_writer_is_reported() -> None:
    b = KafkaHistoryBuilder()
    b.poll(1, {"x": [(0, 99)]})
    result = check(b)
    phantom = the(result, "no-writer-of-value")
    assert (phantom["key"], phantom["value"], phantom["offset"]) == ("x", 99, 0)
    assert result.verdict is Verdict.INVALID


def test_malformed_micro_operation_is_a_history_error() -> None:
    b = KafkaHistoryBuilder()
    b.invoke(0, "poll", [["poll"]])
    b.complete(0, "ok", [["poll", {"x": [[0, 1, 2]]}]])
    with pytest.raises(HistoryError, match="index 1"):
        check(b)
    b = KafkaHistoryBuilder()
    b.invoke(0, "send", [["send", "x"]])
    b.complete(0, "ok")
    with pytest.raises(HistoryError, match="send"):
        check(b)


@pytest.mark.parametrize("pairs", [[[]], [[0, 1], 7], [{"offset": 0}]])
def test_a_malformed_pair_is_a_history_error_in_a_calls_facts(pairs: list[Any]) -> None:
    # The whole-history part's facts (`call_facts`, made in stage 1) read each pair's offset:
    # an empty pair was an IndexError there, a crash, before any check named the call.
    from spark_checks.kafka_checker import call_facts, plain_poll_offsets

    b = KafkaHistoryBuilder()
    b.invoke(0, "poll", [["poll"]])
    b.complete(0, "ok", [["poll", {"x": pairs}]])
    (call,) = b.calls()
    assert plain_poll_offsets(call.output) is None  # the long way, which names the call
    with pytest.raises(HistoryError, match=r"index 1\): expected \[offset, value\] pairs"):
        call_facts(call)


@pytest.mark.parametrize(
    ("outcome", "sent", "polled"),
    [
        ("ok", ["a", 5], [[1, 6]]),  # a string offset in a send, among int ones
        ("ok", [0, 5], [[1, 6], ["a", 5]]),  # in a poll
        ("ok", [0, 5], [[1, 6], [0.5, 5]]),  # a float offset in a poll
        ("info", ["a", 5], [[1, 6], [2, 5]]),  # an info send whose value was read
    ],
)
def test_an_offset_that_is_no_integer_is_a_history_error(
    outcome: str, sent: list[Any], polled: list[Any]
) -> None:
    # Offsets order a key's log: one that is no integer was a TypeError when the log was
    # sorted (an internal error, exit 70) or, alone, a log ordered by strings.
    b = KafkaHistoryBuilder()
    b.invoke(0, "send", [["send", "x", 5]])
    b.complete(0, outcome, [["send", "x", sent]])
    b.invoke(1, "send", [["send", "x", 6]])
    b.complete(1, "ok", [["send", "x", [1, 6]]])
    b.invoke(1, "poll", [["poll"]])
    b.complete(1, "ok", [["poll", {"x": polled}]])
    with pytest.raises(HistoryError, match=r"each offset an integer or null"):
        check(b)
    with pytest.raises(HistoryError, match=r"each offset an integer or null"):
        per_key(b.calls())


def test_split_call_and_partition_key() -> None:
    b = KafkaHistoryBuilder()
    b.assign(1, ["x", "y"])
    b.txn(0, [("send", "x", 1), ("send", "y", 2), ("poll", {"x": [0]})])
    b.other(1, "crash")
    assign, txn, crash = b.calls()
    assert partition_key(assign) is ALL_KEYS
    assert partition_key(crash) == ()
    assert partition_key(txn) == ("x", "y")
    pieces = dict(split_call(txn))
    assert pieces["y"].output == [["send", "y", [0, 2]], ["poll", {}]]
    assert pieces["x"].output == [["send", "x", [0, 1]], ["poll", {"x": [[0, 1]]}]]
    assert pieces["x"].key == "x"
    assert split_call(assign) == []
    parts = split_by_key(b.calls())
    assert [c.f for c in parts["x"]] == ["assign", "txn"]


def test_max_per_type_keeps_exact_counts() -> None:
    b = KafkaHistoryBuilder()
    for value in range(5):
        b.send(0, "x", value)
        b.send(0, "y", value)
    result = check(b, max_per_type=1)
    assert result.evidence["anomaly_counts"] == {"unseen": 2}
    assert len(anomalies(result)["unseen"]) == 1
    merged = merge_results(
        [check_kafka_key(key, part, max_per_type=1) for key, part in split_by_key(b.calls()).items()],
        max_per_type=1,
    )
    assert merged.evidence["anomaly_counts"] == {"unseen": 2}
    assert anomalies(merged) == anomalies(result)


# ---------------------------------------------------------------------------------------
# P-compositionality: per key + merge == whole history, on generated histories
# ---------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    n_calls=st.integers(20, 400),
    n_keys=st.integers(1, 6),
    seed=st.integers(0, 2**32),
    injected=st.lists(st.sampled_from(INJECTABLE_ANOMALIES), unique=True, max_size=4),
    txn_share=st.sampled_from([0.0, 0.2]),
    fail_share=st.sampled_from([0.0, 0.05, 0.2]),
)
def test_per_key_split_and_merge_equals_whole_history(
    n_calls: int, n_keys: int, seed: int, injected: list[str], txn_share: float, fail_share: float
) -> None:
    operations = generate_history(
        n_calls,
        n_keys,
        seed,
        injected,
        producers=3,
        consumers=2,
        txn_share=txn_share,
        fail_share=fail_share,
        info_share=fail_share,
        crash_share=0.02,
    )
    calls = list(pair_calls(operations))
    whole = check_kafka(calls)
    merged = per_key(calls)
    assert merged.evidence["anomalies"] == per_key_types(whole)
    assert merged.evidence["anomaly_counts"] == {
        name: count
        for name, count in whole.evidence["anomaly_counts"].items()
        if name in PER_KEY_ANOMALY_TYPES
    }
    assert set(anomalies(whole)) - PER_KEY_ANOMALY_TYPES == set()  # generated histories have no cycles
    assert merged.verdict is whole.verdict
    # The engine's way: per-key pieces of calls, assign/subscribe added to every part.
    parts: dict[str, list[Call]] = {}
    for call in calls:
        for key, piece in split_call(call):
            parts.setdefault(key, []).append(piece)
    broadcast = [call for call in calls if partition_key(call) is ALL_KEYS]
    committed = committed_info_calls(calls)
    pieces = merge_results(
        check_kafka_key(key, part + broadcast, committed_info=committed) for key, part in parts.items()
    )
    assert pieces.evidence["anomalies"] == merged.evidence["anomalies"]


# ---------------------------------------------------------------------------------------
# generated histories at scale
# ---------------------------------------------------------------------------------------


def test_generate_history_is_a_stream() -> None:
    stream = generate_history(10**7, 1000, seed=1)
    assert isinstance(stream, Iterator)
    first = [next(stream) for _ in range(10)]
    assert [op.index for op in first] == list(range(10))


def test_generated_history_with_transactions_is_valid() -> None:
    calls = list(pair_calls(generate_history(5000, 8, seed=3, txn_share=0.2)))
    assert any(call.f == "txn" for call in calls)
    assert any(call.outcome is Outcome.INFO for call in calls)
    result = check_kafka(calls)
    assert result.verdict is Verdict.VALID, result.evidence["anomaly_counts"]


def test_a_generated_history_of_100k_calls_is_valid() -> None:
    # The checker's speed is measured by bench.verify_scale, not asserted here (a wall-clock
    # bound fails on a loaded machine: 33.7 s against 10 at load 20).
    calls = list(pair_calls(generate_history(100_000, 100, seed=11)))
    assert len(calls) >= 100_000  # sends, polls, assigns and crashes
    result = check_kafka(calls)
    assert result.verdict is Verdict.VALID, result.evidence["anomaly_counts"]


def test_injected_anomalies_are_all_found() -> None:
    generator = HistoryGenerator(100_000, 100, seed=5, anomalies=INJECTABLE_ANOMALIES)
    result = check_kafka(pair_calls(generator))
    assert set(generator.injected) == set(INJECTABLE_ANOMALIES)
    found = anomalies(result)
    assert set(INJECTABLE_ANOMALIES) <= set(found), result.evidence["anomaly_counts"]
    assert result.verdict is Verdict.INVALID
    lost = generator.injected["lost-write"]
    assert any((r["key"], r["offset"]) == (lost["key"], lost["offset"]) for r in found["lost-write"])
    skipped = generator.injected["poll-skip"]
    assert any(r["key"] == skipped["key"] and skipped["value"] in r["skipped"] for r in found["poll-skip"])
    again = generator.injected["nonmonotonic-poll"]
    assert any(r["key"] == again["key"] for r in found["nonmonotonic-poll"])
    clash = generator.injected["inconsistent-offsets"]
    assert any(
        (r["key"], r["offset"]) == (clash["key"], clash["offset"]) for r in found["inconsistent-offsets"]
    )
    twice = generator.injected["duplicate"]
    assert any((r["key"], r["value"]) == (twice["key"], twice["value"]) for r in found["duplicate"])
    aborted = generator.injected["G1a"]
    assert any((r["key"], r["value"]) == (aborted["key"], aborted["value"]) for r in found["G1a"])
    assert any(r["key"] == generator.injected["unseen"]["key"] for r in found["unseen"])


@pytest.mark.parametrize("anomaly", INJECTABLE_ANOMALIES)
def test_each_injected_anomaly_alone(anomaly: str) -> None:
    generator = HistoryGenerator(3000, 10, seed=2, anomalies=[anomaly])
    result = check_kafka(pair_calls(generator))
    assert anomaly in generator.injected
    assert anomaly in anomalies(result), result.evidence["anomaly_counts"]
    assert anomaly in result.evidence["invalid_because"]


def _result_fields(result: CheckResult) -> tuple[Any, ...]:
    return (result.partition, result.verdict, result.operations, result.evidence, result.conventions)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n_calls=st.integers(1, 80), n_keys=st.integers(1, 4))
def test_prepared_assignments_give_the_same_results_as_broadcast_calls(
    data: st.DataObject, n_calls: int, n_keys: int
) -> None:
    # Random calls of three processes: sends, polls and assign/subscribe calls naming random
    # keys, any outcome, some never completed; each key checked with the assignments in its
    # part and prepared once.
    keys = [str(k) for k in range(n_keys)]
    indices = iter(data.draw(st.permutations(range(2 * n_calls))))
    calls: list[Call] = []
    for value in range(n_calls):
        process = data.draw(st.integers(0, 2))
        f = data.draw(st.sampled_from(["send", "poll", "poll", "assign", "subscribe"]))
        outcome = data.draw(st.sampled_from([Outcome.OK, Outcome.OK, Outcome.FAIL, Outcome.INFO]))
        key = data.draw(st.sampled_from(keys))
        given: Any
        done: Any
        if f == "send":
            given, done = [["send", key, value]], [["send", key, [value, value]]]
        elif f == "poll":
            given, done = [["poll"]], [["poll", {key: [[data.draw(st.integers(0, n_calls)), value]]}]]
        else:
            given = done = data.draw(st.lists(st.sampled_from([*keys, int(key)]), max_size=n_keys))
        first, second = sorted((next(indices), next(indices)))
        open_ended = outcome is Outcome.INFO and data.draw(st.booleans())
        calls.append(
            Call(
                process,
                f,
                given,
                done if outcome is Outcome.OK else None,
                outcome,
                first,
                None if open_ended else second,
                completion_value=None if open_ended else done,
            )
        )
    broadcast = [call for call in calls if partition_key(call) is ALL_KEYS]
    prepared = Assignments(broadcast)
    parts: dict[str, list[Call]] = {}
    for call in calls:
        for key, piece in split_call(call):
            parts.setdefault(key, []).append(piece)
    for key, part in parts.items():
        expected = check_kafka_key(key, part + broadcast, committed_info=frozenset())
        got = check_kafka_key(key, part, committed_info=frozenset(), assignments=prepared)
        assert _result_fields(got) == _result_fields(expected)


_KEYS = st.sampled_from(["x", "y", 7])
_SENT = st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=3))
_PAIRS = st.one_of(st.lists(st.lists(st.integers(0, 3), min_size=2, max_size=2), max_size=2), st.integers())
_MOP = st.one_of(
    st.tuples(st.sampled_from(["send", ":send"]), _KEYS, _SENT).map(list),
    st.tuples(st.sampled_from(["poll", ":poll"]), st.dictionaries(st.sampled_from(["x", "y"]), _PAIRS)).map(
        list
    ),
    st.just(["poll"]),
    st.just(["send", "x"]),
)


@settings(max_examples=300, deadline=None)
@given(mop=_MOP, f=st.sampled_from(["send", "poll", "txn"]), only=st.sampled_from(["x", "y", "7"]))
def test_parse_fast_path_for_one_key_agrees_with_the_long_way(mop: list[Any], f: str, only: str) -> None:
    # An unknown micro-operation is ignored, but makes the value take the long way.
    def parsed(value: list[Any]) -> Any:
        call = Call(0, f, value, value, Outcome.OK, 0, 1, completion_value=value)
        try:
            return _parse(call, only)
        except HistoryError as error:
            return error.message

    assert parsed([mop]) == parsed([mop, ["other"]])


_ANY_MOP = st.one_of(
    _MOP,
    st.lists(st.one_of(st.sampled_from(["send", "poll", "other"]), _KEYS, st.integers()), max_size=4),
    st.integers(),
)


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(st.lists(_ANY_MOP, max_size=4), st.integers(), st.none()), keys=st.sets(_KEYS, min_size=1)
)
def test_restricting_to_each_key_at_once_is_restricting_to_each(value: Any, keys: set[Any]) -> None:
    listed = sorted(str(key) for key in keys)
    assert _restrict_each(value, listed) == {key: _restrict(value, key) for key in listed}


# ---------------------------------------------------------------------------------------
# The whole-history part's facts of a call (`CallFacts`), as stage 1 ships them
# ---------------------------------------------------------------------------------------

ODD_SENDS = [
    [["send", "x", [0, 1]], ["send", "x", [3, 2]], ["send", "x", [1, 3]]],  # one key, greatest kept
    [["send", 7, [0, 1]], ["send", "7", [2, 2]], ["send", "y", [1, 3]]],  # 7 and "7": one key
    [["send", "x", [0, 1]], ["send", "y", 2]],  # no offset: the long way (upstream restarts)
    [["send", "x", [None, 1]], ["send", "y", [0, 2]]],
    [["send", "x", [True, 1]], ["send", "y", [0, 2]]],
    [["send", "x", [0, 1]], ["poll", {"x": [[0, 1]]}]],
    [["send", "x", 1]],
    [["send", "x", [0, 1, 2]]],
]


def test_plain_max_offsets_are_the_long_ways() -> None:
    # Stage 1 finds each call's offsets for the whole-history part the plain way where it can
    # (`plain_max_offsets`); wherever it answers, the long way (`_parse`) answers alike, keys
    # in the same order.
    from spark_checks.kafka_checker import _parsed_max_offsets, analysed_value, plain_max_offsets

    calls = [
        call
        for seed in range(6)
        for call in pair_calls(
            generate_history(400, 5, seed=seed, txn_share=0.2, fail_share=0.1, info_share=0.1)
        )
    ]
    calls += [Call(0, f, value, value, Outcome.OK, 0, 1) for value in ODD_SENDS for f in ("send", "txn")]
    plain = 0
    for call in calls:
        if call.f not in ("send", "poll", "txn") or call.outcome is Outcome.FAIL:
            continue
        fast = plain_max_offsets(call.f, analysed_value(call))
        if fast is None:
            continue
        plain += 1
        expected = _parsed_max_offsets(call)
        assert list(fast.items()) == list(expected.items()), call
    assert plain > 1000


def test_call_facts_travel_as_json_and_give_the_same_history_facts() -> None:
    # What the whole-history part computes from the shipped facts equals what it computes
    # from the calls (`history_facts` takes both), lag and all.
    from spark_checks.distributed import dumps, loads
    from spark_checks.kafka_checker import CallFacts, call_facts, call_facts_fields, history_facts

    for seed in range(4):
        calls = list(pair_calls(generate_history(300, 4, seed=seed, fail_share=0.1, info_share=0.1)))
        data = [call for call in calls if call.f in ("send", "poll", "txn")]
        shipped = [
            CallFacts.from_fields(fields) for fields in loads(dumps([call_facts_fields(c) for c in data]))
        ]
        assert shipped == [call_facts(call) for call in data]
        others = [call for call in calls if call.f in ("assign", "subscribe")]
        assert history_facts([*shipped, *others]) == history_facts([*data, *others])


def test_history_facts_read_the_shipped_lists_in_any_order_as_the_calls() -> None:
    # The whole-history part reads stage 1's lists as they come (no `CallFacts` each): in
    # completion order or not (a part's rows come in the order of Spark's splits), with the
    # assign/subscribe calls after them or mixed in, it finds what the calls give, lag and all.
    import random

    from spark_checks.distributed import dumps, loads
    from spark_checks.kafka_checker import call_facts_fields, history_facts

    for seed in range(4):
        history = generate_history(300, 4, seed=seed, crash_share=0.05, fail_share=0.1, info_share=0.1)
        calls = list(pair_calls(history))
        data = [call for call in calls if call.f in ("send", "poll", "txn")]
        others = [call for call in calls if call.f in ("assign", "subscribe")]
        expected = history_facts([*data, *others])
        assert expected.realtime_lag["by_process_key_count"]
        rows = loads(dumps([call_facts_fields(call) for call in data]))
        assert history_facts([*rows, *others]) == expected
        random.Random(seed).shuffle(rows)
        assert history_facts([*rows, *others]) == expected
        mixed = [*rows, *others]
        random.Random(seed).shuffle(mixed)
        assert history_facts(mixed) == expected


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 50), cuts=st.lists(st.integers(0, 400), max_size=8), order=st.randoms())
def test_history_facts_of_windows_whatever_the_windows_and_their_order(
    seed: int, cuts: list[int], order: Any
) -> None:
    # The whole-history part reads stage 1's windows one at a time (`_OrderedFacts`): cut
    # anywhere, in any order, some out of order inside (the calls paired across splits), as
    # JSON payloads, they give what one list of every facts list gives, lag and all.
    from spark_checks.distributed import dumps, loads
    from spark_checks.kafka_checker import call_facts_fields, history_facts, history_facts_of_windows

    history = generate_history(200, 4, seed=seed, crash_share=0.05, fail_share=0.1, info_share=0.1)
    calls = list(pair_calls(history))
    data = sorted(
        (call for call in calls if call.f in ("send", "poll", "txn")),
        key=lambda call: (call.complete_index is None, call.complete_index or call.invoke_index),
    )  # in completion order, as stage 1 ships a split's calls
    rows = [call_facts_fields(call) for call in data]
    others = [call for call in calls if call.f in ("assign", "subscribe")]
    expected = history_facts([*rows, *others])
    bounds = sorted({0, len(rows), *(min(cut, len(rows)) for cut in cuts)})
    windows = [rows[start:end] for start, end in itertools.pairwise(bounds)]
    windows[0:1] = [windows[0][::2], windows[0][1::2]]  # each in order, spans overlapping
    for window in windows[2::3]:
        order.shuffle(window)
    order.shuffle(windows)
    payloads = [dumps(window) for window in windows]
    assert history_facts_of_windows(payloads, loads, others) == expected


def test_shipped_rows_read_as_pieces_are_read_as_their_calls() -> None:
    # Stage 2 reads a key's pieces without making `Call`s (`pieces_of` of the decoded rows,
    # through `DecodedCalls`): what it reads of each (process, function, analysed value,
    # outcome, indices) is what `Piece.of` reads of the call the row encodes, for every
    # outcome and value (an ok call's output that is not its completion's value, none at all).
    from spark_checks.distributed import call_fields, call_from_fields, decode_part, dumps
    from spark_checks.kafka_checker import Piece, analysed_value, pieces_of

    send, sent = [["send", 1, 5]], [["send", 1, [0, 5]]]
    values = ((send, sent, sent), (send, None, sent), (send, None, None), (None, None, None))
    calls = [
        Call(process, f, given, output, outcome, 3, completed, key, completion_value=completion)
        for process in (0, "nemesis")
        for f in ("send", "poll", "assign")
        for outcome in Outcome
        for given, output, completion in values
        for completed, key in ((4, "1"), (None, None))
        if outcome is Outcome.OK or output is None
    ]
    # An output equal to the completion's value, not the same JSON: shipped apart.
    calls.append(Call(1, "send", send, [1.0], Outcome.OK, 5, 6, completion_value=[1]))
    rows = [call_fields(call) for call in calls]
    decoded, several = decode_part([dumps(rows[:7]), dumps(rows[7:])])
    assert not several
    assert list(decoded) == [call_from_fields(row) for row in rows] == calls
    expected = [Piece.of(call) for call in calls]
    for got in (decoded.pieces(), pieces_of(rows)):
        # `dumps` of the values: [1] == [1.0], yet they are not the same value
        read = [(p.process, p.f, dumps(p.value), p.outcome, p.invoke_index, p.complete_index) for p in got]
        assert read == [
            (
                call.process,
                call.f,
                dumps(analysed_value(call)),
                call.outcome,
                call.invoke_index,
                call.complete_index,
            )
            for call in calls
        ]
    assert any(p.value is None for p in expected) and any(dumps(p.value) == b"[1.0]" for p in expected)
