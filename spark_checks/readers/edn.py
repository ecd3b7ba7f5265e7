"""Jepsen/Knossos EDN histories, read by a small streaming EDN tokenizer.

Shape (knossos `cli/read-history`): a file holds either one vector or
list of op maps, or a stream of op maps; comments (`;`) may appear anywhere. An op map is
`{:process p, :type :invoke|:ok|:fail|:info, :f kw, :value v}` with optional `:time` (ns),
`:index` and `:key`; other keys (`:error`, ...) are dropped. When `:index` is missing the op's
position in the file (0-based) is used.

Value mapping: keywords and symbols become plain strings without ':' (`:read` -> "read",
`:nemesis` -> "nemesis"); `nil` -> None; `true`/`false` -> bool; integers (also `42N`) -> int;
decimals (also `1.5M`) and ratios -> float; strings and characters -> str; vectors, lists and
sets -> list; maps -> dict whose keys are strings (keyword keys lose their ':', other keys are
rendered the way JSON renders object keys: 7 -> "7", nil -> "null", a vector -> its JSON text).
`#_` discards the next form; a tagged literal (`#inst "..."`, `#uuid "..."`,
`#jepsen.history.Op {...}`) is read as the value it tags.

Literals that parse but mean nothing in a history are bad input, named with their line, as the
JSON Lines reader refuses them: `##NaN`, `##Inf` and `##-Inf` (NaN equals no value, not even
itself), a decimal that overflows a 64-bit float (`1e999`), and a ratio with a zero denominator
(`1/0`, `0/0`). So are lists, vectors, sets and maps nested more than `MAX_NESTING` levels inside
an op map (the stack that builds values is checked as it grows; no step recurses).

Conventions (KNOSSOS_CONVENTIONS): initial value 0 (knossos core_test/test-examples checks
cas-register with init 0 and multi-register with {:x 0 :y 0}); a nil read is "unconstrained"
(knossos' models accept a nil read in any state: the value was not recorded); a `:fail` op,
cas or read, "did-not-happen" (knossos `without-failures` drops every :fail op and its
invocation).

Jepsen's own layout, one op map per line, is read faster by `edn_fast` (through orjson) as
long as every line of a run is one it is sure to read as this module does (`edn_located`);
the rest of the file is read here.

Streaming: the file is read in 64 KiB chunks; each is scanned up to its last newline with one
compiled regular expression (`findall`: the tokens, with newlines as tokens so lines are counted),
and a string still open there is rescanned with the next chunk. A stack builds values, and every
element of the top-level vector/list (or every top-level form, for a stream of maps) is handed on
as soon as it is complete, so memory is bounded by one chunk's tokens and the largest single op,
not by the file. Errors name the line.

Why not a library. The brief was "use a well-kept EDN reader if it is fast enough, measured". The
one maintained general EDN reader on PyPI is `edn_format` (0.8.0, July 2026; a PLY lexer and
parser). `kim-edn` (1.6.0) reads the KIM-EDN subset only: it rejects keywords and nil
(`[{:process 1}]` and `[nil]` both fail), so it cannot read Jepsen histories. Measured here
(2 cores shared with other jobs, Python 3.11.7, best of 3, ranges over runs at different loads;
both readers give the same plain Python values; the generated file is `[`, then 10^5 lines
`{:index i, :time t, :process p, :type :invoke|:ok|:fail|:info, :f :read|:write|:cas, :value
nil|3|[3 0]}`, then `]`):

    input                                        edn_format.loads  iter_forms     read_edn
    mongodb-v0-ack-rollback-2.edn (73 KB, 1,432 ops)  0.12-0.22 s  0.011-0.025 s  0.015-0.034 s
    generated 10^5-op vector (8.1 MB)                 19.6-20.7 s  1.1-2.1 s      1.3-2.5 s

(`edn_format` also needs 4-8 s more to turn its Keyword/ImmutableDict/ImmutableList values into
plain ones.) So `edn_format` is 8-15x slower - about 3 minutes per 10^6 ops, where Jepsen
histories reach 10^6-10^7 - and it parses a whole string (`loads` needs the entire file in
memory: no streaming), and its errors give a character offset at best (`LexToken(VECTOR_END,
']',1,14)`), never a line. So this reader is hand-written. It accepts the EDN grammar
(github.com/edn-format/edn) except metadata (`^`), which histories do not use and which is
rejected with a message.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

from spark_checks.history import HistoryError, Operation, Position
from spark_checks.readers._common import (
    MAX_NESTING,
    NESTING_MESSAGE,
    NON_FINITE_MESSAGE,
    create_history_file,
    display_name,
    finite_float,
    make_operation,
    shown,
)

EXPECTED_OP: Final = "expected an op map {:process p, :type :invoke|:ok|:fail|:info, :f kw, :value v}"

CHUNK_CHARS: Final = 1 << 16  # text read and scanned at a time (the bound on transient tokens)

# One token per match; whitespace and commas before it are skipped, except newlines, which are
# tokens themselves so that lines can be counted without positions. Every character is either
# skipped or part of a token (the last alternative), so `findall` never drops text silently.
# A string not closed before the end of the scanned text runs to its end (then it is the last
# token, and is rescanned with the next chunk).
_TOKEN = re.compile(
    r"""(?:[^\S\n]|,)*(
      \n
    | [^\s,\[\](){}"\\;#^][^\s,\[\](){}"\\;]*                 # keyword, number, nil, true, false, symbol
    | [\[\](){}]
    | "[^"\\]*(?:\\[\s\S][^"\\]*)*(?:"|\\?\Z)                # string
    | ;[^\n]*                                                 # comment
    | \#[{_]                                                  # set, discard
    | \#[^\s,\[\](){}"\\;]+                                   # tag
    | \\(?:newline|return|space|tab|formfeed|backspace|u[0-9a-fA-F]{4}|o[0-7]{1,3}|.)  # character
    | [^\s,]                                                  # anything else: an error
    )""",
    re.VERBOSE,
)
_STRING = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"')
_STRING_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\s\S])")
_ESCAPES: Final = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "b": "\b", "f": "\f", "/": "/"}
_CHAR_NAMES: Final = {
    "newline": "\n",
    "return": "\r",
    "space": " ",
    "tab": "\t",
    "formfeed": "\f",
    "backspace": "\b",
}
_INT = re.compile(r"[+-]?\d+N?")
_FLOAT = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?M?")
_RATIO = re.compile(r"[+-]?\d+/\d+")
_NAMES: Final = {"[": "vector", "(": "list", "{": "map", "#{": "set"}
_CACHE_LIMIT: Final = 10_000  # distinct atoms remembered (keywords, small numbers)
_CACHE_MAX_CHARS: Final = 6  # longer numbers (times, indices) are rarely repeated: not cached


class _Syntax:
    """A structural token (in the token cache) or a prefix waiting in a container for its form."""

    __slots__ = ("closer", "discard", "opener")

    def __init__(self, opener: str = "", closer: str = "", discard: bool = False) -> None:
        self.opener = opener  # "[", "(", "{", "#{" for an opening token
        self.closer = closer  # the closing character that matches it, or this closing token
        self.discard = discard


_NEWLINE: Final = _Syntax()
_DISCARD: Final = _Syntax(discard=True)
_TAG: Final = _Syntax()
_MISSING: Final = object()
_PRESET: Final[dict[str, Any]] = {
    "\n": _NEWLINE,
    "[": _Syntax("[", "]"),
    "(": _Syntax("(", ")"),
    "{": _Syntax("{", "}"),
    "#{": _Syntax("#{", "}"),
    "]": _Syntax(closer="]"),
    ")": _Syntax(closer=")"),
    "}": _Syntax(closer="}"),
    "#_": _DISCARD,
    "nil": None,
    "true": True,
    "false": False,
}


def _unescape(body: str) -> str:
    def replace(match: re.Match[str]) -> str:
        escape = match.group(1)
        if len(escape) == 5:  # uXXXX
            return chr(int(escape[1:], 16))
        try:
            return _ESCAPES[escape]
        except KeyError:
            raise ValueError(f"unknown escape \\{escape} in a string") from None

    return _STRING_ESCAPE.sub(replace, body)


def _atom(text: str) -> Any:
    """A keyword (as a plain string), a number, or a symbol (as a plain string)."""
    first = text[0]
    if first == ":":
        name = text.lstrip(":")
        if not name:
            raise ValueError("empty keyword ':'")
        return name
    if first.isdigit() or (first in "+-" and len(text) > 1 and text[1].isdigit()):
        if _INT.fullmatch(text):
            return int(text.rstrip("N"))
        if _FLOAT.fullmatch(text):
            return finite_float(text.rstrip("M"))
        if _RATIO.fullmatch(text):
            return _ratio(text)
        raise ValueError(f"malformed number {shown(text)}")
    return text  # a symbol


def _ratio(text: str) -> float:
    """An EDN ratio as a float (`1/2` -> 0.5); a zero denominator or an overflow is an error."""
    numerator, denominator = text.split("/")
    if int(denominator) == 0:
        raise ValueError(f"the ratio {shown(text)} has a zero denominator: it is no number")
    from fractions import Fraction  # ratios are rare: 9 M instructions (decimal) of every start-up

    try:
        return float(Fraction(int(numerator), int(denominator)))
    except OverflowError:
        raise ValueError(f"the ratio {shown(text)} overflows a 64-bit float") from None


_SYMBOLIC: Final = frozenset({"##NaN", "##Inf", "##-Inf"})
"""EDN's symbolic values (edn-format, "Symbolic values")."""
_NESTING_LEVELS: Final = MAX_NESTING + 1
"""Containers open at once inside a handed-on form: the op map and what its values nest."""


def _char(token: str) -> str:
    text = token[1:]
    if len(text) == 1:
        return text
    if text in _CHAR_NAMES:
        return _CHAR_NAMES[text]
    if not text:
        raise ValueError("a '\\' must start a character literal")
    return chr(int(text[1:], 16 if text[0] == "u" else 8))


def _json_key(key: Any) -> str:
    """A map key as the str JSON would use for it."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return json.dumps(key, separators=(",", ":"), ensure_ascii=False)


def _make_map(items: list[Any], source: str, line: int) -> dict[str, Any]:
    if len(items) % 2:
        raise HistoryError(
            Position(source, line=line), "a map needs an even number of forms (key value pairs)"
        )
    return map_of_pairs(items)


def map_of_pairs(items: list[Any]) -> dict[str, Any]:
    """A map's forms (an even number: key, value, key, value...) as the dict the reader makes:
    a later duplicate key's value wins, keys other than strings as `_json_key` renders them."""
    pairs = iter(items)
    try:
        result: dict[Any, Any] = dict(zip(pairs, pairs, strict=False))
    except TypeError:  # an unhashable key (a vector or map): rendered as JSON text below
        pass
    else:
        if set(map(type, result)) <= {str}:
            return result
    pairs = iter(items)
    return {_json_key(k): v for k, v in zip(pairs, pairs, strict=False)}


def _safe_cut(buffer: str) -> int:
    """Where the buffer can be split with no token but a string across the split (0: nowhere)."""
    cut = buffer.rfind("\n") + 1
    if cut:
        return cut
    # One very long line: split after a space or comma before the first ';' (a comment runs to
    # the end of the line); a string across the split is rescanned with the next chunk.
    limit = buffer.find(";")
    if limit < 0:
        limit = len(buffer)
    return max(buffer.rfind(" ", 0, limit), buffer.rfind(",", 0, limit), buffer.rfind("\t", 0, limit)) + 1


def iter_forms(
    chunks: Iterable[str],
    source: str,
    *,
    first_line: int = 1,
    gather: int = CHUNK_CHARS,
    nesting: int = _NESTING_LEVELS,
) -> Iterator[tuple[Any, int]]:
    """Stream (value, line) for each top-level form, and for each element of a top-level vector/list.

    `chunks` is the text in pieces of any size (a token may straddle two pieces); pieces are
    gathered until `gather` characters are buffered, then scanned up to the last newline.
    A form handed on may nest `nesting` levels of containers (itself included): an op map
    and its values nested `MAX_NESTING` deep, by default.
    """
    stack: list[tuple[_Syntax, list[Any], int]] = []  # open containers: (opener, items, line)
    items: list[Any] | None = None  # where a completed value goes; None: it is handed on (yielded)
    stream_depth = 0  # 1 while inside a top-level vector/list whose elements are handed on
    top_markers: list[Any] = []  # prefixes waiting at the level whose values are handed on
    markers = 0  # prefixes waiting anywhere (the slow path runs only when there are some)
    cache: dict[str, Any] = dict(_PRESET)
    cache_get = cache.get
    findall = _TOKEN.findall
    line = first_line
    buffer = ""
    source_iter = iter(chunks)
    at_eof = False
    while not at_eof:
        chunk = next(source_iter, None)
        if chunk is None:
            at_eof = True
            segment, buffer = buffer, ""
        else:
            buffer += chunk
            if len(buffer) < gather and chunk:
                continue  # gather small pieces before scanning
            cut = _safe_cut(buffer)
            if not cut:
                continue  # no place to split yet: read more
            segment, buffer = buffer[:cut], buffer[cut:]
        tokens = findall(segment)
        unterminated = False
        if tokens and tokens[-1][0] == '"' and not _STRING.fullmatch(tokens[-1]):
            unterminated = True
            if not at_eof:  # a string across the split: rescan it with the next chunk
                buffer = tokens.pop() + buffer
                unterminated = False
            elif len(tokens) == 1:
                raise HistoryError(
                    Position(source, line=line), "unterminated string: the '\"' opened here is never closed"
                )
            else:
                tokens.pop()
        value: Any
        for token in tokens:
            value = cache_get(token, _MISSING)
            if value is _MISSING:
                first = token[0]
                try:
                    if token.isdigit():  # the common uncached atom: an index, a time
                        value = int(token)
                    elif first == '"':
                        value = token[1:-1]
                        if "\\" in value:
                            value = _unescape(value)
                    elif first == ";":
                        continue
                    elif first == "#":
                        if len(token) == 1:
                            raise ValueError("unexpected character '#'")
                        if token[1:2] == "#":
                            if token in _SYMBOLIC:
                                raise ValueError(f"{token} {NON_FINITE_MESSAGE}")
                            raise ValueError(
                                f"unknown symbolic value {shown(token)} (EDN has ##Inf, ##-Inf, ##NaN)"
                            )
                        (items if items is not None else top_markers).append(_TAG)
                        markers += 1
                        continue
                    elif first == "\\":
                        value = _char(token)
                    elif first == "^":
                        raise ValueError("unexpected character '^' (metadata is not supported)")
                    else:
                        value = _atom(token)
                        if len(cache) < _CACHE_LIMIT and (len(token) <= _CACHE_MAX_CHARS or first == ":"):
                            cache[token] = value
                except ValueError as error:
                    raise HistoryError(Position(source, line=line), str(error)) from None
                value_line = line
                if first == '"':
                    line += token.count("\n")
            elif type(value) is _Syntax:
                if value is _NEWLINE:
                    line += 1
                    continue
                if value.opener:
                    if not stack and not top_markers and value.opener in "[(":
                        stream_depth = 1
                        stack.append((value, [], line))  # its elements are handed on, not kept
                    else:
                        items = []
                        stack.append((value, items, line))
                        if len(stack) - stream_depth > nesting:
                            raise HistoryError(Position(source, line=line), NESTING_MESSAGE)
                    continue
                if value.discard:
                    (items if items is not None else top_markers).append(_DISCARD)
                    markers += 1
                    continue
                if not stack:
                    raise HistoryError(Position(source, line=line), f"unexpected {token!r} with nothing open")
                opener, content, value_line = stack.pop()
                if opener.closer != token:
                    raise HistoryError(
                        Position(source, line=line),
                        f"expected {opener.closer!r} to close the {_NAMES[opener.opener]} opened at line "
                        f"{value_line}; got {token!r}",
                    )
                if content and type(content[-1]) is _Syntax:
                    raise HistoryError(Position(source, line=line), "a tag or #_ must be followed by a form")
                if stream_depth and not stack:  # the top-level vector/list ends: its elements went out
                    stream_depth = 0
                    if top_markers:
                        raise HistoryError(
                            Position(source, line=line), "a tag or #_ must be followed by a form"
                        )
                    continue
                items = stack[-1][1] if len(stack) > stream_depth else None
                value = _make_map(content, source, value_line) if opener.opener == "{" else content
            else:
                value_line = line

            # A complete value: apply waiting prefixes, then keep it in its container or hand it on.
            if markers:
                target = items if items is not None else top_markers
                discarded = False
                while target and type(target[-1]) is _Syntax:
                    markers -= 1
                    if target.pop().discard:
                        discarded = True
                        break
                if discarded:
                    continue
            if items is not None:
                items.append(value)
            else:
                yield value, value_line
        if unterminated:
            raise HistoryError(
                Position(source, line=line), "unterminated string: the '\"' opened here is never closed"
            )
    if stack:
        opener, _content, open_line = stack[-1]
        raise HistoryError(
            Position(source, line=open_line),
            f"unterminated {_NAMES[opener.opener]}: the {opener.opener!r} opened here is never closed "
            f"(end of file at line {line})",
        )
    if top_markers:
        raise HistoryError(Position(source, line=line), "a tag or #_ at the end of the file")


def read_file_chunks(path: str | os.PathLike[str], name: str, start: int = 0) -> Iterator[str]:
    """The file's text in chunks from byte `start`; a byte that is not UTF-8 is a HistoryError
    with its offset."""
    handle = _open(path, name)
    with handle:
        handle.seek(start)
        offset = start
        carry = b""
        while True:
            data = handle.read(CHUNK_CHARS)
            if not data:
                break
            data = carry + data
            # do not split a multi-byte character: hold back an incomplete tail
            cut = len(data)
            for back in range(1, min(4, len(data)) + 1):
                byte = data[-back]
                if byte < 0x80:
                    break
                if byte >= 0xC0:  # a lead byte: complete only if its sequence fits
                    need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
                    if back < need:
                        cut = len(data) - back
                    break
            carry = data[cut:]
            try:
                text = data[:cut].decode("utf-8")
            except UnicodeDecodeError as error:
                raise HistoryError(Position(name, offset=offset + error.start), "not UTF-8 text") from None
            offset += cut
            yield text
        if carry:
            raise HistoryError(Position(name, offset=offset), "not UTF-8 text (truncated character)")


def read_edn(path: str | os.PathLike[str]) -> Iterator[Operation]:
    """Stream the operations of a Jepsen/Knossos EDN history."""
    return (operation for operation, _ in edn_located(path))


FAST_RUN_BYTES: Final = 1 << 20
"""Whole lines read at a time (about this many bytes) for `edn_fast.read_op_maps`."""


def edn_located(path: str | os.PathLike[str]) -> Iterator[tuple[Operation, int]]:
    """The operations of a Jepsen/Knossos EDN history, each with the line its op map starts on.

    While the file is Jepsen's one op map per line (it starts with `{`), runs of lines of about
    `FAST_RUN_BYTES` are read by `edn_fast.read_op_maps`; from the first run it does not take
    (or from the start, for any other shape: a vector on one line is never read whole),
    `iter_forms` reads the rest, from that line's byte: every run before ended on a complete
    op map, where the tokenizer reading the whole file would have been."""
    from spark_checks.readers.edn_fast import read_op_maps  # it builds on this module

    name = display_name(path)
    ordinal, line, start = 0, 1, 0
    with _open(path, name) as handle:
        while handle.peek(1)[:1] == b"{":
            run = b"".join(handle.readlines(FAST_RUN_BYTES))
            if not run:
                return
            lines = run.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            maps = read_op_maps(lines)
            if maps is None:
                break
            for value in maps:
                yield make_operation(value, ordinal, name, line, EXPECTED_OP), line
                ordinal += 1
                line += 1
            start += len(run)
    forms = iter_forms(read_file_chunks(path, name, start), name, first_line=line)
    for number, (value, at) in enumerate(forms, ordinal):
        if type(value) is not dict:
            raise HistoryError(Position(name, line=at), f"{EXPECTED_OP}; got {_describe(value)}")
        yield make_operation(value, number, name, at, EXPECTED_OP), at


def _open(path: str | os.PathLike[str], name: str) -> io.BufferedReader:
    try:
        return open(path, "rb")  # the caller closes it
    except OSError as error:
        raise HistoryError(Position(name), f"cannot read the file: {error.strerror}") from None


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "a vector/list"
    return shown(value)


def edn_text(value: Any) -> str:
    """A JSON-like value (what the readers produce) as EDN: None is nil, lists are vectors,
    dicts are maps, and strings and numbers are written as JSON writes them (its escapes,
    \\uXXXX included, are EDN's too)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + " ".join(edn_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn_text(key)} {edn_text(item)}" for key, item in value.items()) + "}"
    return json.dumps(value, allow_nan=False)


def write_edn(
    path: str | os.PathLike[str], operations: Iterable[Operation], *, overwrite: bool = False
) -> int:
    """Write operations as Jepsen writes `history.edn`: one op map per line, `:type`, `:f` and a
    named process as keywords, `:time` and `:key` only when the operation has them. Returns how
    many were written; refuses to replace an existing file (FileExistsError) unless
    `overwrite=True`, as `write_jsonl` does."""
    handle = create_history_file(path, overwrite)
    count = 0
    with handle:
        for op in operations:
            process = f":{op.process}" if isinstance(op.process, str) else edn_text(op.process)
            fields = [f":index {op.index}"]
            if op.time is not None:
                fields.append(f":time {op.time}")
            fields += [f":type :{op.type.value}", f":process {process}", f":f :{op.f}"]
            if op.key is not None:
                fields.append(f":key {edn_text(op.key)}")
            fields.append(f":value {edn_text(op.value)}")
            handle.write("{" + ", ".join(fields) + "}\n")
            count += 1
    return count
