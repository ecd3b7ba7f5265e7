"""The verify report's sentences (one per anomaly, the same in text, JSON and HTML) and the HTML
page: what it labels, the linearizable prefix with the model's states, the per-key view, the
lag plot, and its size for a history of 10^6 operations."""

from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.explain import Explanation, explain_result
from spark_checks.history import CheckResult, Verdict
from spark_checks.kafka_checker import ANOMALY_TYPES, check_kafka
from spark_checks.kafka_histories import INJECTABLE_ANOMALIES, HistoryGenerator, KafkaHistoryBuilder
from spark_checks.readers.jsonl import write_jsonl
from spark_checks.report import explanations, html_report, report_json, text_summary
from spark_checks.report_html import Axis, HistoryView, lag_series, prefix_steps
from tests.helpers import run_cli

SHARED = Path(__file__).resolve().parents[3] / "shared" / "histories"
ETCD = SHARED / "porcupine" / "test_data" / "jepsen" / "etcd_000.log"
KNOSSOS = SHARED / "knossos" / "data" / "cas-register" / "bad" / "bad-analysis.edn"
needs_shared = pytest.mark.skipif(not ETCD.is_file(), reason="needs ../shared/histories")


# ---------------------------------------------------------------------------------------
# A Kafka history with every anomaly type (shared with the browser test)
# ---------------------------------------------------------------------------------------


def every_anomaly_history() -> KafkaHistoryBuilder:
    """One small history per anomaly type, one key each, in one history; checked with
    `ww_deps` it shows every type Jepsen's Kafka checker reports but the empty transaction
    graph (which no history with an edge can show)."""
    b = KafkaHistoryBuilder()
    for value in (10, 11, 12):  # lost-write and unseen: 11 is read by nobody, 12 is
        b.send(0, "a", value)
    b.poll(1, {"a": [0]})
    b.poll(2, {"a": [2]})
    b.send(0, "b", 20)  # duplicate: the broker stores 20 twice
    b.record("b", 20)
    b.poll(3, {"b": [0, 1]})
    b.send(4, "c", 30, offset=0)  # inconsistent offsets: two values acknowledged at offset 0
    b.send(5, "c", 31, offset=0)
    b.poll(3, {"c": [0]})
    for value in (40, 41, 42, 43):  # poll-skip, nonmonotonic-poll, int-poll-skip
        b.send(0, "d", value)
    b.assign(6, ["d"])
    b.poll(6, {"d": [0]})
    b.poll(6, {"d": [2]})
    b.poll(6, {"d": [1]})
    b.poll(7, {"d": [1, 3]})
    b.send(8, "e", 50, offset=1)  # nonmonotonic-send (and, with ww_deps, G0-realtime)
    b.send(8, "e", 51, offset=0)
    b.poll(9, {"e": [0, 1]})
    for value in (60, 61, 62):  # int-poll-skip and int-nonmonotonic-poll inside one poll
        b.send(0, "f", value)
    b.poll(9, {"f": [0, 2, 1]})
    b.send_many(10, [("g", 70), ("g", 72)], offsets=[0, 2])  # int-send-skip
    b.send(11, "g", 71, offset=1)
    b.send_many(10, [("g", 74), ("g", 73)], offsets=[4, 3])  # int-nonmonotonic-send
    b.poll(9, {"g": [0, 1, 2, 3, 4]})
    b.send_many(12, [("h", 80)], outcome="fail", logged=True)  # G1a: a failed send is read
    b.poll(13, {"h": [0]})
    b.invoke(14, "txn", [["send", "i", 90], ["poll"]])  # precommitted read
    b.complete(14, "ok", [["send", "i", [0, 90]], ["poll", {"i": [[0, 90]]}]])
    b.poll(13, {"j": [(0, 99)]})  # a value no call sent
    b.invoke(15, "txn", [["send", "k", 1], ["poll"]])  # G1c: each transaction reads the other's
    b.invoke(16, "txn", [["send", "l", 2], ["poll"]])
    b.complete(15, "ok", [["send", "k", [0, 1]], ["poll", {"l": [[0, 2]]}]])
    b.complete(16, "ok", [["send", "l", [0, 2]], ["poll", {"k": [[0, 1]]}]])
    b.poll(17, {"m": [(0, 7)]})  # G1c-realtime: read before the send was invoked
    b.send(18, "m", 7, offset=0)
    return b


def verified(tmp_path: Path, name: str, builder: KafkaHistoryBuilder, **conventions: Any) -> HistoryReport:
    path = tmp_path / f"{name}.jsonl"
    write_jsonl(path, builder.operations)
    options = VerifyOptions(model="kafka", engine="local", conventions=conventions)
    return verify_history(path, options, keep_history=True)


def every_anomaly_report(tmp_path: Path) -> HistoryReport:
    return verified(tmp_path, "every-anomaly", every_anomaly_history(), ww_deps=True)


# ---------------------------------------------------------------------------------------
# Sentences
# ---------------------------------------------------------------------------------------

ALLOWED = " (allowed under this test's settings)."
SENTENCES = {
    "lost-write": (
        "lost write: a=11 (offset 1), sent by process 0's send (#2-#3) and acknowledged, was never "
        "read, although process 2's poll (#8-#9) read further in a's log (position 2, past this "
        "value's 1)."
    ),
    "unseen": ("unseen: 1 value sent to key a by acknowledged calls was never polled (11)."),
    "duplicate": (
        "duplicate: b=20, sent by process 0's send (#10-#11), appears at 2 offsets of key b (0, 1); "
        "process 3's poll (#12-#13) read it first."
    ),
    "int-nonmonotonic-poll": (
        "internal nonmonotonic poll: process 3's poll (#12-#13) read b=20 at offset 1 and then b=20 "
        "at offset 1 within one call, going backwards in the log."
    ),
    "inconsistent-offsets": (
        "inconsistent offsets: offset 0 of key c holds 2 different values: 30 (sent by process 4's "
        "send (#14-#15)) and 31 (sent by process 5's send (#16-#17))."
    ),
    "int-poll-skip": (
        "internal poll skip: process 7's poll (#36-#37) read d=41 at offset 1 and then d=43 at "
        "offset 3 within one call, skipping 1 value (42) in between."
    ),
    "nonmonotonic-poll": (
        "nonmonotonic poll: process 6 polled d=42 at offset 2 in its poll (#32-#33), then went back "
        "to d=41 at offset 1 in its poll (#34-#35) (the log position moved by -1, not forward)."
    ),
    "poll-skip": (
        "poll skip: process 6 polled d=40 at offset 0 in its poll (#30-#31), then jumped to d=42 at "
        "offset 2 in its poll (#32-#33), skipping 1 value (41)."
    ),
    "nonmonotonic-send": (
        "nonmonotonic send: process 8 sent e=50 at offset 1 in its send (#38-#39), then went back to "
        "e=51 at offset 0 in its send (#40-#41) (the log position moved by -1, not forward)."
    ),
    "int-nonmonotonic-send": (
        "internal nonmonotonic send: process 10's send (#56-#57) sent g=74 at offset 4 and then g=73 "
        "at offset 3 within one call, going backwards in the log."
    ),
    "int-send-skip": (
        "internal send skip: process 10's send (#52-#53) sent g=70 at offset 0 and then g=72 at "
        "offset 2 within one call, skipping 1 value (71) in between" + ALLOWED
    ),
    "G1a": (
        "aborted read (G1a): process 13's poll (#62-#63) read h=80 at offset 0, which only process "
        "12's failed send (#60-#61) sent."
    ),
    "precommitted-read": (
        "precommitted read: process 14's txn (#64-#65) read its own value 90 of key i before it committed."
    ),
    "no-writer-of-value": (
        "value without a writer: process 13's poll (#66-#67) read j=99 at offset 0, which no call sent."
    ),
    "G0": (
        "G0 (write cycle): let T1 = process 10's send (#52-#53); T2 = process 11's send (#54-#55). "
        "Then T1 sent g=70 and T2 sent g=71 right after it in g's log, and T2 sent g=71 and T1 sent "
        "g=72 right after it in g's log: each call must come before the next, around a cycle" + ALLOWED
    ),
    "G0-realtime": (
        "G0-realtime (write cycle with real-time order): let T1 = process 8's send (#38-#39); T2 = "
        "process 8's send (#40-#41). Then T1 completed (#39) before T2 was invoked (#40), and T2 "
        "sent e=51 and T1 sent e=50 right after it in e's log: each call must come before the next, "
        "around a cycle" + ALLOWED
    ),
    "G1c": (
        "G1c (circular information flow): let T1 = process 15's txn (#68-#70); T2 = process 16's txn "
        "(#69-#71). Then T1 sent k=1, which T2 read, and T2 sent l=2, which T1 read: each call must "
        "come before the next, around a cycle" + ALLOWED
    ),
    "G1c-realtime": (
        "G1c-realtime (circular information flow with real-time order): let T1 = process 17's poll "
        "(#72-#73); T2 = process 18's send (#74-#75). Then T1 completed (#73) before T2 was invoked "
        "(#74), and T2 sent m=7, which T1 read: each call must come before the next, around a cycle" + ALLOWED
    ),
    "PL-1-cycle-exists": (
        "PL-1-cycle-exists: the dependency graph has a cycle among 2 calls over ww edges, so the "
        "history is not read-uncommitted (Elle's consistency model)" + ALLOWED
    ),
    "PL-2-cycle-exists": (
        "PL-2-cycle-exists: the dependency graph has a cycle among 2 calls over ww+wr edges, so the "
        "history is not read-committed (Elle's consistency model)" + ALLOWED
    ),
    "strong-PL-1-cycle-exists": (
        "strong-PL-1-cycle-exists: the dependency graph has a cycle among 2 calls over ww+realtime "
        "edges, so the history is not strong-read-uncommitted (Elle's consistency model)" + ALLOWED
    ),
    "strong-PL-2-cycle-exists": (
        "strong-PL-2-cycle-exists: the dependency graph has a cycle among 2 calls over "
        "ww+wr+realtime edges, so the history is not strong-read-committed (Elle's consistency model)"
        + ALLOWED
    ),
    "empty-transaction-graph": (
        "empty transaction graph: among 0 calls no call read another's write or followed it in real "
        "time, so the cycle search had nothing to check (Jepsen's checker counts this as an error)."
    ),
}


def test_every_anomaly_type_has_a_sentence() -> None:
    assert set(SENTENCES) == set(ANOMALY_TYPES)


@pytest.fixture(scope="module")
def every_anomaly(tmp_path_factory: pytest.TempPathFactory) -> HistoryReport:
    return every_anomaly_report(tmp_path_factory.mktemp("every-anomaly"))


@pytest.mark.parametrize("kind", sorted(set(ANOMALY_TYPES) - {"empty-transaction-graph"}))
def test_the_sentence_of_each_anomaly_type(every_anomaly: HistoryReport, kind: str) -> None:
    said = [e for e in explanations(every_anomaly) if e.kind == kind]
    assert said, f"no {kind} in the history"
    assert said[0].sentence == SENTENCES[kind]
    assert said[0].allowed == SENTENCES[kind].endswith(ALLOWED)


def test_the_empty_transaction_graph_sentence() -> None:
    b = KafkaHistoryBuilder()
    b.assign(1, ["x"])
    said = explain_result(check_kafka(b.calls()))
    assert [e.sentence for e in said] == [SENTENCES["empty-transaction-graph"]]


def test_sentences_name_the_calls_with_their_roles(every_anomaly: HistoryReport) -> None:
    said: dict[str, Explanation] = {}
    for explanation in explanations(every_anomaly):
        said.setdefault(explanation.kind, explanation)
    assert [(c.role, c.invoke_index, c.complete_index) for c in said["lost-write"].calls] == [
        ("writer", 2, 3),
        ("read past it", 8, 9),
    ]
    assert said["lost-write"].offsets == (1,) and said["lost-write"].key == "a"
    assert [(c.role, c.invoke_index) for c in said["G1c"].calls] == [("T1", 68), ("T2", 69)]
    assert [(c.role, c.invoke_index) for c in said["poll-skip"].calls] == [("before", 30), ("after", 32)]


def test_further_records_of_a_type_are_counted_in_one_sentence() -> None:
    b = KafkaHistoryBuilder()
    for value in range(30):
        b.send(0, "x", value)
    b.poll(1, {"x": list(range(0, 30, 2))})  # 14 skips inside one poll
    said = explain_result(check_kafka(b.calls()), limit=3)
    skips = [e.sentence for e in said if e.kind == "int-poll-skip"]
    assert len(skips) == 4
    assert (
        skips[-1]
        == "... and 11 more int-poll-skip anomalies in this part (14 in all; see --json for the records)."
    )


def test_an_undecided_part_says_why() -> None:
    result = CheckResult(
        "linearizability",
        "cas-register",
        "k",
        Verdict.UNKNOWN,
        3,
        {"reason": "time budget exhausted", "longest_linearizable_prefix": [0, 2]},
        {},
    )
    assert [e.sentence for e in explain_result(result)] == [
        "undecided: time budget exhausted; the longest linearizable prefix found has 2 calls."
    ]


ETCD_SENTENCE = (
    "not linearizable: no order of the calls explains read -> 2 by process 11 (#84-#85): after the longest "
    "linearizable prefix (43 of 85 calls) the register holds 0."
)


@needs_shared
def test_text_and_json_print_the_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "verify", str(ETCD), str(KNOSSOS))
    assert code == 1
    assert f"    - {ETCD_SENTENCE}" in out.splitlines()
    assert "no order of the calls explains read -> 2 by process 21 (#13-#14)" in out
    code, out, _ = run_cli(capsys, "verify", str(ETCD), "--json")
    document = json.loads(out)
    [explained] = document["explanations"]
    assert explained["sentence"] == ETCD_SENTENCE
    assert explained["type"] == "not-linearizable"
    assert explained["calls"] == [
        {"role": "cannot be placed", "invoke_index": 84, "complete_index": 85, "process": 11, "f": "read"}
    ]


def test_text_summary_and_json_of_a_kafka_history(every_anomaly: HistoryReport) -> None:
    lines = text_summary([every_anomaly])
    assert f"    - {SENTENCES['poll-skip']}" in lines
    assert '  part "d": invalid' in lines
    listed = report_json([every_anomaly])["explanations"]
    assert {item["type"] for item in listed} >= set(SENTENCES) - {"empty-transaction-graph"}
    assert all(item["path"] == every_anomaly.path for item in listed)


# ---------------------------------------------------------------------------------------
# The HTML page, read as HTML (the browser test renders it)
# ---------------------------------------------------------------------------------------


class Elements(HTMLParser):
    """Every element's tag and attributes, and the text inside each `text` element."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.network: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        self.elements.append((tag, attributes))
        for name in ("src", "href"):
            if re.match(r"^\w+://", attributes.get(name, "")):
                self.network.append(attributes[name])

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def ops(self) -> dict[int, list[dict[str, str]]]:
        """The bars drawn of each call (a call may be drawn in several parts' timelines)."""
        drawn: dict[int, list[dict[str, str]]] = {}
        for tag, attributes in self.elements:
            if tag == "g" and "data-op" in attributes:
                drawn.setdefault(int(attributes["data-op"]), []).append(attributes)
        return drawn


def parsed(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    return elements


def test_the_page_labels_every_call_each_sentence_names(every_anomaly: HistoryReport) -> None:
    assert every_anomaly.history is not None
    page = html_report([every_anomaly], [every_anomaly.history])
    elements = parsed(page)
    ops = elements.ops()
    for explanation in explanations(every_anomaly):
        for call in explanation.calls:
            assert any(
                explanation.kind in drawn.get("data-anomaly", "").split()
                and call.role in drawn["data-role"]
                and "bad" in drawn["class"].split()
                for drawn in ops[call.invoke_index]
            ), (explanation.kind, call, ops[call.invoke_index])
    sentences = [a for tag, a in elements.elements if tag == "li" and "data-explanation" in a]
    assert {a["data-type"] for a in sentences} >= set(SENTENCES) - {"empty-transaction-graph"}
    assert elements.network == []
    assert "<h3>What went wrong</h3>" in page and "<h3>Under which conventions</h3>" in page
    # The per-key view marks the lost value's offset and the offset that held two values.
    cells = [(tag, a) for tag, a in elements.elements if tag == "table" and "data-key" in a]
    assert {a["data-key"] for _, a in cells} >= {"a", "b", "c", "d"}
    assert "<th class='marked' title='lost-write, unseen' data-offset='1'>1</th>" in page
    assert "class='marked clash' data-offset='0'" in page  # key c: 30 and 31 at offset 0
    assert "data-plot='realtime-lag'" in page


@needs_shared
def test_the_linearizable_prefix_is_replayed_with_the_model() -> None:
    report = verify_history(ETCD, VerifyOptions(engine="local"), keep_history=True)
    assert report.history is not None
    [result] = report.results
    view = HistoryView.of(report.history)
    steps = prefix_steps(result, view)
    assert [step.invoke_index for step in steps] == result.evidence["longest_linearizable_prefix"]
    assert steps[-1].state == result.evidence["state_after_prefix"] == "0"
    assert all(a.point <= b.point for a, b in itertools.pairwise(steps))  # in linearization order
    for step in steps:
        call = view.by_invoke(step.invoke_index)
        assert call is not None
        assert call.invoke_index <= step.point <= (call.complete_index or step.point)
    page = html_report([report], [report.history])
    ops = parsed(page).ops()
    assert "cannot be placed" in ops[84][0]["data-role"]
    assert sum("data-linearized" in drawn[0] for drawn in ops.values()) == len(steps)
    assert "<tr data-op='83'><td>43</td><td>#83</td>" in page  # the prefix's last step, in the table


def test_a_long_history_is_drawn_in_windows_with_breaks() -> None:
    axis = Axis.of([(0, 10), (1000, 1010)])
    assert axis.x(5) < axis.x(500) < axis.x(1000) < axis.x(1005)
    assert axis.x(500) == axis.x(900)  # every hidden index sits in the break


@pytest.mark.slow
def test_the_report_of_a_million_operations_stays_small(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "million.jsonl"
    generator = HistoryGenerator(500_000, 16, seed=7, anomalies=INJECTABLE_ANOMALIES)
    written = write_jsonl(path, generator)
    assert written >= 1_000_000
    report = verify_history(path, VerifyOptions(model="kafka", engine="local"), keep_history=True)
    assert report.verdict is Verdict.INVALID and report.history is not None
    page = html_report([report], [report.history])
    size = len(page.encode())
    with capsys.disabled():
        print(f"\nreport of {written:,} operations: {size / 1e6:.2f} MB")
    assert size < 3_000_000
    ops = parsed(page).ops()
    named = [call for e in explanations(report) for call in e.calls]
    assert named and all(call.invoke_index in ops for call in named)
    for kind in ("lost-write", "duplicate", "inconsistent-offsets", "G1a", "poll-skip"):
        assert f"data-type='{kind}'" in page


def test_a_window_of_the_history_is_enough(every_anomaly: HistoryReport) -> None:
    """A history checked on Spark is not kept: the page is drawn from the operations near the
    evidence, which may start or end in the middle of a call."""
    assert every_anomaly.history is not None
    window = every_anomaly.history[29:58]  # from a completion (#29) to an invocation (#57)
    page = html_report([every_anomaly], [window])
    ops = parsed(page).ops()
    assert {30, 32, 34, 36} <= set(ops)  # the poll-skip and nonmonotonic-poll calls of key d
    assert 8 not in ops  # the lost write's reader is outside the window
    assert "data-type='lost-write'" in page  # its sentence is still there


def test_a_history_with_many_failing_parts_stays_small(tmp_path: Path) -> None:
    b = KafkaHistoryBuilder()
    for key in range(80):
        for value in range(40):
            b.send(key % 7, key, key * 100 + value)
        b.poll(7 + key % 5, {key: [*range(20), *range(21, 40)]})  # skips offset 20 of every key
    report = verified(tmp_path, "many", b)
    assert len(report.failing()) == 80 and report.history is not None
    page = html_report([report], [report.history])
    assert len(page.encode()) < 3_000_000
    assert "50 more failing parts are listed below, not drawn." in page
    assert page.count("data-timeline='yes'") == 30


@needs_shared
def test_a_valid_history_shows_a_linearization() -> None:
    valid = ETCD.with_name("etcd_002.log")
    report = verify_history(valid, VerifyOptions(engine="local"), keep_history=True)
    assert report.verdict is Verdict.VALID and report.history is not None
    page = html_report([report], [report.history])
    ops = parsed(page).ops()
    order = report.results[0].evidence["linearization"]
    linearized = {
        int(drawn[0]["data-linearized"]): index
        for index, drawn in ops.items()
        if "data-linearized" in drawn[0]
    }
    assert linearized and all(order[number - 1] == index for number, index in linearized.items())
    assert "A linearization of the whole history" in page


def test_the_lag_lines_reach_the_checkers_worst_lag(tmp_path: Path) -> None:
    path = tmp_path / "lagging.jsonl"
    write_jsonl(path, HistoryGenerator(3_000, 4, seed=11))
    report = verify_history(path, VerifyOptions(model="kafka", engine="local"), keep_history=True)
    assert report.history is not None
    [lag] = [r.evidence["realtime_lag"] for r in report.results if "realtime_lag" in r.evidence]
    series = lag_series(HistoryView.of(report.history))
    assert series is not None and set(series) <= {"0", "1", "2", "3"}
    assert max(value for line in series.values() for _, value in line) == lag["worst"]["lag"] > 0
    assert "polyline class='lag-line'" in html_report([report], [report.history])
