"""The Spark engine's reading and shipping: histories read by Spark's own data sources, and
`distributed`'s stages run in Spark tasks with Spark's operators between them.

    stage1 = stage1_frame(spark, "hdfs://nn/runs/history.edn", "edn", plan, source, None)
    border = border_frame(stage1, plan, source, partitions)
    answers = check_frame(calls, plan, None, buckets)

Reading. JSON Lines and Jepsen EDN are read with `spark.read.text`, Parquet with
`spark.read.parquet`, so any path or URI Spark can read works (`file://`, `hdfs://`, `s3a://`
with the connector on the cluster, a gzip-compressed file) and Spark splits the file. A task
gets its splits' lines (each with `_metadata.file_block_start`, the split's first byte) and
parses them with the local readers' own functions (`distributed.jsonl_ops`, `edn_ops`;
Parquet a column at a time, `readers.parquet.batch_operations`, with its row check where a
column is unusual), so what is accepted, and the HistoryError text for what is not, is the
local reader's. Porcupine's logs, and EDN whose op maps span lines, are read whole by
one task (`binaryFile`, then the local reader: `whole_file_frame`). The driver never opens the
history: what it needs of it (the format when neither `--format` nor the extension gives it,
the conventions, the sample the model is told from) comes from the first lines Spark reads
(`head`); a Parquet file's stored conventions from its footer, through Hadoop.

Lines without a counting scan. A split does not know how many lines precede it: stage 1 counts
lines from each split's start, and positions are (split, line), which order and pair the
operations. The file's own line numbers come from `count_starts`, a job that stays in the JVM
(per split: its lines, and the lines that hold an operation), run only when needed: a history
whose operations have no index (their index is their ordinal in the file), or an error to
name by its line. Parquet needs neither: `_metadata.row_index` is the row.

Shipping (`engine.verify_spark`): stage 1's rows (`STAGE_SCHEMA`) are persisted; its BORDER
rows are repartitioned by process and sorted by position for border pairing (`border_frame`:
a small shuffle, a few rows per process and split); the counts and errors (nothing per
operation) are collected; the CALLS rows are grouped into buckets of parts, each bucket with
its own copy of the assign/subscribe calls, and checked (`check_frame`), one answer per part.
A task's exception that no input explains (a bug) becomes one more row with its traceback
(`_guarded`), which the engine raises as `SparkTaskError`; bad input is an ERROR row of
`distributed`'s, never an exception.

Limits: EDN is read a line at a time when every op map sits on one line (as Jepsen writes
`history.edn`, and Knossos its `[{...}\n {...}]` vectors); one whose op maps span lines is
read whole by one task. One file per URI (a folder's files would have no order between them).
A byte that is not UTF-8 in an EDN line is named by its line, not by its byte offset.
"""

from __future__ import annotations

import gc
import itertools
import json
import pickle
import re
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from spark_checks import distributed
from spark_checks.checking import CYCLES_PART, Plan
from spark_checks.history import HistoryError, JsonValue, Operation, Position
from spark_checks.readers import open_located
from spark_checks.readers._common import (
    MAX_NESTING,
    NESTING_MESSAGE,
    SourceInfo,
    nests_deeper,
)
from spark_checks.readers.parquet import COLUMN_TYPES, EXPECTED, REQUIRED, _row_operation, batch_operations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BATCH_ROWS: Final = 8192
"""Rows per Arrow batch a task hands back (Spark's own default, `maxRecordsPerBatch`, is 10,000)."""
TEXT_FORMATS: Final = ("jsonl", "edn")
READ_FORMATS: Final = (*TEXT_FORMATS, "parquet")

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


def json_text(value: JsonValue) -> str:
    """A value as JSON text (orjson's, or the standard library's with ASCII escapes for what
    orjson cannot write: integers beyond 64 bits, lone surrogates). One value, one text."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, separators=(",", ":"), allow_nan=False)


# --- the Spark engine's jobs -----------------------------------------------------------------------

STAGE_SCHEMA: Final = "kind int, part string, split long, line long, payload binary"
"""Rows of stage 1 and of border pairing (`distributed.Row`)."""
ANSWER_SCHEMA: Final = "answer binary"
"""Stage 2's rows: one `distributed.Answer` per part, pickled (Python to Python)."""
_STAGE_TYPE: Final = pa.schema(
    [  # type: ignore[arg-type]
        ("kind", pa.int32()),
        ("part", pa.string()),
        ("split", pa.int64()),
        ("line", pa.int64()),
        ("payload", pa.binary()),
    ]
)
WHOLE_FORMATS: Final = ("porcupine",)
"""Formats one task reads whole (`whole_file_rows`), with the local reader: Porcupine's logs
(small test logs), and EDN whose op maps span lines (Knossos's examples)."""


def _bug_row(described: str) -> distributed.Row:
    return distributed.ERROR, "", 0, 0, distributed.dumps([distributed.Problem.BUG, described])


def _bug_answer(described: str) -> distributed.Answer:
    return distributed.Answer(error=(distributed.Problem.BUG, described, 0))


def _batches(rows: Iterable[tuple[Any, ...]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Rows (tuples in the schema's order) as Arrow record batches of `BATCH_ROWS` rows."""
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, BATCH_ROWS)):
        columns = zip(*chunk, strict=True)
        arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _task(
    rows: Callable[[Iterator[pa.RecordBatch]], Iterable[distributed.Row]], stage: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A `mapInArrow` task: Arrow batches in, `rows(batches)` out as `STAGE_SCHEMA` batches."""
    return lambda batches: _batches(_guarded(lambda: rows(batches), stage, _bug_row), _STAGE_TYPE)


T = TypeVar("T")


def _guarded(rows: Callable[[], Iterable[T]], stage: str, bug: Callable[[str], T]) -> Iterator[T]:
    """A task's rows with the cyclic collector off, and what outlives the task in a reused
    worker (the kept assign/subscribe context, `checking.remembered_context`; imports) frozen
    after the task's own collection: pyspark's daemon collects after every task, and a kept
    context of millions of objects (10^7 bench operations: about 0.17 CPU-s a collection) made
    every later task pay for it (a second verification in a session, 10^7: 58.5 -> 76.6 Python
    CPU-s). A bug's exception becomes a row (`bug`), raised on the driver as `engine.SparkTaskError`."""
    with distributed.no_cyclic_gc():
        try:
            yield from rows()
        except Exception as error:
            trace = "".join(traceback.format_exception(error))
            yield bug(json.dumps([type(error).__name__, str(error), stage, trace]))
    gc.collect()  # the task's cyclic garbage, if any: young objects only
    gc.freeze()


def _by_split(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, Iterator[pa.RecordBatch]]]:
    """A task's batches as (split, its rows' batches, sliced where the split changes), in file
    order. A task may hold several splits (Spark packs small ones), each whole and in order."""

    def runs() -> Iterator[tuple[int, pa.RecordBatch]]:
        for batch in batches:
            blocks = pc.run_end_encode(batch.column("block"))  # type: ignore[attr-defined]  # (not in the stubs)
            start = 0
            for block, end in zip(blocks.values.to_pylist(), blocks.run_ends.to_pylist(), strict=True):
                yield block, batch.slice(start, end - start)
                start = end

    for block, group in itertools.groupby(runs(), key=lambda run: run[0]):
        yield block, (piece for _, piece in group)


def lines_frame(spark: SparkSession, uri: str, fmt: str) -> DataFrame:
    """The history's lines as Spark reads them (`raw` bytes, `block`: the split's first byte;
    EDN: `holds`, whether the line starts an op map), or its Parquet rows. The split's first
    byte by `input_file_block_start()`, not `_metadata.file_block_start` (the same number),
    which Spark's scan adds to each line by a joined row and one more copy: the JVM's part of
    reading 10^6 lines into a task 0.46-0.53 -> 0.42-0.49 CPU-s (12 rounds, load 8-12)."""
    from pyspark.sql import functions as sql

    lines = spark.read.option("lineSep", "\n").text(uri)
    columns = [sql.col("value").cast("binary").alias("raw"), sql.input_file_block_start().alias("block")]
    if fmt == "edn":
        columns.append(sql.col("value").rlike(EDN_OPERATION_LINE).alias("holds"))
    return lines.select(*columns)


def count_starts(spark: SparkSession, uri: str, fmt: str) -> dict[int, tuple[int, int]]:
    """Each split's first line and the ordinal of its first operation (`distributed.Starts`),
    counted by a job that stays in the JVM (the module docstring). Run only when needed: an
    operation without an index, or an error to name by its line."""
    from pyspark.sql import functions as sql

    pattern = JSONL_OPERATION_LINE if fmt == "jsonl" else EDN_OPERATION_LINE
    counts = (
        spark.read.option("lineSep", "\n")
        .text(uri)
        .select(
            sql.col("_metadata.file_block_start").alias("block"),
            sql.col("value").rlike(pattern).alias("holds"),
        )
        .groupBy("block")
        .agg(sql.count(sql.lit(1)).alias("lines"), sql.sum(sql.col("holds").cast("long")).alias("operations"))
        .orderBy("block")
        .collect()
    )
    starts: dict[int, tuple[int, int]] = {}
    line, ordinal = 1, 0
    for count in counts:
        starts[count["block"]] = (line, ordinal)
        line += count["lines"]
        ordinal += count["operations"] or 0
    return starts


def stage1_frame(
    spark: SparkSession,
    uri: str,
    fmt: str,
    plan: Plan,
    source: str,
    starts: distributed.Starts | None,
    whole: bool = False,
) -> DataFrame:
    """Stage 1 (`distributed.split_rows`) in a task per split of the history. `starts`: each
    split's first line and ordinal (None: lines counted from each split's start). `whole`: one
    task reads the file whole (`whole_file_frame`), as for `WHOLE_FORMATS`."""
    if whole or fmt in WHOLE_FORMATS:
        return whole_file_frame(spark, uri, fmt, plan, source)
    frame = _parquet_frame(spark, uri, source)[0] if fmt == "parquet" else lines_frame(spark, uri, fmt)

    def ops(block: int, pieces: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, distributed.Op]]:
        # The readers' own iterators: a generator here resumed an interpreted frame per operation.
        if fmt == "parquet":  # a column at a time: no Python row per operation
            read = (batch_operations(piece, piece.column("row").to_pylist(), source) for piece in pieces)
            return itertools.chain.from_iterable(read)
        first_line, first_ordinal = (1, None) if starts is None else starts[block]
        if fmt == "jsonl":
            lines = (cast("list[bytes]", piece.column("raw").to_pylist()) for piece in pieces)
            return distributed.jsonl_ops(lines, source, first_line, first_ordinal)
        marked = (
            zip(*(piece.column(name).to_pylist() for name in ("raw", "holds")), strict=True)
            for piece in pieces
        )
        return distributed.edn_ops(itertools.chain.from_iterable(marked), source, first_line, first_ordinal)

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[distributed.Row]:
        for block, pieces in ((0, batches),) if fmt == "parquet" else _by_split(batches):  # Parquet: rows
            yield from distributed.split_rows(plan, ops(block, pieces), source, block)

    return frame.mapInArrow(_task(rows, "stage 1 (reading, pairing, splitting)"), STAGE_SCHEMA)


def _parquet_frame(spark: SparkSession, uri: str, source: str) -> tuple[DataFrame, list[str]]:
    """The Parquet history's rows with `row` (no `block`: a row is its position, the split
    0; Spark's Arrow conversion of that column cost 0.6-0.9 CPU-s per 10^6 rows), and the
    columns it has, checked as the local reader checks them (`readers.parquet`: the required
    columns, each of a type it reads)."""
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
    present: list[str] = [
        column
        for column in ("index", "time", "process", "type", "f", "value", "key")
        if column in table.columns
    ]
    return table.select(*present, sql.col("_metadata.row_index").alias("row")), present


def whole_file_frame(spark: SparkSession, uri: str, fmt: str, plan: Plan, source: str) -> DataFrame:
    """Stage 1 of a history one task reads whole, with the local reader of `fmt`
    (`WHOLE_FORMATS`, and EDN whose op maps span lines): Spark reads the bytes
    (`binaryFile`), the task parses them as the local engine does, one split, exact lines."""

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[distributed.Row]:
        for content in _file_contents(batches):
            with _local_copy(content, source) as path:
                yield from distributed.split_rows(plan, _located_ops(path, fmt), source, 0)

    return _binary_file(spark, uri).mapInArrow(_task(rows, "stage 1 (reading the whole file)"), STAGE_SCHEMA)


def _located_ops(path: str, fmt: str) -> Iterator[tuple[int, distributed.Op]]:
    # A generator: an error opening the file (its format) is met where split_rows reads it.
    for operation, line in open_located(path, fmt)[1]:
        yield line, distributed.operation_op(operation)


def _binary_file(spark: SparkSession, uri: str) -> DataFrame:
    return spark.read.format("binaryFile").load(uri).select("content")


def _file_contents(batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    for batch in batches:
        yield from cast("list[bytes]", batch.column("content").to_pylist())


@contextmanager
def _local_copy(content: bytes, source: str) -> Iterator[str]:
    """The bytes of a history in a temporary file named as the history (its extension tells
    the local readers' sniffing what it is), removed after."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kafkaspec-") as folder:
        path = os.path.join(folder, os.path.basename(source.rstrip("/")) or "history")
        with open(path, "wb") as handle:
            handle.write(content)
        yield path


def whole_file_answer(spark: SparkSession, uri: str, source: str, ask: Callable[[str], Any]) -> Any:
    """`ask(path)` of the history read whole by one task (a local copy of Spark's bytes), its
    answer pickled back: for the engine's error paths (the line of an operation, the first
    value a model refuses) and nothing else, so the driver never opens the history."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        answers = []
        for content in _file_contents(batches):
            with _local_copy(content, source) as path:
                answers.append(pickle.dumps(ask(path)))
        yield pa.RecordBatch.from_arrays([pa.array(answers, pa.binary())], names=["answer"])

    rows = _binary_file(spark, uri).mapInArrow(task, "answer binary").collect()
    return pickle.loads(rows[0]["answer"]) if rows else None  # trusted: this job's own task


def border_frame(stage1: DataFrame, plan: Plan, source: str, partitions: int) -> DataFrame:
    """Border pairing (`distributed.border_rows`): BORDER rows by process, sorted by position, role."""
    from pyspark.sql import functions as sql

    border = (
        stage1.where(sql.col("kind") == distributed.BORDER)
        .repartition(partitions, "part")
        .sortWithinPartitions("part", "split", "line", "payload")
    )

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[distributed.Row]:
        columns = ("part", "split", "line", "payload")
        read = (zip(*(batch.column(name).to_pylist() for name in columns), strict=True) for batch in batches)
        return distributed.border_rows(plan, itertools.chain.from_iterable(read), source)

    return border.mapInArrow(_task(rows, "border pairing"), STAGE_SCHEMA)


def check_frame(calls: DataFrame, plan: Plan, committed: frozenset[int] | None, buckets: int) -> DataFrame:
    """Stage 2 (`distributed.check_rows`): the CALLS rows in `buckets` groups of parts (by hash;
    the whole-history part alone in group 0, Spark's first task (`repartitionById`), beside the
    others), each group checked by one task call with its own copy of the assign/subscribe calls
    (every Kafka key needs them; they never pass through the driver). One answer per part."""
    solo = int(plan.model == "kafka" and buckets > 1)  # the whole-history part alone in group 0
    bucket = f"IF(part = '{CYCLES_PART}', 0, pmod(hash(part), {buckets - solo}) + {solo})"
    every = f"part = '{distributed.SUBSCRIPTIONS_PART}'"  # in every group: one scan, not a union of two
    rows = calls.selectExpr(
        f"explode(IF({every}, sequence(0, {buckets - 1}), array({bucket}))) AS bucket", "part", "payload"
    )

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def answers() -> Iterator[distributed.Answer]:
            parts: dict[str, list[bytes]] = {}
            for batch in batches:
                columns = (batch.column(name).to_pylist() for name in ("part", "payload"))
                for name, payload in zip(*columns, strict=True):
                    parts.setdefault(name, []).append(payload)
            if len(parts) > (distributed.SUBSCRIPTIONS_PART in parts):
                yield from distributed.check_rows(plan, parts, committed)

        checked = [pickle.dumps(answer) for answer in _guarded(answers, "stage 2 (checking)", _bug_answer)]
        yield pa.RecordBatch.from_arrays([pa.array(checked, pa.binary())], names=["answer"])

    # `repartitionById` puts bucket i alone in partition i, whose task takes its rows as they come
    # (groupBy().applyInArrow sorted and gathered them first: stage 2's JVM 0.7-0.9 -> 0.5-0.6
    # CPU-s at 10^6 operations, JSON Lines, 3 runs each, load 6-7).
    return rows.repartitionById(buckets, "bucket").mapInArrow(task, ANSWER_SCHEMA)


HEAD_LINES: Final = 2000
"""The first lines (or rows) of a history the driver asks Spark for: its format, its
conventions and the sample the model is told from (`engine._plan`)."""


def head(spark: SparkSession, uri: str, source: str, fmt: str) -> tuple[SourceInfo, list[Operation], bool]:
    """What the driver learns of a history from its first lines, read by Spark: its format
    (`fmt`, else the extension, else sniffed from the first lines as `readers.sniff_format`
    does), its source's conventions, its first operations, and whether an operation among
    them has no index (then stage 1 needs each split's ordinals: `count_starts`)."""
    import os

    from pyspark.errors import AnalysisException

    from spark_checks.readers import EXTENSIONS, open_history, sniff_format

    try:
        if fmt == "auto":
            fmt = EXTENSIONS.get(os.path.splitext(source)[1].lower(), "auto")
        if fmt == "parquet":
            return _parquet_head(spark, uri, source)
        text = spark.read.option("lineSep", "\n").text(uri)
        _one_file(text, uri, source)
        rows = text.limit(HEAD_LINES).collect()
    except AnalysisException as error:
        if error.getCondition() == "PATH_NOT_FOUND":  # as the local readers say it
            raise HistoryError(Position(source), "cannot read the file: No such file or directory") from None
        raise
    lines = [row["value"].encode("utf-8", "surrogateescape") + b"\n" for row in rows]
    with _local_copy(b"".join(lines), source) as path:
        if fmt == "auto":
            fmt = sniff_format(path)
            if fmt == "parquet":
                return _parquet_head(spark, uri, source)
        info, operations = open_history(path, fmt)
        sample: list[Operation] = []
        with suppress(HistoryError):  # a bad line: the stages name it
            sample.extend(itertools.islice(operations, HEAD_LINES))
    return info, sample, _lacks_indexes(lines, fmt, source)


def _lacks_indexes(lines: list[bytes], fmt: str, source: str) -> bool:
    """Whether an operation on these lines has no index."""
    try:
        if fmt == "jsonl":
            for _ in distributed.jsonl_ops([lines], source, 1, None):
                pass
        elif fmt == "edn":
            starts_map = re.compile(EDN_OPERATION_LINE)
            stripped = [raw[:-1] for raw in lines]  # as Spark gives them: without the newline
            marked = [(raw, bool(starts_map.search(raw.decode("utf-8", "replace")))) for raw in stripped]
            for _ in distributed.edn_ops(marked, source, 1, None):
                pass
    except distributed.OrdinalsNeededError:
        return True
    except HistoryError:
        return fmt == "edn"  # op maps over several lines: the whole file is read in one task
    return False


def _one_file(frame: DataFrame, uri: str, source: str) -> None:
    """A history is one file: a folder's files would have no order between them."""
    files = frame.inputFiles()
    if len(files) > 1:
        raise HistoryError(Position(source), f"one history file expected; {uri} holds {len(files)} files")


def _parquet_head(spark: SparkSession, uri: str, source: str) -> tuple[SourceInfo, list[Operation], bool]:
    frame, present = _parquet_frame(spark, uri, source)
    _one_file(frame, uri, source)
    sample = [
        _row_operation({column: row[column] for column in present}, row["row"], source)
        for row in frame.limit(HEAD_LINES).collect()
    ]
    return SourceInfo("parquet", parquet_conventions(spark, uri, source), "parquet"), sample, False


def parquet_conventions(spark: SparkSession, uri: str, source: str) -> dict[str, JsonValue]:
    """The conventions a Parquet history stores (`kafkaspec.conventions` in its footer, as
    `readers.parquet.write_parquet` writes them), read from the footer through Hadoop's file
    system (Spark's JVM): the canonical ones when it stores none."""
    from spark_checks.readers._common import CANONICAL_CONVENTIONS, check_conventions
    from spark_checks.readers.parquet import META_CONVENTIONS, _decode

    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(configuration, path)
    stored = footer.getFileMetaData().getKeyValueMetaData().get(META_CONVENTIONS.decode())
    if stored is None:
        return dict(CANONICAL_CONVENTIONS)
    at = Position(source, offset=0)
    try:
        if nests_deeper(stored, MAX_NESTING):
            raise ValueError(NESTING_MESSAGE)
        raw = _decode(stored)
    except ValueError:
        raise HistoryError(at, "the kafkaspec.conventions metadata is not JSON text") from None
    return check_conventions(raw, at)
