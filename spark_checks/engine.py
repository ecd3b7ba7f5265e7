"""The verification engines: the same stages, in this process or on Spark.

`verify_history(path, options)` reads a history, decides the model, and checks every
independent part. Both engines run `spark_checks.distributed`'s stages: stage 1 reads a split
of the file, pairs the calls it holds and splits them into per-part pieces; border pairing
pairs the calls that cross splits; stage 2 checks each part (`checking.check_part`). So
neither the engine, the format nor `--report` changes which code checks a history.

* `local` (`verify_here`): the stages in this process, the whole file as one split; the
  parts are checked in worker processes (`spark_checks.parallel`). A JSON Lines file is read
  by the stages' own line reader, any other format (and a history kept for `--report`'s
  timeline) through its reader's operations.
* `spark` (`verify_spark`): the history is read by Spark's data sources (`spark_read`), so
  any URI Spark reads works and the driver never opens it; stage 1 runs per split Spark
  makes, border pairing after a shuffle of the border rows by process, the counts and errors
  are collected, and stage 2 runs per bucket of parts after a shuffle by bucket, each bucket
  with its own copy of the assign/subscribe calls. Only counts, errors and answers reach the
  driver, nothing per operation.
* `auto`: `spark` for files over `AUTO_SPARK_BYTES` (and URIs only Spark reads), else `local`.

Bad input is named as the local reader names it (file and line, or Parquet row): a line's
error by its position; an error found in a call, or a value a model refuses, by reading the
history again on that path only (on Spark, in a task that reads the file whole).

Spark runs `local[2]` unless `master` names a cluster; see `spark_session`.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import pickle
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from reference.models import resolve_conventions
from spark_checks import distributed, linearizability, maelstrom_kafka, readers, uris, vacuous
from spark_checks.checking import (
    CYCLES_PART,
    Budget,
    Plan,
    check_part,
    combine_verdicts,
    cycle_calls,
    detect_model,
    kafka_context,
    partition_key_json,
    split_calls,
    whole_by_keys,
)
from spark_checks.history import (
    Call,
    CheckResult,
    HistoryError,
    JsonValue,
    Operation,
    Position,
    Verdict,
    Whereabouts,
    pair_calls,
)
from spark_checks.parallel import EARLY_START_BYTES, Tally, WorkerPool, check_parts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

AUTO_SPARK_BYTES = 256 * 1024 * 1024
"""`--engine auto` uses Spark for history files larger than this."""

ENGINES = ("auto", "local", "spark")

RANGE_BYTES = 32 * 1024 * 1024
"""Spark splits a JSON Lines history into splits of about this size for stage 1, one task
each (`spark.sql.files.maxPartitionBytes` while the engine runs; other formats a share of it,
`RANGE_SHARES`): small enough that every core stays busy, large enough that per-task costs do
not matter. Each split ends with a CALLS row for every part it touched and its border rows,
so splits cost with the keys: 10^7 bench operations (1,000 keys; `bench.verify_scale
--range-bytes`, two sequences alternating the sizes, load 1.6-2.2), 16 MB splits (79 tasks)
40.4-47.9 s and 78.8-92.8 CPU-s, 32 MB (40 tasks) 36.5-43.8 s and 71.2-85.3 CPU-s, 64 MB
36.7-36.8 s; at 10^6 (4 splits against 8) the same within noise."""

RANGE_SHARES: Final = {"edn": 2, "parquet": 8}
"""The formats read in ranges of a share of `RANGE_BYTES`. EDN in 16 MB: its 10^7-operation
bench history took 50.0-55.6 s in 16 MB splits against 53.1-63.0 s in 32 MB (its Python
workers 97-108 against 103-123 CPU-s). Parquet in 4 MB (Spark splits it at its row groups):
at 8 MB its 10^7 bench history took 44.9 and 46.6 s against 41.7 and 42.9 s. Parquet's bytes
are compressed, 16 MB holding about 600,000 operations of the bench's shape against 130,000
in JSON Lines, so a 10^6-operation history made two tasks and a straggler (a Jepsen-shaped
one, whose last rows hold the final polls: 25.5 s and 33.4 s, one core idle for 8 s)."""

BUCKET_OPERATIONS = 1_000_000
"""Stage 2 has a task per this many operations (about 128 MB of JSON Lines, 27 MB of Parquet):
a task holds its parts' pieces encoded (a fraction of the history's size), decoding one part
at a time. Counted in operations, not bytes, so a Parquet history is not checked by a
seventh as many tasks as the same history in JSON Lines."""

BUCKETS_PER_CORE = 2
"""And at least this many tasks per core: the whole-history part runs alone in one while the
keys' parts share the others. With one per core, a 10^6-operation Jepsen-shaped history left
its 64 keys (15.0 CPU-s of checks, the whole part 3.1) to one task, the other core idle for
most of the stage: its busier core 15.0 CPU-s, 9.5 with two per core, 10.1 with three (the
parts' measured check times in Spark's hash buckets, run in bucket order on two cores; the
least possible is 9.0). The bench's shape (the whole part 7.9, the keys 6.4) is bound by the
whole part either way."""


@dataclass(frozen=True)
class VerifyOptions:
    """What the user asked for (`kafkaspec verify` flags)."""

    model: str = "auto"
    fmt: str = "auto"
    engine: str = "auto"
    master: str | None = None
    conventions: dict[str, JsonValue] = field(default_factory=dict)  # overrides of the source's defaults
    budget: Budget = field(default_factory=Budget)
    spark_range_bytes: int = RANGE_BYTES  # smaller in tests, to cross many range borders
    fail_fast: bool = False  # stop at the first invalid part (the others: not checked)


@dataclass(frozen=True)
class HistoryReport:
    """The verdict on one history file, with every part's result."""

    path: str
    format: str
    model: str
    engine: str
    conventions: dict[str, JsonValue]
    verdict: Verdict
    operations: int  # in the history: invocations, completions, and lines such as a nemesis's
    calls: int  # invocations paired with their completions, and those never completed
    results: list[CheckResult]
    seconds: float
    history: list[Operation] | None = None  # kept by the local engine for the HTML timeline

    def failing(self) -> list[CheckResult]:
        """Parts that are not valid, invalid first."""
        order = {Verdict.INVALID: 0, Verdict.UNKNOWN: 1, Verdict.VALID: 2}
        return sorted(
            (r for r in self.results if r.verdict is not Verdict.VALID), key=lambda r: order[r.verdict]
        )


ProgressCallback = Callable[[str], None]


def _plan(options: VerifyOptions, info: readers.SourceInfo, sample: list[Operation]) -> Plan:
    model = options.model if options.model != "auto" else detect_model(sample)
    model, dialect = maelstrom_kafka.resolve(model, options.model == "auto", info.format, sample)
    conventions = {**info.conventions, **dialect, **options.conventions}
    # A transaction among the first operations: the whole-history part will be checked in full.
    transactions = model == "kafka" and any(operation.f == "txn" for operation in sample)
    return Plan(model=model, conventions=conventions, budget=options.budget, whole_calls=transactions)


def choose_engine(path: str | Path, engine: str) -> str:
    """Resolve `auto` by the file's size (a URI only Spark reads: Spark; a missing file: the
    local engine, which reports it)."""
    if engine != "auto":
        return engine
    if uris.is_remote(str(path)):  # before any Path(), which would fold the URI's "//"
        return "spark"
    file = Path(path)
    return "spark" if file.is_file() and file.stat().st_size > AUTO_SPARK_BYTES else "local"


def verify_history(
    path: str | Path,
    options: VerifyOptions,
    spark: SparkSession | None = None,
    keep_history: bool = False,
    progress: ProgressCallback | None = None,
    general: bool = False,
    whereabouts: Whereabouts | None = None,
    pool: WorkerPool | None = None,
) -> HistoryReport:
    """Verify one history file. Raises HistoryError for malformed input, ValueError for a
    model that cannot be determined or a value the model cannot hold, `SparkTaskError` for an
    unexpected error in a Spark task (a bug). `whereabouts`, when given, is kept up to date
    with what is being read and checked, for a report of any other exception (a bug). The
    local engine checks the parts in `pool`'s worker processes (`spark_checks.parallel`;
    in this process without one), smallest first, and with `options.fail_fast` stops at the
    first invalid part.

    Both engines run the same stages (`spark_checks.distributed`): the local one in this
    process over the file as one split (`verify_here`), the Spark one in Spark tasks over the
    splits Spark makes (`verify_spark`: `path` may be any URI Spark reads, and the driver
    never opens it). `general` reads a JSON Lines file through its reader's operations, as
    every other format is read, rather than its fast line reader (`distributed.jsonl_ops`)."""
    where = whereabouts if whereabouts is not None else Whereabouts()
    where.start(str(path))
    engine = choose_engine(path, options.engine)
    if engine == "spark":
        return verify_spark_history(str(path), options, spark, progress)
    file = Path(path)
    if not file.is_file():
        raise HistoryError(Position(str(path)), "no such file")
    if pool is not None and file.stat().st_size >= EARLY_START_BYTES:
        pool.start()  # before the history is read (see `WorkerPool.start`)
    started = time.perf_counter()
    info, located = readers.open_located(file, options.fmt)
    head = list(itertools.islice(located, SAMPLE_OPERATIONS))
    if not head:  # nothing recorded: unknown, whatever the model (see spark_checks.vacuous)
        return _empty_report(str(file), info, options, engine, time.perf_counter() - started)
    plan = _plan(options, info, [operation for operation, _ in head])
    kept: list[Operation] | None = [] if keep_history else None
    opened = itertools.chain(head, located)
    checked = verify_here(plan, file, info, opened, progress, where, pool, options.fail_fast, kept, general)
    return _report(
        str(file), info, plan, engine, checked, started, kept, lambda: _functions(file, info.format)
    )


def _functions(file: Path, fmt: str) -> tuple[str, ...]:
    return vacuous.history_functions(file, fmt)


def _report(
    source: str,
    info: readers.SourceInfo,
    plan: Plan,
    engine: str,
    checked: Checked,
    started: float,
    kept: list[Operation] | None,
    functions: Callable[[], tuple[str, ...]],
) -> HistoryReport:
    """The report of a checked history; a vacuous check is bad input (`spark_checks.vacuous`:
    `functions` reads the history's functions, on that path only)."""
    results = checked.results
    shown_model = maelstrom_kafka.report_model(plan.model, plan.conventions)
    if plan.model == "kafka" and all(result.partition != CYCLES_PART for result in results):
        named = functions()
        if not vacuous.kafka_checks_some(named):
            raise vacuous.vacuous_check_error(source, shown_model, named, kafka=True)
        # No data call: the whole-history part still answers (Elle's empty-transaction-graph).
        results = [*results, check_part(plan, CYCLES_PART, [])]
    elif not results:
        raise vacuous.vacuous_check_error(source, plan.model, functions(), kafka=False)
    return HistoryReport(
        path=source,
        format=info.format,
        model=shown_model,
        engine=engine,
        conventions=maelstrom_kafka.report_conventions(
            results[0].conventions if results else plan.conventions, plan.conventions
        ),
        verdict=combine_verdicts(result.verdict for result in results),
        operations=checked.operations,
        calls=checked.calls,
        results=results,
        seconds=time.perf_counter() - started,
        history=kept,
    )


def _empty_report(
    file: str, info: readers.SourceInfo, options: VerifyOptions, engine: str, seconds: float
) -> HistoryReport:
    """The report on a history without operations: `unknown` (`spark_checks.vacuous`)."""
    model = options.model if options.model != "auto" else "none"
    conventions = {**info.conventions, **options.conventions}
    result = vacuous.empty_history_result(model, conventions)
    return HistoryReport(
        str(file), info.format, model, engine, conventions, Verdict.UNKNOWN, 0, 0, [result], seconds
    )


@dataclass(frozen=True)
class Checked:
    """What an engine returns: every part's result, and the size of the history."""

    results: list[CheckResult]
    operations: int
    calls: int


# ---------------------------------------------------------------------------------------
# Local engine: the stages in this process
# ---------------------------------------------------------------------------------------


SAMPLE_OPERATIONS: Final = 2000
"""The model is told from the functions of a history's first this many operations."""


def verify_here(
    plan: Plan,
    file: Path,
    info: readers.SourceInfo,
    located: Iterable[readers.Located],
    progress: ProgressCallback | None = None,
    whereabouts: Whereabouts | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
    kept: list[Operation] | None = None,
    general: bool = False,
) -> Checked:
    """The local engine: the Spark engine's stages (`spark_checks.distributed`) run in this
    process over the file as one split, the parts checked in `pool`'s worker processes when
    given. `located` is the history's operations with their lines (Parquet: rows) as
    `verify_history` opened them, read once. A JSON Lines file is read instead by the stages'
    line reader (`distributed.jsonl_ops`), unless `general` or `kept` (which collects the
    operations, for the report's timeline): then, as every other format, through `located`;
    the stages after reading are the same (`test_engine` compares the two readings)."""
    source = str(file)

    def splits(again: bool = False) -> Iterator[tuple[int, Iterable[tuple[int, distributed.Op]]]]:
        if info.format == "jsonl" and (kept is None or again) and not general:
            with open(file, "rb") as handle:
                chunks = iter(lambda: handle.readlines(LOCAL_CHUNK_BYTES), [])
                yield 0, distributed.jsonl_ops(chunks, source, 1, 0)
            return
        read = readers.open_located(file, info.format)[1] if again else located
        read = read if kept is None or again else _kept(read, kept)
        yield 0, ((line, distributed.operation_op(operation)) for operation, line in read)

    def job(
        committed: frozenset[int] | None, parts: frozenset[str] | None, facts: distributed.Facts
    ) -> distributed.Gathered:
        checking = plan
        if parts is not None and CYCLES_PART in parts and not plan.ships_whole_calls():
            # The whole-history part in full: its calls, which stage 1 shipped as facts, read again.
            checking = replace(plan, whole_calls=True)
            rows = distributed.stage1_rows(checking, splits(again=True), source)
            pieces[CYCLES_PART] = [row[4] for row in rows if row[:2] == (distributed.CALLS, CYCLES_PART)]
        if parts is None:
            if progress is not None:
                progress("reading, pairing and splitting")
            for kind, part, split, line, payload in distributed.stage1_rows(plan, splits(), source):
                if kind == distributed.CALLS:
                    pieces[part].append(payload)
                else:
                    facts.add(kind, split, line, payload)
            _raise_input_error(facts, source, info.format, plan, _LocalFile(file, info.format))

        def on_part(number: int, count: int) -> None:
            if whereabouts is not None:
                whereabouts.part = f"{number}/{count}"
            if progress is not None:
                progress(f"part {number}/{count}")

        wanted = pieces.keys() if parts is None else parts | {distributed.SUBSCRIPTIONS_PART}
        chosen = {part: pieces[part] for part in wanted}
        tally = Tally(0, progress)
        answers = distributed.check_rows(checking, chosen, committed, on_part, pool, fail_fast, tally.verdict)
        return distributed.gather(answers)

    pieces: dict[str, list[bytes]] = defaultdict(list)
    with distributed.no_cyclic_gc():
        return _jobs(plan, job, source, info.format, _LocalFile(file, info.format), progress)


LOCAL_CHUNK_BYTES: Final = 1 << 20
"""The local engine reads a JSON Lines file this many bytes of lines at a time."""


def _kept(located: Iterable[readers.Located], kept: list[Operation]) -> Iterator[readers.Located]:
    for operation, line in located:
        kept.append(operation)
        yield operation, line


def _check_calls(
    plan: Plan,
    calls: list[Call],
    operations: int,
    progress: ProgressCallback | None,
    whereabouts: Whereabouts,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
) -> Checked:
    if plan.model == "kafka":
        plan = plan.with_kafka_context(kafka_context(calls))
    parts: dict[str, list[Call]] = defaultdict(list)
    for key_json, call in split_calls(plan, calls):
        parts[key_json].append(call)
    cycles = list(cycle_calls(plan, calls))
    if cycles:
        parts[CYCLES_PART] = cycles
    ordered = sorted(parts.items())
    started = 0

    def on_start(index: int) -> None:
        nonlocal started
        started += 1
        whereabouts.part = f"{index + 1}/{len(ordered)} (key {_clip(ordered[index][0])})"
        if progress is not None:
            progress(f"part {started}/{len(ordered)}")

    if pool is not None and pool.parallel and len(ordered) > 1:
        whereabouts.part = f"1-{len(ordered)} of {len(ordered)} (in {pool.workers} worker processes)"
    results = check_parts(pool, plan, ordered, fail_fast=fail_fast, progress=progress, on_start=on_start)
    return Checked(results, operations, len(calls))


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------
# What both engines do with what the stages found
# ---------------------------------------------------------------------------------------


Job = Callable[[frozenset[int] | None, frozenset[str] | None, distributed.Facts], distributed.Gathered]
"""One check of a history's parts: given the info calls known to have committed (None: decide
per part) and the parts to check (None: read the history first, filling the facts, and check
them all)."""


class _History:
    """Where the error paths read the history again, whole: `ask(path)` of a local copy."""

    def answer(self, ask: Callable[[Path], Any]) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class _LocalFile(_History):
    file: Path
    fmt: str

    def answer(self, ask: Callable[[Path], Any]) -> Any:
        return ask(self.file)


@dataclass(frozen=True)
class _SparkFile(_History):
    session: SparkSession
    uri: str
    source: str

    def answer(self, ask: Callable[[Path], Any]) -> Any:
        from spark_checks.spark_read import whole_file_answer

        return whole_file_answer(self.session, self.uri, self.source, lambda path: ask(Path(path)))


def _jobs(
    plan: Plan, job: Job, source: str, fmt: str, history: _History, progress: ProgressCallback | None
) -> Checked:
    """Check every part, and for a Kafka history check again the parts that assumed an info
    call had not committed which another part saw commit (`distributed.Gathered.recheck`)."""
    facts = distributed.Facts()
    gathered = job(None, None, facts)
    _raise_check_error(gathered, source, fmt, plan, history)
    again = gathered.recheck() | merge_whole_history_part(plan, gathered)
    if plan.model == "kafka" and again:
        if progress is not None:
            progress(f"checking {len(again)} parts again with the cross-key facts")
        second = job(frozenset(gathered.committed), again, facts)
        _raise_check_error(second, source, fmt, plan, history)
        gathered.replace(second)
    return Checked(sorted(gathered.results, key=_result_order), facts.operations, facts.calls)


def merge_whole_history_part(plan: Plan, gathered: distributed.Gathered) -> frozenset[str]:
    """Put the Kafka whole-history part made from the keys' facts among the first round's
    results (`checking.whole_by_keys`); `{CYCLES_PART}` when it must be checked in full
    instead, which `_jobs` does in the round that checks parts again."""
    gathered.results, full = whole_by_keys(plan, gathered.results)
    return frozenset({CYCLES_PART}) if full else frozenset()


def _raise_input_error(
    facts: distributed.Facts,
    source: str,
    fmt: str,
    plan: Plan,
    history: _History,
    starts: Callable[[], distributed.Starts] | None = None,
) -> None:
    """Raise the first bad input the stages met, as the local reader names it: a line (its
    number counted from its split's start unless `starts` is None: then lines are the
    file's), the operation of an index, or the first call a model refuses."""
    first = facts.first_error()
    if first is None:
        return
    split, line, problem, message = first
    if problem == distributed.Problem.BUG:
        raise SparkTaskError.from_payload(message)
    if problem == distributed.Problem.LINE:
        if starts is not None:
            line = starts()[split][0] + line - 1
        position = Position(source, row=line) if fmt == "parquet" else Position(source, line=line)
        raise HistoryError(position, message)
    if problem == distributed.Problem.INDEX:
        raise HistoryError(_locate(history, source, fmt, line), message)
    bad = history.answer(lambda path: _where_and_why(_first_bad_value(path, fmt, plan)))
    if bad is None:
        raise ValueError(message)
    raise HistoryError(replace(bad[0], file=source), bad[1])


def _where_and_why(error: HistoryError | None) -> tuple[Position, str] | None:
    # A HistoryError does not pickle (its own __init__): its parts travel back from a task.
    return None if error is None else (error.position, error.message)


def _raise_check_error(
    gathered: distributed.Gathered, source: str, fmt: str, plan: Plan, history: _History
) -> None:
    """Raise the error a check found, as the local engine names it (a bug: `SparkTaskError`)."""
    facts = distributed.Facts()
    for problem, message, index in gathered.errors:
        facts.errors.append((0, index, problem, message))
    _raise_input_error(facts, source, fmt, plan, history)


def _locate(history: _History, source: str, fmt: str, index: int) -> Position:
    """Where the operation with `index` was read (error paths only)."""
    position = history.answer(lambda path: _position_of(path, fmt, index))
    return replace(position, file=source) if isinstance(position, Position) else Position(source, index=index)


# ---------------------------------------------------------------------------------------
# Spark engine
# ---------------------------------------------------------------------------------------


def verify_spark_history(
    path: str, options: VerifyOptions, spark: SparkSession | None, progress: ProgressCallback | None
) -> HistoryReport:
    """`verify_history` on Spark: the history at `path` (a local path or any URI Spark reads)
    is read by Spark alone; its format comes from `--format`, the extension or its first
    lines, which Spark reads (`spark_read.head`)."""
    from spark_checks.spark_read import head, whole_file_answer
    from spark_checks.spark_session import spark_session

    started = time.perf_counter()
    uri = uris.spark_uri(path)
    local = None if uris.is_remote(path) else Path(path)
    size = local.stat().st_size if local is not None and local.is_file() else 0
    session = spark if spark is not None else spark_session(options.master, history_bytes=size)
    info, sample, needs_ordinals = head(session, uri, path, options.fmt)
    if not sample:
        return _empty_report(path, info, options, "spark", time.perf_counter() - started)
    plan = _plan(options, info, sample)
    checked = verify_spark(
        plan, uri, path, info.format, session, progress, options.spark_range_bytes, needs_ordinals
    )

    def functions() -> tuple[str, ...]:
        return cast(
            "tuple[str, ...]",
            whole_file_answer(session, uri, path, lambda copy: vacuous.history_functions(copy, info.format)),
        )

    return _report(path, info, plan, "spark", checked, started, None, functions)


def verify_spark(
    plan: Plan,
    uri: str,
    source: str,
    fmt: str,
    session: SparkSession,
    progress: ProgressCallback | None = None,
    range_bytes: int = RANGE_BYTES,
    needs_ordinals: bool = False,
) -> Checked:
    """`distributed`'s stages on Spark (`spark_read`'s frames): stage 1 and border pairing,
    persisted, their counts and errors collected (read again with each split's first line
    and ordinal when an operation has no index, or whole by one task when EDN op maps span
    lines); then stage 2, a bucket of parts per `BUCKET_OPERATIONS` (`BUCKETS_PER_CORE` at
    least). Only counts, errors and answers reach the driver."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as sql

    from spark_checks import spark_read
    from spark_checks.user_models import ship_to_spark

    ship_to_spark(session, plan.model)  # a user's model (MODULE:CLASS): its module goes to the executors
    key = "spark.sql.files.maxPartitionBytes"
    before = session.conf.get(key, None)
    session.conf.set(key, str(range_bytes // RANGE_SHARES.get(fmt, 1)))
    cores = session.sparkContext.defaultParallelism
    starts = functools.cache(lambda: spark_read.count_starts(session, uri, fmt))
    history = _SparkFile(session, uri, source)
    persisted: list[Any] = []
    read: list[Any] = []  # the CALLS rows and stage 2's buckets, once read

    def read_on_spark(facts: distributed.Facts, plan: Plan) -> tuple[Any, int, Plan]:
        whole = fmt not in spark_read.READ_FORMATS
        ordinals = needs_ordinals and fmt in spark_read.TEXT_FORMATS
        spans = distributed.SPANS_LINES.split("{", 1)[0]
        while True:
            given = starts() if ordinals else None
            stage1 = spark_read.stage1_frame(session, uri, fmt, plan, source, given, whole)
            # Not serialized (PySpark's MEMORY_AND_DISK is): CALLS shuffle JVM 0.6-0.8 -> 0.5-0.6 CPU-s, 10^6.
            stage1 = stage1.persist(StorageLevel.MEMORY_AND_DISK_DESER)
            border = spark_read.border_frame(stage1, plan, source, cores).persist(
                StorageLevel.MEMORY_AND_DISK_DESER
            )
            persisted.extend([stage1, border])
            rows, found = stage1.unionByName(border), distributed.Facts()
            for row in rows.where(sql.col("kind").isin(distributed.FACTS, distributed.ERROR)).collect():
                found.add(row["kind"], row["split"], row["line"], bytes(row["payload"]))
            first = found.first_error()
            if first is not None and first[2] == distributed.Problem.ORDINALS and not ordinals:
                ordinals = True
            elif first is not None and fmt == "edn" and not whole and first[3].startswith(spans):
                whole = True  # op maps over several lines: one task reads the file as the local reader
            else:
                exact = whole or ordinals or fmt == "parquet"  # lines (rows) are the file's already
                _raise_input_error(found, source, fmt, plan, history, None if exact else starts)
                facts.operations, facts.calls = found.operations, found.calls
                buckets = max(BUCKETS_PER_CORE * cores, math.ceil(found.operations / BUCKET_OPERATIONS))
                return rows.where(sql.col("kind") == distributed.CALLS), buckets, plan

    def job(
        committed: frozenset[int] | None, parts: frozenset[str] | None, facts: distributed.Facts
    ) -> distributed.Gathered:
        if not read:
            read.extend(read_on_spark(facts, plan))
        elif CYCLES_PART in (parts or ()) and not read[2].ships_whole_calls():  # its calls: read again
            read[:] = read_on_spark(facts, replace(plan, whole_calls=True))  # (`Plan.ships_whole_calls`)
        calls, buckets, checking = read
        if parts is not None:
            calls = calls.where(sql.col("part").isin(sorted(parts | {distributed.SUBSCRIPTIONS_PART})))
        answers = spark_read.check_frame(calls, checking, committed, buckets).collect()
        return distributed.gather(pickle.loads(row["answer"]) for row in answers)  # this job's own tasks

    try:
        with _task_progress(session, progress, "pairing, splitting and checking"):
            return _jobs(plan, job, source, fmt, history, progress)
    finally:
        for frame in persisted:
            frame.unpersist()
        if before is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, before)


TASK_POLL_SECONDS = 0.5
"""How often a long Spark job's progress (tasks done) is asked of Spark."""


@contextmanager
def _task_progress(session: SparkSession, progress: ProgressCallback | None, doing: str) -> Iterator[None]:
    """While the block runs its Spark jobs, report `doing: D/T Spark tasks done` on a change:
    a history of 10^8 operations keeps two cores busy for minutes. The jobs are found by a job
    group of their own (Spark's status tracker; cleared after), so other jobs of a shared
    session do not count."""
    if progress is None:
        yield
        return
    context = session.sparkContext
    group = f"kafkaspec-{uuid.uuid4().hex}"
    context.setJobGroup(group, doing)
    tracker = context.statusTracker()
    stop = threading.Event()

    def watch() -> None:
        said = (0, 0)
        while not stop.wait(TASK_POLL_SECONDS):
            done = total = 0
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info is not None else ():
                    tasks = tracker.getStageInfo(stage)
                    if tasks is not None:
                        done += tasks.numCompletedTasks
                        total += tasks.numTasks
            if total and (done, total) != said:
                said = (done, total)
                progress(f"{doing}: {done}/{total} Spark tasks done")

    watcher = threading.Thread(target=watch, name="kafkaspec-task-progress", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join()
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        context.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


class SparkTaskError(RuntimeError):
    """An unexpected error (a bug, not bad input) in a Spark task. The message names the
    exception and the stage; the task's traceback is attached as a note, so it is printed
    with the driver's own."""

    def __init__(self, kind: str, message: str, stage: str, remote_traceback: str) -> None:
        super().__init__(f"{kind}: {message} (in a Spark task, {stage})")
        self.add_note(f"Traceback in the Spark task:\n{remote_traceback.rstrip()}")

    @classmethod
    def from_payload(cls, message: str) -> SparkTaskError:
        """The error a task's BUG row describes (`spark_read._bug_row`)."""
        kind, text, stage, trace = json.loads(message)
        return cls(kind, text, stage, trace)


def _position_of(file: Path, fmt: str, index: int) -> Position:
    """Where the operation with `index` was read, by reading the history again (error paths
    only); just the index when no operation has it."""
    try:
        for operation, position in readers.operation_positions(file, fmt):
            if operation.index == index:
                return position
    except HistoryError:  # an earlier line is bad too: the index must do
        pass
    return Position(str(file), index=index)


def _first_bad_value(file: Path, fmt: str, plan: Plan) -> HistoryError | None:
    """The first call (in completion order) whose value the sequential model cannot hold (its
    `prepare` raises ValueError: an integer where kv appends strings, a txn that is no list of
    micro-operations), at the line of its completion (or invocation): a model's checks run on
    calls, so the history is read again, on this error path only. None when no call is bad
    (the ValueError came from elsewhere) or for Kafka, whose checks name the operation."""
    model = linearizability.MODELS.get(plan.model)
    if model is None:
        return None
    conventions = resolve_conventions(plan.conventions)
    positions: dict[int, Position] = {}  # of the operations not yet paired into a call

    def remembered() -> Iterator[Operation]:
        for operation, position in readers.operation_positions(file, fmt):
            positions[operation.index] = position
            yield operation

    try:
        for call in pair_calls(remembered(), str(file)):
            try:
                model.prepare(call, conventions)
            except ValueError as error:
                at = call.complete_index if call.complete_index is not None else call.invoke_index
                where = positions.get(at, Position(str(file), index=at))
                return HistoryError(where, f"{call.f} invoked at index {call.invoke_index}: {error}")
            positions.pop(call.invoke_index, None)
            if call.complete_index is not None:
                positions.pop(call.complete_index, None)
    except HistoryError:
        return None
    return None


def _result_order(result: CheckResult) -> str:
    partition = result.partition
    return partition if partition == CYCLES_PART else partition_key_json(partition)


def environment_summary() -> dict[str, str]:
    """Where Spark would run (for reports)."""
    return {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", "")}
