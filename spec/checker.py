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
    TLC instead stores 64-bit fingerprints: with a uniform 64-bit fingerprint, the chance
    that n distinct states contain a colliding pair (one state, and all it leads to, wrongly
    skipped) is about n^2 / 2^65, 3e-8 for a million states. Python's `hash` is no such
    fingerprint: `hash(-1) == hash(-2)`, so two states that differ only by a -1 where the
    other has -2 collide for certain, and the spec holds both (KIP-848's member epochs -1
    and -2: a member that leaves, a static member that leaves for now). A true
    fingerprint (a digest of an encoding of the state) would cost more per transition than
    it saves. What exactness costs, measured: the seen-set's lookups (hash, and equality
    tests on transitions into known states) take 0.37 of 5 CPU-s for epoch-truncation and
    0.69 of 7.5 for zk-zombie-controller-fenced; a set of hashes would take 0.11 and 0.07,
    so fingerprints would save 5-10% of a check. The states are
    kept anyway, to print traces; they cost little memory, because a successor shares every
    part the action left alone with its parent (a compact encoding would copy those parts).

Where the time goes
    Measured on the scenarios (CPU seconds, one process): the checker's own loop is about
    6% of a check (epoch-truncation: 0.38 of 6 CPU-s when the successors are looked up
    instead of computed), the invariants and step properties 8-18%, and the machines'
    `candidate_actions` and `step`, with hashing the new states and comparing them with
    known ones, the remaining 75-89%: 10-50 microseconds per transition for the composed
    and controller machines, a few frozen-dataclass copies each. So the checker's rate is
    the spec's: `python -m bench.model_check` prints it per scenario.

Symmetry
    A model may give `canonical`, a function mapping a state to a representative of its
    symmetry class (for instance sorting interchangeable members). States are deduplicated
    on that key. It is only sound when the properties and the transition relation are
    invariant under the symmetry. No machine of the spec has interchangeable brokers or
    members: leader elections take the first eligible replica in assignment order (the
    partition, both controllers, as Kafka's election strategies and `PartitionChangeBuilder`
    do), and the group assignors order members (by member id, or group instance id), so
    renaming brokers or members changes what happens next. The composed KRaft model passes
    a `canonical` that merges states differing only in metadata-log offsets
    (`spec.replication_with_controller.canonical`).

Two cores (`workers`)
    With `workers=N`, once a level's frontier is large enough the checker forks N-1 helper
    processes. Every process keeps the explored graph with the same indices; each level,
    every process expands its share of the frontier (the states it found itself, evened out)
    and checks invariants on what it found new, then all exchange only the *names* of their
    new states (frontier position, candidate-action ordinal, key hash): a few integers, never
    a pickled state. Each process merges all names in sequential order, by (frontier
    position, ordinal), and admits exactly the states the one-process search admits, with the
    same indices and parents, so the counts, the counterexample and the witnesses are
    identical (the first violation in that order is the sequential checker's first: a state
    new to the search is new to the process that generated it). A state another process
    found is built here (its action applied to its parent) only when this process must
    expand it, compare it with a state of the same hash, or print it in a trace. Helpers are
    ordinary forks of the checking process (POSIX only; elsewhere, or when the system refuses
    a process, the check runs in one process). Measured in CPU seconds of each process: on
    epoch-truncation each of two processes expands for 2.9 CPU-s where one process takes 6.1
    in all (a second idle core saves at most a third); on zk-zombie-controller-fenced each
    takes 7.0 against 7.5, because each rebuilds about 38,000 states the other found, most of
    them to compare a state both found in the same level (equal hashes).

Modelled on TLC's breadth-first mode and stateright's `spawn_bfs`.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import itertools
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from typing import Any, Generic, TypeVar, cast

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


def _first_failing(properties: Iterable[tuple[str, Callable[[State], bool]]], state: State) -> str | None:
    for name, holds in properties:
        if not holds(state):
            return name
    return None


PARALLEL_FROM = 2048
"""Smallest frontier worth forking helpers for: below it a level takes milliseconds."""


def default_workers() -> int:
    """Processes for a check: the cores this process may use that are idle now (one-minute
    load average), at most four. On busy cores the processes wait for each other at every
    level, and each process builds some states the others found, so more cores give less
    and less."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(round(cores - load), 4))


def check(
    model: Model[State, Action],
    max_depth: int,
    max_states: int | None = None,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    parallel_from: int = PARALLEL_FROM,
) -> CheckResult[State, Action]:
    """Explore `model` breadth first up to `max_depth` steps and return the result.

    Stops at the first violation (its trace is a shortest one), when the state space is
    exhausted, at the depth bound, or after `max_states` distinct states. `workers` > 1
    explores the levels whose frontier has at least `parallel_from` states in that many
    processes, with the same result (see "Two cores" above).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if not hasattr(os, "fork"):
        workers = 1
    # Every state reached is kept until the end, so the cyclic garbage collector would
    # traverse an ever larger heap again and again (about a tenth of the run) to find
    # nothing: immutable states hold no reference cycles. Pause it while exploring.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(model, max_depth, max_states, progress, workers, parallel_from)
    finally:
        if collecting:
            gc.enable()


def _explore(
    model: Model[State, Action],
    max_depth: int,
    max_states: int | None,
    progress: ProgressCallback | None,
    workers: int,
    parallel_from: int,
) -> CheckResult[State, Action]:
    started = time.perf_counter()
    index_of: dict[Hashable, int] = {}
    states: list[State] = []
    parents: list[int] = []
    via: list[Action | None] = []
    witnesses_left = dict(model.witnesses)
    witnesses_reached = dict.fromkeys(model.witnesses, False)
    invariants = tuple(model.invariants.items())

    def trace_to(index: int) -> tuple[TraceStep[State, Action], ...]:
        steps: list[TraceStep[State, Action]] = []
        while index >= 0:
            steps.append(TraceStep(via[index], states[index]))
            index = parents[index]
        return tuple(reversed(steps))

    def finish(
        violation: Violation[State, Action] | None, depth: int, complete: bool, transitions: int
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

    def reach_witnesses(state: State) -> None:
        for name, reached in list(witnesses_left.items()):
            if reached(state):
                witnesses_reached[name] = True
                del witnesses_left[name]

    frontier: list[int] = []
    for initial in model.initial_states:
        key = initial if model.canonical is None else model.canonical(initial)
        if key in index_of:
            continue
        index = index_of[key] = len(states)
        states.append(initial)
        parents.append(-1)
        via.append(None)
        reach_witnesses(initial)
        failing = _first_failing(invariants, initial)
        if failing is not None:
            return finish(Violation(failing, "invariant", trace_to(index)), 0, False, 0)
        frontier.append(index)

    # The loop below runs once per transition: everything it uses is a local name, and a
    # new state is admitted inline (no call beyond the model's own functions).
    candidate_actions, step, canonical = model.candidate_actions, model.step, model.canonical
    step_properties = tuple(model.step_properties.items())
    claim = index_of.setdefault
    add_state, add_parent, add_action = states.append, parents.append, via.append
    limit = max_states if max_states is not None else sys.maxsize
    transitions = 0
    depth = 0
    while frontier and depth < max_depth:
        if workers > 1 and len(frontier) >= parallel_from:
            graph = _Graph(
                model,
                cast("list[State | None]", states),  # only appended to from here on
                parents,
                via,
                index_of,
                witnesses_left,
                witnesses_reached,
                transitions,
                hashes={hash(key) for key in index_of},
            )
            # Nothing may run between the fork and the `with`: a helper must never leave
            # it other than through os._exit (it would return into the caller's code).
            team = _Team.fork(workers)
            if team is None:
                workers = 1  # the system refused a process: go on alone, and do not ask again
                continue
            with team:
                outcome = _explore_in_parallel(
                    model, team, graph, frontier, depth, max_depth, max_states, progress
                )
            return finish(outcome.violation, outcome.depth, outcome.complete, graph.transitions)
        depth += 1
        next_frontier: list[int] = []
        extend_frontier = next_frontier.append
        index = len(states)  # the index the next new state gets
        for parent in frontier:
            state = states[parent]
            for action in candidate_actions(state):
                successor = step(state, action)
                if successor is None:
                    continue
                transitions += 1
                for name, holds_on_step in step_properties:
                    if not holds_on_step(state, successor):
                        steps = (*trace_to(parent), TraceStep(action, successor))
                        return finish(Violation(name, "step", steps), depth, False, transitions)
                # One dictionary probe both asks "seen before?" and claims the next index.
                if claim(successor if canonical is None else canonical(successor), index) != index:
                    continue
                add_state(successor)
                add_parent(parent)
                add_action(action)
                if witnesses_left:
                    reach_witnesses(successor)
                for name, holds in invariants:
                    if not holds(successor):
                        return finish(
                            Violation(name, "invariant", trace_to(index)), depth, False, transitions
                        )
                extend_frontier(index)
                index += 1
                if index >= limit:
                    return finish(None, depth, False, transitions)
            if progress is not None and index % 4096 < 16:
                progress(index, depth)
        frontier = next_frontier
    return finish(None, depth, not frontier, transitions)


# ---------------------------------------------------------------------------------------
# Several processes (see "Two cores" in the module docstring)
# ---------------------------------------------------------------------------------------

Key = tuple[int, int]
"""Where a transition is in the sequential order: (frontier position, candidate ordinal)."""


@dataclass
class _Graph(Generic[State, Action]):
    """The explored graph as each process keeps it; the search appends to it.

    A state another process found is first kept by *name* only (`names`: the ordinal of its
    action among its parent's candidates) and built by applying that action when this
    process needs it: to expand it, to tell it apart from an equal-hash state, for a trace.
    About half of them never are.
    """

    model: Model[State, Action]
    states: list[State | None]  # None: not built in this process (see `names`)
    parents: list[int]
    via: list[Action | None]
    index_of: dict[Hashable, int]  # key -> index, of the states built in this process
    witnesses_left: dict[str, Callable[[State], bool]]
    witnesses_reached: dict[str, bool]
    transitions: int
    names: dict[int, int] = field(default_factory=dict)  # unbuilt index -> action ordinal
    unbuilt: dict[int, list[int]] = field(default_factory=dict)  # key hash -> unbuilt indices
    hashes: set[int] = field(default_factory=set)  # the key hash of every state admitted

    def key(self, state: State) -> Hashable:
        canonical = self.model.canonical
        return state if canonical is None else canonical(state)

    def successor(self, parent: int, ordinal: int) -> tuple[Action, State]:
        """Apply the `ordinal`-th candidate action of the state at `parent` (another process
        took it: a state's candidate actions are the same in every process)."""
        state = self.state(parent)
        action = next(itertools.islice(self.model.candidate_actions(state), ordinal, None))
        successor = self.model.step(state, action)
        assert successor is not None, "another process took an action that is not enabled here"
        return action, successor

    def state(self, index: int) -> State:
        """The state at `index`, built now if only its name was known."""
        state = self.states[index]
        if state is not None:
            return state
        action, built = self.successor(self.parents[index], self.names.pop(index))
        key = self.key(built)
        waiting = self.unbuilt[hash(key)]
        waiting.remove(index)
        if not waiting:
            del self.unbuilt[hash(key)]
        self.states[index], self.via[index] = built, action
        self.index_of[key] = index
        return built

    def seen(self, key: Hashable, key_hash: int) -> bool:
        """Whether a state with this key was admitted (building the unbuilt ones of the same
        hash to compare them: equality, not the hash, decides)."""
        if key in self.index_of:
            return True
        if key_hash in self.unbuilt:
            for index in list(self.unbuilt[key_hash]):
                self.state(index)
            return key in self.index_of
        return False

    def admit(self, parent: int, action: Action, state: State, key: Hashable, key_hash: int) -> int:
        index = len(self.states)
        self.states.append(state)
        self.parents.append(parent)
        self.via.append(action)
        self.index_of[key] = index
        self.hashes.add(key_hash)
        return index

    def admit_by_name(self, parent: int, ordinal: int, key_hash: int) -> int:
        index = len(self.states)
        self.states.append(None)
        self.parents.append(parent)
        self.via.append(None)
        self.names[index] = ordinal
        self.unbuilt.setdefault(key_hash, []).append(index)
        self.hashes.add(key_hash)
        return index

    def trace_to(self, index: int) -> tuple[TraceStep[State, Action], ...]:
        steps: list[TraceStep[State, Action]] = []
        while index >= 0:
            state = self.state(index)
            steps.append(TraceStep(self.via[index], state))
            index = self.parents[index]
        return tuple(reversed(steps))


@dataclass(frozen=True)
class _Share:
    """What one process found in its share of a level, without the states themselves."""

    # (position, ordinal, enabled transitions of that position up to it, key hash) of each
    # state new to this process, in order
    found: list[tuple[int, int, int, int]]
    enabled: dict[int, int]  # position -> enabled transitions, for the positions finished
    # the first violation: (position, ordinal, enabled transitions up to it, kind, property)
    violation: tuple[int, int, int, str, str] | None
    witnesses: dict[str, Key]  # witness -> key of the first new state that meets it


@dataclass(frozen=True)
class _Outcome(Generic[State, Action]):
    violation: Violation[State, Action] | None
    depth: int
    complete: bool = False  # every reachable state explored (never after a stop)


class _Team:
    """This process and its forked helpers: rank 0 is the caller, helpers have ranks 1..N-1.

    Used as a context manager: a helper leaves the `with` block only through `os._exit`, so
    it never returns into the caller's code; the caller closes the pipes (a helper still
    waiting then exits) and reaps the helpers.
    """

    def __init__(self, rank: int, size: int, connections: list[Connection], pids: list[int]) -> None:
        self.rank = rank
        self.size = size
        self._connections = connections  # rank 0: one per helper; a helper: the one to rank 0
        self._pids = pids

    @classmethod
    def fork(cls, size: int) -> _Team | None:
        """The team, or None when the system refuses a process or a pipe (then no helper is
        left running and the caller goes on alone)."""
        pids: list[int] = []
        try:
            pipes = [Pipe() for _ in range(size - 1)]
        except OSError:
            return None
        for rank in range(1, size):
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns about fork in a multi-threaded process (a progress
                    # spinner's thread): the helper only computes and talks over its pipe.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
            except OSError:
                for parent_end, child_end in pipes:
                    parent_end.close()
                    child_end.close()  # the helpers started get EOF and leave
                for started in pids:
                    os.waitpid(started, 0)
                return None
            if pid == 0:
                mine = pipes[rank - 1][1]
                for index, (parent_end, child_end) in enumerate(pipes):
                    parent_end.close()
                    if index != rank - 1:
                        child_end.close()
                return cls(rank, size, [mine], [])
            pids.append(pid)
        for _, child_end in pipes:
            child_end.close()
        return cls(0, size, [parent_end for parent_end, _ in pipes], pids)

    def exchange(self, share: _Share) -> list[_Share]:
        """Every process's share of this level, in rank order."""
        if self.rank:
            connection = self._connections[0]
            connection.send(("share", share))
            others: list[_Share | None] = connection.recv()
            return [share if found is None else found for found in others]
        everyone = [share]
        for rank, connection in enumerate(self._connections, start=1):
            try:
                kind, payload = connection.recv()
            except EOFError:
                raise RuntimeError(f"model checker helper {rank} died") from None
            if kind == "error":
                raise RuntimeError(f"model checker helper {rank} failed:\n{payload}")
            everyone.append(payload)
        for rank, connection in enumerate(self._connections, start=1):
            # Each helper has its own share already: send it the others' only.
            connection.send([None if index == rank else found for index, found in enumerate(everyone)])
        return everyone

    def __enter__(self) -> _Team:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: Any) -> None:
        if self.rank:
            code = 0
            if error is not None and not isinstance(error, EOFError):  # EOF: the caller is gone
                code = 1
                with contextlib.suppress(OSError):  # the caller may be gone already
                    self._connections[0].send(("error", "".join(traceback.format_exception(error))))
            os._exit(code)
        for connection in self._connections:
            connection.close()
        for pid in self._pids:
            os.waitpid(pid, 0)


def _expand_share(
    model: Model[State, Action], graph: _Graph[State, Action], frontier: Sequence[int], mine: Iterable[int]
) -> tuple[_Share, dict[Key, tuple[Action, State]]]:
    """Expand the frontier positions `mine` (in increasing order) as the one-process search
    would, stopping at the first violation."""
    candidate_actions, step, canonical = model.candidate_actions, model.step, model.canonical
    step_properties = tuple(model.step_properties.items())
    invariants = tuple(model.invariants.items())
    index_of, unbuilt = graph.index_of, graph.unbuilt
    witnesses = dict(graph.witnesses_left)
    fresh: set[Hashable] = set()
    found: list[tuple[int, int, int, int]] = []
    own: dict[Key, tuple[Action, State]] = {}
    enabled: dict[int, int] = {}
    first_witness: dict[str, Key] = {}

    def share(violation: tuple[int, int, int, str, str] | None = None) -> _Share:
        return _Share(found, enabled, violation, first_witness)

    for position in mine:
        state = graph.state(frontier[position])
        count = 0
        for ordinal, action in enumerate(candidate_actions(state)):
            successor = step(state, action)
            if successor is None:
                continue
            count += 1
            for name, holds in step_properties:
                if not holds(state, successor):
                    return share((position, ordinal, count, "step", name)), own
            key = successor if canonical is None else canonical(successor)
            if key in index_of or key in fresh:
                continue
            key_hash = hash(key)
            if key_hash in unbuilt and graph.seen(key, key_hash):
                continue
            fresh.add(key)
            found.append((position, ordinal, count, key_hash))
            own[position, ordinal] = (action, successor)
            if witnesses:
                for name, reached in list(witnesses.items()):
                    if reached(successor):
                        first_witness[name] = (position, ordinal)
                        del witnesses[name]
            failing = _first_failing(invariants, successor)
            if failing is not None:
                return share((position, ordinal, count, "invariant", failing)), own
        enabled[position] = count
    return share(), own


def _tagged(found: list[tuple[int, int, int, int]], rank: int) -> Iterator[tuple[int, int, int, int, int]]:
    for position, ordinal, count, key_hash in found:
        yield position, ordinal, count, key_hash, rank


def _explore_in_parallel(
    model: Model[State, Action],
    team: _Team,
    graph: _Graph[State, Action],
    frontier: list[int],
    depth: int,
    max_depth: int,
    max_states: int | None,
    progress: ProgressCallback | None,
) -> _Outcome[State, Action]:
    """The remaining levels, explored by every process of `team` (each runs this)."""
    # Each process expands the states it found itself (it has built them) and knows the
    # others' by name only; the first level is dealt out by position.
    mine: Iterable[int] = range(team.rank, len(frontier), team.size)
    while frontier and depth < max_depth:
        depth += 1
        share, own = _expand_share(model, graph, frontier, mine)
        shares = team.exchange(share)
        violations = [found.violation for found in shares if found.violation is not None]
        violation = min(violations) if violations else None
        limit: Key | None = violation[:2] if violation else None

        # Admit the new states in the sequential order: by (position, ordinal) across shares.
        merged = heapq.merge(*(_tagged(found.found, rank) for rank, found in enumerate(shares)))
        next_frontier: list[int] = []
        finders: list[int] = []  # for each next-frontier position, the rank that found it
        stop: tuple[int, int, int] | None = None
        violating: int | None = None  # the index of the state that breaks an invariant
        for position, ordinal, count, key_hash, rank in merged:
            if limit is not None and (position, ordinal) > limit:
                break
            parent = frontier[position]
            if rank != team.rank and key_hash not in graph.hashes:
                # No admitted state has this hash: new for sure; built only when needed.
                index = graph.admit_by_name(parent, ordinal, key_hash)
            else:
                action, successor = own.get((position, ordinal)) or graph.successor(
                    frontier[position], ordinal
                )
                key = graph.key(successor)
                if graph.seen(key, key_hash):
                    continue
                index = graph.admit(parent, action, successor, key, key_hash)
            finders.append(rank)
            next_frontier.append(index)
            if violation is not None and (position, ordinal) == violation[:2]:
                violating = index
            if max_states is not None and len(graph.states) >= max_states:
                stop = (position, ordinal, count)
                limit = (position, ordinal)
                break
        _account(graph, shares, stop or (violation[:3] if violation else None), limit)
        if progress is not None and team.rank == 0:
            progress(len(graph.states), depth)

        if violation is not None and (stop is None or violation[:2] <= stop[:2]):
            position, ordinal, _, kind, name = violation
            if kind == "step":
                action, successor = own.get((position, ordinal)) or graph.successor(
                    frontier[position], ordinal
                )
                trace = (*graph.trace_to(frontier[position]), TraceStep(action, successor))
            else:
                assert violating is not None, "a state that breaks an invariant is new to the search"
                trace = graph.trace_to(violating)
            return _Outcome(Violation(name, kind, trace), depth)
        if stop is not None:
            return _Outcome(None, depth)
        frontier, mine = next_frontier, _deal(finders, team.size)[team.rank]
    return _Outcome(None, depth, complete=not frontier)


def _deal(finders: list[int], size: int) -> list[list[int]]:
    """Which next-frontier positions each rank expands: those it found (it has built them),
    evened out to at most ceil(n / size) each by moving the last positions of the largest
    shares to the smallest (the receiver builds those). The same in every process."""
    shares: list[list[int]] = [[] for _ in range(size)]
    for position, rank in enumerate(finders):
        shares[rank].append(position)
    target = -(-len(finders) // size)
    spare: list[int] = []
    for share in shares:
        while len(share) > target:
            spare.append(share.pop())
    for share in shares:
        while len(share) < target and spare:
            share.append(spare.pop())
    return [sorted(share) for share in shares]  # a process expands in increasing order


def _account(
    graph: _Graph[State, Action], shares: list[_Share], end: tuple[int, int, int] | None, limit: Key | None
) -> None:
    """Count the level's transitions and witnesses up to where the one-process search
    stops: `end` is (position, ordinal, enabled transitions of that position up to it)."""
    enabled: dict[int, int] = {}
    for found in shares:
        enabled.update(found.enabled)
    if end is None:
        graph.transitions += sum(enabled.values())
    else:
        graph.transitions += sum(n for position, n in enabled.items() if position < end[0]) + end[2]
    for name in list(graph.witnesses_left):
        keys = [found.witnesses[name] for found in shares if name in found.witnesses]
        if keys and (limit is None or min(keys) <= limit):
            graph.witnesses_reached[name] = True
            del graph.witnesses_left[name]
