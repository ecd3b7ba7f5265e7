"""Reports of a verification: a text summary, one JSON document, a self-contained HTML file.

The HTML report needs no network: styles, script and data are inline. It shows the
verdict, the conventions the verdict depends on, every part's result, the evidence of each
failing part, and a per-process timeline of the operations around the evidence (each bar
spans an operation's invocation to its completion; operations named by the evidence are
highlighted). The timeline is drawn by an inline script from embedded JSON; the page sets
`data-rendered="yes"` on <body> when it finished, so a headless browser test can tell a
rendered page from one whose script failed.

Writing the HTML file (`check_report_path` before the verification, `write_report` after)
never overwrites a file: a path that exists, lies in a missing folder, under a file or in a
folder this process cannot write to is refused before any history is read, and the file is
created exclusively (`O_EXCL`), so a file that appears at the path while the histories are
checked is left alone.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from spark_checks.engine import HistoryReport
from spark_checks.history import CheckResult, JsonValue, Operation, Verdict

EXIT_CODES = {Verdict.VALID: 0, Verdict.INVALID: 1, Verdict.UNKNOWN: 3}
"""`kafkaspec verify` exit codes: 0 valid, 1 anomaly / not linearizable, 3 unknown."""

_INDEX_KEYS = frozenset(
    {"index", "indices", "invoke_index", "complete_index", "unlinearizable", "blocking_call"}
)
"""Evidence keys whose integers are operation indices (offsets and values are not)."""


class ReportPathError(ValueError):
    """The report cannot be written at the path asked for (one line naming why)."""


def check_report_path(path: Path) -> None:
    """Raise `ReportPathError` unless a new file can be created at `path`: it must not exist,
    and its folder must exist, be a folder and take a new file (tried with a probe file,
    which also catches a read-only file system and access control lists)."""
    if path.exists() or path.is_symlink():
        raise ReportPathError(f"{path} already exists; choose another --report file")
    folder = path.parent
    if not folder.exists():
        raise ReportPathError(f"cannot write the report {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise ReportPathError(f"cannot write the report {path}: {folder} is not a folder")
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".kafkaspec-report-probe-")
    except OSError as error:
        raise ReportPathError(
            f"cannot write the report {path}: the folder {folder} does not take new files ({error.strerror})"
        ) from None
    os.close(handle)
    os.unlink(probe)


def write_report(path: Path, text: str) -> None:
    """Create `path` with `text`; `FileExistsError` if a file is there (never overwritten)."""
    with open(path, "x", encoding="utf-8") as file:
        file.write(text)


def evidence_indices(evidence: JsonValue) -> set[int]:
    """Every operation index the evidence names: the calls that could not be linearized,
    and the calls an anomaly names (`invoke_index` / `complete_index` of its operations)."""
    found: set[int] = set()

    def walk(node: JsonValue, under_index_key: bool) -> None:
        if isinstance(node, bool):
            return
        if isinstance(node, int):
            if under_index_key:
                found.add(node)
            return
        if isinstance(node, dict):
            for name, child in node.items():
                walk(child, name in _INDEX_KEYS)
        elif isinstance(node, list):
            for child in node:
                walk(child, under_index_key)

    walk(evidence, False)
    return found


def report_json(reports: Sequence[HistoryReport]) -> dict[str, Any]:
    """The `--json` document."""
    return {
        "verdict": _overall(reports).value,
        "histories": [
            {
                "path": report.path,
                "format": report.format,
                "model": report.model,
                "engine": report.engine,
                "verdict": report.verdict.value,
                "operations": report.operations,
                "calls": report.calls,
                "parts": len(report.results),
                "seconds": round(report.seconds, 3),
                "conventions": report.conventions,
                "failing": [_result_json(result) for result in report.failing()],
            }
            for report in reports
        ],
    }


def _result_json(result: CheckResult) -> dict[str, Any]:
    return {
        "part": result.partition,
        "checker": result.checker,
        "verdict": result.verdict.value,
        "operations": result.operations,
        "seconds": round(result.seconds, 3),
        "evidence": result.evidence,
    }


def _overall(reports: Sequence[HistoryReport]) -> Verdict:
    verdicts = {report.verdict for report in reports}
    if Verdict.INVALID in verdicts:
        return Verdict.INVALID
    if Verdict.UNKNOWN in verdicts:
        return Verdict.UNKNOWN
    return Verdict.VALID


def exit_code(reports: Sequence[HistoryReport]) -> int:
    """0 all valid, 1 any invalid, 3 otherwise unknown."""
    return EXIT_CODES[_overall(reports)]


def text_summary(reports: Sequence[HistoryReport]) -> list[str]:
    """Lines for the terminal."""
    lines: list[str] = []
    for report in reports:
        conventions = ", ".join(
            f"{name}={json.dumps(value)}" for name, value in sorted(report.conventions.items())
        )
        where = f"{report.model}, {report.format}, {report.engine} engine"
        size = f"{_size_text(report)}, {report.seconds:.2f} s"
        lines.append(f"{report.path}: {report.verdict.value.upper()} ({where}, {size})")
        if conventions:
            lines.append(f"  conventions: {conventions}")
        for result in report.failing()[:20]:
            lines.append(f"  part {json.dumps(result.partition)}: {result.verdict.value}")
            lines.extend(f"    {line}" for line in _describe_evidence(result.evidence))
        hidden = len(report.failing()) - 20
        if hidden > 0:
            lines.append(f"  ... and {hidden} more failing parts (see --json or --report)")
        allowed = _allowed_found(report)
        if allowed:
            # Jepsen's checker lists every error type, allowed ones too.
            lines.append(f"  allowed anomaly types found: {', '.join(allowed)}")
        worst = _worst_lag(report)
        if worst is not None:
            lines.append(f"  worst realtime lag: {json.dumps(worst)}")
    return lines


def _allowed_found(report: HistoryReport) -> list[str]:
    found: set[str] = set()
    for result in report.results:
        names = result.evidence.get("allowed_error_types_found")
        if isinstance(names, list):
            found.update(str(name) for name in names)
    return sorted(found)


def _lag(report: HistoryReport) -> dict[str, JsonValue] | None:
    """The Kafka whole-history part's realtime lag figures (Jepsen's `realtime-lag`)."""
    for result in report.results:
        lag = result.evidence.get("realtime_lag")
        if isinstance(lag, dict) and lag.get("available"):
            return lag
    return None


def _worst_lag(report: HistoryReport) -> JsonValue:
    lag = _lag(report)
    return None if lag is None else lag.get("worst")


def _lag_html(report: HistoryReport) -> str:
    """A small table: the worst realtime lag, and the greatest per process and key."""
    lag = _lag(report)
    allowed = _allowed_found(report)
    out = ""
    if allowed:
        out += f"<p>Allowed anomaly types found: {html.escape(', '.join(allowed))}</p>"
    if lag is None:
        return out
    rows = lag.get("by_process_key")
    listed = rows[:200] if isinstance(rows, list) else []
    body = "".join(
        f"<tr><td>{html.escape(json.dumps(row.get('process')))}</td><td>{html.escape(str(row.get('key')))}</td>"
        f"<td>{html.escape(json.dumps(row.get('max_lag')))}</td></tr>"
        for row in listed
        if isinstance(row, dict)
    )
    return (
        out + f"<h3>Realtime lag</h3><p>worst: {html.escape(json.dumps(lag.get('worst')))} "
        f"({html.escape(str(lag.get('time_unit')))})</p>"
        f"<table><tr><th>process</th><th>key</th><th>greatest lag</th></tr>{body}</table>"
    )


def _size_text(report: HistoryReport) -> str:
    parts = len(report.results)
    return f"{report.operations:,} operations ({report.calls:,} calls) in {parts:,} part{'s' * (parts != 1)}"


def _describe_evidence(evidence: dict[str, JsonValue]) -> list[str]:
    lines = []
    for name, value in evidence.items():
        text = json.dumps(value)
        lines.append(f"{name}: {text if len(text) <= 300 else text[:297] + '...'}")
    return lines


def timeline_operations(
    history: Iterable[Operation], highlight: set[int], radius: int = 60, limit: int = 2000
) -> list[dict[str, Any]]:
    """Operations near the highlighted indices (or the first `limit` when nothing is), as
    JSON-ready dicts for the timeline."""
    chosen: list[dict[str, Any]] = []
    for operation in history:
        near = not highlight or any(abs(operation.index - index) <= radius for index in highlight)
        if near:
            chosen.append(
                {
                    "index": operation.index,
                    "process": operation.process,
                    "type": operation.type.value,
                    "f": operation.f,
                    "value": operation.value,
                    "key": operation.key,
                    "time": operation.time,
                }
            )
            if len(chosen) >= limit:
                break
    return chosen


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}.valid{color:#1a7f37}.invalid{color:#cf222e}.unknown{color:#9a6700}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .5em;font-size:.9em}
pre{background:#f6f8fa;padding:.6em;overflow:auto;max-height:24em;font-size:.85em}
.timeline{border:1px solid #ddd;overflow:auto;max-height:40em}
.lane{font:11px monospace}.op rect{fill:#8ab4f8}.op.bad rect{fill:#cf222e}.op.info rect{fill:#e0c060}
.op.fail rect{fill:#bbb}.label{font:10px monospace;fill:#111;pointer-events:none}
"""

_SCRIPT = """
function drawTimeline(holder, data){
  const ops = data.operations, bad = new Set(data.highlight);
  const open = new Map(), bars = [];
  for (const op of ops) {
    const p = JSON.stringify(op.process);
    if (op.type === 'invoke') { open.set(p, op); continue; }
    const start = open.get(p); open.delete(p);
    bars.push({p, start: start ? start.index : op.index, end: op.index, op: start || op, done: op});
  }
  for (const [p, start] of open) bars.push({p, start: start.index, end: null, op: start, done: null});
  const lanes = [...new Set(bars.map(b => b.p))].sort((a, b) => {
    const x = JSON.parse(a), y = JSON.parse(b);
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    return String(x).localeCompare(String(y));
  });
  if (!ops.length) { holder.textContent = 'no operations'; return; }
  let minI = Infinity, maxI = -Infinity;
  for (const o of ops) { minI = Math.min(minI, o.index); maxI = Math.max(maxI, o.index); }
  const scale = 14, laneH = 22, left = 90, width = left + (maxI - minI + 2) * scale;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', width); svg.setAttribute('height', lanes.length * laneH + 10);
  lanes.forEach((p, i) => {
    const t = document.createElementNS(ns, 'text');
    t.setAttribute('x', 4); t.setAttribute('y', i * laneH + 15); t.setAttribute('class', 'lane');
    t.textContent = 'process ' + p; svg.appendChild(t);
  });
  for (const b of bars) {
    const g = document.createElementNS(ns, 'g');
    const kind = b.done ? b.done.type : 'info';
    const isBad = bad.has(b.start) || bad.has(b.end);
    g.setAttribute('class', 'op ' + kind + (isBad ? ' bad' : ''));
    const r = document.createElementNS(ns, 'rect');
    const end = b.end === null ? maxI + 1 : b.end;
    r.setAttribute('x', left + (b.start - minI) * scale); r.setAttribute('y', lanes.indexOf(b.p) * laneH + 3);
    r.setAttribute('width', Math.max(6, (end - b.start) * scale)); r.setAttribute('height', laneH - 6);
    const title = document.createElementNS(ns, 'title');
    title.textContent = `#${b.start} ${b.op.f} ${JSON.stringify(b.op.value)} -> ` +
      (b.done ? `${b.done.type} ${JSON.stringify(b.done.value)} (#${b.end})` : 'no completion');
    g.appendChild(r); g.appendChild(title);
    const width = Math.max(6, (end - b.start) * scale);
    if (width > 40) {
      const label = document.createElementNS(ns, 'text');
      label.setAttribute('x', left + (b.start - minI) * scale + 3);
      label.setAttribute('y', lanes.indexOf(b.p) * laneH + 15);
      label.setAttribute('class', 'label');
      const shown = b.done && b.done.type === 'ok' ? b.done.value : b.op.value;
      label.textContent = (b.op.f + ' ' + JSON.stringify(shown)).slice(0, Math.floor(width / 6));
      g.appendChild(label);
    }
    svg.appendChild(g);
  }
  holder.appendChild(svg);
}
for (const source of document.querySelectorAll('script.timeline-data')) {
  drawTimeline(document.getElementById(source.dataset.for), JSON.parse(source.textContent));
}
document.body.setAttribute('data-rendered', 'yes');
"""


def html_report(reports: Sequence[HistoryReport], histories: Sequence[Sequence[Operation]]) -> str:
    """One self-contained HTML page for `reports` (with each history's operations, or a
    window of them, for the timelines)."""
    sections = []
    for number, (report, operations) in enumerate(zip(reports, histories, strict=True)):
        highlight = set().union(*(evidence_indices(result.evidence) for result in report.failing()))
        timeline = timeline_operations(operations, highlight)
        data = json.dumps({"operations": timeline, "highlight": sorted(highlight)}).replace("</", "<\\/")
        rows = "".join(
            f"<tr><td>{html.escape(json.dumps(result.partition))}</td><td class='{result.verdict.value}'>"
            f"{result.verdict.value}</td><td>{result.operations}</td><td>{result.seconds:.3f}</td></tr>"
            for result in (report.failing() + [r for r in report.results if r.verdict is Verdict.VALID])[:500]
        )
        evidence = "".join(
            f"<h3>part {html.escape(json.dumps(result.partition))}: {result.verdict.value}</h3>"
            f"<pre>{html.escape(json.dumps(result.evidence, indent=2))}</pre>"
            for result in report.failing()[:50]
        )
        conventions = html.escape(json.dumps(report.conventions, indent=2))
        sections.append(
            f"<section><h2>{html.escape(report.path)}: <span class='{report.verdict.value}'>"
            f"{report.verdict.value.upper()}</span></h2>"
            f"<p>model <b>{html.escape(report.model)}</b>, format {html.escape(report.format)}, "
            f"{html.escape(report.engine)} engine, {_size_text(report)}, {report.seconds:.2f} s</p>"
            f"<h3>Conventions</h3><pre>{conventions}</pre>"
            f"{_lag_html(report)}"
            f"<h3>Timeline</h3><p>Each bar is one operation from invocation to completion, one lane per "
            f"process; red bars are named by the evidence.</p>"
            f"<div class='timeline' id='timeline-{number}'></div>"
            f"<script type='application/json' class='timeline-data' data-for='timeline-{number}'>"
            f"{data}</script>"
            f"<h3>Evidence</h3>{evidence or '<p>none: every part is valid</p>'}"
            "<h3>Parts</h3><table><tr><th>part</th><th>verdict</th><th>operations</th><th>seconds</th></tr>"
            f"{rows}</table></section>"
        )
    title = "kafkaspec verify: " + _overall(reports).value
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(sections)}"
        f"<script>{_SCRIPT}</script></body></html>"
    )
