"""Reading and pairing a history on Spark, stage by stage: where the Spark engine's time goes.

Usage: python -m bench.spark_read [--operations 1000000] [--keys 1000] [--folder DIR] [--master URL]
                                 [--runs 2] [--formats jsonl,edn,parquet]

Generates a Kafka history (`kafka_histories.generate_history`, kept in `--folder` and reused)
as JSON Lines, Jepsen EDN (one op map per line) and Parquet, then times, side by side in one
SparkSession, each job run to the end (wall seconds, and CPU seconds of this process and every
process below it: the JVM, Spark's Python workers; `bench.verify_scale.tree_cpu_seconds`):

* `stage 1`: the engine's stage 1 and border pairing (`spark_read.stage1_frame`,
  `border_frame`), every row produced (`write.format("noop")`): reading, pairing within each
  split, splitting into parts;
* `verify`: the whole Spark engine, `verify_history(..., engine="spark")`;
* `counting`: the JVM-only job that gives each split's first line (`count_starts`), which the
  engine runs only for histories without indexes or to name a bad line;
* Spark's own JSON reader with the lines' schema on the JSON Lines file (the floor of any job
  that looks inside every line).

Each figure is the fastest of `--runs` runs.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.verify_scale import tree_cpu_seconds
from spark_checks import spark_read
from spark_checks.checking import Plan
from spark_checks.engine import RANGE_BYTES, VerifyOptions, verify_history
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, write_edn, write_jsonl, write_parquet
from spark_checks.spark_session import spark_session

LINE_SCHEMA = "index long, time long, process string, type string, f string, value array<array<string>>"


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
        write_edn(files["edn"], open_history(files["jsonl"], "jsonl")[1])
    if not files["parquet"].exists():
        write_parquet(files["parquet"], open_history(files["jsonl"], "jsonl")[1])
    return files


def fastest(runs: int, action: Callable[[], object]) -> tuple[float, float]:
    """The fastest of `runs` runs: (wall seconds, CPU seconds of the process tree)."""
    best = (math.inf, math.inf)
    for _ in range(runs):
        started, cpu = time.perf_counter(), tree_cpu_seconds()
        action()
        best = min(best, (time.perf_counter() - started, tree_cpu_seconds() - cpu))
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
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(RANGE_BYTES))  # as the engine reads
    spark.range(10).count()
    plan = Plan("kafka")

    def stage1(fmt: str) -> None:
        uri = "file://" + str(files[fmt].absolute())
        frame: Any = spark_read.stage1_frame(spark, uri, fmt, plan, str(files[fmt]), None)
        frame = frame.persist()
        frame.write.format("noop").mode("overwrite").save()
        spark_read.border_frame(frame, plan, str(files[fmt]), 2).write.format("noop").mode("overwrite").save()
        frame.unpersist()

    def verify(fmt: str) -> None:
        verify_history(files[fmt], VerifyOptions(engine="spark"), spark=spark)

    def count_job(fmt: str) -> None:
        spark_read.count_starts(spark, "file://" + str(files[fmt].absolute()), fmt)

    def json_floor() -> None:
        parsed = spark.read.schema(LINE_SCHEMA).json(str(files["jsonl"]))
        parsed.selectExpr("count(*)", "sum(size(value))", "count(distinct type, f, process)").first()

    stage1("jsonl")  # Python workers started and warm
    size = files["jsonl"].stat().st_size / 1e6
    print(
        f"{arguments.operations:,} operations, {arguments.keys} keys ({size:.0f} MB as JSON Lines); "
        f"wall / CPU seconds, best of {arguments.runs}; load {os.getloadavg()[0]:.1f}"
    )
    wall, cpu = fastest(arguments.runs, json_floor)
    print(f"Spark's JSON reader on the JSON Lines file (floor): {wall:.1f} / {cpu:.1f}")
    print(f"{'format':8} {'stage 1':>13} {'verify':>13} {'counting':>13}")
    for fmt in arguments.formats.split(","):
        first = fastest(arguments.runs, partial(stage1, fmt))
        whole = fastest(arguments.runs, partial(verify, fmt))
        counting = fastest(arguments.runs, partial(count_job, fmt)) if fmt != "parquet" else (0.0, 0.0)
        print(
            f"{fmt:8} " + " ".join(f"{w:6.1f} /{c:5.1f}" for w, c in (first, whole, counting)),
            f"(load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()
