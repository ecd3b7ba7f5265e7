"""Witness traces: a shortest path to a state where one of a machine's witnesses holds.

A witness is a state a scenario must be able to reach so that its pass is not vacuous (a
committed record, an offline partition, a refused produce): stateright's `sometimes`
property. Its trace is found the way TLC users find one, by checking the scenario's model
with the witness *negated* as its only invariant: the checker explores breadth first, so its
counterexample is a shortest path to the first state where the witness holds.

`kafkaspec check NAME --witness W` prints that trace and the documentation site
(`kafkaspec docs`) shows one per witness on each scenario page that expects no violation.
A machine's witnesses are the `WITNESSES` table of its main module (`Machine.modules[0]`, or
the module of its state's type): a scenario may ask for any of them, not only the ones it
requires.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from spec.checker import Model, TraceStep, check
from spec.machines import Machine, Scenario


class UnknownWitnessError(ValueError):
    """The scenario's machine has no witness of that name."""


@dataclass(frozen=True)
class WitnessTrace:
    """A shortest trace to a state where the witness holds (None: not reached within the bound)."""

    name: str
    description: str  # the witness's docstring: what the state shows
    trace: tuple[TraceStep[Any, Any], ...] | None
    states: int  # distinct states explored to find it
    max_depth: int

    @property
    def reached(self) -> bool:
        """The witness holds in some state within the depth bound."""
        return self.trace is not None

    @property
    def sentence(self) -> str:
        """What the last state shows, in words: the first sentence of the witness's docstring."""
        return shows(self.description, self.name)


def machine_witnesses(machine: Machine[Any, Any, Any], config: Any) -> tuple[str, ...]:
    """The names of every witness `machine` defines (its main module's `WITNESSES` table)."""
    if machine.modules:
        module_name = machine.modules[0]
    else:
        module_name = type(machine.model(config, (), ()).initial_states[0]).__module__
    table = getattr(importlib.import_module(module_name), "WITNESSES", None)
    return tuple(str(name) for name in table) if isinstance(table, Mapping) else ()


def known_witnesses(scenario: Scenario[Any]) -> tuple[str, ...]:
    """The scenario's own witnesses first, then the rest of its machine's."""
    others = machine_witnesses(scenario.machine, scenario.config)
    return tuple(dict.fromkeys((*scenario.witnesses, *others)))


def _negated(predicate: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda state: not predicate(state)


def witness_trace(
    scenario: Scenario[Any],
    config: Any,
    name: str,
    max_depth: int,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> WitnessTrace:
    """A shortest trace from the initial state to a state of `config` where witness `name`
    holds, within `max_depth` steps. The scenario's invariants are not checked on the way.
    Raises UnknownWitnessError when the machine has no such witness."""
    if name not in known_witnesses(scenario):
        raise UnknownWitnessError(name)
    model = scenario.machine.model(config, (), (name,))
    witness = model.witnesses[name]
    probe: Model[Any, Any] = Model(
        model.initial_states,
        model.candidate_actions,
        model.step,
        {name: _negated(witness)},
        canonical=model.canonical,
    )
    result = check(probe, max_depth, progress=progress, workers=workers)
    violation = result.violation
    return WitnessTrace(
        name=name,
        description=_docstring(witness),
        trace=violation.trace if violation is not None else None,
        states=result.distinct_states,
        max_depth=max_depth,
    )


def _docstring(function: Callable[..., Any]) -> str:
    while hasattr(function, "func"):  # a functools.partial binding the configuration
        function = function.func
    return " ".join((function.__doc__ or "").split())


def shows(description: str, name: str) -> str:
    """The first sentence of a witness's docstring, as a clause ("a second controller was
    elected and is active"); the name in words when it has none."""
    text = " ".join(description.split())
    text = text.removeprefix("Reachable: ")
    sentence = text.split(". ")[0].rstrip(".") if text else name.replace("_", " ")
    first_word = sentence.split(" ")[0]
    # "No eligible replica" reads as a clause in lower case; "ZooKeeper's" or "ISR" do not
    return sentence[:1].lower() + sentence[1:] if first_word[1:] == first_word[1:].lower() else sentence


__all__ = [
    "UnknownWitnessError",
    "WitnessTrace",
    "known_witnesses",
    "machine_witnesses",
    "shows",
    "witness_trace",
]
