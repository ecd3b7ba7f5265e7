"""Porcupine's test-data log formats (github.com/anishathalye/porcupine, `test_data/`).

Both are read line by line; blank lines are skipped, and any other line that does not have the
shape below is an error naming its line. `index` is the operation's position in the file.

(a) etcd Jepsen logs, `test_data/jepsen/etcd_NNN.log` (dialect "porcupine-etcd")::

        INFO  jepsen.util - <process>\t:<type>\t:<f>\t<value>

    The fields are separated by tabs or by runs of spaces (both occur). `<process>` is an
    integer or a keyword (`:nemesis`); `<value>` is an EDN form: `nil`, an integer, `[from to]`
    for `:cas`, or a keyword error marker such as `:timed-out` (the variants in the 103 files:
    `:invoke :read nil`, `:invoke :write 3`, `:invoke :cas [3 0]`, `:ok :read 3|nil`,
    `:ok :write 3`, `:ok|:fail :cas [3 0]`, `:info :write|:cas :timed-out`,
    `:fail :read :timed-out`).

    A `:fail` or `:info` completion whose value is a keyword (`:timed-out`) does not say whether
    the operation took effect, so this reader makes it an `info` completion with value None: the
    keyword is an error marker, not a register value. This converts the `:fail :read :timed-out`
    lines into `info`, exactly what Porcupine's parser does (it gives them an "unknown" output),
    and matches its handling of `:info` lines (ignored, so the call stays open to the end).

    Conventions (PORCUPINE_ETCD_CONVENTIONS, as Porcupine's etcd test model reads these logs):
    initial value nil ("single register, init nil"); a nil read observes
    the nil value ("absent"); a `:fail :cas` means the CAS executed and returned false ("no-effect":
    the model requires `state != from`), unlike Knossos where :fail means it did not happen; a
    `:fail :read` is "unknown" (in these files only with `:timed-out`, already made `info` above).

(b) kv logs, `test_data/kv/cNN-{ok,bad}.txt` (dialect "porcupine-kv"): one EDN map per line,
    `{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}`, with `:f` one of
    `:get`, `:put`, `:append` and `:value nil` on a get's invocation. Only `:invoke`/`:ok` lines;
    an invocation that never returns is pending to the end of the history.

    Conventions (PORCUPINE_KV_CONVENTIONS): every key initially holds "" (the empty string);
    nil_read "unconstrained" (a get's completion is always a string here; Porcupine's parser
    would ignore a nil one, leaving the get unknown); failed_cas and failed_read
    "did-not-happen" (no :fail lines occur).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, BinaryIO, Final

from spark_checks.history import HistoryError, Operation, OpType, Position, new_operation
from spark_checks.readers._common import MAX_NESTING, display_name, make_operation, parse_type, utf8_text
from spark_checks.readers.edn import iter_forms

ETCD_SHAPE: Final = "INFO  jepsen.util - <process> :<type> :<f> <value>"
KV_SHAPE: Final = '{:process p, :type :invoke|:ok, :f :get|:put|:append, :key "k", :value v}'

_ETCD_LINE = re.compile(
    r"INFO\s+jepsen\.util\s+-\s+(-?\d+|:[^\s:]+)\s+(:[a-z]+)\s+(:[^\s]+)(?:\s+(.*?))?\s*",
)
_KV_LINE = re.compile(
    r'\{:process (-?\d{1,18}), :type :(invoke|ok), :f :(get|put|append), :key "([^"\\]*)", '
    r':value (?:nil|"([^"\\]*)")\}\s*'
)
"""A kv line exactly as Porcupine writes them, with strings free of escapes: read without the
general EDN reader (5x faster); any other line goes through it."""
_KEYWORD_TYPES: Final = {f":{t.value}": t for t in OpType}
_KV_TYPES: Final = {"invoke": OpType.INVOKE, "ok": OpType.OK}
"""The types `_KV_LINE` accepts."""
_INT = re.compile(r"-?\d+")
_PAIR = re.compile(r"\[\s*(-?\d+|nil)[\s,]+(-?\d+|nil)\s*\]")


def _etcd_value(text: str | None, name: str, line: int) -> tuple[Any, bool]:
    """(value, is_error_marker): fast paths for nil/int/[a b], else any single EDN form."""
    if text is None or text == "nil":
        return None, False
    if _INT.fullmatch(text):
        return int(text), False
    pair = _PAIR.fullmatch(text)
    if pair:
        return [None if g == "nil" else int(g) for g in pair.groups()], False
    if text.startswith(":"):
        return text[1:], True
    position = Position(name, line=line)
    try:
        # Inside a vector of its own: a top-level vector's elements would be handed on one by one.
        forms = [
            value
            for value, _line in iter_forms(
                ["[", text, "]"], position.file, first_line=position.line or 1, nesting=MAX_NESTING
            )
        ]
    except HistoryError as error:
        raise HistoryError(position, f"the value is not valid EDN: {error.message}") from None
    if len(forms) != 1:
        raise HistoryError(position, f"expected one value after the function; got {_clip(text)!r}")
    return forms[0], False


def read_etcd_log(path: str | os.PathLike[str]) -> Iterator[Operation]:
    """Stream the operations of a Porcupine etcd Jepsen log."""
    return (operation for operation, _ in etcd_log_located(path))


def etcd_log_located(path: str | os.PathLike[str]) -> Iterator[tuple[Operation, int]]:
    """The operations of a Porcupine etcd Jepsen log, each with its line number (a `Position`
    is made only for an error). The file is read a chunk of lines at a time (`_etcd_lines`:
    one decoding and one scan of the usual line's pattern per chunk); a value text seen before
    is not parsed again (`known`: the logs repeat a few values, nil, small integers, CAS pairs
    and `:timed-out`, on every line)."""
    name = display_name(path)
    known: dict[str, tuple[Any, bool]] = {}
    lines = _etcd_lines(path, name)
    for ordinal, (line_number, process, kind, f, raw_value) in enumerate(lines):
        op_type = kind
        if raw_value is None:
            value, is_marker = None, False
        else:
            found = known.get(raw_value)
            if found is None:
                try:
                    found = _etcd_value(raw_value, name, line_number)
                except ValueError as error:  # an integer beyond int()'s digit limit
                    raise HistoryError(
                        Position(name, line=line_number), f"expected {ETCD_SHAPE!r}: {error}"
                    ) from None
                if type(found[0]) in _SHAREABLE or _flat(found[0]):
                    known[raw_value] = found
            value, is_marker = found
            if value.__class__ is list:
                value = value.copy()  # each line its own list, as if parsed again
        if is_marker and (kind is OpType.FAIL or kind is OpType.INFO):
            op_type, value = OpType.INFO, None  # e.g. :timed-out: the outcome is unknown
        yield new_operation(ordinal, process, op_type, f, value, None, None), line_number


_SHAREABLE: Final = frozenset({int, str, bool, float, type(None)})
"""Values one object of which may stand for every line that wrote it: immutable ones."""


def _flat(value: Any) -> bool:
    """Whether `value` is a list of immutable values (a CAS's `[from to]`): kept once, and
    copied for each line that wrote it."""
    return type(value) is list and all(type(item) in _SHAREABLE for item in value)


CHUNK_BYTES: Final = 1 << 20
"""A log is read this many bytes of lines at a time."""

EtcdFields = tuple[int | str, OpType, str, str | None]
"""(process, type, function, value text or None) of an etcd log line."""


def _etcd_lines(
    path: str | os.PathLike[str], name: str
) -> Iterator[tuple[int, int | str, OpType, str, str | None]]:
    """(line number, *`EtcdFields`) of every non-blank line of an etcd log. A chunk whose lines
    all have the usual shape (`_USUAL_ETCD_LINE`, found by one scan of the chunk) is read off
    the scan; in any other chunk each line is matched alone, and a line of another shape goes
    through `_ETCD_LINE`, which finds the same fields or says what is wrong. Measured on
    Porcupine's etcd_090 (174 lines), callgrind: 3.55 M instructions for the operations with
    their lines, against 3.97 M splitting each line (the scan is 1.15 M of it, making the
    `Operation`s 1.4 M); `test_porcupine_reader` compares the chunk's scan with its lines read
    one by one, on every log and on chunks with odd lines."""
    types = _USUAL_TYPES
    line_number = 0
    with _open_lines(path, name) as handle:
        for chunk in iter(lambda: handle.readlines(CHUNK_BYTES), []):
            text = _chunk_text(chunk, name, line_number + 1)
            usual = _USUAL_ETCD_LINE.findall(text)
            if len(usual) == len(chunk):  # one match per line: every line has the usual shape
                for process, kind, f, value in usual:
                    line_number += 1
                    yield (
                        line_number,
                        int(process) if process[0] != ":" else process[1:],
                        types[kind],
                        f,
                        value or None,
                    )
                continue
            lines = text.split("\n")
            for line in lines[: len(chunk)]:  # the chunk's last line ends with "\n", or the file does
                line_number += 1
                fields = _etcd_fields(line)
                if fields is None:
                    if not line or line.isspace():
                        continue
                    fields = _etcd_fields_matched(line, name, line_number)
                yield (line_number, *fields)


def _chunk_text(chunk: list[bytes], name: str, first_line: int) -> str:
    """The lines of a chunk as one text; a byte that is not UTF-8 is an error at its line."""
    try:
        return b"".join(chunk).decode("utf-8")
    except UnicodeDecodeError:
        for line_number, raw in enumerate(chunk, first_line):
            utf8_text(raw, name, line_number)
        raise AssertionError("a chunk that does not decode has a line that does not") from None


_USUAL_ETCD_LINE: Final = re.compile(
    r"^INFO[ \t]+jepsen\.util[ \t]+-[ \t]+(-?[0-9]{1,18}|:[!-9;-~]+)[ \t]+:(invoke|ok|fail|info)[ \t]+"
    r":([!-~]+)(?:[ \t]+([!-~](?:[ -~\t]*[!-~])?)[ \t]*)?\r?$",
    re.MULTILINE,
)
"""An etcd log line of the usual shape (ASCII; fields apart by spaces and tabs; a process of
at most 18 digits or a keyword; a value, if any, after whitespace), matching exactly where
`_ETCD_LINE` finds the same fields: `$` ends a line (re.MULTILINE), and no part of it matches
a line break, so a scan finds at most one match per line."""
_USUAL_TYPES: Final = {t.value: t for t in OpType}


def _etcd_fields(line: str) -> EtcdFields | None:
    """The fields of one line (without its line break, or with it) of the usual shape
    (`_USUAL_ETCD_LINE`); None for any other line (blank, odd, or an error), which
    `_etcd_fields_matched` then reads."""
    match = _USUAL_ETCD_LINE.match(line)
    if match is None:
        return None
    process, kind, f, value = match.groups()
    return int(process) if process[0] != ":" else process[1:], _USUAL_TYPES[kind], f, value


def _etcd_fields_matched(text: str, name: str, line_number: int) -> tuple[int | str, OpType, str, str | None]:
    """`_etcd_fields` of any line, through `_ETCD_LINE`; a line it does not match is an error."""
    match = _ETCD_LINE.fullmatch(text.rstrip("\r\n"))
    if match is None:
        raise HistoryError(
            Position(name, line=line_number),
            f"unknown Porcupine line shape: expected {ETCD_SHAPE!r}; got {_clip(text)!r}",
        )
    raw_process, raw_type, raw_f, raw_value = match.groups()
    try:
        process: int | str = int(raw_process) if raw_process[0] != ":" else raw_process[1:]
    except ValueError as error:  # an integer beyond int()'s digit limit
        raise HistoryError(Position(name, line=line_number), f"expected {ETCD_SHAPE!r}: {error}") from None
    op_type = _KEYWORD_TYPES.get(raw_type) or parse_type(raw_type, Position(name, line=line_number))
    return process, op_type, raw_f[1:], raw_value


def read_kv_log(path: str | os.PathLike[str]) -> Iterator[Operation]:
    """Stream the operations of a Porcupine kv log (one EDN map per line)."""
    return (operation for operation, _ in kv_log_located(path))


def kv_log_located(path: str | os.PathLike[str]) -> Iterator[tuple[Operation, int]]:
    """The operations of a Porcupine kv log, each with its line number."""
    name = display_name(path)
    with _open_lines(path, name) as lines:
        ordinal = 0
        for line_number, raw in enumerate(lines, 1):
            text = utf8_text(raw, name, line_number)
            if not text or text.isspace():
                continue
            plain = _KV_LINE.fullmatch(text)
            if plain is not None:  # Porcupine's own shape, no escapes: what the EDN reader would give
                process, op_type, f, key, value = plain.groups()  # each valid as the pattern has it
                yield (
                    new_operation(ordinal, int(process), _KV_TYPES[op_type], f, value, key, None),
                    line_number,
                )
                ordinal += 1
                continue
            position = Position(name, line=line_number)
            try:
                forms = [value for value, _line in iter_forms([text], name, first_line=line_number)]
            except HistoryError as error:
                raise HistoryError(
                    position, f"unknown Porcupine kv line shape: expected {KV_SHAPE}; {error.message}"
                ) from None
            if len(forms) != 1 or not isinstance(forms[0], dict) or "key" not in forms[0]:
                raise HistoryError(
                    position, f"unknown Porcupine kv line shape: expected {KV_SHAPE}; got {_clip(text)!r}"
                )
            yield make_operation(forms[0], ordinal, name, line_number, f"expected {KV_SHAPE}"), line_number
            ordinal += 1


def kv_first_line(first_line: str) -> bool:
    """Whether a Porcupine file is a kv log (its first non-blank line is an EDN map)."""
    return first_line.lstrip().startswith("{")


def _open_lines(path: str | os.PathLike[str], name: str) -> BinaryIO:
    try:
        return open(path, "rb")  # the caller closes it (with)
    except OSError as error:
        raise HistoryError(Position(name), f"cannot read the file: {error.strerror}") from None


def _clip(text: str, limit: int = 80) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
