"""A fast reading of the op-map lines Jepsen writes to `history.edn`, through JSON and orjson.

Jepsen's `history.edn` holds one op map per line, made of few token kinds: keywords, integers,
strings, `nil`/`true`/`false`, vectors and maps (`{:index 3, :time 3000, :type :ok, :process 2,
:f :send, :value [[:send 36 [0 36]]]}`). Such text is rewritten into JSON with C-speed bytes
operations only (no Python step per token) and parsed by orjson:

* commas become spaces (EDN reads them as whitespace), `}` becomes `]` and brackets stand apart;
  a non-empty map's `{` becomes `[{"":0}`: the map is read as a list led by that dict (before
  maps are rebuilt, the only non-empty dict: no EDN value reads as one) and rebuilt afterwards
  by `edn.map_of_pairs`, the reader's own rule for keys (`7` -> "7"); `{}` stays `{}`;
* the text is split on whitespace and each word mapped through a table (`dict.get` in `map`,
  the word itself when absent): `:kw` -> `"kw"` (the reader's `_atom`, learnt when orjson
  first refuses a text for it), `nil` -> `null`; integers and strings pass unchanged; words
  are joined by commas, and the commas right after `[` or before `]` are dropped;
* strings are cut out first (split on `"`, no `\\` in the text) and put back after, so what
  they hold is never rewritten.

A run of lines that all hold Jepsen's fields in Jepsen's order (`_JEPSEN_LINE`: index, time,
type, process, f, value) is read together: one regex scan gives the fields, and the values, a
line each, make one JSON text by replacements alone (`_json_code`: a single space separates
forms, so no split into words, and only the few distinct keywords are looked up; for the
engines' stages, `read_jepsen_ops` makes their operations' tuples from that scan without
building a map). Each value's brackets must pair up, kind by kind, within its line
(`_nested_within`): else a value's unclosed `[` could be closed by a later line's and the values
shift, and `{1 2]` would read as a map. Any other run is read line by line: Jepsen's fields by
`_JEPSEN_HEADER` and the value alone, any other op map whole. Only text that certainly reads
the same way both ways is taken:
no `\\` and no NUL byte; outside strings only ASCII letters, digits, spaces, commas, brackets
and `:_?!*<>=/+.-` (so no list, set, tag, `#_`, comment, character, `^`); no digit followed by
`.`, `e` or `E` (decimals); no 19 digits in a row (orjson reads long integers as floats); no
`null` (an EDN symbol, JSON's nil); no deeper nesting than the reader allows (`MAX_NESTING`).
Anything else orjson refuses (symbols, ratios, `N`/`M` suffixes, leading zeros, `+1`, control
characters or bytes that are not UTF-8 in strings, a second form) or that does not come out one
map with an even number of forms makes `read_op_maps` answer None, and the caller reads the
lines with `iter_forms`, which gives the values and refusals (message and line) this module
never makes up.

Measured against the commit before it (2 cores shared with other jobs, load 5-7; CPU time,
`time.process_time`; `distributed.edn_ops` on the first 200,000 lines, two rounds each):
kafka-1000000-ops-1000-keys.edn 7.3-7.5 us per op against 20.4-21.6 with `iter_forms` alone,
kafka-1000000-ops-64-keys-jepsen.edn 7.2 against 19.5-21.2; callgrind on the first 20,000
lines, 56.5 k instructions per op against 159 k, and 53 k against 151 k. Most of the gain is
`_read_together`: runs of lines in Jepsen's field order read with one regex scan and one JSON
text (per-call cost dominates here). `kafkaspec verify --engine local --workers 1` on
kafka-1000000-ops-1000-keys.edn (through `edn.edn_located`): 27.7 CPU-s against 42.0. A poll
line of 3.8 MB (a final read) gains little: 0.66 s against 0.78, the maps being rebuilt in Python.
`tests/spark_checks/test_edn_fast.py` compares the two readings on generated op maps.

The values of a run by replacements (`_json_code`) rather than words looked up one by one, and
maps rebuilt by one walk of the lists: callgrind, compiled, `distributed.edn_ops` over the 10^5
bench files (process start-up taken off), kafka-100000-ops-1000-keys.edn 4.01 G instructions
-> 2.86 G (40.1 k -> 28.6 k an op; with stage 1's pairing and splitting, 4.63 -> 3.50 G),
kafka-100000-ops-64-keys-jepsen.edn 8.28 -> 5.36 G; CPU time on the 10^6 bench file, load 4,
two rounds: 4.9-5.1 -> 3.7-4.0 CPU-s. `tests/spark_checks/test_edn_fast_runs.py` has the lines
whose brackets do not pair up, which the reading before took (shifted values, `{1 2]` a map).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Final

import orjson

from spark_checks.history import OpType
from spark_checks.readers._common import MAX_NESTING, nests_deeper
from spark_checks.readers.edn import _atom, map_of_pairs

_CODE_CHARS: Final = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,[]{}:_?!*<>=/+.-\x00"
"""What the text outside strings may hold (NUL: where a string was cut out)."""
_DIGITS_AS_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
_LONG_INTEGER: Final = b"0" * 19  # orjson reads an integer past 64 bits as a float
_AS_SPACE_AND_CLOSER: Final = bytes.maketrans(b",}", b" ]")
_STRING_MARK: Final = b"\x00"
_EMPTY_MAP_MARK: Final = b"\x01"
_MAP_OPENER: Final = b' [{"":0} '
"""A non-empty map is read as a list led by this dict, which is no EDN value (an EDN map is
a list until it is rebuilt, and `{}` is read as the empty dict)."""
_KEYWORD_WORD: Final = re.compile(rb"(?<!\S):[^\s\x00]*")
_INTEGER_VECTOR_CHARS: Final = b"0123456789[] ,-"
_JEPSEN_HEADER: Final = re.compile(
    rb"\{:index (\d{1,18}), :time (\d{1,18}), :type :(invoke|ok|fail|info), "
    rb":process (?:(\d{1,18})|:([A-Za-z][\w-]*)), :f :([A-Za-z][\w-]*), :value "
)
"""How Jepsen writes an op map's fields before its value (jepsen.history's Op record order)."""
_JEPSEN_LINE: Final = re.compile(
    rb"^\{:index (\d{1,18}), :time (\d{1,18}), :type :(invoke|ok|fail|info), "
    rb":process (?:(\d{1,18})|:([A-Za-z][\w-]*)), :f :([A-Za-z][\w-]*), :value ([^\n]*)\}$",
    re.MULTILINE,
)
"""A whole line of `_JEPSEN_HEADER`'s fields, its value up to the line's last `}`."""
_RUN_CHARS: Final = _CODE_CHARS + b"\n"
_KEYWORD_FORM: Final = re.compile(rb"(?<=[\[,]):[^,\[\]\x00]*")
"""A keyword where a form starts, in `_json_code`'s JSON code: up to the next `,`, bracket or string."""
_NOT_BRACKET_OR_LINE_END: Final = bytes(byte for byte in range(256) if byte not in b"[]{}\n")  # to delete
_PAIR_MARK: Final = b"\x02"
_SIMPLE_FORM: Final = re.compile(
    rb"(?:[ ,\[\]]+|(?:-?(?:0|[1-9][0-9]{0,17})|:[A-Za-z_?!*<>=/+.-][\w?!*<>=/+.:-]*"
    rb'|"[^"\\ ,\[\]{}\x00-\x1f]*"|nil|true|false|\{\})(?=[ ,\]]|\Z))*'
)
"""A form of vectors, integers, keywords, strings without spaces, commas or brackets, `nil`,
`true`, `false` and `{}`: its words are its tokens (brackets glued), read without the checks
and string cutting of `_json_of`."""
_PIECES_LIMIT: Final = 10_000
_PRESET: Final = {b"nil": b"null"}
_NESTING_LEVELS: Final = MAX_NESTING + 1  # the op map and what its values nest (as `iter_forms`)


class _NotFastError(Exception):
    """The line is left to `iter_forms`."""


def read_op_maps(lines: Sequence[bytes]) -> list[dict[str, Any]] | None:
    """The op map of each line (one per line, starting it and ending it), as `iter_forms`
    reads it; None if any line is not certain to read the same way here (see the module)."""
    pieces: dict[bytes, bytes] = dict(_PRESET)
    try:
        maps = _read_together(lines, pieces)
        return maps if maps is not None else _read_each(lines, pieces)
    except _NotFastError:
        return None


def _read_together(lines: Sequence[bytes], pieces: dict[bytes, bytes]) -> list[dict[str, Any]] | None:
    """Lines that all hold Jepsen's fields in Jepsen's order (`_JEPSEN_LINE`), read with one
    scan and one JSON text for them all (the cost here is per call, not per byte); None when
    they do not."""
    together = _jepsen_rows(lines, pieces)
    if together is None:
        return None
    names: dict[bytes, str] = {}
    maps: list[dict[str, Any]] = []
    append = maps.append
    for (index, time, kind, number, process, f, _), value in zip(*together, strict=True):
        append(
            {
                "index": int(index),
                "time": int(time),
                "type": names.get(kind) or names.setdefault(kind, kind.decode()),
                "process": int(number)
                if number
                else names.get(process) or names.setdefault(process, process.decode()),
                "f": names.get(f) or names.setdefault(f, f.decode()),
                "value": value,
            }
        )
    return maps


_TYPE_NAMES: Final = {t.value.encode(): t.value for t in OpType}


JepsenOp = tuple[int, Any, str, str, Any, None, int]
"""A `distributed.Op` of one of Jepsen's lines."""


def read_jepsen_ops(lines: Sequence[bytes]) -> list[JepsenOp] | None:
    """The operations of lines that all hold Jepsen's fields in Jepsen's order, as the tuples
    (index, process, type, f, value, key, time) that `distributed.usual_op` makes of
    `read_op_maps`' maps (the type by `OpType`'s own name), without making the maps: the
    fields `_JEPSEN_LINE` matched pass its checks (an index and a time of at most 18 digits, a
    type of the four, a keyword f, an integer or keyword process; no key). None when they do
    not all hold them, or a value is not certain to read alike (then `read_op_maps`)."""
    try:
        together = _jepsen_rows(lines, dict(_PRESET))
    except _NotFastError:
        return None
    if together is None:
        return None
    names: dict[bytes, str] = {}
    processes: dict[bytes, int | str] = {}
    ops: list[JepsenOp] = []
    append = ops.append
    for (index, time, kind, number, process, f, _), value in zip(*together, strict=True):
        name = number or process
        who = processes.get(name)
        if who is None:
            who = processes[name] = int(number) if number else process.decode()
        what = names.get(f) or names.setdefault(f, f.decode())
        append((int(index), who, _TYPE_NAMES[kind], what, value, None, int(time)))
    return ops


def _cut_strings(text: bytes) -> tuple[bytes, list[bytes] | None] | None:
    """`text` with each string's contents cut out (`_STRING_MARK` where each stood) and the
    pieces its quotes split it into (None: it has no string, `parts[1::2]` the strings); None
    unless every string certainly reads alike (no escape, no unclosed quote, no mark)."""
    if b"\\" in text or _STRING_MARK in text:
        return None
    if b'"' not in text:
        return text, None
    parts = text.split(b'"')
    if not len(parts) & 1:
        return None
    return _STRING_MARK.join(parts[0::2]), parts


def _jepsen_rows(lines: Sequence[bytes], pieces: dict[bytes, bytes]) -> tuple[list[Any], list[Any]] | None:
    """`_JEPSEN_LINE`'s fields of each line and its value read, or None unless every line
    has them and each value is certain to read as `iter_forms` reads it; `_NotFastError` from
    rebuilding a map. The values, a line each, are made one JSON text for orjson with bytes
    operations over them all (`_json_code`), with no step per value or token but the
    rebuilding of maps."""
    text = b"\n".join(lines)
    if text.count(b"\n") != len(lines) - 1:
        return None
    rows = _JEPSEN_LINE.findall(text)
    if len(rows) != len(lines):
        return None
    cut = _cut_strings(b"\n".join(map(itemgetter(6), rows)))
    if cut is None:
        return None
    code, parts = cut
    if code.translate(None, _RUN_CHARS) or b"null" in code:
        return None
    digits = code.translate(_DIGITS_AS_ZERO)
    if _LONG_INTEGER in digits or b"0." in digits or b"0e" in digits or b"0E" in digits:
        return None
    if not _nested_within(code, len(lines) - 1, MAX_NESTING):
        return None  # a value whose brackets do not pair up in its line, or nest too deep
    json = _json_code(b"[" + code + b"]", pieces)  # a list of the values
    if json is None:
        return None
    if parts is not None:
        parts[0::2] = json.split(_STRING_MARK)
        json = b'"'.join(parts)
    try:
        read: list[Any] = orjson.loads(json)
    except orjson.JSONDecodeError:
        return None
    if len(read) != len(rows):
        return None  # some line's value is not one form
    if code.count(b"{") != code.count(b"{}"):
        for number, value in enumerate(read):
            if isinstance(value, list):
                read[number] = _rebuilt(value)
    return rows, read


def _json_code(code: bytes, pieces: dict[bytes, bytes]) -> bytes | None:
    """EDN code (strings cut out: `_STRING_MARK`; only `_RUN_CHARS`; lines apart) as JSON code,
    or None where a form could read otherwise: `,` is whitespace, a single space (Jepsen's
    `, ` between map entries: two) separates forms and becomes `,`, as a line's end does; a
    map `{...}` becomes a list led by `_MAP_OPENER`'s dict (rebuilt by `_rebuilt`), `{}` stays;
    `nil` becomes `null` where a form starts (after `[` or `,`), and each distinct keyword
    found where a form starts (`_KEYWORD_FORM`) its name (`_atom`), wherever it is. What that
    leaves unread or misreads (a symbol, `nile`, `:send` in `:sendx` or `x:send`, more spaces)
    is no JSON: orjson refuses it."""
    code = (
        code.translate(_AS_SPACE_AND_CLOSER)
        .replace(b"{]", _EMPTY_MAP_MARK)
        .replace(b"{", _MAP_OPENER[1:])  # `{` right after a form (`:a{`) is left unread: no space
        .replace(_EMPTY_MAP_MARK, b"{}")
        .replace(b"  ", b" ")
        .replace(b" ", b",")
        .replace(b"\n", b",")
        .replace(b"[,", b"[")
        .replace(b",]", b"]")
    )
    if b"nil" in code:  # what follows `nil` but `,` or `]` is no JSON: `nile` -> `nulle`
        code = code.replace(b",nil", b",null").replace(b"[nil", b"[null")
    if b":" in code:  # longest first: `:a:b` before `:b`, `:sender` before `:send`
        for keyword in sorted(set(_KEYWORD_FORM.findall(code)), key=len, reverse=True):
            json = pieces.get(keyword)
            if json is None:
                if len(pieces) >= _PIECES_LIMIT:
                    return None
                try:
                    json = pieces[keyword] = orjson.dumps(_atom(keyword.decode("ascii")))
                except ValueError:  # `:` alone: refused by the reader
                    return None
            code = code.replace(keyword, json)  # where it does not end a form, no JSON is left
    return code


def _nested_within(code: bytes, newlines: int, levels: int) -> bool:
    """Whether in each line of `code` (`newlines` line ends) every `[` and `{` is closed by a
    closer of its own kind, at most `levels` inside one another: rounds that take out the
    innermost pairs, one level each, till only the line ends are left."""
    brackets = code.translate(None, _NOT_BRACKET_OR_LINE_END)
    for _round in range(levels):
        if len(brackets) == newlines:
            return True
        closed = brackets.replace(b"[]", _PAIR_MARK).replace(b"{}", _PAIR_MARK)
        if len(closed) == len(brackets):
            return False
        brackets = closed.translate(None, _PAIR_MARK)
    return len(brackets) == newlines


def _read_each(lines: Sequence[bytes], pieces: dict[bytes, bytes]) -> list[dict[str, Any]] | None:
    """The lines read one by one: Jepsen's fields by `_JEPSEN_HEADER`, any other op map whole."""
    maps = []
    header = _JEPSEN_HEADER.match
    names: dict[bytes, str] = {}
    jsons: dict[bytes, tuple[bytes, bool]] = {}
    for line in lines:
        if line[-1:] != b"}":
            return None
        fields = header(line)
        if fields is None:  # any other op map: the whole line is one form
            _json, found, rebuild = _json_of(line, pieces, _NESTING_LEVELS)
            if rebuild and isinstance(found, list):
                found = _rebuilt(found)
            if found.__class__ is not dict:
                return None
            maps.append(found)
            continue
        index, time, kind, number, process, f = fields.groups()
        maps.append(
            {
                "index": int(index),
                "time": int(time),
                "type": names.get(kind) or names.setdefault(kind, kind.decode()),
                "process": int(number) if number is not None else process.decode(),
                "f": names.get(f) or names.setdefault(f, f.decode()),
                "value": _form(line[fields.end() : -1], pieces, jsons, MAX_NESTING),
            }
        )
    return maps


def _form(
    text: bytes, pieces: dict[bytes, bytes], jsons: dict[bytes, tuple[bytes, bool]], levels: int
) -> Any:
    """The one EDN form `text` holds, through JSON; `_NotFastError` unless certainly read alike.
    `jsons`: the JSON text of forms seen before (Jepsen repeats values: `[:poll]`, a send
    retried), and whether it has maps to rebuild."""
    known = jsons.get(text)
    if known is None:
        if _SIMPLE_FORM.fullmatch(text) and (len(text) <= levels or not nests_deeper(text, levels)):
            spaced = text.replace(b",", b" ").replace(b"[", b" [ ").replace(b"]", b" ] ")
            words = spaced.split()
            json = b",".join(map(pieces.get, words, words)).replace(b"[,", b"[").replace(b",]", b"]")
            try:
                value = orjson.loads(json)
            except orjson.JSONDecodeError:  # a keyword not in `pieces` yet
                if not _learn(spaced, pieces):
                    raise _NotFastError from None
                json = b",".join(map(pieces.get, words, words)).replace(b"[,", b"[").replace(b",]", b"]")
                value = _parsed(json)
            if len(jsons) < _PIECES_LIMIT:
                jsons[text] = json, False
            return value
        json, value, rebuild = _json_of(text, pieces, levels)
        if len(jsons) < _PIECES_LIMIT:
            jsons[text] = json, rebuild
    else:
        json, rebuild = known
        value = orjson.loads(json)
    return _rebuilt(value) if rebuild and isinstance(value, list) else value


def _json_of(text: bytes, pieces: dict[bytes, bytes], levels: int) -> tuple[bytes, Any, bool]:
    """The JSON text of the one EDN form `text` holds, what orjson reads of it, and whether it
    has maps to rebuild;
    `_NotFastError` unless certainly read alike. `pieces`: the table of keywords and nils as JSON
    (see the module), grown as they come; `levels`: the nesting the reader allows here."""
    cut = _cut_strings(text)
    if cut is None:
        raise _NotFastError
    code, parts = cut
    if not code.translate(None, _INTEGER_VECTOR_CHARS):  # integers in vectors: nothing to look up
        if _LONG_INTEGER in code.translate(_DIGITS_AS_ZERO) or nests_deeper(code, levels):
            raise _NotFastError
        json = b",".join(code.replace(b",", b" ").split()).replace(b"[,", b"[").replace(b",]", b"]")
        return json, _parsed(json), False
    if code.translate(None, _CODE_CHARS) or b"null" in code:
        raise _NotFastError
    digits = code.translate(_DIGITS_AS_ZERO)
    if _LONG_INTEGER in digits or b"0." in digits or b"0e" in digits or b"0E" in digits:
        raise _NotFastError
    if not _nested_within(code, 0, levels):  # also `{1 2]`: orjson reads both closers alike
        raise _NotFastError
    spaced = (
        code.translate(_AS_SPACE_AND_CLOSER)
        .replace(b"{]", _EMPTY_MAP_MARK)
        .replace(b"[", b" [ ")
        .replace(b"]", b" ] ")
        .replace(b"{", _MAP_OPENER)
        .replace(_EMPTY_MAP_MARK, b" {} ")
    )
    words = spaced.split()
    for attempt in (1, 2):
        json = b",".join(map(pieces.get, words, words)).replace(b"[,", b"[").replace(b",]", b"]")
        if parts is not None:
            parts[0::2] = json.split(_STRING_MARK)
            json = b'"'.join(parts)
        try:
            return json, orjson.loads(json), code.count(b"{") != code.count(b"{}")
        except orjson.JSONDecodeError:
            if attempt == 2 or not _learn(spaced, pieces):
                raise _NotFastError from None
    raise AssertionError("unreachable")


def _parsed(json: bytes) -> Any:
    try:
        return orjson.loads(json)
    except orjson.JSONDecodeError:
        raise _NotFastError from None


def _learn(spaced: bytes, pieces: dict[bytes, bytes]) -> bool:
    """Put the keywords among the words of `spaced` (brackets apart, strings cut out: a `:`
    starts a keyword) in the table; whether any was new."""
    learnt = False
    for word in set(_KEYWORD_WORD.findall(spaced)).difference(pieces):
        if len(pieces) >= _PIECES_LIMIT:
            break
        try:
            pieces[word] = orjson.dumps(_atom(word.decode("ascii")))
        except ValueError:  # `:` alone: refused by the reader
            continue
        learnt = True
    return learnt


def _map(value: list[Any]) -> dict[str, Any]:
    """A map read as a list led by the empty dict: its forms paired, as the reader pairs them
    (`map_of_pairs`; an integer key's JSON text is its `str`)."""
    if not value[0] or not len(value) & 1:
        raise _NotFastError  # the `_MAP_OPENER` dict is the only non-empty dict before maps are rebuilt
    keys = value[1::2]
    kinds = set(map(type, keys))
    if kinds == {str} or not keys:  # `map_of_pairs`'s usual case, cheaper
        return dict(zip(keys, value[2::2], strict=True))
    if kinds <= {str, int}:  # Kafka's polls: offsets by integer key
        return {
            key if type(key) is str else str(key): item for key, item in zip(keys, value[2::2], strict=True)
        }
    return map_of_pairs(value[1:])


def _rebuilt(value: list[Any]) -> Any:
    """Maps inside `value` rebuilt, innermost first (a map's key may be a map or vector), in
    place: a list orjson has just made is no one else's."""
    is_map = bool(value) and isinstance(value[0], dict) and bool(value[0])  # before its maps are rebuilt
    for number, item in enumerate(value):
        if isinstance(item, list):
            rebuilt = _rebuilt(item)
            if rebuilt is not item:
                value[number] = rebuilt
    return _map(value) if is_map else value
