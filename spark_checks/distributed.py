"""The stages every engine runs over a history, as plain Python (no pyspark, so they are
unit-tested without a JVM): read a split, pair its calls, split them into parts, pair the
calls that cross splits, check each part. `engine.verify_here` runs them in this process (the
whole file as one split); `engine.verify_spark` runs them in Spark tasks (`spark_read`'s
frames) and moves rows between them with Spark's own operators.

Stage 1, per split of the file (`split_rows`): the lines are parsed (`jsonl_ops`, `edn_ops`,
or any reader's operations) into `Op` tuples with their line (or Parquet row), and paired
within the split: a process has at most one call open, so nearly every call has its
invocation and completion in one split. What the split cannot pair goes out as `BORDER`
rows keyed by process: the invocations still open at its end, and the first operation of
each process in it (a completion that may end an earlier split's call, or an invocation
that must not start while one is open). The calls are split into per-part pieces
(`checking.split_calls`) and leave as `CALLS` rows, one per part and window of calls; a
Kafka history's assign/subscribe calls, which every key's check needs, as the CALLS rows of
`SUBSCRIPTIONS_PART`, and its data calls' `kafka_checker.CallFacts` (no values) as those of
the whole-history part (`CYCLES_PART`; the calls whole when `Plan.ships_whole_calls`). A
`FACTS` row gives the split's counts.

Border pairing (`border_rows`): the border rows of one process, in file order (Spark
repartitions them by process and sorts by position: a small shuffle, a few rows per process
and split), are paired by `history.pair_calls`' rules; their calls leave as stage 1's do.

Stage 2 (`check_rows`): the CALLS rows of some parts, with those of `SUBSCRIPTIONS_PART` ->
each part checked (`checking.check_part`) -> one `answer` per part. Whether an `info` send
committed (some value it sent was read by an `ok` call) is decided inside its key's part,
where every read of that key is: exact for a call that sent to one key. A part that assumed
a multi-key info call had not committed says so in its answer; when another part saw it
commit, the engine checks that part again knowing it (`Gathered.recheck`).

One encoding of a call (`call_fields`/`call_from_fields`): a JSON list of `history.Call`'s
fields; a Kafka piece carries only what the Kafka checks read (`kafka_fields`). Positions
are (split, line): a split is the byte where it starts (a Parquet file: 0, with the row as
its line), and a line is counted from the split's start unless the engine gave each split's
first line and operation ordinal (`Starts`), which it does only when it must: an operation
without an index, or an error to name by its line (see `spark_read`).

Bad input raises nowhere in a stage: it becomes an `ERROR` row with its position and
`Problem` (a line that does not parse or pair, a call's value that a model refuses, a
Kafka value malformed), of which the engine reports the first as the local reader would.
Any other exception is a bug and propagates.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final

import orjson

from spark_checks import kafka_checker
from spark_checks.checking import (
    CYCLES_PART,
    DecodedCalls,
    KafkaContext,
    Plan,
    check_key_deciding_commits,
    check_part,
    check_whole_facts,
    partition_key_json,
    remembered_context,
    split_calls,
    unchecked_result,
)
from spark_checks.history import (
    Call,
    CheckResult,
    HistoryError,
    JsonValue,
    Operation,
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
from spark_checks.readers._common import make_operation, nests_deeper, shown, utf8_text
from spark_checks.readers.edn import EXPECTED_OP, iter_forms
from spark_checks.readers.jsonl import EXPECTED, LINE_NESTING, decode_line

# Stage 1's rows and border pairing's: (kind, part, split, line, payload).
CALLS: Final = 0  # part: a part's key JSON, or SUBSCRIPTIONS_PART; payload: JSON list of `call_fields`
BORDER: Final = 1  # part: the process as JSON; split, line: where; payload: JSON [role, *op]
FACTS: Final = 2  # payload: JSON [operations, calls] of a split
ERROR: Final = 3  # split, line: where (or the operation's index); payload: JSON [problem, message]
Row = tuple[int, str, int, int, bytes]

SUBSCRIPTIONS_PART: Final = ""
"""The CALLS rows of a Kafka history's assign/subscribe calls, which every key's check needs
(no part's key: a key's JSON text is never empty)."""

# Border roles: the first operation of a process in a split, an invocation open at its end.
# Sorted by position then role: an invocation that is both comes first as FIRST.
FIRST: Final = 0
OPEN: Final = 1


class Problem:
    """What an ERROR row reports: how the engine names it."""

    LINE: Final = "line"  # at (split, line): a line that does not parse, or pair
    INDEX: Final = "index"  # at the operation with this index (a call's value is malformed)
    VALUE: Final = "value"  # a model cannot hold a call's value (ValueError): located by the engine
    ORDINALS: Final = "ordinals"  # an operation without an index, read without `Starts`
    BUG: Final = "bug"  # not bad input: an exception in a Spark task (message: [text, stage, traceback])


Starts = Mapping[int, tuple[int, int]]
"""Per split (its first byte): its first line number and the ordinal its first operation
takes, when the engine counted them."""

Op = tuple[Any, ...]
"""An operation as a plain tuple (index, process, type, f, value, key, time): the fields of
`Operation` (the type by its name), without the frozen dataclass's cost per line. Typed as a
tuple of any length: compiled, a tuple of fixed types is unpacked into C fields and packed
again, its index into a new int object, wherever it is passed on or stored. For the same
reason the stages' indices and lines are typed Any where they are listed (`kafka_fields`), and
`usual_op` checks an index in a function (`_natural`): an index narrowed to `int` would be
boxed anew into the Op."""
Located = tuple[Any, ...]
"""An operation with its line (line, `Op`), typed as `Op` is."""

# An operation's type travels as its canonical name (one string object per name, from
# `_TYPES`, so `is` compares them).
_TYPES: Final = {t.value: t.value for t in OpType}
_INVOKE: Final = _TYPES["invoke"]
_OK_TYPE: Final = _TYPES["ok"]
_INFO_TYPE: Final = _TYPES["info"]
_OUTCOMES: Final[dict[str, Outcome]] = {t.value: Outcome(t.value) for t in OpType if t is not OpType.INVOKE}
_OUTCOME_BY_CODE: Final = {outcome.value: outcome for outcome in Outcome}


class OrdinalsNeededError(Exception):
    """An operation without an index in a split read without `Starts` (its index is its
    ordinal in the file, which the split does not know)."""


# ---------------------------------------------------------------------------------------
# The one encoding of a call
# ---------------------------------------------------------------------------------------

_STANDARD: Final = b"J"  # marks JSON written by the standard library (orjson could not, exactly)


def dumps(value: Any) -> bytes:
    """Compact JSON; what orjson cannot write (integers beyond 64 bits, lone surrogates) is
    written by the standard library behind a marker, so `loads` reads it back exactly. A
    history holds no NaN nor infinity (every reader refuses them), so no value here does."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _STANDARD + json.dumps(value, separators=(",", ":")).encode("utf-8")


def loads(data: bytes) -> Any:
    """The inverse of `dumps`, and of `zlib.compress(dumps(...))` (`_Sink.take`)."""
    data = zlib.decompress(data) if data[:1] == b"x" else data  # zlib's first byte (JSON's: `[`, `J`)
    if data[:1] == _STANDARD:
        return json.loads(data[1:])
    return orjson.loads(data)


def call_fields(call: Call) -> list[Any]:
    """A call as a list of its fields (JSON-ready); `call_from_fields` gives an equal call.
    The output is written only when it is not the completion's value as the same JSON
    (equal is not enough: 1 == True, [1] == [1.0])."""
    output, completion_value = call.output, call.completion_value
    same = output is completion_value or (
        output == completion_value and dumps(output) == dumps(completion_value)
    )
    return [
        call.process,
        call.f,
        call.input,
        completion_value,
        1 if same else 0,
        None if same else output,
        call.outcome.value,
        call.invoke_index,
        call.complete_index,
        call.key,
        call.invoke_time,
        call.complete_time,
    ]


def call_from_fields(fields: Sequence[Any]) -> Call:
    """The inverse of `call_fields` (a trailing field, `SEVERAL`, is ignored)."""
    completion_value = fields[3]
    return new_call(
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


def kafka_fields(
    process: Any,
    f: str,
    analysed: JsonValue,
    outcome: str,
    invoked: Any,
    completed: Any,
    key: Any,
    times: tuple[Any, Any] = (None, None),
) -> list[Any]:
    """A Kafka call's `call_fields` with only what the Kafka checks read: process, function,
    outcome, indices, key, times and the analysed value (`kafka_checker.analysed_value`,
    the only way they read a value) as its completion's (and its output, if ok); not the
    other value. A per-key piece leaves out the times too (no per-key check reads them).
    Checked alike; a send's value is shipped once per part, not twice."""
    ok = 1 if outcome == "ok" else 0
    return [process, f, None, analysed, ok, None, outcome, invoked, completed, key, times[0], times[1]]


def _kafka_call_fields(call: Call, key: Any, times: bool) -> list[Any]:
    """`kafka_fields` of a call or piece; its times for the whole-history part only."""
    analysed, indices = kafka_checker.analysed_value(call), (call.invoke_index, call.complete_index)
    when = (call.invoke_time, call.complete_time) if times else (None, None)
    return kafka_fields(call.process, call.f, analysed, call.outcome.value, *indices, key, when)


SEVERAL: Final = 1
"""A 13th field of a Kafka piece: an info call that sent to several keys (see the module
docstring: its commitment may be decided in another part)."""


# ---------------------------------------------------------------------------------------
# Stage 1: lines -> operations
# ---------------------------------------------------------------------------------------

_DEEP_LINE_BYTES: Final = 2 * LINE_NESTING
"""A line orjson decodes (balanced JSON) nests deeper than `LINE_NESTING` only if it is longer
than this: shorter lines skip the depth check (`decode_line` makes it for the rest)."""


def usual_op(obj: dict[str, Any]) -> Op | None:
    """The usual operation as an `Op`, checked as `make_operation` checks it (`obj.get`: C); else None."""
    kind, index, f = obj.get("type"), obj.get("index"), obj.get("f")
    op_type = _op_type(kind) if type(kind) is str else None
    if op_type is None or not _natural(index) or type(f) is not str:
        return None
    process, time = obj.get("process"), obj.get("time")
    if (type(process) is int or type(process) is str) and (time is None or type(time) is int):
        return index, process, op_type, f, obj.get("value"), obj.get("key"), time
    return None


def _op_type(kind: str) -> str | None:
    """`_TYPES.get(kind)` by comparisons (each line's type is a new string: a lookup hashes it)."""
    return _INVOKE if kind == "invoke" else _OK_TYPE if kind == "ok" else _TYPES.get(kind)


def _natural(index: object) -> bool:
    return type(index) is int and index >= 0


def _holds_float(value: Any) -> bool:
    """Whether a JSON value holds a float (orjson reads an integer beyond 64 bits as one)."""
    if type(value) is dict:
        return _holds_float(list(value.values()))
    if type(value) is list:
        for item in value:
            if type(item) is float or ((type(item) is list or type(item) is dict) and _holds_float(item)):
                return True
    return type(value) is float


def jsonl_ops(
    chunks: Iterable[Sequence[bytes]], source: str, first_line: int, first_ordinal: int | None
) -> Iterator[tuple[int, Op]]:
    """The operations of consecutive JSON Lines lines (given a chunk at a time), each with its
    line number (the first line is `first_line`). `first_ordinal`: the ordinal of the first
    operation in the file (the index of an operation without one), None when unknown
    (`OrdinalsNeededError` if one is missing). Reads as `readers.jsonl.parse_line` does: its checks
    for the usual line in `usual_op`, `decode_line` and `make_operation` for any other, or where
    orjson read a float (an integer beyond 64 bits? sought in the values: 46 M instructions at
    10^5 bench operations; 143 M in the bytes). Beside the readers' own: stage 1 of 400,000 Kafka
    operations 3.0 CPU s, 4.6 with `parse_line` (`test_the_fast_line_reader_gives_the_readers_report`)."""
    parse = orjson.loads
    line = first_line
    seen = 0  # operations so far
    for chunk in chunks:
        for raw in chunk:
            at = line
            line += 1
            obj = None
            if len(raw) <= _DEEP_LINE_BYTES or not nests_deeper(raw, LINE_NESTING):
                try:
                    obj = parse(raw)
                except orjson.JSONDecodeError:
                    obj = None
            usual = usual_op(obj) if type(obj) is dict else None
            if usual is None or _holds_float(usual[4]) or _holds_float(usual[5]):
                if type(obj) is not dict or _holds_float(obj):
                    obj = decode_line(raw, source, at)
                    if obj is None:
                        continue
                usual = usual_op(obj)
                if usual is None:
                    if "index" not in obj and first_ordinal is None:
                        raise OrdinalsNeededError
                    usual = operation_op(
                        make_operation(obj, (first_ordinal or 0) + seen, source, at, EXPECTED)
                    )
            seen += 1
            yield at, usual


def operation_op(operation: Operation) -> Op:
    """An `Operation` as an `Op` tuple."""
    return (
        operation.index,
        operation.process,
        _TYPES[operation.type.value],
        operation.f,
        operation.value,
        operation.key,
        operation.time,
    )


EDN_RUN_LINES: Final = 4096
"""Consecutive EDN lines parsed as one text (one token cache, one scan)."""
SPANS_LINES: Final = (
    "the Spark engine reads EDN histories one op map per line (as Jepsen writes history.edn); "
    "this line {what}"
)
"""The message of an EDN line that does not hold exactly one op map that starts it: the
engine then reads the file whole in one task (`spark_read`), as the local reader does."""


def edn_ops(
    lines: Iterable[tuple[bytes, bool]], source: str, first_line: int, first_ordinal: int | None
) -> Iterator[tuple[int, Op]]:
    """The op maps of consecutive EDN lines, each given with whether it starts an op map
    (`spark_read.EDN_OPERATION_LINE`, matched by Spark): one op map per line that starts one,
    as Jepsen writes `history.edn`. A line that breaks that rule is a HistoryError with
    `SPANS_LINES`."""
    from spark_checks.readers.edn_fast import read_jepsen_ops  # only EDN histories need it

    start, ordinal, lines = first_line, first_ordinal, iter(lines)
    while run := list(itertools.islice(lines, EDN_RUN_LINES)):
        every = all(holds for _, holds in run)
        jepsen = read_jepsen_ops([raw for raw, _ in run]) if every else None
        if jepsen is not None:  # straight from the list: no generator between
            yield from zip(range(start, start + len(jepsen)), jepsen, strict=True)
        else:
            yield from _edn_run(run, source, start, ordinal)
        start += len(run)
        if ordinal is not None:
            ordinal += sum(holds for _, holds in run)


_EDN_OPENER: Final = __import__("re").compile(r"[\s,]*[\[(]")
_EDN_CLOSER: Final = __import__("re").compile(r"[\])][\s,]*(?:;[^\n]*)?\Z")
_EMPTY_EDN_LINE: Final = __import__("re").compile(r"[\s,]*(?:;[^\n]*)?\Z")


def _edn_run(
    run: list[tuple[bytes, bool]], source: str, first: int, first_ordinal: int | None
) -> Iterator[tuple[int, Op]]:
    """The op maps of a run of lines but Jepsen's usual ones in Jepsen's field order (which
    `edn_ops` reads by `edn_fast.read_jepsen_ops`, their `Op`s without a map: callgrind, 10^5
    bench ops, 57 k instructions per op read against 48 k). A run of Jepsen's usual lines is
    read through orjson (`edn_fast.read_op_maps`, whose docstring has the gain: 7.3 us per op
    against 21 on the bench's 10^6-op files), any other by `iter_forms` below; `test_edn_fast`
    compares the two."""
    from spark_checks.readers.edn_fast import read_op_maps  # only EDN histories need it

    maps = read_op_maps([raw for raw, _ in run]) if all(holds for _, holds in run) else None
    if maps is not None:
        for number, value in enumerate(maps):
            line = first + number
            usual = usual_op(value)
            if usual is not None:
                yield line, usual
                continue
            if "index" not in value and first_ordinal is None:
                raise OrdinalsNeededError
            default = (first_ordinal or 0) + number
            yield line, operation_op(make_operation(value, default, source, line, EXPECTED_OP))
        return
    texts = []
    ordinals: list[int] = []
    ordinal = 0
    for number, (raw, holds) in enumerate(run):
        ordinals.append(ordinal)
        ordinal += holds
        line = first + number
        text = utf8_text(raw, source, line)
        opener = _EDN_OPENER.match(text)
        if opener is not None:
            text = " " * opener.end() + text[opener.end() :]
        if text.rstrip()[-1:] in ("]", ")"):
            closer = _EDN_CLOSER.search(text)
            if closer is not None:
                text = text[: closer.start()]
        if not holds and not _EMPTY_EDN_LINE.match(text):
            _refuse_continuation(text, source, line)
            text = ""
        texts.append(text)
    read: set[int] = set()
    try:
        for value, line in iter_forms(["\n".join(texts)], source, first_line=first):
            number = line - first
            at = Position(source, line=line)
            if not run[number][1] or line in read:
                what = (
                    "holds more than one op map"
                    if run[number][1]
                    else "holds an op map that does not start it"
                )
                raise HistoryError(at, SPANS_LINES.format(what=what))
            read.add(line)
            if type(value) is not dict:
                described = "a vector/list" if isinstance(value, list) else shown(value)
                raise HistoryError(at, f"{EXPECTED_OP}; got {described}")
            if "index" not in value and first_ordinal is None:
                raise OrdinalsNeededError
            default = (first_ordinal or 0) + ordinals[number]
            yield line, operation_op(make_operation(value, default, source, line, EXPECTED_OP))
    except HistoryError as error:
        if error.message.startswith(("unterminated map", "unexpected '}'")):
            raise HistoryError(error.position, SPANS_LINES.format(what="holds part of an op map")) from None
        raise
    for number, (_raw, holds) in enumerate(run):
        if holds and first + number not in read:
            raise HistoryError(
                Position(source, line=first + number), SPANS_LINES.format(what="holds no op map alone")
            )


def _refuse_continuation(text: str, source: str, line: int) -> None:
    """A line that starts no op map holds no form (a discarded `#_` form passes), or it is
    part of a map over several lines."""
    at = Position(source, line=line)
    try:
        forms = list(iter_forms([text], source, first_line=line))
    except HistoryError as error:
        if error.message.startswith(("unterminated", "unexpected")):
            raise HistoryError(at, SPANS_LINES.format(what="holds part of an op map")) from None
        raise
    if forms:
        raise HistoryError(at, SPANS_LINES.format(what="holds part of an op map"))


# ---------------------------------------------------------------------------------------
# Stage 1: operations -> calls -> rows
# ---------------------------------------------------------------------------------------


def _call(invocation: Op, completion: Op) -> Call:
    kind, value = completion[2], completion[4]
    return new_call(
        invocation[1], invocation[3], invocation[4], value if kind is _OK_TYPE else None, _OUTCOMES[kind],
        invocation[0], completion[0], invocation[5], invocation[6], completion[6], value,
    )  # fmt: skip


def _open_call(invocation: Op) -> Call:
    return new_call(
        invocation[1], invocation[3], invocation[4], None, Outcome.INFO, invocation[0], None,
        invocation[5], invocation[6], None, None,
    )  # fmt: skip


def _invokes_while_open(first: Op, operation: Op, at: Position) -> HistoryError:
    return HistoryError(
        at,
        f"process {operation[1]!r} invokes {operation[3]!r} while its {first[3]!r} "
        f"(index {first[0]}) has not completed",
    )


def _without_invocation(operation: Op, at: Position) -> HistoryError:
    return HistoryError(at, f"{operation[2]} for process {operation[1]!r} without an open invocation")


class _Sink:
    """Calls -> CALLS rows: each call's pieces (`call_fields` lists) gathered per part, one row
    per part every `WINDOW_CALLS` calls; a Kafka history's assign/subscribe calls go to
    `SUBSCRIPTIONS_PART`, and each of its data calls also to the whole-history part (facts)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.kafka = plan.model == "kafka"
        self.pieces: defaultdict[str, list[list[Any]]] = defaultdict(list)
        self.keyed: dict[Any, list[list[Any]]] = {}  # Kafka key -> its part's list in `pieces`
        self.names = kafka_checker.KeyNames()  # the keys sends name
        self.calls = 0
        self.whole_calls = plan.ships_whole_calls()  # else the whole-history part gets `CallFacts`

    def add_pair(self, invocation: Op, completion: Op | None) -> None:
        self.calls += 1
        if not (self.kafka and completion is not None and _fast_pieces(invocation, completion, self)):
            self.add_call(_open_call(invocation) if completion is None else _call(invocation, completion))

    def add_call(self, call: Call) -> None:
        if not self.kafka:
            for part, piece in split_calls(self.plan, (call,)):
                self.pieces[part].append(call_fields(piece))
            return
        if call.f in kafka_checker.SUBSCRIPTION_FUNCTIONS:
            self.pieces[SUBSCRIPTIONS_PART].append(_kafka_call_fields(call, call.key, times=True))
            return
        split = kafka_checker.split_call(call)
        several = (
            len(split) > 1 and call.outcome is Outcome.INFO and kafka_checker.sends_to_several_keys(call)
        )
        for key, piece in split:
            fields = _kafka_call_fields(piece, key, times=False)
            if several:
                fields.append(SEVERAL)
            self.add_piece(key, fields)
        if call.f in kafka_checker.DATA_FUNCTIONS:
            whole = _kafka_call_fields(call, call.key, times=True) if self.whole_calls else None
            self.pieces[CYCLES_PART].append(whole or kafka_checker.call_facts_fields(call))

    def add_piece(self, key: Any, fields: list[Any]) -> None:
        entries = self.keyed.get(key)
        if entries is None:
            entries = self.keyed[key] = self.pieces[partition_key_json(key)]
        entries.append(fields)

    def take(self) -> Iterator[Row]:
        """The pieces gathered so far, one CALLS row per part."""
        for part, entries in self.pieces.items():
            if entries:  # the subscriptions compressed: each bucket of stage 2 gets a copy (loads)
                payload = dumps(entries)
                yield CALLS, part, 0, 0, zlib.compress(payload, 1) if part == SUBSCRIPTIONS_PART else payload
                entries.clear()


WINDOW_CALLS: Final = 16384
"""Stage 1 writes each part's pieces as one row every this many calls, so it holds few at a time."""


def split_rows(plan: Plan, ops: Iterable[Located], source: str, split: int = 0) -> Iterator[Row]:
    """Stage 1 for one split: `ops` (line, operation) in file order -> the CALLS rows of the
    calls it pairs, the BORDER rows of what it cannot pair, and its FACTS; bad input (and
    `OrdinalsNeededError`: the engine reads again with `Starts`) ends it with one ERROR row
    after the border rows read so far (see `border_rows`)."""
    sink = _Sink(plan)
    open_calls: dict[Any, Located | None] = {}  # each process seen: its open invocation
    border: list[Row] = []
    operations = 0
    window = WINDOW_CALLS
    try:
        for located in ops:
            operations += 1
            operation: Op = located[1]
            process = operation[1]
            opened = open_calls.get(process, _UNSEEN)
            if opened is _UNSEEN:
                border.append(_border_row(FIRST, operation, split, located[0]))
                opened = open_calls[process] = None
                if operation[2] is not _INVOKE:
                    continue  # may end a call an earlier split opened: paired at the border
            if operation[2] is _INVOKE:
                if opened is not None:
                    raise _invokes_while_open(opened[1], operation, Position(source, line=located[0]))
                open_calls[process] = located
                continue
            if opened is None:
                if operation[2] is _INFO_TYPE:
                    continue  # e.g. a nemesis announcing a fault: not a client operation
                raise _without_invocation(operation, Position(source, line=located[0]))
            open_calls[process] = None
            sink.add_pair(opened[1], operation)
            window -= 1
            if not window:
                window = WINDOW_CALLS
                yield from sink.take()
    except (HistoryError, ValueError, OrdinalsNeededError) as error:
        yield from border
        yield _error_row(error, split)
        return
    yield from sink.take()
    yield from border
    for opened in open_calls.values():
        if opened is not None:
            yield _border_row(OPEN, opened[1], split, opened[0])
    yield FACTS, "", split, 0, dumps([operations, sink.calls])


_UNSEEN: Final[Located] = (None, ())
"""`split_rows`' mark of a process not seen yet in its split."""


def _border_row(role: int, operation: Op, split: int, line: int) -> Row:
    return BORDER, partition_key_json(operation[1]), split, line, dumps([role, *operation])


def _error_row(error: Exception, split: int, line: int = 0) -> Row:
    """The ERROR row of bad input met in stage 1 or border pairing."""
    if isinstance(error, OrdinalsNeededError):
        return ERROR, "", split, line, dumps([Problem.ORDINALS, ""])
    if isinstance(error, HistoryError):
        position = error.position
        if position.index is not None:  # found in a call: the engine finds its line
            return ERROR, "", 0, position.index, dumps([Problem.INDEX, error.message])
        at = position.line if position.line is not None else position.row
        return ERROR, "", split, line if at is None else at, dumps([Problem.LINE, error.message])
    return ERROR, "", split, line, dumps([Problem.VALUE, str(error)])


def border_rows(plan: Plan, rows: Iterable[tuple[str, int, int, bytes]], source: str) -> Iterator[Row]:
    """Pair the BORDER rows (process, split, line, payload), sorted (by process, then position
    and role: the payload starts with it), by `history.pair_calls`' rules: an invocation open
    at a split's end is ended by its process's next FIRST operation if a completion, and is
    an `info` call if none comes (a FIRST invocation meanwhile, or completion with nothing
    open unless an `info`, is an error). Rows leave as stage 1's, bad input as an ERROR row."""
    sink = _Sink(plan)
    for _process, group in itertools.groupby(rows, key=lambda row: row[0]):
        opened: Op | None = None
        for _, split, line, payload in group:
            role, *fields = loads(payload)
            operation: Op = (*fields[:2], _TYPES[fields[2]], *fields[3:])
            at = Position(source, line=line)
            try:
                if role == OPEN:
                    opened = operation
                elif operation[2] is _INVOKE:
                    if opened is not None:
                        raise _invokes_while_open(opened, operation, at)
                elif opened is not None:
                    sink.add_pair(opened, operation)
                    opened = None
                elif operation[2] is not _INFO_TYPE:
                    raise _without_invocation(operation, at)
            except (HistoryError, ValueError) as error:
                yield _error_row(error, split, line)  # the earliest is reported, of all processes
                opened = None
                break
        if opened is not None:
            sink.add_pair(opened, None)
    yield from sink.take()
    yield FACTS, "", 0, 0, dumps([0, sink.calls])


def stage1_rows(
    plan: Plan, splits: Iterable[tuple[int, Iterable[tuple[int, Op]]]], source: str
) -> Iterator[Row]:
    """Stage 1 and border pairing in this process over a file's splits (split, operations):
    every row but BORDER rows, which are paired here."""
    border: list[tuple[str, int, int, bytes]] = []
    for split, ops in splits:
        for row in split_rows(plan, ops, source, split):
            if row[0] == BORDER:
                border.append(row[1:])
            else:
                yield row
    yield from border_rows(plan, sorted(border), source)


def _fast_pieces(invocation: Op, completion: Op, sink: _Sink) -> bool:
    """Add what `_Sink.add_call` adds of the calls that make up most of a history (sends, a
    poll of string keys: the per-key pieces and the whole-history part's entry, as `_Sink` makes
    them) straight from the operations (`kafka_checker.plain_facts_fields`); False (and nothing
    added) for any other call. Stage 1 of the 10^5-op bench file, callgrind: 5.4 G instructions
    making each call and piece, 3.2 G this way (`test_fast_pieces_are_split_calls_pieces`)."""
    f, done, kind, process = invocation[3], completion[4], completion[2], invocation[1]
    value = invocation[4] if done is None else done  # `kafka_checker.analysed_value`
    invoked, completed, began, ended = invocation[0], completion[0], invocation[6], completion[6]
    pieces: list[Any] = []  # key, analysed value, key, ...
    facts = kafka_checker.plain_facts_fields(
        process, f, kind, invoked, completed, began, ended, value, sink.names, pieces
    )
    if facts is None:
        return False
    if sink.whole_calls:
        facts = kafka_fields(process, f, value, kind, invoked, completed, invocation[5], (began, ended))
    sink.pieces[CYCLES_PART].append(facts)
    several = len(pieces) > 2 and f == "send" and kind is _INFO_TYPE  # an info call that sent to several keys
    for at in range(0, len(pieces), 2):
        fields = kafka_fields(process, f, pieces[at + 1], kind, invoked, completed, pieces[at])
        if several:
            fields.append(SEVERAL)
        sink.add_piece(pieces[at], fields)
    return True


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Run a stage with the cyclic garbage collector off. Stages allocate millions of small
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


# ---------------------------------------------------------------------------------------
# The small whole-history facts
# ---------------------------------------------------------------------------------------


@dataclass
class Facts:
    """What stage 1 learns of the whole history, gathered on the driver: its size and its
    errors (split, line, problem, message). Nothing per operation."""

    operations: int = 0
    calls: int = 0
    errors: list[tuple[int, int, str, str]] = field(default_factory=list)

    def add(self, kind: int, split: int, line: int, payload: bytes) -> None:
        """Take a FACTS or ERROR row."""
        if kind == FACTS:
            operations, calls = loads(payload)
            self.operations += operations
            self.calls += calls
        elif kind == ERROR:
            problem, message = loads(payload)
            self.errors.append((split, line, problem, message))

    def first_error(self) -> tuple[int, int, str, str] | None:
        """The error of the earliest position (a bad line before a value a model refuses)."""
        order = {Problem.BUG: 0, Problem.ORDINALS: 1, Problem.LINE: 2, Problem.INDEX: 3, Problem.VALUE: 4}
        return min(self.errors, key=lambda error: (order[error[2]], error[0], error[1]), default=None)


# ---------------------------------------------------------------------------------------
# Stage 2: the pieces of some parts -> their answers
# ---------------------------------------------------------------------------------------


def check_rows(
    plan: Plan,
    parts: Mapping[str, Sequence[bytes]],
    committed: frozenset[int] | None,
    on_part: Callable[[int, int], None] | None = None,
    pool: WorkerPool | None = None,
    fail_fast: bool = False,
    on_verdict: Callable[[str, int], None] | None = None,
) -> list[Answer]:
    """Stage 2: check every part of `parts` (part -> its CALLS payloads; `SUBSCRIPTIONS_PART`:
    the assign/subscribe calls every Kafka part needs) -> an `Answer` per part. `committed`:
    the info calls known to have committed (a second run), or None to decide it inside each
    part. `on_part` hears (number, count) before each part this process checks, `on_verdict`
    each part's verdict. The parts are checked smallest first, in `pool`'s worker processes
    when given (`spark_checks.parallel`), and under `fail_fast` not after the first part that
    is invalid whatever the other parts find. Bad input: one answer with its error."""
    context = subscriptions_context(parts.get(SUBSCRIPTIONS_PART, ()), committed)
    plan = plan.with_kafka_context(context)  # (only Kafka checks read it)
    names = sorted(name for name in parts if name != SUBSCRIPTIONS_PART)
    tasks = [Task(sum(map(len, parts[name])), _check_part, (name, parts[name]), name=name) for name in names]
    pool = worth_workers(pool, sum(task.size for task in tasks), PARALLEL_MIN_BYTES)
    if pool is not None:
        plan = replace(plan, budget=searches_budget(plan.budget, pool, len(names)))
    started = itertools.count(1)

    def on_start(_index: int) -> None:
        if on_part is not None:
            on_part(next(started), len(names))

    def stopped(index: int, stop: Stop) -> Answer:
        name, count = names[index], sum(len(loads(payload)) for payload in parts[names[index]])
        return Answer(name, unchecked_result(plan, name, count, stop_reason(stop)))  # count: calls, facts

    def done(_index: int, answer: Answer) -> None:
        if on_verdict is not None and answer.result is not None:
            on_verdict(answer.result.verdict.value, len(names))

    try:
        return (pool or WorkerPool()).run(
            tasks,
            shared=(plan, context, committed),
            is_invalid=Answer.finally_invalid,
            stopped=stopped,
            fail_fast=fail_fast,
            deadline=plan.budget.deadline,
            on_done=done,
            on_start=on_start,
            large_first_from=next((t.size for t in tasks if t.name == CYCLES_PART), math.inf),  # first
        )
    except (HistoryError, ValueError) as error:
        _, _, _, index, payload = _error_row(error, 0)
        problem, message = loads(payload)
        return [Answer(error=(problem, message, index))]


def subscriptions_context(payloads: Iterable[bytes], committed: frozenset[int] | None) -> KafkaContext:
    """The Kafka context every key's check needs, from the assign/subscribe calls' CALLS
    payloads (in any order), with the info calls known to have committed (None: round one)."""
    context = remembered_context(sorted(payloads), decode_part)
    return replace(context, committed_info=committed or frozenset(), whole_by_keys=committed is None)


def decode_part(payloads: Iterable[bytes]) -> tuple[DecodedCalls, set[int]]:
    """A part's calls (made when read, `DecodedCalls`: a Kafka key's first check reads them as
    `kafka_checker.Piece`s), and the invocation indices of its multi-key info calls (`SEVERAL`)."""
    rows = [fields for payload in payloads for fields in loads(payload)]
    several = {fields[7] for fields in rows if len(fields) > 12}
    return DecodedCalls(rows, call_from_fields, kafka_checker.pieces_of), several


@dataclass(frozen=True)
class Answer:
    """Stage 2's answer on a part (pickled between processes): its name (the key's JSON) and
    result, the info calls it saw commit, and the multi-key info calls it assumed had not
    committed (`Gathered.recheck`); or bad input, or a bug (`error`: problem, message, index)."""

    name: str = ""
    result: CheckResult | None = None
    committed: frozenset[int] = frozenset()
    undecided: frozenset[int] = frozenset()
    error: tuple[str, str, int] | None = None

    def finally_invalid(self) -> bool:
        """Invalid whatever other parts find: no info call it assumed uncommitted is undecided."""
        return self.result is not None and self.result.verdict is Verdict.INVALID and not self.undecided


def _check_part(
    shared: tuple[Plan, KafkaContext, frozenset[int] | None],
    part: str,
    payloads: list[bytes],
    task: TaskContext,
) -> Answer:
    """Check one part from its CALLS payloads (here or in a worker process)."""
    plan, context, committed = shared
    if part == CYCLES_PART and not plan.ships_whole_calls():  # its calls' facts lists alone (`facts_fields`)
        return Answer(part, check_whole_facts(plan, payloads, loads))  # read window by window
    calls, several = decode_part(payloads)
    if plan.model == "kafka" and committed is None and part != CYCLES_PART:
        result, own = check_key_deciding_commits(plan, context, part, calls)
        return Answer(part, result, own, frozenset(several - own))
    return Answer(part, check_part(plan, part, calls, parts_left=task.share))


@dataclass
class Gathered:
    """Stage 2's answers, sorted out on the driver."""

    results: list[CheckResult] = field(default_factory=list)
    errors: list[tuple[str, str, int]] = field(default_factory=list)  # problem, message, index
    committed: set[int] = field(default_factory=set)
    undecided: dict[str, frozenset[int]] = field(default_factory=dict)

    def recheck(self) -> frozenset[str]:
        """Parts whose verdict assumed an info call had not committed that another part saw
        commit: they must be checked again, knowing `committed`."""
        return frozenset(part for part, calls in self.undecided.items() if calls & self.committed)

    def replace(self, again: Gathered) -> None:
        """Take the second run's results over the first's (same parts), and its errors."""
        redone = {result.partition for result in again.results}
        self.results = [r for r in self.results if r.partition not in redone] + again.results
        self.errors.extend(again.errors)


def gather(answers: Iterable[Answer]) -> Gathered:
    """Sort stage 2's answers into results, errors, committed and undecided info calls."""
    gathered = Gathered()
    for answer in answers:
        if answer.error is not None:
            gathered.errors.append(answer.error)
        elif answer.result is not None:
            gathered.results.append(answer.result)
            gathered.committed |= answer.committed
            if answer.undecided:
                gathered.undecided[answer.name] = answer.undecided
    return gathered
