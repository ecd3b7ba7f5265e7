"""`spark_checks.spark_read`: the Spark engine's transforms give the local engine's calls.

Each history is written as JSON Lines, Jepsen EDN (one op map per line) and Parquet; the calls
stage 1 and border pairing make (`stage1_frame`, `border_frame`: their CALLS rows decoded)
must equal the local reader's operations paired by `history.pair_calls`, compared as
DataFrames (`pyspark.testing.assertDataFrameEqual`, as Spark projects test their transforms).
Tiny splits (`spark.sql.files.maxPartitionBytes`, Parquet row groups of a few rows) put
invocations and completions in different tasks; a bad line gets the local reader's
HistoryError text from the Spark engine.
"""

from __future__ import annotations

import gc
import json
import pickle
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_checks import distributed
from spark_checks.checking import CYCLES_PART, Plan
from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import Call, HistoryError, Operation, pair_calls
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, operation_positions, write_edn, write_jsonl, write_parquet
from spark_checks.spark_read import (
    _guarded,
    border_frame,
    check_frame,
    count_starts,
    head,
    json_text,
    stage1_frame,
)

pytest.importorskip("pyspark")

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "histories"
KNOSSOS = SHARED / "knossos" / "data" / "cas-register"
TINY_SPLIT_BYTES = 2048
ROW_GROUP_ROWS = 16


def small_row_groups(path: Path, rows: int) -> Path:
    """The Parquet file rewritten with row groups of `rows` rows (Spark splits by row group)."""
    table = pq.read_table(path)
    pq.write_table(table, path, row_group_size=rows)
    return path


CALL_SCHEMA = (
    "process string, f string, input string, output string, outcome string, invoke_index long, "
    "complete_index long, key string, invoke_time long, complete_time long, completion_value string"
)
"""A call as a row: `history.Call`'s fields, JSON values as JSON text."""


def call_values(call: Call) -> tuple[Any, ...]:
    def text(value: Any) -> str | None:
        return None if value is None else json_text(value)

    return (
        json_text(call.process),
        call.f,
        text(call.input),
        text(call.output),
        call.outcome.value,
        call.invoke_index,
        call.complete_index,
        text(call.key),
        call.invoke_time,
        call.complete_time,
        text(call.completion_value),
    )


def expected_calls(path: Path, fmt: str) -> list[tuple[Any, ...]]:
    """The local engine's calls of a history, as rows of CALL_SCHEMA."""
    return [call_values(call) for call in pair_calls(open_history(path, fmt)[1], str(path))]


def engine_calls(spark: Any, path: Path, fmt: str, uri: str | None = None) -> Any:
    """The calls the Spark engine's stage 1 and border pairing make of a history, as a
    DataFrame of CALL_SCHEMA (a register plan: each call is its own piece)."""
    from pyspark.sql import functions as sql

    uri = uri or path.as_uri()
    plan = Plan("register")
    _, _, lacks_indexes = head(spark, uri, str(path), fmt)
    starts = count_starts(spark, uri, fmt) if lacks_indexes else None
    stage1 = stage1_frame(spark, uri, fmt, plan, str(path), starts)
    border = border_frame(stage1, plan, str(path), 4)
    errors = stage1.unionByName(border).where(sql.col("kind") == distributed.ERROR).collect()
    assert not errors, [bytes(row["payload"]) for row in errors]
    calls = stage1.unionByName(border).where(sql.col("kind") == distributed.CALLS)

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            column = batch.column("payload").to_pylist()
            payloads = [bytes(payload) for payload in column if payload is not None]
            made = distributed.decode_part(payloads)[0]
            rows = [call_values(call) for call in made]
            columns = list(zip(*rows, strict=True)) if rows else [()] * 11
            names = [field.split()[0] for field in CALL_SCHEMA.split(", ")]
            yield pa.RecordBatch.from_arrays([pa.array(column) for column in columns], names=names)

    return calls.select("payload").mapInArrow(decode, CALL_SCHEMA)


@pytest.fixture
def tiny_splits(spark: Any) -> Iterator[None]:
    """Splits of `TINY_SPLIT_BYTES` for the test, Spark's setting restored after."""
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(TINY_SPLIT_BYTES))
    yield
    spark.conf.set(key, before)


def kafka_operations() -> list[Operation]:
    return list(generate_history(100, 3, seed=13, anomalies=("lost-write",)))


def history_files(tmp: Path, published: bool) -> dict[str, tuple[Path, str]]:
    """The same histories in each format: a generated Kafka one, or (`published`) Maelstrom's
    and a Knossos one, that one also as published (a vector)."""
    sources = {"kafka": kafka_operations()}
    if published:
        sources = {"maelstrom": list(open_history(DATA / "maelstrom" / "valid.edn")[1])}
        if KNOSSOS.exists():
            sources["knossos"] = list(open_history(KNOSSOS / "good" / "memstress3-26.edn")[1])
    files: dict[str, tuple[Path, str]] = {}
    for name, operations in sources.items():
        write_jsonl(tmp / f"{name}.jsonl", operations)
        files[f"{name}-jsonl"] = (tmp / f"{name}.jsonl", "jsonl")
        write_edn(tmp / f"{name}.edn", operations)
        files[f"{name}-edn"] = (tmp / f"{name}.edn", "edn")
        write_parquet(tmp / f"{name}.parquet", operations)
        files[f"{name}-parquet"] = (small_row_groups(tmp / f"{name}.parquet", ROW_GROUP_ROWS), "parquet")
    if published and KNOSSOS.exists():  # as published: `[{...}\n {...}\n ... ]`
        files["knossos-vector"] = (KNOSSOS / "good" / "memstress3-26.edn", "edn")
    return files


def crosses_a_split(path: Path, fmt: str) -> bool:
    """Whether some call's invocation and completion lie in different tiny splits (or row groups)."""
    where = {operation.index: at for operation, at in operation_positions(path, fmt)}
    starts = [0]
    for line in path.read_bytes().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def split_of(index: int) -> int:
        at = where[index]
        if at.row is not None:
            return at.row // ROW_GROUP_ROWS
        return starts[(at.line or 1) - 1] // TINY_SPLIT_BYTES

    calls = pair_calls(open_history(path, fmt)[1])
    return any(
        split_of(call.invoke_index) != split_of(call.complete_index)
        for call in calls
        if call.complete_index is not None
    )


@pytest.mark.parametrize(
    "published", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["generated", "published"]
)
def test_calls_equal_the_local_readers_with_tiny_splits(
    spark: Any, tiny_splits: None, tmp_path: Path, published: bool
) -> None:
    from pyspark.testing import assertDataFrameEqual

    for label, (path, fmt) in history_files(tmp_path, published).items():
        if fmt != "parquet":
            assert path.stat().st_size > 2 * TINY_SPLIT_BYTES, label  # several splits
        assert crosses_a_split(path, fmt), label
        expected = spark.createDataFrame(expected_calls(path, fmt), CALL_SCHEMA)
        assertDataFrameEqual(engine_calls(spark, path, fmt), expected)


def test_missing_indexes_and_blank_lines_across_splits(spark: Any, tiny_splits: None, tmp_path: Path) -> None:
    """An operation without `index` takes its position among the file's operations."""
    from pyspark.testing import assertDataFrameEqual

    lines = []
    for number, operation in enumerate(kafka_operations()):
        obj = {"process": operation.process, "type": operation.type.value, "f": operation.f}
        obj["value"] = operation.value
        lines.append(json.dumps(obj) + "\n" + ("\n  \t\u3000\n" if number % 7 == 0 else ""))
    path = tmp_path / "no-index.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    expected = expected_calls(path, "jsonl")
    indexes = {row[5] for row in expected} | {row[6] for row in expected if row[6] is not None}
    assert indexes == set(range(len(lines)))  # each operation's ordinal, blank lines skipped
    assertDataFrameEqual(engine_calls(spark, path, "jsonl"), spark.createDataFrame(expected, CALL_SCHEMA))


def spark_error(path: Path, fmt: str = "auto") -> str:
    options = VerifyOptions(engine="spark", fmt=fmt, spark_range_bytes=TINY_SPLIT_BYTES)
    with pytest.raises(HistoryError) as raised:
        verify_history(path, options)
    return str(raised.value)


def local_error(path: Path, fmt: str) -> str:
    with pytest.raises(HistoryError) as raised:
        list(open_history(path, fmt)[1])
    return str(raised.value)


def spoil(lines: list[str], at: int, bad: str) -> list[str]:
    return [*lines[:at], bad, *lines[at + 1 :]]


@pytest.mark.parametrize(
    ("fmt", "bad"),
    [
        ("jsonl", '{"index": 1, "process": 1, "type": "bogus", "f": "read"}\n'),
        ("jsonl", '{"index": 1, "process": 1, "type": "ok", "f": "read", "value": [1, 2}\n'),
        ("jsonl", '{"index": 1, "process": 1, "type": "ok", "f": "read", "value": NaN}\n'),
        ("edn", "{:index 1, :process 1, :type :bogus, :f :read}\n"),
        ("edn", "{:index 1, :process 1, :type :ok, :value ##Inf, :f :read}\n"),
    ],
)
def test_a_malformed_line_is_named_as_the_local_reader_names_it(
    spark: Any, tmp_path: Path, fmt: str, bad: str
) -> None:
    operations = kafka_operations()
    clean = tmp_path / "clean.jsonl"
    if fmt == "edn":
        write_edn(clean, operations)
    else:
        write_jsonl(clean, operations)
    lines = clean.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / f"spoiled.{fmt}"
    path.write_text("".join(spoil(spoil(lines, 170, bad), 150, bad)), encoding="utf-8")
    expected = local_error(path, fmt)
    assert f"{path}:151:" in expected  # the first of two bad lines, in different splits
    assert spark_error(path) == expected


def test_a_malformed_parquet_row_is_named_as_the_local_reader_names_it(spark: Any, tmp_path: Path) -> None:
    operations = kafka_operations()
    path = tmp_path / "spoiled.parquet"
    write_parquet(path, operations)
    table = pq.read_table(path)
    values = table.column("value").to_pylist()
    values[150] = "[1, 2"
    table = table.set_column(table.schema.get_field_index("value"), "value", [values])
    pq.write_table(table, path, row_group_size=32)
    expected = local_error(path, "parquet")
    assert "row 150" in expected
    assert spark_error(path) == expected


def test_a_completion_without_invocation_names_its_line(spark: Any, tmp_path: Path) -> None:
    operations = kafka_operations()
    orphan = next(i for i, o in enumerate(operations) if o.type.value == "ok" and i > 100)
    invocation = max(i for i in range(orphan) if operations[i].process == operations[orphan].process)
    kept = [o for i, o in enumerate(operations) if i != invocation]
    path = tmp_path / "orphan.jsonl"
    write_jsonl(path, kept)
    with pytest.raises(HistoryError) as raised:
        list(pair_calls(kept))
    line = next(
        at.line for o, at in operation_positions(path, "jsonl") if o.index == operations[orphan].index
    )
    assert spark_error(path) == f"{path}:{line}: {raised.value.message}"


def comparable(path: Path, engine: str) -> Any:
    report = verify_history(path, VerifyOptions(engine=engine, spark_range_bytes=TINY_SPLIT_BYTES))
    parts = sorted((json.dumps(r.partition), r.verdict, r.operations, r.evidence) for r in report.results)
    return report.verdict, report.operations, report.calls, parts


def test_an_edn_op_map_over_several_lines_is_read_whole_as_locally(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "pretty.edn"
    path.write_text(
        "[{:process 1, :type :invoke, :f :read, :value nil}\n"
        " {:process 1, :type :ok, :f :read,\n"
        "  :value 3}\n"
        " {:process 2, :type :invoke, :f :write, :value 3}\n"
        " {:process 2, :type :ok, :f :write, :value 3}]\n",
        encoding="utf-8",
    )
    assert comparable(path, "spark") == comparable(path, "local")


def test_edn_comments_brackets_discards_and_crlf_read_as_locally(spark: Any, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    path = tmp_path / "layout.edn"
    path.write_bytes(
        b"; a Knossos-style history\r\n"
        b"[\r\n"
        b" {:process 1, :type :invoke, :f :write, :value 3} ; the first write\r\n"
        b"\r\n"
        b" #_{:process 9, :type :invoke, :f :read, :value nil}\r\n"
        b" {:process :nemesis, :type :info, :f :start, :value nil}\r\n"
        b" {:process 1, :type :ok, :f :write, :value 3}\r\n"
        b" {:process 2, :type :invoke, :f :read, :value nil}]\r\n"
    )
    expected = expected_calls(path, "edn")
    assert [row[4] for row in expected] == ["ok", "info"]
    assertDataFrameEqual(engine_calls(spark, path, "edn"), spark.createDataFrame(expected, CALL_SCHEMA))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_missing_file_is_named_as_the_local_reader_names_it(spark: Any, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"missing.{fmt}"
    assert spark_error(path, fmt) == local_error(path, fmt)


def test_a_jepsen_shaped_history_is_checked_alike_with_its_drain_polls_split_by_key(
    spark: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as sql

    operations = list(
        generate_history(
            600, 6, seed=5, producers=3, consumers=3, max_batch=50, final_polls="from-start", final_batch=None
        )
    )
    path = tmp_path / "jepsen.jsonl"
    write_jsonl(path, operations)
    assert comparable(path, "spark") == comparable(path, "local")
    # The last line (a final poll of every key) leaves its task as one piece per key.
    uri, plan = path.as_uri(), Plan("kafka")
    stage1 = stage1_frame(spark, uri, "jsonl", plan, str(path), None)
    last = operations[-1].index
    parts = {
        row["part"]
        for row in stage1.where(sql.col("kind") == distributed.CALLS).collect()
        for piece in distributed.loads(bytes(row["payload"]))
        if len(piece) > 8 and piece[8] == last  # a key's piece (the whole part's CallFacts have 8 fields)
    }
    assert len(parts - {"cross-key cycles"}) == 6


def test_a_compressed_history_is_read_by_spark_alone(spark: Any, tmp_path: Path) -> None:
    """Spark's text source decompresses (one task per gzip file): the same calls as the plain file."""
    import gzip

    plain = tmp_path / "kafka.jsonl"
    write_jsonl(plain, kafka_operations())
    packed = tmp_path / "kafka.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    from pyspark.testing import assertDataFrameEqual

    expected = spark.createDataFrame(expected_calls(plain, "jsonl"), CALL_SCHEMA)
    assertDataFrameEqual(engine_calls(spark, plain, "jsonl", uri=packed.as_uri()), expected)


def test_verdicts_evidence_and_counts_agree_across_engines_and_formats(spark: Any, tmp_path: Path) -> None:
    answers = {
        (label, engine): comparable(path, engine)
        for label, (path, _fmt) in history_files(tmp_path, published=False).items()
        for engine in ("local", "spark")
    }
    first = next(iter(answers.values()))
    assert first[0].value == "invalid"  # the lost write is found
    assert all(answer == first for answer in answers.values()), {k: v[:3] for k, v in answers.items()}


def test_the_whole_history_part_is_checked_alone_by_the_first_task(spark: Any, tmp_path: Path) -> None:
    # Started first, it runs beside the keys' groups, not after them. `collect` gives the tasks'
    # answers in task order, and a task answers for its parts in name order, where the
    # whole-history part comes after every key (`"` sorts before letters).
    path = tmp_path / "history.jsonl"
    write_jsonl(path, generate_history(300, 6, seed=4))
    with open(path, "rb") as handle:
        ops = distributed.jsonl_ops([handle.readlines()], str(path), 1, 0)
        rows = [
            row
            for row in distributed.stage1_rows(Plan("kafka"), [(0, ops)], str(path))
            if row[0] == distributed.CALLS
        ]
    calls = spark.createDataFrame(
        [(part, payload) for _, part, _, _, payload in rows], "part string, payload binary"
    )
    for buckets in (2, 3):
        answers = [
            pickle.loads(row["answer"]) for row in check_frame(calls, Plan("kafka"), None, buckets).collect()
        ]
        names = [answer.name for answer in answers]
        assert names[0] == CYCLES_PART
        assert sorted(names[1:]) == sorted(
            {part for _, part, _, _, _ in rows} - {CYCLES_PART, distributed.SUBSCRIPTIONS_PART}
        )


class _Node:
    """An object that can be in a reference cycle and be watched (weakref)."""

    def __init__(self) -> None:
        self.other: Any = self


def test_what_outlives_a_task_is_frozen_and_its_cyclic_garbage_collected() -> None:
    # pyspark's daemon collects after every task of a reused worker: what stays (a kept
    # context) must not be traversed each time, and a task's cycles must not stay forever.
    kept: list[Any] = []
    watched: list[weakref.ref[_Node]] = []

    def rows() -> Iterator[int]:
        kept.append([[number] for number in range(5000)])  # outlives the task
        cycle = _Node()  # garbage after the task, freed only by a collection
        watched.append(weakref.ref(cycle))
        yield 1

    gc.unfreeze()
    try:
        assert list(_guarded(rows, "a stage", lambda described: 0)) == [1]
        assert watched[0]() is None  # collected, not frozen
        assert gc.get_freeze_count() > 5000
        assert not any(tracked is kept[0] for tracked in gc.get_objects())  # frozen: no collection sees it
    finally:
        gc.unfreeze()
