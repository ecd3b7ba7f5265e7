"""Tests of `spec.isr`: ISR membership, the high watermark and produce acknowledgement.

Expected values follow Kafka's `Replica.isCaughtUp`, `Partition.maybeExpandIsr`,
`maybeIncrementLeaderHW`, `appendRecordsToLeader` and `checkEnoughReplicasReachOffset`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec.isr import (
    acks_all_completion,
    follower_high_watermark,
    follower_is_caught_up,
    leader_high_watermark,
    may_join_isr,
    produce_admission,
)
from spec.types import Acks, ErrorCode

PROPERTY = settings(max_examples=100, deadline=None)  # small input spaces: 100 suffice


# ---------------------------------------------------------------------------------------
# follower_is_caught_up / may_join_isr
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("follower_leo", "leader_leo", "ticks", "lag_limit", "expected"),
    [
        (5, 5, 0, 3, True),  # at the leader's LEO
        (5, 5, 100, 3, True),  # at the LEO, however long ago it was last caught up
        (0, 0, 9, 0, True),
        (4, 5, 0, 3, True),  # behind, but caught up recently
        (4, 5, 3, 3, True),  # exactly at the limit still counts (<=)
        (4, 5, 4, 3, False),  # past the limit
        (4, 5, 1, 0, False),
        (4, 5, 0, 0, True),
        (None, 5, 3, 3, True),  # unknown LEO: only the clock decides
        (None, 5, 4, 3, False),
        (None, 0, 4, 3, False),  # an unknown LEO never equals the leader's
    ],
)
def test_follower_is_caught_up(follower_leo, leader_leo, ticks, lag_limit, expected):
    assert follower_is_caught_up(follower_leo, leader_leo, ticks, lag_limit) is expected


@pytest.mark.parametrize(
    ("fetch_offset", "hw", "epoch_start", "expected"),
    [
        (5, 5, 5, True),
        (7, 5, 3, True),
        (4, 5, 3, False),  # below the HW
        (5, 3, 6, False),  # below the start of the leader's epoch (KAFKA-7128)
        (6, 3, 6, True),
        (0, 0, 0, True),
        (2, 3, 4, False),
    ],
)
def test_may_join_isr(fetch_offset, hw, epoch_start, expected):
    assert may_join_isr(fetch_offset, hw, epoch_start) is expected


# ---------------------------------------------------------------------------------------
# High watermarks
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current", "leader_leo", "followers", "expected"),
    [
        (0, 5, (), 5),  # a leader alone in the ISR commits everything it holds
        (2, 5, (5, 5), 5),
        (2, 5, (3, 5), 3),  # the slowest ISR member decides
        (2, 5, (4, 3, 5), 3),
        (2, 5, (6,), 5),  # never above the leader's own LEO
        (4, 5, (3,), 4),  # never decreases
        (4, 5, (4,), 4),
        (2, 5, (None,), 2),  # unknown follower LEO (new epoch, KIP-320) blocks the advance
        (2, 5, (5, None), 2),
        (2, 5, (None, 5), 2),
        (0, 0, (), 0),
        (3, 3, (7, 8), 3),
    ],
)
def test_leader_high_watermark(current, leader_leo, followers, expected):
    assert leader_high_watermark(current, leader_leo, followers) == expected


@pytest.mark.parametrize(
    ("leader_hw", "follower_leo", "expected"),
    [(3, 5, 3), (5, 5, 5), (7, 5, 5), (0, 4, 0), (4, 0, 0)],
)
def test_follower_high_watermark(leader_hw, follower_leo, expected):
    assert follower_high_watermark(leader_hw, follower_leo) == expected


# ---------------------------------------------------------------------------------------
# Produce
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("acks", "isr_size", "min_isr", "expected"),
    [
        (Acks.NONE, 1, 2, ErrorCode.NONE),  # min.insync.replicas only applies to acks=all
        (Acks.LEADER, 1, 2, ErrorCode.NONE),
        (Acks.NONE, 1, 1, ErrorCode.NONE),
        (Acks.LEADER, 3, 2, ErrorCode.NONE),
        (Acks.ALL, 1, 2, ErrorCode.NOT_ENOUGH_REPLICAS),
        (Acks.ALL, 2, 3, ErrorCode.NOT_ENOUGH_REPLICAS),
        (Acks.ALL, 2, 2, ErrorCode.NONE),  # exactly the minimum is enough
        (Acks.ALL, 3, 2, ErrorCode.NONE),
        (Acks.ALL, 1, 1, ErrorCode.NONE),
    ],
)
def test_produce_admission(acks, isr_size, min_isr, expected):
    assert produce_admission(acks, isr_size, min_isr) is expected


@pytest.mark.parametrize(
    ("offset", "hw", "isr_size", "min_isr", "expected"),
    [
        (4, 4, 3, 2, None),  # the HW names the next offset: offset 4 is not committed yet
        (4, 0, 3, 2, None),
        (4, 4, 1, 2, None),  # still waiting: the ISR size only matters once committed
        (4, 5, 3, 2, ErrorCode.NONE),
        (4, 9, 2, 2, ErrorCode.NONE),
        (0, 1, 1, 1, ErrorCode.NONE),
        (4, 5, 1, 2, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),  # committed, ISR shrank
        (0, 3, 2, 3, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    ],
)
def test_acks_all_completion(offset, hw, isr_size, min_isr, expected):
    assert acks_all_completion(offset, hw, isr_size, min_isr) is expected


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------

offsets = st.integers(0, 30)
maybe_offsets = st.one_of(st.none(), offsets)


@PROPERTY
@given(offsets, offsets, st.lists(maybe_offsets, max_size=4))
def test_leader_high_watermark_never_decreases(current, leader_leo, followers):
    new = leader_high_watermark(current, leader_leo, tuple(followers))
    assert new >= current
    assert new <= max(current, leader_leo)
    if None in followers:
        assert new == current
    elif new > current:
        # it only moves to an offset every ISR member, the leader included, holds
        assert all(new <= end for end in followers if end is not None)
        assert new <= leader_leo


@PROPERTY
@given(offsets, offsets, st.lists(offsets, max_size=4))
def test_leader_high_watermark_is_max_of_hw_and_min_isr_leo(current, leader_leo, followers):
    assert leader_high_watermark(current, leader_leo, tuple(followers)) == max(
        current, min([leader_leo, *followers])
    )


@st.composite
def replication_histories(draw: st.DrawFn) -> list[tuple[int, tuple[int | None, ...]]]:
    """A sequence of (leader LEO, follower LEOs) snapshots as a leader sees them over time.

    The leader's LEO only grows; each follower's known LEO is None until its first fetch in
    the epoch, then only grows and never passes the leader's LEO at that moment.
    """
    count = draw(st.integers(0, 3))
    steps = draw(st.integers(1, 8))
    leader = 0
    followers: list[int | None] = [None] * count
    history = []
    for _ in range(steps):
        leader += draw(st.integers(0, 3))
        for index, known in enumerate(followers):
            if draw(st.booleans()):
                followers[index] = draw(st.integers(known or 0, leader))
        history.append((leader, tuple(followers)))
    return history


@PROPERTY
@given(replication_histories())
def test_leader_high_watermark_is_monotone_and_below_the_leader_leo(history):
    hw = 0
    for leader_leo, followers in history:
        new = leader_high_watermark(hw, leader_leo, followers)
        assert hw <= new <= leader_leo
        known = [end for end in followers if end is not None]
        if len(known) == len(followers):
            assert new == max(hw, min([leader_leo, *known]))
        hw = new
    final_leo, final_followers = history[-1]
    if final_followers and all(end == final_leo for end in final_followers):
        assert hw == final_leo  # once everyone has caught up, everything is committed


@PROPERTY
@given(offsets, offsets, st.lists(offsets, min_size=1, max_size=4), st.data())
def test_leader_high_watermark_is_monotone_in_follower_progress(current, leader_leo, followers, data):
    index = data.draw(st.integers(0, len(followers) - 1))
    ahead = list(followers)
    ahead[index] += data.draw(st.integers(0, 5))
    assert leader_high_watermark(current, leader_leo, tuple(ahead)) >= leader_high_watermark(
        current, leader_leo, tuple(followers)
    )


@PROPERTY
@given(offsets, offsets)
def test_follower_high_watermark_bounds(leader_hw, follower_leo):
    hw = follower_high_watermark(leader_hw, follower_leo)
    assert hw <= leader_hw
    assert hw <= follower_leo
    assert hw in (leader_hw, follower_leo)


@PROPERTY
@given(st.one_of(st.none(), offsets), offsets, st.integers(0, 10), st.integers(0, 10), st.integers(0, 5))
def test_caught_up_only_gets_worse_with_time(follower_leo, leader_leo, ticks, lag_limit, more):
    if follower_is_caught_up(follower_leo, leader_leo, ticks + more, lag_limit):
        assert follower_is_caught_up(follower_leo, leader_leo, ticks, lag_limit)
    if follower_leo == leader_leo:
        assert follower_is_caught_up(follower_leo, leader_leo, ticks, lag_limit)


@PROPERTY
@given(offsets, offsets, offsets, st.integers(0, 5))
def test_may_join_isr_is_monotone_in_the_fetch_offset(fetch_offset, hw, epoch_start, more):
    if may_join_isr(fetch_offset, hw, epoch_start):
        assert may_join_isr(fetch_offset + more, hw, epoch_start)
    assert may_join_isr(max(hw, epoch_start), hw, epoch_start)


@PROPERTY
@given(st.sampled_from(Acks), st.integers(1, 5), st.integers(1, 5))
def test_produce_admission_only_refuses_acks_all_below_min_isr(acks, isr_size, min_isr):
    refused = produce_admission(acks, isr_size, min_isr) is ErrorCode.NOT_ENOUGH_REPLICAS
    assert refused == (acks is Acks.ALL and isr_size < min_isr)
    assert produce_admission(acks, isr_size, min_isr) in (ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS)


@PROPERTY
@given(offsets, offsets, st.integers(1, 5), st.integers(1, 5))
def test_acks_all_completion_waits_for_the_high_watermark(offset, hw, isr_size, min_isr):
    answer = acks_all_completion(offset, hw, isr_size, min_isr)
    if hw <= offset:
        assert answer is None
    elif isr_size < min_isr:
        assert answer is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    else:
        assert answer is ErrorCode.NONE
