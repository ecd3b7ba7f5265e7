"""`spec._frozen.SharedSteps`: the stuck check's successors handed to the checker change nothing
in what the checker finds, and each is handed over once."""

from __future__ import annotations

import dataclasses

import pytest

from spec._frozen import SharedSteps
from spec.checker import Model, check
from spec.scenarios import SCENARIOS_BY_NAME


def test_a_remembered_successor_is_handed_over_once_then_computed_again():
    calls: list[tuple[int, int]] = []

    def step(state: int, action: int) -> int | None:
        calls.append((state, action))
        return state + action if action else None

    steps = SharedSteps(step)
    assert steps.remember(1, 2) == 3
    assert steps.remember(1, 0) is None
    assert len(calls) == 2
    assert steps.step(1, 2) == 3  # handed over
    assert steps.step(1, 0) is None  # a disabled action's None is handed over too
    assert len(calls) == 2
    assert steps.step(1, 2) == 3  # forgotten once handed over: computed
    assert len(calls) == 3


def test_at_most_capacity_successors_are_kept():
    computed: list[int] = []

    def step(state: int, action: int) -> int:
        computed.append(state)
        return state + action

    steps = SharedSteps(step, capacity=3)
    for state in range(5):
        steps.remember(state, 1)
    # the fourth remember found three kept and dropped them: only states 3 and 4 are kept
    assert [steps.step(state, 1) for state in range(5)] == [1, 2, 3, 4, 5]
    assert computed == [0, 1, 2, 3, 4, 0, 1, 2]


def _result(model: Model[object, object], depth: int) -> tuple[object, ...]:
    result = check(model, depth)
    violation = result.violation
    trace = (
        None if violation is None else (violation.property_name, [step.action for step in violation.trace])
    )
    return (result.distinct_states, result.transitions, result.depth, result.complete, trace)


@pytest.mark.parametrize(
    "name",
    [
        "consumer-two-revocation-rounds",  # the stuck check passes everywhere
        "kafka-19233-rejoin-refused",  # the stuck check fails
        "classic-late-sync-fixed",
        "classic-lost-sync-kafka-12890",  # the classic stuck check fails
    ],
)
def test_the_check_finds_what_it_finds_with_the_plain_step(name: str):
    scenario = SCENARIOS_BY_NAME[name]
    model = scenario.machine.model(scenario.config, scenario.invariants, scenario.witnesses)
    assert isinstance(getattr(model.step, "__self__", None), SharedSteps)
    assert {"rebalance_completes", "rebalance_not_stuck"} & set(model.invariants)  # the stuck check
    # the plain model: the same step, and a stuck check that keeps nothing for the checker
    plain = scenario.machine.model(scenario.config, scenario.invariants, scenario.witnesses)
    plain_shared = getattr(plain.step, "__self__", None)
    assert isinstance(plain_shared, SharedSteps)
    plain = dataclasses.replace(plain, step=plain_shared._step)
    assert _result(model, scenario.max_depth) == _result(plain, scenario.max_depth)
