"""What every reader shares: source conventions, `SourceInfo`, building a checked `Operation`,
and the bounds on what a value may be (nesting depth, finite numbers)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Final

from spark_checks.history import HistoryError, JsonValue, Operation, OpType, Position, new_operation

# --- Source conventions ------------------------------------------------------------------------
# The keys and values below are a contract with the checkers (spark_checks.linearizability):
#
#   initial      the value every register (or every key) holds before the first operation.
#   nil_read     "absent":        an ok read whose value is nil observed the nil value
#                                 (the register's initial/absent value, or a nil written to it);
#                "unconstrained": an ok read whose value is nil tells nothing (Knossos: the
#                                 value was not recorded), so it is legal in every state;
#                "knossos":       Knossos's reading per model (a register's nil read tells
#                                 nothing; a queue's nil dequeue or a set's nil read took nil).
#   failed_cas   "did-not-happen": a `fail` cas had no effect and nothing is learned from it;
#                "no-effect":      a `fail` cas executed and returned false: it had no effect
#                                  and the current value differed from its `from` at that point.
#   failed_read  "did-not-happen": a `fail` read did not happen (nothing learned);
#                "unknown":        a `fail` read's outcome is unknown (treat it as `info`).

CANONICAL_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "initial": None,
    "nil_read": "unconstrained",
    "failed_cas": "did-not-happen",
    "failed_read": "did-not-happen",
}
KNOSSOS_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "initial": 0,
    "nil_read": "unconstrained",
    "failed_cas": "did-not-happen",
    "failed_read": "did-not-happen",
}
PORCUPINE_ETCD_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "initial": None,
    "nil_read": "absent",
    "failed_cas": "no-effect",
    "failed_read": "unknown",
}
PORCUPINE_KV_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "initial": "",
    "nil_read": "unconstrained",
    "failed_cas": "did-not-happen",
    "failed_read": "did-not-happen",
}
CONVENTION_CHOICES: Final[Mapping[str, tuple[str, ...]]] = {
    "nil_read": ("absent", "unconstrained", "knossos"),
    "failed_cas": ("did-not-happen", "no-effect"),
    "failed_read": ("did-not-happen", "unknown"),
}


@dataclass(frozen=True)
class SourceInfo:
    """What a reader found out about a history before reading its operations.

    `format` is one of `spark_checks.choices.FORMATS`; `conventions` holds the source's default
    conventions (keys `initial`, `nil_read`, `failed_cas`, `failed_read`; see the package docstring);
    `dialect` names the variant within the format: "jsonl", "parquet", "jepsen-edn",
    "porcupine-etcd" or "porcupine-kv".
    """

    format: str
    conventions: dict[str, JsonValue] = field(default_factory=lambda: dict(CANONICAL_CONVENTIONS))
    dialect: str = ""


def display_name(path: str | os.PathLike[str]) -> str:
    """The file name as given by the caller, for messages."""
    return os.fspath(path)


def utf8_text(raw: bytes, file: str, line: int | None) -> str:
    """A line's bytes as text; a byte that is not UTF-8 is a HistoryError at the line of `file`
    naming it (the `Position` is made only then: this runs once per line of a history)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        message = f"not UTF-8 text (byte {error.start} of the line)"
        raise HistoryError(Position(file, line=line), message) from None


def create_history_file(path: str | os.PathLike[str], overwrite: bool, binary: bool = False) -> IO[Any]:
    """`path` opened for a history writer: a new file, or with `overwrite` a replaced one; an
    existing file is refused (FileExistsError naming it), so nothing the user has is lost."""
    try:
        if binary:
            return open(path, "wb" if overwrite else "xb")
        return open(path, "w" if overwrite else "x", encoding="utf-8", newline="\n")
    except FileExistsError:
        raise FileExistsError(
            f"{display_name(path)} already exists; refusing to overwrite it (pass overwrite=True)"
        ) from None


_TYPES: Final = {t.value: t for t in OpType}


def parse_type(raw: object, position: Position) -> OpType:
    """`invoke`/`ok`/`fail`/`info` (a leading ':' is accepted) or a HistoryError."""
    if isinstance(raw, str):
        op_type = _TYPES.get(raw)
        if op_type is not None:
            return op_type
        op_type = _TYPES.get(raw.lstrip(":"))
        if op_type is not None:
            return op_type
    raise HistoryError(position, f"type must be one of invoke, ok, fail, info; got {shown(raw)}")


def check_process(raw: object, position: Position) -> int | str:
    """A process is an integer client id or a name such as "nemesis"."""
    if (isinstance(raw, int) and not isinstance(raw, bool)) or isinstance(raw, str):
        return raw
    raise HistoryError(position, f"process must be an integer or a name such as nemesis; got {shown(raw)}")


def make_operation(
    obj: Mapping[str, Any],
    default_index: int,
    source: str,
    line: int | None,
    expected: str,
    offset: int | None = None,
) -> Operation:
    """Check one decoded op (JSON object or EDN map with keyword keys) and build the Operation.

    `source`, `line` and `offset` make the Position of an error (built only then: this is the
    hot path of every reader, as are the exact `type(...) is` tests, which also exclude bool).
    `expected` describes the accepted shape, for the message when fields are missing.
    """
    try:
        process = obj["process"]
        raw_type = obj["type"]
        f = obj["f"]
    except KeyError:
        missing = [name for name in ("process", "type", "f") if name not in obj]
        raise HistoryError(
            Position(source, line, offset), f"{expected}; missing {', '.join(missing)}"
        ) from None
    op_type = _TYPES.get(raw_type) if type(raw_type) is str else None
    if op_type is None:
        op_type = parse_type(raw_type, Position(source, line, offset))
    if type(f) is not str:
        raise HistoryError(
            Position(source, line, offset), f"f must be a string (a keyword in EDN); got {shown(f)}"
        )
    if type(process) is not int and type(process) is not str:
        process = check_process(process, Position(source, line, offset))
    index = obj.get("index", default_index)
    if type(index) is not int or index < 0:
        raise HistoryError(
            Position(source, line, offset), f"index must be a non-negative integer; got {shown(index)}"
        )
    time = obj.get("time")
    if time is not None and type(time) is not int:
        raise HistoryError(
            Position(source, line, offset),
            f"time must be an integer (nanoseconds) or null; got {shown(time)}",
        )
    return new_operation(index, process, op_type, f, obj.get("value"), obj.get("key"), time)


def check_conventions(raw: object, position: Position) -> dict[str, JsonValue]:
    """Conventions stored with a history (Parquet metadata): the four keys with known values."""
    if not isinstance(raw, dict) or set(raw) != set(CANONICAL_CONVENTIONS):
        raise HistoryError(
            position, f"conventions must be an object with keys {', '.join(CANONICAL_CONVENTIONS)}"
        )
    for name, choices in CONVENTION_CHOICES.items():
        if raw[name] not in choices:
            raise HistoryError(position, f"convention {name} must be one of {', '.join(choices)}")
    return dict(raw)


# --- Bounds on values ---------------------------------------------------------------------------

MAX_NESTING: Final = 100
"""How deep lists and maps may nest inside an operation's value, key or process: a value
`[[...]]` with 100 brackets is read, one with 101 is bad input. Histories nest a handful of
levels (a Kafka poll's value: 5); the bound keeps every recursive step that values go through
(JSON decoders and encoders, `repr`, the models' freezing) far inside Python's recursion
limit, so that depth is an input error with a position, never a `RecursionError`."""

NESTING_MESSAGE: Final = (
    f"lists or maps nested more than {MAX_NESTING} levels deep (the most a value, key or process may nest)"
)

_STRING_TEXT: Final = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_STRING_BYTES: Final = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NOT_BRACKET_TEXT: Final = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_BYTES: Final = bytes(byte for byte in range(256) if byte not in b"[]{}")  # to delete
_AS_SQUARE: Final = str.maketrans("{}", "[]")


def nests_deeper(text: str | bytes, levels: int) -> bool:
    """Whether JSON text opens more than `levels` lists or objects inside one another (what
    a recursive decoder would descend), brackets inside strings not counted. Text that is
    not balanced JSON counts its unclosed openers as nesting too (a decoder descends them):
    for it the answer may err towards "deeper", for balanced text it is exact. Two counts for
    the usual line; the rest takes a round of C-speed string passes per level."""
    if len(text) <= levels:
        return False
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= levels:
            return False
        # Without a backslash a string runs from a quote to the next one (or the end): what
        # `_STRING_BYTES` leaves is every other piece between quotes, cut in C (a 6.8 MB
        # Jepsen drain poll: 30 times faster than the regular expressions).
        outside = _STRING_BYTES.sub(b"", text) if b"\\" in text else b"".join(text.split(b'"')[::2])
        brackets = outside.translate(None, _NOT_BRACKET_BYTES).decode("ascii")
    else:
        if text.count("[") + text.count("{") <= levels:
            return False
        brackets = _NOT_BRACKET_TEXT.sub("", _STRING_TEXT.sub("", text))
    brackets = brackets.translate(_AS_SQUARE)
    rounds = 0
    while "[]" in brackets:  # each round closes the innermost pairs: one level
        rounds += 1
        if rounds > levels:
            return True
        brackets = brackets.replace("[]", "")
    return rounds + brackets.count("[") > levels


class NotAValueError(ValueError):
    """A literal that parses but is no value of a history: NaN, an infinity, a float that
    overflows, an EDN ratio with a zero denominator."""


NON_FINITE_MESSAGE: Final = (
    "is not a value a history can hold (NaN equals nothing, not even itself; infinities are no "
    "recorded value)"
)


def refuse_constant(name: str) -> Any:
    """`json` decoders' `parse_constant`: NaN, Infinity and -Infinity are refused."""
    raise NotAValueError(f"{name} {NON_FINITE_MESSAGE}")


def finite_float(text: str) -> float:
    """`json` decoders' `parse_float`: a float, refused when it overflows to an infinity."""
    value = float(text)
    if math.isinf(value):
        raise NotAValueError(f"{text} overflows a 64-bit float: it {NON_FINITE_MESSAGE}")
    return value


def shown(value: object, limit: int = 80) -> str:
    """`repr(value)` for a message, cut to `limit` characters (a value can be megabytes)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an integer beyond str()'s digit limit, a deep value
        text = f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."
