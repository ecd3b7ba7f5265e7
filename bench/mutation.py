"""Mutation testing of the conformance suite: does it catch deliberate single bugs in `impl/`?

Each mutant is one text substitution in one file of a scratch copy of the repository's
`impl/` package, placed first on PYTHONPATH of a subprocess that runs
`conformance.run.run_conformance("impl", ...)` with a fixed seed, on the suite that covers
the mutated file: the replica-log suite for the storage mutants, the partition (replication)
suite for the `impl/replication.py` mutants, the coordinator suites for the
`impl/coordinator.py` mutants (the classic group coordinator), the controller suites for the
`impl/controller.py` mutants (the KRaft controller). A mutant is *detected* when the run reports a
divergence (or the mutated code fails outright: an exception, a crash or a timeout). Every
pattern must occur exactly once in its file: a pattern that is not found stops the script,
so no mutant is ever a silent no-op.
The `impl/consumer_group.py` mutants (the KIP-848 consumer-group coordinator) meet its
exhaustive suite, then its random machine. The unmutated copy is run first, on every suite a
chosen mutant needs, and must conform. The spec the suites compare against runs from its source
(`KAFKASPEC_NATIVE=0`), as in the test suite, not from the compiled build (`spec._compiled`):
the mutants are in `impl/` alone, so the build would find the same divergences, but the figures
stay comparable with the runs before it was the default.

Usage: ``python -m bench.mutation [--examples 300] [--seed 0] [--jobs 2] [--only NAME ...]
[--suite log|partition|coordinator|controller|consumer-group|zk-broker]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 600


@dataclass(frozen=True, slots=True)
class Mutant:
    """One deliberate bug: replace `old` (which must occur exactly once) by `new` in `file`."""

    name: str
    file: str  # relative to impl/
    old: str
    new: str
    bug: str  # what the mutated code gets wrong
    suite: str = "log"  # the conformance suite that covers `file`


S = "storage.py"
E = "epoch_cache.py"
R = "replication.py"
C = "coordinator.py"
PARTITION = "partition"
CG = "consumer_group.py"
CONSUMER_GROUP = "consumer-group"
COORDINATOR = "coordinator"
K = "controller.py"
CONTROLLER = "controller"
Z = "zk_broker.py"
ZK_BROKER = "zk-broker"

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "index-lookup-off-by-one",
        S,
        "slot = bisect_right(self._relative_offsets, offset - self.base_offset) - 1",
        "slot = bisect_right(self._relative_offsets, offset - self.base_offset)",
        "the sparse-index lookup takes the entry after the wanted offset",
    ),
    Mutant(
        "index-wrong-position",
        S,
        "                self._positions.append(position)",
        "                self._positions.append(position + 8)",
        "appends record a wrong byte position in the in-memory sparse index",
    ),
    Mutant(
        "position-of-end-off-by-one",
        S,
        "        if offset == self.next_offset:",
        "        if offset == self.next_offset - 1:",
        "the last record's position is taken for the segment end",
    ),
    Mutant(
        "read-skips-first-segment",
        S,
        "slot = bisect_right(self._base_offsets, start) - 1",
        "slot = bisect_right(self._base_offsets, start)",
        "a fetch starts in the segment after the one holding the offset",
    ),
    Mutant(
        "crc-not-checked",
        S,
        "    if batch_crc(data, position, position + size) != crc:",
        "    if False:",
        "batches are accepted without checking their CRC (recovery keeps a damaged batch)",
    ),
    Mutant(
        "corrupt-tail-kept",
        S,
        "        if os.fstat(self._log_fd).st_size != scan.valid_bytes:",
        "        if False:",
        "recovery does not cut the data file after its last valid batch",
    ),
    Mutant(
        "recovery-point-boundary",
        S,
        "        if offset < self._recovery_point:",
        "        if offset <= self._recovery_point:",
        "a torn batch exactly at the recovery point is taken for lost flushed data",
    ),
    Mutant(
        "truncate-recovery-point-kept",
        S,
        "        self._recovery_point = min(self._recovery_point, end)",
        "        self._recovery_point = self._recovery_point",
        "truncate_to does not lower the recovery point",
    ),
    Mutant(
        "recovery-hw-unclamped",
        S,
        "        self._high_watermark = min(max(self._high_watermark, self._log_start_offset), "
        "self.log_end_offset)",
        "        self._high_watermark = self._high_watermark",
        "recovery does not cap the checkpointed HW at the recovered log end",
    ),
    Mutant(
        "crash-keeps-epoch-at-leo",
        S,
        "truncate_from_end(self.log_end_offset + 1 if clean else self.log_end_offset)",
        "truncate_from_end(self.log_end_offset + 1)",
        "after a crash an epoch assigned at the log end (no records) is kept",
    ),
    Mutant(
        "flush-checkpoints-wrong-hw",
        S,
        "HIGH_WATERMARK_CHECKPOINT, self._high_watermark)",
        "HIGH_WATERMARK_CHECKPOINT, self._log_start_offset)",
        "flush checkpoints the log start offset as the high watermark",
    ),
    Mutant(
        "truncate-to-off-by-one",
        S,
        "        end = max(min(offset, self.log_end_offset), self._log_start_offset)",
        "        end = max(min(offset + 1, self.log_end_offset), self._log_start_offset)",
        "truncate_to keeps one record too many",
    ),
    Mutant(
        "truncate-keeps-hw",
        S,
        "        self._high_watermark = min(self._high_watermark, end)",
        "        self._high_watermark = self._high_watermark",
        "truncate_to leaves the HW above the new log end",
    ),
    Mutant(
        "truncate-keeps-epoch-at-end",
        S,
        "        self._epoch_cache.truncate_from_end(end)",
        "        self._epoch_cache.truncate_from_end(end + 1)",
        "truncate_to keeps an epoch that starts at the new log end",
    ),
    Mutant(
        "truncate-fully-keeps-hw",
        S,
        "self._log_start_offset = self._high_watermark = self._recovery_point = offset",
        "self._log_start_offset = self._recovery_point = offset",
        "truncate_fully_and_start_at keeps the old high watermark",
    ),
    Mutant(
        "hw-not-capped-at-leo",
        S,
        "self._high_watermark = min(max(high_watermark, self._log_start_offset), self.log_end_offset)",
        "self._high_watermark = max(high_watermark, self._log_start_offset)",
        "update_high_watermark lets the HW pass the log end",
    ),
    Mutant(
        "delete-records-past-hw",
        S,
        "        target = min(offset, self._high_watermark)",
        "        target = offset",
        "DeleteRecords moves the log start offset past the high watermark",
    ),
    Mutant(
        "retention-past-hw",
        S,
        "            if upper > self._high_watermark:",
        "            if upper > self._high_watermark + 5:",
        "retention deletes segments holding offsets at or above the HW",
    ),
    Mutant(
        "retention-deletes-active-segment",
        S,
        "            doomed < len(self._segments) - 1 and",
        "            doomed < len(self._segments) and",
        "deleting segments below the log start offset may delete the active segment",
    ),
    Mutant(
        "truncate-mid-batch-drops-prefix",
        S,
        "            if base < offset:",
        "            if False:",
        "truncation inside a batch drops the whole batch instead of rewriting the kept prefix",
    ),
    Mutant(
        "read-inside-batch-from-batch-start",
        S,
        "    skip = first - base",
        "    skip = 0",
        "a read from an offset inside a batch returns the batch's records from its start",
    ),
    Mutant(
        "epoch-truncate-from-end-keeps-entry",
        E,
        "kept = [entry for entry in self._entries if entry.start_offset < end_offset]",
        "kept = [entry for entry in self._entries if entry.start_offset <= end_offset]",
        "truncateFromEnd keeps the entry starting exactly at the end offset",
    ),
    Mutant(
        "epoch-truncate-from-start-boundary",
        E,
        "removed = [entry for entry in self._entries if entry.start_offset <= start_offset]",
        "removed = [entry for entry in self._entries if entry.start_offset < start_offset]",
        "truncateFromStart duplicates an entry starting exactly at the new log start",
    ),
    Mutant(
        "epoch-assign-keeps-same-offset",
        E,
        "entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset",
        "entries[-1].epoch >= epoch or entries[-1].start_offset > start_offset",
        "assign keeps an older epoch starting at the same offset (cache not monotonic)",
    ),
    Mutant(
        "end-offset-wrong-boundary",
        E,
        "        return floor.epoch, higher.start_offset",
        "        return floor.epoch, higher.start_offset - 1",
        "endOffsetFor answers the last offset of the epoch instead of the next epoch's start",
    ),
    Mutant(
        "end-offset-latest-epoch",
        E,
        "            return requested_epoch, log_end_offset",
        "            return requested_epoch, log_end_offset - 1",
        "endOffsetFor the latest epoch answers LEO - 1",
    ),
    Mutant(
        "end-offset-floor-strict",
        E,
        "            if entry.epoch <= requested_epoch:",
        "            if entry.epoch < requested_epoch:",
        "endOffsetFor skips the requested epoch itself when looking for the floor entry",
    ),
    Mutant(
        "hw-off-by-one",
        R,
        "                candidate = min(candidate, follower_end)",
        "                candidate = min(candidate, follower_end + 1)",
        "the leader HW counts one record past the slowest ISR follower's LEO",
        PARTITION,
    ),
    Mutant(
        "epoch-truncation-to-hw",
        R,
        "        if self.config.truncation is TruncationRule.HIGH_WATERMARK:",
        "        if True:",
        "a follower truncates to its HW instead of the leader's epoch end offset (KIP-101 ignored)",
        PARTITION,
    ),
    Mutant(
        "kip-279-single-round",
        R,
        "            cache.truncate_from_end(end)\n            continue",
        "            return end",
        "truncation stops after one OffsetsForLeaderEpoch round when the leader answers an older epoch",
        PARTITION,
    ),
    Mutant(
        "isr-never-shrinks",
        R,
        "        leader.isr.discard(follower_id)",
        "        pass",
        "LeaderShrinkIsr is accepted but the follower stays in the ISR",
        PARTITION,
    ),
    Mutant(
        "shrink-within-lag",
        R,
        "        if self._ticks_since_caught_up(progress) <= self.config.replica_lag_ticks:",
        "        if self._ticks_since_caught_up(progress) < self.config.replica_lag_ticks:",
        "a follower is dropped from the ISR when it has lagged exactly replica.lag.time.max.ms",
        PARTITION,
    ),
    Mutant(
        "follower-hw-not-from-leader",
        R,
        "        log.set_high_watermark(min(response.leader_high_watermark, log.log_end_offset))",
        "        log.set_high_watermark(max(response.leader_high_watermark, log.log_end_offset))",
        "a follower takes its own LEO as its HW instead of min(leader HW, own LEO)",
        PARTITION,
    ),
    Mutant(
        "acks-all-completes-early",
        R,
        "        while waiting and waiting[0][0] < high_watermark:",
        "        while waiting and waiting[0][0] <= high_watermark:",
        "an acks=all produce is acknowledged when the HW reaches its offset, before it passes it",
        PARTITION,
    ),
    Mutant(
        "expand-ignores-epoch-start",
        R,
        "            if fetch_offset >= log.high_watermark and fetch_offset >= epoch_start:",
        "            if fetch_offset >= log.high_watermark:",
        "a follower rejoins the ISR at the HW without reaching the leader's epoch start (KAFKA-7128)",
        PARTITION,
    ),
    Mutant(
        "min-isr-off-by-one",
        R,
        "        if acks is Acks.ALL and len(leader.isr) < self.config.min_insync_replicas:",
        "        if acks is Acks.ALL and len(leader.isr) <= self.config.min_insync_replicas:",
        "acks=all is refused with NOT_ENOUGH_REPLICAS when the ISR has exactly min.insync.replicas",
        PARTITION,
    ),
    Mutant(
        "after-append-check-ignored",
        R,
        "        enough_replicas = len(leader.isr) >= self.config.min_insync_replicas",
        "        enough_replicas = True",
        "a waiting acks=all produce is acknowledged though the ISR shrank below min.insync.replicas",
        PARTITION,
    ),
    Mutant(
        "unclean-election-when-disabled",
        R,
        "        elif self.config.unclean_leader_election:",
        "        elif True:",
        "a restarted replica outside the ISR is elected although unclean election is disabled",
        PARTITION,
    ),
    Mutant(
        "fetch-not-fenced",
        R,
        "        if not leader.acts_as_leader or leader.leader_epoch != follower.leader_epoch:\n"
        "            return False\n        log = leader.log",
        "        if not leader.acts_as_leader:\n            return False\n        log = leader.log",
        "a leader answers fetches from a follower on another leader epoch (KIP-320 fencing lost)",
        PARTITION,
    ),
    Mutant(
        "new-leader-epoch-not-at-leo",
        R,
        "        replica.log.epoch_cache.assign(controller.leader_epoch, replica.log.log_end_offset)",
        "        pass",
        "a new leader does not record its epoch's start offset at its LEO (KAFKA-7415)",
        PARTITION,
    ),
    Mutant(
        "crash-keeps-isr",
        R,
        "        isr = controller.isr - {replica_id} if len(controller.isr) > 1 else controller.isr",
        "        isr = controller.isr",
        "the controller leaves a dead broker in the ISR",
        PARTITION,
    ),
    Mutant(
        "out-of-range-always-restarts-log",
        R,
        "            if log.log_end_offset > response.leader_log_end_offset:",
        "            if False:",
        "a follower ahead of its leader wipes its log instead of truncating to the leader's LEO",
        PARTITION,
    ),
    # --- the classic group coordinator (impl/coordinator.py) --------------------------------
    Mutant(
        "heartbeat-none-while-rebalancing",
        C,
        "    PREPARING_REBALANCE: HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS),",
        "    PREPARING_REBALANCE: HeartbeatResponse(Errors.NONE),",
        "a heartbeat during PreparingRebalance is answered NONE: members never learn to rejoin",
        COORDINATOR,
    ),
    Mutant(
        "stale-generation-commit-accepted",
        C,
        "            if generation != group.generation:\n                return Errors.ILLEGAL_GENERATION",
        "            if False:\n                return Errors.ILLEGAL_GENERATION",
        "an OffsetCommit from a member of an earlier generation is stored (a zombie's commit lands)",
        COORDINATOR,
    ),
    Mutant(
        "offsets-expire-in-non-empty-group",
        C,
        "        elif group.previous_state is EMPTY:\n            self.timers.cancel(group.offsets_timer)",
        "        elif False:\n            self.timers.cancel(group.offsets_timer)",
        "the offset-retention timer stays armed when members join: a group with members loses its offsets",
        COORDINATOR,
    ),
    Mutant(
        "leader-is-last-joiner",
        C,
        "        if group.leader is None:\n            group.leader = member.member_id",
        "        if True:\n            group.leader = member.member_id",
        "every new member becomes the leader instead of the first to join",
        COORDINATOR,
    ),
    Mutant(
        "static-restart-rebalances",
        C,
        "        return group.protocol_name != self._select_protocol(group)",
        "        return True",
        "a static member restarting in a Stable group triggers a rebalance (KIP-345 says it must not)",
        COORDINATOR,
    ),
    Mutant(
        "sync-generation-unchecked",
        C,
        "        if request.generation_id != group.generation:\n            return Errors.ILLEGAL_GENERATION",
        "        if False:\n            return Errors.ILLEGAL_GENERATION",
        "a SyncGroup of another generation is accepted",
        COORDINATOR,
    ),
    Mutant(
        "heartbeat-generation-unchecked",
        C,
        "        if request.generation_id != group.generation:\n"
        "            return _HEARTBEAT_ILLEGAL_GENERATION",
        "        if False:\n            return _HEARTBEAT_ILLEGAL_GENERATION",
        "a heartbeat of another generation is accepted",
        COORDINATOR,
    ),
    Mutant(
        "parked-sync-member-expires",
        C,
        "        if member.awaiting_join or member.awaiting_sync:",
        "        if member.awaiting_join:",
        "the session timer removes a member whose SyncGroup is parked (it counts as a heartbeat)",
        COORDINATOR,
    ),
    Mutant(
        "join-completes-with-pending-members",
        C,
        "        return self.awaiting_join == len(self.members) and not self.pending_members",
        "        return self.awaiting_join == len(self.members)",
        "the join phase completes without the ids handed out with MEMBER_ID_REQUIRED (KIP-394)",
        COORDINATOR,
    ),
    Mutant(
        "new-leader-is-last-member",
        C,
        "            group.leader = next(iter(group.members), None)",
        "            group.leader = next(reversed(group.members), None)",
        "a removed leader is replaced by the last member instead of the first remaining",
        COORDINATOR,
    ),
    Mutant(
        "group-max-size-off-by-one",
        C,
        "return (member is not None and member.awaiting_join) or group.awaiting_join < limit",
        "return (member is not None and member.awaiting_join) or group.awaiting_join <= limit",
        "a rebalancing group admits one member more than group.max.size (KIP-389)",
        COORDINATOR,
    ),
    Mutant(
        "static-members-dropped-at-join",
        C,
        "            if member.group_instance_id is None:\n"
        "                self._remove_member(group, member.member_id)",
        "            if True:\n                self._remove_member(group, member.member_id)",
        "a static member that did not rejoin in time is removed (only dynamic ones are)",
        COORDINATOR,
    ),
    Mutant(
        "initial-rebalance-no-delay",
        C,
        "        if group.state is not PREPARING_REBALANCE or group.previous_state is EMPTY:",
        "        if group.state is not PREPARING_REBALANCE:",
        "the first rebalance of an Empty group completes without group.initial.rebalance.delay.ms",
        COORDINATOR,
    ),
    Mutant(
        "left-out-member-keeps-assignment",
        C,
        "            assignment = given.get(other.member_id, EMPTY_ASSIGNMENT)",
        "            assignment = given.get(other.member_id, other.assignment)",
        "a member the leader's assignment leaves out keeps its old partitions",
        COORDINATOR,
    ),
    Mutant(
        "parked-sync-not-answered-on-rebalance",
        C,
        "                if member.awaiting_sync:\n                    self._outbox.append",
        "                if False:\n                    self._outbox.append",
        "a new rebalance leaves parked SyncGroups unanswered (REBALANCE_IN_PROGRESS never sent)",
        COORDINATOR,
    ),
    Mutant(
        "pending-sync-timer-not-armed",
        C,
        "        self.timers.schedule(group.sync_timer, self.now_ms + self.config.rebalance_timeout_ms)",
        "        pass",
        "members that never send SyncGroup are never removed: the group waits forever (KAFKA-12890)",
        COORDINATOR,
    ),
    Mutant(
        "fenced-instance-as-unknown",
        C,
        "            if existing != member_id:\n                return Errors.FENCED_INSTANCE_ID",
        "            if existing != member_id:\n                return Errors.UNKNOWN_MEMBER_ID",
        "an old instance of a static member is told UNKNOWN_MEMBER_ID instead of FENCED_INSTANCE_ID",
        COORDINATOR,
    ),
    Mutant(
        "heartbeat-stale-broker-epoch",
        K,
        "            if broker is None or broker.epoch != request.broker_epoch:",
        "            if broker is None:",
        "a heartbeat from an older broker epoch (a previous process) is accepted",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-stale-requester-epoch",
        K,
        "        if requester is None or requester.epoch != request.broker_epoch:",
        "        if requester is None:",
        "AlterPartition from the leader's previous process (older broker epoch) is accepted",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-stale-partition-epoch",
        K,
        "        if request.partition_epoch < partition.partition_epoch:",
        "        if False:",
        "AlterPartition built on an older partition epoch is accepted (INVALID_UPDATE_VERSION lost)",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-older-leader-epoch",
        K,
        "        if request.leader_epoch < partition.leader_epoch:",
        "        if False:",
        "AlterPartition from an older leader epoch is not fenced",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-member-epoch-unchecked",
        K,
        "            if member_epoch not in (UNKNOWN_BROKER_EPOCH, broker.epoch):",
        "            if False:",
        "a new ISR member's broker epoch is not checked (KIP-903, KAFKA-14139)",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-fenced-member",
        K,
        "            if broker is None or broker.fenced or broker.in_controlled_shutdown:",
        "            if broker is None or broker.in_controlled_shutdown:",
        "a fenced broker may join the ISR (KIP-841)",
        CONTROLLER,
    ),
    Mutant(
        "alter-partition-shrink-lost",
        K,
        "            new_isr = frozenset(member for member, _ in request.new_isr)",
        "            new_isr = partition.isr | frozenset(member for member, _ in request.new_isr)",
        "an ISR shrink does not reach the controller's registration (expansions still do)",
        CONTROLLER,
    ),
    Mutant(
        "unclean-election-when-off",
        K,
        "        if unclean_election:",
        "        if True:",
        "a leader is elected from outside the ISR with unclean.leader.election.enable off",
        CONTROLLER,
    ),
    Mutant(
        "fenced-broker-elected",
        K,
        "                if not broker.fenced and not broker.in_controlled_shutdown\n            )",
        "                if not broker.in_controlled_shutdown\n            )",
        "a fenced broker is acceptable as leader",
        CONTROLLER,
    ),
    Mutant(
        "fenced-broker-stays-in-isr",
        K,
        "        dropped = frozenset((remove, unclean))",
        "        dropped = frozenset((unclean,))",
        "fencing or a controlled shutdown leaves the broker in the ISR",
        CONTROLLER,
    ),
    Mutant(
        "last-known-leader-unchecked",
        K,
        "and len(known) == 1 and known[0] in acceptable:",
        "and len(known) == 1:",
        "the last known leader is elected even when fenced (KAFKA-19522)",
        CONTROLLER,
    ),
    Mutant(
        "elr-not-populated",
        K,
        "                target_elr = (partition.elr | partition.isr) - isr - unclean_shutdown",
        "                target_elr = partition.elr - isr - unclean_shutdown",
        "replicas leaving an ISR below min ISR are not kept in the ELR (KIP-966)",
        CONTROLLER,
    ),
    Mutant(
        "unclean-restart-kept",
        K,
        "            if existing is not None and request.previous_broker_epoch != existing.epoch:",
        "            if False:",
        "a broker that did not shut down cleanly stays in its ISRs and ELRs on re-registration",
        CONTROLLER,
    ),
    Mutant(
        "duplicate-registration-accepted",
        K,
        "            if existing is not None and existing.incarnation != request.incarnation"
        " and existing.active:",
        "            if False:",
        "a new process registers while the old registration is still active",
        CONTROLLER,
    ),
    Mutant(
        "unfenced-before-caught-up",
        K,
        "                elif request.current_metadata_offset >= broker.epoch:",
        "                elif True:",
        "a broker is unfenced before it replayed its own registration record",
        CONTROLLER,
    ),
    Mutant(
        "shutdown-before-brokers-caught-up",
        K,
        "            elif not leads and broker.controlled_shutdown_offset"
        " <= self._lowest_active_offset(broker_id):",
        "            elif not leads:",
        "a broker in controlled shutdown stops before the active brokers replayed its shutdown record",
        CONTROLLER,
    ),
    Mutant(
        "leader-epoch-not-bumped",
        K,
        "            partition.leader_epoch += 1",
        "            pass",
        "a new leader keeps the old leader epoch",
        CONTROLLER,
    ),
    Mutant(
        "reassignment-completes-early",
        K,
        "            if final_isr and final_replicas and final_isr >= frozenset(final_replicas):",
        "            if final_isr and final_replicas:",
        "a reassignment completes before the target replicas are in the ISR",
        CONTROLLER,
    ),
    Mutant(
        "new-leader-elected-not-answered",
        K,
        "            if record.leader not in (NO_LEADER_CHANGE, request.broker_id):",
        "            if False:",
        "an AlterPartition that moved the leader is answered NONE, not NEW_LEADER_ELECTED",
        CONTROLLER,
    ),
    Mutant(
        "unfence-does-not-elect",
        K,
        "                    self._leader_and_isr_updates(records, self._leaderless, add=broker_id)",
        "                    pass",
        "an unfenced broker does not become leader of leaderless partitions",
        CONTROLLER,
    ),
    Mutant(
        "leads-index-stale",
        K,
        "            self._unindex(self._leads, partition.leader, partition_id)",
        "            pass",
        "the index of partitions a broker leads keeps partitions it no longer leads",
        CONTROLLER,
    ),
    Mutant(
        "elr-index-stale",
        K,
        "            self._reindex(self._in_elr, partition.elr, record.elr, partition_id)",
        "            pass",
        "the index of ELR memberships is not maintained",
        CONTROLLER,
    ),
    Mutant(
        "isr-emptied-without-elr",
        K,
        "        if record_isr is None and (isr or elr_enabled) and isr != partition.isr:",
        "        if record_isr is None and isr != partition.isr:",
        "without ELR the last ISR member is removed (the ISR becomes empty)",
        CONTROLLER,
    ),
    # --- the KIP-848 consumer-group coordinator (impl/consumer_group.py) ---------------------
    Mutant(
        "member-epoch-off-by-one",
        CG,
        "            elif epoch != member.epoch and not (",
        "            elif epoch not in (member.epoch, member.epoch + 1) and not (",
        "a heartbeat one epoch ahead of the member's is accepted as its own (the epoch check off by one)",
        CONSUMER_GROUP,
    ),
    Mutant(
        "released-before-revocation",
        CG,
        "        if revoking and (owned is None or not owned.isdisjoint(revoking)):",
        "        if False:",
        "a member moves to the new epoch and its revoked partitions are freed before its client "
        "reports them revoked",
        CONSUMER_GROUP,
    ),
    Mutant(
        "assigned-before-previous-owner-revoked",
        CG,
        "owners[p][1] != NO_EPOCH",
        "owners[p][0] == member.member_id",
        "a partition still held by another member is assigned at once (Kafka's partition epoch "
        "check gone: IllegalStateException)",
        CONSUMER_GROUP,
    ),
    Mutant(
        "previous-epoch-with-superset",
        CG,
        "                if owned is None or not owned <= member.assigned:",
        "                if owned is None:",
        "the previous epoch is accepted even when the owned partitions are not a subset of the assignment",
        CONSUMER_GROUP,
    ),
    Mutant(
        "static-leave-as-leave",
        CG,
        "            if epoch == LEAVE:\n                self._fence(group, member)",
        "            if True:\n                self._fence(group, member)",
        "a static member's -2 (leave for now, keep the assignment) is handled as -1 (leave for good)",
        CONSUMER_GROUP,
    ),
    Mutant(
        "fenced-member-rejoins-with-old-epoch",
        CG,
        "            if epoch != JOIN:\n",
        "            if epoch < JOIN:\n",
        "a member the group removed (fenced) is let back in with its old epoch instead of UNKNOWN_MEMBER_ID",
        CONSUMER_GROUP,
    ),
    Mutant(
        "stale-epoch-commit-accepted",
        CG,
        "                error = Errors.NONE if commit_epoch == member.epoch else Errors.STALE_MEMBER_EPOCH",
        "                error = Errors.NONE if commit_epoch <= member.epoch else Errors.STALE_MEMBER_EPOCH",
        "exact rule: an OffsetCommit with an epoch older than the member's lands (a zombie's commit)",
        CONSUMER_GROUP,
    ),
    Mutant(
        "range-commit-below-assignment-epoch",
        CG,
        "                in_range = assigned_at is not None and assigned_at <= commit_epoch <= member.epoch",
        "                in_range = assigned_at is not None and commit_epoch <= member.epoch",
        "KIP-1251 rule: a commit older than the partition's assignment epoch lands",
        CONSUMER_GROUP,
    ),
    Mutant(
        "rebalance-timer-ignores-epoch",
        CG,
        "            and member.rebalance_deadline == member.epoch\n",
        "\n",
        "the rebalance timer fences a member that has since moved on to a newer epoch",
        CONSUMER_GROUP,
    ),
    Mutant(
        "epoch-kept-after-revocation",
        CG,
        "member.epoch + 1 if self.config.bump_after_revocation else member.epoch",
        "member.epoch",
        "the epoch is kept after a revocation even where the rule says bump (KAFKA-19974 applied to 4.1)",
        CONSUMER_GROUP,
    ),
    Mutant(
        "uniform-not-sticky",
        CG,
        "        kept[member_id] = frozenset(mine[:quota])",
        "        kept[member_id] = frozenset()",
        "the uniform assignor ignores the current target: partitions move needlessly",
        CONSUMER_GROUP,
    ),
    Mutant(
        "static-rejoin-always-in-place",
        CG,
        "(member.epoch == STATIC_LEAVE or not self.config.static_rejoin_in_place)",
        "member.epoch == STATIC_LEAVE",
        "an active static member's epoch-0 join is handled in place where Kafka 4.x answers "
        "UNRELEASED_INSTANCE_ID",
        CONSUMER_GROUP,
    ),
    Mutant(
        "empty-group-offsets-kept",
        CG,
        "        if not group.members and group.offsets:",
        "        if False:",
        "the offset-retention timer is never armed when a group loses its last member",
        CONSUMER_GROUP,
    ),
    Mutant(
        "older-controller-epoch-accepted",
        Z,
        "        if controller_epoch < self.controller_epoch:",
        "        if False:",
        "a broker obeys a request from an older controller epoch (a zombie controller)",
        ZK_BROKER,
    ),
    Mutant(
        "broker-epoch-unchecked",
        Z,
        "        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < self.broker_epoch:",
        "        if False:",
        "a request for an earlier incarnation of the broker is obeyed (KIP-380)",
        ZK_BROKER,
    ),
    Mutant(
        "controller-epoch-not-recorded",
        Z,
        "        self.controller_epoch = controller_epoch\n        return KafkaError.NONE",
        "        return KafkaError.NONE",
        "the broker never learns a newer controller epoch, so it cannot fence the older one",
        ZK_BROKER,
    ),
    Mutant(
        "older-leader-epoch-applied",
        Z,
        "            if state.leader_epoch < partition.leader_epoch:",
        "            if False:",
        "a LeaderAndIsr with an older leader epoch is applied",
        ZK_BROKER,
    ),
    Mutant(
        "equal-leader-epoch-applied",
        Z,
        "            elif state.leader_epoch == partition.leader_epoch:",
        "            elif False:",
        "a LeaderAndIsr with the leader epoch the broker has is applied again (ZooKeeper mode ignores it)",
        ZK_BROKER,
    ),
    Mutant(
        "non-replica-becomes-follower",
        Z,
        "            elif self.broker_id not in state.replicas:",
        "            elif False:",
        "a broker left out of the assignment obeys a LeaderAndIsr for the partition",
        ZK_BROKER,
    ),
    Mutant(
        "deleted-partition-keeps-epoch",
        Z,
        "                self.partitions.pop(partition_id, None)",
        "                self.partitions.get(partition_id)",
        "StopReplica with delete leaves the partition (and its leader epoch) hosted",
        ZK_BROKER,
    ),
)

SUITES = ("log", PARTITION, COORDINATOR, CONTROLLER, CONSUMER_GROUP, ZK_BROKER)

CONFORMANCE_SUITES = {
    CONSUMER_GROUP: "consumer-group-exhaustive,consumer-group-machine",
    "log": "log",
    PARTITION: "exhaustive,partition",
    COORDINATOR: "coordinator-exhaustive,coordinator-machine",
    CONTROLLER: "controller-exhaustive,controller-machine",
    ZK_BROKER: "zk-broker-exhaustive,zk-broker-machine",
}
"""The conformance suites run for each kind of mutant, in order, until one detects it: the
replication mutants first meet the exhaustive suite (deterministic, every spec state within
its depth), then the random partition machine (deeper, sampled); the coordinator mutants
likewise the coordinator's exhaustive suite, then its random machine, the KRaft controller
mutants the controller's, and the ZooKeeper-era broker mutants (`impl/zk_broker.py`) the
zk-broker suites."""

CHILD = """
import json, sys
import impl
from conformance.run import run_conformance
expected = sys.argv[1]
if not impl.__file__.startswith(expected):
    raise SystemExit(f"impl imported from {impl.__file__}, not the mutated copy in {expected}")
for suite in sys.argv[4].split(","):
    result = run_conformance("impl", int(sys.argv[2]), seed=int(sys.argv[3]), suite=suite, shrink=False)
    if not result.passed:
        break
lines = (result.failure or "").strip().splitlines()
print(json.dumps({"passed": result.passed, "why": f"{suite}: {lines[-1]}" if lines else ""}))
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the conformance run said about one mutant."""

    name: str
    detected: bool
    how: str
    seconds: float


def mutate(scratch: Path, mutant: Mutant | None) -> Path:
    """A copy of impl/ under `scratch` with `mutant` applied; fails loudly if it does not apply."""
    root = scratch / (mutant.name if mutant else "unmutated")
    shutil.copytree(REPO / "impl", root / "impl", ignore=shutil.ignore_patterns("__pycache__"))
    if mutant is not None:
        path = root / "impl" / mutant.file
        text = path.read_text(encoding="utf-8")
        count = text.count(mutant.old)
        if count != 1:
            raise SystemExit(
                f"mutant {mutant.name}: pattern occurs {count} times in impl/{mutant.file}: {mutant.old!r}"
            )
        path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
    return root


def run_one(root: Path, name: str, examples: int, seed: int, suite: str = "log") -> Outcome:
    """Run the conformance `suite` with `root` first on PYTHONPATH."""
    # the interpreted spec, as the test suite runs it (see the module's docstring)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(REPO)]), KAFKASPEC_NATIVE="0")
    suites = CONFORMANCE_SUITES[suite]
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            [sys.executable, "-c", CHILD, str(root / "impl"), str(examples), str(seed), suites],
            capture_output=True,
            text=True,
            env=environment,
            timeout=TIMEOUT_SECONDS,
            check=False,
            cwd=root,
        )
    except subprocess.TimeoutExpired:
        return Outcome(name, True, f"timeout after {TIMEOUT_SECONDS}s", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    if "not the mutated copy" in completed.stderr:
        raise SystemExit(completed.stderr.strip())
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["(no output)"])[-1]
        return Outcome(name, True, f"error: {last[:100]}", seconds)
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    return Outcome(name, not report["passed"], str(report["why"])[:100], seconds)


def main(argv: list[str] | None = None) -> int:
    """Run every mutant and print the table; exit 1 when a mutant survives."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=None, help="mutant names to run")
    parser.add_argument("--suite", choices=SUITES, default=None, help="only the mutants this suite covers")
    arguments = parser.parse_args(argv)
    chosen = [
        mutant
        for mutant in MUTANTS
        if (arguments.only is None or mutant.name in arguments.only)
        and (arguments.suite is None or mutant.suite == arguments.suite)
    ]
    if not chosen:
        parser.error("no mutant matches --only/--suite")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kafkaspec-mutants-") as scratch_name:
        scratch = Path(scratch_name)
        roots = [mutate(scratch, mutant) for mutant in chosen]  # every pattern checked up front
        unmutated = mutate(scratch, None)
        for suite in sorted({mutant.suite for mutant in chosen}):
            baseline = run_one(unmutated, "unmutated", arguments.examples, arguments.seed, suite)
            if baseline.detected:
                print(f"the unmutated impl does not conform to the {suite} suite: {baseline.how}")
                return 2
        with ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
            outcomes = list(
                pool.map(
                    lambda pair: run_one(
                        pair[1], pair[0].name, arguments.examples, arguments.seed, pair[0].suite
                    ),
                    zip(chosen, roots, strict=True),
                )
            )
    width = max(len(mutant.name) for mutant in chosen)
    print(f"conformance run per mutant: target impl, {arguments.examples} examples, seed {arguments.seed}")
    print(f"{'mutant':<{width}}  {'suite':<9}  detected  seconds  how")
    for mutant, outcome in zip(chosen, outcomes, strict=True):
        verdict = "yes" if outcome.detected else "NO"
        print(
            f"{mutant.name:<{width}}  {mutant.suite:<9}  {verdict:<8}  {outcome.seconds:7.1f}  {outcome.how}"
        )
    for suite in SUITES:
        in_suite = [
            outcome for mutant, outcome in zip(chosen, outcomes, strict=True) if mutant.suite == suite
        ]
        if in_suite:
            found = sum(outcome.detected for outcome in in_suite)
            print(f"{suite} suite: detected {found}/{len(in_suite)}")
    detected = sum(outcome.detected for outcome in outcomes)
    elapsed = time.perf_counter() - started
    print(f"detected {detected}/{len(outcomes)} (target: all of them); {elapsed:.0f}s in all")
    return 0 if detected == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
