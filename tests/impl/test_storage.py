"""The segmented log: layout, sparse index, truncation, retention, DeleteRecords, recovery."""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl import storage
from impl.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    CheckpointError,
)
from impl.epoch_cache import LeaderEpochCache
from impl.storage import INDEX_ENTRY, CorruptLogError, LogConfig, SegmentedLog, segment_file_name
from spec import log as spec_log
from spec.types import EpochEntry, Record
from tests.impl.crash_child import CONFIG as CHILD_CONFIG
from tests.impl.crash_child import value_for

SMALL = LogConfig(segment_bytes=200, index_interval_bytes=64)  # ~6 frames a segment, sparse index


def value_of(offset: int) -> int:
    """A distinctive value per offset, of varying byte length."""
    return int((offset * 7919) ** (1 + offset % 3) * (-1) ** offset)


def records(first: int, count: int, epoch: int = 1) -> list[Record]:
    return [Record(epoch, value_of(offset)) for offset in range(first, first + count)]


def filled(directory: Path, count: int, config: LogConfig = SMALL, per_batch: int = 3) -> SegmentedLog:
    """A log holding records(0, count), appended `per_batch` records (one batch) at a time."""
    log = storage.open(directory, config)
    for first in range(0, count, per_batch):
        log.append(records(first, min(per_batch, count - first)))
    return log


def index_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [INDEX_ENTRY.unpack_from(data, at) for at in range(0, len(data), INDEX_ENTRY.size)]


def data_files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*.{suffix}"))


# ---------------------------------------------------------------------------------------
# Layout, append, read, lookup
# ---------------------------------------------------------------------------------------


def test_segments_roll_and_are_named_by_base_offset(tmp_path: Path) -> None:
    log = filled(tmp_path, 60)
    bases = log.segment_base_offsets
    assert len(bases) > 5 and bases[0] == 0
    assert [path.name for path in data_files(tmp_path, "log")] == [segment_file_name(b, "log") for b in bases]
    assert [path.name for path in data_files(tmp_path, "index")] == [
        segment_file_name(b, "index") for b in bases
    ]
    assert segment_file_name(42, "log") == "00000000000000000042.log"
    assert all(path.stat().st_size <= SMALL.segment_bytes for path in data_files(tmp_path, "log"))
    log.close()


def test_append_returns_first_offset_and_read_returns_every_record(tmp_path: Path) -> None:
    log = storage.open(tmp_path, SMALL)
    assert log.append(records(0, 25)) == 0
    assert log.append(records(25, 25, epoch=3)) == 25
    assert log.log_end_offset == 50
    written = records(0, 25) + records(25, 25, epoch=3)
    assert log.read(0) == written
    for offset in range(50):
        for limit in (1, 4, 50):
            assert log.read(offset, limit) == written[offset : offset + limit]
        assert log.record_at(offset) == written[offset]
    assert log.read(50) == [] and log.record_at(50) is None
    assert log.epoch_cache == (EpochEntry(1, 0), EpochEntry(3, 25))
    log.close()
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.read(0) == written and reopened.recovery_actions == []
    reopened.close()


def test_arbitrary_payloads_and_frames_larger_than_a_read_chunk(tmp_path: Path) -> None:
    log = storage.open(tmp_path, LogConfig(segment_bytes=1 << 20, index_interval_bytes=1000))
    payloads = [b"", b"\x00\xff" * 3, os.urandom(200_000), b"tail"]
    log.append_payloads([(2, payload) for payload in payloads], timestamp_ms=123)
    stored = log.read_payloads(0)
    assert [item.value for item in stored] == payloads
    assert {(item.epoch, item.timestamp_ms) for item in stored} == {(2, 123)}
    assert [item.value for item in log.read_payloads(2, 2)] == payloads[2:]
    log.close()


def test_bad_appends_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    log = filled(tmp_path, 3)
    with pytest.raises(ValueError, match="must not be negative"):
        log.append([Record(1, 5), Record(-1, 6)])
    with pytest.raises(ValueError, match="batch limit"):
        log.append_payloads([(1, b"x" * storage.MAX_BATCH_BYTES)])
    assert log.log_end_offset == 3 and log.read(0) == records(0, 3)
    log.close()


def test_index_is_sparse_and_lookups_stay_exact(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=4000, index_interval_bytes=100)
    log = filled(tmp_path, 300, config)
    for path, base in zip(data_files(tmp_path, "index"), log.segment_base_offsets, strict=True):
        entries = index_entries(path)
        positions = [0] + [position for _, position in entries]
        assert all(later - earlier >= 100 for earlier, later in pairwise(positions))
        # Sparse: far fewer entries than records, yet at most one per interval (plus one frame).
        held = log.read(base, 10_000)
        assert len(entries) < len(held) // 2
        assert all(later > earlier for (earlier, _), (later, _) in pairwise(entries))
    for offset in range(300):
        assert log.read(offset, 1) == [Record(1, value_of(offset))]
    log.close()


def test_index_interval_zero_indexes_every_batch_but_the_first(tmp_path: Path) -> None:
    log = filled(tmp_path, 10, LogConfig(segment_bytes=10_000, index_interval_bytes=0), per_batch=1)
    assert [relative for relative, _ in index_entries(tmp_path / segment_file_name(0, "index"))] == list(
        range(1, 10)
    )
    log.close()


# ---------------------------------------------------------------------------------------
# Truncation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [0, 1, 5, 6, 17, 29, 30, 45])
def test_truncate_to_removes_later_segments_and_cuts_the_active_one(tmp_path: Path, cut: int) -> None:
    log = filled(tmp_path, 30)
    log.update_high_watermark(30)
    log.truncate_to(cut)
    end = min(cut, 30)
    assert log.log_end_offset == end and log.high_watermark == end
    assert log.read(0) == records(0, end)
    assert all(base <= end for base in log.segment_base_offsets)
    log.append(records(end, 20, epoch=2))
    log.close()
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.recovery_actions == []  # the index tail was rebuilt by truncate_to itself
    assert reopened.read(0) == records(0, end) + records(end, 20, epoch=2)
    reopened.close()


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = filled(tmp_path, 30)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert log.epoch_cache == () and log.segment_base_offsets == (100,)
    assert log.append(records(100, 3)) == 100
    log.close()
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.read(0) == records(100, 3) and reopened.log_start_offset == 100
    reopened.close()


def test_an_interrupted_truncate_fully_is_completed_on_open(tmp_path: Path) -> None:
    log = filled(tmp_path, 30)
    log.flush()
    log.close(flush=False)
    (tmp_path / storage.TRUNCATE_FULLY_MARKER).write_text("7\n")  # crashed right after the marker
    reopened = storage.open(tmp_path, SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (7, 7)
    assert reopened.read(0) == []
    reopened.close()


# ---------------------------------------------------------------------------------------
# Retention and DeleteRecords
# ---------------------------------------------------------------------------------------


def test_retention_by_size_deletes_oldest_whole_segments_below_the_high_watermark(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=200, index_interval_bytes=64, retention_bytes=500, retention_ms=-1)
    log = filled(tmp_path, 60, config)
    segments_before = log.segment_base_offsets
    assert log.delete_old_segments() == 0  # HW 0: nothing is committed, nothing may go
    log.update_high_watermark(60)
    deleted = log.delete_old_segments()
    assert deleted > 0 and log.size_in_bytes <= 500 + 200
    assert log.log_start_offset == log.segment_base_offsets[0] == segments_before[deleted]
    assert log.read(0) == records(log.log_start_offset, 60 - log.log_start_offset)
    assert not (tmp_path / segment_file_name(0, "log")).exists()
    log.close()
    reopened = storage.open(tmp_path, config)
    assert reopened.log_start_offset == segments_before[deleted]
    reopened.close()


def test_retention_by_time_uses_the_largest_timestamp_and_never_the_active_segment(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=200, index_interval_bytes=64, retention_ms=1000)
    log = storage.open(tmp_path, config)
    log.append(records(0, 20), timestamp_ms=10_000)
    log.append(records(20, 20), timestamp_ms=20_000)
    log.update_high_watermark(40)
    holding_20 = max(base for base in log.segment_base_offsets if base <= 20)
    assert 0 < holding_20 < 20
    assert log.delete_old_segments(now_ms=10_500) == 0
    log.delete_old_segments(now_ms=11_500)
    assert log.log_start_offset == holding_20  # the segment holding 20 has a record stamped 20 000
    assert log.delete_old_segments(now_ms=10**9) > 0
    assert log.segment_base_offsets == (log.segment_base_offsets[-1],)  # only the active one remains
    assert log.log_end_offset == 40
    log.close()


def test_delete_records_before_is_capped_at_the_high_watermark(tmp_path: Path) -> None:
    log = filled(tmp_path, 30)
    log.update_high_watermark(20)
    assert log.delete_records_before(25) == 20
    assert log.read(0) == records(20, 10) and log.record_at(19) is None
    assert log.segment_base_offsets[0] <= 20 < log.segment_base_offsets[0] + 6
    assert log.delete_records_before(10) == 20  # never moves backwards
    log.close()
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.log_start_offset == 20 and reopened.read(0) == records(20, 10)
    reopened.close()


# ---------------------------------------------------------------------------------------
# Behaves like the spec's replica log
# ---------------------------------------------------------------------------------------

operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 4), st.integers(1, 8)),
        st.tuples(st.just("truncate"), st.integers(0, 60)),
        st.tuples(st.just("truncate_fully"), st.integers(0, 60)),
        st.tuples(st.just("hw"), st.integers(0, 60)),
        st.tuples(st.just("delete_records"), st.integers(0, 60)),
        st.tuples(st.just("retention"), st.integers(0, 1)),
        st.tuples(st.just("reopen"), st.booleans()),
        st.tuples(st.just("elect"), st.integers(0, 5)),
    ),
    max_size=25,
)


@settings(
    max_examples=int(os.environ.get("IMPL_SPEC_EXAMPLES", "200")),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations)
def test_matches_the_spec_replica_log(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[Any, ...]]
) -> None:
    directory = tmp_path_factory.mktemp("log")
    config = LogConfig(segment_bytes=120, index_interval_bytes=40, retention_bytes=300, retention_ms=-1)
    log = storage.open(directory, config)
    model = spec_log.EMPTY_LOG
    next_value = 0
    for op in ops:
        if op[0] == "append":
            batch = tuple(Record(op[1], next_value + i) for i in range(op[2]))
            next_value += op[2]
            if op[2] % 2:  # the record-level API, or a producer-encoded batch
                assert log.append(batch) == model.log_end_offset
            else:
                values = [storage.encode_value(record.value) for record in batch]
                assert log.append_batch(storage.encode_batch(0, op[1], 0, values)) == model.log_end_offset
            model = spec_log.append(model, batch)
        elif op[0] == "truncate":
            log.truncate_to(op[1])
            model = spec_log.truncate_to(model, op[1])
        elif op[0] == "truncate_fully":
            log.truncate_fully_and_start_at(op[1])
            model = spec_log.truncate_fully_and_start_at(model, op[1])
        elif op[0] == "hw":
            log.update_high_watermark(op[1])
            model = spec_log.with_high_watermark(model, op[1])
        elif op[0] == "delete_records":
            log.delete_records_before(op[1])
            model = spec_log.advance_log_start_offset(model, op[1])
        elif op[0] == "retention":
            log.delete_old_segments(now_ms=0)
            model = spec_log.advance_log_start_offset(model, log.log_start_offset)
        elif op[0] == "elect":  # a new leader records its epoch at its log end (KAFKA-7415)
            log.assign_epoch(op[1], log.log_end_offset)
            cache = spec_log.assign_epoch(model.epoch_cache, op[1], model.log_end_offset)
            model = dataclasses.replace(model, epoch_cache=cache)
        else:
            log.close(flush=op[1])
            log = storage.open(directory, config)
            if not op[1]:  # crash without flush: only what the spec's recovery keeps is compared
                model = spec_log.recover_after_crash(model, log.log_end_offset)
        assert (log.log_start_offset, log.log_end_offset) == (model.log_start_offset, model.log_end_offset)
        assert tuple(log.read(0)) == model.records
        assert log.high_watermark == model.high_watermark or op[0] == "reopen"
        assert log.epoch_cache == model.epoch_cache
        model = spec_log.with_high_watermark(model, log.high_watermark)
    log.close()


# ---------------------------------------------------------------------------------------
# Recovery
# ---------------------------------------------------------------------------------------


def crashed_log(directory: Path, flushed: int, unflushed: int) -> tuple[Path, int]:
    """A log with `flushed` records flushed and `unflushed` more written in batches of two;
    returns the last segment's data file and the byte position where the last batch starts."""
    log = filled(directory, flushed)
    log.flush()
    for first in range(flushed, flushed + unflushed, 2):
        log.append(records(first, min(2, flushed + unflushed - first)))
    last = directory / segment_file_name(log.segment_base_offsets[-1], "log")
    start = log._segments[-1].position_of(flushed + unflushed - 1)
    log.close(flush=False)
    return last, start


def test_a_tail_torn_at_any_byte_recovers_to_the_last_complete_batch(tmp_path: Path) -> None:
    last, start = crashed_log(tmp_path / "original", 20, 3)
    original = last.read_bytes()
    for cut in range(start, len(original)):
        directory = tmp_path / f"cut{cut}"
        directory.mkdir()
        for path in (tmp_path / "original").iterdir():
            (directory / path.name).write_bytes(path.read_bytes())
        (directory / last.name).write_bytes(original[:cut])
        log = storage.open(directory, SMALL)
        assert log.log_end_offset == 22 and log.read(0) == records(0, 22)
        assert log.append(records(22, 1)) == 22
        log.close()


def test_a_flipped_bit_anywhere_in_the_last_batch_is_caught(tmp_path: Path) -> None:
    last, start = crashed_log(tmp_path / "original", 20, 3)
    original = last.read_bytes()
    for position in range(start, len(original)):
        for bit in (0, 7):
            directory = tmp_path / f"flip{position}-{bit}"
            directory.mkdir()
            for path in (tmp_path / "original").iterdir():
                (directory / path.name).write_bytes(path.read_bytes())
            damaged = bytearray(original)
            damaged[position] ^= 1 << bit
            (directory / last.name).write_bytes(bytes(damaged))
            log = storage.open(directory, SMALL)
            assert log.read(0) == records(0, 22)
            assert any("truncated" in action for action in log.recovery_actions)
            log.close()


def test_corruption_below_the_recovery_point_raises_with_file_and_position(tmp_path: Path) -> None:
    log = filled(tmp_path, 30)
    log.close()
    path = tmp_path / segment_file_name(6, "log")
    damaged = bytearray(path.read_bytes())
    damaged[40] ^= 0x10
    path.write_bytes(bytes(damaged))
    with pytest.raises(
        CorruptLogError, match=rf"{path}: byte \d+: CRC mismatch.*below the recovery point 30"
    ):
        storage.open(tmp_path, SMALL)


def test_a_missing_middle_segment_below_the_recovery_point_raises(tmp_path: Path) -> None:
    filled(tmp_path, 30).close()
    (tmp_path / segment_file_name(6, "log")).unlink()
    with pytest.raises(CorruptLogError, match="segment starts at 12 but the previous segment ends at 6"):
        storage.open(tmp_path, SMALL)


def test_a_record_damaged_after_open_is_refused_on_read(tmp_path: Path) -> None:
    log = filled(tmp_path, 30)
    path = tmp_path / segment_file_name(12, "log")
    with open(path, "r+b") as handle:
        handle.seek(35)
        byte = handle.read(1)
        handle.seek(35)
        handle.write(bytes([byte[0] ^ 1]))
    assert log.read(0, 12) == records(0, 12)
    with pytest.raises(CorruptLogError, match=rf"{path}: byte \d+: CRC mismatch"):
        log.read(12)
    log.close(flush=False)


@pytest.mark.parametrize(
    "damage",
    [
        "delete",
        "empty",
        "garbage",
        "decreasing",
        "past_end",
        "wrong_position",
        "extra_entry",
    ],
)
def test_a_bad_index_is_rebuilt_and_lookups_stay_correct(tmp_path: Path, damage: str) -> None:
    config = LogConfig(segment_bytes=4000, index_interval_bytes=60)
    filled(tmp_path, 100, config).close()
    index = tmp_path / segment_file_name(0, "index")
    good = index.read_bytes()
    entries = index_entries(index)
    bad = {
        "delete": None,
        "empty": b"",
        "garbage": os.urandom(len(good) + 3),
        "decreasing": b"".join(INDEX_ENTRY.pack(*entry) for entry in reversed(entries)),
        "past_end": good + INDEX_ENTRY.pack(999, 10**6),
        "wrong_position": INDEX_ENTRY.pack(entries[0][0], entries[0][1] + 1) + good[8:],
        "extra_entry": INDEX_ENTRY.pack(1, 29) + good,
    }[damage]
    if bad is None:
        index.unlink()
    else:
        index.write_bytes(bad)
    log = storage.open(tmp_path, config)
    assert any("rebuilt index" in action for action in log.recovery_actions)
    assert index.read_bytes() == good
    for offset in range(100):
        assert log.read(offset, 1) == [Record(1, value_of(offset))]
    log.close()


def test_orphan_index_and_leftover_temporaries_are_removed(tmp_path: Path) -> None:
    filled(tmp_path, 10).close()
    (tmp_path / segment_file_name(500, "index")).write_bytes(b"x" * 8)
    (tmp_path / "replication-offset-checkpoint.tmp").write_text("half")
    log = storage.open(tmp_path, SMALL)
    assert not (tmp_path / segment_file_name(500, "index")).exists()
    assert not list(tmp_path.glob("*.tmp"))
    assert log.read(0) == records(0, 10)
    log.close()


def test_epochs_of_unflushed_records_are_replayed_into_the_cache(tmp_path: Path) -> None:
    log = filled(tmp_path, 10)
    log.flush()
    log.append(records(10, 5, epoch=4))
    log.append(records(15, 5, epoch=6))
    log.close(flush=False)  # the epoch checkpoint only knows epoch 1
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.epoch_cache == (EpochEntry(1, 0), EpochEntry(4, 10), EpochEntry(6, 15))
    assert reopened.end_offset_for_epoch(4) == (4, 15)
    reopened.close()


# ---------------------------------------------------------------------------------------
# Random damage: recovery serves only what was written, or refuses
# ---------------------------------------------------------------------------------------

damages = st.lists(
    st.tuples(
        st.sampled_from(["truncate", "flip"]),
        st.sampled_from(["log", "index"]),
        st.integers(0, 100),  # which file (modulo the count)
        st.floats(0, 1),  # where in the file
        st.integers(0, 7),  # which bit
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 40), damages)
def test_random_damage_is_repaired_or_refused_never_served(
    tmp_path_factory: pytest.TempPathFactory, flushed: int, damage: list[tuple[str, str, int, float, int]]
) -> None:
    directory = tmp_path_factory.mktemp("damaged")
    total = 40
    log = filled(directory, flushed)
    log.flush()
    log.append(records(flushed, total - flushed, epoch=2))
    log.close(flush=False)
    for kind, suffix, which, where, bit in damage:
        files = data_files(directory, suffix)
        path = files[which % len(files)]
        data = bytearray(path.read_bytes())
        position = int(where * len(data))
        if kind == "truncate":
            path.write_bytes(bytes(data[:position]))
        elif data:
            data[min(position, len(data) - 1)] ^= 1 << bit
            path.write_bytes(bytes(data))
    written = records(0, flushed) + records(flushed, total - flushed, epoch=2)
    try:
        recovered = storage.open(directory, SMALL)
    except CorruptLogError:
        return
    served = recovered.read(0)
    assert served == written[: len(served)]
    assert recovered.log_end_offset >= flushed  # nothing flushed was lost
    if all(target == "index" for _, target, *_ in damage):
        assert served == written  # an index is only a hint: rebuilding it loses nothing
    recovered.close()


def test_values_round_trip() -> None:
    assert [storage.decode_value(storage.encode_value(v)) for v in (0, -1, 127, 128, -129, 10**30)] == [
        0,
        -1,
        127,
        128,
        -129,
        10**30,
    ]


# ---------------------------------------------------------------------------------------
# Record batches (message format v2 layout)
# ---------------------------------------------------------------------------------------


def batches_in(path: Path) -> list[tuple[int, int, int, int]]:
    """(position, base offset, leader epoch, record count) of every batch in a data file."""
    data = path.read_bytes()
    found = []
    position = 0
    while position < len(data):
        header = storage.BATCH_HEADER.unpack_from(data, position)
        found.append((position, header[0], header[2], header[12]))
        position += storage.LOG_OVERHEAD + header[1]
    return found


def recrc(batch: bytearray) -> bytearray:
    """The batch with its CRC recomputed (to build structurally bad batches with a good CRC)."""
    struct.pack_into(">I", batch, 17, storage.batch_crc(batch, 0, len(batch)))
    return batch


def test_batch_layout_matches_the_documented_v2_header() -> None:
    batch = storage.encode_batch(5, 3, 99, [b"ab", b"", b"xyz"])
    assert storage.BATCH_HEADER.size == 61 and len(batch) == 61 + 3 * 4 + 5
    (base, length, epoch, magic, crc, attributes, last_delta, base_ts, max_ts, pid, pepoch, seq, count) = (
        struct.unpack_from(">qiibIhiqqqhii", batch)
    )
    assert (base, length, epoch, magic, attributes, last_delta, base_ts, max_ts, count) == (
        5,
        len(batch) - 12,
        3,
        2,
        0,
        2,
        99,
        99,
        3,
    )
    assert (pid, pepoch, seq) == (-1, -1, -1)
    assert struct.unpack_from(">III", batch, 61) == (2, 0, 3) and batch[73:] == b"abxyz"
    # The CRC covers partitionLeaderEpoch, then attributes to the end; not baseOffset.
    assert crc == zlib.crc32(batch[21:], zlib.crc32(batch[12:16]))
    moved = struct.pack(">q", 10**12) + batch[8:]
    assert storage.batch_problem(moved, 0, None) == (None, len(batch))


def test_append_batch_patches_the_base_offset_in_place_and_keeps_the_crc(tmp_path: Path) -> None:
    log = filled(tmp_path, 4, LogConfig())
    produced = storage.encode_batch(0, 2, 777, [b"one", b"two", b""])  # the producer's offsets: 0..2
    assert log.append_batch(produced) == 4 and log.log_end_offset == 7
    assert log.append_batch(bytearray(produced)) == 7 and log.log_end_offset == 10
    stored = (tmp_path / segment_file_name(0, "log")).read_bytes()
    position = batches_in(tmp_path / segment_file_name(0, "log"))[-2][0]
    on_disk = stored[position : position + len(produced)]
    assert on_disk[:8] == struct.pack(">q", 4) and on_disk[8:] == produced[8:]  # same CRC field
    assert [(r.offset, r.epoch, r.timestamp_ms, r.value) for r in log.read_payloads(4, 3)] == [
        (4, 2, 777, b"one"),
        (5, 2, 777, b"two"),
        (6, 2, 777, b""),
    ]
    assert log.epoch_cache == (EpochEntry(1, 0), EpochEntry(2, 4))
    assert log.read(0, 4) == records(0, 4) and log.record_at(8) == Record(2, storage.decode_value(b"two"))
    log.close()
    reopened = storage.open(tmp_path, LogConfig())
    assert reopened.recovery_actions == [] and reopened.log_end_offset == 10
    assert [r.value for r in reopened.read_payloads(7)] == [b"one", b"two", b""]
    reopened.close()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("flip_value", "CRC mismatch"),
        ("flip_epoch", "CRC mismatch"),
        ("magic", "bad magic 1"),
        ("extra_byte", "batchLength says"),
        ("torn", "torn batch"),
        ("short_header", "torn batch header"),
        ("count", "record count 4 does not match lastOffsetDelta 2"),
        ("lengths", "record lengths do not add up"),
        ("timestamps", "baseTimestamp 9 differs from maxTimestamp 10"),
        ("attributes", "unsupported attributes"),
        ("negative_epoch", "negative leader epoch"),
    ],
)
def test_append_batch_refuses_a_bad_batch_before_writing_anything(
    tmp_path: Path, damage: str, message: str
) -> None:
    log = filled(tmp_path, 5)
    size, epochs = log.size_in_bytes, log.epoch_cache
    batch = bytearray(storage.encode_batch(0, 1, 9, [b"a", b"bc", b"def"]))
    if damage == "flip_value":
        batch[-1] ^= 0x04
    elif damage == "flip_epoch":
        batch[15] ^= 0x01
    elif damage == "magic":
        batch[16] = 1
    elif damage == "extra_byte":
        batch += b"\x00"
    elif damage == "torn":
        batch = batch[:-2]
    elif damage == "short_header":
        batch = batch[:40]
    elif damage == "count":
        batch = recrc(batch[:57] + struct.pack(">i", 4) + batch[61:])
    elif damage == "lengths":
        batch = recrc(batch[:61] + struct.pack(">I", 2) + batch[65:])
    elif damage == "timestamps":
        batch = recrc(batch[:35] + struct.pack(">q", 10) + batch[43:])
    elif damage == "attributes":
        batch = recrc(batch[:21] + struct.pack(">h", 1) + batch[23:])
    else:
        batch = recrc(batch[:12] + struct.pack(">i", -3) + batch[16:])
    with pytest.raises(storage.InvalidBatchError, match=f"invalid record batch: {message}"):
        log.append_batch(batch)
    assert (log.size_in_bytes, log.log_end_offset, log.epoch_cache) == (size, 5, epochs)
    assert log.read(0) == records(0, 5)
    log.close()


def test_append_batch_rolls_segments_and_the_index_points_at_batch_starts(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1000, index_interval_bytes=150)
    log = storage.open(tmp_path, config)
    values = [bytes([n]) * (n % 17) for n in range(200)]
    for first in range(0, 200, 5):
        assert log.append_batch(storage.encode_batch(0, first // 50, 1, values[first : first + 5])) == first
    assert len(log.segment_base_offsets) > 3
    for base in log.segment_base_offsets:
        starts = {
            position: batch_base for position, batch_base, _, _ in batches_in(tmp_path / f"{base:020d}.log")
        }
        entries = index_entries(tmp_path / segment_file_name(base, "index"))
        assert entries and all(starts[position] == base + relative for relative, position in entries)
        assert (tmp_path / f"{base:020d}.log").stat().st_size <= 1000
    for offset in range(200):
        assert log.read_payloads(offset, 1)[0].value == values[offset]
    assert [r.value for r in log.read_payloads(13)] == values[13:]
    log.close()
    reopened = storage.open(tmp_path, config)
    assert reopened.recovery_actions == [] and [r.value for r in reopened.read_payloads(0)] == values
    reopened.close()


def test_one_batch_per_call_and_per_leader_epoch(tmp_path: Path) -> None:
    log = storage.open(tmp_path, LogConfig())
    log.append([Record(1, 10), Record(1, 11)])
    log.append([Record(1, 12), Record(2, 13), Record(2, 14), Record(3, 15)])
    log.append_payloads([])
    assert [
        (base, epoch, count) for _, base, epoch, count in batches_in(tmp_path / segment_file_name(0, "log"))
    ] == [
        (0, 1, 2),
        (2, 1, 1),
        (3, 2, 2),
        (5, 3, 1),
    ]
    assert log.read(0) == [
        Record(1, 10),
        Record(1, 11),
        Record(1, 12),
        Record(2, 13),
        Record(2, 14),
        Record(3, 15),
    ]
    assert log.epoch_cache == (EpochEntry(1, 0), EpochEntry(2, 3), EpochEntry(3, 5))
    log.close()


@pytest.mark.parametrize("cut", [1, 4, 9, 10, 11, 17, 25, 29])
def test_truncation_inside_a_batch_keeps_exactly_the_records_below(tmp_path: Path, cut: int) -> None:
    config = LogConfig(segment_bytes=10_000, index_interval_bytes=100)
    log = filled(tmp_path, 30, config, per_batch=10)
    log.flush()
    log.truncate_to(cut)
    assert log.log_end_offset == cut and log.read(0) == records(0, cut)
    batches = batches_in(tmp_path / segment_file_name(0, "log"))
    assert [(base, count) for _, base, _, count in batches] == [
        (base, min(10, cut - base)) for base in range(0, cut, 10)
    ]
    assert log.append(records(cut, 3, epoch=2)) == cut
    log.close(flush=False)  # a crash: the rewritten batch was fsynced by truncate_to
    reopened = storage.open(tmp_path, config)
    assert reopened.recovery_actions == []  # the rewritten prefix batch is valid on disk
    assert reopened.read(0) == records(0, cut) + records(cut, 3, epoch=2)
    reopened.close()


def test_a_torn_multi_record_batch_is_dropped_whole(tmp_path: Path) -> None:
    log = filled(tmp_path, 5, LogConfig(), per_batch=5)
    log.flush()
    log.append(records(5, 8, epoch=2))
    log.close(flush=False)
    path = tmp_path / segment_file_name(0, "log")
    data = path.read_bytes()
    (position, base, _, count) = batches_in(path)[-1]
    assert (base, count) == (5, 8)
    for cut in (position + 1, position + 61, position + 70, len(data) - 1):
        path.write_bytes(data[:cut])
        reopened = storage.open(tmp_path, LogConfig())
        assert reopened.log_end_offset == 5 and reopened.read(0) == records(0, 5)
        assert len(reopened.recovery_actions) == 1
        assert reopened.recovery_actions[0].startswith(f"truncated {path.name} at byte {position} (")
        assert path.stat().st_size == position
        assert reopened.epoch_cache == (EpochEntry(1, 0),)  # epoch 2 began in the lost batch
        reopened.close()


# ---------------------------------------------------------------------------------------
# Crash safety: SIGKILL a writer at random moments
# ---------------------------------------------------------------------------------------


@pytest.mark.slow  # ~7 s alone: 20-30 child interpreters, each killed after up to 200 ms
def test_flushed_records_survive_sigkill(tmp_path: Path) -> None:
    rng = random.Random(20261122)
    repository = Path(__file__).resolve().parents[2]
    directory = tmp_path / "crashy-0"
    durable: dict[int, Record] = {}  # offsets some child reported flushed, with what is there
    kills = 0
    deadline = time.monotonic() + 25
    for run in range(1, 31):
        if time.monotonic() > deadline and kills >= 20:
            break
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.impl.crash_child", str(directory), str(run), str(rng.random())[2:]],
            cwd=repository,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.003, 0.2))
        child.send_signal(signal.SIGKILL)
        output, _ = child.communicate(timeout=10)
        assert child.returncode == -signal.SIGKILL
        kills += 1
        flushed = max(
            (int(line.split()[1]) for line in output.splitlines() if line.startswith("flushed")), default=0
        )
        log = storage.open(directory, CHILD_CONFIG)
        served = log.read(0)
        assert log.log_start_offset == 0 and log.log_end_offset >= flushed
        for offset, record in enumerate(served):
            assert 1 <= record.epoch <= run and record.value == value_for(offset, record.epoch)
            if offset in durable:
                assert record == durable[offset]  # a flushed record never changes
            elif offset < flushed:
                durable[offset] = record
        log.close()  # flushes: what the parent read is now durable as well
        durable.update(enumerate(served))
    assert kills >= 20 and durable


# ---------------------------------------------------------------------------------------
# The leader-epoch cache follows the spec's rules
# ---------------------------------------------------------------------------------------

cache_operations = st.lists(
    st.tuples(st.sampled_from(["assign", "end", "start", "query"]), st.integers(0, 8), st.integers(0, 40)),
    max_size=30,
)


@given(cache_operations)
def test_epoch_cache_matches_the_spec(ops: list[tuple[str, int, int]]) -> None:
    cache = LeaderEpochCache()
    model: spec_log.EpochCache = ()
    for name, epoch, offset in ops:
        if name == "assign":
            cache.assign(epoch, offset)
            model = spec_log.assign_epoch(model, epoch, offset)
        elif name == "end":
            cache.truncate_from_end(offset)
            model = spec_log.truncate_cache_from_end(model, offset)
        elif name == "start":
            cache.truncate_from_start(offset)
            model = spec_log.truncate_cache_from_start(model, offset)
        else:
            log_end = max([offset, *(entry.start_offset for entry in model)])
            assert cache.end_offset_for(epoch, log_end) == spec_log.end_offset_for_epoch(
                model, epoch, log_end
            )
        assert cache.entries == model


def test_a_new_leaders_epoch_at_the_log_end_survives_a_clean_restart_not_a_crash(tmp_path: Path) -> None:
    log = filled(tmp_path, 10)
    log.assign_epoch(5, 10)  # elected leader, nothing appended in epoch 5 yet
    log.close()
    log = storage.open(tmp_path, SMALL)
    assert log.epoch_cache == (EpochEntry(1, 0), EpochEntry(5, 10))
    log.close(flush=False)  # crash: as the spec's recover_after_crash, the empty epoch is forgotten
    log = storage.open(tmp_path, SMALL)
    assert log.epoch_cache == (EpochEntry(1, 0),)
    log.close()


def test_a_garbage_truncate_marker_is_reported(tmp_path: Path) -> None:
    filled(tmp_path, 3).close()
    (tmp_path / storage.TRUNCATE_FULLY_MARKER).write_text("??")
    with pytest.raises(CorruptLogError, match="truncate-fully-pending: byte 0: expected an offset"):
        storage.open(tmp_path, SMALL)


# ---------------------------------------------------------------------------------------
# Damage under an open log, and flushed records that vanished whole
# ---------------------------------------------------------------------------------------


class _HungError(Exception):
    pass


def within_seconds(seconds: float, action: Any) -> Any:
    """Run `action()`, failing (not hanging) if it runs longer than `seconds`."""

    def expire(signum: int, frame: object) -> None:
        raise _HungError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return action()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("cut", ["middle_of_a_batch", "batch_boundary", "empty"])
def test_a_segment_cut_under_the_open_log_fails_the_read_instead_of_spinning(
    tmp_path: Path, cut: str
) -> None:
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=64)
    log = filled(tmp_path, 60, config)
    path = tmp_path / segment_file_name(0, "log")
    boundaries = [position for position, *_ in batches_in(path)]
    # Past a batch header (its length is readable) but short of the batch: the read used to spin.
    keep = {"middle_of_a_batch": boundaries[5] + 30, "batch_boundary": boundaries[5], "empty": 0}[cut]
    os.truncate(path, keep)
    for start in (0, 15, 40):
        with pytest.raises(CorruptLogError, match=rf"{path}: byte \d+: "):
            within_seconds(5, lambda start=start: log.read(start))
    log.close(flush=False)


def flushed_log(directory: Path) -> list[Path]:
    """A log of 30 flushed records in 5 segments (and closed cleanly): its data files."""
    filled(directory, 30).close()
    return data_files(directory, "log")


def test_a_last_segment_cut_at_a_batch_boundary_below_the_recovery_point_is_refused(tmp_path: Path) -> None:
    last = flushed_log(tmp_path)[-1]
    os.truncate(last, batches_in(last)[1][0])  # keeps the first batch: every batch left is valid
    with pytest.raises(
        CorruptLogError,
        match=rf"{last}: byte \d+: the log ends at offset 27, below the "
        r"recovery point 30: flushed records 27\.\.29 are missing",
    ):
        storage.open(tmp_path, SMALL)


def test_an_emptied_last_segment_below_the_recovery_point_is_refused(tmp_path: Path) -> None:
    last = flushed_log(tmp_path)[-1]
    os.truncate(last, 0)
    with pytest.raises(CorruptLogError, match=r"flushed records 24\.\.29 are missing"):
        storage.open(tmp_path, SMALL)


def test_deleted_last_segments_below_the_recovery_point_are_refused(tmp_path: Path) -> None:
    files = flushed_log(tmp_path)
    for path in files[-2:]:
        path.unlink()
    with pytest.raises(
        CorruptLogError, match=rf"{files[-3]}: byte \d+: .*flushed records 18\.\.29 are missing"
    ):
        storage.open(tmp_path, SMALL)


def test_a_deleted_first_segment_is_refused(tmp_path: Path) -> None:
    files = flushed_log(tmp_path)
    files[0].unlink()
    with pytest.raises(CorruptLogError, match=rf"{files[1]}: byte 0: .*flushed records 0\.\.5 are missing"):
        storage.open(tmp_path, SMALL)


def test_an_unflushed_tail_cut_at_a_batch_boundary_is_still_recovered(tmp_path: Path) -> None:
    log = filled(tmp_path, 12)
    log.flush()
    log.append(records(12, 6, epoch=2))
    log.close(flush=False)
    last = data_files(tmp_path, "log")[-1]
    os.truncate(last, 0)  # the unflushed records of the last segment never reached the disk
    reopened = storage.open(tmp_path, SMALL)
    assert reopened.read(0) == records(0, reopened.log_end_offset)
    assert reopened.log_end_offset >= 12
    reopened.close()


@pytest.mark.parametrize(
    "name",
    [
        RECOVERY_POINT_CHECKPOINT,
        HIGH_WATERMARK_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
    ],
)
def test_every_flipped_bit_of_an_offset_checkpoint_is_refused_or_harmless(tmp_path: Path, name: str) -> None:
    # Each damaged file is refused naming the file and line (a non-UTF-8 byte too, not a bare
    # decode error), or it reads as another valid offset (a digit that became another digit,
    # or a topic name that became another name, which reads as no entry, as in Kafka); the log
    # then serves exactly the records written, never a damaged one.
    pristine = tmp_path / "pristine" / "orders-0"
    log = filled(pristine, 30)
    log.update_high_watermark(20)
    log.delete_records_before(4)
    log.close()
    original = (pristine / name).read_bytes()
    for position in range(len(original)):
        for bit in range(8):
            directory = tmp_path / f"{position}.{bit}" / "orders-0"  # same name: same checkpoint key
            shutil.copytree(pristine, directory)
            damaged = bytearray(original)
            damaged[position] ^= 1 << bit
            (directory / name).write_bytes(bytes(damaged))
            try:
                reopened = storage.open(directory, SMALL)
            except (CheckpointError, CorruptLogError) as error:
                assert str(error).startswith(str(directory)), error
                continue
            assert original[position] not in b" \n", (position, bit)
            assert reopened.read(reopened.log_start_offset) == records(0, 30)[reopened.log_start_offset :]
            reopened.close(flush=False)
