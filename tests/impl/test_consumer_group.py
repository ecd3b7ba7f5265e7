"""The optimized KIP-848 coordinator (`impl.consumer_group`) on its own: the cost claims (a steady
heartbeat never reads the owned partitions; expiry costs what expires, not what exists, for
sessions and for offsets across many groups) and the timers' effects on a real clock. Its answers
are checked against the spec by the conformance suites."""

from __future__ import annotations

from collections.abc import Iterator

from impl.consumer_group import ConsumerGroupCoordinator, ConsumerGroupCoordinatorConfig
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    Errors,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TopicPartition,
)

SESSION_MS = 45_000
REBALANCE_MS = 60_000


def tps(*partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition("t0", p) for p in partitions)


def beat(
    coordinator: ConsumerGroupCoordinator,
    group: str,
    member: str,
    epoch: int,
    owned: tuple[TopicPartition, ...] | None = (),
    instance: str | None = None,
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        group, member, epoch, instance, REBALANCE_MS, ("t0",), None, owned
    )
    return coordinator.consumer_group_heartbeat(request)


def converge(coordinator: ConsumerGroupCoordinator, group: str, members: list[str]) -> dict[str, int]:
    """Join `members` and heartbeat (revoking what each response takes away) until every member
    is stable at the group's epoch; the members' epochs."""
    epochs = dict.fromkeys(members, 0)
    owned: dict[str, tuple[TopicPartition, ...]] = dict.fromkeys(members, ())
    for _ in range(10):
        for member in members:
            answer = beat(coordinator, group, member, epochs[member], owned[member])
            assert answer.error is Errors.NONE, answer
            assert answer.assignment is not None
            epochs[member] = answer.member_epoch
            owned[member] = answer.assignment
    described = coordinator.describe(group)
    assert all(m.state == "stable" and m.member_epoch == described.group_epoch for m in described.members)
    return epochs


class _Unreadable(tuple[TopicPartition, ...]):
    """An owned list that fails if anyone looks inside it."""

    def __iter__(self) -> Iterator[TopicPartition]:
        raise AssertionError("a steady heartbeat read the owned partitions")

    def __bool__(self) -> bool:
        raise AssertionError("a steady heartbeat read the owned partitions")


def test_a_steady_heartbeat_never_reads_the_owned_partitions() -> None:
    coordinator = ConsumerGroupCoordinator(ConsumerGroupCoordinatorConfig(partitions=64))
    members = [f"m{index:03}" for index in range(32)]
    epochs = converge(coordinator, "g", members)
    for member in members:
        answer = beat(coordinator, "g", member, epochs[member], _Unreadable())
        assert answer.error is Errors.NONE and answer.member_epoch == epochs[member]


def test_session_expiry_costs_what_expires_not_what_exists() -> None:
    coordinator = ConsumerGroupCoordinator(ConsumerGroupCoordinatorConfig(partitions=4))
    groups = [f"g{index}" for index in range(200)]
    for group in groups:
        for member in ("a", "b", "c"):
            beat(coordinator, group, member, 0)
    coordinator.advance_to(10_000)
    for group in groups[1:]:  # every member but g0's heartbeats again
        for member in ("a", "b", "c"):
            epoch = next(m.member_epoch for m in coordinator.describe(group).members if m.member_id == member)
            beat(coordinator, group, member, epoch, None)
    before = coordinator.timers.operations
    coordinator.advance_to(SESSION_MS)
    assert not coordinator.describe("g0").members  # fenced by their sessions
    assert all(len(coordinator.describe(group).members) == 3 for group in groups[1:])
    assert coordinator.timers.operations - before <= 3 + 2  # the three tasks, one or two buckets


def test_the_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    coordinator = ConsumerGroupCoordinator(
        ConsumerGroupCoordinatorConfig(partitions=2, session_timeout_ms=10**9)
    )
    first = beat(coordinator, "g", "a", 0)
    assert first.assignment == tps(0, 1)
    beat(coordinator, "g", "b", 0)
    revoking = beat(coordinator, "g", "a", first.member_epoch, tps(0, 1))
    assert revoking.assignment == tps(0)  # p1 is pending revocation
    member = next(m for m in coordinator.describe("g").members if m.member_id == "a")
    assert member.state == "unrevoked_partitions"
    coordinator.advance_to(REBALANCE_MS - 1)
    assert len(coordinator.describe("g").members) == 2
    coordinator.advance_to(REBALANCE_MS)
    described = coordinator.describe("g")
    assert [m.member_id for m in described.members] == ["b"]
    assert described.group_epoch == 3


def test_a_member_that_revokes_in_time_is_not_fenced() -> None:
    coordinator = ConsumerGroupCoordinator(
        ConsumerGroupCoordinatorConfig(partitions=2, session_timeout_ms=10**9)
    )
    first = beat(coordinator, "g", "a", 0)
    beat(coordinator, "g", "b", 0)
    beat(coordinator, "g", "a", first.member_epoch, tps(0, 1))
    revoked = beat(coordinator, "g", "a", first.member_epoch, tps(0))
    assert revoked.error is Errors.NONE and revoked.member_epoch == 2
    coordinator.advance_to(REBALANCE_MS + 1)  # its rebalance timer was cancelled
    assert len(coordinator.describe("g").members) == 2


def test_a_static_member_keeps_its_partitions_while_it_is_away() -> None:
    coordinator = ConsumerGroupCoordinator(ConsumerGroupCoordinatorConfig(partitions=2))
    epochs = converge(coordinator, "g", ["a", "b"])
    beat(coordinator, "g", "a", 0, instance="ia")  # refused: the instance is active
    away = beat(coordinator, "g", "a", -2, (), instance="ia")
    assert away.error is Errors.NONE and away.member_epoch == -2
    other = beat(coordinator, "g", "b", epochs["b"], tps(1))
    assert other.assignment == tps(1)  # p0 waits for the static member
    back = beat(coordinator, "g", "a", 0, (), instance="ia")
    assert back.error is Errors.NONE and back.assignment == tps(0)


def test_the_previous_epoch_is_accepted_only_with_a_subset_of_the_assignment() -> None:
    coordinator = ConsumerGroupCoordinator(ConsumerGroupCoordinatorConfig(partitions=2))
    assert beat(coordinator, "g", "a", 0).member_epoch == 1
    beat(coordinator, "g", "b", 0)
    beat(coordinator, "g", "a", 1, tps(0, 1))  # must revoke p1
    bumped = beat(coordinator, "g", "a", 1, tps(0))  # revoked: epoch 2, previous 1
    assert bumped.member_epoch == 2 and bumped.assignment == tps(0)
    # the response with epoch 2 may have been lost: epoch 1 is still accepted with a subset
    assert beat(coordinator, "g", "a", 1, tps(1)).error is Errors.FENCED_MEMBER_EPOCH
    assert beat(coordinator, "g", "a", 1, tps(0, 1)).error is Errors.FENCED_MEMBER_EPOCH
    assert beat(coordinator, "g", "a", 1, None).error is Errors.FENCED_MEMBER_EPOCH
    assert beat(coordinator, "g", "a", 3, tps(0)).error is Errors.FENCED_MEMBER_EPOCH
    assert beat(coordinator, "g", "a", 1, tps(0)).error is Errors.NONE


def test_offsets_expire_only_for_an_empty_group_without_scanning_the_others() -> None:
    coordinator = ConsumerGroupCoordinator(
        ConsumerGroupCoordinatorConfig(partitions=1, offsets_retention_ms=1_000)
    )
    groups = [f"g{index}" for index in range(300)]
    for group in groups:
        epoch = beat(coordinator, group, "a", 0).member_epoch
        answer = coordinator.offset_commit(
            group, OffsetCommitRequest("a", epoch, None, ((TopicPartition("t0", 0), 7),))
        )
        assert answer.partitions[0].error is Errors.NONE
    beat(coordinator, "g0", "a", -1)
    before = coordinator.timers.operations
    coordinator.advance_to(1_000)
    assert coordinator.describe("g0").offsets == ()
    assert all(coordinator.describe(group).offsets == ((TopicPartition("t0", 0), 7),) for group in groups[1:])
    assert coordinator.timers.operations - before <= 2
    fetched = coordinator.offset_fetch("g1", OffsetFetchRequest(None))
    assert fetched.partitions[0].committed_offset == 7
