"""Jepsen EDN and Parquet histories through the Spark engine give what the local engine gives,
and what the same history in JSON Lines gives: verdicts, evidence, sentences and counts, as
`kafkaspec verify --json` prints them. Also with splits of 2 KB (Spark's
`spark.sql.files.maxPartitionBytes`, Parquet row groups of 16 rows), so invocations and
completions fall in different splits. Written against the command's output only, so it holds
whatever the engine's insides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, write_edn, write_jsonl, write_parquet
from tests.helpers import run_cli

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
TINY_SPLIT_BYTES = 2048
ROW_GROUP_ROWS = 16
KAFKA_ANOMALIES = ["lost-write", "duplicate", "poll-skip", "nonmonotonic-poll", "inconsistent-offsets"]
JEPSEN_SHAPE = {
    "producers": 5,
    "consumers": 5,
    "max_batch": 50,
    "final_polls": "from-start",
    "final_batch": None,
}
"""Jepsen's Kafka workload in small: many records per poll, final polls from offset 0."""


def small_row_groups(path: Path) -> Path:
    """The Parquet file again, in row groups of `ROW_GROUP_ROWS` rows (Spark splits by row group)."""
    table = pq.read_table(path)
    out = path.with_name(path.stem + "-small-groups.parquet")
    pq.write_table(table, out, row_group_size=ROW_GROUP_ROWS, compression="none")
    return out


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """Each history in JSON Lines, EDN and Parquet (and Parquet in tiny row groups)."""
    folder = tmp_path_factory.mktemp("formats")
    sources = {
        "kafka": list(generate_history(500, 4, seed=21, anomalies=KAFKA_ANOMALIES)),
        "jepsen-shaped": list(generate_history(400, 3, seed=22, anomalies=["lost-write"], **JEPSEN_SHAPE)),
    }
    files: dict[str, dict[str, Path]] = {}
    for name, operations in sources.items():
        jsonl = folder / f"{name}.jsonl"
        write_jsonl(jsonl, operations)
        parquet = folder / f"{name}.parquet"
        write_parquet(parquet, operations)
        edn = folder / f"{name}.edn"
        write_edn(edn, operations)
        files[name] = {
            "jsonl": jsonl,
            "edn": edn,
            "parquet": parquet,
            "parquet-row-groups": small_row_groups(parquet),
        }
    return files


@pytest.fixture
def tiny_splits(spark: Any) -> Iterator[list[str]]:
    """`--conf` arguments that make Spark read the files in 2 KB splits; the shared session's
    setting is put back after the test."""
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key, None)
    yield ["--conf", f"{key}={TINY_SPLIT_BYTES}"]
    if before is None:
        spark.conf.unset(key)
    else:
        spark.conf.set(key, before)


def verified(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> dict[str, Any]:
    """`kafkaspec verify PATH FLAGS --json`: the history's entry and its sentences."""
    code, out, err = run_cli(capsys, "verify", str(path), "--json", *flags)
    assert code in (0, 1), err
    document = json.loads(out)
    (entry,) = document["histories"]
    assert code == (1 if entry["verdict"] == "invalid" else 0)
    return {
        "engine": entry["engine"],
        "format": entry["format"],
        "conventions": entry["conventions"],
        "outcome": comparable(entry, document["explanations"]),
    }


def comparable(entry: dict[str, Any], explanations: list[dict[str, Any]]) -> dict[str, Any]:
    """What must not depend on the engine, the format or the splits: not the path, not times."""
    return {
        "verdict": entry["verdict"],
        "operations": entry["operations"],
        "calls": entry["calls"],
        "parts": entry["parts"],
        "failing": [{k: v for k, v in part.items() if k != "seconds"} for part in entry["failing"]],
        "explanations": [{k: v for k, v in each.items() if k != "path"} for each in explanations],
    }


@pytest.mark.spark
@pytest.mark.parametrize("name", ["kafka", "jepsen-shaped"])
@pytest.mark.parametrize("fmt", ["edn", "parquet"])
def test_edn_and_parquet_on_spark_give_what_the_local_engine_gives(
    spark: Any, capsys: pytest.CaptureFixture[str], histories: dict[str, dict[str, Path]], name: str, fmt: str
) -> None:
    path = histories[name][fmt]
    local = verified(capsys, path, "--engine", "local")
    on_spark = verified(capsys, path, "--engine", "spark")
    assert (local["engine"], on_spark["engine"]) == ("local", "spark")
    assert local["format"] == on_spark["format"] == fmt
    assert on_spark["conventions"] == local["conventions"]
    assert on_spark["outcome"] == local["outcome"]
    assert local["outcome"]["verdict"] == "invalid"  # the injected anomalies are found
    # The same history in JSON Lines: the format changes nothing either.
    assert verified(capsys, histories[name]["jsonl"], "--engine", "local")["outcome"] == local["outcome"]


@pytest.mark.spark
@pytest.mark.parametrize("name", ["kafka", "jepsen-shaped"])
@pytest.mark.parametrize("fmt", ["jsonl", "edn", "parquet-row-groups"])
def test_tiny_splits_change_nothing(
    spark: Any,
    capsys: pytest.CaptureFixture[str],
    histories: dict[str, dict[str, Path]],
    tiny_splits: list[str],
    name: str,
    fmt: str,
) -> None:
    path = histories[name][fmt]
    if fmt == "parquet-row-groups":
        assert pq.ParquetFile(path).num_row_groups > 20
    else:  # the setting does make Spark read many splits of this file
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(TINY_SPLIT_BYTES))
        assert spark.read.text(str(path)).rdd.getNumPartitions() >= path.stat().st_size // TINY_SPLIT_BYTES
    local = verified(capsys, path, "--engine", "local")
    on_spark = verified(capsys, path, "--engine", "spark", *tiny_splits)
    assert on_spark["outcome"] == local["outcome"]
    assert on_spark["conventions"] == local["conventions"]


@pytest.mark.spark
def test_a_knossos_edn_register_history_on_spark_gives_the_local_verdict(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    edn = HISTORIES / "knossos/data/cas-register/bad/bad-analysis.edn"
    parquet = tmp_path / "bad-analysis.parquet"
    info, operations = open_history(edn)
    write_parquet(parquet, operations, conventions=info.conventions)
    for path in (edn, parquet):
        local = verified(capsys, path, "--engine", "local")
        on_spark = verified(capsys, path, "--engine", "spark")
        assert on_spark["outcome"] == local["outcome"]
        assert on_spark["conventions"] == local["conventions"]
        assert local["outcome"]["verdict"] == "invalid"
