"""`spark_checks.spark_read`: the same calls from Spark's data sources as from the local readers.

Each history is written as JSON Lines, Jepsen EDN (one op map per line) and Parquet; the calls
`calls_frame` pairs from `operations_frame` must equal the local reader's operations paired by
`history.pair_calls` (with the line or row each operation was read at), compared as DataFrames
(`pyspark.testing.assertDataFrameEqual`, as Spark projects test their transforms). Tiny splits
(`spark.sql.files.maxPartitionBytes`, Parquet row groups of a few rows) put invocations and
completions in different tasks; malformed lines give the local reader's HistoryError text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_checks.history import HistoryError, Operation, Position, pair_calls
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, operation_positions, write_jsonl, write_parquet
from spark_checks.spark_read import (
    CALL_SCHEMA,
    OPERATION_SCHEMA,
    call_from_row,
    call_row,
    calls_frame,
    history_error_text,
    operation_row,
    operations_frame,
)

pytest.importorskip("pyspark")

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "histories"
KNOSSOS = SHARED / "knossos" / "data" / "cas-register"
TINY_SPLIT_BYTES = 2048
ROW_GROUP_ROWS = 16


def edn_text(value: Any) -> str:
    """A JSON-like value as EDN (strings stay strings, so the EDN reader gives it back)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(edn_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn_text(k)} {edn_text(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def write_edn(path: Path, operations: Sequence[Operation]) -> Path:
    """Operations as Jepsen writes history.edn: one op map per line."""
    lines = []
    for operation in operations:
        process = f":{operation.process}" if isinstance(operation.process, str) else str(operation.process)
        fields = [f":index {operation.index}"]
        if operation.time is not None:
            fields.append(f":time {operation.time}")
        fields += [f":type :{operation.type.value}", f":process {process}", f":f :{operation.f}"]
        if operation.key is not None:
            fields.append(f":key {edn_text(operation.key)}")
        fields.append(f":value {edn_text(operation.value)}")
        lines.append("{" + ", ".join(fields) + "}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def small_row_groups(path: Path, rows: int) -> Path:
    """The Parquet file rewritten with row groups of `rows` rows (Spark splits by row group)."""
    table = pq.read_table(path)
    pq.write_table(table, path, row_group_size=rows)
    return path


def expected_calls(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The local engine's calls of a history, as rows of CALL_SCHEMA."""
    _, operations = open_history(path, fmt)
    where: dict[int, Position] = {operation.index: at for operation, at in operation_positions(path, fmt)}

    def position(index: int | None) -> int | None:
        if index is None:
            return None
        at = where[index]
        return at.line if at.line is not None else at.row

    return [
        call_row(call, position(call.invoke_index), position(call.complete_index))
        for call in pair_calls(operations, str(path))
    ]


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
        files[f"{name}-edn"] = (write_edn(tmp / f"{name}.edn", operations), "edn")
        write_parquet(tmp / f"{name}.parquet", operations)
        files[f"{name}-parquet"] = (small_row_groups(tmp / f"{name}.parquet", ROW_GROUP_ROWS), "parquet")
    if published and KNOSSOS.exists():  # as published: `[{...}\n {...}\n ... ]`
        files["knossos-vector"] = (KNOSSOS / "good" / "memstress3-26.edn", "edn")
    return files


def crosses_a_split(path: Path, fmt: str, call: dict[str, Any]) -> bool:
    """Whether a call's invocation and completion lie in different tiny splits (or row groups)."""
    if call["complete_position"] is None:
        return False
    if fmt == "parquet":
        return bool(call["invoke_position"] // ROW_GROUP_ROWS != call["complete_position"] // ROW_GROUP_ROWS)
    starts = [0]
    for line in path.read_bytes().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    invoked, completed = int(call["invoke_position"]), int(call["complete_position"])
    return starts[invoked - 1] // TINY_SPLIT_BYTES != starts[completed - 1] // TINY_SPLIT_BYTES


def spark_calls(spark: Any, path: Path, fmt: str, uri: str | None = None) -> Any:
    return calls_frame(operations_frame(spark, uri or str(path), fmt, name=str(path)), str(path), 4)


@pytest.mark.parametrize(
    "published", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["generated", "published"]
)
def test_calls_equal_the_local_readers_with_tiny_splits(
    spark: Any, tiny_splits: None, tmp_path: Path, published: bool
) -> None:
    from pyspark.testing import assertDataFrameEqual

    for label, (path, fmt) in history_files(tmp_path, published).items():
        expected = expected_calls(path, fmt)
        if fmt != "parquet":
            assert path.stat().st_size > 2 * TINY_SPLIT_BYTES, label  # several splits
        actual = spark_calls(spark, path, fmt)
        assertDataFrameEqual(actual, spark.createDataFrame(expected, CALL_SCHEMA))
        assert any(crosses_a_split(path, fmt, row) for row in expected), label


def test_calls_decode_to_the_local_calls(spark: Any, tmp_path: Path) -> None:
    operations = kafka_operations()
    path = tmp_path / "kafka.jsonl"
    write_jsonl(path, operations)
    calls = [call_from_row(row.asDict()) for row in spark_calls(spark, path, "jsonl").collect()]
    assert sorted(calls, key=lambda call: call.invoke_index) == sorted(
        pair_calls(operations), key=lambda call: call.invoke_index
    )


def test_operations_equal_the_local_readers(spark: Any, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    path = write_edn(tmp_path / "kafka.edn", kafka_operations())
    expected = [operation_row(operation, at.line, None) for operation, at in operation_positions(path, "edn")]
    actual = operations_frame(spark, path.as_uri(), "edn", name=str(path))
    assertDataFrameEqual(actual, spark.createDataFrame(expected, OPERATION_SCHEMA))


def test_a_file_uri_is_read(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "kafka.jsonl"
    write_jsonl(path, kafka_operations())
    uri = path.as_uri()
    assert uri.startswith("file://")
    rows = spark_calls(spark, path, "jsonl", uri=uri).collect()
    assert by_invocation(row.asDict() for row in rows) == by_invocation(expected_calls(path, "jsonl"))


def test_missing_indexes_and_blank_lines_across_splits(spark: Any, tiny_splits: None, tmp_path: Path) -> None:
    """An operation without `index` takes its position among the file's operations."""
    lines = []
    for number, operation in enumerate(kafka_operations()):
        obj = {"process": operation.process, "type": operation.type.value, "f": operation.f}
        obj["value"] = operation.value
        lines.append(json.dumps(obj) + "\n" + ("\n  \t\u3000\n" if number % 7 == 0 else ""))
    path = tmp_path / "no-index.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    rows = spark_calls(spark, path, "jsonl").collect()
    assert by_invocation(row.asDict() for row in rows) == by_invocation(expected_calls(path, "jsonl"))
    indexes = sorted(operations_frame(spark, str(path), "jsonl").select("index").toPandas()["index"])
    assert indexes == list(range(len(lines)))


def by_invocation(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: int(row["invoke_index"]))


def spark_error(action: Any) -> str:
    with pytest.raises(Exception) as raised:
        action()
    text = history_error_text(raised.value)
    assert text is not None, str(raised.value)[:2000]
    return text


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
    spark: Any, tiny_splits: None, tmp_path: Path, fmt: str, bad: str
) -> None:
    operations = kafka_operations()
    clean = tmp_path / "clean.jsonl"
    if fmt == "edn":
        write_edn(clean, operations)
    else:
        write_jsonl(clean, operations)
    lines = clean.read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / f"spoiled.{fmt}"
    path.write_text("".join(spoil(lines, 150, bad)), encoding="utf-8")
    expected = local_error(path, fmt)
    assert f"{path}:151:" in expected
    assert spark_error(lambda: operations_frame(spark, str(path), fmt).collect()) == expected


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
    assert spark_error(lambda: operations_frame(spark, str(path), "parquet").collect()) == expected


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
    text = spark_error(lambda: spark_calls(spark, path, "jsonl").collect())
    assert text == f"{path}:{line}: {raised.value.message}"


def test_an_edn_op_map_over_several_lines_is_refused_clearly(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "pretty.edn"
    path.write_text(
        "[{:process 1, :type :invoke, :f :read, :value nil}\n"
        " {:process 1, :type :ok, :f :read,\n"
        "  :value 3}]\n",
        encoding="utf-8",
    )
    assert len(local_error_free(path)) == 2
    text = spark_error(lambda: operations_frame(spark, str(path), "edn").collect())
    assert text.startswith(f"{path}:") and "one op map per line" in text and "--engine local" in text


def local_error_free(path: Path) -> list[Operation]:
    return list(open_history(path, "edn")[1])


def test_edn_comments_brackets_discards_and_crlf_read_as_locally(spark: Any, tmp_path: Path) -> None:
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
    expected = [operation_row(operation, at.line, None) for operation, at in operation_positions(path, "edn")]
    assert [row["line"] for row in expected] == [3, 6, 7, 8]
    actual = [row.asDict() for row in operations_frame(spark, str(path), "edn").collect()]
    assert sorted(actual, key=lambda row: int(row["line"])) == expected
    calls = by_invocation(row.asDict() for row in spark_calls(spark, path, "edn").collect())
    assert calls == by_invocation(expected_calls(path, "edn"))
    assert [call["outcome"] for call in calls] == ["ok", "info"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_missing_file_is_named_as_the_local_reader_names_it(spark: Any, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"missing.{fmt}"
    with pytest.raises(HistoryError) as raised:
        operations_frame(spark, str(path), fmt)
    assert str(raised.value) == local_error(path, fmt)


def test_a_compressed_history_is_read_by_spark_alone(spark: Any, tmp_path: Path) -> None:
    """Spark's text source decompresses (one task per gzip file): the same calls as the plain file."""
    import gzip

    plain = tmp_path / "kafka.jsonl"
    write_jsonl(plain, kafka_operations())
    packed = tmp_path / "kafka.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    rows = calls_frame(operations_frame(spark, packed.as_uri(), "jsonl", name=str(plain)), str(plain), 4)
    assert by_invocation(row.asDict() for row in rows.collect()) == by_invocation(
        expected_calls(plain, "jsonl")
    )
