"""Each class of hostile input that once crashed `kafkaspec verify`, in every format that can
express it: now a verdict or one stderr line naming the file and the line (or row), exit 2.

The classes (issue "Reliability under hostile input"): values nested hundreds to thousands of
levels deep (a value, a key, a process); integers beyond 64 bits in keys; Parquet files with a
column twice or of the wrong type; values of the wrong type for the model; lone surrogates;
EDN ratios with a zero denominator and the literals that mean nothing in a history (NaN,
infinities). A few run on the Spark engine too, which must answer the same.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_checks.checking import Budget, Plan
from spark_checks.engine import SparkTaskError, verify_spark
from spark_checks.readers import open_history
from spark_checks.readers._common import MAX_NESTING
from tests.fuzz.harness import Run, run_verify


def verify(path: Path, *flags: str, engine: str = "local") -> Run:
    # A generous budget: a part Spark cannot reach in time is unknown (exit 3), unchecked.
    seconds = "20" if engine == "local" else "600"
    return run_verify(["verify", str(path), "--engine", engine, "--max-seconds", seconds, *flags], 900)


def assert_input_error(run: Run, where: str, *words: str) -> None:
    """Exit 2, one stderr line that starts with `where` (file and line or row), with `words`."""
    assert run.code == 2, (run.code, run.stderr, run.escaped)
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"kafkaspec: error: {where}"), lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def jsonl(path: Path, ops: list[dict[str, Any]] | list[str]) -> Path:
    path.write_text("".join(op if isinstance(op, str) else json.dumps(op) + "\n" for op in ops), "utf-8")
    return path


def parquet(path: Path, columns: dict[str, pa.Array[Any]]) -> Path:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays(list(columns.values()), names=list(columns)), sink)
    path.write_bytes(sink.getvalue())
    return path


def parquet_of(path: Path, ops: list[dict[str, Any]], raw: dict[str, list[str | None]] | None = None) -> Path:
    """The canonical Parquet columns of `ops` (JSON text), with some columns' texts given raw."""
    texts = {
        name: [None if op.get(name) is None else json.dumps(op[name]) for op in ops]
        for name in ("process", "value", "key")
    }
    texts.update(raw or {})
    return parquet(
        path,
        {
            "index": pa.array(range(len(ops)), pa.int64()),
            "process": pa.array(texts["process"], pa.string()),
            "type": pa.array([op["type"] for op in ops], pa.string()),
            "f": pa.array([op["f"] for op in ops], pa.string()),
            "value": pa.array(texts["value"], pa.string()),
            "key": pa.array(texts["key"], pa.string()),
        },
    )


KV_OPS = [
    {"process": 0, "type": "invoke", "f": "append", "key": "k", "value": "a"},
    {"process": 0, "type": "ok", "f": "append", "key": "k", "value": "a"},
    {"process": 1, "type": "invoke", "f": "get", "key": "k", "value": None},
    {"process": 1, "type": "ok", "f": "get", "key": "k", "value": "a"},
]


def deep(depth: int, use_maps: bool = False, edn: bool = False) -> str:
    if edn:
        opener, closer = ("{:a ", "}") if use_maps else ("[", "]")
    else:
        opener, closer = ('{"a": ', "}") if use_maps else ("[", "]")
    return opener * depth + "1" + closer * depth


NESTED = "nested more than 100 levels deep"

# ---------------------------------------------------------------------------------------
# Deep nesting
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 500, 5000])
@pytest.mark.parametrize("field", ["value", "key", "process"])
@pytest.mark.parametrize("use_maps", [False, True])
def test_deep_nesting_in_json_lines(tmp_path, depth, field, use_maps):
    line = json.dumps({"process": 1, "type": "invoke", "f": "append", "key": "k", "value": "x"})
    bad = line.replace(f'"{field}": ', f'"{field}": {deep(depth, use_maps)}, "was": ', 1)
    path = jsonl(tmp_path / "deep.jsonl", [json.dumps(KV_OPS[0]) + "\n", bad + "\n"])
    assert_input_error(verify(path), f"{path}:2:", NESTED)


def test_nesting_up_to_the_bound_is_read(tmp_path):
    value = json.loads(deep(MAX_NESTING))
    ops = [{"process": 0, "type": "invoke", "f": "write", "value": value}, {**KV_OPS[1], "f": "write"}]
    ops[1]["value"] = value
    path = jsonl(tmp_path / "bound.jsonl", ops)
    assert verify(path, "--model", "register").code == 0
    edn = tmp_path / "bound.edn"
    edn.write_text(
        f"[{{:process 0, :type :invoke, :f :write, :value {deep(MAX_NESTING, edn=True)}}}\n"
        f" {{:process 0, :type :ok, :f :write, :value 1}}]\n",
        "utf-8",
    )
    assert verify(edn).code == 0


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 1000, 20000])
@pytest.mark.parametrize("field", [":value", ":key", ":process"])
@pytest.mark.parametrize("use_maps", [False, True])
def test_deep_nesting_in_edn(tmp_path, depth, field, use_maps):
    path = tmp_path / "deep.edn"
    path.write_text(
        "[{:process 0, :type :invoke, :f :read, :value nil}\n"
        f" {{:type :ok, :f :read, :value nil, {field} {deep(depth, use_maps, edn=True)}}}]\n",
        "utf-8",
    )
    assert_input_error(verify(path), f"{path}:2:", NESTED)


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 3000])
def test_deep_nesting_in_porcupine_logs(tmp_path, depth):
    etcd = tmp_path / "deep.log"
    etcd.write_text(
        "INFO  jepsen.util - 0\t:invoke\t:read\tnil\n"
        f"INFO  jepsen.util - 0\t:ok\t:read\t[{deep(depth, edn=True)}]\n",
        "utf-8",
    )
    assert_input_error(verify(etcd), f"{etcd}:2:", NESTED)
    kv = tmp_path / "deep.txt"
    kv.write_text(
        '{:process 0, :type :invoke, :f :get, :key "k", :value nil}\n'
        f"{{:process 0, :type :ok, :f :get, :key {deep(depth, edn=True)}, :value nil}}\n",
        "utf-8",
    )
    assert_input_error(verify(kv), f"{kv}:2:", NESTED)


@pytest.mark.parametrize("column", ["value", "key", "process"])
def test_deep_nesting_in_parquet(tmp_path, column):
    texts = [json.dumps(op.get(column)) if op.get(column) is not None else None for op in KV_OPS]
    texts[3] = deep(1000, use_maps=column == "key")
    path = parquet_of(tmp_path / "deep.parquet", KV_OPS, {column: texts})
    assert_input_error(verify(path), f"{path}: row 3: {column}", NESTED)


# ---------------------------------------------------------------------------------------
# Integers beyond 64 bits
# ---------------------------------------------------------------------------------------

LONG = 2**70


def test_long_integer_keys_give_the_same_verdict_in_every_format(tmp_path):
    ops = [{**op, "key": LONG} for op in KV_OPS]
    ops[3]["value"] = "b"  # a get that reads what nobody appended: not linearizable
    files = [jsonl(tmp_path / "long.jsonl", ops), parquet_of(tmp_path / "long.parquet", ops)]
    edn = tmp_path / "long.edn"
    edn.write_text(
        "["
        + "\n ".join(
            f"{{:process {op['process']}, :type :{op['type']}, :f :{op['f']}, :key {LONG}N, "
            f":value {'nil' if op['value'] is None else json.dumps(op['value'])}}}"
            for op in ops
        )
        + "]\n",
        "utf-8",
    )
    files.append(edn)
    for path in files:
        run = verify(path, "--model", "kv", "--json")
        assert run.code == 1, (path, run.stderr)
        assert json.loads(run.stdout)["histories"][0]["failing"][0]["part"] == LONG


# ---------------------------------------------------------------------------------------
# Parquet schemas
# ---------------------------------------------------------------------------------------


def kv_columns() -> dict[str, pa.Array[Any]]:
    return {
        "index": pa.array(range(4), pa.int64()),
        "process": pa.array([json.dumps(op["process"]) for op in KV_OPS]),
        "type": pa.array([op["type"] for op in KV_OPS]),
        "f": pa.array([op["f"] for op in KV_OPS]),
        "value": pa.array([None if op["value"] is None else json.dumps(op["value"]) for op in KV_OPS]),
        "key": pa.array([json.dumps(op["key"]) for op in KV_OPS]),
    }


@pytest.mark.parametrize("column", ["index", "process", "type", "f", "value", "key"])
def test_parquet_with_a_column_twice(tmp_path, column):
    columns = kv_columns()
    names = [*columns, column]
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([columns[name] for name in names], names=names), sink)
    path = tmp_path / "twice.parquet"
    path.write_bytes(sink.getvalue())
    assert_input_error(verify(path), f"{path}: byte 0:", f"column {column} appears 2 times")


@pytest.mark.parametrize(
    ("column", "array"),
    [
        ("index", pa.array(["0", "1", "2", "3"])),  # a string offset
        ("index", pa.array([0.0, 1.0, 2.0, 3.0])),
        ("time", pa.array(["1", "2", "3", "4"])),
        ("process", pa.array([0.5] * 4)),
        ("type", pa.array([1, 2, 3, 4])),
        ("f", pa.array([[1]] * 4)),
        ("value", pa.array([1, 2, 3, 4])),
        ("key", pa.array([{"a": 1}] * 4)),
    ],
)
def test_parquet_with_a_column_of_the_wrong_type(tmp_path, column, array):
    columns = kv_columns()
    columns[column] = array
    path = parquet(tmp_path / "typed.parquet", columns)
    assert_input_error(verify(path), f"{path}: byte 0:", f"column {column} must be")


def test_corrupt_parquet_is_one_line_and_never_aborts(tmp_path):
    good = parquet(tmp_path / "good.parquet", kv_columns()).read_bytes()
    for at in range(4, len(good) - 8, max(1, len(good) // 60)):
        flipped = bytearray(good)
        flipped[at] ^= 0xFF
        path = tmp_path / f"flipped-{at}.parquet"
        path.write_bytes(bytes(flipped))
        run = verify(path)
        assert run.code in (0, 1, 2), (at, run.stderr)
        assert len(run.stderr.splitlines()) <= 1, run.stderr


# ---------------------------------------------------------------------------------------
# Values of the wrong type for the model
# ---------------------------------------------------------------------------------------


def test_an_integer_where_kv_appends_strings(tmp_path):
    ops = [dict(op) for op in KV_OPS]
    ops[0]["value"] = ops[1]["value"] = 5
    message = "append invoked at index 0: kv model: append takes a string; got 5"
    path = jsonl(tmp_path / "kv.jsonl", ops)
    assert_input_error(verify(path), f"{path}:2:", message)
    path = parquet_of(tmp_path / "kv.parquet", ops)
    assert_input_error(verify(path), f"{path}: row 1:", message)
    log = tmp_path / "kv.txt"
    log.write_text(
        '{:process 0, :type :invoke, :f :append, :key "k", :value 5}\n'
        '{:process 0, :type :ok, :f :append, :key "k", :value 5}\n',
        "utf-8",
    )
    assert_input_error(verify(log), f"{log}:2:", message)
    assert_input_error(verify(log, "--report", str(tmp_path / "kv.html")), f"{log}:2:", message)


@pytest.mark.parametrize("model", ["multi-register", "kafka"])
def test_an_integer_where_a_transactions_micro_operations_belong(tmp_path, model):
    ops = [
        {"process": 0, "type": "invoke", "f": "txn", "value": 7},
        {"process": 0, "type": "ok", "f": "txn", "value": 7},
    ]
    path = jsonl(tmp_path / "txn.jsonl", ops)
    run = verify(path, "--model", model)
    assert_input_error(run, f"{path}:2:", "txn")
    edn = tmp_path / "txn.edn"
    edn.write_text(
        "[{:process 0, :type :invoke, :f :txn, :value 7}\n {:process 0, :type :ok, :f :txn, :value 7}]"
    )
    assert_input_error(verify(edn, "--model", model), f"{edn}:2:", "txn")


@pytest.mark.parametrize(
    "poll_result",
    [5, [5], [["poll", 5]], [["poll", {"x": 5}]], [["poll", {"x": [[0]]}]], [["poll", {"x": [[0, [1]]]}]]],
)
def test_an_integer_where_a_kafka_poll_result_belongs(tmp_path, poll_result):
    ops = [
        {"process": 0, "type": "invoke", "f": "send", "value": [["send", "x", 1]]},
        {"process": 0, "type": "ok", "f": "send", "value": [["send", "x", [0, 1]]]},
        {"process": 1, "type": "invoke", "f": "poll", "value": [["poll"]]},
        {"process": 1, "type": "ok", "f": "poll", "value": poll_result},
    ]
    path = jsonl(tmp_path / "poll.jsonl", ops)
    assert_input_error(verify(path, "--model", "kafka"), f"{path}:4:", "poll by process 1")
    # The general path (other formats, --report) computes the cross-key facts over whole calls.
    report = tmp_path / "poll.html"
    assert_input_error(verify(path, "--report", str(report)), f"{path}:4:", "poll by process 1")
    assert_input_error(verify(parquet_of(tmp_path / "poll.parquet", ops)), f"{tmp_path}/poll.parquet: row 3:")
    if poll_result != [["poll", {"x": [[0, [1]]]}]]:  # kafka-log holds any JSON value (frozen)
        assert_input_error(verify(path, "--model", "kafka-log"), f"{path}:4:", "poll")


# ---------------------------------------------------------------------------------------
# Lone surrogates, EDN ratios, NaN and infinities
# ---------------------------------------------------------------------------------------


def test_lone_surrogates_in_porcupine_logs_are_strings(tmp_path):
    log = tmp_path / "surrogate.txt"
    log.write_text(
        '{:process 0, :type :invoke, :f :append, :key "\\ud800", :value "x\\udfff"}\n'
        '{:process 0, :type :ok, :f :append, :key "\\ud800", :value "x\\udfff"}\n'
        '{:process 1, :type :invoke, :f :get, :key "\\ud800", :value nil}\n'
        '{:process 1, :type :ok, :f :get, :key "\\ud800", :value "y\\ud800"}\n',
        "utf-8",
    )
    run = verify(log)
    assert run.code == 1, run.stderr
    assert "\\udfff" in run.stdout or "\\ud800" in run.stdout  # escaped on output, never a crash
    as_json = verify(log, "--json")
    assert as_json.code == 1
    assert json.loads(as_json.stdout)["histories"][0]["failing"][0]["part"] == "\ud800"
    report = tmp_path / "report.html"
    assert verify(log, "--report", str(report)).code == 1
    assert report.is_file()


@pytest.mark.parametrize(
    ("literal", "words"),
    [
        ("1/0", "zero denominator"),
        ("0/0", "zero denominator"),
        ("-7/0", "zero denominator"),
        ("##NaN", "NaN equals nothing"),
        ("##Inf", "not a value a history can hold"),
        ("##-Inf", "not a value a history can hold"),
        ("1e999", "overflows a 64-bit float"),
        ("##Whatever", "unknown symbolic value"),
    ],
)
def test_edn_literals_that_mean_nothing_are_input_errors(tmp_path, literal, words):
    edn = tmp_path / "literal.edn"
    edn.write_text(
        "[{:process 0, :type :invoke, :f :write, :value 1}\n"
        f" {{:process 0, :type :ok, :f :write, :value {literal}}}]\n",
        "utf-8",
    )
    assert_input_error(verify(edn), f"{edn}:2:", words)
    etcd = tmp_path / "literal.log"
    etcd.write_text(f"INFO  jepsen.util - 0\t:invoke\t:write\t{literal}\n", "utf-8")
    assert_input_error(verify(etcd), f"{etcd}:1:", words)


def test_a_ratio_is_a_number(tmp_path):
    edn = tmp_path / "ratio.edn"
    edn.write_text(
        "[{:process 0, :type :invoke, :f :write, :value 1/2}\n"
        " {:process 0, :type :ok, :f :write, :value 1/2}\n"
        " {:process 1, :type :invoke, :f :read, :value nil}\n"
        " {:process 1, :type :ok, :f :read, :value 0.5}]\n",
        "utf-8",
    )
    assert verify(edn).code == 0
    assert next(iter(open_history(edn)[1])).value == 0.5


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-2e400"])
def test_json_nan_and_infinities_are_input_errors(tmp_path, literal):
    path = jsonl(
        tmp_path / "nan.jsonl", [f'{{"process": 0, "type": "invoke", "f": "write", "value": {literal}}}\n']
    )
    assert_input_error(verify(path), f"{path}:1:", "not a value a history can hold")
    columns = kv_columns()
    columns["value"] = pa.array(['"a"', '"a"', None, literal])
    parquet_path = parquet(tmp_path / "nan.parquet", columns)
    assert_input_error(
        verify(parquet_path), f"{parquet_path}: row 3: value", "not a value a history can hold"
    )


# ---------------------------------------------------------------------------------------
# The Spark engine answers the same
# ---------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.slow
def test_the_spark_engine_reports_hostile_input_as_the_local_one(tmp_path, spark):
    deep_line = json.dumps(KV_OPS[0]).replace('"value": "a"', f'"value": {deep(3000)}')
    cases = [jsonl(tmp_path / "deep.jsonl", [json.dumps(KV_OPS[1]) + "\n", deep_line + "\n"])]
    edn = tmp_path / "ratio.edn"
    edn.write_text(
        "[{:process 0, :type :invoke, :f :write, :value 1}\n {:process 0, :type :ok, :f :write, :value 1/0}]"
    )
    cases.append(edn)
    ops = [dict(op) for op in KV_OPS]
    ops[0]["value"] = ops[1]["value"] = 5
    cases.append(jsonl(tmp_path / "kv.jsonl", ops))
    cases.append(parquet_of(tmp_path / "nan.parquet", KV_OPS, {"value": ['"a"', "NaN", None, '"a"']}))
    for path in cases:
        local, distributed = verify(path), verify(path, engine="spark")
        assert local.code == distributed.code == 2, (
            path,
            local.stderr,
            distributed.stderr,
            distributed.escaped,
        )
        assert len(distributed.stderr.splitlines()) == 1, distributed.stderr
        assert str(path) in distributed.stderr


@pytest.mark.spark
def test_long_keys_and_lone_surrogates_give_the_same_verdict_on_spark(tmp_path, spark):
    ops = [{**op, "key": LONG} for op in KV_OPS]
    log = tmp_path / "surrogate.txt"
    log.write_text(
        '{:process 0, :type :invoke, :f :append, :key "\\ud800", :value "x\\udfff"}\n'
        '{:process 0, :type :ok, :f :append, :key "\\ud800", :value "x\\udfff"}\n',
        "utf-8",
    )
    for path in (parquet_of(tmp_path / "long.parquet", ops), log):
        local, distributed = verify(path, "--json"), verify(path, "--json", engine="spark")
        assert local.code == distributed.code == 0, (path, distributed.stderr, distributed.escaped)
        assert json.loads(local.stdout)["verdict"] == json.loads(distributed.stdout)["verdict"]


@pytest.mark.spark
def test_a_bug_in_a_spark_task_is_a_task_error_not_bad_input(tmp_path, spark):
    path = jsonl(tmp_path / "kv.jsonl", KV_OPS)
    info, _operations = open_history(path)
    budget = Budget()
    object.__setattr__(budget, "max_states", "many")  # a bug: a budget no check can compare with
    with pytest.raises(SparkTaskError, match=r"TypeError: .* \(in a Spark task, stage 2") as caught:
        verify_spark(Plan(model="kv", budget=budget), f"file://{path}", str(path), info.format, spark)
    assert any("Traceback in the Spark task" in note for note in caught.value.__notes__)


@pytest.mark.parametrize("engine", ["local", pytest.param("spark", marks=pytest.mark.spark)])
def test_an_error_found_in_a_call_names_the_line_it_was_read_on(tmp_path, engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    edn = tmp_path / "maps.edn"  # op maps over two lines each: an operation's index is not its line
    edn.write_text(
        '[{:process 0,\n  :type :invoke, :f :append, :key "k", :value "a"}\n'
        ' {:process 0,\n  :type :ok, :f :append, :key "k", :value "a"}\n'
        ' {:process 1,\n  :type :invoke, :f :get, :key "k", :value nil}\n'
        ' {:process 1,\n  :type :ok, :f :get, :key "k", :value 7}\n'
        ' {:process 1,\n  :type :invoke, :f :get, :key "k", :value nil}\n'
        ' {:process 1,\n  :type :invoke, :f :get, :key "k", :value nil}]\n',
        "utf-8",
    )
    text = edn.read_text("utf-8")
    bad_value = tmp_path / "value.edn"
    bad_value.write_text(text[: text.index(" {:process 1,\n  :type :invoke", text.index(":value 7"))] + "]\n")
    run = verify(bad_value, "--model", "kv", engine=engine)
    assert_input_error(
        run, f"{bad_value}:7:", "get invoked at index 2: kv model: a get returns a string; got 7"
    )
    edn.write_text(text.replace(":value 7", ':value "a"'), "utf-8")
    run = verify(edn, "--model", "kv", engine=engine)
    assert_input_error(
        run, f"{edn}:11:", "process 1 invokes 'get' while its 'get' (index 4) has not completed"
    )


@pytest.mark.parametrize(
    ("initial", "words"),
    [
        (deep(5000), NESTED),
        ("NaN", "not a value a history can hold"),
        ("-Infinity", "not a value a history can hold"),
        ("1e999", "overflows"),
        ("[1", "Expecting"),
    ],
)
def test_a_hostile_initial_value_is_a_usage_error(tmp_path, initial, words):
    path = jsonl(tmp_path / "kv.jsonl", KV_OPS)
    run = verify(path, "--initial", initial)
    assert run.code == 2, (run.stderr, run.escaped)
    assert run.stderr.startswith("kafkaspec: error: --initial must be a JSON literal"), run.stderr
    assert words in run.stderr and len(run.stderr.splitlines()) == 1
