"""The verification engines: the same split-and-check, in this process or on Spark.

`verify_history(path, options)` reads a history, decides the model, and checks every
independent part:

* `local`: operations stream from the reader, are paired into calls (`pair_calls`) and
  bucketed by part; each part is checked here. Holds one history's calls in memory.
* `spark`: the driver never holds the history. JSON Lines are parsed by Spark itself
  (`parse_json`, the JVM's variant type, which keeps every value's exact JSON text); other
  formats are first converted to Parquet by streaming through the reader. Operations are
  grouped by process (`applyInPandas`) and paired into calls exactly as `pair_calls` does,
  the calls are split by part, and each part is checked in a task by the same
  `checking.check_part`. Only the per-part results come back to the driver.
* `auto`: `spark` for files over `AUTO_SPARK_BYTES`, `local` otherwise.

Spark runs `local[2]` unless `master` names a cluster; see `spark_session`.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from spark_checks import kafka_checker, readers
from spark_checks.checking import (
    CYCLES_PART,
    Budget,
    KafkaContext,
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
    Call,
    CheckResult,
    HistoryError,
    JsonValue,
    Operation,
    OpType,
    Outcome,
    Position,
    Verdict,
    pair_calls,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

AUTO_SPARK_BYTES = 256 * 1024 * 1024
"""`--engine auto` uses Spark for history files larger than this."""

ENGINES = ("auto", "local", "spark")


@dataclass(frozen=True)
class VerifyOptions:
    """What the user asked for (`kafkaspec verify` flags)."""

    model: str = "auto"
    fmt: str = "auto"
    engine: str = "auto"
    master: str | None = None
    conventions: dict[str, JsonValue] = field(default_factory=dict)  # overrides of the source's defaults
    budget: Budget = field(default_factory=Budget)


@dataclass(frozen=True)
class HistoryReport:
    """The verdict on one history file, with every part's result."""

    path: str
    format: str
    model: str
    engine: str
    conventions: dict[str, JsonValue]
    verdict: Verdict
    operations: int  # calls checked (pieces of multi-key calls count once per key)
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
    conventions = {**info.conventions, **options.conventions}
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
) -> HistoryReport:
    """Verify one history file. Raises HistoryError for malformed input, ValueError for a
    model that cannot be determined."""
    file = Path(path)
    if not file.is_file():
        raise HistoryError(Position(str(path)), "no such file")
    engine = choose_engine(file, options.engine)
    started = time.perf_counter()
    info, operations = readers.open_history(file, options.fmt)
    sample = list(itertools.islice(operations, 2000))
    plan = _plan(options, info, sample)
    stream: Iterator[Operation] = itertools.chain(sample, operations)
    if engine == "local":
        kept: list[Operation] | None = [] if keep_history else None
        if kept is not None:
            stream = _tee_into(stream, kept)
        results = verify_local(plan, stream, str(file), progress)
    else:
        results = verify_spark(plan, file, info, stream, spark, options.master, progress)
        kept = None
    return HistoryReport(
        path=str(file),
        format=info.format,
        model=plan.model,
        engine=engine,
        conventions=results[0].conventions if results else plan.conventions,
        verdict=combine_verdicts(result.verdict for result in results),
        operations=sum(result.operations for result in results),
        results=results,
        seconds=time.perf_counter() - started,
        history=kept,
    )


def _tee_into(stream: Iterable[Operation], sink: list[Operation]) -> Iterator[Operation]:
    for operation in stream:
        sink.append(operation)
        yield operation


# ---------------------------------------------------------------------------------------
# Local engine
# ---------------------------------------------------------------------------------------


def verify_local(
    plan: Plan, operations: Iterable[Operation], source: str, progress: ProgressCallback | None = None
) -> list[CheckResult]:
    """Pair, split and check in this process."""
    calls = list(pair_calls(operations, source))
    if plan.model == "kafka":
        plan = plan.with_kafka_context(kafka_context(calls))
    parts: dict[str, list[Call]] = defaultdict(list)
    for key_json, call in split_calls(plan, calls):
        parts[key_json].append(call)
    cycles = list(cycle_calls(plan, calls))
    if cycles:
        parts[CYCLES_PART] = cycles
    results = []
    for number, (key_json, part) in enumerate(sorted(parts.items()), start=1):
        if progress is not None:
            progress(f"part {number}/{len(parts)}")
        results.append(check_part(plan, key_json, part))
    return results


# ---------------------------------------------------------------------------------------
# Spark engine
# ---------------------------------------------------------------------------------------

OPERATION_COLUMNS = ("index", "time", "process", "type", "f", "value", "key")
"""Columns of operations inside Spark: process, value and key are canonical JSON text."""


def _json(value: JsonValue) -> str:
    # orjson: rows cross between Spark stages as JSON text, millions of times per history.
    return orjson.dumps(value).decode("utf-8")


def call_to_row(key_json: str, call: Call) -> dict[str, Any]:
    """A call as a flat row (JSON text for values) for shipping between Spark stages."""
    return {
        "part": key_json,
        "process": _json(call.process),
        "f": call.f,
        "input": _json(call.input),
        "output": _json(call.output),
        "completion_value": _json(call.completion_value),
        "outcome": call.outcome.value,
        "invoke_index": call.invoke_index,
        "complete_index": call.complete_index,
        "key": _json(call.key),
        "invoke_time": call.invoke_time,
        "complete_time": call.complete_time,
    }


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else int(number)  # NaN from pandas means missing


def row_to_call(row: dict[str, Any]) -> Call:
    """The inverse of `call_to_row`."""
    return Call(
        process=orjson.loads(row["process"]),
        f=row["f"],
        input=orjson.loads(row["input"]),
        output=orjson.loads(row["output"]),
        completion_value=orjson.loads(row["completion_value"]),
        outcome=Outcome(row["outcome"]),
        invoke_index=int(row["invoke_index"]),
        complete_index=_optional_int(row["complete_index"]),
        key=orjson.loads(row["key"]),
        invoke_time=_optional_int(row["invoke_time"]),
        complete_time=_optional_int(row["complete_time"]),
    )


def result_to_row(result: CheckResult) -> dict[str, Any]:
    """A part's result as a row (evidence and conventions as JSON text)."""
    return {
        "part": _json(result.partition),
        "checker": result.checker,
        "model": result.model,
        "verdict": result.verdict.value,
        "operations": result.operations,
        "evidence": _json(result.evidence),
        "conventions": _json(result.conventions),
        "seconds": result.seconds,
    }


def row_to_result(row: dict[str, Any]) -> CheckResult:
    """The inverse of `result_to_row`."""
    return CheckResult(
        checker=row["checker"],
        model=row["model"],
        partition=orjson.loads(row["part"]),
        verdict=Verdict(row["verdict"]),
        operations=int(row["operations"]),
        evidence=orjson.loads(row["evidence"]),
        conventions=orjson.loads(row["conventions"]),
        seconds=float(row["seconds"]),
    )


CALL_SCHEMA = (
    "part string, process string, f string, input string, output string, completion_value string, "
    "outcome string, invoke_index long, complete_index long, key string, invoke_time long, "
    "complete_time long, error string"
)
CALL_COLUMNS = [column.split()[0] for column in CALL_SCHEMA.split(", ")]
RESULT_SCHEMA = (
    "part string, checker string, model string, verdict string, operations long, evidence string, "
    "conventions string, seconds double"
)


def _operation_from_row(row: dict[str, Any]) -> Operation:
    return Operation(
        index=int(row["index"]),
        process=orjson.loads(row["process"]),
        type=OpType(row["type"]),
        f=row["f"],
        value=orjson.loads(row["value"]) if row["value"] is not None else None,
        key=orjson.loads(row["key"]) if row["key"] is not None else None,
        time=_optional_int(row["time"]),
    )


SPARK_BUCKETS = 16
"""Parts are checked in this many Spark tasks (each checks many parts): one pandas call per
part would cost more than most parts take to check."""

PIECE_SCHEMA = f"{CALL_SCHEMA}, bucket int, kind string, fact_key string, fact_value string"


def _typed_frame(rows: list[dict[str, Any]], schema: str) -> Any:
    """A pandas frame with exactly `schema`'s columns and dtypes that Arrow converts without
    guessing (nullable integers, object strings), whatever values are missing."""
    import pandas as pd

    dtypes = {}
    for column in schema.split(", "):
        name, kind = column.split()
        dtypes[name] = {"long": "Int64", "int": "Int32", "double": "float64"}.get(kind, "object")
    return pd.DataFrame(rows, columns=list(dtypes)).astype(dtypes)


def part_bucket(key_json: str, buckets: int = SPARK_BUCKETS) -> int:
    """The task a part is checked in (a stable hash: Python's own is salted per process)."""
    return zlib.crc32(key_json.encode("utf-8")) % buckets


def _pair_and_split(plan: Plan, source: str) -> Callable[[Any], Any]:
    """The pairing task (several whole processes): sort each process's operations, pair them
    into calls (exactly the calls `pair_calls` gives for that process in the whole history:
    pairing never looks across processes), split the calls into their parts, and emit the
    committed-info facts of Kafka calls. One output, told apart by `kind`: piece, read, sent or
    error."""

    def task(frame: Any) -> Any:

        rows = frame.sort_values(["process", "index"]).to_dict("records")
        out: list[dict[str, Any]] = []
        try:
            calls = [
                call
                for _, process_rows in itertools.groupby(rows, key=lambda row: row["process"])
                for call in pair_calls((_operation_from_row(row) for row in process_rows), source)
            ]
            pieces = [*split_calls(plan, calls), *((CYCLES_PART, call) for call in cycle_calls(plan, calls))]
            out.extend(
                {**call_to_row(key_json, piece), "bucket": part_bucket(key_json), "kind": "piece"}
                for key_json, piece in pieces
            )
            if plan.model == "kafka":
                for call in calls:
                    reads, sends = kafka_checker.commit_facts(call)
                    out.extend(
                        {"kind": "read", "fact_key": _json(k), "fact_value": _json(v), "invoke_index": -1}
                        for k, v in reads
                    )
                    out.extend(
                        {
                            "kind": "sent",
                            "fact_key": _json(k),
                            "fact_value": _json(v),
                            "invoke_index": call.invoke_index,
                        }
                        for k, v in sends
                    )
        except (HistoryError, ValueError, KeyError) as error:
            out = [{"kind": "error", "error": str(error)}]
        return _typed_frame(out, PIECE_SCHEMA)

    return task


def _check_bucket(plan: Plan) -> Callable[[Any], Any]:
    """The per-bucket task: rebuild each part's calls and check the parts one by one."""

    def task(frame: Any) -> Any:

        parts: dict[str, list[Call]] = defaultdict(list)
        for row in frame.to_dict("records"):
            parts[row["part"]].append(row_to_call(row))
        results = [result_to_row(check_part(plan, part, calls)) for part, calls in parts.items()]
        return _typed_frame(results, RESULT_SCHEMA)

    return task


def _operations_frame(
    spark: SparkSession, file: Path, info: readers.SourceInfo, operations: Iterable[Operation]
) -> DataFrame:
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    if info.format == "jsonl":
        parsed = spark.read.text(str(file)).select(
            F.try_parse_json("value").alias("v"),
            F.col("value").alias("line"),
            F.monotonically_increasing_id().alias("order"),
        )
        return parsed.select(
            F.coalesce(F.expr("variant_get(v, '$.index', 'long')"), F.col("order")).alias("index"),
            F.expr("variant_get(v, '$.time', 'long')").alias("time"),
            F.expr("to_json(variant_get(v, '$.process', 'variant'))").alias("process"),
            F.expr("variant_get(v, '$.type', 'string')").alias("type"),
            F.expr("variant_get(v, '$.f', 'string')").alias("f"),
            F.expr("to_json(variant_get(v, '$.value', 'variant'))").alias("value"),
            F.expr("to_json(variant_get(v, '$.key', 'variant'))").alias("key"),
            F.col("v").isNull().alias("malformed"),
        )
    # Other formats: stream through the reader into Parquet (bounded memory), read that.
    folder = Path(tempfile.mkdtemp(prefix="kafkaspec-"))
    target = folder / "history.parquet"
    readers.write_parquet(target, operations)
    return spark.read.parquet(str(target)).select(
        *[F.col(name) for name in OPERATION_COLUMNS], F.lit(False).alias("malformed")
    )


def verify_spark(
    plan: Plan,
    file: Path,
    info: readers.SourceInfo,
    operations: Iterable[Operation],
    spark: SparkSession | None = None,
    master: str | None = None,
    progress: ProgressCallback | None = None,
) -> list[CheckResult]:
    """Pair, split and check on Spark; only results come back to the driver."""
    from spark_checks.spark_session import spark_session

    session = spark if spark is not None else spark_session(master)
    frame = _operations_frame(session, file, info, operations).cache()
    bad = frame.filter("malformed OR type IS NULL OR f IS NULL OR process IS NULL").limit(1).count()
    if bad:
        # Find the exact line with the local reader (streams; stops at the first error).
        for _ in readers.open_history(file, info.format)[1]:
            pass
        raise HistoryError(Position(str(file)), "malformed operation (Spark could not parse a line)")
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    operations_frame = frame.drop("malformed")
    if plan.model == "kafka":
        plan = plan.with_kafka_context(_spark_kafka_prelude(operations_frame, str(file)))
    if progress is not None:
        progress("pairing and splitting calls per process")
    # Many processes share a task: one pandas call per process would cost more than pairing.
    by_task = operations_frame.withColumn("task", F.pmod(F.xxhash64("process"), F.lit(SPARK_BUCKETS)))
    pieces = by_task.groupBy("task").applyInPandas(_pair_and_split(plan, str(file)), PIECE_SCHEMA).cache()
    errors = pieces.filter("kind = 'error'").select("error").limit(1).collect()
    if errors:
        raise HistoryError(Position(str(file)), str(errors[0]["error"]).split(": ", 1)[-1])
    if plan.model == "kafka" and plan.kafka is not None:
        reads = pieces.filter("kind = 'read'").select("fact_key", "fact_value").distinct()
        sent = pieces.filter("kind = 'sent'").select("fact_key", "fact_value", "invoke_index")
        committed = sent.join(reads, ["fact_key", "fact_value"]).select("invoke_index").distinct().collect()
        context = plan.kafka
        plan = plan.with_kafka_context(
            KafkaContext(
                context.subscriptions,
                context.sub_via,
                frozenset(int(row["invoke_index"]) for row in committed),
                context.has_transactions,
            )
        )
    if progress is not None:
        progress("checking parts")
    checked_rows = (
        pieces.filter("kind = 'piece'")
        .select(*CALL_COLUMNS, "bucket")
        .groupBy("bucket")
        .applyInPandas(_check_bucket(plan), RESULT_SCHEMA)
        .collect()
    )
    pieces.unpersist()
    frame.unpersist()
    checked = [row_to_result(row.asDict()) for row in checked_rows]
    return sorted(checked, key=_result_order)


def _result_order(result: CheckResult) -> str:
    partition = result.partition
    return partition if partition == CYCLES_PART else partition_key_json(partition)


def _spark_kafka_prelude(operations: DataFrame, source: str) -> KafkaContext:
    """The Kafka facts that are small and cheap to get with Spark SQL before pairing: the
    assign/subscribe calls (paired on the driver: there are few) and whether any transaction
    exists. The committed-info facts come later, from the pairing stage."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    rows = (
        operations.filter(F.col("f").isin(*kafka_checker.SUBSCRIPTION_FUNCTIONS)).orderBy("index").collect()
    )
    subscriptions = tuple(pair_calls((_operation_from_row(row.asDict()) for row in rows), source))
    has_transactions = operations.filter(F.col("f") == "txn").limit(1).count() > 0
    return KafkaContext(
        subscriptions=tuple(sorted(subscriptions, key=lambda call: call.invoke_index)),
        sub_via=tuple(sorted({call.f for call in subscriptions if call.outcome is not Outcome.FAIL})),
        committed_info=frozenset(),
        has_transactions=has_transactions,
    )


def environment_summary() -> dict[str, str]:
    """Where Spark would run (for reports)."""
    return {"PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", "")}
