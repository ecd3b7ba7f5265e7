"""Replication of one partition on R brokers, built for speed: logs, ISR, HW, acks, elections.

What it is
    The optimized counterpart of the replication spec (`spec.partition`): one partition in
    the ZooKeeper-controller era, replicated on brokers 0..R-1, driven one protocol step at
    a time. Each public method is one spec action and returns False, changing nothing,
    exactly when the spec's guard refuses the action:

        produce                          ProducerSend (`Partition.appendRecordsToLeader`)
        leader_handle_fetch              LeaderHandleFetch (`Partition.fetchRecords`,
                                         `maybeExpandIsr`, `maybeIncrementLeaderHW`)
        follower_handle_fetch_response   FollowerHandleFetchResponse (`ReplicaFetcherThread`)
        follower_truncate                FollowerTruncate (KIP-101/279 OffsetsForLeaderEpoch,
                                         or the pre-0.11 truncate-to-HW rule)
        leader_shrink_isr                LeaderShrinkIsr (`Partition.maybeShrinkIsr`,
                                         `replica.lag.time.max.ms` in logical ticks)
        clock_tick                       ClockTick
        controller_move_leadership       ControllerMoveLeadership (preferred/reassignment election)
        broker_crash / broker_restart    BrokerCrash / BrokerRestart (with the controller's
                                         `onBrokerFailure`/`onBrokerStartup` folded in: clean
                                         election from the ISR, unclean when
                                         `unclean.leader.election.enable`)
        become_leader_or_follower        ReplicaBecomeLeaderOrFollower (LeaderAndIsr; the new
                                         leader records its epoch at its LEO, KAFKA-7415)
        advance_log_start_offset         LeaderAdvanceLogStartOffset (retention, DeleteRecords)

    Fetches are fenced by leader epoch (KIP-320): a leader on another epoch than the
    follower does not answer, and a response from another epoch is dropped.

Why it is fast (and the spec is not)
    The spec rebuilds frozen tuples on every step, so an append costs O(log length). Here
    every replica's log is a Python list (appends O(1), truncation O(records removed),
    retention O(1) amortized: deleted records are compacted away in bulk), the leader keeps
    per follower its log end offset and the tick it was last caught up (one global logical
    clock, so a tick never touches per-follower state), and acks=all produces wait in a
    deque ordered by offset: when the HW moves, completion pops from the front and never
    scans the ones still waiting. A fetch therefore costs O(R) for the HW rule (Kafka's
    `maybeIncrementLeaderHW` also looks at every replica), O(1) amortized for the waiting
    produces and O(records returned) for the copy: nothing depends on the log's length.

What is abstracted (as in the spec)
    LeaderAndIsr propagation is "apply the controller's newest state"; each follower has at
    most one fetch in flight and a fetch returns everything from the fetch offset; a crash
    keeps the log below `surviving_end` and forgets every in-memory structure.

This module reimplements the rules; it imports only the plain data of `spec.types`
(`tests/test_layout.py` enforces it), so comparing it with the spec means something.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from impl.epoch_cache import LeaderEpochCache
from spec.types import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    Acks,
    EpochEntry,
    ErrorCode,
    Record,
    ReplicaId,
    TruncationRule,
)

COMPACTION_MIN_RECORDS = 1024
"""Retention leaves deleted records at the front of a log's list until at least this many
(and at least as many as remain) can be dropped at once: O(1) amortized per deleted record."""


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    """The Kafka settings that shape replication behaviour (names in the comments)."""

    replication_factor: int = 3  # replicas on brokers 0..R-1; broker 0 leads first
    min_insync_replicas: int = 2  # min.insync.replicas
    unclean_leader_election: bool = False  # unclean.leader.election.enable
    truncation: TruncationRule = TruncationRule.LEADER_EPOCH  # epoch (KIP-101/279) or hw (pre-0.11)
    replica_lag_ticks: int = 0  # replica.lag.time.max.ms in logical clock ticks

    def __post_init__(self) -> None:
        if self.replication_factor < 1:
            raise ValueError(f"replication_factor must be at least 1, got {self.replication_factor}")
        if self.replica_lag_ticks < 0:
            raise ValueError(f"replica_lag_ticks must not be negative, got {self.replica_lag_ticks}")


# ---------------------------------------------------------------------------------------
# One replica's log, in memory
# ---------------------------------------------------------------------------------------


class MemoryLog:
    """A replica's log: records from the log start offset to the LEO, HW and epoch cache.

    Records live in a list whose first element is at offset `_base`; retention moves the
    log start offset up without moving the list until enough deleted records pile up.
    """

    __slots__ = ("_base", "_records", "epoch_cache", "high_watermark", "log_start_offset")

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._base = 0  # offset of _records[0]; at or below log_start_offset
        self.log_start_offset = 0
        self.high_watermark = 0
        self.epoch_cache = LeaderEpochCache()

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self._base + len(self._records)

    def records(self) -> tuple[Record, ...]:
        """Every record held, from the log start offset (O(n): for observation only)."""
        return tuple(self._records[self.log_start_offset - self._base :])

    def record_at(self, offset: int) -> Record | None:
        """The record at `offset`, or None when the log does not hold it."""
        if self.log_start_offset <= offset < self.log_end_offset:
            return self._records[offset - self._base]
        return None

    def records_from(self, offset: int) -> list[Record]:
        """The records from `offset` to the log end (what a fetch at `offset` returns)."""
        return self._records[max(offset, self.log_start_offset) - self._base :]

    def records_between(self, start: int, end: int) -> list[Record]:
        """The records in [start, end), clamped to what the log holds."""
        first = max(start, self.log_start_offset) - self._base
        return self._records[first : max(first, min(end, self.log_end_offset) - self._base)]

    def epoch_start_offset(self, epoch: int) -> int | None:
        """The first offset of `epoch`, if the epoch cache has it."""
        for entry in self.epoch_cache.entries:
            if entry.epoch == epoch:
                return entry.start_offset
        return None

    def append_one(self, record: Record) -> None:
        """Append one record, recording its epoch when it is new (`LeaderEpochFileCache.assign`)."""
        if record.epoch != self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(record.epoch, self.log_end_offset)
        self._records.append(record)

    def append(self, records: Sequence[Record]) -> None:
        """Append a fetched batch; each epoch change inside it is recorded in the cache."""
        cache = self.epoch_cache
        latest = cache.latest_epoch
        offset = self.log_end_offset
        for record in records:
            if record.epoch != latest:
                cache.assign(record.epoch, offset)
                latest = record.epoch
            offset += 1
        self._records.extend(records)

    def set_high_watermark(self, high_watermark: int) -> None:
        """Set the HW clamped to [log start, LEO] (`updateHighWatermark`)."""
        self.high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or above `offset` (`UnifiedLog.truncateTo`).

        The HW drops to the new end if it was above, and the epoch cache forgets epochs
        starting at or after it, even when nothing is removed (an epoch a leader assigned
        at its LEO without writing a record is forgotten).
        """
        end = max(min(offset, self.log_end_offset), self.log_start_offset)
        del self._records[end - self._base :]
        self.high_watermark = min(self.high_watermark, end)
        self.epoch_cache.truncate_from_end(end)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Wipe the log and restart it empty at `offset` (`truncateFullyAndStartAt`)."""
        self._records = []
        self._base = self.log_start_offset = self.high_watermark = offset
        self.epoch_cache.clear()

    def advance_log_start_offset(self, new_start: int) -> None:
        """Delete records below `new_start`, never at or above the HW (`maybeIncrementLogStartOffset`)."""
        target = min(new_start, self.high_watermark)
        if target <= self.log_start_offset:
            return
        self.log_start_offset = target
        self.epoch_cache.truncate_from_start(target)
        deleted = target - self._base
        if deleted >= COMPACTION_MIN_RECORDS and deleted >= len(self._records) - deleted:
            del self._records[:deleted]
            self._base = target


# ---------------------------------------------------------------------------------------
# Replica and controller state
# ---------------------------------------------------------------------------------------


class Role(enum.Enum):
    """What a broker believes its replica is."""

    LEADER = "leader"
    FOLLOWER = "follower"
    UNKNOWN = "unknown"  # restarted, has not applied a LeaderAndIsr yet


class FetchPhase(enum.Enum):
    """A follower's fetcher state (`AbstractFetcherThread`: Truncating, then Fetching)."""

    TRUNCATING = "truncating"
    FETCHING = "fetching"


class FollowerProgress:
    """The leader's view of one follower (Kafka's `Replica` on the leader)."""

    __slots__ = ("caught_up_tick", "log_end_offset")

    def __init__(self, log_end_offset: int | None, caught_up_tick: int) -> None:
        self.log_end_offset = log_end_offset  # its last fetch offset; None until it fetched in this epoch
        self.caught_up_tick = caught_up_tick  # the clock reading when it was last caught up


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """A fetch response on its way from the leader to a follower."""

    leader_epoch: int  # the epoch it was answered in: a follower on another epoch drops it
    error: ErrorCode  # NONE or OFFSET_OUT_OF_RANGE
    fetch_offset: int
    records: Sequence[Record]  # a copy owned by the response
    leader_high_watermark: int
    leader_log_start_offset: int
    leader_log_end_offset: int


class ReplicaState:
    """One broker's replica: its disk (`log`) and its memory (everything else)."""

    __slots__ = (
        "alive",
        "fetch_in_flight",
        "isr",
        "leader",
        "leader_epoch",
        "log",
        "phase",
        "progress",
        "role",
        "waiting_acks_all",
    )

    def __init__(self) -> None:
        self.alive = True
        self.log = MemoryLog()
        self.fetch_in_flight: FetchResponse | None = None  # follower only
        self.waiting_acks_all: deque[tuple[int, int]] = deque()  # leader only: (offset, value), by offset
        self.forget_memory()

    def forget_memory(self) -> None:
        """Drop every in-memory structure (a crash, or a LeaderAndIsr that rebuilds it)."""
        self.leader_epoch = UNDEFINED_EPOCH  # epoch of the newest LeaderAndIsr applied
        self.role = Role.UNKNOWN
        self.leader: ReplicaId | None = None  # whom it follows (itself when leader)
        self.isr: set[ReplicaId] = set()  # the leader's cached ISR
        self.phase = FetchPhase.TRUNCATING
        self.progress: list[FollowerProgress | None] = []  # leader only, indexed by replica id
        self.waiting_acks_all = deque()  # a new deque: a re-elected leader keeps the old one
        self.fetch_in_flight = None

    @property
    def acts_as_leader(self) -> bool:
        """Alive and believes it leads (possibly a zombie on an old epoch)."""
        return self.alive and self.role is Role.LEADER


@dataclass(slots=True)
class ControllerState:
    """The partition state the controller keeps in ZooKeeper (`LeaderIsrAndControllerEpoch`)."""

    leader: ReplicaId | None  # None: no eligible replica is alive (offline)
    leader_epoch: int  # bumped by every election and every ISR removal the controller makes
    isr: frozenset[ReplicaId]  # never empty: the last member stays even when it dies
    elections_moved: int = 0


@dataclass(frozen=True, slots=True)
class ProduceResult:
    """What a producer is told at once: an error, or the offset its record got.

    `completed` is True for acks=0/1 and for a refusal. An appended acks=all write is not
    completed: its acknowledgement shows in `ReplicatedPartition.acknowledged` when the HW
    passes it (possibly already in the same call, with an ISR of the leader alone).
    """

    error: ErrorCode  # NONE or NOT_ENOUGH_REPLICAS
    offset: int | None
    completed: bool


# ---------------------------------------------------------------------------------------
# Leader-epoch truncation (KIP-101 + KIP-279), reimplemented on LeaderEpochCache
# ---------------------------------------------------------------------------------------


def epoch_truncation_offset(
    follower_entries: tuple[EpochEntry, ...],
    follower_log_end_offset: int,
    follower_high_watermark: int,
    leader_cache: LeaderEpochCache,
    leader_log_end_offset: int,
) -> int:
    """Where a follower truncates: the OffsetsForLeaderEpoch exchange run to completion.

    Each round asks the leader for the follower's latest epoch. When the leader answers an
    older epoch that the follower's cache does not end at the same place (KIP-279), the
    follower cuts back to where its own copy of that epoch ends, forgets the newer epochs
    and asks again. No epoch at all on either side falls back to the high watermark.
    """
    cache = LeaderEpochCache(follower_entries)  # a scratch copy, trimmed between rounds
    end = follower_log_end_offset
    for _ in range(len(follower_entries) + 1):
        requested = cache.latest_epoch
        if requested == UNDEFINED_EPOCH:
            return min(follower_high_watermark, end)
        leader_epoch, leader_end = leader_cache.end_offset_for(requested, leader_log_end_offset)
        if leader_end == UNDEFINED_EPOCH_OFFSET:
            return min(follower_high_watermark, end)  # the leader knows no epoch (old format)
        if leader_epoch == UNDEFINED_EPOCH:
            return min(leader_end, end)
        follower_epoch, follower_end = cache.end_offset_for(leader_epoch, end)
        if follower_end == UNDEFINED_EPOCH_OFFSET:
            return min(leader_end, end)  # nothing as old as the leader's epoch here
        if follower_epoch != leader_epoch:
            end = min(follower_end, end)  # KIP-279: another round with an older epoch
            cache.truncate_from_end(end)
            continue
        return min(leader_end, follower_end, end)
    return end


# ---------------------------------------------------------------------------------------
# The partition
# ---------------------------------------------------------------------------------------


class ReplicatedPartition:
    """One partition on `config.replication_factor` brokers, in the spec's initial state:
    all logs empty, broker 0 leads epoch 0 with every replica in the ISR, every broker has
    applied that LeaderAndIsr and followers fetch at once (an empty log has nothing to
    truncate)."""

    def __init__(self, config: ReplicationConfig) -> None:
        self.config = config
        self.replica_ids = range(config.replication_factor)
        self._lag_cap = config.replica_lag_ticks + 1  # only "lagging or not" matters past the limit
        self._clock = 0  # logical time, shared by every leader's lag tracking
        self.replicas = [ReplicaState() for _ in self.replica_ids]
        self.controller = ControllerState(leader=0, leader_epoch=0, isr=frozenset(self.replica_ids))
        self.acknowledged: list[tuple[int, int]] = []  # (offset, value) acknowledged, in order
        for replica_id in self.replica_ids:
            self.become_leader_or_follower(replica_id)
        for replica in self.replicas:
            if replica.role is Role.FOLLOWER:
                replica.phase = FetchPhase.FETCHING

    # -- helpers ------------------------------------------------------------------------

    def _are_replicas(self, *replica_ids: ReplicaId) -> bool:
        """Every id names a broker of the assignment (an action naming another is refused)."""
        count = self.config.replication_factor
        return all(0 <= replica_id < count for replica_id in replica_ids)

    def _live_follower_in(self, follower_id: ReplicaId, phase: FetchPhase) -> ReplicaState | None:
        """The replica if it is a live follower of the assignment in fetcher `phase`, else None."""
        if not self._are_replicas(follower_id):
            return None
        follower = self.replicas[follower_id]
        if not follower.alive or follower.role is not Role.FOLLOWER or follower.phase is not phase:
            return None
        return follower

    def _is_true_leader(self, replica_id: ReplicaId) -> bool:
        """The controller's leader, acting in the controller's epoch: only it can write the
        ISR to ZooKeeper (the zkVersion check fails for anyone else)."""
        controller = self.controller
        if controller.leader != replica_id:
            return False
        replica = self.replicas[replica_id]
        return replica.acts_as_leader and replica.leader_epoch == controller.leader_epoch

    def _ticks_since_caught_up(self, progress: FollowerProgress) -> int:
        return min(self._clock - progress.caught_up_tick, self._lag_cap)

    def _set_ticks_since_caught_up(self, progress: FollowerProgress, ticks: int) -> None:
        progress.caught_up_tick = self._clock - ticks

    def _write_isr(self, leader: ReplicaState) -> None:
        """The true leader's ISR change goes to ZooKeeper with the leader epoch unchanged."""
        self.controller.isr = frozenset(leader.isr)

    def _advance_high_watermark(self, leader_id: ReplicaId) -> None:
        """HW := max(HW, min LEO over the ISR), blocked while an ISR follower's LEO is
        unknown in this epoch; then answer the acks=all produces the HW passed."""
        leader = self.replicas[leader_id]
        log = leader.log
        candidate = log.log_end_offset
        progress = leader.progress
        for member in leader.isr:
            if member != leader_id:
                follower = progress[member]  # never None: only the leader's own entry is
                follower_end = None if follower is None else follower.log_end_offset
                if follower_end is None:
                    candidate = -1  # unknown LEO: the HW cannot move
                    break
                candidate = min(candidate, follower_end)
        if candidate > log.high_watermark:
            log.set_high_watermark(candidate)
        if leader.waiting_acks_all:
            self._complete_waiting_produces(leader)

    def _complete_waiting_produces(self, leader: ReplicaState) -> None:
        """Pop every waiting acks=all produce below the HW (`checkEnoughReplicasReachOffset`):
        acknowledged when the ISR has `min.insync.replicas` members, else answered
        NOT_ENOUGH_REPLICAS_AFTER_APPEND (the record stays, unacknowledged)."""
        waiting = leader.waiting_acks_all
        high_watermark = leader.log.high_watermark
        enough_replicas = len(leader.isr) >= self.config.min_insync_replicas
        while waiting and waiting[0][0] < high_watermark:
            offset_and_value = waiting.popleft()
            if enough_replicas:
                self.acknowledged.append(offset_and_value)

    def _elect_offline_leader(
        self, isr: frozenset[ReplicaId]
    ) -> tuple[ReplicaId | None, frozenset[ReplicaId], bool]:
        """`OfflinePartitionLeaderElectionStrategy`: the first live ISR member in assignment
        order; else, with unclean election, the first live replica with ISR := {it}.
        Returns (leader or None, ISR, unclean?)."""
        for candidate in self.replica_ids:
            if candidate in isr and self.replicas[candidate].alive:
                return candidate, isr, False
        if self.config.unclean_leader_election:
            for candidate in self.replica_ids:
                if self.replicas[candidate].alive:
                    return candidate, frozenset({candidate}), True
        return None, isr, False

    # -- actions --------------------------------------------------------------------------

    def produce(self, leader_id: ReplicaId, acks: Acks, value: int) -> ProduceResult | None:
        """Append `value` through a replica acting as leader; None when it does not.

        acks=all is refused with NOT_ENOUGH_REPLICAS (nothing appended) while the leader's
        ISR is smaller than `min.insync.replicas`. A zombie leader accepts writes too.
        """
        if not self._are_replicas(leader_id):
            return None
        leader = self.replicas[leader_id]
        if not leader.acts_as_leader:
            return None
        if acks is Acks.ALL and len(leader.isr) < self.config.min_insync_replicas:
            return ProduceResult(ErrorCode.NOT_ENOUGH_REPLICAS, None, True)
        offset = leader.log.log_end_offset
        leader.log.append_one(Record(leader.leader_epoch, value))
        if acks is Acks.LEADER:
            self.acknowledged.append((offset, value))
        elif acks is Acks.ALL:
            leader.waiting_acks_all.append((offset, value))
        self._advance_high_watermark(leader_id)
        return ProduceResult(ErrorCode.NONE, offset, acks is not Acks.ALL)

    def leader_handle_fetch(self, follower_id: ReplicaId) -> bool:
        """The follower's leader answers its fetch at the follower's LEO (KIP-320 fenced).

        Out of the leader's range: OFFSET_OUT_OF_RANGE, the leader unchanged. Otherwise the
        leader records the follower's LEO, resets its lag when it reached the leader's LEO,
        admits it to the ISR once it reached the HW and the epoch start (true leader only),
        advances the HW and answers the records from the fetch offset.
        """
        follower = self._live_follower_in(follower_id, FetchPhase.FETCHING)
        if follower is None:
            return False
        leader_id = follower.leader
        if follower.fetch_in_flight is not None or leader_id is None:
            return False
        leader = self.replicas[leader_id]
        if not leader.acts_as_leader or leader.leader_epoch != follower.leader_epoch:
            return False
        log = leader.log
        fetch_offset = follower.log.log_end_offset
        if fetch_offset > log.log_end_offset or fetch_offset < log.log_start_offset:
            follower.fetch_in_flight = FetchResponse(
                leader.leader_epoch,
                ErrorCode.OFFSET_OUT_OF_RANGE,
                fetch_offset,
                (),
                log.high_watermark,
                log.log_start_offset,
                log.log_end_offset,
            )
            return True
        progress = leader.progress[follower_id]
        assert progress is not None
        in_isr = follower_id in leader.isr
        if fetch_offset >= log.log_end_offset:
            self._set_ticks_since_caught_up(progress, 0)
        elif not in_isr:
            self._set_ticks_since_caught_up(progress, self._lag_cap)
        progress.log_end_offset = fetch_offset
        if not in_isr and self._is_true_leader(leader_id):
            epoch_start = log.epoch_start_offset(leader.leader_epoch) or 0
            if fetch_offset >= log.high_watermark and fetch_offset >= epoch_start:
                leader.isr.add(follower_id)
                self._write_isr(leader)
        self._advance_high_watermark(leader_id)
        follower.fetch_in_flight = FetchResponse(
            leader.leader_epoch,
            ErrorCode.NONE,
            fetch_offset,
            log.records_from(fetch_offset),
            log.high_watermark,
            log.log_start_offset,
            log.log_end_offset,
        )
        return True

    def follower_handle_fetch_response(self, follower_id: ReplicaId) -> bool:
        """The follower processes its response: dropped if from another epoch (or while it
        truncates); OFFSET_OUT_OF_RANGE cuts back to the leader's end or restarts the log at
        the leader's start; otherwise append, HW := min(leader HW, own LEO), and follow the
        leader's log start offset."""
        if not self._are_replicas(follower_id):
            return False
        follower = self.replicas[follower_id]
        response = follower.fetch_in_flight
        if not follower.alive or response is None:
            return False
        follower.fetch_in_flight = None
        if response.leader_epoch != follower.leader_epoch or follower.phase is not FetchPhase.FETCHING:
            return True
        log = follower.log
        if response.error is ErrorCode.OFFSET_OUT_OF_RANGE:
            if log.log_end_offset > response.leader_log_end_offset:
                log.truncate_to(response.leader_log_end_offset)
            else:
                log.truncate_fully_and_start_at(response.leader_log_start_offset)
            return True
        log.append(response.records)
        log.set_high_watermark(min(response.leader_high_watermark, log.log_end_offset))
        log.advance_log_start_offset(response.leader_log_start_offset)
        return True

    def follower_truncate(self, follower_id: ReplicaId) -> bool:
        """A follower in a new epoch removes the suffix its leader may not share, then fetches.

        `hw` rule: to its own HW. `epoch` rule: OffsetsForLeaderEpoch with a leader on the
        follower's epoch (KIP-320: any other leader refuses, and the action waits).
        """
        follower = self._live_follower_in(follower_id, FetchPhase.TRUNCATING)
        if follower is None:
            return False
        if follower.leader is None:
            return False
        log = follower.log
        if self.config.truncation is TruncationRule.HIGH_WATERMARK:
            offset = min(log.high_watermark, log.log_end_offset)
        else:
            leader = self.replicas[follower.leader]
            if not leader.acts_as_leader or leader.leader_epoch != follower.leader_epoch:
                return False
            offset = epoch_truncation_offset(
                log.epoch_cache.entries,
                log.log_end_offset,
                log.high_watermark,
                leader.log.epoch_cache,
                leader.log.log_end_offset,
            )
        log.truncate_to(offset)
        follower.phase = FetchPhase.FETCHING
        return True

    def leader_shrink_isr(self, leader_id: ReplicaId, follower_id: ReplicaId) -> bool:
        """The true leader drops a follower that is below its LEO and has not been caught
        up for more than `replica.lag.time.max.ms`; the HW may then advance."""
        if not self._are_replicas(leader_id, follower_id):
            return False
        if leader_id == follower_id or not self._is_true_leader(leader_id):
            return False
        leader = self.replicas[leader_id]
        if follower_id not in leader.isr:
            return False
        progress = leader.progress[follower_id]
        assert progress is not None
        if progress.log_end_offset == leader.log.log_end_offset:
            return False  # caught up right now
        if self._ticks_since_caught_up(progress) <= self.config.replica_lag_ticks:
            return False  # caught up recently enough
        self._set_ticks_since_caught_up(progress, self._lag_cap)
        leader.isr.discard(follower_id)
        self._write_isr(leader)
        self._advance_high_watermark(leader_id)
        return True

    def clock_tick(self) -> bool:
        """One tick of logical time for every acting leader's lag tracking; enabled only
        while some ISR follower's age can still grow (ages are capped past the limit)."""
        for replica_id, replica in enumerate(self.replicas):
            if not replica.acts_as_leader:
                continue
            for member in replica.isr:
                progress = replica.progress[member]
                if member != replica_id and progress is not None and self._can_age(progress):
                    self._clock += 1
                    return True
        return False

    def _can_age(self, progress: FollowerProgress) -> bool:
        return self._ticks_since_caught_up(progress) < self._lag_cap

    def controller_move_leadership(self, new_leader: ReplicaId) -> bool:
        """A clean election without a failure (preferred replica, reassignment, controlled
        shutdown): a live ISR member other than the leader leads a new epoch."""
        if not self._are_replicas(new_leader):
            return False
        controller = self.controller
        if new_leader == controller.leader or new_leader not in controller.isr:
            return False
        if not self.replicas[new_leader].alive:
            return False
        controller.leader = new_leader
        controller.leader_epoch += 1
        controller.elections_moved += 1
        return True

    def broker_crash(self, replica_id: ReplicaId, surviving_end: int) -> bool:
        """A broker dies keeping offsets below `surviving_end` on disk. The controller
        removes it from the ISR (unless it is the last member) and, if it led, elects the
        first live ISR member, or with unclean election the first live replica, or nobody;
        any change bumps the leader epoch."""
        if not self._are_replicas(replica_id):
            return False
        replica = self.replicas[replica_id]
        log = replica.log
        if not replica.alive or not 0 <= surviving_end <= log.log_end_offset:
            return False
        if surviving_end < log.log_start_offset:
            return False
        log.truncate_to(surviving_end)
        replica.alive = False
        replica.forget_memory()
        controller = self.controller
        isr = controller.isr - {replica_id} if len(controller.isr) > 1 else controller.isr
        leader = controller.leader
        if leader == replica_id:
            leader, isr, _unclean = self._elect_offline_leader(isr)
        if leader != controller.leader or isr != controller.isr:
            controller.leader = leader
            controller.isr = isr
            controller.leader_epoch += 1
        return True

    def broker_restart(self, replica_id: ReplicaId) -> bool:
        """A dead broker starts with what its disk kept. An offline partition gets it as
        leader when it is in the ISR, or (unclean election) even when it is not."""
        if not self._are_replicas(replica_id):
            return False
        replica = self.replicas[replica_id]
        if replica.alive:
            return False
        replica.alive = True
        controller = self.controller
        if controller.leader is not None:
            return True
        if replica_id in controller.isr:
            controller.leader = replica_id
            controller.leader_epoch += 1
        elif self.config.unclean_leader_election:
            controller.leader = replica_id
            controller.isr = frozenset({replica_id})
            controller.leader_epoch += 1
        return True

    def become_leader_or_follower(self, replica_id: ReplicaId) -> bool:
        """The broker applies the controller's newest LeaderAndIsr (only a newer epoch).

        A new leader records its epoch at its LEO (KAFKA-7415), forgets what it knew of
        followers (KIP-320), keeps its HW (and its waiting produces if it already led) and
        advances the HW if it can. A follower drops its fetch in flight, and a demoted
        leader its waiting produces; it truncates before fetching.
        """
        if not self._are_replicas(replica_id):
            return False
        replica = self.replicas[replica_id]
        controller = self.controller
        if not replica.alive or replica.leader_epoch >= controller.leader_epoch:
            return False
        if controller.leader != replica_id:
            replica.forget_memory()
            replica.leader_epoch = controller.leader_epoch
            replica.role = Role.FOLLOWER
            replica.leader = controller.leader
            return True
        was_leader = replica.role is Role.LEADER
        waiting = replica.waiting_acks_all
        replica.forget_memory()
        if was_leader:
            replica.waiting_acks_all = waiting
        replica.log.epoch_cache.assign(controller.leader_epoch, replica.log.log_end_offset)
        replica.leader_epoch = controller.leader_epoch
        replica.role = Role.LEADER
        replica.leader = replica_id
        replica.isr = set(controller.isr)
        replica.phase = FetchPhase.FETCHING
        replica.progress = [
            None
            if member == replica_id
            else FollowerProgress(None, self._clock - (0 if member in controller.isr else self._lag_cap))
            for member in self.replica_ids
        ]
        self._advance_high_watermark(replica_id)
        return True

    def advance_log_start_offset(self, leader_id: ReplicaId, new_start: int) -> bool:
        """Retention (`retention.ms`/`retention.bytes`) or DeleteRecords on a replica acting
        as leader: records below `new_start` go; never at or above the HW."""
        if not self._are_replicas(leader_id):
            return False
        leader = self.replicas[leader_id]
        if not leader.acts_as_leader:
            return False
        log = leader.log
        if not log.log_start_offset < new_start <= log.high_watermark:
            return False
        log.advance_log_start_offset(new_start)
        return True

    # -- reads ----------------------------------------------------------------------------

    def consumer_fetch(self, replica_id: ReplicaId, offset: int) -> list[Record]:
        """What a consumer fetching from `offset` reads on `replica_id`: records below its HW."""
        log = self.replicas[replica_id].log
        return log.records_between(offset, log.high_watermark)
