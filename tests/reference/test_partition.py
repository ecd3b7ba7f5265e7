"""The definitional replicated partition: spec actions plus the bookkeeping clients need."""

from __future__ import annotations

import pytest

from reference.partition import UNBOUNDED, ProduceResult, ReferencePartition, running_config
from spec import partition as spec_partition
from spec.partition import Action, BrokerCrash, ClockTick, LeaderHandleFetch, ProducerSend, Role
from spec.types import Acks, ErrorCode, Record, TruncationRule


def make(replication_factor: int = 2, min_insync_replicas: int = 1, lag: int = 0) -> ReferencePartition:
    return ReferencePartition(
        running_config(
            replication_factor=replication_factor,
            min_insync_replicas=min_insync_replicas,
            unclean_leader_election=False,
            truncation=TruncationRule.LEADER_EPOCH,
            replica_lag_ticks=lag,
        )
    )


def replicate_to(partition: ReferencePartition, follower: int) -> None:
    assert partition.leader_handle_fetch(follower)
    assert partition.follower_handle_fetch_response(follower)


def test_running_config_lifts_every_exploration_bound() -> None:
    config = make(3, 2).config
    assert (config.max_records, config.max_crashes, config.max_lossy_crashes, config.max_leader_moves) == (
        UNBOUNDED,
    ) * 4
    assert config.controller_elections and config.retention
    assert set(config.producer_acks) == set(Acks)
    with pytest.raises(ValueError, match="replication factor"):
        running_config(
            replication_factor=0,
            min_insync_replicas=1,
            unclean_leader_election=False,
            truncation=TruncationRule.LEADER_EPOCH,
            replica_lag_ticks=0,
        )


def test_a_fresh_partition_is_the_spec_initial_state() -> None:
    partition = make(3)
    assert partition.state == spec_partition.initial_state(partition.config)
    assert [replica.role for replica in partition.state.replicas] == [
        Role.LEADER,
        Role.FOLLOWER,
        Role.FOLLOWER,
    ]
    assert partition.next_value == 0
    assert partition.acknowledged == frozenset()


def test_acks_0_and_1_complete_at_once_and_only_acks_1_is_acknowledged() -> None:
    partition = make()
    assert partition.produce(0, Acks.NONE, 0) == ProduceResult(ErrorCode.NONE, 0, True)
    assert partition.produce(0, Acks.LEADER, 1) == ProduceResult(ErrorCode.NONE, 1, True)
    assert partition.acknowledged == {(1, 1)}
    assert partition.state.replicas[0].log.records == (Record(0, 0), Record(0, 1))


def test_acks_all_waits_for_the_high_watermark() -> None:
    partition = make()
    assert partition.produce(0, Acks.ALL, 0) == ProduceResult(ErrorCode.NONE, 0, False)
    assert partition.pending_acks_all == {(0, 0)}
    replicate_to(partition, 1)  # the follower holds the record; the leader learns it next fetch
    assert partition.acknowledged == frozenset()
    assert partition.leader_handle_fetch(1)
    assert partition.acknowledged == {(0, 0)}
    assert partition.pending_acks_all == frozenset()
    assert partition.failed_acks_all == frozenset()


def test_acks_all_with_a_single_replica_is_acknowledged_in_the_same_step() -> None:
    partition = make(1)
    assert partition.produce(0, Acks.ALL, 0) == ProduceResult(ErrorCode.NONE, 0, False)
    assert partition.acknowledged == {(0, 0)}


def test_every_not_enough_replicas_is_answered_and_appends_nothing() -> None:
    partition = make(2, min_insync_replicas=2)
    assert partition.clock_tick()
    assert partition.leader_shrink_isr(0, 1)
    for _ in range(3):  # the spec's checker answers only the first; a broker answers each
        assert partition.produce(0, Acks.ALL, 0) == ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS, None, True)
    assert partition.next_value == 0
    assert partition.produce(0, Acks.LEADER, 0) == ProduceResult(ErrorCode.NONE, 0, True)
    transition = partition.last_transition
    assert transition is not None and transition.action == ProducerSend(0, Acks.LEADER)


def test_values_must_come_in_append_order() -> None:
    partition = make()
    with pytest.raises(ValueError, match="next value 0"):
        partition.produce(0, Acks.LEADER, 7)
    assert partition.produce(1, Acks.LEADER, 0) is None  # a follower refuses; no value used up
    assert partition.produce(0, Acks.LEADER, 0) is not None
    assert partition.next_value == 1


def test_a_refused_action_changes_nothing() -> None:
    partition = make()
    before = partition.state
    assert not partition.follower_handle_fetch_response(1)  # nothing in flight
    assert not partition.broker_restart(0)  # alive
    assert not partition.leader_shrink_isr(0, 1)  # caught up
    assert not partition.broker_crash(0, 5)  # the log holds nothing at 5
    assert not partition.leader_handle_fetch(7)  # no such broker
    assert not partition.broker_crash(-1, 0)  # no such broker (not the last one by Python indexing)
    assert partition.state is before
    assert partition.last_transition is not None and partition.last_transition.after is None


def test_an_acks_all_send_fails_when_its_leader_dies() -> None:
    partition = make()
    partition.produce(0, Acks.ALL, 0)
    assert partition.broker_crash(0, 1)
    assert partition.pending_acks_all == frozenset()
    assert partition.failed_acks_all == {(0, 0)}
    assert partition.state.controller.leader == 1


def test_every_step_is_the_spec_step() -> None:
    partition = make(3)
    steps: tuple[Action, ...] = (
        ProducerSend(0, Acks.ALL),
        LeaderHandleFetch(1),
        ClockTick(),
        BrokerCrash(2, 0),
    )
    for action in steps:
        before = partition.state
        assert partition.apply(action)
        assert partition.state == spec_partition.step(partition.config, before, action)
    for enabled in partition.enabled_actions():
        assert partition.would_accept(enabled)
        assert spec_partition.step(partition.config, partition.state, enabled) is not None
