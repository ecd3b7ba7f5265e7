"""The ZooKeeper-era partition and replica state machines, the elections, ZooKeeper and the request rules."""

from __future__ import annotations

import pytest

from spec.controller import zk_states as sm
from spec.controller.zk_requests import (
    ALL_RULES,
    RULE_SETS,
    UNKNOWN_BROKER_EPOCH,
    Request,
    RequestKind,
    Rule,
    Verdict,
    accepts_leader_epoch,
    broker_verdict,
    deliverable,
    parse_rules,
    rules_name,
    with_request,
    without_request,
)
from spec.controller.zk_states import PartitionState as P
from spec.controller.zk_states import ReplicaState as R
from spec.controller.zookeeper import (
    NO_CONTROLLER,
    NO_SESSION,
    Event,
    PartitionZnode,
    PendingEvent,
    ZooKeeper,
    create_controller,
    end_session,
    isr_change_notification,
    open_session,
    write_partition,
)

# Kafka's `validPreviousStates`, copied from PartitionStateMachine.scala and ReplicaStateMachine.scala.
KAFKA_PARTITION = {
    "NewPartition": {"NonExistentPartition"},
    "OnlinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "OfflinePartition": {"NewPartition", "OnlinePartition", "OfflinePartition"},
    "NonExistentPartition": {"OfflinePartition"},
}
KAFKA_REPLICA = {
    "NewReplica": {"NonExistentReplica"},
    "OnlineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "OfflineReplica": {"NewReplica", "OnlineReplica", "OfflineReplica", "ReplicaDeletionIneligible"},
    "ReplicaDeletionStarted": {"OfflineReplica"},
    "ReplicaDeletionSuccessful": {"ReplicaDeletionStarted"},
    "ReplicaDeletionIneligible": {"OfflineReplica", "ReplicaDeletionStarted"},
    "NonExistentReplica": {"ReplicaDeletionSuccessful"},
}


def test_partition_table_is_kafkas() -> None:
    table = {
        target.value: {s.value for s in sources} for target, sources in sm.PARTITION_VALID_PREVIOUS.items()
    }
    assert table == KAFKA_PARTITION


def test_replica_table_is_kafkas() -> None:
    table = {
        target.value: {s.value for s in sources} for target, sources in sm.REPLICA_VALID_PREVIOUS.items()
    }
    assert table == KAFKA_REPLICA


@pytest.mark.parametrize("current", list(P))
@pytest.mark.parametrize("target", list(P))
def test_partition_move_legality(current: P, target: P) -> None:
    assert sm.partition_move_is_legal(current, target) == (current.value in KAFKA_PARTITION[target.value])


@pytest.mark.parametrize("current", list(R))
@pytest.mark.parametrize("target", list(R))
def test_replica_move_legality(current: R, target: R) -> None:
    assert sm.replica_move_is_legal(current, target) == (current.value in KAFKA_REPLICA[target.value])


# --- elections --------------------------------------------------------------------------


def test_offline_election_first_live_isr_member_in_assignment_order() -> None:
    result = sm.offline_election((2, 0, 1), {0, 1, 2}, {0, 1}, allow_unclean=False)
    assert result == sm.Election(0, (0, 1))


def test_offline_election_new_isr_is_live_isr_members() -> None:
    assert sm.offline_election((0, 1, 2), {0, 1, 2}, {1, 2}, False) == sm.Election(1, (1, 2))


def test_offline_election_clean_fails_without_live_isr_member() -> None:
    assert sm.offline_election((0, 1), {0}, {1}, allow_unclean=False) is None


def test_offline_election_unclean_takes_first_live_replica_alone() -> None:
    assert sm.offline_election((0, 1, 2), {0}, {2, 1}, allow_unclean=True) == sm.Election(
        1, (1,), unclean=True
    )


def test_unclean_election_needs_a_live_replica() -> None:
    assert sm.offline_election((0, 1), {0}, set(), allow_unclean=True) is None


def test_reassignment_election_scans_target_and_keeps_isr() -> None:
    assert sm.reassignment_election((2, 1), {0, 1, 2}, {0, 1, 2}) == sm.Election(2, (0, 1, 2))
    assert sm.reassignment_election((2, 1), {0, 1}, {0, 1, 2}) == sm.Election(1, (0, 1))
    assert sm.reassignment_election((2,), {0, 1}, {0, 1, 2}) is None


def test_preferred_election_only_the_head() -> None:
    assert sm.preferred_election((0, 1), {0, 1}, {0, 1}) == sm.Election(0, (0, 1))
    assert sm.preferred_election((0, 1), {1}, {0, 1}) is None  # head not in the ISR: no election
    assert sm.preferred_election((0, 1), {0, 1}, {1}) is None  # head not live


def test_controlled_shutdown_election_skips_and_drops_shutting_down() -> None:
    result = sm.controlled_shutdown_election((0, 1, 2), {0, 1, 2}, {0, 1, 2}, {0})
    assert result == sm.Election(1, (1, 2))
    assert sm.controlled_shutdown_election((0, 1), {0}, {0, 1}, {0}) is None


# --- ZooKeeper ----------------------------------------------------------------------------


def _zk() -> ZooKeeper:
    return ZooKeeper(
        next_zxid=4,
        sessions=(1, 2, 3),
        controller=2,
        controller_epoch=1,
        partition=PartitionZnode(0, 0, (0, 1), 1, 0),
        assignment=(0, 1),
        watchers=frozenset({2}),
    )


def test_session_end_deletes_ephemerals_and_fires_watches() -> None:
    zk, notifications = end_session(_zk(), 2)
    assert zk.sessions == (1, 2, NO_SESSION)
    assert zk.controller == NO_CONTROLLER and zk.watchers == frozenset()
    assert set(notifications) == {(0, PendingEvent(Event.REELECT)), (1, PendingEvent(Event.REELECT))}


def test_follower_session_end_tells_the_controller() -> None:
    zk, notifications = end_session(_zk(), 1)
    assert zk.controller == 2 and notifications == ((2, PendingEvent(Event.BROKER_CHANGE)),)


def test_new_session_has_a_larger_broker_epoch() -> None:
    zk, _ = end_session(_zk(), 1)
    zk, notifications = open_session(zk, 1)
    assert zk.sessions[1] == 4 and zk.next_zxid == 5
    assert notifications == ((2, PendingEvent(Event.BROKER_CHANGE)),)


def test_controller_znode_first_creator_wins_and_epoch_increments() -> None:
    zk, _ = end_session(_zk(), 2)
    won = create_controller(zk, 0)
    assert won is not None and won.controller == 0 and won.controller_epoch == 2
    assert create_controller(won, 1) is None


def test_partition_write_is_conditional_on_zk_version() -> None:
    zk = _zk()
    znode = PartitionZnode(0, 0, (0,), 1, 1)
    assert write_partition(zk, 1, znode) is None  # BADVERSION
    written = write_partition(zk, 0, znode)
    assert written is not None and written.partition == znode
    assert write_partition(zk, None, znode) is not None  # unconditional


def test_isr_change_notifies_the_watchers() -> None:
    assert isr_change_notification(_zk()) == ((2, PendingEvent(Event.ISR_CHANGE)),)


# --- requests and rules -------------------------------------------------------------------


def _lai(controller_epoch: int, broker_epoch: int = 5) -> Request:
    return Request(RequestKind.LEADER_AND_ISR, controller_epoch, broker_epoch, 0, 1, (0, 1), 1, (0, 1))


def test_stale_controller_epoch_refused() -> None:
    assert broker_verdict(ALL_RULES, _lai(1), 5, 2) is Verdict.STALE_CONTROLLER_EPOCH
    assert broker_verdict(ALL_RULES, _lai(2), 5, 2) is Verdict.ACCEPT
    assert broker_verdict(ALL_RULES, _lai(3), 5, 2) is Verdict.ACCEPT
    assert broker_verdict(ALL_RULES - {Rule.STALE_CONTROLLER_EPOCH}, _lai(1), 5, 2) is Verdict.ACCEPT


def test_stale_broker_epoch_refused_newer_accepted() -> None:
    assert broker_verdict(ALL_RULES, _lai(2, broker_epoch=4), 5, 2) is Verdict.STALE_BROKER_EPOCH
    assert broker_verdict(ALL_RULES, _lai(2, broker_epoch=6), 5, 2) is Verdict.ACCEPT  # KAFKA-9839
    assert broker_verdict(ALL_RULES, _lai(2, broker_epoch=UNKNOWN_BROKER_EPOCH), 5, 2) is Verdict.ACCEPT
    assert broker_verdict(RULE_SETS["before-kip-380"], _lai(2, broker_epoch=4), 5, 2) is Verdict.ACCEPT


def test_leader_epoch_must_grow() -> None:
    assert accepts_leader_epoch(2, 1)
    assert not accepts_leader_epoch(1, 1)
    assert not accepts_leader_epoch(0, 1)


def test_one_controllers_requests_arrive_in_order_two_interleave() -> None:
    channel = with_request(with_request(with_request((), _lai(1)), _lai(2)), _lai(1, broker_epoch=6))
    assert [deliverable(channel, i) for i in range(3)] == [True, True, False]
    assert with_request(channel, _lai(2)) == channel
    assert without_request(channel, 0) == channel[1:]


def test_rule_sets_parse_and_name() -> None:
    assert parse_rules("kafka-2.2") == ALL_RULES
    assert parse_rules("before-kip-380") == ALL_RULES - {Rule.BROKER_EPOCHS}
    assert parse_rules("none") == frozenset()
    assert parse_rules("broker-epochs, stale-controller-epoch") == {
        Rule.BROKER_EPOCHS,
        Rule.STALE_CONTROLLER_EPOCH,
    }
    assert rules_name(ALL_RULES - {Rule.CONDITIONAL_ISR_WRITES}) == "without-conditional-isr-writes"
    with pytest.raises(ValueError, match="unknown rule"):
        parse_rules("no-such-rule")
