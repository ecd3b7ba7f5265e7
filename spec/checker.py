"""A bounded, explicit-state, breadth-first model checker.

What it does
    Starting from the initial states, it applies every enabled action to every reachable
    state, level by level (breadth first), remembering each distinct state once. Every new
    state is checked against the model's invariants and every transition against its step
    properties. Because exploration is breadth first, the first violation found has a
    shortest trace from an initial state; the checker stops there and returns that trace.

Bounds
    `max_depth` bounds the trace length; the model's own configuration bounds the data
    (records, crashes, elections), which usually makes the space finite, so a run either
    finds a violation, exhausts the space (`complete`), or stops at the depth bound.

Exact states, not fingerprints
    Seen states are remembered whole (a dictionary keyed by the state, whose hash each
    state caches), so a hash collision costs one equality test and can never hide a state.
    TLC instead stores 64-bit fingerprints and reports the probability that a collision
    skipped part of the space; here the states are kept anyway to print traces, so a
    fingerprint would save no memory and no time worth that risk.

Symmetry
    A model may give `canonical`, a function mapping a state to a representative of its
    symmetry class (for instance sorting interchangeable members). States are deduplicated
    on that key. It is only sound when the properties and the transition relation are
    invariant under the symmetry; the partition spec has none to exploit (elections follow
    the replica assignment order), so it passes none.

Modelled on TLC's breadth-first mode and stateright's `spawn_bfs`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

State = TypeVar("State", bound=Hashable)
Action = TypeVar("Action")


@dataclass(frozen=True)
class Model(Generic[State, Action]):
    """What the checker needs to know about a state machine."""

    initial_states: tuple[State, ...]
    candidate_actions: Callable[[State], Iterable[Action]]
    step: Callable[[State, Action], State | None]  # None: the action is not enabled
    invariants: Mapping[str, Callable[[State], bool]]
    step_properties: Mapping[str, Callable[[State, State], bool]] = field(default_factory=dict)
    witnesses: Mapping[str, Callable[[State], bool]] = field(default_factory=dict)
    canonical: Callable[[State], Hashable] | None = None


@dataclass(frozen=True)
class TraceStep(Generic[State, Action]):
    """One step of a trace: the action taken (None for the initial state) and the state after."""

    action: Action | None
    state: State


@dataclass(frozen=True)
class Violation(Generic[State, Action]):
    """A property that fails, with a shortest trace that shows it."""

    property_name: str
    kind: str  # "invariant" (fails in the last state) or "step" (fails on the last transition)
    trace: tuple[TraceStep[State, Action], ...]


@dataclass(frozen=True)
class CheckResult(Generic[State, Action]):
    """The outcome of one run."""

    violation: Violation[State, Action] | None
    distinct_states: int
    transitions: int  # enabled actions applied, including those leading to known states
    depth: int  # the deepest level reached
    complete: bool  # True when every reachable state (within the model's bounds) was explored
    seconds: float
    seconds_to_violation: float | None
    witnesses_reached: Mapping[str, bool]

    @property
    def states_per_second(self) -> float:
        """Distinct states discovered per second of checking."""
        return self.distinct_states / self.seconds if self.seconds > 0 else float(self.distinct_states)


ProgressCallback = Callable[[int, int], None]
"""Called now and then with (distinct states so far, current depth)."""


def _first_failing(properties: Mapping[str, Callable[[State], bool]], state: State) -> str | None:
    for name, holds in properties.items():
        if not holds(state):
            return name
    return None


def check(
    model: Model[State, Action],
    max_depth: int,
    max_states: int | None = None,
    progress: ProgressCallback | None = None,
) -> CheckResult[State, Action]:
    """Explore `model` breadth first up to `max_depth` steps and return the result.

    Stops at the first violation (its trace is a shortest one), when the state space is
    exhausted, at the depth bound, or after `max_states` distinct states.
    """
    # Every state reached is kept until the end, so the cyclic garbage collector would
    # traverse an ever larger heap again and again (about a tenth of the run) to find
    # nothing: immutable states hold no reference cycles. Pause it while exploring.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(model, max_depth, max_states, progress)
    finally:
        if collecting:
            gc.enable()


def _explore(
    model: Model[State, Action],
    max_depth: int,
    max_states: int | None,
    progress: ProgressCallback | None,
) -> CheckResult[State, Action]:
    started = time.perf_counter()
    key_of: Callable[[State], Hashable] = model.canonical or (lambda state: state)
    index_of: dict[Hashable, int] = {}
    states: list[State] = []
    parents: list[int] = []
    via: list[Action | None] = []
    witnesses_left = dict(model.witnesses)
    witnesses_reached = dict.fromkeys(model.witnesses, False)
    transitions = 0

    def trace_to(index: int) -> tuple[TraceStep[State, Action], ...]:
        steps: list[TraceStep[State, Action]] = []
        while index >= 0:
            steps.append(TraceStep(via[index], states[index]))
            index = parents[index]
        return tuple(reversed(steps))

    def finish(
        violation: Violation[State, Action] | None, depth: int, complete: bool
    ) -> CheckResult[State, Action]:
        elapsed = time.perf_counter() - started
        return CheckResult(
            violation,
            len(states),
            transitions,
            depth,
            complete,
            elapsed,
            elapsed if violation else None,
            witnesses_reached,
        )

    def admit(
        state: State, parent: int, action: Action | None
    ) -> tuple[int, Violation[State, Action] | None]:
        index = len(states)
        states.append(state)
        parents.append(parent)
        via.append(action)
        if witnesses_left:
            for name, reached in list(witnesses_left.items()):
                if reached(state):
                    witnesses_reached[name] = True
                    del witnesses_left[name]
        failing = _first_failing(model.invariants, state)
        if failing is not None:
            return index, Violation(failing, "invariant", trace_to(index))
        return index, None

    frontier: list[int] = []
    for initial in model.initial_states:
        key = key_of(initial)
        if key in index_of:
            continue
        index, violation = admit(initial, -1, None)
        index_of[key] = index
        if violation is not None:
            return finish(violation, 0, False)
        frontier.append(index)

    # Bound once: the loop below runs once per transition.
    candidate_actions, step, canonical = model.candidate_actions, model.step, model.canonical
    step_properties = tuple(model.step_properties.items())
    depth = 0
    while frontier and depth < max_depth:
        depth += 1
        next_frontier: list[int] = []
        for parent in frontier:
            state = states[parent]
            for action in candidate_actions(state):
                successor = step(state, action)
                if successor is None:
                    continue
                transitions += 1
                for name, holds in step_properties:
                    if not holds(state, successor):
                        steps = (*trace_to(parent), TraceStep(action, successor))
                        return finish(Violation(name, "step", steps), depth, False)
                # One dictionary probe both asks "seen before?" and claims the next index.
                key = successor if canonical is None else canonical(successor)
                index = len(states)
                if index_of.setdefault(key, index) != index:
                    continue
                _, violation = admit(successor, parent, action)
                if violation is not None:
                    return finish(violation, depth, False)
                next_frontier.append(index)
                if max_states is not None and len(states) >= max_states:
                    return finish(None, depth, False)
            if progress is not None and len(states) % 4096 < 16:
                progress(len(states), depth)
        frontier = next_frontier
    return finish(None, depth, not frontier)
