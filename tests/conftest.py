"""Shared pytest configuration: the interpreted spec, Hypothesis profiles, the session-wide
SparkSession, and the scenarios' findings computed once per session."""

from __future__ import annotations

import os

# The suite tests the spec's source, not the compiled build a user runs by default
# (`spec._compiled`): the tests that monkeypatch a spec function to make a mutant are not seen
# by compiled callers, and coverage needs the source. Set before anything imports `spec`, and
# inherited by the processes the tests start; `KAFKASPEC_NATIVE=1 pytest` runs the build.
# `tests/spec/test_native.py` compares the build with the source.
if os.environ.get("KAFKASPEC_NATIVE") != "1":
    os.environ["KAFKASPEC_NATIVE"] = "0"

import shutil
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import spec.scenarios
from kafkaspec.outcomes import FindingsCache
from spec import _compiled
from spec.machines import Scenario, ScenarioOutcome, run_scenario
from tests.shared_findings import SHARED_FINDINGS

# Something imported `spec` before this file could set the switch (a plugin, a root conftest.py).
assert os.environ["KAFKASPEC_NATIVE"] == "1" or not _compiled.active(), "the tests run the compiled spec"

# CI runs a fixed, derandomized profile so a red build can be reproduced; locally the
# default profile explores new examples each run.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# ---------------------------------------------------------------------------------------
# Spark: one session for the whole test run (a session costs ~10 s to start).
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession shared by every Spark test; skipped without Java or pyspark."""
    if shutil.which("java") is None:
        pytest.skip("Java is not installed: Spark tests need a JVM")
    pytest.importorskip("pyspark")
    from spark_checks.spark_session import spark_session

    session = spark_session()
    yield session
    session.stop()


# ---------------------------------------------------------------------------------------
# Scenario findings: each named scenario checked once per test run.
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def findings() -> FindingsCache:
    """Every named scenario's outcome and witness traces, each computed on first request and
    then shared (`tests/shared_findings.py`): the scenario tests, `check --all` and the
    documentation build ask for the same scenarios under the same source, and
    `kafkaspec.outcomes.reusable` refuses anything else."""
    return SHARED_FINDINGS


@pytest.fixture
def shared_outcomes(findings: FindingsCache, monkeypatch: pytest.MonkeyPatch) -> FindingsCache:
    """`kafkaspec check` (which runs `spec.scenarios.run_scenario`) answers a scenario as
    defined (no `--max-depth`, no `--set`) from the session's findings; anything else is
    checked as usual."""

    def run(
        scenario: Scenario[Any],
        max_depth: int | None = None,
        overrides: Mapping[str, str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        workers: int = 1,
    ) -> ScenarioOutcome[Any]:
        if max_depth is None and not overrides:
            return findings.outcome(scenario, workers)
        return run_scenario(scenario, max_depth, overrides, progress, workers)

    monkeypatch.setattr(spec.scenarios, "run_scenario", run)
    return findings
