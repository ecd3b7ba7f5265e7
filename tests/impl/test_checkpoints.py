"""The checkpoint files: Kafka's text format, atomic replacement, validation on read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    CheckpointError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    TopicPartition,
    write_atomically,
)
from spec.types import EpochEntry


def test_leader_epoch_checkpoint_round_trips_in_kafkas_format(tmp_path: Path) -> None:
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    entries = [EpochEntry(0, 0), EpochEntry(2, 10), EpochEntry(5, 42)]
    checkpoint.write(entries)
    assert checkpoint.path.read_text() == "0\n3\n0 0\n2 10\n5 42\n"
    assert checkpoint.read() == entries


def test_offset_checkpoint_round_trips_in_kafkas_format(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    offsets = {TopicPartition("orders", 1): 17, TopicPartition("orders", 0): 5}
    checkpoint.write(offsets)
    assert checkpoint.path.read_text() == "0\n2\norders 0 5\norders 1 17\n"
    assert checkpoint.read() == offsets


def test_missing_files_read_as_empty(tmp_path: Path) -> None:
    assert LeaderEpochCheckpointFile(tmp_path / "absent").read() == []
    assert OffsetCheckpointFile(tmp_path / "absent").read() == {}


def test_write_replaces_atomically_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    checkpoint = OffsetCheckpointFile(path)
    checkpoint.write({TopicPartition("t", 0): 1})
    checkpoint.write({TopicPartition("t", 0): 2})
    assert checkpoint.read() == {TopicPartition("t", 0): 2}
    assert sorted(entry.name for entry in tmp_path.iterdir()) == [path.name]


def test_a_stale_temporary_does_not_affect_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write([EpochEntry(1, 0)])
    (tmp_path / "leader-epoch-checkpoint.tmp").write_text("garbage from a crash mid-write")
    assert LeaderEpochCheckpointFile(path).read() == [EpochEntry(1, 0)]
    write_atomically(path, "0\n0\n")
    assert LeaderEpochCheckpointFile(path).read() == []


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", 1, "version line"),
        ("0\n", 2, "version line and a count line"),
        ("1\n0\n", 1, "unsupported version 1"),
        ("x\n0\n", 1, "integer version"),
        ("0\n2\n1 0\n", 2, "count line says 2"),
        ("0\n1\n1\n", 3, "expected 'epoch start_offset'"),
        ("0\n1\n1 a\n", 3, "integer start offset"),
        ("0\n1\n-1 0\n", 3, "must not be negative"),
        ("0\n2\n3 10\n2 20\n", 4, "must strictly increase"),
        ("0\n2\n3 10\n4 10\n", 4, "must strictly increase"),
    ],
)
def test_malformed_epoch_checkpoint_names_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError) as caught:
        LeaderEpochCheckpointFile(path).read()
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}: line {line}: ")
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("0\n1\nt 0\n", 3, "expected 'topic partition offset'"),
        ("0\n1\nt x 5\n", 3, "integer partition"),
        ("0\n1\nt 0 -5\n", 3, "must not be negative"),
        ("0\n2\nt 0 5\nt 0 6\n", 4, "duplicate entry for t-0"),
        ("0\n0\nt 0 5\n", 2, "count line says 0"),
    ],
)
def test_malformed_offset_checkpoint_names_file_and_line(
    tmp_path: Path, text: str, line: int, fragment: str
) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError) as caught:
        OffsetCheckpointFile(path).read()
    assert str(caught.value).startswith(f"{path}: line {line}: ")
    assert fragment in str(caught.value)


def test_topic_names_with_whitespace_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        OffsetCheckpointFile(tmp_path / "c").write({TopicPartition("a b", 0): 1})


# ---------------------------------------------------------------------------------------
# Damaged files: every problem is a CheckpointError naming the file and line
# ---------------------------------------------------------------------------------------


def read_any(path: Path) -> object:
    if path.name == LEADER_EPOCH_CHECKPOINT:
        return LeaderEpochCheckpointFile(path).read()
    return OffsetCheckpointFile(path).read()


def write_sample(path: Path) -> bytes:
    if path.name == LEADER_EPOCH_CHECKPOINT:
        LeaderEpochCheckpointFile(path).write([EpochEntry(0, 0), EpochEntry(3, 17), EpochEntry(12, 4096)])
    else:
        OffsetCheckpointFile(path).write({TopicPartition("orders", 0): 5, TopicPartition("orders", 12): 4096})
    return path.read_bytes()


@pytest.mark.parametrize("name", [LEADER_EPOCH_CHECKPOINT, HIGH_WATERMARK_CHECKPOINT])
def test_every_flipped_bit_is_read_back_or_named_with_file_and_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    original = write_sample(path)
    for position in range(len(original)):
        for bit in range(8):
            damaged = bytearray(original)
            damaged[position] ^= 1 << bit
            path.write_bytes(bytes(damaged))
            try:
                read_any(path)
            except CheckpointError as error:
                assert str(error).startswith(f"{path}: line {error.line}: "), error
                assert 1 <= error.line <= original.count(b"\n") + 1
            else:
                # Read back only when a digit became another digit or a topic's letter another
                # printable one: the format has no checksum to tell.
                assert original[position] not in b" \n", (position, bit)
                assert 0x21 <= damaged[position] <= 0x7E, (position, bit)


@pytest.mark.parametrize("name", [LEADER_EPOCH_CHECKPOINT, HIGH_WATERMARK_CHECKPOINT])
@given(garbage=st.binary(max_size=64))
@settings(max_examples=150, deadline=None)
def test_garbage_is_a_checkpoint_error(
    tmp_path_factory: pytest.TempPathFactory, name: str, garbage: bytes
) -> None:
    path = tmp_path_factory.mktemp("garbage") / name
    path.write_bytes(garbage)
    try:
        read_any(path)
    except CheckpointError as error:
        assert str(error).startswith(f"{path}: line ")


@pytest.mark.parametrize(
    ("data", "line", "fragment"),
    [
        (b"0\n1\n3 1\xff7\n", 3, "not UTF-8 text: byte 0xff at column 4"),
        (b"\xc3\n", 1, "not UTF-8 text: byte 0xc3 at column 1"),
        (b"0\n1\n3\t17\n", 3, "unexpected character '\\t' at column 2"),
        (b"0\n1\n3 17\x00\n", 3, "unexpected character '\\x00' at column 5"),
        (b"0\n1\n3  17\n", 3, "expected 'epoch start_offset'"),
        (b"0\n1\n3 017\n", 3, "integer start offset"),
        (b"0\n1\n3 +17\n", 3, "integer start offset"),
        (b"0\n1\n3 1_7\n", 3, "integer start offset"),
        (b"0\n1\n3 \xd9\xa3\n", 3, "integer start offset"),  # an Arabic-Indic digit: int() takes it
        (b"0\n1\n2147483648 0\n", 3, "epoch 2147483648 is larger than 2147483647"),
        (b"0\n1\n3 17", 3, "no newline (the file is cut short)"),
        (b" 0\n0\n", 1, "integer version"),
    ],
)
def test_damaged_epoch_checkpoint_names_file_and_line(
    tmp_path: Path, data: bytes, line: int, fragment: str
) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_bytes(data)
    with pytest.raises(CheckpointError) as caught:
        LeaderEpochCheckpointFile(path).read()
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{path}: line {line}: ")
    assert fragment in str(caught.value)


def test_damaged_offset_checkpoint_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / HIGH_WATERMARK_CHECKPOINT
    path.write_bytes(b"0\n2\norders 0 5\nord\xe9rs 1 7\n")
    with pytest.raises(CheckpointError, match=r"line 4: not UTF-8 text: byte 0xe9 at column 4") as caught:
        OffsetCheckpointFile(path).read()
    assert str(caught.value).startswith(str(path))
    path.write_bytes(b"0\n1\n 0 5\n")
    with pytest.raises(CheckpointError, match="line 3: empty topic name"):
        OffsetCheckpointFile(path).read()
