"""`readers.edn_fast` (Jepsen's op-map lines read through orjson) against the full EDN reader
(`readers.edn.iter_forms`): on generated op maps with every token kind EDN has, a line the
fast reading takes gives the reader's values, a line the reader refuses is never taken, and
`distributed.edn_ops` yields the same operations, or the same error, with the fast reading
as without it.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks import distributed
from spark_checks.history import HistoryError
from spark_checks.readers import edn, edn_fast
from spark_checks.readers.edn import edn_located, iter_forms

_HOLDS = re.compile(rb"^[\s,]*(?:[\[(][\s,]*)?\{")  # spark_read.EDN_OPERATION_LINE's rule

# --- generated EDN text ------------------------------------------------------------------------

_KEYWORDS = st.sampled_from(
    [":send", ":poll", ":a.b", ":a/b", "::a", ":a:b", ":x1", ":n-e?", ":null", ":nil", ":e5", ":", ":é"]
)
_INTEGERS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.integers(-(2**70), 2**70).map(str),  # past 64 bits: orjson would read a float
    st.sampled_from(["007", "-0", "+5", "5N", "0", "-", "1-2", "00"]),
)
_OTHER_ATOMS = st.sampled_from(
    ["nil", "true", "false", "null", "foo", "True", "1.5", "1e5", "1E5", "1e999", "1.5M", "1.", ".5",
     "1/2", "1/0", r"\a", r"\newline", r"\u0041", "##NaN", "##Inf", "-0.0", "#inst \"2020\"",
     "#uuid \"x\"", "#_ 1", "#{1 2}", "(1 2)", "()", "#{}", "^:m", "#"]
)  # fmt: skip
_STRING_PIECES = st.one_of(
    st.text(alphabet="ab :,[]{}()#;é€\x7f\t\x01😀0.5", min_size=1, max_size=4),
    st.sampled_from(
        [r"\"", r"\\", r"\n", r"\t", r"\/", r"\b", r"\u0041", r"\ud83d\ude00", r"\ud800", r"\x", r"\u12"]
    ),
)
_STRINGS = st.lists(_STRING_PIECES, max_size=4).map(lambda pieces: '"' + "".join(pieces) + '"')
_ATOMS = st.one_of(_KEYWORDS, _INTEGERS, _STRINGS, _OTHER_ATOMS)
_SEPARATORS = st.sampled_from([" ", ", ", ",", "  ", " ,", "\t"])


def _joined(forms: list[str], separators: list[str]) -> str:
    return "".join(form + (separators[i % len(separators)] if i < len(forms) - 1 else "") for i, form in
                   enumerate(forms))  # fmt: skip


_COMPOSITE_KEYS = st.one_of(
    st.sampled_from(["nil", "true", "false", "{}", "{:a 1}", "[]", '{"b" [1 :c]}']),
    st.lists(_ATOMS, max_size=3).map(lambda atoms: "[" + " ".join(atoms) + "]"),
)


def _containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    separators = st.lists(_SEPARATORS, min_size=1, max_size=3)
    vectors = st.tuples(st.lists(children, max_size=4), separators).map(lambda v: "[" + _joined(*v) + "]")
    keys = st.one_of(_KEYWORDS, _STRINGS, _INTEGERS, _COMPOSITE_KEYS)
    pairs = st.lists(st.tuples(keys, children), max_size=3).map(lambda ps: [f"{k} {v}" for k, v in ps])
    maps = st.tuples(pairs, separators).map(lambda m: "{" + _joined(*m) + "}")
    odd_maps = st.tuples(st.lists(children, min_size=1, max_size=3).filter(lambda c: len(c) % 2 == 1),
                         separators).map(lambda m: "{" + _joined(*m) + "}")  # fmt: skip
    return st.one_of(vectors, maps, odd_maps)


_FORMS = st.deferred(lambda: st.recursive(_ATOMS, _containers, max_leaves=12))


@st.composite
def _op_lines(draw: Callable[..., Any], jepsen_order: bool) -> str:
    """An op map on one line: Jepsen's fields in Jepsen's order (`edn_fast._JEPSEN_LINE`), or
    in any order with fields left out, added or of the wrong kind."""
    index = draw(st.integers(0, 10**6))
    process = draw(st.one_of(st.integers(0, 50).map(str), st.just(":nemesis")))
    kind = draw(st.sampled_from([":invoke", ":ok", ":fail", ":info"]))
    f = draw(st.sampled_from([":send", ":poll", ":assign"]))
    value = draw(_FORMS)
    if jepsen_order:
        fields_text = f":index {index}, :time {index * 1000}, :type {kind}, :process {process}, :f {f}"
        return f"{{{fields_text}, :value {value}}}"
    fields = [(":index", str(index)), (":time", str(index * 1000)), (":type", kind), (":process", process),
              (":f", f), (":value", value)]  # fmt: skip
    fields = draw(st.permutations(fields))
    fields = fields[: len(fields) - draw(st.integers(0, 1))]
    fields += draw(st.lists(st.tuples(st.one_of(_KEYWORDS, _FORMS), _FORMS), max_size=2))
    separators = draw(st.lists(_SEPARATORS, min_size=1, max_size=3))
    return "{" + _joined([f"{k} {v}" for k, v in fields], separators) + "}"


_LINES = st.one_of(_op_lines(jepsen_order=True), _op_lines(jepsen_order=False))
_RUNS = st.lists(st.one_of(_op_lines(jepsen_order=True), _op_lines(jepsen_order=True), _LINES), min_size=1,
                 max_size=5)  # fmt: skip


# --- the properties ----------------------------------------------------------------------------


def _full_reading(lines: list[str]) -> list[Any] | HistoryError:
    try:
        return [value for value, _line in iter_forms(["\n".join(lines)], "h.edn")]
    except HistoryError as error:
        return error


@settings(max_examples=150)
@given(_RUNS)
def test_a_run_the_fast_reading_takes_reads_as_the_full_reader_reads_it(lines: list[str]) -> None:
    fast = edn_fast.read_op_maps([line.encode() for line in lines])
    full = _full_reading(lines)
    if fast is not None:
        assert not isinstance(full, HistoryError), f"taken, but the reader refuses it: {full}"
        assert fast == full
        assert [list(m) for m in fast] == [list(m) for m in full]  # keys in the reader's order too


@settings(max_examples=100)
@given(_LINES)
def test_a_line_the_fast_reading_takes_reads_as_the_full_reader_reads_it(line: str) -> None:
    fast = edn_fast.read_op_maps([line.encode()])
    full = _full_reading([line])
    if fast is not None:
        assert full == fast


def _ops(lines: list[bytes], first_ordinal: int | None) -> list[Any] | tuple[str, str]:
    try:
        return list(distributed.edn_ops([(line, bool(_HOLDS.match(line))) for line in lines], "h.edn", 1,
                                        first_ordinal))  # fmt: skip
    except HistoryError as error:
        return str(error.position), error.message
    except distributed.OrdinalsNeededError:
        return "ordinals", ""


@settings(max_examples=80)
@given(_RUNS, st.sampled_from([0, None]))
def test_edn_ops_gives_the_same_operations_or_error_with_and_without_the_fast_reading(
    lines: list[str], first_ordinal: int | None
) -> None:
    raw = [line.encode() for line in lines]
    with_fast = _ops(raw, first_ordinal)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edn_fast, "read_op_maps", lambda lines: None)
        patch.setattr(edn_fast, "read_jepsen_ops", lambda lines: None)
        without = _ops(raw, first_ordinal)
    assert with_fast == without


@settings(max_examples=100)
@given(_RUNS)
def test_jepsen_ops_are_the_usual_ops_of_the_op_maps(lines: list[str]) -> None:
    raw = [line.encode() for line in lines]
    ops = edn_fast.read_jepsen_ops(raw)
    maps = edn_fast.read_op_maps(raw)
    if ops is not None:
        assert maps is not None
        usual = [distributed.usual_op(m) for m in maps]
        assert repr(ops) == repr(usual)  # 1, 1.0 and True differ
        assert all(op[2] is distributed._TYPES[op[2]] for op in ops)  # the type's own name: `is` compares


# --- chosen lines ------------------------------------------------------------------------------

JEPSEN = "{:index 3, :time 3000, :type :ok, :process 2, :f :send, :value [[:send 36 [0 36]]]}"
POLL = '{:index 4, :time 4000, :type :ok, :process 2, :f :poll, :value [["poll" {7 [[0 7]], "8" [], nil 1}]]}'


def test_jepsen_lines_are_taken_and_integer_keys_become_their_json_text() -> None:
    maps = edn_fast.read_op_maps([JEPSEN.encode(), POLL.encode()])
    assert maps == _full_reading([JEPSEN, POLL])
    assert maps is not None and maps[1]["value"] == [["poll", {"7": [[0, 7]], "8": [], "null": 1}]]
    other_order = "{:type :invoke, :f :poll, :value [[:poll]], :time 7, :process :nemesis, :index 9}"
    assert edn_fast.read_op_maps([other_order.encode()]) == _full_reading([other_order])


@pytest.mark.parametrize(
    "value",
    ["1.5", "1e5", "null", "12345678901234567890", "(1)", "#{1}", "#inst \"x\"", r"\a", '"\\ud83d\\ude00"',
     '"a\tb"', "1N", "007", "+5", "foo", "{:a}", "1 2", "", "[1] ; c", "#_ 1 2", "[" * 102 + "]" * 102],
)  # fmt: skip
def test_any_other_token_leaves_the_run_to_the_full_reader(value: str) -> None:
    lines = [JEPSEN, f"{{:index 5, :time 5000, :type :ok, :process 2, :f :send, :value {value}}}"]
    assert edn_fast.read_op_maps([line.encode() for line in lines]) is None


def test_the_fast_reading_gives_the_bench_files_values() -> None:
    """The two shapes of kafka_histories' generator (`kafkaspec-bench`): every line taken."""
    lines = [
        '{:index 0, :time 0, :type :invoke, :process 6, :f :assign, :value [2 6 10 14]}',
        '{:index 1, :time 1000, :type :invoke, :process 0, :f :send, :value [["send" 563 563]]}',
        '{:index 3, :time 3000, :type :ok, :process 2, :f :send, :value [["send" 36 [0 36]]]}',
        '{:index 23, :time 23000, :type :ok, :process 11, :f :poll, :value [["poll" {}]]}',
        '{:index 9, :time 9000, :type :ok, :process 11, :f :poll, :value [["poll" {"10" [[0 10] [1 74]]}]]}',
        '{:index 21, :time 21000, :type :invoke, :process 11, :f :poll, :value [["poll"]]}',
    ]  # fmt: skip
    maps = edn_fast.read_op_maps([line.encode() for line in lines])
    assert maps is not None
    assert maps == _full_reading(lines)
    assert edn_fast.read_jepsen_ops([line.encode() for line in lines]) == [
        distributed.usual_op(m) for m in maps
    ]


def _located(path: Path) -> list[Any] | tuple[str, str]:
    try:
        return list(edn_located(path))
    except HistoryError as error:
        return str(error.position), error.message


@settings(max_examples=60)
@given(_RUNS, _RUNS, st.sampled_from([b"", b"\n", b"\n\n", b"\xff\n", b"[\n", b" ; c\n"]))
def test_the_local_reader_gives_the_same_operations_or_error_with_and_without_the_fast_reading(
    first: list[str], then: list[str], between: bytes
) -> None:
    """Runs of a few lines, so that the tokenizer takes over after runs read fast."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "h.edn"
        path.write_bytes("\n".join(first).encode() + b"\n" + between + "\n".join(then).encode())
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(edn, "FAST_RUN_BYTES", 150)  # a few lines: the tokenizer takes over after
            with_fast = _located(path)
            patch.setattr(edn_fast, "read_op_maps", lambda lines: None)
            without = _located(path)
    assert with_fast == without
