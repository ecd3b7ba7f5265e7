"""Linearizability checking: Wing & Gong / Lowe search with P-compositionality and a budget.

What it is
    A history is linearizable with respect to a sequential model when its calls can be put
    in one total order that (a) respects real time: a call that completed before another
    was invoked comes first, and (b) is a legal run of the model, each call producing its
    observed result. This module decides that per independent sub-history.

The algorithm (Wing & Gong 1993, Lowe 2017, as in Porcupine's ``checker.go`` and Knossos's
``knossos.wgl``; restated here, not copied)
    * The calls of one partition become a doubly linked list of call and return entries
      in history order (by the history indices of the invocation and completion).
    * A depth-first search walks the list from its head. A call entry reached before any
      return entry is *minimal*: no unlinearized call completed before it was invoked, so
      it may be linearized next. If the model accepts it, the call (and its return entry)
      is lifted out of the list, pushed on a stack with the previous state, and the walk
      restarts at the head. Reaching a return entry means the call it completes had to be
      linearized before anything later: a dead end. The search pops the last call,
      restores the state, puts the entries back and tries the next entry after it.
    * A cache of (linearized set as an int bitset, model state) pairs prunes
      configurations already explored: the rest of the search depends on nothing else.
    * The model's ``step`` is pure, so a search past a few hundred states remembers its
      answers per (call, state): the search meets the same pairs again and again (Porcupine's
      etcd_002: 364,000 steps over 143 distinct pairs). With the entries numbered by call (no
      tables to look a node's call up in) this made the hard etcd searches 14% cheaper in
      instructions (callgrind: etcd_075, 16,722 states, 277 M against 320 M) and a median one
      10% cheaper (etcd_090, 40 states: 0.81 M against 0.90 M), with the same states explored
      and the same evidence on every history of the shared corpus.
    * The history is linearizable when every call that must be placed has been.

Semantics of outcomes (Jepsen's operation types, as Knossos and Porcupine read them)
    * ``ok`` calls must be linearized inside their interval.
    * ``info`` calls (and invocations that never completed) have no return entry: they may
      be linearized anywhere after their invocation, or left out, so they never block the
      walk and success does not need them. Indeterminate calls with the same prepared
      effect are interchangeable once invoked, so they are linearized in invocation order
      only (a symmetry reduction that prunes the search without changing the verdict).
    * ``fail`` calls follow the conventions (`reference.models.resolve_conventions`):
      dropped when they did not happen, or, for a CAS under ``failed_cas = no-effect``,
      kept as a call that must be linearized and saw a value different from ``from``.
    * Calls that observe nothing and change nothing (reads with an unknown result) are
      left out: they can always be placed.

P-compositionality (Herlihy & Wing's locality; Horn & Kroening 2015)
    Calls are split by the model's ``partition_key`` (a kv key, a topic-partition) and each
    part is checked on its own; the whole is linearizable iff every part is
    (`overall_verdict`). `check_partition` is a pure function of (the partition's calls,
    model name, conventions, budget), so a Spark task can run it; this module never
    imports pyspark.

Budget
    Per partition, at most ``max_seconds`` of search (and never past ``deadline``, a
    ``time.time()`` instant shared by every part of a verification), ``max_states`` cached
    configurations and ``max_memory_bytes`` of cache, estimated from the sizes of the cached
    bit sets and model states (so a kv history whose appended values grow long is bounded by
    memory, not only by the number of states). When any runs out the verdict is ``unknown``
    with the reason, never a guess. The clock is read every `_TIME_CHECK_EVERY` cache insertions
    and as often when backtracking (a walk through cached configurations adds nothing).
    Freeing the cache costs time too (a quarter of the time spent filling it, measured here:
    1.4 s for 2 million kv entries; it made ``--max-seconds`` overshoot by 4-20 s with the old
    unbounded cache), so the search stops early enough to free it before the deadline.

Evidence
    ``invalid``: ``unlinearizable`` (invoke indices of the calls that could not be placed
    at the deepest point reached: the call whose completion blocked the walk and the other
    calls that were candidates there), ``blocking_call``, ``longest_linearizable_prefix``
    (invoke indices in linearization order), the model state after that prefix and a
    description of each unplaceable call. ``valid``: ``linearization``, a certificate
    (invoke indices in order; indeterminate calls left out are absent). ``unknown``: the
    reason and the longest prefix found so far. All carry ``explored_states`` and
    ``calls_searched``/``calls_dropped``.
"""

from __future__ import annotations

import gc
import itertools
import math
import operator
import sys
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from reference.models import MODEL_CLASSES, Observed, Prepared, SequentialModel, resolve_conventions
from spark_checks import traceable, user_models
from spark_checks.history import Call, CheckResult, JsonValue, Outcome, Verdict

CHECKER: Final = "linearizability"

MODELS: Final[dict[str, SequentialModel[Any]]] = {name: cls() for name, cls in MODEL_CLASSES.items()}
"""The sequential models by name: register, cas-register, kv, multi-register, mutex, fifo-queue,
kafka-log (see `reference.models`)."""

_TIME_CHECK_EVERY: Final = 256  # cache insertions, or backtracks, between two looks at the clock
DEFAULT_MAX_MEMORY_BYTES: Final = 512 * 1024 * 1024
"""The default cache budget per partition: with the interpreter and the history this keeps a
check under 1 GB of resident memory (c50-bad measured 2.8 GB at the default time budget
without it)."""
_ENTRY_OVERHEAD_BYTES: Final = 56 + 64
"""Per cached configuration besides its bit set and state: the (bits, state) tuple (56 bytes)
and its share of the set's table (16-byte slots, kept at most 60% full and doubled when full:
up to 4 slots per entry)."""
_OUT_OF_TIME: Final = "time budget exhausted"
_MEMO_ENTRIES: Final = 1 << 16
"""Steps remembered per search (about 6 MB at most, counted in the memory budget)."""
_MEMO_ENTRY_BYTES: Final = 100  # a dictionary entry, its share of the table, a dictionary per call
_UNTRIED: Final = object()
_RELEASE_SHARE: Final = 0.3
_RELEASE_SECONDS_MAX: Final = 5e-6
"""Time kept back to free the cache before the deadline (an abandoned cache cannot be dropped
more cheaply: CPython frees each of its objects): a share of the search's own time, capped at
this much per entry. Freeing took a quarter of the time that filling the cache did, measured on
the 2-core machine (2 million (bits, str) entries built in 5.7 s and freed in 1.44 s, 0.7 us
each; c50-bad's key 0: 1.6 million in 5 s, freed in 1.3 s); both slow down alike on a loaded
machine, so the share holds where a fixed cost per entry would not (at a load of 4 per core the
fixed 1 us per entry left the command 4 s late)."""
_INVOKE_INDEX: Final = operator.attrgetter("invoke_index")


def get_model(model_name: str) -> SequentialModel[Any]:
    """The model called `model_name`, or a user's model named ``MODULE:CLASS``
    (`spark_checks.user_models`); an unknown name is a `ValueError` listing the names."""
    model = MODELS.get(model_name)
    if model is not None:
        return model
    if user_models.is_user_model(model_name):
        return user_models.load_model(model_name)
    raise ValueError(f"unknown model {model_name!r}; expected one of {', '.join(MODELS)} or MODULE:CLASS")


def partition_calls(calls: Iterable[Call], model_name: str) -> dict[Hashable, list[Call]]:
    """The calls grouped by the model's partition key, in order of first appearance."""
    model = get_model(model_name)
    partitions: dict[Hashable, list[Call]] = {}
    for call in calls:
        partitions.setdefault(model.partition_key(call), []).append(call)
    return partitions


def check_linearizability(
    calls: Iterable[Call],
    model_name: str,
    conventions: Mapping[str, JsonValue] | None = None,
    max_seconds: float = 60.0,
    max_states: int = 10_000_000,
    *,
    stop_on_invalid: bool = False,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    deadline: float = math.inf,
    traceable_first: bool = True,
) -> list[CheckResult]:
    """Check each partition of `calls` against `model_name`: one `CheckResult` per partition.

    Partitions come in order of first appearance; `overall_verdict` combines them. The
    budget applies to each partition separately. With `stop_on_invalid` the partitions
    after the first invalid one are not searched (Porcupine's default: one illegal part
    decides the whole history); they are reported `unknown` with the reason, as are those
    not started by `deadline` (a `time.time()` instant); each partition may use its share of
    the time left until then. A call the model does not support, a bad convention value or a
    budget that is not a positive number is a `ValueError`. `traceable_first`: see `check_partition`.
    """
    check_budget(max_seconds, max_states, max_memory_bytes)
    resolved = resolve_conventions(conventions)
    results: list[CheckResult] = []
    invalid_key: JsonValue = None
    found_invalid = False
    partitions = partition_calls(calls, model_name)
    for number, (key, part) in enumerate(partitions.items()):
        now = time.time()
        if found_invalid or now >= deadline:
            reason = (
                f"not checked: partition {invalid_key!r} is not linearizable"
                if found_invalid
                else "not checked: time budget exhausted"
            )
            results.append(
                CheckResult(
                    checker=CHECKER,
                    model=model_name,
                    partition=_json_key(key),
                    verdict=Verdict.UNKNOWN,
                    operations=len(part),
                    evidence={"reason": reason},
                    conventions={} if user_models.is_user_model(model_name) else dict(resolved),
                )
            )
            continue
        result = check_partition(
            part,
            model_name,
            resolved,
            max_seconds,
            max_states,
            partition=key,
            max_memory_bytes=max_memory_bytes,
            deadline=now + (deadline - now) / (len(partitions) - number),  # a share of the time left
            traceable_first=traceable_first,
        )
        results.append(result)
        if stop_on_invalid and result.verdict is Verdict.INVALID:
            found_invalid, invalid_key = True, result.partition
    return results


def overall_verdict(results: Iterable[CheckResult]) -> Verdict:
    """The conjunction: invalid if any part is, else unknown if any part is, else valid."""
    verdicts = {result.verdict for result in results}
    if Verdict.INVALID in verdicts:
        return Verdict.INVALID
    return Verdict.UNKNOWN if Verdict.UNKNOWN in verdicts else Verdict.VALID


def check_partition(
    calls: Sequence[Call],
    model_name: str,
    conventions: Mapping[str, JsonValue] | None = None,
    max_seconds: float = 60.0,
    max_states: int = 10_000_000,
    partition: Hashable = None,
    *,
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES,
    deadline: float = math.inf,
    traceable_first: bool = True,
    forms: Sequence[Prepared | None] | None = None,
) -> CheckResult:
    """Check the calls of one partition (all with the same partition key) on their own,
    within `max_seconds` and before `deadline` (a `time.time()` instant).

    With `traceable_first` a kv or register partition whose written values are unique is
    decided by `spark_checks.traceable` (evidence ``method: traceable``); otherwise, or when its
    preconditions fail (``traceable_fallback`` says which), by the search (``method: search``).
    `forms`: the calls' forms in the model (`prepare_calls`), when the calls were prepared
    where they were read; `calls` are then in invocation order."""
    check_budget(max_seconds, max_states, max_memory_bytes)
    started = time.perf_counter()
    stop_at = min(started + max_seconds, started + (deadline - time.time()))
    model = get_model(model_name)
    resolved = resolve_conventions(conventions)
    if forms is None:
        calls = sorted(calls, key=_INVOKE_INDEX)
        forms = _prepare(calls, model, resolved)
    problem = _Problem.build(calls, forms)
    fallback = None
    if traceable_first and model_name in traceable.MODELS and MODELS.get(model_name) is model:

        def describe(position: int) -> str:
            return model.describe(problem.calls[position])

        decided = traceable.decide(
            model_name, problem, model.init(resolved["initial"]), model.step, describe, stop_at
        )
        if isinstance(decided, traceable.Decision):
            decided_evidence = traceable.evidence(decided, problem.invoke, describe)
            decided_evidence["calls_searched"] = len(problem.calls)
            decided_evidence["calls_dropped"] = len(calls) - len(problem.calls)
            return CheckResult(
                checker=CHECKER,
                model=model_name,
                partition=_json_key(partition),
                verdict=decided.verdict,
                operations=len(calls),
                evidence=decided_evidence,
                conventions=dict(resolved),
                seconds=time.perf_counter() - started,
            )
        fallback = decided.reason
    gc_enabled = gc.isenabled()
    gc.disable()  # the search makes no reference cycles; collections only rescan the cache
    try:
        initial = model.init(resolved["initial"])
        budget = _SearchBudget(stop_at, max_states, max_memory_bytes)
        search = _search(problem, model.step, initial, budget)
    finally:
        if gc_enabled:
            gc.enable()
    evidence: dict[str, JsonValue] = {
        "method": "search",
        **({} if fallback is None else {"traceable_fallback": fallback}),
        "explored_states": search.explored,
        "calls_searched": len(problem.calls),
        "calls_dropped": len(calls) - len(problem.calls),
    }
    to_index = problem.invoke
    if search.verdict is Verdict.VALID:
        evidence["linearization"] = [to_index[i] for i in search.order]
    else:
        evidence["longest_linearizable_prefix"] = [to_index[i] for i in search.order]
    if search.verdict is Verdict.INVALID:
        stuck = sorted(search.candidates, key=to_index.__getitem__)
        evidence["unlinearizable"] = [to_index[i] for i in stuck]
        evidence["blocking_call"] = to_index[search.blocking] if search.blocking >= 0 else None
        evidence["state_after_prefix"] = getattr(model, "describe_state", repr)(search.state)
        evidence["descriptions"] = {str(to_index[i]): model.describe(problem.calls[i]) for i in stuck}
    if search.verdict is Verdict.UNKNOWN:
        evidence["reason"] = search.reason
    return CheckResult(
        checker=CHECKER,
        model=model_name,
        partition=_json_key(partition),
        verdict=search.verdict,
        operations=len(calls),
        evidence=evidence,
        conventions={} if user_models.is_user_model(model_name) else dict(resolved),  # not theirs
        seconds=time.perf_counter() - started,
    )


def check_budget(max_seconds: float, max_states: int, max_memory_bytes: int) -> None:
    """A `ValueError` unless every budget is a positive number (NaN is not)."""
    if not max_seconds > 0:  # also catches NaN
        raise ValueError(f"the time budget must be a positive number of seconds, got {max_seconds!r}")
    if not max_states > 0:
        raise ValueError(f"the state budget must be a positive number of states, got {max_states!r}")
    if not max_memory_bytes > 0:
        raise ValueError(f"the memory budget must be a positive number of bytes, got {max_memory_bytes!r}")


def _json_key(key: Hashable) -> JsonValue:
    """A partition key as JSON-ready data (frozen tuples back to lists)."""
    if isinstance(key, tuple):
        return [_json_key(item) for item in key]
    if isinstance(key, frozenset):
        return sorted((_json_key(item) for item in key), key=repr)
    return key


# ---------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------


@dataclass
class _Problem:
    """One partition's calls in the model's prepared form, ordered by invocation.

    Call ``i`` is bit ``1 << i`` of the linearized set. ``complete[i]`` is None for calls
    that may be left out (indeterminate); the others must be linearized.
    """

    calls: list[Call] = field(default_factory=list)
    invoke: list[int] = field(default_factory=list)
    complete: list[int | None] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    outcomes: list[Observed] = field(default_factory=list)

    @classmethod
    def build(cls, calls: Sequence[Call], forms: Sequence[Prepared | None]) -> _Problem:
        """The problem of `calls` (in invocation order) with their `forms` in the model."""
        if None in forms:
            kept = [(call, form) for call, form in zip(calls, forms, strict=True) if form is not None]
            calls, forms = [call for call, _ in kept], [form for _, form in kept]
        if not calls:
            return cls()
        # Columns by transposing (in C): this runs once per part of every history.
        inputs, outputs, observed = map(list, zip(*forms, strict=True))
        unknown = Outcome.INFO
        complete = [
            None if outcome == "info" or call.outcome is unknown else call.complete_index
            for call, outcome in zip(calls, observed, strict=True)
        ]
        return cls(
            list(calls),
            [call.invoke_index for call in calls],
            complete,
            inputs,
            outputs,
            [outcome if end is not None else "info" for outcome, end in zip(observed, complete, strict=True)],
        )


def prepare_calls(
    calls: Sequence[Call], model_name: str, conventions: Mapping[str, JsonValue] | None = None
) -> list[Prepared | None]:
    """Each call's form in the model (`SequentialModel.prepare`, None for a call the search
    leaves out); a value the model cannot hold is a `ValueError` naming the call."""
    return _prepare(calls, get_model(model_name), resolve_conventions(conventions))


def _prepare(
    calls: Iterable[Call], model: SequentialModel[Any], conventions: Mapping[str, Any]
) -> list[Prepared | None]:
    prepare = model.prepare
    forms: list[Prepared | None] = []
    add = forms.append
    for call in calls:
        try:
            add(prepare(call, conventions))
        except ValueError as error:
            raise ValueError(f"call invoked at index {call.invoke_index}: {error}") from None
    return forms


@dataclass
class _SearchResult:
    verdict: Verdict
    order: list[int]  # the linearization (valid) or the longest partial one (otherwise)
    explored: int
    candidates: list[int] = field(default_factory=list)
    blocking: int = -1
    state: Any = None
    reason: str = ""


@dataclass(frozen=True)
class _SearchBudget:
    stop_at: float  # a `time.perf_counter()` instant
    max_states: int
    max_memory_bytes: int


def _nested_bytes(state: Any) -> int:
    """The bytes a new model state holds: itself, and for a tuple the containers it holds one
    level down (a multi-register's frozenset); their items are shared with older states. A
    frozenset's members all count (a power-set state of `spark_checks.user_models` holds the
    states it may be, e.g. kv strings that grow; erring high where members are shared)."""
    size = sys.getsizeof(state)
    if state.__class__ is tuple:
        for item in state:
            if item.__class__ is tuple or item.__class__ is frozenset:
                size += sys.getsizeof(item)
    elif state.__class__ is frozenset:
        for item in state:
            size += sys.getsizeof(item)
    return size


def _search(problem: _Problem, step: Any, initial: Any, budget: _SearchBudget) -> _SearchResult:
    """Porcupine-style WGL search over the linked list of call/return entries.

    Call ``i``'s invocation entry is node ``i`` and its completion's node ``n + i`` (required
    calls only), so a node is a return entry exactly when it is at least ``n``, and the call of
    an entry is the node itself (or ``node - n``): no table to look either up in. The model's
    ``step`` is pure, so its answers are remembered per call and state (`_MEMO_ENTRIES` at most):
    the search meets the same (call, state) pairs again and again (etcd_002: 364,000 steps over
    143 distinct pairs), and a dictionary lookup costs a fraction of a call."""
    invoke, complete = problem.invoke, problem.complete
    inputs, outputs, outcomes = problem.inputs, problem.outputs, problem.outcomes
    n = len(invoke)
    returning = [i for i, position in enumerate(complete) if position is not None]
    remaining = total_required = len(returning)
    if remaining == 0:
        return _SearchResult(Verdict.VALID, [], 0)

    # Entries in history order; a call entry sorts before a return at the same position
    # (closed intervals): history positions keyed by position * size + node, sorted as ints.
    size = 2 * n + 2
    head, tail = size - 2, size - 1
    keyed = [position * size + i for i, position in enumerate(invoke)]
    keyed += [complete[i] * size + n + i for i in returning]  # type: ignore[operator]
    keyed.sort()
    order = [head, *map(size.__rmod__, keyed), tail]
    # The links as lists indexed by node, built in C (a node not in the list, the return
    # entry of an indeterminate call, gets -1).
    nxt = list(map(dict(itertools.pairwise(order)).get, range(size), itertools.repeat(-1)))
    prv = list(map(dict(zip(order[1:], order, strict=False)).get, range(size), itertools.repeat(-1)))

    # Symmetry: an indeterminate call may go only after the previous indeterminate call
    # with the same prepared effect (both are invoked by then and never need to return).
    previous_same = [-1] * n
    if total_required < n:
        last_seen: dict[tuple[Any, Any], int] = {}
        for i, position in enumerate(complete):
            if position is None:
                signature = (inputs[i], outputs[i])
                previous_same[i] = last_seen.get(signature, -1)
                last_seen[signature] = i

    no_moves: dict[Any, Any] = {}  # shared by the calls not stepped yet; never written
    memo = [no_moves] * n
    # Opened at the second look at the budget: a smaller search would pay for what it never reuses.
    memo_room, memo_later = 0, _MEMO_ENTRIES
    cache: set[tuple[int, Any]] = set()
    cache_add = cache.add
    stack_calls: list[int] = []
    stack_states: list[Any] = []
    push_call, push_state = stack_calls.append, stack_states.append
    pop_call, pop_state = stack_calls.pop, stack_states.pop
    linearized = 0
    state = initial
    best_depth = -1
    best = _SearchResult(Verdict.INVALID, [], 0)
    explored = 0
    perf_counter = time.perf_counter
    search_started = perf_counter()
    stop_at, max_states, max_bytes = budget.stop_at, budget.max_states, budget.max_memory_bytes
    # Strings, numbers and booleans are measured by `getsizeof`; tuples and the like one level
    # down. A cached bit set has at most n bits: its size is bounded once, not measured each time.
    state_bytes = sys.getsizeof if initial.__class__ in (str, bytes, int, bool, type(None)) else _nested_bytes
    entry_bytes = _ENTRY_OVERHEAD_BYTES + sys.getsizeof(1 << n)
    # The budgets are looked at when `explored` reaches `next_look` (one compare per insertion):
    # every `_TIME_CHECK_EVERY` insertions, sooner when the cache's memory is close to its budget.
    # The entries since the last look are weighed by the state just cached (states grow along a
    # path, so this errs high), and the next look comes before half the room left can be used.
    # The remembered steps are weighed when they are remembered.
    cache_bytes = 0
    looked_at = 0
    next_look = min(1, max_states + 1)
    backtracks = 0
    clock_mask = _TIME_CHECK_EVERY - 1

    node = nxt[head]
    while True:
        if node >= n:
            # Backtracking through cached configurations adds nothing to the cache: the clock
            # is read here too (stopping early enough to free the cache before the deadline).
            backtracks += 1
            if not backtracks & clock_mask and _must_stop(perf_counter(), search_started, explored, stop_at):
                return _SearchResult(Verdict.UNKNOWN, best.order, explored, reason=_OUT_OF_TIME)
            # The call completing here had to be linearized before anything later: dead end.
            depth = total_required - remaining
            if depth > best_depth:
                best_depth = depth
                best.order = stack_calls.copy()
                best.state = state
                best.blocking = node - n
                candidates = []
                walk = nxt[head]
                while walk != node:
                    if complete[walk] is not None:
                        candidates.append(walk)
                    walk = nxt[walk]
                best.candidates = candidates  # the blocking call's own entry is among them
            if not stack_calls:
                best.explored = explored
                return best
            i = pop_call()
            state = pop_state()
            linearized ^= 1 << i
            if complete[i] is not None:
                remaining += 1
                back = n + i
                nxt[prv[back]] = back
                prv[nxt[back]] = back
            nxt[prv[i]] = i
            prv[nxt[i]] = i
            node = nxt[i]
            continue

        before = previous_same[node]
        if before < 0 or linearized >> before & 1:
            new_state = memo[node].get(state, _UNTRIED)
            if new_state is _UNTRIED:
                new_state = step(state, inputs[node], outputs[node], outcomes[node])
                if memo_room:
                    memo_room -= 1
                    moves = memo[node]
                    if moves is no_moves:
                        moves = memo[node] = {}
                    moves[state] = new_state
                    cache_bytes += _MEMO_ENTRY_BYTES
            if new_state is not None:
                key = (linearized | 1 << node, new_state)
                if key not in cache:
                    cache_add(key)
                    explored += 1
                    if explored >= next_look:
                        if explored > max_states:
                            reason = f"state budget of {max_states} states exhausted"
                            return _SearchResult(Verdict.UNKNOWN, best.order, explored, reason=reason)
                        weight = entry_bytes + state_bytes(new_state)
                        cache_bytes += (explored - looked_at) * weight
                        looked_at = explored
                        if cache_bytes > max_bytes:
                            reason = (
                                f"memory budget of {_megabytes(max_bytes)} exhausted "
                                f"({explored} cached states, about {_megabytes(cache_bytes)})"
                            )
                            return _SearchResult(Verdict.UNKNOWN, best.order, explored, reason=reason)
                        if _must_stop(perf_counter(), search_started, explored, stop_at):
                            return _SearchResult(Verdict.UNKNOWN, best.order, explored, reason=_OUT_OF_TIME)
                        if explored > 1:
                            memo_room, memo_later = memo_room + memo_later, 0
                        room = (max_bytes - cache_bytes) // (2 * weight)
                        next_look = min(explored + max(1, min(_TIME_CHECK_EVERY, room)), max_states + 1)
                    push_call(node)
                    push_state(state)
                    linearized = key[0]
                    state = new_state
                    # Lift the call entry and its return entry out of the list.
                    prv[nxt[node]] = prv[node]
                    nxt[prv[node]] = nxt[node]
                    if complete[node] is not None:
                        back = n + node
                        prv[nxt[back]] = prv[back]
                        nxt[prv[back]] = nxt[back]
                        remaining -= 1
                        if remaining == 0:
                            return _SearchResult(Verdict.VALID, stack_calls.copy(), explored)
                    node = nxt[head]
                    continue
        node = nxt[node]


def _must_stop(now: float, started: float, explored: int, stop_at: float) -> bool:
    """Whether a search started at `started` must stop now to free its cache of `explored`
    entries by `stop_at`."""
    return now + min(_RELEASE_SHARE * (now - started), explored * _RELEASE_SECONDS_MAX) > stop_at


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):,.0f} MB"
