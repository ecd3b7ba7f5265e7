"""Published counterexamples of Kafka's replication, each replayed against the rule it broke
and the rule that fixed it.

What it is
    A story is one published counterexample: KIP-101's two scenarios, the fast-failover
    divergence of KIP-279 (KAFKA-6361), the unfenced truncation and the first design of
    KIP-320 (found with TLA+ in hachikuji/kafka-specification), KAFKA-7128, KAFKA-14704, and
    KIP-966's cases (the last replica standing; KAFKA-15583). Each story has one
    configuration (Kafka settings and exploration bounds) and two `--set` override sets that
    differ only in the protocol rules (`spec.replication_rules`, or the KRaft controller's
    rules for KIP-966), and gives two scenarios:

    `<story>-broken-rule`  under the rule that broke: the checker finds the counterexample
                           (the shortest one, step by step) of the property the story is about;
    `<story>-fixed-rule`   under the rule that fixed it, same configuration and depth bound:
                           no violation, and witnesses show that the moment the story turns on
                           (a follower about to truncate a committed record, a follower on an
                           epoch its leader does not know, ...) is reached, so the pass is not
                           vacuous.

What the checker adds to the published stories
    KIP-101's leader-epoch truncation alone does not close scenario 1 under its bounds: the
    follower may ask a broker that has not yet applied the newest LeaderAndIsr, which does not
    know the follower's epoch and sends it back to its own high watermark; only KIP-320's
    fencing of that request closes it (`kip-320-fenced-truncation`). KIP-101's divergence
    (scenario 2) is closed by KIP-279's epoch-aware answer, fenced or not, within its bounds.
    The first KIP-320 design breaks the strong-ISR property in 12 steps on 3 replicas through
    its fetch rule alone (the truncation request stays fenced in both runs).

Where it comes from
    KIP-101 (its scenarios 1 and 2), KIP-279 and KAFKA-6361, KIP-320, hachikuji/kafka-
    specification (Kip101.tla, Kip279.tla, Kip320.tla, Kip320FirstTry.tla and the StrongIsr
    property of KafkaReplication.tla), KAFKA-7128 (apache/kafka#5557: a follower must catch up
    to the leader's epoch start to join the ISR), KAFKA-10554 and KAFKA-14704
    (apache/kafka#13230: truncate before taking the leader's HW), KIP-966 and KAFKA-15583.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spec.controller.kraft import KRaftConfig
from spec.controller.kraft_scenarios import KRAFT_CONTROLLER
from spec.machines import DEFAULT_MAX_DEPTH, Machine, Scenario
from spec.partition import PartitionConfig
from spec.partition_scenarios import PARTITION


@dataclass(frozen=True)
class Story:
    """A published counterexample: the configuration, the rule that broke, the rule that fixed it."""

    name: str  # kebab-case; the scenarios are `<name>-broken-rule` and `<name>-fixed-rule`
    machine: Machine[Any, Any, Any]
    config: Any  # Kafka settings and bounds both runs share
    broken_rule: Mapping[str, str]  # `--set` overrides: the rule that broke
    fixed_rule: Mapping[str, str]  # `--set` overrides: the rule that fixed it (same keys)
    invariants: tuple[str, ...]  # what the story breaks; the fixed run checks them too
    witnesses: tuple[str, ...]  # what the fixed run must reach (the story's moment)
    broken_summary: str
    fixed_summary: str
    reference: str  # KIP, JIRA, TLA+ module
    fixed_invariants: tuple[str, ...] = ()  # further properties the fixed run also checks
    max_depth: int = DEFAULT_MAX_DEPTH

    def scenarios(self) -> tuple[Scenario[Any], Scenario[Any]]:
        """The `-broken-rule` and `-fixed-rule` scenarios."""
        broken = Scenario(
            machine=self.machine,
            name=f"{self.name}-broken-rule",
            summary=self.broken_summary,
            config=self.machine.apply_overrides(self.config, self.broken_rule),
            invariants=self.invariants,
            expect_violation=True,
            reference=self.reference,
            max_depth=self.max_depth,
        )
        fixed = Scenario(
            machine=self.machine,
            name=f"{self.name}-fixed-rule",
            summary=self.fixed_summary,
            config=self.machine.apply_overrides(self.config, self.fixed_rule),
            invariants=(*self.invariants, *self.fixed_invariants),
            expect_violation=False,
            witnesses=self.witnesses,
            reference=self.reference,
            max_depth=self.max_depth,
        )
        return broken, fixed


_LOSS = ("committed_records_survive", "acks_all_records_survive")
_DIVERGENCE = ("replicas_agree_on_epoch_offsets", "followers_are_prefix_of_leader")
_THREE_REPLICAS = PartitionConfig(replication_factor=3, max_records=1, max_crashes=0)
"""Three replicas, one record, two controller-initiated leader moves, no crash."""
_LAST_REPLICA = KRaftConfig(max_crashes=1, max_lossy_crashes=1, max_lost_sessions=1, max_alter_partitions=0)
"""RF 2, min ISR 2: one crash that may lose the unflushed log, one lost session."""

STORIES: tuple[Story, ...] = (
    Story(
        name="kip-101-loss",
        machine=PARTITION,
        config=PartitionConfig(),
        broken_rule={"truncation": "hw"},
        fixed_rule={"truncation": "kip-320"},
        invariants=_LOSS,
        witnesses=("record_committed", "committed_record_above_follower_hw"),
        broken_summary="KIP-101 scenario 1: a follower that becomes leader truncates to its own lagging HW "
        "a record the old leader had committed and acknowledged, then leads without it",
        fixed_summary="same run with leader-epoch truncation, fenced (KIP-101/279/320): the follower keeps "
        "the committed record above its own HW; KIP-101 or KIP-279 alone still lose it within these "
        "bounds (see kip-320-fenced-truncation)",
        reference="KIP-101 scenario 1, KIP-320",
    ),
    Story(
        name="kip-101-divergence",
        machine=PARTITION,
        config=PartitionConfig(max_lossy_crashes=1),
        broken_rule={"truncation": "hw"},
        fixed_rule={"truncation": "kip-279"},
        invariants=_DIVERGENCE,
        witnesses=("record_committed", "follower_diverges_from_leader"),
        broken_summary="KIP-101 scenario 2: both replicas crash, one loses its unflushed suffix, comes back "
        "first and leads; the other keeps, below its HW, a record the new leader replaced",
        fixed_summary="same run with KIP-279's epoch-aware OffsetsForLeaderEpoch: the follower cuts the "
        "diverging record (KIP-101's single round still diverges: see kip-279-fast-failover)",
        reference="KIP-101 scenario 2, KIP-279",
    ),
    Story(
        name="kip-279-fast-failover",
        machine=PARTITION,
        config=PartitionConfig(),
        broken_rule={"truncation": "kip-101"},
        fixed_rule={"truncation": "kip-279"},
        invariants=_DIVERGENCE,
        witnesses=("record_committed", "follower_epoch_unknown_to_leader"),
        broken_summary="KIP-101's single OffsetsForLeaderEpoch round after two quick leader changes: the new "
        "leader never had the follower's epoch and answers the start of its next epoch, and the "
        "follower keeps a record of its own epoch where the leader holds another",
        fixed_summary="same run under KIP-279: the answer names its epoch, the follower cuts back to where "
        "its copy of that epoch ends and asks again; the logs never diverge",
        reference="KIP-279, KAFKA-6361, Kip279.tla",
    ),
    Story(
        name="kip-320-fenced-truncation",
        machine=PARTITION,
        config=PartitionConfig(),
        broken_rule={"truncation": "kip-279"},
        fixed_rule={"truncation": "kip-320"},
        invariants=("strong_isr", "committed_records_survive"),
        witnesses=("record_committed", "leader_behind_follower_epoch"),
        broken_summary="KIP-279's truncation is not fenced: a follower asks a broker that has not yet "
        "applied the newest LeaderAndIsr, which does not know the follower's epoch, and truncates to its own "
        "HW a record the ISR had committed (StrongIsr fails; one crash later the record is lost)",
        fixed_summary="same run under KIP-320: OffsetsForLeaderEpoch carries the follower's current epoch "
        "and only a leader on it answers, so the follower waits for the leader to catch up",
        reference="KIP-320, Kip320.tla (rule 2)",
    ),
    Story(
        name="kip-320-first-try",
        machine=PARTITION,
        config=_THREE_REPLICAS,
        broken_rule={"fetch.fencing": "kip-320-first-try"},
        fixed_rule={"fetch.fencing": "kip-320"},
        invariants=("strong_isr",),
        witnesses=("record_committed", "leader_behind_follower_epoch"),
        fixed_invariants=("committed_records_survive", *_DIVERGENCE),
        broken_summary="the first KIP-320 design (3 replicas): a new follower fetches at once, fenced only "
        "by the epoch of its last record; a broker that has not yet applied the newest LeaderAndIsr "
        "advances its HW on the fetch of a follower on a newer epoch, while the new epoch's leader "
        "had added an empty replica to the ISR: a record below that HW is missing from an ISR member",
        fixed_summary="same run as KIP-320 shipped: the Fetch request carries the follower's current leader "
        "epoch and only a leader on it answers; the strong ISR property holds",
        reference="KIP-320, Kip320FirstTry.tla",
    ),
    Story(
        name="kafka-7128-isr-expansion",
        machine=PARTITION,
        config=_THREE_REPLICAS,
        broken_rule={"isr.join": "hw"},
        fixed_rule={"isr.join": "kafka-7128"},
        invariants=("committed_records_survive",),
        witnesses=("record_committed", "follower_reached_lagging_hw"),
        fixed_invariants=("strong_isr",),
        broken_summary="3 replicas: leadership moves to a follower whose HW lags the committed record; a "
        "lagging replica outside the ISR fetches up to that lagging HW, joins the ISR without the "
        "record, and is elected: the committed record is lost",
        fixed_summary="same run with KAFKA-7128's fix: a follower joins the ISR only once it fetched up to "
        "the start of the leader's epoch too, so it holds every record the leader had when elected",
        reference="KAFKA-7128, apache/kafka#5557, Kip320.tla (rule 4)",
    ),
    Story(
        name="kafka-14704-follower-hw",
        machine=PARTITION,
        config=PartitionConfig(),
        broken_rule={"follower.high.watermark": "diverging-epoch-hw-first"},
        fixed_rule={"follower.high.watermark": "diverging-epoch"},
        invariants=("follower_reads_survive",),
        witnesses=("record_committed", "follower_diverges_from_leader"),
        broken_summary="a demoted leader's first Fetch answer names a diverging epoch and carries the new "
        "leader's HW; it takes the HW before it truncates, and for a moment a consumer reading from it "
        "(KIP-392) can read a record the leader does not have",
        fixed_summary="same run with KAFKA-14704's fix: the follower truncates first, then takes the HW",
        reference="KAFKA-14704, apache/kafka#13230, KAFKA-10554",
    ),
    Story(
        name="kip-966-last-replica-standing",
        machine=KRAFT_CONTROLLER,
        config=_LAST_REPLICA,
        broken_rule={"eligible.leader.replicas": "off"},
        fixed_rule={"eligible.leader.replicas": "on"},
        invariants=("committed_records_survive_lossy_shutdowns",),
        witnesses=("record_committed", "elected_from_elr_after_data_loss"),
        fixed_invariants=("committed_records_survive",),
        broken_summary="KRaft, RF 2, min ISR 2, no ELR: the follower is fenced out of the ISR, the leader "
        "(last ISR member) loses its unflushed log, restarts and is elected again: a committed record "
        "is lost",
        fixed_summary="same run with KIP-966's eligible leader replicas: the fenced follower waits in the "
        "ELR, the restarted leader leaves the ISR, and the follower is elected from the ELR",
        reference="KIP-966 (last replica standing)",
    ),
    Story(
        name="kip-966-min-isr-hw",
        machine=KRAFT_CONTROLLER,
        config=_LAST_REPLICA,
        broken_rule={"high.watermark": "any-isr"},
        fixed_rule={"high.watermark": "min-isr"},
        invariants=("committed_records_survive",),
        witnesses=("record_committed", "elected_from_elr"),
        broken_summary="KRaft with ELR but without KIP-966's HW rule: with the follower fenced into the ELR "
        "the leader's HW advances on an ISR below min ISR; the leader fails and the ELR member, which "
        "never got the record, is elected",
        fixed_summary="same run with the HW advancing only while the ISR reaches min ISR (KAFKA-15583): an "
        "ELR member holds everything committed",
        reference="KIP-966 part 1, KAFKA-15583",
    ),
)
"""Every story, in the order the README's table lists them."""

SCENARIOS: tuple[Scenario[Any], ...] = tuple(scenario for story in STORIES for scenario in story.scenarios())
"""Each story's `-broken-rule` and `-fixed-rule` scenarios."""

STORIES_BY_NAME: Mapping[str, Story] = {story.name: story for story in STORIES}

__all__ = ["SCENARIOS", "STORIES", "STORIES_BY_NAME", "Story"]
