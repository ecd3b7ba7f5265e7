"""The replica log: records, log end offset, high watermark, log start offset, epoch cache.

What it is
    Every replica of a partition keeps an append-only log (Kafka's `UnifiedLog`). A log is
    the records from `log_start_offset` up to the log end offset (LEO, the offset the next
    record will get), a high watermark (HW: offsets below it are committed and readable by
    consumers) and the leader-epoch cache (`leader-epoch-checkpoint`, KIP-101): for each
    leader epoch, the first offset written in it.

Where it comes from
    Kafka's `UnifiedLog` (`truncateTo`, `maybeIncrementLogStartOffset`,
    `updateHighWatermark`) and `LeaderEpochFileCache` (`assign`, `endOffsetFor`,
    `truncateFromEnd`, `truncateFromStart`); the Kafka documentation's "Replication" section
    (log end offset, high watermark) and KIP-101 (leader epoch).

What is abstracted
    Segments, indexes, batches and bytes (the optimized implementation in `impl/` has them):
    here a log is a tuple of records. Every function is pure: it returns a new `ReplicaLog`.

Invariants every function keeps (see `log_is_well_formed`)
    log_start_offset <= high_watermark <= log_end_offset; the epoch cache is strictly
    increasing in epoch and in start offset; record epochs never decrease along the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry, Record

EpochCache = tuple[EpochEntry, ...]
"""The leader-epoch cache, oldest epoch first."""


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ReplicaLog:
    """One replica's log as it is on disk plus its high watermark."""

    log_start_offset: int = 0  # first offset still held: retention moves it forward
    records: tuple[Record, ...] = ()  # records[i] is at offset log_start_offset + i
    high_watermark: int = 0  # offsets below are committed (as far as this replica knows)
    epoch_cache: EpochCache = ()  # leader epoch -> first offset written in it (KIP-101)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self.log_start_offset + len(self.records)


EMPTY_LOG = ReplicaLog()


def record_at(log: ReplicaLog, offset: int) -> Record | None:
    """The record at `offset`, or None when the log does not hold that offset."""
    if log.log_start_offset <= offset < log.log_end_offset:
        return log.records[offset - log.log_start_offset]
    return None


def records_from(log: ReplicaLog, offset: int) -> tuple[Record, ...]:
    """The records from `offset` (inclusive) to the log end (what a fetch at `offset` returns)."""
    start = max(offset, log.log_start_offset) - log.log_start_offset
    return log.records[start:]


def readable_records(log: ReplicaLog) -> tuple[tuple[int, Record], ...]:
    """What a consumer may read from this replica: (offset, record) below the high watermark.

    Consumers never see offsets at or above the HW (Kafka's documentation, Design, "Replication":
    "Only committed messages are ever given out to the consumer").
    """
    visible = log.records[: max(0, log.high_watermark - log.log_start_offset)]
    return tuple((log.log_start_offset + index, record) for index, record in enumerate(visible))


# ---------------------------------------------------------------------------------------
# The leader-epoch cache (LeaderEpochFileCache)
# ---------------------------------------------------------------------------------------


def epoch_cache_is_monotonic(cache: EpochCache) -> bool:
    """Entries strictly increase in both epoch and start offset, as LeaderEpochFileCache keeps them."""
    return all(
        later.epoch > earlier.epoch and later.start_offset > earlier.start_offset
        for earlier, later in pairwise(cache)
    )


def latest_epoch(cache: EpochCache) -> int:
    """The newest epoch in the cache, or UNDEFINED_EPOCH when it is empty."""
    return cache[-1].epoch if cache else UNDEFINED_EPOCH


def epoch_start_offset(cache: EpochCache, epoch: int) -> int | None:
    """The first offset of `epoch`, if the cache has an entry for it."""
    for entry in cache:
        if entry.epoch == epoch:
            return entry.start_offset
    return None


def assign_epoch(cache: EpochCache, epoch: int, start_offset: int) -> EpochCache:
    """Record that `epoch` starts at `start_offset` (`LeaderEpochFileCache.assign`).

    Called for every appended record whose epoch is new, and by a new leader with its LEO
    (KAFKA-7415). A no-op when the epoch is already the latest and the offset not smaller.
    Before inserting, entries that would break monotonicity are removed from the tail
    (any entry with epoch >= `epoch` or start offset >= `start_offset`).

    pre: epoch_cache_is_monotonic(cache)
    post: epoch_cache_is_monotonic(__return__)
    post: __return__[-1].epoch == epoch
    """
    if cache and cache[-1].epoch == epoch and start_offset >= cache[-1].start_offset:
        return cache
    kept = list(cache)
    while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
        kept.pop()
    kept.append(EpochEntry(epoch, start_offset))
    return tuple(kept)


def end_offset_for_epoch(cache: EpochCache, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """Answer an OffsetsForLeaderEpoch request (`LeaderEpochFileCache.endOffsetFor`).

    Returns (epoch, end offset): the largest epoch <= `requested_epoch` this log knows and
    the offset where that epoch ends (the start of the next epoch, or the LEO for the latest
    epoch). (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) when nothing is known. When the
    requested epoch is older than every entry, answers (requested_epoch, first start offset):
    everything before the first known epoch may belong to it.

    The end offset is never past the log end and the epoch never newer than requested:

    pre: log_end_offset >= 0 and requested_epoch >= UNDEFINED_EPOCH
    pre: all(entry.epoch >= 0 for entry in cache)
    pre: all(0 <= entry.start_offset <= log_end_offset for entry in cache)
    pre: epoch_cache_is_monotonic(cache)
    post: __return__[1] <= log_end_offset
    post: __return__[0] <= requested_epoch
    """
    if requested_epoch == UNDEFINED_EPOCH or not cache:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if requested_epoch == cache[-1].epoch:
        return requested_epoch, log_end_offset
    floor: EpochEntry | None = None
    higher: EpochEntry | None = None
    for entry in cache:
        if entry.epoch <= requested_epoch:
            floor = entry
        elif higher is None:
            higher = entry
    if higher is None:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if floor is None:
        return requested_epoch, higher.start_offset
    return floor.epoch, higher.start_offset


def truncate_cache_from_end(cache: EpochCache, end_offset: int) -> EpochCache:
    """Drop every entry starting at or after `end_offset` (`truncateFromEnd`)."""
    return tuple(entry for entry in cache if entry.start_offset < end_offset)


def truncate_cache_from_start(cache: EpochCache, start_offset: int) -> EpochCache:
    """Forget entries wholly below `start_offset`, keeping the epoch that covers it
    (`truncateFromStart`): the last removed entry is re-inserted at `start_offset`."""
    removed = [entry for entry in cache if entry.start_offset <= start_offset]
    kept = tuple(entry for entry in cache if entry.start_offset > start_offset)
    if not removed:
        return kept
    return (EpochEntry(removed[-1].epoch, start_offset), *kept)


# ---------------------------------------------------------------------------------------
# Log operations
# ---------------------------------------------------------------------------------------


@memoized
def append(log: ReplicaLog, records: tuple[Record, ...]) -> ReplicaLog:
    """Append records at the log end, recording each new epoch in the epoch cache."""
    if not records:
        return log
    cache = log.epoch_cache
    offset = log.log_end_offset
    for record in records:
        if record.epoch != latest_epoch(cache):
            cache = assign_epoch(cache, record.epoch, offset)
        offset += 1
    return replace(log, records=log.records + records, epoch_cache=cache)


@memoized
def begin_leader_epoch(log: ReplicaLog, epoch: int) -> ReplicaLog:
    """A replica becoming leader records that `epoch` starts at its LEO (KAFKA-7415), so
    followers asking about older epochs learn where they end even before it appends."""
    cache = assign_epoch(log.epoch_cache, epoch, log.log_end_offset)
    return log if cache is log.epoch_cache else replace(log, epoch_cache=cache)


@memoized
def truncate_to(log: ReplicaLog, offset: int) -> ReplicaLog:
    """Remove every record at or above `offset` (`UnifiedLog.truncateTo`).

    The epoch cache forgets epochs starting at or after the new end, and the high
    watermark is lowered to the new end if it was above it. Truncating at or beyond the log
    end leaves the records alone but still trims the epoch cache (an epoch a new leader
    assigned at its LEO that never got a record is forgotten).
    """
    end = max(min(offset, log.log_end_offset), log.log_start_offset)
    if (
        end == log.log_end_offset
        and log.high_watermark <= end
        and all(entry.start_offset < end for entry in log.epoch_cache)
    ):
        return log  # nothing to remove: the same object, so states keep sharing it
    return ReplicaLog(
        log_start_offset=log.log_start_offset,
        records=log.records[: end - log.log_start_offset],
        high_watermark=min(log.high_watermark, end),
        epoch_cache=truncate_cache_from_end(log.epoch_cache, end),
    )


def truncate_fully_and_start_at(log: ReplicaLog, offset: int) -> ReplicaLog:
    """Wipe the log and restart it at `offset` (`truncateFullyAndStartAt`): what a follower
    does when the leader no longer holds the offset it wants to fetch."""
    return ReplicaLog(log_start_offset=offset, records=(), high_watermark=offset, epoch_cache=())


@memoized
def with_high_watermark(log: ReplicaLog, high_watermark: int) -> ReplicaLog:
    """Set the high watermark, clamped to [log start, LEO] as `updateHighWatermark` does."""
    clamped = min(max(high_watermark, log.log_start_offset), log.log_end_offset)
    return log if clamped == log.high_watermark else replace(log, high_watermark=clamped)


@memoized
def advance_log_start_offset(log: ReplicaLog, new_start: int) -> ReplicaLog:
    """Delete records below `new_start` (retention, segment deletion, DeleteRecords).

    Kafka never deletes at or above the high watermark, so the new start is capped there;
    a start that does not move forward is a no-op.
    """
    target = min(new_start, log.high_watermark)
    if target <= log.log_start_offset:
        return log
    return ReplicaLog(
        log_start_offset=target,
        records=log.records[target - log.log_start_offset :],
        high_watermark=log.high_watermark,
        epoch_cache=truncate_cache_from_start(log.epoch_cache, target),
    )


def recover_after_crash(log: ReplicaLog, surviving_end: int) -> ReplicaLog:
    """What a replica finds on disk after a crash that kept only offsets below `surviving_end`.

    Records past the last flush may be gone; the epoch cache is trimmed to the recovered
    log end (`truncateFromEnd` during log loading) and the checkpointed high watermark is
    capped at the log end.
    """
    return truncate_to(log, surviving_end)


# ---------------------------------------------------------------------------------------
# Well-formedness
# ---------------------------------------------------------------------------------------


@memoized  # the model checker asks it about the same logs over and over
def log_is_well_formed(log: ReplicaLog) -> bool:
    """The structural invariant of a single log (checked on every replica in every state)."""
    if not 0 <= log.log_start_offset <= log.high_watermark <= log.log_end_offset:
        return False
    epochs = [record.epoch for record in log.records]
    if any(later < earlier for earlier, later in pairwise(epochs)):
        return False
    return epoch_cache_is_monotonic(log.epoch_cache)
