"""The checkpoint files: Kafka's text format, atomic replacement, validation on read."""

from __future__ import annotations

from pathlib import Path

import pytest

from impl.checkpoints import (
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
