"""Maelstrom's kafka workload (`spark_checks.maelstrom_kafka`): its history EDN, its checks.

The fixtures in `data/maelstrom/` are written as Maelstrom's Jepsen client records a run of
the "Gossip Glomers" log challenge (`history.edn`: string keys, `[[:send "k" msg]]` completing
as `[[:send "k" [offset msg]]]`, `[[:poll]]` as `[[:poll {"k" [[offset msg] ...]}]]`, assigns,
crashes that renumber the process, the final phase's `:seek-to-beginning?` assigns and polls,
a partition nemesis). Each has the exact anomaly types Maelstrom's checker reports for it
(`jepsen.tests.kafka/checker` with `:sub-via #{:assign}`, derived from Jepsen's definitions in
the comments) and Maelstrom's verdict, which adds `jepsen.checker/stats`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from spark_checks import maelstrom_kafka
from spark_checks.checking import CYCLES_PART
from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.history import Call, Operation, OpType, Outcome, Verdict
from spark_checks.readers import open_history, write_jsonl
from tests.helpers import run_cli

DATA = Path(__file__).parent / "data" / "maelstrom"

# name -> (the anomaly types Maelstrom reports, whether the workload checker alone is valid,
# whether the stats checker is)
EXPECTED: dict[str, tuple[set[str], bool, bool]] = {
    # Sends, polls, an indeterminate send that a later poll shows committed, a failed assign,
    # crashes, a partition, the final phase: every acknowledged message read, in order.
    "valid": (set(), True, True),
    # Offset 1 of "4" (message 2) was acknowledged and never polled, though offsets 0 and 2
    # were: lost (its index 1 is below the highest first-read index, 2), unseen, skipped by
    # process 0's second poll (delta 2) and inside each final poll.
    "lost-write": ({"lost-write", "unseen", "poll-skip", "int-poll-skip"}, False, True),
    # The retried message 2 was appended twice (offsets 1 and 2): a duplicate; a value's index
    # is its last position, so the poll 1, 2, 2 jumps from index 0 to 2 (int-poll-skip) and
    # stays at 2 (int-nonmonotonic-poll).
    "duplicate": ({"duplicate", "int-poll-skip", "int-nonmonotonic-poll"}, False, True),
    # The server answered a poll from offset 2 starting at offset 1 again: delta 0. Under
    # assign (Maelstrom's only way) that is an error; Jepsen allows it only under subscribe.
    "nonmonotonic-poll": ({"nonmonotonic-poll"}, False, True),
    # Two nodes gave offset 1 of "9" to different messages; every message was read, so
    # whichever Jepsen picks for offset 1 nothing else is found.
    "inconsistent-offsets": ({"inconsistent-offsets"}, False, True),
    # list_committed_offsets went back to 0 after the key was dropped and assigned again: the
    # re-read starts fresh (Jepsen keeps a position only for keys an assign names).
    "committed-offsets-backwards": (set(), True, True),
    # Message 3 of "3" was acknowledged by another node and never replicated: unseen, not lost
    # (nothing after it was read).
    "unseen": ({"unseen"}, False, True),
    # A node answered a send with a definite error (temporarily-unavailable) after appending
    # it: an ok poll read the failed send's message (G1a). Maelstrom's protocol doc warns
    # against definite errors under indefinite conditions.
    "g1a": ({"G1a"}, False, True),
    # The server returned a poll's messages unsorted (from a hash map): offsets 1 then 0 in
    # one poll (int-nonmonotonic-poll); the next poll starts at index 2 while the last value
    # the previous one read, in its order, was at index 0 (poll-skip, as Jepsen compares).
    "unsorted-poll": ({"int-nonmonotonic-poll", "poll-skip"}, False, True),
    # Every send refused with a definite error (temporarily-unavailable): no anomaly, but
    # Maelstrom's stats checker fails the test (send has no ok).
    "sends-refused": (set(), True, False),
}


def anomaly_types(report: HistoryReport) -> set[str]:
    found: set[str] = set()
    for result in report.results:
        names = result.evidence.get("error_types", [])
        assert isinstance(names, list)
        found.update(str(name) for name in names)
    return found


def stats_of(report: HistoryReport) -> dict[str, Any]:
    (whole,) = [result for result in report.results if result.partition == CYCLES_PART]
    figures = whole.evidence["maelstrom_stats"]
    assert isinstance(figures, dict)
    return figures


def assert_maelstrom(report: HistoryReport, name: str) -> None:
    expected, workload_valid, stats_valid = EXPECTED[name]
    assert report.model == maelstrom_kafka.MODEL
    assert anomaly_types(report) == expected
    assert stats_of(report)["valid"] is stats_valid
    (whole,) = [result for result in report.results if result.partition == CYCLES_PART]
    assert ("stats" in whole.evidence["invalid_because"]) is not stats_valid
    valid = workload_valid and stats_valid
    assert report.verdict is (Verdict.VALID if valid else Verdict.INVALID)
    assert report.conventions["dialect"] == maelstrom_kafka.MODEL
    assert report.conventions["sub_via"] == ["assign"]
    assert report.conventions["sub_via_inferred"] is False
    assert report.conventions["unseen"] == "jepsen"


def test_every_fixture_is_listed() -> None:
    assert {path.stem for path in DATA.glob("*.edn")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_detected_and_checked_as_maelstrom_does(name: str) -> None:
    report = verify_history(DATA / f"{name}.edn", VerifyOptions(engine="local"))
    assert_maelstrom(report, name)


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("general", [False, True], ids=["jsonl-stages", "general-path"])
def test_explicit_model_on_json_lines_agrees(tmp_path: Path, name: str, general: bool) -> None:
    # JSON Lines cannot tell string keys from JSON object keys, so the dialect is not detected
    # there: --model maelstrom-kafka selects it, on both local paths.
    _, operations = open_history(DATA / f"{name}.edn")
    path = tmp_path / f"{name}.jsonl"
    write_jsonl(path, operations)
    options = VerifyOptions(model=maelstrom_kafka.MODEL, engine="local")
    assert_maelstrom(verify_history(path, options, general=general), name)
    assert verify_history(path, VerifyOptions(engine="local")).model == "kafka"


SPARK_QUICK = ("lost-write", "sends-refused")  # anomalies in key parts; the stats check


def test_spark_engine_gives_the_same_answers(spark: Any) -> None:
    assert_engines_agree(spark, SPARK_QUICK)


@pytest.mark.slow
def test_spark_engine_gives_the_same_answers_on_every_fixture(spark: Any) -> None:
    assert_engines_agree(spark, sorted(set(EXPECTED) - set(SPARK_QUICK)))


def assert_engines_agree(spark: Any, names: Iterable[str]) -> None:
    for name in names:
        path = DATA / f"{name}.edn"
        local = verify_history(path, VerifyOptions(engine="local"))
        distributed = verify_history(path, VerifyOptions(engine="spark"), spark=spark)
        assert_maelstrom(distributed, name)
        assert stats_of(distributed) == stats_of(local)
        assert [(r.partition, r.verdict) for r in distributed.results] == [
            (r.partition, r.verdict) for r in local.results
        ]


# ---------------------------------------------------------------------------------------
# What differs from the plain Kafka model
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("general", [False, True], ids=["jsonl-stages", "general-path"])
def test_stats_count_the_assign_calls(tmp_path: Path, general: bool) -> None:
    # Assign calls travel apart from the data calls (every key's part needs them); the stats
    # check still sees them: a node that answers no list_committed_offsets fails every assign.
    text = (DATA / "committed-offsets-backwards.edn").read_text()
    edn = tmp_path / "assigns-fail.edn"
    edn.write_text(text.replace(":type :ok, :process 1, :f :assign", ":type :fail, :process 1, :f :assign"))
    _, operations = open_history(edn)
    path = tmp_path / "assigns-fail.jsonl"
    write_jsonl(path, operations)
    report = verify_history(path, VerifyOptions(model=maelstrom_kafka.MODEL, engine="local"), general=general)
    assert stats_of(report)["without_ok"] == ["assign"]
    assert stats_of(report)["by_f"]["assign"]["fail_count"] == 3
    assert report.verdict is Verdict.INVALID


def test_plain_kafka_model_lacks_the_stats_check() -> None:
    report = verify_history(DATA / "sends-refused.edn", VerifyOptions(model="kafka", engine="local"))
    assert report.model == "kafka" and report.verdict is Verdict.VALID
    assert all("maelstrom_stats" not in result.evidence for result in report.results)


def test_sub_via_is_assign_even_without_assign_calls(tmp_path: Path) -> None:
    # Inferred from a history without assign calls, sub_via is empty; Maelstrom's test map
    # says assign, and the report says it was given, not inferred.
    lines = [
        line for line in (DATA / "nonmonotonic-poll.edn").read_text().splitlines() if ":assign" not in line
    ]
    path = tmp_path / "no-assign.edn"
    path.write_text("\n".join(lines) + "\n")
    report = verify_history(path, VerifyOptions(engine="local"))
    assert_maelstrom(report, "nonmonotonic-poll")
    plain = verify_history(path, VerifyOptions(model="kafka", engine="local"))
    assert plain.conventions["sub_via"] == [] and plain.conventions["sub_via_inferred"] is True


def test_a_flag_still_overrides_the_dialect() -> None:
    options = VerifyOptions(engine="local", conventions={"sub_via": ["subscribe"]})
    report = verify_history(DATA / "nonmonotonic-poll.edn", options)
    assert report.model == maelstrom_kafka.MODEL
    assert report.verdict is Verdict.VALID  # nonmonotonic-poll is allowed under subscribe
    assert anomaly_types(report) == {"nonmonotonic-poll"}


@pytest.mark.parametrize("key", ["{}", ":k{}"], ids=["integer", "keyword"])
def test_jepsen_kafka_histories_are_not_taken_for_maelstrom(tmp_path: Path, key: str) -> None:
    # Jepsen's Kafka workload keys are integers; its unit tests' are keywords.
    text = (DATA / "valid.edn").read_text()
    for name in ("1", "2", "3"):
        text = text.replace(f'"{name}"', key.format(name))
    path = tmp_path / "jepsen.edn"
    path.write_text(text)
    report = verify_history(path, VerifyOptions(engine="local"))
    assert report.model == "kafka"
    assert "dialect" not in report.conventions
    assert report.verdict is Verdict.VALID


# ---------------------------------------------------------------------------------------
# The dialect's pieces
# ---------------------------------------------------------------------------------------


def op(index: int, process: int | str, kind: str, f: str, value: Any) -> Operation:
    return Operation(index, process, OpType(kind), f, value)


def test_looks_like_maelstrom() -> None:
    send = op(0, 0, "invoke", "send", [["send", "1", 5]])
    poll = op(1, 1, "ok", "poll", [["poll", {"1": [[0, 5]]}]])
    assign = op(2, 1, "invoke", "assign", ["1", "2"])
    nemesis = op(3, "nemesis", "info", "start-partition", "majority")
    assert maelstrom_kafka.looks_like_maelstrom([send, poll, assign, nemesis])
    assert not maelstrom_kafka.looks_like_maelstrom([op(0, 0, "invoke", "send", [["send", 1, 5]])])
    # A keyword key (Jepsen's unit tests: [:send :x 1]) reads as "x": not Maelstrom's.
    assert not maelstrom_kafka.looks_like_maelstrom([op(0, 0, "invoke", "send", [["send", "x", 5]])])
    assert not maelstrom_kafka.looks_like_maelstrom([op(0, 0, "invoke", "send", [["send", "01", 5]])])
    assert maelstrom_kafka.looks_like_maelstrom([op(0, 0, "invoke", "send", [["send", "-3", 5]])])
    assert not maelstrom_kafka.looks_like_maelstrom([op(0, 0, "ok", "poll", [["poll", {}]])])  # no key yet
    assert not maelstrom_kafka.looks_like_maelstrom([send, op(1, 0, "invoke", "subscribe", ["1"])])
    assert not maelstrom_kafka.looks_like_maelstrom([send, op(1, 0, "invoke", "txn", [["poll"]])])


def call(process: int | str, f: str, outcome: Outcome, index: int, completed: bool = True) -> Call:
    return Call(process, f, None, None, outcome, index, index + 1 if completed else None)


def test_stats_as_jepsen_stats_checker() -> None:
    calls = [
        call(0, "send", Outcome.FAIL, 0),
        call(0, "send", Outcome.INFO, 2),
        call(1, "poll", Outcome.OK, 4),
        call(1, "assign", Outcome.OK, 6),
        call(2, "crash", Outcome.INFO, 8),  # crash never needs an ok
        call(3, "send", Outcome.OK, 10, completed=False),  # never completed: not counted
        call("nemesis", "start-partition", Outcome.INFO, 12),
    ]
    figures = maelstrom_kafka.stats(calls)
    assert figures["valid"] is False and figures["without_ok"] == ["send"]
    assert figures["by_f"]["send"] == {
        "valid": False,
        "count": 2,
        "ok_count": 0,
        "fail_count": 1,
        "info_count": 1,
    }
    assert set(figures["by_f"]) == {"send", "poll", "assign"}
    assert maelstrom_kafka.stats(calls[2:4])["valid"] is True


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------


def test_cli_verdicts_and_model_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "verify", str(DATA / "valid.edn"))
    assert code == 0
    assert "VALID (maelstrom-kafka, edn" in out
    code, out, _ = run_cli(capsys, "verify", "--model", "maelstrom-kafka", str(DATA / "sends-refused.edn"))
    assert code == 1
    assert "maelstrom_stats" in out and '"without_ok": ["send"]' in out
