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
    the spec's: `python -m bench.model_check` prints it per scenario. Its `--floor` model,
    whose step only copies one frozen part and builds the state around it, costs 26,000
    instructions per transition (callgrind; about 4 microseconds, 65,000 states per CPU
    second at its 3.7 transitions per state): the least a transition costs in this design,
    loop, hashing and lookup included. The scenarios' transitions cost 2.7-7 times that
    (72,000-174,000 instructions), at 1.8-5.1 transitions per state.

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
    With `workers=N`, once a level's frontier has `parallel_from` states the checker forks
    N-1 helper processes, which share the rest of the search as the multi-core breadth-first
    modes of TLC, Murphi and Spin do: every state has one *owner*, the process `hash(key) % N`,
    which alone decides whether it is new, keeps it, checks its invariants and witnesses and
    expands it. A level is explored in rounds of at most ROUND_POSITIONS frontier positions.
    In a round, each process expands the frontier states it owns, in sequential order; it
    keeps the successors it owns and sends each other one to its owner unless it knows it is
    not new (admitted before the fork, or sent already). The owner deduplicates exactly, with
    a dictionary of whole keys as one process does. States cross as pickle streams, one each
    way between two processes, that remember every object already sent: a successor shares
    most of its parts with states sent before, so only its new parts cross (50-120 bytes a
    state on the scenarios), with a reducer for the spec's frozen dataclasses 3x cheaper than
    pickle's own. Then every process tells all the others the *sequential keys* of the new
    states it owns, (parent's frontier position, candidate-action ordinal) as one integer,
    with its first violation, the first key meeting each witness and its enabled transitions.
    So per round there are two exchanges, per state about one integer for all and, for a
    third to two fifths of the states, their new parts for their owner.

    Why the answer is the one-process search's: that search admits a state at the first
    transition, in (position, ordinal) order, that reaches its key. Its owner sees every
    transition of the round reaching the key that its sender did not know to be old, and
    keeps the smallest; the rounds go in position order, so a key admitted in an earlier
    round is known in later ones. Merging everyone's sequential keys gives every process the
    level's order, hence each state's frontier position and the next level's keys. The stop is
    the first in that order of: a transition breaking a step property, a new state breaking an
    invariant, the state reaching `max_states`; every process decides it from the same
    summaries, and counts the transitions (every process's up to its position, plus those at
    it) and the witnesses up to it. The trace is rebuilt by name: each level's keys give a
    state's parent position and action ordinal, back to the frontier at the fork, from which
    the caller applies the actions again (candidate actions and steps are functions). States,
    transitions, depth, witnesses and the counterexample are exactly those of `workers=1`
    (tested on puzzles with every bound, and on the replication scenarios; `bench.model_check`
    compares every scenario). Helpers are ordinary forks of the checking process (POSIX
    only; elsewhere, or when the system refuses a process, the check runs in one process).

    What it costs, measured: a third to two fifths of the states cross to their owner, about
    3 objects each on epoch-truncation; each crossing object is reduced, pickled, rebuilt
    through its constructor and hashed again, and compared member by member where one process
    would often have met the same object (identity). With the spec's memoized helpers
    computed in both processes, two processes do about a tenth more work than one
    (callgrind, kip-1251-range-commit: 5,233 M instructions in one process; 3,020 M on the
    caller, before-the-fork part included, and 2,840 M on the helper: 1.73x on the critical
    path). Measured at load 1.0-1.9 (one core mostly taken by other work), `bench.model_check
    --workers 2` on the 12 largest scenarios: 0.64-1.20x one process's wall clock, the
    processes' CPU 0.93-1.65x (two processes sharing one free core, and inflated by it); two
    truly idle cores were never available to measure. The previous
    design, where every process admitted every state and built another's when it had to
    compare or expand it, saved a third at most. What would take more: fewer crossings (a
    partition on a part of the state that few actions change, as Lerda and Sisto's
    distributed SPIN does, if it splits evenly), or cheaper ones (a flat state encoding).

Modelled on TLC's breadth-first mode and stateright's `spawn_bfs`.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import inspect
import io
import itertools
import operator
import os
import pickle
import signal
import sys
import time
import traceback
import warnings
from array import array
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from typing import Any, Generic, TypeVar

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
    # with several processes: (CPU seconds, wall-clock seconds waiting for the others) of each
    # process from the fork on, the caller first; empty when one process checked alone
    processes: tuple[tuple[float, float], ...] = ()

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


PARALLEL_FROM = 128
"""Smallest frontier worth forking helpers for: below it a level takes a few milliseconds."""

ROUND_POSITIONS = 2048
"""Frontier positions the processes expand between two exchanges: the one-process search
may stop anywhere in a level (a violation), and the others learn of it at the end of the
round, so a round bounds the work done past the stop."""


def default_workers() -> int:
    """Processes for a check: the cores this process may use that are idle now (one-minute
    load average), at most four. On busy cores the processes wait for each other at the end
    of every round (a process that lost its core holds up the others), and two processes do
    about a tenth more work than one, so a busy core gives nothing."""
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
            prefix = _Prefix(
                states, frontier, index_of, transitions, depth, trace_to, witnesses_left, witnesses_reached
            )
            # Nothing may run between the fork and the `with`: a helper must never leave
            # it other than through os._exit (it would return into the caller's code).
            team = _Team.fork(workers)
            if team is None:
                workers = 1  # the system refused a process: go on alone, and do not ask again
                continue
            with team:
                outcome = _explore_in_parallel(model, team, prefix, max_depth, max_states, progress)
            elapsed = time.perf_counter() - started
            return CheckResult(
                outcome.violation,
                outcome.distinct_states,
                outcome.transitions,
                outcome.depth,
                outcome.complete,
                elapsed,
                elapsed if outcome.violation else None,
                witnesses_reached,
                outcome.processes,
            )
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

ORDINAL_BITS = 24
"""A transition's place in the sequential order is one integer, `position << ORDINAL_BITS |
ordinal` (its parent's frontier position, its action's candidate ordinal), so the order is
integer order and a level's keys travel as an array."""

_ORDINAL_MASK = (1 << ORDINAL_BITS) - 1


@dataclass(frozen=True)
class _Prefix(Generic[State, Action]):
    """What every process shares at the fork: the graph the one-process search built so far."""

    states: list[State]  # by index
    frontier: list[int]  # the indices of the level to expand next
    index_of: dict[Hashable, int]  # every key admitted so far
    transitions: int
    depth: int
    trace_to: Callable[[int], tuple[TraceStep[State, Action], ...]]
    witnesses_left: dict[str, Callable[[State], bool]]
    witnesses_reached: dict[str, bool]


@dataclass(frozen=True)
class _Outcome(Generic[State, Action]):
    violation: Violation[State, Action] | None
    distinct_states: int
    transitions: int
    depth: int
    complete: bool  # every reachable state explored (never after a stop)
    processes: tuple[tuple[float, float], ...]  # per rank: (CPU seconds, seconds waiting)


@dataclass(frozen=True)
class _Summary:
    """What one process tells all the others about a level once it has deduplicated its states."""

    found: bytes  # array('q') of the sequential keys of the new states it owns, in order
    enabled: int  # transitions enabled in its share of the frontier
    step_violation: tuple[int, int, str] | None  # (key, enabled transitions of its parent up to it, property)
    invariant_violation: tuple[int, int, str] | None  # (key, the same count, property)
    witnesses: dict[str, int]  # witness -> key of the first new state it owns that meets it


@dataclass(frozen=True)
class _Stop:
    """Where the one-process search stops within a level: at the transition `key`."""

    key: int
    kind: str  # "step", "invariant" (both violations) or "limit" (max_states reached)
    property_name: str = ""


def _dataclass_reducer(cls: type) -> Callable[[Any], tuple[Any, ...]] | None:
    """pickle's reduction of an instance of `cls` as (cls, its init fields) when `cls` is a
    frozen dataclass rebuilt by its constructor (None otherwise: pickle's own way).

    A frozen dataclass is a value, so calling its constructor with its init fields gives an
    equal object (fields left out of `__init__`, such as a cached hash, take their default
    again). Pickle's own way for a slotted dataclass calls the dataclass's generated
    `__getstate__`/`__setstate__`, which look the fields up on every call: about 3x slower.
    """
    if not dataclasses.is_dataclass(cls) or not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        return None
    if cls.__reduce_ex__ is not object.__reduce_ex__ or cls.__reduce__ is not object.__reduce__:
        return None  # the class says how it is pickled
    fields = dataclasses.fields(cls)
    names = [item.name for item in fields if item.init]
    rebuilt = all(
        item.init
        or item.default is not dataclasses.MISSING
        or item.default_factory is not dataclasses.MISSING
        for item in fields
    )
    try:
        parameters = list(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return None
    if not rebuilt or parameters != names:  # an InitVar, or an uninitialised field
        return None
    if not names:
        return lambda obj: (cls, ())
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (cls, (one(obj),))
    every = operator.attrgetter(*names)
    return lambda obj: (cls, every(obj))


class _Reducers(dict[type, Callable[[Any], tuple[Any, ...]]]):
    """A pickler's `dispatch_table` that makes each frozen dataclass's reducer when first met."""

    def __missing__(self, cls: type) -> Callable[[Any], tuple[Any, ...]]:
        reducer = _dataclass_reducer(cls)
        if reducer is None:
            raise KeyError(cls)  # the pickler then reduces the object its own way
        self[cls] = reducer
        return reducer


class _Codec:
    """The states exchanged with one other process, as two pickle streams (one each way) that
    remember every object already sent: a successor shares most of its parts with states sent
    before, and only its new parts cross (about 50-120 bytes a state on the scenarios)."""

    def __init__(self, reducers: _Reducers) -> None:
        self._out = io.BytesIO()
        self._pickler = pickle.Pickler(self._out, protocol=pickle.HIGHEST_PROTOCOL)
        self._pickler.dispatch_table = reducers
        self._in = io.BytesIO()
        self._unpickler = pickle.Unpickler(self._in)

    def encode(self, item: object) -> bytes:
        self._out.seek(0)
        self._out.truncate()
        self._pickler.dump(item)
        return self._out.getvalue()

    def decode(self, data: bytes) -> Any:
        self._in.seek(0)
        self._in.truncate()
        self._in.write(data)
        self._in.seek(0)
        return self._unpickler.load()


class _PeerGoneError(Exception):
    """Another process of the team failed (`report` is its traceback) or is gone (`report` empty)."""

    def __init__(self, rank: int, report: str) -> None:
        super().__init__(f"model checker helper {rank} " + (f"failed:\n{report}" if report else "died"))
        self.rank = rank


_DATA, _ERROR = b"D", b"E"


class _Team:
    """This process and its forked helpers, each connected to every other by a socket pair:
    rank 0 is the caller, helpers have ranks 1..N-1.

    Used as a context manager: a helper leaves the `with` block only through `os._exit`, so
    it never returns into the caller's code; the caller closes its connections (a helper
    still waiting then exits) and reaps the helpers.
    """

    def __init__(self, rank: int, size: int, peers: dict[int, Connection], pids: list[int]) -> None:
        self.rank = rank
        self.size = size
        self._peers = peers
        self._pids = pids
        self.waiting = 0.0  # wall-clock seconds spent in exchanges (waiting for the others)

    @classmethod
    def fork(cls, size: int) -> _Team | None:
        """The team, or None when the system refuses a process or a socket pair (then no
        helper is left running and the caller goes on alone)."""
        pairs: dict[tuple[int, int], tuple[Connection, Connection]] = {}
        try:
            for low, high in itertools.combinations(range(size), 2):
                pairs[low, high] = Pipe()
        except OSError:
            _close_all(pairs)
            return None
        pids: list[int] = []
        for rank in range(1, size):
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns about fork in a multi-threaded process (a progress
                    # spinner's thread): the helper only computes and talks over its sockets.
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
            except OSError:
                _close_all(pairs)  # the helpers started get EOF and leave
                for started in pids:
                    os.waitpid(started, 0)
                return None
            if pid == 0:
                return cls(rank, size, _keep_ends(pairs, rank), [])
            pids.append(pid)
        return cls(0, size, _keep_ends(pairs, 0), pids)

    def exchange(self, messages: Sequence[bytes]) -> list[bytes]:
        """Send `messages[peer]` to every other process and receive what each sent here
        (in rank order; this process's own slot is empty). Every pair talks in one global
        order, (low rank, high rank), the lower rank sending first, so a message larger than
        the socket's buffer never leaves two processes waiting on each other."""
        started = time.perf_counter()
        received = [b""] * self.size
        for peer in range(self.size):
            if peer == self.rank:
                continue
            if self.rank < peer:
                self._send(peer, messages[peer])
                received[peer] = self._receive(peer)
            else:
                received[peer] = self._receive(peer)
                self._send(peer, messages[peer])
        self.waiting += time.perf_counter() - started
        return received

    def gather(self, item: object) -> list[Any]:
        """Every process's `item`, in rank order."""
        blob = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        received = self.exchange([blob] * self.size)
        return [item if rank == self.rank else pickle.loads(data) for rank, data in enumerate(received)]

    def _send(self, peer: int, data: bytes) -> None:
        try:
            self._peers[peer].send_bytes(_DATA + data)
        except OSError:  # the peer is gone: say why, if it left word
            self._receive(peer)
            raise _PeerGoneError(peer, "") from None

    def _receive(self, peer: int) -> bytes:
        try:
            frame = self._peers[peer].recv_bytes()
        except (EOFError, OSError):
            raise _PeerGoneError(peer, "") from None
        if frame[:1] == _ERROR:
            raise _PeerGoneError(peer, frame[1:].decode())
        return frame[1:]

    def __enter__(self) -> _Team:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _: Any) -> None:
        if self.rank:
            code = 0
            caller_gone = isinstance(error, _PeerGoneError) and error.rank == 0
            if error is not None and not caller_gone:
                code = 1
                report = "".join(traceback.format_exception(error)).encode()
                with contextlib.suppress(OSError):  # the caller may be gone already
                    self._peers[0].send_bytes(_ERROR + report)
            os._exit(code)
        for connection in self._peers.values():
            connection.close()
        for pid in self._pids:
            if error is not None:  # a helper may be in the middle of a level: do not wait for it
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if isinstance(error, _PeerGoneError):
            raise RuntimeError(str(error)) from None


def _keep_ends(
    pairs: Mapping[tuple[int, int], tuple[Connection, Connection]], rank: int
) -> dict[int, Connection]:
    """Close every socket end but this rank's own (so a peer's exit is seen as end of file)."""
    mine: dict[int, Connection] = {}
    for (low, high), (low_end, high_end) in pairs.items():
        if rank == low:
            mine[high] = low_end
            high_end.close()
        elif rank == high:
            mine[low] = high_end
            low_end.close()
        else:
            low_end.close()
            high_end.close()
    return mine


def _close_all(pairs: Mapping[tuple[int, int], tuple[Connection, Connection]]) -> None:
    for low_end, high_end in pairs.values():
        low_end.close()
        high_end.close()


def _explore_in_parallel(
    model: Model[State, Action],
    team: _Team,
    prefix: _Prefix[State, Action],
    max_depth: int,
    max_states: int | None,
    progress: ProgressCallback | None,
) -> _Outcome[State, Action]:
    """The remaining levels, explored by every process of `team` (each runs this), a round
    of at most ROUND_POSITIONS frontier positions at a time (see "Two cores")."""
    started = time.process_time()
    canonical = model.canonical
    rank, size = team.rank, team.size
    mine: list[tuple[int, State]] = []  # (frontier position, state) of the frontier states owned here
    for position, index in enumerate(prefix.frontier):
        state = prefix.states[index]
        if hash(state if canonical is None else canonical(state)) % size == rank:
            mine.append((position, state))
    process = _Process(model, team, prefix.index_of)
    witnesses_left, witnesses_reached = prefix.witnesses_left, prefix.witnesses_reached
    levels: list[array[int]] = []  # per level after the fork: the keys of its states, in order
    state_count, transitions, depth = len(prefix.states), prefix.transitions, prefix.depth
    frontier_size = len(prefix.frontier)
    stop: _Stop | None = None
    while frontier_size and depth < max_depth and stop is None:
        depth += 1
        keys: list[int] = []  # of the level's new states, in sequential order
        new: list[tuple[int, int, State]] = []  # the level's new states owned here
        taken = 0
        for low in range(0, frontier_size, ROUND_POSITIONS):
            share_end = bisect.bisect_left(mine, low + ROUND_POSITIONS, lo=taken, key=operator.itemgetter(0))
            share, taken = mine[taken:share_end], share_end
            found, summaries, positions, counts = process.round(share, witnesses_left)
            admitted, stop = _decide(summaries, state_count, max_states)
            _reach(witnesses_left, witnesses_reached, summaries, stop)
            state_count += len(admitted)
            keys += admitted
            if stop is not None:
                transitions += _count_to(team, stop, positions, counts, found, summaries[rank].step_violation)
                break
            transitions += sum(summary.enabled for summary in summaries)
            new += found
        levels.append(array("q", keys))
        mine = [(bisect.bisect_left(keys, key), state) for key, _, state in new]
        frontier_size = len(keys)
        if progress is not None and rank == 0:
            progress(state_count, depth)
    times: list[tuple[float, float]] = team.gather((time.process_time() - started, team.waiting))
    violation = None
    if stop is not None and stop.kind != "limit" and rank == 0:
        violation = _violation(model, prefix, levels, stop)
    complete = stop is None and frontier_size == 0
    return _Outcome(violation, state_count, transitions, depth, complete, tuple(times))


@dataclass(frozen=True)
class _Outgoing(Generic[State]):
    """The successors a process sends one owner in a round: three columns, so that only the
    states go through the pickler (and its memory of objects sent) and the numbers travel as
    arrays."""

    keys: list[int] = field(default_factory=list)  # sequential keys
    counts: list[int] = field(default_factory=list)  # enabled transitions of the parent up to each
    states: list[State] = field(default_factory=list)

    def message(self) -> tuple[bytes, bytes, list[State]]:
        return array("q", self.keys).tobytes(), array("q", self.counts).tobytes(), self.states

    @staticmethod
    def items(message: tuple[bytes, bytes, list[State]]) -> Iterable[tuple[int, int, State]]:
        keys, counts, states = message
        return zip(array("q", keys), array("q", counts), states, strict=True)


class _Process(Generic[State, Action]):
    """One process's part of the search after the fork: it expands the frontier states it
    owns, sends each successor it does not own to its owner unless it knows it already, and
    deduplicates the successors it owns, keeping the first in sequential order."""

    def __init__(self, model: Model[State, Action], team: _Team, known: dict[Hashable, int]) -> None:
        self.model = model
        self.team = team
        # Every key admitted before the fork, then those admitted here and those sent from
        # here: a successor found here is new to the search only if it is not among them.
        self.known = known
        reducers = _Reducers()
        self.codecs = {peer: _Codec(reducers) for peer in range(team.size) if peer != team.rank}

    def round(
        self, share: Sequence[tuple[int, State]], witnesses_left: Mapping[str, Callable[[State], bool]]
    ) -> tuple[list[tuple[int, int, State]], list[_Summary], list[int], list[int]]:
        """Expand `share` (frontier positions owned here, in increasing order) and settle the
        round with the others: (the new states owned here as (key, count, state) in order,
        every process's summary, the positions expanded here and their enabled transitions)."""
        team, known, codecs = self.team, self.known, self.codecs
        owned, outgoing, positions, counts, step_violation = self._expand(share)
        received = team.exchange(
            [
                b"" if peer == team.rank else codecs[peer].encode(outgoing[peer].message())
                for peer in range(team.size)
            ]
        )
        canonical = self.model.canonical
        for peer, data in enumerate(received):
            if peer == team.rank:
                continue
            for found in _Outgoing.items(codecs[peer].decode(data)):
                successor = found[2]
                key = successor if canonical is None else canonical(successor)
                if key in known:
                    continue
                held = owned.get(key)
                if held is None or found[0] < held[0]:  # the first in sequential order wins
                    owned[key] = found
        new = sorted(owned.values(), key=operator.itemgetter(0))
        invariants = tuple(self.model.invariants.items())
        new, invariant_violation, first_witness = _check_new(new, invariants, witnesses_left)
        summaries: list[_Summary] = team.gather(
            _Summary(
                array("q", [found[0] for found in new]).tobytes(),
                sum(counts),
                step_violation,
                invariant_violation,
                first_witness,
            )
        )
        known.update(dict.fromkeys(owned, -1))  # (only a stop, which ends the search, admits fewer)
        return new, summaries, positions, counts

    def _expand(
        self, share: Sequence[tuple[int, State]]
    ) -> tuple[
        dict[Hashable, tuple[int, int, State]],
        list[_Outgoing[State]],
        list[int],
        list[int],
        tuple[int, int, str] | None,
    ]:
        """Expand `share` in sequential order, up to the first transition that breaks a step
        property: (the successors owned here and new to the search, by key, the first found
        of each; per process, those it owns not known here; the positions expanded; their
        enabled transitions; the step violation)."""
        candidate_actions, step, canonical = (
            self.model.candidate_actions,
            self.model.step,
            self.model.canonical,
        )
        step_properties = tuple(self.model.step_properties.items())
        known, rank, size = self.known, self.team.rank, self.team.size
        owned: dict[Hashable, tuple[int, int, State]] = {}  # key -> (sequential key, count, state)
        outgoing = [_Outgoing[State]() for _ in range(size)]
        positions: list[int] = []
        counts: list[int] = []
        for position, state in share:
            count = 0
            base = position << ORDINAL_BITS
            for ordinal, action in enumerate(candidate_actions(state)):
                successor = step(state, action)
                if successor is None:
                    continue
                count += 1
                for name, holds_on_step in step_properties:
                    if not holds_on_step(state, successor):
                        return owned, outgoing, positions, counts, (base | ordinal, count, name)
                key = successor if canonical is None else canonical(successor)
                if key in known:
                    continue
                owner = hash(key) % size
                if owner == rank:
                    if key not in owned:
                        owned[key] = (base | ordinal, count, successor)
                else:
                    known[key] = -1  # sent: its owner knows it from this round on
                    sending = outgoing[owner]
                    sending.keys.append(base | ordinal)
                    sending.counts.append(count)
                    sending.states.append(successor)
            positions.append(position)
            counts.append(count)
        return owned, outgoing, positions, counts, None


def _check_new(
    new: list[tuple[int, int, State]],
    invariants: Sequence[tuple[str, Callable[[State], bool]]],
    witnesses_left: Mapping[str, Callable[[State], bool]],
) -> tuple[list[tuple[int, int, State]], tuple[int, int, str] | None, dict[str, int]]:
    """Check the new states owned here (in sequential order) against the invariants and the
    witnesses left, up to the first that breaks an invariant: (the states up to it, the
    violation, the first key meeting each witness)."""
    first_witness: dict[str, int] = {}
    witnesses = dict(witnesses_left)
    for number, (key, count, state) in enumerate(new):
        if witnesses:
            for name, reached in list(witnesses.items()):
                if reached(state):
                    first_witness[name] = key
                    del witnesses[name]
        for name, holds in invariants:
            if not holds(state):
                return new[: number + 1], (key, count, name), first_witness
    return new, None, first_witness


def _decide(
    summaries: Sequence[_Summary], state_count: int, max_states: int | None
) -> tuple[list[int], _Stop | None]:
    """The keys of the level's new states in sequential order, up to where the one-process
    search stops (the same in every process): the first transition that breaks a step
    property (its successor not admitted), the first new state that breaks an invariant, or
    the state that reaches `max_states` (an invariant checked on it first)."""
    admitted = sorted(itertools.chain.from_iterable(array("q", summary.found) for summary in summaries))
    steps = [summary.step_violation for summary in summaries if summary.step_violation is not None]
    broken = [summary.invariant_violation for summary in summaries if summary.invariant_violation is not None]
    step = min(steps) if steps else None
    end = len(admitted) if step is None else bisect.bisect_left(admitted, step[0])
    invariant = min(broken) if broken else None
    at_invariant = None if invariant is None else bisect.bisect_left(admitted, invariant[0])
    if at_invariant is not None and at_invariant >= end:
        at_invariant = None  # after the step violation
    at_limit = None
    if max_states is not None and state_count + end >= max_states:
        at_limit = max(0, max_states - state_count - 1)
    if invariant is not None and at_invariant is not None and (at_limit is None or at_invariant <= at_limit):
        return admitted[: at_invariant + 1], _Stop(invariant[0], "invariant", invariant[2])
    if at_limit is not None:
        return admitted[: at_limit + 1], _Stop(admitted[at_limit], "limit")
    if step is not None:
        return admitted[:end], _Stop(step[0], "step", step[2])
    return admitted, None


def _reach(
    witnesses_left: dict[str, Callable[[State], bool]],
    witnesses_reached: dict[str, bool],
    summaries: Sequence[_Summary],
    stop: _Stop | None,
) -> None:
    """Mark the witnesses a new state admitted in this level meets."""
    for name in list(witnesses_left):
        keys = [summary.witnesses[name] for summary in summaries if name in summary.witnesses]
        if keys and (stop is None or min(keys) <= stop.key):  # no admitted state has a step stop's key
            witnesses_reached[name] = True
            del witnesses_left[name]


def _count_to(
    team: _Team,
    stop: _Stop,
    positions: Sequence[int],
    counts: Sequence[int],
    new: Sequence[tuple[int, int, State]],
    step_violation: tuple[int, int, str] | None,
) -> int:
    """The level's transitions up to `stop`, over every process: those of the positions
    before the stop's, and those of its position up to it (known where it was found)."""
    position = stop.key >> ORDINAL_BITS
    before = sum(count for at, count in zip(positions, counts, strict=True) if at < position)
    here: int | None = None
    if step_violation is not None and step_violation[0] == stop.key:
        here = step_violation[1]
    else:
        here = next((count for key, count, _ in new if key == stop.key), None)
    tallies: list[tuple[int, int | None]] = team.gather((before, here))
    return sum(before for before, _ in tallies) + next(here for _, here in tallies if here is not None)


def _violation(
    model: Model[State, Action], prefix: _Prefix[State, Action], levels: Sequence[array[int]], stop: _Stop
) -> Violation[State, Action]:
    """The stop's trace, rebuilt from the names of its states: each level's keys give a
    state's parent position and action ordinal, back to the frontier of the fork; from
    there the actions are applied again (the candidate actions and steps are functions)."""
    position, ordinals = stop.key >> ORDINAL_BITS, [stop.key & _ORDINAL_MASK]
    for keys in reversed(levels[:-1]):
        ordinals.append(keys[position] & _ORDINAL_MASK)
        position = keys[position] >> ORDINAL_BITS
    steps = list(prefix.trace_to(prefix.frontier[position]))
    for ordinal in reversed(ordinals):
        state = steps[-1].state
        action = next(itertools.islice(model.candidate_actions(state), ordinal, None))
        successor = model.step(state, action)
        assert successor is not None, "a transition another process took is not enabled here"
        steps.append(TraceStep(action, successor))
    return Violation(stop.property_name, stop.kind, tuple(steps))
