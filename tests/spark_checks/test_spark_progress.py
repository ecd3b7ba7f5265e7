"""Progress from the first second with the Spark engine: `starting Spark` is said before the
JVM starts (`spark_session(progress=...)`), and `kafkaspec verify --engine spark` shows it on a
terminal's stderr, before Spark's own work; and nothing else of the JVM's start: not Java's
incubator-module warning, and for a JVM that cannot start, its own message and one line of ours."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from spark_checks.kafka_histories import generate_history
from spark_checks.readers import write_jsonl


def test_starting_spark_is_said_before_the_session_exists(monkeypatch: pytest.MonkeyPatch) -> None:
    pyspark_sql = pytest.importorskip("pyspark.sql")
    import pyspark

    from spark_checks.spark_session import spark_session

    heard: list[str] = []
    heard_while_starting: list[list[str]] = []
    configured: dict[str, str] = {}

    def slow_start(builder: Any) -> Any:
        heard_while_starting.append(list(heard))
        configured.update(builder._options)
        time.sleep(0.3)  # a JVM starting
        return SimpleNamespace(sparkContext=SimpleNamespace(setLogLevel=lambda _level: None))

    monkeypatch.setattr(pyspark.SparkContext, "_active_spark_context", None)  # no session in this process
    monkeypatch.setattr(pyspark.SparkContext, "_gateway", object())  # nor a JVM to start (`_start_jvm`)
    monkeypatch.setattr(pyspark_sql.SparkSession.Builder, "getOrCreate", slow_start)
    spark_session("local[1]", progress=heard.append, conf={"spark.hadoop.fs.s3a.endpoint": "http://x"})
    assert heard_while_starting == [["starting Spark (local[1])"]]
    assert len(heard) == 2
    assert re.fullmatch(r"Spark started in 0\.[3-9] s|Spark started in [1-9][0-9.]* s", heard[1])
    assert configured["spark.master"] == "local[1]"
    assert configured["spark.hadoop.fs.s3a.endpoint"] == "http://x"


@pytest.mark.spark
def test_a_running_session_is_reused_without_saying_it_starts(spark: Any) -> None:
    from spark_checks.spark_session import spark_session

    heard: list[str] = []
    assert spark_session(progress=heard.append) is spark
    assert heard == []


def read_terminal(fd: int, process: subprocess.Popen[str], seconds: float) -> list[tuple[float, str]]:
    """What the process writes to the terminal `fd`, in chunks with the second each arrived."""
    started = time.monotonic()
    chunks: list[tuple[float, str]] = []
    while time.monotonic() - started < seconds:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the process closed its side
                break
            if not data:
                break
            chunks.append((time.monotonic() - started, data.decode("utf-8", "replace")))
        elif process.poll() is not None:
            break
    return chunks


def _history_for_a_command(tmp_path: Path, calls: int) -> Path:
    """A small Kafka history for a `kafkaspec verify --engine spark` command of its own (a
    process that starts its own JVM); skips without Java or pyspark."""
    if shutil.which("java") is None:
        pytest.skip("Java is not installed")
    pytest.importorskip("pyspark")
    history = tmp_path / "kafka.jsonl"
    write_jsonl(history, generate_history(calls, 2, seed=3))
    return history


@pytest.mark.spark
@pytest.mark.slow
def test_verify_shows_starting_spark_on_a_terminal_before_sparks_work(tmp_path: Path) -> None:
    history = _history_for_a_command(tmp_path, 300)
    terminal, stderr = pty.openpty()
    # A command of its own: this process's shared session would be reused, not started.
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkaspec.cli", "verify", str(history), "--engine", "spark"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, "COLUMNS": "400", "TERM": "xterm"},
    )
    os.close(stderr)
    try:
        chunks = read_terminal(terminal, process, 300)
        out, _ = process.communicate(timeout=60)
    finally:
        os.close(terminal)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, out
    assert "VALID (kafka, jsonl, spark engine" in out
    shown = "".join(text for _, text in chunks)
    starting = shown.find("starting Spark (local[2])")
    started = shown.find("Spark started in")
    working = re.search(r"pairing|reading|checking|Spark tasks done", shown[max(started, 0) :])
    assert 0 <= starting < started, shown[-2000:]
    assert "incubator" not in shown  # Java's warning for Spark's --add-modules (`INCUBATOR_WARNING`)
    assert working is not None, shown[-2000:]
    # The JVM takes seconds to start: `starting Spark` was on the terminal all that while.
    said_at = next(at for at, _ in _cumulative(chunks) if "starting Spark (local[2])" in _)
    done_at = next(at for at, _ in _cumulative(chunks) if "Spark started in" in _)
    assert done_at - said_at >= 1.0


def _cumulative(chunks: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Each chunk's arrival second with all the text shown up to it."""
    text = ""
    out = []
    for at, chunk in chunks:
        text += chunk
        out.append((at, text))
    return out


def test_the_jvms_stderr_is_copied_without_the_incubator_warning() -> None:
    from spark_checks.spark_session import _copy_without_warning

    into, copied = os.pipe()
    out, shown = os.pipe()
    copier = threading.Thread(target=_copy_without_warning, args=(into, shown), daemon=True)
    copier.start()
    written = [
        b"\r- starting Spark",  # a spinner's partial line: shown as it comes
        b"WARN",  # maybe the warning: held until its line ends
        b"ING: Using incubator modules: jdk.incubator.vector\n12:00:01 ERROR Executor: lost\n",
        b"WARNING: something else",
    ]
    for chunk in written:
        os.write(copied, chunk)
        if chunk.startswith(b"\r"):
            assert os.read(out, 100) == chunk
    os.close(copied)
    copier.join(timeout=10)
    assert not copier.is_alive()  # the JVM's end closed: the copy ends
    os.close(shown)
    with os.fdopen(out, "rb") as rest:
        assert rest.read() == b"12:00:01 ERROR Executor: lost\nWARNING: something else"


@pytest.mark.spark
def test_a_jvm_that_cannot_start_is_a_usage_error_with_its_own_message(tmp_path: Path) -> None:
    history = _history_for_a_command(tmp_path, 20)
    refused = ["--engine", "spark", "--conf", "spark.driver.memory=12qq"]
    done = subprocess.run(
        [sys.executable, "-m", "kafkaspec.cli", "verify", str(history), *refused],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "Invalid maximum heap size: -Xmx12qq" in done.stderr  # the JVM's own message
    assert "kafkaspec: error: Spark did not start: its JVM exited" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
