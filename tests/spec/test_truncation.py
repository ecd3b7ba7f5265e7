"""Tests of `spec.truncation`: where a follower truncates before fetching from a new leader.

The examples are KIP-101's scenarios and KIP-279's multi-round exchange. The properties
generate a leader and a follower that share a prefix and then diverge *realistically*: in
Kafka an epoch has a single leader, so two replicas holding a record of the same epoch at
the same offset hold the same record (and everything before it). After the common prefix
the two logs therefore use disjoint sets of epochs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec.log import (
    EMPTY_LOG,
    EpochCache,
    ReplicaLog,
    append,
    assign_epoch,
    records_from,
    truncate_cache_from_end,
    truncate_to,
    with_high_watermark,
)
from spec.truncation import (
    epoch_truncation_offset,
    high_watermark_truncation_offset,
    offsets_for_leader_epoch,
    truncation_round,
)
from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, Record

PROPERTY = settings(max_examples=200, deadline=None)


def cache(*entries: tuple[int, int]) -> EpochCache:
    """An epoch cache from (epoch, start offset) pairs."""
    return tuple(EpochEntry(epoch, start) for epoch, start in entries)


def log_from(*pairs: tuple[int, int], hw: int = 0) -> ReplicaLog:
    """A log from (epoch, value) pairs starting at offset 0, built through `append`."""
    return with_high_watermark(append(EMPTY_LOG, tuple(Record(e, v) for e, v in pairs)), hw)


def as_leader(log: ReplicaLog, epoch: int) -> ReplicaLog:
    """A replica elected leader in `epoch` assigns it at its LEO (KAFKA-7415)."""
    return replace(log, epoch_cache=assign_epoch(log.epoch_cache, epoch, log.log_end_offset))


def truncation_point(follower: ReplicaLog, leader: ReplicaLog) -> int:
    """`epoch_truncation_offset` with both logs' own fields."""
    return epoch_truncation_offset(
        follower.epoch_cache,
        follower.log_end_offset,
        follower.high_watermark,
        leader.epoch_cache,
        leader.log_end_offset,
    )


# ---------------------------------------------------------------------------------------
# offsets_for_leader_epoch: the leader's side
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (4, (4, 7)),  # the leader's current epoch ends at its LEO
        (2, (2, 5)),
        (3, (2, 5)),  # an epoch the leader never had: its floor epoch and where that ends
        (0, (0, 2)),
        (5, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
        (UNDEFINED_EPOCH, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)),
    ],
)
def test_offsets_for_leader_epoch(requested, expected):
    leader_cache = cache((0, 0), (2, 2), (4, 5))
    assert offsets_for_leader_epoch(leader_cache, 7, requested) == expected


# ---------------------------------------------------------------------------------------
# truncation_round: one OffsetsForLeaderEpoch answer
# ---------------------------------------------------------------------------------------

FOLLOWER_CACHE = cache((0, 0), (2, 3), (4, 6))  # follower LEO 8, HW 2


@pytest.mark.parametrize(
    ("leader_epoch", "leader_end", "expected"),
    [
        # no end offset: fall back to the high watermark
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, (2, True)),
        (3, UNDEFINED_EPOCH_OFFSET, (2, True)),
        # an end offset without an epoch (old message format): truncate to it
        (UNDEFINED_EPOCH, 5, (5, True)),
        (UNDEFINED_EPOCH, 20, (8, True)),  # never beyond the follower's own end
        # the follower knows the epoch: min(leader end, follower end of that epoch)
        (4, 7, (7, True)),
        (4, 10, (8, True)),
        (2, 5, (5, True)),
        (2, 6, (6, True)),
        (2, 9, (6, True)),  # the follower's epoch 2 ends at 6 even if the leader's goes on
        (0, 1, (1, True)),
        # the follower never had the leader's epoch: go back to where its own floor epoch
        # ends and ask again (KIP-279)
        (3, 7, (6, False)),
        (1, 2, (3, False)),
        (1, 5, (3, False)),
        # the follower has nothing as old as the leader's epoch: keep what the leader has
        (5, 7, (7, True)),
    ],
)
def test_truncation_round(leader_epoch, leader_end, expected):
    assert truncation_round(FOLLOWER_CACHE, 8, 2, leader_epoch, leader_end) == expected


def test_truncation_round_with_an_epoch_older_than_the_follower_cache():
    # The follower's cache starts at epoch 2 (log start moved); the leader answers epoch 1,
    # which the follower's endOffsetFor answers as (1, first start): complete there.
    assert truncation_round(cache((2, 4), (3, 6)), 8, 4, 1, 9) == (4, True)


def test_truncation_round_with_an_empty_follower_cache():
    assert truncation_round((), 0, 0, 3, 7) == (0, True)


# ---------------------------------------------------------------------------------------
# epoch_truncation_offset: the whole exchange
# ---------------------------------------------------------------------------------------


def test_kip_101_scenario_2():
    # Follower [m1@e0, m2@e0] with HW 1 (m2 uncommitted), new leader [m1@e0, m3@e1]: the
    # follower must drop m2, which the HW rule would keep next to the leader's m3.
    follower = log_from((0, 1), (0, 2), hw=1)
    leader = log_from((0, 1), (1, 3), hw=1)
    assert truncation_point(follower, leader) == 1
    # Same with the leader on its newest epoch assigned at its LEO (KAFKA-7415).
    assert truncation_point(follower, as_leader(leader, 2)) == 1


def test_kip_101_scenario_1_keeps_the_committed_record():
    # The follower has m2 committed (leader HW 2) but its own HW is still 1; the leader of
    # epoch 1 holds m2 too. The HW rule loses m2, the epoch rule keeps it.
    follower = log_from((0, 1), (0, 2), hw=1)
    leader = as_leader(log_from((0, 1), (0, 2), hw=2), 1)
    assert high_watermark_truncation_offset(follower.log_end_offset, follower.high_watermark) == 1
    assert truncation_point(follower, leader) == 2


@pytest.mark.parametrize("leader_epoch", [None, 1, 5])
def test_identical_logs_need_no_truncation(leader_epoch):
    follower = log_from((0, 1), (0, 2), (1, 3), hw=1)
    leader = follower if leader_epoch is None else as_leader(follower, leader_epoch)
    assert truncation_point(follower, leader) == follower.log_end_offset


@pytest.mark.parametrize("new_leader_epoch", [None, 1])
def test_follower_ahead_in_the_same_epoch_is_truncated_to_the_leader_leo(new_leader_epoch):
    follower = log_from((0, 1), (0, 2), (0, 3), (0, 4), hw=1)
    leader = log_from((0, 1), (0, 2), hw=2)
    if new_leader_epoch is not None:
        leader = as_leader(leader, new_leader_epoch)
    assert truncation_point(follower, leader) == 2


def test_follower_behind_the_leader_keeps_everything():
    follower = log_from((0, 1), (1, 2), hw=1)
    leader = as_leader(log_from((0, 1), (1, 2), (1, 3), (2, 4)), 3)
    assert truncation_point(follower, leader) == 2


def test_kip_279_multi_round():
    # Quick leader changes between two brokers, each appending without replicating:
    # follower epochs 1, 2, 4, 6; leader epochs 1, 3, 5, current 7. Only offset 0 is shared.
    follower = log_from((1, 0), (2, 10), (4, 11), (6, 12))
    leader = as_leader(log_from((1, 0), (3, 20), (5, 21)), 7)
    assert follower.epoch_cache == cache((1, 0), (2, 1), (4, 2), (6, 3))
    assert leader.epoch_cache == cache((1, 0), (3, 1), (5, 2), (7, 3))

    # The rounds, one OffsetsForLeaderEpoch request each.
    assert offsets_for_leader_epoch(leader.epoch_cache, 3, 6) == (5, 3)
    assert truncation_round(follower.epoch_cache, 4, 0, 5, 3) == (3, False)
    after_one = truncate_cache_from_end(follower.epoch_cache, 3)
    assert offsets_for_leader_epoch(leader.epoch_cache, 3, 4) == (3, 2)
    assert truncation_round(after_one, 3, 0, 3, 2) == (2, False)
    after_two = truncate_cache_from_end(after_one, 2)
    assert offsets_for_leader_epoch(leader.epoch_cache, 3, 2) == (1, 1)
    assert truncation_round(after_two, 2, 0, 1, 1) == (1, True)

    assert truncation_point(follower, leader) == 1


def test_kip_279_follower_with_an_epoch_the_leader_never_had():
    # KIP-279's example: the follower's epoch 2 suffix was never replicated; the leader
    # (epoch 3, elected from epoch 1) answers for epoch 2 with epoch 1 ending at 2.
    follower = log_from((1, 0), (1, 1), (2, 10), (2, 11))
    leader = as_leader(log_from((1, 0), (1, 1), (3, 20)), 4)
    assert truncation_point(follower, leader) == 2


def test_follower_whose_first_epoch_predates_the_leader_log():
    # The leader's log has nothing of epoch 0: it answers (0, its first start offset).
    follower = log_from((0, 1), (0, 2))
    leader = as_leader(log_from((1, 3)), 2)
    assert offsets_for_leader_epoch(leader.epoch_cache, leader.log_end_offset, 0) == (0, 0)
    assert truncation_point(follower, leader) == 0


def test_empty_follower():
    leader = as_leader(log_from((0, 1), (1, 2)), 2)
    assert epoch_truncation_offset((), 0, 0, leader.epoch_cache, leader.log_end_offset) == 0
    assert truncation_point(EMPTY_LOG, EMPTY_LOG) == 0


def test_leader_without_epochs_falls_back_to_the_high_watermark():
    follower = log_from((0, 1), (0, 2), (0, 3), hw=2)
    assert epoch_truncation_offset(follower.epoch_cache, 3, 2, (), 5) == 2


def test_follower_epoch_newer_than_the_leader_knows_falls_back_to_the_high_watermark():
    # Cannot happen with a leader on the newest epoch; the answer is then UNDEFINED.
    follower = log_from((0, 1), (3, 2), hw=1)
    leader = log_from((0, 1), (1, 5), (1, 6))
    assert truncation_point(follower, leader) == 1


@pytest.mark.parametrize(
    ("log_end_offset", "high_watermark", "expected"),
    [(5, 3, 3), (5, 5, 5), (3, 5, 3), (0, 0, 0), (4, 0, 0)],
)
def test_high_watermark_truncation_offset(log_end_offset, high_watermark, expected):
    assert high_watermark_truncation_offset(log_end_offset, high_watermark) == expected


# ---------------------------------------------------------------------------------------
# Properties: the safety of KIP-101/279 on realistically diverged logs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """A leader and a follower holding the same `common` first records, then different ones."""

    leader: ReplicaLog
    follower: ReplicaLog
    common: int


def _epoch_run(draw: st.DrawFn, choices: list[int]) -> list[int]:
    """A non-decreasing list of epochs drawn from `choices` (empty when there are none)."""
    if not choices:
        return []
    return sorted(draw(st.lists(st.sampled_from(choices), max_size=5)))


@st.composite
def divergences(draw: st.DrawFn, leader_on_newest_epoch: bool) -> Divergence:
    """A common prefix, then suffixes whose epochs are disjoint (one leader per epoch).

    With `leader_on_newest_epoch`, the leader was elected in an epoch newer than every epoch
    in either log and assigned it at its LEO (as Kafka's leaders do since KAFKA-7415), and
    the follower may have been a leader that never appended in its last epoch. The
    follower's HW is anywhere in its log then (it is never consulted); otherwise it is
    within the common prefix (committed records are on the leader).
    """
    prefix = sorted(draw(st.lists(st.integers(0, 4), max_size=5)))
    base = prefix[-1] if prefix else 0
    pool = range(base, base + 7)
    owners = draw(st.lists(st.sampled_from(("L", "F", "N")), min_size=len(pool), max_size=len(pool)))
    leader_suffix = _epoch_run(draw, [e for e, owner in zip(pool, owners, strict=True) if owner == "L"])
    follower_suffix = _epoch_run(draw, [e for e, owner in zip(pool, owners, strict=True) if owner == "F"])

    shared = tuple(Record(epoch, index) for index, epoch in enumerate(prefix))
    leader = append(EMPTY_LOG, shared + tuple(Record(e, 1000 + i) for i, e in enumerate(leader_suffix)))
    follower = append(EMPTY_LOG, shared + tuple(Record(e, 2000 + i) for i, e in enumerate(follower_suffix)))
    common = len(prefix)

    if leader_on_newest_epoch:
        newest = max([base, *leader_suffix, *follower_suffix]) + draw(st.integers(1, 3))
        unused = [e for e in range(max([base, *follower_suffix]) + 1, newest) if e not in leader_suffix]
        if draw(st.booleans()) and unused:
            follower = as_leader(follower, draw(st.sampled_from(unused)))
        leader = as_leader(leader, newest)
        follower_hw = draw(st.integers(0, follower.log_end_offset))
    else:
        follower_hw = draw(st.integers(0, common))
    follower = with_high_watermark(follower, follower_hw)
    return Divergence(leader, follower, common)


def _check_generated(case: Divergence) -> None:
    """The generator keeps its promise: equal below `common`, different at `common`."""
    leader, follower = case.leader.records, case.follower.records
    assert leader[: case.common] == follower[: case.common]
    if case.common < min(len(leader), len(follower)):
        assert leader[case.common].epoch != follower[case.common].epoch


@PROPERTY
@given(st.one_of(divergences(leader_on_newest_epoch=True), divergences(leader_on_newest_epoch=False)))
def test_epoch_truncation_keeps_only_what_the_leader_has(case):
    _check_generated(case)
    offset = truncation_point(case.follower, case.leader)
    assert 0 <= offset <= case.follower.log_end_offset
    assert case.follower.records[:offset] == case.leader.records[:offset]
    # nothing committed is removed
    assert offset >= case.follower.high_watermark or case.follower.high_watermark > case.common


@PROPERTY
@given(divergences(leader_on_newest_epoch=True))
def test_epoch_truncation_finds_the_divergence_point(case):
    # With the leader on the newest epoch, the exchange never falls back to the HW and
    # keeps the whole common prefix: the follower truncates exactly where the logs diverge.
    _check_generated(case)
    assert truncation_point(case.follower, case.leader) == case.common


@PROPERTY
@given(st.one_of(divergences(leader_on_newest_epoch=True), divergences(leader_on_newest_epoch=False)))
def test_follower_converges_to_the_leader_after_truncating(case):
    offset = truncation_point(case.follower, case.leader)
    truncated = truncate_to(case.follower, offset)
    caught_up = append(truncated, records_from(case.leader, offset))
    assert caught_up.records == case.leader.records
    # its epoch cache is the leader's, minus an epoch the leader assigned without records
    assert caught_up.epoch_cache == truncate_cache_from_end(
        case.leader.epoch_cache, case.leader.log_end_offset
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 20), st.integers(0, 20))
def test_high_watermark_truncation_never_passes_either_bound(log_end_offset, high_watermark):
    offset = high_watermark_truncation_offset(log_end_offset, high_watermark)
    assert offset == min(log_end_offset, high_watermark)
