"""The replica-log conformance machine: the target and the reference, driven in lockstep.

What it is
    A Hypothesis `RuleBasedStateMachine` (the `DatabaseComparison` pattern of Hypothesis's
    stateful docs). It holds a system under test (`conformance.sut.LogUnderTest`, chosen by
    the machine's `target`) and the definitional `reference.log.ReferenceReplicaLog`, applies
    every generated command to both, and compares every answer. After every step three
    invariants run: the whole observable state (`snapshot()`) must agree; OffsetsForLeaderEpoch
    for every epoch up to one past the newest and `record_at` for every offset around the log
    must agree; and the reference state must be a legal spec state
    (`spec.log.log_is_well_formed`): refinement.

Commands
    Appends of batches whose leader epochs never decrease, reads and `record_at` at any
    offset (in range or not), `truncate_to`, `truncate_fully_and_start_at`, high-watermark
    updates, DeleteRecords, a new leader assigning its epoch at its LEO, OffsetsForLeaderEpoch
    at any epoch, flush, crash-and-recover, and retention (the target applies its own policy;
    the new log start offset must be legal and the reference then moves to it). Every example
    starts from a log that already holds records (`start_with_records`). Preconditions keep
    commands meaningful: no truncation of an empty log, no DeleteRecords or retention while
    nothing is committed, no flush or crash while nothing is unflushed.

On a divergence
    An `AssertionError` naming the command, the target's answer and the reference's answer;
    Hypothesis shrinks it and prints the minimal command sequence as a runnable program.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conformance.guard import (
    DEFAULT_COMMAND_SECONDS,
    TargetExitError,
    TargetHungError,
    call_target,
    check_command_seconds,
)
from conformance.sut import LogUnderTest, make_log, resolve_target
from reference.log import ReferenceReplicaLog
from spec import log as spec_log
from spec.types import Record

T = TypeVar("T")

ANCHORS = st.sampled_from(["end", "high_watermark", "start", "zero"])
"""Offsets are drawn relative to a position of the log, so commands hit its edges."""
DELTAS = st.integers(min_value=-3, max_value=3)
HIGH_WATERMARK_ANCHORS = st.sampled_from(["end", "end", "end", "high_watermark", "start"])
"""A leader's HW mostly follows its log end."""


class LogConformanceMachine(RuleBasedStateMachine):
    """Drives `make_log(target)` and the reference with the same commands."""

    target: ClassVar[str] = "impl"
    command_seconds: ClassVar[float] = DEFAULT_COMMAND_SECONDS  # per target call (`conformance.guard`)

    def __init__(self) -> None:
        super().__init__()
        self.reference = ReferenceReplicaLog()
        self.hung = False
        self.last_command = "creating an empty log"
        try:
            self.sut: LogUnderTest = call_target(
                lambda: make_log(self.target), self.command_seconds, self.last_command
            )
        except ValueError:
            raise  # not a LogUnderTest: a usage error, not a divergence
        except TargetExitError as error:
            raise AssertionError(str(error)) from None
        except Exception as error:
            raise AssertionError(f"creating an empty log: the target raised {error!r}") from error
        self.epoch = 0  # the newest leader epoch used so far: epochs never go back
        self.next_value = 0  # every appended value is unique
        self.last_command = "start"

    def teardown(self) -> None:
        """Release the target's files (not after a hang: the target is stuck)."""
        if not self.hung:
            self.guarded(f"close() after {self.last_command}", self.sut.close)

    # -- helpers ------------------------------------------------------------------------

    def guarded(self, command: str, operation: Callable[[], T]) -> T:
        """Run `operation` on the target; an exception from it (or `sys.exit`) is a divergence
        too, and a call that hangs is stopped (`conformance.guard`)."""
        self.last_command = command
        try:
            return call_target(operation, self.command_seconds, command)
        except TargetHungError:
            self.hung = True
            raise
        except TargetExitError as error:
            raise AssertionError(str(error)) from None
        except Exception as error:
            raise AssertionError(f"{command}: the target raised {error!r}") from error

    def _offset(self, anchor: str, delta: int, lowest: int = 0) -> int:
        """`delta` away from the reference's log end, HW, log start or offset zero."""
        base = {
            "end": self.reference.log_end_offset,
            "high_watermark": self.reference.high_watermark,
            "start": self.reference.log_start_offset,
            "zero": 0,
        }[anchor]
        return max(lowest, base + delta)

    @staticmethod
    def _agree(command: str, target_answer: object, reference_answer: object) -> None:
        if target_answer != reference_answer:
            raise AssertionError(
                f"{command}: target answered {target_answer!r}, reference answered {reference_answer!r}"
            )

    # -- rules --------------------------------------------------------------------------

    @initialize(
        bumps=st.lists(st.sampled_from([0, 0, 0, 1, 2]), max_size=14),
        committed_back=st.integers(min_value=0, max_value=4),
        flushed=st.booleans(),
    )
    def start_with_records(self, bumps: list[int], committed_back: int, flushed: bool) -> None:
        """Begin from a log that already holds records, most of them committed, maybe flushed."""
        if bumps:
            self.append(bumps)
        self.update_high_watermark("end", -committed_back)
        if flushed:
            self.flush()

    @rule(bumps=st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=1, max_size=4))
    def append(self, bumps: list[int]) -> None:
        """Append a batch; `bumps[i]` raises the leader epoch before record i."""
        batch: list[Record] = []
        for bump in bumps:
            self.epoch += bump
            batch.append(Record(self.epoch, self.next_value))
            self.next_value += 1
        records = tuple(batch)
        command = f"append({records!r})"
        answer = self.guarded(command, lambda: self.sut.append(records))
        self._agree(command, answer, self.reference.append(records))

    @rule(anchor=ANCHORS, delta=DELTAS, max_records=st.none() | st.integers(1, 6))
    def read(self, anchor: str, delta: int, max_records: int | None) -> None:
        """Fetch from any offset, and look that one offset up."""
        offset = self._offset(anchor, delta, lowest=-1)
        command = f"read({offset}, max_records={max_records})"
        answer = self.guarded(command, lambda: self.sut.read(offset, max_records))
        self._agree(command, tuple(answer), self.reference.read(offset, max_records))
        command = f"record_at({offset})"
        found = self.guarded(command, lambda: self.sut.record_at(offset))
        self._agree(command, found, self.reference.record_at(offset))

    @precondition(lambda self: self.reference.log_end_offset > self.reference.log_start_offset)
    @rule(anchor=ANCHORS, delta=DELTAS)
    def truncate_to(self, anchor: str, delta: int) -> None:
        """A follower truncates to where its log diverges."""
        offset = self._offset(anchor, delta)
        self.guarded(f"truncate_to({offset})", lambda: self.sut.truncate_to(offset))
        self.reference.truncate_to(offset)

    @precondition(lambda self: self.reference.log_end_offset > self.reference.log_start_offset)
    @rule(anchor=ANCHORS, delta=DELTAS)
    def truncate_fully_and_start_at(self, anchor: str, delta: int) -> None:
        """A follower whose fetch offset the leader no longer holds restarts its log."""
        offset = self._offset(anchor, delta)
        command = f"truncate_fully_and_start_at({offset})"
        self.guarded(command, lambda: self.sut.truncate_fully_and_start_at(offset))
        self.reference.truncate_fully_and_start_at(offset)

    @rule(anchor=HIGH_WATERMARK_ANCHORS, delta=DELTAS)
    def update_high_watermark(self, anchor: str, delta: int) -> None:
        """The leader's HW reaches this replica."""
        high_watermark = self._offset(anchor, delta)
        command = f"update_high_watermark({high_watermark})"
        answer = self.guarded(command, lambda: self.sut.update_high_watermark(high_watermark))
        self._agree(command, answer, self.reference.update_high_watermark(high_watermark))

    @precondition(lambda self: self.reference.high_watermark > self.reference.log_start_offset)
    @rule(anchor=ANCHORS, delta=DELTAS)
    def delete_records_before(self, anchor: str, delta: int) -> None:
        """DeleteRecords (capped at the HW)."""
        offset = self._offset(anchor, delta)
        command = f"delete_records_before({offset})"
        answer = self.guarded(command, lambda: self.sut.delete_records_before(offset))
        self._agree(command, answer, self.reference.advance_log_start_offset(offset))

    @rule(bump=st.integers(min_value=1, max_value=2))
    def become_leader(self, bump: int) -> None:
        """This replica becomes leader with a newer epoch and records it at its LEO (KAFKA-7415)."""
        self.epoch += bump
        epoch, end = self.epoch, self.reference.log_end_offset
        self.guarded(f"assign_epoch({epoch}, {end})", lambda: self.sut.assign_epoch(epoch, end))
        self.reference.assign_epoch(epoch, end)

    @rule(epoch=st.integers(min_value=-1, max_value=30))
    def end_offset_for_epoch(self, epoch: int) -> None:
        """OffsetsForLeaderEpoch for any epoch, from UNDEFINED_EPOCH to far past the newest."""
        command = f"end_offset_for_epoch({epoch})"
        answer = self.guarded(command, lambda: self.sut.end_offset_for_epoch(epoch))
        self._agree(command, tuple(answer), self.reference.end_offset_for_epoch(epoch))

    @precondition(lambda self: self.reference.has_unflushed_changes())
    @rule()
    def flush(self) -> None:
        """Make everything durable."""
        self.guarded("flush()", self.sut.flush)
        self.reference.flush()

    @precondition(lambda self: self.reference.has_unflushed_changes())
    @rule()
    def crash(self) -> None:
        """Lose what was not flushed, reopen and recover."""
        self.guarded("crash()", self.sut.crash)
        self.reference.crash()

    @precondition(lambda self: self.reference.high_watermark > self.reference.log_start_offset)
    @rule()
    def apply_retention(self) -> None:
        """The target applies its retention policy; the new log start offset must be legal."""
        before, high_watermark = self.reference.log_start_offset, self.reference.high_watermark
        answer = self.guarded("apply_retention()", self.sut.apply_retention)
        if not before <= answer <= high_watermark:
            raise AssertionError(
                f"apply_retention(): target moved the log start offset to {answer}, "
                f"reference allows [{before}, {high_watermark}] (never past the high watermark)"
            )
        self.reference.advance_log_start_offset(answer)

    # -- invariants ---------------------------------------------------------------------

    @invariant()
    def states_agree(self) -> None:
        """The whole observable state of the target equals the reference's."""
        after = self.last_command
        snapshot = self.guarded(f"snapshot() after {after}", self.sut.snapshot)
        self.last_command = after
        reference = self.reference
        for name, target_value, reference_value in (
            ("log_start_offset", snapshot.log_start_offset, reference.log_start_offset),
            ("records", tuple(snapshot.records), reference.records),
            ("high_watermark", snapshot.high_watermark, reference.high_watermark),
            ("epoch_cache", tuple(snapshot.epoch_cache), reference.epoch_cache),
        ):
            self._agree(f"{name} after {self.last_command}", target_value, reference_value)

    @invariant()
    def lookups_agree(self) -> None:
        """OffsetsForLeaderEpoch for every epoch from UNDEFINED_EPOCH to past the newest, and
        `record_at` for every offset from just below the log start to the log end."""
        after = self.last_command
        for epoch in range(-1, self.epoch + 2):
            command = f"end_offset_for_epoch({epoch}) after {after}"
            answer = self.guarded(command, partial(self.sut.end_offset_for_epoch, epoch))
            self._agree(command, tuple(answer), self.reference.end_offset_for_epoch(epoch))
        for offset in range(max(0, self.reference.log_start_offset - 1), self.reference.log_end_offset + 1):
            command = f"record_at({offset}) after {after}"
            found = self.guarded(command, partial(self.sut.record_at, offset))
            self._agree(command, found, self.reference.record_at(offset))
        self.last_command = after

    @invariant()
    def reference_is_a_legal_spec_state(self) -> None:
        """Refinement: every state the reference reaches is well formed in the spec."""
        if not spec_log.log_is_well_formed(self.reference.state):
            raise AssertionError(
                f"after {self.last_command}: reference left the spec: {self.reference.state!r}"
            )


def machine_for(target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS) -> type[LogConformanceMachine]:
    """The conformance machine bound to `target` (``impl``, ``reference`` or ``MODULE:FACTORY``)."""
    resolve_target(target)  # fail fast, with a clear ValueError, on a bad target string
    safe = "".join(character if character.isalnum() else "_" for character in target)
    return type(
        f"LogConformance_{safe}",
        (LogConformanceMachine,),
        {"target": target, "command_seconds": check_command_seconds(command_seconds)},
    )


class ImplLogConformance(LogConformanceMachine):
    """The machine against the optimized on-disk log."""

    target = "impl"


class ReferenceLogConformance(LogConformanceMachine):
    """The machine against the reference itself (a self-check of the machine)."""

    target = "reference"
