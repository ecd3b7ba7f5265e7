"""The verify report in headless Chromium: reports of a non-linearizable etcd log, a Knossos
history and a Kafka history with every anomaly type, written by `kafkaspec verify --report`,
render without console errors or network requests, and every call a sentence names is drawn
and labelled with its role (found through the page's own data attributes). One browser for
all three pages; screenshots of the etcd and Kafka reports are saved and their paths printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.readers.jsonl import write_jsonl
from spark_checks.report import explanations
from tests.helpers import run_cli
from tests.spark_checks.test_report import ETCD, ETCD_SENTENCE, KNOSSOS, SENTENCES, every_anomaly_history
from tests.test_docs import DevTools, chromium, problems_in

LABELLED = """(() => ({
  rendered: document.body.getAttribute('data-rendered'),
  labelled: [...document.querySelectorAll('g.op[data-explanations]')].map(g => ({
    op: Number(g.dataset.op),
    anomaly: g.dataset.anomaly,
    role: g.dataset.role,
    label: (g.querySelector('.mark-label') || {}).textContent || '',
    width: g.getBoundingClientRect().width,
  })),
  sentences: [...document.querySelectorAll('li[data-explanation]')].map(li => ({
    id: li.id, type: li.dataset.type, text: li.textContent,
  })),
  points: document.querySelectorAll('svg[data-timeline] g.point').length,
  lagLines: document.querySelectorAll('svg[data-plot="realtime-lag"] polyline.lag-line').length,
  marked: [...document.querySelectorAll('table[data-key] th.marked')]
    .map(th => th.closest('table').dataset.key),
}))()"""

FOCUS = """(id => { document.getElementById(id).click();
  return [...document.querySelectorAll('g.op.focus')].map(g => Number(g.dataset.op)); })"""


def labels(found: dict[str, Any]) -> dict[tuple[int, str], str]:
    """(call, anomaly type) -> its roles, once checked that the label drawn above the bar
    shows them (cut with an ellipsis where the next bar leaves no room)."""
    drawn: dict[tuple[int, str], str] = {}
    for bar in found["labelled"]:
        assert bar["width"] > 0, bar
        shown = bar["label"].removeprefix("✗ ").removesuffix("…")
        assert shown and bar["role"].startswith(shown), bar
        for kind in bar["anomaly"].split():
            drawn[(bar["op"], kind)] = bar["role"]
    return drawn


@pytest.mark.skipif(not ETCD.is_file(), reason="needs ../shared/histories")
def test_reports_render_and_label_the_offending_calls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    kafka_history = tmp_path / "every-anomaly.jsonl"
    write_jsonl(kafka_history, every_anomaly_history().operations)
    pages = {}
    for name, arguments in (
        ("etcd", [str(ETCD)]),
        ("knossos", [str(KNOSSOS)]),
        ("kafka", [str(kafka_history), "--model", "kafka", "--ww-deps"]),
    ):
        page = tmp_path / f"report-{name}.html"
        code, out, _ = run_cli(capsys, "verify", *arguments, "--engine", "local", "--report", str(page))
        assert code == 1 and f"report: {page}" in out
        pages[name] = page
    kafka = verify_history(
        kafka_history, VerifyOptions(model="kafka", engine="local", conventions={"ww_deps": True})
    )
    knossos = verify_history(KNOSSOS, VerifyOptions(engine="local"))
    tools = DevTools(browser, tmp_path / "profile", tmp_path / "chromium.log")
    shots = {}
    try:
        tools.open_page()
        found = {}
        for name, page in pages.items():
            assert problems_in(tools.visit(page.as_uri())) == [], name
            found[name] = tools.evaluate(LABELLED)
            assert found[name]["rendered"] == "yes", name
            if name in ("etcd", "kafka"):
                shots[name] = tmp_path / f"screenshot-report-{name}.png"
                tools.screenshot(shots[name], 2400)
                assert shots[name].stat().st_size > 20_000
            if name == "kafka":
                poll_skip = next(s for s in found[name]["sentences"] if s["type"] == "poll-skip")
                focused = tools.evaluate(f"{FOCUS}({poll_skip['id']!r})")
                assert set(focused) == {30, 32}  # a click on the sentence outlines its calls
    finally:
        tools.close()

    etcd = found["etcd"]
    assert labels(etcd) == {(84, "not-linearizable"): "cannot be placed"}
    assert [bar["label"] for bar in etcd["labelled"]] == ["✗ cannot be placed"]
    assert [s["text"] for s in etcd["sentences"]] == [ETCD_SENTENCE]
    assert etcd["points"] == 43  # the longest linearizable prefix, one point per call

    [blocked] = [e for e in explanations(knossos) if e.kind == "not-linearizable"]
    drawn = labels(found["knossos"])
    for call in blocked.calls:
        assert "cannot be placed" in drawn[(call.invoke_index, "not-linearizable")]
    assert found["knossos"]["points"] == len(knossos.results[0].evidence["longest_linearizable_prefix"])

    page = found["kafka"]
    drawn = labels(page)
    said = explanations(kafka)
    assert {e.kind for e in said} == set(SENTENCES) - {"empty-transaction-graph"}
    for explanation in said:
        for call in explanation.calls:
            assert call.role in drawn[(call.invoke_index, explanation.kind)], (
                explanation,
                call,
            )
    assert {s["type"] for s in page["sentences"]} == {e.kind for e in said}
    assert page["lagLines"] > 0  # a line per key polled
    assert {"a", "b", "c", "d"} <= set(page["marked"])
    with capsys.disabled():
        for name, shot in shots.items():
            print(f"\nscreenshot of the {name} report: {shot}")
