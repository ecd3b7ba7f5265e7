"""Exhaustive conformance of the classic coordinator: every state the group spec reaches within a depth.

What it is
    The random machine (`conformance.machines.coordinator`) samples requests; this suite
    leaves nothing to chance up to a bound. For every named scenario of the classic group
    protocol (`spec.group.classic_scenarios`, with its consumers, assignors and bounds) a
    breadth-first search of the whole system model (`spec.group.classic`: the coordinator and
    its consumers) finds every distinct state within `depth` actions and a shortest path to
    it. The paths to the leaves of the search tree cover every state; each is replayed on a
    fresh target beside the reference, as the requests and timers the coordinator sees
    along it (`coordinator_commands`: a consumer's SendJoinGroup is its JoinGroup, a
    DeliverOffsetCommit the OffsetCommit it carries, a ResumeConsumer the SyncGroup or
    Heartbeat it sends, a SessionTimeout the member's session timer, ...; consumer-only steps
    send nothing), through the random machine's own `run`, which compares every answer, the
    parked requests answered and the observable group after each command and checks the
    reference against the spec.

    The scenarios start from a Stable group in generation 1; the replay first builds that
    group on the empty coordinator with requests (`prelude`: each initial member joins, a
    dynamic one after MEMBER_ID_REQUIRED, the initial rebalance delay passes, the leader
    sends the first assignor's assignment and the followers sync), and checks the
    reference's group is exactly the scenario's initial group. After every action it checks
    again that the reference's group is the one the system model reached: the replayed
    requests are the coordinator's whole view of the path.

Near misses
    In each state, the first time a replay passes through it, requests and timers the spec
    answers without changing anything are given too (a heartbeat, SyncGroup or commit one
    generation off, another member's `group.instance.id`, an unknown member id, a session
    timer of a member whose request is parked, a rebalance or pending-sync timer that is not
    armed, an OffsetFetch); the spec decides which candidates change nothing, so the replay
    goes on along its path.

Which scenarios
    Those whose coordinator follows Kafka's rules today: the scenarios that switch a
    coordinator rule off (`offset_commit_checks_generation`, KAFKA-9801's rule) show what the
    old behaviour breaks, which no conforming coordinator does. Scenarios that change only the
    consumers' rules stay: they make the coordinator see other requests.

What it does not cover
    Transitions into states already reached by a shorter path are not replayed, only their
    targets are reached another way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from conformance import paths
from conformance.coordinator_sut import CoordinatorSettings
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.machines.coordinator import (
    GARBAGE_MEMBER_ID,
    Command,
    CoordinatorConformanceMachine,
    ExpireOffsets,
    ExpirePendingSync,
    ExpireRebalance,
    ExpireSession,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
    coordinator_machine_for,
    spec_outcome,
)
from conformance.target_calls import DivergenceError
from spec.group import classic
from spec.group import classic_consumer as consumer_side
from spec.group.assignors import ASSIGNORS, MemberSubscription
from spec.group.classic import ClassicConfig, ClassicState
from spec.group.classic_consumer import ClientPhase, ClientStatus
from spec.group.classic_coordinator import ClassicGroup, CoordinatorRules
from spec.group.classic_scenarios import SCENARIOS
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    UNKNOWN_MEMBER_ID,
    Assignment,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from spec.machines import Scenario

GROUP = "g0"
"""The group every replay uses."""

DEFAULT_DEPTH = 6
"""Deep enough for a rebalance after a member joins, leaves or times out in every scenario
(1,155 states over the scenarios that run); the whole suite takes seconds."""


def conforming_scenarios() -> tuple[Scenario[ClassicConfig], ...]:
    """The classic scenarios whose coordinator follows Kafka's rules (see the docstring)."""
    return tuple(
        scenario
        for scenario in SCENARIOS
        if replace(scenario.config.coordinator_rules, group_max_size=CoordinatorRules().group_max_size)
        == CoordinatorRules()
    )


def settings_of(config: ClassicConfig) -> CoordinatorSettings:
    """The broker settings of a scenario."""
    return CoordinatorSettings(group_max_size=config.group_max_size)


def leaf_paths(config: ClassicConfig, depth: int) -> tuple[int, tuple[tuple[classic.Action, ...], ...]]:
    """Breadth-first search of `spec.group.classic` from the scenario's initial state: the
    number of distinct states within `depth` actions and the shortest paths to the leaves of
    the search tree."""
    return paths.leaf_paths(
        classic.initial_state(config),
        partial(classic.candidate_actions, config),
        partial(classic.step, config),
        depth,
    )


def prelude(config: ClassicConfig) -> tuple[Command, ...]:
    """The requests that build the scenario's initial Stable group on an empty coordinator
    (see the module docstring); empty when the scenario has no initial member."""
    rules = config.consumer_rules
    initial = [index for index, process in enumerate(config.consumers) if process.initial_member]
    if not initial:
        return ()
    metadata = Subscription(rules.subscription, (), -1)
    protocols = tuple(JoinGroupRequestProtocol(name, metadata) for name in rules.strategy)
    commands: list[Command] = []
    member_ids: list[str] = []
    for index in initial:
        instance = config.consumers[index].group_instance_id
        member_id = f"{instance if instance is not None else f'c{index}'}-{len(member_ids)}"
        if instance is None:
            commands.append(
                JoinGroup(
                    GROUP, JoinGroupRequest(UNKNOWN_MEMBER_ID, None, CONSUMER_PROTOCOL_TYPE, protocols), index
                )
            )
            commands.append(
                JoinGroup(GROUP, JoinGroupRequest(member_id, None, CONSUMER_PROTOCOL_TYPE, protocols), index)
            )
        else:
            commands.append(
                JoinGroup(
                    GROUP,
                    JoinGroupRequest(UNKNOWN_MEMBER_ID, instance, CONSUMER_PROTOCOL_TYPE, protocols),
                    index,
                )
            )
        member_ids.append(member_id)
    commands.append(ExpireRebalance(GROUP))  # the initial rebalance delay
    protocol_name = rules.strategy[0]
    subscriptions = [
        MemberSubscription(member_id, config.consumers[index].group_instance_id, rules.subscription)
        for member_id, index in zip(member_ids, initial, strict=True)
    ]
    assignment = ASSIGNORS[protocol_name](dict(config.topics), subscriptions)
    leader_assignment = tuple(
        SyncGroupRequestAssignment(member_id, Assignment(assignment[member_id])) for member_id in member_ids
    )
    for position, (member_id, index) in enumerate(zip(member_ids, initial, strict=True)):
        request = SyncGroupRequest(
            member_id,
            1,
            config.consumers[index].group_instance_id,
            CONSUMER_PROTOCOL_TYPE,
            protocol_name,
            leader_assignment if position == 0 else (),
        )
        commands.append(SyncGroup(GROUP, request, index))
    return tuple(commands)


def _resumed(config: ClassicConfig, state: ClassicState, client: int) -> ClassicState:
    """The state after a paused consumer runs again and handles the answers that reached it,
    before it talks to the coordinator (the first half of `classic.resume_consumer`)."""
    consumer = state.consumers[client]
    consumers = tuple(
        replace(consumer, status=ClientStatus.RUNNING) if index == client else other
        for index, other in enumerate(state.consumers)
    )
    state = replace(state, consumers=consumers)
    state = (
        classic.receive_join_group_response(config, state, classic.ReceiveJoinGroupResponse(client)) or state
    )
    return (
        classic.receive_sync_group_response(config, state, classic.ReceiveSyncGroupResponse(client)) or state
    )


def coordinator_commands(
    config: ClassicConfig, state: ClassicState, action: classic.Action
) -> tuple[Command, ...]:
    """The requests and timers the coordinator sees when the system model takes `action` in
    `state` (an enabled action), in order."""
    rules = config.consumer_rules
    if isinstance(action, classic.SessionTimeout):
        return (ExpireSession(GROUP, action.member_id),)
    if isinstance(action, classic.RebalanceTimeout):
        return (ExpireRebalance(GROUP),)
    if isinstance(action, classic.PendingSyncTimeout):
        return (ExpirePendingSync(GROUP),)
    if isinstance(action, classic.ExpireOffsets):
        return (ExpireOffsets(GROUP),)
    if isinstance(action, classic.DeliverOffsetCommit):
        flight = next(flight for flight in state.in_flight if flight.client == action.client)
        return (OffsetCommit(GROUP, flight.request),)
    if not isinstance(
        action, classic.SendJoinGroup | classic.SendSyncGroup | classic.SendHeartbeat | classic.LeaveGroup
    ) and not isinstance(action, classic.ResumeConsumer):
        return ()  # starting, pausing, handling an answer, queueing a commit: nothing reaches it
    client = action.client
    instance = config.consumers[client].group_instance_id
    consumer = state.consumers[client]
    if isinstance(action, classic.SendJoinGroup):
        joining = replace(
            consumer_side.prepare_join(rules, consumer), phase=ClientPhase.JOINING, rejoin_needed=False
        )
        return (JoinGroup(GROUP, consumer_side.join_request(rules, joining, instance), client),)
    if isinstance(action, classic.SendSyncGroup):
        return (SyncGroup(GROUP, consumer_side.sync_request(rules, consumer, instance), client),)
    if isinstance(action, classic.SendHeartbeat):
        return (Heartbeat(GROUP, consumer_side.heartbeat_request(consumer, instance)),)
    if isinstance(action, classic.LeaveGroup):
        return (LeaveGroup(GROUP, LeaveGroupRequest((MemberIdentity(consumer.member_id),))),)
    resumed = _resumed(config, state, client).consumers[client]
    if resumed.status is not ClientStatus.RUNNING:
        return ()
    if resumed.phase is ClientPhase.JOINED:
        return (SyncGroup(GROUP, consumer_side.sync_request(rules, resumed, instance), client),)
    if resumed.member_id != UNKNOWN_MEMBER_ID and consumer_side.may_heartbeat(resumed):
        return (Heartbeat(GROUP, consumer_side.heartbeat_request(resumed, instance)),)
    return ()


def near_miss_candidates(group: ClassicGroup, value: int) -> tuple[Command, ...]:
    """Requests and timers one field off in `group`'s state (which of them change nothing is
    for the spec to say, see `near_misses`)."""
    candidates: list[Command] = [
        Heartbeat(GROUP, HeartbeatRequest(GARBAGE_MEMBER_ID, group.generation)),
        LeaveGroup(GROUP, LeaveGroupRequest((MemberIdentity(GARBAGE_MEMBER_ID),))),
        OffsetFetch(GROUP, OffsetFetchRequest(None)),
        ExpireRebalance(GROUP),
        ExpirePendingSync(GROUP),
        ExpireOffsets(GROUP),
        ExpireSession(GROUP, GARBAGE_MEMBER_ID),
    ]
    for member in group.members:
        member_id, instance = member.member_id, member.group_instance_id
        other_instance = "i9" if instance is None else None
        for generation in (group.generation - 1, group.generation + 1):
            candidates.append(Heartbeat(GROUP, HeartbeatRequest(member_id, generation, instance)))
            candidates.append(
                SyncGroup(
                    GROUP,
                    SyncGroupRequest(
                        member_id, generation, instance, CONSUMER_PROTOCOL_TYPE, group.protocol_name
                    ),
                    member.client,
                )
            )
        offsets = tuple((partition, value) for partition in member.assignment.partitions)
        candidates.append(
            OffsetCommit(GROUP, OffsetCommitRequest(member_id, group.generation - 1, instance, offsets))
        )
        candidates.append(Heartbeat(GROUP, HeartbeatRequest(member_id, group.generation, other_instance)))
        candidates.append(ExpireSession(GROUP, member_id))
    return tuple(candidates)


def near_misses(machine: CoordinatorConformanceMachine, value: int) -> tuple[Command, ...]:
    """The candidates the spec answers without changing the group or answering a parked request."""
    group = machine.reference.group(GROUP)
    rules = machine.reference.rules
    kept = []
    for command in near_miss_candidates(group, value):
        after, _, deliveries = spec_outcome(group, command, rules)
        if after == group and not deliveries:
            kept.append(command)
    return tuple(kept)


# --- running -------------------------------------------------------------------------------------


def run_exhaustive(
    target: str,
    depth: int = DEFAULT_DEPTH,
    scenarios: Sequence[Scenario[ClassicConfig]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    command_seconds: float = DEFAULT_COMMAND_SECONDS,
) -> paths.ExhaustiveResult:
    """Replay every conforming scenario's leaf paths within `depth` on `target` beside the
    reference; stop at the first divergence (reported with a shortest path to the state
    where the target first disagreed, as the spec's actions and as the commands given).
    A bad target string raises ValueError; a call into the target that takes longer than
    `command_seconds` raises `conformance.guard.TargetHungError`."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    machine_class = coordinator_machine_for(target, command_seconds)
    chosen = conforming_scenarios() if scenarios is None else tuple(scenarios)
    return paths.replay_scenarios(
        target,
        depth,
        paths.scenario_paths(chosen, depth, leaf_paths),
        partial(_replay_once, machine_class),
        progress,
    )


def _replay_once(
    machine_class: type[CoordinatorConformanceMachine],
    config: ClassicConfig,
    path: tuple[classic.Action, ...],
    checked: set[ClassicGroup] | None,
) -> tuple[str | None, int]:
    machine = machine_class()
    given = 0
    state = classic.initial_state(config)
    try:
        machine.begin(settings_of(config))
        for command in prelude(config):
            machine.run(command)
            given += 1
        _check_group(machine, state.group, "the prelude", path, 0)
        for position, action in enumerate((None, *path)):
            if action is not None:
                for command in coordinator_commands(config, state, action):
                    machine.run(command)
                    given += 1
                following = classic.step(config, state, action)
                assert following is not None, f"{action} is not enabled on the path"
                state = following
                _check_group(machine, state.group, repr(action), path, position)
            group = machine.reference.group(GROUP)
            if checked is None or group in checked:
                continue
            checked.add(group)
            for near_miss in near_misses(machine, 1000 + given):
                machine.run(near_miss)
                given += 1
    except DivergenceError as divergence:
        return f"{_path_text(path)}\n{divergence}", given
    finally:
        machine.teardown()
    return None, given


def _check_group(
    machine: CoordinatorConformanceMachine,
    expected: ClassicGroup,
    after: str,
    path: tuple[classic.Action, ...],
    position: int,
) -> None:
    if machine.reference.group(GROUP) != expected:
        raise machine.fail(
            f"after {after} (action {position} of the path) the reference's group is not the system model's "
            f"(a bug in this suite's translation of actions into requests): "
            f"{machine.reference.group(GROUP)!r} != {expected!r}"
        )


def _path_text(path: tuple[classic.Action, ...]) -> str:
    return "path (spec.group.classic actions): " + (", ".join(repr(action) for action in path) or "(none)")
