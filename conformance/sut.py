"""The system under test: the interface a replica log must offer to be checked for conformance.

What it is
    `LogUnderTest` is the typed Protocol the conformance machine drives (`conformance.machines.log`).
    Two adapters ship with the suite: `ImplLog` (the optimized segmented on-disk log of
    `impl.storage`, in a temporary directory, configured with tiny segments and a tiny index
    interval so that segments roll and indexes are sparse within a few records) and
    `ReferenceLog` (the definitional `reference.log.ReferenceReplicaLog`).

Plugging in your own
    A target is named by a string: ``impl``, ``reference`` or ``MODULE:FACTORY``, where
    ``FACTORY()`` (an attribute of the importable ``MODULE``) returns a fresh, empty
    `LogUnderTest`. `resolve_target` turns the string into a factory; the suite calls the
    factory once per generated test case and `close()`s what it returns.

Crash semantics
    `crash()` loses everything not flushed and reopens: the records at or above the last
    flush point (the recovery point, lowered by truncation) and the high watermark set since
    the last `flush()`. The log start offset and the leader-epoch cache are durable at once
    (Kafka checkpoints them when they change); the epoch cache is then trimmed to the
    recovered log end.
"""

from __future__ import annotations

import importlib
import shutil
import struct
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from impl import storage
from reference.log import ReferenceReplicaLog
from spec.types import EpochEntry, Record

IMPL_CONFIG = storage.LogConfig(
    segment_bytes=160, index_interval_bytes=48, retention_bytes=100, retention_ms=1000
)
"""Small enough that a handful of records rolls a segment and only some batches are indexed."""


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """Everything observable about a log at rest, as plain data."""

    log_start_offset: int
    records: tuple[Record, ...]  # records[i] is at offset log_start_offset + i
    high_watermark: int
    epoch_cache: tuple[EpochEntry, ...]

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self.log_start_offset + len(self.records)


@runtime_checkable
class LogUnderTest(Protocol):
    """One replica's log, as the conformance suite drives it."""

    def append(self, records: tuple[Record, ...]) -> int:
        """Append at the log end; return the offset given to the first record."""
        ...

    def read(self, offset: int, max_records: int | None) -> tuple[Record, ...]:
        """Records from `offset` (clamped up to the log start) to the end, at most `max_records`."""
        ...

    def record_at(self, offset: int) -> Record | None:
        """The record at `offset`, or None when the log does not hold it."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or above `offset` (`UnifiedLog.truncateTo`)."""
        ...

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Wipe the log and restart it empty at `offset`."""
        ...

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW clamped to [log start, LEO]; return it."""
        ...

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset`, capped at the HW; return it."""
        ...

    def apply_retention(self) -> int:
        """Run retention (whatever policy the target has); return the new log start offset."""
        ...

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """A new leader records its epoch at `start_offset` (its LEO, KAFKA-7415)."""
        ...

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (largest known epoch <= requested, where it ends)."""
        ...

    def flush(self) -> None:
        """Make everything written so far durable."""
        ...

    def crash(self) -> None:
        """Lose everything not flushed, then reopen and recover."""
        ...

    def snapshot(self) -> LogSnapshot:
        """The whole observable state."""
        ...

    def close(self) -> None:
        """Release every resource (files, directories)."""
        ...


class ReferenceLog:
    """`LogUnderTest` over the definitional `reference.log.ReferenceReplicaLog` (no retention policy)."""

    def __init__(self) -> None:
        self.log = ReferenceReplicaLog()

    def append(self, records: tuple[Record, ...]) -> int:
        """See `LogUnderTest.append`."""
        return self.log.append(records)

    def read(self, offset: int, max_records: int | None) -> tuple[Record, ...]:
        """See `LogUnderTest.read`."""
        return self.log.read(offset, max_records)

    def record_at(self, offset: int) -> Record | None:
        """See `LogUnderTest.record_at`."""
        return self.log.record_at(offset)

    def truncate_to(self, offset: int) -> None:
        """See `LogUnderTest.truncate_to`."""
        self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """See `LogUnderTest.truncate_fully_and_start_at`."""
        self.log.truncate_fully_and_start_at(offset)

    def update_high_watermark(self, high_watermark: int) -> int:
        """See `LogUnderTest.update_high_watermark`."""
        return self.log.update_high_watermark(high_watermark)

    def delete_records_before(self, offset: int) -> int:
        """See `LogUnderTest.delete_records_before`."""
        return self.log.advance_log_start_offset(offset)

    def apply_retention(self) -> int:
        """The reference keeps everything: retention never moves the log start offset."""
        return self.log.log_start_offset

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """See `LogUnderTest.assign_epoch`."""
        self.log.assign_epoch(epoch, start_offset)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """See `LogUnderTest.end_offset_for_epoch`."""
        return self.log.end_offset_for_epoch(requested_epoch)

    def flush(self) -> None:
        """See `LogUnderTest.flush`."""
        self.log.flush()

    def crash(self) -> None:
        """See `LogUnderTest.crash`."""
        self.log.crash()

    def snapshot(self) -> LogSnapshot:
        """See `LogUnderTest.snapshot`."""
        return LogSnapshot(
            self.log.log_start_offset, self.log.records, self.log.high_watermark, self.log.epoch_cache
        )

    def close(self) -> None:
        """Nothing to release."""


class ImplLog:
    """`LogUnderTest` over `impl.storage` in a fresh temporary directory.

    `crash()` closes without flushing and then plays the part of the operating system
    losing its page cache. The adapter tracks on its own which offsets are durable (below
    the log end at the last `flush()`, lowered by truncation, which fsyncs the cut file) and
    cuts the data files there, removing segments that start above it. What the cut leaves
    behind rotates with each crash: nothing, half of the first lost record batch (a torn
    write), or the whole first lost batch with a flipped byte (a write that reached the disk
    damaged); recovery must discard both, and after it no data file may hold bytes past its
    last valid batch.
    """

    def __init__(self, config: storage.LogConfig = IMPL_CONFIG) -> None:
        self._root = Path(tempfile.mkdtemp(prefix="kafkaspec-conformance-"))
        self.directory = self._root / "topic-0"
        self.config = config
        self.log = storage.open(self.directory, config)
        self._durable_end = 0  # offsets below are on disk whatever happens
        self._crashes = 0
        self._retention_runs = 0

    def append(self, records: tuple[Record, ...]) -> int:
        """See `LogUnderTest.append`."""
        return self.log.append(records, timestamp_ms=0)

    def read(self, offset: int, max_records: int | None) -> tuple[Record, ...]:
        """See `LogUnderTest.read`."""
        return tuple(self.log.read(offset, max_records))

    def record_at(self, offset: int) -> Record | None:
        """See `LogUnderTest.record_at`."""
        return self.log.record_at(offset)

    def truncate_to(self, offset: int) -> None:
        """See `LogUnderTest.truncate_to`."""
        self.log.truncate_to(offset)
        self._durable_end = min(self._durable_end, self.log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """See `LogUnderTest.truncate_fully_and_start_at`."""
        self.log.truncate_fully_and_start_at(offset)
        self._durable_end = offset

    def update_high_watermark(self, high_watermark: int) -> int:
        """See `LogUnderTest.update_high_watermark`."""
        return self.log.update_high_watermark(high_watermark)

    def delete_records_before(self, offset: int) -> int:
        """See `LogUnderTest.delete_records_before`."""
        return self.log.delete_records_before(offset)

    def apply_retention(self) -> int:
        """Retention by time and size on odd calls, by size alone on even ones (records carry
        timestamp 0, so a clock past `retention_ms` expires every segment the HW allows); see
        `LogUnderTest.apply_retention`."""
        self._retention_runs += 1
        now_ms = 10 * self.config.retention_ms if self._retention_runs % 2 else 0
        self.log.delete_old_segments(now_ms=now_ms)
        return self.log.log_start_offset

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """See `LogUnderTest.assign_epoch`."""
        self.log.assign_epoch(epoch, start_offset)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """See `LogUnderTest.end_offset_for_epoch`."""
        return self.log.end_offset_for_epoch(requested_epoch)

    def flush(self) -> None:
        """See `LogUnderTest.flush`."""
        self.log.flush()
        self._durable_end = self.log.log_end_offset

    def crash(self) -> None:
        """See the class docstring."""
        durable = self._durable_end
        cuts: list[tuple[Path, int | None]] = []  # (data file, bytes to keep, or None = remove)
        for number, segment in enumerate(self.log._segments):
            if segment.next_offset <= durable:
                continue
            if segment.base_offset >= durable:
                cuts.append((segment.log_path, 0 if number == 0 else None))
            else:
                cuts.append((segment.log_path, segment.position_of(durable)))
        self.log.close(flush=False)
        mode = (2 - self._crashes) % 3  # damaged batch, then torn batch, then a clean cut
        self._crashes += 1
        for path, keep in cuts:
            if keep is None:
                path.unlink()
                path.with_suffix(".index").unlink(missing_ok=True)
            else:
                _lose_tail(path, keep, mode)
        self.log = storage.open(self.directory, self.config)
        self._durable_end = self.log.log_end_offset
        for segment in self.log._segments:
            on_disk = segment.log_path.stat().st_size
            if on_disk != segment.size:
                raise AssertionError(
                    f"recovery left {segment.log_path.name} with {on_disk} bytes on disk but "
                    f"{segment.size} bytes of valid batches (a corrupt tail must be cut)"
                )

    def snapshot(self) -> LogSnapshot:
        """See `LogUnderTest.snapshot`."""
        log = self.log
        records = tuple(log.read(log.log_start_offset))
        return LogSnapshot(log.log_start_offset, records, log.high_watermark, log.epoch_cache)

    def close(self) -> None:
        """Close the log and remove its directory."""
        self.log.close(flush=False)
        shutil.rmtree(self._root, ignore_errors=True)


def _lose_tail(path: Path, keep: int, mode: int) -> None:
    """Cut `path` at byte `keep` (a batch boundary), leaving nothing (mode 0), half of the
    next record batch (mode 1) or the whole next batch with its last byte flipped (mode 2)."""
    data = path.read_bytes()
    tail = b""
    if len(data) >= keep + storage.LOG_OVERHEAD:
        (batch_length,) = struct.unpack_from(">i", data, keep + 8)  # after baseOffset
        batch = data[keep : keep + storage.LOG_OVERHEAD + batch_length]
        if mode == 1:
            tail = batch[: len(batch) // 2]
        elif mode == 2:
            tail = batch[:-1] + bytes([batch[-1] ^ 0x01])
    with path.open("r+b") as file:
        file.truncate(keep)
        file.seek(keep)
        file.write(tail)


LogFactory = Callable[[], LogUnderTest]
"""Makes a fresh, empty log under test."""

BUILTIN_TARGETS: dict[str, LogFactory] = {"impl": ImplLog, "reference": ReferenceLog}


def resolve_target(target: str) -> LogFactory:
    """The factory named by `target`: ``impl``, ``reference`` or ``MODULE:FACTORY``.

    Raises ValueError, saying what is accepted, for anything else (an unknown name, a module
    that does not import, a missing or non-callable factory).
    """
    if target in BUILTIN_TARGETS:
        return BUILTIN_TARGETS[target]
    checked: LogFactory = load_factory(target, sorted(BUILTIN_TARGETS), "it must return a LogUnderTest")
    return checked


def load_factory(target: str, builtin_names: Sequence[str], contract: str) -> Any:
    """The callable a ``MODULE:FACTORY`` target names, or a ValueError saying what is wrong:
    not of that form (then `builtin_names` are the alternatives), a module that does not
    import, a missing or non-callable attribute (`contract` says what it must do)."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(
            f"unknown conformance target {target!r}: expected one of "
            f"{', '.join(builtin_names)} or MODULE:FACTORY"
        )
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as error:  # what its code raises, a syntax error, a relative name
        summary = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError(
            f"conformance target {target!r}: cannot import {module_name!r}: {type(error).__name__}: {summary}"
        ) from None
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise ValueError(
            f"conformance target {target!r}: module {module_name!r} has no callable "
            f"{attribute!r} ({contract})"
        )
    return factory  # what it returns is checked when it is called (`make_log`, `make_partition`)


def resolve_factory(target: str, reference: Any, impl: tuple[str, str, str], contract: str) -> Any:
    """The factory a suite's ``--target`` names: ``reference`` (`reference`), ``impl`` (the
    callable `impl[1]` of module `impl[0]`, imported only now, so a suite runs against the
    reference even when the optimized implementation does not import; `impl[2]` says what it
    is) or ``MODULE:FACTORY`` (`load_factory`, `contract` saying what it must do); a
    ValueError saying what is accepted for anything else."""
    if target == "reference":
        return reference
    if target != "impl":
        return load_factory(target, ("impl", "reference"), contract)
    module_name, attribute, what = impl
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(
            f"conformance target 'impl': {what} ({module_name}) does not import: {error}"
        ) from None
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise ValueError(f"conformance target 'impl': {module_name} has no callable {attribute!r}")
    return factory


def make_log(target: str) -> LogUnderTest:
    """A fresh log for `target`, checked to implement `LogUnderTest`."""
    made = resolve_target(target)()
    if not isinstance(made, LogUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, not a LogUnderTest"
        )
    return made
