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

An integer `process` column is accepted too, and `time`, `value` and `key` may be missing.
Files written here carry the schema metadata `kafkaspec.history = 1`, and, when the writer was
given them, `kafkaspec.conventions` (JSON text) - the reader then reports those conventions
instead of the canonical defaults, so a Knossos or Porcupine history converted to Parquet keeps
its meaning (initial value, nil reads, failed CAS).

Reading iterates record batches of one row group at a time (`ParquetFile.iter_batches`), so
memory is bounded by a batch. Errors name the byte offset where the offending row group starts
(or 0 for a file that is not Parquet) and the row number.
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
    check_conventions,
    display_name,
    make_operation,
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

_decode = json.JSONDecoder().decode


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
    try:
        handle = open(path, "wb" if overwrite else "xb")  # noqa: SIM115 - closed by the with below
    except FileExistsError:
        raise FileExistsError(
            f"{display_name(path)} already exists; refusing to overwrite it (pass overwrite=True)"
        ) from None
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
        raise HistoryError(Position(name, offset=0), f"not a readable Parquet file ({error})") from None
    missing = [column for column in REQUIRED if column not in schema.names]
    if missing:
        raise HistoryError(Position(name, offset=0), f"{EXPECTED}; missing {', '.join(missing)}")
    conventions = dict(CANONICAL_CONVENTIONS)
    stored = (schema.metadata or {}).get(META_CONVENTIONS)
    if stored is not None:
        try:
            raw = _decode(stored.decode("utf-8"))
        except ValueError:
            raise HistoryError(
                Position(name, offset=0), "the kafkaspec.conventions metadata is not JSON text"
            ) from None
        conventions = check_conventions(raw, Position(name, offset=0))
    return conventions, _iter_parquet(parquet, name)


def _iter_parquet(parquet: pq.ParquetFile, name: str) -> Iterator[Operation]:
    names = [column for column in (*REQUIRED, *OPTIONAL) if column in parquet.schema_arrow.names]
    row = 0
    with parquet:
        for group in range(parquet.metadata.num_row_groups):
            position = Position(name, offset=_row_group_offset(parquet, group))
            try:
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=names):
                    columns = [batch.column(column).to_pylist() for column in names]
                    for values in zip(*columns, strict=True):
                        yield _row_operation(dict(zip(names, values, strict=True)), row, position)
                        row += 1
            except (pa.ArrowException, OSError) as error:
                raise HistoryError(position, f"row group {group} is unreadable ({error})") from None


def _row_operation(obj: dict[str, Any], row: int, position: Position) -> Operation:
    for column in ("process", "value", "key"):
        text = obj.get(column)
        if type(text) is str:
            try:
                obj[column] = _decode(text)
            except ValueError:
                raise HistoryError(position, f"row {row}: {column} must be JSON text; got {text!r}") from None
        elif text is not None and column != "process":
            raise HistoryError(position, f"row {row}: {column} must be JSON text; got {text!r}")
    try:
        return make_operation(obj, row, position.file, None, EXPECTED, position.offset)
    except HistoryError as error:
        raise HistoryError(position, f"row {row}: {error.message}") from None


def _row_group_offset(parquet: pq.ParquetFile, group: int) -> int:
    meta = parquet.metadata.row_group(group)
    offsets = [
        int(offset)
        for column in (meta.column(i) for i in range(meta.num_columns))
        for offset in (column.dictionary_page_offset, column.data_page_offset)
        if offset is not None and offset > 0
    ]
    return min(offsets, default=len(MAGIC))
