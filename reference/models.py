"""Sequential models that recorded histories are checked against for linearizability.

What it is
    A linearizability checker asks: is there one total order of the calls, consistent with
    their real-time intervals, that a *sequential* object would have produced? This module
    holds those sequential objects. Each model is a small class implementing the
    `SequentialModel` protocol:

    * ``init(initial) -> state``: the state before any call; states are hashable so the
      checker can memoise (linearized set, state) pairs;
    * ``prepare(call, conventions) -> (input, output, outcome) | None``: a recorded call in
      the model's normalised, hashable form, with the source conventions applied; ``None``
      when the call can be left out of the search (it did not happen, or it observes
      nothing and changes nothing, e.g. a read with an unknown result);
    * ``step(state, call_input, call_output, outcome_info) -> state | None``: the state
      after the call, or ``None`` when the call's observed result is impossible in
      ``state``. It is pure and never mutates ``state``;
    * ``partition_key(call) -> Hashable``: calls with different keys touch independent
      objects and are checked separately (P-compositionality, Horn & Kroening 2015);
    * ``describe(call) -> str``: a short human description for reports.

    ``outcome_info`` is ``"ok"`` (the call took effect and its output was observed),
    ``"info"`` (it may or may not have taken effect; its output is unknown, so any output
    is legal and the checker may also leave it out) or ``"fail"`` (it executed and reported
    a failure that still constrains the state: only a CAS under the ``no-effect``
    convention, i.e. "the CAS returned false because the value differed").

The models
    ``register``        read / write of one value (Knossos ``knossos.model/register``).
    ``cas-register``    read / write / cas ``[from to]`` (Knossos ``cas-register``;
                        Porcupine's ``etcdModel`` in ``porcupine_test.go``).
    ``kv``              string values with get / put / append, ``""`` initially, one object
                        per key (Porcupine's ``kvModel``: partitioned by key).
    ``multi-register``  ``f = "txn"``, value ``[[read k v] [write k v] ...]`` applied
                        atomically to a map of registers (Knossos ``multi-register``).
    ``mutex``           acquire / release of one lock (Knossos ``mutex``; no owner).
    ``fifo-queue``      enqueue v / dequeue -> v (Knossos ``fifo-queue``).
    ``set``             add v / read -> the whole set (Knossos ``set``).
    ``unordered-queue`` enqueue v / dequeue -> any pending v (Knossos ``unordered-queue``:
                        a multiset of pending elements).
    ``kafka-log``       one Kafka topic-partition as an append-only log with dense
                        offsets: ``send v -> offset``, ``poll [from position] ->
                        [[offset v] ...]``. A simple sequential model of a partition for
                        linearizability (the Kafka anomaly checker is separate).

Where it comes from
    Knossos ``knossos.model`` (``step`` returns a new model or ``inconsistent``) and
    Porcupine ``model.go`` (``Init``, ``Step(state, input, output) -> (ok, state)``,
    ``Partition``, ``DescribeOperation``). Nothing was copied; the semantics were read and
    restated. Porcupine has no native indeterminate operations: its callers give crashed
    calls an "unknown" output that every state accepts; here that is ``"info"``.

Conventions (the ``conventions`` dict a history reader attaches; see `resolve_conventions`)
    ``initial``      the initial value: Knossos cas-register data uses 0, Porcupine's etcd
                     logs nil (None), Porcupine kv ``""`` per key (kv treats None as ``""``).
                     For multi-register a dict gives per-register initial values (missing
                     registers start at None) and a scalar is every register's initial
                     value. For fifo-queue, unordered-queue, set and kafka-log a list gives
                     the initial contents and anything else means empty; for mutex a true
                     value means held; for kv anything but a string means ``""`` (readers
                     that do not know the model attach a register's initial value, e.g.
                     Knossos's 0).
    ``nil_read``     ``"unconstrained"``: a read that returned nil tells nothing (Knossos:
                     the invocation's nil was never filled in) and is left out; or
                     ``"absent"``: it observed the nil value (Porcupine's etcd logs: the key
                     did not exist). Under ``absent`` a kv get of nil observed ``""``, and
                     a fifo-queue or unordered-queue dequeue of nil observed an empty
                     queue, and a set read of nil observed the empty set. ``"knossos"``: as
                     Knossos's models read it: a register's (cas, multi-register, kv) nil
                     read tells nothing, as under ``unconstrained``, but its queues and set
                     have no such escape: a dequeue of nil needs a nil pending (so it is
                     illegal on an empty queue too), a crashed dequeue took a nil if it
                     took anything (Knossos keeps its invocation's nil), and a set read of
                     nil equals no set.
    ``failed_cas``   ``"did-not-happen"``: a ``fail`` CAS had no effect and is dropped
                     (Knossos drops every ``:fail``); or ``"no-effect"``: the CAS executed
                     and returned false because the value differed from ``from``, so the
                     state at its linearization point was not ``from`` (Porcupine's etcd
                     parser). Other failed calls are always dropped.
    ``failed_read``  ``"did-not-happen"`` or ``"unknown"`` (the source marks timed-out reads
                     as failed). Reads change nothing, so both leave the read out; the
                     value is recorded so a verdict states what was assumed.

Values are frozen before they reach ``step``: lists become tuples and dicts become sorted
item tuples, so they are hashable. EDN keywords that a reader kept as ``":read"`` are
accepted for function names.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Final, Literal, Protocol, TypeVar, cast

Observed = Literal["ok", "fail", "info"]
"""How a prepared call ended (see the module docstring)."""

Prepared = tuple[Any, Any, Observed]
"""A call in a model's normalised form: (input, output, outcome)."""

S = TypeVar("S", bound=Hashable)


class Nil(enum.Enum):
    """The nil register value as a state: ``step`` returns None for "impossible", so no
    state is ever None (Porcupine's etcd model uses -1000000 for the same reason)."""

    NIL = "nil"

    # The one member is compared by identity, so the identity hash agrees with equality; it is
    # C's, where Enum's hashes the member's name in Python (the search hashes states millions
    # of times).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "nil"


NIL: Final = Nil.NIL

DEFAULT_CONVENTIONS: Final[Mapping[str, Any]] = {
    "initial": None,
    "nil_read": "unconstrained",
    "failed_cas": "did-not-happen",
    "failed_read": "did-not-happen",
}
"""The conventions used for keys a history does not state (Knossos's, with a nil initial)."""

_ALLOWED: Final[Mapping[str, tuple[str, ...]]] = {
    "nil_read": ("unconstrained", "absent", "knossos"),
    "failed_cas": ("did-not-happen", "no-effect"),
    "failed_read": ("did-not-happen", "unknown"),
}


def resolve_conventions(conventions: Mapping[str, Any] | None) -> dict[str, Any]:
    """The four conventions with defaults for missing keys; a bad value is a `ValueError`.

    Keys other than the four are ignored (a reader may attach more context).
    """
    given = dict(conventions or {})
    resolved = {key: given.get(key, default) for key, default in DEFAULT_CONVENTIONS.items()}
    for key, allowed in _ALLOWED.items():
        if resolved[key] not in allowed:
            raise ValueError(f"convention {key} must be one of {', '.join(allowed)}; got {resolved[key]!r}")
    return resolved


class CallLike(Protocol):
    """What a model reads from a call (`spark_checks.history.Call` has these fields)."""

    @property
    def f(self) -> str: ...
    @property
    def input(self) -> Any: ...
    @property
    def output(self) -> Any: ...
    @property
    def outcome(self) -> enum.Enum: ...  # its value is "ok", "fail" or "info"
    @property
    def key(self) -> Any: ...


class SequentialModel(Protocol[S]):
    """A sequential specification (see the module docstring for each method's contract)."""

    name: str

    def init(self, initial: Any) -> S: ...

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None: ...

    def step(self, state: S, call_input: Any, call_output: Any, outcome_info: Observed) -> S | None: ...

    def partition_key(self, call: CallLike) -> Hashable: ...

    def describe(self, call: CallLike) -> str: ...


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def freeze(value: Any) -> Hashable:
    """A hashable copy of a JSON-like value: lists to tuples, dicts to sorted item tuples."""
    if value.__class__ in _SCALARS:  # most values of a history: no isinstance chain
        scalar: Hashable = value  # not typing.cast: a function call at run time
        return scalar
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted(((freeze(k), freeze(v)) for k, v in value.items()), key=repr))
    if isinstance(value, set | frozenset):
        return frozenset(freeze(item) for item in value)
    return cast(Hashable, value)


_SCALARS: Final = frozenset({int, str, float, bool, type(None)})
"""The classes `freeze` returns as they are (immutable, hashable)."""


def _value(value: Any) -> Hashable:
    """A register value as stored in a state: frozen, with None as `NIL`."""
    if value is None:
        return NIL
    if value.__class__ in _SCALARS:  # most values: no second call (`freeze`)
        scalar: Hashable = value
        return scalar
    return freeze(value)


def key_partition(call: CallLike) -> Hashable:
    """The partition key of a model whose objects are told apart by the calls' ``key`` alone
    (the models' ``partition_key`` where that is so: a checker may then group calls by key)."""
    return freeze(call.key)


def _contents(initial: Any) -> tuple[Any, ...]:
    """A queue's or log's initial contents: a list gives them; anything else means empty
    (readers that do not know the model attach a register's initial value, e.g. 0)."""
    return tuple(freeze(item) for item in initial) if isinstance(initial, list | tuple) else ()


def _name(value: Any) -> Any:
    """An operation or register name without an EDN keyword's leading colon."""
    return value.lstrip(":") if isinstance(value, str) else value


def _outcome(call: CallLike) -> Observed:
    # `_value_`, not `value`: the same string without the enum property's descriptor call
    # (once per call of every history).
    observed: Observed = call.outcome._value_
    return observed


def _unsupported(model: str, call: CallLike) -> ValueError:
    return ValueError(f"{model} model: unsupported operation {_brief(call.f)} (value {_brief(call.input)})")


def _brief(value: Any, limit: int = 80) -> str:
    """`repr(value)` cut for a message (a value may be megabytes)."""
    try:
        text = repr(value)
    except ValueError:  # an integer beyond str()'s digit limit
        text = f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _string(model: str, what: str, value: Any) -> str:
    """A value the model holds as a string (kv: Porcupine's kvModel concatenates strings)."""
    if isinstance(value, str):
        return value
    raise ValueError(f"{model} model: {what} a string; got {_brief(value)}")


def _show(value: Any) -> str:
    return "nil" if value is None else repr(value) if isinstance(value, str) else str(value)


def _result(call: CallLike) -> str:
    outcome = _outcome(call)
    if outcome == "ok":
        return _show(call.output)
    return "?" if outcome == "info" else "fail"


# ---------------------------------------------------------------------------------------
# Registers
# ---------------------------------------------------------------------------------------


class CasRegister:
    """One register: ``read -> v``, ``write v``, ``cas [from to]`` (prepared as op tuples).

    Prepared inputs: ``("r",)`` with output the value read, ``("w", v)``, ``("c", from, to)``.
    """

    name = "cas-register"
    _allow_cas = True

    def init(self, initial: Any) -> Hashable:
        return _value(initial)

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome: Observed = call.outcome._value_  # `_outcome` inline: once per call of every history
        if f == "read":
            if outcome != "ok":
                return None  # a failed or indeterminate read observes nothing, changes nothing
            if call.output is None and conventions["nil_read"] != "absent":
                return None
            return ("r",), _value(call.output), "ok"
        if f == "write":
            return None if outcome == "fail" else (("w", _value(call.input)), None, outcome)
        if f == "cas" and self._allow_cas:
            pair = call.input if call.input is not None else call.output
            if not isinstance(pair, list | tuple) or len(pair) != 2:
                raise ValueError(f"cas value must be [from to]; got {_brief(pair)}")
            if outcome == "fail" and conventions["failed_cas"] == "did-not-happen":
                return None
            return ("c", _value(pair[0]), _value(pair[1])), None, outcome
        raise _unsupported(self.name, call)

    def step(
        self, state: Hashable, call_input: Any, call_output: Any, outcome_info: Observed
    ) -> Hashable | None:
        # No typing.cast in the hot path: it is a function call at run time.
        op = call_input[0]
        if op == "r":
            return state if state == call_output else None
        new: Hashable = call_input[1] if op == "w" else call_input[2]
        if op == "w":
            return new
        # cas: ok requires the expected value; fail (no-effect) requires a different one;
        # info took effect exactly when the value matched.
        if outcome_info == "ok":
            return new if state == call_input[1] else None
        if outcome_info == "fail":
            return state if state != call_input[1] else None
        return new if state == call_input[1] else state

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        f = _name(call.f)
        if f == "read":
            return f"read -> {_result(call)}"
        if f == "write":
            return f"write {_show(call.input)}" + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")
        if f == "cas" and isinstance(call.input, list | tuple) and len(call.input) == 2:
            ok = {"ok": "ok", "fail": "false", "info": "?"}[_outcome(call)]
            return f"cas {_show(call.input[0])}->{_show(call.input[1])} -> {ok}"
        return f"{call.f} {call.input!r}"


class Register(CasRegister):
    """One register with ``read`` and ``write`` only (Knossos ``register``)."""

    name = "register"
    _allow_cas = False


# ---------------------------------------------------------------------------------------
# Key-value store (Porcupine kv)
# ---------------------------------------------------------------------------------------


class KeyValue:
    """One key of a string store: ``get -> v``, ``put v``, ``append v`` (initially ``""``).

    The state is the key's value: the checker partitions by key, so a partition holds the
    calls of one key. Prepared inputs: ``("g",)``, ``("p", v)``, ``("a", v)``.
    """

    name = "kv"

    def init(self, initial: Any) -> str:
        return initial if isinstance(initial, str) else ""

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome = _outcome(call)
        if f == "get":
            if outcome != "ok":
                return None
            if call.output is None:
                if conventions["nil_read"] != "absent":
                    return None
                return ("g",), "", "ok"  # an absent key reads as the empty string
            return ("g",), _string(self.name, "a get returns", call.output), "ok"
        if f in ("put", "append"):
            value = "" if call.input is None else _string(self.name, f"{f} takes", call.input)
            return None if outcome == "fail" else ((f[0], value), None, outcome)
        raise _unsupported(self.name, call)

    def step(self, state: str, call_input: Any, call_output: Any, outcome_info: Observed) -> str | None:
        op = call_input[0]
        if op == "g":
            return state if state == call_output else None
        value: str = call_input[1]
        return value if op == "p" else state + value

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        f = _name(call.f)
        key = _show(call.key)
        if f == "get":
            return f"get {key} -> {_result(call)}"
        return f"{f} {key} {_show(call.input)}" + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")


# ---------------------------------------------------------------------------------------
# Multi-register (Knossos)
# ---------------------------------------------------------------------------------------

_TXN_FUNCTIONS: Final = ("read", "write")

MultiState = tuple[Any, frozenset[tuple[Any, Any]]]
"""(initial value of registers not listed, frozenset of (register, value))."""


class MultiRegister:
    """Registers updated by atomic transactions: ``txn [[read k v] [write k v] ...]``.

    Prepared input: a tuple of ``("r", k, v)`` / ``("w", k, v)`` micro-operations (a read
    with an unknown value is removed under ``nil_read = unconstrained``; an indeterminate
    transaction keeps only its writes). Not partitioned: a transaction spans registers.
    """

    name = "multi-register"

    def init(self, initial: Any) -> MultiState:
        if isinstance(initial, Mapping):
            return None, frozenset((_name(k), freeze(v)) for k, v in initial.items())
        return freeze(initial), frozenset()

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        if _name(call.f) != "txn":
            raise _unsupported(self.name, call)
        outcome = _outcome(call)
        if outcome == "fail":
            return None
        source = call.output if outcome == "ok" and call.output is not None else call.input
        if not isinstance(source, list | tuple):
            raise ValueError(f"txn value must be a list of [f k v] micro-operations; got {_brief(source)}")
        micro: list[tuple[str, Any, Any]] = []
        for item in source:
            if not isinstance(item, list | tuple) or len(item) != 3 or _name(item[0]) not in _TXN_FUNCTIONS:
                raise ValueError(f"txn micro-operation must be [read|write k v]; got {_brief(item)}")
            kind, key, value = _name(item[0]), freeze(_name(item[1])), freeze(item[2])
            if kind == "read":
                if outcome != "ok" or (value is None and conventions["nil_read"] != "absent"):
                    continue
                micro.append(("r", key, value))
            else:
                micro.append(("w", key, value))
        if not micro:
            return None
        return tuple(micro), None, outcome

    def step(
        self, state: MultiState, call_input: Any, call_output: Any, outcome_info: Observed
    ) -> MultiState | None:
        default, items = state
        values = dict(items)
        for kind, key, value in call_input:
            if kind == "r":
                if values.get(key, default) != value:
                    return None
            else:
                values[key] = value
        return default, frozenset(values.items())

    def partition_key(self, call: CallLike) -> Hashable:
        return None

    def describe(self, call: CallLike) -> str:
        source = call.output if _outcome(call) == "ok" and call.output is not None else call.input
        if not isinstance(source, list | tuple):
            return f"txn {source!r}"
        parts = [
            f"{str(_name(item[0]))[0]} {_name(item[1])} {_show(item[2])}"
            for item in source
            if isinstance(item, list | tuple) and len(item) == 3
        ]
        suffix = "" if _outcome(call) == "ok" else f" ({_outcome(call)})"
        return f"txn [{', '.join(parts)}]{suffix}"


# ---------------------------------------------------------------------------------------
# Mutex, FIFO queue
# ---------------------------------------------------------------------------------------


class Mutex:
    """One lock without an owner: ``acquire`` needs it free, ``release`` needs it held."""

    name = "mutex"

    def init(self, initial: Any) -> bool:
        return bool(initial)  # None / False: free

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        if f not in ("acquire", "release"):
            raise _unsupported(self.name, call)
        outcome = _outcome(call)
        return None if outcome == "fail" else (f == "acquire", None, outcome)

    def step(self, state: bool, call_input: Any, call_output: Any, outcome_info: Observed) -> bool | None:
        return None if state == call_input else bool(call_input)

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        return str(_name(call.f)) + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")


class FifoQueue:
    """A FIFO queue: ``enqueue v``, ``dequeue -> v`` (the head; an empty queue is illegal).

    Prepared inputs: ``("e", v)`` and ``("d",)`` with output the value, or ``("d?",)`` for a
    dequeue whose value is unknown (it removed the head, whatever it was) and ``("d0",)``
    for a nil dequeue under ``nil_read = absent`` (it observed an empty queue); under
    ``knossos`` a nil dequeue is ``("d",)`` with output None (it dequeued a nil).
    """

    name = "fifo-queue"

    def init(self, initial: Any) -> tuple[Any, ...]:
        return _contents(initial)

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome = _outcome(call)
        if outcome == "fail":
            if f in ("enqueue", "dequeue"):
                return None
            raise _unsupported(self.name, call)
        if f == "enqueue":
            return ("e", freeze(call.input)), None, outcome
        if f == "dequeue":
            if outcome == "info":  # Knossos: the invocation's nil, if it happened
                return (("d",) if conventions["nil_read"] == "knossos" else ("d?",)), None, "info"
            if call.output is None and conventions["nil_read"] != "knossos":
                return (("d?",) if conventions["nil_read"] == "unconstrained" else ("d0",)), None, "ok"
            return ("d",), freeze(call.output), "ok"
        raise _unsupported(self.name, call)

    def step(
        self, state: tuple[Any, ...], call_input: Any, call_output: Any, outcome_info: Observed
    ) -> tuple[Any, ...] | None:
        op = call_input[0]
        if op == "e":
            return (*state, call_input[1])
        if op == "d0":
            return state if not state else None
        if not state or (op == "d" and state[0] != call_output):
            return None
        return state[1:]

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        if _name(call.f) == "dequeue":
            return f"dequeue -> {_result(call)}"
        return f"enqueue {_show(call.input)}" + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")


# ---------------------------------------------------------------------------------------
# Set, unordered queue (Knossos)
# ---------------------------------------------------------------------------------------


class Set:
    """A set: ``add v`` adds v, ``read -> [v ...]`` returns every element (Knossos ``set``).

    A read must return exactly the set, in any order (Knossos compares the read set with the
    model's): a read that names an element twice is never legal (Porcupine's set test), and
    one that misses an element or adds one is not either. Prepared inputs: ``("a", v)``, and
    ``("r",)`` with output the frozenset read (a tuple when the read repeated an element,
    which no state equals). A nil read tells nothing under ``nil_read = unconstrained``,
    observed the empty set under ``absent`` and, under ``knossos``, equals no set.
    """

    name = "set"

    def init(self, initial: Any) -> frozenset[Any]:
        return frozenset(_contents(initial))

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome = _outcome(call)
        if f == "add":
            return None if outcome == "fail" else (("a", freeze(call.input)), None, outcome)
        if f == "read":
            if outcome != "ok":
                return None
            if call.output is None:
                if conventions["nil_read"] == "knossos":
                    return ("r",), None, "ok"  # Knossos compares the set with nil: never equal
                return None if conventions["nil_read"] == "unconstrained" else (("r",), frozenset(), "ok")
            if not isinstance(call.output, list | tuple | set | frozenset):
                raise ValueError(f"set model: a read returns a list of elements; got {_brief(call.output)}")
            elements = [freeze(item) for item in call.output]
            read = frozenset(elements)
            return ("r",), (read if len(read) == len(elements) else tuple(elements)), "ok"
        raise _unsupported(self.name, call)

    def step(
        self, state: frozenset[Any], call_input: Any, call_output: Any, outcome_info: Observed
    ) -> frozenset[Any] | None:
        if call_input[0] == "a":
            return state.union((call_input[1],))
        return state if state == call_output else None

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        if _name(call.f) == "read":
            return f"read -> {_result(call)}"
        return f"add {_show(call.input)}" + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")

    def describe_state(self, state: frozenset[Any]) -> str:
        return _show_elements(state)


Multiset = frozenset[tuple[Any, int]]
"""A multiset as (element, count) pairs, every count at least 1: hashable and unordered."""


def _multiset_add(bag: Multiset, value: Any) -> Multiset:
    counts = dict(bag)
    counts[value] = counts.get(value, 0) + 1
    return frozenset(counts.items())


def _multiset_remove(bag: Multiset, value: Any) -> Multiset | None:
    """`bag` less one `value`, or None when it holds none."""
    counts = dict(bag)
    count = counts.get(value, 0)
    if not count:
        return None
    if count == 1:
        del counts[value]
    else:
        counts[value] = count - 1
    return frozenset(counts.items())


def _show_elements(elements: Iterable[Any]) -> str:
    shown = sorted(_show_safely(element) for element in elements)
    return "{" + ", ".join(shown) + "}"


def _show_safely(value: Any) -> str:
    try:
        return _show(value)
    except ValueError:  # an integer beyond str()'s digit limit
        return _brief(value)


Debts = tuple[Multiset, ...]
"""An unordered queue's state: groups of pending elements, each group enqueued after one more
dequeue whose value is unknown (see `UnorderedQueue`)."""


class UnorderedQueue:
    """A queue that does not order its pending elements (Knossos ``unordered-queue``, the model
    Jepsen's queue tests use): ``enqueue v`` adds v to a multiset, ``dequeue -> v`` needs a
    pending v and removes one copy of it.

    A dequeue whose value nobody saw (an ``ok`` one that returned nil under ``nil_read =
    unconstrained``, as fifo-queue reads it, or an indeterminate one under ``absent``) removed
    *some* element pending at that moment: a step with several next states. Porcupine's
    power-set construction (a state is every multiset the queue may hold) grows by the number of
    pending values with each such dequeue (36,036 multisets after 7 of 10 crashed dequeues of a
    400-call history, and a search that did not end), so the state here stays exact and small
    instead: the pending elements in groups, ``(g0, g1, ..., gk)``, where each of the k unknown
    dequeues came after the groups before it and took one element of them. Which one does not
    matter until it must: the unknown dequeues can take distinct elements exactly when the
    first j groups hold at least j elements for every j (Hall's condition, the candidates being
    nested), a ``dequeue -> v`` takes the youngest copy of v (an older copy serves every unknown
    dequeue a younger one does), and a queue observed empty (``nil_read = absent``) held exactly
    k elements. When the first j groups hold exactly j elements the first j unknown dequeues
    took all of them: those groups are dropped, so equal possibilities are one state.

    Knossos's own model cannot dequeue nil, so Knossos can only leave an indeterminate dequeue
    out; that gives the same verdict unless a dequeue observed an empty queue, which only
    ``absent`` allows: under ``unconstrained`` an indeterminate dequeue is left out (the search
    may leave out any indeterminate call). Prepared inputs: ``("e", v)``, ``("d",)`` with output
    the value, ``("d?",)`` for an unknown value and ``("d0",)`` for an observed empty queue.
    """

    name = "unordered-queue"

    def init(self, initial: Any) -> Debts:
        bag: Multiset = frozenset()
        for item in _contents(initial):
            bag = _multiset_add(bag, item)
        return (bag,)

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome = _outcome(call)
        if f not in ("enqueue", "dequeue"):
            raise _unsupported(self.name, call)
        if outcome == "fail":
            return None
        if f == "enqueue":
            return ("e", freeze(call.input)), None, outcome
        if outcome == "info":
            if conventions["nil_read"] == "knossos":  # Knossos: the invocation's nil, if it happened
                return ("d",), None, "info"
            return None if conventions["nil_read"] == "unconstrained" else (("d?",), None, "info")
        if call.output is None and conventions["nil_read"] != "knossos":
            return (("d?",) if conventions["nil_read"] == "unconstrained" else ("d0",)), None, "ok"
        return ("d",), freeze(call.output), "ok"

    def step(self, state: Debts, call_input: Any, call_output: Any, outcome_info: Observed) -> Debts | None:
        op = call_input[0]
        if op == "e":
            return (*state[:-1], _multiset_add(state[-1], call_input[1]))
        if op == "d?":
            return _settled((*state, frozenset()))
        if op == "d0":
            pending = sum(count for group in state for _, count in group)
            return (frozenset(),) if pending == len(state) - 1 else None
        for position in range(len(state) - 1, -1, -1):  # the youngest copy of the value
            rest = _multiset_remove(state[position], call_output)
            if rest is not None:
                return _settled((*state[:position], rest, *state[position + 1 :]))
        return None

    partition_key = staticmethod(key_partition)

    def describe(self, call: CallLike) -> str:
        if _name(call.f) == "dequeue":
            return f"dequeue -> {_result(call)}"
        return f"enqueue {_show(call.input)}" + ("" if _outcome(call) == "ok" else f" ({_outcome(call)})")

    def describe_state(self, state: Debts) -> str:
        groups = [_show_elements(v for v, n in group for _ in range(n)) for group in state]
        return ", then a dequeue of one of the above, ".join(groups)


def _settled(groups: Debts) -> Debts | None:
    """`groups` (see `UnorderedQueue`) with the groups the first unknown dequeues must have
    emptied dropped, or None when the unknown dequeues cannot all have taken an element."""
    held = 0
    tight = 0
    for debts in range(1, len(groups)):
        held += sum(count for _, count in groups[debts - 1])
        if held < debts:
            return None
        if held == debts:
            tight = debts
    return groups[tight:] if tight else groups


# ---------------------------------------------------------------------------------------
# Kafka partition log
# ---------------------------------------------------------------------------------------


def _single_micro(value: Any, f: str) -> tuple[Any, ...] | None:
    """The one Jepsen micro-operation ``[f k ...]`` of a value, or None for a plain value."""
    if (
        isinstance(value, list | tuple)
        and value
        and isinstance(value[0], list | tuple)
        and value[0]
        and _name(value[0][0]) == f
    ):
        if len(value) != 1:
            raise ValueError(
                f"kafka-log: one {f} micro-operation per call (one partition); got {_brief(value)}"
            )
        return tuple(value[0])
    return None


class KafkaLog:
    """One topic-partition as a log with dense offsets 0, 1, 2, ... (the state: the values).

    ``send``: input ``v`` or Jepsen's ``[["send", k, v]]``; output the offset, ``[offset v]``
    or ``[["send", k, [offset v]]]`` (an unknown offset: None). The record gets offset
    ``len(log)``. ``poll``: input a start position (int) or None / ``[["poll"]]``; output
    ``[[offset v] ...]`` or Jepsen's ``[["poll", {k: [[offset v] ...]}]]``. Every record
    returned must be in the log at its offset, and with a start position they are the
    contiguous run of records from it (a poll may return fewer than exist, even none).
    Prepared: ``("s", v)`` with output the offset or None; ``("p", position)`` with output a
    tuple of ``(offset, value)``. Partitioned by key (the topic-partition), as a string.
    """

    name = "kafka-log"

    def init(self, initial: Any) -> tuple[Any, ...]:
        return _contents(initial)

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        f = _name(call.f)
        outcome = _outcome(call)
        if f == "send":
            if outcome == "fail":
                return None
            micro = _single_micro(call.input, "send")
            value = micro[2] if micro is not None else call.input
            offset: Any = None
            if outcome == "ok":
                out_micro = _single_micro(call.output, "send")
                result = out_micro[2] if out_micro is not None else call.output
                offset = result[0] if isinstance(result, list | tuple) else result
                if offset is not None and not isinstance(offset, int):
                    raise ValueError(
                        f"send result must be an offset or [offset value]; got {_brief(call.output)}"
                    )
            return ("s", freeze(value)), offset, outcome
        if f == "poll":
            if outcome != "ok" or call.output is None:
                return None  # reads with unknown results change nothing
            position = call.input if isinstance(call.input, int) else None
            out_micro = _single_micro(call.output, "poll")
            records: Any = call.output
            if out_micro is not None:
                by_key = out_micro[1] if len(out_micro) > 1 else {}
                if not isinstance(by_key, Mapping) or len(by_key) > 1:
                    raise ValueError(f"kafka-log checks one partition per poll; got {_brief(call.output)}")
                records = next(iter(by_key.values()), [])
            pairs = freeze(records)
            if not isinstance(pairs, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
                raise ValueError(f"poll result must be [[offset value] ...]; got {_brief(call.output)}")
            return ("p", position), pairs, "ok"
        raise _unsupported(self.name, call)

    def step(
        self, state: tuple[Any, ...], call_input: Any, call_output: Any, outcome_info: Observed
    ) -> tuple[Any, ...] | None:
        if call_input[0] == "s":
            if call_output is not None and call_output != len(state):
                return None
            return (*state, call_input[1])
        position = call_input[1]
        for number, (offset, value) in enumerate(call_output):
            if position is not None and offset != position + number:
                return None
            if not isinstance(offset, int) or not 0 <= offset < len(state) or state[offset] != value:
                return None
        return state

    def partition_key(self, call: CallLike) -> Hashable:
        if call.key is not None:
            return str(call.key)
        for value, f in ((call.input, "send"), (call.output, "poll")):
            try:
                micro = _single_micro(value, f)
            except ValueError:
                return None
            if micro is not None and f == "send" and len(micro) == 3:
                return str(micro[1])
            if micro is not None and f == "poll" and len(micro) == 2 and isinstance(micro[1], Mapping):
                keys = list(micro[1])
                if len(keys) == 1:
                    return str(keys[0])
        return None

    def describe(self, call: CallLike) -> str:
        if _name(call.f) == "poll":
            return f"poll {_show(call.input)} -> {_result(call)}"
        return f"send {_show(call.input)} -> {_result(call)}"


MODEL_CLASSES: Final[Mapping[str, type[SequentialModel[Any]]]] = {
    "register": Register,
    "cas-register": CasRegister,
    "kv": KeyValue,
    "multi-register": MultiRegister,
    "mutex": Mutex,
    "fifo-queue": FifoQueue,
    "set": Set,
    "unordered-queue": UnorderedQueue,
    "kafka-log": KafkaLog,
}
"""The models by name (the names `kafkaspec verify --model` accepts)."""
