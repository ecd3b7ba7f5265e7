"""Speed-ups for the spec's frozen dataclasses: faster construction, cached hashes, a fast `replace`.

The model checker builds every successor state by copying its predecessor with a few fields
changed, and hashes every state it reaches. These helpers only make that cheaper: the
classes stay ordinary frozen, slotted dataclasses, and equality, hashing, construction and
`dataclasses.replace` keep their meaning.

* `fast_init`: a frozen dataclass's generated `__init__` stores each field with
  `object.__setattr__` (the class's own `__setattr__` refuses); storing through each slot's
  descriptor instead does the same at about half the cost.
* `cache_hash`: a state shares most of its parts with its predecessor (an action changes
  one replica, not all), so remembering each part's hash makes hashing a new state cost
  one level instead of the whole tree.
* `replace`: `dataclasses.replace` looks up the class's fields and checks each one on
  every call; this one generates, once per class, a function that passes the unchanged
  fields straight to the constructor (as `namedtuple._replace` does).
* `memoized`: for pure functions of frozen values that the checker calls with the same
  arguments over and over (the same log truncated at the same offset in thousands of
  interleavings). Besides skipping the work, equal results become the *same* object, so
  their hash is computed once and comparing two states that share them is an identity test.
* `SharedSteps`: a stuck check (`spec.machines.not_stuck`) applies actions to a state the
  checker has just found, and the checker applies the same actions to it again when it
  expands it a level later; the successors the check computed are handed over instead.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from functools import lru_cache
from types import FunctionType
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
S = TypeVar("S")
A = TypeVar("A")
D = TypeVar("D", bound="DataclassInstance")
P = ParamSpec("P")

MEMO_SIZE = 1 << 16
"""Entries each memoized function keeps (least recently used dropped first): enough for the
scenarios' state spaces, bounded so a long run does not grow without limit."""


def memoized(function: Callable[P, T]) -> Callable[P, T]:
    """`functools.lru_cache(maxsize=MEMO_SIZE)` that keeps `function`'s signature for the
    type checker. Only for pure functions whose arguments are all hashable values."""
    return cast("Callable[P, T]", lru_cache(maxsize=MEMO_SIZE)(function))


def _compile(name: str, source: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """Define the function `name` from `source` (generated from a class's own field names)."""
    exec(source, namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def fast_init(cls: type[D]) -> type[D]:
    """Give a frozen, slotted dataclass an `__init__` with the same signature and defaults
    that stores the fields through the slot descriptors.

    Supports what the spec uses: positional-or-keyword fields with or without a default or
    default factory, and `init=False` fields with a default. Anything else is refused here
    rather than constructed wrongly.
    """
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: fast_init does not run __post_init__")
    namespace: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    parameters: list[str] = []
    body: list[str] = []
    for item in dataclasses.fields(cls):
        name = item.name
        if item.kw_only:
            raise TypeError(f"{cls.__name__}.{name}: fast_init does not support kw_only fields")
        namespace[f"_set_{name}"] = cls.__dict__[name].__set__
        if item.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = item.default
            value = f"_default_{name}"
        elif item.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = item.default_factory
            value = f"_factory_{name}()"
        elif item.init:
            value = ""
        else:
            raise TypeError(f"{cls.__name__}.{name}: an init=False field needs a default")
        if not item.init:
            body.append(f"    _set_{name}(self, {value})")
            continue
        if item.default_factory is not dataclasses.MISSING:
            parameters.append(f"{name}=_MISSING")
            body.append(f"    if {name} is _MISSING:\n        {name} = {value}")
        else:
            parameters.append(f"{name}={value}" if value else name)
        body.append(f"    _set_{name}(self, {name})")
    source = f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    # The module's names first, so the annotations copied below resolve (`typing.get_type_hints`):
    # tools that build instances from the signature, such as CrossHair, need the field types.
    init = _compile("__init__", source, {**vars(sys.modules[cls.__module__]), **namespace})
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def cache_hash(cls: type[D]) -> type[D]:
    """Make a frozen, slotted dataclass with a `_hash: int | None` field (init=False,
    compare=False) compute its hash once per instance: the hash of the tuple of its compared
    fields, as the dataclass's generated `__hash__` computes it (generated here with the
    caching inline, so a first hash costs one call, not two)."""
    # dataclasses' rule for which fields the hash covers
    names = [
        item.name for item in dataclasses.fields(cls) if (item.compare if item.hash is None else item.hash)
    ]
    fields = "".join(f"self.{name}, " for name in names)
    source = (
        "def __hash__(self):\n"
        "    value = self._hash\n"
        "    if value is None:\n"
        f"        value = hash(({fields}))\n"
        "        _set_hash(self, value)\n"
        "    return value\n"
    )
    cached = _compile("__hash__", source, {"_set_hash": cls.__dict__["_hash"].__set__})
    cached.__qualname__ = f"{cls.__qualname__}.__hash__"
    cls.__hash__ = cached  # type: ignore[method-assign]
    return cls


_REPLACERS: dict[type, Callable[..., Any]] = {}


def _make_replacer(cls: type) -> Callable[..., Any]:
    """Generate `def replace(obj, /, *, a=_KEEP, ...): return cls(obj.a if a is _KEEP else a, ...)`."""
    compiled = cls.__dict__.get("__replace__")
    if compiled is not None and not isinstance(compiled, FunctionType):
        # the class was compiled by `kafkaspec.native`, with this same function in C
        _REPLACERS[cls] = compiled
        return cast("Callable[..., Any]", compiled)
    names = [item.name for item in dataclasses.fields(cls) if item.init]
    parameters = "".join(f", {name}=_KEEP" for name in names)
    arguments = ", ".join(f"obj.{name} if {name} is _KEEP else {name}" for name in names)
    source = f"def replace(obj, /, *{parameters}):\n    return cls({arguments})\n"
    replacer = _compile("replace", source, {"cls": cls, "_KEEP": object()})
    _REPLACERS[cls] = replacer
    return replacer


def replace(obj: T, /, **changes: Any) -> T:
    """`dataclasses.replace(obj, **changes)` for the spec's dataclasses, faster."""
    replacer = _REPLACERS.get(obj.__class__) or _make_replacer(obj.__class__)
    result: T = replacer(obj, **changes)
    return result


_NOT_KNOWN: Any = object()


class SharedSteps(Generic[S, A]):
    """One model's `step`, shared between its stuck check and the checker's expansion.

    The stuck check runs on every state the checker finds, and applies the protocol's actions
    to it until one changes it; the checker applies those same actions to that state when it
    expands it, one level later. `remember` (for the check) applies an action and keeps the
    successor; `step` (for the checker) hands a kept successor over once, or applies the
    action. The step function is pure, so a successor handed over equals the one it would
    compute. At most `capacity` successors are kept (all are dropped when full: a state the
    search never expands, at the depth bound or expanded by another process, leaves its
    successors behind). One per model: nothing is shared between models or processes.

    Measured with callgrind (instructions, not disturbed by load): consumer-two-revocation-rounds
    10% fewer (4.73 to 4.25 billion, imports excluded; 8,511 of 65,000 steps handed over);
    scenarios whose properties leave out the stuck check are unchanged."""

    def __init__(self, step: Callable[[S, A], S | None], capacity: int = MEMO_SIZE) -> None:
        self._step = step
        self._capacity = capacity
        # by state, then by action: the checker's many steps that find nothing kept cost one
        # lookup by the state's cached hash, with no (state, action) key built and hashed
        # (callgrind, compiled, the check alone, against one dictionary keyed by the pair:
        # consumer-two-revocation-rounds 511.7 -> 500.4 M instructions, classic-late-sync-fixed
        # 132.4 -> 123.0 M, consumer-late-heartbeat 53.0 -> 51.7 M)
        self._kept: dict[S, dict[A, S | None]] = {}
        self._count = 0  # successors kept and not yet handed over

    def remember(self, state: S, action: A) -> S | None:
        """`step(state, action)`, kept for the checker."""
        successor = self._step(state, action)
        kept = self._kept
        if self._count >= self._capacity:
            kept.clear()
            self._count = 0
        by_action = kept.get(state)
        if by_action is None:
            kept[state] = {action: successor}
        else:
            by_action[action] = successor
        self._count += 1
        return successor

    def step(self, state: S, action: A) -> S | None:
        """`step(state, action)`: the successor `remember` kept (then forgotten), else computed."""
        by_action = self._kept.get(state)
        if by_action is None:
            return self._step(state, action)
        successor: S | None = by_action.pop(action, _NOT_KNOWN)
        if successor is _NOT_KNOWN:
            return self._step(state, action)
        self._count -= 1
        return successor
