"""The classic coordinator suites: both built-in targets conform, broken coordinators are caught
with a short failing sequence, the exhaustive suite's translation is faithful, and bad targets
are usage errors."""

from __future__ import annotations

import re

import pytest

from conformance import run as conformance_run
from conformance.coordinator_exhaustive import (
    conforming_scenarios,
    coordinator_commands,
    leaf_paths,
    prelude,
    run_exhaustive,
)
from conformance.coordinator_sut import (
    ClassicCoordinatorUnderTest,
    CoordinatorSettings,
    ReferenceCoordinatorTarget,
    make_coordinator,
    resolve_coordinator_target,
)
from conformance.machines.coordinator import GROUPS, perform
from conformance.run import run_conformance, suites_for
from reference.coordinator import ReferenceClassicCoordinator
from spec.group import classic
from spec.group.classic_scenarios import SCENARIOS
from tests.helpers import run_cli

BROKEN = "tests.conformance.broken_coordinators"


def listed_commands(failure: str) -> list[str]:
    """The numbered command list a divergence message ends with."""
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_the_built_in_targets_conform(target: str) -> None:
    result = run_conformance(target, examples=15, seed=0, suite="coordinator", depth=4)
    assert result.passed, result.failure
    assert result.suite_names == ("coordinator-exhaustive", "coordinator-machine")


def test_the_impl_adapter_implements_the_protocol() -> None:
    made = make_coordinator("impl", CoordinatorSettings())
    assert isinstance(made, ClassicCoordinatorUnderTest)
    assert isinstance(make_coordinator("reference", CoordinatorSettings()), ReferenceCoordinatorTarget)


@pytest.mark.parametrize(
    ("factory", "divergence", "max_commands"),
    [
        ("HeartbeatIgnoresRebalance", "Heartbeat(", 3),
        ("AcceptsStaleCommits", "OffsetCommit(", 3),
        ("OffsetsNeverExpire", "after ExpireOffsets(", 3),
    ],
)
def test_a_broken_coordinator_is_caught_with_a_short_sequence(
    factory: str, divergence: str, max_commands: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # shorter sequences than a real run, so shrinking them to the minimal one is quick
    monkeypatch.setitem(conformance_run.STEPS_PER_EXAMPLE, "coordinator-machine", 20)
    result = run_conformance(f"{BROKEN}:{factory}", examples=400, seed=0, suite="coordinator-machine")
    assert not result.passed
    assert result.failure is not None
    assert divergence in result.failure
    commands = listed_commands(result.failure)
    assert 1 <= len(commands) <= max_commands, result.failure


@pytest.mark.parametrize(
    "factory", ["HeartbeatIgnoresRebalance", "AcceptsStaleCommits", "OffsetsNeverExpire"]
)
def test_the_exhaustive_suite_catches_them_too(factory: str) -> None:
    result = run_exhaustive(f"{BROKEN}:{factory}", depth=6)
    assert not result.passed
    assert result.failure is not None and "path (spec.group.classic actions)" in result.failure


def test_every_path_translates_into_the_coordinators_requests() -> None:
    """Replaying each action's requests on the reference gives exactly the system model's group
    (the prelude builds each scenario's initial group): the translation loses nothing."""
    for scenario in SCENARIOS:
        config = scenario.config
        _, paths = leaf_paths(config, 4)
        for path in paths:
            reference = ReferenceClassicCoordinator(config.coordinator_rules)
            for command in prelude(config):
                perform(reference, command)
            state = classic.initial_state(config)
            assert reference.group(GROUPS[0]) == state.group
            for action in path:
                for command in coordinator_commands(config, state, action):
                    perform(reference, command)
                following = classic.step(config, state, action)
                assert following is not None
                state = following
                assert reference.group(GROUPS[0]) == state.group, (scenario.name, path)


def test_only_scenarios_with_todays_coordinator_rules_are_replayed() -> None:
    names = {scenario.name for scenario in conforming_scenarios()}
    assert "classic-zombie-commit-fenced" in names
    assert "classic-zombie-commit-unchecked" not in names  # the generation check switched off
    assert "classic-static-rejoin-kafka-9801" not in names  # KAFKA-9801's rule switched off


def test_targets_and_suites() -> None:
    assert suites_for("impl", "coordinator") == ("coordinator-exhaustive", "coordinator-machine")
    assert suites_for(f"{BROKEN}:OffsetsNeverExpire", "coordinator") == (
        "coordinator-exhaustive",
        "coordinator-machine",
    )
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        resolve_coordinator_target("no_such_module:factory")
    with pytest.raises(ValueError, match="not a ClassicCoordinatorUnderTest"):
        make_coordinator("conformance.coordinator_sut:CoordinatorSettings", CoordinatorSettings())
    with pytest.raises(ValueError, match="unknown conformance target"):
        run_conformance("nonsense", examples=1, suite="coordinator")


@pytest.mark.parametrize(
    ("target", "says"),
    [
        (f"{BROKEN}:NoSuchFactory", "has no callable 'NoSuchFactory'"),
        ("conformance.coordinator_sut:CoordinatorSettings", "not a ClassicCoordinatorUnderTest"),
        ("no_such_module:factory", "cannot import 'no_such_module'"),
    ],
)
def test_a_bad_target_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], target: str, says: str
) -> None:
    code, out, err = run_cli(
        capsys, "conformance", "--target", target, "--suite", "coordinator", "--examples", "1"
    )
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and says in err, err


def test_the_cli_reports_a_divergence_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    broken = f"{BROKEN}:OffsetsNeverExpire"
    code, out, _ = run_cli(
        capsys, "conformance", "--target", broken, "--suite", "coordinator-exhaustive", "--depth", "4"
    )
    assert code == 1
    assert "coordinator-exhaustive suite: DIVERGES from the reference" in out
    assert "ExpireOffsets(g0)" in out
