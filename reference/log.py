"""The definitional replica log: one replica's log as a running broker keeps it.

What it is
    A small mutable holder around a `spec.log.ReplicaLog`. Every operation calls the pure
    spec function of the same name (`append`, `truncate_to`, `truncate_fully_and_start_at`,
    `with_high_watermark`, `advance_log_start_offset`, `assign_epoch`,
    `end_offset_for_epoch`, `recover_after_crash`) and replaces the held state with the
    result, so every state this object is ever in is a legal spec state. It is the oracle
    the conformance suite compares the optimized on-disk log (`impl.storage`) against.

What it adds to the spec
    Only the bookkeeping a running broker needs and the spec leaves out: what was flushed.
    `flush()` remembers the log end (the recovery point) and the high watermark, as the
    recovery-point and high-watermark checkpoints do; `crash()` keeps only the flushed
    records (`recover_after_crash` at the recovery point) and restores the checkpointed
    high watermark. The log start offset and the leader-epoch cache are checkpointed when
    they change (as Kafka does), so a crash keeps them, trimmed to the recovered log.

What it is not
    Fast: every append copies the record tuple. There are no segments, so retention is
    expressed by the caller as a new log start offset (`advance_log_start_offset`).
"""

from __future__ import annotations

from dataclasses import replace

from spec import log as spec_log
from spec.log import ReplicaLog
from spec.types import EpochEntry, Record


class ReferenceReplicaLog:
    """One replica's log: a `spec.log.ReplicaLog` plus what has been flushed."""

    def __init__(self) -> None:
        self.state: ReplicaLog = spec_log.EMPTY_LOG  # the current spec state
        self.flushed_end = 0  # the recovery point: every offset below it is on disk
        self.flushed_high_watermark = 0  # the checkpointed high watermark

    # -- observers --------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        """The first offset still held."""
        return self.state.log_start_offset

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self.state.log_end_offset

    @property
    def high_watermark(self) -> int:
        """Offsets below are committed."""
        return self.state.high_watermark

    @property
    def records(self) -> tuple[Record, ...]:
        """Every record held, from the log start offset."""
        return self.state.records

    @property
    def epoch_cache(self) -> tuple[EpochEntry, ...]:
        """The leader-epoch cache, oldest first."""
        return self.state.epoch_cache

    def read(self, offset: int, max_records: int | None = None) -> tuple[Record, ...]:
        """Records from `offset` (clamped up to the log start), at most `max_records`."""
        found = spec_log.records_from(self.state, offset)
        return found if max_records is None else found[:max_records]

    def record_at(self, offset: int) -> Record | None:
        """The record at `offset`, or None when the log does not hold it."""
        return spec_log.record_at(self.state, offset)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset)."""
        return spec_log.end_offset_for_epoch(self.state.epoch_cache, requested_epoch, self.log_end_offset)

    # -- operations -------------------------------------------------------------------

    def append(self, records: tuple[Record, ...]) -> int:
        """Append at the log end; returns the offset of the first record."""
        first = self.log_end_offset
        self.state = spec_log.append(self.state, records)
        return first

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or above `offset`; the recovery point follows the new end."""
        self.state = spec_log.truncate_to(self.state, offset)
        self.flushed_end = min(self.flushed_end, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Wipe the log and restart it empty at `offset` (checkpointed at once)."""
        self.state = spec_log.truncate_fully_and_start_at(self.state, offset)
        self.flushed_end = offset
        self.flushed_high_watermark = offset

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the high watermark (clamped to [log start, LEO]); returns it."""
        self.state = spec_log.with_high_watermark(self.state, high_watermark)
        return self.high_watermark

    def advance_log_start_offset(self, new_start: int) -> int:
        """DeleteRecords or retention: move the log start offset (capped at the HW); returns it."""
        self.state = spec_log.advance_log_start_offset(self.state, new_start)
        return self.log_start_offset

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """A new leader records that `epoch` starts at `start_offset` (KAFKA-7415)."""
        self.state = replace(
            self.state, epoch_cache=spec_log.assign_epoch(self.state.epoch_cache, epoch, start_offset)
        )

    def flush(self) -> None:
        """Make everything durable: the recovery point becomes the LEO, the HW is checkpointed."""
        self.flushed_end = self.log_end_offset
        self.flushed_high_watermark = self.high_watermark

    def crash(self) -> None:
        """Lose everything not flushed and recover: the spec's `recover_after_crash` at the
        recovery point, then the checkpointed high watermark (clamped to the recovered log)."""
        recovered = spec_log.recover_after_crash(self.state, self.flushed_end)
        self.state = spec_log.with_high_watermark(recovered, self.flushed_high_watermark)
        self.flushed_end = self.log_end_offset

    def has_unflushed_changes(self) -> bool:
        """Whether a crash now would lose records or the high watermark."""
        return self.flushed_end != self.log_end_offset or self.flushed_high_watermark != self.high_watermark

    def is_well_formed(self) -> bool:
        """Whether the held state satisfies the spec's `log_is_well_formed`."""
        return spec_log.log_is_well_formed(self.state)
