"""Histories named by URI: `spark_checks.uris` and `kafkaspec verify` on `file:` URIs; a URI
only Spark reads refused by the local engine, and one Spark cannot read (no connector), each
with one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_checks.kafka_histories import generate_history
from spark_checks.readers import write_jsonl
from spark_checks.uris import (
    RemoteHistoryError,
    hadoop_version,
    history_argument,
    is_remote,
    scheme,
    spark_uri,
    unreadable_message,
)
from tests.helpers import run_cli

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
BAD_ANALYSIS = HISTORIES / "knossos/data/cas-register/bad/bad-analysis.edn"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("history.jsonl", None),
        ("/runs/history.jsonl", None),
        ("notes:1.jsonl", None),  # a colon in a file name is no scheme
        ("c:history.jsonl", None),
        ("file:///runs/h.jsonl", "file"),
        ("FILE:/runs/h.jsonl", "file"),
        ("hdfs://namenode:8020/runs/h.edn", "hdfs"),
        ("hdfs:/runs/h.edn", "hdfs"),  # Hadoop: the default namenode
        ("s3a://bucket/runs/h.parquet", "s3a"),
        ("abfss://container@account.dfs.core.windows.net/h.jsonl", "abfss"),
    ],
)
def test_a_uri_is_a_scheme_and_two_slashes_or_file(text: str, expected: str | None) -> None:
    assert scheme(text) == expected
    assert is_remote(text) == (expected not in (None, "file"))


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("file:///runs/h.jsonl", "/runs/h.jsonl"),
        ("file:/runs/h.jsonl", "/runs/h.jsonl"),
        ("file://localhost/runs/h.jsonl", "/runs/h.jsonl"),
        ("file:///runs/a b#1.jsonl", "/runs/a b#1.jsonl"),  # as Hadoop names it: no escapes
        ("/runs/h.jsonl", "/runs/h.jsonl"),
        ("h.jsonl", "h.jsonl"),
    ],
)
def test_a_file_uri_is_its_local_path_for_either_engine(text: str, path: str) -> None:
    assert history_argument(text, "local") == history_argument(text, "spark") == path


@pytest.mark.parametrize("text", ["file://nn.example/runs/h.jsonl", "file:runs/h.jsonl"])
def test_a_file_uri_of_another_host_or_a_relative_path_is_refused(text: str) -> None:
    with pytest.raises(RemoteHistoryError, match="file:"):
        history_argument(text, "spark")


def test_a_remote_uri_goes_to_spark_as_given_and_is_refused_by_the_local_engine() -> None:
    uri = "s3a://bucket/runs/history.edn"
    assert history_argument(uri, "spark") == history_argument(uri, "auto") == uri
    with pytest.raises(RemoteHistoryError, match=r"local engine .* s3a:// .* --engine spark"):
        history_argument(uri, "local")


def test_spark_reads_local_paths_as_absolute_file_uris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert spark_uri("h.jsonl") == f"file://{tmp_path}/h.jsonl"
    assert spark_uri("file:/runs/a b.jsonl") == "file:///runs/a b.jsonl"
    assert spark_uri("hdfs://nn/runs/h.jsonl") == "hdfs://nn/runs/h.jsonl"


def test_verify_takes_a_file_uri_where_it_takes_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    by_path = run_cli(capsys, "verify", str(BAD_ANALYSIS), "--engine", "local", "--json")
    by_uri = run_cli(capsys, "verify", f"file://{BAD_ANALYSIS}", "--engine", "local", "--json")
    assert by_path[0] == by_uri[0] == 1
    assert (
        json.loads(by_uri[1])["histories"][0]["failing"] == json.loads(by_path[1])["histories"][0]["failing"]
    )


def test_verify_takes_file_uris_of_a_directory_and_of_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_jsonl(tmp_path / "a.jsonl", generate_history(200, 2, seed=1))
    write_jsonl(tmp_path / "b.jsonl", generate_history(200, 2, seed=2, anomalies=["lost-write"]))
    code, out, _ = run_cli(capsys, "verify", f"file://{tmp_path}", "--engine", "local", "--json")
    assert code == 1
    document = json.loads(out)
    assert [entry["verdict"] for entry in document["histories"]] == ["valid", "invalid"]
    assert document["summary"]["histories"] == 2


@pytest.mark.parametrize("uri", ["hdfs://namenode:8020/runs/h.jsonl", "s3a://bucket/h.edn"])
def test_the_local_engine_refuses_a_remote_uri_in_one_line(
    capsys: pytest.CaptureFixture[str], uri: str
) -> None:
    code, out, err = run_cli(capsys, "verify", uri, "--engine", "local")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"kafkaspec: error: {uri}: the local engine reads local files only")
    assert "--engine spark" in err


def test_a_file_uri_naming_another_host_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "verify", "file://nn.example/runs/h.jsonl")
    assert code == 2
    assert "'nn.example' is another host" in err


def test_spark_conf_must_be_key_value(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "verify", str(BAD_ANALYSIS), "--conf", "spark.sql.shuffle.partitions")
    assert code == 2
    assert "expected KEY=VALUE" in err


S3A_MISSING = (
    "An error occurred while calling o46.text. : java.lang.RuntimeException: "
    "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found at "
    "org.apache.hadoop.conf.Configuration.getClass(Configuration.java:2724)"
)


def test_a_missing_connector_is_one_line_naming_what_to_add() -> None:
    message = unreadable_message("s3a://bucket/h.jsonl", S3A_MISSING, version="3.5.0")
    assert message == (
        "s3a://bucket/h.jsonl: Spark has no filesystem for s3a:// here (Class "
        "org.apache.hadoop.fs.s3a.S3AFileSystem not found); add its connector, e.g. "
        "--conf spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0 (README: Paths and URIs)"
    )
    gs = unreadable_message(
        "gs://b/h.edn", 'org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "gs"'
    )
    assert gs is not None
    assert "no filesystem for gs://" in gs
    assert "com.google.cloud.bigdataoss:gcs-connector:VERSION" in gs


def test_a_missing_path_is_no_such_file_and_other_failures_are_not_bad_input() -> None:
    text = "[PATH_NOT_FOUND] Path does not exist: hdfs://nn/runs/h.jsonl. SQLSTATE: 42K03"
    assert unreadable_message("hdfs://nn/runs/h.jsonl", text) == "hdfs://nn/runs/h.jsonl: no such file"
    assert unreadable_message("hdfs://nn/runs/h.jsonl", "java.lang.OutOfMemoryError: Java heap space") is None


def test_the_hadoop_version_is_the_one_pyspark_ships() -> None:
    pyspark = pytest.importorskip("pyspark")
    jars = Path(pyspark.__file__).parent / "jars"
    version = hadoop_version()
    assert version is not None
    assert (jars / f"hadoop-client-api-{version}.jar").is_file()


@pytest.mark.spark
def test_an_s3a_uri_without_the_connector_is_bad_input_in_one_line(
    spark: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    uri = "s3a://kafkaspec-test-bucket/runs/history.jsonl"
    code, out, err = run_cli(capsys, "verify", uri, "--engine", "spark", "--format", "jsonl")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(f"kafkaspec: error: {uri}: Spark has no filesystem for s3a:// here")
    assert f"org.apache.hadoop:hadoop-aws:{hadoop_version()}" in err
    # Among many files, the same line, and the others are verified.
    history = tmp_path / "h.jsonl"
    write_jsonl(history, generate_history(200, 2, seed=1))
    code, out, err = run_cli(capsys, "verify", uri, str(history), "--engine", "spark", "--format", "jsonl")
    assert code == 2
    assert err.startswith(f"kafkaspec: error: {uri}: Spark has no filesystem for s3a:// here")
    assert f"{history}: VALID" in out
