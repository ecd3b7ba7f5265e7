"""Tests of `spark_checks.linearizability`: the WGL search, conventions, evidence and budget.

Hand-made histories with known verdicts (each one the smallest history showing a rule), the
evidence of a failing history, the budget turning a hard search into `unknown`,
P-compositionality, and Hypothesis properties: a history recorded from a real sequential
register under random concurrency is linearizable, and changing one read to a value never
written makes it not linearizable.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reference.models import MODEL_CLASSES
from spark_checks.history import Call, CheckResult, Operation, OpType, Verdict, pair_calls
from spark_checks.linearizability import (
    MODELS,
    check_linearizability,
    check_partition,
    overall_verdict,
    partition_calls,
)
from spark_checks.readers import KNOSSOS_CONVENTIONS, PORCUPINE_ETCD_CONVENTIONS

KNOSSOS = dict(KNOSSOS_CONVENTIONS)
ETCD = dict(PORCUPINE_ETCD_CONVENTIONS)

Event = tuple[Any, ...]  # (process, type, f, value[, key])


def history(*events: Event) -> list[Call]:
    """Calls from events in the order they happened: (process, type, f, value[, key])."""
    operations = [
        Operation(
            index=index,
            process=event[0],
            type=OpType(event[1]),
            f=event[2],
            value=event[3] if len(event) > 3 else None,
            key=event[4] if len(event) > 4 else None,
        )
        for index, event in enumerate(events)
    ]
    return list(pair_calls(operations))


def verdict(calls: list[Call], model: str = "cas-register", conventions: Any = None) -> Verdict:
    return overall_verdict(
        check_linearizability(calls, model, conventions if conventions is not None else KNOSSOS)
    )


def single(
    calls: list[Call], model: str = "cas-register", conventions: Any = None, **budget: Any
) -> CheckResult:
    results = check_linearizability(
        calls, model, conventions if conventions is not None else KNOSSOS, **budget
    )
    assert len(results) == 1
    return results[0]


# ---------------------------------------------------------------------------------------
# Registers
# ---------------------------------------------------------------------------------------

STALE_READ = history(
    (1, "invoke", "write", 1),
    (1, "ok", "write", 1),
    (2, "invoke", "write", 2),
    (2, "ok", "write", 2),
    (3, "invoke", "read", None),
    (3, "ok", "read", 1),  # 1 was overwritten by a write that completed before this read began
)


def test_stale_read_after_completed_write_is_not_linearizable() -> None:
    assert verdict(STALE_READ) is Verdict.INVALID
    assert verdict(STALE_READ, "register") is Verdict.INVALID


def test_evidence_of_a_failing_history() -> None:
    result = single(STALE_READ, traceable_first=False)
    assert result.checker == "linearizability"
    assert result.model == "cas-register"
    assert result.partition is None
    assert result.operations == 3
    assert result.conventions == KNOSSOS
    evidence = result.evidence
    assert evidence["longest_linearizable_prefix"] == [0, 2]  # write 1, write 2
    assert evidence["unlinearizable"] == [4]  # the read, by its invocation's index
    assert evidence["blocking_call"] == 4
    assert evidence["state_after_prefix"] == "2"
    assert evidence["descriptions"] == {"4": "read -> 1"}
    assert evidence["calls_searched"] == 3
    assert evidence["calls_dropped"] == 0


def test_evidence_names_every_candidate_at_the_deepest_point() -> None:
    # Two concurrent reads of values never written: both are candidates when stuck.
    calls = history(
        (1, "invoke", "read", None),
        (2, "invoke", "read", None),
        (1, "ok", "read", 7),
        (2, "ok", "read", 8),
    )
    evidence = single(calls, traceable_first=False).evidence
    assert evidence["unlinearizable"] == [0, 1]
    assert evidence["blocking_call"] == 0
    assert evidence["longest_linearizable_prefix"] == []


@pytest.mark.parametrize("value_read", [0, 1])
def test_concurrent_write_and_read_both_orders_are_legal(value_read: int) -> None:
    calls = history(
        (1, "invoke", "write", 1),
        (2, "invoke", "read", None),
        (2, "ok", "read", value_read),
        (1, "ok", "write", 1),
    )
    result = single(calls)
    assert result.verdict is Verdict.VALID
    # The certificate: the read (invoked at index 1) before or after the write (index 0).
    assert result.evidence["linearization"] == ([1, 0] if value_read == 0 else [0, 1])


def test_concurrent_read_of_an_unwritten_value_is_not_linearizable() -> None:
    calls = history(
        (1, "invoke", "write", 1),
        (2, "invoke", "read", None),
        (2, "ok", "read", 2),
        (1, "ok", "write", 1),
    )
    assert verdict(calls) is Verdict.INVALID


def test_valid_result_carries_a_replayable_linearization() -> None:
    calls = history(
        (1, "invoke", "write", 1),
        (2, "invoke", "cas", [1, 2]),
        (3, "invoke", "read", None),
        (2, "ok", "cas", [1, 2]),
        (1, "ok", "write", 1),
        (3, "ok", "read", 2),
    )
    result = single(calls)
    assert result.verdict is Verdict.VALID
    order = result.evidence["linearization"]
    assert order == [0, 1, 2]  # write 1, cas 1->2, read 2 (by invocation index)
    model = MODELS["cas-register"]
    state = model.init(0)
    by_index = {call.invoke_index: call for call in calls}
    for index in order:
        prepared = model.prepare(by_index[index], result.conventions)
        assert prepared is not None
        state = model.step(state, *prepared)
        assert state is not None


@pytest.mark.parametrize(
    ("reads", "expected"),
    [
        ([1], Verdict.VALID),  # the write happened
        ([0], Verdict.VALID),  # it did not (yet)
        ([0, 1], Verdict.VALID),  # it happened later, after its indeterminate completion
        ([1, 0], Verdict.INVALID),  # once seen, it cannot un-happen
    ],
)
def test_pending_info_write_may_or_may_not_have_happened(reads: list[int], expected: Verdict) -> None:
    events: list[Event] = [(1, "invoke", "write", 1), (1, "info", "write", 1)]
    for number, value in enumerate(reads):
        events += [(10 + number, "invoke", "read", None), (10 + number, "ok", "read", value)]
    assert verdict(history(*events)) is expected
    # The same with an invocation that never completes at all.
    never = [events[0], *events[2:]]
    assert verdict(history(*never)) is expected


def test_info_call_cannot_take_effect_before_its_invocation() -> None:
    calls = history(
        (2, "invoke", "read", None),
        (2, "ok", "read", 1),  # reads 1 before anyone tried to write it
        (1, "invoke", "write", 1),
        (1, "info", "write", 1),
    )
    assert verdict(calls) is Verdict.INVALID


FAILED_CAS = history(
    (1, "invoke", "cas", [0, 1]),
    (1, "fail", "cas", [0, 1]),  # the value was 0 all along
    (2, "invoke", "read", None),
    (2, "ok", "read", 0),
)


def test_failed_cas_under_both_conventions() -> None:
    # Knossos: a failed CAS did not happen, nothing is learned from it.
    assert verdict(FAILED_CAS, conventions=KNOSSOS) is Verdict.VALID
    # Porcupine's etcd logs: it executed and returned false, so the value was not 0: impossible.
    no_effect = {**KNOSSOS, "failed_cas": "no-effect"}
    result = single(FAILED_CAS, conventions=no_effect)
    assert result.verdict is Verdict.INVALID
    assert result.conventions["failed_cas"] == "no-effect"
    assert result.evidence["descriptions"] == {"0": "cas 0->1 -> false"}


def test_failed_cas_with_a_different_value_is_fine_under_no_effect() -> None:
    calls = history(
        (1, "invoke", "write", 5),
        (1, "ok", "write", 5),
        (2, "invoke", "cas", [0, 1]),
        (2, "fail", "cas", [0, 1]),
        (3, "invoke", "read", None),
        (3, "ok", "read", 5),
    )
    assert verdict(calls, conventions={**KNOSSOS, "failed_cas": "no-effect"}) is Verdict.VALID


def test_nil_read_unconstrained_versus_absent() -> None:
    calls = history(
        (1, "invoke", "write", 1),
        (1, "ok", "write", 1),
        (2, "invoke", "read", None),
        (2, "ok", "read", None),
    )
    # Knossos: the read's value was never filled in, it says nothing.
    assert verdict(calls, conventions=KNOSSOS) is Verdict.VALID
    # Porcupine etcd: it observed the key absent, but 1 had been written.
    assert verdict(calls, conventions=ETCD) is Verdict.INVALID
    # Absent before any write, with a nil initial value, is what etcd reports.
    first_read = history((2, "invoke", "read", None), (2, "ok", "read", None))
    assert verdict(first_read, conventions=ETCD) is Verdict.VALID
    assert verdict(first_read, conventions={**ETCD, "initial": 0}) is Verdict.INVALID


def test_failed_and_timed_out_reads_are_left_out() -> None:
    calls = history(
        (1, "invoke", "read", None),
        (1, "fail", "read", None),
        (2, "invoke", "read", None),
        (2, "info", "read", None),
    )
    for conventions in (KNOSSOS, ETCD):
        result = single(calls, conventions=conventions)
        assert result.verdict is Verdict.VALID
        assert result.evidence["calls_dropped"] == 2
        assert result.operations == 2


def test_conventions_defaults_are_reported() -> None:
    result = check_linearizability(STALE_READ, "register")[0]
    assert result.conventions == {
        "initial": None,
        "nil_read": "unconstrained",
        "failed_cas": "did-not-happen",
        "failed_read": "did-not-happen",
    }


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        check_linearizability(STALE_READ, "nope")
    with pytest.raises(ValueError, match="failed_cas must be one of"):
        check_linearizability(STALE_READ, "register", {"failed_cas": "sometimes"})
    with pytest.raises(
        ValueError, match="call invoked at index 0: register model: unsupported operation 'cas'"
    ):
        check_linearizability(FAILED_CAS, "register", {"failed_cas": "no-effect"})


def test_empty_history() -> None:
    assert check_linearizability([], "cas-register") == []
    assert overall_verdict([]) is Verdict.VALID


def test_model_names() -> None:
    expected = {
        "register",
        "cas-register",
        "kv",
        "multi-register",
        "mutex",
        "fifo-queue",
        "set",
        "unordered-queue",
        "kafka-log",
    }
    assert set(MODELS) == expected == set(MODEL_CLASSES)


# ---------------------------------------------------------------------------------------
# Other models
# ---------------------------------------------------------------------------------------


def test_kv_append_per_key() -> None:
    calls = history(
        (1, "invoke", "append", "a", "x"),
        (2, "invoke", "append", "b", "x"),
        (3, "invoke", "append", "c", "y"),
        (1, "ok", "append", "a", "x"),
        (2, "ok", "append", "b", "x"),
        (3, "ok", "append", "c", "y"),
        (4, "invoke", "get", None, "x"),
        (5, "invoke", "get", None, "y"),
        (4, "ok", "get", "ba", "x"),  # the concurrent appends in either order
        (5, "ok", "get", "c", "y"),
        (6, "invoke", "put", "z", "y"),
        (6, "ok", "put", "z", "y"),
        (7, "invoke", "get", None, "y"),
        (7, "ok", "get", "z", "y"),
    )
    results = check_linearizability(calls, "kv", {"initial": ""})
    assert [(r.partition, r.verdict) for r in results] == [("x", Verdict.VALID), ("y", Verdict.VALID)]
    last = calls[-1]
    assert (last.f, last.output) == ("get", "z")
    bad = [*calls[:-1], Call(7, "get", None, "cz", last.outcome, last.invoke_index, last.complete_index, "y")]
    results = check_linearizability(bad, "kv", {"initial": ""})
    assert [(r.partition, r.verdict) for r in results] == [("x", Verdict.VALID), ("y", Verdict.INVALID)]


def test_p_compositionality_only_the_bad_key_is_invalid() -> None:
    events: list[Event] = []
    for key in ("a", "b", "c"):
        events += [(key, "invoke", "write", 1, key), (key, "ok", "write", 1, key)]
        events += [(key, "invoke", "write", 2, key), (key, "ok", "write", 2, key)]
    events += [("r", "invoke", "read", None, "b"), ("r", "ok", "read", 1, "b")]  # stale, on b only
    events += [("s", "invoke", "read", None, "c"), ("s", "ok", "read", 2, "c")]
    calls = history(*events)
    assert set(partition_calls(calls, "register")) == {"a", "b", "c"}
    results = check_linearizability(calls, "register", KNOSSOS, traceable_first=False)
    assert [(r.partition, r.verdict, r.operations) for r in results] == [
        ("a", Verdict.VALID, 2),
        ("b", Verdict.INVALID, 3),
        ("c", Verdict.VALID, 3),
    ]
    assert overall_verdict(results) is Verdict.INVALID
    assert results[1].evidence["unlinearizable"] == [12]
    # Without keys the registers are one object and the history is not linearizable either.
    unkeyed = [
        Call(c.process, c.f, c.input, c.output, c.outcome, c.invoke_index, c.complete_index) for c in calls
    ]
    assert verdict(unkeyed, "register") is Verdict.INVALID
    # stop_on_invalid: partitions after the first invalid one are not searched.
    stopped = check_linearizability(calls, "register", KNOSSOS, stop_on_invalid=True)
    assert [r.verdict for r in stopped] == [Verdict.VALID, Verdict.INVALID, Verdict.UNKNOWN]
    assert stopped[2].evidence["reason"] == "not checked: partition 'b' is not linearizable"


def test_multi_register_knossos_style() -> None:
    calls = history(
        (1, "invoke", "txn", [["write", "x", 1], ["write", "y", 1]]),
        (2, "invoke", "txn", [["read", "x", None], ["read", "y", None]]),
        (2, "ok", "txn", [["read", "x", 1], ["read", "y", 1]]),
        (1, "ok", "txn", [["write", "x", 1], ["write", "y", 1]]),
        (3, "invoke", "txn", [["read", "x", None], ["read", "y", None]]),
        (3, "ok", "txn", [["read", "x", 1], ["read", "y", None]]),  # nil: unknown
    )
    conventions = {**KNOSSOS, "initial": {"x": 0, "y": 0}}
    assert verdict(calls, "multi-register", conventions) is Verdict.VALID
    torn = history(
        (1, "invoke", "txn", [["write", "x", 1], ["write", "y", 1]]),
        (2, "invoke", "txn", [["read", "x", None], ["read", "y", None]]),
        (2, "ok", "txn", [["read", "x", 1], ["read", "y", 0]]),  # half of an atomic write
        (1, "ok", "txn", [["write", "x", 1], ["write", "y", 1]]),
    )
    assert verdict(torn, "multi-register", conventions) is Verdict.INVALID


def test_mutex() -> None:
    overlapping = history(
        (1, "invoke", "acquire"),
        (2, "invoke", "acquire"),
        (1, "ok", "acquire"),
        (1, "invoke", "release"),
        (2, "ok", "acquire"),  # may have acquired after 1's release
        (1, "ok", "release"),
    )
    assert verdict(overlapping, "mutex") is Verdict.VALID
    double = history(
        (1, "invoke", "acquire"),
        (1, "ok", "acquire"),
        (2, "invoke", "acquire"),
        (2, "ok", "acquire"),
    )
    assert verdict(double, "mutex") is Verdict.INVALID
    crashed_release = history(
        (1, "invoke", "acquire"),
        (1, "ok", "acquire"),
        (1, "invoke", "release"),
        (1, "info", "release"),
        (2, "invoke", "acquire"),
        (2, "ok", "acquire"),
    )
    assert verdict(crashed_release, "mutex") is Verdict.VALID


def test_fifo_queue() -> None:
    sequential = history(
        (1, "invoke", "enqueue", 1),
        (1, "ok", "enqueue", 1),
        (1, "invoke", "enqueue", 2),
        (1, "ok", "enqueue", 2),
        (2, "invoke", "dequeue", None),
        (2, "ok", "dequeue", 2),
    )
    assert verdict(sequential, "fifo-queue") is Verdict.INVALID
    concurrent = history(
        (1, "invoke", "enqueue", 1),
        (3, "invoke", "enqueue", 2),
        (1, "ok", "enqueue", 1),
        (3, "ok", "enqueue", 2),
        (2, "invoke", "dequeue", None),
        (2, "ok", "dequeue", 2),
        (2, "invoke", "dequeue", None),
        (2, "ok", "dequeue", 1),
    )
    assert verdict(concurrent, "fifo-queue") is Verdict.VALID


def test_kafka_log() -> None:
    calls = history(
        (1, "invoke", "send", "a"),
        (2, "invoke", "send", "b"),
        (1, "ok", "send", 1),  # the concurrent sends in either order
        (2, "ok", "send", 0),
        (3, "invoke", "poll", 0),
        (3, "ok", "poll", [[0, "b"], [1, "a"]]),
    )
    assert verdict(calls, "kafka-log") is Verdict.VALID
    lost = history(
        (1, "invoke", "send", "a"),
        (1, "ok", "send", 0),
        (2, "invoke", "send", "b"),
        (2, "ok", "send", 0),  # two acknowledged records at offset 0
    )
    assert verdict(lost, "kafka-log") is Verdict.INVALID
    jepsen = history(
        (1, "invoke", "send", [["send", 7, 17]]),
        (1, "ok", "send", [["send", 7, [0, 17]]]),
        (2, "invoke", "poll", [["poll"]]),
        (2, "ok", "poll", [["poll", {"7": [[0, 17]]}]]),
        (3, "invoke", "poll", [["poll"]]),
        (3, "ok", "poll", [["poll", {"8": [[0, 99]]}]]),  # another partition: never written
    )
    results = check_linearizability(jepsen, "kafka-log")
    assert [(r.partition, r.verdict) for r in results] == [("7", Verdict.VALID), ("8", Verdict.INVALID)]


# ---------------------------------------------------------------------------------------
# Budget
# ---------------------------------------------------------------------------------------


def hard_history(appends: int = 11) -> list[Call]:
    """Concurrent appends and then a get no order can produce: refuting it needs every order."""
    events: list[Event] = [(p, "invoke", "append", f"<{p}>", "k") for p in range(appends)]
    events += [(p, "ok", "append", f"<{p}>", "k") for p in range(appends)]
    events += [("r", "invoke", "get", None, "k"), ("r", "ok", "get", "<impossible>", "k")]
    return history(*events)


def test_budget_gives_unknown_never_a_guess() -> None:
    calls = hard_history()
    started = time.perf_counter()
    by_time = single(calls, "kv", {"initial": ""}, max_seconds=0.2, traceable_first=False)
    assert time.perf_counter() - started < 5
    assert by_time.verdict is Verdict.UNKNOWN
    assert by_time.evidence["reason"] == "time budget exhausted"
    assert by_time.evidence["explored_states"] > 0
    by_states = single(calls, "kv", {"initial": ""}, max_states=1000, traceable_first=False)
    assert by_states.verdict is Verdict.UNKNOWN
    assert by_states.evidence["reason"] == "state budget of 1000 states exhausted"
    assert by_states.evidence["explored_states"] == 1001
    # A small instance of the same shape is decided: not linearizable.
    assert single(hard_history(4), "kv", {"initial": ""}, traceable_first=False).verdict is Verdict.INVALID


def test_identical_indeterminate_calls_do_not_blow_up_the_search() -> None:
    # 40 crashed writes of the same value: interchangeable, so tried in one order only.
    events: list[Event] = []
    for p in range(40):
        events += [(p, "invoke", "write", 1), (p, "info", "write", 1)]
    events += [("r", "invoke", "read", None), ("r", "ok", "read", 2)]
    result = single(history(*events), max_seconds=5, traceable_first=False)
    assert result.verdict is Verdict.INVALID
    assert result.evidence["explored_states"] <= 41


def test_long_sequential_partition() -> None:
    # 6,000 calls in one partition: linear work (masks beyond the table are computed).
    events: list[Event] = []
    for value in range(3000):
        events += [(value % 3, "invoke", "write", value), (value % 3, "ok", "write", value)]
        events += [("r", "invoke", "read", None), ("r", "ok", "read", value)]
    calls = history(*events)
    result = single(calls, "register", max_seconds=20)
    assert result.verdict is Verdict.VALID
    assert result.evidence["explored_states"] == 6000
    stale = [
        *calls[:-1],
        Call("r", "read", None, 0, calls[-1].outcome, calls[-1].invoke_index, len(events) - 1),
    ]
    result = single(stale, "register", max_seconds=20)
    assert result.verdict is Verdict.INVALID
    assert len(result.evidence["longest_linearizable_prefix"]) == 5999
    assert result.evidence["unlinearizable"] == [len(events) - 2]


def test_check_partition_is_a_pure_function_of_its_inputs() -> None:
    calls = STALE_READ
    first = check_partition(calls, "cas-register", KNOSSOS, 10.0, 1000, partition="k")
    second = check_partition(list(reversed(calls)), "cas-register", KNOSSOS, 10.0, 1000, partition="k")
    assert first.partition == "k"
    assert (first.verdict, first.evidence) == (second.verdict, second.evidence)


# ---------------------------------------------------------------------------------------
# Properties: histories recorded from a real register
# ---------------------------------------------------------------------------------------


@st.composite
def register_runs(draw: st.DrawFn) -> list[Operation]:
    """Run a sequential CAS register under random concurrency and record what clients saw.

    Each process invokes an operation, which later takes effect atomically on the register
    (its linearization point) and later still completes. A process may crash (`info`)
    before or after the effect; crashed processes come back under a new id, as in Jepsen.
    A CAS whose expected value differs fails without effect. Written values are unique.
    """
    processes = draw(st.integers(min_value=1, max_value=5))
    slots = list(range(processes))
    register = 0
    next_value = 1
    operations: list[Operation] = []
    in_flight: dict[int, list[Any]] = {}  # process -> [f, value, applied, result]

    def record(process: int, kind: OpType, f: str, value: Any) -> None:
        operations.append(Operation(index=len(operations), process=process, type=kind, f=f, value=value))

    for _ in range(draw(st.integers(min_value=0, max_value=80))):
        slot = draw(st.integers(min_value=0, max_value=processes - 1))
        process = slots[slot]
        if process not in in_flight:
            f = draw(st.sampled_from(["read", "write", "cas"]))
            value: Any = None
            if f == "write":
                value, next_value = next_value, next_value + 1
            elif f == "cas":
                expected = draw(st.sampled_from([register, draw(st.integers(0, next_value))]))
                value, next_value = [expected, next_value], next_value + 1
            in_flight[process] = [f, value, False, None]
            record(process, OpType.INVOKE, f, value)
            continue
        f, value, applied, result = in_flight[process]
        if not applied and draw(st.integers(min_value=0, max_value=5)) > 0:
            if f == "read":
                result = register
            elif f == "write":
                register = value
            elif register == value[0]:
                register, result = value[1], True
            else:
                result = False
            in_flight[process] = [f, value, True, result]
            continue
        del in_flight[process]
        crashed = draw(st.integers(min_value=0, max_value=5)) == 0
        if crashed or (f == "cas" and not applied):
            # Indeterminate. (A CAS that never ran is not reported as failed: under the
            # no-effect convention a failed CAS ran and saw a different value.)
            record(process, OpType.INFO, f, value)
            slots[slot] = process + processes
        elif not applied or (f == "cas" and result is False):
            record(process, OpType.FAIL, f, value)  # did not take effect
        else:
            record(process, OpType.OK, f, result if f == "read" else value)
    return operations


@settings(max_examples=150)
@given(register_runs(), st.sampled_from(["did-not-happen", "no-effect"]))
def test_recorded_register_histories_are_linearizable(operations: list[Operation], failed_cas: str) -> None:
    calls = list(pair_calls(operations))
    results = check_linearizability(
        calls, "cas-register", {**KNOSSOS, "failed_cas": failed_cas}, max_seconds=20
    )
    assert overall_verdict(results) is Verdict.VALID, results


@settings(max_examples=150)
@given(register_runs(), st.data())
def test_a_read_of_a_never_written_value_makes_it_not_linearizable(
    operations: list[Operation], data: st.DataObject
) -> None:
    reads = [op.index for op in operations if op.type is OpType.OK and op.f == "read"]
    assume(reads)
    mutated_index = data.draw(st.sampled_from(reads))
    mutated = [
        Operation(op.index, op.process, op.type, op.f, -1) if op.index == mutated_index else op
        for op in operations
    ]
    results = check_linearizability(
        list(pair_calls(mutated)), "cas-register", KNOSSOS, max_seconds=20, traceable_first=False
    )
    assert overall_verdict(results) is Verdict.INVALID
    invoke = next(c.invoke_index for c in pair_calls(mutated) if c.complete_index == mutated_index)
    evidence = results[0].evidence
    assert evidence["unlinearizable"]
    assert invoke not in evidence["longest_linearizable_prefix"]


def long_appends_history(appends: int, value_bytes: int) -> list[Call]:
    """`hard_history`'s shape with long appended values: each cached state is a long string."""
    events: list[Event] = [(p, "invoke", "append", f"<{p}>" * value_bytes, "k") for p in range(appends)]
    events += [(p, "ok", "append", f"<{p}>" * value_bytes, "k") for p in range(appends)]
    events += [("r", "invoke", "get", None, "k"), ("r", "ok", "get", "<impossible>", "k")]
    return history(*events)


def test_memory_budget_weighs_the_size_of_cached_states() -> None:
    # The same budget holds far fewer states when each is a long string: it bounds memory,
    # not the count (a kv history with long appended values reached 8 GB by count alone).
    budget = 4 * 1024 * 1024
    short = single(hard_history(), "kv", {"initial": ""}, max_memory_bytes=budget, traceable_first=False)
    long = single(
        long_appends_history(11, 3_000), "kv", {"initial": ""}, max_memory_bytes=budget, traceable_first=False
    )
    for result in (short, long):
        assert result.verdict is Verdict.UNKNOWN
        assert str(result.evidence["reason"]).startswith("memory budget of 4 MB exhausted")
    # A state is ~10-100 KB of text here: a few hundred fit in 4 MB, against tens of
    # thousands of short ones.
    assert (
        int(str(long.evidence["explored_states"])) < 1000 < int(str(short.evidence["explored_states"])) // 10
    )
    # Within a budget that fits it, the short search is decided.
    assert (
        single(hard_history(4), "kv", {"initial": ""}, max_memory_bytes=budget, traceable_first=False).verdict
        is Verdict.INVALID
    )


def test_time_budget_ends_the_search_in_time() -> None:
    # The search stops early enough to free its cache before the budget ends.
    for seconds in (0.3, 1.5):
        started = time.perf_counter()
        result = single(hard_history(12), "kv", {"initial": ""}, max_seconds=seconds, traceable_first=False)
        elapsed = time.perf_counter() - started
        assert result.verdict is Verdict.UNKNOWN
        assert result.evidence["reason"] == "time budget exhausted"
        assert elapsed < seconds + 0.5, elapsed


def test_deadline_is_shared_by_every_partition() -> None:
    # Two keys too hard for the time there is, with a deadline 1 s away: each gets its share,
    # the whole call ends by then, and a part reached after the deadline is not checked.
    events: list[Event] = []
    for key in ("a", "b"):
        events += [(f"{key}{p}", "invoke", "append", f"<{p}>", key) for p in range(12)]
        events += [(f"{key}{p}", "ok", "append", f"<{p}>", key) for p in range(12)]
        events += [(f"{key}r", "invoke", "get", None, key), (f"{key}r", "ok", "get", "<impossible>", key)]
    calls = history(*events)
    started = time.perf_counter()
    results = check_linearizability(
        calls, "kv", {"initial": ""}, deadline=time.time() + 1.0, traceable_first=False
    )
    assert time.perf_counter() - started < 1.5
    assert [r.verdict for r in results] == [Verdict.UNKNOWN, Verdict.UNKNOWN]
    assert [r.evidence["reason"] for r in results] == ["time budget exhausted"] * 2
    late = check_linearizability(calls, "kv", {"initial": ""}, deadline=time.time() - 1)
    assert [r.evidence["reason"] for r in late] == ["not checked: time budget exhausted"] * 2


@pytest.mark.parametrize(
    "budget",
    [
        {"max_seconds": float("nan")},
        {"max_seconds": 0.0},
        {"max_seconds": -1.0},
        {"max_states": 0},
        {"max_memory_bytes": -5},
    ],
)
def test_a_budget_that_is_not_positive_is_refused(budget: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a positive number"):
        check_linearizability(hard_history(2), "kv", {"initial": ""}, **budget)
