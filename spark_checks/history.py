"""The canonical history: operations as recorded, and calls (an invocation with its completion).

A history is what clients saw, in the order it happened (Jepsen's history format):
one `Operation` per line of the canonical JSON Lines form, with Jepsen's semantics for `type`:

* `invoke` - a process starts an operation;
* `ok`     - it completed and took effect;
* `fail`   - it definitely did not take effect;
* `info`   - indeterminate: it may or may not have taken effect, possibly later.

A process has at most one operation in flight. An `invoke` that never completes is treated
as `info` (Jepsen does the same). Checkers work on `Call`s: an invocation paired with its
completion, i.e. a closed real-time interval [invoke, complete] in which the operation took
effect at some instant (Porcupine's and Knossos's model of an operation).

Every reader produces `Operation`s; every checker consumes `Call`s. Bad input raises
`HistoryError`, which names the file, the line (or byte offset) and what was expected.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any, Final

JsonValue = Any
"""A JSON-like value: None, bool, int, float, str, list or dict with str keys."""

Process = int | str
"""A Jepsen process: an integer client id, or a name such as "nemesis"."""


class OpType(enum.Enum):
    """Jepsen's operation types."""

    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"

    @classmethod
    def parse(cls, text: str) -> OpType:
        """Parse `invoke`, `ok`, `fail` or `info` (a leading ':' from EDN keywords is accepted)."""
        try:
            return cls(text.lstrip(":"))
        except ValueError:
            raise ValueError(f"type must be one of invoke, ok, fail, info; got {text!r}") from None


@dataclass(frozen=True, slots=True)
class Position:
    """Where something was read: a file and a 1-based line, a byte offset for bytes that are
    not text, or a row (0-based) of a Parquet file."""

    file: str
    line: int | None = None
    offset: int | None = None
    row: int | None = None
    index: int | None = None
    """The operation with this index, where its line is not known (a check of calls sees no
    lines): the engine replaces it with the operation's line or row by reading the file again."""

    def __str__(self) -> str:
        if self.line is not None:
            return f"{self.file}:{self.line}"
        if self.offset is not None:
            return f"{self.file}: byte {self.offset}"
        if self.row is not None:
            return f"{self.file}: row {self.row}"
        if self.index is not None:
            return f"{self.file}: the operation with index {self.index}"
        return self.file


@dataclass
class Whereabouts:
    """What a verification is doing now: the file, the last operation read (its index), the
    part being checked. Mutable on purpose, and one per command run (passed down, never
    global): the engine updates it as it goes, and the command line reads it only when it
    reports an internal error, to say what was being processed when the bug struck."""

    file: str | None = None
    operation_index: int | None = None
    part: str | None = None

    def start(self, file: str) -> None:
        """A new history: nothing read, nothing checked yet."""
        self.file, self.operation_index, self.part = file, None, None

    def describe(self) -> str:
        """`verifying FILE after operation index N` / `... checking part P`, or ''."""
        if self.file is None:
            return ""
        text = f"verifying {self.file}"
        if self.part is not None:
            return f"{text}, checking part {self.part}"
        if self.operation_index is not None:
            return f"{text} after reading the operation with index {self.operation_index}"
        return text


UNNAMED: Final = "<history>"
"""The file of a position found where the file is not known (a checker sees calls, not
lines); the engine names the history's file in its place."""


class HistoryError(Exception):
    """Malformed input. The message names the position and what was expected."""

    def __init__(self, position: Position, message: str) -> None:
        super().__init__(f"{position}: {message}")
        self.position = position
        self.message = message


@dataclass(frozen=True, slots=True)
class Operation:
    """One line of a history."""

    index: int  # position in the history (0-based), as Jepsen's :index
    process: Process
    type: OpType
    f: str  # the function: "read", "write", "cas", "send", "poll", "txn", ...
    value: JsonValue = None
    key: JsonValue = None  # for per-key models; None when the model has one object
    time: int | None = None  # nanoseconds (relative), when recorded


class Outcome(enum.Enum):
    """How a call ended."""

    OK = "ok"  # took effect; `output` is its result
    FAIL = "fail"  # did not take effect
    INFO = "info"  # unknown: may take effect at any time after its invocation, or never


@dataclass(frozen=True, slots=True)
class Call:
    """An operation as a real-time interval: from its invocation to its completion.

    `complete_index` is None when it never completed (an `info` pending to the end of the
    history): such a call may take effect at any point after its invocation, or not at all.
    """

    process: Process
    f: str
    input: JsonValue  # the invocation's value
    output: JsonValue  # the completion's value (None when unknown)
    outcome: Outcome
    invoke_index: int
    complete_index: int | None
    key: JsonValue = None
    invoke_time: int | None = None
    complete_time: int | None = None
    completion_value: JsonValue = None
    """The completion's value whatever its type (`output` is only set for `ok`). Jepsen's
    Kafka analysis reads `fail`/`info` completions too: a failed transaction's polls, an
    indeterminate send's known offsets. None when there was no completion."""


NewCall = Callable[
    [
        Process,
        str,
        JsonValue,
        JsonValue,
        Outcome,
        int,
        int | None,
        JsonValue,
        int | None,
        int | None,
        JsonValue,
    ],
    Call,
]


def _call_maker() -> NewCall:
    if tuple(Call.__slots__) != tuple(field.name for field in fields(Call)):  # pragma: no cover
        raise AssertionError("Call's slots are not its fields in order")
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10 = (getattr(Call, name).__set__ for name in Call.__slots__)
    new = object.__new__

    def new_call(
        process: Process,
        f: str,
        given: JsonValue,
        output: JsonValue,
        outcome: Outcome,
        invoke_index: int,
        complete_index: int | None,
        key: JsonValue,
        invoke_time: int | None,
        complete_time: int | None,
        completion_value: JsonValue,
    ) -> Call:
        call: Call = new(Call)
        s0(call, process)
        s1(call, f)
        s2(call, given)
        s3(call, output)
        s4(call, outcome)
        s5(call, invoke_index)
        s6(call, complete_index)
        s7(call, key)
        s8(call, invoke_time)
        s9(call, complete_time)
        s10(call, completion_value)
        return call

    return new_call


new_call: Final = _call_maker()
"""`Call(...)` with every field given in order, at about half the cost, for the engines that
make one per call of a history: the frozen dataclass's `__init__` sets each field through
`object.__setattr__`; this sets the slots directly (the descriptors, from closure cells)."""


NewOperation = Callable[[int, Process, OpType, str, JsonValue, JsonValue, "int | None"], Operation]


def _operation_maker() -> NewOperation:
    if tuple(Operation.__slots__) != tuple(field.name for field in fields(Operation)):  # pragma: no cover
        raise AssertionError("Operation's slots are not its fields in order")
    s0, s1, s2, s3, s4, s5, s6 = (getattr(Operation, name).__set__ for name in Operation.__slots__)
    new = object.__new__

    def new_operation(
        index: int,
        process: Process,
        op_type: OpType,
        f: str,
        value: JsonValue,
        key: JsonValue,
        time: int | None,
    ) -> Operation:
        operation: Operation = new(Operation)
        s0(operation, index)
        s1(operation, process)
        s2(operation, op_type)
        s3(operation, f)
        s4(operation, value)
        s5(operation, key)
        s6(operation, time)
        return operation

    return new_operation


new_operation: Final = _operation_maker()
"""`Operation(...)` with every field given in order, at about half the cost (as `new_call`),
for the readers, which make one per line of a history."""


_OUTCOMES: Final = {OpType.OK: Outcome.OK, OpType.FAIL: Outcome.FAIL, OpType.INFO: Outcome.INFO}
"""A completion's type as the call's outcome (a lookup, not an `Outcome(...)` call per call)."""


def pair_calls(operations: Iterable[Operation], source: str = UNNAMED) -> Iterator[Call]:
    """Pair each invocation with its process's next completion, in completion order.

    Calls still open at the end of the history are yielded last, as `info` with no
    completion. A completion without an invocation, or a second invocation while one is
    open on the same process, is a malformed history (`HistoryError`). Operations of
    processes that never invoke anything (a Jepsen nemesis logging `info` lines) are skipped.
    """
    open_calls: dict[Process, Operation] = {}
    for operation in operations:
        if operation.type is OpType.INVOKE:
            if operation.process in open_calls:
                first = open_calls[operation.process]
                raise HistoryError(
                    Position(source, index=operation.index),
                    f"process {operation.process!r} invokes {operation.f!r} while its {first.f!r} "
                    f"(index {first.index}) has not completed",
                )
            open_calls[operation.process] = operation
            continue
        invocation = open_calls.pop(operation.process, None)
        if invocation is None:
            if operation.type is OpType.INFO:
                continue  # e.g. a nemesis announcing a fault: not a client operation
            raise HistoryError(
                Position(source, index=operation.index),
                f"{operation.type.value} for process {operation.process!r} without an open invocation",
            )
        completed = operation.type
        yield new_call(
            invocation.process,
            invocation.f,
            invocation.value,
            operation.value if completed is OpType.OK else None,
            _OUTCOMES[completed],
            invocation.index,
            operation.index,
            invocation.key,
            invocation.time,
            operation.time,
            operation.value,
        )
    for invocation in open_calls.values():
        yield Call(
            process=invocation.process,
            f=invocation.f,
            input=invocation.value,
            output=None,
            outcome=Outcome.INFO,
            invoke_index=invocation.index,
            complete_index=None,
            key=invocation.key,
            invoke_time=invocation.time,
        )


class Verdict(enum.Enum):
    """A checker's answer. `unknown` is never a guess: the budget ran out."""

    VALID = "valid"
    INVALID = "invalid"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one independent sub-history (a key, a topic-partition) or a whole one.

    `evidence` holds JSON-ready details: for linearizability the operations (by index) that
    could not be placed and the longest linearizable prefix; for Kafka the anomalies by type
    with the operations that show them. `conventions` states the source conventions used
    (initial value, what a nil read or a failed CAS means), so a verdict can be judged.
    """

    checker: str  # "linearizability" or "kafka"
    model: str
    partition: JsonValue  # the key / topic-partition this result covers; None for the whole history
    verdict: Verdict
    operations: int  # calls checked
    evidence: dict[str, JsonValue]
    conventions: dict[str, JsonValue]
    seconds: float = 0.0
