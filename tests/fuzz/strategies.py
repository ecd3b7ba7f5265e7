"""Hypothesis strategies for malformed histories, one per format, for fuzzing `kafkaspec verify`.

Each strategy draws a well-formed base history and a few mutations. Bases: small generated
Kafka histories (`spark_checks.kafka_histories`), hand-written register, CAS, kv, multi-register,
FIFO-queue and mutex histories, and the first lines of the real Knossos and Porcupine histories
in `../shared/histories`. Mutations are the classes of hostile input that crashed the verifier
(issue: "Reliability under hostile input"): values nested hundreds to thousands of levels deep
(in a value, a key or a process), integers beyond 64 bits, NaN and infinities, EDN ratios with
a zero denominator, lone surrogates, values of the wrong type for the model (an integer where
kv appends strings, where a transaction's micro-operations or a Kafka poll result belong), and
blind ones: flipped bytes, truncation, duplicated, dropped and swapped lines. Parquet files
are also drawn with a column twice, a column of the wrong type, a column missing, and flipped
or cut bytes.

`FuzzCase` is what a strategy gives: the file's bytes, its extension, and extra `verify` flags
(a forced `--model` or `--format` sometimes, so that every model meets every value).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from spark_checks.choices import MODEL_NAMES
from spark_checks.kafka_histories import generate_history
from spark_checks.readers.jsonl import operation_to_json

HISTORIES: Final = Path(__file__).resolve().parents[3] / "shared" / "histories"

FORMATS: Final = ("jsonl", "edn", "porcupine-etcd", "porcupine-kv", "parquet")
EXTENSIONS: Final = {
    "jsonl": ".jsonl",
    "edn": ".edn",
    "porcupine-etcd": ".log",
    "porcupine-kv": ".txt",
    "parquet": ".parquet",
}


@dataclass(frozen=True)
class FuzzCase:
    """One generated input: the history file's content and the flags to verify it with."""

    fmt: str
    content: bytes
    flags: tuple[str, ...] = ()

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.fmt]

    def argv(self, path: Path, engine: str, max_seconds: float) -> list[str]:
        """`kafkaspec verify` of this case written at `path` (a report goes to PATH.html)."""
        flags = [str(path.with_suffix(".html")) if flag == REPORT else flag for flag in self.flags]
        return ["verify", str(path), "--engine", engine, "--max-seconds", str(max_seconds), *flags]


# ---------------------------------------------------------------------------------------
# Bases
# ---------------------------------------------------------------------------------------


def _calls(*calls: tuple[Any, str, Any, str, Any]) -> list[dict[str, Any]]:
    """(process, f, invocation value, completion type, completion value) -> JSON ops."""
    ops: list[dict[str, Any]] = []
    for process, f, given, outcome, done in calls:
        ops.append({"process": process, "type": "invoke", "f": f, "value": given})
        ops.append({"process": process, "type": outcome, "f": f, "value": done})
    for index, op in enumerate(ops):
        op["index"] = index
    return ops


def _keyed(ops: list[dict[str, Any]], keys: list[str]) -> list[dict[str, Any]]:
    for op, key in zip(ops, [k for k in keys for _ in range(2)], strict=True):
        op["key"] = key
    return ops


@cache
def json_bases() -> tuple[tuple[dict[str, Any], ...], ...]:
    """Well-formed histories as lists of JSON ops, one per model family."""
    kafka = [
        tuple(operation_to_json(op) for op in generate_history(12, 2, seed=seed, txn_share=share))
        for seed, share in ((1, 0.0), (2, 0.3))
    ]
    register = _calls(
        (0, "write", 1, "ok", 1), (1, "read", None, "ok", 1), (0, "cas", [1, 2], "fail", [1, 2])
    )
    kv = _keyed(
        _calls((0, "put", "a", "ok", "a"), (1, "append", "b", "ok", "b"), (0, "get", None, "ok", "ab")),
        ["k", "k", "k"],
    )
    multi = _calls(
        (0, "txn", [["write", "x", 1]], "ok", [["write", "x", 1]]),
        (1, "txn", [["read", "x", None]], "ok", [["read", "x", 1]]),
    )
    queue = _calls((0, "enqueue", 1, "ok", 1), (1, "dequeue", None, "ok", 1))
    mutex = _calls((0, "acquire", None, "ok", None), (0, "release", None, "ok", None))
    return (*kafka, tuple(register), tuple(kv), tuple(multi), tuple(queue), tuple(mutex))


def _head_lines(path: Path, count: int) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [line for _, line in zip(range(count), handle, strict=False)]


@cache
def edn_bases() -> tuple[str, ...]:
    """The first op maps of Knossos histories (one map per line), as EDN vectors, and the
    multi-register history whole (its maps span lines)."""
    bases = []
    for name in ("cas-register/bad/bad-analysis.edn", "cas-register/good/memstress3-20.edn"):
        lines = [
            line.strip().lstrip("[").rstrip("]")
            for line in _head_lines(HISTORIES / "knossos/data" / name, 40)
        ]
        bases.append("[" + "\n ".join(line for line in lines if line.startswith("{")) + "]\n")
    bases.append(
        (HISTORIES / "knossos/data/multi-register/good/multi-register.edn").read_text(encoding="utf-8")
    )
    return tuple(bases)


@cache
def etcd_bases() -> tuple[str, ...]:
    folder = HISTORIES / "porcupine/test_data/jepsen"
    return tuple("".join(_head_lines(folder / name, 60)) for name in ("etcd_000.log", "etcd_040.log"))


@cache
def kv_log_bases() -> tuple[str, ...]:
    folder = HISTORIES / "porcupine/test_data/kv"
    return tuple("".join(_head_lines(folder / name, 40)) for name in ("c01-ok.txt", "c01-bad.txt"))


# ---------------------------------------------------------------------------------------
# Hostile values
# ---------------------------------------------------------------------------------------

DEPTHS: Final = (99, 100, 101, 102, 300, 1000, 3000)
HUGE_INTEGERS: Final = (2**64, -(2**63) - 1, 10**40, -(10**30))
WRONG_SHAPES: Final[tuple[Any, ...]] = (
    5,
    -1,
    "x",
    True,
    None,
    1.5,
    [],
    {},
    [5],
    [[5]],
    [None],
    ["poll"],
    [["poll"]],
    [["poll", 5]],
    [["poll", {"x": 5}]],
    [["poll", {"x": [5]}]],
    [["poll", {"x": [[0]]}]],
    [["poll", {"x": [[[0], 1]]}]],
    [["poll", {"x": [[0, [1]]]}]],
    [["poll", {"x": [[0, {"a": 1}]]}]],
    [["send"]],
    [["send", "x"]],
    [["send", "x", [1, 2, 3]]],
    [["send", {"a": 1}, 5]],
    [["send", "x", [0, {"a": [1]}]]],
    [["send", "x", ["a", 1]]],
    [["read", "x"]],
    [["write", ["x"], 1]],
    [["read", {"k": 1}, 2]],
    [1, 2, 3],
    {"1": 2},
)


@dataclass(frozen=True)
class RawJson:
    """JSON text put into a history as it is (a value too deep for `json.dumps` to write)."""

    text: str


def nested(depth: int, leaf: Any, use_maps: bool) -> RawJson:
    """A value `depth` levels deep (lists, or maps with key "a"), as JSON text."""
    opener, closer = ('{"a":', "}") if use_maps else ("[", "]")
    return RawJson(opener * depth + json.dumps(leaf) + closer * depth)


def hostile_values() -> st.SearchStrategy[Any]:
    """A value that is legal JSON but hostile to some model or step."""
    return st.one_of(
        st.builds(nested, st.sampled_from(DEPTHS), st.sampled_from([1, "a", None]), st.booleans()),
        st.sampled_from(HUGE_INTEGERS),
        st.sampled_from(WRONG_SHAPES),
        st.sampled_from(["lone \ud800 surrogate", "\udfff", "\ud800\udc00"]),
        st.builds(lambda n: [[n, n]], st.sampled_from(HUGE_INTEGERS)),
    )


JSON_TOKENS: Final = ("NaN", "Infinity", "-Infinity", "1e999", "-1e400", '"\\ud800"', "1" * 5000)
EDN_TOKENS: Final = (
    "1/0",
    "0/0",
    "-3/0",
    "1/3",
    "##NaN",
    "##Inf",
    "##-Inf",
    "##Foo",
    "1e999",
    "1.5M",
    "18446744073709551616",
    "-9223372036854775809N",
    "1" * 5000,
    '"\\ud800"',
    '"lone \\udfff"',
    "\\uD800",
    '#inst "x"',
    "#{1 2}",
    "{1 2 1 3}",
    "[[:send :x 1]]",
    "[[:poll {:x 5}]]",
    "[[:read]]",
    "[:read :x 1]",
    "(1 2)",
    "nil",
    "true",
    ":kw",
    "5",
    '"s"',
)


def _edn_nested(depth: int, use_maps: bool) -> str:
    opener, closer = ("{:a ", "}") if use_maps else ("[", "]")
    return opener * depth + "1" + closer * depth


def _json_nested(depth: int, use_maps: bool) -> str:
    opener, closer = ('{"a":', "}") if use_maps else ("[", "]")
    return opener * depth + "1" + closer * depth


# ---------------------------------------------------------------------------------------
# Mutations
# ---------------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy[Any]], Any]


def _blind(draw: Draw, data: bytes) -> bytes:
    """A mutation that knows nothing of the format."""
    if not data:
        return data
    kind = draw(st.sampled_from(["flip", "cut", "duplicate", "drop", "swap", "insert"]))
    if kind == "flip":
        mutable = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            mutable[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        return bytes(mutable)
    if kind == "cut":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "insert":
        at = draw(st.integers(0, len(data)))
        junk: bytes = draw(
            st.sampled_from([b"\x00", b"\xff\xfe", b"\n\n", b"{", b"]", b"\r", "\u2028".encode()])
        )
        return data[:at] + junk + data[at:]
    lines = data.splitlines(keepends=True)
    first = draw(st.integers(0, len(lines) - 1))
    if kind == "duplicate":
        lines.insert(draw(st.integers(0, len(lines))), lines[first])
    elif kind == "drop":
        del lines[first]
    else:
        second = draw(st.integers(0, len(lines) - 1))
        lines[first], lines[second] = lines[second], lines[first]
    return b"".join(lines)


FIELDS: Final = ("value", "value", "value", "key", "process", "index", "time", "f", "type")


def _mutate_ops(draw: Draw, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace one field of one op with a hostile value."""
    ops = [dict(op) for op in ops]
    op = ops[draw(st.integers(0, len(ops) - 1))]
    op[draw(st.sampled_from(FIELDS))] = draw(hostile_values())
    return ops


def _dumps(value: Any) -> str:
    """`json.dumps`, with a `RawJson` field written as its text."""
    if isinstance(value, RawJson):
        return value.text
    if isinstance(value, dict) and any(isinstance(field, RawJson) for field in value.values()):
        return "{" + ", ".join(f"{json.dumps(name)}: {_dumps(field)}" for name, field in value.items()) + "}"
    return json.dumps(value)


def _json_text(ops: list[dict[str, Any]]) -> bytes:
    return "".join(_dumps(op) + "\n" for op in ops).encode("utf-8")


def _replace_token(draw: Draw, text: str, tokens: st.SearchStrategy[str], pattern: str) -> str:
    import re

    found = list(re.finditer(pattern, text))
    if not found:
        return text
    match = found[draw(st.integers(0, len(found) - 1))]
    token: str = draw(tokens)
    return text[: match.start()] + token + text[match.end() :]


_JSON_SCALAR: Final = r'(?<=: )(-?\d+|null|true|false|"[^"\\]*")'
_EDN_SCALAR: Final = r'(?<=[\s\[(])(:[a-z-]+|-?\d+|nil|"[^"\\]*")(?=[\s,\])}])'


@st.composite
def jsonl_cases(draw: Draw) -> FuzzCase:
    """A JSON Lines history with hostile values, tokens or bytes."""
    ops = list(draw(st.sampled_from(json_bases())))
    for _ in range(draw(st.integers(1, 2))):
        ops = _mutate_ops(draw, ops)
    data = _json_text(ops)
    text_tokens = st.one_of(
        st.sampled_from(JSON_TOKENS),
        st.builds(_json_nested, st.sampled_from(DEPTHS), st.booleans()),
    )
    if draw(st.booleans()):
        data = _replace_token(draw, data.decode(), text_tokens, _JSON_SCALAR).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = _blind(draw, data)
    return FuzzCase("jsonl", data, draw(_flags()))


@st.composite
def edn_cases(draw: Draw) -> FuzzCase:
    """A Knossos EDN history with hostile literals, nesting or bytes."""
    text = draw(st.sampled_from(edn_bases()))
    tokens = st.one_of(
        st.sampled_from(EDN_TOKENS), st.builds(_edn_nested, st.sampled_from(DEPTHS), st.booleans())
    )
    for _ in range(draw(st.integers(1, 2))):
        text = _replace_token(draw, text, tokens, _EDN_SCALAR)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = _blind(draw, data)
    return FuzzCase("edn", data, draw(_flags()))


@st.composite
def etcd_cases(draw: Draw) -> FuzzCase:
    """A Porcupine etcd log whose values are replaced with hostile EDN."""
    text = draw(st.sampled_from(etcd_bases()))
    tokens = st.one_of(
        st.sampled_from(EDN_TOKENS), st.builds(_edn_nested, st.sampled_from(DEPTHS), st.booleans())
    )
    for _ in range(draw(st.integers(1, 2))):
        text = _replace_token(draw, text, tokens, r"(?<=\t)(nil|-?\d+|\[[^\]\n]*\]|:[a-z-]+)(?=\n)")
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = _blind(draw, data)
    return FuzzCase("porcupine-etcd", data, draw(_flags()))


@st.composite
def kv_log_cases(draw: Draw) -> FuzzCase:
    """A Porcupine kv log with hostile EDN in its maps (lone surrogates among them)."""
    text = draw(st.sampled_from(kv_log_bases()))
    tokens = st.one_of(
        st.sampled_from(EDN_TOKENS), st.builds(_edn_nested, st.sampled_from(DEPTHS), st.booleans())
    )
    for _ in range(draw(st.integers(1, 2))):
        text = _replace_token(draw, text, tokens, _EDN_SCALAR)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = _blind(draw, data)
    return FuzzCase("porcupine-kv", data, draw(_flags()))


_TEXT_COLUMNS: Final = ("process", "type", "f", "value", "key")
_WRONG_COLUMNS: Final[dict[str, Callable[[int], pa.Array[Any]]]] = {
    "strings": lambda n: pa.array([str(i) for i in range(n)]),
    "floats": lambda n: pa.array([float(i) for i in range(n)]),
    "integers": lambda n: pa.array(list(range(n)), pa.int64()),
    "lists": lambda n: pa.array([[i] for i in range(n)]),
    "booleans": lambda n: pa.array([True] * n),
    "binary": lambda n: pa.array([b"x"] * n, pa.binary()),
    "structs": lambda n: pa.array([{"a": i} for i in range(n)]),
    "nulls": lambda n: pa.array([None] * n, pa.null()),
    "uint64": lambda n: pa.array([2**63 + i for i in range(n)], pa.uint64()),
    "int8": lambda n: pa.array(list(range(n)), pa.int8()),
}


def _parquet_bytes(columns: dict[str, pa.Array[Any]], names: list[str]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([columns[name] for name in names], names=names), sink)
    return sink.getvalue()


def _column_text(value: Any) -> str | None:
    if value is None:
        return None
    return _dumps(value)


def _safe_str(value: Any) -> str:
    return str(value).encode("utf-8", "replace").decode("utf-8")


@st.composite
def parquet_cases(draw: Draw) -> FuzzCase:
    """A Parquet history: hostile values in its JSON text columns, or a schema that is wrong
    (a column twice, of the wrong type, missing), or flipped or cut bytes."""
    ops = list(draw(st.sampled_from(json_bases())))
    ops = _mutate_ops(draw, ops)
    count = len(ops)
    indices = [op.get("index", i) for i, op in enumerate(ops)]
    columns: dict[str, pa.Array[Any]] = {
        "index": pa.array(
            [i if type(i) is int and 0 <= i < 2**63 else n for n, i in enumerate(indices)], pa.int64()
        ),
        "time": pa.array(
            [op["time"] if type(op.get("time")) is int and abs(op["time"]) < 2**63 else None for op in ops],
            pa.int64(),
        ),
        "process": pa.array([_column_text(op.get("process")) or "0" for op in ops], pa.string()),
        "type": pa.array([_safe_str(op.get("type")) for op in ops], pa.string()),
        "f": pa.array([_safe_str(op.get("f")) for op in ops], pa.string()),
        "value": pa.array([_column_text(op.get("value")) for op in ops], pa.string()),
        "key": pa.array([_column_text(op.get("key")) for op in ops], pa.string()),
    }
    names = list(columns)
    if draw(st.booleans()):
        column = draw(st.sampled_from(_TEXT_COLUMNS))
        row = draw(st.integers(0, count - 1))
        texts = columns[column].to_pylist()
        texts[row] = draw(
            st.one_of(
                st.sampled_from(JSON_TOKENS), st.builds(_json_nested, st.sampled_from(DEPTHS), st.booleans())
            )
        )
        columns[column] = pa.array(texts, pa.string())
    schema = draw(st.sampled_from(["as is", "as is", "duplicate", "wrong type", "missing"]))
    if schema == "duplicate":
        names.append(draw(st.sampled_from(names)))
    elif schema == "wrong type":
        columns[draw(st.sampled_from(names))] = _WRONG_COLUMNS[draw(st.sampled_from(sorted(_WRONG_COLUMNS)))](
            count
        )
    elif schema == "missing":
        names.remove(draw(st.sampled_from(names)))
    data = _parquet_bytes(columns, names)
    bytes_mutation = draw(st.sampled_from(["none", "none", "flip", "cut"]))
    if bytes_mutation == "flip":
        mutable = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            mutable[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        data = bytes(mutable)
    elif bytes_mutation == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    return FuzzCase("parquet", data, draw(_flags()))


REPORT: Final = "@report"
"""A flag's value that `FuzzCase.argv` replaces with a report file beside the history."""


def _flags() -> st.SearchStrategy[tuple[str, ...]]:
    """Mostly none; sometimes a forced model (so every model meets every value), sometimes an
    HTML report (which makes JSON Lines take the general path: reader, call objects)."""
    return st.one_of(
        st.just(()),
        st.just(()),
        st.just(("--report", REPORT)),
        st.builds(lambda model: ("--model", model), st.sampled_from(MODEL_NAMES)),
    )


CASES: Final[dict[str, Callable[[], st.SearchStrategy[FuzzCase]]]] = {
    "jsonl": jsonl_cases,
    "edn": edn_cases,
    "porcupine-etcd": etcd_cases,
    "porcupine-kv": kv_log_cases,
    "parquet": parquet_cases,
}
"""The strategy of each format."""
