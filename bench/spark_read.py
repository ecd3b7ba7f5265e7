"""Reading and pairing a history with Spark: `spark_read`'s transforms against today's stage 1.

Usage: python -m bench.spark_read [--operations 1000000] [--keys 1000] [--folder DIR] [--master URL]
                                 [--runs 2] [--formats jsonl,edn,parquet]

Generates a Kafka history (`kafka_histories.generate_history`, kept in `--folder` and reused)
as JSON Lines, Jepsen EDN (one op map per line) and Parquet, then times, side by side in one
SparkSession, every job run to the end (`write.format("noop")` or a count in the tasks):

* `spark_read`: `operations_frame` (its counting job included) + `calls_frame`, every call
  column produced, in each format; `(parse)`: `operations_frame` alone, every operation made;
* today's stage 1: the Spark engine's read and pairing of JSON Lines byte ranges
  (`distributed.range_calls` over `distributed.byte_ranges`, the ranges it uses), and for EDN
  and Parquet the driver's conversion to JSON Lines that comes first (`readers.write_jsonl`);
* the counting job alone, and Spark's own JSON reader with the lines' schema (the floor of any
  job that looks inside every line).

Each figure is the fastest of `--runs` runs.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from spark_checks import distributed
from spark_checks.engine import RANGE_BYTES
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, write_jsonl, write_parquet
from spark_checks.spark_read import calls_frame, operations_frame
from spark_checks.spark_session import spark_session

LINE_SCHEMA = "index long, time long, process string, type string, f string, value array<array<string>>"


def edn_text(value: Any) -> str:
    """A JSON-like value as EDN."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(edn_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn_text(k)} {edn_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def write_edn(path: Path, jsonl: Path) -> None:
    """The JSON Lines history as Jepsen writes history.edn: one op map per line."""
    _, operations = open_history(jsonl, "jsonl")
    with open(path, "w", encoding="utf-8") as handle:
        for op in operations:
            process = f":{op.process}" if isinstance(op.process, str) else str(op.process)
            time_field = "" if op.time is None else f", :time {op.time}"
            handle.write(
                f"{{:index {op.index}{time_field}, :type :{op.type.value}, :process {process}, "
                f":f :{op.f}, :value {edn_text(op.value)}}}\n"
            )


def histories(folder: Path, operations: int, keys: int) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"kafka-{operations}-ops-{keys}-keys"
    files = {
        "jsonl": stem.with_suffix(".jsonl"),
        "edn": stem.with_suffix(".edn"),
        "parquet": stem.with_suffix(".parquet"),
    }
    if not files["jsonl"].exists():
        write_jsonl(
            files["jsonl"], generate_history(operations // 2, keys, seed=operations, anomalies=["lost-write"])
        )
    if not files["edn"].exists():
        write_edn(files["edn"], files["jsonl"])
    if not files["parquet"].exists():
        write_parquet(files["parquet"], open_history(files["jsonl"], "jsonl")[1])
    return files


def fastest(runs: int, action: Callable[[], object]) -> float:
    best = math.inf
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operations", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/kafkaspec-bench"))
    parser.add_argument("--master", default=None)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--formats", default="jsonl,edn,parquet")
    arguments = parser.parse_args()
    files = histories(arguments.folder, arguments.operations, arguments.keys)
    spark = spark_session(arguments.master, history_bytes=files["jsonl"].stat().st_size)
    spark.range(10).count()

    def new_read(fmt: str) -> None:
        path = str(files[fmt])
        calls_frame(operations_frame(spark, path, fmt), path).write.format("noop").mode("overwrite").save()

    def parse_only(fmt: str) -> None:
        path = str(files[fmt])
        operations_frame(spark, path, fmt).write.format("noop").mode("overwrite").save()

    def count_job(fmt: str) -> None:
        operations_frame(spark, str(files[fmt]), fmt)  # runs the counting job only

    def today(fmt: str) -> None:
        with tempfile.TemporaryDirectory(prefix="kafkaspec-bench-") as folder:
            lines = files["jsonl"]
            if fmt != "jsonl":  # the driver converts first, as `engine.verify_spark` does
                lines = Path(folder) / "history.jsonl"
                write_jsonl(lines, open_history(files[fmt], fmt)[1])
            size = lines.stat().st_size
            cores = spark.sparkContext.defaultParallelism
            ranges = distributed.byte_ranges(size, max(cores, math.ceil(size / RANGE_BYTES)))
            path, source = str(lines), str(files[fmt])

            def count_calls(bounds: Iterable[tuple[int, int]]) -> Iterator[int]:
                for start, end in bounds:
                    border = distributed.RangeBorder()
                    yield sum(1 for _ in distributed.range_calls(path, start, end, source, border))

            spark.sparkContext.parallelize(ranges, len(ranges)).mapPartitions(count_calls).sum()

    def json_floor() -> None:
        parsed = spark.read.schema(LINE_SCHEMA).json(str(files["jsonl"]))
        parsed.selectExpr("count(*)", "sum(size(value))", "count(distinct type, f, process)").first()

    new_read("jsonl")  # Python workers started and warm
    size = files["jsonl"].stat().st_size / 1e6
    print(
        f"{arguments.operations:,} operations, {arguments.keys} keys ({size:.0f} MB as JSON Lines); "
        f"seconds, best of {arguments.runs}"
    )
    print(f"Spark's JSON reader on the JSON Lines file (floor): {fastest(arguments.runs, json_floor):.1f}")
    print(f"{'format':8} {'spark_read':>11} {'(parse)':>8} {'(counting)':>11} {'today':>8}")
    for fmt in arguments.formats.split(","):
        new = fastest(arguments.runs, partial(new_read, fmt))
        parse = fastest(arguments.runs, partial(parse_only, fmt))
        counting = fastest(arguments.runs, partial(count_job, fmt)) if fmt != "parquet" else 0.0
        old = fastest(arguments.runs, partial(today, fmt))
        print(f"{fmt:8} {new:11.1f} {parse:8.1f} {counting:11.1f} {old:8.1f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
