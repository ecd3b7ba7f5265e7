"""How traces and states are shown: as text for people, as JSON for programs."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

from spec.checker import TraceStep
from spec.machines import Machine, ScenarioOutcome, changed_lines, plain
from spec.types import Acks


def _plain(value: object) -> object:
    if isinstance(value, Acks):
        return str(value)  # acks=all reads better than -1
    return plain(value)


def action_name(action: object | None) -> str:
    """`ProducerSend` etc., or `Init` for the initial state."""
    return "Init" if action is None else type(action).__name__


def action_arguments(action: object | None) -> dict[str, object]:
    """The action's explicit parameters, as plain values."""
    if action is None or not dataclasses.is_dataclass(action):
        return {}
    return {field.name: _plain(getattr(action, field.name)) for field in dataclasses.fields(action)}


def _argument_text(value: object) -> str:
    """An action's argument as text: a dataclass (e.g. the ZooKeeper controller's queued
    `PendingEvent`) by its type and the fields that differ from their defaults, enums inside
    it by name (`PendingEvent(kind=REELECT)`, not `{'kind': 0, ...}`)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = []
        for item in dataclasses.fields(value):
            field_value = getattr(value, item.name)
            if item.name.startswith("_") or field_value == item.default:
                continue
            text = field_value.name if isinstance(field_value, enum.Enum) else _argument_text(field_value)
            shown.append(f"{item.name}={text}")
        return f"{type(value).__name__}({', '.join(shown)})"
    return str(_plain(value))


def describe_action(action: object | None) -> str:
    """`LeaderHandleFetch(follower=1)`."""
    if action is None or not dataclasses.is_dataclass(action):
        return f"{action_name(action)}()"
    arguments = ", ".join(
        f"{item.name}={_argument_text(getattr(action, item.name))}" for item in dataclasses.fields(action)
    )
    return f"{action_name(action)}({arguments})"


def describe_trace(
    machine: Machine[Any, Any, Any], trace: tuple[TraceStep[Any, Any], ...], full_state: bool = False
) -> list[str]:
    """A trace, step by step: each action and the lines of the state it changed (every line
    with `full_state`; the first step always shows the whole initial state)."""
    lines: list[str] = []
    previous: Sequence[str] | None = None
    for number, step in enumerate(trace):
        lines.append(f"step {number}: {describe_action(step.action)}")
        current = machine.describe_state(step.state)
        shown = current if full_state else changed_lines(previous, current)
        lines += [f"    {line}" for line in shown]
        previous = current
    return lines


def trace_json(
    machine: Machine[Any, Any, Any], trace: tuple[TraceStep[Any, Any], ...]
) -> list[dict[str, Any]]:
    """A trace as a list of {step, action, args, state}."""
    return [
        {
            "step": number,
            "action": action_name(step.action),
            "args": action_arguments(step.action),
            "state": machine.as_json(step.state),
        }
        for number, step in enumerate(trace)
    ]


def outcome_json(outcome: ScenarioOutcome[Any]) -> dict[str, Any]:
    """One scenario's outcome for `--json`."""
    result = outcome.result
    violation = result.violation
    return {
        "name": outcome.scenario.name,
        "machine": outcome.scenario.machine.name,
        "expected": outcome.scenario.expected,
        "found": outcome.found,
        "as_expected": outcome.as_expected,
        "violated": violation.property_name if violation else None,
        "states": result.distinct_states,
        "transitions": result.transitions,
        "depth": result.depth,
        "complete": result.complete,
        "seconds": round(result.seconds, 3),
        "states_per_second": round(result.states_per_second),
        "seconds_to_counterexample": round(result.seconds_to_violation, 3)
        if result.seconds_to_violation is not None
        else None,
        "witnesses": dict(result.witnesses_reached),
        "missing_witnesses": list(outcome.missing_witnesses),
        "max_depth": outcome.max_depth,
        "explanation": outcome.explanation,
        "trace": trace_json(outcome.scenario.machine, violation.trace) if violation else None,
    }
