"""What each task of the Spark engine runs, as plain Python (no pyspark, so it is unit-tested
without a JVM); `engine.verify_spark` only ships rows between these functions.

The job has one shuffle. Stage 1 has one task per byte range of a JSON Lines history:
`range_rows` reads the lines that start in its range, pairs them into calls, splits the calls
into per-part pieces (`checking.split_calls`) and gives each piece a *target* (the stage-2
task of its part). Stage 2 has one task per target: `check_rows` groups the pieces by part
and checks each part (`checking.check_part`). Only per-part results reach the driver.

Why ranges of the file and not a shuffle by process (pairing needs each process's operations
in order): a process has at most one call open, so a range pairs everything it can by
itself; for a call still open when its range ends, the task reads on past the end until that
process's next line (`range_calls`: usually a few lines, since a process's calls are short).
Each call is then made exactly once, by the task holding its invocation. The one check a
range cannot make alone - is a completion at the start of a range (no invocation before it
in the range) the end of an earlier range's call, or a completion without an invocation? -
is settled in stage 2: ranges report such completions (`ORPHAN`) and the completions they
claimed by reading on (`CLAIM`), and every `ok`/`fail` orphan must be claimed. Cost of the
choice: a history whose call stays open for a long stretch (never completed) makes its
range read on that far, up to the end of the file.

Kafka parts need three whole-history facts. The assign/subscribe calls go to every target
(`SUBSCRIPTION`). Whether an `info` send must have committed (some value it sent was read by
an `ok` call) is decided inside the part of the key it sent to, since every read of a key is
in its part: exact for a call that sent to one key. A call that sent to several keys
(`MULTI_INFO_PIECE`) committed if any of its parts says so; a part that said no for such a
call reports it (`UNDECIDED`), and only when another part said yes (`COMMITTED`) is that
part checked again, in a second job that re-reads the file but ships only those parts'
pieces (`range_rows(parts=...)`). Histories with transactions get that second job too: their
cross-key cycles need every data call in one part (`CYCLES_PART`), and stage 1 only learns
that the history has a transaction as it goes (`FLAG`).

Bad input (a `HistoryError`, or a `ValueError` from a model that cannot hold a value) becomes
an `ERROR` row; the engine then reads the history locally to report the first bad line exactly
as the local engine would. Any other exception is a bug: the engine's task wrappers turn it
into an `INTERNAL` row with its traceback (`internal_payload`), which the driver raises as a
`SparkTaskError`, never as a verdict or as bad input.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
import pickle
import traceback
import zlib
from collections import defaultdict
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Final

import orjson

from spark_checks import kafka_checker
from spark_checks.checking import (
    CYCLES_PART,
    KafkaContext,
    Plan,
    check_key_deciding_commits,
    check_part,
    split_calls,
    unchecked_result,
)
from spark_checks.history import (
    Call,
    CheckResult,
    HistoryError,
    JsonValue,
    OpType,
    Outcome,
    Position,
    Verdict,
    new_call,
)
from spark_checks.parallel import (
    PARALLEL_MIN_BYTES,
    Stop,
    Task,
    TaskContext,
    WorkerPool,
    searches_budget,
    stop_reason,
    worth_workers,
)
from spark_checks.readers._common import make_operation, nests_deeper
from spark_checks.readers.jsonl import EXPECTED, LINE_NESTING, decode_line, first_long_integer

# Row kinds of stage 1 (and of stage 2's output, except PIECE and SUBSCRIPTION).
PIECE: Final = 0  # part = the part's key JSON, payload = encoded call
SUBSCRIPTION: Final = 1  # an assign/subscribe call, sent to every target
ORPHAN: Final = 2  # payload = byte offset of an ok/fail completion first of its process in a range
CLAIM: Final = 3  # payload = byte offset of a completion paired by reading past a range's end
FLAG: Final = 4  # payload = JSON list of flag names (TRANSACTIONS)
ERROR: Final = 5  # payload = JSON [line or null, message]
RESULT: Final = 6  # payload = JSON of `result_to_row`
COMMITTED: Final = 7  # payload = JSON list of info calls' invocation indices that committed
MULTI_INFO_PIECE: Final = 8  # a PIECE of an info call that sent to several keys
UNDECIDED: Final = 9  # payload = JSON [part, [multi-key info calls this part did not see commit]]
PIECES: Final = 10  # part = a Kafka key's part, payload = JSON list of its pieces in a range
SUBSCRIPTIONS: Final = 11  # payload = pickled list of a range's assign/subscribe calls, to every target
COUNTS: Final = 12  # payload = b"operations calls" of a range (the driver sums them)
INTERNAL: Final = 13  # payload = JSON [exception type, message, stage, traceback]: a bug in a task
WHOLE: Final = 14  # part = CYCLES_PART, payload = pickled list of a range's data calls' fields

TRANSACTIONS: Final = "transactions"

Row = tuple[int, int, str, bytes]
"""A stage-1 row: (target, kind, part, payload)."""
OutRow = tuple[int, bytes]
"""A stage-2 row: (kind, payload)."""

# An operation's type travels as its canonical name (one string object per name, from
# `_TYPES`, so `is` compares them): looking up an enum member hashes it in Python code.
_TYPES: Final = {t.value: t.value for t in OpType}
_INVOKE: Final = _TYPES["invoke"]
_OK_TYPE: Final = _TYPES["ok"]
_INFO_TYPE: Final = _TYPES["info"]
_OUTCOMES: Final[dict[str, Outcome]] = {t.value: Outcome(t.value) for t in OpType if t is not OpType.INVOKE}
_OUTCOME_CODES: Final = {outcome: outcome.value for outcome in Outcome}
_OUTCOME_BY_CODE: Final = {outcome.value: outcome for outcome in Outcome}


def byte_ranges(size: int, count: int) -> list[tuple[int, int]]:
    """`count` (at least one) contiguous ranges [start, end) covering `size` bytes."""
    count = max(1, min(count, size)) if size else 1
    bounds = [size * number // count for number in range(count + 1)]
    return list(itertools.pairwise(bounds))


def target_of(part: str, targets: Sequence[int]) -> int:
    """The stage-2 target of a part (a stable hash: Python's own is salted per process)."""
    return targets[zlib.crc32(part.encode("utf-8")) % len(targets)]


# ---------------------------------------------------------------------------------------
# Calls <-> bytes
# ---------------------------------------------------------------------------------------


_STANDARD: Final = b"J"  # marks JSON written by the standard library (orjson could not, exactly)


def _dumps(value: Any) -> bytes:
    """Compact JSON; what orjson cannot write exactly (integers beyond 64 bits, lone
    surrogates, NaN and infinities, which it writes as null) is written by the standard
    library behind a marker, so `_loads` reads it back exactly."""
    try:
        data = orjson.dumps(value)
    except TypeError:
        data = None
    if data is None or (b"null" in data and _has_non_finite(value)):
        return _STANDARD + json.dumps(value, separators=(",", ":")).encode("utf-8")
    return data


def _has_non_finite(value: Any) -> bool:
    """Whether a JSON value holds a NaN or an infinity anywhere."""
    if value.__class__ is float:
        return not math.isfinite(value)
    if isinstance(value, list | tuple):
        return any(_has_non_finite(item) for item in value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    return False


def _loads(data: bytes) -> Any:
    if data[:1] == _STANDARD:
        return json.loads(data[1:])
    return orjson.loads(data)


def _join_pieces(pieces: list[bytes]) -> bytes:
    """Pieces encoded one by one (`_dumps`) as one JSON list, which `_loads` reads: each piece
    is encoded while its values are fresh in the cache, and a list of JSON texts is joined
    at once (pickling them later, from cold memory, cost stage 1 a fifth of its time)."""
    if any(piece[:1] == _STANDARD for piece in pieces):
        texts = [piece[1:] if piece[:1] == _STANDARD else piece for piece in pieces]
        return _STANDARD + b"[" + b",".join(texts) + b"]"
    return b"[" + b",".join(pieces) + b"]"


def _pack(fields: list[list[Any]]) -> bytes:
    """Many assign/subscribe calls' fields (SUBSCRIPTIONS) as one pickle: written by stage 1
    of the same job for stage 2 alone, so trusted; exact for any JSON value, and its memo
    writes once the list of keys an invocation and its completion share
    (`_subscription_fields`), which every stage-2 task reads."""
    return pickle.dumps(fields, protocol=5)


def _unpack(data: bytes) -> list[list[Any]]:
    fields: list[list[Any]] = pickle.loads(data)  # trusted: see `_pack`
    return fields


def encode_call(call: Call) -> bytes:
    """A call as compact JSON; `decode_call` gives an equal call back."""
    return _dumps(_call_fields(call))


def decode_call(data: bytes) -> Call:
    """The inverse of `encode_call`."""
    return _call_from_fields(_loads(data))


def _call_fields(call: Call) -> list[Any]:
    output, completion_value = call.output, call.completion_value
    # Equal is not enough (1 == True, [1] == [1.0]): the output is only left out when it is
    # the same JSON, so it comes back with its own types.
    same = output is completion_value or (
        output == completion_value and _dumps(output) == _dumps(completion_value)
    )
    return [
        call.process,
        call.f,
        call.input,
        call.completion_value,
        1 if same else 0,
        None if same else call.output,
        _OUTCOME_CODES[call.outcome],
        call.invoke_index,
        call.complete_index,
        call.key,
        call.invoke_time,
        call.complete_time,
    ]


def _subscription_fields(call: Call) -> list[Any]:
    """`_call_fields` of an assign/subscribe call, whose invocation and completion usually
    carry the same list of keys: then both fields hold one object, which `_pack` writes once
    (every stage-2 task reads every assignment of the history)."""
    fields = _call_fields(call)
    given, done = fields[2], fields[3]
    if given.__class__ is list and done.__class__ is list and given is not done:
        try:
            if pickle.dumps(given) == pickle.dumps(done):  # equal, types and all (1 != True here)
                fields[2] = done
        except (pickle.PicklingError, TypeError, ValueError):  # pragma: no cover - JSON values pickle
            pass
    return fields


def _call_from_fields(fields: list[Any]) -> Call:
    completion_value = fields[3]
    return Call(
        fields[0],
        fields[1],
        fields[2],
        completion_value if fields[4] else fields[5],
        _OUTCOME_BY_CODE[fields[6]],
        fields[7],
        fields[8],
        fields[9],
        fields[10],
        fields[11],
        completion_value,
    )


# A Kafka piece travels as the fields the Kafka checks read of it: process, f, the analysed
# value (`kafka_checker.analysed_value`: the completion's, or the invocation's when there was
# none), outcome, invocation and completion indices; not the key (its part's), nor the other
# value or the times, which no Kafka check reads (they were a quarter of the bytes shipped).
# One extra trailing field marks an info piece of a call that sent to several keys
# (MULTI_INFO_PIECE).


def _piece_fields(piece: Call) -> list[Any]:
    return [
        piece.process,
        piece.f,
        kafka_checker.analysed_value(piece),
        _OUTCOME_CODES[piece.outcome],
        piece.invoke_index,
        piece.complete_index,
    ]


def _piece_from_fields(fields: list[Any], key: str) -> Call:
    code = fields[3]
    analysed = fields[2]
    return new_call(
        fields[0],
        fields[1],
        None,
        analysed if code == "ok" else None,
        _OUTCOME_BY_CODE[code],
        fields[4],
        fields[5],
        key,
        None,
        None,
        analysed,
    )


def result_to_row(result: CheckResult) -> dict[str, Any]:
    """A part's result as JSON-ready fields."""
    return {
        "part": result.partition,
        "checker": result.checker,
        "model": result.model,
        "verdict": result.verdict.value,
        "operations": result.operations,
        "evidence": result.evidence,
        "conventions": result.conventions,
        "seconds": result.seconds,
    }


def row_to_result(row: dict[str, Any]) -> CheckResult:
    """The inverse of `result_to_row`."""
    return CheckResult(
        checker=row["checker"],
        model=row["model"],
        partition=row["part"],
        verdict=Verdict(row["verdict"]),
        operations=int(row["operations"]),
        evidence=row["evidence"],
        conventions=row["conventions"],
        seconds=float(row["seconds"]),
    )


# ---------------------------------------------------------------------------------------
# Stage 1: a byte range of the file -> calls -> pieces
# ---------------------------------------------------------------------------------------


@dataclass
class RangeBorder:
    """What a range learns about calls crossing its borders (byte offsets of completions)."""

    orphans: list[int] = field(default_factory=list)  # ok/fail completions first of their process
    claims: list[int] = field(default_factory=list)  # completions paired by reading past the end
    operations: int = 0  # operations on lines starting in the range
    calls: int = 0  # calls the range made (each call is made by the range holding its invocation)


Op = tuple[int, Any, str, str, JsonValue, JsonValue, int | None]
"""An operation as a plain tuple (index, process, type, f, value, key, time): the fields of
`Operation` (the type by its name), without the frozen dataclass's cost per line."""


_CHECKED_BYTES: Final = 1 << 20
_DEEP_LINE_BYTES: Final = 2 * LINE_NESTING
"""A line orjson decodes (balanced JSON) nests deeper than `LINE_NESTING` only if it is longer
than this: shorter lines skip the depth check (`decode_line` makes it for the rest)."""


def _clean_until(descriptor: int, offset: int) -> int:
    """How far from `offset` a file holds no integer orjson would read as a float
    (`first_long_integer`: `decode_line` must decode such lines itself), checked a block at
    a time: a line that ends by the returned offset holds none."""
    data = os.pread(descriptor, _CHECKED_BYTES, offset)
    found = first_long_integer(data)
    return offset + (len(data) if found < 0 else found)


class _Lines:
    """The operations of a file's lines from a byte offset on, with each line's offset and the
    ordinal an operation without `index` gets (counting the non-blank lines before the range
    only when such a line turns up)."""

    def __init__(self, handle: BinaryIO, start: int, name: str) -> None:
        self.handle = handle
        self.start = start
        self.name = name
        self.base: int | None = 0 if start == 0 else None
        self.seen = 0  # non-blank lines read from `start`

    def read(self, position: int) -> Iterator[tuple[int, Op]]:
        name = self.name
        types = _TYPES
        loads = orjson.loads
        handle = self.handle
        clean_end = position  # lines ending by here hold no run of 20 digits
        for raw in handle:
            offset = position
            position += len(raw)
            if position > clean_end:
                clean_end = _clean_until(handle.fileno(), offset)
            # `decode_line`'s fast path, inline (a call per line costs, and so did its check
            # for long integers, now made per block); anything else, and every error, takes
            # `decode_line` itself.
            obj = None
            shallow = len(raw) <= _DEEP_LINE_BYTES or not nests_deeper(raw, LINE_NESTING)
            if position <= clean_end and shallow:
                try:
                    obj = loads(raw)
                except orjson.JSONDecodeError:
                    obj = None
            if obj.__class__ is not dict:
                obj = decode_line(raw, name, None)
                if obj is None:
                    continue
            self.seen += 1
            # The checks of `make_operation` for the usual field types; it decides the rest.
            get = obj.get
            index = get("index")
            process = get("process")
            kind = get("type")
            f = get("f")
            time = get("time")
            op_type = types.get(kind) if kind.__class__ is str else None
            if (
                op_type is not None
                and index.__class__ is int
                and index >= 0
                and (process.__class__ is int or process.__class__ is str)
                and f.__class__ is str
                and (time is None or time.__class__ is int)
            ):
                yield offset, (index, process, op_type, f, get("value"), get("key"), time)
                continue
            ordinal = self._base() + self.seen - 1 if "index" not in obj else 0
            operation = make_operation(obj, ordinal, name, None, EXPECTED)
            yield (
                offset,
                (
                    operation.index,
                    operation.process,
                    _TYPES[operation.type.value],
                    operation.f,
                    operation.value,
                    operation.key,
                    operation.time,
                ),
            )

    def _base(self) -> int:
        if self.base is None:
            count = 0
            with open(self.handle.name, "rb") as handle:
                remaining = self.start
                for raw in handle:
                    if remaining <= 0:
                        break
                    remaining -= len(raw)
                    if raw.decode("utf-8", errors="replace").strip():
                        count += 1
            self.base = count
        return self.base


def _call(invocation: Op, completion: Op) -> Call:
    kind = completion[2]
    return new_call(
        invocation[1],
        invocation[3],
        invocation[4],
        completion[4] if kind is _OK_TYPE else None,
        _OUTCOMES[kind],
        invocation[0],
        completion[0],
        invocation[5],
        invocation[6],
        completion[6],
        completion[4],
    )


def _open_call(invocation: Op) -> Call:
    return new_call(
        invocation[1],
        invocation[3],
        invocation[4],
        None,
        Outcome.INFO,
        invocation[0],
        None,
        invocation[5],
        invocation[6],
        None,
        None,
    )


def _invokes_while_open(first: Op, operation: Op, source: str) -> HistoryError:
    return HistoryError(
        Position(source, line=operation[0] + 1),
        f"process {operation[1]!r} invokes {operation[3]!r} while its {first[3]!r} "
        f"(index {first[0]}) has not completed",
    )


def range_calls(path: str, start: int, end: int, source: str, border: RangeBorder) -> Iterator[Call]:
    """The calls whose invocation is on a line starting in [start, end) of a JSON Lines file:
    together over all ranges, exactly the calls `history.pair_calls` makes of the whole file.
    `border` collects the completions this range cannot place (see the module docstring)."""
    for invocation, completion in range_pairs(path, start, end, source, border):
        yield _open_call(invocation) if completion is None else _call(invocation, completion)


def range_pairs(
    path: str, start: int, end: int, source: str, border: RangeBorder
) -> Iterator[tuple[Op, Op | None]]:
    """`range_calls` as (invocation, completion or None) operations: what a call is made of,
    for those who need not make it."""
    with open(path, "rb") as handle:
        position = start
        if start > 0:
            handle.seek(start - 1)
            position = start - 1 + len(handle.readline())  # the line under way belongs before
        operations = _Lines(handle, start, source).read(position)
        pending: tuple[int, Op] | None = None
        open_calls: dict[Any, Op] = {}
        seen: set[Any] = set()
        counted = 0
        for offset, operation in operations:
            if offset >= end:
                pending = offset, operation
                break
            counted += 1
            process = operation[1]
            kind = operation[2]
            if kind is _INVOKE:
                first = open_calls.get(process)
                if first is not None:
                    raise _invokes_while_open(first, operation, source)
                open_calls[process] = operation
                seen.add(process)
                continue
            invocation = open_calls.pop(process, None)
            if invocation is None:
                if process not in seen:
                    seen.add(process)  # may complete a call invoked before this range
                    if kind is not _INFO_TYPE:
                        border.orphans.append(offset)
                    continue
                if kind is _INFO_TYPE:
                    continue  # e.g. a nemesis announcing a fault: not a client operation
                raise HistoryError(
                    Position(source, line=operation[0] + 1),
                    f"{kind} for process {process!r} without an open invocation",
                )
            border.calls += 1
            yield invocation, operation
        border.operations += counted
        if open_calls and pending is not None:
            # Read on past the end: each open call ends at its process's next line.
            for offset, operation in itertools.chain((pending,), operations):
                invocation = open_calls.pop(operation[1], None)
                if invocation is None:
                    continue
                if operation[2] is _INVOKE:
                    raise _invokes_while_open(invocation, operation, source)
                border.claims.append(offset)
                border.calls += 1
                yield invocation, operation
                if not open_calls:
                    break
        for invocation in open_calls.values():
            border.calls += 1
            yield invocation, None


def range_rows(
    plan: Plan,
    path: str,
    start: int,
    end: int,
    targets: Sequence[int],
    source: str,
    cycles: bool = False,
    parts: frozenset[str] | None = None,
) -> Iterator[Row]:
    """Stage 1 for one byte range: every piece of every call the range makes (of `parts`
    only, when given), addressed to its part's target; for Kafka also the subscriptions (to
    every target), the flags, and with `cycles` every data call for the cycle part; and the
    border facts. Any error ends the range with one ERROR row."""
    first = targets[0]
    border = RangeBorder()
    flags: set[str] = set()
    if plan.model == "kafka":
        failed = yield from _kafka_range_rows(path, start, end, targets, source, cycles, parts, border, flags)
        if failed:
            return
    else:
        try:
            for call in range_calls(path, start, end, source, border):
                for part, piece in split_calls(plan, (call,)):
                    if parts is None or part in parts:
                        yield target_of(part, targets), PIECE, part, encode_call(piece)
        except (HistoryError, ValueError) as error:
            yield first, ERROR, "", _error_payload(error)
            return
    for offset in border.orphans:
        yield first, ORPHAN, "", b"%d" % offset
    for offset in border.claims:
        yield first, CLAIM, "", b"%d" % offset
    yield first, COUNTS, "", b"%d %d" % (border.operations, border.calls)
    if flags:
        yield first, FLAG, "", orjson.dumps(sorted(flags))


def _kafka_range_rows(
    path: str,
    start: int,
    end: int,
    targets: Sequence[int],
    source: str,
    cycles: bool,
    parts: frozenset[str] | None,
    border: RangeBorder,
    flags: set[str],
) -> Generator[Row, None, bool]:
    """`range_rows` of a Kafka history: per key, one row holding all its pieces in the range
    (`_piece_fields`), and the range's assign/subscribe calls in one row to every target; a
    row per call cost more to make, ship and read than its check. Returns whether it ended
    in an ERROR row."""
    pieces: dict[str, list[bytes]] = {}  # key -> its pieces in this window, each as JSON
    subscriptions: list[list[Any]] = []
    # Every data call, for the whole-history part: their fields, pickled once per range at the
    # end (`_pack`: trusted, exact; a JSON text per call cost more than the part's check).
    whole: list[list[Any]] = []
    packed: list[tuple[str, bytes]] = []
    window = _WINDOW_CALLS
    try:
        for invocation, completion in range_pairs(path, start, end, source, border):
            window -= 1
            if not window:
                window = _WINDOW_CALLS
                packed.extend((key, _join_pieces(entries)) for key, entries in pieces.items())
                pieces.clear()
            if completion is not None and _fast_pieces(invocation, completion, pieces):
                if cycles:
                    whole.append(_call_fields(_call(invocation, completion)))
                continue
            call = _open_call(invocation) if completion is None else _call(invocation, completion)
            f = call.f
            if f in kafka_checker.SUBSCRIPTION_FUNCTIONS:
                subscriptions.append(_subscription_fields(call))
                continue
            if f == "txn":
                flags.add(TRANSACTIONS)
            split = kafka_checker.split_call(call)
            several = len(split) > 1 and call.outcome is Outcome.INFO and _sends_to_several_keys(call)
            for key, piece in split:
                fields = _piece_fields(piece)
                if several:
                    fields.append(1)
                _add_piece(pieces, key, fields)
            if cycles and f in kafka_checker.DATA_FUNCTIONS:
                whole.append(_call_fields(call))
        packed.extend((key, _join_pieces(entries)) for key, entries in pieces.items())
        pieces.clear()
        rows: list[Row] = []
        addresses: dict[str, tuple[str, int]] = {}
        for key, payload in packed:
            address = addresses.get(key)
            if address is None:
                part = _part_json(key)
                address = addresses[key] = part, target_of(part, targets)
            if parts is None or address[0] in parts:
                rows.append((address[1], PIECES, address[0], payload))
        if subscriptions:
            payload = _pack(subscriptions)
            rows.extend((target, SUBSCRIPTIONS, "", payload) for target in targets)
    except (HistoryError, ValueError) as error:
        yield targets[0], ERROR, "", _error_payload(error)
        return True
    yield from rows
    if whole:
        yield target_of(CYCLES_PART, targets), WHOLE, CYCLES_PART, _pack(whole)
    return False


_WINDOW_CALLS: Final = 16384
"""Stage 1 joins each key's encoded pieces into one row every this many calls, so it holds
few small bytes objects at a time."""


def _fast_pieces(invocation: Op, completion: Op, pieces: dict[str, list[bytes]]) -> bool:
    """Add `split_call`'s pieces (encoded `_piece_fields`) of the calls that make up most of
    a history - sends, a poll of string keys - read straight off the operations, to `pieces`;
    False (and nothing added) for any other call: `split_call` then makes them. Written for
    speed (it runs once per call): the one-key cases first."""
    f = invocation[3]
    given = invocation[4]
    done = completion[4]
    value = given if done is None else done  # what `split_call` looks at (`kafka_checker.analysed_value`)
    key: str | None = None
    keys: list[str] | None = None
    if f == "send":
        key = kafka_checker.single_send_key(value)
        if key is None:
            keys = kafka_checker.plain_sends(value)
            if keys is None:
                return False
    elif f == "poll":
        polled = kafka_checker.plain_poll(value)
        if polled is None:
            return False
        if len(polled) == 1:
            key = next(iter(polled))
        elif not polled:
            return True
        else:
            keys = sorted(polled)
    else:
        return False
    if key is None and keys is not None and len(keys) == 1:
        key = keys[0]
    if key is not None:
        _add_piece(pieces, key, [invocation[1], f, value, completion[2], invocation[0], completion[0]])
        return True
    assert keys is not None
    kind = completion[2]
    # The analysed value of each key's piece: the completion's restricted to the key (never
    # None when the completion had a value), else the invocation's.
    analysed = kafka_checker.restrict_each(given if done is None else done, keys)
    several = f == "send" and kind is _INFO_TYPE  # an info call that sent to several keys
    for key in keys:
        fields = [invocation[1], f, analysed[key], kind, invocation[0], completion[0]]
        if several:
            fields.append(1)
        _add_piece(pieces, key, fields)
    return True


def _add_piece(pieces: dict[str, list[bytes]], key: str, fields: list[Any]) -> None:
    encoded = _dumps(fields)
    entries = pieces.get(key)
    if entries is None:
        pieces[key] = [encoded]
    else:
        entries.append(encoded)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Run a task with the cyclic garbage collector off. Tasks allocate millions of small
    acyclic objects (calls, their values), which reference counting frees; the collector can
    free nothing among them, yet rescans every live one over and over (it measured a third of
    stage 2's time, and a fifth of stage 1's)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _sends_to_several_keys(call: Call) -> bool:
    # Only such an info call's commitment can depend on another part (rare: transactions).
    _, sends = kafka_checker.commit_facts(call)
    return len({key for key, _ in sends}) > 1


def _part_json(key: str) -> str:
    # `checking.partition_key_json` of a Kafka key (always a string), without the call
    # (but with its fallback for what orjson cannot write: a lone surrogate).
    try:
        return orjson.dumps(key).decode("utf-8")
    except TypeError:
        return json.dumps(key)


def internal_payload(error: BaseException, stage: str) -> bytes:
    """An INTERNAL row's payload: what a bug in a task was, where, and its traceback."""
    return json.dumps(
        [type(error).__name__, str(error), stage, "".join(traceback.format_exception(error))]
    ).encode("utf-8")


def _error_payload(error: Exception) -> bytes:
    if isinstance(error, HistoryError):
        # A range knows no lines: the line of an error here is its operation's index + 1,
        # which the engine locates in the file (`engine._located`).
        position = error.position
        line = position.index + 1 if position.index is not None else position.line
        return _dumps([line, error.message])
    return _dumps([None, str(error)])


# ---------------------------------------------------------------------------------------
# Stage 2: the pieces of some parts -> their results
# ---------------------------------------------------------------------------------------


def check_rows(
    plan: Plan,
    rows: Iterable[tuple[int, str, bytes]],
    committed: frozenset[int] | None,
    on_part: Callable[[int, int], None] | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
    on_verdict: Callable[[str, int], None] | None = None,
) -> list[OutRow]:
    """Stage 2 for one target: check every part whose pieces are among `rows` (kind, part,
    payload). `committed`: the info calls known to have committed (a second run), or None to
    decide it inside each part (exact unless an info call sent to several keys). `on_part`
    hears (number, count) before each part this process checks, `on_verdict` each part's
    verdict as it is found. The parts are checked smallest first, in `pool`'s worker
    processes when given (`spark_checks.parallel`), and under `fail_fast` not after the first
    part that is invalid whatever the other parts find."""
    parts: dict[str, list[bytes]] = defaultdict(list)
    blobs: dict[str, list[bytes]] = defaultdict(list)
    multi_info: dict[str, list[bytes]] = defaultdict(list)
    whole: dict[str, list[bytes]] = defaultdict(list)
    subscriptions: dict[int, Call] = {}
    out: list[OutRow] = []
    orphans: set[bytes] = set()
    claims: set[bytes] = set()
    for kind, part, payload in rows:
        if kind == PIECES:
            blobs[part].append(payload)
        elif kind == PIECE:
            parts[part].append(payload)
        elif kind == WHOLE:
            whole[part].append(payload)
        elif kind == MULTI_INFO_PIECE:
            parts[part].append(payload)
            multi_info[part].append(payload)
        elif kind == SUBSCRIPTIONS:
            for fields in _unpack(payload):
                call = _call_from_fields(fields)
                subscriptions[call.invoke_index] = call  # one copy, should targets ever share a task
        elif kind == SUBSCRIPTION:
            call = decode_call(payload)
            subscriptions[call.invoke_index] = call
        elif kind == ORPHAN:
            orphans.add(payload)
        elif kind == CLAIM:
            claims.add(payload)
        else:
            out.append((kind, payload))  # FLAG, COUNTS and ERROR go through to the driver
    unclaimed = orphans - claims
    if unclaimed:
        offset = min(int(payload) for payload in unclaimed)
        message = f"a completion without an open invocation (byte {offset})"
        out.append((ERROR, orjson.dumps([None, message])))
    if any(kind in (ERROR, INTERNAL) for kind, _ in out):
        return out
    try:
        calls = _Parts(parts, blobs, multi_info, whole)
        out.extend(
            _check_parts(
                plan, calls, list(subscriptions.values()), committed, on_part, pool, fail_fast, on_verdict
            )
        )
    except (HistoryError, ValueError) as error:
        out.append((ERROR, _error_payload(error)))
    return out


class _Parts:
    """The pieces a stage-2 task got, still encoded: each part is decoded when its turn comes
    and dropped after, so a task holds one part's calls at a time."""

    def __init__(
        self,
        single: dict[str, list[bytes]],
        blobs: dict[str, list[bytes]],
        multi_info: dict[str, list[bytes]],
        whole: dict[str, list[bytes]] | None = None,
    ) -> None:
        self.single = single  # part -> one encoded call each (`encode_call`)
        self.whole = whole or {}  # the whole-history part -> pickled lists of call fields (WHOLE)
        self.blobs = blobs  # Kafka part -> lists of pieces (`_piece_fields`)
        self.multi_info = multi_info  # part -> its MULTI_INFO_PIECE calls, encoded

    def names(self) -> list[str]:
        return sorted(self.single.keys() | self.blobs.keys() | self.whole.keys())

    def take_encoded(self, part: str) -> EncodedPart:
        """The part's pieces, still encoded (to be decoded by `decode_part`, anywhere)."""
        return (
            self.single.pop(part, []),
            self.whole.pop(part, []),
            self.blobs.pop(part, []),
            self.multi_info.get(part, []),
        )

    def take(self, part: str) -> tuple[list[Call], set[int]]:
        """The part's calls, and the invocation indices of its multi-key info calls."""
        return decode_part(part, self.take_encoded(part))


EncodedPart = tuple[list[bytes], list[bytes], list[bytes], list[bytes]]
"""A part's pieces as stage 2 got them: single calls, whole-history lists, Kafka piece
blobs, multi-key info calls (`_Parts`)."""


def encoded_size(encoded: EncodedPart) -> int:
    """A part's encoded bytes: how much checking it is likely to cost (small parts go first)."""
    return sum(len(payload) for pieces in encoded for payload in pieces)


def decode_part(part: str, encoded: EncodedPart) -> tuple[list[Call], set[int]]:
    """A part's calls, and the invocation indices of its multi-key info calls."""
    single, whole, blobs, multi_info = encoded
    calls = [decode_call(payload) for payload in single]
    for payload in whole:
        calls.extend(_call_from_fields(fields) for fields in _unpack(payload))
    several = {decode_call(payload).invoke_index for payload in multi_info}
    if blobs:
        key = json.loads(part)  # once per part; orjson refuses the escape of a lone surrogate
        make = new_call
        outcomes = _OUTCOME_BY_CODE
        for blob in blobs:
            entries = _loads(blob)
            # `_piece_from_fields` of each, inline (once per piece of the history).
            calls.extend(
                [
                    make(
                        e[0],
                        e[1],
                        None,
                        e[2] if e[3] == "ok" else None,
                        outcomes[e[3]],
                        e[4],
                        e[5],
                        key,
                        None,
                        None,
                        e[2],
                    )
                    for e in entries
                ]
            )
            several.update(fields[4] for fields in entries if len(fields) > 6)
    return calls, several


def _check_parts(
    plan: Plan,
    parts: _Parts,
    subscriptions: list[Call],
    committed: frozenset[int] | None,
    on_part: Callable[[int, int], None] | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
    on_verdict: Callable[[str, int], None] | None = None,
) -> Iterator[OutRow]:
    kafka = plan.model == "kafka"
    context = KafkaContext()
    if kafka:
        subscriptions.sort(key=lambda call: call.invoke_index)
        context = KafkaContext(
            subscriptions=tuple(subscriptions),
            sub_via=tuple(sorted({call.f for call in subscriptions if call.outcome is not Outcome.FAIL})),
            committed_info=committed or frozenset(),
            has_transactions=CYCLES_PART in parts.names(),
            prepared=kafka_checker.Assignments(subscriptions),
        )
    names = parts.names()
    encoded = [(part, parts.take_encoded(part)) for part in names]
    tasks = [Task(encoded_size(pieces), _part_rows, (part, pieces), name=part) for part, pieces in encoded]
    pool = worth_workers(pool, sum(task.size for task in tasks), PARALLEL_MIN_BYTES)
    if pool is not None:
        plan = replace(plan, budget=searches_budget(plan.budget, pool, len(names)))
    started = 0

    def on_start(_index: int) -> None:
        nonlocal started
        started += 1
        if on_part is not None:
            on_part(started, len(names))

    def stopped(index: int, stop: Stop) -> PartRows:
        part, pieces = encoded[index]
        count = len(decode_part(part, pieces)[0])
        result = unchecked_result(plan, part, count, stop_reason(stop))
        return result.verdict.value, False, [(RESULT, _dumps(result_to_row(result)))]

    def done(_index: int, rows: PartRows) -> None:
        if on_verdict is not None:
            on_verdict(rows[0], len(names))

    answers = (pool or WorkerPool()).run(
        tasks,
        shared=(plan, context, committed),
        is_invalid=_finally_invalid,
        stopped=stopped,
        fail_fast=fail_fast,
        deadline=plan.budget.deadline,
        on_done=done,
        on_start=on_start,
    )
    for _, _, rows in answers:
        yield from rows


PartRows = tuple[str, bool, list[OutRow]]
"""A part's verdict, whether it is invalid whatever other parts find (no info call it
assumed uncommitted is left undecided), and its stage-2 rows."""


def _finally_invalid(rows: PartRows) -> bool:
    return rows[1]


def _part_rows(
    shared: tuple[Plan, KafkaContext, frozenset[int] | None],
    part: str,
    pieces: EncodedPart,
    task: TaskContext,
) -> PartRows:
    """Check one part from its encoded pieces (here or in a worker process)."""
    plan, context, committed = shared
    calls, several = decode_part(part, pieces)
    if plan.model == "kafka":
        if committed is None and part != CYCLES_PART:
            result, own = check_key_deciding_commits(plan, context, part, calls)
            rows: list[OutRow] = []
            if own:
                rows.append((COMMITTED, orjson.dumps(sorted(own))))
            undecided = several - own
            if undecided:
                rows.append((UNDECIDED, _dumps([part, sorted(undecided)])))
            rows.append((RESULT, _dumps(result_to_row(result))))
            invalid = result.verdict is Verdict.INVALID
            return result.verdict.value, invalid and not undecided, rows
        plan = plan.with_kafka_context(context)
    checked = check_part(plan, part, calls, parts_left=task.share)
    invalid = checked.verdict is Verdict.INVALID
    return checked.verdict.value, invalid, [(RESULT, _dumps(result_to_row(checked)))]


# ---------------------------------------------------------------------------------------
# The driver: what came back
# ---------------------------------------------------------------------------------------


@dataclass
class Gathered:
    """Stage 2's rows, sorted out on the driver."""

    results: list[CheckResult] = field(default_factory=list)
    errors: list[tuple[int | None, str]] = field(default_factory=list)
    committed: set[int] = field(default_factory=set)
    flags: set[str] = field(default_factory=set)
    undecided: dict[str, set[int]] = field(default_factory=dict)
    internal: list[tuple[str, str, str, str]] = field(default_factory=list)  # INTERNAL rows
    operations: int = 0  # in the history (lines)
    calls: int = 0  # in the history (paired operations, and invocations never completed)

    def recheck(self) -> frozenset[str]:
        """Parts whose verdict assumed an info call had not committed that another part saw
        commit: they must be checked again, knowing `committed`."""
        return frozenset(part for part, calls in self.undecided.items() if calls & self.committed)

    def replace(self, again: Gathered) -> None:
        """Take the second run's results over the first's (same parts), and its errors (the
        counts stay the first run's: it read the whole history)."""
        redone = {result.partition for result in again.results}
        self.results = [r for r in self.results if r.partition not in redone] + again.results
        self.errors.extend(again.errors)

    def first_error(self) -> tuple[int | None, str] | None:
        """The error on the earliest line (errors without a line last)."""
        if not self.errors:
            return None
        return min(self.errors, key=lambda error: (error[0] is None, error[0] or 0, error[1]))


def gather(rows: Iterable[OutRow]) -> Gathered:
    """Sort stage 2's rows into results, errors, committed info calls and flags."""
    gathered = Gathered()
    for kind, payload in rows:
        if kind == COUNTS:
            operations, calls = payload.split()
            gathered.operations += int(operations)
            gathered.calls += int(calls)
            continue
        value: JsonValue = _loads(payload)
        if kind == RESULT:
            gathered.results.append(row_to_result(value))
        elif kind == ERROR:
            gathered.errors.append((value[0], value[1]))
        elif kind == INTERNAL:
            gathered.internal.append((value[0], value[1], value[2], value[3]))
        elif kind == COMMITTED:
            gathered.committed.update(value)
        elif kind == FLAG:
            gathered.flags.update(value)
        elif kind == UNDECIDED:
            gathered.undecided[value[0]] = set(value[1])
    return gathered
