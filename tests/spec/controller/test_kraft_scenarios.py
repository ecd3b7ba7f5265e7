"""The KRaft controller scenarios: outcomes, shortest traces, each rule's counterexample, and mutants."""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from types import ModuleType

import pytest

from spec.checker import Violation, check
from spec.controller import kraft, kraft_alter_partition, kraft_partitions
from spec.controller.kraft import (
    BrokerCrash,
    ControllerAlterPartition,
    ControllerFenceBroker,
    HighWatermarkRule,
    KRaftConfig,
    KRaftState,
    LeaderAlterPartition,
    LeaderIsrRule,
)
from spec.controller.kraft_alter_partition import AlterPartitionRule
from spec.controller.kraft_partitions import ElrRule, LastKnownLeaderRule
from spec.controller.kraft_scenarios import MACHINE, SCENARIOS, describe_state, explain, model_for
from spec.machines import ScenarioOutcome, run_scenario
from spec.scenarios import SCENARIOS_BY_NAME
from tests.shared_findings import SHARED_FINDINGS


def outcome_of(name: str) -> ScenarioOutcome[KRaftConfig]:
    """Each scenario is checked once per test session (shared with the other tests)."""
    return SHARED_FINDINGS.outcome(SCENARIOS_BY_NAME[name])


def violation_of(name: str) -> Violation[KRaftState, kraft.Action]:
    violation = outcome_of(name).result.violation
    assert violation is not None
    return violation


VIOLATING = [scenario.name for scenario in SCENARIOS if scenario.expect_violation]
HOLDING = [scenario.name for scenario in SCENARIOS if not scenario.expect_violation]

SHORTEST_TRACES = {
    "kraft-fenced-last-known-leader": ("leader_not_fenced", 6),
    "kraft-last-replica-standing": ("committed_records_survive_lossy_shutdowns", 10),
    "kraft-committed-isr-hw": ("maximal_isr_covers_controller_isr", 6),
    "kraft-elr-without-min-isr-hw": ("committed_records_survive", 7),
    "kraft-makeleader-reset": ("committed_records_survive", 13),
    "kraft-bounce-without-broker-epochs": ("electable_replicas_hold_committed_records", 11),
}


def test_every_scenario_is_in_check_all_and_uses_this_machine():
    for scenario in SCENARIOS:
        assert SCENARIOS_BY_NAME[scenario.name] is scenario
        assert scenario.machine is MACHINE
        assert set(scenario.invariants) <= set(kraft.INVARIANTS)
        assert set(scenario.witnesses) <= set(kraft.WITNESSES)
        assert MACHINE.validate(scenario.config) is None
    assert set(SHORTEST_TRACES) == set(VIOLATING)


@pytest.mark.parametrize("name", VIOLATING)
def test_scenario_finds_its_shortest_counterexample(name):
    outcome = outcome_of(name)
    violation = violation_of(name)
    assert outcome.as_expected
    assert (violation.property_name, len(violation.trace) - 1) == SHORTEST_TRACES[name]
    sentence = explain(violation.property_name, violation.trace[-1].state)
    assert sentence and not sentence.endswith("fails")


@pytest.mark.slow
@pytest.mark.parametrize("name", HOLDING)
def test_scenario_holds_within_its_bound_and_is_not_vacuous(name):
    outcome = outcome_of(name)
    assert outcome.result.violation is None
    assert outcome.missing_witnesses == ()
    assert outcome.as_expected
    assert outcome.result.depth == outcome.scenario.max_depth  # the bound, not exhaustion, stopped it


def test_the_kafka_19522_trace_elects_the_fenced_last_known_leader():
    last = violation_of("kraft-fenced-last-known-leader").trace[-1].state
    partition = last.controller.partition
    registration = last.controller.registrations[partition.leader]
    assert registration is not None and registration.fenced
    assert not partition.elr and last.history.last_known_leader_elections == 1


def test_the_last_replica_standing_trace_reelects_the_leader_that_lost_its_log():
    trace = violation_of("kraft-last-replica-standing").trace
    assert any(isinstance(step.action, BrokerCrash) for step in trace)
    last = trace[-1].state
    leader = last.controller.partition.leader
    assert last.brokers[leader].log == () and last.history.committed == {(0, 0)}
    assert last.history.elr_elections == 0 and last.history.unclean_elections == 0  # a clean election


def test_the_makeleader_reset_trace_loses_a_record_without_unclean_election_or_lossy_crash():
    trace = violation_of("kraft-makeleader-reset").trace
    last = trace[-1].state
    assert last.history.unclean_elections == last.history.lossy_crashes == 0
    assert last.history.committed == {(0, 0)} and last.brokers[1].log == ()
    names = [type(step.action).__name__ for step in trace[1:]]
    expand = names.index("LeaderAlterPartition", names.index("ProducerSend"))
    # the leader replays its previous change after sending the expansion, which the
    # controller then commits; the new member falls behind before the leader hears of it
    assert names[expand + 1 : expand + 4] == [
        "BrokerReplayMetadata",
        "ControllerAlterPartition",
        "LeaderFollowerFallsBehind",
    ]


def test_the_bounce_trace_readds_the_replica_on_a_fetch_older_than_its_crash():
    trace = violation_of("kraft-bounce-without-broker-epochs").trace
    last = trace[-1]
    assert isinstance(last.action, ControllerAlterPartition)
    registration = last.state.controller.registrations[1]
    assert registration is not None and registration.incarnation == 1
    assert 1 in last.state.controller.partition.isr and last.state.brokers[1].log == ()


def test_describe_state_labels_every_component():
    lines = describe_state(kraft.initial_state(KRaftConfig()))
    assert lines[0].startswith("partition: leader 0")
    assert [line.split(":")[0] for line in lines[1:]] == ["broker 0", "broker 1", "history"]


# --- each named rule: the counterexample under the rule that breaks, none under the fix -------

RULE_PAIRS = [
    ("kraft-fenced-last-known-leader", "kraft-last-known-leader-fixed", "last_known_leader"),
    ("kraft-last-replica-standing", "kraft-elr-keeps-committed", "elr"),
    ("kraft-elr-without-min-isr-hw", "kraft-elr-keeps-committed", "high_watermark"),
    ("kraft-committed-isr-hw", "kraft-maximal-isr", "leader_isr"),
    ("kraft-makeleader-reset", "kraft-maximal-isr", "leader_isr"),
    ("kraft-bounce-without-broker-epochs", "kraft-broker-bounce", "alter_partition"),
]


@pytest.mark.parametrize(("broken", "fixed", "rule"), RULE_PAIRS)
def test_each_rule_pair_differs_only_in_the_rule(broken, fixed, rule):
    broken_scenario, fixed_scenario = SCENARIOS_BY_NAME[broken], SCENARIOS_BY_NAME[fixed]
    fixed_rule = getattr(fixed_scenario.config, rule)
    assert getattr(broken_scenario.config, rule) != fixed_rule
    assert dataclasses.replace(broken_scenario.config, **{rule: fixed_rule}) == fixed_scenario.config
    assert set(broken_scenario.invariants) <= set(fixed_scenario.invariants)
    assert fixed_scenario.max_depth >= SHORTEST_TRACES[broken][1]


@pytest.mark.slow
@pytest.mark.parametrize(("broken", "fixed", "rule"), RULE_PAIRS)
def test_the_counterexample_appears_under_the_broken_rule_only(broken, fixed, rule):
    assert violation_of(broken).property_name in SCENARIOS_BY_NAME[fixed].invariants
    assert outcome_of(fixed).result.violation is None


def test_the_broken_trace_is_refused_or_harmless_under_the_fixed_rule():
    """Replaying the KIP-903 counterexample under the fixed rule: the AlterPartition that
    re-added the bounced replica is now answered INELIGIBLE_REPLICA."""
    trace = violation_of("kraft-bounce-without-broker-epochs").trace
    config = SCENARIOS_BY_NAME["kraft-broker-bounce"].config
    state = trace[0].state
    for step in trace[1:]:
        assert step.action is not None
        after = kraft.step(config, state, step.action)
        assert after is not None
        state = after
    assert 1 not in state.controller.partition.isr
    assert kraft.WITNESSES["ineligible_replica_refused"](state)


# --- mutants: one-line changes some scenario catches ---------------------------------------


def mutate(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str, old: str, new: str) -> None:
    """Replace one line of `module.name`'s source and install the result wherever it is used."""
    source = textwrap.dedent(inspect.getsource(getattr(module, name)))
    assert source.count(old) == 1, old
    namespace = dict(vars(module))
    exec(compile(source.replace(old, new), module.__file__ or name, "exec"), namespace)
    for user in (module, kraft):
        if hasattr(user, name):
            monkeypatch.setattr(user, name, namespace[name])


MUTANTS = {
    "election outside the ISR with unclean off": (
        kraft_partitions,
        "elect_leader",
        "if election is Election.UNCLEAN:",
        "if True:",
        "kraft-elr-keeps-committed",
    ),
    "ISR ignored in elections": (
        kraft_partitions,
        "elect_leader",
        "in_isr = replica in target_isr or (not target_isr and replica in target_elr)",
        "in_isr = True",
        "kraft-maximal-isr",
    ),
    "a fenced broker elected": (
        kraft_partitions,
        "elect_leader",
        "return in_isr and acceptable(replica)",
        "return in_isr",
        "kraft-controlled-shutdown",
    ),
    "a stale partition epoch accepted by AlterPartition": (
        kraft_alter_partition,
        "validate_alter_partition",
        "if request.partition_epoch < partition.partition_epoch:",
        "if False:",
        "kraft-reassignment",
    ),
    "fenced ISR members accepted by AlterPartition": (
        kraft_alter_partition,
        "_eligible",
        "if registration is None or registration.in_controlled_shutdown or registration.fenced:",
        "if registration is None:",
        "kraft-broker-bounce",
    ),
}


@pytest.mark.parametrize("mutant", list(MUTANTS))
def test_a_mutant_is_caught(monkeypatch, mutant):
    module, name, old, new, scenario = MUTANTS[mutant]
    mutate(monkeypatch, module, name, old, new)
    outcome = run_scenario(SCENARIOS_BY_NAME[scenario])
    assert outcome.result.violation is not None, f"{mutant} survives {scenario}"


def test_the_unmutated_controlled_shutdown_trace_has_no_fenced_leader():
    """The mutation harness above changes behaviour, not the test: without it the same
    opening steps keep a valid leader."""
    config = SCENARIOS_BY_NAME["kraft-controlled-shutdown"].config
    state = kraft.initial_state(config)
    for action in (LeaderAlterPartition(0, 1, False), ControllerAlterPartition(0), ControllerFenceBroker(0)):
        after = kraft.step(config, state, action)
        if after is not None:
            state = after
    assert kraft.leader_not_fenced(state) and kraft.online_leader_in_isr(state)


def test_rules_parse_from_their_set_keys():
    config = MACHINE.apply_overrides(
        KRaftConfig(),
        {
            "eligible.leader.replicas": "off",
            "last.known.leader": "unchecked",
            "alter.partition": "pre-kip-903",
            "leader.isr": "committed",
            "high.watermark": "any-isr",
            "reassignment": "1,0",
        },
    )
    assert config.elr is ElrRule.DISABLED
    assert config.last_known_leader is LastKnownLeaderRule.UNCHECKED
    assert config.alter_partition is AlterPartitionRule.NO_BROKER_EPOCHS
    assert config.leader_isr is LeaderIsrRule.COMMITTED
    assert config.high_watermark is HighWatermarkRule.ANY_ISR
    assert config.reassignment_target == (1, 0)
    assert MACHINE.validate(dataclasses.replace(config, reassignment_target=(5,))) is not None


@pytest.mark.parametrize("name", [*kraft.INVARIANTS, *kraft.STEP_PROPERTIES])
def test_every_property_has_its_own_explanation(name):
    state = violation_of("kraft-fenced-last-known-leader").trace[-1].state
    assert explain(name, state) != f"{name} fails"


def test_the_kafka_19522_trace_reads_as_the_story():
    last = violation_of("kraft-fenced-last-known-leader").trace[-1].state
    lines = describe_state(last)
    assert "RECOVERING" in lines[0] and "leader 1" in lines[0]
    assert "controller: fenced" in lines[2]
    assert "last-known-leader elections 1" in lines[-1]


@pytest.mark.slow
def test_the_last_known_leader_election_loses_committed_data_with_unclean_election_off():
    """The claim in `_loss_is_excused`'s docstring: with ELR, min ISR 2 and unclean election
    off, two crashes (one losing the last leader's records) lead to a last-known-leader
    election that loses a committed record, in 12 steps."""
    config = KRaftConfig(max_crashes=2, max_lossy_crashes=1, max_lost_sessions=1, max_alter_partitions=0)

    def lost_without_unclean_election(state: KRaftState) -> bool:
        history = state.history
        leader = state.controller.partition.leader
        if not history.committed or history.unclean_elections or leader == -1:
            return True
        if not kraft._is_true_leader(state, leader):
            return True
        return all(offset < len(state.brokers[leader].log) for offset, _ in history.committed)

    model = model_for(config, (), ())
    model = dataclasses.replace(model, invariants={"kept": lost_without_unclean_election})
    violation = check(model, 12).violation
    assert violation is not None and len(violation.trace) - 1 == 12
    last = violation.trace[-1].state
    assert last.history.last_known_leader_elections == 1 and last.history.unclean_elections == 0
    assert not config.unclean_leader_election
