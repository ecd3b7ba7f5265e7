"""The consumer-group machine: a KIP-848 coordinator under test and the reference, one request at a time.

What it is
    A Hypothesis `RuleBasedStateMachine` that builds a `ConsumerGroupCoordinatorUnderTest`
    (named by a target string, see `conformance.consumer_group_sut`) and the definitional
    `reference.consumer_group.ReferenceConsumerGroupCoordinator` with the same
    `ConsumerGroupSettings`, drawn per test case (2-4 consumers, 1-4 partitions, 0-2 static
    members, the `uniform` or `range` assignor, and each of Kafka's rule versions: the epoch-0
    rejoin, the commit epoch rule, the epoch after a revocation, a static member's rejoin), and
    gives both the same commands (`Command`): ConsumerGroupHeartbeat (join, heartbeat, leave
    with -1, leave for now with -2), OffsetCommit and OffsetFetch for two groups, and the
    coordinator's timers (a member's session and rebalance timeouts, offset retention).

Which commands
    Requests are built from the reference's state so most mean something: a member
    heartbeats with its epoch and what its client would own (everything it holds, or only
    its assignment once it revoked, or no owned list), rejoins with epoch 0, commits its
    partitions with its epoch. About a third are near misses, where off-by-one guards show:
    an epoch one ahead or one behind, the previous epoch with a superset of the assignment,
    an epoch-0 join that lists owned partitions, -2 from a dynamic member, a member the
    group does not have, a commit one epoch stale or for a partition that is not the member's,
    a fetch with a stale epoch, a timer of a member not revoking. Each test case leans on up
    to three kinds of command and leaves out up to two (swarm testing, Groce et al. 2012).

What is compared
    After every command: the answer and `observe()` of every group (the failure names the
    first differing field, `members[1].member_epoch`, `partition_owners`, ...) and lists
    every command so far with the reference's answer.

Refinement (the reference against the spec)
    After every command the reference's step must be the spec's: from the coordinator it held,
    `spec.group.consumer.handle_heartbeat` gives exactly its new coordinator and answer; a
    session or rebalance timer gives what the spec's `CoordinatorSessionTimeout` /
    `CoordinatorRebalanceTimeout` action does to the coordinator (nothing when it is not
    enabled); a commit is `commit_error` per partition. The coordinator-level properties must
    hold: `partition_epochs_consistent`, `epochs_are_ordered` and the step property
    `epochs_only_grow`.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Protocol, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from conformance.consumer_group_sut import (
    TOPIC,
    ConsumerGroupCoordinatorUnderTest,
    ConsumerGroupSettings,
    ConsumerGroupView,
    GroupId,
    config_of,
    instance_id_of,
    make_consumer_group_coordinator,
    member_id_of,
    resolve_consumer_group_target,
    view_of,
)
from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.target_calls import DivergenceError, TargetCalls, bound_machine
from reference.consumer_group import ReferenceConsumerGroupCoordinator, client_of, partitions_of
from spec.group import consumer
from spec.group.consumer import ConsumerGroupConfig, Coordinator, GroupState
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    MemberId,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartition,
)

T = TypeVar("T")

# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------


class _Shown:
    """Commands print as `command_text` (a failing sequence is listed with them)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return command_text(self)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, repr=False)
class Heartbeat(_Shown):
    request: ConsumerGroupHeartbeatRequest

    @property
    def group_id(self) -> GroupId:
        return self.request.group_id


@dataclass(frozen=True, slots=True, repr=False)
class OffsetCommit(_Shown):
    group_id: GroupId
    request: OffsetCommitRequest


@dataclass(frozen=True, slots=True, repr=False)
class OffsetFetch(_Shown):
    group_id: GroupId
    request: OffsetFetchRequest


@dataclass(frozen=True, slots=True, repr=False)
class ExpireSession(_Shown):
    group_id: GroupId
    member_id: MemberId


@dataclass(frozen=True, slots=True, repr=False)
class ExpireRebalance(_Shown):
    group_id: GroupId
    member_id: MemberId


@dataclass(frozen=True, slots=True, repr=False)
class ExpireOffsets(_Shown):
    group_id: GroupId


Command = Heartbeat | OffsetCommit | OffsetFetch | ExpireSession | ExpireRebalance | ExpireOffsets
Answer = ConsumerGroupHeartbeatResponse | OffsetCommitResponse | OffsetFetchResponse | None


class Requests(Protocol):
    """The methods `perform` calls (the target's and the reference's)."""

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse: ...
    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse: ...
    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse: ...
    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None: ...
    def expire_rebalance(self, group_id: GroupId, member_id: MemberId) -> None: ...
    def expire_offsets(self, group_id: GroupId) -> None: ...


def perform(target: Requests, command: Command) -> Answer:
    """Call the method of `target` that performs `command`."""
    if isinstance(command, Heartbeat):
        return target.consumer_group_heartbeat(command.request)
    if isinstance(command, OffsetCommit):
        return target.offset_commit(command.group_id, command.request)
    if isinstance(command, OffsetFetch):
        return target.offset_fetch(command.group_id, command.request)
    if isinstance(command, ExpireSession):
        target.expire_session(command.group_id, command.member_id)
    elif isinstance(command, ExpireRebalance):
        target.expire_rebalance(command.group_id, command.member_id)
    else:
        target.expire_offsets(command.group_id)
    return None


def _parts(partitions: Sequence[TopicPartition] | None) -> str:
    if partitions is None:
        return "-"
    return "{" + ",".join(str(tp.partition) for tp in partitions) + "}"


def command_text(command: Command) -> str:
    """The command as a short line: `Heartbeat(g0, m1, epoch=3, owned={0,2})`."""
    if isinstance(command, Heartbeat):
        r = command.request
        instance = "" if r.instance_id is None else f", instance={r.instance_id}"
        owned = _parts(r.topic_partitions)
        return f"Heartbeat({r.group_id}, {r.member_id}, epoch={r.member_epoch}{instance}, owned={owned})"
    if isinstance(command, OffsetCommit):
        c = command.request
        offsets = ",".join(f"{tp.partition}={offset}" for tp, offset in c.offsets)
        epoch = c.generation_id_or_member_epoch
        return f"OffsetCommit({command.group_id}, {c.member_id}, epoch={epoch}, {{{offsets}}})"
    if isinstance(command, OffsetFetch):
        f = command.request
        return (
            f"OffsetFetch({command.group_id}, {f.member_id}, epoch={f.member_epoch}, {_parts(f.partitions)})"
        )
    if isinstance(command, ExpireSession | ExpireRebalance):
        return f"{type(command).__name__}({command.group_id}, {command.member_id})"
    return f"ExpireOffsets({command.group_id})"


# ---------------------------------------------------------------------------------------
# Drawing commands from the reference's state
# ---------------------------------------------------------------------------------------

GROUPS: tuple[GroupId, ...] = ("g0", "g1")
INDEX = st.integers(0, 59)
SEED = st.integers(0, 1023)
Pick = Callable[[], int]


class _Seeded:
    """Each command's details come from one seeded generator: three Hypothesis choices per
    command instead of a dozen, so shrinking deletes commands rather than tuning details."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def __call__(self) -> int:
        return self._random.randrange(60)


def _choose(pick: Pick, choices: Sequence[T]) -> T:
    return choices[pick() % len(choices)]


def _near_miss(pick: Pick) -> bool:
    """About one draw in three is a near miss."""
    return pick() % 3 == 2


KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("heartbeat", 8),
    ("join", 3),
    ("leave", 1),
    ("static_leave", 1),
    ("commit", 3),
    ("fetch", 1),
    ("session", 1),
    ("rebalance", 2),
    ("offsets", 1),
)
KIND_NAMES = tuple(name for name, _ in KIND_WEIGHTS)
SWARM_BOOST = 4


def weighted_kinds(emphasis: frozenset[str], omitted: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Every kind repeated by its weight, `emphasis` `SWARM_BOOST` times more, `omitted` not at
    all (swarm testing). Never empty."""
    kinds = tuple(
        name
        for name, weight in KIND_WEIGHTS
        if name not in omitted
        for _ in range(weight * (SWARM_BOOST if name in emphasis else 1))
    )
    return kinds or KIND_NAMES


def _tps(partitions: frozenset[int] | set[int]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(TOPIC, p) for p in sorted(partitions))


def draw_heartbeat(
    pick: Pick, settings: ConsumerGroupSettings, group_id: GroupId, coordinator: Coordinator, client: int
) -> Heartbeat:
    """A heartbeat of consumer `client`: what its client would send, or a near miss."""
    member_id, instance = member_id_of(client), instance_id_of(settings, client)
    member = coordinator.members[client]

    def beat(epoch: int, owned: tuple[TopicPartition, ...] | None) -> Heartbeat:
        return Heartbeat(
            ConsumerGroupHeartbeatRequest(group_id, member_id, epoch, instance, 60_000, (TOPIC,), None, owned)
        )

    if member is None or member.epoch < 0:
        if _near_miss(pick):
            return _choose(pick, (beat(0, _tps({0})), beat(0, None), beat(1 + pick() % 4, ()), beat(-3, ())))
        return beat(0, ())
    holds = member.assigned | member.pending_revocation
    spare = [p for p in range(settings.partitions) if p not in member.assigned]
    if _near_miss(pick):
        superset = member.assigned | {_choose(pick, spare)} if spare else member.assigned
        return _choose(
            pick,
            (
                beat(member.epoch + 1, _tps(holds)),
                beat(member.epoch - 1, _tps(member.assigned)),
                beat(member.previous_epoch, _tps(superset)),
                beat(member.previous_epoch, None),
                beat(-2, ()),
                beat(0, _tps(holds)),
            ),
        )
    situation = _choose(pick, ("owns", "owns", "revoked", "previous", "none", "rejoin"))
    if situation == "revoked":
        return beat(member.epoch, _tps(member.assigned))
    if situation == "previous":
        subset = frozenset(p for p in member.assigned if pick() % 2)
        return beat(member.previous_epoch, _tps(subset))
    if situation == "none":
        return beat(member.epoch, None)
    if situation == "rejoin":
        return beat(0, ())
    return beat(member.epoch, _tps(holds))


def draw_commit(
    pick: Pick, group_id: GroupId, coordinator: Coordinator, client: int, partitions: int, value: int
) -> OffsetCommit:
    member = coordinator.members[client]
    holds = sorted(member.holds()) if member is not None else []
    chosen = {_choose(pick, holds)} if holds and not _near_miss(pick) else {pick() % partitions}
    if pick() % 4 == 3:
        chosen.add(pick() % partitions)
    epoch = member.epoch if member is not None and member.epoch > 0 else 1 + pick() % 3
    if member is not None and _near_miss(pick):
        epochs = [
            member.epoch - 1,
            member.epoch + 1,
            member.previous_epoch,
            *(e for _, e in member.assignment_epochs),
        ]
        epoch = _choose(pick, epochs)
    offsets = tuple((TopicPartition(TOPIC, p), value) for p in sorted(chosen))
    return OffsetCommit(group_id, OffsetCommitRequest(member_id_of(client), epoch, None, offsets))


def draw_fetch(pick: Pick, group_id: GroupId, coordinator: Coordinator, client: int) -> OffsetFetch:
    wanted = _choose(
        pick, (None, (TopicPartition(TOPIC, 0),), (TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)))
    )
    member = coordinator.members[client]
    situation = _choose(pick, ("admin", "member", "member", "stale"))
    if situation == "admin":
        return OffsetFetch(group_id, OffsetFetchRequest(wanted))
    epoch = member.epoch if member is not None else 1
    if situation == "stale":
        epoch -= 1
    return OffsetFetch(group_id, OffsetFetchRequest(wanted, member_id_of(client), epoch))


def build_command(
    reference: ReferenceConsumerGroupCoordinator,
    settings: ConsumerGroupSettings,
    kinds: tuple[str, ...],
    value: int,
    choice: tuple[int, int, int],
) -> Command:
    """One command from three drawn numbers (group, kind, seed), built from the reference's
    state of the group with the seed's generator; `value` is the offset a commit carries."""
    group_index, kind_index, seed = choice
    group_id = GROUPS[1] if group_index % 4 == 3 else GROUPS[0]
    coordinator = reference.group(group_id)
    kind = kinds[kind_index % len(kinds)]
    pick = _Seeded(seed)
    client = pick() % settings.members
    present = [c for c, member in enumerate(coordinator.members) if member is not None]
    if (
        kind in ("session", "rebalance", "leave", "static_leave", "commit")
        and present
        and not _near_miss(pick)
    ):
        client = _choose(pick, present)
    member_id, instance = member_id_of(client), instance_id_of(settings, client)
    if kind == "heartbeat":
        return draw_heartbeat(pick, settings, group_id, coordinator, client)
    if kind == "join":
        return Heartbeat(
            ConsumerGroupHeartbeatRequest(group_id, member_id, 0, instance, 60_000, (TOPIC,), None, ())
        )
    if kind in ("leave", "static_leave"):
        if kind == "static_leave" and settings.static_members and not _near_miss(pick):
            client = pick() % settings.static_members
            member_id, instance = member_id_of(client), instance_id_of(settings, client)
        epoch = -1 if kind == "leave" else -2
        return Heartbeat(
            ConsumerGroupHeartbeatRequest(group_id, member_id, epoch, instance, topic_partitions=())
        )
    if kind == "commit":
        return draw_commit(pick, group_id, coordinator, client, settings.partitions, value)
    if kind == "fetch":
        return draw_fetch(pick, group_id, coordinator, client)
    if kind == "session":
        return ExpireSession(group_id, member_id)
    if kind == "rebalance":
        return ExpireRebalance(group_id, member_id)
    return ExpireOffsets(group_id)


# ---------------------------------------------------------------------------------------
# Comparing, and the reference against the spec
# ---------------------------------------------------------------------------------------


def first_difference(
    target: ConsumerGroupView, reference: ConsumerGroupView
) -> tuple[str, object, object] | None:
    """The first field (members field by field) where `target` differs from `reference`."""
    for view_field in fields(ConsumerGroupView):
        name = view_field.name
        mine, theirs = getattr(target, name), getattr(reference, name)
        if name != "members":
            if isinstance(mine, list):
                mine = tuple(mine)
            if mine != theirs:
                return name, mine, theirs
            continue
        if len(mine) != len(theirs):
            return "members (ids)", [m.member_id for m in mine], [m.member_id for m in theirs]
        for index, (left_member, right_member) in enumerate(zip(mine, theirs, strict=True)):
            for member_field in fields(right_member):
                left = getattr(left_member, member_field.name)
                right = getattr(right_member, member_field.name)
                if left != right:
                    return f"members[{index}].{member_field.name}", left, right
    return None


@functools.lru_cache(maxsize=4096)
def _reference_view(
    settings: ConsumerGroupSettings, coordinator: Coordinator, offsets: tuple[tuple[int, int], ...]
) -> ConsumerGroupView:
    """`view_of`, cached: replays pass through the same coordinators again and again."""
    return view_of(settings, coordinator, dict(offsets))


@functools.lru_cache(maxsize=64)
def _fresh(config: ConsumerGroupConfig) -> GroupState:
    return consumer.initial_state(config)


def system_state(config: ConsumerGroupConfig, coordinator: Coordinator) -> GroupState:
    """A system state around `coordinator` whose consumers are all joining (the coordinator-level
    properties and the timer actions read only the coordinator), with fresh bounds."""
    fresh = _fresh(config)
    return GroupState(coordinator, fresh.clients, fresh.history)


def timer_config(config: ConsumerGroupConfig) -> ConsumerGroupConfig:
    """`config` with room for one session and one rebalance timeout (the spec's bounds)."""
    return ConsumerGroupConfig(
        members=config.members,
        partitions=config.partitions,
        static_members=config.static_members,
        assignor=config.assignor,
        rejoin=config.rejoin,
        commit_rule=config.commit_rule,
        revocation_epoch=config.revocation_epoch,
        static_rejoin=config.static_rejoin,
        max_session_timeouts=1,
        max_rebalance_timeouts=1,
    )


def spec_coordinator(config: ConsumerGroupConfig, before: Coordinator, command: Command) -> Coordinator:
    """What the spec's functions and actions make of `before` under `command`."""
    if isinstance(command, Heartbeat):
        request = consumer.HeartbeatRequest(
            command.request.member_epoch, partitions_of(command.request.topic_partitions)
        )
        return consumer.handle_heartbeat(
            config, before, client_of(config, command.request.member_id), request
        )[0]
    if isinstance(command, ExpireSession | ExpireRebalance):
        client = client_of(config, command.member_id)
        action: consumer.Action = (
            consumer.CoordinatorSessionTimeout(client)
            if isinstance(command, ExpireSession)
            else consumer.CoordinatorRebalanceTimeout(client)
        )
        after = consumer.step(timer_config(config), system_state(config, before), action)
        return before if after is None else after.coordinator
    return before


def properties_violated(config: ConsumerGroupConfig, before: Coordinator, after: Coordinator) -> list[str]:
    """The coordinator-level spec properties the step from `before` to `after` breaks."""
    was, now = system_state(config, before), system_state(config, after)
    broken = [
        name
        for name, check in (
            ("partition_epochs_consistent", consumer.partition_epochs_consistent),
            ("epochs_are_ordered", consumer.epochs_are_ordered),
        )
        if not check(now)
    ]
    if not consumer.epochs_only_grow(was, now):
        broken.append("epochs_only_grow")
    return broken


# ---------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------


class ConsumerGroupConformanceMachine(TargetCalls[ConsumerGroupSettings], RuleBasedStateMachine):
    """Drives `make_consumer_group_coordinator(target, settings)` and the reference with the same commands."""

    target: ClassVar[str] = "reference"
    command_seconds: float = DEFAULT_COMMAND_SECONDS
    groups: ClassVar[tuple[GroupId, ...]] = GROUPS

    def __init__(self) -> None:
        super().__init__()
        self._sut: ConsumerGroupCoordinatorUnderTest | None = None
        self.hung = False
        self.settings = ConsumerGroupSettings()
        self.config = config_of(self.settings)
        self.reference = ReferenceConsumerGroupCoordinator(self.config)
        self.commands: list[str] = []
        self.offset_value = 0
        self._kinds = weighted_kinds(frozenset())

    @property
    def sut(self) -> ConsumerGroupCoordinatorUnderTest:
        """The coordinator under test (built by `begin`)."""
        assert self._sut is not None, "start() builds the target before any command"
        return self._sut

    def teardown(self) -> None:
        """Release the target's resources (not after a hang: the target is stuck)."""
        if self._sut is not None and not self.hung:
            self.guarded("close()", self._sut.close)

    def begin(self, settings: ConsumerGroupSettings) -> None:
        """Build the target and the reference with `settings`; both start with no groups."""
        self.settings = settings
        self.config = config_of(settings)
        self.reference = ReferenceConsumerGroupCoordinator(self.config)
        self._sut = self.guarded(
            "creating the coordinator",
            lambda: make_consumer_group_coordinator(self.target, settings),
            usage_errors=True,
        )
        views = self.guarded(
            "observe() at the start", lambda: tuple(self.sut.observe(g) for g in self.groups)
        )
        for group_id, view in zip(self.groups, views, strict=True):
            self._compare_view(group_id, view, "the start")

    def _compare_view(self, group_id: GroupId, view: ConsumerGroupView, after: str) -> None:
        expected = _reference_view(
            self.settings,
            self.reference.group(group_id),
            tuple(sorted(self.reference.offsets(group_id).items())),
        )
        if view == expected:
            return
        try:
            difference = first_difference(view, expected)
        except (AttributeError, TypeError) as error:
            raise self.fail(f"observe({group_id}) after {after}: not a ConsumerGroupView: {error}") from error
        if difference is not None:
            path, mine, theirs = difference
            raise self.fail(f"{group_id} {path} after {after}: target has {mine!r}, reference has {theirs!r}")

    def _check_refinement(self, before: Coordinator, command: Command, answer: Answer, text: str) -> None:
        step = self.reference.last_step
        where = f"{text}: the reference left the spec"
        if step is None or step.group_id != command.group_id or step.before != before:
            raise self.fail(f"{where}: it did not step from the coordinator it held")
        expected = spec_coordinator(self.config, before, command)
        if expected != step.after:
            raise self.fail(f"{where}: the spec gives {expected!r}, the reference {step.after!r}")
        if isinstance(command, OffsetCommit) and isinstance(answer, OffsetCommitResponse):
            member = before.members[client_of(self.config, command.request.member_id)]
            epoch = command.request.generation_id_or_member_epoch
            for (partition, _), given in zip(command.request.offsets, answer.partitions, strict=True):
                error = consumer.commit_error(member, partition.partition, epoch, self.config.commit_rule)
                if given.error is not error:
                    raise self.fail(f"{where}: commit_error gives {error} for {partition}, not {given.error}")
        broken = properties_violated(self.config, before, step.after)
        if broken:
            raise self.fail(
                f"{text}: the spec's properties {', '.join(broken)} do not hold in {step.after!r}"
            )

    def run(self, command: Command) -> None:
        """Give `command` to the reference and the target and compare everything."""
        text = command_text(command)
        before = self.reference.group(command.group_id)
        expected = perform(self.reference, command)
        self.commands.append(f"{text} -> {expected!r}" if expected is not None else text)
        self._check_refinement(before, command, expected, text)
        answer, views = self.guarded(text, lambda: self._perform_and_observe(command))
        if answer != expected:
            raise self.fail(f"{text}: target answered {answer!r}, reference answered {expected!r}")
        for group_id, view in zip(self.groups, views, strict=True):
            self._compare_view(group_id, view, text)

    def _perform_and_observe(self, command: Command) -> tuple[Answer, tuple[ConsumerGroupView, ...]]:
        answer = perform(self.sut, command)
        return answer, tuple(self.sut.observe(group_id) for group_id in self.groups)

    @initialize(
        shape=st.tuples(st.integers(2, 4), st.integers(1, 4), st.integers(0, 2)),
        rules=st.tuples(
            st.sampled_from(("uniform", "range")),
            st.sampled_from(("fixed", "old")),
            st.sampled_from(("exact", "range")),
            st.sampled_from(("bump", "keep")),
            st.sampled_from(("replace", "in-place")),
        ),
        emphasis=st.frozensets(st.sampled_from(KIND_NAMES), max_size=3),
        omitted=st.frozensets(st.sampled_from(KIND_NAMES), max_size=2),
    )
    def start(
        self,
        shape: tuple[int, int, int],
        rules: tuple[str, str, str, str, str],
        emphasis: frozenset[str],
        omitted: frozenset[str],
    ) -> None:
        """Build both with the drawn settings; `emphasis` and `omitted` name the kinds of command
        this test case leans on and leaves out (swarm testing)."""
        members, partitions, static = shape
        assignor, rejoin, commit_rule, revocation, static_rejoin = rules
        self._kinds = weighted_kinds(emphasis, omitted)
        self.begin(
            ConsumerGroupSettings(
                members,
                partitions,
                min(static, members),
                assignor,
                rejoin,
                commit_rule,
                revocation,
                static_rejoin,
            )
        )

    @rule(group=INDEX, kind=INDEX, seed=SEED)
    def command(self, group: int, kind: int, seed: int) -> None:
        """A request or a timer, built from the reference's state (`build_command`)."""
        self.offset_value += 1
        self.run(
            build_command(self.reference, self.settings, self._kinds, self.offset_value, (group, kind, seed))
        )


def consumer_group_machine_for(
    target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS, groups: tuple[GroupId, ...] = GROUPS
) -> type[ConsumerGroupConformanceMachine]:
    """The machine bound to `target` (``reference``, ``impl`` or ``MODULE:FACTORY``), each
    call into the target stopped after `command_seconds`, observing `groups` after each command
    (the exhaustive suite uses one group)."""
    return bound_machine(
        ConsumerGroupConformanceMachine, target, command_seconds, resolve_consumer_group_target, groups=groups
    )


__all__ = [
    "Command",
    "ConsumerGroupConformanceMachine",
    "DivergenceError",
    "ExpireOffsets",
    "ExpireRebalance",
    "ExpireSession",
    "Heartbeat",
    "OffsetCommit",
    "OffsetFetch",
    "build_command",
    "consumer_group_machine_for",
    "first_difference",
    "perform",
]
