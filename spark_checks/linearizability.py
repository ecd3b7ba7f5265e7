"""Linearizability checking: Wing & Gong / Lowe search with P-compositionality and a budget.

What it is
    A history is linearizable with respect to a sequential model when its calls can be put
    in one total order that (a) respects real time: a call that completed before another
    was invoked comes first, and (b) is a legal run of the model, each call producing its
    observed result. This module decides that per independent sub-history.

The algorithm (Wing & Gong 1993, Lowe 2017, as in Porcupine's ``checker.go`` and Knossos's
``knossos.wgl``; restated here, not copied)
    * The calls of one partition, in invocation order, become a doubly linked list of
      call entries; each completion is a return entry at its place in history order.
    * A depth-first search walks the list from its head. A call entry reached before any
      return entry is *minimal*: no unlinearized call completed before it was invoked, so
      it may be linearized next. If the model accepts it, the call (and its return entry)
      is lifted out of the list, pushed on a stack with the previous state, and the walk
      restarts at the head. Reaching a return entry means the call it completes had to be
      linearized before anything later: a dead end. The search pops the last call,
      restores the state, puts the entries back and tries the next entry after it.
    * A cache of configurations (linearized set, model state) prunes those already
      explored: the rest of the search depends on nothing else.
    * Every operation on a configuration is a list index or an integer operation, with the
      tables made once per part (`_search`): model states are interned as small numbers on
      first sight; a configuration is one integer (the linearized calls' bits or'ed with the
      state's number shifted above them); each state has a row of successors by call, filled
      as the search steps (the model's ``step`` is pure: Porcupine's etcd_002 takes 364,000
      steps over 143 distinct (call, state) pairs), so the walk reads one slot per entry.
      Against configurations as (bits, state) tuples with a step memo per call and a
      symmetry test on every entry, measured with callgrind on Porcupine's 108 logs (the
      bench's check window, split and evidence included, once each after a first run): the
      median check 1.90 M instructions against 2.47 M, all 108 checks 5.08 G against 5.25 G.
    * The return entries are not list nodes (`_search`): the walk's dead end is the return
      entry of the unlinearized required call that completed first, and the call entries
      before it are exactly the calls invoked before that completion, those numbered below
      ``cutoff``. So the list starts linked in invocation order (no sort of the
      entries, no linking loop), a push or pop moves one node, and ``cutoff`` moves only
      when that call itself is linearized. The stack holds each configuration whole, so a
      pop is one unpacking. Against return entries as nodes (a sort of all entries, two
      nodes moved per push and pop, two stacks), measured the same way on the 12 etcd logs
      around the median (etcd_009, 026, 027, 033, 039, 042, 052, 058, 063, 067, 084, 096):
      1.62 M instructions per check against 1.86 M (the walk's bytecodes per check 29,500
      against 36,400), all 108 checks 4.75 G against 5.08 G. Same states explored and
      the same evidence on every one of the 108.
    * The walk is an inner loop that breaks at its dead end, whose bookkeeping (the deepest
      one, `_dead_end`) is out of line: CPython 3.11 specializes a comparison only when a
      short jump follows it, and the dead end's test, run at every step, was followed by a
      jump over the whole backtrack. With the setup's lists made by slicing and deleting
      rather than per-range loops, 1.558 M instructions per check against 1.607 M on the
      same 12 logs (callgrind, the bench's window). What is left is the walk itself (about
      410 steps, 133 pushes and 127 pops a check there, each a few list indexings and one
      or two big-integer operations) and passes over the part's calls (columns, sort by
      completion), each 15-40 K instructions for 84 calls.
    * The history is linearizable when every call that must be placed has been.

Semantics of outcomes (Jepsen's operation types, as Knossos and Porcupine read them)
    * ``ok`` calls must be linearized inside their interval.
    * ``info`` calls (and invocations that never completed) have no return entry: they may
      be linearized anywhere after their invocation, or left out, so they never block the
      walk and success does not need them. Indeterminate calls with the same prepared
      effect are interchangeable once invoked, so they are linearized in invocation order
      only (a symmetry reduction that prunes the search without changing the verdict): a
      later one joins the list only once the one before it is linearized.
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
    with the reason, never a guess. The clock is read when a search starts, then every
    `_LOOK_EVERY` pushes and pops (a walk through cached configurations adds nothing to the
    cache but pops); a search of a few hundred states reads it once.
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

import functools
import gc
import math
import operator
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from reference.models import MODEL_CLASSES, Observed, Prepared, SequentialModel, resolve_conventions
from spark_checks import traceable, user_models
from spark_checks.history import Call, CheckResult, JsonValue, Verdict

CHECKER: Final = "linearizability"

MODELS: Final[dict[str, SequentialModel[Any]]] = {name: cls() for name, cls in MODEL_CLASSES.items()}
"""The sequential models by name: register, cas-register, kv, multi-register, mutex, fifo-queue,
kafka-log (see `reference.models`)."""

_LOOK_EVERY: Final = 512  # pushes and pops (cache insertions and backtracks) between two looks at the budgets
DEFAULT_MAX_MEMORY_BYTES: Final = 512 * 1024 * 1024
"""The default cache budget per partition: with the interpreter and the history this keeps a
check under 1 GB of resident memory (c50-bad measured 2.8 GB at the default time budget
without it)."""
_KEY_OVERHEAD_BYTES: Final = 64
"""Per cached configuration besides its integer: its share of the set's table (16-byte slots,
kept at most 60% full and doubled when full: up to 4 slots per entry)."""
_STATE_OVERHEAD_BYTES: Final = 8 + 100
"""Per interned model state besides the state itself: its slot in the list of states and its
entry in the dictionary of state numbers (with its share of the table)."""
_ROWS_SHARE: Final = 8
"""The successor rows (one list of a slot per call for each state) take at most this fraction
of the memory budget; states past it have their steps computed each time (a kv search makes a
new state at nearly every step, whose row would never be read again)."""
_IMPOSSIBLE: Final = -1  # a row's slot for a call whose result the state does not allow
_UNTRIED: Final = -2  # a row's slot for a step not taken yet
_OUT_OF_TIME: Final = "time budget exhausted"
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
_CALL_OF: Final = operator.itemgetter(0)  # the call of an entry of the search's stack


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


def _describe(model: SequentialModel[Any], problem: _Problem, position: int) -> str:
    """A searched call as the model describes it. `check_partition` hands it on as a partial, not
    a closure: compiled, a closure and its environment refer to each other, and would keep the
    partition's calls alive as cyclic garbage with the collector off."""
    return model.describe(problem.calls[position])


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
    began: float | None = None,
) -> CheckResult:
    """Check the calls of one partition (all with the same partition key) on their own,
    within `max_seconds` and before `deadline` (a `time.time()` instant).

    With `traceable_first` a kv or register partition whose written values are unique is
    decided by `spark_checks.traceable` (evidence ``method: traceable``); otherwise, or when its
    preconditions fail (``traceable_fallback`` says which), by the search (``method: search``).
    `forms`: the calls' forms in the model (`prepare_calls`), when the calls were prepared
    where they were read; `calls` are then in invocation order. `began`: when the caller's
    check of this part began (`time.perf_counter()`), from which the result's ``seconds``
    count (by default, from this call)."""
    check_budget(max_seconds, max_states, max_memory_bytes)
    started = time.perf_counter()
    began = started if began is None else began
    stop_at = min(started + max_seconds, started + (deadline - time.time()))
    model = get_model(model_name)
    resolved = resolve_conventions(conventions)
    if forms is None:
        calls = sorted(calls, key=_INVOKE_INDEX)
        forms = _prepare(calls, model, resolved)
    problem = _Problem.build(calls, forms)
    fallback = None
    if traceable_first and model_name in traceable.MODELS and MODELS.get(model_name) is model:
        describe = functools.partial(_describe, model, problem)  # (a closure: see `_describe`)
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
                seconds=time.perf_counter() - began,
            )
        fallback = decided.reason
    gc_enabled = gc.isenabled()
    gc.disable()  # the search makes no reference cycles; collections only rescan the cache
    try:
        initial = model.init(resolved["initial"])
        search = _search(problem, model.step, initial, started, stop_at, max_states, max_memory_bytes)
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
        seconds=time.perf_counter() - began,
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

    Position ``i`` is the ``i``-th call invoked. ``complete[i]`` is None for calls that may be
    left out (indeterminate, their outcome ``"info"``); the others must be linearized.
    """

    calls: Sequence[Call] = ()
    invoke: list[int] = field(default_factory=list)
    complete: list[int | None] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    outcomes: list[Observed] = field(default_factory=list)

    optional: list[int] = field(default_factory=list)  # the positions whose `complete` is None

    @classmethod
    def build(cls, calls: Sequence[Call], forms: Sequence[Prepared | None]) -> _Problem:
        """The problem of `calls` (in invocation order) with their `forms` in the model. A call
        is indeterminate when its form says ``"info"``: every model prepares a call whose
        outcome is unknown so (`reference.models`), or leaves it out."""
        if not forms:
            return cls()
        # This runs once per part of every history: columns by transposing (in C), list
        # comprehensions over attributes, no per-call branches in Python.
        try:
            inputs, outputs, outcomes = map(list, zip(*forms, strict=True))
        except TypeError:  # a None among the forms: a call the search leaves out
            calls = [call for call, form in zip(calls, forms, strict=True) if form is not None]
            if not calls:
                return cls()
            inputs, outputs, outcomes = map(
                list, zip(*[form for form in forms if form is not None], strict=True)
            )
        complete: list[int | None] = [call.complete_index for call in calls]
        optional = _indices(outcomes, "info")
        for position in optional:
            complete[position] = None
        return cls(
            calls, [call.invoke_index for call in calls], complete, inputs, outputs, outcomes, optional
        )


def _indices(items: list[Any], value: Any) -> list[int]:
    """The indices of `value` in `items`, found by `list.index` (a scan in C per index found;
    counted first, as the `ValueError` that would end the scans costs more than the count)."""
    found: list[int] = []
    at = -1
    for _ in range(items.count(value)):
        at = items.index(value, at + 1)
        found.append(at)
    return found


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


def _search(
    problem: _Problem,
    step: Any,
    initial: Any,
    started: float,
    stop_at: float,
    max_states: int,
    max_bytes: int,
) -> _SearchResult:
    """Porcupine-style WGL search, where each operation on a configuration is a list index or an
    integer operation.

    The list holds the call entries only: node ``i`` is call ``i`` (the ``i``-th invoked), so the
    nodes start linked in their own order. The return entries are not nodes: the walk's dead
    end is the first return entry among the unlinearized required calls, that of the call
    ``by_completion[at]`` (the required calls in completion order; those before ``at`` are
    linearized), and the call entries before it in history order are the calls invoked before
    it completed, those numbered below ``cutoff``. So a walk that reaches a node at or past
    ``cutoff`` has reached that return entry. ``at`` and ``cutoff`` move only when that call
    itself is linearized.

    A model state is interned on first sight as a small number (its part of a configuration,
    ``shifted``, is that number shifted above the calls' bits), and each of the first states
    gets a *row* of a slot per call: the number of the state after that call, or -1 (the call
    is impossible there) or -2 (not stepped yet). A cached configuration is one integer, the
    linearized calls' bits or'ed with the state's shifted number. A row starts as a copy of the
    part's template, made once.

    The stack holds, per linearized call, the whole configuration before it (the call, the
    linearized bits, the state's number and row, ``at``, ``cutoff``, the required calls left),
    so a backtrack is one pop and relinking one node.

    Symmetry: an indeterminate call that has the same prepared effect as an earlier
    indeterminate one (its *leader*) is not in the list until its leader is linearized; it is
    then linked in before the next call after it still in the list, and unlinked again when the
    leader is taken back, so the walk never meets a call that must wait and needs no test for it.

    Budgets are looked at every `_LOOK_EVERY` pushes and pops together (sooner when the memory
    is close to its budget, and exactly when the cache passes ``max_states``)."""
    complete: list[Any] = problem.complete  # an index, or None for an optional call
    inputs, outputs, outcomes = problem.inputs, problem.outputs, problem.outcomes
    n = len(complete)
    if len(problem.optional) == n:
        return _SearchResult(Verdict.VALID, [], 0)
    if _must_stop(time.perf_counter(), started, 0, stop_at):  # the next look is hundreds of steps away
        return _SearchResult(Verdict.UNKNOWN, [], 0, reason=_OUT_OF_TIME)
    untried, impossible = _UNTRIED, _IMPOSSIBLE
    tail, head = n, n + 1
    template = [untried] * n
    follower = [0] * n  # call -> the call that waits for it (0: none; call 0 waits for nobody)
    leader_of: dict[int, int] = {}  # the other way
    if problem.optional:
        leaders: dict[tuple[Any, Any], int] = {}
        for i in problem.optional:
            signature = (inputs[i], outputs[i])
            leader = leaders.get(signature)
            if leader is not None:
                follower[leader] = i
                leader_of[i] = leader
            leaders[signature] = i

    # The required calls in completion order; the tail ends them (its bit is never set).
    by_completion = list(range(n))
    for i in reversed(problem.optional):
        del by_completion[i]
    by_completion.sort(key=complete.__getitem__)
    by_completion.append(tail)
    invoked = [*problem.invoke, math.inf]  # the tail's invocation comes after every completion
    links = list(range(-1, n + 3))
    nxt = links[2:]  # 0 -> 1 -> ... -> n - 1 -> the tail
    nxt[head] = 0
    prv = links[: n + 2]
    prv[0] = head
    for i in leader_of:  # out until their leaders are linearized
        prv[nxt[i]] = prv[i]
        nxt[prv[i]] = nxt[i]

    states = [initial]
    ids = {initial: 0, None: impossible}  # a step's None (the call is impossible) reads like a state
    shifted = [0]  # each state's part of a configuration
    row = template.copy()
    rows = [row]
    unrecorded = template  # the row of the states past the rows' share: never written
    row_bytes = sys.getsizeof(row)
    rows_allowed = max(1, max_bytes // _ROWS_SHARE // row_bytes)
    measure = sys.getsizeof if initial.__class__ in (str, bytes, int, bool, type(None)) else _nested_bytes
    limits = _Limits(n, measure, row_bytes, rows_allowed, started, stop_at, max_states, max_bytes)
    state_bytes = measure(initial) + _STATE_OVERHEAD_BYTES
    spent = (1, state_bytes)  # (states counted, their bytes)
    weight = _KEY_OVERHEAD_BYTES + sys.getsizeof(1 << n) + state_bytes + row_bytes
    countdown = _countdown((max_bytes - state_bytes - row_bytes) // (2 * weight), 0, max_states)
    cache: set[int] = set()
    cache_add = cache.add
    stack: list[tuple[int, int, int, list[int], int, int, int]] = []
    push, pop = stack.append, stack.pop
    linearized = 0  # the linearized calls' bits
    state = 0  # the state's number
    at = 0  # the position in `by_completion` of the unlinearized required call completed first
    first_completion = complete[by_completion[0]]
    cutoff = 0  # the calls invoked before it completed: the walk's dead end
    while invoked[cutoff] < first_completion:
        cutoff += 1
    remaining = len(by_completion) - 1  # required calls not linearized
    best_remaining = remaining + 1
    best = _SearchResult(Verdict.INVALID, [], 0)

    node = nxt[head]
    while True:
        while True:  # the walk from `node` in this configuration, up to its dead end (see the docstring)
            if node >= cutoff:
                break
            t = row[node]
            if t < 0:
                if t == impossible:
                    node = nxt[node]
                    continue
                # Not stepped yet from this state.
                new_state = step(states[state], inputs[node], outputs[node], outcomes[node])
                t = ids.get(new_state, untried)
                if t == untried:
                    t = ids[new_state] = len(states)
                    states.append(new_state)
                    shifted.append(t << n)
                    rows.append(template.copy() if len(rows) < rows_allowed else unrecorded)
                if row is not unrecorded:
                    row[node] = t
                if t == impossible:
                    node = nxt[node]
                    continue
            with_call = linearized | 1 << node
            key = with_call | shifted[t]
            if key in cache:
                node = nxt[node]
                continue
            cache_add(key)
            countdown -= 1
            if not countdown:
                reason, countdown, spent = limits.look(len(cache), states, spent)
                if reason:
                    return _unknown(best, len(cache), reason)
            push((node, linearized, state, row, at, cutoff, remaining))
            linearized = with_call
            state = t
            row = rows[t]
            # Lift the call entry out of the list.
            prv[nxt[node]] = prv[node]
            nxt[prv[node]] = nxt[node]
            if complete[node] is not None:
                remaining -= 1
                if node == by_completion[at]:  # the walk's dead end moves to the next required call's return
                    if not remaining:
                        return _SearchResult(Verdict.VALID, list(map(_CALL_OF, stack)), len(cache))
                    at += 1
                    while linearized >> by_completion[at] & 1:
                        at += 1
                    first_completion = complete[by_completion[at]]
                    while invoked[cutoff] < first_completion:
                        cutoff += 1
            else:
                waits = follower[node]
                if waits:  # linked in where it belongs, now that its leader is linearized
                    after = waits + 1
                    while (  # the next call still in the list (the tail's bit is never set)
                        linearized >> after & 1
                        or (after in leader_of and not linearized >> leader_of[after] & 1)
                    ):
                        after += 1
                    before = prv[after]
                    nxt[before] = waits
                    prv[waits] = before
                    nxt[waits] = after
                    prv[after] = waits
            node = nxt[head]
        # The return entry of `by_completion[at]`: it had to be linearized before anything later.
        if remaining < best_remaining:
            best_remaining = remaining
            _dead_end(best, stack, states[state], by_completion[at], nxt[head], node, nxt, complete)
        countdown -= 1
        if not countdown:
            reason, countdown, spent = limits.look(len(cache), states, spent)
            if reason:
                return _unknown(best, len(cache), reason)
        try:
            node, linearized, state, row, at, cutoff, remaining = pop()
        except IndexError:
            best.explored = len(cache)
            return best
        if follower[node]:  # unlinked again: its leader is taken back
            waits = follower[node]
            prv[nxt[waits]] = prv[waits]
            nxt[prv[waits]] = nxt[waits]
        nxt[prv[node]] = node
        prv[nxt[node]] = node
        node = nxt[node]


def _dead_end(
    best: _SearchResult,
    stack: list[tuple[int, int, int, list[int], int, int, int]],
    state: Any,
    blocking: int,
    first: int,
    dead_end: int,
    nxt: list[int],
    complete: list[Any],
) -> None:
    """Record the deepest dead end so far in `best`: the calls linearized (the `stack`), the
    model `state` after them, the `blocking` call and the required calls of the list from
    `first` up to the `dead_end` node (the blocking call's own entry is among them)."""
    best.order = list(map(_CALL_OF, stack))
    best.state = state
    best.blocking = blocking
    candidates = []
    walk = first
    while walk != dead_end:
        if complete[walk] is not None:
            candidates.append(walk)
        walk = nxt[walk]
    best.candidates = candidates


class _Limits(NamedTuple):
    """A search's budgets and what its memory estimate needs: the cached integers are counted
    exactly, the interned states weighed at each look by the newest one (states grow along a
    path, so this errs high), the rows by their number. A look comes every `_LOOK_EVERY` pushes
    and pops, sooner when the memory is close to its budget (before half the room left can be
    used, each insertion weighed as a new state with its row), and exactly when the cache
    passes ``max_states``."""

    n: int
    measure: Callable[[Any], int]
    row_bytes: int
    rows_allowed: int
    started: float
    stop_at: float
    max_states: int
    max_bytes: int

    def look(
        self, explored: int, states: list[Any], spent: tuple[int, int]
    ) -> tuple[str, int, tuple[int, int]]:
        """At `explored` cached configurations with these `states` interned, of which `spent`
        (how many, their bytes) were counted at the last look: why the search must stop (empty
        if it need not), the pushes and pops until the next look, and the states counted now."""
        if explored > self.max_states:
            return f"state budget of {self.max_states} states exhausted", 0, spent
        counted, states_bytes = spent
        state_bytes = self.measure(states[-1]) + _STATE_OVERHEAD_BYTES
        if len(states) > counted:
            states_bytes += (len(states) - counted) * state_bytes
            counted = len(states)
        key_bytes = _KEY_OVERHEAD_BYTES + sys.getsizeof(1 << (self.n + counted.bit_length()))
        cache_bytes = explored * key_bytes + states_bytes + min(counted, self.rows_allowed) * self.row_bytes
        if cache_bytes > self.max_bytes:
            reason = (
                f"memory budget of {_megabytes(self.max_bytes)} exhausted "
                f"({explored} cached states, about {_megabytes(cache_bytes)})"
            )
            return reason, 0, spent
        if _must_stop(time.perf_counter(), self.started, explored, self.stop_at):
            return _OUT_OF_TIME, 0, spent
        weight = key_bytes + state_bytes + (self.row_bytes if counted < self.rows_allowed else 0)
        room = (self.max_bytes - cache_bytes) // (2 * weight)
        return "", _countdown(room, explored, self.max_states), (counted, states_bytes)


def _countdown(room: int, explored: int, max_states: int) -> int:
    """The pushes and pops until the next look at the budgets: `_LOOK_EVERY`, fewer when the
    insertions that `room` allows come sooner, and the look exactly when the cache passes
    `max_states` (each push inserts one configuration)."""
    return min(max(1, min(_LOOK_EVERY, room)), max_states + 1 - explored)


def _unknown(best: _SearchResult, explored: int, reason: str) -> _SearchResult:
    """The verdict `unknown` with the longest linearizable prefix found so far."""
    return _SearchResult(Verdict.UNKNOWN, best.order, explored, reason=reason)


def _must_stop(now: float, started: float, explored: int, stop_at: float) -> bool:
    """Whether a search started at `started` must stop now to free its cache of `explored`
    entries by `stop_at`."""
    return now + min(_RELEASE_SHARE * (now - started), explored * _RELEASE_SECONDS_MAX) > stop_at


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):,.0f} MB"
