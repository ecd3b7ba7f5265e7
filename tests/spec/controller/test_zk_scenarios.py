"""The ZooKeeper-era controller's scenarios: outcomes, shortest traces, one test per protocol
rule (counterexample without it, none with it), and the mutants the invariants must catch."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from spec.checker import check
from spec.controller import zk_controller as zk
from spec.controller import zk_requests
from spec.controller import zk_states as sm
from spec.controller.zk_requests import ALL_RULES, RULE_SETS, Request, Rule, Verdict
from spec.controller.zk_scenarios import MACHINE, SCENARIOS, describe_state, explain, model
from spec.machines import Scenario
from tests.shared_findings import SHARED_FINDINGS

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

COUNTEREXAMPLES = {
    # scenario: (violated property, shortest trace length)
    "zk-zombie-controller-unfenced": ("brokers_never_obey_an_older_controller", 6),
    "zk-zombie-controller-zk-unfenced": ("idle_controller_brokers_agree", 7),
    "zk-fast-bounce-without-broker-epochs": ("idle_controller_brokers_agree", 4),
    "zk-unconditional-isr-write": ("leader_epochs_only_grow", 4),
    "zk-unclean-election-loss": ("committed_records_survive", 5),
}


def test_names_are_unique_kebab_case_and_on_this_machine() -> None:
    assert len(BY_NAME) == len(SCENARIOS)
    for scenario in SCENARIOS:
        assert scenario.machine is MACHINE
        assert scenario.name.startswith("zk-") and scenario.name == scenario.name.lower()
        assert MACHINE.validate(scenario.config) is None
        assert set(scenario.invariants) <= set(zk.INVARIANTS)
        assert set(scenario.witnesses) <= set(zk.WITNESSES)
    assert set(COUNTEREXAMPLES) == {s.name for s in SCENARIOS if s.expect_violation}


@pytest.mark.parametrize("name", sorted(COUNTEREXAMPLES))
def test_counterexample_and_its_length(name: str) -> None:
    outcome = SHARED_FINDINGS.outcome(BY_NAME[name])
    violation = outcome.result.violation
    assert violation is not None and outcome.as_expected
    prop, length = COUNTEREXAMPLES[name]
    assert violation.property_name == prop
    assert len(violation.trace) - 1 == length
    assert outcome.explanation is not None and outcome.explanation != prop


FAST_PASSES = ("zk-conditional-isr-write", "zk-reassignment")


@pytest.mark.parametrize("name", FAST_PASSES)
def test_passing_scenario_is_complete_and_not_vacuous(name: str) -> None:
    outcome = SHARED_FINDINGS.outcome(BY_NAME[name])
    assert outcome.as_expected and outcome.result.complete
    assert all(outcome.result.witnesses_reached[w] for w in BY_NAME[name].witnesses)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", sorted(s.name for s in SCENARIOS if not s.expect_violation and s.name not in FAST_PASSES)
)
def test_slow_passing_scenario(name: str) -> None:
    outcome = SHARED_FINDINGS.outcome(BY_NAME[name])
    assert outcome.as_expected and outcome.result.complete, outcome.missing_witnesses


# --- each named rule: the counterexample without it, none with it --------------------------

RULE_CASES = {
    Rule.STALE_CONTROLLER_EPOCH: "zk-zombie-controller-unfenced",
    Rule.CONTROLLER_EPOCH_ZK_FENCING: "zk-zombie-controller-zk-unfenced",
    Rule.BROKER_EPOCHS: "zk-fast-bounce-without-broker-epochs",
    Rule.CONDITIONAL_ISR_WRITES: "zk-unconditional-isr-write",
}


def _check(scenario: Scenario[zk.ZkConfig], config: zk.ZkConfig, depth: int) -> zk.ZkState | None:
    result = check(model(config, scenario.invariants, ()), depth)
    if result.violation is None:
        return None
    return result.violation.trace[-1].state


@pytest.mark.parametrize("rule", list(Rule))
def test_rule_breaks_without_and_holds_with(rule: Rule) -> None:
    scenario = BY_NAME[RULE_CASES[rule]]
    assert scenario.config.rules == ALL_RULES - {rule} or rule is Rule.BROKER_EPOCHS
    assert rule not in scenario.config.rules
    broken = check(model(scenario.config, scenario.invariants, ()), scenario.max_depth)
    assert broken.violation is not None
    depth = len(broken.violation.trace) - 1
    fixed = replace(scenario.config, rules=ALL_RULES)
    assert _check(scenario, fixed, depth) is None  # the same space and depth: nothing


def test_every_rule_set_name_round_trips() -> None:
    for name, rules in RULE_SETS.items():
        assert zk_requests.parse_rules(name) == rules


# --- mutants: one-line bugs the scenarios must catch --------------------------------------


def _first_violation(scenario_name: str, depth: int = 14) -> str | None:
    """The property the scenario's check breaks first (the unmutated scenarios pass:
    `test_slow_passing_scenario`)."""
    scenario = BY_NAME[scenario_name]
    result = check(model(scenario.config, scenario.invariants, ()), depth, max_states=60_000)
    return None if result.violation is None else result.violation.property_name


def test_mutant_broker_accepts_older_controller_epoch(monkeypatch: pytest.MonkeyPatch) -> None:
    original = zk_requests.broker_verdict

    def accepts_older_controllers(rules: frozenset[Rule], request: Request, own: int, known: int) -> Verdict:
        return original(rules, request, own, 0)  # the controller-epoch comparison lost

    monkeypatch.setattr(zk, "broker_verdict", accepts_older_controllers)
    assert _first_violation("zk-zombie-controller-fenced") == "brokers_never_obey_an_older_controller"


def test_mutant_election_outside_isr(monkeypatch: pytest.MonkeyPatch) -> None:
    original = sm.offline_election

    def ignores_isr(assignment: tuple[int, ...], isr: object, live: frozenset[int], unclean: bool) -> object:
        return original(assignment, set(live), live, unclean)  # every live replica counts as in sync

    monkeypatch.setattr(sm, "offline_election", ignores_isr)
    assert _first_violation("zk-clean-election") == "committed_records_survive"


def test_mutant_isr_shrink_not_reaching_zookeeper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zk, "leader_isr_write", lambda state_zk, expected, znode: state_zk)
    assert _first_violation("zk-conditional-isr-write") == "leader_isr_contains_committed_isr"


# --- the text view --------------------------------------------------------------------------


def test_describe_state_labels_and_explanations() -> None:
    state = zk.initial_state(BY_NAME["zk-zombie-controller-fenced"].config)
    lines = describe_state(state)
    assert lines[0].startswith("zookeeper: /controller 2  epoch 1")
    assert any(line.startswith("partition znode: leader 0  epoch 0  ISR {0,1}") for line in lines)
    assert any(line.startswith("broker 0: up session 1") and "leader epoch 0" in line for line in lines)
    assert any(line.startswith("controller 2: epoch 1") for line in lines)
    assert lines[-1].startswith("history:")
    for name in zk.INVARIANTS:
        assert explain(name, state)


def test_settings_apply() -> None:
    scenario = BY_NAME["zk-clean-election"]
    config = MACHINE.apply_overrides(
        scenario.config,
        {"zk.rules": "before-kip-380", "max.crashes": "2", "unclean.leader.election.enable": "yes"},
    )
    assert config.rules == RULE_SETS["before-kip-380"] and config.max_crashes == 2
    assert config.unclean_leader_election


def test_state_as_json() -> None:
    state = zk.initial_state(BY_NAME["zk-reassignment"].config)
    data = json.loads(json.dumps(MACHINE.as_json(state)))
    assert data["zk"]["controller"] == 2 and data["zk"]["partition"]["isr"] == [0, 1]
    assert data["brokers"][0]["role"] == "leader"


def test_mutant_transition_table_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replica table that forgets OfflineReplica -> ReplicaDeletionStarted makes the
    reassignment ask for a move the table forbids."""
    mutated = dict(sm.REPLICA_VALID_PREVIOUS)
    mutated[sm.ReplicaState.DELETION_STARTED] = frozenset()
    monkeypatch.setattr(sm, "REPLICA_VALID_PREVIOUS", mutated)
    assert _first_violation("zk-reassignment", depth=20) == "state_machine_moves_are_valid"
