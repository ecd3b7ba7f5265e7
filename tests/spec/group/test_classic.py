"""The classic protocol as one state machine: each action's guard and effect, and the
candidate-action filter checked against every action over whole reachable state spaces."""

from __future__ import annotations

from collections import deque

import pytest

from spec._frozen import replace
from spec.group import classic
from spec.group.classic import (
    ClassicConfig,
    ClassicState,
    ConsumerProcess,
    DeliverOffsetCommit,
    ExpireOffsets,
    LeaveGroup,
    LoseSyncGroup,
    PauseConsumer,
    PendingSyncTimeout,
    RebalanceTimeout,
    ReceiveJoinGroupResponse,
    ReceiveSyncGroupResponse,
    ResumeConsumer,
    SendHeartbeat,
    SendJoinGroup,
    SendOffsetCommit,
    SendSyncGroup,
    SessionTimeout,
    StartConsumer,
)
from spec.group.classic_consumer import ClientPhase, ClientStatus
from spec.group.classic_scenarios import SCENARIOS
from spec.group.types import ClassicGroupState, Errors, TopicPartition

T0, T1, T2 = (TopicPartition("t0", n) for n in range(3))
JOINER = ClassicConfig(
    topics=(("t0", 3),),
    consumers=(ConsumerProcess("c0"), ConsumerProcess("c1"), ConsumerProcess("c2", initial_member=False)),
)
STATIC = ClassicConfig(
    consumers=(
        ConsumerProcess("c0", "i0"),
        ConsumerProcess("c1"),
        ConsumerProcess("c0-restarted", "i0", initial_member=False),
    ),
    max_pauses=1,
    max_resumes=1,
)


def run(config: ClassicConfig, state: ClassicState, *actions) -> ClassicState:
    for action in actions:
        after = classic.step(config, state, action)
        assert after is not None, f"{action} refused"
        state = after
    return state


def refused(config: ClassicConfig, state: ClassicState, action) -> bool:
    return classic.step(config, state, action) is None


def test_the_model_starts_from_a_stable_first_generation():
    state = classic.initial_state(JOINER)
    group = state.group
    assert (group.state, group.generation, group.leader) == (ClassicGroupState.STABLE, 1, "c0-0")
    assert [member.assignment.partitions for member in group.members] == [(T0, T1), (T2,)]
    assert [consumer.owned for consumer in state.consumers] == [(T0, T1), (T2,), ()]
    assert state.consumers[2].status is ClientStatus.NOT_STARTED
    empty = classic.initial_state(ClassicConfig(consumers=(ConsumerProcess("c0", initial_member=False),)))
    assert empty.group.state is ClassicGroupState.EMPTY and classic.initial_generation(JOINER) == 1


def test_a_new_consumer_joins_through_member_id_required_and_triggers_a_rebalance():
    state = run(JOINER, classic.initial_state(JOINER), StartConsumer(2), SendJoinGroup(2))
    assert state.consumers[2].member_id == "c2-2" and state.consumers[2].phase is ClientPhase.UNJOINED
    assert state.group.pending_members == ("c2-2",)
    state = run(JOINER, state, SendJoinGroup(2))
    assert state.group.state is ClassicGroupState.PREPARING_REBALANCE
    assert state.consumers[2].phase is ClientPhase.JOINING
    state = run(JOINER, state, SendHeartbeat(0))
    assert state.consumers[0].rejoin_needed
    state = run(JOINER, state, SendJoinGroup(0))
    assert state.consumers[0].owned == ()  # eager: revoked before joining
    state = run(JOINER, state, SendHeartbeat(1), SendJoinGroup(1))
    assert state.group.state is ClassicGroupState.COMPLETING_REBALANCE and state.group.generation == 2
    assert all(consumer.join_response is not None for consumer in state.consumers)
    state = run(JOINER, state, ReceiveJoinGroupResponse(1), SendSyncGroup(1))
    assert state.consumers[1].phase is ClientPhase.SYNCING and state.group.member("c1-1").awaiting_sync  # type: ignore[union-attr]
    state = run(JOINER, state, ReceiveJoinGroupResponse(0), SendSyncGroup(0))
    assert state.group.state is ClassicGroupState.STABLE
    state = run(JOINER, state, ReceiveSyncGroupResponse(0), ReceiveSyncGroupResponse(1))
    state = run(JOINER, state, ReceiveJoinGroupResponse(2), SendSyncGroup(2))
    assert [consumer.owned for consumer in state.consumers] == [(T0,), (T1,), (T2,)]
    assert classic.settled_after_rebalance(JOINER, state)


def test_guards_of_the_client_actions():
    state = classic.initial_state(JOINER)
    assert refused(JOINER, state, SendJoinGroup(0))  # Stable, no reason and no rejoin budget
    assert refused(JOINER, state, SendSyncGroup(0))  # no JoinGroup answer
    assert refused(JOINER, state, ReceiveJoinGroupResponse(0))
    assert refused(JOINER, state, SendHeartbeat(2))  # not started
    assert refused(JOINER, state, StartConsumer(0))  # already running
    assert refused(JOINER, state, PauseConsumer(0))  # max.pauses=0
    assert refused(JOINER, state, SendOffsetCommit(0))  # max.commits=0
    assert refused(JOINER, state, LeaveGroup(0))  # max.leaves=0
    assert refused(JOINER, state, DeliverOffsetCommit(0))  # nothing in flight
    rejoining = replace(JOINER, max_rejoins=1)
    assert run(rejoining, state, SendJoinGroup(0)).used.rejoins == 1


def test_a_new_static_instance_starts_only_once_the_old_process_stopped_answering():
    state = classic.initial_state(STATIC)
    assert refused(STATIC, state, StartConsumer(2))
    state = run(STATIC, state, PauseConsumer(0), StartConsumer(2), SendJoinGroup(2))
    # KIP-345: no rebalance; the new instance takes the old member's place and assignment
    assert state.group.state is ClassicGroupState.STABLE and state.group.generation == 1
    assert state.consumers[2].phase is ClientPhase.JOINED and state.consumers[2].member_id == "i0-2"
    state = run(STATIC, state, SendSyncGroup(2))
    assert state.consumers[2].owned == (T0,)
    state = run(STATIC, state, ResumeConsumer(0))  # the old instance's first heartbeat is fenced
    assert state.consumers[0].status is ClientStatus.STOPPED
    assert state.consumers[0].fatal_error is Errors.FENCED_INSTANCE_ID
    assert ("Heartbeat", Errors.FENCED_INSTANCE_ID) in state.answered


def test_timers_fire_only_for_members_that_stopped_answering():
    config = replace(JOINER, max_pauses=1)
    state = classic.initial_state(config)
    assert refused(config, state, SessionTimeout("c1-1"))
    paused = run(config, state, PauseConsumer(1))
    expired = run(config, paused, SessionTimeout("c1-1"))
    assert expired.group.member("c1-1") is None
    assert expired.group.state is ClassicGroupState.PREPARING_REBALANCE
    assert refused(replace(config, session_timeouts=False), paused, SessionTimeout("c1-1"))
    # the rebalance timer waits for c0, which runs and will rejoin
    assert refused(config, expired, RebalanceTimeout())
    rejoined = run(config, expired, SendHeartbeat(0), SendJoinGroup(0))
    assert rejoined.group.state is ClassicGroupState.COMPLETING_REBALANCE
    assert refused(config, rejoined, PendingSyncTimeout())


def test_a_rebalance_timeout_drops_a_paused_member_that_did_not_rejoin():
    config = replace(JOINER, max_pauses=1, max_rejoins=1)
    state = run(config, classic.initial_state(config), SendJoinGroup(0), PauseConsumer(1))
    state = run(config, state, RebalanceTimeout())
    assert state.group.member("c1-1") is None and state.group.state is ClassicGroupState.COMPLETING_REBALANCE


def test_pending_sync_timeout_and_a_late_sync_after_resume():
    config = ClassicConfig(
        partition_assignment_strategy=("cooperative-sticky",), max_rejoins=1, max_pauses=1, max_resumes=1
    )
    state = run(config, classic.initial_state(config), SendJoinGroup(0), SendHeartbeat(1), SendJoinGroup(1))
    state = run(
        config,
        state,
        ReceiveJoinGroupResponse(1),
        PauseConsumer(1),
        ReceiveJoinGroupResponse(0),
        SendSyncGroup(0),
    )
    assert state.group.state is ClassicGroupState.STABLE and state.group.pending_sync == ("c1-1",)
    state = run(config, state, PendingSyncTimeout())
    assert state.group.member("c1-1") is None
    state = run(config, state, ResumeConsumer(1))  # its late SyncGroup: UNKNOWN_MEMBER_ID, partitions lost
    assert state.consumers[1].owned == () and state.consumers[1].member_id == ""
    assert classic.late_sync_refused(config, state)


def test_commits_land_in_order_and_a_stale_one_is_refused():
    config = replace(JOINER, max_commits=2)
    state = run(config, classic.initial_state(config), SendOffsetCommit(0), SendOffsetCommit(0))
    assert len(state.in_flight) == 2
    state = run(config, state, DeliverOffsetCommit(0))
    assert state.group.committed(T0).offset == 0  # type: ignore[union-attr]
    state = run(config, state, StartConsumer(2), SendJoinGroup(2), SendJoinGroup(2))  # generation moves on...
    state = run(config, state, SendHeartbeat(0), SendJoinGroup(0), SendHeartbeat(1), SendJoinGroup(1))
    assert state.group.generation == 2
    state = run(config, state, DeliverOffsetCommit(0))  # ...before the second commit lands
    assert state.group.committed(T0).offset == 0  # type: ignore[union-attr]
    assert ("OffsetCommit", Errors.ILLEGAL_GENERATION) in state.answered


def test_offsets_expire_only_once_the_group_is_empty_and_then_it_dies():
    config = ClassicConfig(consumers=(ConsumerProcess("c0"),), max_commits=1, max_leaves=1)
    state = run(config, classic.initial_state(config), SendOffsetCommit(0), DeliverOffsetCommit(0))
    assert refused(config, state, ExpireOffsets())
    state = run(config, state, LeaveGroup(0))
    assert state.group.state is ClassicGroupState.EMPTY and state.group.generation == 2
    state = run(config, state, ExpireOffsets())
    assert state.group.state is ClassicGroupState.DEAD and state.group.offsets == ()


def _every_action(config: ClassicConfig, state: ClassicState):
    kinds = (
        StartConsumer, SendJoinGroup, ReceiveJoinGroupResponse, SendSyncGroup, LoseSyncGroup,
        ReceiveSyncGroupResponse, SendHeartbeat, SendOffsetCommit, DeliverOffsetCommit, LeaveGroup,
        PauseConsumer, ResumeConsumer,
    )  # fmt: skip
    for client in range(len(config.consumers)):
        for kind in kinds:
            yield kind(client)
    ids = {member.member_id for member in state.group.members} | set(state.group.pending_members)
    ids |= {consumer.member_id for consumer in state.consumers if consumer.member_id}
    for member_id in sorted(ids):
        yield SessionTimeout(member_id)
    yield RebalanceTimeout()
    yield PendingSyncTimeout()
    yield ExpireOffsets()


@pytest.mark.parametrize(
    "name",
    [
        "classic-zombie-commit-fenced",
        "classic-static-replaced",
        "classic-lost-sync-fixed",
        "classic-late-sync-fixed",
        "classic-member-leaves",
    ],
)
def test_candidate_actions_include_every_enabled_action(name):
    config = next(scenario.config for scenario in SCENARIOS if scenario.name == name)
    start = classic.initial_state(config)
    seen = {start}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        candidates = set(classic.candidate_actions(config, state))
        for action in _every_action(config, state):
            after = classic.step(config, state, action)
            if after is None:
                continue
            assert action in candidates, f"{action} is enabled but not a candidate"
            if after not in seen:
                seen.add(after)
                queue.append(after)
    assert len(seen) > 50


def test_a_lost_sync_group_is_removed_by_the_pending_sync_timer_unless_the_old_rule():
    config = ClassicConfig(max_rejoins=1, max_lost_syncs=1)
    state = run(config, classic.initial_state(config), SendJoinGroup(0), SendHeartbeat(1), SendJoinGroup(1))
    state = run(config, state, ReceiveJoinGroupResponse(0), LoseSyncGroup(0))
    assert state.consumers[0].phase is ClientPhase.SYNCING and state.group.pending_sync == ("c0-0", "c1-1")
    assert refused(config, state, LoseSyncGroup(1))  # max.lost.syncs
    assert refused(config, state, PendingSyncTimeout())  # c1 has yet to sync
    state = run(config, state, ReceiveJoinGroupResponse(1), SendSyncGroup(1))
    assert run(config, state, SendHeartbeat(0)) == state  # heartbeats are fine in CompletingRebalance
    assert refused(replace(config, pending_sync_timer=False), state, PendingSyncTimeout())
    state = run(config, state, PendingSyncTimeout())
    assert state.group.member("c0-0") is None and state.group.state is ClassicGroupState.PREPARING_REBALANCE
    assert state.consumers[1].sync_response is not None  # its parked SyncGroup: REBALANCE_IN_PROGRESS
    state = run(config, state, SendHeartbeat(0))
    assert state.consumers[0].member_id == "" and state.consumers[0].phase is ClientPhase.UNJOINED
