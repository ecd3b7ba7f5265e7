"""A scenario's findings, computed once and reused while they still hold.

A scenario's findings are what `kafkaspec check` and the documentation site (`kafkaspec docs`)
show of it: its `ScenarioOutcome` (the model checker's result for the scenario's configuration
and depth bound) and, for a scenario that expects no violation, a shortest trace to each of its
witnesses (`kafkaspec.witnesses`). Both are functions of two things only: the scenario's
definition (machine, configuration, properties, witnesses, depth bound) and the source code
of the spec and the checker. So a run that checks a scenario and then documents it need not
check it twice: `Findings` records the definition it was computed for and a digest of that
source (`source_digest`), and `reusable` accepts it for a scenario only when both match, so
findings computed under other `--set` overrides, another bound, or another version of the spec
are recomputed, never shown.

`FindingsCache` holds them for one process: `kafkaspec docs` fills one while it builds, and
the test suite shares one across its tests (`tests/conftest.py`), so each scenario is checked
once per test run instead of once by the scenario tests, once by `check --all` and once more by
the documentation build.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import spec
from kafkaspec import witnesses as witnesses_module
from kafkaspec.witnesses import WitnessTrace, witness_trace
from spec.machines import Scenario, ScenarioOutcome, run_scenario


def _sources() -> list[Path]:
    """The files a scenario's findings depend on: every module of the spec (its machines, its
    scenarios, the checker) and the witness-trace search."""
    spec_root = Path(spec.__file__).resolve().parent
    return [*sorted(spec_root.rglob("*.py")), Path(witnesses_module.__file__).resolve()]


def source_digest(files: Iterable[Path] | None = None) -> str:
    """A SHA-256 digest of the source the findings depend on (each file's name relative to its
    package and its bytes): any edit to the spec or the checker changes it."""
    digest = hashlib.sha256()
    for path in _sources() if files is None else files:
        digest.update(f"{path.parent.name}/{path.name}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@functools.cache
def current_source_digest() -> str:
    """`source_digest()` of the source as it was when this process first asked: the code this
    process runs is the code it imported, so later edits on disk do not change what it computes."""
    return source_digest()


@dataclass(frozen=True)
class Findings:
    """What checking one scenario found, and what it was computed from."""

    outcome: ScenarioOutcome[Any]
    witnesses: tuple[WitnessTrace, ...] | None  # shortest traces to its witnesses (None: not computed)
    digest: str  # `source_digest()` of the source that computed it

    @property
    def complete(self) -> bool:
        """Everything a scenario page shows is known: the outcome, and the witness traces of a
        scenario without violation."""
        return self.witnesses is not None or self.outcome.result.violation is not None


def defines(outcome: ScenarioOutcome[Any], scenario: Scenario[Any]) -> bool:
    """`outcome` answers exactly `scenario` as defined: the same machine, configuration
    (no `--set` override), properties, witnesses and depth bound."""
    checked = outcome.scenario
    return (
        checked.name == scenario.name
        and checked.machine == scenario.machine
        and checked.invariants == scenario.invariants
        and checked.witnesses == scenario.witnesses
        and checked.expect_violation == scenario.expect_violation
        and outcome.config == scenario.config
        and outcome.max_depth == scenario.max_depth
    )


def reusable(findings: Findings | None, scenario: Scenario[Any], digest: str) -> bool:
    """`findings` may stand for checking `scenario` again: it answers the scenario as defined,
    and was computed by the same source (`digest`)."""
    return findings is not None and findings.digest == digest and defines(findings.outcome, scenario)


def scenario_witness_traces(outcome: ScenarioOutcome[Any]) -> tuple[WitnessTrace, ...]:
    """A shortest trace to each witness of a scenario without violation (`kafkaspec.witnesses`:
    the scenario's model checked with "not the witness" as its only invariant); none for a
    scenario with a counterexample, whose page shows the counterexample instead."""
    if outcome.result.violation is not None:
        return ()
    scenario = outcome.scenario
    return tuple(
        witness_trace(scenario, outcome.config, name, outcome.max_depth) for name in scenario.witnesses
    )


class FindingsCache:
    """Findings by scenario name for one process, each computed on first request and then
    reused while `reusable` (a scenario redefined, or the source edited, is checked again)."""

    def __init__(self, digest: str | None = None) -> None:
        self.digest = current_source_digest() if digest is None else digest
        self._findings: dict[str, Findings] = {}

    def get(self, scenario: Scenario[Any]) -> Findings | None:
        """The findings for `scenario` if they may be reused, else None."""
        found = self._findings.get(scenario.name)
        return found if reusable(found, scenario, self.digest) else None

    def put(self, findings: Findings) -> None:
        """Remember `findings` (computed by this cache's source) for its scenario."""
        self._findings[findings.outcome.scenario.name] = findings

    def outcome(self, scenario: Scenario[Any], workers: int = 1) -> ScenarioOutcome[Any]:
        """The scenario's outcome: reused, or checked now (`workers` processes) and kept."""
        found = self.get(scenario)
        if found is None:
            found = Findings(run_scenario(scenario, workers=workers), None, self.digest)
            self.put(found)
        return found.outcome

    def findings(self, scenario: Scenario[Any], workers: int = 1) -> Findings:
        """The scenario's outcome and witness traces: reused, or computed now and kept."""
        outcome = self.outcome(scenario, workers)
        found = self.get(scenario)
        assert found is not None
        if not found.complete:
            found = Findings(outcome, scenario_witness_traces(outcome), self.digest)
            self.put(found)
        return found

    def known(self) -> Mapping[str, Findings]:
        """Every scenario's findings held, by name (reusable or not: `get` decides)."""
        return dict(self._findings)


__all__ = [
    "Findings",
    "FindingsCache",
    "current_source_digest",
    "defines",
    "reusable",
    "scenario_witness_traces",
    "source_digest",
]
