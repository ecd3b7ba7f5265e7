"""What the exhaustive suites share: the spec's states within a depth as paths, and the loop
that replays them on a target.

An exhaustive suite searches a state machine of the spec breadth first from a scenario's
initial state, keeps a shortest path to every leaf of the search tree (a state that found no
new state; the leaves' prefixes reach every other state), and replays each path on the target
beside the reference, with the near misses of every state it has not tried them in before.
What differs between the machines is only how one path is replayed (`ReplayOnce`): which
requests an action becomes, and what is compared. The replication suite (`exhaustive`), the
classic group coordinator's (`coordinator_exhaustive`) and the KIP-848 coordinator's
(`consumer_group_exhaustive`) use this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from spec.machines import Scenario

Config = TypeVar("Config")
State = TypeVar("State", bound=Hashable)
Action = TypeVar("Action")
Seen = TypeVar("Seen", bound=Hashable)


@dataclass(frozen=True, slots=True)
class ScenarioPaths(Generic[Config, Action]):
    """One scenario's leaf paths within a depth."""

    scenario: str
    config: Config
    states: int  # distinct spec states within the depth
    paths: tuple[tuple[Action, ...], ...]


@dataclass(frozen=True)
class ExhaustiveResult:
    """The outcome of one exhaustive run."""

    target: str
    depth: int
    scenarios: tuple[str, ...]
    states: int  # distinct spec states covered, over every scenario
    steps: int  # commands given to the target (path steps plus near misses)
    passed: bool
    failure: str | None
    seconds: float


def leaf_paths(
    start: State,
    candidate_actions: Callable[[State], Iterable[Action]],
    step: Callable[[State, Action], State | None],
    depth: int,
) -> tuple[int, tuple[tuple[Action, ...], ...]]:
    """Breadth-first search from `start`: the number of distinct states within `depth`
    actions and the shortest paths to the leaves of the search tree."""
    parent: dict[State, tuple[State, Action] | None] = {start: None}
    inner: set[State] = set()
    frontier = [start]
    for _ in range(depth):
        discovered: list[State] = []
        for state in frontier:
            for action in candidate_actions(state):
                successor = step(state, action)
                if successor is None or successor in parent:
                    continue
                parent[successor] = (state, action)
                inner.add(state)
                discovered.append(successor)
        frontier = discovered
    return len(parent), tuple(_path_to(parent, state) for state in parent if state not in inner)


def _path_to(parent: dict[State, tuple[State, Action] | None], state: State) -> tuple[Action, ...]:
    actions: list[Action] = []
    link = parent[state]
    while link is not None:
        state, action = link
        actions.append(action)
        link = parent[state]
    return tuple(reversed(actions))


def scenario_paths(
    scenarios: Sequence[Scenario[Config]],
    depth: int,
    search: Callable[[Config, int], tuple[int, tuple[tuple[Action, ...], ...]]],
) -> Iterator[ScenarioPaths[Config, Action]]:
    """Each scenario's leaf paths within `depth`, found by `search(config, depth)`."""
    for scenario in scenarios:
        states, paths = search(scenario.config, depth)
        yield ScenarioPaths(scenario.name, scenario.config, states, paths)


ReplayOnce = Callable[[Config, tuple[Action, ...], "set[Seen] | None"], tuple[str | None, int]]
"""Replays one path on the target beside the reference: (config, path, the states whose near
misses were tried, or None to try none) -> (a divergence report or None, commands given)."""


def replay_path(
    replay_once: ReplayOnce[Config, Action, Seen],
    config: Config,
    path: tuple[Action, ...],
    checked: set[Seen],
) -> tuple[str | None, int]:
    """Replay `path` with the near misses of each state not in `checked`; a divergence is
    reported from a replay of the path alone when that diverges too, so the commands listed
    are the path's own, not the refused actions tried along it."""
    failure, given = replay_once(config, path, checked)
    if failure is not None:
        alone, _ = replay_once(config, path, None)
        failure = alone or failure
    return failure, given


def replay_scenarios(
    target: str,
    depth: int,
    covered: Iterable[ScenarioPaths[Config, Action]],
    replay_once: ReplayOnce[Config, Action, Seen],
    progress: Callable[[str, int, int], None] | None = None,
    started: float | None = None,
    steps: int = 0,
) -> ExhaustiveResult:
    """Replay every scenario's paths with `replay_once` (after `steps` commands given
    before, since `started`); stop at the first divergence."""
    started = time.perf_counter() if started is None else started
    states = 0
    names: list[str] = []
    for scenario in covered:
        names.append(scenario.scenario)
        states += scenario.states
        checked: set[Seen] = set()
        for done, path in enumerate(scenario.paths, 1):
            failure, given = replay_path(replay_once, scenario.config, path, checked)
            steps += given
            if failure is not None:
                report = f"scenario {scenario.scenario}, depth {depth}:\n{failure}"
                return ExhaustiveResult(
                    target, depth, tuple(names), states, steps, False, report, time.perf_counter() - started
                )
            if progress is not None:
                progress(scenario.scenario, done, len(scenario.paths))
    return ExhaustiveResult(
        target, depth, tuple(names), states, steps, True, None, time.perf_counter() - started
    )
