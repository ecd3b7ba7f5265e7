"""Every named scenario settles as its summary says, with the counterexample it claims."""

from __future__ import annotations

import pytest

from spec import partition
from spec.checker import check
from spec.log import record_at
from spec.partition import BrokerCrash, FollowerTruncate, PartitionConfig, PartitionState
from spec.partition_scenarios import PARTITION, SCENARIOS, model_for
from spec.scenarios import (
    DEFAULT_MAX_DEPTH,
    SCENARIOS_BY_NAME,
    ConfigError,
    ScenarioOutcome,
    check_overrides,
    run_scenario,
)
from spec.types import Acks, TruncationRule
from tests.shared_findings import SHARED_FINDINGS


def apply_overrides(config: PartitionConfig, overrides: dict[str, str]) -> PartitionConfig:
    """`--set` as the command line reads it for a partition scenario."""
    check_overrides([SCENARIOS_BY_NAME["clean-election"]], overrides)
    return PARTITION.apply_overrides(config, overrides)


def outcome_of(name: str) -> ScenarioOutcome[PartitionConfig]:
    """Each scenario is checked once per test session (shared with the other tests)."""
    return SHARED_FINDINGS.outcome(SCENARIOS_BY_NAME[name])


def final_state(name: str) -> PartitionState:
    violation = outcome_of(name).result.violation
    assert violation is not None
    state: PartitionState = violation.trace[-1].state
    return state


VIOLATING = [scenario.name for scenario in SCENARIOS if scenario.expect_violation]
HOLDING = [scenario.name for scenario in SCENARIOS if not scenario.expect_violation]


@pytest.mark.parametrize("name", VIOLATING)
def test_scenario_finds_its_counterexample(name):
    outcome = outcome_of(name)
    assert outcome.result.violation is not None
    assert outcome.as_expected
    assert outcome.result.violation.property_name in outcome.scenario.invariants


@pytest.mark.slow
@pytest.mark.parametrize("name", HOLDING)
def test_scenario_holds_within_the_bound_and_is_not_vacuous(name):
    outcome = outcome_of(name)
    assert outcome.result.violation is None
    assert outcome.result.depth == DEFAULT_MAX_DEPTH
    assert outcome.missing_witnesses == ()
    assert outcome.as_expected


def test_default_bound_covers_every_counterexample_plus_four_steps():
    longest = max(len(outcome_of(name).result.violation.trace) - 1 for name in VIOLATING)  # type: ignore[union-attr]
    assert longest + 4 <= DEFAULT_MAX_DEPTH


@pytest.mark.parametrize(
    ("name", "steps"),
    [
        ("hw-truncation-loss", 10),
        ("hw-truncation-divergence", 11),
        ("unclean-election-loss", 5),
        ("acks1-loss", 3),
        ("acks-all-single-isr", 6),
    ],
)
def test_counterexample_lengths_are_pinned(name, steps):
    # Breadth-first search returns a shortest trace; a change here means the spec changed.
    violation = outcome_of(name).result.violation
    assert violation is not None
    assert len(violation.trace) - 1 == steps


def test_trace_replays_through_the_spec():
    for name in VIOLATING:
        outcome = outcome_of(name)
        violation = outcome.result.violation
        assert violation is not None
        assert violation.trace[0].state == partition.initial_state(outcome.config)
        for before, after in zip(violation.trace, violation.trace[1:], strict=False):
            assert after.action is not None
            assert partition.step(outcome.config, before.state, after.action) == after.state


def _leader_misses_committed_record(state: PartitionState) -> bool:
    leader = partition.true_leader(state)
    assert leader is not None
    log = state.replicas[leader].log
    return any(
        (record := record_at(log, offset)) is None or record.value != value
        for offset, value in state.history.committed
    )


def test_hw_truncation_loss_is_kip101_scenario_1():
    # A follower truncated a committed record to its lagging HW, then became leader;
    # no disk lost data and no election was unclean.
    state = final_state("hw-truncation-loss")
    assert _leader_misses_committed_record(state)
    assert state.history.lossy_crashes == 0
    assert state.history.unclean_elections == 0
    violation = outcome_of("hw-truncation-loss").result.violation
    assert violation is not None
    assert any(isinstance(step.action, FollowerTruncate) for step in violation.trace)


def test_hw_truncation_divergence_is_kip101_scenario_2():
    # Two replicas hold different records at the same offset after recovery.
    state = final_state("hw-truncation-divergence")
    logs = [replica.log for replica in state.replicas]
    common = min(log.log_end_offset for log in logs)
    assert any(record_at(logs[0], offset) != record_at(logs[1], offset) for offset in range(common))
    assert state.history.lossy_crashes == 1


def test_unclean_election_loss_needs_the_unclean_election():
    state = final_state("unclean-election-loss")
    assert state.history.unclean_elections == 1
    assert _leader_misses_committed_record(state)


def test_acks1_loss_loses_an_acknowledged_but_uncommitted_record():
    state = final_state("acks1-loss")
    assert state.history.acknowledged
    assert not state.history.committed


def test_acks_all_single_isr_loses_data_on_the_only_isr_member():
    violation = outcome_of("acks-all-single-isr").result.violation
    assert violation is not None
    state = violation.trace[-1].state
    assert state.history.acknowledged_all
    lossy = [step.action for step in violation.trace if isinstance(step.action, BrokerCrash)]
    assert state.history.lossy_crashes == 1 or state.history.unclean_elections == 1, lossy


@pytest.mark.slow
def test_leader_epoch_truncation_fixes_kip101_scenario_1():
    outcome = run_scenario(SCENARIOS_BY_NAME["hw-truncation-loss"], overrides={"truncation": "epoch"})
    assert outcome.result.violation is None


def test_tiny_configurations_have_pinned_state_counts():
    # Exhaustive on tiny bounds: accidental changes to the spec change these numbers.
    tiny = {"max.records": "1", "max.crashes": "1", "max.leader.moves": "1"}
    expected = {"clean-election": (1702, 3832), "epoch-truncation": (2292, 5127)}
    for name, (states, transitions) in expected.items():
        scenario = SCENARIOS_BY_NAME[name]
        result = check(model_for(apply_overrides(scenario.config, tiny), scenario.invariants), max_depth=60)
        assert result.complete
        assert result.violation is None
        assert (result.distinct_states, result.transitions) == (states, transitions)


def test_overrides_use_kafka_names():
    config = apply_overrides(
        SCENARIOS_BY_NAME["clean-election"].config,
        {
            "min.insync.replicas": "2",
            "acks": "1,all",
            "unclean.leader.election.enable": "true",
            "truncation": "hw",
        },
    )
    assert config.min_insync_replicas == 2
    assert config.producer_acks == (Acks.LEADER, Acks.ALL)
    assert config.unclean_leader_election
    assert config.truncation is TruncationRule.HIGH_WATERMARK


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"no.such.key": "1"}, "unknown configuration key 'no.such.key'"),
        ({"min.insync.replicas": "two"}, "bad value for min.insync.replicas: expected a whole number"),
        ({"acks": "2"}, "bad value for acks"),
        ({"unclean.leader.election.enable": "maybe"}, "expected true or false"),
        ({"truncation": "offset"}, "truncation must be hw, kip-101, kip-279 or kip-320"),
        ({"replication.factor": "9"}, "expected a number from 1 to 4"),
        ({"min.insync.replicas": "3"}, "exceeds replication.factor=2"),
    ],
)
def test_bad_overrides_name_the_problem(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        apply_overrides(SCENARIOS_BY_NAME["clean-election"].config, overrides)


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        ("acks1-loss", "record 0:v0, acknowledged to its producer, is missing from the leader 1's log"),
        (
            "hw-truncation-loss",
            "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
        ),
        ("hw-truncation-divergence", "replicas 0 and 1 hold different records at offset 0: v1@e2 and v0@e0"),
        (
            "unclean-election-loss",
            "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
        ),
        (
            "acks-all-single-isr",
            "record 0:v0, acknowledged to its producer, is missing from the leader 0's log",
        ),
    ],
)
def test_each_counterexample_ends_with_a_sentence_saying_why(name, sentence):
    assert outcome_of(name).explanation == sentence
