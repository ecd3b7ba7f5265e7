"""The named questions about the classic consumer-group protocol (`spec.group.classic`).

Each scenario starts from a Stable group (generation 1, the first configured assignor's
assignment) and lets the environment do a few things: a new consumer starts, a member leaves,
crashes or stalls, a static instance restarts, a consumer commits, a member rejoins on its own.
The checker explores every interleaving of the consumers' and the coordinator's steps and either
finds the shortest trace to a violated property or shows none exists within the bounds; a
scenario that expects no violation also names states that must be reached (witnesses).

The pairs show a rule of Kafka's and what happens without it:

* `classic-zombie-commit-fenced` / `-unchecked`: OffsetCommit's generation check;
* `classic-cooperative-join` / `classic-cooperative-one-round`: KIP-429's revoke-first round;
* `classic-late-sync-fixed` / `classic-late-sync-kafka-13419`: a consumer whose SyncGroup fails
  gives up its partitions before it rejoins (KAFKA-13419, KAFKA-14639, KAFKA-12983);
* `classic-static-rejoin-fixed` / `classic-static-rejoin-kafka-9801`: a static member rejoining
  during CompletingRebalance forces a rebalance (KAFKA-9801);
* `classic-lost-sync-fixed` / `classic-lost-sync-kafka-12890`: members that never send SyncGroup
  are removed after the rebalance timeout (KAFKA-12890); without that timer a member whose
  SyncGroup was lost, heartbeating meanwhile, keeps the group waiting forever (the stuck check).

What the checker shows

* Eager consumers never read a partition twice, whatever the timing, because they own nothing
  while they rebalance. Cooperative consumers keep reading while they rebalance, so they rely on
  two more rules: the leader never moves a partition in one round, and a consumer that finds
  itself out of the group (or late for its generation) gives its partitions up before it reads
  again. Drop either and two consumers read one partition (`classic-cooperative-one-round`,
  11 steps; `classic-late-sync-kafka-13419`, 12 steps).
* The shortest KAFKA-13419 trace goes through a late SyncGroup answered UNKNOWN_MEMBER_ID (the
  member was removed while it stalled). Keeping the partitions only after REBALANCE_IN_PROGRESS
  (KAFKA-13419 proper, with the KAFKA-12983 reset fixed) is unsafe too, but needs a second
  spontaneous rejoin: 15 steps with `max.rejoins=2`, none with one (a test checks both).
* The coordinator's own rules are what keep a Stable group's assignment complete (KAFKA-9801)
  and a rebalance from waiting forever (KAFKA-12890); the stuck check finds the latter.

Configuration keys (`--set key=value`) use Kafka's names where Kafka has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial

from spec._frozen import SharedSteps
from spec.checker import Model
from spec.group import classic
from spec.group.assignors import ASSIGNORS, COOPERATIVE_STICKY, ROUND_ROBIN, rebalance_protocol
from spec.group.classic import Action, ClassicConfig, ClassicState, ConsumerProcess
from spec.group.classic_consumer import ClientStatus
from spec.group.types import RebalanceProtocol, TopicPartition
from spec.machines import (
    Diagram,
    Machine,
    Scenario,
    Setting,
    not_stuck,
    parse_bool,
    parse_choice,
    parse_count,
)


def _parse_strategy(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in ASSIGNORS]
    if not names or unknown:
        raise ValueError(f"expected assignors from {', '.join(ASSIGNORS)}, not {text!r}")
    return names


SETTINGS: Mapping[str, Setting] = {
    "partition.assignment.strategy": Setting(
        "partition_assignment_strategy",
        _parse_strategy,
        "assignors in order: range, roundrobin, cooperative-sticky",
    ),
    "rebalance.protocol": Setting(
        "rebalance_protocol",
        parse_choice(RebalanceProtocol),
        "eager or cooperative (default: implied by the strategy)",
    ),
    "group.max.size": Setting("group_max_size", parse_count(1, 2**31 - 1), "group.max.size"),
    "session.timeout.expires": Setting(
        "session_timeouts", parse_bool, "whether a paused member's session.timeout.ms may pass"
    ),
    "static.join.rebalances.when.completing": Setting(
        "static_join_rebalances_when_completing", parse_bool, "KAFKA-9801 fix (false: the old rule)"
    ),
    "offset.commit.checks.generation": Setting(
        "offset_commit_checks_generation", parse_bool, "OffsetCommit refuses other generations"
    ),
    "failed.sync.gives.up.partitions": Setting(
        "failed_sync_gives_up_partitions", parse_bool, "KAFKA-13419 fix (false: the old rule)"
    ),
    "cooperative.withholds.transfers": Setting(
        "withhold_transferring_partitions", parse_bool, "KIP-429 first round (false: move in one round)"
    ),
    "partitions": Setting(
        "topics", lambda text: (("t0", parse_count(1, 8)(text)),), "partitions of topic t0 (1-8)"
    ),
    "pending.sync.timer": Setting("pending_sync_timer", parse_bool, "KAFKA-12890 fix (false: the old rule)"),
    "max.lost.syncs": Setting("max_lost_syncs", parse_count(0, 4), "bound on SyncGroup requests lost"),
    "max.rejoins": Setting("max_rejoins", parse_count(0, 4), "bound on spontaneous rejoins"),
    "max.pauses": Setting("max_pauses", parse_count(0, 4), "bound on consumer crashes or stalls"),
    "max.resumes": Setting("max_resumes", parse_count(0, 4), "bound on stalled consumers resuming"),
    "max.commits": Setting("max_commits", parse_count(0, 4), "bound on OffsetCommits sent"),
    "max.leaves": Setting("max_leaves", parse_count(0, 4), "bound on LeaveGroups"),
}
"""The classic group's `--set` keys."""


def model_for(
    config: ClassicConfig, properties: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[ClassicState, Action]:
    """The checker's view of the classic protocol under `config`: `properties` may name
    invariants, step properties and the stuck check."""
    candidates = partial(classic.candidate_actions, config)
    plain_step = partial(classic.step, config)
    transition = SharedSteps(plain_step)  # the stuck check's successors, reused when it runs
    invariants: dict[str, Callable[[ClassicState], bool]] = {}
    steps: dict[str, Callable[[ClassicState, ClassicState], bool]] = {}
    for name in properties:
        if name == classic.STUCK:
            invariants[name] = not_stuck(classic.rebalance_waiting, candidates, transition.remember)
        elif name in classic.INVARIANTS:
            invariants[name] = partial(classic.INVARIANTS[name], config)
        else:
            steps[name] = partial(classic.STEP_PROPERTIES[name], config)
    return Model(
        initial_states=(classic.initial_state(config),),
        candidate_actions=candidates,
        step=transition.step if classic.STUCK in properties else plain_step,
        invariants=invariants,
        step_properties=steps,
        witnesses={name: partial(classic.WITNESSES[name], config) for name in witnesses},
    )


def validate(config: ClassicConfig) -> str | None:
    """Why a classic-group configuration is inconsistent, or None."""
    if not config.consumers:
        return "at least one consumer is needed"
    if not config.topics or any(count < 1 for _, count in config.topics):
        return "every topic needs at least one partition"
    protocol = config.rebalance_protocol
    if (
        protocol is RebalanceProtocol.COOPERATIVE
        and rebalance_protocol(config.partition_assignment_strategy) is not protocol
    ):
        return (
            "rebalance.protocol=cooperative needs assignors that all support it (cooperative-sticky); "
            "Kafka's consumer refuses the combination"
        )
    return None


def _partitions(partitions: Sequence[TopicPartition]) -> str:
    return "[" + " ".join(str(partition) for partition in partitions) + "]"


def describe_state(state: ClassicState) -> list[str]:
    """One line for the group, one per member, one per consumer, one for commits in flight."""
    group = state.group
    offsets = " ".join(
        f"{partition}:{commit.offset}@{commit.member_id}/g{commit.generation}"
        for partition, commit in group.offsets
    )
    lines = [
        f"group: {group.state} generation {group.generation} protocol {group.protocol_name or '-'} "
        f"leader {group.leader or '-'} pending-join {list(group.pending_members)} "
        f"pending-sync {list(group.pending_sync)} offsets {{{offsets}}}"
    ]
    for member in group.members:
        parked = ",".join(
            name for name, flag in (("join", member.awaiting_join), ("sync", member.awaiting_sync)) if flag
        )
        instance = f" instance {member.group_instance_id}" if member.group_instance_id else ""
        claims = {p for protocol in member.protocols for p in protocol.metadata.owned_partitions}
        lines.append(
            f"member {member.member_id}:{instance} client c{member.client} parked [{parked}] "
            f"assignment {_partitions(member.assignment.partitions)} claims {_partitions(sorted(claims))}"
        )
    for index, consumer in enumerate(state.consumers):
        inbox = []
        if consumer.join_response is not None:
            inbox.append(
                f"JoinGroup {consumer.join_response.error.name} g{consumer.join_response.generation_id}"
            )
        if consumer.sync_response is not None:
            response = consumer.sync_response
            inbox.append(f"SyncGroup {response.error.name} {_partitions(response.assignment.partitions)}")
        fatal = f" ({consumer.fatal_error.name})" if consumer.fatal_error is not None else ""
        lines.append(
            f"consumer c{index}: {consumer.status.value}{fatal} {consumer.phase.value} "
            f"member {consumer.member_id or '-'} generation {consumer.generation} "
            f"owns {_partitions(consumer.owned)}"
            + (" rejoin-needed" if consumer.rejoin_needed else "")
            + (f" inbox {inbox}" if inbox else "")
        )
    flights = " ".join(
        f"c{flight.client}:{flight.request.member_id}/g{flight.request.generation_id_or_member_epoch}"
        for flight in state.in_flight
    )
    lines.append(f"in flight: OffsetCommit [{flights}]")
    return lines


def explain(name: str, state: ClassicState) -> str:
    """One sentence: why the property fails in `state` (the last state of its trace)."""
    group = state.group
    if name == "partition_read_by_one_consumer":
        readers: dict[TopicPartition, list[str]] = {}
        for index, consumer in enumerate(state.consumers):
            for partition in consumer.reading:
                readers.setdefault(partition, []).append(f"c{index} (generation {consumer.generation})")
        for partition, who in sorted(readers.items()):
            if len(who) > 1:
                return f"partition {partition} is read by {' and '.join(who)}"
    if name == "stable_group_assigns_every_partition":
        assigned = {p for member in group.members for p in member.assignment.partitions}
        missing = sorted(set(state.partitions) - assigned)
        owners = ", ".join(
            f"{member.member_id} {_partitions(member.assignment.partitions)}" for member in group.members
        )
        return (
            f"the Stable group (generation {group.generation}) assigns {owners}: "
            f"{_partitions(missing)} has no owner"
        )
    if name == classic.STUCK:
        waiting = [
            f"c{index}"
            for index, consumer in enumerate(state.consumers)
            if consumer.status is ClientStatus.RUNNING
        ]
        return f"consumers {', '.join(waiting)} wait in a {group.state} group and no action can move it on"
    if name == "stale_commits_never_land":
        for partition, commit in group.offsets:
            return (
                f"the commit of {partition} by {commit.member_id} in generation {commit.generation} landed "
                f"while the group is at generation {group.generation}"
            )
    if name == "offsets_expire_only_when_empty":
        return f"offsets expired while the group is {group.state}"
    if name == "static_restart_keeps_generation":
        return f"a static restart moved the group to generation {group.generation}"
    if name == "leader_stays_while_it_rejoins":
        return f"leadership moved to {group.leader} while the previous leader was still a member"
    return f"{name} fails"


def group_state(state: ClassicState) -> str:
    """The diagram's node: the group's state (`ClassicGroupState`)."""
    return str(state.group.state)


CLASSIC_GROUP: Machine[ClassicConfig, ClassicState, Action] = Machine(
    name="classic-group",
    title="the classic consumer-group protocol: coordinator and consumers (JoinGroup, SyncGroup, Heartbeat, "
    "LeaveGroup, OffsetCommit; KIP-345, KIP-394, KIP-429)",
    settings=SETTINGS,
    model=model_for,
    describe_state=describe_state,
    validate=validate,
    explain=explain,
    modules=(
        "spec.group.classic",
        "spec.group.classic_coordinator",
        "spec.group.classic_consumer",
        "spec.group.assignors",
        "spec.group.types",
    ),
    diagram=Diagram(
        title="the classic group's state (an action that starts and at once completes a join phase passes "
        "through PreparingRebalance in one step)",
        project=group_state,
        # two members that may rejoin, stall, commit and both leave: every state including Empty
        # and Dead (offsets expire once the group is Empty), 7,350 states
        config=ClassicConfig(max_leaves=2, max_commits=1, max_rejoins=1, max_pauses=1),
        max_depth=60,
    ),
)
MACHINE = CLASSIC_GROUP

SAFETY: tuple[str, ...] = (
    "partition_read_by_one_consumer",
    "stable_group_assigns_every_partition",
    "leader_is_a_member",
    "one_member_per_instance",
    classic.STUCK,
    "valid_state_transitions",
    "generations_only_grow",
    "stale_commits_never_land",
    "offsets_expire_only_when_empty",
    "leader_stays_while_it_rejoins",
)
"""Every property that holds under Kafka's rules in every scenario."""

_TWO = (ConsumerProcess("c0"), ConsumerProcess("c1"))
_JOINER = (*_TWO, ConsumerProcess("c2", initial_member=False))
_STATIC = (
    ConsumerProcess("c0", group_instance_id="i0"),
    ConsumerProcess("c1"),
    ConsumerProcess("c0-restarted", group_instance_id="i0", initial_member=False),
)
_STATIC_FOLLOWER = (
    ConsumerProcess("c0"),
    ConsumerProcess("c1", group_instance_id="i1"),
    ConsumerProcess("c1-restarted", group_instance_id="i1", initial_member=False),
)
_LOST_SYNC = ClassicConfig(max_rejoins=1, max_lost_syncs=1)
_LATE_SYNC = ClassicConfig(
    partition_assignment_strategy=(COOPERATIVE_STICKY,), max_rejoins=1, max_pauses=1, max_resumes=1
)
_ZOMBIE = ClassicConfig(max_rejoins=1, max_commits=1, max_pauses=1)
_STATIC_MID_REBALANCE = ClassicConfig(
    consumers=_STATIC_FOLLOWER, max_rejoins=1, max_pauses=1, session_timeouts=False
)


def _scenario(
    name: str,
    summary: str,
    config: ClassicConfig,
    expect_violation: bool,
    properties: tuple[str, ...] = SAFETY,
    witnesses: tuple[str, ...] = (),
    reference: str = "",
    max_depth: int = 40,
) -> Scenario[ClassicConfig]:
    return Scenario(
        machine=CLASSIC_GROUP,
        name=name,
        summary=summary,
        config=config,
        invariants=properties,
        expect_violation=expect_violation,
        witnesses=witnesses,
        reference=reference,
        max_depth=max_depth,
    )


SCENARIOS: tuple[Scenario[ClassicConfig], ...] = (
    _scenario(
        "classic-member-joins",
        "a third consumer joins a Stable group of two (range, eager): MEMBER_ID_REQUIRED, a rebalance, "
        "every partition read by one consumer",
        ClassicConfig(topics=(("t0", 3),), consumers=_JOINER),
        False,
        witnesses=("settled_after_rebalance",),
        reference="KIP-394; JoinGroup, SyncGroup",
    ),
    _scenario(
        "classic-member-leaves",
        "a member of a Stable group of two leaves (LeaveGroup): the other takes every partition",
        ClassicConfig(max_leaves=1, max_commits=1),
        False,
        witnesses=("member_left_and_settled",),
        reference="LeaveGroup",
    ),
    _scenario(
        "classic-member-crashes",
        "a member crashes; its session timeout removes it and the other takes its partitions",
        ClassicConfig(max_pauses=1, max_commits=1),
        False,
        witnesses=("crashed_member_replaced",),
        reference="session.timeout.ms",
    ),
    _scenario(
        "classic-group-max-size",
        "group.max.size=2: a third consumer is refused with GROUP_MAX_SIZE_REACHED and stops; the group "
        "does not rebalance",
        ClassicConfig(consumers=_JOINER, group_max_size=2),
        False,
        witnesses=("joiner_refused_at_max_size",),
        reference="KIP-389 (group.max.size)",
    ),
    _scenario(
        "classic-idle-consumer",
        "three consumers, two partitions (round-robin): one consumer reads nothing",
        ClassicConfig(consumers=_JOINER, partition_assignment_strategy=(ROUND_ROBIN,)),
        False,
        witnesses=("idle_consumer_settled",),
        reference="RoundRobinAssignor",
    ),
    _scenario(
        "classic-offsets-expire-when-empty",
        "a lone member commits and leaves: the group is Empty, its offsets expire and the group is deleted "
        "(Dead); while it had a member they never expired",
        ClassicConfig(consumers=(ConsumerProcess("c0"),), max_commits=1, max_leaves=1),
        False,
        witnesses=("offsets_expired_and_group_deleted",),
        reference="offsets.retention.minutes; ClassicGroup.offsetExpirationCondition",
    ),
    _scenario(
        "classic-zombie-commit-fenced",
        "a commit sent before a rebalance arrives after it, or from a crashed member: refused "
        "(ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID)",
        _ZOMBIE,
        False,
        witnesses=("stale_commit_refused",),
        reference="ClassicGroup.validateOffsetCommit",
    ),
    _scenario(
        "classic-zombie-commit-unchecked",
        "the same without OffsetCommit's generation check: a commit from an earlier generation lands",
        replace(_ZOMBIE, offset_commit_checks_generation=False),
        True,
        properties=("stale_commits_never_land",),
        reference="ClassicGroup.validateOffsetCommit",
    ),
    _scenario(
        "classic-static-restart",
        "a static member (group.instance.id) crashes and restarts within its session timeout: no rebalance, "
        "it gets its partitions back",
        ClassicConfig(consumers=_STATIC, max_pauses=1, session_timeouts=False),
        False,
        properties=(*SAFETY, "static_restart_keeps_generation"),
        witnesses=("static_member_restarted_in_place",),
        reference="KIP-345",
    ),
    _scenario(
        "classic-static-replaced",
        "a static member stalls, a new instance takes its group.instance.id, the old one wakes up: its "
        "next request is answered FENCED_INSTANCE_ID and it stops; no stale commit lands (if it wakes "
        "before the new instance joined, both read its partitions until then: two live instances of one "
        "group.instance.id are a misconfiguration KIP-345 leaves to operators, so "
        "partition_read_by_one_consumer is not checked)",
        ClassicConfig(consumers=_STATIC, max_pauses=1, max_resumes=1, max_commits=1, session_timeouts=False),
        False,
        properties=tuple(name for name in SAFETY if name != "partition_read_by_one_consumer"),
        witnesses=("old_instance_fenced", "static_member_restarted_in_place"),
        reference="KIP-345",
    ),
    _scenario(
        "classic-cooperative-join",
        "cooperative-sticky: a third consumer joins; the partition it gets is revoked in one round and "
        "assigned in the next, never read twice",
        ClassicConfig(
            topics=(("t0", 3),), consumers=_JOINER, partition_assignment_strategy=(COOPERATIVE_STICKY,)
        ),
        False,
        witnesses=("moved_in_two_rounds",),
        reference="KIP-429",
    ),
    _scenario(
        "classic-cooperative-one-round",
        "cooperative consumers whose leader moves a partition in one round (no revoke-first round): "
        "the new owner reads it before the old one revoked it",
        ClassicConfig(
            topics=(("t0", 3),),
            consumers=_JOINER,
            partition_assignment_strategy=(COOPERATIVE_STICKY,),
            withhold_transferring_partitions=False,
        ),
        True,
        properties=("partition_read_by_one_consumer",),
        reference="KIP-429; ConsumerCoordinator.validateCooperativeAssignment",
    ),
    _scenario(
        "classic-late-sync-fixed",
        "cooperative: a member stalls between its JoinGroup answer and its SyncGroup; the group moves on; "
        "its late SyncGroup fails and it gives its partitions up before it reads again",
        _LATE_SYNC,
        False,
        witnesses=("late_sync_refused",),
        reference="KAFKA-13419, KAFKA-14639",
    ),
    _scenario(
        "classic-late-sync-kafka-13419",
        "the same with the old rule (a failed SyncGroup keeps the partitions and rejoins): two consumers "
        "read one partition",
        ClassicConfig(
            partition_assignment_strategy=(COOPERATIVE_STICKY,),
            max_rejoins=1,
            max_pauses=1,
            max_resumes=1,
            failed_sync_gives_up_partitions=False,
        ),
        True,
        properties=("partition_read_by_one_consumer",),
        reference="KAFKA-13419, KAFKA-12983",
    ),
    _scenario(
        "classic-static-rejoin-kafka-9801",
        "a static member restarts while the group is CompletingRebalance; under the old rule there is no "
        "new rebalance and the leader's assignment, made for its old member id, leaves it nothing",
        replace(_STATIC_MID_REBALANCE, static_join_rebalances_when_completing=False),
        True,
        properties=("stable_group_assigns_every_partition",),
        reference="KAFKA-9801",
    ),
    _scenario(
        "classic-static-rejoin-fixed",
        "the same with today's rule: the rejoin during CompletingRebalance forces a rebalance and the "
        "restarted instance gets its partitions",
        _STATIC_MID_REBALANCE,
        False,
        witnesses=("static_rejoin_settled",),
        reference="KAFKA-9801",
    ),
    _scenario(
        "classic-lost-sync-fixed",
        "the leader's SyncGroup is lost while it keeps heartbeating: the pending-sync timer removes it, the "
        "group rebalances and the leader, told UNKNOWN_MEMBER_ID by its next heartbeat, rejoins",
        _LOST_SYNC,
        False,
        witnesses=("lost_sync_member_removed",),
        reference="KAFKA-12890",
    ),
    _scenario(
        "classic-lost-sync-kafka-12890",
        "the same before the pending-sync timer: heartbeats during CompletingRebalance keep the member's "
        "session alive, nothing removes it and the group waits forever (stuck)",
        replace(_LOST_SYNC, pending_sync_timer=False),
        True,
        properties=(classic.STUCK,),
        reference="KAFKA-12890",
    ),
)
"""The classic group's scenarios, in the order `check --all` runs them."""


__all__ = [
    "CLASSIC_GROUP",
    "MACHINE",
    "SAFETY",
    "SCENARIOS",
    "SETTINGS",
    "describe_state",
    "explain",
    "group_state",
    "model_for",
    "validate",
]
