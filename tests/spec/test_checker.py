"""The model checker on small state machines whose answers are known by hand."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field
from typing import Any

import pytest

from spec._frozen import cache_hash, fast_init
from spec.checker import ROUND_POSITIONS, CheckResult, Model, _Codec, _dataclass_reducer, _Reducers, check
from spec.partition_scenarios import SCENARIOS, model_for


@dataclass(frozen=True)
class Jugs:
    """Die Hard's water jugs: a 3- and a 5-gallon jug; reach 4 gallons in the big one."""

    small: int = 0
    big: int = 0


def jug_moves(state: Jugs) -> Iterator[str]:
    yield from ("fill_small", "fill_big", "empty_small", "empty_big", "small_to_big", "big_to_small")


def jug_step(state: Jugs, move: str) -> Jugs | None:
    small, big = state.small, state.big
    if move == "fill_small":
        new = Jugs(3, big)
    elif move == "fill_big":
        new = Jugs(small, 5)
    elif move == "empty_small":
        new = Jugs(0, big)
    elif move == "empty_big":
        new = Jugs(small, 0)
    elif move == "small_to_big":
        poured = min(small, 5 - big)
        new = Jugs(small - poured, big + poured)
    else:
        poured = min(big, 3 - small)
        new = Jugs(small + poured, big - poured)
    return None if new == state else new


def jug_model(**extra: object) -> Model[Jugs, str]:
    return Model(
        initial_states=(Jugs(),),
        candidate_actions=jug_moves,
        step=jug_step,
        invariants={"big_jug_is_not_4": lambda state: state.big != 4},
        **extra,  # type: ignore[arg-type]
    )


def test_finds_the_shortest_counterexample():
    result = check(jug_model(), max_depth=20)
    assert result.violation is not None
    assert result.violation.property_name == "big_jug_is_not_4"
    assert result.violation.kind == "invariant"
    # The classic answer takes six pours; BFS must not return a longer one.
    assert len(result.violation.trace) - 1 == 6
    assert result.violation.trace[0].action is None
    assert result.violation.trace[-1].state.big == 4
    # The trace replays: every step is a legal transition.
    for before, after in zip(result.violation.trace, result.violation.trace[1:], strict=False):
        assert after.action is not None
        assert jug_step(before.state, after.action) == after.state


def test_respects_the_depth_bound():
    result = check(jug_model(), max_depth=5)
    assert result.violation is None
    assert result.depth == 5
    assert not result.complete


def test_exhausts_a_finite_space_and_counts_distinct_states():
    model = Model(
        initial_states=(Jugs(),),
        candidate_actions=jug_moves,
        step=jug_step,
        invariants={"volumes_in_range": lambda state: 0 <= state.small <= 3 and 0 <= state.big <= 5},
    )
    result = check(model, max_depth=100)
    assert result.violation is None
    assert result.complete
    # Reachable states of the 3/5 puzzle: every (s, b) where a jug is empty or full.
    assert result.distinct_states == 16
    assert result.transitions > result.distinct_states


def test_step_properties_are_checked_on_every_transition():
    model = jug_model(
        step_properties={"never_empty_big": lambda before, after: not (before.big and not after.big)}
    )
    result = check(model, max_depth=20)
    assert result.violation is not None
    assert result.violation.kind == "step"
    assert result.violation.property_name == "never_empty_big"
    assert len(result.violation.trace) - 1 == 2  # fill big, then empty it


def test_witnesses_record_reachability():
    model = jug_model(witnesses={"both_full": lambda s: s == Jugs(3, 5), "impossible": lambda s: s.big > 5})
    result = check(model, max_depth=3)
    assert result.witnesses_reached == {"both_full": True, "impossible": False}


def test_max_states_stops_early():
    result = check(jug_model(), max_depth=20, max_states=5)
    assert result.distinct_states == 5
    assert result.violation is None
    assert not result.complete


def test_a_canonical_key_merges_symmetric_states():
    # Two interchangeable counters: with the symmetry, (1, 0) and (0, 1) are one state.
    def moves(state: tuple[int, int]) -> Iterator[int]:
        yield from (0, 1)

    def bump(state: tuple[int, int], which: int) -> tuple[int, int] | None:
        if state[which] >= 2:
            return None
        return (state[0] + 1, state[1]) if which == 0 else (state[0], state[1] + 1)

    plain: Model[tuple[int, int], int] = Model(
        initial_states=((0, 0),), candidate_actions=moves, step=bump, invariants={}
    )
    symmetric: Model[tuple[int, int], int] = Model(
        initial_states=((0, 0),),
        candidate_actions=moves,
        step=bump,
        invariants={},
        canonical=lambda state: tuple(sorted(state)),
    )
    assert check(plain, max_depth=10).distinct_states == 9
    assert check(symmetric, max_depth=10).distinct_states == 6


def test_a_violating_initial_state_is_reported_with_a_one_state_trace():
    model = Model(
        initial_states=(Jugs(0, 4),),
        candidate_actions=jug_moves,
        step=jug_step,
        invariants={"big_jug_is_not_4": lambda state: state.big != 4},
    )
    result = check(model, max_depth=5)
    assert result.violation is not None
    assert len(result.violation.trace) == 1
    assert result.distinct_states == 1


# ---------------------------------------------------------------------------------------
# Several processes: the same result as one, whatever the model and the bounds
# ---------------------------------------------------------------------------------------


def summary(result: CheckResult[Any, Any]) -> tuple[object, ...]:
    """Everything a run reports except its timings."""
    violation = result.violation
    found = None if violation is None else (violation.property_name, violation.kind, violation.trace)
    return (
        found,
        result.distinct_states,
        result.transitions,
        result.depth,
        result.complete,
        dict(result.witnesses_reached),
    )


def grid_model(**extra: object) -> Model[tuple[int, int, int], int]:
    """Three counters up to 6 (343 states, many paths to each): big enough for several levels."""

    def moves(state: tuple[int, int, int]) -> Iterator[int]:
        yield from (0, 1, 2, 3)

    def bump(state: tuple[int, int, int], which: int) -> tuple[int, int, int] | None:
        if which == 3:  # reset the first counter: paths converge
            return (0, state[1], state[2]) if state[0] else None
        if state[which] >= 6:
            return None
        return tuple(value + (index == which) for index, value in enumerate(state))  # type: ignore[return-value]

    parts: dict[str, Any] = {"invariants": {}, **extra}
    return Model(initial_states=((0, 0, 0),), candidate_actions=moves, step=bump, **parts)


PARALLEL_CASES: dict[str, Callable[[], tuple[Model[Any, Any], dict[str, Any]]]] = {
    "counterexample": lambda: (jug_model(), {"max_depth": 20}),
    "step property": lambda: (
        jug_model(step_properties={"never_empty_big": lambda b, a: not (b.big and not a.big)}),
        {"max_depth": 20},
    ),
    "witnesses": lambda: (
        jug_model(witnesses={"both_full": lambda s: s == Jugs(3, 5), "impossible": lambda s: s.big > 5}),
        {"max_depth": 3},
    ),
    "exhausted": lambda: (grid_model(), {"max_depth": 100}),
    "depth bound": lambda: (grid_model(), {"max_depth": 7}),
    "max states": lambda: (grid_model(), {"max_depth": 100, "max_states": 100}),
    "late invariant": lambda: (
        grid_model(invariants={"sum_below_12": lambda s: sum(s) < 12}),
        {"max_depth": 100},
    ),
    "invariant and witness": lambda: (
        grid_model(
            invariants={"sum_below_9": lambda s: sum(s) < 9},
            witnesses={"two_fives": lambda s: s[:2] == (5, 5)},
        ),
        {"max_depth": 100},
    ),
    "symmetry": lambda: (grid_model(canonical=lambda s: tuple(sorted(s))), {"max_depth": 100}),
}


@pytest.mark.parametrize("round_positions", [1, 5, ROUND_POSITIONS])
@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("case", sorted(PARALLEL_CASES))
def test_several_processes_find_exactly_what_one_finds(
    monkeypatch: pytest.MonkeyPatch, case: str, workers: int, round_positions: int
) -> None:
    # Rounds of 1 and 5 positions put stops, witnesses and duplicates across round ends.
    monkeypatch.setattr("spec.checker.ROUND_POSITIONS", round_positions)
    model, bounds = PARALLEL_CASES[case]()
    alone: CheckResult[Any, Any] = check(model, **bounds)
    together: CheckResult[Any, Any] = check(model, workers=workers, parallel_from=1, **bounds)
    assert summary(together) == summary(alone)
    assert len(together.processes) == workers and not alone.processes
    assert all(cpu >= 0 and waiting >= 0 for cpu, waiting in together.processes)


@pytest.mark.parametrize("max_states", [None, 3, 4])
def test_states_of_equal_hash_stay_apart_in_several_processes(max_states: int | None) -> None:
    # hash(-1) == hash(-2): both are owned by one process, which tells them apart by equality.
    def moves(state: tuple[int, int]) -> Iterator[int]:
        yield from (-2, -1, 0)

    def move(state: tuple[int, int], value: int) -> tuple[int, int] | None:
        return None if state[1] >= 3 else (value, state[1] + 1)

    model: Model[tuple[int, int], int] = Model(
        initial_states=((0, 0),), candidate_actions=moves, step=move, invariants={}
    )
    assert hash((-1, 1)) == hash((-2, 1))
    alone = check(model, max_depth=10, max_states=max_states)
    together = check(model, max_depth=10, max_states=max_states, workers=2, parallel_from=1)
    assert summary(together) == summary(alone)
    assert alone.distinct_states == (10 if max_states is None else max_states)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class _Part:
    name: str
    values: tuple[int, ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True)
class _Whole:
    left: _Part
    right: _Part
    members: frozenset[int] = frozenset()


@dataclass(frozen=True)
class _WithInitVar:
    value: int
    scale: InitVar[int] = 1


def test_frozen_dataclasses_cross_processes_by_constructor_and_share_parts_sent_before() -> None:
    reducers = _Reducers()
    sender, receiver = _Codec(reducers), _Codec(_Reducers())
    shared = _Part("log", (1, 2, 3))
    hash(shared)  # a cached hash is not sent (it is no init field): the receiver computes its own
    first = _Whole(shared, _Part("a"), frozenset({1, 2}))
    second = _Whole(shared, _Part("b"))
    first_message, second_message = sender.encode([first]), sender.encode([second])
    [first_copy], [second_copy] = receiver.decode(first_message), receiver.decode(second_message)
    assert (first_copy, second_copy) == (first, second)
    assert hash(first_copy) == hash(first) and hash(first_copy.left) == hash(shared)
    assert second_copy.left is first_copy.left  # sent once, referred to after
    assert b"log" in first_message and b"log" not in second_message
    assert b"_Whole" not in second_message  # nor the class
    assert _Part in reducers and _Whole in reducers
    assert _dataclass_reducer(_WithInitVar) is None  # its constructor needs more than its fields
    assert _dataclass_reducer(Jugs) is not None and _dataclass_reducer(tuple) is None


@pytest.mark.parametrize("scenario", [scenario.name for scenario in SCENARIOS])
def test_scenarios_checked_in_two_processes_match_one(scenario: str) -> None:
    chosen = next(candidate for candidate in SCENARIOS if candidate.name == scenario)
    model = model_for(chosen.config, chosen.invariants, chosen.witnesses)
    depth = 9  # every counterexample (at most 11 steps) or a few thousand states, quickly
    alone = check(model, depth)
    together = check(model, depth, workers=2, parallel_from=1)  # every level in two processes
    assert summary(together) == summary(alone)


def test_a_helper_that_fails_is_reported_by_the_caller() -> None:
    caller = os.getpid()

    def step(state: tuple[int, int, int], which: int) -> tuple[int, int, int] | None:
        if os.getpid() != caller and sum(state) >= 2:  # any state the helper expands from level 2
            raise ValueError("broken step in a helper")
        return grid_model().step(state, which)

    model = Model(
        initial_states=((0, 0, 0),),
        candidate_actions=grid_model().candidate_actions,
        step=step,
        invariants={},
    )
    with pytest.raises(RuntimeError, match=r"helper 1 failed(.|\n)*broken step in a helper"):
        check(model, max_depth=10, workers=2, parallel_from=1)


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="workers must be at least 1"):
        check(jug_model(), max_depth=3, workers=0)


@pytest.mark.parametrize("workers", [2, 3])
def test_a_refused_fork_leaves_no_helper_and_checks_alone(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    forks: list[int] = []
    real_fork = os.fork

    def fork_once() -> int:
        if forks:  # the second helper is refused (with 2 workers: the first and only one)
            raise OSError("Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr("spec.checker.os.fork", fork_once if workers == 3 else _refuse)
    model, bounds = PARALLEL_CASES["late invariant"]()
    together: CheckResult[Any, Any] = check(model, workers=workers, parallel_from=1, **bounds)
    assert summary(together) == summary(check(model, **bounds))
    for pid in forks:  # the helper that did start was reaped
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _refuse() -> int:
    raise OSError("Resource temporarily unavailable")
