"""The named questions about the KRaft controller (`spec.controller.kraft`).

Each scenario pairs a configuration (the protocol rules, Kafka settings and exploration
bounds) with the properties it checks and the expected outcome. Where a published bug or a
KIP changed a rule, there are two scenarios over the same configuration: one under the rule
that breaks (a counterexample, the shortest one printed step by step) and one under the rule
that fixed it (no violation within the bound, with witnesses so the pass is not vacuous).

Symmetry: none is used. Brokers are not interchangeable here: elections scan the
assignment in order (the first valid replica wins, `PartitionChangeBuilder.electAnyLeader`),
the first replica leads first, and the only broker outside the assignment is the
reassignment's target, named by the scenario. Renaming brokers would change which one is
elected, so a canonical form that sorts them would merge states with different futures.
Metadata offsets are another candidate: only their order relative to the registration and
controlled-shutdown records matters, so rounding each broker's replay position down to the
last such record is sound; measured on these scenarios it saves 0-22% of the states and no
time, so the model does without it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

from spec._frozen import replace
from spec.checker import Model
from spec.controller import kraft
from spec.controller.kraft import Action, HighWatermarkRule, KRaftConfig, KRaftState, LeaderIsrRule
from spec.controller.kraft_alter_partition import AlterPartitionRule
from spec.controller.kraft_partitions import NO_LEADER, ElrRule, LastKnownLeaderRule, LeaderRecoveryState
from spec.machines import Diagram, Machine, Scenario, Setting, parse_bool, parse_choice, parse_count


def _parse_replicas(text: str) -> tuple[int, ...]:
    """A comma-separated list of broker ids, e.g. `1,2`; empty for none."""
    if not text.strip():
        return ()
    try:
        replicas = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"expected broker ids separated by commas, not {text!r}") from None
    if len(set(replicas)) != len(replicas) or min(replicas) < 0:
        raise ValueError(f"expected distinct broker ids, not {text!r}")
    return replicas


SETTINGS: Mapping[str, Setting] = {
    "min.insync.replicas": Setting("min_insync_replicas", parse_count(1, 4), "min.insync.replicas"),
    "unclean.leader.election.enable": Setting("unclean_leader_election", parse_bool, "true or false"),
    "eligible.leader.replicas": Setting("elr", parse_choice(ElrRule), "KIP-966 ELR: on or off"),
    "last.known.leader": Setting(
        "last_known_leader",
        parse_choice(LastKnownLeaderRule),
        "electing the last known leader: unchecked (before KAFKA-19522) or acceptable (the fix)",
    ),
    "alter.partition": Setting(
        "alter_partition",
        parse_choice(AlterPartitionRule),
        "AlterPartition member broker epochs: kip-903 (checked) or pre-kip-903",
    ),
    "leader.isr": Setting(
        "leader_isr",
        parse_choice(LeaderIsrRule),
        "what the leader's HW waits for: maximal (KIP-497), committed, or kafka (the code as written)",
    ),
    "high.watermark": Setting(
        "high_watermark",
        parse_choice(HighWatermarkRule),
        "when the HW may advance: min-isr (KIP-966, KAFKA-15583) or any-isr (before)",
    ),
    "brokers": Setting("brokers", parse_count(1, 4), "brokers in the cluster (ids 0..n-1)"),
    "replicas": Setting("replicas", _parse_replicas, "the partition's assignment, e.g. 0,1"),
    "reassignment": Setting(
        "reassignment_target", _parse_replicas, "target assignment, e.g. 1,2 (empty: none)"
    ),
    "max.records": Setting("max_records", parse_count(0, 4), "bound on records produced"),
    "max.crashes": Setting("max_crashes", parse_count(0, 4), "bound on broker crashes"),
    "max.lossy.crashes": Setting(
        "max_lossy_crashes", parse_count(0, 4), "bound on crashes losing unflushed data"
    ),
    "max.lost.sessions": Setting(
        "max_lost_sessions", parse_count(0, 4), "bound on sessions of live brokers that expire"
    ),
    "max.shutdowns": Setting("max_shutdowns", parse_count(0, 4), "bound on brokers asked to shut down"),
    "max.alter.partitions": Setting(
        "max_alter_partitions", parse_count(0, 6), "bound on AlterPartition requests"
    ),
}
"""The KRaft controller's `--set` keys."""


def model_for(
    config: KRaftConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[KRaftState, Action]:
    """The checker's view of the KRaft controller spec under `config`."""
    return Model(
        initial_states=(kraft.initial_state(config),),
        candidate_actions=partial(kraft.candidate_actions, config),
        step=partial(kraft.step, config),
        invariants={name: partial(kraft.INVARIANTS[name], config) for name in invariants},
        step_properties=kraft.STEP_PROPERTIES,
        witnesses={name: kraft.WITNESSES[name] for name in witnesses},
    )


def validate(config: KRaftConfig) -> str | None:
    """Why a configuration is inconsistent, or None."""
    known = range(config.brokers)
    if not config.replicas:
        return "replicas must name at least one broker"
    for broker in (*config.replicas, *config.reassignment_target):
        if broker not in known:
            return f"broker {broker} is not one of the {config.brokers} brokers"
    return None


def _format_set(members: frozenset[int]) -> str:
    return "{" + ",".join(str(member) for member in sorted(members)) + "}"


def _describe_broker(state: KRaftState, broker_id: int) -> str:
    broker = state.brokers[broker_id]
    registration = state.controller.registrations[broker_id]
    if not broker.up:
        process = "down"
    elif broker.broker_epoch == kraft.NOT_REGISTERED:
        process = "up, unregistered"
    else:
        process = f"up, epoch {broker.broker_epoch}"
        if broker.wants_shutdown:
            process += ", shutting down"
    control = "unregistered" if registration is None else registration.control_state.value
    if registration is not None:
        control += f" (epoch {registration.epoch})"
    parts = [f"broker {broker_id}: {process:28}", f"controller: {control:28}"]
    leader = broker.leader
    if leader is not None:
        role = f"leader e{leader.leader_epoch} ISR {_format_set(leader.committed_isr)}"
        if leader.maximal_isr != leader.committed_isr:
            role += f" maximal {_format_set(leader.maximal_isr)}"
        if leader.caught_up:
            role += f" caught up {_format_set(leader.caught_up)}"
        if leader.pending is not None:
            role += " (AlterPartition pending)"
    elif broker.up and broker.view is not None and broker_id in broker.view.replicas:
        role = f"follower of {broker.view.leader} e{broker.view.leader_epoch}"
    else:
        role = "-"
    parts.append(role)
    parts.append(f"log {list(broker.log)} HW {broker.high_watermark}")
    if broker.up and broker.broker_epoch != kraft.NOT_REGISTERED:
        parts.append(f"replayed {broker.metadata_offset}/{state.controller.log_end}")
    request = state.alter_requests[broker_id]
    if request is not None:
        parts.append(f"AlterPartition {_format_set(request.isr)} in flight (pe {request.partition_epoch})")
    answer = state.alter_answers[broker_id]
    if answer is not None:
        parts.append(f"answer {answer[1].name} in flight")
    return "  ".join(parts)


def describe_state(state: KRaftState) -> list[str]:
    """One line for the partition registration, one per broker, one for the ghost history."""
    partition = state.controller.partition
    leader = partition.leader if partition.leader != NO_LEADER else "none (offline)"
    line = (
        f"partition: leader {leader}  leader epoch {partition.leader_epoch}  partition epoch "
        f"{partition.partition_epoch}  replicas {list(partition.replicas)}  ISR {_format_set(partition.isr)}"
    )
    if partition.elr:
        line += f"  ELR {_format_set(partition.elr)}"
    if partition.last_known_elr:
        line += f"  last known leader {partition.last_known_elr[0]}"
    if partition.leader_recovery_state is LeaderRecoveryState.RECOVERING:
        line += "  RECOVERING"
    if partition.reassigning:
        line += f"  adding {_format_set(partition.adding)} removing {_format_set(partition.removing)}"
    lines = [line]
    lines += [_describe_broker(state, broker_id) for broker_id in range(len(state.brokers))]
    history = state.history
    committed = " ".join(f"{offset}:v{value}" for offset, value in sorted(history.committed))
    extra = ""
    if history.lossy_crashes:
        extra += f"  lossy crashes {history.lossy_crashes}"
    for name, count in (
        ("unclean elections", history.unclean_elections),
        ("ELR elections", history.elr_elections),
        ("last-known-leader elections", history.last_known_leader_elections),
    ):
        if count:
            extra += f"  {name} {count}"
    lines.append(f"history: committed {{{committed}}}{extra}")
    return lines


def explain(property_name: str, state: KRaftState) -> str:
    """One sentence saying why `property_name` fails in `state`."""
    partition = state.controller.partition
    if property_name == "leader_not_fenced":
        broker, epoch = partition.leader, partition.leader_epoch
        return f"broker {broker} leads epoch {epoch} but its registration is fenced or shutting down"
    if property_name == "maximal_isr_covers_controller_isr":
        leader = state.brokers[partition.leader].leader
        maximal = _format_set(leader.maximal_isr) if leader is not None else "{}"
        return (
            f"the controller committed ISR {_format_set(partition.isr)} but leader {partition.leader}'s "
            f"high watermark waits only for {maximal}"
        )
    if property_name.startswith("committed_records_survive"):
        log = list(state.brokers[partition.leader].log) if partition.has_leader else []
        committed = sorted(state.history.committed)
        return f"leader {partition.leader} holds {log}, without the committed records {committed}"
    if property_name == "electable_replicas_hold_committed_records":
        return (
            f"ISR {_format_set(partition.isr)} / ELR {_format_set(partition.elr)} contains a broker "
            "that lacks a committed record"
        )
    if property_name == "isr_members_are_active":
        return (
            f"ISR {_format_set(partition.isr)} holds a broker that is fenced, shutting down or unregistered"
        )
    if property_name == "online_leader_in_isr":
        return f"leader {partition.leader} is not in ISR {_format_set(partition.isr)}"
    if property_name == "clean_elections_only":
        return "a leader was elected from outside the ISR and ELR with unclean leader election disabled"
    if property_name == "partition_state_valid":
        return (
            f"ISR {_format_set(partition.isr)} and ELR {_format_set(partition.elr)} break KIP-966's "
            "rules for this configuration"
        )
    if property_name == "epochs_only_grow":
        return "an epoch went backwards, or a partition change kept the partition epoch"
    return f"{property_name} fails"


def broker_zero_lifecycle(state: KRaftState) -> str:
    """Broker 0's process and the controller's control state of its registration."""
    broker = state.brokers[0]
    registration = state.controller.registrations[0]
    if not broker.up:
        return "down"
    if broker.broker_epoch == kraft.NOT_REGISTERED:
        return "up, registration refused"
    assert registration is not None
    return registration.control_state.value


KRAFT_CONTROLLER: Machine[KRaftConfig, KRaftState, Action] = Machine(
    name="kraft-controller",
    title="the KRaft controller and its brokers, one partition: registration, fencing, ISR, ELR, elections",
    settings=SETTINGS,
    model=model_for,
    describe_state=describe_state,
    validate=validate,
    explain=explain,
    modules=(
        "spec.controller.kraft",
        "spec.controller.kraft_partitions",
        "spec.controller.kraft_brokers",
        "spec.controller.kraft_alter_partition",
        "spec.controller.kraft_errors",
    ),
    diagram=Diagram(
        title="broker 0: process and control state",
        project=broker_zero_lifecycle,
        config=KRaftConfig(
            max_records=0, max_crashes=1, max_lost_sessions=1, max_shutdowns=1, max_alter_partitions=0
        ),
        # 7 steps already take every node and edge that 12 steps take (4,232 states against 47,641).
        max_depth=7,
    ),
)
MACHINE = KRAFT_CONTROLLER

_ALL: tuple[str, ...] = tuple(kraft.INVARIANTS)
_NO_DATA = KRaftConfig(max_records=0, max_crashes=2, max_lost_sessions=1, max_alter_partitions=0)
_LAST_REPLICA = KRaftConfig(max_crashes=1, max_lossy_crashes=1, max_lost_sessions=1, max_alter_partitions=0)
_ISR_CHANGES = KRaftConfig(min_insync_replicas=1, max_crashes=1, max_alter_partitions=2)
_BOUNCE = KRaftConfig(max_crashes=1, max_lossy_crashes=1, max_alter_partitions=1)


def _scenario(
    name: str,
    summary: str,
    config: KRaftConfig,
    invariants: Sequence[str],
    expect_violation: bool,
    witnesses: Sequence[str] = (),
    reference: str = "",
    max_depth: int = 15,
) -> Scenario[KRaftConfig]:
    return Scenario(
        machine=KRAFT_CONTROLLER,
        name=name,
        summary=summary,
        config=config,
        invariants=tuple(invariants),
        expect_violation=expect_violation,
        witnesses=tuple(witnesses),
        reference=reference,
        max_depth=max_depth,
    )


SCENARIOS: tuple[Scenario[KRaftConfig], ...] = (
    _scenario(
        "kraft-fenced-last-known-leader",
        "RF 2, min ISR 2, ELR on, Kafka 3.7-4.0's rule: fencing and two unclean restarts empty the ISR "
        "and ELR, and the restarting last known leader is elected while still fenced "
        "(canElectLastKnownLeader does not ask whether it is acceptable)",
        replace(_NO_DATA, last_known_leader=LastKnownLeaderRule.UNCHECKED),
        ("leader_not_fenced",),
        expect_violation=True,
        reference="KAFKA-19522, KIP-966",
    ),
    _scenario(
        "kraft-last-known-leader-fixed",
        "same run under the KAFKA-19522 fix: a fenced last known leader is never elected; the "
        "partition stays offline until a valid leader registers",
        _NO_DATA,
        _ALL,
        expect_violation=False,
        witnesses=("partition_offline", "last_known_leader_recorded"),
        reference="KAFKA-19522, KIP-966",
        max_depth=12,
    ),
    _scenario(
        "kraft-last-replica-standing",
        "ELR off, RF 2, min ISR 2: a committed record, the follower fenced, the leader (last ISR "
        "member) loses its unflushed log, restarts and is elected again: the record is lost",
        replace(_LAST_REPLICA, elr=ElrRule.DISABLED),
        ("committed_records_survive_lossy_shutdowns",),
        expect_violation=True,
        reference="KIP-966 (last replica standing)",
    ),
    _scenario(
        "kraft-elr-keeps-committed",
        "same run with ELR: the fenced follower waits in the ELR, the restarted leader leaves the "
        "ISR and ELR on re-registration, the follower is elected from the ELR; nothing committed is lost",
        _LAST_REPLICA,
        _ALL,
        expect_violation=False,
        witnesses=("record_committed", "elected_from_elr_after_data_loss"),
        reference="KIP-966",
        max_depth=13,
    ),
    _scenario(
        "kraft-elr-without-min-isr-hw",
        "ELR without KIP-966's HW rule: with the follower fenced into the ELR, the leader's HW "
        "advances on an ISR below min ISR, then the leader fails and the ELR member, which never "
        "got the record, is elected",
        replace(_LAST_REPLICA, high_watermark=HighWatermarkRule.ANY_ISR),
        ("committed_records_survive",),
        expect_violation=True,
        reference="KIP-966 part 1, KAFKA-15583",
    ),
    _scenario(
        "kraft-maximal-isr",
        "RF 2, min ISR 1, ISR shrinks and expansions through AlterPartition, one crash: the HW waits "
        "for the maximal ISR, which always covers the ISR the controller committed, and every ISR "
        "member holds every committed record",
        _ISR_CHANGES,
        _ALL,
        expect_violation=False,
        witnesses=("record_committed", "leader_behind_committed_expansion"),
        reference="KIP-497, KIP-841",
        max_depth=13,
    ),
    _scenario(
        "kraft-committed-isr-hw",
        "same run as kraft-maximal-isr, but the leader's HW waits only for the ISR it knows is "
        "committed: the controller commits an expansion the leader has not heard of, and the HW no "
        "longer covers the controller's ISR",
        replace(_ISR_CHANGES, leader_isr=LeaderIsrRule.COMMITTED),
        ("maximal_isr_covers_controller_isr",),
        expect_violation=True,
        reference="KIP-497 (maximal ISR), KAFKA-15583",
    ),
    _scenario(
        "kraft-makeleader-reset",
        "same run as kraft-maximal-isr, as Kafka's code has it: the leader replays the record of its "
        "previous ISR change after sending an expansion and drops it from its maximal ISR (makeLeader "
        "accepts an equal partition epoch); the controller commits the expansion, the new member lags for "
        "replica.lag.time.max.ms before the leader replays that record, the HW passes it, and a "
        "clean election after the leader fails loses the committed record",
        replace(_ISR_CHANGES, leader_isr=LeaderIsrRule.KAFKA),
        ("committed_records_survive",),
        expect_violation=True,
        reference="Partition.makeLeader, shouldWaitForReplicaToJoinIsr (model finding)",
    ),
    _scenario(
        "kraft-broker-bounce",
        "RF 2, min ISR 2: a follower crashes, loses its unflushed log and restarts faster than its "
        "session times out: its registration is refused until the controller fences the old session, "
        "it comes back with a new broker epoch, and the leader's AlterPartition naming its old epoch "
        "is refused (INELIGIBLE_REPLICA), as is a request from a restarted leader's old process "
        "(STALE_BROKER_EPOCH); nothing committed is lost",
        _BOUNCE,
        _ALL,
        expect_violation=False,
        witnesses=(
            "record_committed",
            "duplicate_registration_refused",
            "broker_reregistered",
            "ineligible_replica_refused",
            "stale_broker_epoch_refused",
        ),
        reference="KIP-903, KIP-841, KAFKA-19047",
        max_depth=12,
    ),
    _scenario(
        "kraft-bounce-without-broker-epochs",
        "same bounce before KIP-903: the leader re-adds the restarted follower on the strength of a "
        "fetch made before its crash, and a replica without the committed record joins the ISR",
        replace(_BOUNCE, alter_partition=AlterPartitionRule.NO_BROKER_EPOCHS),
        ("electable_replicas_hold_committed_records",),
        expect_violation=True,
        reference="KIP-903, KAFKA-14139",
    ),
    _scenario(
        "kraft-controlled-shutdown",
        "RF 2, min ISR 1: the leader is asked to stop: it enters CONTROLLED_SHUTDOWN, leaves the ISR "
        "and its leadership moves to the other replica before it may stop (SHUTDOWN_NOW); it "
        "restarts cleanly and registers with a new broker epoch",
        KRaftConfig(min_insync_replicas=1, max_crashes=0, max_shutdowns=1, max_alter_partitions=1),
        _ALL,
        expect_violation=False,
        witnesses=("record_committed", "leadership_moved_before_shutdown", "broker_reregistered"),
        reference="KIP-631 (BrokerHeartbeatManager), KIP-841",
        max_depth=14,
    ),
    _scenario(
        "kraft-reassignment",
        "3 brokers, min ISR 1, replicas [0,1] reassigned to [1,2]: broker 2 is added, catches up, "
        "joins the ISR through AlterPartition, which completes the reassignment, removes the leader 0 "
        "and elects 1 (NEW_LEADER_ELECTED); nothing committed is lost",
        KRaftConfig(
            brokers=3,
            replicas=(0, 1),
            reassignment_target=(1, 2),
            min_insync_replicas=1,
            max_crashes=0,
            max_alter_partitions=2,
        ),
        _ALL,
        expect_violation=False,
        witnesses=("record_committed", "reassignment_completed", "new_leader_elected_answered"),
        reference="KIP-455, PartitionReassignmentReplicas",
        max_depth=12,
    ),
)
