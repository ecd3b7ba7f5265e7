"""The same verification job on a real Spark standalone cluster: a master and two workers on
127.0.0.1, started from the pyspark distribution itself (`spark-class`), no network beyond
loopback."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import Verdict
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import write_jsonl

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("java") is None:
        pytest.skip("Java is not installed")
    pyspark = pytest.importorskip("pyspark")
    spark_home = Path(pyspark.__file__).parent
    spark_class = spark_home / "bin" / "spark-class"
    logs = tmp_path_factory.mktemp("standalone")
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false -Dspark.ui.enabled=false",
        "SPARK_WORKER_OPTS": "-Dspark.ui.enabled=false",
    }
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    processes = [
        subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env=env,
            stdout=(logs / "master.log").open("w"),
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        wait_for_port(port, 90)
        for number in range(2):
            processes.append(  # noqa: PERF401 (clearer as a loop: one worker, one log)
                subprocess.Popen(
                    [
                        str(spark_class),
                        "org.apache.spark.deploy.worker.Worker",
                        url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "1g",
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(logs / f"work-{number}"),
                    ],
                    env=env,
                    stdout=(logs / f"worker-{number}.log").open("w"),
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            registered = (logs / "master.log").read_text().count("Registering worker")
            if registered >= 2:
                break
            time.sleep(0.5)
        else:
            pytest.fail(
                "the two workers did not register with the master:\n" + (logs / "master.log").read_text()
            )
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.mark.spark
@pytest.mark.slow
def test_verify_runs_unchanged_on_a_standalone_cluster(standalone_master, tmp_path):
    history = tmp_path / "kafka.jsonl"
    write_jsonl(history, generate_history(2000, 4, seed=5, anomalies=["lost-write"]))
    etcd = HISTORIES / "porcupine/test_data/jepsen/etcd_000.log"
    local = [verify_history(path, VerifyOptions(engine="local")) for path in (history, etcd)]
    # The command users type, in its own process (this one may already hold a local session);
    # one history named by a file: URI, as a cluster's users name files.
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafkaspec.cli",
            "verify",
            f"file://{history}",
            str(etcd),
            "--engine",
            "spark",
            "--master",
            standalone_master,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr[-2000:]
    document = json.loads(completed.stdout)
    assert [entry["engine"] for entry in document["histories"]] == ["spark", "spark"]
    for entry, expected in zip(document["histories"], local, strict=True):
        assert entry["verdict"] == expected.verdict.value == Verdict.INVALID.value
        assert entry["operations"] == expected.operations
        assert [part["evidence"] for part in entry["failing"]] == [
            json.loads(json.dumps(result.evidence)) for result in expected.failing()
        ]
