"""The named questions about one replicated partition (`spec.partition`).

Each scenario settles one question about Kafka's replication protocol with the bounded model
checker: either a counterexample exists (the shortest one is printed, step by step), or none
exists within the bound. The KIP numbers say where each case is discussed.

Configuration keys (`--set key=value`) use Kafka's names where Kafka has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from spec import partition
from spec.checker import Model
from spec.machines import Diagram, Machine, Scenario, Setting, parse_bool, parse_count
from spec.partition import Action, PartitionConfig, PartitionState, Role
from spec.partition_view import describe_state, explain, state_json
from spec.replication_rules import FetchFencing, FollowerHighWatermarkRule, IsrJoinRule, TruncationRule
from spec.types import Acks


def _parse_acks_list(text: str) -> tuple[Acks, ...]:
    settings = tuple(dict.fromkeys(Acks.parse(part) for part in text.split(",")))
    if not settings:
        raise ValueError("expected at least one acks setting")
    return settings


SETTINGS: Mapping[str, Setting] = {
    "replication.factor": Setting("replication_factor", parse_count(1, 4), "replicas (1-4)"),
    "min.insync.replicas": Setting("min_insync_replicas", parse_count(1, 4), "min.insync.replicas"),
    "acks": Setting("producer_acks", _parse_acks_list, "comma-separated producer acks: 0, 1, all"),
    "unclean.leader.election.enable": Setting("unclean_leader_election", parse_bool, "true or false"),
    "truncation": Setting(
        "truncation", TruncationRule.parse, "hw (pre-0.11), kip-101, kip-279 or kip-320 (alias epoch)"
    ),
    "replica.lag.time.max.ticks": Setting("replica_lag_ticks", parse_count(0, 5), "lag limit in clock ticks"),
    "max.records": Setting("max_records", parse_count(0, 6), "bound on records produced"),
    "max.crashes": Setting("max_crashes", parse_count(0, 6), "bound on broker crashes"),
    "max.lossy.crashes": Setting(
        "max_lossy_crashes", parse_count(0, 6), "bound on crashes losing unflushed data"
    ),
    "max.leader.moves": Setting(
        "max_leader_moves", parse_count(0, 6), "bound on controller-initiated elections"
    ),
    "controller.elections": Setting(
        "controller_elections", parse_bool, "explore preferred/reassignment elections"
    ),
    "retention": Setting("retention", parse_bool, "explore retention moving the log start offset"),
}
"""The partition's `--set` keys: the config field each sets, its parser, and what it means
(the protocol rules' values are those of `spec.replication_rules`)."""

RULE_SETTINGS: Mapping[str, Setting] = {
    "fetch.fencing": Setting(
        "fetch_fencing", FetchFencing.parse, "kip-320 (current leader epoch), kip-320-first-try or none"
    ),
    "isr.join": Setting("isr_join", IsrJoinRule.parse, "kafka-7128 (HW and epoch start) or hw"),
    "follower.high.watermark": Setting(
        "follower_high_watermark",
        FollowerHighWatermarkRule.parse,
        "offsets-for-leader-epoch, diverging-epoch or diverging-epoch-hw-first (before KAFKA-14704)",
    ),
}
"""The `--set` keys of the replication rules only the partition spec varies (the compositions
with a controller take `SETTINGS` and keep today's rules for these)."""


def model_for(
    config: PartitionConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[PartitionState, Action]:
    """The checker's view of the partition spec under `config`."""
    return Model(
        initial_states=(partition.initial_state(config),),
        candidate_actions=partial(partition.candidate_actions, config),
        step=partial(partition.step, config),
        invariants={name: {**partition.INVARIANTS, **partition.RULE_INVARIANTS}[name] for name in invariants},
        step_properties=partition.STEP_PROPERTIES,
        witnesses={name: partition.WITNESSES[name] for name in witnesses},
    )


def validate(config: PartitionConfig) -> str | None:
    """Why a partition configuration is inconsistent, or None."""
    if config.min_insync_replicas > config.replication_factor:
        # Kafka uses min(min.insync.replicas, replication factor) as the effective minimum
        # only for the HW; produce with acks=all would always be refused: say so.
        return (
            f"min.insync.replicas={config.min_insync_replicas} exceeds replication.factor="
            f"{config.replication_factor}: every acks=all produce would be refused"
        )
    return None


def replica_role_and_phase(state: PartitionState) -> str:
    """Replica 0's role and fetch phase: the nodes of the partition's state diagram (every
    replica runs the same machine; replica 0 is the one that leads first)."""
    replica = state.replicas[0]
    if not replica.alive:
        return "down"
    if replica.role is Role.UNKNOWN:
        return "restarted, awaiting LeaderAndIsr"
    if replica.role is Role.LEADER:
        if partition.true_leader(state) == 0:
            return "leader"
        return "leader on a stale epoch"  # the controller moved on; LeaderAndIsr not yet applied
    if replica.fetch_in_flight is not None:
        return "follower, fetch response in flight"
    return f"follower, {replica.phase.value}"


PARTITION: Machine[PartitionConfig, PartitionState, Action] = Machine(
    name="partition",
    title="one partition replicated on R brokers: log, high watermark, ISR, leader-epoch truncation",
    settings={**SETTINGS, **RULE_SETTINGS},
    model=model_for,
    describe_state=describe_state,
    validate=validate,
    state_json=state_json,
    explain=explain,
    modules=(
        "spec.partition",
        "spec.replication_rules",
        "spec.log",
        "spec.isr",
        "spec.truncation",
        "spec.types",
    ),
    diagram=Diagram(
        title="replica 0: role and fetch phase",
        project=replica_role_and_phase,
        # One record and one controller-initiated move already take every role and phase
        # (7,929 states); the scenarios' larger bounds add no edge.
        config=PartitionConfig(max_records=1, max_leader_moves=1),
        max_depth=40,
    ),
)

_DIVERGENCE = ("replicas_agree_on_epoch_offsets", "followers_are_prefix_of_leader")
_EVERY_INVARIANT = tuple(partition.INVARIANTS)
_EPOCH_SAFETY = (
    "high_watermark_within_log",
    "leader_in_isr",
    "controller_epoch_is_newest",
    *_DIVERGENCE,
    "committed_records_survive",
    "consumed_records_survive",
    "acks_all_records_survive",
)

SCENARIOS: tuple[Scenario[PartitionConfig], ...] = (
    Scenario(
        machine=PARTITION,
        name="hw-truncation-loss",
        summary="2 replicas, acks=all, min ISR 1, logs survive crashes, followers truncate to their own HW "
        "(pre-0.11): a committed, acknowledged record is lost",
        config=PartitionConfig(truncation=TruncationRule.HIGH_WATERMARK),
        invariants=("committed_records_survive", "acks_all_records_survive"),
        expect_violation=True,
        reference="KIP-101 scenario 1",
    ),
    Scenario(
        machine=PARTITION,
        name="hw-truncation-divergence",
        summary="same rule; both replicas crash, one loses its unflushed suffix, returns first and leads: "
        "the replicas hold different records at the same offset",
        config=PartitionConfig(truncation=TruncationRule.HIGH_WATERMARK, max_lossy_crashes=1),
        invariants=_DIVERGENCE,
        expect_violation=True,
        reference="KIP-101 scenario 2",
    ),
    Scenario(
        machine=PARTITION,
        name="epoch-truncation",
        summary="both configurations above under leader-epoch truncation: replicas never diverge, and no "
        "committed record is lost while no log loses data",
        config=PartitionConfig(max_lossy_crashes=1),
        invariants=_EPOCH_SAFETY,
        expect_violation=False,
        witnesses=("record_committed", "partition_offline"),
        reference="KIP-101, KIP-279, KIP-320",
    ),
    Scenario(
        machine=PARTITION,
        name="unclean-election-loss",
        summary="unclean.leader.election.enable=true, ISR shrunk to the leader, leader lost: a committed "
        "record is lost",
        config=PartitionConfig(unclean_leader_election=True),
        invariants=("committed_records_survive",),
        expect_violation=True,
        reference="unclean.leader.election.enable",
    ),
    Scenario(
        machine=PARTITION,
        name="clean-election",
        summary="unclean election disabled: no committed record is lost; the partition goes offline instead",
        config=PartitionConfig(),
        invariants=_EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("record_committed", "partition_offline"),
        reference="unclean.leader.election.enable",
    ),
    Scenario(
        machine=PARTITION,
        name="acks1-loss",
        summary="acks=1, the leader fails before the follower fetched: an acknowledged record is lost "
        "(it was never committed)",
        config=PartitionConfig(producer_acks=(Acks.LEADER,)),
        invariants=("acknowledged_records_survive",),
        expect_violation=True,
        reference="acks",
    ),
    Scenario(
        machine=PARTITION,
        name="acks-all-single-isr",
        summary="acks=all, min ISR 1, ISR shrunk to the leader, then the leader loses its unflushed log: "
        "an acknowledged record is lost",
        config=PartitionConfig(max_lossy_crashes=1),
        invariants=("acknowledged_records_survive",),
        expect_violation=True,
        reference="min.insync.replicas; KIP-966 (eligible leader replicas)",
    ),
    Scenario(
        machine=PARTITION,
        name="acks-all-min-isr-2",
        summary="acks=all, min ISR 2: no acknowledged record is lost; produce is refused with "
        "NOT_ENOUGH_REPLICAS while the ISR is too small",
        config=PartitionConfig(min_insync_replicas=2),
        invariants=(*_EVERY_INVARIANT,),
        expect_violation=False,
        witnesses=("write_acknowledged", "produce_rejected"),
        reference="min.insync.replicas",
    ),
)
