"""Tests of `spark_checks.readers`: every shared history reads with its manifest's counts,
sniffing, the canonical JSONL/Parquet round trip, the EDN tokenizer, Porcupine's variants,
errors that name file and line (or byte offset), and bounded memory while streaming.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import spark_checks.readers.parquet as parquet_module
from spark_checks.history import HistoryError, Operation, OpType
from spark_checks.readers import (
    CANONICAL_CONVENTIONS,
    FORMATS,
    KNOSSOS_CONVENTIONS,
    PORCUPINE_ETCD_CONVENTIONS,
    PORCUPINE_KV_CONVENTIONS,
    SourceInfo,
    open_history,
    sniff_format,
    write_jsonl,
    write_parquet,
)
from spark_checks.readers.edn import iter_forms, write_edn
from spark_checks.readers.jsonl import first_long_integer, read_jsonl

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"


class Row(NamedTuple):
    path: Path
    ops_count: int


def manifest_rows(folder: str) -> list[Row]:
    manifest = HISTORIES / folder / "MANIFEST.tsv"
    lines = [line for line in manifest.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return [
        Row(manifest.parent / record["file"], int(record["ops_count"]))
        for record in csv.DictReader(lines, delimiter="\t")
    ]


KNOSSOS_ROWS = manifest_rows("knossos")
PORCUPINE_ROWS = manifest_rows("porcupine")


def read_all(path: Path, fmt: str = "auto") -> tuple[SourceInfo, list[Operation]]:
    info, operations = open_history(path, fmt)
    return info, list(operations)


def test_manifests_list_the_expected_files() -> None:
    assert len(KNOSSOS_ROWS) == 18
    assert len(PORCUPINE_ROWS) == 109
    assert all(row.path.is_file() for row in KNOSSOS_ROWS + PORCUPINE_ROWS)


# --------------------------------------------------------------------------------------------
# Every shared history: reads, sniffs right, has the manifest's number of invocations


@pytest.mark.parametrize("row", KNOSSOS_ROWS, ids=lambda row: row.path.name)
def test_knossos_history_reads_with_manifest_count(row: Row) -> None:
    assert sniff_format(row.path) == "edn"
    info, operations = read_all(row.path)
    assert info == SourceInfo("edn", dict(KNOSSOS_CONVENTIONS), "jepsen-edn")
    assert sum(op.type is OpType.INVOKE for op in operations) == row.ops_count
    assert [op.index for op in operations] == list(range(len(operations)))


@pytest.mark.parametrize("row", PORCUPINE_ROWS, ids=lambda row: row.path.name)
def test_porcupine_history_reads_with_manifest_count(row: Row) -> None:
    assert sniff_format(row.path) == "porcupine"
    info, operations = read_all(row.path)
    kv = row.path.suffix == ".txt"
    assert info.format == "porcupine"
    assert info.dialect == ("porcupine-kv" if kv else "porcupine-etcd")
    assert info.conventions == dict(PORCUPINE_KV_CONVENTIONS if kv else PORCUPINE_ETCD_CONVENTIONS)
    assert sum(op.type is OpType.INVOKE for op in operations) == row.ops_count
    if kv:
        assert all(isinstance(op.key, str) for op in operations)


def test_manifest_notes_counts_match_for_knossos() -> None:
    """The notes column also gives ok/fail/info counts: check them for every Knossos file."""
    manifest = HISTORIES / "knossos" / "MANIFEST.tsv"
    lines = [line for line in manifest.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    for record in csv.DictReader(lines, delimiter="\t"):
        notes = dict(part.split("=") for part in record["notes"].split(";")[0].split())
        _info, operations = read_all(manifest.parent / record["file"])
        counts = Counter(op.type.value for op in operations)
        assert int(notes["ops"]) == len(operations), record["file"]
        for kind in ("ok", "fail", "info"):
            assert int(notes[kind]) == counts[kind], (record["file"], kind)


def test_knossos_values_map_to_plain_python() -> None:
    _info, operations = read_all(HISTORIES / "knossos/data/multi-register/good/multi-register.edn")
    first = operations[0]
    assert first == Operation(
        index=0, process=3, type=OpType.INVOKE, f="txn", value=[["read", "x", None]], time=7686455705
    )
    nemesis = [op for op in operations if op.process == "nemesis"]
    assert len(nemesis) == 4
    assert {op.f for op in nemesis} == {"start", "stop"}
    _info, operations = read_all(HISTORIES / "knossos/data/cas-register/bad/rethink-fail-minimal.edn")
    assert operations[0] == Operation(index=0, process=0, type=OpType.INVOKE, f="write", value=0)
    cas = read_all(HISTORIES / "knossos/data/cas-register/good/memstress3-20.edn")[1][10]
    assert (cas.f, cas.value) == ("cas", [3, 0])


def test_etcd_log_variants() -> None:
    etcd = HISTORIES / "porcupine/test_data/jepsen"
    counts: Counter[tuple[str, str, str]] = Counter()
    for path in sorted(etcd.glob("*.log")):
        for op in read_all(path)[1]:
            counts[(op.type.value, op.f, type(op.value).__name__)] += 1
    # every (type, f, value shape) the files hold; ':fail :read :timed-out' became info
    assert set(counts) == {
        ("invoke", "read", "NoneType"),
        ("invoke", "write", "int"),
        ("invoke", "cas", "list"),
        ("ok", "read", "int"),
        ("ok", "read", "NoneType"),
        ("ok", "write", "int"),
        ("ok", "cas", "list"),
        ("fail", "cas", "list"),
        ("info", "read", "NoneType"),
        ("info", "write", "NoneType"),
        ("info", "cas", "NoneType"),
    }
    assert counts[("info", "read", "NoneType")] == 17  # the 17 ':fail :read :timed-out' lines


def test_etcd_log_lines(tmp_path: Path) -> None:
    path = tmp_path / "etcd.log"
    path.write_text(
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
        "INFO  jepsen.util - 0   :fail   :read   :timed-out\n"
        "\n"
        "INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]\n"
        "INFO  jepsen.util - 1\t:fail\t:cas\t[3 0]\n"
        "INFO  jepsen.util - 2  :invoke :write  -4\n"
        "INFO  jepsen.util - 2  :info   :write  :timed-out\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\t{:n1 [:n2 :n3]}\n",
        encoding="utf-8",
    )
    info, operations = read_all(path)
    assert info.dialect == "porcupine-etcd"
    assert operations == [
        Operation(0, 0, OpType.INVOKE, "read", None),
        Operation(1, 0, OpType.INFO, "read", None),
        Operation(2, 1, OpType.INVOKE, "cas", [3, 0]),
        Operation(3, 1, OpType.FAIL, "cas", [3, 0]),
        Operation(4, 2, OpType.INVOKE, "write", -4),
        Operation(5, 2, OpType.INFO, "write", None),
        Operation(6, "nemesis", OpType.INFO, "start", {"n1": ["n2", "n3"]}),
    ]


def test_kv_log_lines(tmp_path: Path) -> None:
    path = tmp_path / "c02.txt"
    path.write_text(
        '{:process 0, :type :invoke, :f :get, :key "a", :value nil}\n'
        '{:process 1, :type :invoke, :f :append, :key "a", :value "x 1 0 y"}\n'
        '{:process 0, :type :ok, :f :get, :key "a", :value ""}\n',
        encoding="utf-8",
    )
    info, operations = read_all(path)
    assert info == SourceInfo("porcupine", dict(PORCUPINE_KV_CONVENTIONS), "porcupine-kv")
    assert operations == [
        Operation(0, 0, OpType.INVOKE, "get", None, key="a"),
        Operation(1, 1, OpType.INVOKE, "append", "x 1 0 y", key="a"),
        Operation(2, 0, OpType.OK, "get", "", key="a"),
    ]


# --------------------------------------------------------------------------------------------
# Sniffing


SNIFF_CASES = [
    ("h.jsonl", '{"index": 0, "process": 1, "type": "invoke", "f": "read"}\n', "jsonl"),
    ("h.txt", '\n  {"process": 1, "type": "invoke", "f": "read"}\n', "jsonl"),
    ("h.jsonl", "{\n}\n", "jsonl"),
    ("h.edn", "[{:process 1, :type :invoke, :f :read}]\n", "edn"),
    ("h", "({:process 1, :type :invoke, :f :read})", "edn"),
    ("h.log", "; a comment\n[]\n", "edn"),
    ("h.edn", "{:process 1, :type :invoke, :f :read}\n{:process 1, :type :ok, :f :read}\n", "edn"),
    ("h.txt", "{:process 1, :type :invoke, :f :read}\n", "porcupine"),
    ("h.edn", "#jepsen.history.Op{:process 1}\n", "edn"),
    ("history", "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n", "porcupine"),
    ("empty.log", "", "porcupine"),
    ("empty.edn", "  \n", "edn"),
    ("empty.jsonl", "", "jsonl"),
    ("h.parquet", "not really", "parquet"),
]


@pytest.mark.parametrize(("name", "text", "expected"), SNIFF_CASES)
def test_sniff(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert sniff_format(path) == expected
    assert expected in FORMATS


def test_sniff_parquet_by_magic_without_extension(tmp_path: Path) -> None:
    path = tmp_path / "history.bin"
    write_parquet(path, [Operation(0, 1, OpType.INVOKE, "read")])
    assert sniff_format(path) == "parquet"
    assert read_all(path)[1] == [Operation(0, 1, OpType.INVOKE, "read")]


@pytest.mark.parametrize(
    ("name", "content"), [("h.csv", b"index,process\n0,1\n"), ("h", b""), ("x", b"\xff\xfe")]
)
def test_sniff_unknown_names_the_supported_formats(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(HistoryError) as caught:
        sniff_format(path)
    message = str(caught.value)
    assert name in message
    for fmt in FORMATS:
        assert fmt in message


def test_missing_file_and_bad_format_name(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"missing\.jsonl: cannot read the file"):
        open_history(tmp_path / "missing.jsonl")
    with pytest.raises(HistoryError, match=r"missing\.edn: cannot read the file"):
        open_history(tmp_path / "missing.edn", "edn")
    with pytest.raises(ValueError, match="format must be auto or one of jsonl, edn, porcupine, parquet"):
        open_history(tmp_path / "x.jsonl", "csv")


def test_explicit_format_overrides_sniffing(tmp_path: Path) -> None:
    path = tmp_path / "ops.data"
    path.write_text('{"process": 1, "type": "invoke", "f": "read"}\n', encoding="utf-8")
    info, operations = read_all(path, "jsonl")
    assert info == SourceInfo("jsonl", dict(CANONICAL_CONVENTIONS), "jsonl")
    assert operations == [Operation(0, 1, OpType.INVOKE, "read")]


# --------------------------------------------------------------------------------------------
# Canonical JSONL and Parquet: round trips, overwrite refusal


ROUND_TRIP = [
    Operation(0, 3, OpType.INVOKE, "send", [["send", 7, 17]], time=1200),
    Operation(1, 3, OpType.OK, "send", [["send", 7, [42, 17]]], time=1900),
    Operation(2, 4, OpType.INVOKE, "poll", [["poll"]], time=2000),
    Operation(3, 4, OpType.OK, "poll", [["poll", {"7": [[41, 16], [42, 17]]}]], time=2600),
    Operation(4, 5, OpType.INVOKE, "cas", [0, 1], key="x", time=2700),
    Operation(5, 5, OpType.FAIL, "cas", [0, 1], key="x"),
    Operation(6, "nemesis", OpType.INFO, "start", {"partition": [["n1"], ["n2", "n3"]], "ok": True}),
    Operation(7, 6, OpType.INVOKE, "write", 2.5, key={"table": "t", "row": [1, None]}),
    Operation(8, 6, OpType.INFO, "write", None, key=["a", 1]),
    Operation(9, "7", OpType.INVOKE, "put", 'ünïcode "quoted"\n', key=0),
    Operation(12, 8, OpType.OK, "read", False, key="", time=0),
]


@pytest.mark.parametrize("writer", [write_jsonl, write_parquet])
def test_round_trip(tmp_path: Path, writer: Any) -> None:
    path = tmp_path / ("h.jsonl" if writer is write_jsonl else "h.parquet")
    assert writer(path, iter(ROUND_TRIP)) == len(ROUND_TRIP)
    info, operations = read_all(path)
    assert info.format == ("jsonl" if writer is write_jsonl else "parquet")
    assert info.conventions == dict(CANONICAL_CONVENTIONS)
    assert operations == ROUND_TRIP
    for read, written in zip(operations, ROUND_TRIP, strict=True):  # process 3 vs "7" kept apart
        assert type(read.process) is type(written.process)


def test_edn_round_trip(tmp_path: Path) -> None:
    """`write_edn` writes what the EDN reader reads back as the same operations."""
    path = tmp_path / "history.edn"
    assert write_edn(path, iter(ROUND_TRIP)) == len(ROUND_TRIP)
    info, operations = read_all(path)
    assert info.format == "edn"
    assert operations == ROUND_TRIP
    for read, written in zip(operations, ROUND_TRIP, strict=True):
        assert type(read.process) is type(written.process)
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        write_edn(path, ROUND_TRIP)
    assert write_edn(path, ROUND_TRIP[:2], overwrite=True) == 2


def test_jsonl_matches_the_architecture_example(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_jsonl(path, ROUND_TRIP[:1])
    line = path.read_text(encoding="utf-8")
    assert line == (
        '{"index": 0, "time": 1200, "process": 3, "type": "invoke", "f": "send", '
        '"value": [["send", 7, 17]]}\n'
    )


def test_parquet_round_trip_across_batches_and_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parquet_module, "BATCH_ROWS", 4)
    path = tmp_path / "h.parquet"
    write_parquet(path, ROUND_TRIP)
    assert read_all(path)[1] == ROUND_TRIP
    empty = tmp_path / "empty.parquet"
    assert write_parquet(empty, []) == 0
    assert read_all(empty)[1] == []


def test_parquet_keeps_conventions(tmp_path: Path) -> None:
    path = tmp_path / "knossos.parquet"
    _info, operations = read_all(HISTORIES / "knossos/data/cas-register/bad/bad-analysis.edn")
    write_parquet(path, operations, conventions=KNOSSOS_CONVENTIONS)
    info, again = read_all(path)
    assert info.conventions == dict(KNOSSOS_CONVENTIONS)
    assert again == operations
    with pytest.raises(HistoryError, match="nil_read must be one of"):
        write_parquet(tmp_path / "bad.parquet", [], conventions={**KNOSSOS_CONVENTIONS, "nil_read": "maybe"})


def test_jsonl_missing_index_is_line_order(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"process": 1, "type": "invoke", "f": "read"}\n'
        "\n"
        '   {"process": 1, "type": "ok", "f": "read", "value": 3, "extra": "ignored"}  \n',
        encoding="utf-8",
    )
    assert read_all(path)[1] == [
        Operation(0, 1, OpType.INVOKE, "read"),
        Operation(1, 1, OpType.OK, "read", 3),
    ]


@pytest.mark.parametrize("writer", [write_jsonl, write_parquet])
def test_writers_refuse_to_overwrite(tmp_path: Path, writer: Any) -> None:
    path = tmp_path / "existing.out"
    path.write_text("keep me", encoding="utf-8")
    with pytest.raises(FileExistsError, match=r"existing\.out already exists; refusing to overwrite"):
        writer(path, ROUND_TRIP)
    assert path.read_text(encoding="utf-8") == "keep me"
    writer(path, ROUND_TRIP, overwrite=True)
    assert read_all(path, "parquet" if writer is write_parquet else "jsonl")[1] == ROUND_TRIP


# --------------------------------------------------------------------------------------------
# Malformed input: HistoryError naming file and line (or byte offset)

GOOD_LINE = '{"index": 0, "process": 1, "type": "invoke", "f": "read"}\n'

MALFORMED = [
    # (file name, content, where: "name:line" or "name: byte N", words in the message)
    ("trunc.jsonl", GOOD_LINE * 2 + '{"index": 2, "process": 1, "ty', "trunc.jsonl:3", "not valid JSON"),
    (
        "type.jsonl",
        GOOD_LINE + '{"process": 1, "type": "done", "f": "read"}\n',
        "type.jsonl:2",
        "type must be one of",
    ),
    (
        "fields.jsonl",
        '{"process": 1, "f": "read"}\n',
        "fields.jsonl:1",
        "(and value, time, key); missing type",
    ),
    ("array.jsonl", GOOD_LINE + "[1, 2]\n", "array.jsonl:2", "got a JSON list"),
    ("extra.jsonl", GOOD_LINE + GOOD_LINE.strip() + " {}\n", "extra.jsonl:2", "extra text"),
    (
        "index.jsonl",
        '{"index": -1, "process": 1, "type": "ok", "f": "r"}\n',
        "index.jsonl:1",
        "index must be",
    ),
    ("proc.jsonl", '{"process": [1], "type": "ok", "f": "r"}\n', "proc.jsonl:1", "process must be"),
    ("f.jsonl", '{"process": 1, "type": "ok", "f": 3}\n', "f.jsonl:1", "f must be a string"),
    ("time.jsonl", '{"process": 1, "type": "ok", "f": "r", "time": 1.5}\n', "time.jsonl:1", "time must be"),
    (
        "vec.edn",
        "[{:process 1, :type :invoke, :f :read}\n {:process 1, :type :ok, :f :read}\n",
        "vec.edn:1",
        "unterminated vector",
    ),
    (
        "map.edn",
        "[{:process 1, :type :invoke, :f :read}\n {:process 1, :type :ok\n",
        "map.edn:2",
        "unterminated map",
    ),
    (
        "str.edn",
        '[{:process 1, :type :invoke, :f :read}\n {:process "1\n\n',
        "str.edn:2",
        "unterminated string",
    ),
    ("close.edn", "[{:process 1, :type :invoke, :f :read]\n", "close.edn:1", "expected '}' to close the map"),
    ("odd.edn", "[\n{:process 1, :type :invoke, :f}]\n", "odd.edn:2", "even number of forms"),
    ("notmap.edn", "[{:process 1, :type :invoke, :f :read}\n 42]\n", "notmap.edn:2", "expected an op map"),
    ("type.edn", "{:process 1, :type :done, :f :read}\n", "type.edn:1", "type must be one of"),
    ("meta.edn", "\n\n^{:a 1} {:process 1}\n", "meta.edn:3", "metadata is not supported"),
    (
        "garbage.log",
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nhello world\n",
        "garbage.log:2",
        "unknown Porcupine line shape",
    ),
    ("value.log", "INFO  jepsen.util - 0\t:invoke\t:write\t[1\n", "value.log:1", "not valid EDN"),
    ("type.log", "INFO  jepsen.util - 0\t:done\t:read\tnil\n", "type.log:1", "type must be one of"),
    (
        "kv.txt",
        '{:process 0, :type :invoke, :f :get, :key "a", :value nil}\n{:process 0, :type\n',
        "kv.txt:2",
        "unknown Porcupine kv line shape",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "where", "words"), MALFORMED, ids=[case[0] for case in MALFORMED]
)
def test_malformed_input_names_file_and_line(
    tmp_path: Path, name: str, content: str, where: str, words: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        read_all(path)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / where) + ":"), message
    assert words in message


def test_not_parquet_with_parquet_extension(tmp_path: Path) -> None:
    path = tmp_path / "fake.parquet"
    path.write_text(GOOD_LINE, encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        open_history(path)
    assert str(caught.value).startswith(f"{path}: byte 0: not a Parquet file")


def test_corrupt_and_foreign_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = tmp_path / "good.parquet"
    write_parquet(good, ROUND_TRIP)
    data = good.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(HistoryError, match=r"cut\.parquet: byte 0: not a readable Parquet file"):
        open_history(cut)
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"index": [0], "process": [1]}), foreign)
    with pytest.raises(HistoryError, match=r"foreign\.parquet: byte 0: .*missing type, f"):
        open_history(foreign)
    bad_type = tmp_path / "bad_type.parquet"
    pq.write_table(
        pa.table({"index": [0, 1], "process": [1, 2], "type": ["invoke", "done"], "f": ["r", "r"]}), bad_type
    )
    info, operations = open_history(bad_type)
    assert info.format == "parquet"
    with pytest.raises(HistoryError, match=r"bad_type\.parquet: row 1: type must be one of"):
        list(operations)


def test_non_utf8_bytes(tmp_path: Path) -> None:
    jsonl = tmp_path / "bytes.jsonl"
    jsonl.write_bytes(GOOD_LINE.encode() + b'{"process": 1, "type": "ok", "f": "\xff"}\n')
    with pytest.raises(HistoryError, match=r"bytes\.jsonl:2: not UTF-8"):
        read_all(jsonl)
    edn = tmp_path / "bytes.edn"
    edn.write_bytes(b'[{:process 1, :type :ok, :f "\xff"}]')
    with pytest.raises(HistoryError, match=r"bytes\.edn: byte 29: not UTF-8"):
        read_all(edn)


# --------------------------------------------------------------------------------------------
# The EDN tokenizer


def forms(text: str) -> list[Any]:
    return [value for value, _line in iter_forms([text], "t.edn")]


def test_edn_values() -> None:
    text = (
        '{:a "x\\ny\\u0041\\"" :b #{1 2} :c \\newline :d #_ 5 6 :e #inst "2020-01-01" :f 1/2 :g 3N'
        " :h 1.5M :i -7 :j [nil true false] 7 8 nil 9 [1 :x] 10 :ns/kw sym :k 1e3 :l \\u00e9 :m ()}"
    )
    assert forms(text) == [
        {
            "a": 'x\nyA"',
            "b": [1, 2],
            "c": "\n",
            "d": 6,
            "e": "2020-01-01",
            "f": 0.5,
            "g": 3,
            "h": 1.5,
            "i": -7,
            "j": [None, True, False],
            "7": 8,
            "null": 9,
            '[1,"x"]': 10,
            "ns/kw": "sym",
            "k": 1000.0,
            "l": "é",
            "m": [],
        }
    ]


def test_edn_top_level_shapes_and_lines() -> None:
    stream = "; header\n{:a 1}\n\n#_ {:skipped 1}\n{:b 2} , {:c\n 3}"
    assert list(iter_forms([stream], "t")) == [({"a": 1}, 2), ({"b": 2}, 5), ({"c": 3}, 5)]
    vector = '[{:a 1}\n "multi\nline"\n {:b 2}] {:after 1}'
    assert list(iter_forms([vector], "t")) == [
        ({"a": 1}, 1),
        ("multi\nline", 2),
        ({"b": 2}, 4),
        ({"after": 1}, 4),
    ]
    nested = "[[1 2] [3]]"  # only the outermost vector is streamed
    assert forms(nested) == [[1, 2], [3]]
    assert forms("#_ [1 2] [3]") == [3]


def test_edn_chunk_boundaries_do_not_matter() -> None:
    """Split the texts at every point (small ones) or at random points: same values and lines."""
    texts = [
        '[{:a "x\\ny\\"" :b #{1 2} :c \\newline :d #_ 5 6} ; c\n {:e #inst "2020" :f 1/2 :g 3N}]',
        "{:process 22  :type :invoke, :f :read, :value 3}\n{:process 21, :type :ok}\n",
        "(\\a \\space \\u0041 :kw sym -12 1.5M)",
        (HISTORIES / "knossos/data/multi-register/good/multi-register.edn").read_text(encoding="utf-8"),
        (HISTORIES / "knossos/data/cas-register/bad/rethink-fail-minimal.edn").read_text(encoding="utf-8"),
    ]
    rng = random.Random(7)
    for text in texts:
        whole = list(iter_forms([text], "t"))
        if len(text) < 200:
            for cut in range(1, len(text)):
                assert list(iter_forms([text[:cut], text[cut:]], "t", gather=1)) == whole, cut
        for _ in range(20):
            cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 100))))
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
            assert list(iter_forms(pieces, "t", gather=1)) == whole


def test_edn_one_long_line_is_split_safely() -> None:
    """A history on one line, longer than a scan: split at spaces, never inside a comment."""
    ops = " ".join(f'{{:process {i % 5}, :type :invoke, :f :write, :value "v {i}"}}' for i in range(300))
    text = f"[{ops}] ; trailing comment with [ and {{ inside"
    pieces = [text[i : i + 97] for i in range(0, len(text), 97)]
    values = [value for value, _line in iter_forms(pieces, "t", gather=500)]
    assert len(values) == 300
    assert values[299] == {"process": 4, "type": "invoke", "f": "write", "value": "v 299"}


# --------------------------------------------------------------------------------------------
# Streaming: memory stays bounded


def test_jsonl_streaming_memory_is_bounded(tmp_path: Path) -> None:
    """Read 200,000 lines without keeping them: the live objects do not grow with the file.

    `sys.getallocatedblocks()` (the interpreter's live small-object count) is sampled while
    the iterator is consumed. tracemalloc would measure bytes, but it slows this loop about
    7x here (8-16 s for 200,000 lines), past the few seconds this test may take. Keeping the
    operations would add more than 200,000 blocks (one Operation each, and its value).
    """
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for start in range(0, 200_000, 10_000):
            handle.write(
                "".join(
                    f'{{"index": {i}, "time": {i * 1000}, "process": {i % 7}, "type": "invoke", '
                    f'"f": "send", "value": [["send", {i % 13}, {i}]]}}\n'
                    for i in range(start, start + 10_000)
                )
            )
    assert path.stat().st_size > 20_000_000
    _info, operations = open_history(path)
    baseline = sys.getallocatedblocks()
    peak = baseline
    count = 0
    last = None
    for count, operation in enumerate(operations, 1):
        last = operation
        if count % 2_000 == 0:
            peak = max(peak, sys.getallocatedblocks())
    assert count == 200_000
    assert last is not None
    assert last.value == [["send", 199_999 % 13, 199_999]]
    assert peak - baseline < 20_000, (baseline, peak)


def test_edn_streaming_does_not_keep_the_top_level_vector() -> None:
    """Elements of the top-level vector are handed on, not kept in it (keeping 60,000 maps with
    their values would add well over 60,000 live blocks; a scan's tokens stay under ~20,000)."""
    text = (
        "[" + "\n".join(f"{{:process {i % 9}, :type :ok, :f :read, :value {i}}}" for i in range(60_000)) + "]"
    )
    values = iter_forms((text[i : i + 65_536] for i in range(0, len(text), 65_536)), "t")
    baseline = sys.getallocatedblocks()
    peak = baseline
    for count, (value, line) in enumerate(values, 1):
        assert value["value"] == count - 1
        assert line == count
        if count % 1_000 == 0:
            peak = max(peak, sys.getallocatedblocks())
    assert count == 60_000
    assert peak - baseline < 30_000, (baseline, peak)


def test_written_jsonl_is_plain_json_per_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    write_jsonl(path, ROUND_TRIP)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(ROUND_TRIP)
    assert all(isinstance(json.loads(line), dict) for line in lines)


@pytest.mark.parametrize(
    ("text", "position"),
    [
        (b'{"value": 9999999999999999999}', -1),  # 19 digits: orjson reads it exactly
        (b'{"value": 18446744073709551616}', 10),  # 2**64: it would be a float
        (b'{"value": -9223372036854775808}', 10),  # -2**63 fits, but 19 digits after a minus go the exact way
        (b'{"value": -9223372036854775809}', 10),  # below -2**63: it would be a float
        (b'{"value": -922337203685477580}', -1),  # 18 digits
        (b'{"time": 1700000000000000000}', -1),  # a nanosecond timestamp keeps the fast path
    ],
)
def test_lines_with_integers_orjson_cannot_read_exactly_are_found(text, position):
    assert first_long_integer(text) == position


def test_a_negative_integer_below_the_64_bit_range_is_read_exactly(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text(
        '{"index": 0, "process": 0, "type": "invoke", "f": "write", "value": -9223372036854775809}\n'
        '{"index": 1, "process": 0, "type": "ok", "f": "write", "value": -9223372036854775809}\n'
    )
    values = [operation.value for operation in read_jsonl(path)]
    assert values == [-(2**63) - 1, -(2**63) - 1]
    assert all(type(value) is int for value in values)
