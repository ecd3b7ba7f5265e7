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

No column-chunk metadata is read: pyarrow 26 aborts the whole process (a C++ exception
thrown through `RowGroupMetaData.column`, "Definition level histogram size mismatch") on
some corrupt files whose row groups `iter_batches` reports as unreadable with an OSError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from spark_checks.history import HistoryError, JsonValue, Operation, Position
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
