"""The KRaft controller suites: both built-in targets conform, broken controllers are caught
with a short failing sequence, the exhaustive suite's replay is the spec's controller step by
step, and the suites are wired into `kafkaspec conformance`."""

from __future__ import annotations

import re

import pytest

from conformance.controller_exhaustive import Replay, conforming_scenarios, path_to, run_exhaustive, search
from conformance.controller_sut import ControllerUnderTest, make_controller, resolve_controller_target
from conformance.run import run_conformance, suites_for
from reference.controller import ReferenceController
from spec.controller import kraft
from spec.controller.types import ControllerSettings
from tests.helpers import run_cli

BROKEN = "tests.conformance.broken_controllers"


def listed_commands(failure: str) -> list[str]:
    """The numbered command list a divergence message ends with."""
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_the_built_in_targets_conform(target: str) -> None:
    result = run_conformance(target, examples=10, seed=0, suite="controller", depth=3)
    assert result.passed, result.failure
    assert result.suite_names == ("controller-exhaustive", "controller-machine")


def test_the_targets_implement_the_protocol() -> None:
    assert isinstance(make_controller("impl", ControllerSettings()), ControllerUnderTest)
    assert isinstance(make_controller("reference", ControllerSettings()), ReferenceController)


@pytest.mark.parametrize(
    ("factory", "divergence"),
    [
        ("AcceptsStalePartitionEpoch", "AlterPartitionRequest("),
        ("ElectsFencedBrokers", "leader"),
        ("ForgetsExpiredSessions", "after ExpireSession("),
    ],
)
def test_a_broken_controller_is_caught_with_a_short_sequence(factory: str, divergence: str) -> None:
    result = run_conformance(f"{BROKEN}:{factory}", examples=100, seed=0, suite="controller-machine")
    assert not result.passed
    assert result.failure is not None
    assert divergence in result.failure
    # the start registers and unfences four brokers (8 requests); shrinking leaves a few more
    commands = listed_commands(result.failure)
    assert 8 < len(commands) <= 14, result.failure


@pytest.mark.parametrize(
    "factory", ["AcceptsStalePartitionEpoch", "ElectsFencedBrokers", "ForgetsExpiredSessions"]
)
def test_the_exhaustive_suite_catches_them_with_a_shortest_path(factory: str) -> None:
    result = run_exhaustive(f"{BROKEN}:{factory}", depth=3)
    assert not result.passed
    assert result.failure is not None
    actions = re.search(r"spec path \((\d+) actions\)", result.failure)
    assert actions is not None and int(actions.group(1)) <= 3, result.failure


def test_the_replay_is_the_spec_controller_step_by_step() -> None:
    """Replaying every path of depth 3 on the reference alone gives, after each action, exactly
    the spec's controller (log end, registrations, partition: `check_image` raises otherwise)."""
    for _, config in conforming_scenarios():
        parents, leaves = search(config, 3)
        for leaf in leaves:
            replay = Replay("reference", config, 10.0)
            replay.prelude(kraft.initial_state(config))
            for before, action, after in path_to(parents, leaf):
                for answer, expected in replay.commands(before, action, after):
                    assert expected is None or answer == expected
                replay.check_image(after, repr(action))


def test_only_scenarios_with_todays_controller_rules_are_replayed() -> None:
    names = {name for name, _ in conforming_scenarios()}
    assert "kraft-last-known-leader-fixed" in names
    assert "kraft-fenced-last-known-leader" not in names  # KAFKA-19522's rule
    assert "kraft-bounce-without-broker-epochs" not in names  # before KIP-903


def test_targets_suites_and_the_command_line() -> None:
    assert suites_for("impl", "controller") == ("controller-exhaustive", "controller-machine")
    assert "controller-machine" in suites_for("impl", None)
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        resolve_controller_target("no_such_module:factory")
    with pytest.raises(ValueError, match="not a ControllerUnderTest"):
        make_controller("spec.controller.types:ControllerSettings", ControllerSettings())


def test_the_command_line_runs_the_controller_suites(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "conformance", "--target", "impl", "--suite", "controller", "--depth", "2", "--examples", "3"
    )
    assert code == 0, out
    assert "impl, controller-exhaustive suite: conforms" in out
    assert "impl, controller-machine suite: conforms" in out
    broken = f"{BROKEN}:ForgetsExpiredSessions"
    code, out, _ = run_cli(
        capsys, "conformance", "--target", broken, "--suite", "controller", "--depth", "2", "--examples", "3"
    )
    assert code == 1, out
    assert "DIVERGES" in out
