"""The replication conformance machine: a partition under test and the reference, command by command.

What it is
    A Hypothesis `RuleBasedStateMachine` that builds a `PartitionUnderTest` (named by a
    target string, see `conformance.partition_sut`) and the definitional
    `reference.partition.ReferencePartition` with the same `ReplicationSettings`, drawn per
    test case (replication factor 1-3, min.insync.replicas, unclean election on or off,
    the epoch or the legacy high-watermark truncation rule, replica lag 0-2 ticks), and
    gives both the same commands: the replication spec's actions (`spec.partition`) with
    their arguments. Every produce carries the reference's next value (values are 0, 1, 2,
    ... in append order, as the spec numbers them).

Which commands
    `near_miss` picks a candidate action whose guard fails in the reference's state (the
    actor has the right role, but the follower has not lagged long enough, the fetch comes
    from an older leader epoch, ...): guards are exercised at their boundary, where an
    off-by-one shows.
    `enabled_action` picks an action the spec enables in the reference's current state
    (from `spec.partition.candidate_actions`, kept when `step` accepts it), weighted towards
    the ones that move data (produce, fetch, fetch response, truncation, LeaderAndIsr) and,
    for crashes, towards crashes that keep the whole log. `any_action` picks any action with
    arguments in range (every broker, every acks setting, surviving ends and new log start
    offsets one past either edge), so about half of them are refused: a target must refuse
    exactly what the spec refuses, and accept exactly what it accepts.

What is compared
    After every command: the method's answer (the `ProduceOutcome`, or whether the action
    was taken) and the whole `observe()` view; the failure names the first differing field
    (`replicas[1].high_watermark`, `acknowledged`, ...) and lists every command so far.

Refinement (the reference against the spec)
    After every command the reference's step must be a legal spec transition: the state it
    gave the spec is its previous state (bar the checker's produce-rejection counter, which
    a running broker resets, see `reference.partition`), `spec.partition.step` from it gives
    exactly the reference's new state (or None and no change when it refused), the step
    properties hold, and so do the spec invariants that Kafka guarantees under the drawn
    settings and what happened so far (`invariants_in_force`).

Failures shrink
    Hypothesis shrinks a failing case to a minimal one and prints it as a program:
    `state.start(replication=...)`, then one `state.enabled_action(data=data(...))` or
    `state.any_action(...)` per command, each preceded by the line
    `Draw n (...): <the spec action>` that says which action it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from typing import ClassVar, TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.partition_sut import (
    PartitionUnderTest,
    PartitionView,
    ProduceOutcome,
    ReplicationSettings,
    make_partition,
    resolve_partition_target,
    spec_config,
    view_of,
)
from conformance.target_calls import TargetCalls, bound_machine
from reference.partition import ReferencePartition
from spec import partition as spec_partition
from spec.partition import (
    Action,
    BrokerCrash,
    BrokerRestart,
    ClockTick,
    ControllerMoveLeadership,
    FollowerHandleFetchResponse,
    FollowerTruncate,
    History,
    LeaderAdvanceLogStartOffset,
    LeaderHandleFetch,
    LeaderShrinkIsr,
    PartitionState,
    ProducerSend,
    ReplicaBecomeLeaderOrFollower,
)
from spec.types import Acks, TruncationRule

T = TypeVar("T")

# ---------------------------------------------------------------------------------------
# Settings and invariants
# ---------------------------------------------------------------------------------------


@st.composite
def replication_settings(draw: st.DrawFn) -> ReplicationSettings:
    """Settings for one test case. Replication factors 2 and 3 are drawn most often (one
    replica has no replication to get wrong), clean elections and the epoch rule two times
    in three (where every invariant is in force); everything shrinks towards the simplest
    setting: one replica, min.insync.replicas 1, clean elections, the epoch rule, no lag."""
    replication_factor = draw(st.sampled_from((1, 2, 3, 2, 3)))
    epoch, legacy = TruncationRule.LEADER_EPOCH, TruncationRule.HIGH_WATERMARK
    return ReplicationSettings(
        replication_factor=replication_factor,
        min_insync_replicas=draw(st.integers(1, replication_factor)),
        unclean_leader_election=draw(st.sampled_from((False, False, True))),
        truncation=draw(st.sampled_from((epoch, epoch, legacy))),
        replica_lag_ticks=draw(st.integers(0, 2)),
    )


ALWAYS = ("high_watermark_within_log", "leader_in_isr", "controller_epoch_is_newest")
"""Invariants every reachable state keeps, whatever the settings: they hold by construction
(clamped HW updates, elections from the ISR, epochs only the controller creates)."""

UNDER_EPOCH_TRUNCATION = ("replicas_agree_on_epoch_offsets", "followers_are_prefix_of_leader")
"""Replicas never diverge under leader-epoch truncation, even after unclean elections and
crashes that lose data (scenario `epoch-truncation`); the legacy `hw` rule breaks them
(KIP-101 scenario 2)."""

WHILE_ELECTIONS_ARE_CLEAN = ("committed_records_survive", "consumed_records_survive")
"""No committed or consumer-visible record is lost under the epoch rule as long as no unclean
election happened (the invariants themselves stand aside once a crash lost data)."""


def invariants_in_force(settings: ReplicationSettings, history: History) -> tuple[str, ...]:
    """The names of the `spec.partition.INVARIANTS` Kafka guarantees under `settings`, given
    what `history` says happened so far (unclean elections, crashes that lost data, acks=1
    acknowledgements). Each invariant's docstring states its conditions:

    - `ALWAYS`: always.
    - `UNDER_EPOCH_TRUNCATION` and `acks_all_records_survive` (which itself stands aside after
      an unclean election or a crash that lost data): under the epoch rule.
    - `WHILE_ELECTIONS_ARE_CLEAN`: under the epoch rule while no unclean election happened.
    - `acknowledged_records_survive`: moreover only while no crash lost data and every
      acknowledged write was an acks=all one (acks=1 writes are lost by design, scenario
      `acks1-loss`).
    """
    names = list(ALWAYS)
    if settings.truncation is not TruncationRule.LEADER_EPOCH:
        return tuple(names)
    names += [*UNDER_EPOCH_TRUNCATION, "acks_all_records_survive"]
    if history.unclean_elections:
        return tuple(names)
    names += WHILE_ELECTIONS_ARE_CLEAN
    if not history.lossy_crashes and history.acknowledged <= history.acknowledged_all:
        names.append("acknowledged_records_survive")
    return tuple(names)


# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------

ENABLED_KIND_WEIGHTS: tuple[tuple[type, int], ...] = (
    (LeaderHandleFetch, 4),
    (FollowerHandleFetchResponse, 4),
    (ProducerSend, 3),
    (FollowerTruncate, 3),
    (ReplicaBecomeLeaderOrFollower, 3),
    (ClockTick, 2),
    (LeaderShrinkIsr, 4),
    (ControllerMoveLeadership, 2),
    (BrokerCrash, 1),
    (BrokerRestart, 3),
    (LeaderAdvanceLogStartOffset, 1),
)
"""How often each kind of enabled action is picked, relative to the others (when several are
enabled). Data moves often; leadership moves now and then, so followers holding records
above their HW must truncate; a broker crashes rarely and comes back soon, so ISRs get the
chance to be full again; a lagging follower is dropped from the ISR as soon as it can be
(that is rarely possible). Hypothesis draws the first entry more often than its weight says,
so replication comes first; it is also what a failing case shrinks towards."""

ACTION_KINDS: tuple[type, ...] = (
    ProducerSend,
    LeaderHandleFetch,
    FollowerHandleFetchResponse,
    FollowerTruncate,
    ReplicaBecomeLeaderOrFollower,
    ClockTick,
    LeaderShrinkIsr,
    ControllerMoveLeadership,
    BrokerCrash,
    BrokerRestart,
    LeaderAdvanceLogStartOffset,
)
"""Every kind of action, for `any_action`; a produce to any broker comes first (drawn most often)."""


INDEX = st.integers(0, 59)
"""The one strategy commands are drawn with: an index, taken modulo the number of choices (60
is a multiple of every count up to 6, so small choices are uniform). Strategies built afresh
at every step cost Hypothesis more than the step itself; an index shrinks towards the first
choice."""


def _choose(draw: st.DrawFn, choices: Sequence[T]) -> T:
    return choices[draw(INDEX) % len(choices)]


SWARM_BOOST = 4
"""How much a test case's emphasised kinds weigh over their usual weight."""


def weighted_kinds(emphasis: frozenset[str], omitted: frozenset[str] = frozenset()) -> tuple[type, ...]:
    """Every kind repeated by its weight, the kinds named in `emphasis` `SWARM_BOOST` times
    more, the kinds named in `omitted` not at all.

    Swarm testing (Groce et al., ISSTA 2012): each test case leans on a few kinds of action
    (many crashes, or many leader moves, or much retention) and leaves a few out (no fetches:
    leaders come and go without replicating, so logs diverge over several epochs), so runs
    reach the deep states (several truncation rounds after repeated leader changes, a
    follower that fell below the leader's log start, an ISR that shrank under
    min.insync.replicas after an append) that evenly weighted runs seldom do. An omitted kind
    is still taken when nothing else is enabled. Empty sets shrink to the usual weights.
    """
    return tuple(
        kind
        for kind, weight in ENABLED_KIND_WEIGHTS
        if kind.__name__ not in omitted
        for _ in range(weight * (SWARM_BOOST if kind.__name__ in emphasis else 1))
    )


SWARM_KIND_NAMES = tuple(kind.__name__ for kind, _ in ENABLED_KIND_WEIGHTS)


@st.composite
def enabled_actions(draw: st.DrawFn, enabled: tuple[Action, ...], kinds: tuple[type, ...]) -> Action:
    """One of `enabled`: first a kind (weighted: `kinds` from `weighted_kinds`), then one
    action of that kind; a crash
    keeps the whole log three times out of four.

    A drawn index means the same kind whenever that kind is enabled (an index that lands on
    a kind with nothing enabled moves on to the next enabled one), so when the shrinker
    deletes an earlier command the later ones mostly keep their meaning: shrinking works on
    the sequence, not against it.
    """
    by_kind: dict[type, list[Action]] = {}
    for action in enabled:
        by_kind.setdefault(type(action), []).append(action)
    start = draw(INDEX)
    kind = next(
        (
            kinds[(start + step) % len(kinds)]
            for step in range(len(kinds))
            if kinds[(start + step) % len(kinds)] in by_kind
        ),
        next(iter(by_kind)),  # only omitted kinds are enabled: take one rather than stall
    )
    actions = by_kind[kind]
    if kind is BrokerCrash:
        # candidate_actions lists each replica's crashes by surviving end, the whole log last.
        whole = {action.replica: action for action in actions if isinstance(action, BrokerCrash)}
        clean = list(whole.values())
        lossy = [action for action in actions if action not in clean]
        if lossy and draw(INDEX) % 4 == 3:
            return _choose(draw, lossy)
        return _choose(draw, clean)
    return _choose(draw, actions)


@st.composite
def any_actions(draw: st.DrawFn, state: PartitionState) -> Action:
    """Any action with arguments in range for `state`, enabled or not: every broker, every
    acks setting, and offsets from one below the log start to one past the log end (crash)
    or from the log start to one past the high watermark (retention)."""
    kind = _choose(draw, ACTION_KINDS)
    if kind is ClockTick:
        return ClockTick()
    replicas = range(len(state.replicas))
    replica = _choose(draw, replicas)
    log = state.replicas[replica].log
    if kind is ProducerSend:
        return ProducerSend(replica, _choose(draw, tuple(Acks)))
    if kind is LeaderShrinkIsr:
        return LeaderShrinkIsr(replica, _choose(draw, replicas))
    if kind is BrokerCrash:
        # Two in five the whole log survives; one in five each: one past the log end, one
        # below the log start (both refused), anything in between (a lossy crash, mostly).
        ends = range(log.log_start_offset, log.log_end_offset + 1)
        end, past, below = log.log_end_offset, log.log_end_offset + 1, log.log_start_offset - 1
        surviving_end = _choose(draw, (end, end, past, below, _choose(draw, ends)))
        return BrokerCrash(replica, surviving_end)
    if kind is LeaderAdvanceLogStartOffset:
        starts = range(log.log_start_offset, log.high_watermark + 2)
        return LeaderAdvanceLogStartOffset(replica, _choose(draw, starts))
    one_replica: dict[type, Callable[[int], Action]] = {
        LeaderHandleFetch: LeaderHandleFetch,
        FollowerHandleFetchResponse: FollowerHandleFetchResponse,
        FollowerTruncate: FollowerTruncate,
        ReplicaBecomeLeaderOrFollower: ReplicaBecomeLeaderOrFollower,
        ControllerMoveLeadership: ControllerMoveLeadership,
        BrokerRestart: BrokerRestart,
    }
    return one_replica[kind](replica)


METHOD_OF: dict[type, str] = {
    ProducerSend: "produce",
    LeaderHandleFetch: "leader_handle_fetch",
    FollowerHandleFetchResponse: "follower_handle_fetch_response",
    FollowerTruncate: "follower_truncate",
    LeaderShrinkIsr: "leader_shrink_isr",
    ClockTick: "clock_tick",
    ControllerMoveLeadership: "controller_move_leadership",
    BrokerCrash: "broker_crash",
    BrokerRestart: "broker_restart",
    ReplicaBecomeLeaderOrFollower: "become_leader_or_follower",
    LeaderAdvanceLogStartOffset: "advance_log_start_offset",
}
"""The `PartitionUnderTest` method that performs each spec action; its parameters are the
action's fields, in order (a produce adds the value, which the spec draws itself)."""


def call_of(action: Action, value: int) -> tuple[str, dict[str, object]]:
    """The `PartitionUnderTest` method that performs `action` and its arguments by name."""
    method = METHOD_OF.get(type(action))
    if method is None:
        raise TypeError(f"not a spec.partition action: {action!r}")
    arguments: dict[str, object] = {field.name: getattr(action, field.name) for field in fields(action)}
    if isinstance(action, ProducerSend):
        arguments["value"] = value
    return method, arguments


def command_text(action: Action, value: int) -> str:
    """The call that performs `action`, as text: `produce(leader=0, acks=all, value=3)`."""
    method, arguments = call_of(action, value)
    return f"{method}({', '.join(f'{name}={argument}' for name, argument in arguments.items())})"


def perform(target: PartitionUnderTest, action: Action, value: int) -> ProduceOutcome | bool | None:
    """Call the `PartitionUnderTest` method that performs `action` (a produce carries `value`).
    Arguments go by position, as the Protocol orders them."""
    method, arguments = call_of(action, value)
    answer: ProduceOutcome | bool | None = getattr(target, method)(*arguments.values())
    return answer


# ---------------------------------------------------------------------------------------
# Comparing views
# ---------------------------------------------------------------------------------------


def first_difference(target: PartitionView, reference: PartitionView) -> tuple[str, object, object] | None:
    """The first field (in declaration order, replica by replica) where `target` differs
    from `reference`: (its path, the target's value, the reference's value); None if equal."""
    for view_field in fields(PartitionView):
        name = view_field.name
        target_value, reference_value = getattr(target, name), getattr(reference, name)
        if name != "replicas":
            if target_value != reference_value:
                return name, target_value, reference_value
            continue
        if len(target_value) != len(reference_value):
            return f"{name} (count)", len(target_value), len(reference_value)
        for index, (target_replica, reference_replica) in enumerate(
            zip(target_value, reference_value, strict=True)
        ):
            for replica_field in fields(reference_replica):
                mine = getattr(target_replica, replica_field.name)
                theirs = getattr(reference_replica, replica_field.name)
                if isinstance(theirs, tuple):
                    mine = tuple(mine)  # a list holding the same items is the same observation
                if mine != theirs:
                    return f"replicas[{index}].{replica_field.name}", mine, theirs
    return None


# ---------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------


class PartitionConformanceMachine(TargetCalls[ReplicationSettings], RuleBasedStateMachine):
    """Drives `make_partition(target, settings)` and the reference with the same commands."""

    target: ClassVar[str] = "reference"
    command_seconds: float = DEFAULT_COMMAND_SECONDS  # per target call (`conformance.guard`)

    def __init__(self) -> None:
        super().__init__()
        self._sut: PartitionUnderTest | None = None
        self.hung = False
        self._reference: ReferencePartition | None = None
        self.settings = ReplicationSettings()
        self.commands: list[str] = []  # every command so far, with the reference's answer
        self._enabled_in: PartitionState | None = None  # the state the two lists below belong to
        self._enabled_actions: tuple[Action, ...] = ()
        self._near_misses: tuple[Action, ...] = ()
        self._kinds = weighted_kinds(frozenset())

    @property
    def sut(self) -> PartitionUnderTest:
        """The partition under test (built by `start`)."""
        assert self._sut is not None, "start() builds the target before any command"
        return self._sut

    @property
    def reference(self) -> ReferencePartition:
        """The reference partition (built by `start`)."""
        assert self._reference is not None, "start() builds the reference before any command"
        return self._reference

    def teardown(self) -> None:
        """Release the target's resources (not after a hang: the target is stuck)."""
        if self._sut is not None and not self.hung:
            self.guarded("close()", self._sut.close)

    # -- helpers ------------------------------------------------------------------------

    def _compare_views(self, after: str) -> None:
        view = self.guarded(f"observe() after {after}", self.sut.observe)
        expected = view_of(self.reference.state)
        try:
            difference = first_difference(view, expected)
        except (AttributeError, TypeError) as error:
            raise self.fail(f"observe() after {after}: not a PartitionView: {error}") from error
        if difference is not None:
            path, mine, theirs = difference
            raise self.fail(f"{path} after {after}: target has {mine!r}, reference has {theirs!r}")

    def _check_refinement(self, previous: PartitionState, action: Action, taken: bool, command: str) -> None:
        """The reference's step was a legal spec transition and the invariants in force hold."""
        reference = self.reference
        transition = reference.last_transition
        where = f"{command}: the reference left the spec"
        if transition is None or transition.action != action:
            raise self.fail(f"{where}: it did not record the action it took")
        reset = replace(previous, history=replace(previous.history, produce_rejections=0))
        if transition.before not in (previous, reset):
            raise self.fail(f"{where}: it stepped from a state other than its own")
        expected = spec_partition.step(reference.config, transition.before, action)
        if expected != transition.after or taken != (expected is not None):
            raise self.fail(f"{where}: spec.partition.step gives {expected!r}")
        if reference.state != (previous if expected is None else expected):
            raise self.fail(f"{where}: its state is not the one spec.partition.step gives")
        for name, holds in spec_partition.STEP_PROPERTIES.items():
            if not holds(previous, reference.state):
                raise self.fail(f"{command}: the spec's step property {name} does not hold")
        for name in invariants_in_force(self.settings, reference.state.history):
            if not spec_partition.INVARIANTS[name](reference.state):
                raise self.fail(
                    f"{command}: the spec's invariant {name} does not hold in the reference's state "
                    f"{reference.state!r}"
                )

    def _run(self, action: Action) -> None:
        """Give `action` to the reference and the target and compare everything."""
        reference = self.reference
        previous = reference.state
        value = reference.next_value
        command = command_text(action, value)
        expected: ProduceOutcome | bool | None
        if isinstance(action, ProducerSend):
            result = reference.produce(action.leader, action.acks, value)
            taken = result is not None
            expected = (
                None if result is None else ProduceOutcome(result.error, result.offset, result.completed)
            )
        else:
            taken = reference.apply(action)
            expected = taken
        self.commands.append(f"{command} -> {expected!r}")
        self._check_refinement(previous, action, taken, command)
        answer = self.guarded(command, lambda: perform(self.sut, action, value))
        if answer != expected:
            raise self.fail(f"{command}: target answered {answer!r}, reference answered {expected!r}")
        self._compare_views(command)

    def _classify_candidates(self) -> None:
        """Split the spec's candidate actions in the reference's state into enabled ones and
        near misses (computed once per state: the preconditions and the rules all ask)."""
        reference = self.reference
        state = reference.state
        if self._enabled_in is state:
            return
        enabled: list[Action] = []
        refused: list[Action] = []
        for action in spec_partition.candidate_actions(reference.config, state):
            (enabled if reference.would_accept(action) else refused).append(action)
        self._enabled_in, self._enabled_actions, self._near_misses = state, tuple(enabled), tuple(refused)

    def _enabled(self) -> tuple[Action, ...]:
        """The actions the spec enables in the reference's state."""
        self._classify_candidates()
        return self._enabled_actions

    def _refused_candidates(self) -> tuple[Action, ...]:
        """Near misses: candidate actions (the actor has the right role) whose guard fails,
        such as shrinking a follower one tick before its lag allows or a fetch from a
        follower still on an older leader epoch (KIP-320 fencing)."""
        self._classify_candidates()
        return self._near_misses

    # -- rules --------------------------------------------------------------------------

    @initialize(
        replication=replication_settings(),
        emphasis=st.frozensets(st.sampled_from(SWARM_KIND_NAMES), max_size=3),
        omitted=st.frozensets(st.sampled_from(SWARM_KIND_NAMES), max_size=2),
    )
    def start(
        self, replication: ReplicationSettings, emphasis: frozenset[str], omitted: frozenset[str]
    ) -> None:
        """Build the target and the reference with the drawn settings; both start equal.
        `emphasis` and `omitted` name the kinds of enabled action this test case leans on and
        leaves out (swarm testing, see `weighted_kinds`)."""
        self.settings = replication
        self._kinds = weighted_kinds(emphasis, omitted)
        self._reference = ReferencePartition(spec_config(replication))
        # A ValueError here (not a PartitionUnderTest) is a usage error, not a divergence.
        self._sut = self.guarded(
            "creating the partition", lambda: make_partition(self.target, replication), usage_errors=True
        )
        self._compare_views("start")

    @precondition(lambda self: bool(self._enabled()))
    @rule(data=st.data())
    def enabled_action(self, data: st.DataObject) -> None:
        """An action the spec enables now."""
        self._run(data.draw(enabled_actions(self._enabled(), self._kinds), label="enabled action"))

    @precondition(lambda self: bool(self._refused_candidates()))
    @rule(data=st.data())
    def near_miss(self, data: st.DataObject) -> None:
        """A candidate action the spec refuses now: guards are checked at their boundary."""
        self._run(data.draw(st.sampled_from(self._refused_candidates()), label="near miss"))

    @rule(data=st.data())
    def any_action(self, data: st.DataObject) -> None:
        """Any action, enabled or not: the target must refuse exactly what the spec refuses."""
        self._run(data.draw(any_actions(self.reference.state), label="any action"))


def partition_machine_for(
    target: str, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> type[PartitionConformanceMachine]:
    """The machine bound to `target` (``reference``, ``impl`` or ``MODULE:FACTORY``), each
    call into the target stopped after `command_seconds`."""
    return bound_machine(PartitionConformanceMachine, target, command_seconds, resolve_partition_target)


class ReferencePartitionConformance(PartitionConformanceMachine):
    """The machine against the reference itself (a self-check of the machine and the refinement)."""

    target = "reference"
