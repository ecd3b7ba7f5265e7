"""Plain data shared by the spec, the reference and the optimized implementation.

This module holds *values only*: identifiers, records, error codes and the acks setting.
It has no protocol logic, which is why `impl/` may import it (and nothing else from
`spec/`): when the spec and an implementation are compared, the only thing they share is
the vocabulary, never the behaviour.

Offsets follow Kafka's convention: an offset names one record, and "end" offsets (log end
offset, high watermark, log start offset) name the *next* position, so an empty log has
log end offset 0 and a high watermark of 5 means offsets 0..4 are committed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias

# The truncation rule belongs to the vocabulary shared with implementations; its members and
# what each means (KIP-101, KIP-279, KIP-320) are in `spec.replication_rules`.
from spec._frozen import fast_init
from spec.replication_rules import TruncationRule as TruncationRule  # noqa: PLC0414 (re-exported)

ReplicaId: TypeAlias = int
"""A broker id; in a single-partition model each broker holds one replica (broker i, replica i)."""

UNDEFINED_EPOCH = -1
"""Kafka's `UNDEFINED_EPOCH`: no leader epoch is known."""

UNDEFINED_EPOCH_OFFSET = -1
"""Kafka's `UNDEFINED_EPOCH_OFFSET`: no end offset is known for the requested epoch."""


@fast_init
@dataclass(frozen=True, slots=True)
class Record:
    """One record as stored in a replica's log.

    `epoch` is the leader epoch of the leader that appended it (the `partitionLeaderEpoch`
    field of a record batch, KIP-101); `value` is what the producer sent. In the model every
    produced value is unique, so a value identifies a write across replicas.
    """

    epoch: int
    value: int


@fast_init
@dataclass(frozen=True, slots=True)
class EpochEntry:
    """One entry of the leader-epoch cache (`leader-epoch-checkpoint`): the first offset
    written in `epoch`."""

    epoch: int
    start_offset: int


class Acks(enum.Enum):
    """The producer's `acks` setting."""

    NONE = 0  # acks=0: the producer does not wait; nothing is acknowledged
    LEADER = 1  # acks=1: acknowledged once the leader appended it
    ALL = -1  # acks=all: acknowledged once the high watermark passes it

    @classmethod
    def parse(cls, text: str) -> Acks:
        """Parse the config spelling: `0`, `1`, `all` or `-1`."""
        table = {"0": cls.NONE, "1": cls.LEADER, "all": cls.ALL, "-1": cls.ALL}
        try:
            return table[text.strip().lower()]
        except KeyError:
            raise ValueError(f"acks must be 0, 1 or all, not {text!r}") from None

    def __str__(self) -> str:
        return "all" if self is Acks.ALL else str(self.value)


class ErrorCode(enum.Enum):
    """The Kafka protocol error codes the replication spec can answer with.

    Errors are values, returned inside responses, exactly as Kafka's wire protocol does;
    the spec and any implementation must answer the same code in the same situation.
    """

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    NOT_LEADER_OR_FOLLOWER = 6
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's
