"""The canonical history form: JSON Lines, one operation per line, with Jepsen's fields.

Each non-blank line is a JSON object with the fields

    index    non-negative integer; missing -> the operation's position in the file (0-based)
    time     integer nanoseconds, or missing/null
    process  integer client id, or a name such as "nemesis"
    type     "invoke" | "ok" | "fail" | "info"
    f        the function name: "read", "write", "cas", "send", "poll", "txn", ...
    value    any JSON value (missing -> null)
    key      optional: any JSON value, for per-key models

Other fields are ignored. The file is read line by line (never whole), in binary so that a byte
that is not UTF-8 is reported with its line like any other error. Values are JSON (RFC 8259): the
`NaN` and `Infinity` that Python's decoder would accept, and numbers that overflow a float, are
bad input, as are lists and objects nested more than `MAX_NESTING` levels inside the line's
object. A lone surrogate escape (`"\\ud800"`) is a string like any other.

Conventions: the canonical defaults (`CANONICAL_CONVENTIONS`): Jepsen's semantics with a null
initial value - a read of null tells nothing ("unconstrained", as in Knossos), and `fail` means
did not happen, for cas and read alike. The file cannot state other conventions; Parquet can
(see `spark_checks.readers.parquet`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any, Final

import orjson

from spark_checks.history import HistoryError, Operation, Position
from spark_checks.readers._common import (
    MAX_NESTING,
    NESTING_MESSAGE,
    NotAValueError,
    create_history_file,
    display_name,
    finite_float,
    make_operation,
    nests_deeper,
    refuse_constant,
    utf8_text,
)

EXPECTED: Final = "expected a JSON object with fields index, process, type, f (and value, time, key)"

# The C scanner behind json.loads: one value from a position (no whitespace skipping, no check
# for trailing text), without the two regex matches `loads` spends on whitespace; NaN,
# infinities and floats that overflow are refused (orjson refuses them too).
_scan_once = json.JSONDecoder(  # type: ignore[attr-defined]
    parse_constant=refuse_constant, parse_float=finite_float
).scan_once
LINE_NESTING: Final = MAX_NESTING + 1
"""How deep a line may nest: its object, and the values inside it."""
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TWENTY_ZEROS = b"0" * 20
_MINUS_NINETEEN_ZEROS = b"-" + b"0" * 19


def first_long_integer(data: bytes) -> int:
    """Where `data` first holds an integer orjson cannot read exactly (it reads integers
    outside [-2**63, 2**64) as floats): a run of 20 digits, or a minus sign and 19 digits.
    -1 when there is none. A run of 19 digits after a minus sign may still fit, and 20
    digits may be the fraction of a float: such lines only take the slower, exact path."""
    zeroed = data.translate(_DIGITS_AS_ZERO)  # a regex search is slower
    found = [at for at in (zeroed.find(_TWENTY_ZEROS), zeroed.find(_MINUS_NINETEEN_ZEROS)) if at >= 0]
    return min(found) if found else -1


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[Operation]:
    """Stream the operations of a canonical JSON Lines history."""
    return (operation for operation, _ in jsonl_located(path))


def jsonl_located(path: str | os.PathLike[str]) -> Iterator[tuple[Operation, int]]:
    """The operations of a canonical JSON Lines history, each with its line number."""
    name = display_name(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed by the with below, inside the generator
    except OSError as error:
        raise HistoryError(Position(name), f"cannot read the file: {error.strerror}") from None
    with handle:
        ordinal = 0
        for line_number, raw in enumerate(handle, 1):
            operation = parse_line(raw, ordinal, name, line_number)
            if operation is not None:
                yield operation, line_number
                ordinal += 1


def parse_line(raw: bytes, ordinal: int, name: str, line_number: int | None) -> Operation | None:
    """One line of a JSON Lines history as an Operation, or None for a blank line.

    `ordinal` is the index given to an operation without one (its position among the file's
    non-blank lines). Shared by `read_jsonl` and the Spark engine's tasks
    (`spark_checks.distributed`), so both read every line alike.
    """
    obj = decode_line(raw, name, line_number)
    if obj is None:
        return None
    return make_operation(obj, ordinal, name, line_number, EXPECTED)


def decode_line(raw: bytes, name: str, line_number: int | None) -> dict[str, Any] | None:
    """The JSON object on one line (None for a blank line), not yet checked as an operation.

    orjson decodes well-formed lines (a few times faster than the standard library); anything
    it refuses - blank lines, NaN, lone surrogates, bad JSON - takes the standard library's
    path, which decides and explains exactly as before, so both paths accept the same lines
    with the same values. So do lines with an integer orjson would read as a float
    (`first_long_integer`).
    """
    if nests_deeper(raw, LINE_NESTING):
        raise HistoryError(Position(name, line=line_number), f"{EXPECTED}; {NESTING_MESSAGE}")
    try:
        if first_long_integer(raw) >= 0:
            raise orjson.JSONDecodeError("a long integer", "", 0)
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        obj = _slow_decode(raw, name, line_number)
        if obj is None:
            return None
    if type(obj) is not dict:
        raise HistoryError(Position(name, line=line_number), f"{EXPECTED}; got a JSON {type(obj).__name__}")
    return obj


def _slow_decode(raw: bytes, name: str, line_number: int | None) -> Any:
    """The standard library's decoding of one line (None when it is blank)."""
    text = utf8_text(raw, name, line_number)
    start = 0 if text[:1] == "{" else len(text) - len(text.lstrip())
    if start == len(text):
        return None  # a blank line
    try:
        obj, end = _scan_once(text, start)
    except StopIteration:
        raise HistoryError(
            Position(name, line=line_number), f"{EXPECTED}; the line is not valid JSON"
        ) from None
    except json.JSONDecodeError as error:
        raise HistoryError(
            Position(name, line=line_number),
            f"{EXPECTED}; the line is not valid JSON ({error.msg} at column {error.colno})",
        ) from None
    except NotAValueError as error:
        raise HistoryError(Position(name, line=line_number), f"{EXPECTED}; {error}") from None
    except ValueError as error:  # an integer beyond int()'s digit limit (sys.get_int_max_str_digits)
        raise HistoryError(
            Position(name, line=line_number), f"{EXPECTED}; the line is not valid JSON here ({error})"
        ) from None
    if end < len(text) and not text[end:].isspace():
        raise HistoryError(
            Position(name, line=line_number),
            f"{EXPECTED}; extra text after the object at column {end + 1}",
        )
    return obj


def operation_to_json(operation: Operation) -> dict[str, Any]:
    """The canonical JSON object of one operation (`time` and `key` only when present)."""
    obj: dict[str, Any] = {"index": operation.index}
    if operation.time is not None:
        obj["time"] = operation.time
    obj["process"] = operation.process
    obj["type"] = operation.type.value
    obj["f"] = operation.f
    if operation.key is not None:
        obj["key"] = operation.key
    obj["value"] = operation.value
    return obj


def write_jsonl(
    path: str | os.PathLike[str], operations: Iterable[Operation], *, overwrite: bool = False
) -> int:
    """Write operations as canonical JSON Lines; return how many were written.

    Refuses to replace an existing file (FileExistsError) unless `overwrite=True`. Values must
    be JSON-like (dicts with string keys), as every reader produces them. A line holding a
    lone surrogate (which UTF-8 cannot encode) is written with ASCII escapes, which read back
    the same string.
    """
    handle = create_history_file(path, overwrite)
    count = 0
    with handle:
        for operation in operations:
            line = json.dumps(operation_to_json(operation), ensure_ascii=False, allow_nan=False)
            if not line.isascii():
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:
                    line = json.dumps(operation_to_json(operation), allow_nan=False)
            handle.write(line)
            handle.write("\n")
            count += 1
    return count
