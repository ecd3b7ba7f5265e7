"""Parity with Jepsen's Kafka checker: the histories of `jepsen.tests.kafka-test` (Jepsen's
`jepsen/test/jepsen/tests/kafka_test.clj`), each checked for the exact set of anomaly types
Jepsen's `analysis` reports for it (`:errors` keys: the per-key cases, `unseen`, and Elle's
cycle anomalies, `*-cycle-exists` entries and `empty-transaction-graph`) and the verdict of
Jepsen's `checker` (`allowed-error-types`).

Keys and values are strings where Jepsen uses keywords (`:x` -> "x"). Operations are listed in
Jepsen's order; an operation's index is its position, its time Jepsen's `:time` (the `o`
helper sets it to the index Jepsen gives). The upstream tests assert one anomaly type of the
analysis each; the full sets asserted here follow from Jepsen's definitions (the derivation
is in each test's comment), and where upstream's nondeterministic choice of a value at a
conflicting offset could change the set, the test says so."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from spark_checks.checking import CYCLES_PART
from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import Call, CheckResult, Operation, OpType, Verdict, pair_calls
from spark_checks.kafka_checker import (
    check_kafka,
    check_kafka_key,
    committed_info_calls,
    lag_summary,
    merge_results,
    realtime_lag_summary,
    realtime_lags,
    split_by_key,
)

_TYPES = {"invoke": OpType.INVOKE, "ok": OpType.OK, "fail": OpType.FAIL, "info": OpType.INFO}


class History:
    """Jepsen's `o` helper: operations in list order, each with its process, type, f, value
    and the time Jepsen gives (its index there)."""

    def __init__(self) -> None:
        self.operations: list[Operation] = []

    def o(self, time: int, process: int, kind: str, f: str, value: Any) -> History:
        index = len(self.operations)
        self.operations.append(Operation(index, process, _TYPES[kind], f, value, time=time))
        return self

    def calls(self) -> list[Call]:
        return list(pair_calls(self.operations))


def types(result: CheckResult) -> set[str]:
    counts = result.evidence["anomaly_counts"]
    assert isinstance(counts, dict)
    return set(counts)


def checked(history: History, **options: Any) -> CheckResult:
    result = check_kafka(history.calls(), **options)
    assert set(result.evidence["error_types"]) == types(result)
    return result


def assert_jepsen(history: History, expected: set[str], valid: bool, **options: Any) -> CheckResult:
    result = checked(history, **options)
    assert types(result) == expected
    assert result.verdict is (Verdict.VALID if valid else Verdict.INVALID)
    allowed = set(result.conventions["allowed_error_types"])
    assert set(result.evidence["allowed_error_types_found"]) == expected & allowed
    assert set(result.evidence["invalid_because"]) == expected - allowed
    return result


# ---------------------------------------------------------------------------------------
# version-orders-test, inconsistent-offsets-test
# ---------------------------------------------------------------------------------------


def test_version_orders_real_world_example() -> None:
    # Two acknowledged sends at offset 537: inconsistent-offsets; neither was polled: unseen.
    # p363's send was invoked after p379's completed: a realtime edge, no cycle.
    h = History()
    h.o(280153467070, 379, "invoke", "send", [["send", 11, 641]])
    h.o(280169754615, 379, "ok", "send", [["send", 11, [537, 641]]])
    h.o(283654729962, 363, "invoke", "send", [["send", 11, 645]])
    h.o(287474569112, 363, "ok", "send", [["send", 11, [537, 645]]])
    result = assert_jepsen(h, {"inconsistent-offsets", "unseen"}, valid=False)
    (record,) = result.evidence["anomalies"]["inconsistent-offsets"]
    assert (record["key"], record["offset"], record["index"], record["values"]) == ("11", 537, 0, [641, 645])


def inconsistent_offsets_history(with_poll: bool) -> History:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", 1], ["send", "y", 1]])
    h.o(1, 0, "info", "send", [["send", "x", [0, 1]], ["send", "y", 1]])
    h.o(2, 1, "invoke", "send", [["send", "x", 2]])
    h.o(3, 1, "ok", "send", [["send", "x", [0, 2]]])
    if with_poll:
        h.o(4, 2, "invoke", "poll", [["poll"]])
        h.o(5, 2, "ok", "poll", [["poll", {"y": [[5, 1]]}]])
    return h


def test_inconsistent_offsets_info_conflict_is_not_one() -> None:
    # The info send may not have committed: no conflict. Only an ok call completes, last:
    # Elle's graph has no edge (empty-transaction-graph); x 2 was never polled (unseen).
    assert_jepsen(inconsistent_offsets_history(False), {"unseen", "empty-transaction-graph"}, valid=False)


def test_inconsistent_offsets_once_the_info_send_is_read() -> None:
    # Reading y 1 shows the info send committed: x's offset 0 holds 1 and 2.
    result = assert_jepsen(
        inconsistent_offsets_history(True), {"inconsistent-offsets", "unseen"}, valid=False
    )
    (record,) = result.evidence["anomalies"]["inconsistent-offsets"]
    assert (record["key"], record["offset"], record["values"]) == ("x", 0, [1, 2])


# ---------------------------------------------------------------------------------------
# g1a-test, lost-write-test
# ---------------------------------------------------------------------------------------


def test_g1a() -> None:
    # The failed send's x 2 was polled: G1a (its wr edge keeps the graph non-empty).
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", 2], ["send", "y", 3]])
    h.o(1, 0, "fail", "send", [["send", "x", 2], ["send", "y", 3]])
    h.o(2, 1, "invoke", "poll", [["poll"]])
    h.o(3, 1, "ok", "poll", [["poll", {"x": [[0, 2]]}]])
    result = assert_jepsen(h, {"G1a"}, valid=False)
    (record,) = result.evidence["anomalies"]["G1a"]
    assert (record["key"], record["value"]) == ("x", 2)


def test_lost_write_consistent() -> None:
    # Reading c at offset 2 means a and b should have been read: lost-write a, b. b and d sent
    # by one call around c: int-send-skip (allowed). a, b, d were never polled: unseen.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"]])
    h.o(1, 0, "ok", "send", [["send", "x", [0, "a"]]])
    h.o(2, 0, "invoke", "send", [["send", "x", "b"], ["send", "x", "d"]])
    h.o(3, 0, "ok", "send", [["send", "x", [1, "b"]], ["send", "x", [3, "d"]]])
    h.o(4, 1, "invoke", "send", [["send", "x", "c"]])
    h.o(5, 1, "info", "send", [["send", "x", "c"]])
    h.o(6, 0, "invoke", "poll", [["poll"]])
    h.o(7, 0, "ok", "poll", [["poll", {"x": [[2, "c"]]}]])
    result = assert_jepsen(h, {"lost-write", "int-send-skip", "unseen"}, valid=False)
    lost = result.evidence["anomalies"]["lost-write"]
    assert [(r["value"], r["index"], r["max-read-index"]) for r in lost] == [("a", 0, 2), ("b", 1, 2)]


def test_lost_write_inconsistent() -> None:
    # b overwrote a at offset 0 (inconsistent-offsets); reading c means a is lost; a unseen.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"]])
    h.o(1, 0, "ok", "send", [["send", "x", [0, "a"]]])
    h.o(2, 0, "invoke", "send", [["send", "x", "b"], ["send", "x", "c"]])
    h.o(3, 0, "ok", "send", [["send", "x", [0, "b"]], ["send", "x", [2, "c"]]])
    h.o(4, 0, "invoke", "poll", [["poll"]])
    h.o(5, 0, "ok", "poll", [["poll", {"x": [[0, "b"], [2, "c"]]}]])
    result = assert_jepsen(h, {"lost-write", "inconsistent-offsets", "unseen"}, valid=False)
    (lost,) = result.evidence["anomalies"]["lost-write"]
    assert (lost["value"], lost["index"], lost["max-read-index"]) == ("a", 0, 1)


def atomic_history(with_poll_a: bool) -> History:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"], ["send", "y", "b"]])
    h.o(1, 0, "info", "send", [["send", "x", "a"], ["send", "y", [0, "b"]]])
    h.o(2, 1, "invoke", "send", [["send", "y", "c"]])
    h.o(3, 1, "info", "send", [["send", "y", "c"]])
    if with_poll_a:
        h.o(4, 2, "invoke", "poll", [["poll"]])
        h.o(5, 2, "ok", "poll", [["poll", {"x": [[0, "a"]]}]])
    h.o(6, 3, "invoke", "poll", [["poll"]])
    h.o(7, 3, "ok", "poll", [["poll", {"y": [[1, "c"]]}]])
    return h


def test_lost_write_atomic_without_proof_of_commit() -> None:
    # Nothing shows the crashed send committed: no anomaly at all (Jepsen: valid).
    assert_jepsen(atomic_history(False), set(), valid=True)


def test_lost_write_atomic_once_a_value_of_the_send_is_read() -> None:
    result = assert_jepsen(atomic_history(True), {"lost-write"}, valid=False)
    (lost,) = result.evidence["anomalies"]["lost-write"]
    assert (lost["key"], lost["value"], lost["max-read-index"]) == ("y", "b", 1)


# ---------------------------------------------------------------------------------------
# poll-skip-test
# ---------------------------------------------------------------------------------------


def poll_skip_history(
    between_3_and_4: tuple[str, list[str], str] | None = None, between_4_and_6: Any = None
) -> History:
    h = History()
    h.o(0, 0, "invoke", "poll", [["poll"]])
    h.o(1, 0, "ok", "poll", [["poll", {"x": [[1, "a"], [2, "b"]]}]])
    h.o(2, 1, "invoke", "poll", [["poll"]])
    h.o(3, 1, "ok", "poll", [["poll", {"x": [[3, "c"]]}]])
    if between_3_and_4 is not None:
        f, keys, outcome = between_3_and_4
        h.o(4, 0, "invoke", f, keys)
        h.o(5, 0, outcome, f, keys)
    h.o(6, 0, "invoke", "poll", [["poll"]])
    h.o(7, 0, "ok", "poll", [["poll", {"x": [[4, "d"]]}]])
    if between_4_and_6 is not None:
        f, keys, outcome = between_4_and_6
        h.o(8, 0, "invoke", f, keys)
        h.o(9, 0, outcome, f, keys)
    h.o(10, 2, "invoke", "send", [["send", "x", "f"]])
    h.o(11, 2, "ok", "send", [["send", "x", [6, "f"]]])
    h.o(12, 0, "invoke", "poll", [["poll"]])
    h.o(13, 0, "ok", "poll", [["poll", {"x": [[7, "g"]]}]])
    sends = [["send", "x", v] for v in ("a", "b", "c", "d", "g")]
    h.o(14, 3, "invoke", "send", sends)
    h.o(15, 3, "info", "send", sends)
    return h


# The crashed send of a b c d g was invoked after the polls of those values completed: each
# poll -realtime-> that send -wr-> the poll is a cycle (G1c-realtime, strong-PL-2-cycle-exists).
# f, sent at offset 6 and never polled, lies below g: lost-write, unseen. The crashed send
# skips f between d and g: int-send-skip (allowed).
POLL_SKIP_OTHERS = {"int-send-skip", "lost-write", "unseen", "G1c-realtime", "strong-PL-2-cycle-exists"}


def test_poll_skip() -> None:
    result = assert_jepsen(poll_skip_history(), {"poll-skip", *POLL_SKIP_OTHERS}, valid=False)
    skips = result.evidence["anomalies"]["poll-skip"]
    assert sorted((r["delta"], r["skipped"]) for r in skips) == [(2, ["c"]), (2, ["f"])]
    (cycle,) = result.evidence["anomalies"]["G1c-realtime"]
    assert sorted(step["type"] for step in cycle["steps"]) == ["realtime", "wr"]


def test_poll_skip_after_subscribe_and_assign_without_x() -> None:
    history = poll_skip_history(("subscribe", ["y"], "ok"), ("assign", ["y"], "info"))
    result = assert_jepsen(history, POLL_SKIP_OTHERS, valid=False)
    assert result.conventions["sub_via"] == ["assign", "subscribe"]


def test_poll_skip_after_subscribe_and_assign_still_covering_x() -> None:
    history = poll_skip_history(("subscribe", ["x", "y"], "ok"), ("assign", ["x", "y"], "ok"))
    result = assert_jepsen(history, {"poll-skip", *POLL_SKIP_OTHERS}, valid=False)
    assert "poll-skip" in result.evidence["allowed_error_types_found"]  # under subscribe


def sends_then_txn_polls(values: int, polls: list[tuple[str, list[int]]]) -> History:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", v] for v in range(values)])
    h.o(1, 0, "ok", "send", [["send", "x", [v, v]] for v in range(values)])
    time = 1
    for outcome, read in polls:
        h.o(time, 1, "invoke", "txn", [["poll"]])
        h.o(time + 1, 1, outcome, "txn", [["poll", {"x": [[v, v] for v in read]}]])
        time += 2
    return h


def test_poll_skip_txn_abort_good() -> None:
    # Aborted and crashed polls rewind to the last ok one: no anomaly (Jepsen: no errors).
    h = sends_then_txn_polls(3, [("ok", [0]), ("fail", [1, 2]), ("info", [1, 2]), ("ok", [1, 2])])
    assert_jepsen(h, set(), valid=True)


def test_poll_skip_txn_abort_does_not_roll_back() -> None:
    # Polls 3 4 (failed) and 5 (ok) skip from 0; 1-4 never read by an ok call: lost, unseen.
    h = sends_then_txn_polls(6, [("ok", [0]), ("fail", [1, 2]), ("fail", [3, 4]), ("ok", [5])])
    result = assert_jepsen(h, {"poll-skip", "lost-write", "unseen"}, valid=False)
    skips = result.evidence["anomalies"]["poll-skip"]
    assert sorted((r["delta"], r["skipped"]) for r in skips) == [(3, [1, 2]), (5, [1, 2, 3, 4])]


def test_poll_skip_info_can_be_one() -> None:
    h = sends_then_txn_polls(6, [("ok", [0]), ("fail", [1, 2]), ("info", [3, 4])])
    result = assert_jepsen(h, {"poll-skip", "unseen"}, valid=False)
    (skip,) = result.evidence["anomalies"]["poll-skip"]
    assert (skip["delta"], skip["skipped"]) == (3, [1, 2])


# ---------------------------------------------------------------------------------------
# nonmonotonic-poll-test, nonmonotonic-send-test
# ---------------------------------------------------------------------------------------


def nonmonotonic_poll_history(between: tuple[str, list[str]] | None) -> History:
    sends = [["send", "x", v] for v in ("a", "b", "c", "d")]
    h = History()
    h.o(0, 0, "invoke", "send", sends)
    h.o(1, 0, "ok", "send", sends)  # no offsets
    h.o(2, 0, "invoke", "poll", [["poll"]])
    h.o(3, 0, "ok", "poll", [["poll", {"x": [[1, "a"], [2, "b"], [3, "c"]]}]])
    if between is not None:
        h.o(4, 0, "invoke", between[0], between[1])
        h.o(5, 0, "ok", between[0], between[1])
    h.o(6, 0, "invoke", "poll", [["poll"]])
    h.o(7, 0, "ok", "poll", [["poll", {"x": [[2, "b"], [3, "c"], [4, "d"]]}]])
    return h


@pytest.mark.parametrize(
    ("between", "expected", "valid"),
    [
        (None, {"nonmonotonic-poll"}, False),
        (("subscribe", ["y"]), set(), True),
        (("assign", ["y"]), set(), True),
        (("subscribe", ["x", "y"]), {"nonmonotonic-poll"}, True),  # allowed under subscribe
        (("assign", ["x", "y"]), {"nonmonotonic-poll"}, False),
    ],
)
def test_nonmonotonic_poll(between: tuple[str, list[str]] | None, expected: set[str], valid: bool) -> None:
    result = assert_jepsen(nonmonotonic_poll_history(between), expected, valid)
    if expected:
        (record,) = result.evidence["anomalies"]["nonmonotonic-poll"]
        assert (record["values"], record["delta"]) == (["c", "b"], -1)


def nonmonotonic_send_history(between: tuple[str, list[str], str] | None) -> History:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "c"], ["send", "x", "d"]])
    h.o(1, 0, "ok", "send", [["send", "x", [3, "c"]], ["send", "x", [4, "d"]]])
    if between is not None:
        h.o(2, 0, "invoke", between[0], between[1])
        h.o(3, 0, between[2], between[0], between[1])
    h.o(10, 0, "invoke", "send", [["send", "x", 1], ["send", "x", 2]])
    h.o(11, 0, "ok", "send", [["send", "x", [1, "a"]], ["send", "x", [2, "b"]]])
    return h


@pytest.mark.parametrize(
    ("between", "expected"),
    [
        (None, {"nonmonotonic-send", "unseen"}),
        (("subscribe", ["y"], "ok"), {"unseen"}),
        (("assign", ["y"], "info"), {"unseen"}),
        (("subscribe", ["x", "y"], "ok"), {"nonmonotonic-send", "unseen"}),
        (("assign", ["x", "y"], "ok"), {"nonmonotonic-send", "unseen"}),
    ],
)
def test_nonmonotonic_send(between: tuple[str, list[str], str] | None, expected: set[str]) -> None:
    # Nothing was polled: unseen throughout.
    result = assert_jepsen(nonmonotonic_send_history(between), expected, valid=False)
    if "nonmonotonic-send" in expected:
        (record,) = result.evidence["anomalies"]["nonmonotonic-send"]
        assert (record["values"], record["delta"]) == (["d", "a"], -3)


# ---------------------------------------------------------------------------------------
# int-poll-skip-test, int-send-skip-test, int-nonmonotonic-poll-test, int-nonmonotonic-send-test
# ---------------------------------------------------------------------------------------


def test_int_poll_skip() -> None:
    # Besides the two internal skips over b, process 0 goes back from d to a, then from d to
    # b between its polls: nonmonotonic-poll (not asserted upstream, which looks at one type).
    sends = [["send", "x", v] for v in ("a", "b", "d")]
    h = History()
    h.o(0, 1, "invoke", "send", sends)
    h.o(1, 1, "info", "send", sends)
    h.o(2, 0, "invoke", "poll", [["poll"]])
    h.o(3, 0, "ok", "poll", [["poll", {"x": [[1, "a"], [4, "d"]]}]])
    h.o(4, 0, "invoke", "poll", [["poll"], ["poll"]])
    h.o(5, 0, "ok", "poll", [["poll", {"x": [[1, "a"]]}], ["poll", {"x": [[4, "d"]]}]])
    h.o(6, 0, "invoke", "poll", [["poll"]])
    h.o(7, 0, "ok", "poll", [["poll", {"x": [[2, "b"]]}]])
    result = assert_jepsen(h, {"int-poll-skip", "nonmonotonic-poll"}, valid=False)
    skips = result.evidence["anomalies"]["int-poll-skip"]
    assert [(r["values"], r["skipped"], r["delta"]) for r in skips] == [(["a", "d"], ["b"], 2)] * 2


def test_int_send_skip() -> None:
    # a's sender never saw b between a and c (int-send-skip, allowed); c's read puts a, never
    # polled, below it: lost-write and unseen.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"], ["send", "x", "c"]])
    h.o(1, 0, "ok", "send", [["send", "x", [1, "a"]], ["send", "x", "c"]])
    h.o(2, 1, "invoke", "send", [["send", "x", "b"]])
    h.o(3, 1, "info", "send", [["send", "x", "b"]])
    h.o(4, 2, "invoke", "poll", [["poll"]])
    h.o(5, 2, "ok", "poll", [["poll", {"x": [[2, "b"], [3, "c"]]}]])
    result = assert_jepsen(h, {"int-send-skip", "lost-write", "unseen"}, valid=False)
    (skip,) = result.evidence["anomalies"]["int-send-skip"]
    assert (skip["values"], skip["skipped"], skip["delta"]) == (["a", "c"], ["b"], 2)


def test_int_nonmonotonic_poll() -> None:
    sends = [["send", "x", v] for v in ("a", "b", "c")]
    h = History()
    h.o(0, 0, "invoke", "send", sends)
    h.o(1, 0, "info", "send", sends)
    h.o(2, 0, "invoke", "poll", [["poll"]])
    h.o(3, 0, "ok", "poll", [["poll", {"x": [[3, "c"], [1, "a"]]}]])
    h.o(4, 0, "invoke", "poll", [["poll"]])
    h.o(5, 0, "ok", "poll", [["poll", {"x": [[2, "b"], [3, "c"]]}], ["poll", {"x": [[3, "c"]]}]])
    result = assert_jepsen(h, {"int-nonmonotonic-poll"}, valid=False)
    records = result.evidence["anomalies"]["int-nonmonotonic-poll"]
    assert sorted((r["values"], r["delta"]) for r in records) == [(["c", "a"], -2), (["c", "c"], 0)]


def test_int_nonmonotonic_send() -> None:
    # x's c and a were never polled: unseen.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", 3], ["send", "x", 1]])
    h.o(1, 0, "ok", "send", [["send", "x", [3, "c"]], ["send", "x", [1, "a"]]])
    h.o(2, 0, "invoke", "send", [["send", "y", "d"], ["send", "y", "b"]])
    h.o(3, 0, "info", "send", [["send", "y", "d"], ["send", "y", "b"]])
    h.o(4, 1, "invoke", "send", [["send", "y", "c"]])
    h.o(5, 1, "info", "send", [["send", "y", "c"]])
    h.o(6, 0, "invoke", "poll", [["poll"]])
    h.o(7, 0, "ok", "poll", [["poll", {"y": [[2, "b"], [3, "c"], [4, "d"]]}]])
    result = assert_jepsen(h, {"int-nonmonotonic-send", "unseen"}, valid=False)
    records = result.evidence["anomalies"]["int-nonmonotonic-send"]
    assert sorted((r["key"], r["values"], r["delta"]) for r in records) == [
        ("x", ["c", "a"], -1),
        ("y", ["d", "b"], -2),
    ]


# ---------------------------------------------------------------------------------------
# duplicate-test
# ---------------------------------------------------------------------------------------


def test_duplicate_basic() -> None:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"]])
    h.o(1, 0, "ok", "send", [["send", "x", [1, "a"]]])
    h.o(2, 1, "invoke", "send", [["send", "x", "b"]])
    h.o(3, 1, "info", "send", [["send", "x", "b"]])
    h.o(4, 2, "invoke", "poll", [["poll"]])
    h.o(5, 2, "ok", "poll", [["poll", {"x": [[2, "b"], [3, "a"]]}]])
    result = assert_jepsen(h, {"duplicate"}, valid=False)
    (record,) = result.evidence["anomalies"]["duplicate"]
    assert (record["value"], record["count"], record["offsets"]) == ("a", 2, [1, 3])


def test_duplicate_hash_insensitive() -> None:
    # Every value at offsets 0 and 1. Upstream picks one value per offset arbitrarily, so it
    # may also call a send or poll pair nonmonotonic; kafkaspec picks the smallest, which
    # leaves no such pair: the types both always report are these.
    h = History()
    for value in range(10):
        h.o(4 * value, 0, "invoke", "send", [["send", "x", value]])
        h.o(4 * value + 1, 0, "ok", "send", [["send", "x", [0, value]]])
        h.o(4 * value + 2, 1, "invoke", "poll", [["poll"]])
        h.o(4 * value + 3, 1, "ok", "poll", [["poll", {"x": [[1, value]]}]])
    result = assert_jepsen(h, {"duplicate", "inconsistent-offsets"}, valid=False)
    assert sorted(r["value"] for r in result.evidence["anomalies"]["duplicate"]) == list(range(10))
    offsets = result.evidence["anomalies"]["inconsistent-offsets"]
    assert [(r["offset"], r["values"]) for r in offsets] == [(0, list(range(10))), (1, list(range(10)))]


def test_duplicate_in_aborted_txns() -> None:
    # 0 is at offsets 1 and 11; 1's failed send never happened. 0 was never ok-polled: unseen.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", 0]])
    h.o(1, 0, "ok", "send", [["send", "x", [1, 0]]])
    h.o(2, 0, "invoke", "send", [["send", "x", 1]])
    h.o(3, 0, "fail", "send", [["send", "x", [2, 1]]])
    h.o(4, 1, "invoke", "poll", [["poll"]])
    h.o(5, 1, "fail", "poll", [["poll", {"x": [[11, 0], [12, 1]]}]])
    result = assert_jepsen(h, {"duplicate", "unseen"}, valid=False)
    (record,) = result.evidence["anomalies"]["duplicate"]
    assert (record["value"], record["offsets"]) == (0, [1, 11])


# ---------------------------------------------------------------------------------------
# realtime-lag-test, empty-history-test, unseen-test
# ---------------------------------------------------------------------------------------


def realtime_lag_history() -> History:
    h = History()
    h.o(0, 0, "invoke", "assign", ["x"]).o(1, 0, "ok", "assign", ["x"])
    h.o(2, 0, "invoke", "poll", [["poll"]]).o(3, 0, "ok", "poll", [["poll", {"x": []}]])
    h.o(4, 0, "invoke", "send", [["send", "x", "a"]]).o(5, 0, "ok", "send", [["send", "x", [0, "a"]]])
    h.o(6, 0, "invoke", "poll", [["poll"]]).o(7, 0, "ok", "poll", [["poll", {"x": []}]])
    h.o(8, 1, "invoke", "send", [["send", "x", "c"], ["send", "x", "d"]])
    h.o(9, 1, "ok", "send", [["send", "x", [2, "c"]], ["send", "x", [3, "d"]]])
    h.o(10, 0, "invoke", "poll", [["poll"]]).o(11, 0, "ok", "poll", [["poll"]])
    h.o(12, 0, "invoke", "poll", [["poll"]]).o(13, 0, "ok", "poll", [["poll", {"x": [[0, "a"], [1, "b"]]}]])
    h.o(14, 0, "invoke", "assign", ["x", "y"]).o(15, 0, "ok", "assign", ["x", "y"])
    h.o(16, 0, "invoke", "poll", [["poll"]]).o(17, 0, "ok", "poll", [["poll", {}]])
    h.o(18, 0, "invoke", "assign", ["y"]).o(19, 0, "ok", "assign", ["y"])
    h.o(20, 0, "invoke", "assign", ["x"]).o(21, 0, "ok", "assign", ["x"])
    h.o(22, 0, "invoke", "poll", [["poll"]]).o(23, 0, "ok", "poll", [["poll", {}]])
    h.o(24, 0, "invoke", "poll", [["poll"], ["poll"]])
    h.o(25, 0, "ok", "poll", [["poll", {"x": [[0, "a"], [1, "b"]]}], ["poll", {"x": [[2, "c"], [3, "d"]]}]])
    h.o(26, 1, "invoke", "send", [["send", "x", "b"]]).o(27, 1, "info", "send", [["send", "x", "b"]])
    return h


def test_realtime_lag() -> None:
    lags = realtime_lags(realtime_lag_history().calls())
    assert lags is not None
    assert [(r["time"], r["process"], r["key"], r["lag"]) for r in lags] == [
        (2, 0, "x", 0),
        (6, 0, "x", 1),
        (10, 0, "x", 5),
        (12, 0, "x", 3),
        (16, 0, "x", 7),
        (16, 0, "y", 0),
        (22, 0, "x", 17),
        (24, 0, "x", 0),
    ]


def test_realtime_lag_in_the_report_and_the_types() -> None:
    # b, polled at 13 and 25, was sent by a call invoked at 26: G1c-realtime. Process 1 sent
    # c d, then b, which lies before them: nonmonotonic-send (info sends count).
    result = assert_jepsen(
        realtime_lag_history(), {"nonmonotonic-send", "G1c-realtime", "strong-PL-2-cycle-exists"}, valid=False
    )
    lag = result.evidence["realtime_lag"]
    assert lag["worst"] == {"time": 22, "process": 0, "key": "x", "lag": 17}
    assert {(r["process"], r["key"], r["max_lag"]) for r in lag["by_process_key"]} == {
        (0, "x", 17),
        (0, "y", 0),
    }


def test_realtime_lag_summary_equals_the_full_list_summary() -> None:
    from spark_checks.kafka_histories import generate_history

    calls = list(pair_calls(generate_history(3000, 6, seed=5)))
    full = lag_summary(realtime_lags(calls))
    fast = realtime_lag_summary(calls)
    assert fast["worst"]["lag"] == full["worst"]["lag"]
    strip = [{k: v for k, v in r.items() if k != "time"} for r in fast["by_process_key"]]
    assert strip == [{k: v for k, v in r.items() if k != "time"} for r in full["by_process_key"]]


@pytest.mark.parametrize("seed", range(4))
def test_realtime_lag_with_times_out_of_completion_order_equals_the_full_list_summary(seed: int) -> None:
    # `_lag_summary_of` grows each key's expired list as the calls come, which needs times that
    # follow completion order; where they do not (times jittered here), it walks again with
    # the finished lists: the lags are Jepsen's either way.
    import dataclasses
    import random

    from spark_checks.kafka_histories import generate_history

    jitter = random.Random(seed)
    operations = [
        dataclasses.replace(op, time=(op.time or 0) + jitter.randrange(-3000, 3000))
        for op in generate_history(1500, 5, seed=seed, crash_share=0.05, info_share=0.1)
    ]
    calls = list(pair_calls(iter(operations)))
    done = [call.complete_time for call in sorted(calls, key=lambda c: c.complete_index or 0)]
    assert any(later < earlier for earlier, later in itertools.pairwise(done) if earlier and later)
    full = lag_summary(realtime_lags(calls))
    fast = realtime_lag_summary(calls)
    assert fast["worst"]["lag"] == full["worst"]["lag"] > 0
    strip = [{k: v for k, v in r.items() if k != "time"} for r in fast["by_process_key"]]
    assert strip == [{k: v for k, v in r.items() if k != "time"} for r in full["by_process_key"]]


def test_a_lag_known_from_a_call_that_completes_later_at_an_earlier_time() -> None:
    # Process 0 drops x (assign [y]) after two polls at offset 0; the send of x's offset 1
    # completes after that assign in the history, yet at time 5: Jepsen's expired vector
    # knows offset 1 from time 5, so the poll invoked at 20 lagged 15, which a walk that only
    # knows what completed before the assign would miss.
    h = History()
    h.o(0, 0, "invoke", "assign", ["x"]).o(1, 0, "ok", "assign", ["x"])
    h.o(2, 1, "invoke", "send", [["send", "x", "a"]]).o(3, 1, "ok", "send", [["send", "x", [0, "a"]]])
    h.o(10, 0, "invoke", "poll", [["poll"]]).o(11, 0, "ok", "poll", [["poll", {"x": [[0, "a"]]}]])
    h.o(4, 1, "invoke", "send", [["send", "x", "b"]])
    h.o(20, 0, "invoke", "poll", [["poll"]]).o(21, 0, "ok", "poll", [["poll", {"x": []}]])
    h.o(30, 0, "invoke", "assign", ["y"]).o(31, 0, "ok", "assign", ["y"])
    h.o(5, 1, "ok", "send", [["send", "x", [1, "b"]]])
    calls = h.calls()
    expected = {"time": 20, "process": 0, "key": "x", "lag": 15}
    assert lag_summary(realtime_lags(calls))["worst"] == expected
    assert realtime_lag_summary(calls)["worst"] == expected


def test_the_worst_lag_among_keys_tied_at_one_poll_is_the_least_key() -> None:
    # Process 0 drops 20 keys at once, each 5 behind at its last poll: Jepsen names whichever
    # its hash map gives first; kafkaspec the least key, the same in every run (they are
    # measured in a set's order, which Python's string hashing changes from run to run).
    keys = [f"k{n}" for n in (7, 19, 3, 0, 11, 5, 16, 1, 9, 14, 2, 18, 6, 12, 4, 17, 10, 8, 15, 13)]
    h = History()
    h.o(0, 0, "invoke", "assign", keys).o(1, 0, "ok", "assign", keys)
    h.o(2, 0, "invoke", "poll", [["poll"]]).o(3, 0, "ok", "poll", [["poll", {}]])
    h.o(4, 1, "invoke", "send", [["send", key, n] for n, key in enumerate(keys)])
    h.o(5, 1, "ok", "send", [["send", key, [0, n]] for n, key in enumerate(keys)])
    h.o(10, 0, "invoke", "poll", [["poll"]]).o(11, 0, "ok", "poll", [["poll", {}]])
    h.o(12, 0, "invoke", "assign", ["other"]).o(13, 0, "ok", "assign", ["other"])
    summary = realtime_lag_summary(h.calls())
    assert summary["worst"] == {"time": 10, "process": 0, "key": "k0", "lag": 5}
    assert summary["by_process_key_count"] == 20


def test_empty_history_is_invalid() -> None:
    h = History().o(0, 0, "invoke", "assign", ["x"]).o(1, 0, "ok", "assign", ["x"])
    assert_jepsen(h, {"empty-transaction-graph"}, valid=False)


def test_unseen_until_the_end_only() -> None:
    h = History()
    h.o(0, 0, "invoke", "poll", [["poll"]]).o(1, 0, "ok", "poll", [["poll", {}]])
    h.o(2, 0, "invoke", "send", [["send", "x", "a"], ["send", "x", "b"]])
    h.o(3, 0, "ok", "send", [["send", "x", [0, "a"]], ["send", "x", [1, "b"]]])
    h.o(4, 0, "invoke", "poll", [["poll"]]).o(5, 0, "ok", "poll", [["poll", {"x": [[0, "a"]]}]])
    h.o(6, 0, "invoke", "poll", [["poll"]]).o(7, 0, "ok", "poll", [["poll", {"x": [[1, "b"]]}]])
    assert_jepsen(h, set(), valid=True)


# ---------------------------------------------------------------------------------------
# g0-test, g1c-pure-wr-test, g1c-ww-wr-test, precommitted-read-test
# ---------------------------------------------------------------------------------------


def g0_history() -> History:
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"], ["send", "y", "a"]])
    h.o(1, 1, "invoke", "send", [["send", "x", "b"], ["send", "y", "b"]])
    h.o(2, 0, "ok", "send", [["send", "x", [0, "a"]], ["send", "y", [1, "a"]]])
    h.o(3, 1, "ok", "send", [["send", "x", [1, "b"]], ["send", "y", [0, "b"]]])
    return h


def test_g0_with_ww_deps() -> None:
    # ww x: a -> b, ww y: b -> a. G0 implies every other cycle type; nothing was polled.
    result = assert_jepsen(g0_history(), {"G0", "PL-1-cycle-exists", "unseen"}, valid=False, ww_deps=True)
    (cycle,) = result.evidence["anomalies"]["G0"]
    assert sorted((s["type"], s["key"], s["value"], s["value'"]) for s in cycle["steps"]) == [
        ("ww", "x", "a", "b"),
        ("ww", "y", "b", "a"),
    ]
    assert result.conventions["ww_deps"] is True


def test_g0_without_ww_deps_has_no_edge() -> None:
    # Concurrent sends, nothing read: Elle's graph is empty.
    assert_jepsen(g0_history(), {"unseen", "empty-transaction-graph"}, valid=False)


def g1c_pure_wr_history() -> History:
    h = History()
    h.o(0, 0, "invoke", "txn", [["send", "x", "a"], ["poll"]])
    h.o(1, 1, "invoke", "txn", [["send", "y", "b"], ["poll"]])
    h.o(2, 0, "ok", "txn", [["send", "x", [0, "a"]], ["poll", {"y": [[0, "b"]]}]])
    h.o(3, 1, "ok", "txn", [["send", "y", [0, "b"]], ["poll", {"x": [[0, "a"]]}]])
    return h


def test_g1c_pure_wr() -> None:
    result = assert_jepsen(g1c_pure_wr_history(), {"G1c", "PL-2-cycle-exists"}, valid=False)
    (cycle,) = result.evidence["anomalies"]["G1c"]
    assert sorted((s["type"], s["key"], s["value"]) for s in cycle["steps"]) == [
        ("wr", "x", "a"),
        ("wr", "y", "b"),
    ]


def test_g1c_pure_wr_is_allowed_with_ww_deps() -> None:
    assert_jepsen(g1c_pure_wr_history(), {"G1c", "PL-2-cycle-exists"}, valid=True, ww_deps=True)


def g1c_ww_wr_history() -> History:
    h = History()
    h.o(0, 0, "invoke", "txn", [["send", "x", "a"], ["send", "y", "c"]])
    h.o(1, 1, "invoke", "txn", [["poll"], ["send", "y", "b"]])
    h.o(2, 0, "ok", "txn", [["send", "x", [0, "a"]], ["send", "y", [2, "c"]]])
    h.o(3, 1, "ok", "txn", [["poll", {"x": [[0, "a"]]}], ["send", "y", [1, "b"]]])
    return h


def test_g1c_ww_wr() -> None:
    # t1 -wr x-> t2 -ww y-> t1; y's b and c were never polled: unseen.
    result = assert_jepsen(
        g1c_ww_wr_history(), {"G1c", "PL-2-cycle-exists", "unseen"}, valid=False, ww_deps=True
    )
    (cycle,) = result.evidence["anomalies"]["G1c"]
    assert sorted(s["type"] for s in cycle["steps"]) == ["wr", "ww"]


def test_g1c_ww_wr_needs_ww_deps() -> None:
    assert_jepsen(g1c_ww_wr_history(), {"unseen"}, valid=False)


def test_precommitted_read() -> None:
    # One call reading its own send: no edge between two calls, so the graph is empty too.
    h = History()
    h.o(0, 0, "invoke", "txn", [["send", "x", "a"], ["poll"]])
    h.o(1, 0, "ok", "txn", [["send", "x", [0, "a"]], ["poll", {"x": [[0, "a"]]}]])
    result = assert_jepsen(h, {"precommitted-read", "empty-transaction-graph"}, valid=False)
    (record,) = result.evidence["anomalies"]["precommitted-read"]
    assert (record["key"], record["value"]) == ("x", "a")


# ---------------------------------------------------------------------------------------
# The case, realtime G0/G1c mixes, sub_via, Jepsen's unseen merge
# ---------------------------------------------------------------------------------------


def test_read_from_a_send_invoked_later_in_plain_sends_and_polls() -> None:
    h = History()
    h.o(0, 1, "invoke", "poll", [["poll"]]).o(1, 1, "ok", "poll", [["poll", {"x": [[0, 1]]}]])
    h.o(2, 0, "invoke", "send", [["send", "x", 1]]).o(3, 0, "ok", "send", [["send", "x", [0, 1]]])
    assert_jepsen(h, {"G1c-realtime", "strong-PL-2-cycle-exists"}, valid=False)


def test_g0_realtime_with_ww_deps() -> None:
    # p0 sends x a (offset 1) and completes; p1 then sends x b at offset 0: b -ww-> a, and
    # a's send -realtime-> b's send. No ww cycle alone: strong-PL-1-cycle-exists, G0-realtime.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"]]).o(1, 0, "ok", "send", [["send", "x", [1, "a"]]])
    h.o(2, 1, "invoke", "send", [["send", "x", "b"]]).o(3, 1, "ok", "send", [["send", "x", [0, "b"]]])
    h.o(4, 2, "invoke", "poll", [["poll"]]).o(5, 2, "ok", "poll", [["poll", {"x": [[0, "b"], [1, "a"]]}]])
    expected = {"G0-realtime", "strong-PL-1-cycle-exists"}
    result = assert_jepsen(h, expected, valid=True, ww_deps=True)  # G0-realtime and strong-PL-1: allowed
    assert sorted(s["type"] for s in result.evidence["anomalies"]["G0-realtime"][0]["steps"]) == [
        "realtime",
        "ww",
    ]
    assert_jepsen(h, set(), valid=True)  # no ww edges: no cycle


def test_sub_via_given_or_inferred() -> None:
    history = nonmonotonic_poll_history(("assign", ["x", "y"]))
    inferred = checked(history)
    assert inferred.conventions["sub_via"] == ["assign"] and inferred.conventions["sub_via_inferred"] is True
    given = checked(history, sub_via=["subscribe"])
    assert given.conventions["sub_via"] == ["subscribe"] and given.conventions["sub_via_inferred"] is False
    assert given.verdict is Verdict.VALID and given.evidence["allowed_error_types_found"] == [
        "nonmonotonic-poll"
    ]


def unseen_merge_history() -> History:
    # x is sent by a crashed call and first polled by the last ok call of the history.
    h = History()
    h.o(0, 0, "invoke", "send", [["send", "x", "a"]]).o(1, 0, "info", "send", [["send", "x", "a"]])
    h.o(2, 1, "invoke", "send", [["send", "y", "b"]]).o(3, 1, "ok", "send", [["send", "y", [0, "b"]]])
    h.o(4, 2, "invoke", "poll", [["poll"]]).o(5, 2, "ok", "poll", [["poll", {"y": [[0, "b"]]}]])
    h.o(6, 2, "invoke", "poll", [["poll"]]).o(7, 2, "ok", "poll", [["poll", {"x": [[0, "a"]]}]])
    return h


def test_unseen_merge_is_named_and_jepsen_mode_reports_it() -> None:
    ours = assert_jepsen(unseen_merge_history(), set(), valid=True)
    (deviation,) = ours.evidence["deviations_from_jepsen"]
    assert deviation["name"] == "unseen-merge" and deviation["keys"] == ["x"]
    jepsen = assert_jepsen(unseen_merge_history(), {"unseen"}, valid=False, unseen="jepsen")
    (record,) = jepsen.evidence["anomalies"]["unseen"]
    assert (record["key"], record["count"], record["jepsen_unseen_merge"]) == ("x", 1, True)
    assert jepsen.evidence["deviations_from_jepsen"] == []


# ---------------------------------------------------------------------------------------
# Both engines, the key parts and the whole-history part
# ---------------------------------------------------------------------------------------

ENGINE_CASES: dict[str, tuple[History, dict[str, Any]]] = {
    "poll-skip": (poll_skip_history(), {}),
    "g1c-pure-wr": (g1c_pure_wr_history(), {}),
    "g0-ww": (g0_history(), {"ww_deps": True}),
    "g1c-ww-wr": (g1c_ww_wr_history(), {"ww_deps": True}),
    "realtime-lag": (realtime_lag_history(), {}),
    "empty": (History().o(0, 0, "invoke", "assign", ["x"]).o(1, 0, "ok", "assign", ["x"]), {}),
    "unseen-merge": (unseen_merge_history(), {"unseen": "jepsen"}),
    "sub-via": (nonmonotonic_poll_history(("assign", ["x", "y"])), {"sub_via": ["subscribe"]}),
}


def write_jsonl(path: Path, history: History) -> None:
    lines = [
        {
            "index": op.index,
            "process": op.process,
            "type": op.type.value,
            "f": op.f,
            "value": op.value,
            "time": op.time,
        }
        for op in history.operations
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("name", sorted(ENGINE_CASES))
@pytest.mark.parametrize("general", [False, True])
def test_local_engine_paths_agree_with_check_kafka(tmp_path: Path, name: str, general: bool) -> None:
    history, options = ENGINE_CASES[name]
    whole = checked(history, **options)
    path = tmp_path / "history.jsonl"
    write_jsonl(path, history)
    conventions = dict(options)
    report = verify_history(
        path, VerifyOptions(model="kafka", engine="local", conventions=conventions), general=general
    )
    found: set[str] = set()
    for result in report.results:
        found |= types(result)
    assert found == types(whole)
    assert report.verdict is whole.verdict
    parts = [r for r in report.results if r.partition == CYCLES_PART]
    assert len(parts) == 1
    assert parts[0].evidence["realtime_lag"] == whole.evidence["realtime_lag"]
    if "sub_via" in options:
        assert all(r.conventions["sub_via_inferred"] is False for r in report.results)
    else:
        assert all(r.conventions["sub_via_inferred"] is True for r in report.results)


@pytest.mark.parametrize("name", sorted(ENGINE_CASES))
def test_per_key_parts_and_whole_part_merge_to_check_kafka(name: str) -> None:
    history, options = ENGINE_CASES[name]
    calls = history.calls()
    whole = check_kafka(calls, **options)
    committed = committed_info_calls(calls)
    sub_via = options.get("sub_via")
    keys = [
        check_kafka_key(k, part, committed_info=committed, sub_via=sub_via)
        for k, part in split_by_key(calls).items()
    ]
    from spark_checks.kafka_checker import check_kafka_whole

    merged = merge_results([*keys, check_kafka_whole(calls, **options)])
    assert types(merged) == types(whole)
    assert merged.verdict is whole.verdict


def test_reports_show_the_lag_and_the_allowed_types(tmp_path: Path) -> None:
    from spark_checks.report import html_report, report_json, text_summary

    path = tmp_path / "history.jsonl"
    write_jsonl(path, realtime_lag_history())
    report = verify_history(path, VerifyOptions(model="kafka", engine="local"))
    page = html_report([report], [realtime_lag_history().operations])
    assert "<h3>Realtime lag</h3>" in page and "<td>17</td>" in page
    assert any(
        line.startswith("  worst realtime lag: ") and '"lag": 17' in line for line in text_summary([report])
    )
    document = json.dumps(report_json([report]))
    assert '"worst": {"time": 22, "process": 0, "key": "x", "lag": 17}' in document
    write_jsonl(path := tmp_path / "allowed.jsonl", nonmonotonic_poll_history(("subscribe", ["x", "y"])))
    allowed = verify_history(path, VerifyOptions(model="kafka", engine="local"))
    assert allowed.verdict is Verdict.VALID
    assert "  allowed anomaly types found: nonmonotonic-poll" in text_summary([allowed])


@pytest.mark.spark
@pytest.mark.slow
def test_spark_engine_gives_the_local_answers(spark: Any, tmp_path: Path) -> None:
    for name, (history, options) in sorted(ENGINE_CASES.items()):
        path = tmp_path / f"{name}.jsonl"
        write_jsonl(path, history)
        local = verify_history(path, VerifyOptions(model="kafka", engine="local", conventions=dict(options)))
        distributed = verify_history(
            path, VerifyOptions(model="kafka", engine="spark", conventions=dict(options)), spark=spark
        )

        def seen(report: Any) -> list[tuple[str, str, list[str], Any]]:
            return sorted(
                (json.dumps(r.partition), r.verdict.value, sorted(types(r)), r.evidence.get("realtime_lag"))
                for r in report.results
            )

        assert seen(distributed) == seen(local), name
        assert distributed.verdict is local.verdict, name


def test_verify_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers import run_cli

    path = tmp_path / "g1c.jsonl"
    write_jsonl(path, g1c_pure_wr_history())

    def run(*flags: str) -> tuple[int, Any]:
        code, out, _ = run_cli(capsys, "verify", str(path), "--engine", "local", "--json", *flags)
        return code, json.loads(out)

    assert run()[0] == 1
    code, document = run("--ww-deps")
    assert code == 0  # G1c and PL-2-cycle-exists are allowed with ww deps
    (report,) = document["histories"]
    assert report["verdict"] == "valid"
    path = tmp_path / "merge.jsonl"
    write_jsonl(path, unseen_merge_history())
    assert run()[0] == 0
    assert run("--jepsen-unseen")[0] == 1
    path = tmp_path / "assign.jsonl"
    write_jsonl(path, nonmonotonic_poll_history(("assign", ["x", "y"])))
    assert run()[0] == 1
    assert run("--sub-via", "subscribe")[0] == 0


def test_worst_lag_is_the_first_when_every_lag_is_zero() -> None:
    # Jepsen's `worst-realtime-lag` is `util/max-by`: the first of equal lags, and
    # {:time 0 :lag 0} only when no poll gave a lag.
    calls = unseen_merge_history().calls()
    lags = realtime_lags(calls)
    assert lags is not None and {r["lag"] for r in lags} == {0}
    expected = {"time": 4, "process": 2, "key": "y", "lag": 0}
    assert lag_summary(lags)["worst"] == expected
    assert realtime_lag_summary(calls)["worst"] == expected
    assert realtime_lag_summary([])["worst"] == {"time": 0, "lag": 0}
