"""A decision procedure for traceable histories: kv (get/put/append) and registers with unique writes.

What it is
    The general linearizability search (`spark_checks.linearizability`) is exponential: on a kv
    key where 50 clients append and read concurrently it can run for minutes. When every written
    value is unique the history is *traceable*: the value a read returns says which writes it
    saw and in which order, as in Elle's list-append analysis (Kingsbury & Alvaro, "Elle:
    Inferring Isolation Anomalies from Experimental Observations", VLDB 2020; ``elle.list-append``
    infers each key's version order from the longest read). This module decides such a history
    in O(n log n) after decoding the reads (times the attributions of repeated values, below), and
    says when it cannot (`Fallback`), so the caller runs the search instead. For a single
    register with unique written values it is Gibbons & Korach's read-mapping case ("Testing
    Shared Memories", SIAM J. Computing 1997: linearizability of one register is NP-complete in
    general, polynomial when each read's write is known), and the conditions below are their
    *zones* (as restated by Golab, Li & Shah, PODC 2011).

The models (one partition: one key or one register)
    kv (Porcupine's kv model): the state is a string, initially ``s0``; ``put v`` sets it, ``append
    v`` concatenates, ``get`` returns it. register / cas-register with reads and writes only:
    ``write v`` is a put, there are no appends. Calls are in the model's prepared form: failed
    writes and reads with unknown results are already gone; an ``info`` call (or one never
    completed) may have taken effect at any time after its invocation, or never.

Preconditions (each failing one is a `Fallback` with its reason; the search then decides)
    1. The model is kv, register, or cas-register without compare-and-set calls (a CAS both reads
       and writes: it chains one value's epoch to the next, which this procedure does not model).
    2. No put (register write) writes the initial value, and for kv no put or append writes the
       empty string (an empty append changes nothing and an empty put restores the initial "":
       either would hide a write from the reads).
    3. kv: every read's value has one *decoding* as ``b + a1 + ... + ak``, with ``b`` the initial
       value or a put's value and each ``ai`` an appended value, once decodings that real time
       rules out are dropped (a base of the initial value when an ``ok`` put completed before the
       read was invoked; a write every copy of which was invoked after the read completed). Unique
       values are not enough alone: with appends "a", "b" and "ab" the read "ab" has two. A read
       with no decoding is a value no run of the writes produces: the history is invalid.
    4. Values written more than once (Porcupine's kv logs repeat a few) are told apart by the
       place the reads saw them in: a base must be put once, and the ``j``-th append after a base
       is one place in every linearization, so distinct places are distinct writes. Each way to
       attribute the places to the writes of their value (an injection) is decided on its own:
       the history is valid iff one of them is (a value seen in more places than it was appended
       is invalid). At most `MAX_ATTRIBUTIONS` ways, and at most `ATTRIBUTION_WORK_LIMIT` calls
       placed over all of them (ways times calls).
    5. Decoding costs at most `DECODE_WORK_LIMIT` substring probes (the sum of the distinct read
       lengths times the number of distinct append lengths).

Why a read determines its writes
    In any run the state is ``b + a1 + ... + ak``: ``b`` is the last put's value (or ``s0`` when no
    put has happened) and ``a1 ... ak`` are the appends since then, in order, each once. That is
    a decoding of the state, so when a read's value has exactly one decoding that real time
    allows, *every* linearization agrees on it: the read comes after put ``b`` (after no put, for
    ``s0``) and after ``a1 ... ak`` in that order, with no other write between ``b`` and the read.
    Under one attribution (precondition 4) each token is one write. For a register the decoding
    is the write of the value read (or the initial value).

The procedure
    * An *epoch* is the stretch of a linearization from a put (or the start, for ``s0``) to the
      next put. Each put happens once, so the reads that decode to base ``b`` all lie in ``b``'s
      one epoch and see prefixes of one append sequence ``L_b`` (the longest): otherwise invalid.
      An append seen under two bases, or twice, is invalid too. Every write a read saw must have
      taken effect, ``info`` or not.
    * A *block* is an epoch's observed part: put ``b``, then ``L_b`` in order, each read placed
      after the writes it saw and before the next one (reads that saw the same state, in any
      order). Inside a block this order is forced; with real time it is feasible iff no call
      completed before a call it must follow was invoked (checked with a running maximum of
      invocation indices).
    * Writes no read saw: an ``info`` one is left out (if it took effect, no read comes after it
      in its epoch, so removing it leaves every read's state unchanged); an ``ok`` one must be
      placed where no read sees it, i.e. outside every block.
    * Epochs never interleave and no read reveals the order between them. So a block's calls
      take a span of time in which nothing else happens: its put no later than ``lo`` (the
      earliest completion among its calls, infinite when all are ``info``), its last read no
      earlier than ``hi`` (the latest invocation). The initial value's block comes first
      (``lo = -inf``). A block with ``lo < hi`` is *forward*: it occupies at least ``[lo, hi]``
      and can be placed exactly there. A block with ``lo >= hi`` is *backward*: every call of it
      contains ``[hi, lo]``, so it can be placed at one instant there, which is no worse than
      any longer span (any feasible span meets ``[hi, lo]``). An unobserved ``ok`` write is a
      backward item over its own interval.
    * The history is linearizable iff (a) every block is feasible inside, (b) the forward
      blocks' zones ``(lo, hi)`` are pairwise disjoint, and (c) each backward item has an
      instant in its window outside every forward zone's interior. Necessity: in any
      linearization the blocks' spans are disjoint, contain their zones, and no write outside a
      block falls inside one (a read after it in that epoch would see it). Sufficiency: place
      each forward block greedily from ``lo``, each backward item at the first allowed instant
      of its window (the end of the zone it starts in, or its start), order calls by instant
      with a block's calls before an item at the same instant (an item's instant is an
      invocation index; a block's latest instant is its ``hi``, also one; a ``lo`` is a
      completion index, never equal to an invocation's). Instants are history indices, all
      distinct, so the boundary cases are exact.
    * Repeated values: every linearization attributes the places the reads saw to writes in one
      of the ways enumerated, and the procedure is exact for each, so "valid iff some attribution
      is" holds; a write of a repeated value that no place is attributed to is an unobserved write.
      The attributions are tried in turn until one is valid, or until a failure that the places
      alone explain (two reads disagree, or a call must follow one that completed before it was
      invoked, both calls being reads or writes that every attribution puts in the same place):
      the order of places is the same in every attribution, so each fails alike.
    * Sufficiency is also checked, not only argued: a valid verdict carries the linearization,
      which is replayed through the model's ``step`` and the real-time order before it is
      returned (a failure would be a bug here, and the caller falls back to the search).

Evidence
    ``valid``: the linearization (positions in the prepared calls; unobserved ``info`` writes left
    out). ``invalid``: the calls that cannot be placed, the one to blame first, and a sentence
    saying why (an undecodable read, two reads that disagree on an order, a call that completed
    before a call it must follow was invoked, two values that must both hold at once, a write
    that has nowhere to go).
"""

from __future__ import annotations

import bisect
import enum
import itertools
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from spark_checks.history import Verdict

MODELS: Final = ("kv", "register", "cas-register")
"""The models this procedure knows (cas-register only while no CAS call is left)."""

DECODE_WORK_LIMIT: Final = 20_000_000
"""Substring probes allowed for decoding the reads (a few seconds of Python at worst)."""

_DECODINGS_KEPT: Final = 8  # decodings of a read enumerated; a read with this many falls back
MAX_ATTRIBUTIONS: Final = 1024
"""Cases tried when values written more than once must be told apart (each costs O(n log n))."""
ATTRIBUTION_WORK_LIMIT: Final = 2_000_000
"""Ways times calls: placing a call costs a few microseconds, so all the ways take seconds at most."""

_INITIAL: Final = -1  # the base position of a read that saw no put


@dataclass(frozen=True)
class Fallback:
    """The history is not traceable in the sense above; `reason` says which precondition failed."""

    reason: str


@dataclass(frozen=True)
class Decision:
    """The verdict. For `valid`, `order` is a linearization (positions in the prepared calls);
    for `invalid`, `unplaceable` holds the positions of the calls that cannot be placed,
    `blocking` the one to blame first, and `why` the reason in words."""

    verdict: Verdict
    order: tuple[int, ...] = ()
    unplaceable: tuple[int, ...] = ()
    blocking: int = -1
    why: str = ""
    by_roles: bool = False
    """The failure follows from the places the reads saw alone (two reads disagree, or one call
    must follow another it completed before): the same whichever write fills each place."""


class Prepared(Protocol):
    """One partition's calls as the linearizability checker prepared them: position ``i`` is a
    call with model input ``inputs[i]``, output ``outputs[i]``, outcome ``outcomes[i]``, invoked
    at history index ``invoke[i]`` and completed at ``complete[i]`` (None: may be left out)."""

    @property
    def inputs(self) -> Sequence[Any]: ...
    @property
    def outputs(self) -> Sequence[Any]: ...
    @property
    def outcomes(self) -> Sequence[Any]: ...
    @property
    def invoke(self) -> Sequence[int]: ...
    @property
    def complete(self) -> Sequence[int | None]: ...


Describe = Callable[[int], str]
"""A call's description by position (the model's ``describe``), for the reasons given."""


def decide(
    model_name: str,
    prepared: Prepared,
    initial: Hashable,
    step: Callable[[Any, Any, Any, Any], Any],
    describe: Describe,
    stop_at: float = math.inf,
) -> Decision | Fallback:
    """Decide one partition of a traceable history, or say why it is not traceable.

    `model_name` is one of kv, register, cas-register (anything else falls back); `initial` is the
    model's initial state and `step` its transition function, used to replay a valid verdict's
    linearization. Past `stop_at` (a `time.perf_counter()` instant, looked at before each read value
    is decoded and between attributions) the answer is a `Fallback` saying so (the caller's search then
    answers unknown at once).
    """
    shape = _shape(model_name, prepared, initial)
    if isinstance(shape, Fallback):
        return shape

    def named(position: int) -> str:
        return f"{_brief(describe(position), 80)} (invoked at #{prepared.invoke[position]})"

    decoded = _decode_reads(shape, prepared, initial, named, stop_at)
    if not isinstance(decoded, dict):
        return decoded
    attributions = _attributions(shape, decoded, named)
    if not isinstance(attributions, tuple):
        return attributions
    cases, settled = attributions
    roles = _read_roles(decoded)
    failures: list[Decision] = []
    for case in cases:
        if failures and time.perf_counter() > stop_at:
            return Fallback(f"time budget exhausted after {len(failures)} of {len(cases)} attributions")
        outcome = _place(shape, _attribute(roles, case), prepared, named)
        if outcome.verdict is Verdict.VALID:
            problem = _replay_problem(outcome.order, prepared, initial, step)
            if problem:
                return Fallback(
                    f"the linearization built did not replay ({problem}): a bug, please report it"
                )
            return outcome
        failures.append(outcome)
        if outcome.by_roles and settled.issuperset(outcome.unplaceable):
            break  # the calls named fill the same places in every attribution: each fails alike
    first = failures[0]
    if len(cases) == 1:
        return first
    if len(failures) < len(cases) or all(failure.why == first.why for failure in failures):
        why = f"{first.why} (whichever write of each repeated value the reads saw: {len(cases)} ways)"
    else:
        why = (
            f"each of the {len(failures)} ways to tell apart the writes of the values written more than "
            f"once fails; with the first: {first.why}"
        )
    return Decision(Verdict.INVALID, (), first.unplaceable, first.blocking, why)


# ---------------------------------------------------------------------------------------
# Shape: which calls are reads, puts, appends; the preconditions on values
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Shape:
    reads: tuple[int, ...]  # positions of reads
    puts: dict[Hashable, list[int]]  # value -> positions of the puts (register writes) of it
    appends: dict[Hashable, list[int]]  # value -> positions of the appends of it (kv only)
    writes: tuple[int, ...]  # positions of every write
    read_value: dict[int, Hashable]  # read position -> value read
    is_kv: bool


def _shape(model_name: str, prepared: Prepared, initial: Hashable) -> _Shape | Fallback:
    if model_name not in MODELS:
        return Fallback(f"no decision procedure for the {model_name} model")
    is_kv = model_name == "kv"
    reads: list[int] = []
    writes: list[int] = []
    puts: dict[Hashable, list[int]] = {}
    appends: dict[Hashable, list[int]] = {}
    read_value: dict[int, Hashable] = {}
    for position, call_input in enumerate(prepared.inputs):
        op = call_input[0]
        if op in ("g", "r"):
            reads.append(position)
            read_value[position] = prepared.outputs[position]
            continue
        if op not in ("p", "a", "w"):
            return Fallback("compare-and-set calls: a CAS both reads and writes (not a read-mapping)")
        value = call_input[1]
        if is_kv and value == "":
            return Fallback(f"a {'put' if op == 'p' else 'append'} of the empty string (it is ambiguous)")
        if op != "a" and value == initial:
            return Fallback(f"a write of the initial value {_brief(initial)} (values are not unique)")
        (appends if op == "a" else puts).setdefault(value, []).append(position)
        writes.append(position)
    return _Shape(tuple(reads), puts, appends, tuple(writes), read_value, is_kv)


# ---------------------------------------------------------------------------------------
# Decoding each read into (base value, appended values)
# ---------------------------------------------------------------------------------------


class _InitialValue(enum.Enum):
    """The base of a read that saw no put (a value of its own: it equals no written value)."""

    INITIAL = "initial"

    # Compared by identity, so the identity hash agrees with equality; C's, where Enum's hashes
    # the name in Python (every role after the initial value holds it: millions of hashes).
    __hash__ = object.__hash__


_INITIAL_BASE: Final = _InitialValue.INITIAL
_Tokens = tuple[Hashable, tuple[Hashable, ...]]  # (base value or _INITIAL_BASE, appended values in order)
_Decoded = tuple[int, tuple[int, ...]]  # (base position or _INITIAL, append positions in order)


def _decode_reads(
    shape: _Shape, prepared: Prepared, initial: Hashable, describe: Describe, stop_at: float = math.inf
) -> dict[int, _Tokens] | Decision | Fallback:
    """Every read's decoding, or the first read with none (invalid), or an ambiguity (fallback).

    Decodings that real time rules out are dropped first: one with the initial value as base
    when an ``ok`` put completed before the read was invoked (that put precedes the read), and
    one that needs a write every copy of which was invoked after the read completed.
    """
    if not shape.is_kv:
        return _map_register_reads(shape, initial, describe)
    if not isinstance(initial, str):
        return Fallback(f"the initial value {_brief(initial)} is not a string")
    append_lengths = sorted({len(value) for value in shape.appends if isinstance(value, str)})
    base_lengths = sorted({len(value) for value in shape.puts if isinstance(value, str)} | {len(initial)})
    distinct = {value for value in shape.read_value.values() if isinstance(value, str)}
    work = sum(len(value) for value in distinct) * (len(append_lengths) + 1)
    if work > DECODE_WORK_LIMIT:
        return Fallback(
            f"decoding the reads would take {work:,} substring probes (limit {DECODE_WORK_LIMIT:,})"
        )
    invoke, complete = prepared.invoke, prepared.complete
    first_put_done = min(
        (c for positions in shape.puts.values() for c in (complete[p] for p in positions) if c is not None),
        default=math.inf,
    )
    earliest_put = {value: min(invoke[p] for p in positions) for value, positions in shape.puts.items()}
    earliest_append = {value: min(invoke[p] for p in positions) for value, positions in shape.appends.items()}
    cache: dict[str, list[_Tokens]] = {}
    decoded: dict[int, _Tokens] = {}
    for number, position in enumerate(shape.reads):
        value = shape.read_value[position]
        if not isinstance(value, str):
            return Fallback(f"{describe(position)} returned a value that is not a string")
        found = cache.get(value)
        if found is None:
            if time.perf_counter() > stop_at:
                return Fallback(f"time budget exhausted after decoding {number} of {len(shape.reads)} reads")
            found = _decode(value, initial, shape, append_lengths, base_lengths)
            cache[value] = found
        if len(found) >= _DECODINGS_KEPT:
            return Fallback(f"the value of {describe(position)} splits into writes in many ways")
        if len(found) > 1:
            done = complete[position]
            found = [
                (base, sequence)
                for base, sequence in found
                if (first_put_done > invoke[position] if base is _INITIAL_BASE else True)
                and (done is None or base is _INITIAL_BASE or earliest_put[base] < done)
                and (done is None or all(earliest_append[a] < done for a in sequence))
            ]
        if not found:
            why = f"{describe(position)}: no sequence of the writes produces this value"
            return Decision(Verdict.INVALID, unplaceable=(position,), blocking=position, why=why)
        if len(found) > 1:
            return Fallback(f"the value of {describe(position)} splits into writes in more than one way")
        decoded[position] = found[0]
    return decoded


def _decode(
    value: str, initial: str, shape: _Shape, append_lengths: list[int], base_lengths: list[int]
) -> list[_Tokens]:
    """The decodings of `value`, at most `_DECODINGS_KEPT` of them (more are not needed)."""
    n = len(value)
    appends = shape.appends
    # ways[i] != 0 iff value[i:] is a sequence of appended values (a reachability table, so the
    # enumeration below never walks into a dead end).
    ways = [False] * (n + 1)
    ways[n] = True
    for i in range(n - 1, -1, -1):
        for length in append_lengths:
            if i + length > n:
                break
            if ways[i + length] and value[i : i + length] in appends:
                ways[i] = True
                break
    found: list[_Tokens] = []
    for length in base_lengths:
        if length > n or not ways[length]:
            continue
        prefix = value[:length]
        bases: list[Hashable] = ([_INITIAL_BASE] if prefix == initial else []) + (
            [prefix] if prefix in shape.puts else []
        )
        for base in bases:
            _appended(value, length, append_lengths, appends, ways, [], base, found)
            if len(found) >= _DECODINGS_KEPT:
                return found
    return found


def _appended(
    value: str,
    i: int,
    append_lengths: list[int],
    appends: Mapping[Hashable, Any],
    ways: list[bool],
    sequence: list[str],
    base: Hashable,
    found: list[_Tokens],
) -> None:
    """Add the decodings of ``value[i:]`` after `sequence` to `found`, up to `_DECODINGS_KEPT`."""
    # Iterative over the common case (one way on), recursive only where the decoding branches.
    while i < len(value):
        options = [
            length
            for length in append_lengths
            if i + length <= len(value) and ways[i + length] and value[i : i + length] in appends
        ]
        if len(options) > 1:
            for length in options:
                if len(found) >= _DECODINGS_KEPT:
                    return
                _appended(
                    value,
                    i + length,
                    append_lengths,
                    appends,
                    ways,
                    [*sequence, value[i : i + length]],
                    base,
                    found,
                )
            return
        sequence.append(value[i : i + options[0]])
        i += options[0]
    found.append((base, tuple(sequence)))


def _map_register_reads(
    shape: _Shape, initial: Hashable, describe: Describe
) -> dict[int, _Tokens] | Decision:
    decoded: dict[int, _Tokens] = {}
    for position in shape.reads:
        value = shape.read_value[position]
        if value == initial:
            decoded[position] = (_INITIAL_BASE, ())
        elif value in shape.puts:
            decoded[position] = (value, ())
        else:
            why = f"{describe(position)}: no write wrote this value and it is not the initial value"
            return Decision(Verdict.INVALID, unplaceable=(position,), blocking=position, why=why)
    return decoded


# ---------------------------------------------------------------------------------------
# Values written more than once: which write did the reads see?
# ---------------------------------------------------------------------------------------

_Role = tuple[Hashable, ...]
"""A place in every linearization that a read's token names: ``("p", b)``, the put of base ``b``;
``("a", b, j, v)``, the ``j``-th append after base ``b``, of value ``v``."""
_Case = dict[_Role, int]  # role -> the position of the write that fills it


def _attributions(
    shape: _Shape, decoded: dict[int, _Tokens], describe: Describe
) -> tuple[list[_Case], frozenset[int]] | Decision | Fallback:
    """The ways to attribute each token the reads saw to a write (see the module docstring).

    A base ``b`` put once names one epoch, so the ``j``-th append after it is one place in any
    linearization: two different roles are two different writes. A value appended ``k`` times and
    seen in ``r`` roles is attributed by each injection of the roles into its ``k`` appends; with
    ``r > k`` there is none and the history is invalid. Also returns the *settled* calls: the
    reads and the writes every attribution puts in the same place.
    """
    roles: dict[Hashable, set[_Role]] = {}  # appended value -> its roles
    reader: dict[_Role, int] = {}  # a read that saw the role
    fixed: _Case = {}
    for read, (base, sequence) in decoded.items():
        if base is not _INITIAL_BASE:
            copies = shape.puts[base]
            if len(copies) > 1:
                return Fallback(f"the value {_brief(base)} is put more than once and read as a base")
            fixed[("p", base)] = copies[0]
        for number, value in enumerate(sequence):
            role = ("a", base, number, value)
            roles.setdefault(value, set()).add(role)
            reader.setdefault(role, read)
    choices: list[tuple[list[_Role], list[tuple[int, ...]]]] = []
    for value, value_roles in roles.items():
        copies = shape.appends[value]
        ordered = sorted(value_roles, key=repr)
        if len(copies) == 1 and len(ordered) == 1:
            fixed[ordered[0]] = copies[0]
            continue
        if len(ordered) > len(copies):
            reads = sorted({reader[role] for role in ordered})
            why = (
                f"the reads saw {describe(copies[0])} in {len(ordered)} places (after different writes), "
                f"but it was appended {_plural(len(copies), 'time')}: {'; '.join(map(describe, reads[:4]))}"
            )
            return Decision(Verdict.INVALID, unplaceable=tuple(reads), blocking=reads[0], why=why)
        choices.append((ordered, list(itertools.permutations(copies, len(ordered)))))
    count = math.prod(len(options) for _, options in choices)
    calls = len(shape.reads) + len(shape.writes)
    if count * calls > ATTRIBUTION_WORK_LIMIT:
        return Fallback(
            f"{count:,} ways to tell apart the writes of repeated values, of {calls:,} calls each "
            f"(limit {ATTRIBUTION_WORK_LIMIT:,} calls placed)"
        )
    if count > MAX_ATTRIBUTIONS:
        return Fallback(
            f"{count:,} ways to tell apart the writes of repeated values (limit {MAX_ATTRIBUTIONS})"
        )
    cases: list[_Case] = []
    for picked in itertools.product(*(options for _, options in choices)):
        case = dict(fixed)
        for (chosen_roles, _), positions in zip(choices, picked, strict=True):
            case.update(zip(chosen_roles, positions, strict=True))
        cases.append(case)
    return cases, frozenset(decoded) | frozenset(fixed.values())


def _read_roles(decoded: dict[int, _Tokens]) -> dict[int, tuple[_Role | None, tuple[_Role, ...]]]:
    """Each read's roles: its base's (None for the initial value) and its appends', in order."""
    return {
        read: (
            None if base is _INITIAL_BASE else ("p", base),
            tuple(("a", base, number, value) for number, value in enumerate(sequence)),
        )
        for read, (base, sequence) in decoded.items()
    }


def _attribute(roles: dict[int, tuple[_Role | None, tuple[_Role, ...]]], case: _Case) -> dict[int, _Decoded]:
    """Each read's decoding as write positions under one attribution."""
    fill = case.__getitem__
    return {
        read: (_INITIAL if base is None else fill(base), tuple(map(fill, appends)))
        for read, (base, appends) in roles.items()
    }


# ---------------------------------------------------------------------------------------
# Blocks, zones and placement
# ---------------------------------------------------------------------------------------


@dataclass
class _Block:
    base: int  # the put's position, or _INITIAL
    appends: tuple[int, ...]  # the longest observed sequence L_b
    groups: list[list[int]]  # chain: [put], reads at 0, [a1], reads at 1, ... (positions)
    lo: float = math.inf  # earliest completion among its calls (-inf for the initial block)
    hi: float = -math.inf  # latest invocation among its calls
    lo_call: int = -1
    hi_call: int = -1


def _place(shape: _Shape, decoded: dict[int, _Decoded], prepared: Prepared, describe: Describe) -> Decision:
    invoke = prepared.invoke
    completion = [math.inf if c is None else float(c) for c in prepared.complete]

    blocks = _build_blocks(decoded, describe)
    if isinstance(blocks, Decision):
        return blocks
    observed = {position for block in blocks for group in block.groups for position in group}

    # (a) each block on its own: a call may not complete before a call it must follow is invoked.
    forward: list[_Block] = []
    backward: list[_Block] = []
    for block in blocks:
        latest = -math.inf
        latest_call = -1
        for group in block.groups:
            for position in group:
                if completion[position] < latest:
                    why = (
                        f"{describe(position)} completed at #{prepared.complete[position]}, before "
                        f"{describe(latest_call)} was invoked, yet must follow it: "
                        f"{_order_reason(block, position, latest_call, decoded)}"
                    )
                    return Decision(
                        Verdict.INVALID,
                        unplaceable=tuple(sorted((position, latest_call), key=invoke.__getitem__)),
                        blocking=position,
                        why=why,
                        by_roles=True,
                    )
            for position in group:
                if invoke[position] > latest:
                    latest, latest_call = invoke[position], position
                if completion[position] < block.lo:
                    block.lo, block.lo_call = completion[position], position
        block.hi, block.hi_call = latest, latest_call
        if block.base == _INITIAL:
            block.lo = -math.inf
        (forward if block.lo < block.hi else backward).append(block)

    # (b) forward zones pairwise disjoint.
    forward.sort(key=lambda block: block.lo)
    for before, after in itertools.pairwise(forward):
        if after.lo < before.hi:
            return _overlap(before, after, prepared, describe)

    # (c) every backward item (backward blocks, unobserved ok writes) at an instant outside the zones.
    starts = [block.lo for block in forward]
    items: list[tuple[float, float, _Block | int]] = [(block.hi, block.lo, block) for block in backward]
    items += [
        (float(invoke[position]), completion[position], position)
        for position in shape.writes
        if position not in observed and prepared.complete[position] is not None
    ]
    placed: list[tuple[float, int, int, int, int]] = []  # (instant, kind, rank, order, position)
    for rank, (earliest, latest, item) in enumerate(sorted(items, key=lambda entry: entry[0])):
        instant = earliest
        zone = bisect.bisect_left(starts, earliest) - 1
        if zone >= 0 and forward[zone].hi > earliest:
            instant = forward[zone].hi
        if instant > latest:
            return _no_room(item, forward[zone], earliest, latest, prepared, describe)
        calls = [item] if isinstance(item, int) else [p for group in item.groups for p in group]
        placed += [(instant, 1, rank, order, position) for order, position in enumerate(calls)]

    # The certificate: forward blocks greedily from their lo, in chain order.
    for rank, block in enumerate(forward):
        clock = block.lo
        for group in block.groups:
            group_end = clock
            for position in group:
                instant = max(clock, float(invoke[position]))
                placed.append((instant, 0, rank, len(placed), position))
                group_end = max(group_end, instant)
            clock = group_end
    placed.sort()
    return Decision(Verdict.VALID, order=tuple(entry[4] for entry in placed))


def _build_blocks(decoded: dict[int, _Decoded], describe: Describe) -> list[_Block] | Decision:
    """One block per base that some read saw; an invalid verdict when reads disagree."""
    by_base: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for read, (base, sequence) in decoded.items():
        by_base.setdefault(base, []).append((read, sequence))
    seen_in: dict[int, int] = {}  # append position -> a read that saw it
    blocks: list[_Block] = []
    for base, reads in by_base.items():
        longest_read, longest = max(reads, key=lambda entry: len(entry[1]))
        if len(set(longest)) != len(longest):
            twice = next(a for a in longest if longest.count(a) > 1)
            why = f"{describe(longest_read)} contains {describe(twice)} twice, but that append happened once"
            return Decision(Verdict.INVALID, unplaceable=(longest_read,), blocking=longest_read, why=why)
        for read, sequence in reads:
            if sequence != longest[: len(sequence)]:
                why = (
                    f"{describe(read)} and {describe(longest_read)} saw the appends after the same "
                    "value in different orders (each append happens once)"
                )
                return Decision(
                    Verdict.INVALID, unplaceable=(read, longest_read), blocking=read, why=why, by_roles=True
                )
        for append in longest:
            if append in seen_in:
                other = seen_in[append]
                why = (
                    f"{describe(longest_read)} and {describe(other)} both saw {describe(append)}, but "
                    "after different puts (an append happens once)"
                )
                return Decision(
                    Verdict.INVALID, unplaceable=(longest_read, other), blocking=longest_read, why=why
                )
            seen_in[append] = longest_read
        at_length: dict[int, list[int]] = {}
        for read, sequence in reads:
            at_length.setdefault(len(sequence), []).append(read)
        groups: list[list[int]] = [] if base == _INITIAL else [[base]]
        groups.append(at_length.get(0, []))
        for number, append in enumerate(longest, start=1):
            groups += [[append], at_length.get(number, [])]
        blocks.append(_Block(base, longest, [group for group in groups if group]))
    return blocks


def _order_reason(block: _Block, later: int, earlier: int, decoded: dict[int, _Decoded]) -> str:
    """Why `later` must follow `earlier` in its block, in words."""
    if later in decoded and earlier in decoded:
        return "it saw more of the appends after the same value than that read did"
    if later in decoded:
        return "it saw that write's effect"
    if earlier in decoded:
        seen = "the initial value" if block.base == _INITIAL else "the value put"
        count = len(decoded[earlier][1])
        appended = "with no append yet" if count == 0 else f"and {_plural(count, 'append')} after it"
        later_part = "" if count == 0 else " after those"
        return f"that read saw {seen} {appended}, not this append, which a longer read saw{later_part}"
    return "a read saw the value in which this write follows that one"


def _overlap(before: _Block, after: _Block, prepared: Prepared, describe: Describe) -> Decision:
    invoke = prepared.invoke

    def span(block: _Block) -> str:
        start = (
            "from the start"
            if block.base == _INITIAL
            else f"from index {prepared.complete[block.lo_call]} ({describe(block.lo_call)} completed)"
        )
        what = "the initial value" if block.base == _INITIAL else f"the value of {describe(block.base)}"
        return f"{what} must hold {start} until #{invoke[block.hi_call]} ({describe(block.hi_call)})"

    calls = {before.hi_call, after.hi_call, after.lo_call} | (
        {before.lo_call} if before.lo_call >= 0 else set()
    )
    why = f"{span(before)}, and {span(after)}: these overlap, and each put takes effect once"
    return Decision(
        Verdict.INVALID,
        unplaceable=tuple(sorted(calls, key=invoke.__getitem__)),
        blocking=after.lo_call,
        why=why,
    )


def _no_room(
    item: _Block | int, zone: _Block, earliest: float, latest: float, prepared: Prepared, describe: Describe
) -> Decision:
    invoke = prepared.invoke
    holder = "the initial value" if zone.base == _INITIAL else f"the value of {describe(zone.base)}"
    end = f"index {invoke[zone.hi_call]} ({describe(zone.hi_call)} invoked)"
    if isinstance(item, int):
        what = f"{describe(item)} must take effect between index {invoke[item]} and {prepared.complete[item]}"
        calls = {item, zone.hi_call}
        blame = item
    else:
        what = (
            f"the value of {describe(item.base)} must be written and read between index {earliest:.0f} "
            f"and {latest:.0f}"
        )
        calls = {item.base, item.hi_call, zone.hi_call}
        blame = item.base
    why = f"{what}, but no read may see it while {holder} must hold, until {end}"
    return Decision(
        Verdict.INVALID, unplaceable=tuple(sorted(calls, key=invoke.__getitem__)), blocking=blame, why=why
    )


# ---------------------------------------------------------------------------------------
# Replaying the certificate
# ---------------------------------------------------------------------------------------


def _replay_problem(
    order: Sequence[int],
    prepared: Prepared,
    initial: Hashable,
    step: Callable[[Any, Any, Any, Any], Any],
) -> str:
    """'' when `order` is a legal run that respects real time and holds every required call."""
    state: Any = initial
    latest_invoke = -1
    for position in order:
        state = step(
            state, prepared.inputs[position], prepared.outputs[position], prepared.outcomes[position]
        )
        if state is None:
            return f"the call at position {position} is illegal there"
        latest_invoke = max(latest_invoke, prepared.invoke[position])
        complete = prepared.complete[position]
        if complete is not None and complete < latest_invoke:
            return f"the call at position {position} completed before a call placed before it was invoked"
    required = {position for position, complete in enumerate(prepared.complete) if complete is not None}
    missing = required - set(order)
    if missing or len(order) != len(set(order)):
        return f"{len(missing)} required calls left out or a call placed twice"
    return ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _brief(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def evidence(decision: Decision, invoke: Sequence[int], describe: Describe) -> dict[str, Any]:
    """A decision as the linearizability checker's evidence fields (calls named by invocation
    index), with ``method: traceable`` and, when invalid, ``why``."""
    if decision.verdict is Verdict.VALID:
        return {"method": "traceable", "linearization": [invoke[i] for i in decision.order]}
    stuck = sorted(decision.unplaceable, key=invoke.__getitem__)
    return {
        "method": "traceable",
        "unlinearizable": [invoke[i] for i in stuck],
        "blocking_call": invoke[decision.blocking],
        "descriptions": {str(invoke[i]): describe(i) for i in stuck},
        "why": decision.why,
    }
