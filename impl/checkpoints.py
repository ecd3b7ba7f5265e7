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
    `CheckpointError` naming the file and the 1-based line. The files carry no checksum, so
    damage (a flipped bit, garbage, a cut) is caught by reading them as strictly as Kafka
    writes them: UTF-8 text of printable characters, every line ending in a newline, fields
    separated by one space, numbers in plain decimal (no sign, no leading zero, within
    Java's `long`, or `int` for epochs and partitions). A byte that is not UTF-8 is reported
    with its line and column, never as a bare `UnicodeDecodeError`.
"""

from __future__ import annotations

import os
import re
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


_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")
"""A number as Kafka writes one (`Long.toString` of a non-negative value): ASCII digits."""
LONG_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: offsets
INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: epochs, partitions


def _parse_int(path: Path, line_number: int, text: str, what: str, limit: int = LONG_MAX) -> int:
    if _DECIMAL.fullmatch(text) is None:
        if text[:1] == "-" and _DECIMAL.fullmatch(text[1:]) is not None:
            raise CheckpointError(path, line_number, f"{what} must not be negative, got {text}")
        raise CheckpointError(path, line_number, f"expected an integer {what}, got {text!r}")
    value = int(text)
    if value > limit:
        raise CheckpointError(path, line_number, f"{what} {value} is larger than {limit}")
    return value


def _text_lines(path: Path) -> list[str]:
    """The file's lines, each checked to be UTF-8 text of printable characters."""
    data = path.read_bytes()
    raw_lines = data.split(b"\n")
    if raw_lines[-1]:
        raise CheckpointError(path, len(raw_lines), "the last line has no newline (the file is cut short)")
    raw_lines.pop()  # after the final newline
    lines: list[str] = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CheckpointError(
                path, number, f"not UTF-8 text: byte 0x{raw[error.start]:02x} at column {error.start + 1}"
            ) from None
        for column, character in enumerate(line, start=1):
            if not character.isprintable():
                raise CheckpointError(path, number, f"unexpected character {character!r} at column {column}")
        lines.append(line)
    return lines


def _entry_lines(path: Path) -> list[tuple[int, list[str]]]:
    """Check the version and count header; return (line number, fields) of each entry line."""
    lines = _text_lines(path)
    if len(lines) < 2:
        raise CheckpointError(path, len(lines) + 1, "expected a version line and a count line")
    version = _parse_int(path, 1, lines[0], "version")
    if version != CHECKPOINT_VERSION:
        raise CheckpointError(path, 1, f"unsupported version {version} (expected {CHECKPOINT_VERSION})")
    count = _parse_int(path, 2, lines[1], "entry count")
    body = lines[2:]
    if len(body) != count:
        raise CheckpointError(path, 2, f"count line says {count} entries but the file has {len(body)}")
    return [(number, line.split(" ")) for number, line in enumerate(body, start=3)]


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
                _parse_int(self.path, number, fields[0], "epoch", INT_MAX),
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
            if not key.topic or not key.topic.isprintable() or " " in key.topic:
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
            if not fields[0]:
                raise CheckpointError(self.path, number, "empty topic name")
            key = TopicPartition(fields[0], _parse_int(self.path, number, fields[1], "partition", INT_MAX))
            if key in offsets:
                raise CheckpointError(self.path, number, f"duplicate entry for {key}")
            offsets[key] = _parse_int(self.path, number, fields[2], "offset")
        return offsets
