"""The exhaustive replication suite: every spec state within a depth, replayed on a target."""

from __future__ import annotations

import re

import pytest

from conformance.exhaustive import DIRECTED_PATHS, DirectedPath, leaf_paths, run_exhaustive, settings_of
from conformance.partition_sut import spec_config
from spec import partition as spec_partition
from spec import partition_scenarios
from spec.scenarios import SCENARIOS_BY_NAME, run_scenario
from tests.helpers import run_cli

BROKEN = "tests.conformance.broken_partitions"
CLEAN_ELECTION = SCENARIOS_BY_NAME["clean-election"]
DEPTH = 5  # a produce, its replication, a leader change and a truncation fit


def test_leaf_paths_reach_every_state_the_model_checker_counts() -> None:
    depth = 4
    states, paths = leaf_paths(CLEAN_ELECTION.config, depth)
    outcome = run_scenario(CLEAN_ELECTION, max_depth=depth)
    assert states == outcome.result.distinct_states
    config = CLEAN_ELECTION.config
    reached = {spec_partition.initial_state(config)}
    for path in paths:
        assert 1 <= len(path) <= depth
        state = spec_partition.initial_state(config)
        for action in path:
            successor = spec_partition.step(config, state, action)
            assert successor is not None, f"{action} is not enabled along {path}"
            state = successor
            reached.add(state)
    assert len(reached) == states  # the leaves' prefixes cover every state
    assert len(set(paths)) == len(paths)


def test_settings_come_from_the_scenario() -> None:
    settings = settings_of(SCENARIOS_BY_NAME["acks-all-min-isr-2"].config)
    assert settings.min_insync_replicas == 2
    assert settings.replication_factor == SCENARIOS_BY_NAME["acks-all-min-isr-2"].config.replication_factor


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_the_builtin_targets_conform_within_depth_4(target: str) -> None:
    result = run_exhaustive(target, depth=4)
    assert result.passed, result.failure
    assert result.scenarios == tuple(scenario.name for scenario in partition_scenarios.SCENARIOS)
    assert result.states > 1000
    assert result.steps > result.states  # every state, plus the near misses tried in it


@pytest.mark.parametrize(
    ("factory", "divergence"),
    [
        ("HighWatermarkOffByOne", ".high_watermark after produce("),
        ("IsrNeverShrinks", "leader_shrink_isr(leader=0, follower="),
        ("AcceptsProduceOnFollower", "reference answered None"),
        ("AcksAllBeforeHighWatermark", "produce(leader=0, acks=all, value=0)"),
    ],
)
def test_a_broken_partition_is_caught_on_a_shortest_path(factory: str, divergence: str) -> None:
    result = run_exhaustive(f"{BROKEN}:{factory}", depth=DEPTH, directed=())
    assert not result.passed
    assert result.failure is not None
    assert result.failure.startswith(f"scenario {result.scenarios[-1]}, depth {DEPTH}:")
    assert divergence in result.failure
    assert "commands (with the reference's answer):" in result.failure


def test_truncating_to_the_high_watermark_is_caught_on_a_shortest_path() -> None:
    # A produce, its replication, a leader move, both brokers applying it, the truncation:
    # seven actions. The random machine finds it too, but shrinks it only in minutes.
    result = run_exhaustive(
        f"{BROKEN}:TruncatesToHighWatermark", depth=7, scenarios=(CLEAN_ELECTION,), directed=()
    )
    assert not result.passed
    assert result.failure is not None
    assert "records after follower_truncate(follower=0)" in result.failure
    assert "controller_move_leadership(new_leader=1) -> True" in result.failure
    commands = listed(result.failure)
    assert len(commands) == 7, commands  # the path alone: the near misses tried along it are left out


def listed(failure: str) -> list[str]:
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


def test_progress_is_reported_per_path() -> None:
    seen: list[tuple[str, int, int]] = []
    run_exhaustive(
        "reference", depth=2, scenarios=(CLEAN_ELECTION,), progress=lambda *done: seen.append(done)
    )
    assert seen
    assert {name for name, _, _ in seen} == {"clean-election"}
    assert seen[-1][1] == seen[-1][2]
    assert [done for _, done, _ in seen] == list(range(1, len(seen) + 1))


def test_a_bad_depth_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="depth must be at least 1"):
        run_exhaustive("reference", depth=0)


def test_cli_exhaustive_suite(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "conformance", "--target", "reference", "--suite", "exhaustive", "--depth", "2"
    )
    assert code == 0, out
    assert "reference, exhaustive suite: conforms (every spec state within 2 actions" in out
    code, out, _ = run_cli(
        capsys,
        "conformance",
        "--target",
        f"{BROKEN}:IsrNeverShrinks",
        "--suite",
        "exhaustive",
        "--depth",
        "3",
    )
    assert code == 1
    assert "DIVERGES" in out
    code, _, err = run_cli(
        capsys, "conformance", "--target", "reference", "--suite", "exhaustive", "--depth", "0"
    )
    assert code == 2
    assert "--depth" in err


@pytest.mark.parametrize("directed", DIRECTED_PATHS, ids=lambda directed: directed.name)
def test_directed_paths_are_spec_paths_that_reach_their_point(directed: DirectedPath) -> None:
    config = spec_config(directed.settings)
    state = spec_partition.initial_state(config)
    for action in directed.path:
        successor = spec_partition.step(config, state, action)
        assert successor is not None, f"{action} is not enabled along {directed.name}"
        state = successor
    follower = state.replicas[0]
    leader = state.replicas[1]
    if directed.name == "kip-279-second-round":
        # After two rounds broker 0 keeps only what both share: epoch 0's first record.
        assert [record.value for record in follower.log.records] == [0]
        assert [entry.epoch for entry in leader.log.epoch_cache] == [0, 1, 3]
    elif directed.name == "out-of-range-ahead-of-unclean-leader":
        # Truncated to the leader's log end, keeping the one record below it.
        assert [record.value for record in follower.log.records] == [0]
        assert [record.value for record in leader.log.records] == [0]
    else:
        assert 0 not in leader.isr  # fetched at the HW, below the epoch's start offset
        assert (
            follower.log.log_end_offset == leader.log.high_watermark < leader.log.epoch_cache[-1].start_offset
        )


def test_directed_paths_run_first() -> None:
    result = run_exhaustive(f"{BROKEN}:TruncatesToHighWatermark", depth=1)
    assert not result.passed
    assert result.failure is not None
    assert result.failure.startswith("directed path kip-279-second-round (")
    assert "follower_truncate(follower=0)" in result.failure
