"""Tests of `spark_checks.traceable`: the decision procedure for traceable kv and register histories.

The main property: on small random kv histories (concurrent clients, crashed and pending calls,
reads that are right or corrupted in the ways real bugs corrupt them) the procedure and the
general search (`check_partition(..., traceable_first=False)`) give the same verdict, and every
valid verdict's linearization replays through the model in real-time order (checked here, apart
from the procedure's own replay). The same for values written more than once (where the
procedure may fall back, but must agree when it decides) and for registers. Then one test per
fallback reason, the evidence of an invalid verdict, and Porcupine's c50-bad keys 0 and 9, which
neither Porcupine nor the search decides in 100 s.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference.models import KeyValue, Register
from spark_checks import traceable
from spark_checks.history import Call, CheckResult, Operation, OpType, Verdict, pair_calls
from spark_checks.linearizability import check_linearizability, check_partition, overall_verdict
from spark_checks.readers import open_history

KV = {"initial": ""}
HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"
C50_BAD = HISTORIES / "porcupine" / "test_data" / "kv" / "c50-bad.txt"

Event = tuple[Any, ...]  # (process, type, f, value)


def history(*events: Event) -> list[Call]:
    """Calls of one key from events in the order they happened: (process, type, f, value)."""
    operations = [
        Operation(index=index, process=event[0], type=OpType(event[1]), f=event[2], value=event[3], key="k")
        for index, event in enumerate(events)
    ]
    return list(pair_calls(operations))


def decided(calls: list[Call], model: str = "kv", conventions: Any = None) -> CheckResult:
    return check_partition(calls, model, KV if conventions is None else conventions, max_seconds=20)


def searched(calls: list[Call], model: str = "kv", conventions: Any = None) -> CheckResult:
    return check_partition(
        calls, model, KV if conventions is None else conventions, max_seconds=20, traceable_first=False
    )


def replays(calls: list[Call], result: CheckResult, model: Any, conventions: Any) -> bool:
    """Whether a valid result's linearization is a legal run in real-time order with every
    completed call in it (an independent check of the certificate)."""
    by_invoke = {call.invoke_index: call for call in calls}
    state = model.init(conventions["initial"])
    latest_invoke = -1
    placed = set()
    for index in result.evidence["linearization"]:
        call = by_invoke[index]
        prepared = model.prepare(call, {"nil_read": "unconstrained"})
        state = model.step(state, *prepared)
        if state is None:
            return False
        latest_invoke = max(latest_invoke, call.invoke_index)
        if (
            call.complete_index is not None
            and call.outcome.value == "ok"
            and call.complete_index < latest_invoke
        ):
            return False
        placed.add(index)
    required = {
        call.invoke_index
        for call in calls
        if call.outcome.value == "ok" and model.prepare(call, {"nil_read": "unconstrained"}) is not None
    }
    return required <= placed


# ---------------------------------------------------------------------------------------
# Random kv histories
# ---------------------------------------------------------------------------------------


def kv_history(seed: int, processes: int, steps: int, repeat: float, corrupt: float) -> list[Call]:
    """A random run of clients on one kv key: each invocation takes effect at a random moment
    before its completion (or, for a crashed call, at most later or never), reads return the
    state at that moment or, with probability `corrupt`, a corrupted one; with probability
    `repeat` a write reuses an earlier value."""
    rng = random.Random(seed)
    state = ""
    seen_states = [""]
    used: list[str] = []
    events: list[Event] = []
    # process -> [f, value, applied, result]
    running: dict[int, list[Any]] = {}
    floating: list[str] = []  # crashed writes that may still take effect: ("a"|"p") + value
    fresh = iter(range(10**6))

    def apply(f: str, value: str) -> None:
        nonlocal state
        state = value if f == "put" else state + value
        seen_states.append(state)

    for _ in range(steps):
        if floating and rng.random() < 0.1:
            late = floating.pop(rng.randrange(len(floating)))
            apply("put" if late[0] == "p" else "append", late[1:])
        process = rng.randrange(processes)
        if process not in running:
            f = rng.choice(["get", "get", "append", "append", "put"])
            value = None
            if f != "get":
                value = rng.choice(used) if used and rng.random() < repeat else f"<{next(fresh)}>"
                used.append(value)
            running[process] = [f, value, False, None]
            events.append((process, "invoke", f, value))
            continue
        f, value, applied, result = running[process]
        if not applied and rng.random() < 0.5:
            if f == "get":
                running[process][3] = state
            else:
                apply(f, value)
            running[process][2] = True
            continue
        del running[process]
        if f == "get":
            if not applied:
                result = state
            if rng.random() < corrupt:
                result = corrupted(rng, result, seen_states, used)
            events.append((process, "ok", f, result))
            continue
        ending = rng.random()
        if ending < 0.15:  # crashed: took effect, or may later, or never
            if not applied and rng.random() < 0.5:
                floating.append(("p" if f == "put" else "a") + value)
            events.append((process, "info", f, value))
        elif ending < 0.2 and not applied:
            events.append((process, "fail", f, value))
        else:
            if not applied:
                apply(f, value)
            events.append((process, "ok", f, value))
    return history(*events)  # calls still running are pending: info to the end


def corrupted(rng: random.Random, value: str, seen: list[str], used: list[str]) -> str:
    """A read result as buggy systems return them: stale, a token lost, tokens swapped, a value
    never written, or a state that never existed."""
    tokens = [f"<{token}" for token in value.split("<")[1:]]
    choice = rng.randrange(5)
    if choice == 0:
        return rng.choice(seen)
    if choice == 1 and tokens:
        del tokens[rng.randrange(len(tokens))]
        return "".join(tokens)
    if choice == 2 and len(tokens) > 1:
        i = rng.randrange(len(tokens) - 1)
        tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        return "".join(tokens)
    if choice == 3:
        return value + "<never>"
    return "".join(rng.sample(used, min(len(used), rng.randrange(3)))) if used else ""


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    processes=st.integers(1, 4),
    steps=st.integers(2, 36),
    corrupt=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_same_verdict_as_the_search_on_unique_values(
    seed: int, processes: int, steps: int, corrupt: float
) -> None:
    calls = kv_history(seed, processes, steps, repeat=0.0, corrupt=corrupt)
    fast = decided(calls)
    slow = searched(calls)
    assert slow.verdict is not Verdict.UNKNOWN
    assert fast.evidence["method"] == "traceable", fast.evidence
    assert fast.verdict is slow.verdict, (fast.evidence, slow.evidence)
    if fast.verdict is Verdict.VALID:
        assert replays(calls, fast, KeyValue(), KV)
    else:
        assert fast.evidence["unlinearizable"] and fast.evidence["why"]
        assert fast.evidence["blocking_call"] in fast.evidence["unlinearizable"]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    processes=st.integers(1, 4),
    steps=st.integers(2, 36),
    corrupt=st.sampled_from([0.0, 0.2]),
)
def test_same_verdict_as_the_search_on_repeated_values(
    seed: int, processes: int, steps: int, corrupt: float
) -> None:
    calls = kv_history(seed, processes, steps, repeat=0.3, corrupt=corrupt)
    fast = decided(calls)
    slow = searched(calls)
    assert fast.verdict is slow.verdict, (fast.evidence, slow.evidence)
    if fast.evidence["method"] == "traceable" and fast.verdict is Verdict.VALID:
        assert replays(calls, fast, KeyValue(), KV)


def register_history(seed: int, processes: int, steps: int, corrupt: float) -> list[Call]:
    """A random run of a register with unique writes, reads right or (with `corrupt`) stale."""
    rng = random.Random(seed)
    state: Any = None
    seen: list[Any] = [None]
    events: list[Event] = []
    running: dict[int, list[Any]] = {}
    fresh = iter(range(1, 10**6))
    for _ in range(steps):
        process = rng.randrange(processes)
        if process not in running:
            f = rng.choice(["read", "write"])
            value = next(fresh) if f == "write" else None
            running[process] = [f, value, False, None]
            events.append((process, "invoke", f, value))
            continue
        f, value, applied, result = running.pop(process)
        if not applied and rng.random() < 0.5:
            running[process] = [f, value, True, state]
            if f == "write":
                state = value
                seen.append(value)
            continue
        if f == "read":
            result = state if not applied else result
            events.append((process, "ok", f, rng.choice(seen) if rng.random() < corrupt else result))
        elif rng.random() < 0.15:
            events.append((process, "info", f, value))
        else:
            if not applied:
                state = value
                seen.append(value)
            events.append((process, "ok", f, value))
    return history(*events)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), processes=st.integers(1, 4), steps=st.integers(2, 30))
def test_registers_with_unique_writes_same_verdict_as_the_search(
    seed: int, processes: int, steps: int
) -> None:
    calls = register_history(seed, processes, steps, corrupt=0.25)
    conventions = {"initial": None, "nil_read": "absent"}
    fast = decided(calls, "register", conventions)
    slow = searched(calls, "register", conventions)
    assert fast.evidence["method"] == "traceable", fast.evidence
    assert fast.verdict is slow.verdict, (fast.evidence, slow.evidence)
    if fast.verdict is Verdict.VALID:
        assert replays_register(calls, fast)


def replays_register(calls: list[Call], result: CheckResult) -> bool:
    model = Register()
    by_invoke = {call.invoke_index: call for call in calls}
    state = model.init(None)
    latest = -1
    for index in result.evidence["linearization"]:
        call = by_invoke[index]
        state = model.step(state, *model.prepare(call, {"nil_read": "absent"}))  # type: ignore[misc]
        latest = max(latest, call.invoke_index)
        if state is None or (
            call.complete_index is not None and call.outcome.value == "ok" and call.complete_index < latest
        ):
            return False
    return True


# ---------------------------------------------------------------------------------------
# Hand-made cases: verdicts and evidence
# ---------------------------------------------------------------------------------------


def test_a_read_of_the_initial_value_after_a_completed_append_is_invalid() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", "<a>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", ""),
    )
    result = decided(calls)
    assert result.verdict is Verdict.INVALID
    assert result.evidence["method"] == "traceable"
    assert result.evidence["blocking_call"] == 0  # the append: it must follow the read of ""
    assert result.evidence["unlinearizable"] == [0, 4]
    assert "before" in result.evidence["why"]
    assert result.evidence["descriptions"] == {"0": "append 'k' '<a>'", "4": "get 'k' -> ''"}


def test_a_crashed_append_a_read_saw_took_effect() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "info", "append", "<a>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", "<a>"),
        (3, "invoke", "append", "<b>"),  # pending to the end: may take effect later, or never
        (4, "invoke", "get", None),
        (4, "ok", "get", "<a>"),
    )
    result = decided(calls)
    assert result.verdict is Verdict.VALID
    assert result.evidence["linearization"] == [0, 2, 5]  # the pending append is left out


def test_a_put_resets_and_its_epoch_is_placed_between_others() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (2, "invoke", "put", "<p>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<a>"),
        (2, "ok", "put", "<p>"),
        (1, "invoke", "append", "<b>"),
        (1, "ok", "append", "<b>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<p><b>"),
    )
    result = decided(calls)
    assert result.verdict is Verdict.VALID
    assert result.evidence["linearization"] == [0, 3, 2, 6, 8]


def test_two_values_that_must_hold_at_once_are_invalid() -> None:
    # Each put is read before and after the other one's read: the two epochs overlap.
    calls = history(
        (1, "invoke", "put", "<p>"),
        (2, "invoke", "put", "<q>"),
        (1, "ok", "put", "<p>"),
        (2, "ok", "put", "<q>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<p>"),
        (4, "invoke", "get", None),
        (4, "ok", "get", "<q>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<p>"),
    )
    fast, slow = decided(calls), searched(calls)
    assert fast.verdict is slow.verdict is Verdict.INVALID
    assert "overlap" in fast.evidence["why"]


def test_a_write_with_nowhere_to_go_is_invalid() -> None:
    # The put completes while the initial value must still hold (a later read saw it).
    calls = history(
        (1, "invoke", "get", None),
        (2, "invoke", "put", "<p>"),
        (2, "ok", "put", "<p>"),
        (1, "ok", "get", ""),
        (1, "invoke", "get", None),
        (1, "ok", "get", ""),
    )
    fast, slow = decided(calls), searched(calls)
    assert fast.verdict is slow.verdict is Verdict.INVALID
    assert fast.evidence["blocking_call"] == 1
    assert "no read may see it" in fast.evidence["why"]


def test_appends_seen_in_two_orders_are_invalid() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (2, "invoke", "append", "<b>"),
        (1, "ok", "append", "<a>"),
        (2, "ok", "append", "<b>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<a><b>"),
        (4, "invoke", "get", None),
        (4, "ok", "get", "<b><a>"),
    )
    fast, slow = decided(calls), searched(calls)
    assert fast.verdict is slow.verdict is Verdict.INVALID
    assert fast.evidence["unlinearizable"] == [4, 6]


def test_a_value_no_write_produces_is_invalid() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", "<a><x>"),
    )
    result = decided(calls)
    assert result.verdict is Verdict.INVALID
    assert result.evidence["unlinearizable"] == [2]
    assert "no sequence of the writes" in result.evidence["why"]


def test_the_explanation_quotes_the_reason() -> None:
    from spark_checks.explain import explain_results

    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", ""),
    )
    result = decided(calls)
    sentences = [explanation.sentence for explanation in explain_results([result])]
    assert any(result.evidence["why"] in sentence for sentence in sentences), sentences


# ---------------------------------------------------------------------------------------
# Fallbacks: each precondition, and the search decides
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedCalls:
    """`traceable.Prepared` built here, for calling `traceable.decide` directly."""

    inputs: list[Any]
    outputs: list[Any]
    outcomes: list[Any]
    invoke: list[int]
    complete: list[int | None]

    @classmethod
    def of(cls, calls: list[Call]) -> PreparedCalls:
        model = KeyValue()
        rows = [(call, model.prepare(call, {"nil_read": "unconstrained"})) for call in calls]
        kept = sorted(((call, p) for call, p in rows if p is not None), key=lambda row: row[0].invoke_index)
        return cls(
            [p[0] for _, p in kept],
            [p[1] for _, p in kept],
            [p[2] for _, p in kept],
            [call.invoke_index for call, _ in kept],
            [call.complete_index if call.outcome.value == "ok" else None for call, _ in kept],
        )


def fallback_of(calls: list[Call], model: str = "kv", conventions: Any = None) -> str:
    result = decided(calls, model, conventions)
    assert result.evidence["method"] == "search"
    assert result.verdict is searched(calls, model, conventions).verdict
    reason = result.evidence["traceable_fallback"]
    assert isinstance(reason, str)
    return reason


def test_fallback_on_compare_and_set() -> None:
    calls = history((1, "invoke", "cas", [None, 1]), (1, "ok", "cas", [None, 1]))
    assert "compare-and-set" in fallback_of(calls, "cas-register", {"initial": None})


def test_fallback_on_empty_values() -> None:
    calls = history((1, "invoke", "append", ""), (1, "ok", "append", ""))
    assert "empty string" in fallback_of(calls)
    calls = history((1, "invoke", "put", ""), (1, "ok", "put", ""))
    assert "empty string" in fallback_of(calls)


def test_fallback_on_a_write_of_the_initial_value() -> None:
    calls = history(
        (1, "invoke", "write", 0), (1, "ok", "write", 0), (2, "invoke", "read", None), (2, "ok", "read", 0)
    )
    assert "initial value" in fallback_of(calls, "register", {"initial": 0})


def test_fallback_on_a_read_that_splits_two_ways() -> None:
    calls = history(
        (1, "invoke", "append", "a"),
        (2, "invoke", "append", "b"),
        (3, "invoke", "append", "ab"),
        (1, "ok", "append", "a"),
        (2, "ok", "append", "b"),
        (3, "ok", "append", "ab"),
        (4, "invoke", "get", None),
        (4, "ok", "get", "ab"),
    )
    assert "more than one way" in fallback_of(calls)


def test_real_time_settles_a_value_both_put_and_appended() -> None:
    # "x" is put and appended: a read of "x" is the put's value or the append on the initial
    # value, unless a put completed before the read began (then it is not the initial epoch).
    calls = history(
        (1, "invoke", "put", "x"),
        (1, "ok", "put", "x"),
        (2, "invoke", "append", "x"),
        (2, "ok", "append", "x"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "xx"),
    )
    result = decided(calls)
    assert result.evidence["method"] == "traceable"
    assert result.verdict is Verdict.VALID is searched(calls).verdict


def test_fallback_on_a_value_put_twice_and_read() -> None:
    calls = history(
        (1, "invoke", "put", "<p>"),
        (1, "ok", "put", "<p>"),
        (2, "invoke", "put", "<p>"),
        (2, "ok", "put", "<p>"),
        (3, "invoke", "get", None),
        (3, "ok", "get", "<p>"),
    )
    assert "put more than once" in fallback_of(calls)


def test_a_value_seen_in_more_places_than_written_is_invalid() -> None:
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (1, "invoke", "append", "<b>"),
        (1, "ok", "append", "<b>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", "<a><b><a>"),
    )
    fast = decided(calls)
    assert fast.verdict is searched(calls).verdict is Verdict.INVALID
    assert fast.evidence["unlinearizable"] == [4]
    assert "in 2 places" in fast.evidence["why"]


def test_repeated_values_told_apart_by_where_the_reads_saw_them() -> None:
    # "<a>" is appended twice, once after "<p>" and once after "<q>": two attributions.
    events: list[Event] = []
    for put in ("<p>", "<q>"):
        events += [(1, "invoke", "put", put), (1, "ok", "put", put)]
        events += [(1, "invoke", "append", "<a>"), (1, "ok", "append", "<a>")]
        events += [(2, "invoke", "get", None), (2, "ok", "get", put + "<a>")]
    calls = history(*events)
    result = decided(calls)
    assert result.evidence["method"] == "traceable"
    assert result.verdict is Verdict.VALID
    assert replays(calls, result, KeyValue(), KV)


def test_the_time_budget_is_kept_while_decoding_and_between_attributions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first attribution gives the reads after "<p>" the "<a>" appended after "<q>": it fails,
    # and with no time left the second is not tried; the search answers unknown at once.
    events: list[Event] = []
    for put in ("<q>", "<p>"):
        events += [(1, "invoke", "put", put), (1, "ok", "put", put)]
        events += [(1, "invoke", "append", "<a>"), (1, "ok", "append", "<a>")]
        events += [(2, "invoke", "get", None), (2, "ok", "get", put + "<a>")]
    calls = history(*events)
    assert decided(calls).verdict is Verdict.VALID
    late = check_partition(calls, "kv", KV, deadline=time.time() - 1)
    assert late.verdict is Verdict.UNKNOWN
    assert late.evidence["traceable_fallback"] == "time budget exhausted after decoding 0 of 2 reads"
    # Time runs out after decoding: the clock is read before each of the two reads is decoded,
    # then after the first attribution fails.
    readings = iter([0.0, 0.0, 10.0])
    monkeypatch.setattr(time, "perf_counter", lambda: next(readings, 10.0))
    prepared = PreparedCalls.of(calls)
    outcome = traceable.decide("kv", prepared, "", KeyValue().step, str, stop_at=5.0)
    assert outcome == traceable.Fallback("time budget exhausted after 1 of 2 attributions")


def test_fallback_on_too_many_attributions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traceable, "MAX_ATTRIBUTIONS", 3)
    events: list[Event] = []
    for put in ("<p>", "<q>"):
        events += [(1, "invoke", "put", put), (1, "ok", "put", put)]
        for value in ("<a>", "<b>"):
            events += [(1, "invoke", "append", value), (1, "ok", "append", value)]
        events += [(2, "invoke", "get", None), (2, "ok", "get", put + "<a><b>")]
    assert "ways to tell apart" in fallback_of(history(*events))
    monkeypatch.setattr(traceable, "MAX_ATTRIBUTIONS", 4)
    monkeypatch.setattr(traceable, "ATTRIBUTION_WORK_LIMIT", 4 * 8 - 1)  # 4 ways of 8 calls each
    assert "calls placed" in fallback_of(history(*events))


def test_fallback_when_decoding_would_cost_too_much(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traceable, "DECODE_WORK_LIMIT", 10)
    calls = history(
        (1, "invoke", "append", "<a>"),
        (1, "ok", "append", "<a>"),
        (2, "invoke", "get", None),
        (2, "ok", "get", "<a><a><a><a>"),
    )
    assert "substring probes" in fallback_of(calls)


def test_other_models_are_searched_without_a_fallback_note() -> None:
    calls = history((1, "invoke", "acquire", None), (1, "ok", "acquire", None))
    result = check_partition(calls, "mutex", {})
    assert result.evidence["method"] == "search"
    assert "traceable_fallback" not in result.evidence


# ---------------------------------------------------------------------------------------
# Porcupine's c50-bad: keys 0 and 9, and the whole file
# ---------------------------------------------------------------------------------------


@pytest.mark.skipif(not C50_BAD.exists(), reason="Porcupine's test data is not here")
def test_c50_bad_keys_0_and_9_are_decided_in_under_a_second() -> None:
    info, operations = open_history(C50_BAD)
    calls = list(pair_calls(operations, str(C50_BAD)))
    by_key: dict[str, list[Call]] = {}
    for call in calls:
        by_key.setdefault(call.key, []).append(call)
    for key in ("0", "9"):
        started = time.perf_counter()
        result = check_partition(by_key[key], "kv", info.conventions, max_seconds=60, partition=key)
        assert time.perf_counter() - started < 1.0
        assert result.evidence["method"] == "traceable"
        # A get returning "" long after an append to the key completed (no put writes ""):
        # the key is not linearizable, which the search cannot establish in 100 s.
        assert result.verdict is Verdict.INVALID
    started = time.perf_counter()
    results = check_linearizability(calls, "kv", info.conventions, max_seconds=60)
    assert time.perf_counter() - started < 5.0
    manifest = (HISTORIES / "porcupine" / "MANIFEST.tsv").read_text().splitlines()
    (row,) = [line.split("\t") for line in manifest if line.startswith("test_data/kv/c50-bad.txt\t")]
    assert row[2] == "not-linearizable"
    assert overall_verdict(results) is Verdict.INVALID
    assert all(result.evidence["method"] == "traceable" for result in results)
