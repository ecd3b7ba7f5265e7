"""`bench/model_check.py`, the model checker's throughput bench: its verdicts against TLC's rate,
the process that times a baseline's scenarios, and a run on two small scenarios."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.model_check import BASELINE_SERVER, TARGET_BEST, TARGET_LOW, TINY_SECONDS, critical_cpu, verdict
from spec.scenarios import SCENARIOS_BY_NAME, run_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_the_targets_are_twice_tlcs_rates() -> None:
    assert (TARGET_LOW, TARGET_BEST) == (18_000.0, 48_000.0)


def test_verdicts() -> None:
    assert verdict(60_000.0, 1.0) == "2x best"
    assert verdict(20_000.0, 1.0) == "2x low"
    assert verdict(17_999.0, 1.0) == "below"
    assert verdict(1.0, TINY_SECONDS / 2) == "tiny"


def test_the_critical_path_of_several_processes() -> None:
    assert critical_cpu(3.0, ()) == 3.0  # no fork: the caller's CPU
    assert critical_cpu(3.0, ((2.5, 0.1), (3.5, 0.0))) == 4.0  # 0.5 before the fork, then the helper
    assert critical_cpu(3.0, ((2.5, 0.1), (1.0, 2.0))) == 3.0  # the caller is the busiest


def test_the_baseline_process_answers_scenario_by_scenario() -> None:
    # Run here on the working tree (the bench runs it in an exported revision).
    server = subprocess.Popen(
        [sys.executable, "-c", BASELINE_SERVER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    answers, _ = server.communicate("acks1-loss 15\nno-such-scenario 3\n", timeout=120)
    known, unknown = (json.loads(line) for line in answers.splitlines())
    states, transitions, depth, complete, trace, cpu = known
    expected = run_scenario(SCENARIOS_BY_NAME["acks1-loss"]).result
    assert (states, transitions, depth, complete) == (
        expected.distinct_states,
        expected.transitions,
        expected.depth,
        expected.complete,
    )
    assert expected.violation is not None
    assert trace == [
        expected.violation.property_name,
        [repr(step.action) for step in expected.violation.trace],
    ]
    assert cpu >= 0
    assert unknown is None  # a scenario newer than the baseline


def test_a_run_prints_every_chosen_scenario() -> None:
    chosen = ("acks1-loss", "consumer-zombie-processing")
    arguments = [sys.executable, "-m", "bench.model_check", "--workers", "2"]
    for name in chosen:
        arguments += ["--scenario", name]
    source = {**os.environ, "KAFKASPEC_NATIVE": "0"}
    finished = subprocess.run(
        arguments, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True, env=source
    )
    lines = finished.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.split() and line.split()[0] in chosen}
    assert set(rows) == set(chosen)
    assert rows["acks1-loss"][1] == "cex" and rows["consumer-zombie-processing"][1] == "cex"
    assert any(line.startswith("2 scenarios,") for line in lines)
    assert any("check --all, 2 processes" in line for line in lines)
    assert "spec: interpreted source" in lines[1]  # says which spec ran (the compiled one is opt-in)
