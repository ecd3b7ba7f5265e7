"""Tests of `readers.parquet.batch_operations`, the Spark engine's reading of Parquet rows a
column at a time: for any batch it gives what the local reader's row-by-row reading
(`_row_operation`) gives, the same operations with values of the same types, or the same
first error at the same row; and a usual batch takes no row-by-row path at all.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spark_checks.readers.parquet as parquet_module
from spark_checks.history import HistoryError, OpType
from spark_checks.readers.parquet import batch_operations

NAME = "h.parquet"


def row_by_row(batch: pa.RecordBatch, rows: list[int]) -> tuple[list[str], str | None]:
    """What the local reader gives, row by row: each operation's repr (types shown: 1, 1.0
    and True differ), and the first error."""
    names = batch.schema.names
    columns = [batch.column(name).to_pylist() for name in names]
    read: list[str] = []
    for row, values in zip(rows, zip(*columns, strict=True), strict=True):
        try:
            operation = parquet_module._row_operation(dict(zip(names, values, strict=True)), row, NAME)
        except HistoryError as error:
            return read, str(error)
        fields = (operation.index, operation.process, operation.type.value, operation.f)
        read.append(repr((row, (*fields, operation.value, operation.key, operation.time))))
    return read, None


def by_columns(batch: pa.RecordBatch, rows: list[int]) -> tuple[list[str], str | None]:
    read: list[str] = []
    try:
        for row, operation in batch_operations(batch, rows, NAME):
            assert operation[2] is OpType(operation[2]).value  # the type's own name: `is` compares
            read.append(repr((row, operation)))
    except HistoryError as error:
        return read, str(error)
    return read, None


USUAL: dict[str, list[Any]] = {
    "index": [0, 1, 2, 3],
    "time": [10, None, 30, 40],
    "process": ["1", "1", '"nemesis"', "2"],
    "type": ["invoke", "ok", "info", "fail"],
    "f": ["send", "send", "kill", "poll"],
    "value": ['[["send","k",1]]', '[["send","k",[0,1]]]', None, '[["poll",{"k":[[0,1]]}]]'],
    "key": [None, '"k"', None, "[1,2]"],
}


def usual_batch(**changed: Any) -> pa.RecordBatch:
    columns = {**USUAL, **changed}
    return pa.RecordBatch.from_pydict(
        {name: column for name, column in columns.items() if column is not None}
    )


def test_a_usual_batch_is_read_without_a_row_by_row_path(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = usual_batch()
    expected = row_by_row(batch, [5, 6, 7, 8])

    def refuse(*_: Any) -> None:
        raise AssertionError("read row by row")

    monkeypatch.setattr(parquet_module, "_row_operation", refuse)
    assert by_columns(batch, [5, 6, 7, 8]) == expected
    assert len(expected[0]) == 4


def value_column(text: str) -> list[Any]:
    return [USUAL["value"][0], text, None, USUAL["value"][3]]


CASES = {
    "usual": {},
    "process as integers": {"process": pa.array([1, 1, 7, 2], pa.int16())},
    "process null": {"process": pa.array([1, None, 7, 2], pa.int64())},
    "process a float": {"process": ["1", "1.0", "1", "2"]},
    "process a list": {"process": ["1", "[1]", "1", "2"]},
    "process true": {"process": ["1", "true", "1", "2"]},
    "process not JSON": {"process": ["1", "nemesis", "1", "2"]},
    "a negative index": {"index": [0, -1, 2, 3]},
    "a null index": {"index": pa.array([0, None, 2, 3], pa.int64())},
    "index as int8": {"index": pa.array([0, 1, 2, 3], pa.int8())},
    "a keyword type": {"type": ["invoke", ":ok", "info", "fail"]},
    "an unknown type": {"type": ["invoke", "done", "info", "fail"]},
    "a null f": {"f": ["send", None, "kill", "poll"]},
    "no time, value or key": {"time": None, "value": None, "key": None},
    "null-typed columns": {name: pa.nulls(4) for name in ("time", "value", "key")},
    "dictionary columns": {
        name: pa.array(USUAL[name]).dictionary_encode() for name in ("process", "type", "f", "value", "key")
    },
    "large strings": {name: pa.array(USUAL[name], pa.large_string()) for name in ("process", "value", "key")},
    "string views": {"value": pa.array(USUAL["value"], pa.string_view())},
    "a value beyond 64 bits": {"value": value_column("[18446744073709551616]")},
    "a value below -2**63": {"value": value_column("-9223372036854775809")},
    "a float of 20 digits": {"value": value_column("0.12345678901234567890")},
    "NaN": {"value": value_column("NaN")},
    "an infinity": {"value": value_column("-Infinity")},
    "an overflowing float": {"value": value_column("1e400")},
    "a lone surrogate": {"value": value_column('"\\ud800"')},
    "a surrogate pair": {"value": value_column('"\\ud83d\\ude00"')},
    "101 levels": {"value": value_column("[" * 101 + "]" * 101)},
    "100 levels": {"value": value_column("[" * 100 + "]" * 100)},
    "brackets in a string": {"value": value_column(json.dumps("[" * 300))},
    "not JSON": {"value": value_column("[1,")},
    "two values": {"value": value_column("1 2")},
    "blank": {"value": value_column("  ")},
    "a duplicate key": {"value": value_column('{"a":1,"b":2,"a":3}')},
    "a key beyond 64 bits": {"key": [None, "18446744073709551616", None, "1"]},
    "a key 101 levels deep": {"key": [None, "[" * 101 + "]" * 101, None, "1"]},
    "a key not JSON": {"key": [None, "k", None, "1"]},
    "a null time in an integer column": {"time": pa.array([None, None, None, 4], pa.int32())},
}


@pytest.mark.parametrize("changed", CASES.values(), ids=CASES.keys())
def test_each_batch_reads_as_row_by_row(changed: dict[str, Any]) -> None:
    batch = usual_batch(**changed)
    rows = [100, 101, 102, 103]
    assert by_columns(batch, rows) == row_by_row(batch, rows)


def test_a_slice_reads_as_its_rows() -> None:
    batch = usual_batch(value=value_column("[18446744073709551616]")).slice(2, 2)  # the long integer left out
    assert by_columns(batch, [2, 3]) == row_by_row(batch, [2, 3])


TEXTS = st.sampled_from(
    [
        "1",
        "-2",
        "1.5",
        "true",
        "null",
        '"k"',
        "[1,[2]]",
        '{"a":[1]}',
        "NaN",
        "1e999",
        "[",
        "18446744073709551616",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_batches_read_as_row_by_row(data: st.DataObject) -> None:
    size = data.draw(st.integers(0, 6))

    def column(elements: st.SearchStrategy[Any]) -> list[Any]:
        return data.draw(st.lists(elements, min_size=size, max_size=size))

    batch = pa.RecordBatch.from_pydict(
        {
            "index": pa.array(column(st.integers(-1, 5)), pa.int64()),
            "time": pa.array(column(st.none() | st.integers(0, 9)), pa.int64()),
            "process": column(st.sampled_from(["1", '"n"', "1.0", "[1]"])),
            "type": column(st.sampled_from(["invoke", "ok", "fail", "info", ":ok"])),
            "f": column(st.sampled_from(["send", "poll"])),
            "value": column(st.none() | TEXTS),
            "key": column(st.none() | TEXTS),
        }
    )
    rows = list(range(size))
    assert by_columns(batch, rows) == row_by_row(batch, rows)


@pytest.mark.parametrize("text", ["NaN", "[1,", "1e400"])
def test_a_value_orjson_refuses_sends_its_row_and_the_rest_row_by_row(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    batch = usual_batch(value=[USUAL["value"][0], USUAL["value"][1], text, USUAL["value"][3]])
    rows = [100, 101, 102, 103]
    expected = row_by_row(batch, rows)
    seen: list[int] = []
    by_rows = parquet_module._row_operation

    def recorded(obj: dict[str, Any], row: int, name: str) -> Any:
        seen.append(row)
        return by_rows(obj, row, name)

    monkeypatch.setattr(parquet_module, "_row_operation", recorded)
    assert by_columns(batch, rows) == expected
    assert len(expected[0]) == 2  # the rows before it read, then its error
    assert seen == [102]
