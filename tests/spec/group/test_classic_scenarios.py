"""The classic group's scenarios settle as their docstrings say, with the shortest traces they
claim; each mutant the spec is meant to catch (a one-line change of a named rule) is caught."""

from __future__ import annotations

from dataclasses import replace

import pytest

from spec.checker import check
from spec.group import classic, classic_consumer, classic_coordinator
from spec.group.classic import ClassicConfig, ConsumerProcess
from spec.group.classic_scenarios import CLASSIC_GROUP, SAFETY, SCENARIOS, model_for
from spec.group.types import ClassicGroupState, Errors
from spec.machines import ConfigError, Scenario, ScenarioOutcome, run_scenario
from tests.shared_findings import SHARED_FINDINGS

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def outcome_of(name: str) -> ScenarioOutcome[ClassicConfig]:
    """Each scenario is checked once per test session (shared with the other tests)."""
    return SHARED_FINDINGS.outcome(BY_NAME[name])


SHORTEST_TRACES = {
    "classic-zombie-commit-unchecked": 7,
    "classic-cooperative-one-round": 11,
    "classic-late-sync-kafka-13419": 12,
    "classic-static-rejoin-kafka-9801": 7,
    "classic-lost-sync-kafka-12890": 7,
}
"""The length of each counterexample (BFS: no shorter trace exists)."""


def test_names_are_unique_kebab_case_and_every_property_exists():
    assert len(BY_NAME) == len(SCENARIOS) == 18
    known = {*classic.INVARIANTS, *classic.STEP_PROPERTIES, classic.STUCK}
    for scenario in SCENARIOS:
        assert scenario.name == scenario.name.lower() and " " not in scenario.name
        assert set(scenario.invariants) <= known
        assert set(scenario.witnesses) <= set(classic.WITNESSES)
        assert scenario.expect_violation or scenario.witnesses
        assert CLASSIC_GROUP.validate(scenario.config) is None


@pytest.mark.parametrize("name", [scenario.name for scenario in SCENARIOS])
def test_every_scenario_settles_as_expected_quickly(name):
    outcome = outcome_of(name)
    assert outcome.as_expected, (outcome.found, outcome.missing_witnesses)
    assert outcome.result.seconds < 20  # well under a second each on an idle machine
    if not outcome.scenario.expect_violation:
        assert outcome.result.complete  # the whole bounded space, not just up to the depth bound


@pytest.mark.parametrize(("name", "length"), SHORTEST_TRACES.items())
def test_counterexample_lengths(name, length):
    violation = outcome_of(name).result.violation
    assert violation is not None and len(violation.trace) - 1 == length
    assert set(SHORTEST_TRACES) == {scenario.name for scenario in SCENARIOS if scenario.expect_violation}


def test_the_kafka_13419_trace_is_a_late_sync_that_keeps_partitions():
    violation = outcome_of("classic-late-sync-kafka-13419").result.violation
    assert violation is not None and violation.property_name == "partition_read_by_one_consumer"
    last = violation.trace[-1].state
    assert ("SyncGroup", Errors.UNKNOWN_MEMBER_ID) in last.answered
    readers = [consumer for consumer in last.consumers if "t0-0" in {str(p) for p in consumer.reading}]
    assert len(readers) == 2
    explanation = outcome_of("classic-late-sync-kafka-13419").explanation
    assert explanation is not None and "t0-0 is read by" in explanation


def test_the_kafka_9801_trace_leaves_a_partition_without_owner():
    outcome = outcome_of("classic-static-rejoin-kafka-9801")
    assert outcome.result.violation is not None
    last = outcome.result.violation.trace[-1].state
    assert last.group.state is ClassicGroupState.STABLE
    assert outcome.explanation is not None and "[t0-0] has no owner" in outcome.explanation


def test_describe_state_labels_every_component():
    state = classic.initial_state(BY_NAME["classic-static-replaced"].config)
    lines = CLASSIC_GROUP.describe_state(state)
    labels = [line.split(":")[0] for line in lines]
    assert labels == [
        "group",
        "member i0-0",
        "member c1-1",
        "consumer c0",
        "consumer c1",
        "consumer c2",
        "in flight",
    ]
    assert "Stable generation 1" in lines[0] and "instance i0" in lines[1]


def test_settings_use_kafka_names_and_refuse_inconsistent_configs():
    base = BY_NAME["classic-member-joins"].config
    config = CLASSIC_GROUP.apply_overrides(
        base, {"partition.assignment.strategy": "roundrobin,range", "max.pauses": "2"}
    )
    assert config.partition_assignment_strategy == ("roundrobin", "range") and config.max_pauses == 2
    with pytest.raises(ConfigError):
        CLASSIC_GROUP.apply_overrides(base, {"partition.assignment.strategy": "sticky"})
    with pytest.raises(ConfigError):
        CLASSIC_GROUP.apply_overrides(base, {"rebalance.protocol": "cooperative"})  # range cannot cooperate
    assert "session.timeout.expires" in CLASSIC_GROUP.settings and "group.max.size" in CLASSIC_GROUP.settings
    assert CLASSIC_GROUP.apply_overrides(base, {"partitions": "5"}).topics == (("t0", 5),)


# --- mutants: one-line changes of named rules, each caught -----------------------------------


def violated(
    name: str, config: ClassicConfig | None = None, properties: tuple[str, ...] = SAFETY
) -> str | None:
    scenario = BY_NAME[name]
    mutant: Scenario[ClassicConfig] = replace(
        scenario, config=config or scenario.config, invariants=properties
    )
    outcome = run_scenario(mutant)
    violation = outcome.result.violation
    return violation.property_name if violation is not None else None


def test_heartbeat_answers_none_in_completing_rebalance_as_kafka_does():
    assert classic_coordinator.HEARTBEAT_ERROR_BY_STATE[ClassicGroupState.COMPLETING_REBALANCE] is Errors.NONE


def test_mutant_heartbeat_hides_a_rebalance_is_caught_as_stuck(monkeypatch):
    table = dict(classic_coordinator.HEARTBEAT_ERROR_BY_STATE)
    table[ClassicGroupState.PREPARING_REBALANCE] = Errors.NONE
    monkeypatch.setattr(classic_coordinator, "HEARTBEAT_ERROR_BY_STATE", table)
    assert violated("classic-member-joins") == classic.STUCK


def test_mutant_stale_generation_commit_accepted_is_caught():
    config = replace(BY_NAME["classic-zombie-commit-fenced"].config, offset_commit_checks_generation=False)
    assert violated("classic-zombie-commit-fenced", config) == "stale_commits_never_land"


@pytest.mark.parametrize("name", ["classic-member-leaves", "classic-offsets-expire-when-empty"])
def test_mutant_offsets_expire_in_a_non_empty_group_is_caught(monkeypatch, name):
    monkeypatch.setattr(classic, "offsets_may_expire", lambda group: True)
    assert violated(name) == "offsets_expire_only_when_empty"


def test_mutant_leader_is_not_the_first_joiner_is_caught(monkeypatch):
    monkeypatch.setattr(classic_coordinator, "leader_after_add", lambda group, member_id: member_id)
    assert violated("classic-member-joins") == "leader_stays_while_it_rejoins"


def test_mutant_static_restart_rebalances_is_caught(monkeypatch):
    monkeypatch.setattr(classic_coordinator, "static_replacement_rebalances", lambda group, rules: True)
    properties = (*SAFETY, "static_restart_keeps_generation")
    assert violated("classic-static-restart", properties=properties) == "static_restart_keeps_generation"


def test_mutant_partition_released_before_revocation_is_caught():
    config = replace(BY_NAME["classic-cooperative-join"].config, withhold_transferring_partitions=False)
    assert violated("classic-cooperative-join", config) == "partition_read_by_one_consumer"


def test_mutant_static_rejoin_mid_rebalance_without_rebalance_is_caught():
    config = replace(
        BY_NAME["classic-static-rejoin-fixed"].config, static_join_rebalances_when_completing=False
    )
    assert violated("classic-static-rejoin-fixed", config) == "stable_group_assigns_every_partition"


def test_the_kafka_12890_trace_is_stuck_in_completing_rebalance():
    outcome = outcome_of("classic-lost-sync-kafka-12890")
    violation = outcome.result.violation
    assert violation is not None and violation.property_name == classic.STUCK
    last = violation.trace[-1].state
    assert last.group.state is ClassicGroupState.COMPLETING_REBALANCE and last.group.pending_sync
    assert outcome.explanation is not None and "no action can move it on" in outcome.explanation


def test_mutant_no_pending_sync_timer_is_caught_as_stuck():
    config = replace(BY_NAME["classic-lost-sync-fixed"].config, pending_sync_timer=False)
    assert violated("classic-lost-sync-fixed", config) == classic.STUCK


def test_mutant_failed_sync_keeps_partitions_is_caught():
    config = replace(BY_NAME["classic-late-sync-fixed"].config, failed_sync_gives_up_partitions=False)
    assert violated("classic-late-sync-fixed", config) == "partition_read_by_one_consumer"


def test_the_model_builder_splits_invariants_from_step_properties():
    model = model_for(BY_NAME["classic-member-joins"].config, SAFETY, ("settled_after_rebalance",))
    assert set(model.invariants) == {name for name in SAFETY if name in classic.INVARIANTS} | {classic.STUCK}
    assert set(model.step_properties) == {name for name in SAFETY if name in classic.STEP_PROPERTIES}


CHURN = {
    "cooperative, rejoin + stall + resume + commit": ClassicConfig(
        partition_assignment_strategy=("cooperative-sticky",),
        max_rejoins=1,
        max_pauses=1,
        max_resumes=1,
        max_commits=1,
    ),
    "eager, a joiner + stall + resume": ClassicConfig(
        topics=(("t0", 3),),
        consumers=(ConsumerProcess("c0"), ConsumerProcess("c1"), ConsumerProcess("c2", initial_member=False)),
        max_pauses=1,
        max_resumes=1,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHURN))
def test_kafka_rules_hold_under_more_churn(name):
    """Larger bounds than the named scenarios (about 10-20 thousand states each): every safety
    property and the stuck check hold over the whole space under Kafka's rules."""
    result = check(model_for(CHURN[name], SAFETY), 80)
    assert result.violation is None and result.complete
    assert result.distinct_states > 5000


def test_keeping_partitions_only_after_rebalance_in_progress_needs_a_second_rejoin(monkeypatch):
    """KAFKA-13419 proper: the old rule only for REBALANCE_IN_PROGRESS answers (the KAFKA-12983
    reset after UNKNOWN_MEMBER_ID fixed): safe with one spontaneous rejoin, two readers in 15
    steps with two (as classic_scenarios' docstring says)."""
    original = classic_consumer.on_sync_response

    def keep_only_after_rebalance_in_progress(rules, consumer, response):
        if response.error is not Errors.REBALANCE_IN_PROGRESS:
            rules = replace(rules, failed_sync_gives_up_partitions=True)
        return original(rules, consumer, response)

    monkeypatch.setattr(classic_consumer, "on_sync_response", keep_only_after_rebalance_in_progress)
    scenario = BY_NAME["classic-late-sync-kafka-13419"]
    one = run_scenario(scenario)
    assert one.result.violation is None and one.result.complete
    two = run_scenario(replace(scenario, config=replace(scenario.config, max_rejoins=2)))
    violation = two.result.violation
    assert violation is not None and len(violation.trace) - 1 == 15
    assert ("SyncGroup", Errors.UNKNOWN_MEMBER_ID) not in violation.trace[-1].state.answered


@pytest.mark.parametrize("rejoins", [1, 2])
def test_eager_consumers_need_neither_cooperative_rule(rejoins):
    """The late-sync scenario with the old rule but eager consumers (range): nothing is owned
    while rebalancing, so nothing is read twice."""
    scenario = BY_NAME["classic-late-sync-kafka-13419"]
    config = replace(scenario.config, partition_assignment_strategy=("range",), max_rejoins=rejoins)
    outcome = run_scenario(replace(scenario, config=config))
    assert outcome.result.violation is None and outcome.result.complete
