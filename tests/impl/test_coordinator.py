"""The optimized classic coordinator on a real clock: the timer wheel, and costs counted in
operations (buckets visited and tasks popped), not wall time. Its answers in every state are
the conformance suites' business (`tests/conformance/test_coordinator_conformance.py`)."""

from __future__ import annotations

import pytest

from impl.coordinator import SESSION, CoordinatorConfig, GroupCoordinator, TimerTask, TimerWheel
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    ClassicGroupState,
    Errors,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    TopicPartition,
)

PROTOCOLS = (JoinGroupRequestProtocol("range", Subscription(("t0",))),)
PARTITION = TopicPartition("t0", 0)


def stable_group(coordinator: GroupCoordinator, group_id: str, size: int) -> list[str]:
    """A Stable group of `size` dynamic members (joined now, the initial delay passed, every
    member synced); returns the member ids in join order."""
    for client in range(size):
        join = JoinGroupRequest("", None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS, require_known_member_id=False)
        assert coordinator.join_group(group_id, join, client) is None
    coordinator.advance_to(coordinator.now_ms + coordinator.config.initial_rebalance_delay_ms)
    joined = [
        response
        for _, _, response in coordinator.take_deliveries()
        if isinstance(response, JoinGroupResponse)
    ]
    member_ids = [response.member_id for response in joined]
    assert len(member_ids) == size
    generation = coordinator.describe(group_id).generation
    assignments = tuple(SyncGroupRequestAssignment(member, Assignment()) for member in member_ids)
    for position, member in enumerate(member_ids):
        given = assignments if position == 0 else ()
        request = SyncGroupRequest(member, generation, None, CONSUMER_PROTOCOL_TYPE, "range", given)
        coordinator.sync_group(group_id, request, position)
    coordinator.take_deliveries()
    assert coordinator.describe(group_id).state is ClassicGroupState.STABLE
    return member_ids


def heartbeat(coordinator: GroupCoordinator, group_id: str, member_id: str) -> Errors:
    generation = coordinator.describe(group_id).generation
    return coordinator.heartbeat(group_id, HeartbeatRequest(member_id, generation)).error


# --- the wheel ---------------------------------------------------------------------------------


def test_the_wheel_fires_in_deadline_order_and_never_early() -> None:
    wheel = TimerWheel(tick_ms=10)
    late, early, middle = (TimerTask(SESSION, "g", name) for name in ("late", "early", "middle"))
    wheel.schedule(late, 100)
    wheel.schedule(early, 15)  # rounded up to the tick at 20: never before its deadline
    wheel.schedule(middle, 50)
    assert wheel.pop_due(19) is None
    assert wheel.pop_due(20) is early
    assert wheel.pop_due(99) is middle
    assert wheel.pop_due(99) is None
    assert wheel.pop_due(100) is late
    assert len(wheel) == 0


def test_rescheduling_moves_a_task_and_cancelling_disarms_it() -> None:
    wheel = TimerWheel()
    task = TimerTask(SESSION, "g", "m")
    wheel.schedule(task, 5)
    wheel.schedule(task, 50)
    assert wheel.pop_due(10) is None
    assert len(wheel) == 1
    wheel.cancel(task)
    assert len(wheel) == 0
    assert wheel.pop_due(1_000) is None
    with pytest.raises(ValueError, match="tick_ms"):
        TimerWheel(tick_ms=0)


def test_a_bucket_most_tasks_left_is_compacted() -> None:
    wheel = TimerWheel()
    tasks = [TimerTask(SESSION, "g", str(number)) for number in range(1_000)]
    for task in tasks:
        wheel.schedule(task, 10)
    for task in tasks[3:]:
        wheel.schedule(task, 20)  # they heartbeated
    popped = {wheel.pop_due(10) for _ in range(3)}
    assert popped == set(tasks[:3])
    assert wheel.pop_due(10) is None
    assert len(wheel) == 997


# --- timers on the clock -----------------------------------------------------------------------


def test_a_member_that_stops_heartbeating_is_removed_after_its_session_timeout() -> None:
    config = CoordinatorConfig(session_timeout_ms=1_000)
    coordinator = GroupCoordinator(config)
    first, second, silent = stable_group(coordinator, "g", 3)
    for now in range(coordinator.now_ms + 400, coordinator.now_ms + 2_000, 400):
        coordinator.advance_to(now)
        if coordinator.describe("g").state is ClassicGroupState.STABLE:
            assert heartbeat(coordinator, "g", first) is Errors.NONE
            assert heartbeat(coordinator, "g", second) is Errors.NONE
    described = coordinator.describe("g")
    assert [member.member_id for member in described.members] == [first, second]
    assert described.state is ClassicGroupState.PREPARING_REBALANCE
    assert heartbeat(coordinator, "g", first) is Errors.REBALANCE_IN_PROGRESS
    assert heartbeat(coordinator, "g", silent) is Errors.UNKNOWN_MEMBER_ID


def test_the_initial_delay_then_the_rebalance_timeout_complete_join_phases() -> None:
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=300, rebalance_timeout_ms=5_000, session_timeout_ms=10**9
    )
    coordinator = GroupCoordinator(config)
    request = JoinGroupRequest("", None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS, require_known_member_id=False)
    assert coordinator.join_group("g", request, 0) is None
    coordinator.advance_to(299)
    assert coordinator.describe("g").state is ClassicGroupState.PREPARING_REBALANCE
    coordinator.advance_to(300)
    assert coordinator.describe("g").state is ClassicGroupState.COMPLETING_REBALANCE
    # the leader never sends SyncGroup: the pending-sync timer removes it, the group is Empty
    coordinator.take_deliveries()
    coordinator.advance_to(300 + 4_999)
    assert coordinator.describe("g").state is ClassicGroupState.COMPLETING_REBALANCE
    coordinator.advance_to(300 + 5_000)  # the rebalance it starts has nobody to wait for
    described = coordinator.describe("g")
    assert described.state is ClassicGroupState.EMPTY
    assert described.members == ()


def test_an_empty_groups_offsets_expire_after_retention() -> None:
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_retention_ms=1_000))
    commit = OffsetCommitRequest("", -1, None, ((PARTITION, 7),))
    assert coordinator.offset_commit("g", commit).partitions[0].error is Errors.NONE
    coordinator.advance_to(999)
    assert coordinator.offset_fetch("g", OffsetFetchRequest((PARTITION,))).partitions[0].committed_offset == 7
    coordinator.advance_to(1_000)
    assert coordinator.describe("g").state is ClassicGroupState.DEAD
    assert coordinator.offset_fetch("g", OffsetFetchRequest(None)).error is Errors.GROUP_ID_NOT_FOUND


# --- costs -------------------------------------------------------------------------------------


def expiry_operations(groups: int, members_per_group: int, expiring: int) -> tuple[int, int]:
    """Build `groups` Stable groups, let every member but the first `expiring` groups' leaders
    heartbeat, then advance to when those sessions expire: (wheel operations of the advance,
    members removed)."""
    config = CoordinatorConfig(
        session_timeout_ms=10_000, rebalance_timeout_ms=10**9, initial_rebalance_delay_ms=0
    )
    coordinator = GroupCoordinator(config)
    leaders = {
        f"g{number}": stable_group(coordinator, f"g{number}", members_per_group) for number in range(groups)
    }
    start = coordinator.now_ms
    coordinator.advance_to(start + 5_000)
    for number, (group_id, members) in enumerate(leaders.items()):
        for position, member in enumerate(members):
            if number < expiring and position == 0:
                continue
            assert heartbeat(coordinator, group_id, member) is Errors.NONE
    before = coordinator.timers.operations
    coordinator.advance_to(start + 10_000)
    removed = sum(
        members_per_group - len(coordinator.describe(group_id).members)
        for group_id in list(leaders)[:expiring]
    )
    return coordinator.timers.operations - before, removed


def test_session_expiry_costs_what_expires_not_what_exists() -> None:
    small, removed_small = expiry_operations(groups=10, members_per_group=5, expiring=3)
    large, removed_large = expiry_operations(groups=1_000, members_per_group=5, expiring=3)
    assert removed_small == removed_large == 3
    assert small == large  # 3 tasks popped and the buckets they were in: 5,000 members change nothing


def test_heartbeats_never_touch_the_expiry_path() -> None:
    coordinator = GroupCoordinator(CoordinatorConfig(session_timeout_ms=10_000, initial_rebalance_delay_ms=0))
    members = stable_group(coordinator, "g", 50)
    generation = coordinator.describe("g").generation
    requests = [HeartbeatRequest(member, generation) for member in members]
    before = coordinator.timers.operations
    for now in range(coordinator.now_ms + 1, coordinator.now_ms + 200):
        coordinator.now_ms = now  # the clock moves; nothing is due
        for request in requests:
            assert coordinator.heartbeat("g", request).error is Errors.NONE
    assert coordinator.timers.operations == before


def offset_expiry_operations(groups_with_members: int) -> int:
    """Wheel operations of the advance that expires 3 Empty groups' offsets beside
    `groups_with_members` groups that keep theirs."""
    config = CoordinatorConfig(
        offsets_retention_ms=1_000, session_timeout_ms=10**9, rebalance_timeout_ms=10**9
    )
    coordinator = GroupCoordinator(config)
    for number in range(groups_with_members):
        members = stable_group(coordinator, f"busy{number}", 1)
        generation = coordinator.describe(f"busy{number}").generation
        commit = OffsetCommitRequest(members[0], generation, None, ((PARTITION, number),))
        assert coordinator.offset_commit(f"busy{number}", commit).partitions[0].error is Errors.NONE
    for number in range(3):
        assert coordinator.offset_commit(
            f"idle{number}", OffsetCommitRequest("", -1, None, ((PARTITION, 1),))
        )
    before = coordinator.timers.operations
    coordinator.advance_to(coordinator.now_ms + 1_000)
    assert all(coordinator.describe(f"idle{number}").state is ClassicGroupState.DEAD for number in range(3))
    assert coordinator.describe("busy0").state is ClassicGroupState.STABLE
    return coordinator.timers.operations - before


def test_offset_expiry_does_not_scan_the_groups_that_keep_their_offsets() -> None:
    assert offset_expiry_operations(10) == offset_expiry_operations(2_000)
