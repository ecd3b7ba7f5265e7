"""`kafkaspec check NAME --witness W` (a shortest trace to a witness) and tables that fit an
80-column terminal (`kafkaspec scenarios`, `kafkaspec scenarios NAME`, `check --all`)."""

from __future__ import annotations

import json
import re

import pytest

import spec.scenarios
from kafkaspec.witnesses import known_witnesses, shows, witness_trace
from spec.partition import partition_offline
from spec.scenarios import SCENARIOS, SCENARIOS_BY_NAME
from tests.helpers import run_cli

STEP = re.compile(r"^  step (\d+): ")


def steps_of(out: str) -> list[list[str]]:
    """The printed trace: per step, the state lines under it."""
    steps: list[list[str]] = []
    for line in out.splitlines():
        if STEP.match(line):
            steps.append([])
        elif steps and line.startswith("      "):
            steps[-1].append(line.strip())
    return steps


# ---------------------------------------------------------------------------------------
# --witness
# ---------------------------------------------------------------------------------------


def test_witness_trace_is_a_shortest_path_printed_like_a_counterexample(capsys):
    code, out, err = run_cli(capsys, "check", "clean-election", "--witness", "partition_offline")
    assert code == 0, err
    assert "clean-election: witness partition_offline reached after 2 steps" in out
    assert "step 1: BrokerCrash(replica=0" in out and "step 2: BrokerCrash(replica=1" in out
    # the last line says what the witness shows, in words from its docstring
    assert out.rstrip().endswith(
        "shows: no eligible replica is alive and the controller left the partition without a leader"
    )
    steps = steps_of(out)
    assert len(steps) == 3
    # step 0 shows the whole initial state; later steps only what changed (replica 1 stays as it was)
    assert any(line.startswith("replica 1:") for line in steps[0])
    assert not any(line.startswith("replica 1:") for line in steps[1])
    assert any(line.startswith("controller: leader none (offline)") for line in steps[2])


def test_the_trace_ends_at_the_first_state_where_the_witness_holds():
    scenario = SCENARIOS_BY_NAME["clean-election"]
    found = witness_trace(scenario, scenario.config, "partition_offline", scenario.max_depth)
    assert found.trace is not None
    states = [step.state for step in found.trace]
    assert partition_offline(states[-1])
    assert not any(partition_offline(state) for state in states[:-1])
    # shortest: with one step less the checker finds no such state at all
    shorter = witness_trace(scenario, scenario.config, "partition_offline", len(states) - 2)
    assert shorter.trace is None and not shorter.reached


def test_full_state_prints_every_line_at_every_step(capsys):
    code, out, _ = run_cli(
        capsys, "check", "clean-election", "--witness", "partition_offline", "--full-state"
    )
    assert code == 0
    steps = steps_of(out)
    assert len({len(lines) for lines in steps}) == 1  # the whole state each time
    assert all(any(line.startswith("replica 1:") for line in lines) for lines in steps)


def test_a_machine_witness_the_scenario_does_not_require_can_be_asked_for(capsys):
    scenario = SCENARIOS_BY_NAME["acks1-loss"]
    assert "record_committed" not in scenario.witnesses
    assert "record_committed" in known_witnesses(scenario)
    code, out, _ = run_cli(capsys, "check", "acks1-loss", "--witness", "record_committed")
    assert code == 0
    assert "shows: some record was committed" in out


def test_controller_witness_with_its_sentence(capsys):
    code, out, _ = run_cli(
        capsys, "check", "zk-zombie-controller-fenced", "--witness", "controller_failed_over"
    )
    assert code == 0
    assert "ControllerProcessEvent" in out
    assert out.rstrip().endswith("shows: a second controller was elected and is active")


def test_unknown_witness_is_bad_input_listing_the_scenarios_witnesses(capsys):
    code, out, err = run_cli(capsys, "check", "clean-election", "--witness", "no_such_state")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "has no witness 'no_such_state'" in err
    assert "its witnesses: record_committed, partition_offline" in err
    assert "write_acknowledged" in err  # the machine's others, which can be asked for too


def test_witness_not_reached_within_the_bound_exits_1(capsys):
    code, out, _ = run_cli(
        capsys, "check", "clean-election", "--witness", "partition_offline", "--max-depth", "1"
    )
    assert code == 1
    assert "witness partition_offline not reached within depth bound 1" in out


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "clean-election", "acks1-loss", "--witness", "partition_offline"),
        ("check", "--all", "--witness", "partition_offline"),
    ],
)
def test_witness_needs_exactly_one_scenario(capsys, argv):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert "--witness needs exactly one scenario name" in err


def test_witness_json(capsys):
    code, out, _ = run_cli(capsys, "check", "clean-election", "--witness", "partition_offline", "--json")
    assert code == 0
    document = json.loads(out)
    assert document["scenario"] == "clean-election" and document["witness"] == "partition_offline"
    assert document["reached"] is True and document["steps"] == len(document["trace"]) - 1 == 2
    assert document["trace"][-1]["state"]["controller"]["leader"] is None
    assert document["shows"].startswith("no eligible replica is alive")


def test_witness_respects_set_overrides(capsys):
    # one crash: the ISR must shrink to the leader first, which then crashes
    code, out, _ = run_cli(
        capsys, "check", "clean-election", "--witness", "partition_offline", "--set", "max.crashes=1"
    )
    assert code == 0
    assert "reached after 3 steps" in out and "step 2: LeaderShrinkIsr(leader=0, follower=1)" in out
    # no crash: never offline
    code, out, _ = run_cli(
        capsys, "check", "clean-election", "--witness", "partition_offline", "--set", "max.crashes=0"
    )
    assert code == 1 and "not reached" in out


def test_shows_reads_a_docstring_as_a_clause():
    assert shows("No eligible replica is alive. More.", "x") == "no eligible replica is alive"
    assert shows("Reachable: a member left with epoch -1.", "x") == "a member left with epoch -1"
    assert shows("ZooKeeper's partition has no leader.", "x") == "ZooKeeper's partition has no leader"
    assert shows("", "partition_offline") == "partition offline"


# ---------------------------------------------------------------------------------------
# 80 columns
# ---------------------------------------------------------------------------------------


def widest(out: str) -> int:
    return max(len(line) for line in out.splitlines())


def test_the_scenario_list_fits_80_columns_and_names_stay_whole(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "scenarios")
    assert code == 0
    assert widest(out) <= 80
    words = set(out.split())
    for scenario in SCENARIOS:
        assert scenario.name in words, scenario.name  # whole, on one line, so it can be copied
    assert "min.insync.replicas" in words and "zk.rules" in words


def test_without_columns_a_pipe_gets_wide_lines(capsys, monkeypatch):
    """The 80-column test above is not vacuous: the same list is wider when nothing limits it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = run_cli(capsys, "scenarios")
    assert code == 0 and widest(out) > 80


def test_a_scenario_in_full_fits_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "scenarios", "zk-zombie-controller-fenced", "kip-1251-range-commit")
    assert code == 0
    assert widest(out) <= 80
    assert "    unclean_leader_election (unclean.leader.election.enable) = false" in out
    assert "--witness WITNESS" in out


def test_check_all_summary_fits_80_columns(capsys, monkeypatch):
    """`check --all` over a few scenarios (the longest name among them), one made to mismatch
    by a depth bound shorter than its counterexample: the summary stays within 80 columns."""
    chosen = tuple(
        SCENARIOS_BY_NAME[name]
        for name in ("acks1-loss", "clean-election", "kip-1251-restamped-retry-returned-partition")
    )
    monkeypatch.setattr(spec.scenarios, "SCENARIOS", chosen)
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "check", "--all", "--workers", "1", "--max-depth", "3")
    assert code == 1  # the 11-step counterexample is not found within 3 steps: not as expected
    assert widest(out) <= 80
    table = out[out.index("kafkaspec check --all") :]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.split()}
    found, _states, _seconds, trace, mark = rows["acks1-loss"][1:]
    assert (found, trace, mark) == ("counterexample", "3", "ok")
    assert rows["clean-election"][-1] == "ok"
    assert table.count("MISMATCH") == 1
    assert "2/3 scenarios as expected" in " ".join(out.split())


def test_check_summary_marks_a_vacuous_pass(capsys, monkeypatch):
    monkeypatch.setattr(spec.scenarios, "SCENARIOS", (SCENARIOS_BY_NAME["clean-election"],))
    code, out, _ = run_cli(capsys, "check", "--all", "--workers", "1", "--max-depth", "1")
    assert code == 1
    assert "never reached: record_committed, partition_offline" in " ".join(out.split())
    assert re.search(r"clean-election\s+no violation .* VACUOUS", out)


def test_a_queued_controller_event_reads_by_its_kind(capsys):
    """The ZooKeeper controller's `ControllerProcessEvent` names the event it handles, with the
    fields that matter, not the enum's number (`--json` keeps the plain values)."""
    code, out, _ = run_cli(capsys, "check", "zk-zombie-controller-unfenced", "--workers", "1")
    assert code == 1
    assert "step 4: ControllerProcessEvent(broker=0, event=PendingEvent(kind=REELECT))" in out
    assert "event=PendingEvent(kind=CONTROLLED_SHUTDOWN, broker=0, broker_epoch=1)" in out
    assert "'kind'" not in out
    code, out, _ = run_cli(capsys, "check", "zk-zombie-controller-unfenced", "--workers", "1", "--json")
    (entry,) = json.loads(out)["scenarios"]
    assert entry["trace"][4]["args"]["event"] == {"kind": 0, "broker": -1, "broker_epoch": -1}
