"""Verifying many history files in one command: which files a path names, each file's
outcome, the one-line summary and the exit code.

`kafkaspec verify` takes files and directories. A directory stands for the history files
directly in it (not in its sub-directories), sorted by name: those whose extension is one a
reader knows (`HISTORY_EXTENSIONS`: .jsonl, .ndjson, .json, .edn, .log, .txt, .parquet),
hidden files left out. A run over several files goes past a file that is bad input (its
message is the one a single file gets: file, line, what was expected) and gives every other
file its verdict; `summary_line` counts them.

The files are verified in worker processes (`spark_checks.parallel`), a whole file per
worker, so a run over many small histories (Porcupine's 108 logs) keeps every core busy: files
of `PARALLEL_MIN_BYTES` or more first, largest first (one started last would keep a worker
busy alone at the end of the run), then the others smallest first. A file's own parts are
checked one after another in its worker, smallest first, which is what `--fail-fast` needs
to stop early. Results come back and are
printed in the order the files were named. A file for the Spark engine is verified in this
process (a SparkSession does not survive a fork), and then so are the others.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.explain import Lookup
from spark_checks.history import HistoryError, Verdict, Whereabouts
from spark_checks.parallel import (
    PARALLEL_MIN_BYTES,
    Stop,
    StopKind,
    Task,
    TaskContext,
    WorkerPool,
    searches_budget,
    stop_reason,
)
from spark_checks.readers import EXTENSIONS, sniff_format
from spark_checks.report import sentence_lookup
from spark_checks.uris import unreadable_message

HISTORY_EXTENSIONS = tuple(sorted(EXTENSIONS))
"""The extensions of the files a directory argument stands for."""

BAD_INPUT_EXIT = 2
KEEP_FOR_LOOKUP_BYTES = 1024 * 1024
"""A file under this size has its operations kept while it is verified (`_kept_for_lookup`)."""
EXIT_CODES = {Verdict.VALID: 0, Verdict.INVALID: 1, Verdict.UNKNOWN: 3}


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file: its report, or the one-line message of why it is bad input,
    or (`unfinished`) why it has no report: the deadline came before it was checked, or while
    its worker was still at it (then killed)."""

    path: str
    report: HistoryReport | None = None
    problem: str | None = None
    unfinished: str | None = None
    lookup: Lookup | None = None
    """The calls the report's sentences name (`report.sentence_lookup`), found where the file
    was verified: an invalid history is otherwise read again by the printing process, one
    file after another."""

    @property
    def verdict(self) -> Verdict | None:
        """The file's verdict; None for bad input."""
        if self.report is not None:
            return self.report.verdict
        return Verdict.UNKNOWN if self.unfinished is not None else None


@dataclass(frozen=True)
class Counts:
    """How many files got each answer."""

    valid: int = 0
    invalid: int = 0
    unknown: int = 0
    bad_input: int = 0

    def add(self, outcome: FileOutcome) -> Counts:
        """These counts with `outcome` counted."""
        verdict = outcome.verdict
        if verdict is None:
            return replace(self, bad_input=self.bad_input + 1)
        if verdict is Verdict.VALID:
            return replace(self, valid=self.valid + 1)
        if verdict is Verdict.INVALID:
            return replace(self, invalid=self.invalid + 1)
        return replace(self, unknown=self.unknown + 1)

    @property
    def files(self) -> int:
        return self.valid + self.invalid + self.unknown + self.bad_input


def history_files(arguments: Sequence[str]) -> list[str]:
    """The files the arguments name, in order: a directory's history files (by extension,
    not hidden, not in sub-directories) sorted by name in its place; any other argument as
    it is (a missing file is reported by the engine, as for one file). A directory without
    history files stands for itself, and is reported as bad input (`directory_problem`)."""
    files: list[str] = []
    for argument in arguments:
        if not os.path.isdir(argument):
            files.append(argument)
            continue
        found = sorted(
            entry.name
            for entry in os.scandir(argument)
            if not entry.name.startswith(".")
            and os.path.splitext(entry.name)[1].lower() in EXTENSIONS
            and entry.is_file()
        )
        files.extend([str(Path(argument) / name) for name in found] or [argument])
    return files


def directory_problem(path: str) -> str | None:
    """The bad-input message of a directory that holds no history file (None for a file)."""
    if not os.path.isdir(path):
        return None
    return f"{path}: a directory with no history files (extensions {', '.join(HISTORY_EXTENSIONS)})"


def bad_input_message(path: str, error: Exception) -> str:
    """A bad file's one-line message, as `kafkaspec verify` prints it for a single file."""
    return str(error) if isinstance(error, HistoryError) else f"{path}: {error}"


def summary_line(counts: Counts, seconds: float) -> str:
    """The run's last line: `108 histories: 81 valid, 27 invalid, 0 unknown, 0 bad input (0.71 s)`."""
    noun = "history" if counts.files == 1 else "histories"
    return (
        f"{counts.files} {noun}: {counts.valid} valid, {counts.invalid} invalid, {counts.unknown} unknown, "
        f"{counts.bad_input} bad input ({seconds:.2f} s)"
    )


def exit_code(counts: Counts) -> int:
    """1 if any history is invalid; else 2 if any is bad input; else 3 if any is unknown;
    else 0. A found anomaly matters most; bad input next, since a verdict is missing."""
    if counts.invalid:
        return EXIT_CODES[Verdict.INVALID]
    if counts.bad_input:
        return BAD_INPUT_EXIT
    if counts.unknown:
        return EXIT_CODES[Verdict.UNKNOWN]
    return EXIT_CODES[Verdict.VALID]


@dataclass
class BatchProgress:
    """The progress line of a run over many files: files done with their counts, and the
    file being checked with what its check last said (its parts' counts)."""

    total: int
    counts: Counts = field(default_factory=Counts)
    current: str = ""
    doing: str = ""

    def text(self) -> str:
        counts = self.counts
        line = (
            f"{counts.files}/{self.total} files: {counts.invalid} invalid, {counts.unknown} unknown, "
            f"{counts.bad_input} bad input"
        )
        if self.current:
            line += f"; {self.current}"
            if self.doing:
                line += f": {self.doing}"
        return line


@dataclass(frozen=True)
class _FileJob:
    """What a worker needs to verify any of the files (sent to each worker once)."""

    options: VerifyOptions
    keep_history: bool
    whereabouts: Whereabouts | None  # this process's (a worker updates its own copy)


def verify_files(
    paths: Sequence[str],
    options: VerifyOptions,
    pool: WorkerPool,
    *,
    keep_history: bool = False,
    progress: Callable[[str], None] | None = None,
    on_outcome: Callable[[int, FileOutcome], None] | None = None,
    whereabouts: Whereabouts | None = None,
    in_this_process: bool = False,
) -> list[FileOutcome]:
    """Every file's outcome, in the order of `paths`. Files go to `pool`'s workers, smallest
    first (all in this process with `in_this_process`, e.g. for the Spark engine, or a pool
    of one). `on_outcome(index, outcome)` hears each as it is found; `progress` hears the
    line to show (`BatchProgress`)."""
    shown = BatchProgress(len(paths))
    if pool.parallel and not in_this_process:
        options = replace(options, budget=searches_budget(options.budget, pool, len(paths)))
    job = _FileJob(options, keep_history, whereabouts)
    tasks = [Task(_size(path), _verify_file, (path,), name=path) for path in paths]

    def on_done(index: int, outcome: FileOutcome) -> None:
        shown.counts = shown.counts.add(outcome)
        if on_outcome is not None:
            on_outcome(index, outcome)
        if progress is not None:
            progress(shown.text())

    def on_progress(index: int, text: str) -> None:
        shown.current, shown.doing = paths[index], text
        if progress is not None:
            progress(shown.text())

    def on_start(index: int) -> None:
        shown.current, shown.doing = paths[index], ""
        if whereabouts is not None:
            whereabouts.start(paths[index])

    def stopped(index: int, stop: Stop) -> FileOutcome:
        reason = stop_reason(stop) if stop.kind is not StopKind.DEADLINE else "stopped at the deadline"
        outcome = FileOutcome(paths[index], unfinished=reason)
        on_done(index, outcome)
        return outcome

    if in_this_process:
        pool = WorkerPool(1)
    return pool.run(
        tasks,
        shared=job,
        is_invalid=lambda _outcome: False,  # --fail-fast stops a file's parts, not the other files
        stopped=stopped,
        deadline=options.budget.deadline,
        on_done=on_done,
        on_progress=on_progress if progress is not None else None,
        on_start=on_start,
        large_first_from=PARALLEL_MIN_BYTES,
    )


def _verify_file(job: _FileJob, path: str, context: TaskContext) -> FileOutcome:
    """One file's outcome (here or in a worker): a bad file's message instead of an error."""
    problem = directory_problem(path)
    if problem is not None:
        return FileOutcome(path, problem=problem)
    keep = job.keep_history or _kept_for_lookup(path, job.options.fmt)
    try:
        report = verify_history(
            path,
            job.options,
            keep_history=keep,
            progress=context.say,
            whereabouts=job.whereabouts,
        )
    except HistoryError as error:
        return FileOutcome(path, problem=bad_input_message(path, error))
    except (ValueError, FileExistsError) as error:
        return FileOutcome(path, problem=bad_input_message(path, error))
    except Exception as error:  # Spark could not read the URI (no connector, no file), else a bug
        problem = unreadable_message(path, str(error))
        if problem is None:
            raise
        return FileOutcome(path, problem=problem)
    lookup = sentence_lookup(report)
    if keep and not job.keep_history:
        report = replace(report, history=None)  # not sent back: the lookup holds what is needed
    return FileOutcome(path, report=report, lookup=lookup)


def _kept_for_lookup(path: str, fmt: str) -> bool:
    """Whether to keep a small file's operations while it is verified, so that the calls its
    sentences name are looked up in them (`report.sentence_lookup`) rather than by reading the
    file again: for a file the engine reads through its reader's operations (every format but
    JSON Lines, which has a faster reader of its own that keeping would bypass) and under
    `KEEP_FOR_LOOKUP_BYTES`. On Porcupine's logs (82 invalid of 108) this saves reading each
    invalid one a second time. With `--format auto` a known extension tells the format (the
    engine sniffs the file's first bytes again: a file whose content is another format's is
    verified alike, only read the other way); a file without one is sniffed here."""
    if _size(path) >= KEEP_FOR_LOOKUP_BYTES:
        return False
    if fmt == "auto":
        fmt = EXTENSIONS.get(os.path.splitext(path)[1].lower(), "auto")
    try:
        return (fmt if fmt != "auto" else sniff_format(path)) != "jsonl"
    except HistoryError:  # the engine reports it
        return False


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def elapsed_since(started: float) -> float:
    """Seconds since `started` (a `time.perf_counter()` instant)."""
    return time.perf_counter() - started
