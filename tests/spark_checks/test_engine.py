"""Both engines give identical verdicts and evidence; the reports and the `verify` command."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.history import HistoryError, Verdict
from spark_checks.kafka_histories import KafkaHistoryBuilder, generate_history
from spark_checks.readers import write_jsonl, write_parquet
from spark_checks.report import evidence_indices, html_report, text_summary
from tests.helpers import run_cli

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
KNOWN = [
    HISTORIES / "knossos/data/cas-register/bad/bad-analysis.edn",
    HISTORIES / "knossos/data/cas-register/good/memstress3-20.edn",
    HISTORIES / "knossos/data/multi-register/good/multi-register.edn",
    HISTORIES / "porcupine/test_data/jepsen/etcd_000.log",
    HISTORIES / "porcupine/test_data/jepsen/etcd_040.log",
    HISTORIES / "porcupine/test_data/kv/c10-ok.txt",
    HISTORIES / "porcupine/test_data/kv/c10-bad.txt",
]


def comparable(report: HistoryReport) -> list[dict[str, Any]]:
    """Everything of a report that must not depend on the engine (not timings)."""
    return [
        {
            "part": result.partition,
            "verdict": result.verdict,
            "operations": result.operations,
            "evidence": {k: v for k, v in result.evidence.items() if k not in {"seconds"}},
            "conventions": result.conventions,
        }
        for result in report.results
    ]


@pytest.fixture(scope="module")
def kafka_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("kafka")
    files = {
        "valid": folder / "valid.jsonl",
        "anomalies": folder / "anomalies.jsonl",
        "parquet": folder / "anomalies.parquet",
        "txn": folder / "txn.jsonl",
    }
    write_jsonl(files["valid"], generate_history(3000, 6, seed=11))
    injected = ["lost-write", "duplicate", "poll-skip", "nonmonotonic-poll", "inconsistent-offsets"]
    write_jsonl(files["anomalies"], generate_history(3000, 6, seed=12, anomalies=injected))
    write_parquet(files["parquet"], generate_history(3000, 6, seed=12, anomalies=injected))
    builder = KafkaHistoryBuilder()
    builder.invoke(1, "txn", [["send", "x", 1], ["poll"]])
    builder.invoke(2, "txn", [["send", "y", 2], ["poll"]])
    builder.complete(1, "ok", [["send", "x", [0, 1]], ["poll", {"y": [[0, 2]]}]])
    builder.complete(2, "ok", [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    write_jsonl(files["txn"], builder.operations)
    return files


def test_local_engine_on_generated_kafka_histories(kafka_files):
    valid = verify_history(kafka_files["valid"], VerifyOptions(engine="local"))
    assert valid.model == "kafka"
    assert valid.verdict is Verdict.VALID
    broken = verify_history(kafka_files["anomalies"], VerifyOptions(engine="local"))
    assert broken.verdict is Verdict.INVALID
    found = set().union(*(r.evidence.get("anomaly_counts", {}).keys() for r in broken.results))
    assert {"lost-write", "duplicate", "poll-skip", "nonmonotonic-poll", "inconsistent-offsets"} <= found


def test_a_report_counts_the_history_not_the_parts(tmp_path, kafka_files):
    # Every part of a Kafka history sees every assign call, and a poll of several keys is a
    # piece in each of their parts: the history's size is counted from its lines.
    path = kafka_files["valid"]
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    invocations = sum(json.loads(line)["type"] == "invoke" for line in lines)
    report = verify_history(path, VerifyOptions(engine="local"))
    assert (report.operations, report.calls) == (len(lines), invocations)
    nemesis = tmp_path / "nemesis.jsonl"
    kill = '{"index": 9999, "process": "nemesis", "type": "info", "f": "kill"}'
    nemesis.write_text("\n".join([*lines[:4], kill, ""]))
    small = verify_history(nemesis, VerifyOptions(engine="local"))
    started = sum(json.loads(line)["type"] == "invoke" for line in lines[:4])
    assert (small.operations, small.calls) == (5, started)
    summary = "\n".join(text_summary([small]))
    assert f"5 operations ({small.calls} calls) in {len(small.results)} part" in summary


def test_cross_key_cycles_are_found_by_the_cycle_part(kafka_files):
    report = verify_history(kafka_files["txn"], VerifyOptions(engine="local"))
    assert report.verdict is Verdict.INVALID
    cycles = [r for r in report.results if r.partition == "cross-key cycles"]
    assert len(cycles) == 1
    assert "G1c" in cycles[0].evidence["anomalies"]
    assert all(r.verdict is Verdict.VALID for r in report.results if r is not cycles[0])


@pytest.mark.spark
@pytest.mark.slow
def test_spark_and_local_engines_agree(spark, kafka_files):
    paths = [
        *KNOWN,
        kafka_files["valid"],
        kafka_files["anomalies"],
        kafka_files["parquet"],
        kafka_files["txn"],
    ]
    for path in paths:
        local = verify_history(path, VerifyOptions(engine="local"), general=True)
        distributed = verify_history(path, VerifyOptions(engine="spark"), spark=spark)
        here = verify_history(path, VerifyOptions(engine="local"))  # the stages, for JSON Lines
        assert comparable(here) == comparable(local), path
        assert (here.operations, here.calls) == (local.operations, local.calls), path
        assert distributed.engine == "spark"
        assert (local.model, local.verdict, local.operations, local.calls) == (
            distributed.model,
            distributed.verdict,
            distributed.operations,
            distributed.calls,
        ), path
        assert comparable(local) == comparable(distributed), path
        if path.suffix == ".jsonl":  # many byte ranges and targets: calls cross range borders
            small = VerifyOptions(engine="spark", spark_range_bytes=4096)
            ranged = verify_history(path, small, spark=spark)
            assert comparable(local) == comparable(ranged), path
            assert (ranged.operations, ranged.calls) == (local.operations, local.calls), path


@pytest.mark.spark
def test_spark_engine_reports_malformed_input_with_its_line(spark, tmp_path):
    path = tmp_path / "broken.jsonl"
    lines = [
        '{"index": 0, "process": 0, "type": "invoke", "f": "write", "value": 1}',
        '{"index": 1, "process": 0, "type": "ok", "f": "write", "value": 1}',
        '{"index": 2, "process": 0, "type": "invoke", "f": "read"',
    ]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(Exception, match=r"broken\.jsonl:3"):
        verify_history(path, VerifyOptions(engine="spark"), spark=spark)


def test_evidence_indices_name_operations_not_offsets():
    evidence = {
        "unlinearizable": [12, 13],
        "longest_linearizable_prefix": [0, 3],
        "anomalies": {"lost-write": [{"key": "7", "offset": 99, "value": 5, "op": {"invoke_index": 4}}]},
    }
    assert evidence_indices(evidence) == {12, 13, 4}


def test_verify_exit_codes_and_json(capsys, kafka_files):
    code, out, _ = run_cli(capsys, "verify", str(KNOWN[0]), "--engine", "local", "--json")
    assert code == 1
    document = json.loads(out)
    (history,) = document["histories"]
    assert history["verdict"] == "invalid"
    assert history["conventions"]["initial"] == 0  # the Knossos convention, stated in the report
    assert history["failing"][0]["evidence"]["unlinearizable"]

    code, out, _ = run_cli(capsys, "verify", str(KNOWN[1]), str(kafka_files["valid"]), "--engine", "local")
    assert code == 0
    assert "VALID" in out


def test_verify_unknown_when_the_budget_runs_out(capsys):
    hard = HISTORIES / "porcupine/test_data/kv/c50-bad.txt"
    code, out, _ = run_cli(
        capsys, "verify", str(hard), "--engine", "local", "--max-seconds", "0.01", "--json"
    )
    document = json.loads(out)
    assert code in {1, 3}
    verdicts = {part["verdict"] for part in document["histories"][0]["failing"]}
    assert "unknown" in verdicts or document["verdict"] == "invalid"


def test_verify_conventions_flags_change_the_verdict(capsys):
    # etcd_000 is not linearizable under its own conventions; the flags are applied and reported.
    etcd = str(KNOWN[3])
    code, out, _ = run_cli(
        capsys, "verify", etcd, "--engine", "local", "--json", "--failed-cas", "did-not-happen"
    )
    conventions = json.loads(out)["histories"][0]["conventions"]
    assert conventions["failed_cas"] == "did-not-happen"
    assert code in {0, 1}


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["verify", "/no/such/file.jsonl"], "no such file"),
        (["verify", "x.jsonl", "--engine", "warp"], "--engine"),
        (["verify", "x.jsonl", "--initial", "{bad"], "--initial must be a JSON literal"),
        (["verify", "x.jsonl", "--model", "queue"], "--model"),
    ],
)
def test_verify_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and fragment in err
    assert "Traceback" not in err


def test_verify_malformed_history_names_file_and_line(capsys, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"index": 0, "process": 0, "type": "invoke", "f": "read"}\n{"index": 1, "process": 0, "typ'
    )
    code, _, err = run_cli(capsys, "verify", str(path), "--engine", "local")
    assert code == 2
    assert f"{path}:2" in err


def test_report_is_never_overwritten(capsys, tmp_path):
    existing = tmp_path / "report.html"
    existing.write_text("mine")
    code, _, err = run_cli(capsys, "verify", str(KNOWN[0]), "--report", str(existing))
    assert code == 2
    assert "already exists" in err
    assert existing.read_text() == "mine"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_html_report_renders_in_headless_chromium(capsys, tmp_path, kafka_files):
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (.ci/run installs Debian's chromium)")
    page = tmp_path / "report.html"
    code, out, _ = run_cli(
        capsys,
        "verify",
        str(KNOWN[0]),
        str(kafka_files["anomalies"]),
        "--engine",
        "local",
        "--report",
        str(page),
    )
    assert code == 1
    assert "report:" in out
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # self-contained
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    assert 'data-rendered="yes"' in dom  # the inline script ran to the end without an error
    assert dom.count('data-timeline="yes"') >= 2  # a timeline per failing part, one history each at least
    assert 'class="op ok bad"' in dom or "op ok bad" in dom  # the evidence is highlighted


def test_html_report_from_results_alone():
    report = verify_history(KNOWN[0], VerifyOptions(engine="local"), keep_history=True)
    assert report.history is not None
    page = html_report([report], [report.history])
    assert "INVALID" in page and "unlinearizable" in page


@pytest.mark.parametrize("broken", ["truncated", "not a send"])
def test_spark_engine_malformed_kafka_line_is_exit_2_with_file_and_line(spark, capsys, tmp_path, broken):
    # A bad line among calls that take stage 1's fast path (per-key pieces packed per range).
    path = tmp_path / "kafka.jsonl"
    write_jsonl(path, generate_history(400, 4, seed=5))
    lines = path.read_text().splitlines()
    number = 501  # 1-based
    if broken == "truncated":
        lines[number - 1] = lines[number - 1][:-7]
    else:
        lines[number - 1] = json.dumps({"index": number - 1, "process": 0, "type": "bogus", "f": "send"})
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(capsys, "verify", str(path), "--engine", "spark")
    assert code == 2
    assert f"{path}:{number}" in err


def test_the_jvm_compiles_fully_only_for_long_jobs() -> None:
    from spark_checks.spark_session import LONG_JOB_BYTES, driver_java_options

    quick = "-XX:TieredStopAtLevel=1"
    assert quick in driver_java_options(0)
    assert quick in driver_java_options(LONG_JOB_BYTES - 1)
    assert quick not in driver_java_options(LONG_JOB_BYTES)
    for size in (0, LONG_JOB_BYTES):
        assert "-Dlog4j2.configurationFile=file:" in driver_java_options(size)


def test_only_a_local_driver_gets_the_parallel_collector() -> None:
    # The local-mode JVM runs every task; a cluster's driver keeps the JVM's default collector.
    from spark_checks.spark_session import LOCAL_GC, driver_java_options

    assert LOCAL_GC in driver_java_options(0, local=True).split()
    assert LOCAL_GC not in driver_java_options(0).split()


@pytest.mark.spark
def test_a_local_session_compresses_neither_shuffles_nor_its_cache(spark) -> None:
    from spark_checks.spark_session import LOCAL_GC, LOCAL_SETTINGS

    conf = spark.sparkContext.getConf()
    for key, value in LOCAL_SETTINGS.items():
        assert conf.get(key) == value
    assert LOCAL_GC in conf.get("spark.driver.extraJavaOptions").split()
    beans = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    assert {bean.getName() for bean in beans} == {"PS Scavenge", "PS MarkSweep"}  # the parallel collector's


@pytest.mark.spark
def test_a_local_driver_gets_the_heap_a_large_history_needs(spark) -> None:
    # In local mode the driver JVM runs every task: Spark's 1g default ran out of heap on a
    # 10^7-operation Parquet history (bench.verify_scale); the session asks for more.
    from spark_checks.spark_session import LOCAL_DRIVER_MEMORY

    assert spark.sparkContext.getConf().get("spark.driver.memory") == LOCAL_DRIVER_MEMORY
    assert spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() > 2 * 1024**3


@pytest.mark.spark
def test_a_spark_verification_reports_its_tasks_as_they_finish(spark, kafka_files, monkeypatch):
    from spark_checks import engine

    monkeypatch.setattr(engine, "TASK_POLL_SECONDS", 0.02)
    said: list[str] = []
    options = VerifyOptions(engine="spark", spark_range_bytes=4096)  # many tasks
    report = verify_history(kafka_files["anomalies"], options, spark=spark, progress=said.append)
    assert report.verdict is Verdict.INVALID
    pattern = re.compile(r"pairing, splitting and checking: (\d+)/(\d+) Spark tasks done")
    matches = [pattern.fullmatch(message) for message in said if "Spark tasks done" in message]
    counts = [(int(match[1]), int(match[2])) for match in matches if match is not None]
    assert len(counts) == len(matches), said
    assert counts, said
    assert all(0 <= done <= total for done, total in counts)
    assert counts == sorted(counts)  # never backwards
    assert max(total for _, total in counts) > 10
    # The job group is this verification's alone: the session's next jobs are not in it.
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None


@pytest.mark.parametrize("general", [False, True])
def test_a_malformed_value_found_by_the_checker_names_the_file_and_line(tmp_path, general):
    path = tmp_path / "malformed.jsonl"
    path.write_text(
        '{"index": 0, "process": 1, "type": "invoke", "f": "send", "value": [["send", "k", 1]]}\n'
        '{"index": 1, "process": 1, "type": "ok", "f": "send", "value": [["send", "k", [0, 1, 2]]]}\n'
    )
    with pytest.raises(HistoryError) as raised:
        verify_history(path, VerifyOptions(engine="local"), general=general)
    assert str(raised.value).startswith(f"{path}:2: send by process 1 (index 1): expected [[send, key,")


def test_the_local_engine_reports_each_part_as_it_checks_it(kafka_files):
    said: list[str] = []
    report = verify_history(kafka_files["anomalies"], VerifyOptions(engine="local"), progress=said.append)
    parts = [message for message in said if message.startswith("part ")]
    count = len(report.results)
    assert parts == [f"part {number}/{count}" for number in range(1, count + 1)]
    assert said.index("reading, pairing and splitting") < said.index(parts[0])
