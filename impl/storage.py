"""A segmented on-disk replica log of record batches with a sparse offset index, as Kafka stores a partition.

What it is
    A partition directory holds segments. Each segment is a `.log` data file and an
    `.index` file named after the segment's base offset as 20 zero-padded digits
    (`00000000000000000000.log`). Kafka's classes: `UnifiedLog`/`LocalLog` (the segmented
    log), `LogSegment` (one segment), `OffsetIndex` (the sparse index), `LogValidator` (the
    checks on a produced batch and the in-place offset assignment) and `LogLoader`
    (recovery on open); the Kafka documentation's "Log" and "Message Format" sections describe
    the layout.

Batch format (Kafka's message format v2, KIP-98: `DefaultRecordBatch`)
    A data file is a sequence of record batches. Big-endian, 61-byte header::

        baseOffset:i64 | batchLength:i32 | partitionLeaderEpoch:i32 | magic:i8 (=2) | crc:u32 |
        attributes:i16 (=0) | lastOffsetDelta:i32 | baseTimestamp:i64 | maxTimestamp:i64 |
        producerId:i64 | producerEpoch:i16 | baseSequence:i32 | recordCount:i32 | records

    `batchLength` counts the bytes after the field (the whole batch is `12 + batchLength`).
    The records section is `recordCount` value lengths (u32 each), then the values
    concatenated; record `i` has offset `baseOffset + i` and the batch's leader epoch and
    timestamp. The checksum is `zlib.crc32` (Kafka: CRC-32C) and covers `attributes` to the
    end of the batch, plus the 4 bytes of `partitionLeaderEpoch` (fed to the CRC first);
    `baseOffset` is outside it, so the log assigns offsets to a producer-encoded batch by
    patching `baseOffset` in place without recomputing the CRC (`append_batch`, as
    `LogValidator`'s in-place offset assignment does). A batch holds one leader epoch;
    `append`/`append_payloads` encode one batch per call (more when the epoch changes
    within the call or a segment rolls). Spec values are ints, stored as minimal signed
    big-endian bytes; `append_payloads` stores arbitrary bytes.

    Deviations from Kafka, and why:
    * Records are not Kafka's varint records (length, attributes, timestampDelta,
      offsetDelta, key, value, headers): only value lengths and values, the lengths
      first so that a batch's structure (the lengths add up to `batchLength`) is checked
      by C code (`array`, `sum`) and `append_batch` does O(1) Python work per batch.
      Offset deltas are implicit (0, 1, ...: no compaction, so no gaps); there are no
      keys, headers or per-record timestamps: every record has the batch timestamp, so
      `baseTimestamp` must equal `maxTimestamp`; `attributes` must be 0 (no compression,
      transactions or LogAppendTime); producer id/epoch/sequence are stored, not checked.
    * The CRC covers `partitionLeaderEpoch`. Kafka leaves it outside because the leader
      stamps it in place; here the appender encodes the epoch, and nothing else could
      vouch for it on recovery (records may carry any epoch, so it cannot be checked
      against the epoch cache).
    * Truncation to an offset inside a batch keeps exactly the records below it: the
      surviving prefix is rewritten in place as a new batch (same base offset, epoch and
      timestamp). Kafka truncates at batch boundaries only; the conformance suite compares
      record by record with the reference, which truncates at any offset. A crash in the
      middle of that rewrite can tear a batch below the recovery point, which `open`
      reports as `CorruptLogError` rather than silently losing the kept records.

Sparse index (`OffsetIndex`)
    8-byte entries: `baseOffset - segment base offset` (u32) and the batch's byte position
    (u32). An entry is written before a batch when at least `index_interval_bytes` of log
    data were written since the previous entry (or since the segment start). The rule
    depends only on batch positions, so an index rebuilt from the data file is
    byte-identical to the one written by appends; that is how recovery detects a stale or
    garbage index. Lookup: bisect the base offsets for the segment, bisect the in-memory
    index array for the nearest entry at or below the offset, scan batch headers forward to
    the batch holding the offset, then find the record inside the batch from its lengths.

Durability and recovery (`LogLoader`)
    `flush()` fsyncs data and index files and writes `recovery-point-offset-checkpoint`
    (every offset below it is on disk) together with the high watermark, log start offset
    and leader-epoch checkpoints. On open every segment is scanned and every batch's
    length, CRC, structure and base offset checked. A bad batch at or above the recovery
    point is a torn or corrupt tail of an unflushed write: the segment is cut at the end of
    the last valid batch and later segments are deleted. A bad batch below the recovery
    point means flushed data was damaged: `CorruptLogError` (file and byte position in the
    message); so is a log whose valid batches end below the recovery point (the last
    segment cut at a batch boundary, emptied or deleted) or start above the checkpointed log
    start offset (the first segments deleted): flushed records never vanish silently. Reads
    check each batch's CRC again, so a record that rots after open is refused rather than
    served, and a read that finds the file shorter than what the log wrote (cut under the
    open log) raises instead of retrying. Kafka only rescans segments above the recovery
    point; scanning everything costs a read of the log on open and buys the guarantee that a
    corrupt record is never served.

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
    segment. Time retention uses each segment's largest batch timestamp (the timestamp
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
import sys
import time
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Union

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

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEAD = struct.Struct(">qiibI")  # baseOffset .. crc: the part before the CRC's range
BATCH_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordCount: the CRC's range starts here
LOG_OVERHEAD = 12  # baseOffset + batchLength: the batch is LOG_OVERHEAD + batchLength bytes
EPOCH_POSITION = 12  # partitionLeaderEpoch: 4 bytes, fed to the CRC first
CRC_RANGE_START = 21  # attributes: the CRC covers from here to the end of the batch
BASE_OFFSET = struct.Struct(">q")
LAST_OFFSET_DELTA = struct.Struct(">i")  # at byte 23
LAST_OFFSET_DELTA_POSITION = 23
MAGIC = 2
NO_PRODUCER_ID = -1
RECORD_LENGTH_BYTES = 4  # each record: its value length (u32) in the lengths column
INDEX_ENTRY = struct.Struct(">II")  # relative offset, file position
MAX_BATCH_BYTES = 64 * 1024 * 1024  # a longer batch can only be garbage
MAX_RELATIVE_OFFSET = 2**32 - 1  # the index stores offset - base in 32 bits
MAX_SEGMENT_POSITION = 2**32 - 1  # ... and positions in 32 bits
READ_CHUNK_BYTES = 64 * 1024
TRUNCATE_FULLY_MARKER = "truncate-fully-pending"  # an interrupted truncate_fully_and_start_at
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"  # written by close(): the last run did not crash
SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index)$")
_LITTLE_ENDIAN = sys.byteorder == "little"

Buffer = Union[bytes, bytearray, memoryview, mmap.mmap]  # noqa: UP007 (a runtime alias)

if array("I").itemsize != RECORD_LENGTH_BYTES:  # pragma: no cover - every mainstream platform
    raise ImportError("impl.storage needs a 4-byte array('I')")


class CorruptLogError(Exception):
    """The log on disk is damaged in a way recovery may not repair (flushed data is bad)."""


class InvalidBatchError(ValueError):
    """A batch given to `append_batch` is malformed or fails its CRC (Kafka's
    `CorruptRecordException` / `InvalidRecordException`); nothing was written."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The per-topic settings that shape the files (Kafka's names in the comments)."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    retention_bytes: int = -1  # retention.bytes; -1 = unlimited
    retention_ms: int = 7 * 24 * 3600 * 1000  # retention.ms; -1 = unlimited

    def __post_init__(self) -> None:
        if self.segment_bytes < BATCH_HEADER.size + RECORD_LENGTH_BYTES:
            raise ValueError(f"segment_bytes {self.segment_bytes} cannot hold a single record")
        if self.segment_bytes > MAX_SEGMENT_POSITION:
            raise ValueError("segment_bytes must fit the index's 32-bit positions")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must not be negative")


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record as stored: what `read_payloads` returns."""

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


def batch_size(values_bytes: int, count: int) -> int:
    """Bytes of a batch of `count` records whose values total `values_bytes`."""
    return BATCH_HEADER.size + RECORD_LENGTH_BYTES * count + values_bytes


def batch_crc(data: Buffer, position: int, end: int) -> int:
    """The checksum of the batch at data[position:end]: partitionLeaderEpoch, then
    attributes to the end (never baseOffset, batchLength, magic or the crc itself)."""
    epoch_crc = zlib.crc32(data[position + EPOCH_POSITION : position + EPOCH_POSITION + 4])
    return zlib.crc32(data[position + CRC_RANGE_START : end], epoch_crc)


def _lengths(data: Buffer, start: int, count: int) -> array[int]:
    """The u32 value lengths stored big-endian at data[start:start + 4 * count]."""
    lengths = array("I")
    lengths.frombytes(data[start : start + RECORD_LENGTH_BYTES * count])
    if _LITTLE_ENDIAN:
        lengths.byteswap()
    return lengths


def encode_batch(base_offset: int, epoch: int, timestamp_ms: int, values: Sequence[bytes]) -> bytes:
    """One v2-style record batch holding `values` (what a producer sends; see the module doc)."""
    if not values:
        raise ValueError("a batch holds at least one record")
    return _encode_batch(base_offset, epoch, timestamp_ms, values, b"".join(values))


def _encode_batch(
    base_offset: int, epoch: int, timestamp_ms: int, values: Sequence[bytes], joined: bytes
) -> bytes:
    """`encode_batch` given `joined`, the values concatenated (C-level passes only)."""
    count = len(values)
    lengths = struct.pack(f">{count}I", *map(len, values))
    tail = (
        BATCH_TAIL.pack(0, count - 1, timestamp_ms, timestamp_ms, NO_PRODUCER_ID, -1, -1, count)
        + lengths
        + joined
    )
    crc = zlib.crc32(tail, zlib.crc32(struct.pack(">i", epoch)))
    batch_length = BATCH_HEAD.size - LOG_OVERHEAD + len(tail)
    return BATCH_HEAD.pack(base_offset, batch_length, epoch, MAGIC, crc) + tail


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
# Validating batches (shared by append_batch, reads, recovery and truncation)
# ---------------------------------------------------------------------------------------


def batch_problem(data: Buffer, position: int, expected_offset: int | None) -> tuple[str | None, int]:
    """Check the batch at `position`: length, CRC, structure and (unless None) that its base
    offset is `expected_offset`. Returns (problem or None, batch size in bytes)."""
    remaining = len(data) - position
    if remaining < BATCH_HEADER.size:
        return f"torn batch header ({remaining} of {BATCH_HEADER.size} bytes)", 0
    (base, batch_length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, _, _, _, count) = (
        BATCH_HEADER.unpack_from(data, position)
    )
    size = LOG_OVERHEAD + batch_length
    if size < BATCH_HEADER.size or size > MAX_BATCH_BYTES:
        return f"bad batch length {batch_length}", 0
    if remaining < size:
        return f"torn batch (length {batch_length}, {remaining - LOG_OVERHEAD} bytes present)", 0
    if magic != MAGIC:
        return f"bad magic {magic} (expected {MAGIC})", 0
    if batch_crc(data, position, position + size) != crc:
        return "CRC mismatch", 0
    if attributes != 0:
        return f"unsupported attributes {attributes:#x} (no compression, transactions or LogAppendTime)", 0
    if count < 1 or last_delta != count - 1:
        return f"record count {count} does not match lastOffsetDelta {last_delta}", 0
    if base_ts != max_ts:
        return f"baseTimestamp {base_ts} differs from maxTimestamp {max_ts}", 0
    if epoch < 0:
        return f"negative leader epoch {epoch}", 0
    values_bytes = size - BATCH_HEADER.size - RECORD_LENGTH_BYTES * count
    if values_bytes < 0 or sum(_lengths(data, position + BATCH_HEADER.size, count)) != values_bytes:
        return f"record lengths do not add up to batchLength {batch_length}", 0
    if expected_offset is not None and base != expected_offset:
        return f"batch holds offset {base}, expected {expected_offset}", 0
    return None, size


def decode_records(batch: Buffer, position: int, first: int, limit: int, into: list[StoredRecord]) -> None:
    """Append to `into` the records of the (validated) batch at `position` from offset
    `first` (inside the batch), at most `limit` of them."""
    base, _, epoch, _, _, _, _, _, timestamp, _, _, _, count = BATCH_HEADER.unpack_from(batch, position)
    lengths = _lengths(batch, position + BATCH_HEADER.size, count)
    skip = first - base
    end = min(count, skip + limit)
    at = position + BATCH_HEADER.size + RECORD_LENGTH_BYTES * count + sum(lengths[:skip])
    for index, value_end in enumerate(accumulate(lengths[skip:end], initial=at), start=skip - 1):
        if index >= skip:
            into.append(StoredRecord(base + index, epoch, timestamp, bytes(batch[at:value_end])))
        at = value_end


# ---------------------------------------------------------------------------------------
# Scanning a segment's bytes (shared by recovery and by truncation)
# ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class SegmentScan:
    """What a scan of a segment's data found: the valid prefix and the index it implies."""

    next_offset: int  # one past the last record of the last valid batch
    valid_bytes: int  # length of the valid prefix
    max_timestamp: int = -1
    index: list[tuple[int, int]] = field(default_factory=list)  # (relative offset, position)
    problem: str | None = None  # why the scan stopped before the end of the data


def scan_segment(data: Buffer, base_offset: int, index_interval_bytes: int) -> SegmentScan:
    """Validate every batch of a segment, computing the index entries appends would have written."""
    scan = SegmentScan(next_offset=base_offset, valid_bytes=0)
    position = 0
    last_entry_position = 0
    while position < len(data):
        problem, size = batch_problem(data, position, scan.next_offset)
        if problem is not None:
            scan.problem = problem
            break
        header = BATCH_HEADER.unpack_from(data, position)
        if position - last_entry_position >= index_interval_bytes and position > 0:
            scan.index.append((scan.next_offset - base_offset, position))
            last_entry_position = position
        scan.max_timestamp = max(scan.max_timestamp, header[8])
        position += size
        scan.next_offset += header[12]
        scan.valid_bytes = position
    return scan


def _complete_batch_in(chunk: bytes, position: int) -> bool:
    """Whether `chunk` holds the whole batch starting at `position` (per its length field)."""
    if len(chunk) - position < LOG_OVERHEAD:
        return False
    batch_length: int = struct.unpack_from(">i", chunk, position + 8)[0]
    return len(chunk) - position >= LOG_OVERHEAD + batch_length


def read_whole_file(fd: int) -> bytes | mmap.mmap:
    """The file's bytes, memory-mapped when non-empty (mmap cannot map an empty file)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    return mmap.mmap(fd, size, access=mmap.ACCESS_READ)


def _write_all(fd: int, buffers: Sequence[Buffer], position: int) -> None:
    """Write the buffers back to back at `position` (one pwritev unless it comes up short)."""
    total = sum(len(buffer) for buffer in buffers)
    written = os.pwritev(fd, buffers, position) if len(buffers) <= 512 else 0
    if written < total:
        data = b"".join(buffers)
        while written < total:
            written += os.pwrite(fd, data[written:], position + written)


# ---------------------------------------------------------------------------------------
# LogSegment + OffsetIndex
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What a segment records about a batch it writes."""

    base_offset: int
    count: int
    max_timestamp: int
    size: int


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
        rewrite the index if it differs from the one the batches imply. True when the index
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

    def must_roll(self, last_offset: int, pending_bytes: int, batch_bytes: int, segment_bytes: int) -> bool:
        """Whether a batch ending at `last_offset` needs a new segment (an empty segment
        takes any one batch)."""
        size = self.size + pending_bytes
        return last_offset - self.base_offset > MAX_RELATIVE_OFFSET or (
            size > 0 and size + batch_bytes > segment_bytes
        )

    def append(self, batches: Sequence[BatchInfo], buffers: Sequence[Buffer]) -> None:
        """Write batches (their bytes are `buffers`, back to back) with one write each for
        data and index."""
        entries_before = len(self._positions)
        index_bytes = bytearray()
        position = self.size
        for batch in batches:
            # Same rule as `scan_segment`, so a rebuilt index equals this one.
            if position - self._last_entry_position >= self._index_interval_bytes and position > 0:
                index_bytes += INDEX_ENTRY.pack(batch.base_offset - self.base_offset, position)
                self._relative_offsets.append(batch.base_offset - self.base_offset)
                self._positions.append(position)
                self._last_entry_position = position
            position += batch.size
            self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)
        _write_all(self._log_fd, buffers, self.size)
        if index_bytes:
            os.pwrite(self._index_fd, bytes(index_bytes), entries_before * INDEX_ENTRY.size)
        self.size = position
        self.next_offset = batches[-1].base_offset + batches[-1].count
        self.dirty = True

    # -- reading ------------------------------------------------------------------------

    def _corrupt(self, position: int, problem: str) -> CorruptLogError:
        return CorruptLogError(f"{self.log_path}: byte {position}: {problem}")

    def position_of(self, offset: int) -> int:
        """The byte position of the batch holding `offset` (or the end, for `next_offset`)."""
        if offset == self.next_offset:
            return self.size
        if not self.base_offset <= offset < self.next_offset:
            raise ValueError(f"offset {offset} is not in segment {self.log_path.name}")
        slot = bisect_right(self._relative_offsets, offset - self.base_offset) - 1
        position = self._positions[slot] if slot >= 0 else 0
        # The scan covers about one index interval; read it in one call, not a call per batch.
        chunk_start, chunk = position, b""
        needed = LAST_OFFSET_DELTA_POSITION + 4  # baseOffset .. lastOffsetDelta
        while position < self.size:
            if position + needed > chunk_start + len(chunk):
                chunk_start = position
                span = max(needed, min(self._index_interval_bytes + 256, READ_CHUNK_BYTES))
                chunk = os.pread(self._log_fd, span, position)
                if len(chunk) < needed:
                    raise self._corrupt(position, "batch header past the end of the file")
            at = position - chunk_start
            base, batch_length = struct.unpack_from(">qi", chunk, at)
            (last_delta,) = LAST_OFFSET_DELTA.unpack_from(chunk, at + LAST_OFFSET_DELTA_POSITION)
            if base <= offset <= base + last_delta:
                return position
            if base > offset or batch_length < BATCH_HEADER.size - LOG_OVERHEAD:
                raise self._corrupt(position, f"offset {offset} not found (batch starts at {base})")
            position += LOG_OVERHEAD + batch_length
        raise self._corrupt(position, f"offset {offset} not found before the end of the segment")

    def read(self, offset: int, max_records: int) -> list[StoredRecord]:
        """Up to `max_records` records from `offset`, each batch CRC-checked."""
        records: list[StoredRecord] = []
        position = self.position_of(offset)
        while position < self.size and len(records) < max_records:
            chunk = self._pread_exactly(min(READ_CHUNK_BYTES, self.size - position), position)
            used = self._parse(chunk, position, offset, max_records, records)
            if used == 0:  # one batch larger than a chunk: read exactly that batch
                chunk = self._pread_exactly(self._batch_size(position), position)
                used = self._parse(chunk, position, offset, max_records, records)
            position += used
        return records

    def _pread_exactly(self, count: int, position: int) -> bytes:
        """`count` bytes at `position`, which this segment wrote: fewer means the file was cut
        under the open log, and the read must fail rather than retry the same bytes forever."""
        data = os.pread(self._log_fd, count, position)
        if len(data) < count:
            on_disk = os.fstat(self._log_fd).st_size
            raise self._corrupt(
                position + len(data),
                f"the file holds {on_disk} bytes but the log wrote {self.size} (cut while the log was open)",
            )
        return data

    def _parse(
        self, chunk: bytes, position: int, offset: int, max_records: int, records: list[StoredRecord]
    ) -> int:
        """Decode the complete batches at the start of `chunk` (read at `position`) into
        `records`, from `offset` on; returns the bytes consumed. A batch cut by the chunk's
        end is left for the next read unless the chunk reaches the segment's end, where it
        is corruption. The first batch read holds `offset`, every later one starts at the
        next offset wanted."""
        used = 0
        reaches_end = position + len(chunk) >= self.size
        while used < len(chunk) and len(records) < max_records:
            if not reaches_end and not _complete_batch_in(chunk, used):
                break
            wanted = offset + len(records)
            problem, size = batch_problem(chunk, used, None)
            if problem is None:
                (base,) = BASE_OFFSET.unpack_from(chunk, used)
                (last_delta,) = LAST_OFFSET_DELTA.unpack_from(chunk, used + LAST_OFFSET_DELTA_POSITION)
                if not (base == wanted or (not records and base <= wanted <= base + last_delta)):
                    problem = f"batch holds offset {base}, expected {wanted}"
            if problem is not None:
                raise self._corrupt(position + used, problem)
            decode_records(chunk, used, wanted, max_records - len(records), records)
            used += size
        return used

    def _batch_size(self, position: int) -> int:
        header = os.pread(self._log_fd, LOG_OVERHEAD, position)
        if len(header) < LOG_OVERHEAD:
            raise self._corrupt(position, "batch header past the end of the file")
        batch_length: int = struct.unpack(">qi", header)[1]
        if not BATCH_HEADER.size <= LOG_OVERHEAD + batch_length <= MAX_BATCH_BYTES:
            raise self._corrupt(position, f"bad batch length {batch_length}")
        return LOG_OVERHEAD + batch_length

    # -- truncation, durability, deletion -------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove offsets >= `offset`: cut the data file (rewriting the kept prefix of a batch
        cut in the middle as a new batch), then rebuild state and index tail."""
        position = self.position_of(offset)
        if position < self.size:
            batch = self._pread_exactly(self._batch_size(position), position)
            problem, _ = batch_problem(batch, 0, None)
            if problem is not None:
                raise self._corrupt(position, problem)
            base, _, epoch, _, _, _, _, _, timestamp, *_ = BATCH_HEADER.unpack_from(batch)
            if base < offset:
                kept: list[StoredRecord] = []
                decode_records(batch, 0, base, offset - base, kept)
                prefix = encode_batch(base, epoch, timestamp, [record.value for record in kept])
                _write_all(self._log_fd, [prefix], position)
                position += len(prefix)
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
        self._check_nothing_flushed_is_missing()
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

    def _check_nothing_flushed_is_missing(self) -> None:
        """Refuse to open when whole batches of flushed records are gone: the last segment cut
        at a batch boundary or emptied, the last segments or the first ones deleted. Every
        batch left is valid then, so the scan finds nothing; but appends only move the log
        end up, and truncation and retention move their checkpoints first, so a log ending
        below the recovery point (or starting above the log start offset) lost records that
        `flush` promised were on disk."""
        first, last = self._segments[0], self._segments[-1]
        start, end, flushed = self._log_start_offset, self.log_end_offset, self._recovery_point
        if start < first.base_offset and start < flushed:
            raise CorruptLogError(
                f"{first.log_path}: byte 0: the log starts at offset {first.base_offset} but the log start "
                f"offset checkpoint is {start} and the recovery point {flushed}: flushed records "
                f"{start}..{min(first.base_offset, flushed) - 1} are missing (the segments before it were "
                "deleted)"
            )
        if max(end, start) < flushed:
            raise CorruptLogError(
                f"{last.log_path}: byte {last.size}: the log ends at offset {end}, below the recovery point "
                f"{flushed}: flushed records {max(end, start)}..{flushed - 1} are missing (the segment was "
                "cut or emptied, or the segments after it were deleted)"
            )

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
        """Append records at the log end as one batch per leader epoch (more when a segment
        rolls); returns the offset of the first one."""
        return self.append_payloads(
            [(record.epoch, encode_value(record.value)) for record in records], timestamp_ms
        )

    def append_payloads(self, payloads: Sequence[tuple[int, bytes]], timestamp_ms: int | None = None) -> int:
        """Append (leader epoch, value bytes) pairs; returns the offset of the first one.

        The records go into batches: one per run of equal epochs, cut where a segment rolls
        (a batch never spans segments, and an empty segment takes any one record)."""
        timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        first = self.log_end_offset
        if not payloads:
            return first
        epochs = list(map(itemgetter(0), payloads))
        epoch = epochs[0]
        if epoch >= 0 and epochs.count(epoch) == len(epochs):
            # The common case, one epoch: one batch if it fits, built by C-level passes only.
            values = list(map(itemgetter(1), payloads))
            joined = b"".join(values)
            size = batch_size(len(joined), len(values))
            segment = self._segments[-1]
            fits = (size <= self.config.segment_bytes or len(values) == 1) and not segment.must_roll(
                first + len(values) - 1, 0, size, self.config.segment_bytes
            )
            if size <= MAX_BATCH_BYTES and fits:
                self._assign_epochs([(first, epoch)])
                batch = _encode_batch(first, epoch, timestamp, values, joined)
                segment.append([BatchInfo(first, len(values), timestamp, len(batch))], [batch])
                return first
        if min(epochs) < 0:
            raise ValueError(f"leader epoch must not be negative, got {min(epochs)}")
        largest = max(len(value) for _, value in payloads)
        if batch_size(largest, 1) > MAX_BATCH_BYTES:
            raise ValueError(f"a value of {largest} bytes exceeds the {MAX_BATCH_BYTES}-byte batch limit")
        self._append_split(first, payloads, timestamp)
        return first

    def _append_split(self, first: int, payloads: Sequence[tuple[int, bytes]], timestamp: int) -> None:
        """`append_payloads` when the records need several batches: plan the cuts, then write."""
        groups: list[tuple[bool, int, int, list[bytes]]] = []  # (roll before?, base, epoch, values)
        segment_base, segment_used = self._segments[-1].base_offset, self._segments[-1].size
        open_epoch, open_bytes = -1, 0  # the group being filled (open_bytes 0: none)
        limit = self.config.segment_bytes
        for offset, (epoch, value) in enumerate(payloads, start=first):
            grown = open_bytes + RECORD_LENGTH_BYTES + len(value)
            if (
                open_bytes
                and epoch == open_epoch
                and grown <= MAX_BATCH_BYTES
                and segment_used + grown <= limit
                and offset - segment_base <= MAX_RELATIVE_OFFSET
            ):
                groups[-1][3].append(value)
                open_bytes = grown
                continue
            segment_used += open_bytes
            open_epoch, open_bytes = epoch, batch_size(len(value), 1)
            roll = (segment_used > 0 and segment_used + open_bytes > limit) or (
                offset - segment_base > MAX_RELATIVE_OFFSET
            )
            if roll:
                segment_base, segment_used = offset, 0
            groups.append((roll, offset, epoch, [value]))
        self._assign_epochs([(base, epoch) for _, base, epoch, _ in groups])
        pending: list[BatchInfo] = []
        buffers: list[bytes] = []
        for roll, base, epoch, values in groups:
            if roll:
                if pending:
                    self._segments[-1].append(pending, buffers)
                    pending, buffers = [], []
                self._add_segment(base)
            batch = encode_batch(base, epoch, timestamp, values)
            pending.append(BatchInfo(base, len(values), timestamp, len(batch)))
            buffers.append(batch)
        if pending:
            self._segments[-1].append(pending, buffers)

    def append_batch(self, batch: Buffer) -> int:
        """Append a producer-encoded record batch (see `encode_batch`); returns its first offset.

        The batch is validated once (length, magic, CRC, structure: `InvalidBatchError`
        otherwise, before anything is written), its baseOffset is set to the log end in
        place (outside the CRC, so the CRC is not recomputed: `LogValidator`'s in-place
        offset assignment), and it is written as it is: O(1) Python work per batch. Its
        records get its leader epoch and timestamp."""
        view = memoryview(batch).cast("B")
        problem, size = batch_problem(view, 0, None)
        if problem is None and size != len(view):
            problem = f"batchLength says {size} bytes, {len(view)} given"
        if problem is not None:
            raise InvalidBatchError(f"invalid record batch: {problem}")
        _, _, epoch, _, _, _, _, _, timestamp, _, _, _, count = BATCH_HEADER.unpack_from(view)
        first = self.log_end_offset
        self._assign_epochs([(first, epoch)])
        if self._segments[-1].must_roll(first + count - 1, 0, size, self.config.segment_bytes):
            self._add_segment(first)
        self._segments[-1].append(
            [BatchInfo(first, count, timestamp, size)], [BASE_OFFSET.pack(first), view[8:]]
        )
        return first

    def _assign_epochs(self, runs: Sequence[tuple[int, int]]) -> None:
        """Record each new epoch's start offset, given (first offset, epoch) of each batch; the
        checkpoint is written before the records (as `UnifiedLog.append` assigns before
        appending), so after a crash the cache on disk covers every record and open() only
        trims it to the recovered log end."""
        changed = False
        for offset, epoch in runs:
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
        """Stored records from `offset` (clamped up to the log start) to at most `max_records`."""
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
        # A recovery point above the new end would make a later torn tail (or a crash during
        # the cut below) look like lost flushed data, so it is lowered on disk first.
        self._recovery_point = min(self._recovery_point, end)
        self._checkpoints.write_offset(RECOVERY_POINT_CHECKPOINT, self._recovery_point)
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
