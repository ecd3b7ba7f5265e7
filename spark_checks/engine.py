"""The verification engines: the same split-and-check, in this process or on Spark.

`verify_history(path, options)` reads a history, decides the model, and checks every
independent part:

* `local`: a JSON Lines file goes through the Spark engine's two stages in this process, as
  one byte range and one target (`verify_lines_here`): it holds the history's pieces
  encoded, decoding one part at a time. Other formats (and `keep_history`, `general`) take
  the general path: operations stream from the reader, are paired into calls (`pair_calls`)
  and bucketed by part, and each part is checked here, holding every call in memory.
* `spark`: the driver never holds the history. One job with one shuffle: a task per byte
  range of the JSON Lines file reads, pairs and splits its calls into per-part pieces; a
  task per group of parts checks them with the same `checking.check_part`; only per-part
  results come back (`spark_checks.distributed` holds the tasks' code and says why it is
  shaped so). Other formats are first streamed through their reader into JSON Lines. The
  Python work per operation is what costs: rows cross between stages as Arrow batches of
  compact JSON bytes, never as pandas rows.
* `auto`: `spark` for files over `AUTO_SPARK_BYTES`, `local` otherwise.

Spark runs `local[2]` unless `master` names a cluster; see `spark_session`.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
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
from spark_checks import distributed, linearizability, maelstrom_kafka, readers, vacuous
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
)
from spark_checks.history import (
    UNNAMED,
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

RANGE_BYTES = 16 * 1024 * 1024
"""Stage 1 reads the history in byte ranges of about this size (one task each): small enough
that every core stays busy, large enough that per-task costs do not matter."""

TARGET_BYTES = 128 * 1024 * 1024
"""Stage 2 has a task per this many bytes of history (at least one per core). Fewer than
stage 1: every stage-2 task reads every assign/subscribe call of the history, and a task
holds its pieces encoded (a fraction of the history's size), decoding one part at a time."""


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
    return Plan(model=model, conventions=conventions, budget=options.budget)


def choose_engine(path: Path, engine: str) -> str:
    """Resolve `auto` by the file's size."""
    if engine != "auto":
        return engine
    return "spark" if path.stat().st_size > AUTO_SPARK_BYTES else "local"


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

    The local engine checks a JSON Lines file with the distributed stages in this process
    (`verify_lines_here`), and any other input, or with `keep_history` or `general`, through
    the format's reader and call objects (`verify_local`): the general path, against which
    the stages are tested."""
    file = Path(path)
    where = whereabouts if whereabouts is not None else Whereabouts()
    where.start(str(path))
    if not file.is_file():
        raise HistoryError(Position(str(path)), "no such file")
    engine = choose_engine(file, options.engine)
    if pool is not None and engine == "local" and file.stat().st_size >= EARLY_START_BYTES:
        pool.start()  # before the history is read (see `WorkerPool.start`)
    started = time.perf_counter()
    info, operations = readers.open_history(file, options.fmt)
    sample = list(itertools.islice(operations, 2000))
    if not sample:  # nothing recorded: unknown, whatever the model (see spark_checks.vacuous)
        return _empty_report(file, info, options, engine, time.perf_counter() - started)
    plan = _plan(options, info, sample)
    stream: Iterator[Operation] = itertools.chain(sample, operations)
    kept: list[Operation] | None = None
    try:
        if engine == "local" and info.format == "jsonl" and not (keep_history or general):
            checked = verify_lines_here(plan, file, info, progress, where, pool, options.fail_fast)
        elif engine == "local":
            if keep_history:
                kept = []
                stream = _tee_into(stream, kept)
            checked = verify_local(plan, stream, str(file), progress, where, pool, options.fail_fast)
        else:
            checked = verify_spark(
                plan, file, info, stream, spark, options.master, progress, options.spark_range_bytes
            )
    except HistoryError as error:
        raise _located(error, file, info.format) from None
    except ValueError:
        bad = _first_bad_value(file, info.format, plan)
        if bad is None:
            raise
        raise bad from None
    results = checked.results
    shown_model = maelstrom_kafka.report_model(plan.model, plan.conventions)
    if plan.model == "kafka" and all(result.partition != CYCLES_PART for result in results):
        functions = vacuous.history_functions(file, info.format)
        if not vacuous.kafka_checks_some(functions):
            raise vacuous.vacuous_check_error(file, shown_model, functions, kafka=True)
        # No data call: the whole-history part still answers (Elle's empty-transaction-graph).
        results = [*results, check_part(plan, CYCLES_PART, [])]
    elif not results:
        functions = vacuous.history_functions(file, info.format)
        raise vacuous.vacuous_check_error(file, plan.model, functions, kafka=False)
    return HistoryReport(
        path=str(file),
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
    file: Path, info: readers.SourceInfo, options: VerifyOptions, engine: str, seconds: float
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


def _tee_into(stream: Iterable[Operation], sink: list[Operation]) -> Iterator[Operation]:
    for operation in stream:
        sink.append(operation)
        yield operation


# ---------------------------------------------------------------------------------------
# Local engine
# ---------------------------------------------------------------------------------------


def verify_local(
    plan: Plan,
    operations: Iterable[Operation],
    source: str,
    progress: ProgressCallback | None = None,
    whereabouts: Whereabouts | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
) -> Checked:
    """Pair and split in this process; check the parts here or in `pool`'s workers."""
    with distributed.no_cyclic_gc():
        where = whereabouts or Whereabouts()
        return _verify_local(plan, operations, source, progress, where, pool, fail_fast)


def _verify_local(
    plan: Plan,
    operations: Iterable[Operation],
    source: str,
    progress: ProgressCallback | None,
    whereabouts: Whereabouts,
    pool: WorkerPool | None,
    fail_fast: bool,
) -> Checked:
    counted = _Counted(operations, whereabouts)
    calls = list(pair_calls(counted, source))
    try:
        return _check_calls(plan, calls, counted.count, progress, whereabouts, pool, fail_fast)
    except HistoryError as error:
        if error.position.file != UNNAMED:
            raise
        # A checker names no file (it sees calls, not lines): this is the history's.
        raise HistoryError(replace(error.position, file=source), error.message) from None


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


class _Counted:
    """An iterable of operations that counts them as they go by (and says where it is)."""

    def __init__(self, operations: Iterable[Operation], whereabouts: Whereabouts) -> None:
        self.operations = operations
        self.whereabouts = whereabouts
        self.count = 0

    def __iter__(self) -> Iterator[Operation]:
        whereabouts = self.whereabouts
        for operation in self.operations:
            self.count += 1
            whereabouts.operation_index = operation.index
            yield operation


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------
# Spark engine
# ---------------------------------------------------------------------------------------

STAGE1_SCHEMA = "target long, kind int, part string, payload binary"
STAGE2_SCHEMA = "kind int, payload binary"


CommittedInfo = frozenset[int] | None
PartNames = frozenset[str] | None
Job = Callable[[CommittedInfo, bool, PartNames], distributed.Gathered]
"""One pass of the distributed stages over a whole history: given the info calls known to
have committed (None: decide per part), whether to gather every data call for the cycle
part, and the parts to check (None: all)."""


def verify_spark(
    plan: Plan,
    file: Path,
    info: readers.SourceInfo,
    operations: Iterable[Operation],
    spark: SparkSession | None = None,
    master: str | None = None,
    progress: ProgressCallback | None = None,
    range_bytes: int = RANGE_BYTES,
) -> Checked:
    """Pair, split and check on Spark (`spark_checks.distributed`); only results come back.

    JSON Lines are read by the tasks themselves; other formats are first streamed through
    their reader into a temporary JSON Lines file. Either way the file must be readable at the
    same path by every executor, as for any Spark job reading a local path."""
    from spark_checks.spark_session import spark_session
    from spark_checks.user_models import ship_to_spark

    session = spark if spark is not None else spark_session(master, history_bytes=file.stat().st_size)
    ship_to_spark(session, plan.model)  # a user's model (MODULE:CLASS): its module goes to the executors
    with tempfile.TemporaryDirectory(prefix="kafkaspec-") as folder:
        lines = file
        if info.format != "jsonl":
            lines = Path(folder) / "history.jsonl"
            readers.write_jsonl(lines, operations)
        size = lines.stat().st_size
        cores = session.sparkContext.defaultParallelism
        ranges = distributed.byte_ranges(size, max(cores, math.ceil(size / range_bytes)))
        targets = _target_values(session, max(cores, math.ceil(size / TARGET_BYTES)))
        if progress is not None:
            progress(f"pairing, splitting and checking in {len(ranges)} + {len(targets)} tasks")

        def job(committed: CommittedInfo, cycles: bool, parts: PartNames) -> distributed.Gathered:
            doing = "pairing, splitting and checking" if parts is None else "checking parts again"
            with _task_progress(session, progress, doing):
                return _run(session, plan, str(lines), str(file), ranges, targets, committed, cycles, parts)

        return _jobs(plan, job, file, info, progress)


def _jobs(
    plan: Plan, job: Job, file: Path, info: readers.SourceInfo, progress: ProgressCallback | None
) -> Checked:
    """Run the distributed stages: one pass, and for a Kafka history a second over the parts
    that need the cross-key facts the first pass gathered (see `spark_checks.distributed`)."""
    # A Kafka history's whole-history part (every data call) is checked in the first pass:
    # it decides which info sends committed by itself.
    gathered = job(None, plan.model == "kafka", None)
    _raise_first_error(gathered, file, info, plan)
    again = gathered.recheck()
    if plan.model == "kafka" and again:
        if progress is not None:
            progress(f"checking {len(again)} parts again with the cross-key facts")
        second = job(frozenset(gathered.committed), False, again)
        _raise_first_error(second, file, info, plan)
        gathered.replace(second)
    return Checked(sorted(gathered.results, key=_result_order), gathered.operations, gathered.calls)


def verify_lines_here(
    plan: Plan,
    file: Path,
    info: readers.SourceInfo,
    progress: ProgressCallback | None,
    whereabouts: Whereabouts | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
) -> Checked:
    """The local engine for a JSON Lines file: the Spark engine's two stages, run in this
    process over the whole file as one range and one target. Their reading, pairing and
    splitting are tuned for speed (2x the general path's operations/s, measured side by side
    on Kafka histories), and the calls stay encoded until their part is checked, so this
    process holds about a quarter of the memory the general path's call objects need. The
    parts are checked in `pool`'s worker processes when given."""
    source = str(file)
    size = file.stat().st_size

    def job(committed: CommittedInfo, cycles: bool, parts: PartNames) -> distributed.Gathered:
        if progress is not None:
            progress("reading, pairing and splitting")
        rows = [
            (kind, part, payload)
            for _, kind, part, payload in distributed.range_rows(
                plan, source, 0, size, LOCAL_TARGETS, source, cycles, parts
            )
        ]

        def on_part(number: int, count: int) -> None:
            if whereabouts is not None:
                whereabouts.part = f"{number}/{count}"
            if progress is not None:
                progress(f"part {number}/{count}")

        tally = Tally(0, progress)
        checked = distributed.check_rows(plan, rows, committed, on_part, pool, fail_fast, tally.verdict)
        return distributed.gather(checked)

    with distributed.no_cyclic_gc():
        return _jobs(plan, job, file, info, progress)


LOCAL_TARGETS: Final = (0,)
"""`verify_lines_here` has one stage-2 target: every piece goes to it."""


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


def _run(
    session: SparkSession,
    plan: Plan,
    path: str,
    source: str,
    ranges: list[tuple[int, int]],
    targets: list[int],
    committed: frozenset[int] | None = None,
    cycles: bool = False,
    parts: frozenset[str] | None = None,
) -> distributed.Gathered:
    """One job: stage 1 per byte range, one shuffle by target, stage 2 per target."""
    import pyarrow as pa

    def stage1(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with distributed.no_cyclic_gc():
            try:
                yield from _stage1(batches)
            except Exception as error:  # a bug: its traceback goes to the driver (SparkTaskError)
                yield _internal_batch(pa, error, "stage 1 (reading, pairing, splitting)", targets[0])

    def _stage1(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column(0).to_pylist():  # the ids of `session.range`
                start, end = ranges[number or 0]
                rows = distributed.range_rows(plan, path, start, end, targets, source, cycles, parts)
                while chunk := list(itertools.islice(rows, ARROW_ROWS)):
                    columns = list(zip(*chunk, strict=True))
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array(columns[0], pa.int64()),
                            pa.array(columns[1], pa.int32()),
                            pa.array(columns[2], pa.string()),
                            pa.array(columns[3], pa.binary()),
                        ],
                        names=["target", "kind", "part", "payload"],
                    )

    def stage2(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = cast(
            Iterator[tuple[int, str, bytes]],
            (
                row
                for batch in batches
                for row in zip(
                    batch.column(1).to_pylist(),
                    batch.column(2).to_pylist(),
                    batch.column(3).to_pylist(),
                    strict=True,
                )
            ),
        )
        with distributed.no_cyclic_gc():
            try:
                out = distributed.check_rows(plan, rows, committed)
            except Exception as error:  # a bug: its traceback goes to the driver (SparkTaskError)
                out = [(distributed.INTERNAL, distributed.internal_payload(error, "stage 2 (checking)"))]
        if out:
            kinds, payloads = zip(*out, strict=True)
            yield pa.RecordBatch.from_arrays(
                [pa.array(kinds, pa.int32()), pa.array(payloads, pa.binary())], names=["kind", "payload"]
            )

    collected = (
        session.range(0, len(ranges), 1, len(ranges))
        .mapInArrow(stage1, STAGE1_SCHEMA)
        .repartition(len(targets), "target")
        .mapInArrow(stage2, STAGE2_SCHEMA)
        .collect()
    )
    return distributed.gather((row["kind"], bytes(row["payload"])) for row in collected)


ARROW_ROWS = 8192
"""Rows per Arrow batch out of stage 1."""


def _internal_batch(pa: Any, error: Exception, stage: str, target: int) -> Any:
    """A stage-1 batch of one INTERNAL row: the task's unexpected error, for the driver."""
    return pa.RecordBatch.from_arrays(
        [
            pa.array([target], pa.int64()),
            pa.array([distributed.INTERNAL], pa.int32()),
            pa.array([""], pa.string()),
            pa.array([distributed.internal_payload(error, stage)], pa.binary()),
        ],
        names=["target", "kind", "part", "payload"],
    )


class SparkTaskError(RuntimeError):
    """An unexpected error (a bug, not bad input) in a Spark task. The message names the
    exception and the stage; the task's traceback is attached as a note, so it is printed
    with the driver's own."""

    def __init__(self, kind: str, message: str, stage: str, remote_traceback: str) -> None:
        super().__init__(f"{kind}: {message} (in a Spark task, {stage})")
        self.add_note(f"Traceback in the Spark task:\n{remote_traceback.rstrip()}")


def _target_values(session: SparkSession, count: int) -> list[int]:
    """For each of `count` shuffle partitions, a value of the `target` column that Spark's
    hash partitioning (`repartition(count, "target")`: pmod(hash(target), count)) sends there:
    so each stage-2 task gets exactly one target's rows, and copies of a row sent to every
    target reach every task. Asked of Spark itself, so it is its hash whatever the version."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    candidates = session.range(0, 64 * count + 64).select(
        F.col("id"), F.pmod(F.hash(F.col("id")), F.lit(count)).alias("partition")
    )
    first = {
        int(row["partition"]): int(row["id"])
        for row in candidates.groupBy("partition").min("id").withColumnRenamed("min(id)", "id").collect()
    }
    missing = [number for number in range(count) if number not in first]
    if missing:
        raise RuntimeError(f"no target value hashes to Spark partitions {missing[:5]}")
    return [first[number] for number in range(count)]


def _located(error: HistoryError, file: Path, fmt: str) -> HistoryError:
    """`error` at its operation's line (or Parquet row) when it names only the operation's
    index (an error found in a call: a check sees calls, not lines)."""
    if error.position.index is None:
        return error
    return HistoryError(_position_of(file, fmt, error.position.index), error.message)


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


def _raise_first_error(
    gathered: distributed.Gathered, file: Path, info: readers.SourceInfo, plan: Plan
) -> None:
    """Report a task's error as the local engine would: the first bad line, found by reading
    the history here (streaming: the reader and the pairing hold one open call per process),
    or the first call whose value the model cannot hold; an error a task found in a call
    names its operation's index (a range knows no lines), which the caller locates."""
    if gathered.internal:
        kind, message, stage, remote = gathered.internal[0]
        raise SparkTaskError(kind, message, stage, remote)
    error = gathered.first_error()
    if error is None:
        return
    for _ in pair_calls(readers.open_history(file, info.format)[1], str(file)):
        pass
    bad = _first_bad_value(file, info.format, plan)
    if bad is not None:
        raise bad
    line, message = error
    raise HistoryError(Position(str(file), index=None if line is None else line - 1), message)


def _result_order(result: CheckResult) -> str:
    partition = result.partition
    return partition if partition == CYCLES_PART else partition_key_json(partition)


def environment_summary() -> dict[str, str]:
    """Where Spark would run (for reports)."""
    return {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", "")}
