"""What a run over many files costs around the checks (`spark_checks.batch`): a small invalid
history's sentences name its calls from the operations kept while it was verified, not by
reading the file again, and the report goes back to the printing process without them; large
files start first (`parallel.start_order`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_checks import batch, readers
from spark_checks.batch import KEEP_FOR_LOOKUP_BYTES, FileOutcome, verify_files
from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.explain import call_spans, indices_to_look_up
from spark_checks.history import Operation, Verdict
from spark_checks.parallel import PARALLEL_MIN_BYTES, Task, TaskContext, WorkerPool, start_order

INVALID_EDN = """\
{:process 0, :type :invoke, :f :write, :value 1}
{:process 0, :type :ok, :f :write, :value 1}
{:process 1, :type :invoke, :f :read, :value nil}
{:process 1, :type :ok, :f :read, :value 2}
"""
INVALID_JSONL = (
    '{"index": 0, "process": 0, "type": "invoke", "f": "write", "value": 1}\n'
    '{"index": 1, "process": 0, "type": "ok", "f": "write", "value": 1}\n'
    '{"index": 2, "process": 1, "type": "invoke", "f": "read", "value": null}\n'
    '{"index": 3, "process": 1, "type": "ok", "f": "read", "value": 2}\n'
)


def _counting_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every `readers.open_history` of a file (the engine's and the lookup's)."""
    opened: list[str] = []
    real = readers.open_history

    def counted(
        path: str | os.PathLike[str], fmt: str = "auto"
    ) -> tuple[readers.SourceInfo, Iterator[Operation]]:
        opened.append(str(path))
        return real(path, fmt)

    monkeypatch.setattr(readers, "open_history", counted)
    return opened


def _outcome(path: Path) -> FileOutcome:
    [outcome] = verify_files([str(path)], VerifyOptions(engine="local"), WorkerPool(1))
    return outcome


def _invalid_outcome_and_extra_opens(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[FileOutcome, HistoryReport, int]:
    """`history`'s outcome through `verify_files`, its (invalid) report, and how many more times
    it opened the file than `verify_history` alone does: the opens its lookup added."""
    opened = _counting_opens(monkeypatch)
    verify_history(history, VerifyOptions(engine="local"))
    by_the_engine = len(opened)
    opened.clear()
    outcome = _outcome(history)
    assert outcome.report is not None and outcome.report.verdict is Verdict.INVALID
    return outcome, outcome.report, len(opened) - by_the_engine


def test_a_small_invalid_history_is_looked_up_in_its_kept_operations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "history.edn"
    history.write_text(INVALID_EDN)
    outcome, report, opens_beyond = _invalid_outcome_and_extra_opens(history, monkeypatch)
    assert opens_beyond == 0  # the lookup read nothing more
    assert report.history is None  # the kept operations stay in the worker
    _, operations = readers.open_history(history)
    wanted = indices_to_look_up(report.failing())
    assert wanted and outcome.lookup == call_spans(list(operations), wanted)


def test_a_json_lines_history_is_read_again_for_its_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON Lines keeps its own fast reader (keeping operations would bypass it): its lookup
    reads the file again, and finds the same calls."""
    history = tmp_path / "history.jsonl"
    history.write_text(INVALID_JSONL)
    outcome, report, opens_beyond = _invalid_outcome_and_extra_opens(history, monkeypatch)
    assert opens_beyond == 1
    _, operations = readers.open_history(history)
    assert outcome.lookup == call_spans(list(operations), indices_to_look_up(report.failing()))


def test_a_large_history_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past `KEEP_FOR_LOOKUP_BYTES` the operations are not held for the lookup: it reads again."""
    history = tmp_path / "history.edn"
    padding = ";" + "x" * 1000 + "\n"  # EDN comments: the same calls, a large file
    history.write_text(padding * (KEEP_FOR_LOOKUP_BYTES // len(padding) + 1) + INVALID_EDN)
    _, _, opens_beyond = _invalid_outcome_and_extra_opens(history, monkeypatch)
    assert opens_beyond == 1


def test_large_tasks_start_first_largest_first_then_the_others_smallest_first() -> None:
    sizes = [5, 300, 1, 90, 300, 7, 120]
    tasks = [Task(size, print, ()) for size in sizes]
    assert start_order(tasks) == [2, 0, 5, 3, 6, 1, 4]  # smallest first, ties in the given order
    assert start_order(tasks, large_first_from=100) == [1, 4, 6, 2, 0, 5, 3]


def test_many_files_start_with_the_large_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify` over many files starts those of `PARALLEL_MIN_BYTES` or more first (one started
    last would keep a worker busy alone at the end), then the others smallest first."""
    small = tmp_path / "small.edn"
    small.write_text(INVALID_EDN)
    smaller = tmp_path / "smaller.edn"
    smaller.write_text(INVALID_EDN[: INVALID_EDN.rindex("{")])
    large = tmp_path / "large.edn"
    large.write_text(";" + "x" * PARALLEL_MIN_BYTES + "\n" + INVALID_EDN)
    started: list[str] = []
    real = batch._verify_file

    def recorded(job: object, path: str, context: TaskContext) -> FileOutcome:
        started.append(Path(path).name)
        return real(job, path, context)  # type: ignore[arg-type]

    monkeypatch.setattr(batch, "_verify_file", recorded)
    outcomes = verify_files(
        [str(small), str(large), str(smaller)], VerifyOptions(engine="local"), WorkerPool(1)
    )
    assert started == ["large.edn", "smaller.edn", "small.edn"]
    assert [Path(outcome.path).name for outcome in outcomes] == ["small.edn", "large.edn", "smaller.edn"]


def test_a_known_extension_decides_the_keeping_without_reading_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine sniffs each file's first bytes when it opens it; the choice to keep its
    operations for the lookup goes by a known extension, and sniffs only a file without one."""
    sniffed: list[str] = []
    real = readers.sniff_format

    def counted(path: str) -> str:
        sniffed.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(batch, "sniff_format", counted)
    for name, text in [("h.edn", INVALID_EDN), ("h.jsonl", INVALID_JSONL), ("edn-history", INVALID_EDN)]:
        (tmp_path / name).write_text(text)
    assert batch._kept_for_lookup(str(tmp_path / "h.edn"), "auto")
    assert not batch._kept_for_lookup(str(tmp_path / "h.jsonl"), "auto")
    assert batch._kept_for_lookup(str(tmp_path / "edn-history"), "auto")
    assert sniffed == ["edn-history"]
    outcome = _outcome(tmp_path / "edn-history")  # verified as EDN all the same
    assert outcome.report is not None and outcome.report.format == "edn"
