"""The Porcupine log readers' fast paths read what the general ones read. The etcd reader's
(`porcupine._etcd_fields`: the usual line's pattern) reads every line as the general line
pattern does (`_etcd_fields_matched`), or leaves it to that pattern: on every line of
Porcupine's logs, on odd lines, and on generated ones; a chunk of lines scanned at once reads
as its lines one by one; a value seen on many lines is shared only when immutable.
The kv reader's (a line of Porcupine's own shape) makes the operation the EDN reader makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks.history import HistoryError, Operation, OpType
from spark_checks.readers import porcupine
from spark_checks.readers._common import make_operation
from spark_checks.readers.edn import iter_forms
from spark_checks.readers.porcupine import (
    _etcd_fields,
    _etcd_fields_matched,
    _etcd_lines,
    read_etcd_log,
    read_kv_log,
)

PORCUPINE = Path(__file__).resolve().parents[3] / "shared" / "histories" / "porcupine" / "test_data"
ETCD_LOGS = PORCUPINE / "jepsen"
KV_LOGS = PORCUPINE / "kv"

ODD_LINES = [
    "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n",
    "INFO  jepsen.util - 0\t:invoke\t:read\tnil\r\n",
    "INFO  jepsen.util - 0\t:invoke\t:read\n",
    "INFO  jepsen.util - 0\t:invoke\t:read\t\n",  # whitespace after the function, no value
    "INFO  jepsen.util - 0\t:invoke\t:read \r\n",
    "INFO  jepsen.util - 1   :invoke :cas    [3   0]  \n",
    "INFO  jepsen.util - -7 :ok :write -4\n",
    "INFO  jepsen.util - --7 :ok :write -4\n",
    "INFO  jepsen.util - - :ok :write -4\n",
    "INFO  jepsen.util - :nemesis\t:info\t:start\t{:n1 [:n2 :n3]}\n",
    "INFO  jepsen.util - :a:b\t:info\t:start\tnil\n",
    "INFO  jepsen.util - :\t:info\t:start\tnil\n",
    "INFO  jepsen.util - 12345678901234567890123 :ok :read 1\n",
    "INFO  jepsen.util - 1\t:OK\t:read\t1\n",
    "INFO  jepsen.util - 1\t:ok\t:\t1\n",
    "INFO  jepsen.util - 1\t:ok\tread\t1\n",
    "INFO  jepsen.util - 1\t:okay\t:read\t1\n",
    " INFO  jepsen.util - 1\t:ok\t:read\t1\n",
    "INFOX jepsen.util - 1\t:ok\t:read\t1\n",
    "INFO  jepsen.utilx - 1\t:ok\t:read\t1\n",
    "INFO  jepsen.util -- 1\t:ok\t:read\t1\n",
    "INFO  jepsen.util - \u0661\t:ok\t:read\t1\n",  # an Arabic-Indic digit
    "INFO  jepsen.util - 1\u00a0:ok\t:read\t1\n",  # a no-break space
    "INFO  jepsen.util - 1\x1c:ok\t:read\t1\n",
    "INFO  jepsen.util - 1\t:ok\t:read\t1\x0b\n",
    "INFO  jepsen.util - 1\t:ok\t:read\ta\rb\n",
    "INFO jepsen.util - 1 :ok :read",
    "INFO jepsen.util - 1 :ok",
    "",
    "   \n",
]


def _matched(line: str) -> tuple[object, ...] | None:
    try:
        return _etcd_fields_matched(line, "log", 1)
    except HistoryError:
        return None


def _agrees(line: str) -> None:
    fast = _etcd_fields(line)
    if fast is not None:
        assert fast == _matched(line), line


@pytest.mark.parametrize("line", ODD_LINES)
def test_odd_lines_read_as_the_pattern_reads_them(line: str) -> None:
    _agrees(line)


def test_the_usual_lines_take_the_fast_path() -> None:
    assert _etcd_fields("INFO  jepsen.util - 3\t:ok\t:cas\t[3 0]\n") == (3, OpType.OK, "cas", "[3 0]")
    assert _etcd_fields("INFO  jepsen.util - :nemesis :info :start\n") == (
        "nemesis",
        OpType.INFO,
        "start",
        None,
    )


@pytest.mark.skipif(not ETCD_LOGS.is_dir(), reason="needs the Porcupine test histories")
def test_every_line_of_porcupines_logs_reads_as_the_pattern_reads_it() -> None:
    lines = 0
    for path in sorted(ETCD_LOGS.glob("*.log")):
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            assert _etcd_fields(line) is not None or not line.strip(), line  # the fast path's shape
            _agrees(line)
            lines += 1
    assert lines > 17_000  # 102 logs


def _mostly(usual: list[str], odd: list[str]) -> st.SearchStrategy[str]:
    """One of `usual` four times in five, else one of `odd`: most generated lines have the
    usual shape (and take the fast path), the others test where it stops."""
    return st.tuples(st.integers(0, 4), st.sampled_from(usual), st.sampled_from(odd)).map(
        lambda drawn: drawn[2] if drawn[0] == 0 else drawn[1]
    )


SEPARATORS = _mostly([" ", "  ", "\t", " \t "], ["\x0b", "\u00a0", "", "\r", "\x1c"])
FIELDS = [
    _mostly(["INFO"], [" INFO", "INFOX", "info"]),
    _mostly(["jepsen.util"], ["jepsen.utilx", "jepsen"]),
    _mostly(["-"], ["--", ":"]),
    _mostly(["0", "-3", "17", ":nemesis"], ["--1", "-", "\u0661", ":a:b", ":", "x", "1" * 25]),
    _mostly([":invoke", ":ok", ":fail", ":info"], [":OK", ":okay", "ok", ":"]),
    _mostly([":read", ":cas", ":write"], [":", "read", ":a:b"]),
    _mostly(["", "nil", "3", "[3 0]", ":timed-out"], ["[3  0]", "{:n1 [:n2]}", "[1", "a b", "\u0661"]),
]


@settings(max_examples=400, deadline=None)
@given(
    st.tuples(*FIELDS),
    st.lists(SEPARATORS, min_size=len(FIELDS), max_size=len(FIELDS)),
    st.sampled_from(["", "\n", "\r\n", " \n", "\t\n"]),
)
def test_generated_lines_read_as_the_pattern_reads_them(
    fields: tuple[str, ...], separators: list[str], end: str
) -> None:
    line = "".join(field + separator for field, separator in zip(fields, separators, strict=True))
    _agrees(line + end)


def test_a_value_shared_by_many_lines_is_shared_only_when_immutable(tmp_path: Path) -> None:
    log = tmp_path / "etcd.log"
    log.write_text(
        "INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]\n"
        "INFO  jepsen.util - 1\t:ok\t:cas\t[3 0]\n"
        "INFO  jepsen.util - 2\t:invoke\t:write\t3\n"
        "INFO  jepsen.util - 2\t:ok\t:write\t3\n",
        encoding="utf-8",
    )
    invoke, ok, _, _ = read_etcd_log(log)
    assert invoke.value == ok.value == [3, 0]
    assert invoke.value is not ok.value  # a list: one per line, as before


def _line_by_line(text: str) -> list[tuple[object, ...]]:
    """What each non-blank line of a log reads as alone (the fast path, else the pattern)."""
    read: list[tuple[object, ...]] = []
    for number, line in enumerate(text.split("\n"), 1):
        fields = _etcd_fields(line)
        if fields is None and line.strip():
            fields = _etcd_fields_matched(line, "log", number)
        if fields is not None:
            read.append((number, *fields))
    return read


@pytest.mark.skipif(not ETCD_LOGS.is_dir(), reason="needs the Porcupine test histories")
def test_a_log_scanned_by_chunk_reads_as_its_lines_one_by_one() -> None:
    for path in sorted(ETCD_LOGS.glob("*.log")):
        assert list(_etcd_lines(path, "log")) == _line_by_line(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize("chunk_bytes", [1, 100, 1 << 20])
def test_chunks_with_odd_lines_read_as_their_lines_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_bytes: int
) -> None:
    """Usual lines, blank ones, CRLF endings, an odd line and no final line break, in chunks of
    one line (the usual shape scanned alone), of a few lines (some with an odd line: matched
    line by line) and of the whole file."""
    text = (
        "INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]\n"
        "\n"
        "INFO  jepsen.util - 1\t:ok\t:cas\t[3 0]\r\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\t{:n1 [:n2 :n3]}\n"
        "  \t\n"
        "INFO  jepsen.util - 2   :invoke :write    3  \n"
        "INFO  jepsen.util - 1\u00a0:ok\t:read\t1\n"
        "INFO  jepsen.util - 2\t:info\t:write\t:timed-out"
    )
    log = tmp_path / "etcd.log"
    log.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(porcupine, "CHUNK_BYTES", chunk_bytes)
    assert list(_etcd_lines(log, "log")) == _line_by_line(text)


def test_a_byte_that_is_not_utf8_is_named_by_its_line(tmp_path: Path) -> None:
    log = tmp_path / "etcd.log"
    log.write_bytes(b"INFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\t\xff\n")
    with pytest.raises(HistoryError, match=r"etcd.log:2: not UTF-8 text \(byte 32 of the line\)"):
        list(read_etcd_log(log))


KV_LINES = [
    '{:process 0, :type :invoke, :f :append, :key "0", :value "x 0 0 y"}\n',
    '{:process 12, :type :ok, :f :get, :key "3", :value "x 0 0 yx 1 0 y"}\n',
    '{:process 3, :type :invoke, :f :get, :key "3", :value nil}\n',
    '{:process -1, :type :ok, :f :put, :key "", :value ""}\n',
]


def _kv_through_edn(line: str, index: int) -> Operation:
    """What the general EDN path makes of a kv line."""
    [(fields, _)] = list(iter_forms([line], "log", first_line=1))
    assert isinstance(fields, dict)
    return make_operation(fields, index, "log", 1, "a kv line")


@pytest.mark.parametrize("line", KV_LINES)
def test_a_plain_kv_line_reads_as_the_edn_reader_reads_it(tmp_path: Path, line: str) -> None:
    log = tmp_path / "c01-ok.txt"
    log.write_text(line, encoding="utf-8")
    assert list(read_kv_log(log)) == [_kv_through_edn(line, 0)]


@pytest.mark.skipif(not KV_LOGS.is_dir(), reason="needs the Porcupine test histories")
def test_every_line_of_porcupines_kv_logs_reads_as_the_edn_reader_reads_it() -> None:
    for path in sorted(KV_LOGS.glob("*.txt")):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        expected = [_kv_through_edn(line, index) for index, line in enumerate(lines)]
        assert list(read_kv_log(path)) == expected, path
