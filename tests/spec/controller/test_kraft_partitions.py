"""PartitionRegistration.merge and PartitionChangeBuilder: epochs, ELR, elections, reassignment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec.controller.kraft_partitions import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    ChangeOutcome,
    Election,
    ElrRule,
    LastKnownLeaderRule,
    LeaderRecoveryState,
    PartitionChangeRecord,
    PartitionRegistration,
    build_partition_change,
    elect_leader,
    merge,
)

ON, OFF = ElrRule.ENABLED, ElrRule.DISABLED
FIXED, UNCHECKED = LastKnownLeaderRule.ACCEPTABLE, LastKnownLeaderRule.UNCHECKED


def partition(
    replicas=(0, 1, 2), isr=(0, 1, 2), leader=0, elr=(), last_known=(), adding=(), removing=()
) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(replicas),
        isr=frozenset(isr),
        leader=leader,
        leader_epoch=5,
        partition_epoch=9,
        elr=frozenset(elr),
        last_known_elr=tuple(last_known),
        adding=frozenset(adding),
        removing=frozenset(removing),
    )


def active(*brokers: int) -> Callable[[int], bool]:
    return lambda broker: broker in brokers


def build(
    part: PartitionRegistration,
    target_isr: set[int],
    acceptable: Callable[[int], bool],
    min_isr: int = 2,
    election: Election = Election.ONLINE,
    elr: ElrRule = ON,
    rule: LastKnownLeaderRule = FIXED,
    **targets: Any,
) -> ChangeOutcome:
    return build_partition_change(
        part, frozenset(target_isr), acceptable, min_isr, election, elr, rule, **targets
    )


# --- merge -------------------------------------------------------------------------------


def test_merge_bumps_the_partition_epoch_always_and_the_leader_epoch_only_when_the_leader_is_set():
    before = partition()
    isr_only = merge(before, PartitionChangeRecord(isr=frozenset({0, 1})))
    assert (isr_only.leader, isr_only.leader_epoch, isr_only.partition_epoch) == (0, 5, 10)
    assert isr_only.isr == {0, 1}
    same_leader = merge(before, PartitionChangeRecord(leader=0))
    assert (same_leader.leader, same_leader.leader_epoch, same_leader.partition_epoch) == (0, 6, 10)
    offline = merge(before, PartitionChangeRecord(leader=NO_LEADER))
    assert (offline.leader, offline.leader_epoch, offline.has_leader) == (NO_LEADER, 6, False)


def test_merge_leaves_unset_fields_unchanged():
    before = partition(elr=(2,), last_known=(1,))
    after = merge(before, PartitionChangeRecord(elr=frozenset()))
    assert after.elr == frozenset() and after.last_known_elr == (1,) and after.replicas == before.replicas
    assert after.leader_recovery_state is LeaderRecoveryState.RECOVERED


# --- elections: ISR, then ELR, then last known leader, then unclean --------------------------


@pytest.mark.parametrize(
    ("isr", "elr", "last_known", "acceptable", "election", "expected"),
    [
        ((0, 1, 2), (), (), (0, 1, 2), Election.ONLINE, (0, False)),  # the current leader stays
        ((1, 2), (), (), (1, 2), Election.ONLINE, (1, False)),  # first valid in assignment order
        ((2, 1), (), (), (2,), Election.ONLINE, (2, False)),  # ISR order does not matter, acceptability does
        ((), (2, 1), (), (1, 2), Election.ONLINE, (1, False)),  # empty ISR: from the ELR, assignment order
        ((1,), (2,), (), (2,), Election.ONLINE, (NO_LEADER, False)),  # ELR only when the ISR is empty
        ((), (), (0,), (0,), Election.ONLINE, (0, True)),  # last known leader, flagged unclean
        ((1,), (), (), (2,), Election.ONLINE, (NO_LEADER, False)),  # unclean off: offline
        ((1,), (), (), (2,), Election.UNCLEAN, (2, True)),  # unclean on: any acceptable replica
        ((), (), (), (), Election.UNCLEAN, (NO_LEADER, False)),  # nobody acceptable
    ],
)
def test_election_order(isr, elr, last_known, acceptable, election, expected):
    part = partition(isr=isr, elr=elr, last_known=last_known, leader=0 if 0 in isr else NO_LEADER)
    result = elect_leader(
        part, part.replicas, frozenset(isr), frozenset(elr), active(*acceptable), election, ON, FIXED
    )
    assert (result.node, result.unclean) == expected


def test_last_known_leader_needs_elr_enabled_and_empty_isr_and_elr():
    part = partition(isr=(), elr=(), last_known=(1,), leader=NO_LEADER)
    anyone = active(0, 1, 2)
    assert elect_leader(
        part, part.replicas, frozenset(), frozenset(), anyone, Election.ONLINE, OFF, FIXED
    ).node == (NO_LEADER)
    assert (
        elect_leader(
            part, part.replicas, frozenset(), frozenset({2}), active(0, 1), Election.ONLINE, ON, FIXED
        ).node
        == NO_LEADER
    )


@pytest.mark.parametrize(("rule", "expected"), [(UNCHECKED, 1), (FIXED, NO_LEADER)])
def test_kafka_19522_a_fenced_last_known_leader_is_elected_only_under_the_old_rule(rule, expected):
    part = partition(isr=(), elr=(), last_known=(1,), leader=NO_LEADER)
    fenced_one = active(0, 2)  # broker 1 is fenced
    result = elect_leader(
        part, part.replicas, frozenset(), frozenset(), fenced_one, Election.ONLINE, ON, rule
    )
    assert result.node == expected


# --- the builder -------------------------------------------------------------------------


def test_fencing_a_follower_shrinks_the_isr_without_a_leader_epoch_bump():
    outcome = build(partition(), {0, 1}, active(0, 1), min_isr=2)
    assert outcome.record == PartitionChangeRecord(isr=frozenset({0, 1}))
    after = merge(partition(), outcome.record)
    assert (after.leader_epoch, after.partition_epoch) == (5, 10)


def test_fencing_the_leader_elects_the_first_valid_replica_and_bumps_the_leader_epoch():
    outcome = build(partition(), {1, 2}, active(1, 2), min_isr=2)
    assert outcome.record is not None and outcome.record.leader == 1
    after = merge(partition(), outcome.record)
    assert (after.leader, after.isr, after.leader_epoch) == (1, frozenset({1, 2}), 6)


def test_with_elr_an_isr_below_min_isr_moves_the_removed_members_to_the_elr():
    outcome = build(partition(isr=(0, 1), replicas=(0, 1)), {0}, active(0), min_isr=2)
    assert outcome.record == PartitionChangeRecord(isr=frozenset({0}), elr=frozenset({1}))


def test_with_elr_an_isr_reaching_min_isr_clears_the_elr():
    part = partition(isr=(0,), elr=(1,), replicas=(0, 1))
    outcome = build(part, {0, 1}, active(0, 1), min_isr=2)
    assert outcome.record == PartitionChangeRecord(isr=frozenset({0, 1}), elr=frozenset())


def test_with_elr_the_last_member_leaves_the_isr_and_the_last_known_leader_is_recorded():
    part = partition(isr=(0,), elr=(1,), replicas=(0, 1))
    outcome = build(part, set(), active(), min_isr=2)  # 0 fenced, 1 fenced
    assert outcome.record == PartitionChangeRecord(
        leader=NO_LEADER, isr=frozenset(), elr=frozenset({0, 1}), last_known_elr=(0,)
    )


def test_without_elr_the_isr_keeps_its_last_member_and_the_partition_goes_offline():
    part = partition(isr=(0,), replicas=(0, 1))
    outcome = build(part, set(), active(1), elr=OFF)
    assert outcome.record == PartitionChangeRecord(leader=NO_LEADER)
    assert merge(part, outcome.record).isr == {0}


def test_an_unclean_shutdown_leaves_the_elr_and_is_not_put_back():
    part = partition(isr=(), elr=(0, 1), replicas=(0, 1), leader=NO_LEADER, last_known=(0,))
    outcome = build(part, set(), active(), unclean_shutdown_replicas=frozenset({1}))
    assert outcome.record == PartitionChangeRecord(elr=frozenset({0}))


def test_an_elr_election_makes_the_leader_the_whole_isr():
    part = partition(isr=(), elr=(1, 2), leader=NO_LEADER, last_known=(0,))
    outcome = build(part, set(), active(2))
    assert outcome.from_elr and not outcome.unclean
    assert outcome.record == PartitionChangeRecord(
        leader=2, isr=frozenset({2}), elr=frozenset({1}), last_known_elr=()
    )


def test_an_unclean_election_sets_the_isr_to_the_leader_clears_the_elr_and_marks_recovering():
    part = partition(isr=(0,), replicas=(0, 1), leader=NO_LEADER)
    outcome = build(part, {0}, active(1), min_isr=1, election=Election.UNCLEAN, elr=OFF)
    assert outcome.unclean
    assert outcome.record == PartitionChangeRecord(
        leader=1, isr=frozenset({1}), leader_recovery_state=LeaderRecoveryState.RECOVERING
    )


def test_a_change_that_changes_nothing_writes_no_record():
    assert build(partition(), {0, 1, 2}, active(0, 1, 2)).record is None


def test_a_reassignment_starts_with_the_union_of_replicas_and_no_epoch_bump():
    part = partition(replicas=(0, 1), isr=(0, 1))
    outcome = build(
        part,
        {0, 1},
        active(0, 1, 2),
        min_isr=1,
        target_replicas=(1, 2, 0),
        target_adding=frozenset({2}),
        target_removing=frozenset({0}),
    )
    assert outcome.record == PartitionChangeRecord(
        replicas=(1, 2, 0), adding=frozenset({2}), removing=frozenset({0})
    )


def test_a_reassignment_completes_when_the_isr_covers_the_target_and_moves_a_removed_leader():
    part = partition(replicas=(1, 2, 0), isr=(0, 1), adding=(2,), removing=(0,))
    outcome = build(part, {0, 1, 2}, active(0, 1, 2), min_isr=1)
    assert outcome.record == PartitionChangeRecord(
        leader=1, isr=frozenset({1, 2}), replicas=(1, 2), adding=frozenset(), removing=frozenset()
    )


def test_a_reassignment_does_not_complete_before_the_new_replica_is_in_the_isr():
    part = partition(replicas=(1, 2, 0), isr=(0, 1), adding=(2,), removing=(0,))
    assert build(part, {0, 1}, active(0, 1, 2), min_isr=1).record is None


def test_removing_a_follower_by_reassignment_bumps_the_leader_epoch():
    part = partition(replicas=(0, 1, 2), isr=(0, 1, 2), adding=(), removing=(2,))
    outcome = build(part, {0, 1, 2}, active(0, 1, 2), min_isr=1)
    assert outcome.record is not None and outcome.record.leader == 0  # same leader, epoch bumped
    assert merge(part, outcome.record).leader_epoch == 6


# --- properties of every change the builder makes ---------------------------------------------

BROKERS = (0, 1, 2)
members = st.frozensets(st.sampled_from(BROKERS))


@st.composite
def partitions(draw: st.DrawFn, elr: ElrRule, min_isr: int) -> PartitionRegistration:
    """A registration the controller can reach: ISR and ELR disjoint; an ELR only with ELR on
    and an ISR below min ISR; a leader in the ISR, or, when offline, an empty ISR (ELR on) or
    a last replica standing (ELR off); at most one last known leader, only with ELR."""
    replicas = tuple(draw(st.permutations(BROKERS)))
    online = draw(st.booleans())
    if online:
        isr = draw(st.frozensets(st.sampled_from(BROKERS), min_size=1))
        leader = draw(st.sampled_from(sorted(isr)))
    else:
        isr = frozenset() if elr is ElrRule.ENABLED else frozenset({draw(st.sampled_from(BROKERS))})
        leader = NO_LEADER
    elr_members: frozenset[int] = frozenset()
    last_known: tuple[int, ...] = ()
    if elr is ElrRule.ENABLED:
        if len(isr) < min_isr:
            # With min ISR 1 only the last ISR member ever moves to the ELR.
            elr_members = draw(st.frozensets(st.sampled_from(BROKERS), max_size=min_isr))
            elr_members -= isr
        last_known = tuple(draw(st.lists(st.sampled_from(BROKERS), max_size=1)))
    return PartitionRegistration(
        replicas=replicas,
        isr=isr,
        leader=leader,
        leader_epoch=3,
        partition_epoch=7,
        elr=elr_members,
        last_known_elr=last_known,
    )


@st.composite
def changes(draw: st.DrawFn) -> tuple[PartitionRegistration, frozenset[int], int, ElrRule]:
    """A registration and a target ISR the controller can ask for: the ISR minus a broker
    being removed, or (AlterPartition) any set with the leader."""
    elr = draw(st.sampled_from(ElrRule))
    min_isr = draw(st.integers(1, 3))
    part = draw(partitions(elr, min_isr))
    if part.has_leader and draw(st.booleans()):
        target = draw(members) | {part.leader}
    else:
        target = part.isr - {draw(st.sampled_from(BROKERS))}
    return part, target, min_isr, elr


@settings(max_examples=200, deadline=None)
@given(change=changes(), accepted=members, election=st.sampled_from(Election))
def test_every_change_keeps_the_registration_valid(change, accepted, election):
    part, target, min_isr, elr = change
    outcome = build(part, set(target), lambda broker: broker in accepted, min_isr, election, elr, FIXED)
    if outcome.record is None:
        return
    after = merge(part, outcome.record)
    assert after.partition_epoch == part.partition_epoch + 1
    assert after.leader_epoch == part.leader_epoch + (outcome.record.leader != NO_LEADER_CHANGE)
    assert not after.isr & after.elr
    if after.leader != part.leader and after.has_leader:
        assert after.leader in after.isr and after.leader in accepted  # never a fenced leader
        assert after.leader in target or outcome.from_elr or outcome.unclean
    if elr is ElrRule.ENABLED:
        assert not after.elr or len(after.isr) < min_isr
    else:
        assert not after.elr and (after.isr or not part.isr)
    if outcome.unclean:
        assert after.isr == {after.leader}
        assert election is Election.UNCLEAN or after.leader == part.last_known_elr[0]
