"""The member reconciliation of KIP-848 (`spec.group.consumer_reconciliation`), transition by
transition as Kafka's `CurrentAssignmentBuilder` (and `CurrentAssignmentBuilderTest`) do them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from spec.group.consumer_reconciliation import (
    NO_EPOCH,
    MemberState,
    ServerMember,
    build,
    is_reconciled_to,
    new_member,
    owns_revoked_partitions,
    reconcile,
)


def _member(
    epoch: int,
    state: MemberState,
    assigned: set[int],
    revoking: set[int] | frozenset[int] = frozenset(),
    previous: int = NO_EPOCH,
    assigned_at: dict[int, int] | None = None,
) -> ServerMember:
    held = set(assigned) | set(revoking)
    epochs = assigned_at or {}
    return ServerMember(
        epoch,
        previous,
        state,
        frozenset(assigned),
        frozenset(revoking),
        tuple(sorted((p, epochs.get(p, epoch)) for p in held)),
    )


def _free(_: int) -> int:
    return NO_EPOCH


def _held_by_other(*partitions: int) -> Callable[[int], int]:
    return lambda p: 7 if p in partitions else NO_EPOCH


def test_new_member_is_stable_at_epoch_zero() -> None:
    member = new_member()
    assert (member.epoch, member.previous_epoch, member.state) == (0, NO_EPOCH, MemberState.STABLE)
    assert not member.assigned and not member.pending_revocation


def test_stable_at_target_epoch_is_unchanged() -> None:
    member = _member(3, MemberState.STABLE, {0})
    assert is_reconciled_to(member, 3)
    assert build(member, 3, frozenset({0, 1}), _free, frozenset({0})) is member
    assert reconcile(member, 3, frozenset({0, 1}), _free, frozenset({0})) is member


def test_stable_takes_free_partitions_at_the_target_epoch() -> None:
    member = _member(3, MemberState.STABLE, {0}, previous=2)
    after = build(member, 5, frozenset({0, 1}), _free, frozenset({0}))
    assert after == _member(5, MemberState.STABLE, {0, 1}, previous=3, assigned_at={0: 3, 1: 5})


def test_partition_held_by_another_member_is_unreleased() -> None:
    member = _member(3, MemberState.STABLE, {0})
    after = build(member, 5, frozenset({0, 1}), _held_by_other(1), frozenset({0}))
    assert (after.epoch, after.previous_epoch, after.state) == (5, 3, MemberState.UNRELEASED_PARTITIONS)
    assert after.assigned == {0}


def test_unreleased_partition_is_taken_once_free() -> None:
    member = _member(5, MemberState.UNRELEASED_PARTITIONS, {0}, previous=3)
    still = build(member, 5, frozenset({0, 1}), _held_by_other(1), frozenset({0}))
    assert still.state is MemberState.UNRELEASED_PARTITIONS and still.assigned == {0}
    after = build(member, 5, frozenset({0, 1}), _free, frozenset({0}))
    assert (after.state, after.epoch, after.assigned) == (MemberState.STABLE, 5, frozenset({0, 1}))


def test_revocation_the_client_still_owns_keeps_the_epoch() -> None:
    member = _member(3, MemberState.STABLE, {0, 1}, previous=2, assigned_at={0: 2, 1: 3})
    after = build(member, 5, frozenset({0}), _free, frozenset({0, 1}))
    assert after.state is MemberState.UNREVOKED_PARTITIONS
    assert (after.epoch, after.previous_epoch) == (3, 3)  # updateMemberEpoch(3): previous := 3
    assert (after.assigned, after.pending_revocation) == (frozenset({0}), frozenset({1}))
    assert after.assignment_epochs == ((0, 2), (1, 3))  # pending revocation keeps its assignment epoch


def test_no_owned_list_counts_as_owning() -> None:
    assert owns_revoked_partitions(None, frozenset({1}))
    assert not owns_revoked_partitions(frozenset({0}), frozenset({1}))
    assert not owns_revoked_partitions(frozenset({0}), frozenset())
    member = _member(3, MemberState.STABLE, {0, 1})
    assert build(member, 5, frozenset({0}), _free, None).state is MemberState.UNREVOKED_PARTITIONS


def test_revocation_the_client_no_longer_owns_is_dropped() -> None:
    """The client already gave the partition up: no UNREVOKED_PARTITIONS round trip."""
    member = _member(3, MemberState.STABLE, {0, 1})
    after = build(member, 5, frozenset({0}), _free, frozenset({0}))
    assert (after.state, after.epoch, after.assigned, after.pending_revocation) == (
        MemberState.STABLE,
        5,
        frozenset({0}),
        frozenset(),
    )


def test_unrevoked_waits_while_the_client_owns_a_revoked_partition() -> None:
    member = _member(3, MemberState.UNREVOKED_PARTITIONS, {0}, revoking={1})
    assert build(member, 5, frozenset({0}), _free, frozenset({0, 1})) is member
    assert build(member, 5, frozenset({0}), _free, None) is member


def test_unrevoked_moves_to_the_target_once_revoked() -> None:
    member = _member(3, MemberState.UNREVOKED_PARTITIONS, {0}, revoking={1}, previous=3)
    after = build(member, 5, frozenset({0, 2}), _free, frozenset({0}))
    assert (after.state, after.epoch, after.previous_epoch) == (MemberState.STABLE, 5, 3)
    assert after.assigned == {0, 2} and not after.pending_revocation


@pytest.mark.parametrize(("bump", "epoch"), [(True, 4), (False, 3)])
def test_second_revocation_round_epoch(bump: bool, epoch: int) -> None:
    """Revoked, but the target (newer) takes more: UNREVOKED again, at epoch + 1 (Kafka up to
    4.1) or at the same epoch (KAFKA-19974)."""
    member = _member(3, MemberState.UNREVOKED_PARTITIONS, {0, 2}, revoking={1}, previous=3)
    after = build(member, 6, frozenset({0}), _free, frozenset({0, 2}), bump_after_revocation=bump)
    assert after.state is MemberState.UNREVOKED_PARTITIONS
    assert (after.epoch, after.assigned, after.pending_revocation) == (epoch, frozenset({0}), frozenset({2}))


def test_reconcile_arms_and_cancels_the_rebalance_timeout() -> None:
    member = _member(3, MemberState.STABLE, {0, 1})
    revoking = reconcile(member, 5, frozenset({0}), _free, frozenset({0, 1}))
    assert revoking.rebalance_deadline == 3
    done = reconcile(revoking, 5, frozenset({0}), _free, frozenset({0}))
    assert done.state is MemberState.STABLE and done.rebalance_deadline is None


def test_holds_and_assignment_epoch() -> None:
    member = _member(3, MemberState.UNREVOKED_PARTITIONS, {0}, revoking={1}, assigned_at={0: 1, 1: 2})
    assert member.holds() == {0, 1}
    assert (member.assignment_epoch(0), member.assignment_epoch(1), member.assignment_epoch(2)) == (
        1,
        2,
        None,
    )
