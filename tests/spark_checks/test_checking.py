"""Tests of `spark_checks.checking`'s calls in the model's form (`model_calls`,
`split_model_calls`): checking them gives exactly what checking the plain calls gives."""

from __future__ import annotations

from typing import Any

import pytest

from spark_checks.checking import Plan, check_part, model_calls, split_calls, split_model_calls
from spark_checks.history import Call, CheckResult, Operation, OpType, pair_calls
from spark_checks.readers import PORCUPINE_ETCD_CONVENTIONS


def history(*events: tuple[Any, ...]) -> list[Call]:
    """Calls from (process, type, f, value[, key]) events in the order they happened."""
    operations = [
        Operation(index, event[0], OpType(event[1]), event[2], event[3], event[4] if len(event) > 4 else None)
        for index, event in enumerate(events)
    ]
    return list(pair_calls(operations))


KV = history(
    (0, "invoke", "put", "a", "x"),
    (1, "invoke", "get", None, "y"),
    (0, "ok", "put", "a", "x"),
    (1, "ok", "get", "", "y"),
    (2, "invoke", "append", "b", "x"),
    (3, "invoke", "get", None, "x"),
    (3, "ok", "get", "ab", "x"),
    (1, "invoke", "get", None, "y"),
    (1, "ok", "get", "z", "y"),  # never written: key y is not linearizable
)
REGISTER = history(
    (0, "invoke", "write", 1),
    (1, "invoke", "read", None),
    (0, "ok", "write", 1),
    (2, "invoke", "cas", [1, 2]),
    (1, "ok", "read", 1),
    (2, "info", "cas", [1, 2]),
    (3, "invoke", "read", None),
    (3, "ok", "read", 1),
)


def plain_results(plan: Plan, calls: list[Call]) -> list[CheckResult]:
    parts: dict[str, list[Call]] = {}
    for key, call in split_calls(plan, calls):
        parts.setdefault(key, []).append(call)
    return [check_part(plan, key, part) for key, part in sorted(parts.items())]


def model_form_results(plan: Plan, calls: list[Call]) -> list[CheckResult]:
    parts = split_model_calls(plan, model_calls(plan, calls))
    return [check_part(plan, key, part) for key, part in sorted(parts.items())]


@pytest.mark.parametrize(
    ("plan", "calls"),
    [
        (Plan("kv", {"initial": "", "nil_read": "absent"}), KV),
        (Plan("cas-register", dict(PORCUPINE_ETCD_CONVENTIONS)), REGISTER),
        (Plan("cas-register", {"initial": 0}), REGISTER),
    ],
)
def test_calls_in_the_model_form_are_checked_as_the_plain_calls(plan: Plan, calls: list[Call]) -> None:
    expected = plain_results(plan, calls)
    got = model_form_results(plan, calls)
    assert [(r.partition, r.verdict, r.evidence, r.operations) for r in got] == [
        (r.partition, r.verdict, r.evidence, r.operations) for r in expected
    ]
    assert {r.verdict.value for r in got} == ({"valid", "invalid"} if plan.model == "kv" else {"valid"})


def test_split_model_calls_keeps_one_key_whole_and_each_part_in_invocation_order() -> None:
    register = model_calls(Plan("cas-register"), reversed(REGISTER))
    assert [call.invoke_index for call in register] == sorted(call.invoke_index for call in REGISTER)
    assert split_model_calls(Plan("cas-register"), register) == {"null": register}
    kv = Plan("kv", {"nil_read": "absent"})
    parts = split_model_calls(kv, model_calls(kv, KV))
    assert sorted(parts) == ['"x"', '"y"']
    for part in parts.values():
        invoked = [call.invoke_index for call in part]
        assert invoked == sorted(invoked) and len(part.forms) == len(part)
    assert [call.key for call in parts['"y"']] == ["y", "y"]


def test_a_value_the_model_cannot_hold_names_its_call() -> None:
    calls = history((0, "invoke", "append", 5, "x"), (0, "ok", "append", 5, "x"))
    with pytest.raises(ValueError, match="call invoked at index 0: kv model: append takes a string"):
        model_calls(Plan("kv"), calls)


def test_keys_that_compare_equal_but_differ_in_json_are_different_parts() -> None:
    # 1 == True, but the keys 1 and true name different objects; "1" is a third.
    calls = history(
        (0, "invoke", "write", 1, 1),
        (0, "ok", "write", 1, 1),
        (1, "invoke", "write", 2, True),
        (1, "ok", "write", 2, True),
        (2, "invoke", "write", 3, "1"),
        (2, "ok", "write", 3, "1"),
        (3, "invoke", "read", None, 1),
        (3, "ok", "read", 1, 1),
    )
    plan = Plan("register")
    parts = split_model_calls(plan, model_calls(plan, calls))
    assert {key: len(part) for key, part in parts.items()} == {"1": 2, "true": 1, '"1"': 1}
    expected: dict[str, list[int]] = {}
    for key, call in split_calls(plan, calls):
        expected.setdefault(key, []).append(call.invoke_index)
    assert {key: [call.invoke_index for call in part] for key, part in parts.items()} == expected
