"""Every named scenario of every state machine, as `kafkaspec check` and `kafkaspec scenarios`
list them.

Each machine's module defines its own scenarios (`spec.partition_scenarios` for the
replicated partition, and one module per further machine); this module only gathers them,
keeps their names unique, and reads `--set` overrides against the machines they concern.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from spec import composed_scenarios, partition_scenarios, replication_stories
from spec.controller import kraft_scenarios, zk_scenarios
from spec.group import classic_scenarios, consumer_scenarios
from spec.machines import (
    DEFAULT_MAX_DEPTH,
    ConfigError,
    Machine,
    Scenario,
    ScenarioOutcome,
    run_scenario,
)

SCENARIOS: tuple[Scenario[Any], ...] = (
    *partition_scenarios.SCENARIOS,
    *classic_scenarios.SCENARIOS,
    *consumer_scenarios.SCENARIOS,
    *kraft_scenarios.SCENARIOS,
    *zk_scenarios.SCENARIOS,
    *composed_scenarios.SCENARIOS,
    *replication_stories.SCENARIOS,
)
"""Every scenario, machine by machine, in the order `check --all` runs them."""

SCENARIOS_BY_NAME: Mapping[str, Scenario[Any]] = {scenario.name: scenario for scenario in SCENARIOS}
assert len(SCENARIOS_BY_NAME) == len(SCENARIOS), "scenario names must be unique"

MACHINES: tuple[Machine[Any, Any, Any], ...] = tuple(
    {id(scenario.machine): scenario.machine for scenario in SCENARIOS}.values()
)
"""The machines that have scenarios, in order of their first scenario."""


def override_keys(scenarios: Iterable[Scenario[Any]] = SCENARIOS) -> Mapping[str, str]:
    """Every `--set` key the scenarios' machines know, with a short description."""
    keys: dict[str, str] = {}
    for scenario in scenarios:
        for key, setting in scenario.machine.settings.items():
            keys.setdefault(key, setting.description)
    return keys


def check_overrides(scenarios: Iterable[Scenario[Any]], overrides: Mapping[str, str]) -> None:
    """Refuse (ConfigError) a key that none of `scenarios` knows, a bad value, or a
    configuration the overrides make inconsistent; a key applies to the scenarios whose
    machine has it."""
    chosen = tuple(scenarios)
    known = override_keys(chosen)
    for key in overrides:
        if key not in known:
            raise ConfigError(f"unknown configuration key {key!r} (known keys: {', '.join(sorted(known))})")
    for scenario in chosen:
        scenario.machine.apply_overrides(scenario.config, overrides)


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MACHINES",
    "SCENARIOS",
    "SCENARIOS_BY_NAME",
    "ConfigError",
    "Scenario",
    "ScenarioOutcome",
    "check_overrides",
    "override_keys",
    "run_scenario",
]
