"""The Spark session's JVM options (`spark_checks.spark_session`) and how `bench.verify_scale`
counts the JVM's CPU seconds by kind of thread (HotSpot's compiler threads come and go)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from typing import Any

import pytest

from bench.verify_scale import ENDED_THREADS, jvm_cpu_by_thread, jvm_threads, stage_timeline
from spark_checks.spark_session import LOCAL_GC, LOCAL_JIT, LONG_JOB_BYTES, driver_java_options


def test_only_a_local_jvm_that_compiles_fully_gets_the_c2_counts() -> None:
    long_local = driver_java_options(LONG_JOB_BYTES, local=True).split()
    assert set(LOCAL_JIT.split()) <= set(long_local)
    assert "-XX:TieredStopAtLevel=1" not in long_local
    assert LOCAL_GC in long_local
    for options in (driver_java_options(LONG_JOB_BYTES), driver_java_options(LONG_JOB_BYTES - 1, local=True)):
        assert not set(LOCAL_JIT.split()) & set(options.split())


def test_the_c2_counts_are_hotspot_options_raised_above_its_defaults() -> None:
    defaults = {
        "Tier4InvocationThreshold": 5000,
        "Tier4MinInvocationThreshold": 600,
        "Tier4CompileThreshold": 15000,
        "Tier4BackEdgeThreshold": 40000,
    }
    raised = dict(option.removeprefix("-XX:").split("=") for option in LOCAL_JIT.split())
    assert raised.keys() == defaults.keys()
    assert all(int(raised[name]) > default for name, default in defaults.items())


def test_a_thread_that_ended_keeps_its_last_sample_and_the_rest_is_counted_apart() -> None:
    # Thread 11, a compiler, ended after its last sample (3.0 s): the JVM's own count (which
    # keeps ended threads' time) has 0.5 s that no thread holds.
    before = {10: ("tasks", 1.0), 11: ("JIT C2", 2.0), 12: ("GC", 0.5)}
    last = {10: ("tasks", 4.0), 11: ("JIT C2", 3.0), 12: ("GC", 0.5), 13: ("JIT C2", 0.25)}
    spent = jvm_cpu_by_thread(before, last, jvm_seconds=5.0)
    assert spent == {"tasks": 3.0, "JIT C2": 1.25, "GC": 0.0, ENDED_THREADS: 0.75}
    assert all(seconds >= 0 for seconds in spent.values())


def test_nothing_is_counted_apart_when_the_threads_hold_the_jvm_time() -> None:
    before = {10: ("tasks", 1.0)}
    last = {10: ("tasks", 2.0), 11: ("other", 0.5)}
    assert jvm_cpu_by_thread(before, last, jvm_seconds=1.5) == {"tasks": 1.0, "other": 0.5}


def test_the_threads_of_a_live_process_are_read_by_id() -> None:
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    try:
        threads = jvm_threads(os.getpid())
        assert os.getpid() in threads  # the main thread's id is the process's
        assert worker.native_id in threads
        assert all(seconds >= 0 for _, seconds in threads.values())
        assert threads[os.getpid()][0] == "other"  # not a JVM thread name
    finally:
        done.set()
        worker.join()
    assert jvm_threads(None) == {}


def test_the_jvm_accepts_the_options_of_a_long_local_job() -> None:
    # A misspelt -XX option stops the JVM from starting, and only 512 MB histories would meet it.
    java = shutil.which("java")
    if java is None:
        pytest.skip("Java is not installed")
    options = driver_java_options(LONG_JOB_BYTES, local=True).split()
    ran = subprocess.run(
        [java, *options, "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr


def test_the_timeline_gives_a_stages_task_cpu_and_its_deserializing_apart() -> None:
    # Spark's event log, as `spark.eventLog.enabled` writes it: one stage of two tasks, 1.5 s of
    # task CPU and 0.3 s deserializing their closures (nanoseconds), from 1 s to 5 s of a 10 s run.
    def task(launch: int, finish: int, cpu: float, deserialize: float) -> dict[str, Any]:
        metrics = {
            "Executor CPU Time": int(cpu * 1e9),
            "Executor Deserialize CPU Time": int(deserialize * 1e9),
            "Shuffle Write Metrics": {"Shuffle Bytes Written": 2_000_000},
        }
        return {
            "Event": "SparkListenerTaskEnd",
            "Stage ID": 3,
            "Stage Attempt ID": 0,
            "Task Info": {"Launch Time": launch, "Finish Time": finish},
            "Task Metrics": metrics,
        }

    info = {
        "Stage ID": 3,
        "Stage Attempt ID": 0,
        "Submission Time": 1_000,
        "Completion Time": 5_000,
        "Stage Name": "collect at /x/spark_checks/engine.py:626",
    }
    events: list[dict[str, Any]] = [
        {"Event": "SparkListenerStageCompleted", "Stage Info": info},
        task(1_000, 3_000, 1.0, 0.2),
        task(1_000, 5_000, 0.5, 0.1),
    ]
    stage, busy = stage_timeline(events, started=0.0, ended=10.0)
    assert "2 tasks" in stage and "6.0 s in tasks (longest 4.0)" in stage
    assert "JVM   1.5 CPU-s (+0.3 deserializing)" in stage
    assert "shuffled    4.0 MB; collect at engine.py:626" in stage
    assert busy.endswith("a digit per 0.5 s): 00222211110000000000")
