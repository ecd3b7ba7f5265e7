"""Exhaustive conformance of the KIP-848 consumer-group coordinator: every spec state within a depth.

What it is
    The random machine (`conformance.machines.consumer_group`) samples requests; this suite
    leaves nothing to chance up to a bound. For every named scenario of the consumer protocol
    (`spec.group.consumer_scenarios`: its consumers, partitions, assignor, rule versions and
    fault bounds) a breadth-first search of the whole system model (`spec.group.consumer`: the
    coordinator and its consumers, with lost responses, late heartbeats and commits, timeouts)
    finds every distinct state within `depth` actions and a shortest path to it. The paths to
    the leaves of the search tree cover every state; each is replayed on a fresh target beside
    the reference as the requests and timers the coordinator sees along it
    (`coordinator_commands`: a heartbeat handled at once, lost or late is the
    ConsumerGroupHeartbeat the consumer built when it sent it; a commit handled at once or late
    the OffsetCommit it carries, with the epoch it was stamped with; a leave the heartbeat with
    -1 or -2; a session or rebalance timeout the member's timer; steps only the consumers take
    send nothing) through the random machine's own `run`, which compares every answer and the
    observable groups after each command and checks the reference against the spec. After
    every action the reference's coordinator must be exactly the system model's: the replayed
    requests are the coordinator's whole view of the path.

Near misses
    In each coordinator state, the first time a replay passes through it, requests and timers
    the spec answers without changing anything are given too: a heartbeat one epoch ahead or
    behind, the previous epoch with a superset of the assignment, -2 from a dynamic member, a
    heartbeat from a consumer that is not a member, a commit one epoch stale, a rebalance timer
    of each member, an OffsetFetch with a stale epoch; the spec decides which candidates change
    nothing (a near miss the spec accepts would leave the path), so the replay goes on.

Which scenarios
    All of them: the implementation under test is told the scenario's rule versions
    (`ConsumerGroupSettings`), so the old rules (KAFKA-19233's refused rejoin, the exact commit
    rule, the epoch bump after a revocation) are conformance targets too.

What it does not cover
    Transitions into states already reached by a shorter path are not replayed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from conformance import paths
from conformance.consumer_group_sut import (
    TOPIC,
    ConsumerGroupSettings,
    instance_id_of,
    member_id_of,
    settings_of,
)
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.machines.consumer_group import (
    Command,
    ConsumerGroupConformanceMachine,
    ExpireRebalance,
    ExpireSession,
    Heartbeat,
    OffsetCommit,
    OffsetFetch,
    consumer_group_machine_for,
    spec_coordinator,
)
from conformance.target_calls import DivergenceError
from reference.consumer_group import client_of
from spec.group import consumer
from spec.group.consumer import ConsumerGroupConfig, Coordinator, GroupState
from spec.group.consumer_scenarios import SCENARIOS
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    Errors,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TopicPartition,
)
from spec.machines import Scenario

GROUP = "g0"
"""The group every replay uses."""

DEFAULT_DEPTH = 6
"""Every state within 6 actions of each scenario's empty group (7,106 states over the 21
scenarios): joins, a first revocation round, a lost or late heartbeat, a timeout."""


def leaf_paths(
    config: ConsumerGroupConfig, depth: int
) -> tuple[int, tuple[tuple[consumer.Action, ...], ...]]:
    """Breadth-first search of `spec.group.consumer` from the empty group: the number of
    distinct states within `depth` actions and the shortest paths to the leaves of the search
    tree."""
    return paths.leaf_paths(
        consumer.initial_state(config),
        partial(consumer.candidate_actions, config),
        partial(consumer.step, config),
        depth,
    )


# --- from the system model's actions to the coordinator's requests -----------------------------


def _tps(partitions: frozenset[int] | None) -> tuple[TopicPartition, ...] | None:
    if partitions is None:
        return None
    return tuple(TopicPartition(TOPIC, p) for p in sorted(partitions))


def heartbeat_command(
    settings: ConsumerGroupSettings, client: int, request: consumer.HeartbeatRequest
) -> Heartbeat:
    """The ConsumerGroupHeartbeat consumer `client` sends for the spec's `request`."""
    return Heartbeat(
        ConsumerGroupHeartbeatRequest(
            GROUP,
            member_id_of(client),
            request.member_epoch,
            instance_id_of(settings, client),
            60_000,
            (TOPIC,),
            None,
            _tps(request.owned),
        )
    )


def commit_command(client: int, epoch: int, partition: int, value: int) -> OffsetCommit:
    """The OffsetCommit of one partition consumer `client` sends with `epoch`."""
    offsets = ((TopicPartition(TOPIC, partition), value),)
    return OffsetCommit(GROUP, OffsetCommitRequest(member_id_of(client), epoch, None, offsets))


def coordinator_commands(
    settings: ConsumerGroupSettings,
    state: GroupState,
    action: consumer.Action,
    value: int,
) -> tuple[Command, ...]:
    """The requests and timers the coordinator sees when the system model takes `action` in
    `state` (an enabled action), in order; `value` is the offset a commit carries."""
    if isinstance(action, consumer.ClientHeartbeat | consumer.ClientHeartbeatResponseLost):
        client = state.clients[action.client]
        return (heartbeat_command(settings, action.client, consumer.heartbeat_request(client)),)
    if isinstance(action, consumer.CoordinatorHandleHeartbeat):
        request = state.clients[action.client].in_flight
        assert request is not None
        return (heartbeat_command(settings, action.client, request),)
    if isinstance(action, consumer.ClientLeaveGroup | consumer.ClientStaticLeave):
        epoch = -1 if isinstance(action, consumer.ClientLeaveGroup) else -2
        return (heartbeat_command(settings, action.client, consumer.HeartbeatRequest(epoch, frozenset())),)
    if isinstance(action, consumer.ClientCommitOffset):
        return (commit_command(action.client, state.clients[action.client].epoch, action.partition, value),)
    if isinstance(action, consumer.CoordinatorHandleCommit):
        commit = state.clients[action.client].commit_in_flight
        assert commit is not None
        return (commit_command(action.client, commit.member_epoch, commit.partition, value),)
    if isinstance(action, consumer.CoordinatorSessionTimeout):
        return (ExpireSession(GROUP, member_id_of(action.client)),)
    if isinstance(action, consumer.CoordinatorRebalanceTimeout):
        return (ExpireRebalance(GROUP, member_id_of(action.client)),)
    return ()  # revoking, sending later, retrying, restarting: nothing reaches the coordinator


def near_miss_candidates(
    settings: ConsumerGroupSettings, coordinator: Coordinator, value: int
) -> tuple[Command, ...]:
    """Requests and timers one field off in `coordinator`'s state (which of them change
    nothing is for the spec to say, see `near_misses`)."""
    candidates: list[Command] = [OffsetFetch(GROUP, OffsetFetchRequest(None))]
    for client, member in enumerate(coordinator.members):
        if member is None:
            candidates.append(heartbeat_command(settings, client, consumer.HeartbeatRequest(1, frozenset())))
            candidates.append(commit_command(client, 1, 0, value))
            continue
        holds = member.holds()
        spare = frozenset(p for p in range(settings.partitions) if p not in member.assigned)
        requests = [
            consumer.HeartbeatRequest(member.epoch + 1, holds),
            consumer.HeartbeatRequest(member.epoch - 1, member.assigned),
            consumer.HeartbeatRequest(member.previous_epoch, member.assigned | spare),
            consumer.HeartbeatRequest(-2, frozenset()),
            consumer.HeartbeatRequest(0, holds | {0}),
        ]
        candidates.extend(heartbeat_command(settings, client, request) for request in requests)
        candidates.extend(
            commit_command(client, member.epoch - 1, partition, value) for partition in sorted(holds) or [0]
        )
        candidates.append(ExpireRebalance(GROUP, member_id_of(client)))
        candidates.append(
            OffsetFetch(GROUP, OffsetFetchRequest(None, member_id_of(client), member.epoch - 1))
        )
    return tuple(candidates)


def near_misses(machine: ConsumerGroupConformanceMachine, value: int) -> tuple[Command, ...]:
    """The candidates the spec answers without changing the coordinator or the offsets."""
    config = machine.config
    coordinator = machine.reference.group(GROUP)
    kept: list[Command] = []
    for command in near_miss_candidates(machine.settings, coordinator, value):
        if isinstance(command, OffsetCommit):
            member = coordinator.members[client_of(config, command.request.member_id)]
            epoch = command.request.generation_id_or_member_epoch
            if all(
                consumer.commit_error(member, tp.partition, epoch, config.commit_rule) is not Errors.NONE
                for tp, _ in command.request.offsets
            ):
                kept.append(command)
        elif spec_coordinator(config, coordinator, command) == coordinator:
            kept.append(command)
    return tuple(kept)


# --- running -------------------------------------------------------------------------------------


def run_exhaustive(
    target: str,
    depth: int = DEFAULT_DEPTH,
    scenarios: Sequence[Scenario[ConsumerGroupConfig]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    command_seconds: float = DEFAULT_COMMAND_SECONDS,
) -> paths.ExhaustiveResult:
    """Replay every scenario's leaf paths within `depth` on `target` beside the reference; stop
    at the first divergence (reported with a shortest path to the state where the target first
    disagreed, as the spec's actions and as the commands given). A bad target string raises
    ValueError; a call into the target that takes longer than `command_seconds` raises
    `conformance.guard.TargetHungError`."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    machine_class = consumer_group_machine_for(target, command_seconds, groups=(GROUP,))
    chosen = SCENARIOS if scenarios is None else tuple(scenarios)
    return paths.replay_scenarios(
        target,
        depth,
        paths.scenario_paths(chosen, depth, leaf_paths),
        partial(_replay_once, machine_class),
        progress,
    )


def _replay_once(
    machine_class: type[ConsumerGroupConformanceMachine],
    config: ConsumerGroupConfig,
    path: tuple[consumer.Action, ...],
    checked: set[Coordinator] | None,
) -> tuple[str | None, int]:
    machine = machine_class()
    settings = settings_of(config)
    given = 0
    state = consumer.initial_state(config)
    try:
        machine.begin(settings)
        for position, action in enumerate((None, *path)):
            if action is not None:
                for command in coordinator_commands(settings, state, action, 1000 + given):
                    machine.run(command)
                    given += 1
                following = consumer.step(config, state, action)
                assert following is not None, f"{action} is not enabled on the path"
                state = following
                if machine.reference.group(GROUP) != state.coordinator:
                    raise machine.fail(
                        f"after {action!r} (action {position} of the path) the reference's coordinator "
                        "is not the system model's (a bug in this suite's translation of actions into "
                        f"requests): "
                        f"{machine.reference.group(GROUP)!r} != {state.coordinator!r}"
                    )
            coordinator = machine.reference.group(GROUP)
            if checked is None or coordinator in checked:
                continue
            checked.add(coordinator)
            for near_miss in near_misses(machine, 1000 + given):
                machine.run(near_miss)
                given += 1
    except DivergenceError as divergence:
        return f"{_path_text(path)}\n{divergence}", given
    finally:
        machine.teardown()
    return None, given


def _path_text(path: tuple[consumer.Action, ...]) -> str:
    return "path (spec.group.consumer actions): " + (", ".join(repr(action) for action in path) or "(none)")
