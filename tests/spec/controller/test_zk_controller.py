"""Guards and effects of every ZooKeeper-era controller action, and each invariant on states that break it."""

from __future__ import annotations

from spec._frozen import replace
from spec.controller import zk_controller as zk
from spec.controller.zk_controller import (
    AdminPreferredElection,
    AdminReassign,
    BrokerCrash,
    BrokerRenewSession,
    BrokerRequestControlledShutdown,
    BrokerRestart,
    BrokerShutdown,
    ControllerProcessEvent,
    DeliverRequest,
    DuplicateRequest,
    FollowerFetch,
    LeaderExpandIsr,
    LeaderShrinkIsr,
    LoseRequest,
    ProducerSend,
    Role,
    SessionExpire,
    ZkConfig,
    ZkState,
)
from spec.controller.zk_requests import RULE_SETS, Request, RequestKind
from spec.controller.zk_states import PartitionState, ReplicaState
from spec.controller.zookeeper import (
    NO_CONTROLLER,
    NO_LEADER,
    NO_SESSION,
    Event,
    PartitionZnode,
    PendingEvent,
)

CONFIG = ZkConfig(
    max_crashes=2,
    max_zombies=1,
    max_controlled_shutdowns=1,
    max_preferred_elections=1,
    max_lost_requests=1,
    max_duplicated_requests=1,
    max_records=2,
)
REELECT = PendingEvent(Event.REELECT)
BROKER_CHANGE = PendingEvent(Event.BROKER_CHANGE)


def run(state: ZkState, *actions: zk.Action, config: ZkConfig = CONFIG) -> ZkState:
    for action in actions:
        after = zk.step(config, state, action)
        assert after is not None, f"{action} not enabled"
        state = after
    return state


def start(config: ZkConfig = CONFIG) -> ZkState:
    return zk.initial_state(config)


def deliver_all(state: ZkState, config: ZkConfig = CONFIG) -> ZkState:
    progress = True
    while progress:
        progress = False
        for broker, channel in enumerate(state.channels):
            if channel and state.brokers[broker].alive:
                state = run(state, DeliverRequest(broker, 0), config=config)
                progress = True
    return state


def test_initial_state_is_consistent() -> None:
    state = start()
    assert state.zk.controller == 2 and state.zk.controller_epoch == 1
    assert zk.true_leader(state) == 0 and zk.active_controller(state) == 2
    for name, holds in zk.INVARIANTS.items():
        assert holds(state), name


# --- broker life ---------------------------------------------------------------------------


def test_crash_keeps_log_and_session() -> None:
    state = run(start(), ProducerSend(0), BrokerCrash(0))
    broker = state.brokers[0]
    assert not broker.alive and broker.log == (0,) and broker.role is Role.NONE
    assert state.zk.sessions[0] == 1  # ZooKeeper has not noticed
    assert zk.step(CONFIG, state, BrokerRestart(0)) is None  # NODEEXISTS until the session expires
    assert zk.step(replace(CONFIG, max_crashes=1), state, BrokerCrash(1)) is None  # bound


def test_expiry_then_restart_gives_a_new_broker_epoch() -> None:
    state = run(start(), BrokerCrash(0), SessionExpire(0))
    assert state.zk.sessions[0] == NO_SESSION
    assert BROKER_CHANGE in state.brokers[2].events
    state = run(state, BrokerRestart(0))
    assert state.zk.sessions[0] == 4 and state.brokers[0].session == 4
    assert state.brokers[0].events == frozenset()  # /controller exists: no Reelect
    assert (
        zk.step(
            replace(CONFIG, max_restarts=0), run(start(), BrokerCrash(0), SessionExpire(0)), BrokerRestart(0)
        )
        is None
    )


def test_zombie_expiry_is_bounded_and_only_for_zombie_brokers() -> None:
    state = run(start(), SessionExpire(2))
    assert state.zk.controller == NO_CONTROLLER
    assert state.brokers[2].controller is not None  # the zombie still believes it is controller
    assert REELECT in state.brokers[0].events and REELECT in state.brokers[1].events
    assert zk.step(CONFIG, start(), SessionExpire(0)) is None  # broker 0 is not a zombie candidate
    assert zk.step(replace(CONFIG, max_zombies=0), start(), SessionExpire(2)) is None


def test_renewal_queues_expire_and_reelect() -> None:
    state = run(start(), SessionExpire(2), BrokerRenewSession(2))
    assert state.brokers[2].session == 4 and state.zk.sessions[2] == 4
    assert state.brokers[2].events == {REELECT, PendingEvent(Event.EXPIRE)}
    assert zk.step(CONFIG, start(), BrokerRenewSession(2)) is None


def test_controller_election_increments_epoch_and_fails_over() -> None:
    state = run(start(), SessionExpire(2), ControllerProcessEvent(0, REELECT))
    assert state.zk.controller == 0 and state.zk.controller_epoch == 2
    context = state.brokers[0].controller
    assert context is not None and context.epoch == 2
    assert REELECT not in state.brokers[1].events  # it would find /controller and do nothing
    kinds = {(b, r.kind, r.controller_epoch) for b, channel in enumerate(state.channels) for r in channel}
    assert (0, RequestKind.LEADER_AND_ISR, 2) in kinds and (1, RequestKind.LEADER_AND_ISR, 2) in kinds
    # broker 2's session expired: it is not live for the new controller
    assert context.live_ids() == {0, 1}


def test_expire_event_resigns() -> None:
    state = run(
        start(),
        SessionExpire(2),
        BrokerRenewSession(2),
        ControllerProcessEvent(2, PendingEvent(Event.EXPIRE)),
    )
    assert state.brokers[2].controller is None


def test_controlled_shutdown_moves_leadership_first() -> None:
    state = run(start(), BrokerRequestControlledShutdown(0, 2))
    assert state.brokers[0].shutting_down
    event = PendingEvent(Event.CONTROLLED_SHUTDOWN, 0, 1)
    state = run(state, ControllerProcessEvent(2, event))
    znode = state.zk.partition
    assert znode == PartitionZnode(1, 1, (1,), 1, 1)
    assert zk.shutdown_moved_leadership(state)
    state = deliver_all(state)
    assert zk.true_leader(state) == 1
    state = run(state, BrokerShutdown(0))
    assert not state.brokers[0].alive and state.zk.sessions[0] == NO_SESSION


def test_controlled_shutdown_of_a_follower_stops_it() -> None:
    state = run(start(), BrokerRequestControlledShutdown(1, 2))
    state = run(state, ControllerProcessEvent(2, PendingEvent(Event.CONTROLLED_SHUTDOWN, 1, 2)))
    assert state.zk.partition == PartitionZnode(0, 1, (0,), 1, 1)
    assert any(r.kind is RequestKind.STOP_REPLICA for r in state.channels[1])
    context = state.brokers[2].controller
    assert context is not None and context.replica_states[1] is ReplicaState.OFFLINE


def test_stale_broker_epoch_controlled_shutdown_is_refused() -> None:
    stale = PendingEvent(Event.CONTROLLED_SHUTDOWN, 1, 0)  # a retry from broker 1's previous incarnation
    state = start()
    state = replace(state, brokers=(*state.brokers[:2], replace(state.brokers[2], events=frozenset({stale}))))
    state = run(state, ControllerProcessEvent(2, stale))
    assert state.zk.partition == start().zk.partition
    context = state.brokers[2].controller
    assert context is not None and context.shutting_down == frozenset()


def test_leader_failure_elects_from_isr() -> None:
    state = run(start(), BrokerCrash(0), SessionExpire(0), ControllerProcessEvent(2, BROKER_CHANGE))
    assert state.zk.partition == PartitionZnode(1, 1, (1,), 1, 1)
    context = state.brokers[2].controller
    assert context is not None and context.partition_state is PartitionState.ONLINE
    assert context.replica_states[0] is ReplicaState.OFFLINE


def test_last_isr_member_dies_partition_offline() -> None:
    state = run(start(), LeaderShrinkIsr(0, 1), ControllerProcessEvent(2, PendingEvent(Event.ISR_CHANGE)))
    state = run(state, BrokerCrash(0), SessionExpire(0), ControllerProcessEvent(2, BROKER_CHANGE))
    znode = state.zk.partition
    assert znode is not None and znode.leader == NO_LEADER and znode.isr == (0,)  # the last member stays
    context = state.brokers[2].controller
    assert context is not None and context.partition_state is PartitionState.OFFLINE
    assert zk.partition_offline(state)


def test_bounce_detected_with_broker_epochs_missed_without() -> None:
    bounced = run(start(), BrokerCrash(0), SessionExpire(0), BrokerRestart(0))
    detected = run(bounced, ControllerProcessEvent(2, BROKER_CHANGE))
    assert zk.bounce_detected(detected)
    assert detected.zk.partition is not None and detected.zk.partition.leader == 1
    old_rules = replace(CONFIG, rules=RULE_SETS["before-kip-380"])
    missed = run(bounced, ControllerProcessEvent(2, BROKER_CHANGE), config=old_rules)
    assert missed.zk.partition == start().zk.partition and not zk.bounce_detected(missed)
    assert not zk.idle_controller_brokers_agree(missed)


def test_preferred_election() -> None:
    state = run(start(), BrokerRequestControlledShutdown(0, 2))
    state = run(state, ControllerProcessEvent(2, PendingEvent(Event.CONTROLLED_SHUTDOWN, 0, 1)))
    state = run(state, AdminPreferredElection())
    assert PendingEvent(Event.PREFERRED_ELECTION) in state.brokers[2].events
    # broker 0 left the ISR in the controlled shutdown: the preferred replica cannot lead
    after = run(state, ControllerProcessEvent(2, PendingEvent(Event.PREFERRED_ELECTION)))
    assert after.zk.partition == state.zk.partition
    assert zk.step(CONFIG, state, AdminPreferredElection()) is None  # bound


def test_reassignment_runs_to_completion() -> None:
    config = replace(CONFIG, reassign_to=(1, 2))
    state = run(start(config), AdminReassign(), config=config)
    state = run(state, ControllerProcessEvent(2, PendingEvent(Event.REASSIGN)), config=config)
    assert state.zk.assignment == (1, 2, 0)
    context = state.brokers[2].controller
    assert context is not None and context.replica_states[2] is ReplicaState.NEW
    state = deliver_all(state, config)
    state = run(state, FollowerFetch(2), LeaderExpandIsr(0, 2), config=config)
    state = run(state, ControllerProcessEvent(2, PendingEvent(Event.ISR_CHANGE)), config=config)
    assert zk.reassignment_completed(state)
    assert state.zk.assignment == (1, 2) and state.zk.partition is not None
    assert state.zk.partition.leader == 1 and 0 not in state.zk.partition.isr
    context = state.brokers[2].controller
    assert context is not None and context.replica_states[0] is ReplicaState.NON_EXISTENT
    state = deliver_all(state, config)
    assert zk.true_leader(state) == 1 and state.brokers[0].role is Role.NONE
    for name, holds in zk.INVARIANTS.items():
        assert holds(state), name


# --- requests ------------------------------------------------------------------------------


def test_stale_controller_request_refused_with_rule_obeyed_without() -> None:
    state = run(start(), SessionExpire(2), ControllerProcessEvent(0, REELECT))
    state = deliver_all(state)
    stale = Request(RequestKind.STOP_REPLICA, 1, 2)
    injected = replace(state, channels=(state.channels[0], (stale,), state.channels[2]))
    refused = run(injected, DeliverRequest(1, 0))
    assert refused.brokers[1].role is Role.FOLLOWER and zk.stale_request_refused(refused)
    unfenced = replace(CONFIG, rules=RULE_SETS["without-stale-controller-epoch"])
    obeyed = run(injected, DeliverRequest(1, 0), config=unfenced)
    assert obeyed.brokers[1].role is Role.NONE
    assert not zk.brokers_never_obey_an_older_controller(obeyed)


def test_leader_and_isr_needs_newer_leader_epoch() -> None:
    state = start()
    same = Request(RequestKind.LEADER_AND_ISR, 1, 2, 1, 0, (0, 1), 0, (0, 1))
    newer = replace(same, leader_epoch=1)
    after = run(replace(state, channels=((), (same,), ())), DeliverRequest(1, 0))
    assert after.brokers[1].role is Role.FOLLOWER and after.brokers[1].leader == 0
    after = run(replace(state, channels=((), (newer,), ())), DeliverRequest(1, 0))
    assert after.brokers[1].role is Role.LEADER and after.brokers[1].leader_epoch == 1


def test_lose_and_duplicate_are_bounded() -> None:
    request = Request(RequestKind.UPDATE_METADATA, 1, 2)
    state = replace(start(), channels=((), (request,), ()))
    lost = run(state, LoseRequest(1, 0))
    assert lost.channels[1] == () and lost.history.lost == 1
    duplicated = run(state, DuplicateRequest(1, 0))
    assert duplicated.channels[1] == (request,) and duplicated.history.duplicated == 1
    assert zk.step(CONFIG, duplicated, DuplicateRequest(1, 0)) is None


def test_delivery_follows_each_controllers_order() -> None:
    first = Request(RequestKind.UPDATE_METADATA, 1, 2)
    second = Request(RequestKind.STOP_REPLICA, 1, 2)
    state = replace(start(), channels=((), (first, second), ()))
    assert zk.step(CONFIG, state, DeliverRequest(1, 1)) is None
    assert zk.step(CONFIG, state, DeliverRequest(1, 0)) is not None


# --- replication ---------------------------------------------------------------------------


def test_produce_fetch_commit() -> None:
    state = run(start(), ProducerSend(0))
    assert state.brokers[0].log == (0,) and state.brokers[0].high_watermark == 0
    state = run(state, FollowerFetch(1))
    assert state.brokers[1].log == (0,) and not state.history.committed
    state = run(state, FollowerFetch(1))
    assert state.brokers[0].high_watermark == 1 and state.history.committed == {(0, 0)}
    assert state.brokers[1].high_watermark == 1
    assert zk.step(CONFIG, state, FollowerFetch(1)) is None  # nothing new


def test_produce_refused_below_min_isr() -> None:
    config = replace(CONFIG, min_insync_replicas=2)
    state = run(start(config), LeaderShrinkIsr(0, 1), config=config)
    assert zk.step(config, state, ProducerSend(0)) is None
    assert zk.step(config, start(config), ProducerSend(0)) is not None


def test_follower_truncates_divergent_suffix() -> None:
    state = start()
    state = replace(
        state,
        brokers=(
            replace(state.brokers[0], log=(0,)),
            replace(state.brokers[1], log=(5, 6)),
            state.brokers[2],
        ),
    )
    state = run(state, FollowerFetch(1))
    assert state.brokers[1].log == (0,)


def test_isr_shrink_is_a_conditional_write() -> None:
    state = run(start(), LeaderShrinkIsr(0, 1))
    assert state.zk.partition == PartitionZnode(0, 0, (0,), 1, 1)
    assert state.brokers[0].isr == (0,) and state.brokers[0].zk_version == 1
    assert PendingEvent(Event.ISR_CHANGE) in state.brokers[2].events
    # the controller bumped the version meanwhile: BADVERSION, the leader keeps its ISR
    moved = replace(start(), zk=replace(start().zk, partition=PartitionZnode(0, 1, (0, 1), 1, 1)))
    refused = run(moved, LeaderShrinkIsr(0, 1))
    assert refused.zk == moved.zk and refused.brokers == moved.brokers and zk.isr_write_refused(refused)
    assert zk.step(CONFIG, refused, LeaderShrinkIsr(0, 1)) is None
    unconditional = replace(CONFIG, rules=RULE_SETS["without-conditional-isr-writes"])
    overwritten = run(moved, LeaderShrinkIsr(0, 1), config=unconditional)
    assert overwritten.zk.partition is not None and overwritten.zk.partition.leader_epoch == 0
    assert not zk.leader_epochs_only_grow(moved, overwritten)


def test_isr_expand_needs_caught_up_follower() -> None:
    state = run(start(), LeaderShrinkIsr(0, 1), ProducerSend(0))
    assert zk.step(CONFIG, state, LeaderExpandIsr(0, 1)) is None  # not fetched yet
    state = run(state, FollowerFetch(1))
    assert zk.step(CONFIG, state, LeaderExpandIsr(0, 1)) is None  # its log end is known on the next fetch
    state = run(state, FollowerFetch(1), LeaderExpandIsr(0, 1))
    assert state.zk.partition is not None and state.zk.partition.isr == (0, 1)


def test_expired_leader_cannot_write() -> None:
    config = replace(CONFIG, zombie_brokers=(0,))
    state = run(start(config), SessionExpire(0), config=config)
    assert zk.step(config, state, LeaderShrinkIsr(0, 1)) is None


def test_candidate_actions_cover_enabled_actions() -> None:
    state = run(start(), ProducerSend(0), SessionExpire(2))
    candidates = set(zk.candidate_actions(CONFIG, state))
    assert ProducerSend(0) in candidates and FollowerFetch(1) in candidates
    assert ControllerProcessEvent(0, REELECT) in candidates and BrokerRenewSession(2) in candidates


# --- invariants on states that break them ---------------------------------------------------


def test_maximal_isr_invariant() -> None:
    state = start()
    broken = replace(state, brokers=(replace(state.brokers[0], isr=(0,)), *state.brokers[1:]))
    assert zk.leader_isr_contains_committed_isr(state)
    assert not zk.leader_isr_contains_committed_isr(broken)


def test_committed_records_invariant() -> None:
    state = run(start(), ProducerSend(0), FollowerFetch(1), FollowerFetch(1))
    assert zk.committed_records_survive(state)
    broken = replace(state, brokers=(state.brokers[0], replace(state.brokers[1], log=()), state.brokers[2]))
    assert not zk.committed_records_survive(broken)


def test_online_partition_invariant() -> None:
    state = start()
    context = state.brokers[2].controller
    assert context is not None
    broken_context = replace(context, leadership=replace(context.leadership, leader=NO_LEADER))
    broken = replace(
        state, brokers=(*state.brokers[:2], replace(state.brokers[2], controller=broken_context))
    )
    assert not zk.online_partition_has_live_leader_in_isr(broken)


def test_one_controller_per_epoch_invariant() -> None:
    state = start()
    context = state.brokers[2].controller
    broken = replace(state, brokers=(replace(state.brokers[0], controller=context), *state.brokers[1:]))
    assert not zk.one_controller_per_epoch(broken)


def test_invalid_moves_invariant() -> None:
    state = start()
    broken = replace(state, history=replace(state.history, invalid_moves=1))
    assert not zk.state_machine_moves_are_valid(broken)


def test_validate() -> None:
    assert zk.validate(ZkConfig()) is None
    assert zk.validate(ZkConfig(assignment=(0, 5))) is not None
    assert zk.validate(ZkConfig(min_insync_replicas=3)) is not None
    assert zk.validate(ZkConfig(initial_controller=7)) is not None


def _zombie_with_pending_shutdown(config: ZkConfig) -> ZkState:
    """Broker 0 asked controller 2 for a controlled shutdown; 2's session expired, 0 became
    controller (epoch 2); the zombie 2 still holds the request."""
    state = run(start(config), BrokerRequestControlledShutdown(0, 2), SessionExpire(2), config=config)
    return run(state, ControllerProcessEvent(0, REELECT), config=config)


def test_zombie_with_expired_session_sends_only_the_first_batch() -> None:
    state = _zombie_with_pending_shutdown(CONFIG)
    event = PendingEvent(Event.CONTROLLED_SHUTDOWN, 0, 1)
    # broker 0 leads: the election needs ZooKeeper, which fails, and nothing is sent
    after = run(state, ControllerProcessEvent(2, event))
    assert after.channels == state.channels and after.zk == state.zk
    # for a follower, the StopReplica batch goes out before the ISR removal fails
    follower = run(start(), BrokerRequestControlledShutdown(1, 2), SessionExpire(2))
    after = run(follower, ControllerProcessEvent(2, PendingEvent(Event.CONTROLLED_SHUTDOWN, 1, 2)))
    assert [r.kind for r in after.channels[1]] == [RequestKind.STOP_REPLICA]
    assert after.channels[1][0].controller_epoch == 1 and after.zk == follower.zk


def test_renewed_zombie_write_is_fenced_by_controller_epoch() -> None:
    state = run(_zombie_with_pending_shutdown(CONFIG), BrokerRenewSession(2))
    event = PendingEvent(Event.CONTROLLED_SHUTDOWN, 0, 1)
    after = run(state, ControllerProcessEvent(2, event))
    assert after.zk.partition == state.zk.partition  # ControllerMovedException
    assert after.brokers[2].controller is None  # maybeResign: /controller is broker 0's
    unfenced = replace(CONFIG, rules=RULE_SETS["without-controller-epoch-zk-fencing"])
    state = run(_zombie_with_pending_shutdown(unfenced), BrokerRenewSession(2), config=unfenced)
    after = run(state, ControllerProcessEvent(2, event), config=unfenced)
    assert after.zk.partition is not None and after.zk.partition.leader == 1
    assert after.zk.partition.controller_epoch == 1  # written by the zombie, unknown to controller 0


def test_zombie_aborts_when_the_znode_has_a_newer_controller_epoch() -> None:
    unfenced = replace(CONFIG, rules=RULE_SETS["without-controller-epoch-zk-fencing"])
    state = run(_zombie_with_pending_shutdown(unfenced), BrokerRenewSession(2), config=unfenced)
    newer = replace(state.zk, partition=replace(state.zk.partition, controller_epoch=2))
    state = replace(state, zk=newer)
    after = run(
        state, ControllerProcessEvent(2, PendingEvent(Event.CONTROLLED_SHUTDOWN, 0, 1)), config=unfenced
    )
    assert after.zk.partition == newer.partition


def test_topic_creation_new_partition_then_online() -> None:
    config = replace(CONFIG, topic_exists=False)
    state = start(config)
    assert state.zk.partition is None and zk.step(config, state, ProducerSend(0)) is None
    state = run(
        state, BrokerCrash(0), SessionExpire(0), ControllerProcessEvent(2, BROKER_CHANGE), config=config
    )
    state = run(state, zk.AdminCreateTopic(), config=config)
    assert zk.step(config, state, zk.AdminCreateTopic()) is None
    state = run(state, ControllerProcessEvent(2, PendingEvent(Event.TOPIC_CHANGE)), config=config)
    # broker 0 is dead: the first live replica leads, the ISR is the live replicas
    assert state.zk.partition == PartitionZnode(1, 0, (1,), 1, 0)
    context = state.brokers[2].controller
    assert context is not None and context.partition_state is PartitionState.ONLINE
    assert context.replica_states[:2] == (ReplicaState.ONLINE, ReplicaState.ONLINE)
    assert zk.state_machine_moves_are_valid(state)
    state = deliver_all(state, config)
    assert zk.true_leader(state) == 1 and zk.topic_created(state)
