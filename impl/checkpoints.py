"""Checkpoint files: the leader-epoch cache and per-partition offsets, written atomically.

What it is
    Small text files a broker rewrites whole. Both formats start with a version line (`0`)
    and a count line, then one entry per line:

    * `leader-epoch-checkpoint` (Kafka's `LeaderEpochCheckpointFile`, one per partition
      directory): `epoch start_offset` — the leader-epoch cache of KIP-101.
    * `replication-offset-checkpoint` (high watermarks), `recovery-point-offset-checkpoint`
      and `log-start-offset-checkpoint` (Kafka's `OffsetCheckpointFile`):
      `topic partition offset`.

Where it comes from
    Kafka's `CheckpointFile` / `CheckpointReadBuffer`: write to `<file>.tmp`, flush, fsync,
    atomically rename over the old file, fsync the directory so the rename itself is durable.
    A reader therefore sees either the old or the new file, never a mix.

Validation
    Reading checks the version, the count, the shape of every line and (for the epoch
    cache) that epochs and start offsets strictly increase; any problem raises
    `CheckpointError` naming the file and the 1-based line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from spec.types import EpochEntry

CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint file is malformed; the message names the file and line."""

    def __init__(self, path: Path, line: int, problem: str) -> None:
        super().__init__(f"{path}: line {line}: {problem}")
        self.path = path
        self.line = line


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """A topic-partition, the key of an offset checkpoint."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def fsync_directory(directory: Path) -> None:
    """Make renames, creations and deletions inside `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a crash leaves either the old or the new content."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


def _render(entries: Iterable[str]) -> str:
    lines = list(entries)
    return "".join(f"{line}\n" for line in [str(CHECKPOINT_VERSION), str(len(lines)), *lines])


def _parse_int(path: Path, line_number: int, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CheckpointError(path, line_number, f"expected an integer {what}, got {text!r}") from None
    if value < 0:
        raise CheckpointError(path, line_number, f"{what} must not be negative, got {value}")
    return value


def _entry_lines(path: Path) -> list[tuple[int, list[str]]]:
    """Check the version and count header; return (line number, fields) of each entry line."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    if len(lines) < 2:
        raise CheckpointError(path, len(lines) + 1, "expected a version line and a count line")
    version = _parse_int(path, 1, lines[0].strip(), "version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(path, 1, f"unsupported version {version} (expected {CHECKPOINT_VERSION})")
    count = _parse_int(path, 2, lines[1].strip(), "entry count")
    body = lines[2:]
    if len(body) != count:
        raise CheckpointError(path, 2, f"count line says {count} entries but the file has {len(body)}")
    return [(number, line.split()) for number, line in enumerate(body, start=3)]


class LeaderEpochCheckpointFile:
    """The `leader-epoch-checkpoint` of one partition (Kafka's `LeaderEpochCheckpointFile`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, entries: Iterable[EpochEntry]) -> None:
        """Atomically replace the file with `entries` (oldest epoch first)."""
        write_atomically(self.path, _render(f"{entry.epoch} {entry.start_offset}" for entry in entries))

    def read(self) -> list[EpochEntry]:
        """The entries on disk; an absent file is an empty cache."""
        if not self.path.exists():
            return []
        entries: list[EpochEntry] = []
        for number, fields in _entry_lines(self.path):
            if len(fields) != 2:
                raise CheckpointError(self.path, number, f"expected 'epoch start_offset', got {fields}")
            entry = EpochEntry(
                _parse_int(self.path, number, fields[0], "epoch"),
                _parse_int(self.path, number, fields[1], "start offset"),
            )
            # The cache is strictly increasing in both fields; anything else is not a cache
            # Kafka could have written, so refuse it rather than answer OffsetsForLeaderEpoch wrongly.
            if entries and not (
                entry.epoch > entries[-1].epoch and entry.start_offset > entries[-1].start_offset
            ):
                raise CheckpointError(
                    self.path, number, f"entry {entry} does not follow {entries[-1]} (must strictly increase)"
                )
            entries.append(entry)
        return entries


class OffsetCheckpointFile:
    """An offset-per-partition checkpoint (Kafka's `OffsetCheckpointFile`): high watermarks,
    recovery points or log start offsets."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Atomically replace the file with `offsets`."""
        for key in offsets:
            if not key.topic or any(character.isspace() for character in key.topic):
                raise ValueError(f"topic name {key.topic!r} cannot be written to a checkpoint")
        write_atomically(
            self.path, _render(f"{key.topic} {key.partition} {offsets[key]}" for key in sorted(offsets))
        )

    def read(self) -> dict[TopicPartition, int]:
        """The offsets on disk; an absent file has none."""
        if not self.path.exists():
            return {}
        offsets: dict[TopicPartition, int] = {}
        for number, fields in _entry_lines(self.path):
            if len(fields) != 3:
                raise CheckpointError(self.path, number, f"expected 'topic partition offset', got {fields}")
            key = TopicPartition(fields[0], _parse_int(self.path, number, fields[1], "partition"))
            if key in offsets:
                raise CheckpointError(self.path, number, f"duplicate entry for {key}")
            offsets[key] = _parse_int(self.path, number, fields[2], "offset")
        return offsets
