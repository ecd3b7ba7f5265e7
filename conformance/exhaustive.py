"""Bounded exhaustive conformance: every state the spec reaches within a depth, replayed on a target.

What it is
    The random machine (`conformance.machines.partition`) samples command sequences; deep
    states (several OffsetsForLeaderEpoch rounds after repeated leader changes, a follower
    rejoining below a new leader's epoch start) are rare in samples. This suite leaves
    nothing to chance up to a bound: for each named scenario of `spec.scenarios` (its
    settings and its exploration bounds), a breadth-first search of `spec.partition` finds
    every distinct state within `depth` actions and a shortest path to it. The paths to the
    leaves of that search tree cover every state; each is replayed on a fresh target beside
    the reference through the random machine's own `_run`, which compares every answer and
    the whole observable view after every step and checks refinement against the spec. At
    each state, the first time a replay passes through it, the actions the spec refuses
    there (`near_misses`: shrinking a follower one tick early, a fetch from an older leader
    epoch, a produce to a follower) are given too and must be refused; refused actions change nothing, so the
    replay goes on along its path.

    This is model-based testing in the manner of trace checking with TLC: the spec's
    reachable graph, not a sample of it, is the test. Its cost is (leaves x depth) steps,
    so depths stay small (`DEFAULT_DEPTH`).

Directed paths
    Some states that matter lie deeper than any affordable depth: a truncation that needs a
    second OffsetsForLeaderEpoch round (KIP-279) takes three leaders writing in turn, about
    fifteen actions. `DIRECTED_PATHS` are such paths from the KIPs and JIRAs, written as spec
    actions; they are replayed first, the same way (a test checks every step is enabled in
    the spec).

What it does not cover
    Transitions into states already reached by a shorter path (non-tree edges) are not
    replayed, only their targets are reached another way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from conformance import paths
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.machines.partition import PartitionConformanceMachine, partition_machine_for
from conformance.partition_sut import ReplicationSettings
from conformance.target_calls import DivergenceError
from spec import partition as spec_partition
from spec.machines import Scenario
from spec.partition import (
    Action,
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    FollowerHandleFetchResponse,
    FollowerTruncate,
    LeaderHandleFetch,
    LeaderShrinkIsr,
    PartitionConfig,
    PartitionState,
    ProducerSend,
    ReplicaBecomeLeaderOrFollower,
)
from spec.partition_scenarios import SCENARIOS
from spec.types import Acks, TruncationRule

ExhaustiveResult = paths.ExhaustiveResult

DEFAULT_DEPTH = 6
"""Deep enough for a leader change with a truncation after it in every scenario, small
enough that the whole suite takes seconds on the built-in targets."""


@dataclass(frozen=True, slots=True)
class DirectedPath:
    """A known deep path, replayed before the breadth-first ones."""

    name: str
    why: str
    settings: ReplicationSettings
    path: tuple[Action, ...]


def _leader_change(new_leader: int) -> tuple[Action, ...]:
    return (ControllerMoveLeadership(new_leader), ReplicaBecomeLeaderOrFollower(new_leader))


DIRECTED_PATHS: tuple[DirectedPath, ...] = (
    DirectedPath(
        "kip-279-second-round",
        "Brokers 0 and 1 write in turns without replicating (epochs 0, 1, 2, 3); broker 0's "
        "truncation asks for epoch 2, hears epoch 1 (which it never had), cuts to its own epoch 0 "
        "end and must ask again: the leader's epoch 0 ends one record earlier (KIP-279).",
        ReplicationSettings(replication_factor=2, min_insync_replicas=1),
        (
            ProducerSend(0, Acks.LEADER),
            LeaderHandleFetch(1),
            FollowerHandleFetchResponse(1),
            ProducerSend(0, Acks.LEADER),
            *_leader_change(1),
            ProducerSend(1, Acks.LEADER),
            *_leader_change(0),
            ProducerSend(0, Acks.LEADER),
            BrokerCrash(0, 3),
            ReplicaBecomeLeaderOrFollower(1),
            BrokerRestart(0),
            ReplicaBecomeLeaderOrFollower(0),
            FollowerTruncate(0),
        ),
    ),
    DirectedPath(
        "kafka-7128-rejoin-below-epoch-start",
        "The leader dies losing an unreplicated record; the new leader's epoch starts above the "
        "HW (a lagging ISR member holds it back); the old leader returns empty and fetches at "
        "the HW: it must not rejoin the ISR before reaching the epoch's start offset (KAFKA-7128).",
        ReplicationSettings(replication_factor=3, min_insync_replicas=1),
        (
            ProducerSend(0, Acks.LEADER),
            LeaderHandleFetch(1),
            FollowerHandleFetchResponse(1),
            BrokerCrash(0, 0),
            ReplicaBecomeLeaderOrFollower(1),
            BrokerRestart(0),
            ReplicaBecomeLeaderOrFollower(0),
            FollowerTruncate(0),
            LeaderHandleFetch(0),
        ),
    ),
    DirectedPath(
        "out-of-range-ahead-of-unclean-leader",
        "Under the legacy hw rule an unclean election makes a shorter replica leader; the old "
        "leader comes back, keeps its log up to its own HW and fetches past the new leader's log "
        "end: OFFSET_OUT_OF_RANGE, and it must truncate to the leader's LEO, not wipe its log "
        "(KIP-101's divergence setting).",
        ReplicationSettings(
            replication_factor=2,
            min_insync_replicas=1,
            unclean_leader_election=True,
            truncation=TruncationRule.HIGH_WATERMARK,
        ),
        (
            ProducerSend(0, Acks.LEADER),
            LeaderHandleFetch(1),
            FollowerHandleFetchResponse(1),
            ProducerSend(0, Acks.LEADER),
            ClockTick(),
            LeaderShrinkIsr(0, 1),
            BrokerCrash(0, 2),
            ReplicaBecomeLeaderOrFollower(1),
            BrokerRestart(0),
            ReplicaBecomeLeaderOrFollower(0),
            FollowerTruncate(0),
            LeaderHandleFetch(0),
            FollowerHandleFetchResponse(0),
        ),
    ),
)
"""Deep paths from the literature (each step enabled in the spec: a test replays them)."""


def settings_of(config: PartitionConfig) -> ReplicationSettings:
    """The behaviour-relevant part of a scenario's configuration."""
    return ReplicationSettings(
        replication_factor=config.replication_factor,
        min_insync_replicas=config.min_insync_replicas,
        unclean_leader_election=config.unclean_leader_election,
        truncation=config.truncation,
        replica_lag_ticks=config.replica_lag_ticks,
    )


def leaf_paths(config: PartitionConfig, depth: int) -> tuple[int, tuple[tuple[Action, ...], ...]]:
    """Breadth-first search of the spec from its initial state: the number of distinct states
    within `depth` actions and the shortest paths to the leaves of the search tree (states
    that discovered no new state), whose prefixes reach every other state."""
    return paths.leaf_paths(
        spec_partition.initial_state(config),
        partial(spec_partition.candidate_actions, config),
        partial(spec_partition.step, config),
        depth,
    )


def run_exhaustive(
    target: str,
    depth: int = DEFAULT_DEPTH,
    scenarios: Sequence[Scenario[PartitionConfig]] = SCENARIOS,
    directed: Sequence[DirectedPath] = DIRECTED_PATHS,
    progress: Callable[[str, int, int], None] | None = None,
    command_seconds: float = DEFAULT_COMMAND_SECONDS,
) -> ExhaustiveResult:
    """Replay the `directed` paths, then every scenario's leaf paths within `depth`, on
    `target` beside the reference.

    Stops at the first divergence and reports it with the commands that led there (the
    path is a shortest one to the state where the target first disagreed, because paths
    come in breadth-first order). `progress(scenario, done, total)` is called after each
    replayed path. A bad target string raises ValueError. A call into the target that takes
    longer than `command_seconds` raises `conformance.guard.TargetHungError`.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    machine_class = partition_machine_for(target, command_seconds)
    replay_once = partial(_replay_once, machine_class)
    started = time.perf_counter()
    steps = 0
    for known in directed:
        failure, taken = paths.replay_path(replay_once, known.settings, known.path, set())
        steps += taken
        if failure is not None:
            report = f"directed path {known.name} ({known.why}):\n{failure}"
            return ExhaustiveResult(
                target, depth, (known.name,), 0, steps, False, report, time.perf_counter() - started
            )

    def replay_scenario_path(
        config: PartitionConfig, path: tuple[Action, ...], checked: set[PartitionState] | None
    ) -> tuple[str | None, int]:
        return replay_once(settings_of(config), path, checked)

    covered = paths.scenario_paths(scenarios, depth, leaf_paths)
    return paths.replay_scenarios(target, depth, covered, replay_scenario_path, progress, started, steps)


def near_misses(machine: PartitionConformanceMachine) -> tuple[Action, ...]:
    """The actions to try in the reference's state that the spec refuses there: its candidate
    actions whose guard fails, and a produce with every acks setting to every broker that
    does not act as leader (a follower must answer NOT_LEADER_OR_FOLLOWER, which the spec
    models as the send not happening)."""
    reference = machine.reference
    state = reference.state
    to_followers = tuple(
        ProducerSend(replica, acks)
        for replica in range(len(state.replicas))
        if not spec_partition.acts_as_leader(state, replica)
        for acks in reference.config.producer_acks
    )
    return (*machine._refused_candidates(), *to_followers)


def _replay_once(
    machine_class: type[PartitionConformanceMachine],
    settings: ReplicationSettings,
    path: tuple[Action, ...],
    checked_near_misses: set[PartitionState] | None,
) -> tuple[str | None, int]:
    """One replay; near misses are skipped altogether when `checked_near_misses` is None."""
    machine = machine_class()
    given = 0
    try:
        machine.start(settings, frozenset(), frozenset())
        for action in (None, *path):
            if action is not None:
                machine._run(action)
                given += 1
            state = machine.reference.state
            if checked_near_misses is None or state in checked_near_misses:
                continue
            checked_near_misses.add(state)
            for near_miss in near_misses(machine):
                machine._run(near_miss)
                given += 1
    except DivergenceError as divergence:
        return str(divergence), given
    finally:
        machine.teardown()
    return None, given
