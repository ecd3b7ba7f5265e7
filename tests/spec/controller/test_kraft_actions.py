"""Every action of the KRaft controller machine: when it is enabled and what it changes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from spec._frozen import replace
from spec.controller import kraft
from spec.controller.kraft import (
    NOT_REGISTERED,
    Action,
    BrokerCrash,
    BrokerHeartbeat,
    BrokerRegister,
    BrokerReplayMetadata,
    BrokerRequestShutdown,
    BrokerStart,
    ControllerAlterPartition,
    ControllerFenceBroker,
    ControllerReassign,
    FollowerFetch,
    KRaftConfig,
    KRaftState,
    LeaderAlterPartition,
    LeaderFollowerFallsBehind,
    LeaderHandleAlterPartitionResponse,
    LeaderIsrRule,
    ProducerSend,
)
from spec.controller.kraft_brokers import BrokerControlState
from spec.controller.kraft_errors import KafkaError
from spec.controller.kraft_partitions import NO_LEADER, ElrRule, LeaderRecoveryState

CONFIG = KRaftConfig(
    min_insync_replicas=1,
    max_records=2,
    max_crashes=2,
    max_lossy_crashes=1,
    max_lost_sessions=1,
    max_shutdowns=1,
)


def run(actions: Sequence[Action], config: KRaftConfig = CONFIG) -> KRaftState:
    """Apply `actions` from the initial state; each must be enabled."""
    state = kraft.initial_state(config)
    for action in actions:
        after = kraft.step(config, state, action)
        assert after is not None, f"{action} is not enabled"
        state = after
    return state


def refused(state: KRaftState, action: Action, config: KRaftConfig = CONFIG) -> bool:
    return kraft.step(config, state, action) is None


def test_initial_state():
    state = run([])
    partition = state.controller.partition
    assert (partition.leader, partition.isr, partition.leader_epoch, partition.partition_epoch) == (
        0,
        frozenset({0, 1}),
        0,
        0,
    )
    assert [r.epoch for r in state.controller.registrations if r] == [0, 1]  # offsets of their records
    assert state.controller.log_end == 3
    leader = state.brokers[0].leader
    assert leader is not None and leader.maximal_isr == {0, 1} and leader.epoch_start_offset == 0
    assert state.brokers[1].leader is None and state.brokers[1].view == partition
    for name, holds in kraft.INVARIANTS.items():
        assert holds(CONFIG, state), name


def test_produce_appends_on_a_leader_only_and_waits_for_the_maximal_isr():
    state = run([ProducerSend(0)])
    assert state.brokers[0].log == (0,) and state.brokers[0].high_watermark == 0
    assert not state.history.committed
    assert refused(state, ProducerSend(1))  # a follower


def test_two_fetches_replicate_and_commit():
    once = run([ProducerSend(0), FollowerFetch(1)])
    assert once.brokers[1].log == (0,)
    assert once.brokers[0].high_watermark == 0  # the leader learns the follower's end at its next fetch
    twice = run([ProducerSend(0), FollowerFetch(1), FollowerFetch(1)])
    assert twice.brokers[0].high_watermark == 1 and twice.brokers[1].high_watermark == 1
    assert twice.history.committed == {(0, 0)}
    assert refused(twice, FollowerFetch(1))  # nothing left to learn


def test_a_diverging_follower_truncates_first():
    # 0 appends v0 and stops; 1 leads and appends v1; 0 comes back as follower of 1.
    config = KRaftConfig(min_insync_replicas=1, max_records=2, max_crashes=1)
    state = run(
        [
            ProducerSend(0),
            BrokerCrash(0, 1),
            ControllerFenceBroker(0),
            BrokerReplayMetadata(1),
            ProducerSend(1),
            BrokerStart(0),
            BrokerReplayMetadata(0),
        ],
        config,
    )
    assert state.brokers[0].log == (0,) and state.brokers[1].log == (1,)
    truncated = kraft.step(config, state, FollowerFetch(0))
    assert truncated is not None and truncated.brokers[0].log == ()
    assert truncated.brokers[1].leader is not None and truncated.brokers[1].leader.follower_ends[0] is None
    fetched = kraft.step(config, truncated, FollowerFetch(0))
    assert fetched is not None and fetched.brokers[0].log == (1,)


def test_fencing_a_crashed_leader_elects_the_other_isr_member():
    state = run([BrokerCrash(0, 0), ControllerFenceBroker(0)])
    partition = state.controller.partition
    assert (partition.leader, partition.isr, partition.leader_epoch, partition.partition_epoch) == (
        1,
        frozenset({1}),
        1,
        1,
    )
    registration = state.controller.registrations[0]
    assert registration is not None and registration.fenced
    assert state.controller.log_end == 5  # the partition change, then the fence record
    follower = state.brokers[1]
    assert follower.leader is None  # it leads only once it replays the change
    replayed = run([BrokerCrash(0, 0), ControllerFenceBroker(0), BrokerReplayMetadata(1)])
    leader = replayed.brokers[1].leader
    assert leader is not None and (leader.leader_epoch, leader.committed_isr) == (1, frozenset({1}))


def test_a_live_broker_is_fenced_only_within_the_lost_session_bound():
    state = run([ControllerFenceBroker(1)])
    assert state.history.lost_sessions == 1 and state.brokers[1].up
    assert state.controller.partition.isr == {0}
    assert refused(state, ControllerFenceBroker(0))  # bound reached, and broker 0 heartbeats
    unfenced = run([ControllerFenceBroker(1), BrokerHeartbeat(1)])
    registration = unfenced.controller.registrations[1]
    assert registration is not None and not registration.fenced and registration.epoch == 1  # same epoch


def test_a_restart_before_the_session_expires_is_refused_as_a_duplicate():
    state = run([BrokerCrash(1, 0), BrokerStart(1)])
    assert state.brokers[1].up and state.brokers[1].broker_epoch == NOT_REGISTERED
    assert KafkaError.DUPLICATE_BROKER_REGISTRATION in state.history.answers
    assert refused(state, BrokerRegister(1))
    assert refused(state, BrokerReplayMetadata(1))  # it acts on metadata only once registered
    registered = run([BrokerCrash(1, 0), BrokerStart(1), ControllerFenceBroker(1), BrokerRegister(1)])
    registration = registered.controller.registrations[1]
    assert registration is not None and registration.fenced and registration.incarnation == 1
    assert registered.brokers[1].broker_epoch == registration.epoch > 1  # the offset of its new record


def test_an_unclean_restart_leaves_the_isr_and_elr_and_a_clean_one_does_not():
    config = KRaftConfig(max_crashes=1, max_lost_sessions=1)  # min ISR 2, ELR on
    fenced = run([ControllerFenceBroker(1)], config)
    assert fenced.controller.partition.elr == {1}
    unclean = run([ControllerFenceBroker(1), BrokerCrash(1, 0), BrokerStart(1)], config)
    assert unclean.controller.partition.elr == frozenset()
    clean_config = KRaftConfig(max_shutdowns=1, max_lost_sessions=0, min_insync_replicas=2)
    stopped = run([BrokerRequestShutdown(1), BrokerHeartbeat(1)], clean_config)
    assert not stopped.brokers[1].up and stopped.brokers[1].clean_shutdown_epoch == 1
    assert stopped.controller.partition.elr == {1}
    restarted = run([BrokerRequestShutdown(1), BrokerHeartbeat(1), BrokerStart(1)], clean_config)
    assert restarted.controller.partition.elr == {1}  # shut down cleanly: still eligible


def test_a_registered_broker_is_unfenced_only_once_it_replayed_its_registration():
    state = run([BrokerCrash(1, 0), ControllerFenceBroker(1), BrokerStart(1)])
    assert refused(state, BrokerHeartbeat(1))  # not caught up: stays fenced, nothing changes
    caught_up = run([BrokerCrash(1, 0), ControllerFenceBroker(1), BrokerStart(1), BrokerReplayMetadata(1)])
    unfenced = kraft.step(CONFIG, caught_up, BrokerHeartbeat(1))
    assert unfenced is not None
    registration = unfenced.controller.registrations[1]
    assert registration is not None and registration.control_state is BrokerControlState.UNFENCED


def test_controlled_shutdown_moves_leadership_before_the_leader_stops():
    state = run([BrokerRequestShutdown(0), BrokerHeartbeat(0)])
    registration = state.controller.registrations[0]
    assert registration is not None and registration.control_state is BrokerControlState.CONTROLLED_SHUTDOWN
    assert state.controller.partition.leader == 1 and state.controller.partition.isr == {1}
    assert state.brokers[0].up  # not yet allowed to stop: broker 1 has not replayed the change
    assert refused(state, BrokerHeartbeat(0))
    moved = run([BrokerRequestShutdown(0), BrokerHeartbeat(0), BrokerReplayMetadata(1), BrokerHeartbeat(0)])
    assert not moved.brokers[0].up and moved.history.moved_then_stopped
    stopped = moved.controller.registrations[0]
    assert stopped is not None and stopped.fenced


def test_a_broker_that_leads_nothing_stops_at_once():
    state = run([BrokerRequestShutdown(1), BrokerHeartbeat(1)])
    assert not state.brokers[1].up and state.controller.partition.isr == {0}
    assert not state.history.moved_then_stopped


def test_alter_partition_shrink_round_trip():
    sent = run([LeaderAlterPartition(0, 1, False)])
    leader = sent.brokers[0].leader
    assert leader is not None and leader.pending is not None and leader.maximal_isr == {0, 1}
    assert sent.alter_requests[0] is not None and sent.alter_requests[0].isr == {0}
    assert refused(sent, LeaderAlterPartition(0, 1, False))  # one request at a time
    handled = run([LeaderAlterPartition(0, 1, False), ControllerAlterPartition(0)])
    assert handled.controller.partition.isr == {0} and handled.controller.partition.partition_epoch == 1
    assert handled.controller.partition.leader_epoch == 0  # no leader epoch bump on a shrink
    answered = run(
        [
            LeaderAlterPartition(0, 1, False),
            ControllerAlterPartition(0),
            LeaderHandleAlterPartitionResponse(0),
        ]
    )
    leader = answered.brokers[0].leader
    assert leader is not None and leader.pending is None and leader.committed_isr == leader.maximal_isr == {0}


def test_a_caught_up_follower_cannot_be_shrunk_and_an_unfetched_one_cannot_be_added():
    state = run([ProducerSend(0), FollowerFetch(1), FollowerFetch(1)])
    assert refused(state, LeaderAlterPartition(0, 1, False))
    assert refused(run([]), LeaderAlterPartition(0, 1, True))  # already in the ISR


def test_expansion_grows_the_maximal_isr_at_once():
    state = run(
        [
            LeaderAlterPartition(0, 1, False),
            ControllerAlterPartition(0),
            LeaderHandleAlterPartitionResponse(0),
        ]
    )
    assert refused(state, LeaderAlterPartition(0, 1, True))  # no fetch recorded yet
    fetched = kraft.step(CONFIG, state, FollowerFetch(1))
    assert fetched is not None
    expanding = kraft.step(CONFIG, fetched, LeaderAlterPartition(0, 1, True))
    assert expanding is not None
    leader = expanding.brokers[0].leader
    assert leader is not None and leader.committed_isr == {0} and leader.maximal_isr == {0, 1}
    request = expanding.alter_requests[0]
    assert request is not None and request.new_isr == ((0, 0), (1, 1))  # members with their broker epochs


def test_a_stale_partition_epoch_is_answered_invalid_update_version_and_the_leader_waits_for_metadata():
    state = run([LeaderAlterPartition(0, 1, False), ControllerFenceBroker(1), ControllerAlterPartition(0)])
    assert KafkaError.INVALID_UPDATE_VERSION in state.history.answers
    waiting = kraft.step(CONFIG, state, LeaderHandleAlterPartitionResponse(0))
    assert waiting is not None
    leader = waiting.brokers[0].leader
    assert leader is not None and leader.pending is not None  # until new metadata arrives
    replayed = kraft.step(CONFIG, waiting, BrokerReplayMetadata(0))
    assert replayed is not None
    leader = replayed.brokers[0].leader
    assert leader is not None and leader.pending is None and leader.committed_isr == {0}


def test_a_request_from_a_previous_process_is_refused_with_stale_broker_epoch():
    state = run(
        [
            LeaderAlterPartition(0, 1, False),
            BrokerCrash(0, 0),
            BrokerStart(0),
            ControllerFenceBroker(0),
            BrokerRegister(0),
            ControllerAlterPartition(0),
        ]
    )
    assert KafkaError.STALE_BROKER_EPOCH in state.history.answers
    assert state.controller.partition.isr == {1}  # only the fence changed it
    assert state.controller.partition.leader == 1


def test_a_heartbeat_with_a_stale_broker_epoch_changes_nothing():
    state = run([ControllerFenceBroker(1)])
    assert kraft.step(CONFIG, state, BrokerHeartbeat(1)) is not None  # its own epoch: unfenced
    stale = replace(state, brokers=(state.brokers[0], replace(state.brokers[1], broker_epoch=0)))
    assert refused(stale, BrokerHeartbeat(1))  # STALE_BROKER_EPOCH


def test_unclean_election_elects_outside_the_isr_only_when_enabled():
    opening: list[Action] = [
        LeaderAlterPartition(0, 1, False),
        ControllerAlterPartition(0),
        BrokerCrash(0, 0),
    ]
    clean_config = replace(CONFIG, elr=ElrRule.DISABLED)
    clean = run([*opening, ControllerFenceBroker(0)], clean_config)
    assert clean.controller.partition.leader == NO_LEADER and clean.controller.partition.isr == {0}
    with_elr = run([*opening, ControllerFenceBroker(0)])
    assert with_elr.controller.partition.isr == frozenset() and with_elr.controller.partition.elr == {0}
    unclean_config = replace(clean_config, unclean_leader_election=True)
    unclean = run([*opening, ControllerFenceBroker(0)], unclean_config)
    partition = unclean.controller.partition
    assert (partition.leader, partition.isr) == (1, frozenset({1}))
    assert partition.leader_recovery_state is LeaderRecoveryState.RECOVERING
    assert unclean.history.unclean_elections == 1
    assert not kraft.INVARIANTS["clean_elections_only"](clean_config, unclean)
    assert kraft.INVARIANTS["clean_elections_only"](unclean_config, unclean)


def test_an_answer_to_a_dead_process_is_dropped():
    state = run([LeaderAlterPartition(0, 1, False), ControllerAlterPartition(0), BrokerCrash(0, 0)])
    dropped = kraft.step(CONFIG, state, LeaderHandleAlterPartitionResponse(0))
    assert dropped is not None and dropped.alter_answers[0] is None and dropped.brokers[0].leader is None


def test_crash_bounds_and_lossy_crashes():
    state = run([ProducerSend(0), FollowerFetch(1), BrokerCrash(0, 0)])
    assert (
        state.brokers[0].log == () and state.history.lossy_crashes == 1 and state.history.lossy_brokers == {0}
    )
    assert refused(state, BrokerCrash(1, 0))  # one lossy crash allowed
    clean = kraft.step(CONFIG, state, BrokerCrash(1, 1))  # keeps its whole log
    assert clean is not None and clean.brokers[1].log == (0,) and clean.history.crashes == 2
    assert refused(run([]), BrokerCrash(0, 1))  # beyond its log


def test_reassignment_adds_then_completes_and_elects_a_new_leader():
    config = KRaftConfig(
        brokers=3, replicas=(0, 1), reassignment_target=(1, 2), min_insync_replicas=1, max_alter_partitions=1
    )
    started = run([ControllerReassign()], config)
    partition = started.controller.partition
    assert (partition.replicas, partition.adding, partition.removing) == (
        (1, 2, 0),
        frozenset({2}),
        frozenset({0}),
    )
    assert refused(started, ControllerReassign(), config)
    done = run(
        [
            ControllerReassign(),
            BrokerReplayMetadata(2),
            FollowerFetch(2),
            BrokerReplayMetadata(0),
            LeaderAlterPartition(0, 2, True),
            ControllerAlterPartition(0),
        ],
        config,
    )
    partition = done.controller.partition
    assert (partition.replicas, partition.isr, partition.leader) == ((1, 2), frozenset({1, 2}), 1)
    assert not partition.reassigning and done.history.reassigned
    assert KafkaError.NEW_LEADER_ELECTED in done.history.answers
    assert partition.leader_epoch == 1


def test_under_kafkas_rule_the_hw_waits_for_a_caught_up_follower_until_it_falls_behind():
    config = replace(CONFIG, leader_isr=LeaderIsrRule.KAFKA)
    state = run([], config)
    leader = state.brokers[0].leader
    assert leader is not None and leader.caught_up == {1}  # ISR followers start caught up
    assert refused(run([], CONFIG), LeaderFollowerFallsBehind(0, 1))  # only under this rule
    shrunk = run(
        [
            LeaderFollowerFallsBehind(0, 1),
            LeaderAlterPartition(0, 1, False),
            ControllerAlterPartition(0),
            LeaderHandleAlterPartitionResponse(0),
            FollowerFetch(1),
        ],
        config,
    )
    leader = shrunk.brokers[0].leader
    assert leader is not None and leader.committed_isr == {0} and leader.caught_up == {1}
    appended = run([ProducerSend(0)], config)  # follower 1 is in the ISR: no HW advance
    assert appended.brokers[0].high_watermark == 0
    written = kraft.step(config, shrunk, ProducerSend(0))
    assert written is not None and written.brokers[0].high_watermark == 0  # waits for caught-up 1
    behind = kraft.step(config, written, LeaderFollowerFallsBehind(0, 1))
    assert behind is not None and behind.brokers[0].high_watermark == 1  # no longer waits


def test_step_refuses_actions_of_stopped_brokers():
    state = run([BrokerCrash(1, 0)])
    for action in (FollowerFetch(1), BrokerHeartbeat(1), BrokerReplayMetadata(1), BrokerRequestShutdown(1)):
        assert refused(state, action)
    assert state.controller.partition.leader != NO_LEADER


@pytest.mark.parametrize(
    "config",
    [
        CONFIG,
        KRaftConfig(brokers=3, replicas=(0, 1, 2), reassignment_target=(2, 1)),
        replace(CONFIG, leader_isr=LeaderIsrRule.KAFKA),
    ],
)
def test_candidate_actions_cover_every_enabled_action(config):
    """Every action `step` enables from a few reachable states is among the candidates."""
    state = kraft.initial_state(config)
    universe: list[Action] = [ControllerReassign()]
    for broker in config.broker_ids:
        universe += [
            BrokerStart(broker),
            BrokerRegister(broker),
            BrokerReplayMetadata(broker),
            BrokerHeartbeat(broker),
            BrokerRequestShutdown(broker),
            ControllerFenceBroker(broker),
            ProducerSend(broker),
            FollowerFetch(broker),
            ControllerAlterPartition(broker),
            LeaderHandleAlterPartitionResponse(broker),
            *(LeaderFollowerFallsBehind(broker, follower) for follower in config.broker_ids),
            *(BrokerCrash(broker, end) for end in range(3)),
            *(
                LeaderAlterPartition(broker, member, expand)
                for member in config.broker_ids
                for expand in (True, False)
            ),
        ]
    frontier = [state]
    seen = {state}
    for _ in range(4):
        following = []
        for current in frontier:
            candidates = set(kraft.candidate_actions(config, current))
            for action in universe:
                after = kraft.step(config, current, action)
                if after is not None:
                    assert action in candidates, action
                    if after not in seen:
                        seen.add(after)
                        following.append(after)
        frontier = following
