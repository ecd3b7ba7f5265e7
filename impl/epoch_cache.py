"""The leader-epoch cache of one partition (Kafka's `LeaderEpochFileCache`, KIP-101/279).

An ordered list of `EpochEntry(epoch, start_offset)`: the first offset written in each
leader epoch, strictly increasing in both fields. It answers OffsetsForLeaderEpoch
(`end_offset_for`) and is trimmed when the log is truncated at either end. The rules are
the spec's (`spec.log`), reimplemented here on a mutable list because `impl/` may not call
spec logic; the conformance and unit tests compare the two.
"""

from __future__ import annotations

from collections.abc import Iterable

from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, EpochEntry


class LeaderEpochCache:
    """Epoch -> start offset, oldest first."""

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._entries: list[EpochEntry] = list(entries)

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """A snapshot of the entries, oldest first."""
        return tuple(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or UNDEFINED_EPOCH when empty."""
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that `epoch` starts at `start_offset`; True when the cache changed.

        Entries that would break monotonicity (epoch >= `epoch` or start >= `start_offset`)
        are removed from the tail first, as `LeaderEpochFileCache.assign` does.
        """
        entries = self._entries
        if entries and entries[-1].epoch == epoch and start_offset >= entries[-1].start_offset:
            return False
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after `end_offset`; True when the cache changed."""
        kept = [entry for entry in self._entries if entry.start_offset < end_offset]
        changed = len(kept) != len(self._entries)
        self._entries = kept
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget entries wholly below `start_offset`, keeping the epoch that covers it."""
        removed = [entry for entry in self._entries if entry.start_offset <= start_offset]
        kept = [entry for entry in self._entries if entry.start_offset > start_offset]
        if removed:
            kept.insert(0, EpochEntry(removed[-1].epoch, start_offset))
        changed = kept != self._entries
        self._entries = kept
        return changed

    def clear(self) -> None:
        """Forget every entry (`truncateFullyAndStartAt`)."""
        self._entries = []

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (largest known epoch <= requested, where it ends)."""
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == entries[-1].epoch:
            return requested_epoch, log_end_offset
        floor: EpochEntry | None = None
        higher: EpochEntry | None = None
        for entry in entries:
            if entry.epoch <= requested_epoch:
                floor = entry
            elif higher is None:
                higher = entry
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if floor is None:
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset
