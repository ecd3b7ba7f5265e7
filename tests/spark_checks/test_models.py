"""Tests of `reference.models`: the sequential models histories are checked against.

Tables of (state, prepared call, expected next state) for each model's `step` (None: the
observed result is impossible), then `prepare` under each convention, partition keys,
descriptions and the conventions' defaults and validation.
"""

from __future__ import annotations

from typing import Any

import pytest

from reference.models import (
    DEFAULT_CONVENTIONS,
    MODEL_CLASSES,
    NIL,
    CasRegister,
    FifoQueue,
    KafkaLog,
    KeyValue,
    MultiRegister,
    Mutex,
    Register,
    SequentialModel,
    freeze,
    resolve_conventions,
)
from spark_checks.history import Call, Outcome
from spark_checks.readers import KNOSSOS_CONVENTIONS, PORCUPINE_ETCD_CONVENTIONS

KNOSSOS = dict(KNOSSOS_CONVENTIONS)
ETCD = dict(PORCUPINE_ETCD_CONVENTIONS)


def call(f: str, value: Any = None, output: Any = None, outcome: str = "ok", key: Any = None) -> Call:
    """A call as `pair_calls` makes it (output only when ok)."""
    return Call(
        process=0,
        f=f,
        input=value,
        output=output if outcome == "ok" else None,
        outcome=Outcome(outcome),
        invoke_index=0,
        complete_index=1,
        key=key,
    )


# ---------------------------------------------------------------------------------------
# step tables
# ---------------------------------------------------------------------------------------

CAS_REGISTER_STEPS = [
    # state, input, output, outcome, expected
    (NIL, ("r",), NIL, "ok", NIL),
    (0, ("r",), 0, "ok", 0),
    (1, ("r",), 2, "ok", None),
    (NIL, ("r",), 0, "ok", None),
    (1, ("w", 2), None, "ok", 2),
    (1, ("w", 2), None, "info", 2),
    (1, ("w", NIL), None, "ok", NIL),
    (1, ("c", 1, 2), None, "ok", 2),
    (0, ("c", 1, 2), None, "ok", None),
    (0, ("c", 1, 2), None, "fail", 0),  # no-effect: returned false because the value differed
    (1, ("c", 1, 2), None, "fail", None),  # ... so it cannot have seen the expected value
    (1, ("c", 1, 2), None, "info", 2),  # indeterminate: took effect iff the value matched
    (0, ("c", 1, 2), None, "info", 0),
    (NIL, ("c", NIL, 5), None, "ok", 5),
]


@pytest.mark.parametrize(("state", "call_input", "output", "outcome", "expected"), CAS_REGISTER_STEPS)
def test_cas_register_step(state: Any, call_input: Any, output: Any, outcome: Any, expected: Any) -> None:
    assert CasRegister().step(state, call_input, output, outcome) == expected


KV_STEPS = [
    ("", ("g",), "", "ok", ""),
    ("ab", ("g",), "ab", "ok", "ab"),
    ("ab", ("g",), "a", "ok", None),
    ("ab", ("g",), "", "ok", None),
    ("ab", ("p", "x"), None, "ok", "x"),
    ("ab", ("a", "c"), None, "ok", "abc"),
    ("", ("a", "c"), None, "info", "c"),
]


@pytest.mark.parametrize(("state", "call_input", "output", "outcome", "expected"), KV_STEPS)
def test_kv_step(state: Any, call_input: Any, output: Any, outcome: Any, expected: Any) -> None:
    assert KeyValue().step(state, call_input, output, outcome) == expected


def test_multi_register_step() -> None:
    model = MultiRegister()
    start = model.init({"x": 0, "y": 0})
    both = model.step(start, (("w", "x", 1), ("w", "y", 2)), None, "ok")
    assert both == (None, frozenset({("x", 1), ("y", 2)}))
    assert both is not None
    assert model.step(both, (("r", "x", 1), ("r", "y", 0)), None, "ok") is None
    assert model.step(both, (("r", "x", 1), ("r", "y", 2)), None, "ok") == both
    # Reads see the transaction's own earlier writes; unknown registers hold the default.
    assert model.step(start, (("w", "x", 5), ("r", "x", 5)), None, "ok") is not None
    assert model.step(start, (("r", "z", None),), None, "ok") == start
    assert model.step(model.init(0), (("r", "z", 0),), None, "ok") is not None
    assert model.step(model.init(0), (("r", "z", 1),), None, "ok") is None


MUTEX_STEPS = [(False, True, True), (True, True, None), (True, False, False), (False, False, None)]


@pytest.mark.parametrize(("held", "acquire", "expected"), MUTEX_STEPS)
def test_mutex_step(held: bool, acquire: bool, expected: Any) -> None:
    assert Mutex().step(held, acquire, None, "ok") == expected


FIFO_STEPS = [
    ((), ("e", 1), None, (1,)),
    ((1,), ("e", 2), None, (1, 2)),
    ((1, 2), ("d",), 1, (2,)),
    ((1, 2), ("d",), 2, None),  # not the head
    ((), ("d",), 1, None),  # empty
    ((1, 2), ("d?",), None, (2,)),  # unknown value: removed the head
    ((), ("d?",), None, None),
    ((), ("d0",), None, ()),  # observed empty
    ((1,), ("d0",), None, None),
]


@pytest.mark.parametrize(("state", "call_input", "output", "expected"), FIFO_STEPS)
def test_fifo_queue_step(state: Any, call_input: Any, output: Any, expected: Any) -> None:
    assert FifoQueue().step(state, call_input, output, "ok") == expected


KAFKA_LOG_STEPS = [
    ((), ("s", "a"), 0, ("a",)),
    (("a",), ("s", "b"), 1, ("a", "b")),
    (("a",), ("s", "b"), 0, None),  # offset 0 is taken
    (("a",), ("s", "b"), None, ("a", "b")),  # unknown offset
    (("a", "b"), ("p", 0), ((0, "a"), (1, "b")), ("a", "b")),
    (("a", "b"), ("p", 1), ((1, "b"),), ("a", "b")),
    (("a", "b"), ("p", 0), ((0, "a"),), ("a", "b")),  # fewer records than exist
    (("a", "b"), ("p", 0), (), ("a", "b")),
    (("a", "b"), ("p", 0), ((1, "b"),), None),  # skips the start position
    (("a", "b"), ("p", None), ((1, "b"),), ("a", "b")),  # no position: records must exist
    (("a", "b"), ("p", None), ((1, "x"),), None),  # wrong value at the offset
    (("a",), ("p", None), ((1, "b"),), None),  # offset not written yet
]


@pytest.mark.parametrize(("state", "call_input", "output", "expected"), KAFKA_LOG_STEPS)
def test_kafka_log_step(state: Any, call_input: Any, output: Any, expected: Any) -> None:
    assert KafkaLog().step(state, call_input, output, "ok") == expected


# ---------------------------------------------------------------------------------------
# prepare: conventions
# ---------------------------------------------------------------------------------------

PREPARE_CAS = [
    # call, conventions, expected prepared form (None: left out)
    (call("read", None, 3), KNOSSOS, (("r",), 3, "ok")),
    (call("read", None, None), KNOSSOS, None),  # nil read: unconstrained
    (call("read", None, None), ETCD, (("r",), NIL, "ok")),  # nil read: observed nil
    (call("read", None, outcome="fail"), KNOSSOS, None),
    (call("read", None, outcome="fail"), ETCD, None),  # unknown read: constrains nothing
    (call("read", None, outcome="info"), ETCD, None),
    (call("write", 3, 3), KNOSSOS, (("w", 3), None, "ok")),
    (call("write", 3, outcome="info"), KNOSSOS, (("w", 3), None, "info")),
    (call("write", 3, outcome="fail"), ETCD, None),
    (call("cas", [1, 2], [1, 2]), KNOSSOS, (("c", 1, 2), None, "ok")),
    (call("cas", [1, 2], outcome="fail"), KNOSSOS, None),  # did not happen
    (call("cas", [1, 2], outcome="fail"), ETCD, (("c", 1, 2), None, "fail")),  # returned false
    (call("cas", [None, 2], outcome="info"), ETCD, (("c", NIL, 2), None, "info")),
]


@pytest.mark.parametrize(("the_call", "conventions", "expected"), PREPARE_CAS)
def test_cas_register_prepare(the_call: Call, conventions: dict[str, Any], expected: Any) -> None:
    assert CasRegister().prepare(the_call, resolve_conventions(conventions)) == expected


def test_register_has_no_cas_and_models_reject_unknown_functions() -> None:
    conventions = resolve_conventions(None)
    with pytest.raises(ValueError, match="register model: unsupported operation 'cas'"):
        Register().prepare(call("cas", [1, 2], [1, 2]), conventions)
    with pytest.raises(ValueError, match="cas value must be"):
        CasRegister().prepare(call("cas", 3, 3), conventions)
    for model in (KeyValue(), MultiRegister(), Mutex(), FifoQueue(), KafkaLog()):
        with pytest.raises(ValueError, match="unsupported operation 'frob'"):
            model.prepare(call("frob", 1, 1), conventions)


def test_kv_prepare() -> None:
    absent = resolve_conventions({"nil_read": "absent"})
    unconstrained = resolve_conventions(None)
    model = KeyValue()
    assert model.prepare(call("get", None, "ab", key="k"), absent) == (("g",), "ab", "ok")
    assert model.prepare(call("get", None, None, key="k"), absent) == (("g",), "", "ok")
    assert model.prepare(call("get", None, None, key="k"), unconstrained) is None
    assert model.prepare(call("append", "x", "x", key="k"), absent) == (("a", "x"), None, "ok")
    assert model.prepare(call("put", "x", outcome="info", key="k"), absent) == (("p", "x"), None, "info")
    assert model.prepare(call("put", "x", outcome="fail", key="k"), absent) is None
    assert model.init(None) == "" and model.init("") == ""


def test_multi_register_prepare() -> None:
    model = MultiRegister()
    knossos = resolve_conventions(KNOSSOS)
    invoked = [[":read", ":x", None], [":write", ":y", 2]]
    completed = [[":read", ":x", 1], [":write", ":y", 2]]
    assert model.prepare(call("txn", invoked, completed), knossos) == (
        (("r", "x", 1), ("w", "y", 2)),
        None,
        "ok",
    )
    # A nil read value is unconstrained (Knossos) or observes nil (absent).
    nil_read = [["read", "x", None], ["write", "y", 2]]
    assert model.prepare(call("txn", nil_read, nil_read), knossos) == ((("w", "y", 2),), None, "ok")
    absent = resolve_conventions({"nil_read": "absent"})
    assert model.prepare(call("txn", nil_read, nil_read), absent) == (
        (("r", "x", None), ("w", "y", 2)),
        None,
        "ok",
    )
    # Indeterminate: only the writes are known; a failed transaction did not happen.
    assert model.prepare(call("txn", invoked, outcome="info"), knossos) == ((("w", "y", 2),), None, "info")
    assert model.prepare(call("txn", invoked, outcome="fail"), knossos) is None
    assert model.prepare(call("txn", [["read", "x", None]], [["read", "x", None]]), knossos) is None
    with pytest.raises(ValueError, match="micro-operation"):
        model.prepare(call("txn", [["incr", "x", 1]], [["incr", "x", 1]]), knossos)


def test_fifo_queue_and_mutex_prepare() -> None:
    unconstrained = resolve_conventions(None)
    absent = resolve_conventions({"nil_read": "absent"})
    queue = FifoQueue()
    assert queue.prepare(call("enqueue", 1, 1), unconstrained) == (("e", 1), None, "ok")
    assert queue.prepare(call("dequeue", None, 1), unconstrained) == (("d",), 1, "ok")
    assert queue.prepare(call("dequeue", None, None), unconstrained) == (("d?",), None, "ok")
    assert queue.prepare(call("dequeue", None, None), absent) == (("d0",), None, "ok")
    assert queue.prepare(call("dequeue", None, outcome="info"), absent) == (("d?",), None, "info")
    assert queue.prepare(call("dequeue", None, outcome="fail"), absent) is None
    mutex = Mutex()
    assert mutex.prepare(call("acquire"), unconstrained) == (True, None, "ok")
    assert mutex.prepare(call("release", outcome="info"), unconstrained) == (False, None, "info")
    assert mutex.prepare(call("acquire", outcome="fail"), unconstrained) is None


def test_kafka_log_prepare_plain_and_jepsen_forms() -> None:
    conventions = resolve_conventions(None)
    model = KafkaLog()
    assert model.prepare(call("send", "a", 0), conventions) == (("s", "a"), 0, "ok")
    assert model.prepare(call("send", "a", [0, "a"]), conventions) == (("s", "a"), 0, "ok")
    jepsen = call("send", [["send", 7, 17]], [["send", 7, [42, 17]]])
    assert model.prepare(jepsen, conventions) == (("s", 17), 42, "ok")
    assert model.partition_key(jepsen) == "7"
    assert model.prepare(call("send", [["send", 7, 17]], [["send", 7, None]]), conventions) == (
        ("s", 17),
        None,
        "ok",
    )
    assert model.prepare(call("send", "a", outcome="info"), conventions) == (("s", "a"), None, "info")
    poll = call("poll", [["poll"]], [["poll", {"7": [[41, 16], [42, 17]]}]])
    assert model.prepare(poll, conventions) == (("p", None), ((41, 16), (42, 17)), "ok")
    assert model.partition_key(poll) == "7"
    assert model.prepare(call("poll", 3, [[3, "x"]]), conventions) == (("p", 3), ((3, "x"),), "ok")
    assert model.prepare(call("poll", 3, outcome="info"), conventions) is None
    assert model.partition_key(call("poll", 3, [], key=5)) == "5"
    with pytest.raises(ValueError, match="one partition"):
        model.prepare(call("poll", [["poll"]], [["poll", {"1": [], "2": []}]]), conventions)
    with pytest.raises(ValueError, match="one send micro-operation"):
        model.prepare(call("send", [["send", 1, 1], ["send", 1, 2]], None, outcome="info"), conventions)


# ---------------------------------------------------------------------------------------
# Keys, descriptions, conventions
# ---------------------------------------------------------------------------------------


def test_partition_keys() -> None:
    assert CasRegister().partition_key(call("read")) is None
    assert CasRegister().partition_key(call("read", key=[1, 2])) == (1, 2)
    assert KeyValue().partition_key(call("get", key="k")) == "k"
    assert MultiRegister().partition_key(call("txn", [], key="k")) is None


DESCRIPTIONS = [
    (CasRegister(), call("read", None, 3), "read -> 3"),
    (CasRegister(), call("read", None, None), "read -> nil"),
    (CasRegister(), call("write", 3, 3), "write 3"),
    (CasRegister(), call("write", 3, outcome="info"), "write 3 (info)"),
    (CasRegister(), call("cas", [1, 2], outcome="fail"), "cas 1->2 -> false"),
    (CasRegister(), call("cas", [1, 2], [1, 2]), "cas 1->2 -> ok"),
    (KeyValue(), call("get", None, "ab", key="k"), "get 'k' -> 'ab'"),
    (KeyValue(), call("append", "x", "x", key="k"), "append 'k' 'x'"),
    (MultiRegister(), call("txn", [["read", "x", None]], [["read", "x", 1]]), "txn [r x 1]"),
    (Mutex(), call("acquire", outcome="info"), "acquire (info)"),
    (FifoQueue(), call("dequeue", None, 4), "dequeue -> 4"),
    (FifoQueue(), call("enqueue", 4, 4), "enqueue 4"),
    (KafkaLog(), call("send", "a", 0), "send 'a' -> 0"),
    (KafkaLog(), call("poll", 0, outcome="info"), "poll 0 -> ?"),
]


@pytest.mark.parametrize(("model", "the_call", "text"), DESCRIPTIONS)
def test_describe(model: SequentialModel[Any], the_call: Call, text: str) -> None:
    assert model.describe(the_call) == text


def test_conventions_defaults_and_validation() -> None:
    assert resolve_conventions(None) == dict(DEFAULT_CONVENTIONS)
    assert resolve_conventions({"failed_cas": "no-effect", "extra": 1}) == {
        "initial": None,
        "nil_read": "unconstrained",
        "failed_cas": "no-effect",
        "failed_read": "did-not-happen",
    }
    with pytest.raises(ValueError, match="nil_read must be one of unconstrained, absent"):
        resolve_conventions({"nil_read": "maybe"})


def test_states_are_hashable_and_never_none() -> None:
    for name, cls in MODEL_CLASSES.items():
        state = cls().init(None)
        assert state is not None, name
        hash(state)
    assert freeze({"b": [1, {2}], "a": None}) == (("a", None), ("b", (1, frozenset({2}))))
    assert repr(NIL) == "nil"
