"""A segmented on-disk replica log with a sparse offset index, as Kafka stores a partition.

What it is
    A partition directory holds segments. Each segment is a `.log` data file and an
    `.index` file named after the segment's base offset as 20 zero-padded digits
    (`00000000000000000000.log`). Kafka's classes: `UnifiedLog`/`LocalLog` (the segmented
    log), `LogSegment` (one segment), `OffsetIndex` (the sparse index) and `LogLoader`
    (recovery on open); seeds 000 and 001 describe the layout.

Frame format (one record per frame; Kafka frames record *batches*, the idea is the same)
    ``length:u32 | crc:u32 | offset:i64 | leader_epoch:i32 | timestamp_ms:i64 | value bytes``
    big-endian; `length` counts the body (everything after the crc) and `crc` is
    `zlib.crc32` of the body. Spec values are ints; they are stored as minimal signed
    big-endian bytes, so the frame itself carries arbitrary payloads (`append_payloads`).

Sparse index (`OffsetIndex`)
    8-byte entries: `offset - base_offset` (u32) and the frame's byte position (u32). An
    entry is written before a frame when at least `index_interval_bytes` of log data were
    written since the previous entry (or since the segment start). The rule depends only on
    frame positions, so an index rebuilt from the data file is byte-identical to the one
    written by appends; that is how recovery detects a stale or garbage index. Lookup:
    bisect the base offsets for the segment, bisect the in-memory index array for the
    nearest entry at or below the offset, then scan frame headers forward.

Durability and recovery (`LogLoader`)
    `flush()` fsyncs data and index files and writes `recovery-point-offset-checkpoint`
    (every offset below it is on disk) together with the high watermark, log start offset
    and leader-epoch checkpoints. On open every segment is scanned and every frame's length,
    CRC and offset checked. A bad frame at or above the recovery point is a torn or corrupt
    tail of an unflushed write: the segment is cut there and later segments are deleted. A
    bad frame below the recovery point means flushed data was damaged: `CorruptLogError`
    (file and byte position in the message). Reads check the CRC again, so a record that
    rots after open is refused rather than served. Kafka only rescans segments above the
    recovery point; scanning everything costs a read of the log on open and buys the
    guarantee that a corrupt record is never served.

    Other files a crash can leave half-done: the leader-epoch checkpoint is written *before*
    the records of a new epoch (as `UnifiedLog.append` assigns the epoch first), so after a
    crash it is trimmed to the recovered log end; `close()` leaves a `.kafka_cleanshutdown`
    marker (removed by `open`) so a clean restart keeps the cache exactly as it was;
    `truncate_fully_and_start_at` leaves a marker that `open` uses to finish it; checkpoint
    files are replaced atomically (`impl.checkpoints`); `.tmp` leftovers and `.index` files
    without a `.log` are removed.

Retention
    Whole segments are deleted, oldest first, never the active one and never one holding
    offsets at or above the high watermark; the log start offset moves to the new first
    segment. Time retention uses each segment's largest record timestamp (the timestamp
    given to `append`, default the wall clock), as Kafka's `LogSegment.largestTimestamp`
    does; there is no separate time index. `delete_records_before` (DeleteRecords) moves the
    log start offset up to the high watermark and deletes the segments wholly below it.

Checkpoint files live in the partition directory (Kafka keeps the offset checkpoints in
the parent log directory, one per broker disk); the key is the directory's
`topic-partition` name.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import time
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from impl.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    TopicPartition,
    fsync_directory,
    write_atomically,
)
from impl.epoch_cache import LeaderEpochCache
from spec.types import EpochEntry, Record

FRAME_HEADER = struct.Struct(">II")  # body length, crc32 of the body
BODY_HEADER = struct.Struct(">qiq")  # offset, leader epoch, timestamp (ms)
INDEX_ENTRY = struct.Struct(">II")  # relative offset, file position
MAX_BODY_BYTES = 64 * 1024 * 1024  # a longer "length" can only be garbage
MAX_RELATIVE_OFFSET = 2**32 - 1  # the index stores offset - base in 32 bits
MAX_SEGMENT_POSITION = 2**32 - 1  # ... and positions in 32 bits
READ_CHUNK_BYTES = 64 * 1024
TRUNCATE_FULLY_MARKER = "truncate-fully-pending"  # an interrupted truncate_fully_and_start_at
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"  # written by close(): the last run did not crash
SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index)$")


class CorruptLogError(Exception):
    """The log on disk is damaged in a way recovery may not repair (flushed data is bad)."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The per-topic settings that shape the files (Kafka's names in the comments)."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_bytes: int = -1  # retention.bytes; -1 = unlimited
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms; -1 = unlimited

    def __post_init__(self) -> None:
        if self.segment_bytes < FRAME_HEADER.size + BODY_HEADER.size:
            raise ValueError(f"segment_bytes {self.segment_bytes} cannot hold a single record")
        if self.segment_bytes > MAX_SEGMENT_POSITION:
            raise ValueError("segment_bytes must fit the index's 32-bit positions")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must not be negative")


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A frame as stored: what `read_payloads` returns."""

    offset: int
    epoch: int
    timestamp_ms: int
    value: bytes


def encode_value(value: int) -> bytes:
    """A spec value (any int) as minimal signed big-endian bytes."""
    return value.to_bytes((value.bit_length() + 8) // 8, "big", signed=True)


def decode_value(payload: bytes) -> int:
    """The inverse of `encode_value`."""
    return int.from_bytes(payload, "big", signed=True)


def encode_frame(offset: int, epoch: int, timestamp_ms: int, value: bytes) -> bytes:
    """One length-prefixed, CRC-protected frame."""
    body = BODY_HEADER.pack(offset, epoch, timestamp_ms) + value
    return FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body


def segment_file_name(base_offset: int, suffix: str) -> str:
    """`00000000000000000042.log` for base offset 42 and suffix `log`."""
    return f"{base_offset:020d}.{suffix}"


def topic_partition_for(directory: Path) -> TopicPartition:
    """The checkpoint key of a partition directory named `topic-partition` (else partition 0)."""
    match = re.fullmatch(r"(\S+)-(\d+)", directory.name)
    if match:
        return TopicPartition(match.group(1), int(match.group(2)))
    return TopicPartition(directory.name or "log", 0)


# ---------------------------------------------------------------------------------------
# Scanning a segment's bytes (shared by recovery and by truncation)
# ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class SegmentScan:
    """What a scan of a segment's data found: the valid prefix and the index it implies."""

    next_offset: int  # one past the last valid frame
    valid_bytes: int  # length of the valid prefix
    max_timestamp: int = -1
    index: list[tuple[int, int]] = field(default_factory=list)  # (relative offset, position)
    problem: str | None = None  # why the scan stopped before the end of the data


def frame_problem(data: bytes | mmap.mmap, position: int, expected_offset: int) -> tuple[str | None, int]:
    """Check the frame at `position`; return (problem or None, frame length including header)."""
    remaining = len(data) - position
    if remaining < FRAME_HEADER.size:
        return f"torn frame header ({remaining} of {FRAME_HEADER.size} bytes)", 0
    length, crc = FRAME_HEADER.unpack_from(data, position)
    if length < BODY_HEADER.size or length > MAX_BODY_BYTES:
        return f"bad frame length {length}", 0
    if remaining - FRAME_HEADER.size < length:
        return f"torn frame (length {length}, {remaining - FRAME_HEADER.size} bytes present)", 0
    start = position + FRAME_HEADER.size
    if zlib.crc32(data[start : start + length]) != crc:
        return "CRC mismatch", 0
    (offset,) = struct.unpack_from(">q", data, start)
    if offset != expected_offset:
        return f"frame holds offset {offset}, expected {expected_offset}", 0
    return None, FRAME_HEADER.size + length


def scan_segment(data: bytes | mmap.mmap, base_offset: int, index_interval_bytes: int) -> SegmentScan:
    """Validate every frame of a segment, computing the index entries appends would have written."""
    scan = SegmentScan(next_offset=base_offset, valid_bytes=0)
    position = 0
    last_entry_position = 0
    while position < len(data):
        problem, frame_length = frame_problem(data, position, scan.next_offset)
        if problem is not None:
            scan.problem = problem
            break
        _, _, timestamp = BODY_HEADER.unpack_from(data, position + FRAME_HEADER.size)
        if position - last_entry_position >= index_interval_bytes and position > 0:
            scan.index.append((scan.next_offset - base_offset, position))
            last_entry_position = position
        scan.max_timestamp = max(scan.max_timestamp, timestamp)
        position += frame_length
        scan.next_offset += 1
        scan.valid_bytes = position
    return scan


def _complete_frame_in(chunk: bytes, position: int) -> bool:
    """Whether `chunk` holds the whole frame starting at `position` (per its length field)."""
    if len(chunk) - position < FRAME_HEADER.size:
        return False
    length: int = struct.unpack_from(">I", chunk, position)[0]
    return len(chunk) - position - FRAME_HEADER.size >= length


def read_whole_file(fd: int) -> bytes | mmap.mmap:
    """The file's bytes, memory-mapped when non-empty (mmap cannot map an empty file)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    return mmap.mmap(fd, size, access=mmap.ACCESS_READ)


# ---------------------------------------------------------------------------------------
# LogSegment + OffsetIndex
# ---------------------------------------------------------------------------------------


class LogSegment:
    """One `.log` + `.index` pair (Kafka's `LogSegment` with its `OffsetIndex`)."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.base_offset = base_offset
        self.log_path = directory / segment_file_name(base_offset, "log")
        self.index_path = directory / segment_file_name(base_offset, "index")
        self._index_interval_bytes = index_interval_bytes
        self._log_fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self._index_fd = os.open(self.index_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        # The cached index: parallel arrays so bisect works on the relative offsets.
        self._relative_offsets = array("I")
        self._positions = array("I")
        self._last_entry_position = 0
        self.dirty = False

    # -- loading ------------------------------------------------------------------------

    def scan(self) -> SegmentScan:
        """Scan the data file (see `scan_segment`)."""
        data = read_whole_file(self._log_fd)
        try:
            return scan_segment(data, self.base_offset, self._index_interval_bytes)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()

    def adopt(self, scan: SegmentScan) -> bool:
        """Take the scan as this segment's state: cut the data file to the valid prefix and
        rewrite the index if it differs from the one the frames imply. True when the index
        was rebuilt."""
        if os.fstat(self._log_fd).st_size != scan.valid_bytes:
            os.ftruncate(self._log_fd, scan.valid_bytes)
            os.fsync(self._log_fd)
        self.size = scan.valid_bytes
        self.next_offset = scan.next_offset
        self.max_timestamp = scan.max_timestamp
        self._relative_offsets = array("I", (relative for relative, _ in scan.index))
        self._positions = array("I", (position for _, position in scan.index))
        self._last_entry_position = scan.index[-1][1] if scan.index else 0
        expected = b"".join(INDEX_ENTRY.pack(relative, position) for relative, position in scan.index)
        on_disk = os.pread(self._index_fd, len(expected) + 1, 0)
        if on_disk == expected:
            return False
        os.ftruncate(self._index_fd, 0)
        os.pwrite(self._index_fd, expected, 0)
        os.fsync(self._index_fd)
        return True

    # -- appending ----------------------------------------------------------------------

    def must_roll(self, offset: int, pending_bytes: int, frame_bytes: int, segment_bytes: int) -> bool:
        """Whether a frame needs a new segment (an empty segment takes any one frame)."""
        size = self.size + pending_bytes
        return offset - self.base_offset > MAX_RELATIVE_OFFSET or (
            size > 0 and size + frame_bytes > segment_bytes
        )

    def append(self, frames: Sequence[tuple[int, int, bytes]]) -> None:
        """Write (offset, timestamp, frame bytes) frames with one write each for data and index."""
        entries_before = len(self._positions)
        index_bytes = bytearray()
        position = self.size
        for offset, timestamp, frame in frames:
            # Same rule as `scan_segment`, so a rebuilt index equals this one.
            if position - self._last_entry_position >= self._index_interval_bytes and position > 0:
                index_bytes += INDEX_ENTRY.pack(offset - self.base_offset, position)
                self._relative_offsets.append(offset - self.base_offset)
                self._positions.append(position)
                self._last_entry_position = position
            position += len(frame)
            self.max_timestamp = max(self.max_timestamp, timestamp)
        os.pwrite(self._log_fd, b"".join(frame for _, _, frame in frames), self.size)
        if index_bytes:
            os.pwrite(self._index_fd, bytes(index_bytes), entries_before * INDEX_ENTRY.size)
        self.size = position
        self.next_offset += len(frames)
        self.dirty = True

    # -- reading ------------------------------------------------------------------------

    def _corrupt(self, position: int, problem: str) -> CorruptLogError:
        return CorruptLogError(f"{self.log_path}: byte {position}: {problem}")

    def position_of(self, offset: int) -> int:
        """The byte position of the frame holding `offset` (or the end, for `next_offset`)."""
        if offset == self.next_offset:
            return self.size
        if not self.base_offset <= offset < self.next_offset:
            raise ValueError(f"offset {offset} is not in segment {self.log_path.name}")
        slot = bisect_right(self._relative_offsets, offset - self.base_offset) - 1
        position = self._positions[slot] if slot >= 0 else 0
        # The scan covers about one index interval; read it in one call, not a call per frame.
        chunk_start, chunk = position, b""
        needed = FRAME_HEADER.size + 8  # length, crc and the offset field
        while position < self.size:
            if position + needed > chunk_start + len(chunk):
                chunk_start = position
                span = max(needed, min(self._index_interval_bytes + 256, READ_CHUNK_BYTES))
                chunk = os.pread(self._log_fd, span, position)
                if len(chunk) < needed:
                    raise self._corrupt(position, "frame header past the end of the file")
            length, _ = FRAME_HEADER.unpack_from(chunk, position - chunk_start)
            (frame_offset,) = struct.unpack_from(">q", chunk, position - chunk_start + FRAME_HEADER.size)
            if frame_offset == offset:
                return position
            if frame_offset > offset or length < BODY_HEADER.size:
                raise self._corrupt(position, f"offset {offset} not found (frame holds {frame_offset})")
            position += FRAME_HEADER.size + length
        raise self._corrupt(position, f"offset {offset} not found before the end of the segment")

    def read(self, offset: int, max_records: int) -> list[StoredRecord]:
        """Up to `max_records` records from `offset`, each CRC-checked."""
        records: list[StoredRecord] = []
        position = self.position_of(offset)
        while position < self.size and len(records) < max_records:
            chunk = os.pread(self._log_fd, min(READ_CHUNK_BYTES, self.size - position), position)
            used = self._parse(chunk, position, offset + len(records), max_records, records)
            if used == 0:  # one frame larger than a chunk: read exactly that frame
                chunk = os.pread(self._log_fd, self._frame_length(position), position)
                used = self._parse(chunk, position, offset + len(records), max_records, records)
            position += used
        return records

    def _parse(
        self, chunk: bytes, position: int, expected: int, max_records: int, records: list[StoredRecord]
    ) -> int:
        """Decode the complete frames at the start of `chunk` (read at `position`) into
        `records`; returns the bytes consumed. A frame cut by the chunk's end is left for the
        next read unless the chunk reaches the segment's end, where it is corruption."""
        used = 0
        reaches_end = position + len(chunk) >= self.size
        while used < len(chunk) and len(records) < max_records:
            if not reaches_end and not _complete_frame_in(chunk, used):
                break
            problem, frame_length = frame_problem(chunk, used, expected)
            if problem is not None:
                raise self._corrupt(position + used, problem)
            start = used + FRAME_HEADER.size
            _, epoch, timestamp = BODY_HEADER.unpack_from(chunk, start)
            value = chunk[start + BODY_HEADER.size : used + frame_length]
            records.append(StoredRecord(expected, epoch, timestamp, value))
            expected += 1
            used += frame_length
        return used

    def _frame_length(self, position: int) -> int:
        header = os.pread(self._log_fd, FRAME_HEADER.size, position)
        if len(header) < FRAME_HEADER.size:
            raise self._corrupt(position, "frame header past the end of the file")
        length: int = FRAME_HEADER.unpack(header)[0]
        if length > MAX_BODY_BYTES:
            raise self._corrupt(position, f"bad frame length {length}")
        return FRAME_HEADER.size + length

    # -- truncation, durability, deletion -------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove offsets >= `offset`: cut the data file, then rebuild state and index tail."""
        position = self.position_of(offset)
        os.ftruncate(self._log_fd, position)
        # Rescanning recomputes the largest timestamp (there is no time index) and the
        # index tail; the index prefix below `position` is unchanged, so `adopt` rewrites
        # only when the old index had entries past the cut.
        scan = self.scan()
        if scan.problem is not None:
            raise self._corrupt(scan.valid_bytes, scan.problem)
        self.adopt(scan)
        os.fsync(self._log_fd)
        self.dirty = False

    def fsync(self) -> None:
        """Make the data and index durable."""
        if self.dirty:
            os.fsync(self._log_fd)
            os.fsync(self._index_fd)
            self.dirty = False

    def close(self) -> None:
        """Close the file descriptors (idempotent)."""
        for fd in (self._log_fd, self._index_fd):
            if fd >= 0:
                os.close(fd)
        self._log_fd = self._index_fd = -1

    def delete(self) -> None:
        """Close and remove both files."""
        self.close()
        self.log_path.unlink(missing_ok=True)
        self.index_path.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------
# The segmented log
# ---------------------------------------------------------------------------------------


class _Checkpoints:
    """The partition's checkpoint files, rewritten only when their value changes."""

    def __init__(self, directory: Path) -> None:
        self.key = topic_partition_for(directory)
        self.epochs = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT)
        self.offsets = {
            name: OffsetCheckpointFile(directory / name)
            for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, HIGH_WATERMARK_CHECKPOINT)
        }
        self._written: dict[str, object] = {}

    def read_offset(self, name: str) -> int:
        value = self.offsets[name].read().get(self.key, 0)
        self._written[name] = value
        return value

    def read_epochs(self) -> list[EpochEntry]:
        entries = self.epochs.read()
        self._written[LEADER_EPOCH_CHECKPOINT] = tuple(entries)
        return entries

    def write_offset(self, name: str, value: int) -> None:
        if self._written.get(name) != value:
            self.offsets[name].write({self.key: value})
            self._written[name] = value

    def write_epochs(self, entries: tuple[EpochEntry, ...]) -> None:
        if self._written.get(LEADER_EPOCH_CHECKPOINT) != entries:
            self.epochs.write(entries)
            self._written[LEADER_EPOCH_CHECKPOINT] = entries


class SegmentedLog:
    """A replica log on disk (Kafka's `UnifiedLog` over `LocalLog`). Use `open`."""

    def __init__(self, directory: Path, config: LogConfig) -> None:
        self.directory = directory
        self.config = config
        self._segments: list[LogSegment] = []
        self._base_offsets: list[int] = []
        self._checkpoints = _Checkpoints(directory)
        self._epoch_cache = LeaderEpochCache()
        self._log_start_offset = 0
        self._high_watermark = 0
        self._recovery_point = 0
        self._directory_dirty = False
        self._closed = False
        self.recovery_actions: list[str] = []  # what `open` had to repair, for operators and tests

    # -- opening (LogLoader) --------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path | str, config: LogConfig | None = None) -> SegmentedLog:
        """Open (creating if needed) the log in `directory`, recovering it after a crash."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        log = cls(path, config or LogConfig())
        log._load()
        return log

    def _load(self) -> None:
        for leftover in self.directory.glob("*.tmp"):
            leftover.unlink()  # a checkpoint write that never reached its rename
        marker = self.directory / TRUNCATE_FULLY_MARKER
        if marker.exists():
            text = marker.read_text(encoding="ascii", errors="replace").strip()
            if not text.isdigit():
                raise CorruptLogError(f"{marker}: byte 0: expected an offset, got {text!r}")
            self._finish_truncate_fully(int(text))
        self._recovery_point = self._checkpoints.read_offset(RECOVERY_POINT_CHECKPOINT)
        self._log_start_offset = self._checkpoints.read_offset(LOG_START_OFFSET_CHECKPOINT)
        self._high_watermark = self._checkpoints.read_offset(HIGH_WATERMARK_CHECKPOINT)
        self._epoch_cache = LeaderEpochCache(self._checkpoints.read_epochs())
        clean = self._consume_clean_shutdown_marker()
        self._load_segments(self._segment_base_offsets())
        self._reconcile_offsets(clean)

    def _consume_clean_shutdown_marker(self) -> bool:
        """Whether the previous run closed the log; the marker is removed at once so that a
        crash of this run is recognised by the next open."""
        marker = self.directory / CLEAN_SHUTDOWN_MARKER
        if not marker.exists():
            return False
        marker.unlink()
        fsync_directory(self.directory)
        return True

    def _segment_base_offsets(self) -> list[int]:
        """Base offsets of the `.log` files; orphan `.index` files are removed."""
        logs: set[int] = set()
        indexes: set[int] = set()
        for entry in self.directory.iterdir():
            match = SEGMENT_NAME.match(entry.name)
            if match:
                (logs if match.group(2) == "log" else indexes).add(int(match.group(1)))
        for orphan in sorted(indexes - logs):
            (self.directory / segment_file_name(orphan, "index")).unlink()
            self.recovery_actions.append(f"removed orphan index {segment_file_name(orphan, 'index')}")
        return sorted(logs)

    def _load_segments(self, base_offsets: list[int]) -> None:
        if not base_offsets:
            if self._recovery_point > self._log_start_offset:
                raise CorruptLogError(
                    f"{self.directory}: no segment files, but the recovery point is {self._recovery_point}"
                )
            self._add_segment(self._log_start_offset)
            return
        for number, base in enumerate(base_offsets):
            if self._segments and base != self._segments[-1].next_offset:
                self._check_recoverable(
                    self._segments[-1].next_offset,
                    f"{self.directory / segment_file_name(base, 'log')}: byte 0: segment starts at {base} "
                    f"but the previous segment ends at {self._segments[-1].next_offset}",
                )
                self._delete_files(base_offsets[number:], "gap between segments")
                return
            segment = self._add_segment(base)
            scan = segment.scan()
            if scan.problem is not None:
                self._check_recoverable(
                    scan.next_offset, f"{segment.log_path}: byte {scan.valid_bytes}: {scan.problem}"
                )
                self.recovery_actions.append(
                    f"truncated {segment.log_path.name} at byte {scan.valid_bytes} ({scan.problem})"
                )
            if segment.adopt(scan):
                self.recovery_actions.append(f"rebuilt index {segment.index_path.name}")
            if scan.problem is not None:
                self._delete_files(base_offsets[number + 1 :], "after a truncated segment")
                return

    def _check_recoverable(self, offset: int, where: str) -> None:
        """Damage at `offset` may be repaired only if that offset was never flushed."""
        if offset < self._recovery_point:
            raise CorruptLogError(
                f"{where}; offset {offset} is below the recovery point {self._recovery_point}"
            )

    def _delete_files(self, base_offsets: list[int], why: str) -> None:
        for base in base_offsets:
            for suffix in ("log", "index"):
                (self.directory / segment_file_name(base, suffix)).unlink(missing_ok=True)
            self.recovery_actions.append(f"deleted segment {segment_file_name(base, 'log')} ({why})")
        if base_offsets:
            fsync_directory(self.directory)

    def _reconcile_offsets(self, clean: bool) -> None:
        """Bring the checkpointed offsets in line with what the segments hold.

        After a crash the epoch cache (written ahead of the records) is trimmed to the
        recovered log end, as the spec's `recover_after_crash` (a `truncate_to`) does; after a
        clean shutdown it is exact already, including an epoch assigned at the log end."""
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        if self._log_start_offset > self.log_end_offset:
            # Everything left is below a DeleteRecords/retention point that was not flushed.
            self.truncate_fully_and_start_at(self._log_start_offset)
            return
        self._delete_segments_below_start()  # a retention pass interrupted by a crash
        self._recovery_point = min(self._recovery_point, self.log_end_offset)
        self._high_watermark = min(max(self._high_watermark, self._log_start_offset), self.log_end_offset)
        self._epoch_cache.truncate_from_end(self.log_end_offset + 1 if clean else self.log_end_offset)
        self._epoch_cache.truncate_from_start(self._log_start_offset)

    def _add_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(self.directory, base_offset, self.config.index_interval_bytes)
        self._segments.append(segment)
        self._base_offsets.append(base_offset)
        self._directory_dirty = True
        return segment

    # -- observers ----------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def log_start_offset(self) -> int:
        """The first offset still held."""
        return self._log_start_offset

    @property
    def high_watermark(self) -> int:
        """Offsets below are committed."""
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        """Every offset below is flushed to disk."""
        return self._recovery_point

    @property
    def epoch_cache(self) -> tuple[EpochEntry, ...]:
        """The leader-epoch cache, oldest first."""
        return self._epoch_cache.entries

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        """Base offsets of the segments, oldest first."""
        return tuple(self._base_offsets)

    @property
    def size_in_bytes(self) -> int:
        """Total bytes of the data files."""
        return sum(segment.size for segment in self._segments)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset) as `LeaderEpochFileCache.endOffsetFor`."""
        return self._epoch_cache.end_offset_for(requested_epoch, self.log_end_offset)

    # -- appending ----------------------------------------------------------------------

    def append(self, records: Sequence[Record], timestamp_ms: int | None = None) -> int:
        """Append records at the log end; returns the offset of the first one."""
        return self.append_payloads(
            [(record.epoch, encode_value(record.value)) for record in records], timestamp_ms
        )

    def append_payloads(self, payloads: Sequence[tuple[int, bytes]], timestamp_ms: int | None = None) -> int:
        """Append (leader epoch, value bytes) pairs; returns the offset of the first one."""
        timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        first = self.log_end_offset
        pending: list[tuple[int, int, bytes]] = []
        pending_bytes = 0
        for epoch, value in payloads:
            if epoch < 0:
                raise ValueError(f"leader epoch must not be negative, got {epoch}")
            if BODY_HEADER.size + len(value) > MAX_BODY_BYTES:
                raise ValueError(
                    f"a value of {len(value)} bytes exceeds the {MAX_BODY_BYTES}-byte frame limit"
                )
        self._assign_epochs(first, [epoch for epoch, _ in payloads])
        for offset, (epoch, value) in enumerate(payloads, start=first):
            frame = encode_frame(offset, epoch, timestamp, value)
            if self._segments[-1].must_roll(offset, pending_bytes, len(frame), self.config.segment_bytes):
                if pending:
                    self._segments[-1].append(pending)
                    pending, pending_bytes = [], 0
                self._add_segment(offset)
            pending.append((offset, timestamp, frame))
            pending_bytes += len(frame)
        if pending:
            self._segments[-1].append(pending)
        return first

    def _assign_epochs(self, first: int, epochs: Sequence[int]) -> None:
        """Record each new epoch's start offset; the checkpoint is written before the records
        (as `UnifiedLog.append` assigns before appending), so after a crash the cache on disk
        covers every record and open() only trims it to the recovered log end."""
        changed = False
        for offset, epoch in enumerate(epochs, start=first):
            if epoch != self._epoch_cache.latest_epoch:
                changed = self._epoch_cache.assign(epoch, offset) or changed
        if changed:
            self._checkpoints.write_epochs(self._epoch_cache.entries)

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """A new leader records its epoch at its LEO (KAFKA-7415); written at once, as Kafka does."""
        if self._epoch_cache.assign(epoch, start_offset):
            self._checkpoints.write_epochs(self._epoch_cache.entries)

    def update_high_watermark(self, high_watermark: int) -> int:
        """Set the HW clamped to [log start, LEO] (`updateHighWatermark`); returns it.
        Checkpointed by `flush`."""
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)
        return self._high_watermark

    # -- reading ------------------------------------------------------------------------

    def read_payloads(self, offset: int, max_records: int | None = None) -> list[StoredRecord]:
        """Stored frames from `offset` (clamped up to the log start) to at most `max_records`."""
        limit = self.log_end_offset if max_records is None else max_records
        start = max(offset, self._log_start_offset)
        records: list[StoredRecord] = []
        slot = bisect_right(self._base_offsets, start) - 1
        while slot < len(self._segments) and start < self.log_end_offset and len(records) < limit:
            segment = self._segments[slot]
            if start < segment.next_offset:
                records.extend(segment.read(start, limit - len(records)))
                start = segment.next_offset
            slot += 1
        return records

    def read(self, offset: int, max_records: int | None = None) -> list[Record]:
        """Records from `offset` (the spec's `records_from`, limited to `max_records`)."""
        return [
            Record(stored.epoch, decode_value(stored.value))
            for stored in self.read_payloads(offset, max_records)
        ]

    def record_at(self, offset: int) -> Record | None:
        """The record at `offset`, or None when the log does not hold it."""
        if not self._log_start_offset <= offset < self.log_end_offset:
            return None
        return self.read(offset, 1)[0]

    # -- truncation ---------------------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or above `offset` (`UnifiedLog.truncateTo`).

        Later segments are deleted and the one holding `offset` is cut (its index tail
        rebuilt); HW, recovery point and the epoch cache are lowered to the new end.
        """
        end = max(min(offset, self.log_end_offset), self._log_start_offset)
        if end < self.log_end_offset:
            slot = bisect_right(self._base_offsets, end) - 1
            for segment in self._segments[slot + 1 :]:
                segment.delete()
            del self._segments[slot + 1 :]
            del self._base_offsets[slot + 1 :]
            self._segments[-1].truncate_to(end)
            fsync_directory(self.directory)
        self._high_watermark = min(self._high_watermark, end)
        self._epoch_cache.truncate_from_end(end)
        self._checkpoints.write_epochs(self._epoch_cache.entries)
        # A recovery point above the new end would make a later torn tail look like lost
        # flushed data, so it is lowered on disk before any new append.
        self._recovery_point = min(self._recovery_point, end)
        self._checkpoints.write_offset(RECOVERY_POINT_CHECKPOINT, self._recovery_point)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and restart the log empty at `offset` (`truncateFullyAndStartAt`)."""
        # A marker makes the multi-file operation atomic: open() completes it after a crash.
        write_atomically(self.directory / TRUNCATE_FULLY_MARKER, f"{offset}\n")
        for segment in self._segments:
            segment.close()
        self._segments, self._base_offsets = [], []
        self._finish_truncate_fully(offset)
        self._add_segment(offset)
        fsync_directory(self.directory)
        self._directory_dirty = False

    def _finish_truncate_fully(self, offset: int) -> None:
        for entry in list(self.directory.iterdir()):
            if SEGMENT_NAME.match(entry.name):
                entry.unlink()
        self._log_start_offset = self._high_watermark = self._recovery_point = offset
        self._epoch_cache.clear()
        self._checkpoints.write_epochs(())
        for name in (LOG_START_OFFSET_CHECKPOINT, HIGH_WATERMARK_CHECKPOINT, RECOVERY_POINT_CHECKPOINT):
            self._checkpoints.write_offset(name, offset)
        (self.directory / TRUNCATE_FULLY_MARKER).unlink()
        fsync_directory(self.directory)

    # -- log start offset: DeleteRecords and retention ----------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to `offset`, capped at the HW; returns it."""
        target = min(offset, self._high_watermark)
        if target > self._log_start_offset:
            self._move_log_start_offset(target)
        return self._log_start_offset

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Apply retention by time and by size (`deleteOldSegments`); returns segments deleted.

        A segment goes when its largest timestamp is older than `retention_ms`, when the log
        exceeds `retention_bytes` by at least the segment's size, or when it lies wholly
        below the log start offset; only the oldest segments go (a prefix), never the active
        one and never one holding an offset at or above the high watermark.
        """
        now = int(time.time() * 1000) if now_ms is None else now_ms
        excess = self.size_in_bytes - self.config.retention_bytes if self.config.retention_bytes >= 0 else -1
        count = 0
        for segment, upper in zip(self._segments, self._base_offsets[1:], strict=False):
            if upper > self._high_watermark:
                break
            expired = self.config.retention_ms >= 0 and now - segment.max_timestamp > self.config.retention_ms
            oversized = excess - segment.size >= 0
            if not (expired or oversized or upper <= self._log_start_offset):
                break
            excess -= segment.size
            count += 1
        if count:
            self._move_log_start_offset(max(self._log_start_offset, self._base_offsets[count]))
        return count

    def _move_log_start_offset(self, new_start: int) -> None:
        # The checkpoint goes first: after a crash, files below it are removed on open.
        self._log_start_offset = new_start
        self._checkpoints.write_offset(LOG_START_OFFSET_CHECKPOINT, new_start)
        if self._epoch_cache.truncate_from_start(new_start):
            self._checkpoints.write_epochs(self._epoch_cache.entries)
        self._delete_segments_below_start()

    def _delete_segments_below_start(self) -> None:
        doomed = 0
        while (
            doomed < len(self._segments) - 1 and self._segments[doomed].next_offset <= self._log_start_offset
        ):
            doomed += 1
        for segment in self._segments[:doomed]:
            segment.delete()
        if doomed:
            del self._segments[:doomed]
            del self._base_offsets[:doomed]
            fsync_directory(self.directory)

    # -- durability ---------------------------------------------------------------------

    def flush(self) -> None:
        """fsync every written segment and index, then checkpoint the recovery point (= LEO),
        the high watermark, the log start offset and the epoch cache."""
        for segment in self._segments:
            segment.fsync()
        if self._directory_dirty:
            fsync_directory(self.directory)
            self._directory_dirty = False
        self._checkpoints.write_epochs(self._epoch_cache.entries)  # normally already written
        self._checkpoints.write_offset(HIGH_WATERMARK_CHECKPOINT, self._high_watermark)
        self._checkpoints.write_offset(LOG_START_OFFSET_CHECKPOINT, self._log_start_offset)
        self._recovery_point = self.log_end_offset
        self._checkpoints.write_offset(RECOVERY_POINT_CHECKPOINT, self._recovery_point)

    def close(self, flush: bool = True) -> None:
        """Flush and release the files. `flush=False` abandons unflushed state, as a crash would
        (what remains on disk is whatever the OS wrote)."""
        if self._closed:
            return
        if flush:
            self.flush()
        for segment in self._segments:
            segment.close()
        if flush:
            write_atomically(self.directory / CLEAN_SHUTDOWN_MARKER, "")
        self._closed = True

    def __enter__(self) -> SegmentedLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open(directory: Path | str, config: LogConfig | None = None) -> SegmentedLog:
    """Open (creating if needed) the log in `directory` and recover it: see `SegmentedLog.open`."""
    return SegmentedLog.open(directory, config)
