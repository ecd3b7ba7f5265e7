"""One partition replicated on R brokers: produce, replicate, commit, fail, elect, truncate.

What it is
    The state machine of a single Kafka partition in the ZooKeeper-controller era, the
    setting of KIP-101/279/320. It composes the replica log (`spec.log`), the ISR and high
    watermark rules (`spec.isr`) and follower truncation (`spec.truncation`) with a
    placeholder controller (the full controller is its own spec). Every action is a pure
    function `PartitionState -> PartitionState | None`: None means "not enabled here".
    All non-determinism is in which action is chosen and in its explicit parameters.

Actions (names follow the TLA+ specs: actor, then verb)
    ProducerSend                  a producer appends one record through a replica that acts as leader
    LeaderHandleFetch             the leader answers a follower's fetch (updates its LEO, ISR, HW)
    FollowerHandleFetchResponse   the follower appends what it fetched and adopts the leader's HW
    FollowerTruncate              a new follower removes its unconfirmed suffix (rules: `truncation`,
                                  `follower_high_watermark`)
    LeaderShrinkIsr               the leader drops a follower that lagged `replica.lag.time.max.ms`
    ClockTick                     time passes (followers' lag ages grow)
    ControllerMoveLeadership      preferred / reassignment / controlled-shutdown election (clean)
    BrokerCrash                   a broker dies, possibly losing its unflushed suffix; the
                                  controller sees it at once (ZooKeeper session expiry folded in),
                                  removes it from the ISR and elects a new leader if needed
    BrokerRestart                 the broker comes back with what its disk kept; the controller
                                  elects it if the partition is offline and it is eligible
    ReplicaBecomeLeaderOrFollower a broker applies the controller's newest LeaderAndIsr
    LeaderAdvanceLogStartOffset   retention deletes the oldest records (only with `retention`)

Rules
    Where Kafka's protocol changed (KIP-101, KIP-279, KIP-320, KAFKA-7128, KAFKA-14704), the
    actions read the rule from the configuration by name (`spec.replication_rules` says what
    each rule is and which KIP or JIRA introduced it); the defaults are today's rules.

What is abstracted
    LeaderAndIsr propagation is "apply the controller's newest state" (Kafka brokers ignore
    stale requests, so only the newest matters); a replica may lag behind it, which is how
    zombie leaders arise. Each follower has at most one fetch in flight; a fetch returns
    everything from the fetch offset. The high-watermark checkpoint is current at a crash
    (a lagging checkpoint only makes the legacy rule lose more).

Ghost state
    `History` is not part of Kafka; it records what clients were promised (acknowledged
    writes, committed and consumer-visible records) so invariants can say "never lost".

Reading the code
    `@fast_init`, `@cache_hash`, `replace` and `@memoized` come from `spec._frozen`: they only
    make the model checker's millions of state copies cheaper; the classes read and behave
    as plain frozen dataclasses, and a `@memoized` helper (a constructor of a replica, a
    controller state or a history that many interleavings build alike) is a plain function.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from spec import isr as isr_rules
from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.log import (
    EMPTY_LOG,
    ReplicaLog,
    advance_log_start_offset,
    append,
    begin_leader_epoch,
    epoch_start_offset,
    latest_epoch,
    log_is_well_formed,
    readable_records,
    record_at,
    records_from,
    recover_after_crash,
    truncate_fully_and_start_at,
    truncate_to,
    with_high_watermark,
)
from spec.replication_rules import (
    ElectionRule,
    FetchFencing,
    FollowerHighWatermarkRule,
    IsrJoinRule,
    TruncationRule,
)
from spec.truncation import (
    epoch_truncation_offset,
    high_watermark_truncation_offset,
    offsets_for_leader_epoch,
)
from spec.types import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, Acks, ErrorCode, Record, ReplicaId

# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------


@cache_hash  # the checker looks up per-configuration tables in every state
@fast_init
@dataclass(frozen=True, slots=True)
class PartitionConfig:
    """Kafka settings, protocol rules (`spec.replication_rules`; the defaults are today's)
    and exploration bounds of one model-checking run."""

    replication_factor: int = 2  # replicas, on brokers 0..R-1; broker 0 leads first
    min_insync_replicas: int = 1  # min.insync.replicas
    producer_acks: tuple[Acks, ...] = (Acks.ALL,)  # the acks settings producers use
    unclean_leader_election: bool = False  # unclean.leader.election.enable (the election rule)
    truncation: TruncationRule = TruncationRule.KIP_320
    fetch_fencing: FetchFencing = FetchFencing.CURRENT_LEADER_EPOCH
    isr_join: IsrJoinRule = IsrJoinRule.EPOCH_START
    follower_high_watermark: FollowerHighWatermarkRule = FollowerHighWatermarkRule.OFFSETS_FOR_LEADER_EPOCH
    replica_lag_ticks: int = 0  # replica.lag.time.max.ms in clock ticks: 0 = one tick is the whole lag period
    max_records: int = 2  # bound: records produced
    max_leader_moves: int = 2  # bound: ControllerMoveLeadership elections
    max_crashes: int = 2  # bound: broker crashes
    max_lossy_crashes: int = 0  # bound: crashes that lose the unflushed suffix of the log
    controller_elections: bool = True  # explore preferred/reassignment elections
    retention: bool = False  # explore retention moving the log start offset
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def replica_ids(self) -> range:
        """The partition's replica assignment (broker ids), in assignment order."""
        return range(self.replication_factor)

    @property
    def election(self) -> ElectionRule:
        """The election rule `unclean.leader.election.enable` selects."""
        return ElectionRule.of(self.unclean_leader_election)


# ---------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------


class Role(enum.Enum):
    """What a broker believes its replica is."""

    LEADER = "leader"
    FOLLOWER = "follower"
    UNKNOWN = "unknown"  # restarted, waiting for the controller's LeaderAndIsr

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's


class FetchPhase(enum.Enum):
    """A follower's fetcher state (`AbstractFetcherThread`'s Truncating / Fetching)."""

    TRUNCATING = "truncating"  # must find where its log diverges before fetching
    FETCHING = "fetching"

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's


@fast_init
@dataclass(frozen=True, slots=True)
class FollowerProgress:
    """The leader's view of one follower (Kafka's `Replica` state on the leader)."""

    log_end_offset: int | None  # the follower's last fetch offset; None until it fetched in this epoch
    ticks_since_caught_up: int  # capped at replica_lag_ticks + 1 (only "lagging or not" matters)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class FetchResponse:
    """A fetch response on its way from the leader to a follower."""

    leader_epoch: int  # the epoch the leader answered in (responses from another epoch are dropped)
    error: ErrorCode  # NONE or OFFSET_OUT_OF_RANGE
    fetch_offset: int
    records: tuple[Record, ...]
    leader_high_watermark: int
    leader_log_start_offset: int
    leader_log_end_offset: int
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Replica:
    """One broker's replica of the partition: its disk (log) and its memory (the rest)."""

    alive: bool = True
    log: ReplicaLog = EMPTY_LOG  # survives crashes, minus an unflushed suffix
    leader_epoch: int = UNDEFINED_EPOCH  # epoch of the newest LeaderAndIsr applied
    role: Role = Role.UNKNOWN
    leader: ReplicaId | None = None  # whom it follows (itself when leader)
    isr: frozenset[ReplicaId] = frozenset()  # the leader's cached ISR
    phase: FetchPhase = FetchPhase.TRUNCATING  # follower only
    progress: tuple[FollowerProgress | None, ...] = ()  # leader only, indexed by replica id
    waiting_acks_all: tuple[tuple[int, int], ...] = ()  # leader only: (offset, value) awaiting HW
    fetch_in_flight: FetchResponse | None = None  # follower only
    # follower only, `diverging-epoch-hw-first`: the offset a DivergingEpoch answer told it to
    # truncate to, after it already took the answer's HW (KAFKA-14704's window)
    pending_truncation: int | None = None
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class ControllerState:
    """The partition state the controller keeps in ZooKeeper (`LeaderIsrAndControllerEpoch`)."""

    leader: ReplicaId | None  # None: no eligible replica is alive (the partition is offline)
    leader_epoch: int  # bumped by every election and by every ISR removal the controller makes
    isr: frozenset[ReplicaId]  # never empty: the last member stays even when it dies
    elections_moved: int = 0  # ControllerMoveLeadership steps taken (bounded)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class History:
    """Ghost state: what clients were told and what they could have seen."""

    next_value: int = 0  # values are unique: the next produced record gets this one
    acknowledged: frozenset[tuple[int, int]] = frozenset()  # (offset, value) acked with acks=1 or all
    acknowledged_all: frozenset[tuple[int, int]] = frozenset()  # acked successfully with acks=all
    committed: frozenset[tuple[int, int]] = frozenset()  # ever below the true leader's HW
    consumable: frozenset[tuple[int, int]] = frozenset()  # ever below any acting leader's HW
    crashes: int = 0
    lossy_crashes: int = 0  # crashes in which a log lost its unflushed suffix
    unclean_elections: int = 0
    produce_rejections: int = 0  # NOT_ENOUGH_REPLICAS answers, capped at 1
    retention_floor: int = 0  # highest log start offset retention ever gave a leader
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class PartitionState:
    """The whole system: every replica, the controller's partition state, the ghost history."""

    replicas: tuple[Replica, ...]
    controller: ControllerState
    history: History = field(default_factory=History)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


def initial_state(config: PartitionConfig) -> PartitionState:
    """Partition just created: all logs empty, broker 0 leads epoch 0 with the full ISR.

    Broker 0 is the first replica of the assignment (partition placement puts partition i's
    leader on broker i mod n). Every broker has already applied the first LeaderAndIsr.
    """
    everyone = frozenset(config.replica_ids)
    controller = ControllerState(leader=ReplicaId(0), leader_epoch=0, isr=everyone)
    unapplied = tuple(Replica() for _ in config.replica_ids)
    state = PartitionState(replicas=unapplied, controller=controller)
    for replica_id in config.replica_ids:
        applied = replica_become_leader_or_follower(config, state, ReplicaBecomeLeaderOrFollower(replica_id))
        assert applied is not None
        state = applied
    # Nothing to truncate in an empty log: followers start fetching directly.
    replicas = tuple(
        replace(replica, phase=FetchPhase.FETCHING) if replica.role is Role.FOLLOWER else replica
        for replica in state.replicas
    )
    return replace(state, replicas=replicas)


# ---------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class ProducerSend:
    """A producer sends one record with `acks` to `leader` (which must act as leader)."""

    leader: ReplicaId
    acks: Acks


@fast_init
@dataclass(frozen=True, slots=True)
class LeaderHandleFetch:
    """`follower`'s leader handles its fetch request."""

    follower: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class FollowerHandleFetchResponse:
    """`follower` processes the fetch response in flight to it."""

    follower: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class FollowerTruncate:
    """`follower` truncates its log before fetching in a new epoch."""

    follower: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class LeaderShrinkIsr:
    """`leader` removes the lagging `follower` from the ISR."""

    leader: ReplicaId
    follower: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class ClockTick:
    """Logical time passes for every leader's lag tracking."""


@fast_init
@dataclass(frozen=True, slots=True)
class ControllerMoveLeadership:
    """The controller moves leadership to `new_leader`, a live ISR member (clean election)."""

    new_leader: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class BrokerCrash:
    """`replica`'s broker dies; its disk keeps offsets below `surviving_end`."""

    replica: ReplicaId
    surviving_end: int


@fast_init
@dataclass(frozen=True, slots=True)
class BrokerRestart:
    """`replica`'s broker starts again and registers with the controller."""

    replica: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class ReplicaBecomeLeaderOrFollower:
    """`replica` applies the controller's newest LeaderAndIsr."""

    replica: ReplicaId


@fast_init
@dataclass(frozen=True, slots=True)
class LeaderAdvanceLogStartOffset:
    """Retention on `leader` deletes records below `new_start` (at most its HW)."""

    leader: ReplicaId
    new_start: int


Action = (
    ProducerSend
    | LeaderHandleFetch
    | FollowerHandleFetchResponse
    | FollowerTruncate
    | LeaderShrinkIsr
    | ClockTick
    | ControllerMoveLeadership
    | BrokerCrash
    | BrokerRestart
    | ReplicaBecomeLeaderOrFollower
    | LeaderAdvanceLogStartOffset
)


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------


def _with_replica(state: PartitionState, replica_id: ReplicaId, replica: Replica) -> PartitionState:
    replicas = (*state.replicas[:replica_id], replica, *state.replicas[replica_id + 1 :])
    return PartitionState(replicas, state.controller, state.history)


def acts_as_leader(state: PartitionState, replica_id: ReplicaId) -> bool:
    """The broker is alive and believes it leads (possibly a zombie on an old epoch)."""
    replica = state.replicas[replica_id]
    return replica.alive and replica.role is Role.LEADER


def true_leader(state: PartitionState) -> ReplicaId | None:
    """The leader the controller elected, once it has taken up leadership in that epoch."""
    leader = state.controller.leader
    if leader is None:
        return None
    replica = state.replicas[leader]
    if acts_as_leader(state, leader) and replica.leader_epoch == state.controller.leader_epoch:
        return leader
    return None


def _is_true_leader(state: PartitionState, replica_id: ReplicaId) -> bool:
    """Only the leader of the controller's current epoch can change the ISR in ZooKeeper
    (its conditional write fails otherwise: the zkVersion check)."""
    return true_leader(state) == replica_id


def _lag_cap(config: PartitionConfig) -> int:
    return config.replica_lag_ticks + 1


def advance_leader_high_watermark(
    config: PartitionConfig, state: PartitionState, leader_id: ReplicaId
) -> PartitionState:
    """Recompute the leader's HW, answer the acks=all requests it passed, and record what
    became visible to consumers."""
    leader = state.replicas[leader_id]
    log = leader.log
    follower_ends = tuple(
        progress.log_end_offset if progress is not None else None
        for member, progress in enumerate(leader.progress)
        if member != leader_id and member in leader.isr
    )
    new_hw = isr_rules.leader_high_watermark(log.high_watermark, log.log_end_offset, follower_ends)
    if new_hw == log.high_watermark and not leader.waiting_acks_all:
        return state  # nothing moved: visibility was recorded when the HW was set
    log = with_high_watermark(log, new_hw)
    history = state.history
    still_waiting: list[tuple[int, int]] = []
    acked: set[tuple[int, int]] = set()
    for offset, value in leader.waiting_acks_all:
        answer = isr_rules.acks_all_completion(
            offset, log.high_watermark, len(leader.isr), config.min_insync_replicas
        )
        if answer is None:
            still_waiting.append((offset, value))
        elif answer is ErrorCode.NONE:
            acked.add((offset, value))
    if acked:
        history = replace(
            history,
            acknowledged=history.acknowledged | acked,
            acknowledged_all=history.acknowledged_all | acked,
        )
    if log is not leader.log or len(still_waiting) != len(leader.waiting_acks_all):
        leader = replace(leader, log=log, waiting_acks_all=tuple(still_waiting))
        state = _with_replica(state, leader_id, leader)
    if history is not state.history:
        state = PartitionState(state.replicas, state.controller, history)
    return _record_visibility(state, leader_id)


def _record_visibility(state: PartitionState, leader_id: ReplicaId) -> PartitionState:
    """Add what is now below `leader_id`'s HW to the ghost sets (consumers could read it)."""
    log = state.replicas[leader_id].log
    if log.high_watermark == log.log_start_offset:
        return state
    readable = _readable_entries(log)
    history = state.history
    newly_consumable = not readable <= history.consumable
    newly_committed = not readable <= history.committed and _is_true_leader(state, leader_id)
    if not newly_consumable and not newly_committed:
        return state
    history = replace(
        history,
        consumable=history.consumable | readable,
        committed=history.committed | readable if newly_committed else history.committed,
    )
    return PartitionState(state.replicas, state.controller, history)


@memoized
def _readable_entries(log: ReplicaLog) -> frozenset[tuple[int, int]]:
    """(offset, value) of every record a consumer may read from `log` (below its HW)."""
    return frozenset((offset, record.value) for offset, record in readable_records(log))


def _elect_offline_leader(
    config: PartitionConfig, isr: frozenset[ReplicaId], alive: Callable[[ReplicaId], bool]
) -> tuple[ReplicaId | None, frozenset[ReplicaId], bool]:
    """`OfflinePartitionLeaderElectionStrategy`: the first live ISR member in assignment
    order; else, if unclean election is enabled, the first live replica with ISR := {it}.
    Returns (leader or None, ISR, whether the election was unclean)."""
    for candidate in config.replica_ids:
        if candidate in isr and alive(candidate):
            return candidate, isr, False
    if config.election is ElectionRule.UNCLEAN:
        for candidate in config.replica_ids:
            if alive(candidate):
                return candidate, frozenset({candidate}), True
    return None, isr, False


# ---------------------------------------------------------------------------------------
# One function per action
# ---------------------------------------------------------------------------------------


def producer_send(
    config: PartitionConfig, state: PartitionState, action: ProducerSend
) -> PartitionState | None:
    """Append one record to a replica acting as leader (`Partition.appendRecordsToLeader`).

    acks=all is refused with NOT_ENOUGH_REPLICAS when the leader's ISR is smaller than
    `min.insync.replicas`; nothing is appended then. acks=1 is acknowledged on append;
    acks=all waits for the HW. A zombie leader (an old epoch it has not learned is over)
    accepts writes too: that is how acks=1 writes get lost.
    """
    if not acts_as_leader(state, action.leader) or action.acks not in config.producer_acks:
        return None
    if state.history.next_value >= config.max_records:
        return None
    leader = state.replicas[action.leader]
    admission = isr_rules.produce_admission(action.acks, len(leader.isr), config.min_insync_replicas)
    if admission is ErrorCode.NOT_ENOUGH_REPLICAS:
        if state.history.produce_rejections:
            return None  # a second rejection teaches nothing new
        return replace(state, history=replace(state.history, produce_rejections=1))
    value = state.history.next_value
    offset = leader.log.log_end_offset
    leader = replace(leader, log=append(leader.log, (Record(leader.leader_epoch, value),)))
    history = replace(state.history, next_value=value + 1)
    if action.acks is Acks.LEADER:
        history = replace(history, acknowledged=history.acknowledged | {(offset, value)})
    elif action.acks is Acks.ALL:
        leader = replace(leader, waiting_acks_all=(*leader.waiting_acks_all, (offset, value)))
    state = replace(_with_replica(state, action.leader, leader), history=history)
    return advance_leader_high_watermark(config, state, action.leader)


def leader_handle_fetch(
    config: PartitionConfig, state: PartitionState, action: LeaderHandleFetch
) -> PartitionState | None:
    """The leader answers a follower's fetch at the follower's LEO (`Partition.fetchRecords`).

    Under the `fetch_fencing` rule `kip-320` the request carries the follower's epoch and a
    leader on another epoch answers FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, which changes
    nothing, so the action is simply not enabled then; under `none` (before KIP-320) a broker
    that presumes leadership serves whoever fetches from it. A fetch beyond the leader's log end or
    below its log start gets OFFSET_OUT_OF_RANGE. Otherwise the leader records the
    follower's LEO, resets its lag when it reached the leader's LEO, adds it to the ISR when
    it reached the HW (and the epoch start: rule `isr_join`; only the true leader can write
    the ISR), advances
    the HW and sends back the records from the fetch offset with the new HW.
    """
    follower = state.replicas[action.follower]
    if not follower.alive or follower.role is not Role.FOLLOWER or follower.phase is not FetchPhase.FETCHING:
        return None
    if follower.fetch_in_flight is not None or follower.leader is None:
        return None
    leader_id = follower.leader
    leader = state.replicas[leader_id]
    if not acts_as_leader(state, leader_id):
        return None
    fencing = config.fetch_fencing
    if fencing is FetchFencing.CURRENT_LEADER_EPOCH and leader.leader_epoch != follower.leader_epoch:
        return None
    if fencing is FetchFencing.LAST_FETCHED_EPOCH and not _last_record_matches(follower.log, leader.log):
        # The first KIP-320 design's truncation error: the follower truncates, then fetches again.
        return _with_replica(state, action.follower, replace(follower, phase=FetchPhase.TRUNCATING))
    fetch_offset = follower.log.log_end_offset
    if fetch_offset > leader.log.log_end_offset or fetch_offset < leader.log.log_start_offset:
        response = FetchResponse(
            leader.leader_epoch,
            ErrorCode.OFFSET_OUT_OF_RANGE,
            fetch_offset,
            (),
            leader.log.high_watermark,
            leader.log.log_start_offset,
            leader.log.log_end_offset,
        )
        return _with_replica(state, action.follower, replace(follower, fetch_in_flight=response))
    previous = leader.progress[action.follower]
    if fetch_offset >= leader.log.log_end_offset:
        ticks = 0
    elif previous is not None and action.follower in leader.isr:
        ticks = previous.ticks_since_caught_up
    else:
        ticks = _lag_cap(config)
    progress = list(leader.progress)
    progress[action.follower] = FollowerProgress(fetch_offset, ticks)
    leader = replace(leader, progress=tuple(progress))
    joins = action.follower not in leader.isr and _is_true_leader(state, leader_id)
    if joins and _may_join_isr(config, leader, fetch_offset):
        leader = replace(leader, isr=leader.isr | {action.follower})
        state = replace(state, controller=replace(state.controller, isr=leader.isr))
    state = advance_leader_high_watermark(config, _with_replica(state, leader_id, leader), leader_id)
    leader = state.replicas[leader_id]
    response = FetchResponse(
        leader.leader_epoch,
        ErrorCode.NONE,
        fetch_offset,
        records_from(leader.log, fetch_offset),
        leader.log.high_watermark,
        leader.log.log_start_offset,
        leader.log.log_end_offset,
    )
    return _with_replica(state, action.follower, replace(follower, fetch_in_flight=response))


def _last_record_matches(follower_log: ReplicaLog, leader_log: ReplicaLog) -> bool:
    """`Kip320FirstTry.tla`'s `IsFollowerCaughtUpToLeaderEpoch`: the follower's log is not
    longer than the leader's and its last record has the epoch of the leader's record there."""
    end = follower_log.log_end_offset
    if end > leader_log.log_end_offset:
        return False
    if end == follower_log.log_start_offset:
        return True
    mine, theirs = record_at(follower_log, end - 1), record_at(leader_log, end - 1)
    return mine is not None and theirs is not None and mine.epoch == theirs.epoch


def _may_join_isr(config: PartitionConfig, leader: Replica, fetch_offset: int) -> bool:
    """`Partition.maybeExpandIsr`'s test by the `isr_join` rule: the follower fetched up to
    the HW, and since KAFKA-7128 also up to the start of the leader's current epoch."""
    if config.isr_join is IsrJoinRule.EPOCH_START:
        epoch_start = epoch_start_offset(leader.log.epoch_cache, leader.leader_epoch) or 0
    else:
        epoch_start = 0
    return isr_rules.may_join_isr(fetch_offset, leader.log.high_watermark, epoch_start)


def follower_handle_fetch_response(
    config: PartitionConfig, state: PartitionState, action: FollowerHandleFetchResponse
) -> PartitionState | None:
    """The follower processes its fetch response (`ReplicaFetcherThread.processPartitionData`).

    A response from another epoch is dropped (KIP-320; under the `fetch_fencing` rules
    `none` and `kip-320-first-try` any answer to the fetch in flight is used). On
    OFFSET_OUT_OF_RANGE the follower truncates to the leader's log end when it is ahead of
    it, or restarts its log at the leader's log
    start when it is behind it. Otherwise it appends the records, sets HW := min(leader HW,
    own LEO) and moves its log start up to the leader's.
    """
    follower = state.replicas[action.follower]
    response = follower.fetch_in_flight
    if not follower.alive or response is None:
        return None
    fenced = config.fetch_fencing is FetchFencing.CURRENT_LEADER_EPOCH
    if (
        fenced and response.leader_epoch != follower.leader_epoch
    ) or follower.phase is not FetchPhase.FETCHING:
        return _with_replica(state, action.follower, replace(follower, fetch_in_flight=None))
    log = follower.log
    if response.error is ErrorCode.OFFSET_OUT_OF_RANGE:
        if log.log_end_offset > response.leader_log_end_offset:
            log = truncate_to(log, response.leader_log_end_offset)
        else:
            log = truncate_fully_and_start_at(log, response.leader_log_start_offset)
    else:
        log = append(log, response.records)
        log = with_high_watermark(
            log, isr_rules.follower_high_watermark(response.leader_high_watermark, log.log_end_offset)
        )
        log = advance_log_start_offset(log, response.leader_log_start_offset)
    return _with_replica(state, action.follower, replace(follower, log=log, fetch_in_flight=None))


def follower_truncate(
    config: PartitionConfig, state: PartitionState, action: FollowerTruncate
) -> PartitionState | None:
    """A follower in a new epoch removes the suffix its leader may not share, then fetches.

    Where it truncates is the `truncation` rule (`spec.replication_rules`): its own HW
    (`hw`), or the answer of the leader it follows to OffsetsForLeaderEpoch in one round
    (`kip-101`) or several (`kip-279`), which only a leader on the follower's own epoch gives
    (`kip-320`: an answer from another epoch is never used). The `follower_high_watermark`
    rule says whether the answer also carries the leader's HW (a Fetch response with a
    diverging epoch) and whether the follower takes it after truncating or, before
    KAFKA-14704's fix, first: then the truncation is a second step, and in between the
    follower's HW covers records its leader does not have.
    """
    follower = state.replicas[action.follower]
    if (
        not follower.alive
        or follower.role is not Role.FOLLOWER
        or follower.phase is not FetchPhase.TRUNCATING
    ):
        return None
    leader_id = follower.leader
    if leader_id is None:
        return None
    log = follower.log
    if follower.pending_truncation is not None:  # the second half of KAFKA-14704's window
        truncated = replace(
            follower, log=truncate_to(log, follower.pending_truncation), pending_truncation=None
        )
        return _with_replica(state, action.follower, replace(truncated, phase=FetchPhase.FETCHING))
    rule = config.truncation
    if not rule.asks_the_leader:
        offset = high_watermark_truncation_offset(log.log_end_offset, log.high_watermark)
        follower = replace(follower, log=truncate_to(log, offset), phase=FetchPhase.FETCHING)
        return _with_replica(state, action.follower, follower)
    leader = state.replicas[leader_id]
    if not acts_as_leader(state, leader_id):
        return None  # NOT_LEADER_OR_FOLLOWER: it retries once it learns the new leader
    if rule.fenced and leader.leader_epoch != follower.leader_epoch:
        return None  # FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (KIP-320)
    if rule is TruncationRule.KIP_101:
        offset = kip101_truncation_offset(log, leader.log)
    else:
        offset = epoch_truncation_offset(
            log.epoch_cache,
            log.log_end_offset,
            log.high_watermark,
            leader.log.epoch_cache,
            leader.log.log_end_offset,
        )
    hw_rule = config.follower_high_watermark
    if hw_rule is FollowerHighWatermarkRule.OFFSETS_FOR_LEADER_EPOCH:
        follower = replace(follower, log=truncate_to(log, offset), phase=FetchPhase.FETCHING)
        return _with_replica(state, action.follower, follower)
    leader_high_watermark = leader.log.high_watermark
    if hw_rule is FollowerHighWatermarkRule.DIVERGING_EPOCH or offset >= log.log_end_offset:
        log = truncate_to(log, offset)
        log = with_high_watermark(
            log, isr_rules.follower_high_watermark(leader_high_watermark, log.log_end_offset)
        )
        return _with_replica(state, action.follower, replace(follower, log=log, phase=FetchPhase.FETCHING))
    # Before KAFKA-14704: `processPartitionData` takes the response's HW, then the diverging
    # epoch is handled; the truncation waits for the next step.
    log = with_high_watermark(
        log, isr_rules.follower_high_watermark(leader_high_watermark, log.log_end_offset)
    )
    return _with_replica(state, action.follower, replace(follower, log=log, pending_truncation=offset))


def kip101_truncation_offset(follower_log: ReplicaLog, leader_log: ReplicaLog) -> int:
    """Where a follower truncates under KIP-101 as first shipped (Kafka 0.11): one
    OffsetsForLeaderEpoch round for its latest epoch, whose answer is an offset only (the
    start of the leader's next epoch), taken as it is (`Kip101.tla`'s
    `LookupOffsetForEpoch`). Without a known epoch, on either side, its own HW."""
    requested = latest_epoch(follower_log.epoch_cache)
    if requested == UNDEFINED_EPOCH:
        return min(follower_log.high_watermark, follower_log.log_end_offset)
    _, end = offsets_for_leader_epoch(leader_log.epoch_cache, leader_log.log_end_offset, requested)
    if end == UNDEFINED_EPOCH_OFFSET:
        return min(follower_log.high_watermark, follower_log.log_end_offset)
    return min(end, follower_log.log_end_offset)


def leader_shrink_isr(
    config: PartitionConfig, state: PartitionState, action: LeaderShrinkIsr
) -> PartitionState | None:
    """The true leader removes a follower that is not caught up (`Partition.maybeShrinkIsr`).

    Not caught up: its last fetch was below the leader's LEO and it has not been at the
    LEO for more than `replica.lag.time.max.ms`. The ISR shrinks in ZooKeeper and in the
    leader's cache together; the leader epoch does not change. The HW may then advance.
    """
    if action.leader == action.follower or not _is_true_leader(state, action.leader):
        return None
    leader = state.replicas[action.leader]
    if action.follower not in leader.isr:
        return None
    progress = leader.progress[action.follower]
    assert progress is not None
    if isr_rules.follower_is_caught_up(
        progress.log_end_offset,
        leader.log.log_end_offset,
        progress.ticks_since_caught_up,
        config.replica_lag_ticks,
    ):
        return None
    progress_after = list(leader.progress)
    progress_after[action.follower] = replace(progress, ticks_since_caught_up=_lag_cap(config))
    leader = replace(leader, isr=leader.isr - {action.follower}, progress=tuple(progress_after))
    state = replace(
        _with_replica(state, action.leader, leader), controller=replace(state.controller, isr=leader.isr)
    )
    return advance_leader_high_watermark(config, state, action.leader)


def _lag_grows(replica: Replica, member: int, progress: FollowerProgress | None, cap: int) -> bool:
    """Whether a clock tick ages `member` on leader `replica`: only ISR followers age, up to the cap."""
    return progress is not None and progress.ticks_since_caught_up < cap and member in replica.isr


def time_matters(config: PartitionConfig, state: PartitionState) -> bool:
    """Some replica acting as leader has an ISR follower whose lag can still grow."""
    cap = _lag_cap(config)
    for replica in state.replicas:
        if replica.alive and replica.role is Role.LEADER:
            for member, progress in enumerate(replica.progress):
                if _lag_grows(replica, member, progress, cap):
                    return True
    return False


def clock_tick(config: PartitionConfig, state: PartitionState, action: ClockTick) -> PartitionState | None:
    """One tick of logical time: every leader's count of ticks since each ISR follower was
    last caught up grows (capped). Enabled only when some count can still grow. Followers
    outside the ISR are kept at the cap: their age only matters once they rejoin, and
    treating them as long lagging only allows an earlier shrink, never forbids one."""
    if not time_matters(config, state):
        return None
    cap = _lag_cap(config)
    replicas = list(state.replicas)
    for replica_id, replica in enumerate(state.replicas):
        if not acts_as_leader(state, ReplicaId(replica_id)):
            continue
        progress = tuple(
            FollowerProgress(entry.log_end_offset, entry.ticks_since_caught_up + 1)
            if entry is not None and _lag_grows(replica, member, entry, cap)
            else entry
            for member, entry in enumerate(replica.progress)
        )
        if progress != replica.progress:
            replicas[replica_id] = replace(replica, progress=progress)
    return PartitionState(tuple(replicas), state.controller, state.history)


def controller_move_leadership(
    config: PartitionConfig, state: PartitionState, action: ControllerMoveLeadership
) -> PartitionState | None:
    """A clean election not caused by a failure: preferred-replica election, reassignment or
    controlled shutdown move leadership to another live ISR member, in a new epoch."""
    controller = state.controller
    if not config.controller_elections or controller.elections_moved >= config.max_leader_moves:
        return None
    if action.new_leader == controller.leader or action.new_leader not in controller.isr:
        return None
    if not state.replicas[action.new_leader].alive:
        return None
    controller = replace(
        controller,
        leader=action.new_leader,
        leader_epoch=controller.leader_epoch + 1,
        elections_moved=controller.elections_moved + 1,
    )
    return replace(state, controller=controller)


def broker_crash(
    config: PartitionConfig, state: PartitionState, action: BrokerCrash
) -> PartitionState | None:
    """A broker dies. Its memory is gone; its disk keeps offsets below `surviving_end`
    (everything, or only what was flushed when the crash loses the unflushed suffix).

    The controller handles the failure in the same step (`onBrokerFailure`): the replica
    leaves the ISR unless it is the last member (the ISR is never empty), and if it led,
    the first live ISR member becomes leader, or with unclean election enabled the first
    live replica, or nobody (offline). Any change bumps the leader epoch.
    """
    replica = state.replicas[action.replica]
    history = state.history
    if not replica.alive or history.crashes >= config.max_crashes:
        return None
    if (
        not 0 <= action.surviving_end <= replica.log.log_end_offset
        or action.surviving_end < replica.log.log_start_offset
    ):
        return None
    lossy = action.surviving_end < replica.log.log_end_offset
    if lossy and history.lossy_crashes >= config.max_lossy_crashes:
        return None
    crashed = crashed_replica(replica.log, action.surviving_end)
    replicas = (*state.replicas[: action.replica], crashed, *state.replicas[action.replica + 1 :])
    live = frozenset(broker for broker, other in enumerate(replicas) if other.alive)
    controller, unclean = _controller_after_failure(config, state.controller, action.replica, live)
    return PartitionState(replicas, controller, history_after_crash(history, lossy, unclean))


@memoized
def _controller_after_failure(
    config: PartitionConfig, controller: ControllerState, failed: ReplicaId, live: frozenset[ReplicaId]
) -> tuple[ControllerState, bool]:
    """`onBrokerFailure` for one partition: the failed replica leaves the ISR unless it is
    the last member; if it led, a new leader is elected among the `live` brokers. Returns
    the new controller state and whether the election was unclean."""
    isr = controller.isr - {failed} if len(controller.isr) > 1 else controller.isr
    leader = controller.leader
    unclean = False
    if leader == failed:
        leader, isr, unclean = _elect_offline_leader(config, isr, live.__contains__)
    if (leader, isr) != (controller.leader, controller.isr):
        controller = ControllerState(leader, controller.leader_epoch + 1, isr, controller.elections_moved)
    return controller, unclean


@memoized
def crashed_replica(log: ReplicaLog, surviving_end: int) -> Replica:
    """A dead broker's replica: nothing in memory, the log its disk kept."""
    return Replica(alive=False, log=recover_after_crash(log, surviving_end))


@memoized
def history_after_crash(history: History, lossy: bool, unclean: bool) -> History:
    """The ghost history counts the crash, whether it lost data, and an unclean election."""
    return replace(
        history,
        crashes=history.crashes + 1,
        lossy_crashes=history.lossy_crashes + int(lossy),
        unclean_elections=history.unclean_elections + int(unclean),
    )


def broker_restart(
    config: PartitionConfig, state: PartitionState, action: BrokerRestart
) -> PartitionState | None:
    """A dead broker starts with the log its disk kept and registers (`onBrokerStartup`).

    If the partition is offline, the controller elects it when it is in the ISR, or, with
    unclean election enabled, even when it is not (ISR := {it}).
    """
    replica = state.replicas[action.replica]
    if replica.alive:
        return None
    state = _with_replica(state, action.replica, replace(replica, alive=True))
    controller = state.controller
    if controller.leader is not None:
        return state
    if action.replica in controller.isr:
        controller = replace(controller, leader=action.replica, leader_epoch=controller.leader_epoch + 1)
    elif config.election is ElectionRule.UNCLEAN:
        controller = replace(
            controller,
            leader=action.replica,
            isr=frozenset({action.replica}),
            leader_epoch=controller.leader_epoch + 1,
        )
        state = replace(
            state, history=replace(state.history, unclean_elections=state.history.unclean_elections + 1)
        )
    return replace(state, controller=controller)


def replica_become_leader_or_follower(
    config: PartitionConfig, state: PartitionState, action: ReplicaBecomeLeaderOrFollower
) -> PartitionState | None:
    """A broker applies the controller's newest LeaderAndIsr (`ReplicaManager.becomeLeaderOrFollower`).

    Only a newer epoch is applied. The new leader records the epoch's start offset at its
    LEO in the epoch cache (KAFKA-7415), forgets what it knew of followers (they must fetch
    again in this epoch, KIP-320), keeps its HW and advances it if it can. A follower drops
    any fetch in flight and a demoted leader's waiting acks=all requests fail; it must
    truncate before fetching (`phase = TRUNCATING`).
    """
    replica = state.replicas[action.replica]
    controller = state.controller
    if not replica.alive or replica.leader_epoch >= controller.leader_epoch:
        return None
    if controller.leader == action.replica:
        progress = _fresh_progress(config, action.replica, controller.isr)
        waiting = replica.waiting_acks_all if replica.role is Role.LEADER else ()
        leader = Replica(
            alive=True,
            log=begin_leader_epoch(replica.log, controller.leader_epoch),
            leader_epoch=controller.leader_epoch,
            role=Role.LEADER,
            leader=action.replica,
            isr=controller.isr,
            phase=FetchPhase.FETCHING,
            progress=progress,
            waiting_acks_all=waiting,
        )
        state = _with_replica(state, action.replica, leader)
        return _record_visibility(
            advance_leader_high_watermark(config, state, action.replica), action.replica
        )
    # The first KIP-320 design truncated only when a fetch found the logs diverging.
    lazy = config.fetch_fencing is FetchFencing.LAST_FETCHED_EPOCH
    phase = FetchPhase.FETCHING if lazy else FetchPhase.TRUNCATING
    follower = _new_follower(replica.log, controller.leader_epoch, controller.leader, phase)
    return _with_replica(state, action.replica, follower)


@memoized
def _new_follower(
    log: ReplicaLog, leader_epoch: int, leader: ReplicaId | None, phase: FetchPhase = FetchPhase.TRUNCATING
) -> Replica:
    """A replica that just became a follower: it must truncate before it fetches (unless, in
    the first KIP-320 design, it fetches first and truncates when told its log diverges)."""
    return Replica(
        alive=True,
        log=log,
        leader_epoch=leader_epoch,
        role=Role.FOLLOWER,
        leader=leader,
        phase=phase,
    )


@memoized
def _fresh_progress(
    config: PartitionConfig, leader: ReplicaId, isr: frozenset[ReplicaId]
) -> tuple[FollowerProgress | None, ...]:
    """A new leader's view of its followers: no fetch yet in this epoch; ISR members start
    caught up, the others lagging."""
    cap = _lag_cap(config)
    return tuple(
        None if member == leader else FollowerProgress(None, 0 if member in isr else cap)
        for member in config.replica_ids
    )


def leader_advance_log_start_offset(
    config: PartitionConfig, state: PartitionState, action: LeaderAdvanceLogStartOffset
) -> PartitionState | None:
    """Retention (`log.retention.ms` / `log.retention.bytes`) or DeleteRecords deletes the
    leader's oldest records; never at or above the HW. Followers follow on their next fetch."""
    if not config.retention or not acts_as_leader(state, action.leader):
        return None
    leader = state.replicas[action.leader]
    if not leader.log.log_start_offset < action.new_start <= leader.log.high_watermark:
        return None
    leader = replace(leader, log=advance_log_start_offset(leader.log, action.new_start))
    history = state.history
    if leader.log.log_start_offset > history.retention_floor:
        history = replace(history, retention_floor=leader.log.log_start_offset)
    return PartitionState(_with_replica(state, action.leader, leader).replicas, state.controller, history)


# ---------------------------------------------------------------------------------------
# The transition relation
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class _ActionTable:
    """Every action object one configuration can take, built once: action values are
    immutable, so the checker can offer the same objects in every state."""

    restart: tuple[BrokerRestart, ...]
    produce: tuple[tuple[ProducerSend, ...], ...]
    shrink: tuple[tuple[LeaderShrinkIsr | None, ...], ...]
    fetch_response: tuple[FollowerHandleFetchResponse, ...]
    fetch: tuple[LeaderHandleFetch, ...]
    truncate: tuple[FollowerTruncate, ...]
    become: tuple[ReplicaBecomeLeaderOrFollower, ...]
    move: tuple[ControllerMoveLeadership, ...]
    tick: ClockTick


@memoized
def _action_table(config: PartitionConfig) -> _ActionTable:
    """The action objects of `config`'s replicas (built at the first state checked)."""
    replicas = config.replica_ids
    return _ActionTable(
        restart=tuple(BrokerRestart(r) for r in replicas),
        produce=tuple(tuple(ProducerSend(r, acks) for acks in config.producer_acks) for r in replicas),
        shrink=tuple(tuple(LeaderShrinkIsr(r, f) if f != r else None for f in replicas) for r in replicas),
        fetch_response=tuple(FollowerHandleFetchResponse(r) for r in replicas),
        fetch=tuple(LeaderHandleFetch(r) for r in replicas),
        truncate=tuple(FollowerTruncate(r) for r in replicas),
        become=tuple(ReplicaBecomeLeaderOrFollower(r) for r in replicas),
        move=tuple(ControllerMoveLeadership(r) for r in replicas),
        tick=ClockTick(),
    )


# Actions with an offset argument: one object per (replica, offset) in use, not per possible offset
# (the reference runs with unbounded logs).
_crash_action = memoized(BrokerCrash)
_retention_action = memoized(LeaderAdvanceLogStartOffset)


def candidate_actions(config: PartitionConfig, state: PartitionState) -> Iterator[Action]:
    """The actions worth trying in `state`: a cheap superset of the enabled ones (it skips
    actions whose actor is plainly in the wrong role); `step` applies the full guards."""
    actions = _action_table(config)
    history = state.history
    controller = state.controller
    may_crash = history.crashes < config.max_crashes
    lossy_allowed = history.lossy_crashes < config.max_lossy_crashes
    may_move = config.controller_elections and controller.elections_moved < config.max_leader_moves
    for replica_id, replica in enumerate(state.replicas):
        if not replica.alive:
            yield actions.restart[replica_id]
            continue
        if replica.role is Role.LEADER:
            if history.next_value < config.max_records:
                yield from actions.produce[replica_id]
            shrink = actions.shrink[replica_id]
            for follower in replica.isr:
                action = shrink[follower]
                if action is not None:
                    yield action
            if config.retention:
                start, high_watermark = replica.log.log_start_offset, replica.log.high_watermark
                for new_start in range(start + 1, high_watermark + 1):
                    yield _retention_action(replica_id, new_start)
        elif replica.role is Role.FOLLOWER:
            if replica.fetch_in_flight is not None:
                yield actions.fetch_response[replica_id]
            elif replica.phase is FetchPhase.FETCHING:
                yield actions.fetch[replica_id]
            else:
                yield actions.truncate[replica_id]
        if replica.leader_epoch < controller.leader_epoch:
            yield actions.become[replica_id]
        if may_crash:
            log = replica.log
            first_end = log.log_start_offset if lossy_allowed else log.log_end_offset
            for surviving_end in range(first_end, log.log_end_offset + 1):
                yield _crash_action(replica_id, surviving_end)
        if may_move and replica_id in controller.isr and replica_id != controller.leader:
            yield actions.move[replica_id]
    if time_matters(config, state):
        yield actions.tick


_ACTION_FUNCTIONS: dict[type, Callable[[PartitionConfig, PartitionState, Any], PartitionState | None]] = {
    ProducerSend: producer_send,
    LeaderHandleFetch: leader_handle_fetch,
    FollowerHandleFetchResponse: follower_handle_fetch_response,
    FollowerTruncate: follower_truncate,
    LeaderShrinkIsr: leader_shrink_isr,
    ClockTick: clock_tick,
    ControllerMoveLeadership: controller_move_leadership,
    BrokerCrash: broker_crash,
    BrokerRestart: broker_restart,
    ReplicaBecomeLeaderOrFollower: replica_become_leader_or_follower,
    LeaderAdvanceLogStartOffset: leader_advance_log_start_offset,
}
"""Each action type's function (a table rather than a `match`: the checker calls `step`
millions of times)."""


def step(config: PartitionConfig, state: PartitionState, action: Action) -> PartitionState | None:
    """Apply `action` if it is enabled in `state`; None otherwise."""
    return _ACTION_FUNCTIONS[type(action)](config, state, action)


# ---------------------------------------------------------------------------------------
# Invariants (safety properties of every reachable state)
# ---------------------------------------------------------------------------------------


def _leader_holds(state: PartitionState, entries: frozenset[tuple[int, int]]) -> bool:
    """The true leader (if there is one) holds every (offset, value) of `entries` that
    retention has not deleted. Offsets below the highest log start any leader reached are
    retention's to delete: a later leader may still hold an older, never-committed record
    there (its follower-side log start only catches up on its next fetch)."""
    if not entries:
        return True
    leader_id = true_leader(state)
    if leader_id is None:
        return True
    return _log_holds(state.replicas[leader_id].log, state.history.retention_floor, entries)


@memoized
def _log_holds(log: ReplicaLog, retention_floor: int, entries: frozenset[tuple[int, int]]) -> bool:
    """`log` holds every (offset, value) of `entries` at or above the retention floor."""
    floor = max(log.log_start_offset, retention_floor)
    for offset, value in entries:
        if offset < floor:
            continue
        record = record_at(log, offset)
        if record is None or record.value != value:
            return False
    return True


def high_watermark_within_log(state: PartitionState) -> bool:
    """Every replica has log start <= HW <= LEO, non-decreasing record epochs and a strictly
    increasing epoch cache. Holds because HW updates are clamped to the log and truncation
    lowers the HW with the LEO."""
    for replica in state.replicas:  # a loop, not all(...): this runs for every state checked
        if not log_is_well_formed(replica.log):
            return False
    return True


def leader_in_isr(state: PartitionState) -> bool:
    """The elected leader is an ISR member, the ISR is never empty, and a replica acting as
    leader counts itself in its ISR. Holds because elections choose from the ISR (or set
    ISR := {leader} when unclean) and the leader never removes itself."""
    controller = state.controller
    if not controller.isr:
        return False
    if controller.leader is not None and controller.leader not in controller.isr:
        return False
    for replica_id, replica in enumerate(state.replicas):
        if replica.alive and replica.role is Role.LEADER and replica_id not in replica.isr:
            return False
    return True


def committed_records_survive(state: PartitionState) -> bool:
    """No committed record is lost: every record that was ever below the true leader's HW
    is in the current true leader's log (unless retention deleted it).

    Guaranteed only when no log lost its unflushed suffix: Kafka does not fsync on commit
    and relies on replicas not failing together. Fails under the `hw` truncation rule
    (KIP-101) and after an unclean election.
    """
    if state.history.lossy_crashes:
        return True
    return _leader_holds(state, state.history.committed)


def consumed_records_survive(state: PartitionState) -> bool:
    """A consumer never reads a record that later disappears: everything that was ever
    below the HW of any replica acting as leader (consumers fetch from whoever claims to
    lead) is in the true leader's log. Same caveat about lost unflushed data."""
    if state.history.lossy_crashes:
        return True
    return _leader_holds(state, state.history.consumable)


def acknowledged_records_survive(state: PartitionState) -> bool:
    """Every acknowledged write (acks=1 on append, acks=all when the HW passed it) is in the
    true leader's log. Not a Kafka guarantee for acks=1, nor for acks=all when the ISR may
    shrink to the leader and that leader's unflushed data or an unclean election loses it."""
    return _leader_holds(state, state.history.acknowledged)


def acks_all_records_survive(state: PartitionState) -> bool:
    """Kafka's durability promise: a write acknowledged with acks=all (hence while the ISR
    had at least `min.insync.replicas` members) is never lost as long as unclean election
    never happened and no log lost data."""
    history = state.history
    if history.lossy_crashes or history.unclean_elections:
        return True
    return _leader_holds(state, history.acknowledged_all)


@memoized  # the model checker asks it about the same pairs over and over
def _logs_match(first: ReplicaLog, second: ReplicaLog) -> bool:
    """Below the newest offset where both logs hold a record of the same epoch, and there,
    both logs hold the same records (over the offsets both still hold)."""
    start = max(first.log_start_offset, second.log_start_offset)
    end = min(first.log_end_offset, second.log_end_offset)
    for offset in range(end - 1, start - 1, -1):
        mine, theirs = record_at(first, offset), record_at(second, offset)
        if mine is not None and theirs is not None and mine.epoch == theirs.epoch:
            return (
                first.records[start - first.log_start_offset : offset + 1 - first.log_start_offset]
                == second.records[start - second.log_start_offset : offset + 1 - second.log_start_offset]
            )
    return True


def replicas_agree_on_epoch_offsets(state: PartitionState) -> bool:
    """Log matching: two replicas that hold a record with the same offset and epoch hold the
    same record there and the same records before it. Holds because one epoch has one
    leader, that leader only appends, and followers copy its records with their epochs."""
    for first, second in combinations(state.replicas, 2):
        if not _logs_match(first.log, second.log):
            return False
    return True


def followers_are_prefix_of_leader(state: PartitionState) -> bool:
    """Replicas never diverge: a live follower that has finished truncating in the true
    leader's epoch holds the leader's records at every offset both hold (a follower longer
    than its leader is cut back by OFFSET_OUT_OF_RANGE on its next fetch). Fails under the
    `hw` rule when a follower keeps records the new leader replaced (KIP-101 scenario 2). Not a
    property of the first KIP-320 design, whose followers fetch before they truncate."""
    leader_id = true_leader(state)
    if leader_id is None:
        return True
    leader = state.replicas[leader_id]
    for replica in state.replicas:
        if replica is leader or not replica.alive or replica.role is not Role.FOLLOWER:
            continue
        if replica.leader != leader_id or replica.leader_epoch != leader.leader_epoch:
            continue
        if replica.phase is not FetchPhase.FETCHING:
            continue
        start = max(replica.log.log_start_offset, leader.log.log_start_offset)
        for offset in range(start, min(replica.log.log_end_offset, leader.log.log_end_offset)):
            if record_at(replica.log, offset) != record_at(leader.log, offset):
                return False
    return True


def controller_epoch_is_newest(state: PartitionState) -> bool:
    """No broker has applied an epoch the controller has not created."""
    newest = state.controller.leader_epoch
    for replica in state.replicas:
        if replica.leader_epoch > newest:
            return False
    return True


def _data_loss_promised_away(history: History) -> bool:
    """Kafka promises nothing about committed data once a log lost its unflushed suffix or
    an election was unclean."""
    return bool(history.lossy_crashes or history.unclean_elections)


def strong_isr(state: PartitionState) -> bool:
    """Every record below the HW of any replica presuming leadership is held, at the same
    offset, by every member of the controller's ISR, so whoever is elected next holds what
    consumers may have read. This is `StrongIsr` of hachikuji/kafka-specification's
    `KafkaReplication.tla`, the property the first KIP-320 design broke. Offsets retention may
    have deleted are skipped, and so is everything after a lossy crash or an unclean election."""
    history = state.history
    if _data_loss_promised_away(history):
        return True
    isr = state.controller.isr
    for replica in state.replicas:
        if not replica.alive or replica.role is not Role.LEADER:
            continue
        log = replica.log
        if log.high_watermark <= log.log_start_offset:
            continue
        for member in isr:
            other = state.replicas[member].log
            if other is log:
                continue
            if not _agree_below(log, other, history.retention_floor):
                return False
    return True


@memoized
def _agree_below(leader: ReplicaLog, other: ReplicaLog, retention_floor: int) -> bool:
    """`other` holds `leader`'s records at every offset below `leader`'s HW (above the floor)."""
    floor = max(leader.log_start_offset, other.log_start_offset, retention_floor)
    for offset in range(floor, leader.high_watermark):
        if record_at(other, offset) != record_at(leader, offset):
            return False
    return True


def follower_reads_survive(state: PartitionState) -> bool:
    """A consumer fetching from a follower (KIP-392, or a client without KIP-320 reading
    below a replica's HW) never reads a record the true leader does not hold: everything
    below a live non-leader replica's HW is in the true leader's log at the same offset.
    Fails before KAFKA-14704's fix, when a follower takes the leader's HW before it truncates
    its diverging suffix. Same caveats as `committed_records_survive`."""
    if _data_loss_promised_away(state.history):
        return True
    leader_id = true_leader(state)
    if leader_id is None:
        return True
    leader_log = state.replicas[leader_id].log
    for replica in state.replicas:
        if not replica.alive or replica.role is Role.LEADER or replica.log is leader_log:
            continue
        log = replica.log
        if log.high_watermark > log.log_start_offset and not _log_holds(
            leader_log, state.history.retention_floor, _readable_entries(log)
        ):
            return False
    return True


Invariant = Callable[[PartitionState], bool]

INVARIANTS: dict[str, Invariant] = {
    "high_watermark_within_log": high_watermark_within_log,
    "leader_in_isr": leader_in_isr,
    "controller_epoch_is_newest": controller_epoch_is_newest,
    "replicas_agree_on_epoch_offsets": replicas_agree_on_epoch_offsets,
    "followers_are_prefix_of_leader": followers_are_prefix_of_leader,
    "committed_records_survive": committed_records_survive,
    "consumed_records_survive": consumed_records_survive,
    "acknowledged_records_survive": acknowledged_records_survive,
    "acks_all_records_survive": acks_all_records_survive,
}
"""Every safety property of the partition, by name."""

RULE_INVARIANTS: dict[str, Invariant] = {
    "strong_isr": strong_isr,
    "follower_reads_survive": follower_reads_survive,
}
"""Properties the replication stories (`spec.replication_stories`) check beyond `INVARIANTS`:
the strong-ISR property of the TLA+ models, which the first KIP-320 design and KAFKA-7128
break, and reads from followers (KIP-392), which KAFKA-14704 breaks. They hold under today's
rules within the stories' bounds; the conformance suites check `INVARIANTS` only."""


# ---------------------------------------------------------------------------------------
# Step properties (relations between a state and its successor)
# ---------------------------------------------------------------------------------------


def leader_epochs_only_grow(before: PartitionState, after: PartitionState) -> bool:
    """The controller's epoch never decreases, and a broker that stays up never goes back
    to an older epoch (a restarted broker starts from UNDEFINED and relearns it)."""
    if after.controller.leader_epoch < before.controller.leader_epoch:
        return False
    if after.replicas is before.replicas:
        return True
    for old, new in zip(before.replicas, after.replicas, strict=True):
        if new is not old and old.alive and new.alive and new.leader_epoch < old.leader_epoch:
            return False
    return True


StepProperty = Callable[[PartitionState, PartitionState], bool]

STEP_PROPERTIES: dict[str, StepProperty] = {"leader_epochs_only_grow": leader_epochs_only_grow}


# ---------------------------------------------------------------------------------------
# Witnesses (states that must be reachable, so no property holds vacuously)
# ---------------------------------------------------------------------------------------


def record_committed(state: PartitionState) -> bool:
    """Some record was committed."""
    return bool(state.history.committed)


def write_acknowledged(state: PartitionState) -> bool:
    """Some write was acknowledged to its producer."""
    return bool(state.history.acknowledged)


def partition_offline(state: PartitionState) -> bool:
    """No eligible replica is alive and the controller left the partition without a leader."""
    return state.controller.leader is None


def produce_rejected(state: PartitionState) -> bool:
    """An acks=all produce was refused with NOT_ENOUGH_REPLICAS."""
    return state.history.produce_rejections > 0


def _followers_in_epoch(state: PartitionState, phase: FetchPhase) -> Iterator[tuple[Replica, Replica]]:
    """(follower, its leader) for every live follower in `phase` whose leader presumes leadership."""
    for replica in state.replicas:
        if not replica.alive or replica.role is not Role.FOLLOWER or replica.phase is not phase:
            continue
        if replica.leader is None or not acts_as_leader(state, replica.leader):
            continue
        yield replica, state.replicas[replica.leader]


def committed_record_above_follower_hw(state: PartitionState) -> bool:
    """KIP-101 scenario 1's moment: a follower about to truncate holds, at or above its own
    (lagging) HW, a record that is committed; truncating to its HW would cut it."""
    committed = state.history.committed
    for follower, _leader in _followers_in_epoch(state, FetchPhase.TRUNCATING):
        log = follower.log
        for offset, value in committed:
            record = record_at(log, offset)
            if offset >= log.high_watermark and record is not None and record.value == value:
                return True
    return False


def follower_diverges_from_leader(state: PartitionState) -> bool:
    """The moment before a diverging suffix is cut (KIP-101 scenario 2, KAFKA-14704): a
    follower about to truncate, following the leader of its own epoch, holds a record the
    leader does not hold at that offset."""
    for follower, leader in _followers_in_epoch(state, FetchPhase.TRUNCATING):
        if leader.leader_epoch != follower.leader_epoch:
            continue
        for offset in range(follower.log.log_start_offset, follower.log.log_end_offset):
            record = record_at(follower.log, offset)
            if record is not None and record != record_at(leader.log, offset):
                return True
    return False


def follower_epoch_unknown_to_leader(state: PartitionState) -> bool:
    """KIP-279's moment (fast leader failover): a follower about to truncate holds records
    of an epoch its leader never had, so the leader's OffsetsForLeaderEpoch answer is the
    end of an older epoch."""
    for follower, leader in _followers_in_epoch(state, FetchPhase.TRUNCATING):
        mine = latest_epoch(follower.log.epoch_cache)
        if mine != UNDEFINED_EPOCH and epoch_start_offset(leader.log.epoch_cache, mine) is None:
            return True
    return False


def leader_behind_follower_epoch(state: PartitionState) -> bool:
    """KIP-320's moment: a follower on a newer epoch than the broker it follows, which still
    presumes leadership on an older one (it has not applied the newest LeaderAndIsr)."""
    for phase in FetchPhase:
        for follower, leader in _followers_in_epoch(state, phase):
            if leader.leader_epoch < follower.leader_epoch:
                return True
    return False


def follower_reached_lagging_hw(state: PartitionState) -> bool:
    """KAFKA-7128's moment: the true leader's last fetch from a follower outside its ISR
    reached the leader's (lagging) HW but not the start of the leader's epoch."""
    leader_id = true_leader(state)
    if leader_id is None:
        return False
    leader = state.replicas[leader_id]
    epoch_start = epoch_start_offset(leader.log.epoch_cache, leader.leader_epoch) or 0
    for member, progress in enumerate(leader.progress):
        if member in leader.isr or progress is None or progress.log_end_offset is None:
            continue
        if leader.log.high_watermark <= progress.log_end_offset < epoch_start:
            return True
    return False


WITNESSES: dict[str, Invariant] = {
    "record_committed": record_committed,
    "write_acknowledged": write_acknowledged,
    "partition_offline": partition_offline,
    "produce_rejected": produce_rejected,
    "committed_record_above_follower_hw": committed_record_above_follower_hw,
    "follower_diverges_from_leader": follower_diverges_from_leader,
    "follower_epoch_unknown_to_leader": follower_epoch_unknown_to_leader,
    "leader_behind_follower_epoch": leader_behind_follower_epoch,
    "follower_reached_lagging_hw": follower_reached_lagging_hw,
}
"""Reachability goals a scenario can require (stateright's `sometimes`)."""
