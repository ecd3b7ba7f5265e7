"""Every scenario's sentence, asserted: for a counterexample, the violated property, the
shortest trace's length and the sentence that ends it (what `kafkaspec check NAME` prints after
`why:` and the scenario's documentation page ends with); for a scenario without violation, a
shortest trace to each of its witnesses and the sentence that ends it (`kafkaspec check NAME
--witness W` prints it after `shows:`, and the scenario's page under "Witness traces").

The tables are the spec's answers, pinned: a change to a protocol rule, a bound or a
machine's `explain` shows up here as a changed sentence or length. A new scenario without an
entry fails `test_every_scenario_has_its_sentences`.
"""

from __future__ import annotations

from typing import Any

import pytest

from kafkaspec.witnesses import witness_trace
from spec.machines import ScenarioOutcome
from spec.scenarios import SCENARIOS, SCENARIOS_BY_NAME
from tests.shared_findings import SHARED_FINDINGS

# scenario: (violated property, steps of the shortest counterexample, the closing sentence)
COUNTEREXAMPLES = {
    "hw-truncation-loss": (
        "committed_records_survive",
        10,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "hw-truncation-divergence": (
        "followers_are_prefix_of_leader",
        11,
        "replicas 0 and 1 hold different records at offset 0: v1@e2 and v0@e0",
    ),
    "unclean-election-loss": (
        "committed_records_survive",
        5,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "acks1-loss": (
        "acknowledged_records_survive",
        3,
        "record 0:v0, acknowledged to its producer, is missing from the leader 1's log",
    ),
    "acks-all-single-isr": (
        "acknowledged_records_survive",
        6,
        "record 0:v0, acknowledged to its producer, is missing from the leader 0's log",
    ),
    "classic-zombie-commit-unchecked": (
        "stale_commits_never_land",
        7,
        "the commit of t0-1 by c1-1 in generation 1 landed while the group is at generation 2",
    ),
    "classic-cooperative-one-round": (
        "partition_read_by_one_consumer",
        11,
        "partition t0-2 is read by c0 (generation 2) and c2 (generation 2)",
    ),
    "classic-late-sync-kafka-13419": (
        "partition_read_by_one_consumer",
        12,
        "partition t0-0 is read by c0 (generation 2) and c1 (generation 3)",
    ),
    "classic-static-rejoin-kafka-9801": (
        "stable_group_assigns_every_partition",
        7,
        "the Stable group (generation 2) assigns c0-0 [t0-1], i1-2 []: [t0-0] has no owner",
    ),
    "classic-lost-sync-kafka-12890": (
        "rebalance_not_stuck",
        7,
        "consumers c0, c1 wait in a CompletingRebalance group and no action can move it on",
    ),
    "static-rejoin-unreleased": (
        "no_self_fencing",
        2,
        "static consumer 0 rejoined with epoch 0 while its own member was active and got "
        "UNRELEASED_INSTANCE_ID, a fatal error",
    ),
    "consumer-zombie-processing": (
        "no_partition_processed_twice",
        5,
        "partition p0 is owned by consumers 0, 1 at once",
    ),
    "kafka-19233-rejoin-refused": (
        "rebalance_completes",
        5,
        "consumer 1 keeps rejoining and is refused; no heartbeat or revocation can change anything, only a "
        "timeout would",
    ),
    "kip-1251-exact-commit-fenced": (
        "no_false_fencing",
        6,
        "a commit for a partition the member holds, at an epoch it had, was refused with STALE_MEMBER_EPOCH",
    ),
    "kip-1251-restamped-retry-exact": (
        "no_zombie_commit",
        9,
        "a commit landed for a partition the committer no longer holds on the coordinator",
    ),
    "kip-1251-restamped-retry-returned-partition": (
        "no_zombie_commit",
        11,
        "a commit landed for a partition the committer no longer holds on the coordinator",
    ),
    "kafka-19974-exact-zombie-commit": (
        "no_zombie_commit",
        9,
        "a commit landed for a partition the committer no longer holds on the coordinator",
    ),
    "kraft-fenced-last-known-leader": (
        "leader_not_fenced",
        6,
        "broker 1 leads epoch 3 but its registration is fenced or shutting down",
    ),
    "kraft-last-replica-standing": (
        "committed_records_survive_lossy_shutdowns",
        10,
        "leader 0 holds [], without the committed records [(0, 0)]",
    ),
    "kraft-elr-without-min-isr-hw": (
        "committed_records_survive",
        7,
        "leader 0 holds [], without the committed records [(0, 0)]",
    ),
    "kraft-committed-isr-hw": (
        "maximal_isr_covers_controller_isr",
        6,
        "the controller committed ISR {0,1} but leader 0's high watermark waits only for {0}",
    ),
    "kraft-makeleader-reset": (
        "committed_records_survive",
        13,
        "leader 1 holds [], without the committed records [(0, 0)]",
    ),
    "kraft-bounce-without-broker-epochs": (
        "electable_replicas_hold_committed_records",
        11,
        "ISR {0,1} / ELR {} contains a broker that lacks a committed record",
    ),
    "zk-zombie-controller-unfenced": (
        "brokers_never_obey_an_older_controller",
        6,
        "a broker applied a request from an older controller epoch than one it had already obeyed (newest "
        "obeyed per broker: [2, 1, 1])",
    ),
    "zk-zombie-controller-zk-unfenced": (
        "idle_controller_brokers_agree",
        7,
        "controller 0 has nothing left to do, yet replica(s) [0, 1] never applied ZooKeeper's leader epoch 1",
    ),
    "zk-fast-bounce-without-broker-epochs": (
        "idle_controller_brokers_agree",
        4,
        "controller 2 has nothing left to do, yet replica(s) [0] never applied ZooKeeper's leader epoch 0",
    ),
    "zk-unconditional-isr-write": (
        "leader_epochs_only_grow",
        4,
        "a leader epoch went backwards (in ZooKeeper, or on a broker that stayed up)",
    ),
    "zk-unclean-election-loss": (
        "committed_records_survive",
        5,
        "a committed record [(0, 0)] is missing from the leader or an ISR member",
    ),
    "hw-truncation-loss-on-kraft": (
        "committed_records_survive",
        11,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "hw-truncation-divergence-on-kraft": (
        "followers_are_prefix_of_leader",
        16,
        "replicas 0 and 1 hold different records at offset 0: v1@e2 and v0@e0",
    ),
    "unclean-election-loss-on-kraft": (
        "committed_records_survive",
        8,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "acks1-loss-on-kraft": (
        "acknowledged_records_survive",
        3,
        "record 0:v0, acknowledged to its producer, is missing from the leader 1's log",
    ),
    "acks-all-single-isr-on-kraft": (
        "acknowledged_records_survive",
        10,
        "record 0:v0, acknowledged to its producer, is missing from the leader 0's log",
    ),
    "hw-truncation-loss-on-zk": (
        "committed_records_survive",
        13,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "hw-truncation-divergence-on-zk": (
        "followers_are_prefix_of_leader",
        15,
        "replicas 0 and 1 hold different records at offset 0: v1@e2 and v0@e0",
    ),
    "unclean-election-loss-on-zk": (
        "committed_records_survive",
        7,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "acks1-loss-on-zk": (
        "acknowledged_records_survive",
        3,
        "record 0:v0, acknowledged to its producer, is missing from the leader 1's log",
    ),
    "acks-all-single-isr-on-zk": (
        "acknowledged_records_survive",
        9,
        "record 0:v0, acknowledged to its producer, is missing from the leader 0's log",
    ),
    "kip-101-loss-broken-rule": (
        "committed_records_survive",
        10,
        "record 0:v0, committed (the HW passed it), is missing from the leader 1's log",
    ),
    "kip-101-divergence-broken-rule": (
        "followers_are_prefix_of_leader",
        11,
        "replicas 0 and 1 hold different records at offset 0: v1@e2 and v0@e0",
    ),
    "kip-279-fast-failover-broken-rule": (
        "followers_are_prefix_of_leader",
        8,
        "replicas 0 and 1 hold different records at offset 0: v0@e0 and v1@e1",
    ),
    "kip-320-fenced-truncation-broken-rule": (
        "strong_isr",
        9,
        "replica 0 (leader in epoch 0) has HW 1 over v0@e0 at offset 0, where ISR member 1 holds nothing",
    ),
    "kip-320-first-try-broken-rule": (
        "strong_isr",
        12,
        "replica 0 (leader in epoch 0) has HW 1 over v0@e0 at offset 0, where ISR member 1 holds nothing",
    ),
    "kafka-7128-isr-expansion-broken-rule": (
        "committed_records_survive",
        13,
        "record 0:v0, committed (the HW passed it), is missing from the leader 2's log",
    ),
    "kafka-14704-follower-hw-broken-rule": (
        "follower_reads_survive",
        7,
        "replica 0's HW 1 lets a consumer read v0@e0 at offset 0, where the leader 1 holds v1@e1",
    ),
    "kip-966-last-replica-standing-broken-rule": (
        "committed_records_survive_lossy_shutdowns",
        10,
        "leader 0 holds [], without the committed records [(0, 0)]",
    ),
    "kip-966-min-isr-hw-broken-rule": (
        "committed_records_survive",
        7,
        "leader 0 holds [], without the committed records [(0, 0)]",
    ),
}

# (machine, witness): the sentence that ends a trace to it (from the witness's docstring)
WITNESS_SENTENCES = {
    ("partition", "record_committed"): "some record was committed",
    (
        "partition",
        "partition_offline",
    ): "no eligible replica is alive and the controller left the partition without a leader",
    ("partition", "write_acknowledged"): "some write was acknowledged to its producer",
    ("partition", "produce_rejected"): "an acks=all produce was refused with NOT_ENOUGH_REPLICAS",
    (
        "classic-group",
        "settled_after_rebalance",
    ): (
        "a rebalance happened and is over: the group is Stable past its first generation, every running "
        "consumer is stable and owns exactly its stored assignment, and every partition is read by some "
        "running consumer"
    ),
    ("classic-group", "member_left_and_settled"): "settled after a member left with LeaveGroup",
    (
        "classic-group",
        "crashed_member_replaced",
    ): "settled after a paused member's session expired: its partitions are read by others",
    (
        "classic-group",
        "joiner_refused_at_max_size",
    ): "a consumer was refused with GROUP_MAX_SIZE_REACHED while the group stayed Stable",
    (
        "classic-group",
        "idle_consumer_settled",
    ): "settled with a running member that owns nothing (more consumers than partitions)",
    (
        "classic-group",
        "offsets_expired_and_group_deleted",
    ): "every member left, the group's offsets expired and the group was deleted (Dead)",
    ("classic-group", "stale_commit_refused"): "an OffsetCommit was refused as stale or fenced",
    (
        "classic-group",
        "static_member_restarted_in_place",
    ): "a restarted static instance reads its partitions in the generation it started in",
    (
        "classic-group",
        "old_instance_fenced",
    ): "an old static instance was told FENCED_INSTANCE_ID and stopped",
    (
        "classic-group",
        "moved_in_two_rounds",
    ): "settled two generations on: a cooperative rebalance revoked in one round and assigned in the next",
    (
        "classic-group",
        "late_sync_refused",
    ): "a SyncGroup was answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: it came too late",
    (
        "classic-group",
        "static_rejoin_settled",
    ): "settled after a rebalance with a restarted static instance reading partitions",
    (
        "classic-group",
        "lost_sync_member_removed",
    ): "settled after a member whose SyncGroup was lost was removed and told so by a heartbeat",
    ("consumer-group", "member_joined"): "a consumer got its first assignment",
    ("consumer-group", "partition_moved"): "a partition was owned by one consumer, then by another",
    ("consumer-group", "group_stable"): "every member was stable at the group epoch with 2+ members",
    ("consumer-group", "member_left"): "a member left with epoch -1",
    ("consumer-group", "commit_accepted"): "an offset commit was accepted",
    ("consumer-group", "static_member_left"): "a static member left with epoch -2",
    ("consumer-group", "static_member_returned"): "a static member came back and got its partitions again",
    (
        "consumer-group",
        "static_rejoined_in_place",
    ): "a static consumer rejoined with epoch 0 and got its active member back",
    ("consumer-group", "client_fenced"): "a consumer was told FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID",
    ("consumer-group", "idle_member"): "a stable member had no partition",
    ("consumer-group", "fenced_while_revoking"): "the rebalance timeout fenced a member that was revoking",
    (
        "consumer-group",
        "zombie_holds_partition",
    ): "a fenced consumer still owned a partition given to another member",
    ("consumer-group", "fenced_member_rejoined"): "a fenced consumer rejoined and got an assignment",
    ("consumer-group", "zombie_commit_refused"): "a fenced or stale consumer's commit was refused",
    (
        "consumer-group",
        "stale_commit_accepted",
    ): "a commit with an epoch older than the member's was accepted",
    (
        "consumer-group",
        "revoked_again",
    ): "a member that had revoked had to revoke more (a second revocation round)",
    (
        "consumer-group",
        "previous_epoch_accepted",
    ): "a heartbeat with the member's previous epoch was accepted (a bump was lost)",
    ("kraft-controller", "partition_offline"): "the partition has no leader",
    (
        "kraft-controller",
        "last_known_leader_recorded",
    ): "the partition remembers its last known leader (ISR and ELR emptied, KIP-966)",
    ("kraft-controller", "record_committed"): "some record was committed",
    (
        "kraft-controller",
        "elected_from_elr_after_data_loss",
    ): (
        "a record was committed, a broker lost records in a crash, and a leader was then elected from the "
        "ELR (KIP-966's story)"
    ),
    (
        "kraft-controller",
        "leader_behind_committed_expansion",
    ): (
        "the controller committed an ISR expansion the leader has not yet heard of: the window in which "
        "only the maximal ISR keeps the HW from passing the new member"
    ),
    (
        "kraft-controller",
        "duplicate_registration_refused",
    ): "a restarted broker's registration was refused while its old session was valid",
    ("kraft-controller", "broker_reregistered"): "some broker registered again, with a new broker epoch",
    ("kraft-controller", "ineligible_replica_refused"): "an AlterPartition was answered INELIGIBLE_REPLICA",
    (
        "kraft-controller",
        "stale_broker_epoch_refused",
    ): "an AlterPartition from a broker's previous process was refused with STALE_BROKER_EPOCH",
    (
        "kraft-controller",
        "leadership_moved_before_shutdown",
    ): "a leader in controlled shutdown stopped only after its leadership moved to another broker",
    (
        "kraft-controller",
        "reassignment_completed",
    ): "the reassignment completed: the assignment is the target, nothing adding or removing",
    (
        "kraft-controller",
        "new_leader_elected_answered",
    ): "an AlterPartition completed a reassignment that moved the leader (NEW_LEADER_ELECTED)",
    ("zk-controller", "controller_failed_over"): "a second controller was elected and is active",
    (
        "zk-controller",
        "stale_request_refused",
    ): "a broker refused a request with a stale controller or broker epoch",
    (
        "zk-controller",
        "shutdown_moved_leadership",
    ): "a controlled shutdown moved a leadership away from the broker shutting down",
    (
        "zk-controller",
        "bounce_detected",
    ): "the controller detected a bounced broker by its new broker epoch (KIP-380)",
    (
        "zk-controller",
        "isr_write_refused",
    ): "a leader's conditional ISR write failed (BADVERSION): the controller had written since",
    (
        "zk-controller",
        "leader_elected_by_new_controller",
    ): "a controller elected after the first one wrote a new leader to ZooKeeper",
    ("zk-controller", "record_committed"): "some record was committed",
    (
        "zk-controller",
        "requests_duplicated_and_lost",
    ): "a control request was delivered twice and another was lost",
    ("zk-controller", "topic_created"): "the topic was created and its partition has a leader",
    ("zk-controller", "reassignment_completed"): "a reassignment finished (phase B ran)",
    ("zk-controller", "partition_offline"): "ZooKeeper's partition has no leader",
    ("replication-with-controller", "record_committed"): "some record was committed",
    (
        "replication-with-controller",
        "partition_offline",
    ): "no eligible replica is alive and the controller left the partition without a leader",
    ("replication-with-controller", "write_acknowledged"): "some write was acknowledged to its producer",
    (
        "replication-with-controller",
        "produce_rejected",
    ): "an acks=all produce was refused with NOT_ENOUGH_REPLICAS",
    (
        "partition",
        "committed_record_above_follower_hw",
    ): (
        "KIP-101 scenario 1's moment: a follower about to truncate holds, at or above its own (lagging) "
        "HW, a record that is committed; truncating to its HW would cut it"
    ),
    (
        "partition",
        "follower_diverges_from_leader",
    ): (
        "the moment before a diverging suffix is cut (KIP-101 scenario 2, KAFKA-14704): a follower about "
        "to truncate, following the leader of its own epoch, holds a record the leader does not hold at "
        "that offset"
    ),
    (
        "partition",
        "follower_epoch_unknown_to_leader",
    ): (
        "KIP-279's moment (fast leader failover): a follower about to truncate holds records of an epoch "
        "its leader never had, so the leader's OffsetsForLeaderEpoch answer is the end of an older epoch"
    ),
    (
        "partition",
        "leader_behind_follower_epoch",
    ): (
        "KIP-320's moment: a follower on a newer epoch than the broker it follows, which still presumes "
        "leadership on an older one (it has not applied the newest LeaderAndIsr)"
    ),
    (
        "partition",
        "follower_reached_lagging_hw",
    ): (
        "KAFKA-7128's moment: the true leader's last fetch from a follower outside its ISR reached the "
        "leader's (lagging) HW but not the start of the leader's epoch"
    ),
    ("kraft-controller", "elected_from_elr"): "a leader was elected from the ELR (KIP-966)",
}

# scenario without violation: {witness: steps of a shortest trace to it}
WITNESS_STEPS = {
    "epoch-truncation": {"record_committed": 3, "partition_offline": 2},
    "clean-election": {"record_committed": 3, "partition_offline": 2},
    "acks-all-min-isr-2": {"write_acknowledged": 4, "produce_rejected": 3},
    "classic-member-joins": {"settled_after_rebalance": 14},
    "classic-member-leaves": {"member_left_and_settled": 6},
    "classic-member-crashes": {"crashed_member_replaced": 7},
    "classic-group-max-size": {"joiner_refused_at_max_size": 2},
    "classic-idle-consumer": {"idle_consumer_settled": 14},
    "classic-offsets-expire-when-empty": {"offsets_expired_and_group_deleted": 4},
    "classic-zombie-commit-fenced": {"stale_commit_refused": 4},
    "classic-static-restart": {"static_member_restarted_in_place": 4},
    "classic-static-replaced": {"old_instance_fenced": 4, "static_member_restarted_in_place": 4},
    "classic-cooperative-join": {"moved_in_two_rounds": 24},
    "classic-late-sync-fixed": {"late_sync_refused": 6},
    "classic-static-rejoin-fixed": {"static_rejoin_settled": 9},
    "classic-lost-sync-fixed": {"lost_sync_member_removed": 18},
    "consumer-join": {"member_joined": 1, "partition_moved": 6, "group_stable": 6},
    "consumer-join-range": {"partition_moved": 6, "group_stable": 6},
    "consumer-leave": {"member_left": 2, "partition_moved": 3, "commit_accepted": 2},
    "consumer-static-leave-return": {
        "static_member_left": 2,
        "static_member_returned": 4,
        "partition_moved": 3,
    },
    "static-rejoin-in-place": {
        "static_rejoined_in_place": 2,
        "static_member_returned": 4,
        "client_fenced": 9,
    },
    "consumer-more-members-than-partitions": {"idle_member": 7, "group_stable": 6, "partition_moved": 6},
    "consumer-rebalance-timeout": {
        "fenced_while_revoking": 4,
        "zombie_holds_partition": 5,
        "fenced_member_rejoined": 6,
    },
    "consumer-zombie-commit": {"zombie_commit_refused": 5, "zombie_holds_partition": 5, "commit_accepted": 2},
    "kafka-19233-rejoin-fixed": {"client_fenced": 8, "fenced_member_rejoined": 9},
    "kip-1251-range-commit": {"stale_commit_accepted": 6, "zombie_commit_refused": 5},
    "consumer-two-revocation-rounds": {"revoked_again": 6, "zombie_commit_refused": 7, "group_stable": 6},
    "kip-1251-restamped-retry-range": {
        "zombie_commit_refused": 7,
        "commit_accepted": 2,
        "partition_moved": 6,
    },
    "kafka-19974-range-commit": {"zombie_commit_refused": 7, "commit_accepted": 2},
    "consumer-late-heartbeat": {"previous_epoch_accepted": 5, "partition_moved": 3, "group_stable": 4},
    "kraft-last-known-leader-fixed": {"partition_offline": 3, "last_known_leader_recorded": 3},
    "kraft-elr-keeps-committed": {"record_committed": 3, "elected_from_elr_after_data_loss": 7},
    "kraft-maximal-isr": {"record_committed": 3, "leader_behind_committed_expansion": 6},
    "kraft-broker-bounce": {
        "record_committed": 3,
        "duplicate_registration_refused": 2,
        "broker_reregistered": 3,
        "ineligible_replica_refused": 6,
        "stale_broker_epoch_refused": 5,
    },
    "kraft-controlled-shutdown": {
        "record_committed": 3,
        "leadership_moved_before_shutdown": 4,
        "broker_reregistered": 3,
    },
    "kraft-reassignment": {
        "record_committed": 3,
        "reassignment_completed": 6,
        "new_leader_elected_answered": 6,
    },
    "zk-zombie-controller-fenced": {
        "controller_failed_over": 2,
        "stale_request_refused": 6,
        "shutdown_moved_leadership": 2,
    },
    "zk-fast-bounce-with-broker-epochs": {"bounce_detected": 4, "stale_request_refused": 5},
    "zk-conditional-isr-write": {"isr_write_refused": 4},
    "zk-failover-during-election": {
        "controller_failed_over": 2,
        "leader_elected_by_new_controller": 4,
        "record_committed": 3,
    },
    "zk-controlled-shutdown": {"shutdown_moved_leadership": 2, "record_committed": 2},
    "zk-duplicated-and-lost-requests": {"shutdown_moved_leadership": 2, "requests_duplicated_and_lost": 4},
    "zk-topic-creation": {"topic_created": 2, "record_committed": 7, "controller_failed_over": 3},
    "zk-reassignment": {"reassignment_completed": 7, "record_committed": 2},
    "zk-clean-election": {"record_committed": 2, "partition_offline": 4},
    "epoch-truncation-on-kraft": {"record_committed": 4, "partition_offline": 5},
    "clean-election-on-kraft": {"record_committed": 4, "partition_offline": 4},
    "acks-all-min-isr-2-on-kraft": {"write_acknowledged": 4, "produce_rejected": 4},
    "epoch-truncation-on-zk": {"record_committed": 3, "partition_offline": 5},
    "clean-election-on-zk": {"record_committed": 3, "partition_offline": 5},
    "acks-all-min-isr-2-on-zk": {"write_acknowledged": 4, "produce_rejected": 3},
    "kip-101-loss-fixed-rule": {"record_committed": 3, "committed_record_above_follower_hw": 7},
    "kip-101-divergence-fixed-rule": {"record_committed": 3, "follower_diverges_from_leader": 4},
    "kip-279-fast-failover-fixed-rule": {"record_committed": 3, "follower_epoch_unknown_to_leader": 3},
    "kip-320-fenced-truncation-fixed-rule": {"record_committed": 3, "leader_behind_follower_epoch": 3},
    "kip-320-first-try-fixed-rule": {"record_committed": 4, "leader_behind_follower_epoch": 3},
    "kafka-7128-isr-expansion-fixed-rule": {"record_committed": 4, "follower_reached_lagging_hw": 9},
    "kafka-14704-follower-hw-fixed-rule": {"record_committed": 3, "follower_diverges_from_leader": 4},
    "kip-966-last-replica-standing-fixed-rule": {
        "record_committed": 3,
        "elected_from_elr_after_data_loss": 7,
    },
    "kip-966-min-isr-hw-fixed-rule": {"record_committed": 3, "elected_from_elr": 4},
}


def test_every_scenario_has_its_sentences() -> None:
    assert set(COUNTEREXAMPLES) == {scenario.name for scenario in SCENARIOS if scenario.expect_violation}
    holding = [scenario for scenario in SCENARIOS if not scenario.expect_violation]
    witnesses = {scenario.name: set(scenario.witnesses) for scenario in holding}
    assert {name: set(steps) for name, steps in WITNESS_STEPS.items()} == witnesses
    for scenario in SCENARIOS:
        for name in scenario.witnesses if not scenario.expect_violation else ():
            assert (scenario.machine.name, name) in WITNESS_SENTENCES, (scenario.name, name)


def _outcome(name: str) -> ScenarioOutcome[Any]:
    """Each scenario is checked once per test session (shared with the other tests)."""
    return SHARED_FINDINGS.outcome(SCENARIOS_BY_NAME[name])


@pytest.mark.parametrize("name", list(COUNTEREXAMPLES))
def test_each_counterexample_ends_with_its_sentence(name: str) -> None:
    outcome = _outcome(name)
    violation = outcome.result.violation
    assert violation is not None
    prop, steps, sentence = COUNTEREXAMPLES[name]
    assert (violation.property_name, len(violation.trace) - 1) == (prop, steps)
    assert outcome.explanation == sentence


@pytest.mark.parametrize("name", list(WITNESS_STEPS))
def test_each_witness_trace_ends_with_its_sentence(name: str) -> None:
    scenario = SCENARIOS_BY_NAME[name]
    for witness, steps in WITNESS_STEPS[name].items():
        found = witness_trace(scenario, scenario.config, witness, scenario.max_depth)
        assert found.trace is not None, (name, witness)
        assert len(found.trace) - 1 == steps, (name, witness)
        assert found.sentence == WITNESS_SENTENCES[(scenario.machine.name, witness)]
