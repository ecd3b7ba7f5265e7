"""The replicated partition composed with the KRaft controller (`spec.replication_with_controller`)
and its scenarios (`spec.composed_scenarios`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import replace as dataclass_replace

import pytest

from spec import partition, partition_scenarios
from spec import replication_with_controller as composed
from spec import replication_with_zk_controller as zk_composed
from spec._frozen import replace
from spec.checker import Model, check
from spec.composed_scenarios import REPLICATION_WITH_CONTROLLER, SCENARIOS, model_for
from spec.controller.kraft import (
    BrokerHeartbeat,
    BrokerReplayMetadata,
    ControllerAlterPartition,
    ControllerFenceBroker,
    LeaderHandleAlterPartitionResponse,
)
from spec.controller.kraft_errors import KafkaError
from spec.controller.kraft_partitions import NO_LEADER
from spec.machines import ConfigError, run_scenario
from spec.partition import (
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    LeaderShrinkIsr,
    ProducerSend,
    ReplicaBecomeLeaderOrFollower,
    Role,
)
from spec.replication_with_controller import ComposedConfig, ComposedState
from spec.scenarios import SCENARIOS_BY_NAME
from spec.types import Acks, ReplicaId
from tests.shared_findings import SHARED_FINDINGS

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
CONTROLLER_ACTIONS = (
    ControllerAlterPartition,
    ControllerFenceBroker,
    ControllerMoveLeadership,
    BrokerRestart,  # registration: the unclean-shutdown ISR removal
    BrokerHeartbeat,  # unfencing: an offline partition elects
)


def _apply(config: ComposedConfig, state: ComposedState, *actions: object) -> ComposedState:
    for action in actions:
        after = composed.step(config, state, action)  # type: ignore[arg-type]
        assert after is not None, action
        state = after
    return state


def _transitions(config: ComposedConfig, depth: int) -> Iterator[tuple[ComposedState, object, ComposedState]]:
    """Every transition within `depth` steps of the initial state (breadth first, states
    merged by the model's canonical key)."""
    start = composed.initial_state(config)
    seen = {composed.canonical(start)}
    frontier = deque([(start, 0)])
    while frontier:
        state, level = frontier.popleft()
        if level == depth:
            continue
        for action in composed.candidate_actions(config, state):
            after = composed.step(config, state, action)
            if after is None:
                continue
            yield state, action, after
            key = composed.canonical(after)
            if key not in seen:
                seen.add(key)
                frontier.append((after, level + 1))


# --- the scenarios -----------------------------------------------------------------------


def test_every_replication_scenario_is_composed_with_the_same_question():
    originals = {scenario.name: scenario for scenario in partition_scenarios.SCENARIOS}
    assert [scenario.name for scenario in SCENARIOS] == [
        f"{name}-on-{generation}" for generation in ("kraft", "zk") for name in originals
    ]
    for scenario in SCENARIOS:
        name, _, generation = scenario.name.rpartition("-on-")
        original = originals[name]
        assert scenario.config.controller is composed.ControllerGeneration(generation)
        assert scenario.expect_violation == original.expect_violation
        assert set(original.invariants) <= set(scenario.invariants)
        assert scenario.witnesses == original.witnesses
        assert scenario.config.truncation is original.config.truncation
        assert scenario.config.unclean_leader_election == original.config.unclean_leader_election
        assert scenario.config.producer_acks == original.config.producer_acks
        assert scenario.config.min_insync_replicas == original.config.min_insync_replicas
        assert SCENARIOS_BY_NAME[scenario.name] is scenario


FAST_COUNTEREXAMPLES = [
    ("acks1-loss-on-kraft", 3),
    ("unclean-election-loss-on-kraft", 8),
    ("acks-all-single-isr-on-kraft", 10),
    ("hw-truncation-loss-on-kraft", 11),
    ("acks1-loss-on-zk", 3),
    ("unclean-election-loss-on-zk", 7),
    ("acks-all-single-isr-on-zk", 9),
    ("hw-truncation-loss-on-zk", 13),
    ("hw-truncation-divergence-on-zk", 15),
]


@pytest.mark.parametrize(("name", "steps"), FAST_COUNTEREXAMPLES)
def test_counterexample_is_found_and_its_length_is_pinned(name, steps):
    outcome = SHARED_FINDINGS.outcome(BY_NAME[name])
    assert outcome.as_expected
    violation = outcome.result.violation
    assert violation is not None
    assert len(violation.trace) - 1 == steps


@pytest.mark.slow
def test_kip101_scenario_2_on_kraft_is_the_partition_path_with_replays():
    outcome = SHARED_FINDINGS.outcome(BY_NAME["hw-truncation-divergence-on-kraft"])
    violation = outcome.result.violation
    assert outcome.as_expected and violation is not None
    actions = [type(step.action).__name__ for step in violation.trace[1:]]
    assert len(actions) == 16
    # the lossy crash is seen only at session expiry; the restarted broker leads only after
    # replaying its election; the follower keeps its stale record by truncating to its HW
    crash = actions.index("BrokerCrash")
    assert actions[crash + 1] == "ControllerFenceBroker"
    assert actions[-1] == "FollowerTruncate"
    assert actions[-2] == "BrokerReplayMetadata"
    assert "replicas 0 and 1 hold different records at offset 0" in (outcome.explanation or "")


@pytest.mark.slow
@pytest.mark.parametrize("name", [scenario.name for scenario in SCENARIOS if not scenario.expect_violation])
def test_scenario_holds_within_its_bound_and_is_not_vacuous(name):
    outcome = SHARED_FINDINGS.outcome(BY_NAME[name])
    assert outcome.found == "no violation"
    assert outcome.as_expected, outcome.missing_witnesses


def test_acks1_loss_on_kraft_is_a_zombie_leader_demoted_by_replay():
    violation = SHARED_FINDINGS.outcome(BY_NAME["acks1-loss-on-kraft"]).result.violation
    assert violation is not None
    assert [step.action for step in violation.trace[1:]] == [
        ProducerSend(ReplicaId(0), Acks.LEADER),
        ControllerMoveLeadership(ReplicaId(1)),
        BrokerReplayMetadata(1),
    ]


def test_the_controller_generation_is_a_setting():
    scenario = BY_NAME["acks1-loss-on-kraft"]
    outcome = run_scenario(scenario, overrides={"controller": "zk"})
    assert outcome.config.controller is composed.ControllerGeneration.ZK
    violation = outcome.result.violation
    assert violation is not None
    assert isinstance(violation.trace[-1].state, zk_composed.ZkComposedState)
    assert type(violation.trace[-1].action).__name__ == "BrokerReceiveLeaderAndIsr"
    with pytest.raises(ConfigError, match="controller"):
        REPLICATION_WITH_CONTROLLER.apply_overrides(scenario.config, {"controller": "raft"})
    updated = REPLICATION_WITH_CONTROLLER.apply_overrides(scenario.config, {"max.alter.partitions": "1"})
    assert updated.max_alter_partitions == 1


# --- the glue ----------------------------------------------------------------------------


def test_leadership_reaches_a_replica_only_by_replaying_the_metadata_log():
    """No step but BrokerReplayMetadata changes a live replica's leader epoch, role or
    leader, and only controller actions change the controller's partition registration."""
    config = ComposedConfig(max_records=1, max_leader_moves=1)
    replays = 0
    for before, action, after in _transitions(config, depth=10):
        if after.controller.partition != before.controller.partition:
            assert isinstance(action, CONTROLLER_ACTIONS), action
        for old, new in zip(before.replicas, after.replicas, strict=True):
            if (
                old.alive
                and new.alive
                and (old.leader_epoch, old.role, old.leader)
                != (
                    new.leader_epoch,
                    new.role,
                    new.leader,
                )
            ):
                assert isinstance(action, BrokerReplayMetadata), action
                replays += 1
    assert replays > 0


def test_replay_applies_the_partition_specs_leader_and_isr():
    config = ComposedConfig()
    state = _apply(config, composed.initial_state(config), ControllerMoveLeadership(ReplicaId(1)))
    assert state.controller.partition.leader == 1
    assert state.replicas[1].role is Role.FOLLOWER  # the controller decided; the broker does not know
    replayed = _apply(config, state, BrokerReplayMetadata(1))
    expected = partition.replica_become_leader_or_follower(
        composed.partition_config(config),
        composed.as_partition_state(state),
        ReplicaBecomeLeaderOrFollower(ReplicaId(1)),
    )
    assert expected is not None
    assert replayed.replicas == expected.replicas
    assert replayed.replicas[1].role is Role.LEADER and replayed.replicas[1].leader_epoch == 1
    assert replayed.replicas[0].role is Role.LEADER  # a zombie until it replays too


def test_a_crash_is_seen_only_when_the_session_expires():
    config = ComposedConfig()
    start = composed.initial_state(config)
    crashed = _apply(config, start, BrokerCrash(ReplicaId(0), 0))
    assert crashed.controller == start.controller
    fenced = _apply(config, crashed, ControllerFenceBroker(0))
    registration = fenced.controller.partition
    assert (registration.leader, registration.isr, registration.leader_epoch) == (1, frozenset({1}), 1)
    registration_0 = fenced.controller.registrations[0]
    assert registration_0 is not None and registration_0.fenced
    # the restarted broker gets a new broker epoch, fenced, and leads nothing until it replays
    restarted = _apply(config, fenced, BrokerRestart(ReplicaId(0)))
    new_registration = restarted.controller.registrations[0]
    assert new_registration is not None and new_registration.fenced
    assert restarted.brokers[0].broker_epoch == new_registration.epoch == fenced.controller.log_end
    assert restarted.replicas[0].role is Role.UNKNOWN
    assert composed.step(config, restarted, BrokerHeartbeat(0)) is None  # not replayed its registration yet
    unfenced = _apply(config, restarted, BrokerReplayMetadata(0), BrokerHeartbeat(0))
    final = unfenced.controller.registrations[0]
    assert final is not None and not final.fenced


def test_a_zombie_leaders_alter_partition_is_fenced():
    config = ComposedConfig()
    state = _apply(
        config,
        composed.initial_state(config),
        ProducerSend(ReplicaId(0), Acks.ALL),
        ClockTick(),
        LeaderShrinkIsr(ReplicaId(0), ReplicaId(1)),
    )
    # the shrink is in flight: the leader's HW still waits for the follower (maximal ISR)
    assert state.replicas[0].isr == frozenset({0, 1}) and state.replicas[0].log.high_watermark == 0
    state = _apply(config, state, ControllerMoveLeadership(ReplicaId(1)), ControllerAlterPartition(0))
    answer = state.alter_answers[0]
    assert answer is not None and answer[1] is KafkaError.FENCED_LEADER_EPOCH
    assert state.controller.partition.isr == frozenset({0, 1})
    state = _apply(config, state, LeaderHandleAlterPartitionResponse(0))
    assert state.brokers[0].pending is not None  # waits for metadata, as Kafka does
    assert not state.history.committed


def test_a_committed_shrink_lets_the_hw_advance_only_once_the_leader_learns_it():
    config = ComposedConfig()
    state = _apply(
        config,
        composed.initial_state(config),
        ProducerSend(ReplicaId(0), Acks.ALL),
        ClockTick(),
        LeaderShrinkIsr(ReplicaId(0), ReplicaId(1)),
        ControllerAlterPartition(0),
    )
    assert state.controller.partition.isr == frozenset({0})
    assert state.replicas[0].log.high_watermark == 0
    for learn in (LeaderHandleAlterPartitionResponse(0), BrokerReplayMetadata(0)):
        learned = _apply(config, state, learn)
        assert learned.replicas[0].isr == frozenset({0})
        assert learned.replicas[0].log.high_watermark == 1
        assert learned.history.committed == frozenset({(0, 0)})


def test_the_maximal_isr_covers_an_expansion_the_leader_has_not_heard_of():
    """The window KIP-497 is about is reached, and in it the leader's HW still waits for
    the new member."""
    config = ComposedConfig(max_records=1, max_leader_moves=0, max_crashes=1)
    windows = 0
    for _, _, after in _transitions(config, depth=10):
        registration = after.controller.partition
        if registration.leader == NO_LEADER:
            continue
        leader = after.replicas[registration.leader]
        metadata = after.brokers[registration.leader]
        if leader.alive and leader.role is Role.LEADER and leader.leader_epoch == registration.leader_epoch:
            if not registration.isr <= metadata.committed_isr:
                windows += 1
            assert composed.maximal_isr_covers_controller_isr(after)
    assert windows > 0


def test_replication_invariants_hold_under_kafkas_promises():
    """Every invariant Kafka promises (all but acknowledged_records_survive, which acks=1
    and a shrunk ISR break by design), with acks=1 and acks=all producers, min ISR 2."""
    config = ComposedConfig(producer_acks=(Acks.LEADER, Acks.ALL), min_insync_replicas=2, max_records=1)
    invariants = tuple(name for name in composed.INVARIANTS if name != "acknowledged_records_survive")
    result = check(model_for(config, invariants, ("record_committed",)), 10)
    assert result.violation is None
    assert result.witnesses_reached["record_committed"]


def test_the_canonical_key_merges_states_without_changing_the_outcome():
    scenario = BY_NAME["unclean-election-loss-on-kraft"]
    model = model_for(scenario.config, scenario.invariants)
    plain: Model[ComposedState, composed.Action] = dataclass_replace(model, canonical=None)
    merged, unmerged = check(model, scenario.max_depth), check(plain, scenario.max_depth)
    assert merged.violation is not None and unmerged.violation is not None
    assert len(merged.violation.trace) == len(unmerged.violation.trace)
    assert merged.distinct_states < unmerged.distinct_states


# --- the ZooKeeper-era glue --------------------------------------------------------------


def _zk_transitions(
    config: ComposedConfig, depth: int
) -> Iterator[tuple[zk_composed.ZkComposedState, object, zk_composed.ZkComposedState]]:
    start = zk_composed.initial_state(config)
    seen = {start}
    frontier = deque([(start, 0)])
    while frontier:
        state, level = frontier.popleft()
        if level == depth:
            continue
        for action in zk_composed.candidate_actions(config, state):
            after = zk_composed.step(config, state, action)
            if after is None:
                continue
            yield state, action, after
            if after not in seen:
                seen.add(after)
                frontier.append((after, level + 1))


ZK = ComposedConfig(controller=composed.ControllerGeneration.ZK, max_records=1, max_leader_moves=1)


def test_zk_leadership_reaches_a_replica_only_through_a_leader_and_isr_request():
    """No step but BrokerReceiveLeaderAndIsr changes a live replica's leader epoch, role or
    leader; the state znode's leader epoch changes only by the controller's writes."""
    accepted = 0
    for before, action, after in _zk_transitions(ZK, depth=9):
        old_znode, new_znode = before.zk.partition, after.zk.partition
        assert old_znode is not None and new_znode is not None
        if new_znode.leader_epoch != old_znode.leader_epoch:
            assert isinstance(action, (zk_composed.ControllerHandleBrokerChange, ControllerMoveLeadership))
        for old, new in zip(before.replicas, after.replicas, strict=True):
            if (
                old.alive
                and new.alive
                and (old.leader_epoch, old.role, old.leader)
                != (
                    new.leader_epoch,
                    new.role,
                    new.leader,
                )
            ):
                assert isinstance(action, zk_composed.BrokerReceiveLeaderAndIsr), action
                accepted += 1
    assert accepted > 0


def test_zk_isr_changes_are_conditional_writes_the_controller_sees_later():
    state = zk_composed.initial_state(ZK)
    for action in (
        ProducerSend(ReplicaId(0), Acks.ALL),
        ClockTick(),
        LeaderShrinkIsr(ReplicaId(0), ReplicaId(1)),
    ):
        after = zk_composed.step(ZK, state, action)
        assert after is not None, action
        state = after
    znode = state.zk.partition
    assert znode is not None and znode.isr == (0,) and znode.zk_version == 1 and znode.leader_epoch == 0
    assert state.zk_versions[0] == 1
    assert state.cached.isr == (0, 1)  # the controller has not handled the notification yet
    assert state.history.committed == frozenset({(0, 0)})
    refreshed = zk_composed.step(ZK, state, zk_composed.ControllerHandleIsrChange())
    assert refreshed is not None and refreshed.cached == znode


def test_zk_a_leader_with_a_stale_zk_version_cannot_change_the_isr():
    """KAFKA-2729: the shrink is refused (BADVERSION) while the leader's zkVersion is stale."""
    state = zk_composed.initial_state(ZK)
    state = replace(state, zk_versions=(7, 0))
    for action in (ProducerSend(ReplicaId(0), Acks.ALL), ClockTick()):
        after = zk_composed.step(ZK, state, action)
        assert after is not None
        state = after
    assert zk_composed.step(ZK, state, LeaderShrinkIsr(ReplicaId(0), ReplicaId(1))) is None


def test_zk_a_crash_is_seen_only_after_the_session_expires():
    state = zk_composed.initial_state(ZK)
    crashed = zk_composed.step(ZK, state, BrokerCrash(ReplicaId(0), 0))
    assert crashed is not None and crashed.zk == state.zk and not crashed.events
    expired = zk_composed.step(ZK, crashed, zk_composed.SessionExpire(0))
    assert expired is not None and expired.zk.partition == state.zk.partition
    handled = zk_composed.step(ZK, expired, zk_composed.ControllerHandleBrokerChange())
    assert handled is not None
    znode = handled.zk.partition
    assert znode is not None and (znode.leader, znode.leader_epoch, znode.isr) == (1, 1, (1,))
    assert [request.leader for request in handled.channels[1]] == [1]
    assert handled.replicas[1].role is Role.FOLLOWER  # until it accepts the request
