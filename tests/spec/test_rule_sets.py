"""The replication rules by name (`spec.replication_rules`) and the published counterexamples
replayed against the rule that broke and the rule that fixed them (`spec.replication_stories`)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from spec import partition, replication_rules, types
from spec.log import EMPTY_LOG, append, begin_leader_epoch, epoch_start_offset
from spec.machines import ConfigError, ScenarioOutcome, run_scenario
from spec.partition import FollowerTruncate, LeaderHandleFetch, PartitionConfig, Role
from spec.partition_scenarios import PARTITION
from spec.replication_rules import FetchFencing, FollowerHighWatermarkRule, IsrJoinRule, TruncationRule
from spec.replication_stories import SCENARIOS, STORIES, STORIES_BY_NAME
from spec.scenarios import SCENARIOS as ALL_SCENARIOS
from spec.scenarios import SCENARIOS_BY_NAME, check_overrides
from spec.truncation import epoch_truncation_offset
from spec.types import Record
from tests.shared_findings import SHARED_FINDINGS

BROKEN_TRACES = {
    # story: (the property the shortest counterexample breaks, its steps)
    "kip-101-loss": ("committed_records_survive", 10),
    "kip-101-divergence": ("followers_are_prefix_of_leader", 11),
    "kip-279-fast-failover": ("followers_are_prefix_of_leader", 8),
    "kip-320-fenced-truncation": ("strong_isr", 9),
    "kip-320-first-try": ("strong_isr", 12),
    "kafka-7128-isr-expansion": ("committed_records_survive", 13),
    "kafka-14704-follower-hw": ("follower_reads_survive", 7),
    "kip-966-last-replica-standing": ("committed_records_survive_lossy_shutdowns", 10),
    "kip-966-min-isr-hw": ("committed_records_survive", 7),
}

CHEAP_FIXED = {"kip-966-last-replica-standing", "kip-966-min-isr-hw"}
"""Fixed-rule runs of a few seconds; the others take 8-30 s each and are marked slow."""


def outcome(name: str) -> ScenarioOutcome[Any]:
    """Each scenario is checked once per test session (shared with the other tests)."""
    return SHARED_FINDINGS.outcome(SCENARIOS_BY_NAME[name])


# --- the rules by name -------------------------------------------------------------------


RULE_KEYS = {
    "truncation": ("truncation", TruncationRule),
    "fetch.fencing": ("fetch_fencing", FetchFencing),
    "isr.join": ("isr_join", IsrJoinRule),
    "follower.high.watermark": ("follower_high_watermark", FollowerHighWatermarkRule),
}


@pytest.mark.parametrize("key", sorted(RULE_KEYS))
def test_every_rule_value_is_a_set_key_value(key):
    field, rule = RULE_KEYS[key]
    assert PARTITION.settings[key].field == field
    for member in rule:
        config = PARTITION.apply_overrides(PartitionConfig(), {key: str(member.value).upper()})
        assert getattr(config, field) is member
    with pytest.raises(ConfigError):
        PARTITION.apply_overrides(PartitionConfig(), {key: "no-such-rule"})


def test_rule_keys_apply_to_every_scenario_that_knows_them():
    # `check --all --set isr.join=hw` reaches the partition scenarios and no composed one.
    overrides = {
        "truncation": "kip-101",
        "fetch.fencing": "none",
        "isr.join": "hw",
        "follower.high.watermark": "diverging-epoch",
    }
    check_overrides(ALL_SCENARIOS, overrides)
    for scenario in ALL_SCENARIOS:
        if scenario.machine is PARTITION:
            config = scenario.machine.apply_overrides(scenario.config, overrides)
            assert config.isr_join is IsrJoinRule.HIGH_WATERMARK


def test_truncation_keeps_its_old_names():
    assert types.TruncationRule is replication_rules.TruncationRule
    assert TruncationRule["LEADER_EPOCH"] is TruncationRule.KIP_320
    assert (
        PARTITION.apply_overrides(PartitionConfig(), {"truncation": "epoch"}).truncation
        is TruncationRule.KIP_320
    )
    assert PARTITION.apply_overrides(PartitionConfig(), {"truncation": "hw"}).truncation is (
        TruncationRule.HIGH_WATERMARK
    )
    assert [rule.fenced for rule in TruncationRule] == [False, False, False, True]
    assert [rule.asks_the_leader for rule in TruncationRule] == [False, True, True, True]


def test_defaults_are_todays_rules():
    config = PartitionConfig()
    assert config.truncation is TruncationRule.KIP_320
    assert config.fetch_fencing is FetchFencing.CURRENT_LEADER_EPOCH
    assert config.isr_join is IsrJoinRule.EPOCH_START
    assert config.follower_high_watermark is FollowerHighWatermarkRule.OFFSETS_FOR_LEADER_EPOCH
    assert config.election is replication_rules.ElectionRule.CLEAN
    unclean = dataclasses.replace(config, unclean_leader_election=True)
    assert unclean.election is replication_rules.ElectionRule.UNCLEAN


def test_kip101_single_round_keeps_what_kip279_cuts():
    # The fast-failover logs of KIP-279: the follower wrote offset 0 in epoch 1, which the
    # leader (epochs 0 and 2) never had. KIP-101's answer for epoch 1 is the start of epoch 2
    # (offset 1) and the follower keeps its record; KIP-279's rounds cut it.
    leader = begin_leader_epoch(append(begin_leader_epoch(EMPTY_LOG, 0), (Record(0, 0),)), 2)
    follower = append(begin_leader_epoch(EMPTY_LOG, 1), (Record(1, 1),))
    assert partition.kip101_truncation_offset(follower, leader) == 1
    kip279 = epoch_truncation_offset(
        follower.epoch_cache,
        follower.log_end_offset,
        follower.high_watermark,
        leader.epoch_cache,
        leader.log_end_offset,
    )
    assert kip279 == 0


# --- the stories -------------------------------------------------------------------------


def test_every_story_is_registered_as_a_scenario_pair():
    assert set(BROKEN_TRACES) == set(STORIES_BY_NAME)
    assert [scenario.name for scenario in SCENARIOS] == [
        f"{story.name}-{kind}-rule" for story in STORIES for kind in ("broken", "fixed")
    ]
    for scenario in SCENARIOS:
        assert SCENARIOS_BY_NAME[scenario.name] is scenario


@pytest.mark.parametrize("story", STORIES, ids=lambda story: story.name)
def test_broken_and_fixed_runs_differ_only_in_the_story_rules(story):
    broken, fixed = story.scenarios()
    assert set(story.broken_rule) == set(story.fixed_rule)
    assert story.broken_rule != story.fixed_rule
    rule_fields = {story.machine.settings[key].field for key in story.broken_rule}
    differing = {
        item.name
        for item in dataclasses.fields(broken.config)
        if getattr(broken.config, item.name) != getattr(fixed.config, item.name)
    }
    assert differing and differing <= rule_fields
    assert broken.max_depth == fixed.max_depth
    assert set(broken.invariants) <= set(fixed.invariants)
    assert broken.expect_violation and not fixed.expect_violation
    assert fixed.witnesses


SLOW_BROKEN = {"kafka-7128-isr-expansion", "kip-320-first-try"}
"""The 3-replica broken-rule runs: 10-25 s each (12 and 13 steps)."""


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.slow if name in SLOW_BROKEN else ())
        for name in sorted(BROKEN_TRACES)
    ],
)
def test_broken_rule_finds_the_published_counterexample(name):
    result = outcome(f"{name}-broken-rule")
    violation = result.result.violation
    assert result.as_expected and violation is not None
    assert (violation.property_name, len(violation.trace) - 1) == BROKEN_TRACES[name]


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=() if name in CHEAP_FIXED else pytest.mark.slow)
        for name in sorted(BROKEN_TRACES)
    ],
)
def test_fixed_rule_settles_with_the_story_reachable(name):
    result = outcome(f"{name}-fixed-rule")
    assert result.result.violation is None
    assert result.missing_witnesses == ()
    assert all(result.result.witnesses_reached[witness] for witness in result.scenario.witnesses)
    assert result.as_expected


def _trace(name: str) -> Sequence[Any]:
    violation = outcome(f"{name}-broken-rule").result.violation
    assert violation is not None
    return violation.trace


def test_fast_failover_follower_truncates_against_a_leader_without_its_epoch():
    trace = _trace("kip-279-fast-failover")
    truncations = [
        (before.state, after.action)
        for before, after in itertools.pairwise(trace)
        if isinstance(after.action, FollowerTruncate)
    ]
    assert truncations
    state, action = truncations[-1]
    follower = state.replicas[action.follower]
    leader = state.replicas[follower.leader]
    assert partition.follower_epoch_unknown_to_leader(state)
    assert leader.leader_epoch == follower.leader_epoch  # KIP-279's hole needs no stale leader


def test_unfenced_truncation_asks_a_broker_on_an_older_epoch():
    trace = _trace("kip-320-fenced-truncation")
    before, after = trace[-2], trace[-1]
    assert isinstance(after.action, FollowerTruncate)
    follower = before.state.replicas[after.action.follower]
    leader = before.state.replicas[follower.leader]
    assert leader.role is Role.LEADER and leader.leader_epoch < follower.leader_epoch
    assert after.state.replicas[after.action.follower].log.log_end_offset < follower.log.log_end_offset


@pytest.mark.slow
def test_kafka_7128_follower_joins_the_isr_below_the_epoch_start():
    trace = _trace("kafka-7128-isr-expansion")
    joins = [
        (before.state, after.state, after.action)
        for before, after in itertools.pairwise(trace)
        if isinstance(after.action, LeaderHandleFetch)
        and len(after.state.controller.isr) > len(before.state.controller.isr)
    ]
    assert joins
    before, _after, action = joins[-1]
    leader_id = before.replicas[action.follower].leader
    leader = before.replicas[leader_id]
    start = epoch_start_offset(leader.log.epoch_cache, leader.leader_epoch)
    assert start is not None and before.replicas[action.follower].log.log_end_offset < start
    assert trace[-1].state.history.lossy_crashes == 0 and trace[-1].state.history.unclean_elections == 0


def test_kafka_14704_window_is_between_taking_the_hw_and_truncating():
    trace = _trace("kafka-14704-follower-hw")
    last = trace[-1]
    assert isinstance(last.action, FollowerTruncate)
    follower = last.state.replicas[last.action.follower]
    assert follower.pending_truncation is not None
    assert follower.pending_truncation < follower.log.high_watermark
    config = outcome("kafka-14704-follower-hw-broken-rule").config
    # one step later the truncation closes the window
    closed = partition.step(config, last.state, last.action)
    assert closed is not None and partition.follower_reads_survive(closed)


def test_kip101_alone_does_not_close_scenario_1():
    # A model finding the kip-101-loss story's summary states: under KIP-101's truncation (as
    # first shipped, unfenced) the same bounds still lose the committed record.
    story = STORIES_BY_NAME["kip-101-loss"]
    scenario = dataclasses.replace(
        story.scenarios()[0],
        config=PARTITION.apply_overrides(story.config, {"truncation": "kip-101"}),
    )
    result = run_scenario(scenario)
    assert result.result.violation is not None
    assert result.result.violation.property_name == "committed_records_survive"
