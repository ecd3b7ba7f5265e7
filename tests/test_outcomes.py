"""Findings reused (`kafkaspec.outcomes`): the documentation shows what checking again would
show, and findings computed for another definition of a scenario or another source are never
used."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from kafkaspec.docs import read_machine, scenario_findings, scenario_page
from kafkaspec.outcomes import (
    Findings,
    FindingsCache,
    current_source_digest,
    defines,
    reusable,
    scenario_witness_traces,
    source_digest,
)
from spec.machines import Scenario, ScenarioOutcome, run_scenario
from spec.scenarios import SCENARIOS, SCENARIOS_BY_NAME

# small scenarios (milliseconds each): a counterexample, and two without violation whose pages
# show witness traces
NAMES = ("acks1-loss", "classic-static-replaced", "consumer-leave")


def pages(scenarios: list[Scenario[Any]], cache: FindingsCache, workers: int = 1) -> dict[str, str]:
    return {
        found.outcome.scenario.name: scenario_page(
            found.outcome,
            found.witnesses or (),
            read_machine(found.outcome.scenario.machine, SCENARIOS),
        )
        for found in scenario_findings(scenarios, cache, workers)
    }


def fresh_pages(names: tuple[str, ...] = NAMES) -> dict[str, str]:
    return pages([SCENARIOS_BY_NAME[name] for name in names], FindingsCache())


def with_states(outcome: ScenarioOutcome[Any], states: int) -> ScenarioOutcome[Any]:
    """`outcome` claiming another number of distinct states: a page built from it says so."""
    return dataclasses.replace(outcome, result=dataclasses.replace(outcome.result, distinct_states=states))


def test_pages_from_reused_findings_are_the_pages_of_a_fresh_check():
    scenarios = [SCENARIOS_BY_NAME[name] for name in NAMES]
    cache = FindingsCache()
    for scenario in scenarios:  # what `check --all` leaves: outcomes, no witness traces
        cache.outcome(scenario)
    held = {name: found.outcome for name, found in cache.known().items()}
    reused = pages(scenarios, cache)
    # the outcomes were reused (the same objects), only the witness traces were computed
    assert {name: found.outcome for name, found in cache.known().items()} == held
    assert all(cache.known()[name].outcome is held[name] for name in NAMES)
    assert reused == fresh_pages()
    assert "Reached <code>member_left</code>" in reused["consumer-leave"]
    # and in worker processes (the named scenarios), the same pages again
    parallel_cache = FindingsCache()
    parallel_cache.outcome(scenarios[1])
    assert pages(scenarios, parallel_cache, workers=2) == reused


def test_findings_are_reused_when_they_match():
    """The reuse is real: a page built from held findings shows what they hold (so a wrong
    held outcome would show, which is why only matching ones are held)."""
    scenario = SCENARIOS_BY_NAME["consumer-leave"]
    outcome = run_scenario(scenario)
    cache = FindingsCache()
    cache.put(Findings(with_states(outcome, 7), scenario_witness_traces(outcome), cache.digest))
    assert "7 distinct states" in pages([scenario], cache)["consumer-leave"]


def test_findings_for_another_source_are_recomputed():
    scenario = SCENARIOS_BY_NAME["consumer-leave"]
    outcome = run_scenario(scenario)
    cache = FindingsCache()
    stale = Findings(with_states(outcome, 7), scenario_witness_traces(outcome), "0" * 64)
    cache.put(stale)
    assert not reusable(stale, scenario, cache.digest)
    page = pages([scenario], cache)["consumer-leave"]
    assert "7 distinct states" not in page
    assert page == fresh_pages(("consumer-leave",))["consumer-leave"]
    assert cache.get(scenario) is not None and cache.get(scenario) != stale  # replaced by the fresh one


def test_findings_for_another_bound_or_configuration_are_recomputed():
    scenario = SCENARIOS_BY_NAME["acks1-loss"]
    fresh = fresh_pages(("acks1-loss",))["acks1-loss"]
    for stale_outcome in (
        run_scenario(scenario, max_depth=scenario.max_depth - 1),  # `check --all --max-depth N`
        run_scenario(scenario, overrides={"acks": "all", "max.records": "1", "max.crashes": "1"}),  # `--set`
        run_scenario(dataclasses.replace(scenario, witnesses=("write_acknowledged",))),  # other properties
    ):
        assert not defines(stale_outcome, scenario)
        cache = FindingsCache()
        cache.put(Findings(stale_outcome, (), cache.digest))
        assert cache.get(scenario) is None
        assert pages([scenario], cache)["acks1-loss"] == fresh
        assert cache.outcome(scenario).max_depth == scenario.max_depth
    # a scenario whose definition changed (its bound) is checked for the new definition
    cache = FindingsCache()
    cache.outcome(scenario)
    shorter = dataclasses.replace(scenario, max_depth=2)
    assert cache.outcome(shorter).result.violation is None  # the loss needs 3 steps
    assert cache.outcome(scenario).result.violation is not None


def test_the_source_digest_follows_every_byte_of_the_source(tmp_path: Path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("x = 1\n")
    second.write_text("y = 2\n")
    before = source_digest([first, second])
    assert source_digest([first, second]) == before
    first.write_text("x = 2\n")
    assert source_digest([first, second]) != before
    # a cache holds findings for the source this process imported
    assert FindingsCache().digest == current_source_digest()
    assert len(current_source_digest()) == 64
