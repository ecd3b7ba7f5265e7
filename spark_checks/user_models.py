"""Your own sequential model: the protocol a user's class follows, and the adapter that checks it.

What it is
    ``kafkaspec verify --model MODULE:CLASS`` checks a history against a model the user wrote,
    with the same search as the built-in models (`spark_checks.linearizability`). The user's
    class follows a small protocol in the style of Porcupine's ``Model`` (``model.go``:
    ``Init``, ``Step``, ``Partition``, ``DescribeOperation``, ``DescribeState``) and
    Knossos's ``knossos.model/Model`` (``step`` returns the next model or ``inconsistent``):

    * ``init() -> state``: the state before any call;
    * ``step(state, input, output) -> state | None``: the state after a call that got
      ``output``, or None when that output is impossible in ``state`` (so None is never a
      state). Pure: it must not change ``state``;
    * optional ``partition(input) -> key``: calls with different keys touch independent
      objects and are checked separately (without it the history is one part, as Porcupine
      does when ``Partition`` is nil);
    * optional ``describe_operation(input, output) -> str`` and ``describe_state(state) ->
      str``: the text reports show for a call and for a state (default: ``repr``).

    A *nondeterministic* model (Porcupine's ``NondeterministicModel``) says so with a class
    attribute ``nondeterministic = True``; its ``init()`` returns the possible initial states
    and its ``step`` the possible next states (any iterable; empty when the output is
    impossible). It is checked as Porcupine's ``ToModel`` checks it: by the power-set
    construction, where a state of the search is the frozenset of the states the object may be
    in (`PowerSetModel`).

What a model sees
    ``input`` is an `Input`: the call's function ``f`` (``"read"``; an EDN keyword without its
    colon), the invocation's ``value`` and the operation's ``key`` (None when the history has
    none). ``output`` is the completion's value for an ``ok`` call and `UNKNOWN` for an
    indeterminate one (``info``, or an invocation that never completed): such a call may have
    taken effect at any time after its invocation, or never, so the search may also leave it
    out, and ``step`` must accept any output for it (Porcupine's callers give crashed calls an
    output every state accepts; Jepsen's ``info``). ``fail`` calls did not happen and are never
    given to the model. Values are frozen so they can be hashed: lists become tuples, maps
    tuples of (key, value) pairs sorted by the key's ``repr``, sets frozensets. The process is
    not part of the input: as in Porcupine, a model describes the object, not who calls it
    (and calls with equal inputs stay interchangeable for the search's symmetry reduction).
    The source conventions (``--initial``, ``--nil-read``, ``--failed-cas``) belong to the
    built-in models; a user's model sees the values as recorded and decides what they mean.

States
    The search memoises (linearized calls, state) pairs in a set, so states must be hashable,
    and two states that behave alike should compare equal (or the search explores both).
    Python's ``__eq__`` and ``__hash__`` are the hooks Porcupine's ``Equal`` and ``Hash`` are:
    tuples, frozensets, strings, numbers and frozen dataclasses work as they are; a list or
    dict state is refused with a message. A nondeterministic model's states must be hashable
    too: they are members of a frozenset.

Errors
    `load_model` turns every problem with ``MODULE:CLASS`` (the form, an import that fails,
    a missing name, a class that cannot be made, an object without ``init`` and ``step``, an
    initial state that cannot be hashed) into one `ModelSpecError` naming it. An exception
    raised by the model's own code during the check, or a state that cannot be hashed, is a
    `ModelError` naming the method, the input and the exception: a bug in the user's model,
    which the command line reports as bad input (exit 2), not as a bug in kafkaspec.

Spark
    A task imports the model's module by name, so the executors need it: `ship_to_spark` adds
    the module's top-level file or package to the Spark context (``addPyFile``), which works
    for ``local`` mode and a cluster alike. Python workers are reused, so two different
    modules of the same name in one Spark session are not told apart.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar

from reference.models import CallLike, Observed, Prepared, freeze

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

State = TypeVar("State", bound=Hashable)


class Unknown:
    """The type of `UNKNOWN`: the output of a call whose result nobody saw."""

    _instance: ClassVar[Unknown | None] = None

    def __new__(cls) -> Unknown:  # one instance, also after unpickling in a Spark task
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> tuple[type[Unknown], tuple[()]]:
        return Unknown, ()


UNKNOWN: Final = Unknown()
"""The output `step` gets for an indeterminate call (``info``, or never completed): any output
is possible, and the call may also have had no effect (the search may leave it out)."""


@dataclass(frozen=True, slots=True)
class Input:
    """What a call asked for: the function, the invocation's value, the operation's key."""

    f: str
    value: Any = None
    key: Hashable = None


class Model(Protocol[State]):
    """A deterministic sequential model (Porcupine's ``Model``).

    Optional methods, used when present: ``partition(input) -> Hashable``,
    ``describe_operation(input, output) -> str``, ``describe_state(state) -> str``."""

    def init(self) -> State:
        """The state before any call."""
        ...

    def step(self, state: State, input: Input, output: Any) -> State | None:
        """The state after the call, or None when `output` is impossible in `state`."""
        ...


class NondeterministicModel(Protocol[State]):
    """A nondeterministic sequential model (Porcupine's ``NondeterministicModel``): the class
    sets ``nondeterministic = True``; the optional methods are `Model`'s."""

    nondeterministic: bool
    """True: what marks a model as nondeterministic (a class attribute, ``nondeterministic = True``)."""

    def init(self) -> Iterable[State]:
        """The possible states before any call (at least one)."""
        ...

    def step(self, state: State, input: Input, output: Any) -> Iterable[State]:
        """Every possible state after the call; empty when `output` is impossible in `state`."""
        ...


class ModelSpecError(ValueError):
    """``--model MODULE:CLASS`` names no usable model (the message says why, in one line)."""


class ModelError(ValueError):
    """The user's model failed during the check: it raised, or returned an unhashable state."""


_OPTIONAL: Final = ("partition", "describe_operation", "describe_state")


def is_user_model(name: str) -> bool:
    """Whether a `--model` value names a user's model (``MODULE:CLASS``) rather than a built-in."""
    return ":" in name


def load_model(spec: str) -> UserModel:
    """The model ``MODULE:CLASS`` (or ``MODULE:object``) names, adapted to the search; a
    `ModelSpecError` saying what is wrong otherwise. A class is made with no arguments. The
    module is imported from `sys.path` (the command line puts the current folder on it)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute or ":" in attribute or module_name.startswith("."):
        raise ModelSpecError(f"--model {spec}: expected MODULE:CLASS, e.g. mymodels:Register")
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as error:  # a missing module, a syntax error, what its code raises
        raise ModelSpecError(f"--model {spec}: cannot import {module_name}: {_one_line(error)}") from None
    try:
        found = getattr(module, attribute)
    except AttributeError:
        raise ModelSpecError(f"--model {spec}: module {module_name} has no {attribute}") from None
    if isinstance(found, type):
        try:
            found = found()
        except Exception as error:
            raise ModelSpecError(f"--model {spec}: {attribute}() failed: {_one_line(error)}") from None
    for method in ("init", "step"):
        if not callable(getattr(found, method, None)):
            raise ModelSpecError(
                f"--model {spec}: {attribute} is not a model: it has no {method} method "
                "(a model has init() and step(state, input, output); see kafkaspec.model)"
            )
    for method in _OPTIONAL:
        if hasattr(found, method) and not callable(getattr(found, method)):
            raise ModelSpecError(f"--model {spec}: {attribute}.{method} is not a method")
    nondeterministic = getattr(found, "nondeterministic", False)
    if nondeterministic not in (True, False):
        raise ModelSpecError(f"--model {spec}: {attribute}.nondeterministic must be True or False")
    adapter = PowerSetModel(spec, found) if nondeterministic else UserModel(spec, found)
    try:
        adapter.init(None)
    except ModelError as error:
        raise ModelSpecError(f"--model {spec}: {str(error).removeprefix(f'model {spec}: ')}") from None
    return adapter


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _brief(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # a user's __repr__ may fail too
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _name(f: Any) -> str:
    return f.lstrip(":") if isinstance(f, str) else str(f)


class UserModel:
    """A deterministic user model as the search's `reference.models.SequentialModel`: calls
    are prepared as (`Input`, output or `UNKNOWN`, outcome) and `step` calls the user's."""

    def __init__(self, name: str, model: Any) -> None:
        self.name = name
        self.model = model
        self._step = model.step
        self._partition = getattr(model, "partition", None)
        self._describe_operation = getattr(model, "describe_operation", None)
        self._describe_state = getattr(model, "describe_state", None)

    def _call(self, method: str, *arguments: Any) -> Any:
        try:
            return getattr(self.model, method)(*arguments)
        except Exception as error:
            raise ModelError(f"model {self.name}: {method} raised {_one_line(error)}") from None

    def init(self, initial: Any) -> Hashable:
        """The user's initial state (the `--initial` convention is the built-in models')."""
        state: Hashable = _hashable(self.name, "init()", self._call("init"))
        if state is None:
            raise ModelError(
                f"model {self.name}: init() returned None, which cannot be a state (a step's None "
                "means impossible): use another value for the empty state"
            )
        return state

    def prepare(self, call: CallLike, conventions: Mapping[str, Any]) -> Prepared | None:
        outcome: Observed = call.outcome.value
        if outcome == "fail":
            return None
        output = freeze(call.output) if outcome == "ok" else UNKNOWN
        return _input(call), output, outcome

    def step(self, state: Hashable, call_input: Input, call_output: Any, outcome_info: Observed) -> Any:
        try:
            after = self._step(state, call_input, call_output)
        except Exception as error:
            raise ModelError(
                f"model {self.name}: step raised {_one_line(error)} on {_brief(call_input)} "
                f"-> {_brief(call_output)} in state {_brief(state)}"
            ) from None
        if after is None:
            return None
        try:
            hash(after)  # the search's cache would fail on it, as a bug in kafkaspec
        except TypeError:
            _hashable(self.name, f"step on {_brief(call_input)}", after)
        return after

    def partition_key(self, call: CallLike) -> Hashable:
        if self._partition is None:
            return None
        key = freeze(self._call("partition", _input(call)))
        if not _json_like(key):
            raise ModelError(
                f"model {self.name}: partition returned {_brief(key)}: a key must be a string, number, "
                "bool, None or a tuple of these (parts are named by their key in JSON)"
            )
        return key

    def describe(self, call: CallLike) -> str:
        prepared = self.prepare(call, {})
        output = call.output if prepared is None else prepared[1]  # a failed call is shown too
        if self._describe_operation is None:
            return f"{_name(call.f)} {_brief(freeze(call.input))} -> {_brief(output)}"
        return str(self._call("describe_operation", _input(call), output))

    def describe_state(self, state: Any) -> str:
        if self._describe_state is None:
            return _brief(state, 400)
        return str(self._call("describe_state", state))


class PowerSetModel(UserModel):
    """A nondeterministic user model made deterministic by the power-set construction
    (Porcupine's ``NondeterministicModel.ToModel``): a state is the frozenset of the states the
    object may be in; a step maps every member and takes the union, and a call is impossible
    when the union is empty."""

    def init(self, initial: Any) -> frozenset[Any]:
        possible = self._call("init")
        try:
            states = frozenset(possible)
        except TypeError:
            raise ModelError(
                f"model {self.name}: init() must return an iterable of hashable states; "
                f"got {_brief(possible)}"
            ) from None
        if not states:
            raise ModelError(f"model {self.name}: init() returned no state")
        return states

    def step(
        self, state: Hashable, call_input: Input, call_output: Any, outcome_info: Observed
    ) -> frozenset[Any] | None:
        after: frozenset[Any] = frozenset()
        for each in state:  # type: ignore[attr-defined]  # a frozenset this adapter made
            try:
                possible = self._step(each, call_input, call_output)
            except Exception as error:
                raise ModelError(
                    f"model {self.name}: step raised {_one_line(error)} on {_brief(call_input)} "
                    f"-> {_brief(call_output)} in state {_brief(each)}"
                ) from None
            try:
                after = after.union(possible) if after else frozenset(possible)
            except TypeError:
                raise ModelError(
                    f"model {self.name}: step must return an iterable of hashable states; got "
                    f"{_brief(possible)} (on {_brief(call_input)} -> {_brief(call_output)} "
                    f"in state {_brief(each)})"
                ) from None
        return after or None

    def describe_state(self, state: Any) -> str:
        members = sorted(UserModel.describe_state(self, each) for each in state)
        return "{" + ", ".join(members) + "}"


def _input(call: CallLike) -> Input:
    return Input(_name(call.f), freeze(call.input), freeze(call.key))


def _json_like(key: Any) -> bool:
    if key is None or isinstance(key, str | int | float | bool):
        return True
    return isinstance(key, tuple) and all(_json_like(item) for item in key)


def _hashable(name: str, what: str, state: Any) -> Any:
    try:
        hash(state)
    except TypeError:
        raise ModelError(
            f"model {name}: {what} returned an unhashable state ({type(state).__name__}): states must be "
            "hashable (a tuple, frozenset, string, number or frozen dataclass, not a list, set or dict)"
        ) from None
    return state


def ship_to_spark(session: SparkSession, spec: str) -> None:
    """Make the module of the user's model ``spec`` importable by the session's executors: its
    top-level file, or its top-level package zipped, goes to every task (``addPyFile``). A
    built-in model name needs nothing."""
    if not is_user_model(spec):
        return
    top = spec.partition(":")[0].split(".")[0]
    module = sys.modules.get(top) or importlib.import_module(top)
    location = getattr(module, "__file__", None)
    if location is None:
        return  # a namespace or built-in module: nothing to ship
    path = Path(location)
    if path.name != "__init__.py":
        session.sparkContext.addPyFile(str(path))
        return
    import tempfile  # only here: `verify` of a small history starts without them
    import zipfile

    package = path.parent
    zipped = Path(tempfile.mkdtemp(prefix="kafkaspec-model-")) / f"{top}.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        for file in sorted(package.rglob("*.py")):
            archive.write(file, str(file.relative_to(package.parent)))
    session.sparkContext.addPyFile(str(zipped))
