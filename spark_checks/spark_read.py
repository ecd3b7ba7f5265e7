"""Histories read by Spark's own data sources, and their calls paired by Spark: two transforms.

    operations = operations_frame(spark, "hdfs://nn/runs/history.edn", "edn")
    calls = calls_frame(operations, "history.edn")

`operations_frame` reads a history with `spark.read.text` (JSON Lines, Jepsen EDN) or
`spark.read.parquet` (Parquet), so any path or URI Spark can read works (`file://`, `hdfs://`,
`s3a://` with the connector on the cluster) and Spark splits the file across tasks. The driver
never opens the file: the format is given, not sniffed. Each line (or row) is parsed in the
tasks by the local readers' own functions (`readers.jsonl.parse_line`,
`readers.edn.iter_forms`, `readers.parquet`'s row check), so what is accepted, and the
`HistoryError` text for what is not (file and line, or Parquet row), is the local reader's.

One row per operation (`OPERATION_SCHEMA`): `index`, `time`, `type`, `f` as they are;
`process`, `value` and `key` as JSON text (`json_text`; SQL null for None, as in the Parquet
history format); `line` (1-based, text formats) or `row` (0-based, Parquet) says where it was
read. An operation with no `index` gets its position among the file's operations, as in the
local readers.

Lines and positions without the driver reading the file. A split of a text file does not know
how many lines precede it, so `operations_frame` first runs a counting job that stays in the
JVM (no Python): per split (`_metadata.file_block_start`), its lines and the lines that hold an
operation (a regular expression). The driver turns these few numbers into each split's first
line and first operation ordinal and ships them to the tasks with the parse function (one pair
per split: small whatever the history). Cost: one more scan of the text by Spark's own reader,
2-4 s of 31 s for 10^6 Kafka operations (128 MB) on 2 cores (`bench/spark_read.py`). The frame
must be used with the splits it was counted with (same file, same
`spark.sql.files.maxPartitionBytes`): a split it did not count is an error, never a wrong line.
Parquet needs no such job: `_metadata.row_index` is the row.

`calls_frame` pairs each invocation with its process's next completion, as
`history.pair_calls` does (an invocation never completed is an `info` call with no completion,
Jepsen's rule; a completion without an invocation is a HistoryError, a nemesis's `info` is
skipped): it repartitions the operations by process, sorts each partition by process and
position in the file, and pairs them in an Arrow UDF (`mapInArrow`), one process at a time, so
invocations and completions that fell in different splits meet. A call is one row
(`CALL_SCHEMA`): the fields of `history.Call` (JSON values as JSON text, the outcome as its
name), plus where its invocation and completion were read (line or row), so a call's error can
name its line without reading the file again. `call_row` makes that row of a `Call` and
`call_from_row` the `Call` of a row. Measured (10^6 Kafka operations in JSON Lines, 2 cores):
Spark reads the text in 2 s, the parse makes it 14 s, the shuffle by process and the sort 24 s,
the pairing 31 s; today's engine reads and pairs the same file in 4.5 s without a shuffle, so
the shuffle of every operation is what to cut next.

Limits, each refused with a HistoryError naming the line rather than read differently:

* EDN is read line by line: every op map must sit on one line (Jepsen's `history.edn` is
  written one op per line; Knossos's vectors `[{...}\\n {...}]` too). An op map over several
  lines, or two on one line, is refused with a message that says to use the local engine.
  A line may open with `[` or `(` and end with `]` or `)` (a history's vector); that these
  balance over the file is not checked.
* An `index` or `time` beyond 64 bits (the local engine takes them) does not fit a `long` column.
* One file per URI (a folder's files would have no order between them).
* A byte that is not UTF-8 in an EDN line is named by its line, not by its byte offset.

When several lines are malformed, the error is the first a task met, not necessarily the
file's first. Parquet files' stored conventions (`kafkaspec.conventions`) are not read here.
Errors raised in a task reach the driver inside Spark's exception: `history_error_text`
recovers the HistoryError's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

import orjson
import pyarrow as pa

from spark_checks.history import Call, HistoryError, JsonValue, Operation, OpType, Outcome, Position, new_call
from spark_checks.readers._common import make_operation, shown
from spark_checks.readers.edn import EXPECTED_OP, iter_forms
from spark_checks.readers.jsonl import parse_line
from spark_checks.readers.parquet import COLUMN_TYPES, EXPECTED, REQUIRED, _row_operation

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

BATCH_ROWS: Final = 8192
"""Rows per Arrow batch a task hands back (Spark's own default, `maxRecordsPerBatch`, is 10,000)."""
TEXT_FORMATS: Final = ("jsonl", "edn")
READ_FORMATS: Final = (*TEXT_FORMATS, "parquet")

OPERATION_SCHEMA: Final = (
    "index long, time long, process string, type string, f string, value string, key string, "
    "line long, row long"
)
CALL_SCHEMA: Final = (
    "process string, f string, input string, output string, outcome string, invoke_index long, "
    "complete_index long, key string, invoke_time long, complete_time long, completion_value string, "
    "invoke_position long, complete_position long"
)
"""`history.Call`'s fields in order, then where the invocation and the completion were read
(the line, or the Parquet row; null for a call never completed)."""

_OPERATION_TYPE: Final = pa.schema(
    [  # type: ignore[arg-type]  # pyarrow-stubs: pa.int64() is not seen as a DataType
        ("index", pa.int64()),
        ("time", pa.int64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("value", pa.string()),
        ("key", pa.string()),
        ("line", pa.int64()),
        ("row", pa.int64()),
    ]
)
_CALL_TYPE: Final = pa.schema(
    [  # type: ignore[arg-type]
        ("process", pa.string()),
        ("f", pa.string()),
        ("input", pa.string()),
        ("output", pa.string()),
        ("outcome", pa.string()),
        ("invoke_index", pa.int64()),
        ("complete_index", pa.int64()),
        ("key", pa.string()),
        ("invoke_time", pa.int64()),
        ("complete_time", pa.int64()),
        ("completion_value", pa.string()),
        ("invoke_position", pa.int64()),
        ("complete_position", pa.int64()),
    ]
)

_PYTHON_SPACE: Final = (
    r"\t\n\x{0B}\x{0C}\r\x{1C}-\x{1F} \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
    r"\x{205F}\x{3000}"
)
"""The characters Python's `str.isspace` (and so `str.lstrip`) takes for whitespace, as a Java
regular expression class: a JSON line of these alone is blank to the local reader."""
JSONL_OPERATION_LINE: Final = f"[^{_PYTHON_SPACE}]"
"""A JSON Lines line holds an operation (or is an error) unless it is blank."""
EDN_OPERATION_LINE: Final = r"^[\s,]*(?:[\[(][\s,]*)?(?:#[^\s,\[\](){}\"\\;#_][^\s,\[\](){}\"\\;]*[\s,]*)?\{"
"""An EDN line holds an op map when one starts it: after blanks, an optional `[`/`(` opening
the history's vector and an optional tag (`#jepsen.history.Op`). Each line's parse checks that
it holds exactly the op maps this expression counted, so a line it misjudges is an error."""
_EDN_OPENER = re.compile(r"[\s,]*[\[(]")
_EDN_CLOSER = re.compile(r"[\])][\s,]*(?:;[^\n]*)?\Z")
_EMPTY_EDN_LINE = re.compile(r"[\s,]*(?:;[^\n]*)?\Z")
EDN_RUN_LINES: Final = 4096
"""Consecutive EDN lines a task parses as one text (`_edn_run`)."""
SPANS_LINES: Final = (
    "the Spark engine reads EDN histories one op map per line (as Jepsen writes history.edn); "
    "this line {what}: verify this file with the local engine (--engine local)"
)


def json_text(value: JsonValue) -> str:
    """A value as JSON text (orjson's, or the standard library's with ASCII escapes for what
    orjson cannot write: integers beyond 64 bits, lone surrogates). One value, one text."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _optional_json(value: JsonValue) -> str | None:
    return None if value is None else json_text(value)


def _long(value: int | None, what: str, position: Position) -> int | None:
    if value is not None and not -(2**63) <= value < 2**63:
        raise HistoryError(position, f"{what} must fit 64 bits to be read by Spark; got {shown(value)}")
    return value


def operation_values(operation: Operation, line: int | None, row: int | None) -> tuple[Any, ...]:
    """An operation as a row of `OPERATION_SCHEMA` (its values in order), read at `line` (or
    Parquet `row`)."""
    value, key = operation.value, operation.key
    return (
        operation.index,
        operation.time,
        json_text(operation.process),
        operation.type.value,
        operation.f,
        None if value is None else json_text(value),
        None if key is None else json_text(key),
        line,
        row,
    )


def operation_row(operation: Operation, line: int | None, row: int | None) -> dict[str, Any]:
    """`operation_values` by column name."""
    return dict(zip(_OPERATION_TYPE.names, operation_values(operation, line, row), strict=True))


class _Columns:
    """Rows (tuples in the schema's order) gathered into an Arrow record batch: kept as
    tuples and turned into columns at once (`zip`), which costs a third of appending each
    value to its column's list."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.rows: list[tuple[Any, ...]] = []

    def add(self, row: tuple[Any, ...]) -> bool:
        """Add a row; whether the batch is full (`BATCH_ROWS`) and should be taken."""
        self.rows.append(row)
        return len(self.rows) >= BATCH_ROWS

    def take(self) -> pa.RecordBatch:
        columns = list(zip(*self.rows, strict=True)) if self.rows else [()] * len(self.schema)
        self.rows = []
        return pa.RecordBatch.from_arrays(
            [pa.array(column, type=field.type) for column, field in zip(columns, self.schema, strict=True)],
            schema=self.schema,
        )


# --- operations_frame ------------------------------------------------------------------------------


def operations_frame(spark: SparkSession, uri: str, fmt: str, name: str | None = None) -> DataFrame:
    """The history at `uri` (format `fmt`: jsonl, edn or parquet) as a DataFrame of operations
    (`OPERATION_SCHEMA`). `name` is the file as errors name it (default: `uri`). Text formats
    run the counting job (module docstring) now; the parse runs when the frame is used."""
    if fmt not in READ_FORMATS:
        raise ValueError(f"format must be one of {', '.join(READ_FORMATS)}; got {fmt!r}")
    from pyspark.errors import AnalysisException

    source = uri if name is None else name
    try:
        if fmt == "parquet":
            return _parquet_operations(spark, uri, source)
        return _text_operations(spark, uri, fmt, source)
    except AnalysisException as error:
        if error.getCondition() == "PATH_NOT_FOUND":  # as the local readers say it
            raise HistoryError(Position(source), "cannot read the file: No such file or directory") from None
        raise


def _text_operations(spark: SparkSession, uri: str, fmt: str, source: str) -> DataFrame:
    from pyspark.sql import functions as sql

    lines = (
        spark.read.option("lineSep", "\n")  # as Python splits a file: "\r" stays in its line
        .text(uri)
        .select(
            sql.col("value"),
            sql.col("_metadata.file_path").alias("file"),
            sql.col("_metadata.file_block_start").alias("block"),
        )
        .withColumn(
            "holds", sql.col("value").rlike(JSONL_OPERATION_LINE if fmt == "jsonl" else EDN_OPERATION_LINE)
        )
    )
    holds: Column = sql.col("holds")
    counts = (
        lines.groupBy("file", "block")
        .agg(sql.count(sql.lit(1)).alias("lines"), sql.sum(holds.cast("long")).alias("operations"))
        .orderBy("file", "block")
        .collect()
    )
    files = sorted({count["file"] for count in counts})
    if len(files) > 1:
        raise HistoryError(Position(source), f"one history file expected; {uri} holds {len(files)} files")
    starts: dict[int, tuple[int, int]] = {}
    line, ordinal = 1, 0
    for count in counts:
        starts[count["block"]] = (line, ordinal)
        line += count["lines"]
        ordinal += count["operations"] or 0
    parse = _jsonl_batches if fmt == "jsonl" else _edn_batches

    def parse_split(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return parse(batches, starts, source)

    raw = sql.col("value").cast("binary").alias("raw")  # the line's bytes, UTF-8 or not
    return lines.select(raw, "block", "holds").mapInArrow(parse_split, OPERATION_SCHEMA)


def _positions(
    batches: Iterator[pa.RecordBatch], starts: Mapping[int, tuple[int, int]]
) -> Iterator[tuple[bytes, bool, int, int]]:
    """Each line of a task's splits: (bytes, whether it holds an operation, its line number,
    the ordinal its operation takes without an index)."""
    block: int | None = None
    line = ordinal = 0
    for batch in batches:
        raws = cast("list[bytes]", batch.column("raw").to_pylist())
        holding = cast("list[bool]", batch.column("holds").to_pylist())
        blocks = cast("list[int]", batch.column("block").to_pylist())
        for raw, holds, at in zip(raws, holding, blocks, strict=True):
            if at != block:  # a split's lines come together and in order
                block = at
                if at not in starts:
                    raise RuntimeError(
                        f"the history's split at byte {at} was not counted: its splits changed between "
                        "the counting job and the parse (the file, or spark.sql.files.maxPartitionBytes)"
                    )
                line, ordinal = starts[at]
            yield raw, holds, line, ordinal
            line += 1
            ordinal += holds


def _jsonl_batches(
    batches: Iterator[pa.RecordBatch], starts: Mapping[int, tuple[int, int]], source: str
) -> Iterator[pa.RecordBatch]:
    out = _Columns(_OPERATION_TYPE)
    for raw, holds, line, ordinal in _positions(batches, starts):
        operation = parse_line(raw, ordinal, source, line)
        if (operation is not None) != holds:  # pragma: no cover - the regex mirrors str.isspace
            raise HistoryError(Position(source, line=line), "blank to Spark's count but not to Python's")
        if operation is not None and out.add(
            _checked_row(operation, line, None, Position(source, line=line))
        ):
            yield out.take()
    yield out.take()


def _checked_row(operation: Operation, line: int | None, row: int | None, at: Position) -> tuple[Any, ...]:
    _long(operation.index, "index", at)
    _long(operation.time, "time", at)
    return operation_values(operation, line, row)


def _edn_batches(
    batches: Iterator[pa.RecordBatch], starts: Mapping[int, tuple[int, int]], source: str
) -> Iterator[pa.RecordBatch]:
    out = _Columns(_OPERATION_TYPE)
    run: list[tuple[bytes, bool, int, int]] = []
    for item in _positions(batches, starts):
        if run and (item[2] != run[-1][2] + 1 or len(run) >= EDN_RUN_LINES):
            yield from _edn_run(run, source, out)
            run = []
        run.append(item)
    if run:
        yield from _edn_run(run, source, out)
    yield out.take()


def _edn_run(run: list[tuple[bytes, bool, int, int]], source: str, out: _Columns) -> Iterator[pa.RecordBatch]:
    """The op maps of consecutive lines, parsed as one text (one token cache, one scan)."""
    first = run[0][2]
    texts = []
    for raw, holds, line, _ordinal in run:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise HistoryError(
                Position(source, line=line), f"not UTF-8 text (byte {error.start} of the line)"
            ) from None
        opener = _EDN_OPENER.match(text)
        if opener is not None:
            text = " " * opener.end() + text[opener.end() :]
        if text.rstrip()[-1:] in ("]", ")"):
            closer = _EDN_CLOSER.search(text)
            if closer is not None:
                text = text[: closer.start()]
        if not holds and not _EMPTY_EDN_LINE.match(text):
            _refuse_continuation(text, source, line)  # a form that starts no line: read it alone
            text = ""
        texts.append(text)
    read: set[int] = set()
    try:
        for value, line in iter_forms(["\n".join(texts)], source, first_line=first):
            _raw, holds, _line, ordinal = run[line - first]
            at = Position(source, line=line)
            if not holds or line in read:
                what = "holds more than one op map" if holds else "holds an op map that does not start it"
                raise HistoryError(at, SPANS_LINES.format(what=what))
            read.add(line)
            if type(value) is not dict:
                described = "a vector/list" if isinstance(value, list) else shown(value)
                raise HistoryError(at, f"{EXPECTED_OP}; got {described}")
            operation = make_operation(value, ordinal, source, line, EXPECTED_OP)
            if out.add(_checked_row(operation, line, None, at)):
                yield out.take()
    except HistoryError as error:
        if error.message.startswith(("unterminated map", "unexpected '}'")):
            raise HistoryError(error.position, SPANS_LINES.format(what="holds part of an op map")) from None
        raise
    for _raw, holds, line, _ordinal in run:
        if holds and line not in read:
            raise HistoryError(Position(source, line=line), SPANS_LINES.format(what="holds no op map alone"))


def _refuse_continuation(text: str, source: str, line: int) -> None:
    """A line that starts no op map holds no form, or it is refused: a discarded form (`#_`)
    passes; part of a map over several lines, or any other form, is named."""
    at = Position(source, line=line)
    try:
        forms = list(iter_forms([text], source, first_line=line))
    except HistoryError as error:
        if error.message.startswith(("unterminated", "unexpected")):
            raise HistoryError(at, SPANS_LINES.format(what="holds part of an op map")) from None
        raise
    if forms:
        raise HistoryError(at, SPANS_LINES.format(what="holds part of an op map"))


def _parquet_operations(spark: SparkSession, uri: str, source: str) -> DataFrame:
    from pyspark.sql import functions as sql
    from pyspark.sql import types

    table = spark.read.parquet(uri)
    fields = {field.name: field.dataType for field in table.schema.fields}
    at = Position(source, offset=0)
    missing = [column for column in REQUIRED if column not in fields]
    if missing:
        raise HistoryError(at, f"{EXPECTED}; missing {', '.join(missing)}")
    integer = (types.ByteType, types.ShortType, types.IntegerType, types.LongType)
    accepted: dict[str, tuple[type[types.DataType], ...]] = {
        "index": integer,
        "time": (*integer, types.NullType),
        "process": (types.StringType, *integer),
        "type": (types.StringType,),
        "f": (types.StringType,),
        "value": (types.StringType, types.NullType),
        "key": (types.StringType, types.NullType),
    }
    for column, kinds in accepted.items():
        if column in fields and not isinstance(fields[column], kinds):
            described = COLUMN_TYPES[column][0]
            raise HistoryError(
                at, f"{EXPECTED}; column {column} must be {described}, not {fields[column].simpleString()}"
            )
    present = [column for column in accepted if column in fields]
    rows = table.select(*present, sql.col("_metadata.row_index").alias("row"))

    def parse_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _parquet_batches(batches, present, source)

    return rows.mapInArrow(parse_rows, OPERATION_SCHEMA)


def _parquet_batches(
    batches: Iterator[pa.RecordBatch], present: list[str], source: str
) -> Iterator[pa.RecordBatch]:
    out = _Columns(_OPERATION_TYPE)
    for batch in batches:
        columns = [batch.column(column).to_pylist() for column in present]
        rows = cast("list[int]", batch.column("row").to_pylist())
        for row, values in zip(rows, zip(*columns, strict=True), strict=True):
            operation = _row_operation(dict(zip(present, values, strict=True)), row, source)
            if out.add(_checked_row(operation, None, row, Position(source, row=row))):
                yield out.take()
    yield out.take()


def call_row(call: Call, invoke_position: int | None, complete_position: int | None) -> dict[str, Any]:
    """A call as a row of `CALL_SCHEMA` (the one encoding of a call), its invocation and
    completion read at the given lines (or Parquet rows)."""
    return {
        "process": json_text(call.process),
        "f": call.f,
        "input": _optional_json(call.input),
        "output": _optional_json(call.output),
        "outcome": call.outcome.value,
        "invoke_index": call.invoke_index,
        "complete_index": call.complete_index,
        "key": _optional_json(call.key),
        "invoke_time": call.invoke_time,
        "complete_time": call.complete_time,
        "completion_value": _optional_json(call.completion_value),
        "invoke_position": invoke_position,
        "complete_position": complete_position,
    }


def _from_json(text: str | None) -> JsonValue:
    return None if text is None else json.loads(text)


def call_from_row(row: Mapping[str, Any]) -> Call:
    """The `Call` a row of `CALL_SCHEMA` encodes (`call_row`'s inverse, positions aside)."""
    return new_call(
        json.loads(row["process"]),
        row["f"],
        _from_json(row["input"]),
        _from_json(row["output"]),
        Outcome(row["outcome"]),
        row["invoke_index"],
        row["complete_index"],
        _from_json(row["key"]),
        row["invoke_time"],
        row["complete_time"],
        _from_json(row["completion_value"]),
    )


# --- calls_frame -----------------------------------------------------------------------------------


def calls_frame(operations: DataFrame, name: str, partitions: int | None = None) -> DataFrame:
    """The calls of a frame of operations (`CALL_SCHEMA`), paired per process in file order:
    repartitioned by process (into `partitions`, default `spark.sql.shuffle.partitions`),
    sorted by process and position, paired in `mapInArrow`. `name` names the file in errors."""
    from pyspark.sql import functions as sql

    positioned = operations.withColumn("position", sql.coalesce(sql.col("line"), sql.col("row")))
    by_process = (
        positioned.repartition("process")
        if partitions is None
        else positioned.repartition(partitions, "process")
    )
    ordered = by_process.sortWithinPartitions("process", "position")

    def pair(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _pair_batches(batches, name)

    return ordered.mapInArrow(pair, CALL_SCHEMA)


_OPERATION_COLUMNS: Final = (
    "process",
    "type",
    "f",
    "value",
    "key",
    "index",
    "time",
    "line",
    "row",
    "position",
)


def _where(source: str, line: int | None, row: int | None) -> Position:
    return Position(source, line=line) if line is not None else Position(source, row=row)


def _pair_batches(batches: Iterator[pa.RecordBatch], source: str) -> Iterator[pa.RecordBatch]:
    """`history.pair_calls` on operations sorted by process then position in the file."""
    out = _Columns(_CALL_TYPE)
    current: str | None = None
    invocation: tuple[Any, ...] | None = None
    for batch in batches:
        columns = [batch.column(column).to_pylist() for column in _OPERATION_COLUMNS]
        for process, kind, f, value, key, index, time, line, row, position in zip(*columns, strict=True):
            if process != current:
                if invocation is not None and out.add(_open_call(current, invocation)):
                    yield out.take()
                current, invocation = process, None
            if kind == OpType.INVOKE.value:
                if invocation is not None:
                    raise HistoryError(
                        _where(source, line, row),
                        f"process {json.loads(process)!r} invokes {f!r} while its {invocation[0]!r} "
                        f"(index {invocation[3]}) has not completed",
                    )
                invocation = (f, value, key, index, time, position)
                continue
            if invocation is None:
                if kind == OpType.INFO.value:
                    continue  # e.g. a nemesis announcing a fault: not a client operation
                raise HistoryError(
                    _where(source, line, row),
                    f"{kind} for process {json.loads(process)!r} without an open invocation",
                )
            called, given, called_key, invoke_index, invoke_time, invoke_position = invocation
            full = out.add(
                (
                    process,
                    called,
                    given,
                    value if kind == "ok" else None,
                    kind,
                    invoke_index,
                    index,
                    called_key,
                    invoke_time,
                    time,
                    value,
                    invoke_position,
                    position,
                )
            )
            invocation = None
            if full:
                yield out.take()
    if invocation is not None:
        out.add(_open_call(current, invocation))
    yield out.take()


def _open_call(process: str | None, invocation: tuple[Any, ...]) -> tuple[Any, ...]:
    """An invocation never completed: an `info` call with no completion (Jepsen's rule)."""
    called, given, called_key, invoke_index, invoke_time, invoke_position = invocation
    return (
        process,
        called,
        given,
        None,
        OpType.INFO.value,
        invoke_index,
        None,
        called_key,
        invoke_time,
        None,
        None,
        invoke_position,
        None,
    )


# --- errors ----------------------------------------------------------------------------------------

_RAISED: Final = re.compile(r"(?:spark_checks\.history\.)?HistoryError: (.+)")


def history_error_text(error: BaseException) -> str | None:
    """The text of the HistoryError a Spark task raised, from the exception Spark gives the
    driver (its message carries the task's traceback); None when a task raised none."""
    found = _RAISED.findall(str(error))
    return found[-1].strip() if found else None
