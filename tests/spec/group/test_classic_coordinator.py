"""Every coordinator handler of the classic protocol, guard by guard, as Kafka answers
(`GroupMetadataManager.classicGroup*`, `ClassicGroup.validateOffsetCommit`)."""

from __future__ import annotations

import pytest

from spec.group import classic_coordinator as coordinator
from spec.group.classic_coordinator import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
    ClassicGroup,
    CoordinatorRules,
    IllegalStateTransitionError,
    Outcome,
)
from spec.group.types import (
    NO_OFFSET,
    Assignment,
    ClassicGroupState,
    Errors,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    TopicPartition,
)

RULES = CoordinatorRules()


def error_of(outcome: Outcome) -> Errors:
    """The error of an outcome's immediate reply."""
    assert outcome.reply is not None
    return outcome.reply.error


T0 = TopicPartition("t0", 0)
T1 = TopicPartition("t0", 1)


def protocols(*names: str, owned: tuple[TopicPartition, ...] = ()) -> tuple[JoinGroupRequestProtocol, ...]:
    return tuple(JoinGroupRequestProtocol(name, Subscription(("t0",), tuple(owned))) for name in names)


def join(
    group: ClassicGroup,
    member_id: str = "",
    client: int = 0,
    names: tuple[str, ...] = ("range",),
    instance: str | None = None,
    rules: CoordinatorRules = RULES,
    owned: tuple[TopicPartition, ...] = (),
) -> Outcome:
    request = JoinGroupRequest(member_id, instance, "consumer", protocols(*names, owned=owned))
    return coordinator.handle_join_group(group, request, client, rules)


def joined(
    group: ClassicGroup, client: int, names: tuple[str, ...] = ("range",), instance: str | None = None
) -> tuple[Outcome, str]:
    """A member joins (through MEMBER_ID_REQUIRED when dynamic); returns (group, its id)."""
    outcome = join(group, client=client, names=names, instance=instance)
    if instance is None:
        assert (
            isinstance(outcome.reply, JoinGroupResponse) and outcome.reply.error is Errors.MEMBER_ID_REQUIRED
        )
        member_id = outcome.reply.member_id
        outcome = join(outcome.group, member_id, client, names)
    else:
        member_id = outcome.group.members[-1].member_id
    return outcome, member_id


def stable_group(*instances: str | None) -> tuple[ClassicGroup, list[str]]:
    """Two (or more) members that completed generation 1, each with one partition."""
    group = ClassicGroup()
    ids: list[str] = []
    for client, instance in enumerate(instances or (None, None)):
        outcome, member_id = joined(group, client, instance=instance)
        group = outcome.group
        ids.append(member_id)
    group = coordinator.expire_rebalance_timeout(group).group  # the initial delay ends
    assert group.state is COMPLETING_REBALANCE
    assignments = tuple(
        SyncGroupRequestAssignment(member_id, Assignment((TopicPartition("t0", index),)))
        for index, member_id in enumerate(ids)
    )
    for client, member_id in reversed(list(enumerate(ids))):
        request = SyncGroupRequest(
            member_id,
            1,
            instances[client] if instances else None,
            "consumer",
            "range",
            assignments if client == 0 else (),
        )
        group = coordinator.handle_sync_group(group, request, client).group
    assert group.state is STABLE
    return group, ids


# --- states and transitions ----------------------------------------------------------------------


def test_valid_previous_states_are_kafkas_table():
    assert {
        EMPTY: {PREPARING_REBALANCE},
        PREPARING_REBALANCE: {STABLE, COMPLETING_REBALANCE, EMPTY},
        COMPLETING_REBALANCE: {PREPARING_REBALANCE},
        STABLE: {COMPLETING_REBALANCE},
        DEAD: {STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD},
    } == VALID_PREVIOUS_STATES


@pytest.mark.parametrize("source", list(ClassicGroupState))
@pytest.mark.parametrize("target", list(ClassicGroupState))
def test_transition_allows_exactly_the_table(source, target):
    group = ClassicGroup(state=source)
    if source in VALID_PREVIOUS_STATES[target]:
        moved = coordinator.transition(group, target)
        assert (moved.state, moved.previous_state) == (target, source)
    else:
        with pytest.raises(IllegalStateTransitionError):
            coordinator.transition(group, target)


# --- JoinGroup -----------------------------------------------------------------------------------


def test_a_new_dynamic_member_gets_member_id_required_then_joins_and_leads():
    outcome = join(ClassicGroup())
    assert outcome.reply == JoinGroupResponse(Errors.MEMBER_ID_REQUIRED, member_id="c0-0")
    assert outcome.group.pending_members == ("c0-0",) and outcome.group.state is EMPTY
    outcome = join(outcome.group, "c0-0")
    group = outcome.group
    assert outcome.reply is None  # parked
    assert group.state is PREPARING_REBALANCE and group.previous_state is EMPTY
    assert group.leader == "c0-0" and group.pending_members == () and group.members[0].awaiting_join
    assert group.protocol_type == "consumer"


def test_without_require_known_member_id_a_new_member_is_added_at_once():
    request = JoinGroupRequest("", None, "consumer", protocols("range"), require_known_member_id=False)
    outcome = coordinator.handle_join_group(ClassicGroup(), request, 0, RULES)
    assert outcome.reply is None and outcome.group.member("c0-0") is not None


def test_the_first_joiner_leads_and_the_initial_rebalance_waits_for_its_delay():
    outcome, first = joined(ClassicGroup(), 0)
    outcome, second = joined(outcome.group, 1)
    group = outcome.group
    assert group.leader == first and group.state is PREPARING_REBALANCE and outcome.deliveries == ()
    completed = coordinator.expire_rebalance_timeout(group)
    assert completed.group.state is COMPLETING_REBALANCE and completed.group.generation == 1
    responses = dict(completed.deliveries)
    assert responses[0].leader == first and len(responses[0].members) == 2  # type: ignore[union-attr]
    assert responses[1].leader == first and responses[1].members == ()  # type: ignore[union-attr]
    assert completed.group.pending_sync == tuple(sorted((first, second)))


def test_protocol_selection_takes_the_most_voted_protocol_all_members_support():
    group = ClassicGroup()
    votes: list[tuple[str, ...]] = [("range", "roundrobin"), ("roundrobin", "range"), ("range", "roundrobin")]
    for client, names in enumerate(votes):
        outcome, _ = joined(group, client, names)
        group = outcome.group
    assert coordinator.candidate_protocols(group) == ("range", "roundrobin")
    assert coordinator.select_protocol(group) == "range"
    group = ClassicGroup()
    preferences: list[tuple[str, ...]] = [("range", "roundrobin"), ("roundrobin",)]
    for client, names in enumerate(preferences):
        outcome, _ = joined(group, client, names)
        group = outcome.group
    assert coordinator.select_protocol(group) == "roundrobin"


def test_a_member_with_no_protocol_in_common_is_refused():
    outcome, _ = joined(ClassicGroup(), 0, ("range",))
    refused = join(outcome.group, client=1, names=("roundrobin",))
    assert refused.reply == JoinGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL)
    assert refused.group == outcome.group


def test_group_max_size_refuses_new_members_beyond_it():
    rules = CoordinatorRules(group_max_size=1)
    group, _ = stable_group(None)
    outcome = join(group, client=1, rules=rules)
    assert outcome.reply == JoinGroupResponse(Errors.GROUP_MAX_SIZE_REACHED)


def test_join_errors_for_unknown_members_and_dead_groups():
    group, (first, _) = stable_group()
    assert join(group, "nobody").reply == JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID, member_id="nobody")
    dead = ClassicGroup(state=DEAD)
    assert join(dead).reply == JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE)
    assert join(dead, first).reply == JoinGroupResponse(Errors.COORDINATOR_NOT_AVAILABLE, member_id=first)


def test_in_stable_a_follower_with_the_same_metadata_gets_the_current_generation_but_the_leader_rebalances():
    group, (leader, follower) = stable_group()
    same = join(group, follower, client=1)
    assert same.group == group
    assert (
        isinstance(same.reply, JoinGroupResponse)
        and same.reply.generation_id == 1
        and same.reply.members == ()
    )
    changed = join(group, follower, client=1, owned=(T1,))
    assert changed.group.state is PREPARING_REBALANCE and changed.reply is None
    rejoined = join(group, leader, client=0)
    assert rejoined.group.state is PREPARING_REBALANCE and rejoined.reply is None


def test_a_rebalance_completes_when_the_last_member_rejoins():
    group, (leader, follower) = stable_group()
    group = join(group, leader, client=0).group
    outcome = join(group, follower, client=1)
    assert outcome.group.state is COMPLETING_REBALANCE and outcome.group.generation == 2
    assert {client for client, _ in outcome.deliveries} == {0, 1}


def test_a_dynamic_member_that_does_not_rejoin_is_dropped_when_the_rebalance_timeout_fires():
    group, (leader, follower) = stable_group()
    group = join(group, leader, client=0).group
    outcome = coordinator.expire_rebalance_timeout(group)
    assert outcome.group.member(follower) is None and outcome.group.generation == 2
    assert outcome.group.state is COMPLETING_REBALANCE


def test_a_static_member_that_does_not_rejoin_stays():
    group, (leader, static) = stable_group(None, "i1")
    group = join(group, leader, client=0).group
    outcome = coordinator.expire_rebalance_timeout(group)
    assert outcome.group.member(static) is not None and outcome.group.state is COMPLETING_REBALANCE


def test_a_static_restart_in_stable_keeps_the_generation_and_fences_the_old_id():
    group, (static, _other) = stable_group("i0", None)
    outcome = join(group, client=2, instance="i0")
    new_group = outcome.group
    reply = outcome.reply
    assert isinstance(reply, JoinGroupResponse) and reply.error is Errors.NONE
    assert new_group.state is STABLE and new_group.generation == 1
    assert reply.member_id != static and reply.skip_assignment  # the restarted leader need not assign again
    new_member = new_group.member(reply.member_id)
    assert new_member is not None and new_member.assignment == Assignment((T0,))
    assert new_group.leader == reply.member_id and new_group.member(static) is None
    old = coordinator.handle_heartbeat(new_group, HeartbeatRequest(static, 1, "i0"))
    assert old.reply.error is Errors.FENCED_INSTANCE_ID  # type: ignore[union-attr]


def test_a_static_rejoin_during_completing_rebalance_rebalances_unless_the_old_rule():
    group, (leader, _static) = stable_group(None, "i1")
    group = join(group, leader, client=0).group
    group = coordinator.expire_rebalance_timeout(group).group  # the static member did not rejoin
    assert group.state is COMPLETING_REBALANCE
    fixed = join(group, client=2, instance="i1")
    assert fixed.group.state is PREPARING_REBALANCE and fixed.reply is None
    old_rule = join(
        group, client=2, instance="i1", rules=CoordinatorRules(static_join_rebalances_when_completing=False)
    )
    assert old_rule.group.state is COMPLETING_REBALANCE
    assert isinstance(old_rule.reply, JoinGroupResponse) and old_rule.reply.leader == leader


# --- SyncGroup -----------------------------------------------------------------------------------


def completing_group() -> tuple[ClassicGroup, str, str]:
    group, (leader, follower) = stable_group()
    group = join(group, leader, client=0).group
    group = join(group, follower, client=1).group
    assert group.state is COMPLETING_REBALANCE
    return group, leader, follower


def sync(
    group: ClassicGroup,
    member_id: str,
    generation: int = 2,
    client: int = 0,
    assignments: tuple[SyncGroupRequestAssignment, ...] = (),
    name: str = "range",
    instance: str | None = None,
) -> Outcome:
    request = SyncGroupRequest(member_id, generation, instance, "consumer", name, assignments)
    return coordinator.handle_sync_group(group, request, client)


def test_followers_wait_for_the_leaders_sync_which_stabilises_the_group():
    group, leader, follower = completing_group()
    waiting = sync(group, follower, client=1)
    assert waiting.reply is None and waiting.group.member(follower).awaiting_sync  # type: ignore[union-attr]
    assignments = (SyncGroupRequestAssignment(leader, Assignment((T0, T1))),)  # the follower left out
    done = sync(waiting.group, leader, assignments=assignments)
    assert done.group.state is STABLE and done.reply is None
    responses = dict(done.deliveries)
    assert responses[0] == SyncGroupResponse(Errors.NONE, "consumer", "range", Assignment((T0, T1)))
    assert responses[1] == SyncGroupResponse(Errors.NONE, "consumer", "range", Assignment())
    again = sync(done.group, follower, client=1)
    assert again.reply == SyncGroupResponse(Errors.NONE, "consumer", "range", Assignment())


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda g, m: (g, m, 1, "range"), Errors.ILLEGAL_GENERATION),
        (lambda g, m: (g, "nobody", 2, "range"), Errors.UNKNOWN_MEMBER_ID),
        (lambda g, m: (g, m, 2, "roundrobin"), Errors.INCONSISTENT_GROUP_PROTOCOL),
        (lambda g, m: (coordinator.transition(g, DEAD), m, 2, "range"), Errors.COORDINATOR_NOT_AVAILABLE),
        (lambda g, m: (coordinator.prepare_rebalance(g).group, m, 2, "range"), Errors.REBALANCE_IN_PROGRESS),
    ],
)
def test_sync_group_errors(change, expected):
    group, leader, _ = completing_group()
    group, member_id, generation, name = change(group, leader)
    assert sync(group, member_id, generation, name=name).reply == SyncGroupResponse(expected)


def test_sync_to_an_empty_group_is_unknown_member():
    assert sync(ClassicGroup(), "x", 0).reply == SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID)


def test_a_new_rebalance_answers_parked_syncs_with_rebalance_in_progress_and_resets_assignments():
    group, _, follower = completing_group()
    group = sync(group, follower, client=1).group
    outcome = coordinator.prepare_rebalance(group)
    assert outcome.deliveries == ((1, SyncGroupResponse(Errors.REBALANCE_IN_PROGRESS)),)
    assert all(
        member.assignment == Assignment() and not member.awaiting_sync for member in outcome.group.members
    )


# --- Heartbeat and LeaveGroup --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (STABLE, Errors.NONE),
        (COMPLETING_REBALANCE, Errors.NONE),
        (PREPARING_REBALANCE, Errors.REBALANCE_IN_PROGRESS),
        (DEAD, Errors.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_heartbeat_answer_by_state(state, expected):
    group, (leader, _) = stable_group()
    if state is not STABLE:
        group = coordinator.ClassicGroup(
            state=state, generation=1, members=group.members, leader=group.leader, protocol_type="consumer"
        )
    outcome = coordinator.handle_heartbeat(group, HeartbeatRequest(leader, 1))
    assert outcome.reply.error is expected  # type: ignore[union-attr]
    assert outcome.group == group


def test_heartbeat_member_and_generation_errors():
    group, (leader, _) = stable_group()
    assert (
        error_of(coordinator.handle_heartbeat(group, HeartbeatRequest(leader, 0)))
        is Errors.ILLEGAL_GENERATION
    )
    assert error_of(coordinator.handle_heartbeat(group, HeartbeatRequest("x", 1))) is Errors.UNKNOWN_MEMBER_ID
    assert coordinator.HEARTBEAT_ERROR_BY_STATE[EMPTY] is Errors.UNKNOWN_MEMBER_ID


def test_leave_rebalances_and_the_last_leaver_empties_the_group():
    group, (leader, follower) = stable_group()
    outcome = coordinator.handle_leave_group(group, LeaveGroupRequest((MemberIdentity(follower),)))
    assert outcome.group.state is PREPARING_REBALANCE and outcome.group.member(follower) is None
    assert outcome.reply.members[0].error is Errors.NONE  # type: ignore[union-attr]
    last = coordinator.handle_leave_group(outcome.group, LeaveGroupRequest((MemberIdentity(leader),)))
    assert last.group.state is EMPTY and last.group.generation == 2 and last.group.leader is None


def test_leave_by_instance_id_and_unknown_members():
    group, (static, _) = stable_group("i0", None)
    outcome = coordinator.handle_leave_group(
        group,
        LeaveGroupRequest((MemberIdentity("", "i0"), MemberIdentity("nobody"), MemberIdentity("", "i9"))),
    )
    errors = [answer.error for answer in outcome.reply.members]  # type: ignore[union-attr]
    assert errors == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID]
    assert outcome.group.member(static) is None


def test_a_parked_join_of_a_leaving_member_is_answered_unknown_member():
    group, (leader, _follower) = stable_group()
    group = join(group, leader, client=0).group
    outcome = coordinator.handle_leave_group(group, LeaveGroupRequest((MemberIdentity(leader),)))
    assert (0, JoinGroupResponse(Errors.UNKNOWN_MEMBER_ID)) in outcome.deliveries


# --- timers --------------------------------------------------------------------------------------


def test_session_expiry_removes_a_silent_member_but_not_a_parked_one():
    group, (leader, follower) = stable_group()
    expired = coordinator.expire_session(group, follower)
    assert expired.group.member(follower) is None and expired.group.state is PREPARING_REBALANCE
    parked = join(group, leader, client=0).group
    assert coordinator.expire_session(parked, leader).group == parked


def test_session_expiry_of_the_last_missing_member_completes_the_join():
    group, (leader, follower) = stable_group()
    group = join(group, leader, client=0).group
    outcome = coordinator.expire_session(group, follower)
    assert outcome.group.state is COMPLETING_REBALANCE and outcome.group.members[0].member_id == leader


def test_a_pending_member_expires():
    outcome = join(ClassicGroup())
    assert coordinator.expire_session(outcome.group, "c0-0").group.pending_members == ()


def test_pending_sync_expiry_removes_members_that_never_synced():
    group, leader, follower = completing_group()
    group = sync(group, leader, assignments=()).group
    assert group.state is STABLE and group.pending_sync == (follower,)
    outcome = coordinator.expire_pending_sync(group)
    # the leader, which did sync, must rejoin the next generation
    assert outcome.group.member(follower) is None and outcome.group.state is PREPARING_REBALANCE
    assert outcome.group.generation == 2 and outcome.group.pending_sync == ()


def test_offsets_expire_only_in_an_empty_group_which_then_dies():
    assert coordinator.offsets_may_expire(ClassicGroup())
    assert not coordinator.offsets_may_expire(ClassicGroup(state=STABLE))
    group = ClassicGroup(offsets=((T0, coordinator.Commit(1, "", -1)),))
    expired = coordinator.expire_offsets(group)
    assert expired.offsets == () and expired.state is DEAD


# --- OffsetCommit and OffsetFetch ----------------------------------------------------------------


def commit(
    group: ClassicGroup,
    member_id: str,
    generation: int,
    instance: str | None = None,
    rules: CoordinatorRules = RULES,
) -> tuple[ClassicGroup, OffsetCommitResponse]:
    return coordinator.handle_offset_commit(
        group, OffsetCommitRequest(member_id, generation, instance, ((T0, 7),)), rules
    )


def commit_error(
    group: ClassicGroup,
    member_id: str,
    generation: int,
    instance: str | None = None,
    rules: CoordinatorRules = RULES,
) -> Errors:
    return commit(group, member_id, generation, instance, rules)[1].partitions[0].error


def test_offset_commit_validation_in_kafkas_order():
    group, (static, dynamic) = stable_group("i0", None)
    assert commit_error(group, dynamic, 1) is Errors.NONE
    assert commit_error(group, dynamic, 0) is Errors.ILLEGAL_GENERATION
    assert commit_error(group, "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    assert commit_error(group, "stale-id", 1, "i0") is Errors.FENCED_INSTANCE_ID
    assert commit_error(group, "", -1) is Errors.UNKNOWN_MEMBER_ID  # outside the group, not Empty
    assert commit_error(ClassicGroup(), "", -1) is Errors.NONE  # admin commit to an Empty group
    assert commit_error(ClassicGroup(state=DEAD), dynamic, 1) is Errors.COORDINATOR_NOT_AVAILABLE
    preparing = join(group, static, client=0, instance="i0").group
    assert preparing.state is PREPARING_REBALANCE
    assert commit_error(preparing, dynamic, 1) is Errors.NONE  # still the current generation
    completing = join(preparing, dynamic, client=1).group
    assert completing.state is COMPLETING_REBALANCE
    assert commit_error(completing, dynamic, 2) is Errors.REBALANCE_IN_PROGRESS
    assert commit_error(completing, dynamic, 1) is Errors.ILLEGAL_GENERATION


def test_without_the_generation_check_a_stale_commit_lands():
    group, (_, dynamic) = stable_group()
    rules = CoordinatorRules(offset_commit_checks_generation=False)
    stored, response = commit(group, dynamic, 0, rules=rules)
    assert response.partitions[0].error is Errors.NONE
    assert stored.committed(T0) == coordinator.Commit(7, dynamic, 0)


def test_offset_fetch_reads_what_was_committed():
    group, (_, dynamic) = stable_group()
    stored, _ = commit(group, dynamic, 1)
    fetched = coordinator.handle_offset_fetch(stored, OffsetFetchRequest((T0, T1)))
    assert fetched.error is Errors.NONE
    assert [(answer.partition, answer.committed_offset) for answer in fetched.partitions] == [
        (T0, 7),
        (T1, NO_OFFSET),
    ]
    everything = coordinator.handle_offset_fetch(stored, OffsetFetchRequest(None))
    assert [answer.partition for answer in everything.partitions] == [T0]
    assert (
        coordinator.handle_offset_fetch(ClassicGroup(state=DEAD), OffsetFetchRequest(None)).error
        is Errors.GROUP_ID_NOT_FOUND
    )
