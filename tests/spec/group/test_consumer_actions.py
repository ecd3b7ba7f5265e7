"""Action-level tests of the KIP-848 consumer group spec (`spec.group.consumer`).

The heartbeat epoch rules, the commit rules and the partition-epoch bookkeeping are tested as
tables of the pure functions; every action is tested for its guard (`step` returns None where
Kafka would not let it happen) and its effect, on states built by running actions from the
initial state (`run` checks every step is enabled and the coordinator's invariants hold all along).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec._frozen import replace
from spec.group.consumer import (
    INVARIANTS,
    STEP_PROPERTIES,
    Action,
    Client,
    ClientCommitOffset,
    ClientHeartbeat,
    ClientHeartbeatResponseLost,
    ClientLeaveGroup,
    ClientRetryCommit,
    ClientRevokePartitions,
    ClientSendCommit,
    ClientSendHeartbeat,
    ClientStaticLeave,
    ClientStaticRestart,
    ClientStatus,
    CommitEpochRule,
    ConsumerGroupConfig,
    Coordinator,
    CoordinatorHandleCommit,
    CoordinatorHandleHeartbeat,
    CoordinatorRebalanceTimeout,
    CoordinatorSessionTimeout,
    Event,
    GroupState,
    HeartbeatRequest,
    HeartbeatResponse,
    RejoinRule,
    StaticRejoinRule,
    _with_member,
    apply_response,
    candidate_actions,
    commit_error,
    epochs_only_grow,
    handle_heartbeat,
    initial_state,
    invariants_for,
    member_epoch_error,
    request_error,
    step,
)
from spec.group.consumer_reconciliation import MemberState, ServerMember
from spec.group.types import Errors

_COORDINATOR_SAFETY = (
    "one_owner_per_partition",
    "partition_epochs_consistent",
    "no_member_holds_reassigned_partition",
    "epochs_are_ordered",
)


def run(
    config: ConsumerGroupConfig, actions: Sequence[Action], state: GroupState | None = None
) -> GroupState:
    """Apply `actions` in order; each must be enabled and offered by `candidate_actions`, and
    the coordinator's invariants and `epochs_only_grow` must hold after each."""
    state = initial_state(config) if state is None else state
    for action in actions:
        assert action in set(candidate_actions(config, state)), f"{action} not offered"
        after = step(config, state, action)
        assert after is not None, f"{action} refused"
        for name in _COORDINATOR_SAFETY:
            assert INVARIANTS[name](after), f"{name} fails after {action}"
        assert STEP_PROPERTIES["epochs_only_grow"](state, after), f"an epoch went back at {action}"
        state = after
    return state


def _member(epoch: int, previous: int, assigned: set[int]) -> ServerMember:
    return ServerMember(
        epoch,
        previous,
        MemberState.STABLE,
        frozenset(assigned),
        frozenset(),
        tuple((p, epoch) for p in assigned),
    )


# --- the heartbeat's epoch rules -------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch", "owned", "static", "error"),
    [
        (0, frozenset(), False, None),  # join
        (
            0,
            frozenset({1}),
            False,
            Errors.INVALID_REQUEST,
        ),  # "TopicPartitions must be empty when (re-)joining"
        (0, None, False, Errors.INVALID_REQUEST),
        (-1, frozenset(), False, None),  # leave
        (-2, frozenset(), True, None),  # static leave
        (-2, frozenset(), False, Errors.INVALID_REQUEST),  # -2 needs a group.instance.id
        (-3, frozenset(), True, Errors.INVALID_REQUEST),  # "MemberEpoch is invalid."
        (4, frozenset({0}), False, None),
    ],
)
def test_request_validation(
    epoch: int, owned: frozenset[int] | None, static: bool, error: Errors | None
) -> None:
    assert request_error(HeartbeatRequest(epoch, owned), static) is error


_STABLE_AT_5 = _member(5, 3, {0, 1})


@pytest.mark.parametrize(
    ("received", "owned", "rule", "error"),
    [
        (5, frozenset({0, 1}), RejoinRule.FIXED, None),  # the member's epoch
        (6, frozenset(), RejoinRule.FIXED, Errors.FENCED_MEMBER_EPOCH),  # ahead of the coordinator
        (3, frozenset({0}), RejoinRule.FIXED, None),  # previous epoch, a subset: the bump was lost
        (3, frozenset({0, 1}), RejoinRule.FIXED, None),  # previous epoch, the whole assignment
        (3, frozenset({0, 2}), RejoinRule.FIXED, Errors.FENCED_MEMBER_EPOCH),  # previous epoch, not a subset
        (3, None, RejoinRule.FIXED, Errors.FENCED_MEMBER_EPOCH),  # previous epoch, no owned list
        (4, frozenset(), RejoinRule.FIXED, Errors.FENCED_MEMBER_EPOCH),  # behind, not the previous epoch
        (0, frozenset(), RejoinRule.OLD, Errors.FENCED_MEMBER_EPOCH),  # rejoin refused (KAFKA-19233)
        (0, frozenset(), RejoinRule.FIXED, None),  # rejoin accepted (apache/kafka #21305)
    ],
)
def test_member_epoch_validation(
    received: int, owned: frozenset[int] | None, rule: RejoinRule, error: Errors | None
) -> None:
    assert member_epoch_error(_STABLE_AT_5, received, owned, rule) is error


def test_old_rule_accepts_rejoin_only_at_previous_epoch_zero() -> None:
    """A member at epoch 1 whose previous epoch is 0 passes the old check with epoch 0: why the
    bug needs a member two bumps away."""
    assert member_epoch_error(_member(1, 0, {0}), 0, frozenset(), RejoinRule.OLD) is None
    assert (
        member_epoch_error(_member(2, 1, {0}), 0, frozenset(), RejoinRule.OLD) is Errors.FENCED_MEMBER_EPOCH
    )


# --- the commit rules --------------------------------------------------------------------------


_REVOKING = ServerMember(
    6, 6, MemberState.UNREVOKED_PARTITIONS, frozenset({0}), frozenset({1}), ((0, 4), (1, 2))
)


@pytest.mark.parametrize(
    ("member", "partition", "epoch", "rule", "error"),
    [
        (None, 0, 6, CommitEpochRule.EXACT, Errors.UNKNOWN_MEMBER_ID),
        (None, 0, 6, CommitEpochRule.RANGE, Errors.UNKNOWN_MEMBER_ID),
        (_REVOKING, 0, 6, CommitEpochRule.EXACT, Errors.NONE),
        (
            _REVOKING,
            0,
            5,
            CommitEpochRule.EXACT,
            Errors.STALE_MEMBER_EPOCH,
        ),  # the false fencing KIP-1251 fixes
        (_REVOKING, 0, 7, CommitEpochRule.EXACT, Errors.STALE_MEMBER_EPOCH),
        (
            _REVOKING,
            2,
            6,
            CommitEpochRule.EXACT,
            Errors.NONE,
        ),  # the exact rule does not look at the partition
        (_REVOKING, 0, 5, CommitEpochRule.RANGE, Errors.NONE),  # 4 <= 5 <= 6
        (_REVOKING, 0, 4, CommitEpochRule.RANGE, Errors.NONE),
        (_REVOKING, 0, 3, CommitEpochRule.RANGE, Errors.STALE_MEMBER_EPOCH),  # older than its assignment
        (_REVOKING, 0, 7, CommitEpochRule.RANGE, Errors.STALE_MEMBER_EPOCH),  # newer than the member
        (_REVOKING, 1, 2, CommitEpochRule.RANGE, Errors.NONE),  # pending revocation still commits
        (_REVOKING, 2, 6, CommitEpochRule.RANGE, Errors.STALE_MEMBER_EPOCH),  # not the member's partition
    ],
)
def test_commit_validation(
    member: ServerMember | None, partition: int, epoch: int, rule: CommitEpochRule, error: Errors
) -> None:
    assert commit_error(member, partition, epoch, rule) is error


# --- partition epochs --------------------------------------------------------------------------


def _coordinator(members: tuple[ServerMember | None, ...], partitions: int = 2) -> Coordinator:
    empty = Coordinator(3, 3, (None,) * len(members), (None,) * len(members), (None,) * partitions)
    for index, member in enumerate(members):
        empty = _with_member(empty, index, member)
    return empty


def test_partition_epochs_follow_the_members() -> None:
    coordinator = _coordinator((_member(3, 2, {0}), _member(3, 2, {1})))
    assert coordinator.owners == ((0, 3), (1, 3))
    assert not coordinator.illegal_state
    moved = _with_member(coordinator, 0, replace(coordinator.members[0], epoch=4, assigned=frozenset()))
    assert moved.owners == (None, (1, 3))


def test_adding_an_owned_partition_is_illegal() -> None:
    """`ConsumerGroup.addPartitionEpochs` throws IllegalStateException: the coordinator's own
    guarantee that a partition has one owner."""
    coordinator = _coordinator((_member(3, 2, {0}), None))
    assert _with_member(coordinator, 1, _member(3, 2, {0})).illegal_state


def test_removing_at_another_epoch_is_illegal() -> None:
    coordinator = _coordinator((_member(3, 2, {0}), None))
    tampered = replace(coordinator, owners=((0, 2), None))
    assert _with_member(tampered, 0, None).illegal_state


# --- handle_heartbeat: join, leave, static membership -----------------------------------------


_TWO = ConsumerGroupConfig()
_STATIC = ConsumerGroupConfig(
    static_members=1, static_leaves=True, max_static_restarts=1, max_session_timeouts=1
)


def test_first_join_bumps_the_group_epoch_and_assigns_everything() -> None:
    coordinator, response = handle_heartbeat(
        _TWO, initial_state(_TWO).coordinator, 0, HeartbeatRequest(0, frozenset())
    )
    assert response == HeartbeatResponse(Errors.NONE, 1, frozenset({0, 1}))
    assert (coordinator.group_epoch, coordinator.assignment_epoch) == (1, 1)
    assert coordinator.target == (frozenset({0, 1}), None)
    assert coordinator.owners == ((0, 1), (0, 1))


def test_second_join_waits_for_the_partition_to_be_released() -> None:
    state = run(_TWO, [ClientHeartbeat(0), ClientHeartbeat(1)])
    coordinator = state.coordinator
    assert coordinator.group_epoch == 2 and coordinator.target == (frozenset({0}), frozenset({1}))
    member = coordinator.members[1]
    assert member is not None and member.state is MemberState.UNRELEASED_PARTITIONS
    assert member.epoch == 2 and not member.assigned


def test_full_rebalance_with_revocation() -> None:
    state = run(
        _TWO,
        [
            ClientHeartbeat(0),
            ClientHeartbeat(1),
            ClientHeartbeat(0),
            ClientRevokePartitions(0),
            ClientHeartbeat(0),
        ],
    )
    first = state.coordinator.members[0]
    assert first is not None and (first.epoch, first.state, first.assigned) == (
        2,
        MemberState.STABLE,
        frozenset({0}),
    )
    assert state.coordinator.owners == ((0, 2), None)  # p1 released, not yet taken
    state = run(_TWO, [ClientHeartbeat(1)], state)
    assert state.clients[1].owned == {1} and state.coordinator.owners == ((0, 2), (1, 2))
    assert Event.GROUP_STABLE in state.history.events and Event.PARTITION_MOVED in state.history.events


def test_unknown_member_and_unknown_leave() -> None:
    coordinator = initial_state(_TWO).coordinator
    assert (
        handle_heartbeat(_TWO, coordinator, 0, HeartbeatRequest(3, frozenset()))[1].error
        is Errors.UNKNOWN_MEMBER_ID
    )
    assert (
        handle_heartbeat(_TWO, coordinator, 0, HeartbeatRequest(-1, frozenset()))[1].error
        is Errors.UNKNOWN_MEMBER_ID
    )


def test_leave_removes_the_member_and_frees_its_partitions() -> None:
    state = run(_TWO, [ClientHeartbeat(0)])
    coordinator, response = handle_heartbeat(_TWO, state.coordinator, 0, HeartbeatRequest(-1, frozenset()))
    assert response == HeartbeatResponse(Errors.NONE, -1)
    assert coordinator.members[0] is None and coordinator.target[0] is None
    assert coordinator.owners == (None, None) and coordinator.group_epoch == 2


def test_static_leave_keeps_the_assignment_and_return_replaces_the_member() -> None:
    state = run(_STATIC, [ClientHeartbeat(0), ClientStaticLeave(0)])
    left = state.coordinator.members[0]
    assert left is not None and left.epoch == -2 and left.assigned == {0, 1}
    assert state.coordinator.owners == ((0, -2), (0, -2)) and state.coordinator.group_epoch == 1
    assert state.clients[0].status is ClientStatus.STOPPED
    state = run(_STATIC, [ClientStaticRestart(0), ClientHeartbeat(0)], state)
    back = state.coordinator.members[0]
    assert back is not None and back.epoch == 1 and back.assigned == {0, 1}
    assert state.coordinator.group_epoch == 1  # a replacement is not a new subscription
    assert state.clients[0].owned == {0, 1} and Event.STATIC_MEMBER_RETURNED in state.history.events


def test_static_instance_not_released() -> None:
    state = run(_STATIC, [ClientHeartbeat(0)])
    coordinator, response = handle_heartbeat(_STATIC, state.coordinator, 0, HeartbeatRequest(0, frozenset()))
    assert response.error is Errors.UNRELEASED_INSTANCE_ID and coordinator is state.coordinator


@pytest.mark.parametrize(
    ("rule", "status", "event"),
    [
        (StaticRejoinRule.REPLACE, ClientStatus.STOPPED, Event.SELF_FENCED),
        (StaticRejoinRule.IN_PLACE, ClientStatus.MEMBER, Event.STATIC_REJOINED_IN_PLACE),
    ],
)
def test_static_rejoin_after_a_lost_response(
    rule: StaticRejoinRule, status: ClientStatus, event: Event
) -> None:
    """The static consumer's own retry with epoch 0: refused as if it were a second instance
    (Kafka 4.x), or given its member back (apache/kafka #23542)."""
    config = ConsumerGroupConfig(static_members=1, max_lost_responses=1, static_rejoin=rule)
    state = run(config, [ClientHeartbeatResponseLost(0), ClientHeartbeat(0)])
    assert state.clients[0].status is status and event in state.history.events
    assert INVARIANTS["no_self_fencing"](state) is (rule is StaticRejoinRule.IN_PLACE)
    member = state.coordinator.members[0]
    assert member is not None and member.epoch == 1 and state.coordinator.group_epoch == 1


@pytest.mark.parametrize(
    ("rule", "error"), [(RejoinRule.OLD, Errors.FENCED_MEMBER_EPOCH), (RejoinRule.FIXED, Errors.NONE)]
)
def test_rejoin_of_a_known_member(rule: RejoinRule, error: Errors) -> None:
    """A member two bumps away (epoch 2, previous 1) rejoins with epoch 0."""
    config = ConsumerGroupConfig(rejoin=rule)
    coordinator = _coordinator((_member(2, 1, {0, 1}), None))
    coordinator = replace(coordinator, group_epoch=2, assignment_epoch=2, target=(frozenset({0, 1}), None))
    after, response = handle_heartbeat(config, coordinator, 0, HeartbeatRequest(0, frozenset()))
    assert response.error is error
    if error is Errors.NONE:
        assert response == HeartbeatResponse(Errors.NONE, 2, frozenset({0, 1})) and after == coordinator


# --- the client's rules ------------------------------------------------------------------------


def test_apply_response() -> None:
    member = Client(ClientStatus.MEMBER, 3, frozenset({0, 1}), frozenset({0, 1}))
    taken = apply_response(member, HeartbeatResponse(Errors.NONE, 4, frozenset({0, 2})))
    assert (taken.epoch, taken.assignment, taken.owned) == (4, frozenset({0, 2}), frozenset({0, 1, 2}))
    fenced = apply_response(member, HeartbeatResponse(Errors.FENCED_MEMBER_EPOCH))
    assert (fenced.status, fenced.epoch, fenced.owned, fenced.was_fenced) == (
        ClientStatus.JOINING,
        0,
        frozenset(),
        True,
    )
    assert apply_response(member, HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)).status is ClientStatus.JOINING
    assert (
        apply_response(member, HeartbeatResponse(Errors.UNRELEASED_INSTANCE_ID)).status
        is ClientStatus.STOPPED
    )
    stopped = Client(ClientStatus.STOPPED)
    assert apply_response(stopped, HeartbeatResponse(Errors.NONE, 4, frozenset({0}))) is stopped


# --- each action's guard and effect -----------------------------------------------------------


def test_heartbeat_guards() -> None:
    config = ConsumerGroupConfig(max_late_heartbeats=1)
    state = run(config, [ClientSendHeartbeat(0)])
    assert state.clients[0].in_flight == HeartbeatRequest(0, frozenset())
    assert step(config, state, ClientHeartbeat(0)) is None  # one heartbeat in flight at a time
    assert step(config, state, ClientSendHeartbeat(1)) is None  # the bound
    assert step(config, state, CoordinatorHandleHeartbeat(1)) is None  # nothing in flight
    assert step(config, state, ClientHeartbeatResponseLost(0)) is None  # max_lost_responses = 0


def test_late_heartbeat_carries_the_view_it_was_sent_with() -> None:
    config = ConsumerGroupConfig(max_late_heartbeats=1)
    state = run(config, [ClientHeartbeat(0), ClientHeartbeat(1), ClientHeartbeat(0), ClientSendHeartbeat(0)])
    assert state.clients[0].in_flight == HeartbeatRequest(1, frozenset({0, 1}))
    state = run(config, [ClientRevokePartitions(0), CoordinatorHandleHeartbeat(0)], state)
    member = state.coordinator.members[0]
    # the request still listed p1: the coordinator keeps waiting for its revocation
    assert member is not None and member.state is MemberState.UNREVOKED_PARTITIONS
    assert state.clients[0].owned == {0} and state.clients[0].in_flight is None


def test_lost_response_changes_only_the_coordinator() -> None:
    config = ConsumerGroupConfig(max_lost_responses=1)
    state = run(config, [ClientHeartbeatResponseLost(0)])
    assert state.coordinator.members[0] is not None and state.clients[0] == Client()
    assert state.history.lost_responses == 1
    assert step(config, state, ClientHeartbeatResponseLost(0)) is None
    state = run(config, [ClientHeartbeat(0)], state)  # the retry at epoch 0 passes: previous epoch 0
    assert state.clients[0].epoch == 1 and state.clients[0].owned == {0, 1}


def test_revoke_guard_and_effect() -> None:
    state = run(_TWO, [ClientHeartbeat(0)])
    assert step(_TWO, state, ClientRevokePartitions(0)) is None  # nothing to revoke
    state = run(_TWO, [ClientHeartbeat(1), ClientHeartbeat(0)], state)
    assert state.clients[0].assignment == {0} and state.clients[0].owned == {0, 1}
    state = run(_TWO, [ClientRevokePartitions(0)], state)
    assert state.clients[0].owned == {0}


@pytest.mark.parametrize(
    ("rule", "event"),
    [
        (CommitEpochRule.EXACT, Event.LEGITIMATE_COMMIT_REFUSED),
        (CommitEpochRule.RANGE, Event.STALE_COMMIT_ACCEPTED),
    ],
)
def test_commit_after_a_lost_bump(rule: CommitEpochRule, event: Event) -> None:
    """KIP-1251's story: the member is bumped to epoch 2 keeping p0, the response is lost, the
    consumer commits p0 at epoch 1."""
    config = ConsumerGroupConfig(commits=True, max_lost_responses=1, commit_rule=rule)
    state = run(
        config,
        [
            ClientHeartbeat(0),
            ClientHeartbeat(1),
            ClientHeartbeat(0),
            ClientRevokePartitions(0),
            ClientHeartbeatResponseLost(0),
            ClientCommitOffset(0, 0),
        ],
    )
    assert event in state.history.events
    assert Event.ZOMBIE_COMMIT_LANDED not in state.history.events


def test_commit_guards() -> None:
    state = run(ConsumerGroupConfig(commits=True), [ClientHeartbeat(0)])
    assert step(_TWO, state, ClientCommitOffset(0, 0)) is None  # commits not explored
    assert step(ConsumerGroupConfig(commits=True), state, ClientCommitOffset(1, 0)) is None  # not owned
    assert (
        step(ConsumerGroupConfig(commits=True), state, ClientSendCommit(0, 0)) is None
    )  # max_late_commits = 0


def test_late_commit_of_a_fenced_member_is_refused() -> None:
    config = ConsumerGroupConfig(commits=True, max_late_commits=1, max_rebalance_timeouts=1)
    state = run(
        config,
        [
            ClientHeartbeat(0),
            ClientSendCommit(0, 1),
            ClientHeartbeat(1),
            ClientHeartbeat(0),
            CoordinatorRebalanceTimeout(0),
            ClientHeartbeat(1),
        ],
    )
    assert state.coordinator.members[0] is None and state.clients[1].owned == {0, 1}
    assert step(config, state, CoordinatorHandleCommit(1)) is None
    state = run(config, [CoordinatorHandleCommit(0)], state)
    assert Event.ZOMBIE_COMMIT_REFUSED in state.history.events and state.clients[0].commit_in_flight is None


@pytest.mark.parametrize(
    ("rule", "event"),
    [
        (CommitEpochRule.EXACT, Event.ZOMBIE_COMMIT_LANDED),
        (CommitEpochRule.RANGE, Event.ZOMBIE_COMMIT_REFUSED),
    ],
)
def test_restamped_retry(rule: CommitEpochRule, event: Event) -> None:
    """A commit for p1 made at epoch 1, retried with epoch 2 after p1 was revoked and given to
    consumer 1: the exact rule takes it (a zombie commit), KIP-1251's rule does not."""
    config = ConsumerGroupConfig(commits=True, max_late_commits=1, restamped_retries=True, commit_rule=rule)
    state = run(config, [ClientHeartbeat(0), ClientSendCommit(0, 1)])
    assert step(config, state, ClientRetryCommit(0)) is None  # same epoch: nothing to restamp
    assert step(replace(config, restamped_retries=False), state, ClientRetryCommit(0)) is None
    state = run(
        config,
        [
            ClientHeartbeat(1),
            ClientHeartbeat(0),
            ClientRevokePartitions(0),
            ClientHeartbeat(0),
            ClientRetryCommit(0),
            ClientHeartbeat(1),
        ],
        state,
    )
    in_flight = state.clients[0].commit_in_flight
    assert in_flight is not None and in_flight.member_epoch == 2 and in_flight.partition == 1
    state = run(config, [CoordinatorHandleCommit(0)], state)
    assert event in state.history.events


def test_leave_guard_and_effect() -> None:
    config = ConsumerGroupConfig(leaves=True)
    assert step(config, initial_state(config), ClientLeaveGroup(0)) is None  # not a member yet
    state = run(config, [ClientHeartbeat(0)])
    assert step(_TWO, state, ClientLeaveGroup(0)) is None  # leaves not explored
    state = run(config, [ClientLeaveGroup(0)], state)
    assert state.clients[0].status is ClientStatus.UNSUBSCRIBED and not state.clients[0].owned
    assert state.coordinator.members[0] is None and Event.MEMBER_LEFT in state.history.events


def test_static_guards() -> None:
    state = run(_STATIC, [ClientHeartbeat(0), ClientHeartbeat(1)])
    assert step(_STATIC, state, ClientStaticLeave(1)) is None  # consumer 1 is dynamic
    assert step(_STATIC, state, ClientStaticRestart(0)) is None  # still running
    state = run(_STATIC, [ClientStaticLeave(0), ClientStaticRestart(0)], state)
    assert state.clients[0] == Client() and state.history.static_restarts == 1


def test_session_timeout() -> None:
    config = ConsumerGroupConfig(max_session_timeouts=1)
    state = initial_state(config)
    assert step(config, state, CoordinatorSessionTimeout(0)) is None  # no member
    state = run(config, [ClientHeartbeat(0), CoordinatorSessionTimeout(0)])
    assert state.coordinator.members[0] is None and state.coordinator.group_epoch == 2
    assert state.clients[0].owned == {0, 1}  # the consumer does not know yet
    state = run(config, [ClientHeartbeat(0)], state)  # UNKNOWN_MEMBER_ID: lose everything, rejoin
    assert state.clients[0].status is ClientStatus.JOINING and not state.clients[0].owned


def test_session_timeout_of_a_static_member_that_left_is_not_counted() -> None:
    state = run(_STATIC, [ClientHeartbeat(0), ClientStaticLeave(0), CoordinatorSessionTimeout(0)])
    assert state.coordinator.members[0] is None and state.history.session_timeouts == 0


def test_rebalance_timeout_only_while_revoking() -> None:
    config = ConsumerGroupConfig(max_rebalance_timeouts=1)
    state = run(config, [ClientHeartbeat(0), ClientHeartbeat(1)])
    assert step(config, state, CoordinatorRebalanceTimeout(0)) is None  # not revoking
    state = run(config, [ClientHeartbeat(0)], state)
    member = state.coordinator.members[0]
    assert member is not None and member.rebalance_deadline == member.epoch == 1
    state = run(config, [CoordinatorRebalanceTimeout(0)], state)
    assert state.coordinator.members[0] is None and Event.FENCED_WHILE_REVOKING in state.history.events


# --- invariants on hand-built states ------------------------------------------------------------


def _two_owners() -> GroupState:
    state = run(_TWO, [ClientHeartbeat(0), ClientHeartbeat(1)])
    return replace(state, clients=(state.clients[0], replace(state.clients[1], owned=frozenset({1}))))


def test_invariants_detect_double_ownership() -> None:
    """Consumer 1 claims p1, which m0 still holds (p1 is pending release to m1)."""
    bad = _two_owners()
    assert not INVARIANTS["one_owner_per_partition"](bad)
    assert not INVARIANTS["no_partition_processed_twice"](bad)
    assert not INVARIANTS["no_member_holds_reassigned_partition"](bad)
    fenced = replace(bad, coordinator=_with_member(bad.coordinator, 1, None))
    assert INVARIANTS["one_owner_per_partition"](fenced)  # a fenced consumer is not counted...
    assert not INVARIANTS["no_partition_processed_twice"](fenced)  # ... but it still processes


def test_partition_epochs_consistent_detects_a_mismatch() -> None:
    state = run(_TWO, [ClientHeartbeat(0)])
    assert INVARIANTS["partition_epochs_consistent"](state)
    bad = replace(state, coordinator=replace(state.coordinator, owners=((0, 1), None)))
    assert not INVARIANTS["partition_epochs_consistent"](bad)
    assert not INVARIANTS["partition_epochs_consistent"](
        replace(state, coordinator=replace(state.coordinator, illegal_state=True))
    )


def test_epochs_are_ordered_and_only_grow() -> None:
    state = run(_TWO, [ClientHeartbeat(0)])
    assert INVARIANTS["epochs_are_ordered"](state)
    ahead = replace(state, clients=(replace(state.clients[0], epoch=5), state.clients[1]))
    assert not INVARIANTS["epochs_are_ordered"](ahead)
    back = replace(state, coordinator=replace(state.coordinator, group_epoch=0, assignment_epoch=0))
    assert not epochs_only_grow(state, back)
    assert epochs_only_grow(initial_state(_TWO), state)


def test_stuck_check_on_kafka_19233() -> None:
    """Two lost join responses with a leave in between: under the old rule the consumer is
    refused forever (stuck); under the fixed rule the same trace is not stuck."""
    trace: list[Action] = [
        ClientHeartbeat(0),
        ClientHeartbeatResponseLost(1),
        ClientLeaveGroup(0),
        ClientHeartbeatResponseLost(1),
        ClientHeartbeat(1),
    ]
    for rule, stuck in ((RejoinRule.OLD, True), (RejoinRule.FIXED, False)):
        config = ConsumerGroupConfig(rejoin=rule, leaves=True, max_lost_responses=2)
        state = run(config, trace)
        assert invariants_for(config)["rebalance_completes"](state) is not stuck
    assert invariants_for(config)["rebalance_completes"](initial_state(config))  # waiting, but may move


# --- candidate_actions offers every enabled action -----------------------------------------------

_RICH = ConsumerGroupConfig(
    members=3,
    static_members=1,
    commits=True,
    leaves=True,
    static_leaves=True,
    max_static_restarts=1,
    max_lost_responses=1,
    max_late_heartbeats=1,
    max_late_commits=1,
    max_session_timeouts=1,
    max_rebalance_timeouts=1,
    restamped_retries=True,
)


def _every_action(config: ConsumerGroupConfig) -> list[Action]:
    actions: list[Action] = []
    for c in range(config.members):
        actions += [
            ClientHeartbeat(c),
            ClientHeartbeatResponseLost(c),
            ClientSendHeartbeat(c),
            CoordinatorHandleHeartbeat(c),
            ClientRevokePartitions(c),
            CoordinatorHandleCommit(c),
            ClientRetryCommit(c),
            ClientLeaveGroup(c),
            ClientStaticLeave(c),
            ClientStaticRestart(c),
            CoordinatorSessionTimeout(c),
            CoordinatorRebalanceTimeout(c),
        ]
        for p in range(config.partitions):
            actions += [ClientCommitOffset(c, p), ClientSendCommit(c, p)]
    return actions


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 10_000), max_size=30))
def test_candidate_actions_offer_every_enabled_action(choices: list[int]) -> None:
    """Along a random walk, every action `step` enables is among `candidate_actions` (the
    checker only tries those), and every state keeps the coordinator's invariants."""
    everything = _every_action(_RICH)
    state = initial_state(_RICH)
    for choice in choices:
        offered = list(candidate_actions(_RICH, state))
        enabled = [action for action in everything if step(_RICH, state, action) is not None]
        assert set(enabled) <= set(offered)
        if not enabled:
            break
        state_after = step(_RICH, state, enabled[choice % len(enabled)])
        assert state_after is not None
        for name in _COORDINATOR_SAFETY:
            assert INVARIANTS[name](state_after), name
        state = state_after
