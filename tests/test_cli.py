"""The command-line contract: output, --json, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spec.scenarios import SCENARIOS
from tests.helpers import run_cli


def test_scenarios_lists_every_scenario(capsys):
    code, out, _ = run_cli(capsys, "scenarios", "--json")
    assert code == 0
    listed = json.loads(out)
    assert [entry["name"] for entry in listed["scenarios"]] == [scenario.name for scenario in SCENARIOS]
    assert "min.insync.replicas" in listed["set_keys"]


def test_scenarios_text(capsys):
    code, out, _ = run_cli(capsys, "scenarios")
    assert code == 0
    for scenario in SCENARIOS:
        assert scenario.name in out


def test_check_prints_the_counterexample_step_by_step_and_exits_1(capsys):
    code, out, _ = run_cli(capsys, "check", "acks1-loss")
    assert code == 1
    assert "violated invariant acknowledged_records_survive after 3 steps" in out
    for line in (
        "step 0: Init()",
        "step 1: ProducerSend(leader=0, acks=1)",
        "step 3: ReplicaBecomeLeaderOrFollower",
    ):
        assert line in out
    assert "replica 1: leader" in out  # the state after each step shows every replica


def test_check_json_has_the_documented_fields(capsys):
    code, out, _ = run_cli(capsys, "check", "unclean-election-loss", "--json")
    assert code == 1
    document = json.loads(out)
    (entry,) = document["scenarios"]
    assert {"name", "expected", "found", "states", "seconds", "trace"} <= entry.keys()
    assert entry["found"] == "counterexample"
    assert entry["trace"][0]["action"] == "Init"
    step = entry["trace"][-1]
    assert {"step", "action", "args", "state"} <= step.keys()
    replica = step["state"]["replicas"][0]
    assert {"log_end_offset", "high_watermark", "leader_epoch", "records", "isr"} <= replica.keys()


def test_check_set_changes_the_outcome(capsys):
    # acks=1 loses data; the same scenario with acks=all and min ISR 2 cannot lose an ack.
    code, out, _ = run_cli(
        capsys,
        "check",
        "acks1-loss",
        "--set",
        "acks=all",
        "--set",
        "min.insync.replicas=2",
        "--set",
        "max.records=1",
        "--set",
        "max.crashes=1",
        "--json",
    )
    assert code == 0, out
    assert json.loads(out)["scenarios"][0]["found"] == "no violation"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["check", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["check"], "name at least one scenario, or use --all"),
        (["check", "acks1-loss", "--max-depth", "ten"], "--max-depth"),
        (["check", "acks1-loss", "--set", "bogus=1"], "unknown configuration key 'bogus'"),
        (["check", "acks1-loss", "--set", "acks=2"], "bad value for acks"),
        (["check", "acks1-loss", "--set", "noequals"], "--set expects key=value"),
        (["check", "--frobnicate"], "No such option"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("kafkaspec: error: ")
    assert fragment in err
    assert "Traceback" not in err


def test_the_installed_entry_point_runs_without_a_traceback():
    # The console script is what users type; run it as a process once.
    completed = subprocess.run(
        [sys.executable, "-m", "kafkaspec.cli", "check", "nope"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    assert completed.stderr.strip().startswith("kafkaspec: error: unknown scenario")


@pytest.mark.slow
def test_check_all_matches_every_expectation(capsys, shared_outcomes):
    # each scenario's outcome is checked once per test run and shared with the documentation
    # build (tests/conftest.py); the command's document, order and exit code are its own
    code, out, _ = run_cli(capsys, "check", "--all", "--json")
    document = json.loads(out)
    assert code == 0
    assert [entry["name"] for entry in document["scenarios"]] == [scenario.name for scenario in SCENARIOS]
    assert all(entry["as_expected"] for entry in document["scenarios"])
    assert all(entry["found"] == entry["expected"] for entry in document["scenarios"])


def test_conformance_command_exit_codes(capsys):
    code, out, _ = run_cli(
        capsys, "conformance", "--target", "impl", "--examples", "15", "--seed", "3", "--depth", "4"
    )
    assert code == 0, out
    assert "impl: conforms" in out
    for suite in ("partition", "coordinator-exhaustive", "consumer-group-machine", "controller-exhaustive"):
        assert suite in out  # every machine's suites run by default on the built-in targets
    broken = "tests.conformance.broken_targets:TruncateKeepsOneTooMany"
    code, out, _ = run_cli(
        capsys, "conformance", "--target", broken, "--examples", "100", "--seed", "1", "--json"
    )
    assert code == 1
    document = json.loads(out)
    assert document["conforms"] is False
    assert "truncate_to" in document["failure"]  # the minimal failing sequence names the command
    code, out, err = run_cli(capsys, "conformance", "--target", "no_such_module:factory")
    assert code == 2
    assert out == ""
    assert err.startswith("kafkaspec: error: --target no_such_module:factory")


def test_check_gives_the_same_answer_with_any_number_of_workers(capsys):
    documents = []
    for workers in ("1", "2"):
        code, out, _ = run_cli(capsys, "check", "hw-truncation-divergence", "--json", "--workers", workers)
        assert code == 1
        (entry,) = json.loads(out)["scenarios"]
        for timing in ("seconds", "states_per_second", "seconds_to_counterexample"):
            entry.pop(timing)
        documents.append(entry)
    assert documents[0] == documents[1]
    assert documents[0]["states"] > 10_000  # large enough that the levels ran in two processes


@pytest.mark.parametrize("value", ["0", "two"])
def test_check_refuses_a_bad_worker_count(capsys, value):
    code, _, err = run_cli(capsys, "check", "acks1-loss", "--workers", value)
    assert code == 2
    assert "--workers" in err
    assert "Traceback" not in err


def test_check_caps_workers_at_the_cores(capsys):
    code, out, _ = run_cli(capsys, "check", "acks1-loss", "--json", "--workers", "100000")
    assert code == 1
    assert json.loads(out)["workers"] == len(os.sched_getaffinity(0))
