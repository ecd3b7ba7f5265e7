"""The KIP-848 consumer-group suites: both built-in targets conform, broken coordinators are
caught with a short failing sequence (by the random machine) and by the exhaustive suite, the
exhaustive suite's translation of the system model's actions into requests is faithful, and bad
targets are usage errors."""

from __future__ import annotations

import re

import pytest

from conformance.consumer_group_exhaustive import coordinator_commands, leaf_paths, run_exhaustive
from conformance.consumer_group_sut import (
    ConsumerGroupCoordinatorUnderTest,
    ConsumerGroupSettings,
    ReferenceConsumerGroupTarget,
    make_consumer_group_coordinator,
    resolve_consumer_group_target,
    settings_of,
)
from conformance.machines.consumer_group import (
    DivergenceError,
    ExpireOffsets,
    Heartbeat,
    OffsetCommit,
    consumer_group_machine_for,
    perform,
)
from conformance.run import run_conformance, suites_for
from reference.consumer_group import ReferenceConsumerGroupCoordinator
from spec.group import consumer
from spec.group.consumer_scenarios import SCENARIOS
from spec.group.types import ConsumerGroupHeartbeatRequest, OffsetCommitRequest, TopicPartition

BROKEN = "tests.conformance.broken_consumer_groups"
SUITES = ("consumer-group-exhaustive", "consumer-group-machine")


def listed_commands(failure: str) -> list[str]:
    """The numbered command list a divergence message ends with."""
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_the_built_in_targets_conform(target: str) -> None:
    result = run_conformance(target, examples=10, seed=0, suite="consumer-group", depth=3)
    assert result.passed, result.failure
    assert result.suite_names == SUITES


def test_the_adapters_implement_the_protocol() -> None:
    assert isinstance(
        make_consumer_group_coordinator("impl", ConsumerGroupSettings()), ConsumerGroupCoordinatorUnderTest
    )
    made = make_consumer_group_coordinator("reference", ConsumerGroupSettings())
    assert isinstance(made, ReferenceConsumerGroupTarget)


@pytest.mark.parametrize(
    ("factory", "divergence", "max_commands"),
    [
        ("AcceptsNextEpoch", "Heartbeat(", 3),
        # each shrinks a 60-command sequence: ~15 s apiece on the shared machine
        pytest.param("AcceptsStaleCommits", "OffsetCommit(", 3, marks=pytest.mark.slow),
        pytest.param("StaticLeaveIsLeave", "epoch=-2", 3, marks=pytest.mark.slow),
    ],
)
def test_a_broken_coordinator_is_caught_with_a_short_sequence(
    factory: str, divergence: str, max_commands: int
) -> None:
    result = run_conformance(f"{BROKEN}:{factory}", examples=30, seed=0, suite="consumer-group-machine")
    assert not result.passed
    assert result.failure is not None
    assert divergence in result.failure, result.failure
    commands = listed_commands(result.failure)
    assert 1 <= len(commands) <= max_commands, result.failure


def test_a_coordinator_that_keeps_an_empty_groups_offsets_is_caught() -> None:
    """Offset retention needs a commit, every member gone, then the timer: rare in random
    sequences, and outside the spec's system model, so this path is given directly."""
    machine = consumer_group_machine_for(f"{BROKEN}:OffsetsNeverExpire")()
    machine.begin(ConsumerGroupSettings(members=2, partitions=1, static_members=0))
    join = ConsumerGroupHeartbeatRequest("g0", "m0", 0, None, 60_000, ("t0",), None, ())
    machine.run(Heartbeat(join))
    offsets = ((TopicPartition("t0", 0), 5),)
    machine.run(OffsetCommit("g0", OffsetCommitRequest("m0", 1, None, offsets)))
    machine.run(Heartbeat(ConsumerGroupHeartbeatRequest("g0", "m0", -1, topic_partitions=())))
    with pytest.raises(DivergenceError, match=r"g0 offsets after ExpireOffsets\(g0\)"):
        machine.run(ExpireOffsets("g0"))
    machine.teardown()


@pytest.mark.parametrize("factory", ["AcceptsNextEpoch", "AcceptsStaleCommits", "StaticLeaveIsLeave"])
def test_the_exhaustive_suite_catches_them_too(factory: str) -> None:
    result = run_exhaustive(f"{BROKEN}:{factory}", depth=5)
    assert not result.passed
    assert result.failure is not None and "path (spec.group.consumer actions)" in result.failure


def test_every_path_translates_into_the_coordinators_requests() -> None:
    """Replaying each action's requests on the reference gives exactly the system model's
    coordinator: the translation loses nothing."""
    for scenario in SCENARIOS:
        config = scenario.config
        settings = settings_of(config)
        _, paths = leaf_paths(config, 3)
        for path in paths:
            reference = ReferenceConsumerGroupCoordinator(config)
            state = consumer.initial_state(config)
            for action in path:
                for command in coordinator_commands(settings, state, action, 7):
                    perform(reference, command)
                following = consumer.step(config, state, action)
                assert following is not None
                state = following
                assert reference.group("g0") == state.coordinator, (scenario.name, path)


def test_targets_and_suites() -> None:
    assert suites_for("impl", "consumer-group") == SUITES
    assert suites_for(f"{BROKEN}:OffsetsNeverExpire", "consumer-group") == SUITES
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        resolve_consumer_group_target("no_such_module:factory")
    with pytest.raises(ValueError, match="not a ConsumerGroupCoordinatorUnderTest"):
        make_consumer_group_coordinator(
            "conformance.consumer_group_sut:ConsumerGroupSettings", ConsumerGroupSettings()
        )
