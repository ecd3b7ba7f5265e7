"""The canonical history in Parquet: the JSON Lines columns, for Spark and for large histories.

Columns (one row per operation, in history order):

    index    int64, not null
    time     int64, null when not recorded
    process  string, JSON text: `3` or `"nemesis"` (a process is an int or a name, so one
             native column type cannot hold both and round-trip)
    type     string: invoke | ok | fail | info
    f        string
    value    string, JSON text of any value shape; null for None
    key      string, JSON text; null for no key

An integer `process` column is accepted too (and any integer type for `index` and `time`, a
large or dictionary-encoded string for the text columns, and the null type for `time`,
`value` and `key`), and `time`, `value` and `key` may be missing. A column of another type, or
one of these columns twice, is bad input, found before any row is read.
Files written here carry the schema metadata `kafkaspec.history = 1`, and, when the writer was
given them, `kafkaspec.conventions` (JSON text) - the reader then reports those conventions
instead of the canonical defaults, so a Knossos or Porcupine history converted to Parquet keeps
its meaning (initial value, nil reads, failed CAS).

Reading iterates record batches of one row group at a time (`ParquetFile.iter_batches`), so
memory is bounded by a batch. Errors name the row (0-based), or byte 0 for a file that is not
readable Parquet or whose columns are wrong. The JSON texts are read as the JSON Lines reader
reads a line (no NaN or infinities; at most `MAX_NESTING` levels of nesting).

The Spark engine's tasks get Arrow batches of these columns and read them a column at a time
(`batch_operations`: each distinct process, type, f and key text decoded once, the values by
orjson), falling back to the row-by-row reading for a batch with anything unusual in it, so
both read alike. On the 10^6-operation bench file that reading takes 2.4 CPU-s where the row
by row took 8.2 (Parquet decoding included; 1,000 keys).

No column-chunk metadata is read: pyarrow 26 aborts the whole process (a C++ exception
thrown through `RowGroupMetaData.column`, "Definition level histogram size mismatch") on
some corrupt files whose row groups `iter_batches` reports as unreadable with an OSError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, cast

import numpy
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_checks.history import HistoryError, JsonValue, Operation, OpType, Position
from spark_checks.readers._common import (
    CANONICAL_CONVENTIONS,
    MAX_NESTING,
    NESTING_MESSAGE,
    NotAValueError,
    check_conventions,
    create_history_file,
    display_name,
    finite_float,
    make_operation,
    nests_deeper,
    refuse_constant,
    shown,
)
from spark_checks.readers.jsonl import first_long_integer

MAGIC: Final = b"PAR1"
BATCH_ROWS: Final = 65_536
REQUIRED: Final = ("index", "process", "type", "f")
OPTIONAL: Final = ("time", "value", "key")
META_HISTORY: Final = b"kafkaspec.history"
META_CONVENTIONS: Final = b"kafkaspec.conventions"
EXPECTED: Final = "expected Parquet columns index, process, type, f (and value, time, key)"

_FIELDS: list[pa.Field[Any]] = [
    pa.field("index", pa.int64(), nullable=False),
    pa.field("time", pa.int64()),
    pa.field("process", pa.string(), nullable=False),
    pa.field("type", pa.string(), nullable=False),
    pa.field("f", pa.string(), nullable=False),
    pa.field("value", pa.string()),
    pa.field("key", pa.string()),
]
SCHEMA: Final = pa.schema(_FIELDS)

_decode = json.JSONDecoder(parse_constant=refuse_constant, parse_float=finite_float).decode


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        return _is_text(kind.value_type)
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)


def _is_integer(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind)


def _is_absent(kind: pa.DataType) -> bool:
    return pa.types.is_null(kind)


COLUMN_TYPES: Final = {
    "index": ("an integer", (_is_integer,)),
    "time": ("an integer (nanoseconds)", (_is_integer, _is_absent)),
    "process": ("a string (JSON text) or an integer", (_is_text, _is_integer)),
    "type": ("a string", (_is_text,)),
    "f": ("a string", (_is_text,)),
    "value": ("a string (JSON text)", (_is_text, _is_absent)),
    "key": ("a string (JSON text)", (_is_text, _is_absent)),
}
"""What each column may hold: a description for messages, and the Arrow types accepted."""


def _dumps(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def write_parquet(
    path: str | os.PathLike[str],
    operations: Iterable[Operation],
    *,
    overwrite: bool = False,
    conventions: Mapping[str, JsonValue] | None = None,
) -> int:
    """Write operations as a Parquet history; return how many were written.

    Refuses to replace an existing file (FileExistsError) unless `overwrite=True`. `conventions`
    (the four keys of `SourceInfo.conventions`) are stored in the schema metadata when given.
    """
    metadata = {META_HISTORY: b"1"}
    if conventions is not None:
        checked = check_conventions(dict(conventions), Position("conventions"))
        metadata[META_CONVENTIONS] = _dumps(checked).encode()
    schema = SCHEMA.with_metadata(metadata)
    handle = create_history_file(path, overwrite, binary=True)
    count = 0
    with handle, pq.ParquetWriter(handle, schema) as writer:
        columns: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
        for operation in operations:
            columns["index"].append(operation.index)
            columns["time"].append(operation.time)
            columns["process"].append(_dumps(operation.process))
            columns["type"].append(operation.type.value)
            columns["f"].append(operation.f)
            columns["value"].append(None if operation.value is None else _dumps(operation.value))
            columns["key"].append(None if operation.key is None else _dumps(operation.key))
            count += 1
            if len(columns["index"]) >= BATCH_ROWS:
                writer.write_batch(pa.RecordBatch.from_pydict(columns, schema=schema))
                columns = {name: [] for name in SCHEMA.names}
        if columns["index"] or count == 0:
            writer.write_batch(pa.RecordBatch.from_pydict(columns, schema=schema))
    return count


def open_parquet(path: str | os.PathLike[str]) -> tuple[dict[str, JsonValue], Iterator[Operation]]:
    """Check the file and its columns now; return its conventions and the operations' stream."""
    name = display_name(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(MAGIC))
    except OSError as error:
        raise HistoryError(Position(name), f"cannot read the file: {error.strerror}") from None
    if head != MAGIC:
        raise HistoryError(
            Position(name, offset=0), f"not a Parquet file: expected the magic bytes {MAGIC!r}"
        )
    try:
        parquet = pq.ParquetFile(os.fspath(path))
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as error:
        raise HistoryError(
            Position(name, offset=0), f"not a readable Parquet file ({' '.join(str(error).split())})"
        ) from None
    missing = [column for column in REQUIRED if column not in schema.names]
    if missing:
        raise HistoryError(Position(name, offset=0), f"{EXPECTED}; missing {', '.join(missing)}")
    _check_columns(schema, name)
    conventions = dict(CANONICAL_CONVENTIONS)
    stored = (schema.metadata or {}).get(META_CONVENTIONS)
    if stored is not None:
        try:
            text = stored.decode("utf-8")
            if nests_deeper(text, MAX_NESTING):
                raise ValueError(NESTING_MESSAGE)
            raw = _decode(text)
        except ValueError:
            raise HistoryError(
                Position(name, offset=0), "the kafkaspec.conventions metadata is not JSON text"
            ) from None
        conventions = check_conventions(raw, Position(name, offset=0))
    return conventions, _iter_parquet(parquet, name)


def _check_columns(schema: pa.Schema, name: str) -> None:
    """Each column the reader uses appears once and has a type it can read."""
    for column, (described, accepted) in COLUMN_TYPES.items():
        count = schema.names.count(column)
        if count > 1:
            raise HistoryError(Position(name, offset=0), f"{EXPECTED}; column {column} appears {count} times")
        if count == 1:
            kind = schema.field(column).type
            if not any(accepts(kind) for accepts in accepted):
                raise HistoryError(
                    Position(name, offset=0), f"{EXPECTED}; column {column} must be {described}, not {kind}"
                )


def _iter_parquet(parquet: pq.ParquetFile, name: str) -> Iterator[Operation]:
    names = [column for column in (*REQUIRED, *OPTIONAL) if column in parquet.schema_arrow.names]
    row = 0
    with parquet:
        for group in range(parquet.metadata.num_row_groups):
            first = row
            try:
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=names):
                    columns = [batch.column(column).to_pylist() for column in names]
                    for values in zip(*columns, strict=True):
                        yield _row_operation(dict(zip(names, values, strict=True)), row, name)
                        row += 1
            except (pa.ArrowException, OSError) as error:
                raise HistoryError(
                    Position(name, row=row),
                    f"row group {group} (from row {first}) is unreadable ({' '.join(str(error).split())})",
                ) from None


def _row_operation(obj: dict[str, Any], row: int, name: str) -> Operation:
    for column in ("process", "value", "key"):
        text = obj.get(column)
        if type(text) is str:
            try:
                if nests_deeper(text, MAX_NESTING):
                    raise HistoryError(Position(name, row=row), f"{column}: {NESTING_MESSAGE}")
                obj[column] = _decode(text)
            except NotAValueError as error:
                raise HistoryError(Position(name, row=row), f"{column}: {error}") from None
            except ValueError:
                raise HistoryError(
                    Position(name, row=row), f"{column} must be JSON text; got {shown(text)}"
                ) from None
        elif text is not None and column != "process":
            raise HistoryError(Position(name, row=row), f"{column} must be JSON text; got {shown(text)}")
    try:
        return make_operation(obj, row, name, None, EXPECTED)
    except HistoryError as error:
        raise HistoryError(Position(name, row=row), error.message) from None


# --- Whole columns at a time (the Spark engine's tasks) ----------------------------------------

OperationTuple = tuple[int, Any, str, str, JsonValue, JsonValue, "int | None"]
"""An operation as (index, process, type, f, value, key, time), its type by the name that
`OpType` holds (so `is` compares types): `distributed.Op`."""

_TYPE_NAMES: Final = {t.value: t.value for t in OpType}


def batch_operations(
    batch: pa.RecordBatch, rows: list[Any], name: str
) -> Iterator[tuple[int, OperationTuple]]:
    """The operations of a batch of a Parquet history's rows (its columns named as in the file,
    checked by `_check_columns`' rules), each with its row (`rows`), read a column at a time:
    the distinct texts of `process`, `type`, `f` and `key` decoded once each, the `value` texts
    by orjson. What the columns cannot show to be usual (a null, a negative index, a type not
    in Jepsen's four, JSON that orjson might read otherwise: an integer beyond 64 bits) sends
    the whole batch through `_row_operation`, the local reader's row by row, and a value that
    orjson refuses sends its row and the rest, so both accept the same rows with the same
    values and name the same first bad row. Spark hands `mapInArrow` tasks Arrow batches
    (pyspark's `DataFrame.mapInArrow`), so no Python row is built per operation."""
    columns = _usual_columns(batch)
    if columns is None:
        return _rows_one_by_one(batch, rows, name)
    return _usual_operations(batch, rows, columns, name)


def _usual_operations(
    batch: pa.RecordBatch, rows: list[int], columns: list[Any], name: str
) -> Iterator[tuple[int, OperationTuple]]:
    """A usual batch's operations, each value parsed as its operation is taken (`columns`' value
    texts): parsed a batch ahead, its objects were cold by the time pairing read them (stage 1
    of the 10^6-op bench file in one process, 6 rounds: median 3.81 -> 3.23 CPU-s)."""
    fields = [*columns[:4], map(orjson.loads, columns[4]), *columns[5:]]
    done = 0
    try:
        for operation in zip(*fields, strict=True):
            yield rows[done], operation
            done += 1
    except orjson.JSONDecodeError:  # a value `_decode` may read otherwise, or refuse as the row says
        yield from _rows_one_by_one(batch.slice(done), rows[done:], name)


def _rows_one_by_one(
    batch: pa.RecordBatch, rows: list[int], name: str
) -> Iterator[tuple[int, OperationTuple]]:
    names = [column for column in (*REQUIRED, *OPTIONAL) if column in batch.schema.names]
    values = [batch.column(column).to_pylist() for column in names]
    for row, fields in zip(rows, zip(*values, strict=True), strict=True):
        operation = _row_operation(dict(zip(names, fields, strict=True)), row, name)
        yield (
            row,
            (
                operation.index,
                operation.process,
                operation.type.value,
                operation.f,
                operation.value,
                operation.key,
                operation.time,
            ),
        )


def _usual_columns(batch: pa.RecordBatch) -> list[Any] | None:
    """The seven fields' columns in `OperationTuple`'s order, as Python sequences (the values as
    their JSON texts, not parsed yet), or None when a row may be unusual (the caller then reads
    it row by row)."""
    size, names = batch.num_rows, batch.schema.names
    index = batch.column("index")
    if not pa.types.is_integer(index.type) or index.null_count or (size and pc.min(index).as_py() < 0):
        return None
    process_column = batch.column("process")
    if pa.types.is_integer(process_column.type):
        process: list[Any] | None = None if process_column.null_count else process_column.to_pylist()
    else:
        process = _distinct_decoded(process_column, _process, nullable=False)
    types = _distinct_decoded(batch.column("type"), _TYPE_NAMES.__getitem__, nullable=False)
    functions = _distinct_decoded(batch.column("f"), str, nullable=False)
    absent = [None] * size
    key = _distinct_decoded(batch.column("key"), _json_value, nullable=True) if "key" in names else absent
    value = _value_texts(batch.column("value")) if "value" in names else [b"null"] * size
    time: Any = absent
    if "time" in names and not pa.types.is_null(batch.column("time").type):
        time = batch.column("time").to_pylist() if pa.types.is_integer(batch.column("time").type) else None
    if any(column is None for column in (process, types, functions, key, value, time)):
        return None
    return [index.to_pylist(), process, types, functions, value, key, time]


def _json_value(text: str) -> JsonValue:
    """A column's JSON text as `_row_operation` decodes it (ValueError for what it refuses)."""
    if nests_deeper(text, MAX_NESTING):
        raise ValueError(NESTING_MESSAGE)
    return _decode(text)


def _process(text: str) -> int | str:
    """A `process` text decoded, if an integer or a name (ValueError for anything else)."""
    process = _json_value(text)
    if type(process) is not int and type(process) is not str:
        raise ValueError(process)
    return process


def _distinct_decoded(column: Any, decode: Any, nullable: bool) -> list[Any] | None:
    """A text column's values, each distinct text decoded once (`decode`); None when a text
    does not decode, or a null is found where `nullable` is False."""
    if pa.types.is_null(column.type):
        return [None] * len(column) if nullable else None
    if not _is_plain_text(column.type) or (column.null_count and not nullable):
        return None
    encoded: Any = column if pa.types.is_dictionary(column.type) else pc.dictionary_encode(column)
    try:
        decoded = [decode(text) for text in encoded.dictionary.to_pylist()]
    except (ValueError, KeyError):
        return None
    decoded.append(None)  # what a null's index (filled in below) points at
    indices = pc.fill_null(encoded.indices, len(decoded) - 1).to_numpy()
    # numpy's take, each row's object shared: half the instructions of mapping list.__getitem__
    return cast("list[Any]", numpy.fromiter(decoded, object, len(decoded)).take(indices).tolist())


def _is_plain_text(kind: pa.DataType) -> bool:
    """A string column pyarrow's compute functions take (string views left to the rows)."""
    if pa.types.is_dictionary(kind):
        return _is_plain_text(kind.value_type)
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _value_texts(column: Any) -> list[Any] | None:
    """The `value` texts (nulls as `null`) for orjson to parse, or None when one may decode
    otherwise than by `_decode`: orjson refuses what `_decode` refuses or reads alike (NaN,
    infinities, overflowing floats and lone surrogates it refuses), but for integers beyond
    64 bits (`first_long_integer`), and it reads deeper nesting than `MAX_NESTING` (which
    balanced text shorter than twice that cannot hold)."""
    if pa.types.is_null(column.type):
        return [b"null"] * len(column)
    if not _is_plain_text(column.type) or pa.types.is_dictionary(column.type):
        return None
    texts: list[Any] = pc.fill_null(column, "null").cast(pa.binary()).to_pylist()
    if first_long_integer(b"\n".join(texts)) >= 0:
        return None
    long_texts = pc.indices_nonzero(pc.greater(pc.binary_length(column), pa.scalar(2 * MAX_NESTING)))
    if any(nests_deeper(texts[at], MAX_NESTING) for at in long_texts.to_pylist()):
        return None
    return texts
