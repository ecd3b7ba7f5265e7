"""Reports of a verification: a text summary, one JSON document, a self-contained HTML file.

All three say why a part failed in the same sentences (`spark_checks.explain`: one per
anomaly, as Elle and Jepsen's Kafka checker name them, one per call no linearization order
explains): the text summary prints them under each failing part, `--json` lists them as
"explanations" beside the evidence, and the HTML page (`spark_checks.report_html`: summary,
a section per failing part with its timeline, the longest linearizable prefix with the model's
states, Kafka's per-key offsets and realtime lag) puts them above the drawings they explain.

Writing the HTML file (`check_report_path` before the verification, `write_report` after)
never overwrites a file: a path that exists, lies in a missing folder, under a file or in a
folder this process cannot write to is refused before any history is read, and the file is
created exclusively (`O_EXCL`), so a file that appears at the path while the histories are
checked is left alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spark_checks.engine import HistoryReport
from spark_checks.explain import (
    Explanation,
    Lookup,
    call_spans,
    deviation_sentence,
    deviations_from_jepsen,
    explain_result,
    explain_results,
    indices_to_look_up,
)
from spark_checks.history import CheckResult, HistoryError, JsonValue, Operation, Verdict

EXIT_CODES = {Verdict.VALID: 0, Verdict.INVALID: 1, Verdict.UNKNOWN: 3}
"""`kafkaspec verify` exit codes: 0 valid, 1 anomaly / not linearizable, 3 unknown."""

_INDEX_KEYS = frozenset(
    {"index", "indices", "invoke_index", "complete_index", "unlinearizable", "blocking_call"}
)
"""Evidence keys whose integers are operation indices (offsets and values are not)."""


TEXT_PER_TYPE = 10
"""Sentences per anomaly type and part in the terminal (the rest are counted)."""


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
    import tempfile  # --report only: 11 M instructions of start-up (shutil, random) for every other run

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


def explanations(report: HistoryReport, lookup: Lookup | None = None) -> list[Explanation]:
    """The sentences of every part of `report` that is not valid or found an allowed
    anomaly, failing parts first (`spark_checks.explain`)."""
    failing = report.failing()
    allowed = [
        result
        for result in report.results
        if result.verdict is Verdict.VALID and result.evidence.get("allowed_error_types_found")
    ]
    return explain_results([*failing, *allowed], lookup)


def sentence_lookup(report: HistoryReport) -> Lookup | None:
    """The calls a linearizability sentence names (who made them, where they ended), from the
    kept history or else by reading the file again up to their completions; None when no
    sentence needs one or the file cannot be read again (the sentences then name indices)."""
    wanted = indices_to_look_up(report.failing())
    if not wanted:
        return None
    if report.history is not None:
        return call_spans(report.history, wanted)
    from spark_checks.readers import open_history  # only an invalid linearizability part reads again

    try:
        _, operations = open_history(report.path, report.format)
        return call_spans(operations, wanted)
    except (OSError, HistoryError, ValueError):
        return None


def _lookups(
    reports: Sequence[HistoryReport], given: Sequence[Lookup | None] | None
) -> Sequence[Lookup | None]:
    return given if given is not None else [sentence_lookup(report) for report in reports]


def report_json(
    reports: Sequence[HistoryReport], lookups: Sequence[Lookup | None] | None = None
) -> dict[str, Any]:
    """The `--json` document. `lookups` (one per report) name the processes of the calls the
    linearizability sentences mention (`explain.call_spans`; by default `sentence_lookup`)."""
    found = _lookups(reports, lookups)
    return {
        "verdict": _overall(reports).value,
        "explanations": [
            {"path": report.path, **explanation.to_json()}
            for report, lookup in zip(reports, found, strict=True)
            for explanation in explanations(report, lookup)
        ],
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
                "deviations_from_jepsen": deviations_from_jepsen(report.results),
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


def overall_verdict(reports: Sequence[HistoryReport]) -> Verdict:
    """Invalid if any history is, else unknown if any is, else valid."""
    return _overall(reports)


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


def text_summary(
    reports: Sequence[HistoryReport], lookups: Sequence[Lookup | None] | None = None
) -> list[str]:
    """Lines for the terminal: per history its verdict, conventions, and per failing part
    the sentences that say why (the same as the HTML report's)."""
    lines: list[str] = []
    found = _lookups(reports, lookups)
    for report, lookup in zip(reports, found, strict=True):
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
            said = explain_result(result, lookup, limit=TEXT_PER_TYPE)
            lines.extend(f"    - {explanation.sentence}" for explanation in said)
            if not said:
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
        lines.extend(f"  {deviation_sentence(d)}" for d in deviations_from_jepsen(report.results))
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


def _size_text(report: HistoryReport) -> str:
    parts = len(report.results)
    return f"{report.operations:,} operations ({report.calls:,} calls) in {parts:,} part{'s' * (parts != 1)}"


def _describe_evidence(evidence: dict[str, JsonValue]) -> list[str]:
    lines = []
    for name, value in evidence.items():
        text = json.dumps(value)
        lines.append(f"{name}: {text if len(text) <= 300 else text[:297] + '...'}")
    return lines


def html_report(reports: Sequence[HistoryReport], histories: Sequence[Sequence[Operation]]) -> str:
    """One self-contained HTML page for `reports` (with each history's operations, or a
    window of them, for the timelines): see `spark_checks.report_html`."""
    from spark_checks.report_html import html_page  # only a run with --report draws a page

    return html_page(reports, histories)
