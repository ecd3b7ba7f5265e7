"""What every state machine of the spec gives the model checker and the command line.

kafkaspec specifies several of Kafka's state machines (the replicated partition, the group
coordinator's two protocols, the controller in both generations). Each is a package or
module with the same shape: a frozen configuration, a frozen state, one frozen dataclass per
action, `candidate_actions`/`step`, and named invariants. This module is the small common
layer above them:

* `Machine`: how to build the checker's `Model` from a configuration, the machine's `--set`
  keys (Kafka's configuration names where Kafka has one), how to show a state as text, and how
  to explain a violated property in one sentence; optionally the modules it is built from and a
  `Diagram` projection, which the documentation site (`kafkaspec docs`) shows;
* `Scenario`: a named question about one machine (a configuration, the properties it checks,
  the expected outcome, witnesses that make a pass non-vacuous, the depth bound);
* `run_scenario`: checks one scenario and says whether the outcome is the expected one;
* `not_stuck`: builds the "stuck" property (members wait and nothing can move them on),
  which the checker then reports with a shortest trace like any invariant.

The named scenarios of every machine are gathered in `spec.scenarios`.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from spec.checker import CheckResult, Model, check

Config = TypeVar("Config")
State = TypeVar("State")
Action = TypeVar("Action")
EnumType = TypeVar("EnumType", bound=enum.Enum)

DEFAULT_MAX_DEPTH = 15
"""The default bound on trace length when a scenario names none: the longest replication
counterexample (11 steps, `hw-truncation-divergence`) plus four."""


class ConfigError(ValueError):
    """A `--set key=value` override names an unknown key or gives a bad value."""


@dataclass(frozen=True)
class Setting:
    """One `--set key=value` key: the configuration field it sets and how its text is read."""

    field: str
    parse: Callable[[str], object]  # raises ValueError with a short reason
    description: str


def parse_bool(text: str) -> bool:
    """`true`/`false` (also yes/no, 1/0, on/off)."""
    lowered = text.strip().lower()
    if lowered in {"true", "yes", "1", "on"}:
        return True
    if lowered in {"false", "no", "0", "off"}:
        return False
    raise ValueError(f"expected true or false, not {text!r}")


def parse_count(minimum: int, maximum: int) -> Callable[[str], int]:
    """A parser for a whole number within [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise ValueError(f"expected a number from {minimum} to {maximum}, not {value}")
        return value

    return parse


def parse_choice(choices: type[EnumType]) -> Callable[[str], EnumType]:
    """A parser for one of an enum's values (by value, case-insensitive)."""

    def parse(text: str) -> EnumType:
        wanted = text.strip().lower()
        for choice in choices:
            if str(choice.value).lower() == wanted:
                return choice
        known = ", ".join(str(choice.value) for choice in choices)
        raise ValueError(f"expected one of {known}, not {text!r}")

    return parse


def _no_problem(_config: Any) -> str | None:
    return None


@dataclass(frozen=True)
class Diagram(Generic[Config, State]):
    """A machine's state diagram, computed from the transitions the model checker explores.

    `project` maps a state onto one node (for the partition: one replica's role and fetch
    phase); every transition the checker applies under `config` within `max_depth` steps
    becomes an edge between the projections of its two states, labelled with the action's
    name. The documentation draws it (`kafkaspec docs`), so it cannot drift from the spec."""

    title: str  # what a node is, e.g. "replica 0: role and fetch phase"
    project: Callable[[State], str]
    config: Config  # a small configuration whose whole space is explored
    max_depth: int = DEFAULT_MAX_DEPTH
    label: Callable[[Any], str] | None = None  # an edge's label from its action (None: the action's name)


@dataclass(frozen=True)
class Machine(Generic[Config, State, Action]):
    """A state machine of the spec as the checker and the command line see it."""

    name: str  # e.g. "partition", "classic-group"
    title: str  # one line: what the state machine is
    settings: Mapping[str, Setting]  # its `--set` keys
    model: Callable[[Config, tuple[str, ...], tuple[str, ...]], Model[State, Action]]
    describe_state: Callable[[State], Sequence[str]]  # one line per component, stable labels first
    validate: Callable[[Config], str | None] = _no_problem  # why a configuration is inconsistent
    explain: Callable[[str, State], str] | None = None  # why a property fails in this state, in words
    state_json: Callable[[State], Any] | None = None  # None: the generic conversion of `plain`
    modules: tuple[str, ...] = ()  # spec modules it is built from, for its documentation pages
    diagram: Diagram[Config, State] | None = None  # its state diagram, for the documentation

    def apply_overrides(self, config: Config, overrides: Mapping[str, str]) -> Config:
        """`config` with the `--set` overrides this machine knows applied; raises ConfigError
        for a bad value or an inconsistent result (keys it does not know are ignored here:
        `spec.scenarios` refuses a key no chosen machine knows)."""
        changes: dict[str, object] = {}
        for key, text in overrides.items():
            setting = self.settings.get(key)
            if setting is None:
                continue
            try:
                changes[setting.field] = setting.parse(text)
            except ValueError as error:
                raise ConfigError(f"bad value for {key}: {error}") from None
        updated: Config = dataclasses.replace(config, **changes)  # type: ignore[type-var]
        problem = self.validate(updated)
        if problem is not None:
            raise ConfigError(problem)
        return updated

    def as_json(self, state: State) -> Any:
        """The state as plain JSON values."""
        return self.state_json(state) if self.state_json is not None else plain(state)


@dataclass(frozen=True)
class Scenario(Generic[Config]):
    """A named model-checking question about one machine."""

    name: str
    summary: str
    machine: Machine[Config, Any, Any]
    config: Config
    invariants: tuple[str, ...]
    expect_violation: bool
    witnesses: tuple[str, ...] = ()  # states that must be reachable when no violation is expected
    reference: str = ""  # where the case is discussed: KIP, JIRA, Kafka config name
    max_depth: int = DEFAULT_MAX_DEPTH  # the bound on trace length

    @property
    def expected(self) -> str:
        """`counterexample` or `no violation`."""
        return "counterexample" if self.expect_violation else "no violation"


@dataclass(frozen=True)
class ScenarioOutcome(Generic[Config]):
    """A scenario checked: what was found and whether that is what was expected."""

    scenario: Scenario[Config]
    config: Config
    max_depth: int
    result: CheckResult[Any, Any]

    @property
    def found(self) -> str:
        """`counterexample` or `no violation`."""
        return "counterexample" if self.result.violation is not None else "no violation"

    @property
    def missing_witnesses(self) -> tuple[str, ...]:
        """Required reachable states that were never reached (a vacuous pass)."""
        if self.result.violation is not None:
            return ()
        return tuple(name for name in self.scenario.witnesses if not self.result.witnesses_reached.get(name))

    @property
    def as_expected(self) -> bool:
        """The outcome matches the scenario's expectation (and a pass is not vacuous)."""
        return self.found == self.scenario.expected and not self.missing_witnesses

    @property
    def explanation(self) -> str | None:
        """One sentence saying why the violated property fails in the trace's last state."""
        violation = self.result.violation
        explain = self.scenario.machine.explain
        if violation is None or explain is None:
            return None
        return explain(violation.property_name, violation.trace[-1].state)


def run_scenario(
    scenario: Scenario[Config],
    max_depth: int | None = None,
    overrides: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> ScenarioOutcome[Config]:
    """Check one scenario (with optional `--set` overrides and depth bound; by default the
    scenario's own) and report the outcome; the result does not depend on `workers`."""
    machine = scenario.machine
    config = machine.apply_overrides(scenario.config, overrides or {})
    model = machine.model(config, scenario.invariants, scenario.witnesses)
    depth = scenario.max_depth if max_depth is None else max_depth
    result = check(model, depth, progress=progress, workers=workers)
    return ScenarioOutcome(scenario, config, depth, result)


def not_stuck(
    waiting: Callable[[State], bool],
    candidate_actions: Callable[[State], Iterable[Action]],
    step: Callable[[State, Action], State | None],
) -> Callable[[State], bool]:
    """An invariant that fails in a *stuck* state: `waiting(state)` holds (someone waits for
    the protocol to move on, e.g. members for a rebalance to complete) and every candidate
    action is refused or leaves the state as it is, so nothing can ever end the wait.

    The checker reports it like any invariant, with a shortest trace to the stuck state: TLC's
    deadlock check, restricted to the states where waiting is not the protocol's rest."""

    def holds(state: State) -> bool:
        if not waiting(state):
            return True
        for action in candidate_actions(state):
            after = step(state, action)
            if after is not None and after != state:
                return True
        return False

    return holds


def plain(value: object) -> Any:
    """A frozen spec value as plain JSON values: dataclasses as objects (without private
    fields), enums by value, sets sorted, mappings with string keys."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            item.name: plain(getattr(value, item.name))
            for item in dataclasses.fields(value)
            if not item.name.startswith("_")  # caches such as spec._frozen's cached hash
        }
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, frozenset | set):
        return [plain(item) for item in sorted(value, key=repr)]
    if isinstance(value, tuple | list):
        return [plain(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def changed_lines(before: Sequence[str] | None, after: Sequence[str]) -> list[str]:
    """The lines of `after` that are not in `before` (all of them for the first step)."""
    if before is None:
        return list(after)
    previous = set(before)
    return [line for line in after if line not in previous]


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "ConfigError",
    "Diagram",
    "Machine",
    "Scenario",
    "ScenarioOutcome",
    "Setting",
    "changed_lines",
    "not_stuck",
    "parse_bool",
    "parse_choice",
    "parse_count",
    "plain",
    "run_scenario",
]
