"""Named scenarios of the ZooKeeper-era controller (`spec.controller.zk_controller`).

Each protocol rule of `spec.controller.zk_requests` comes with a pair of scenarios on the
same configuration: without the rule the checker prints the shortest counterexample, with it
none exists within the bounds. The other scenarios check the controller's ordinary work
(failover in the middle of an election, controlled shutdown, reassignment, clean and unclean
elections) against every invariant, and require witnesses so a pass is not vacuous.

The cluster is three brokers; the partition lives on brokers 0 and 1 (0 preferred) and
broker 2 starts as controller, as a dedicated controller broker would.

Symmetry
    None is used: every election scans a replica list in order, and the controller broker
    differs from the replicas, so no two brokers are interchangeable in every state. (Brokers
    outside the assignment that only ever act as controller candidates would be, and could be
    sorted by a `canonical` function; these scenarios have only one.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from spec.checker import Model
from spec.controller import zk_controller as zk
from spec.controller.zk_controller import Action, ZkConfig, ZkState
from spec.controller.zk_requests import RULE_SETS, Request, RequestKind, parse_rules, rules_name
from spec.controller.zookeeper import NO_LEADER, NO_SESSION, Event
from spec.machines import Diagram, Machine, Scenario, Setting, parse_bool, parse_count

# ---------------------------------------------------------------------------------------
# The checker's view
# ---------------------------------------------------------------------------------------


def model(
    config: ZkConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...]
) -> Model[ZkState, Action]:
    """The checker's model of `config` with the named invariants and witnesses (and every step property)."""
    return Model(
        initial_states=(zk.initial_state(config),),
        candidate_actions=partial(zk.candidate_actions, config),
        step=partial(zk.step, config),
        invariants={name: zk.INVARIANTS[name] for name in invariants},
        step_properties=zk.STEP_PROPERTIES,
        witnesses={name: zk.WITNESSES[name] for name in witnesses},
    )


def _members(items: Sequence[int] | frozenset[int]) -> str:
    return "{" + ",".join(str(item) for item in sorted(items)) + "}"


def _request_text(request: Request) -> str:
    epochs = f"c{request.controller_epoch} b{request.broker_epoch}"
    if request.kind is RequestKind.LEADER_AND_ISR:
        return (
            f"LeaderAndIsr({epochs}: leader {request.leader} epoch {request.leader_epoch} "
            f"ISR {_members(request.isr)} v{request.zk_version})"
        )
    if request.kind is RequestKind.STOP_REPLICA:
        return f"StopReplica({epochs}{' delete' if request.delete else ''})"
    return f"UpdateMetadata({epochs})"


def describe_state(state: ZkState) -> list[str]:
    """One line per component: ZooKeeper, the partition znode, each broker, each controller,
    each channel, the ghost history."""
    z = state.zk
    sessions = " ".join(f"{b}:{s}" if s != NO_SESSION else f"{b}:-" for b, s in enumerate(z.sessions))
    controller = "none" if z.controller < 0 else str(z.controller)
    lines = [f"zookeeper: /controller {controller}  epoch {z.controller_epoch}  sessions {sessions}"]
    znode = z.partition
    if znode is not None:
        leader = "none" if znode.leader == NO_LEADER else str(znode.leader)
        reassign = f"  reassigning to {list(z.reassignment)}" if z.reassignment else ""
        lines.append(
            f"partition znode: leader {leader}  epoch {znode.leader_epoch}  ISR {_members(znode.isr)}  "
            f"controller epoch {znode.controller_epoch}  v{znode.zk_version}  assignment {list(z.assignment)}"
            f"{reassign}"
        )
    for broker_id, broker in enumerate(state.brokers):
        if not broker.alive:
            lines.append(f"broker {broker_id}: down  log {list(broker.log)}")
            continue
        if broker.role is zk.Role.LEADER:
            replica = f"leader epoch {broker.leader_epoch}  ISR {_members(broker.isr)}  v{broker.zk_version}"
        elif broker.role is zk.Role.FOLLOWER:
            followed = "nobody" if broker.leader == NO_LEADER else str(broker.leader)
            replica = f"follower of {followed} epoch {broker.leader_epoch}"
        else:
            replica = f"no replica role (epoch {broker.leader_epoch})"
        zombie = "" if z.has_live_session(broker_id, broker.session) else " (session expired)"
        events = ""
        if broker.events:
            events = "  events " + ",".join(sorted(event.kind.name for event in broker.events))
        shutdown = "  shutting down" if broker.shutting_down else ""
        lines.append(
            f"broker {broker_id}: up session {broker.session}{zombie}  "
            f"controller epoch {broker.controller_epoch}  "
            f"{replica}  log {list(broker.log)} HW {broker.high_watermark}{shutdown}{events}"
        )
        context = broker.controller
        if context is not None:
            live = " ".join(f"{b}:{e}" for b, e in context.live)
            states = ",".join(s.value.replace("Replica", "") for s in context.replica_states)
            cached = context.leadership
            cache = "none" if cached is None else f"leader {cached.leader} epoch {cached.leader_epoch}"
            lines.append(
                f"controller {broker_id}: epoch {context.epoch}  live {live}  "
                f"{context.partition_state.value}  replicas [{states}]  cache {cache}"
            )
    for broker_id, channel in enumerate(state.channels):
        if channel:
            lines.append(f"requests to {broker_id}: " + "  ".join(_request_text(r) for r in channel))
    history = state.history
    committed = ",".join(f"{offset}:v{value}" for offset, value in sorted(history.committed))
    lines.append(
        f"history: committed {{{committed}}}  obeyed controller epochs {list(history.obeyed)}"
        f"{'  unclean elections ' + str(history.unclean_elections) if history.unclean_elections else ''}"
    )
    return lines


def explain(name: str, state: ZkState) -> str:
    """Why the named property fails in `state`, in one sentence."""
    znode = state.zk.partition
    if name == "brokers_never_obey_an_older_controller":
        return (
            "a broker applied a request from an older controller epoch than one it had already obeyed "
            f"(newest obeyed per broker: {list(state.history.obeyed)})"
        )
    if name == "idle_controller_brokers_agree" and znode is not None:
        controller = zk.active_controller(state)
        lagging = [
            b
            for b, broker in enumerate(state.brokers)
            if broker.alive and b in state.zk.assignment and broker.leader_epoch != znode.leader_epoch
        ]
        return (
            f"controller {controller} has nothing left to do, yet replica(s) {lagging} never applied "
            f"ZooKeeper's leader epoch {znode.leader_epoch}"
        )
    if name == "leader_isr_contains_committed_isr" and znode is not None:
        leader = zk.true_leader(state)
        isr = state.brokers[leader].isr if leader is not None else ()
        return (
            f"leader {leader} computes its high watermark over ISR {_members(isr)}, which lacks members of "
            f"ZooKeeper's ISR {_members(znode.isr)}"
        )
    if name == "committed_records_survive":
        committed = sorted(state.history.committed)
        return f"a committed record {committed} is missing from the leader or an ISR member"
    if name == "online_partition_has_live_leader_in_isr":
        return "the active controller holds the partition Online without a live leader in the ISR"
    if name == "state_machine_moves_are_valid":
        return "the controller asked for a state change its validPreviousStates tables forbid"
    if name == "leader_epochs_only_grow":
        return "a leader epoch went backwards (in ZooKeeper, or on a broker that stayed up)"
    if name == "one_controller_per_epoch":
        return "two brokers act as controller in the same controller epoch"
    return name


SETTINGS: dict[str, Setting] = {
    "zk.rules": Setting(
        "rules", parse_rules, "protocol rules: " + ", ".join(RULE_SETS) + ", none, or rule names with commas"
    ),
    "unclean.leader.election.enable": Setting("unclean_leader_election", parse_bool, "true or false"),
    "min.insync.replicas": Setting("min_insync_replicas", parse_count(1, 3), "min.insync.replicas"),
    "max.records": Setting("max_records", parse_count(0, 4), "bound on records produced"),
    "max.crashes": Setting("max_crashes", parse_count(0, 4), "bound on broker crashes"),
    "max.restarts": Setting("max_restarts", parse_count(0, 4), "bound on brokers starting again"),
    "max.zombies": Setting(
        "max_zombies", parse_count(0, 3), "bound on sessions expiring under a live broker"
    ),
    "max.controlled.shutdowns": Setting(
        "max_controlled_shutdowns", parse_count(0, 3), "bound on controlled shutdowns"
    ),
    "max.preferred.elections": Setting(
        "max_preferred_elections", parse_count(0, 3), "bound on preferred-replica elections"
    ),
    "max.lost.requests": Setting("max_lost_requests", parse_count(0, 3), "bound on control requests lost"),
    "max.duplicated.requests": Setting(
        "max_duplicated_requests", parse_count(0, 3), "bound on control requests delivered twice"
    ),
    "max.isr.changes": Setting("max_isr_changes", parse_count(0, 4), "bound on ISR shrinks and expansions"),
}


def controller_partition_state(state: ZkState) -> str:
    """The partition's state in the partition state machine of the controller that holds
    `/controller` (`kafka.controller.PartitionStateMachine`): the nodes of the machine's state
    diagram. Between controllers there is none (the ephemeral node is gone) or the holder has
    crashed and its session has not yet expired."""
    holder = state.zk.controller
    if holder < 0:
        return "no controller (/controller deleted)"
    context = state.brokers[holder].controller
    if context is None:
        return "controller crashed, its session not yet expired"
    return context.partition_state.value


CONTROLLER_EVENTS = {
    Event.REELECT: "Reelect",
    Event.EXPIRE: "Expire",
    Event.BROKER_CHANGE: "BrokerChange",
    Event.ISR_CHANGE: "IsrChangeNotification",
    Event.REASSIGN: "ZkPartitionReassignment",
    Event.PREFERRED_ELECTION: "ReplicaLeaderElection",
    Event.CONTROLLED_SHUTDOWN: "ControlledShutdown",
    Event.TOPIC_CHANGE: "TopicChange",
}
"""Each queued event by the name of Kafka's `ControllerEvent` class that handles it."""


def diagram_label(action: Action) -> str:
    """An edge of the diagram: the action's name, and for a processed controller event the
    event (`ControllerProcessEvent: BrokerChange`)."""
    if isinstance(action, zk.ControllerProcessEvent):
        return f"ControllerProcessEvent: {CONTROLLER_EVENTS[action.event.kind]}"
    return type(action).__name__


MACHINE: Machine[ZkConfig, ZkState, Action] = Machine(
    name="zk-controller",
    title="the ZooKeeper-era controller: ZooKeeper sessions and watches, controller election and epochs, "
    "partition and replica state machines, LeaderAndIsr/StopReplica/UpdateMetadata",
    settings=SETTINGS,
    model=model,
    describe_state=describe_state,
    validate=zk.validate,
    explain=explain,
    modules=(
        "spec.controller.zk_controller",
        "spec.controller.zookeeper",
        "spec.controller.zk_requests",
        "spec.controller.zk_states",
    ),
    diagram=Diagram(
        title="the partition's state at the controller holding /controller",
        project=controller_partition_state,
        # the topic is created during the run, both replicas may crash and one restart: every
        # partition state and controller change within 10 steps (6,936 states; 16 add no edge)
        config=ZkConfig(topic_exists=False, max_records=0, max_crashes=2, max_restarts=1, max_isr_changes=0),
        max_depth=10,
        label=diagram_label,
    ),
)


# ---------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------

EVERY_INVARIANT = tuple(zk.INVARIANTS)

_ZOMBIE = ZkConfig(
    max_records=0, max_zombies=1, max_controlled_shutdowns=1, max_isr_changes=0, max_restarts=0
)
_BOUNCE = ZkConfig(max_records=0, max_crashes=1, max_isr_changes=0, max_controlled_shutdowns=1)
_ISR_RACE = ZkConfig(max_records=0, max_crashes=1, max_isr_changes=1)
_ELECTION = ZkConfig(max_records=1, max_crashes=1, max_isr_changes=1)


def _without(rule_set: str, config: ZkConfig) -> ZkConfig:
    return replace(config, rules=RULE_SETS[rule_set])


SCENARIOS: tuple[Scenario[ZkConfig], ...] = (
    Scenario(
        name="zk-zombie-controller-unfenced",
        summary="brokers do not check the controller epoch: after a failover a broker obeys a request the "
        "old (zombie) controller sent",
        machine=MACHINE,
        config=_without("without-stale-controller-epoch", _ZOMBIE),
        invariants=("brokers_never_obey_an_older_controller",),
        expect_violation=True,
        reference="STALE_CONTROLLER_EPOCH; KIP-380",
        max_depth=12,
    ),
    Scenario(
        name="zk-zombie-controller-fenced",
        summary="same cluster, brokers refuse requests with an older controller epoch (and a stale broker "
        "epoch): no broker obeys the zombie, every invariant holds",
        machine=MACHINE,
        config=_ZOMBIE,
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("controller_failed_over", "stale_request_refused", "shutdown_moved_leadership"),
        reference="STALE_CONTROLLER_EPOCH; KAFKA-6082; KIP-380",
        max_depth=30,
    ),
    Scenario(
        name="zk-zombie-controller-zk-unfenced",
        summary="controller writes do not check /controller_epoch: a zombie controller whose session was "
        "renewed writes an election to ZooKeeper that no broker ever applies",
        machine=MACHINE,
        config=_without("without-controller-epoch-zk-fencing", _ZOMBIE),
        invariants=EVERY_INVARIANT,
        expect_violation=True,
        reference="KAFKA-6082",
        max_depth=15,
    ),
    Scenario(
        name="zk-fast-bounce-without-broker-epochs",
        summary="before KIP-380: the leader's broker restarts before the controller reads /brokers/ids; the "
        "controller sees no change and never tells the restarted broker it leads",
        machine=MACHINE,
        config=_without("before-kip-380", _BOUNCE),
        invariants=EVERY_INVARIANT,
        expect_violation=True,
        reference="KIP-380, KAFKA-7235",
        max_depth=12,
    ),
    Scenario(
        name="zk-fast-bounce-with-broker-epochs",
        summary="KIP-380: the controller detects the bounce by the new broker epoch (czxid), handles it as a "
        "failure and a startup, and a bounced broker refuses its previous incarnation's requests (such as "
        "a controlled shutdown's StopReplica)",
        machine=MACHINE,
        config=_BOUNCE,
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("bounce_detected", "stale_request_refused"),
        reference="KIP-380, KAFKA-7235",
        max_depth=30,
    ),
    Scenario(
        name="zk-unconditional-isr-write",
        summary="the leader writes its ISR change without checking the zkVersion: it overwrites the "
        "controller's newer decision and the leader epoch in ZooKeeper goes back",
        machine=MACHINE,
        config=_without("without-conditional-isr-writes", _ISR_RACE),
        invariants=EVERY_INVARIANT,
        expect_violation=True,
        reference="ReplicationUtils.updateLeaderAndIsr; KIP-497",
        max_depth=12,
    ),
    Scenario(
        name="zk-conditional-isr-write",
        summary="same cluster with conditional ISR writes: a stale leader's write fails with BADVERSION and "
        "it waits for the controller's LeaderAndIsr",
        machine=MACHINE,
        config=_ISR_RACE,
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("isr_write_refused",),
        reference="ReplicationUtils.updateLeaderAndIsr; KIP-497",
        max_depth=30,
    ),
    Scenario(
        name="zk-failover-during-election",
        summary="a broker dies and the controller's session expires before, while or after it handles the "
        "failure: the new controller reads ZooKeeper, elects, and no committed record is lost",
        machine=MACHINE,
        config=replace(_ELECTION, max_zombies=1, max_isr_changes=0, max_restarts=0),
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("controller_failed_over", "leader_elected_by_new_controller", "record_committed"),
        reference="KafkaController.onControllerFailover",
        max_depth=30,
    ),
    Scenario(
        name="zk-controlled-shutdown",
        summary="controlled shutdown moves leadership to another ISR member before the broker stops: nothing "
        "committed is lost, the partition stays online",
        machine=MACHINE,
        config=replace(_ELECTION, max_crashes=0, max_controlled_shutdowns=1),
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("shutdown_moved_leadership", "record_committed"),
        reference="KafkaController.doControlledShutdown; controlled.shutdown.enable",
        max_depth=30,
    ),
    Scenario(
        name="zk-duplicated-and-lost-requests",
        summary="a controlled shutdown while one control request is delivered twice and another is lost: "
        "leader epochs and controller epochs still fence every late copy",
        machine=MACHINE,
        config=replace(
            _ELECTION,
            max_records=0,
            max_crashes=0,
            max_controlled_shutdowns=1,
            max_duplicated_requests=1,
            max_lost_requests=1,
        ),
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("shutdown_moved_leadership", "requests_duplicated_and_lost"),
        reference="ControllerChannelManager",
        max_depth=30,
    ),
    Scenario(
        name="zk-topic-creation",
        summary="the topic is created while a broker (or the controller) may die: NewPartition "
        "and NewReplica, the first live replica leads, every invariant holds",
        machine=MACHINE,
        config=replace(_ELECTION, topic_exists=False, max_isr_changes=0, max_restarts=0),
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("topic_created", "record_committed", "controller_failed_over"),
        reference="KafkaController.onNewPartitionCreation",
        max_depth=30,
    ),
    Scenario(
        name="zk-reassignment",
        summary="reassign the partition from [0,1] to [1,2]: the new replica starts, joins the ISR, "
        "leadership moves off the removed replica, which is stopped and deleted",
        machine=MACHINE,
        config=replace(_ELECTION, max_crashes=0, reassign_to=(1, 2)),
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("reassignment_completed", "record_committed"),
        reference="KafkaController.onPartitionReassignment; KIP-455",
        max_depth=40,
    ),
    Scenario(
        name="zk-clean-election",
        summary="unclean election disabled: the ISR shrinks to the leader, the leader dies, the partition "
        "goes offline and no committed record is lost",
        machine=MACHINE,
        config=_ELECTION,
        invariants=EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("record_committed", "partition_offline"),
        reference="unclean.leader.election.enable",
        max_depth=30,
    ),
    Scenario(
        name="zk-unclean-election-loss",
        summary="unclean election enabled: a replica outside the ISR is elected and a committed record is "
        "lost",
        machine=MACHINE,
        config=replace(_ELECTION, unclean_leader_election=True),
        invariants=("committed_records_survive",),
        expect_violation=True,
        reference="unclean.leader.election.enable",
        max_depth=15,
    ),
)
"""The ZooKeeper-era controller's scenarios."""

__all__ = ["MACHINE", "SCENARIOS", "describe_state", "explain", "model", "rules_name"]
