"""Tests of `spec.log`: the replica log and the leader-epoch cache.

Unit tests are tables of (input, expected) pairs taken from the docstrings and from
Kafka's `UnifiedLog` / `LeaderEpochFileCache`. The Hypothesis properties build logs only
through the public operations, the way replicas do, and check the invariants the module
promises.
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
    advance_log_start_offset,
    append,
    assign_epoch,
    end_offset_for_epoch,
    epoch_start_offset,
    latest_epoch,
    log_is_well_formed,
    readable_records,
    record_at,
    records_from,
    recover_after_crash,
    truncate_cache_from_end,
    truncate_cache_from_start,
    truncate_fully_and_start_at,
    truncate_to,
    with_high_watermark,
)
from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, Record

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def cache(*entries: tuple[int, int]) -> EpochCache:
    """An epoch cache from (epoch, start offset) pairs."""
    return tuple(EpochEntry(epoch, start) for epoch, start in entries)


def records(*epochs: int, first_value: int = 0) -> tuple[Record, ...]:
    """Records with the given epochs and distinct values first_value, first_value + 1, ..."""
    return tuple(Record(epoch, first_value + index) for index, epoch in enumerate(epochs))


def log_of(*epochs: int, hw: int = 0) -> ReplicaLog:
    """A log starting at offset 0 holding one record per epoch, built through `append`."""
    return with_high_watermark(append(EMPTY_LOG, records(*epochs)), hw)


def as_leader(log: ReplicaLog, epoch: int) -> ReplicaLog:
    """What a replica elected leader in `epoch` does (KAFKA-7415): assign it at its LEO."""
    return replace(log, epoch_cache=assign_epoch(log.epoch_cache, epoch, log.log_end_offset))


# The log used by most tables: offsets 0..4 with epochs 0,0,1,1,2.
FIVE = log_of(0, 0, 1, 1, 2, hw=4)
R = records(0, 0, 1, 1, 2)

# A log whose start has moved to 1: holds offsets 1..2 ([0, 0, 1] before deletion), HW 2.
TRIMMED = advance_log_start_offset(log_of(0, 0, 1, hw=2), 1)


def test_fixtures_are_what_the_tables_assume():
    assert FIVE.records == R
    assert FIVE.epoch_cache == cache((0, 0), (1, 2), (2, 4))
    assert (FIVE.log_start_offset, FIVE.high_watermark, FIVE.log_end_offset) == (0, 4, 5)
    assert TRIMMED.records == (Record(0, 1), Record(1, 2))
    assert (TRIMMED.log_start_offset, TRIMMED.high_watermark, TRIMMED.log_end_offset) == (1, 2, 3)
    assert TRIMMED.epoch_cache == cache((0, 1), (1, 2))


def test_empty_log():
    assert (EMPTY_LOG.log_start_offset, EMPTY_LOG.high_watermark, EMPTY_LOG.log_end_offset) == (0, 0, 0)
    assert EMPTY_LOG.records == ()
    assert EMPTY_LOG.epoch_cache == ()
    assert log_is_well_formed(EMPTY_LOG)


# ---------------------------------------------------------------------------------------
# Reading: record_at, records_from, readable_records
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "offset", "expected"),
    [
        (EMPTY_LOG, 0, None),
        (FIVE, 0, R[0]),
        (FIVE, 3, R[3]),
        (FIVE, 4, R[4]),
        (FIVE, 5, None),  # the LEO names the next record, not a held one
        (FIVE, -1, None),
        (TRIMMED, 0, None),  # deleted by retention
        (TRIMMED, 1, Record(0, 1)),
        (TRIMMED, 2, Record(1, 2)),
        (TRIMMED, 3, None),
    ],
)
def test_record_at(log, offset, expected):
    assert record_at(log, offset) == expected


@pytest.mark.parametrize(
    ("log", "offset", "expected"),
    [
        (EMPTY_LOG, 0, ()),
        (FIVE, 0, R),
        (FIVE, 3, R[3:]),
        (FIVE, 5, ()),
        (FIVE, 9, ()),
        (TRIMMED, 0, (Record(0, 1), Record(1, 2))),  # below the log start: from the log start
        (TRIMMED, 2, (Record(1, 2),)),
        (TRIMMED, 3, ()),
    ],
)
def test_records_from(log, offset, expected):
    assert records_from(log, offset) == expected


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (EMPTY_LOG, ()),
        (log_of(0, 0), ()),  # HW 0: nothing committed, nothing readable
        (FIVE, tuple(enumerate(R[:4]))),  # offsets 0..3, never the one at the HW
        (with_high_watermark(FIVE, 5), tuple(enumerate(R))),
        (TRIMMED, ((1, Record(0, 1)),)),  # offsets are absolute, starting at the log start
        (advance_log_start_offset(FIVE, 4), ()),  # HW == log start: nothing readable
    ],
)
def test_readable_records(log, expected):
    assert readable_records(log) == expected


# ---------------------------------------------------------------------------------------
# The leader-epoch cache
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch_cache", "expected"),
    [
        ((), UNDEFINED_EPOCH),
        (cache((0, 0)), 0),
        (cache((0, 0), (3, 5)), 3),
    ],
)
def test_latest_epoch(epoch_cache, expected):
    assert latest_epoch(epoch_cache) == expected


@pytest.mark.parametrize(
    ("epoch", "expected"),
    [(0, 0), (2, 4), (5, 9), (1, None), (3, None), (6, None), (UNDEFINED_EPOCH, None)],
)
def test_epoch_start_offset(epoch, expected):
    assert epoch_start_offset(cache((0, 0), (2, 4), (5, 9)), epoch) == expected


def test_epoch_start_offset_of_empty_cache():
    assert epoch_start_offset((), 0) is None


@pytest.mark.parametrize(
    ("before", "epoch", "start", "after"),
    [
        # plain appends of a newer epoch at a later offset
        ((), 0, 0, ((0, 0),)),
        ((), 3, 7, ((3, 7),)),
        (((0, 0),), 1, 5, ((0, 0), (1, 5))),
        (((0, 0),), 4, 5, ((0, 0), (4, 5))),
        # no-op: the epoch is already the latest and the offset is not smaller
        (((0, 0), (1, 5)), 1, 5, ((0, 0), (1, 5))),
        (((0, 0), (1, 5)), 1, 9, ((0, 0), (1, 5))),
        # monotonicity repair: same epoch, smaller offset replaces the entry
        (((0, 0), (1, 5)), 1, 3, ((0, 0), (1, 3))),
        # older epoch at a later offset: the newer epochs at the tail are removed
        (((0, 0), (2, 5)), 1, 7, ((0, 0), (1, 7))),
        (((0, 0), (1, 2), (2, 4)), 1, 3, ((0, 0), (1, 3))),
        # newer epoch at an earlier offset: entries starting at or after it are removed
        (((0, 0), (1, 5)), 2, 3, ((0, 0), (2, 3))),
        (((0, 0), (1, 5), (2, 8)), 3, 5, ((0, 0), (3, 5))),
        (((1, 5),), 3, 5, ((3, 5),)),
        # an entry that conflicts with everything empties the cache before being inserted
        (((0, 0), (1, 5)), 3, 0, ((3, 0),)),
        (((2, 0), (4, 5)), 1, 9, ((1, 9),)),
        # only the tail is repaired: earlier monotone entries are kept
        (((0, 0), (1, 2), (5, 9)), 3, 6, ((0, 0), (1, 2), (3, 6))),
    ],
)
def test_assign_epoch(before, epoch, start, after):
    result = assign_epoch(cache(*before), epoch, start)
    assert result == cache(*after)
    assert log_is_well_formed(ReplicaLog(epoch_cache=result))


C = cache((1, 0), (3, 4), (5, 9))


@pytest.mark.parametrize(
    ("epoch_cache", "requested", "log_end_offset", "expected"),
    [
        # the undefined epoch is never answered, whatever the cache holds
        (C, UNDEFINED_EPOCH, 12, UNDEFINED),
        ((), UNDEFINED_EPOCH, 0, UNDEFINED),
        # an empty cache knows nothing
        ((), 0, 0, UNDEFINED),
        ((), 4, 7, UNDEFINED),
        # the latest epoch ends at the log end offset
        (C, 5, 12, (5, 12)),
        (C, 5, 9, (5, 9)),
        (cache((1, 0), (2, 5)), 2, 5, (2, 5)),  # assigned at the LEO, no record yet
        # a known older epoch ends where the next one starts
        (C, 1, 12, (1, 4)),
        (C, 3, 12, (3, 9)),
        # an unknown epoch between two known ones: the floor epoch and the next start
        (C, 2, 12, (1, 4)),
        (C, 4, 12, (3, 9)),
        # requested below the first known epoch: (requested, first start offset)
        (C, 0, 12, (0, 0)),
        (cache((2, 7), (4, 9)), 1, 12, (1, 7)),
        (cache((2, 7), (4, 9)), 0, 12, (0, 7)),
        # requested above the latest epoch: nothing known
        (C, 6, 12, UNDEFINED),
        (C, 100, 12, UNDEFINED),
        (cache((0, 0)), 1, 3, UNDEFINED),
    ],
)
def test_end_offset_for_epoch(epoch_cache, requested, log_end_offset, expected):
    assert end_offset_for_epoch(epoch_cache, requested, log_end_offset) == expected


@pytest.mark.parametrize(
    ("end_offset", "expected"),
    [
        (100, C),
        (10, C),
        (9, cache((1, 0), (3, 4))),  # an entry starting exactly at the end goes
        (5, cache((1, 0), (3, 4))),
        (4, cache((1, 0))),
        (1, cache((1, 0))),
        (0, ()),
    ],
)
def test_truncate_cache_from_end(end_offset, expected):
    assert truncate_cache_from_end(C, end_offset) == expected


def test_truncate_cache_from_end_of_empty_cache():
    assert truncate_cache_from_end((), 3) == ()


@pytest.mark.parametrize(
    ("epoch_cache", "start_offset", "expected"),
    [
        (C, 0, C),
        (C, 2, cache((1, 2), (3, 4), (5, 9))),  # epoch 1 still covers the new start
        (C, 4, cache((3, 4), (5, 9))),
        (C, 6, cache((3, 6), (5, 9))),
        (C, 9, cache((5, 9))),
        (C, 15, cache((5, 15))),  # the latest epoch is never forgotten
        (cache((3, 4), (5, 9)), 2, cache((3, 4), (5, 9))),  # nothing below the new start
        ((), 5, ()),
    ],
)
def test_truncate_cache_from_start(epoch_cache, start_offset, expected):
    assert truncate_cache_from_start(epoch_cache, start_offset) == expected


# ---------------------------------------------------------------------------------------
# Log operations
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "new", "expected_cache"),
    [
        (EMPTY_LOG, records(0), cache((0, 0))),
        (EMPTY_LOG, records(0, 0, 2, 2, 5), cache((0, 0), (2, 2), (5, 4))),
        (EMPTY_LOG, records(3), cache((3, 0))),
        (log_of(0, 0), records(0, 0), cache((0, 0))),  # same epoch: no new entry
        (log_of(0, 0), records(1), cache((0, 0), (1, 2))),
        (log_of(0, 0), (), cache((0, 0))),
        (truncate_fully_and_start_at(EMPTY_LOG, 5), records(1, 2), cache((1, 5), (2, 6))),
        (TRIMMED, records(1, 4), cache((0, 1), (1, 2), (4, 4))),
        # a leader that assigned its epoch at its LEO then writes in it: no second entry
        (as_leader(log_of(0, 0), 3), records(3, 3), cache((0, 0), (3, 2))),
        (as_leader(log_of(0, 0), 3), records(3, 4), cache((0, 0), (3, 2), (4, 3))),
        # a record older than an epoch assigned at the LEO repairs the cache (`assign`)
        (as_leader(log_of(0, 0), 3), records(1), cache((0, 0), (1, 2))),
    ],
)
def test_append(log, new, expected_cache):
    result = append(log, new)
    assert result.records == log.records + new
    assert result.log_end_offset == log.log_end_offset + len(new)
    assert result.log_start_offset == log.log_start_offset
    assert result.high_watermark == log.high_watermark  # appending never commits
    assert result.epoch_cache == expected_cache
    assert log_is_well_formed(result)


@pytest.mark.parametrize(
    ("offset", "kept", "hw", "expected_cache"),
    [
        (5, 5, 4, ((0, 0), (1, 2), (2, 4))),  # at the LEO: no effect
        (4, 4, 4, ((0, 0), (1, 2))),  # HW == new end: unchanged
        (3, 3, 3, ((0, 0), (1, 2))),  # HW lowered to the new end
        (2, 2, 2, ((0, 0),)),  # an epoch starting at the new end is forgotten
        (1, 1, 1, ((0, 0),)),
        (0, 0, 0, ()),
    ],
)
def test_truncate_to(offset, kept, hw, expected_cache):
    result = truncate_to(FIVE, offset)
    assert result.records == R[:kept]
    assert result.log_end_offset == kept
    assert result.high_watermark == hw
    assert result.log_start_offset == 0
    assert result.epoch_cache == cache(*expected_cache)


def test_truncate_to_keeps_a_high_watermark_below_the_new_end():
    result = truncate_to(with_high_watermark(FIVE, 1), 3)
    assert result.high_watermark == 1
    assert result.records == R[:3]


def test_truncate_to_keeps_the_log_start():
    result = truncate_to(TRIMMED, 2)
    assert result.log_start_offset == 1
    assert result.records == (Record(0, 1),)
    assert result.high_watermark == 2
    assert result.epoch_cache == cache((0, 1))


def test_truncate_to_below_the_log_start_empties_the_log_at_its_start():
    # (Kafka would restart the log at the target offset; the spec clamps to the log start.)
    result = truncate_to(TRIMMED, 0)
    assert result.log_start_offset == 1
    assert result.log_end_offset == 1
    assert result.records == ()
    assert result.high_watermark == 1
    assert result.epoch_cache == ()
    assert log_is_well_formed(result)


def test_truncate_to_the_log_end_forgets_an_epoch_assigned_there():
    leader = as_leader(log_of(0, 0, hw=2), 1)
    assert leader.epoch_cache == cache((0, 0), (1, 2))
    result = truncate_to(leader, 2)
    assert result.records == leader.records
    assert result.high_watermark == 2
    assert result.epoch_cache == cache((0, 0))


def test_truncate_to_beyond_the_log_end_forgets_an_epoch_assigned_at_the_end():
    # Kafka's UnifiedLog.truncateTo trims the epoch cache at the log end even then.
    leader = as_leader(log_of(0, 0, hw=2), 1)
    result = truncate_to(leader, 3)
    assert result.records == leader.records
    assert result.epoch_cache == cache((0, 0))


def test_truncate_to_beyond_the_log_end_leaves_records_and_hw():
    result = truncate_to(FIVE, 8)
    assert result == FIVE


@pytest.mark.parametrize("offset", [0, 3, 5, 12])
@pytest.mark.parametrize("log", [EMPTY_LOG, FIVE, TRIMMED])
def test_truncate_fully_and_start_at(log, offset):
    result = truncate_fully_and_start_at(log, offset)
    assert result.log_start_offset == offset
    assert result.log_end_offset == offset
    assert result.high_watermark == offset
    assert result.records == ()
    assert result.epoch_cache == ()
    assert log_is_well_formed(result)


@pytest.mark.parametrize(
    ("log", "requested", "expected"),
    [
        (FIVE, 2, 2),  # may lower it (updateHighWatermark, not maybeIncrement...)
        (FIVE, 4, 4),
        (FIVE, 5, 5),
        (FIVE, 9, 5),  # clamped to the LEO
        (FIVE, -3, 0),
        (TRIMMED, 0, 1),  # clamped to the log start
        (TRIMMED, 3, 3),
        (TRIMMED, 4, 3),
        (EMPTY_LOG, 1, 0),
    ],
)
def test_with_high_watermark(log, requested, expected):
    result = with_high_watermark(log, requested)
    assert result.high_watermark == expected
    assert replace(result, high_watermark=log.high_watermark) == log  # nothing else changes


@pytest.mark.parametrize(
    ("hw", "new_start", "start", "expected_cache"),
    [
        (3, 1, 1, ((0, 1), (1, 2), (2, 4))),
        (3, 2, 2, ((1, 2), (2, 4))),
        (3, 3, 3, ((1, 3), (2, 4))),
        (3, 10, 3, ((1, 3), (2, 4))),  # capped at the HW
        (3, 0, 0, ((0, 0), (1, 2), (2, 4))),  # not forward: no-op
        (0, 4, 0, ((0, 0), (1, 2), (2, 4))),  # HW 0: nothing may be deleted
        (5, 5, 5, ((2, 5),)),  # every record deleted: the latest epoch is kept at the start
    ],
)
def test_advance_log_start_offset(hw, new_start, start, expected_cache):
    log = with_high_watermark(FIVE, hw)
    result = advance_log_start_offset(log, new_start)
    assert result.log_start_offset == start
    assert result.records == R[start:]
    assert result.log_end_offset == 5
    assert result.high_watermark == hw
    assert result.epoch_cache == cache(*expected_cache)
    assert log_is_well_formed(result)


def test_advance_log_start_offset_never_moves_back():
    moved = advance_log_start_offset(FIVE, 3)
    assert advance_log_start_offset(moved, 1) == moved
    assert advance_log_start_offset(moved, 3) == moved


@pytest.mark.parametrize(
    ("log", "surviving_end", "kept", "hw", "expected_cache"),
    [
        (FIVE, 5, 5, 4, ((0, 0), (1, 2), (2, 4))),
        (FIVE, 4, 4, 4, ((0, 0), (1, 2))),
        (FIVE, 3, 3, 3, ((0, 0), (1, 2))),  # checkpointed HW capped at the recovered end
        (FIVE, 0, 0, 0, ()),
        (as_leader(log_of(0, 0, hw=1), 1), 2, 2, 1, ((0, 0),)),  # unused epoch at the end
    ],
)
def test_recover_after_crash(log, surviving_end, kept, hw, expected_cache):
    result = recover_after_crash(log, surviving_end)
    assert result.records == log.records[:kept]
    assert result.high_watermark == hw
    assert result.epoch_cache == cache(*expected_cache)


# ---------------------------------------------------------------------------------------
# Well-formedness
# ---------------------------------------------------------------------------------------

GOOD = [
    EMPTY_LOG,
    FIVE,
    TRIMMED,
    ReplicaLog(log_start_offset=4, high_watermark=4),
    ReplicaLog(records=records(1, 1, 1), high_watermark=3, epoch_cache=cache((1, 0))),
    as_leader(FIVE, 7),
]

BAD = [
    ReplicaLog(log_start_offset=-1, high_watermark=-1),  # negative offsets
    ReplicaLog(log_start_offset=2, records=records(0), high_watermark=1),  # HW below log start
    ReplicaLog(records=records(0), high_watermark=2),  # HW above LEO
    ReplicaLog(records=records(1, 0), epoch_cache=cache((1, 0))),  # record epochs decrease
    ReplicaLog(records=records(0, 2, 1)),
    ReplicaLog(epoch_cache=cache((1, 0), (1, 2))),  # cache epochs not strictly increasing
    ReplicaLog(epoch_cache=cache((2, 0), (1, 2))),
    ReplicaLog(epoch_cache=cache((0, 2), (1, 2))),  # cache offsets not strictly increasing
    ReplicaLog(epoch_cache=cache((0, 3), (1, 2))),
]


@pytest.mark.parametrize("log", GOOD)
def test_log_is_well_formed_accepts(log):
    assert log_is_well_formed(log)


@pytest.mark.parametrize("log", BAD)
def test_log_is_well_formed_rejects(log):
    assert not log_is_well_formed(log)


# ---------------------------------------------------------------------------------------
# Properties: logs built only through the public operations
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One operation a replica applies to its log; `arg` is reduced modulo LEO + 3."""

    kind: str
    arg: int
    count: int = 0


OPS: st.SearchStrategy[Op] = st.one_of(
    st.builds(Op, st.just("append"), st.integers(0, 2), st.integers(1, 4)),
    st.builds(Op, st.just("truncate"), st.integers(0, 50)),
    st.builds(Op, st.just("hw"), st.integers(0, 50)),
    st.builds(Op, st.just("advance"), st.integers(0, 50)),
)
"""append (epoch bump 0..2, 1..4 records), truncate_to, with_high_watermark, advance_log_start_offset."""

EXTRA_OPS: st.SearchStrategy[Op] = st.one_of(
    OPS,
    st.builds(Op, st.just("lead"), st.integers(1, 2)),
    st.builds(Op, st.just("restart"), st.integers(0, 50)),
)
"""Also: become leader (assign the next epoch at the LEO) and truncate_fully_and_start_at."""


def apply_ops(ops: list[Op]) -> list[ReplicaLog]:
    """Apply `ops` to EMPTY_LOG; returns every intermediate log, EMPTY_LOG first.

    Epochs only grow over the whole history (a leader epoch is never reused), so appended
    record epochs never decrease even after truncation.
    """
    log = EMPTY_LOG
    epoch = 0
    value = 0
    history = [log]
    for op in ops:
        target = op.arg % (log.log_end_offset + 3)
        if op.kind == "append":
            epoch += op.arg
            log = append(log, tuple(Record(epoch, value + index) for index in range(op.count)))
            value += op.count
        elif op.kind == "truncate":
            log = truncate_to(log, target)
        elif op.kind == "hw":
            log = with_high_watermark(log, target)
        elif op.kind == "advance":
            log = advance_log_start_offset(log, target)
        elif op.kind == "lead":
            epoch += op.arg
            log = as_leader(log, epoch)
        elif op.kind == "restart":
            log = truncate_fully_and_start_at(log, target)
        else:  # pragma: no cover - the strategies only build the kinds above
            raise AssertionError(op.kind)
        history.append(log)
    return history


@st.composite
def built_logs(draw: st.DrawFn, ops: st.SearchStrategy[Op] = OPS) -> ReplicaLog:
    """A log reached from EMPTY_LOG by a random sequence of public operations."""
    return apply_ops(draw(st.lists(ops, max_size=12)))[-1]


def floor_epoch(log: ReplicaLog, offset: int) -> int | None:
    """The epoch the cache assigns to `offset`: the last entry starting at or before it."""
    found = None
    for entry in log.epoch_cache:
        if entry.start_offset <= offset:
            found = entry.epoch
    return found


def cache_describes_records(log: ReplicaLog) -> bool:
    """The cache agrees with the records: every held record's epoch is the epoch the cache
    gives its offset, and no entry lies outside [log start, LEO]."""
    if any(not log.log_start_offset <= e.start_offset <= log.log_end_offset for e in log.epoch_cache):
        return False
    return all(
        floor_epoch(log, log.log_start_offset + index) == record.epoch
        for index, record in enumerate(log.records)
    )


PROPERTY = settings(max_examples=200, deadline=None)


@PROPERTY
@given(st.lists(EXTRA_OPS, max_size=15))
def test_public_operations_keep_the_log_well_formed(ops):
    for log in apply_ops(ops):
        assert log_is_well_formed(log)
        assert cache_describes_records(log)


@PROPERTY
@given(built_logs(), st.integers(0, 20))
def test_truncate_to_keeps_exactly_the_records_below(log, offset):
    result = truncate_to(log, offset)
    kept = max(0, offset - log.log_start_offset)
    assert result.records == log.records[:kept]
    assert result.log_start_offset == log.log_start_offset
    assert result.log_end_offset == max(log.log_start_offset, min(offset, log.log_end_offset))
    assert result.high_watermark == min(log.high_watermark, result.log_end_offset)
    assert all(entry.start_offset < offset for entry in result.epoch_cache)
    assert set(result.epoch_cache) <= set(log.epoch_cache)
    assert log_is_well_formed(result)
    assert cache_describes_records(result)
    for o in range(offset):
        assert record_at(result, o) == record_at(log, o)
    assert record_at(result, offset) is None


@PROPERTY
@given(built_logs(EXTRA_OPS))
def test_latest_epoch_ends_at_the_log_end(log):
    if log.epoch_cache:
        latest = latest_epoch(log.epoch_cache)
        assert end_offset_for_epoch(log.epoch_cache, latest, log.log_end_offset) == (
            latest,
            log.log_end_offset,
        )
    else:
        assert end_offset_for_epoch(log.epoch_cache, 0, log.log_end_offset) == UNDEFINED


@PROPERTY
@given(built_logs(EXTRA_OPS), st.integers(-1, 20))
def test_end_offset_for_epoch_is_within_the_log(log, requested):
    epoch, end = end_offset_for_epoch(log.epoch_cache, requested, log.log_end_offset)
    if (epoch, end) == UNDEFINED:
        assert requested == UNDEFINED_EPOCH or requested > latest_epoch(log.epoch_cache)
        return
    assert requested >= epoch
    assert log.log_start_offset <= end <= log.log_end_offset
    if epoch_start_offset(log.epoch_cache, epoch) is None:
        # only the "older than every entry" answer names an epoch the cache does not hold
        assert epoch == requested < log.epoch_cache[0].epoch
        assert end == log.epoch_cache[0].start_offset
        return
    # the answered epoch is the newest known one not above the request ...
    assert epoch == max(e.epoch for e in log.epoch_cache if e.epoch <= requested)
    # ... and `end` is where its records stop: every record in [start, end) is in that
    # epoch and the record at `end`, if held, belongs to a newer one
    start = epoch_start_offset(log.epoch_cache, epoch)
    assert start is not None
    assert start <= end
    for o in range(start, end):
        held = record_at(log, o)
        assert held is not None
        assert held.epoch == epoch
    at_end = record_at(log, end)
    assert at_end is None or at_end.epoch > epoch


@PROPERTY
@given(built_logs(EXTRA_OPS), st.integers(0, 20))
def test_high_watermark_and_log_start_stay_ordered(log, target):
    raised = with_high_watermark(log, target)
    assert raised.log_start_offset <= raised.high_watermark <= raised.log_end_offset
    assert raised.high_watermark == min(max(target, log.log_start_offset), log.log_end_offset)
    advanced = advance_log_start_offset(log, target)
    assert advanced.log_start_offset == max(log.log_start_offset, min(target, log.high_watermark))
    assert advanced.high_watermark == log.high_watermark
    assert advanced.log_end_offset == log.log_end_offset
    for o in range(advanced.log_start_offset, log.log_end_offset):
        assert record_at(advanced, o) == record_at(log, o)
    assert log_is_well_formed(advanced)
    assert cache_describes_records(advanced)


@PROPERTY
@given(built_logs(EXTRA_OPS), st.integers(0, 20))
def test_reads_agree_with_record_at(log, offset):
    expected = tuple(
        held for o in range(offset, log.log_end_offset) if (held := record_at(log, o)) is not None
    )
    assert records_from(log, offset) == expected
    readable = readable_records(log)
    assert [o for o, _ in readable] == list(range(log.log_start_offset, log.high_watermark))
    assert all(record_at(log, o) == held for o, held in readable)
