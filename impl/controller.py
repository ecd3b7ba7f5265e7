"""An optimized KRaft controller: one event queue, records replayed into an indexed image.

What it is
    The controller side of KRaft (KIP-500, KIP-631) for many brokers and partitions, built as
    Kafka's `QuorumController` is: every request is an event on a single-threaded queue
    (`KafkaEventQueue`); handling an event reads the image and *generates records* without
    changing anything (`ClusterControlManager`, `ReplicationControlManager`); the records are
    then appended to the metadata log as one batch, each at the next offset, and *replayed*
    into the image. The image is mutable and indexed so a broker event touches only that
    broker's partitions:

    * `BrokersToIsrs` and its ELR twin: for each broker, the partitions with it in the ISR,
      and in the ELR (a fenced broker leaves only its own ISRs; an unclean restart only its
      ISRs and ELRs);
    * for each broker, the partitions it leads (heartbeats ask "does it lead anything?" in O(1));
    * the leaderless partitions (a broker that unfences elects only there).

    Partition changes are built by a port of `PartitionChangeBuilder` (the same steps as
    `spec.controller.kraft_partitions.build_partition_change`, on sets and lists), so a
    broker failure costs O(partitions it is in) rather than O(all partitions).

Records and batching per broker
    The records are Kafka's kinds: `RegisterBrokerRecord` / `BrokerRegistrationChangeRecord`
    (`BrokerRecord` here, the whole registration), `PartitionRecord`, `PartitionChangeRecord`
    (a delta: unset fields unchanged, leader NO_LEADER_CHANGE), `ConfigRecord`. Partitions of
    one shape that a broker event changes alike share one `SharedPartitionChange` entry in the
    batch: still one record, one offset, per partition. A broker epoch
    is the offset of the broker's registration record. The partitions each batch changed
    are also collected per broker (every old and new replica of a changed partition), once
    per partition however many records touched it: `take_broker_updates()` hands each
    broker its partitions in one batch, as the controller's metadata publisher would.

Settings
    `ControllerSettings` (`min.insync.replicas`, eligible leader replicas on or off); each
    partition's `unclean.leader.election.enable`. Rules are Kafka's current ones: KIP-841
    (fenced and shutting-down brokers are ineligible), KIP-903 (broker epochs of new ISR
    members), KIP-966 (ELR, last known leader only if acceptable, KAFKA-19522).

It imports only plain data from the spec (`spec.controller.types`); the conformance suites
(`conformance.controller_sut`) compare it with `reference.controller`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from spec.controller.types import (
    NO_BROKER_EPOCH,
    NO_LEADER,
    NO_LEADER_CHANGE,
    UNKNOWN_BROKER_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerId,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    BrokerView,
    ControllerResponse,
    ControllerSettings,
    ControllerView,
    CreatePartitionRequest,
    KafkaError,
    LeaderRecoveryState,
    PartitionId,
    PartitionView,
    ReassignPartitionRequest,
    UncleanElectionRequest,
)

UNKNOWN_OFFSET = -1
"""A broker's replayed metadata offset before its first heartbeat of this registration."""

_EMPTY: frozenset[BrokerId] = frozenset()
T = TypeVar("T")


# ---------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerRecord:
    """`RegisterBrokerRecord` or `BrokerRegistrationChangeRecord`: the whole registration."""

    broker_id: BrokerId
    epoch: int
    incarnation: int
    fenced: bool
    in_controlled_shutdown: bool = False
    controlled_shutdown_offset: int = -1


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """`PartitionRecord`: a new partition."""

    partition: PartitionId
    replicas: tuple[BrokerId, ...]
    isr: frozenset[BrokerId]
    leader: BrokerId


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """`PartitionChangeRecord`: a delta (None = unchanged; leader NO_LEADER_CHANGE = unchanged)."""

    partition: PartitionId
    leader: BrokerId = NO_LEADER_CHANGE
    isr: frozenset[BrokerId] | None = None
    elr: frozenset[BrokerId] | None = None
    last_known_elr: tuple[BrokerId, ...] | None = None
    replicas: tuple[BrokerId, ...] | None = None
    adding: frozenset[BrokerId] | None = None
    removing: frozenset[BrokerId] | None = None
    leader_recovery_state: LeaderRecoveryState | None = None


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """`ConfigRecord` of the partition's topic: `unclean.leader.election.enable`."""

    partition: PartitionId
    unclean_leader_election: bool


@dataclass(frozen=True, slots=True)
class SharedPartitionChange:
    """The same `PartitionChangeRecord` for several partitions: in the log, one record per
    partition (each its own offset), `change` with `partition` set to it.

    A broker failure changes every partition it is in, and those partitions fall into a few
    shapes (replicas, ISR, ELR, leader...) that all get the same change. One entry per shape,
    replayed partition by partition through the same `_replay_change`, rather than a frozen
    record copied per partition (with the replay's index updates inlined), took the
    100,000-election `expire_session` of `python -m bench.controller` (every partition on
    brokers 0-2, led by 0) from 0.46-0.63 to 0.16-0.17 CPU-s, best of 3 on a shared machine;
    building the batch went from about 0.4 to 0.05 CPU-s, replaying it is the rest."""

    change: PartitionChangeRecord
    partitions: tuple[PartitionId, ...]


Record = BrokerRecord | PartitionRecord | PartitionChangeRecord | ConfigRecord
Entry = Record | SharedPartitionChange
"""What an event appends to its batch."""


def record_count(entries: list[Entry]) -> int:
    """The records (log offsets) the entries take."""
    return sum(len(entry.partitions) if type(entry) is SharedPartitionChange else 1 for entry in entries)


# ---------------------------------------------------------------------------------------
# The image
# ---------------------------------------------------------------------------------------


class Broker:
    """A broker registration, and the offset its last heartbeat reported."""

    __slots__ = (
        "controlled_shutdown_offset",
        "epoch",
        "fenced",
        "in_controlled_shutdown",
        "incarnation",
        "offset",
    )

    def __init__(self, record: BrokerRecord) -> None:
        self.epoch = record.epoch
        self.incarnation = record.incarnation
        self.fenced = record.fenced
        self.in_controlled_shutdown = record.in_controlled_shutdown
        self.controlled_shutdown_offset = record.controlled_shutdown_offset
        self.offset = UNKNOWN_OFFSET

    @property
    def active(self) -> bool:
        """May lead and join ISRs (`ClusterControlManager.isActive`)."""
        return not self.fenced and not self.in_controlled_shutdown


class Partition:
    """A partition registration (mutable; changed only by replaying records)."""

    __slots__ = (
        "adding",
        "elr",
        "isr",
        "last_known_elr",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "recovery",
        "removing",
        "replicas",
        "unclean",
    )

    def __init__(self, record: PartitionRecord, unclean: bool) -> None:
        self.replicas = record.replicas
        self.isr = record.isr
        self.leader = record.leader
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.elr: frozenset[BrokerId] = _EMPTY
        self.last_known_elr: tuple[BrokerId, ...] = ()
        self.adding: frozenset[BrokerId] = _EMPTY
        self.removing: frozenset[BrokerId] = _EMPTY
        self.recovery = LeaderRecoveryState.RECOVERED
        self.unclean = unclean

    @property
    def reassigning(self) -> bool:
        """`isReassignmentInProgress`."""
        return bool(self.adding or self.removing)


# ---------------------------------------------------------------------------------------
# The controller
# ---------------------------------------------------------------------------------------


class KRaftController:
    """The active controller (see the module docstring)."""

    def __init__(self, settings: ControllerSettings) -> None:
        self.settings = settings
        self.elr_enabled = settings.eligible_leader_replicas
        self.log_end = 0
        self.brokers: dict[BrokerId, Broker] = {}
        self.partitions: dict[PartitionId, Partition] = {}
        self._in_isr: dict[BrokerId, set[PartitionId]] = {}
        self._in_elr: dict[BrokerId, set[PartitionId]] = {}
        self._leads: dict[BrokerId, set[PartitionId]] = {}
        self._leaderless: set[PartitionId] = set()
        self._queue: deque[Callable[[], None]] = deque()
        self._updates: dict[BrokerId, set[PartitionId]] = {}
        self._active: frozenset[BrokerId] = frozenset()  # unfenced, not shutting down: may lead
        self._pending_unclean: dict[PartitionId, bool] = {}  # topic config of a PartitionRecord being written
        self.batches = 0  # record batches appended

    # -- the event queue -------------------------------------------------------------------

    def _submit(self, handler: Callable[[list[Entry]], T]) -> T:
        """Run `handler` as an event on the queue: it generates records from the image, which
        are then appended as one batch and replayed. Events run one at a time, in order."""
        results: list[T] = []

        def event() -> None:
            records: list[Entry] = []
            results.append(handler(records))
            self._append(records)

        self._queue.append(event)
        while self._queue:
            self._queue.popleft()()
        return results[0]

    def _append(self, records: list[Entry]) -> None:
        if not records:
            return
        self.batches += 1
        replay_change = self._replay_change
        count = 0
        for record in records:
            if isinstance(record, SharedPartitionChange):
                change = record.change
                for partition_id in record.partitions:
                    replay_change(change, partition_id)
                count += len(record.partitions)
            else:
                self._replay(record)
                count += 1
        self.log_end += count  # replaying reads no offset: the batch's end is enough

    def _replay(self, record: Record) -> None:
        if isinstance(record, PartitionChangeRecord):
            self._replay_change(record, record.partition)
        elif isinstance(record, BrokerRecord):
            broker = Broker(record)
            previous = self.brokers.get(record.broker_id)
            if previous is not None and previous.epoch == record.epoch:
                broker.offset = previous.offset
            self.brokers[record.broker_id] = broker
            self._active = frozenset(
                broker_id
                for broker_id, broker in self.brokers.items()
                if not broker.fenced and not broker.in_controlled_shutdown
            )
        elif isinstance(record, PartitionRecord):
            partition_id = record.partition
            self.partitions[partition_id] = Partition(record, self._pending_unclean.pop(partition_id))
            for member in record.isr:
                self._in_isr.setdefault(member, set()).add(partition_id)
            self._leads.setdefault(record.leader, set()).add(partition_id)
            self._note_update(partition_id, record.replicas)
        else:
            self.partitions[record.partition].unclean = record.unclean_leader_election

    def _replay_change(self, record: PartitionChangeRecord, partition_id: PartitionId) -> None:
        """Replay `record` into partition `partition_id` (its own, or a `SharedPartitionChange`'s)."""
        # The hot loop of a broker failure (one call per partition it was in): the indexes are
        # updated inline, an unchanged field costs one comparison.
        partition = self.partitions[partition_id]
        old_replicas = partition.replicas
        leader = record.leader
        if leader != NO_LEADER_CHANGE:
            self._unindex(self._leads, partition.leader, partition_id)
            if partition.leader == NO_LEADER:
                self._leaderless.discard(partition_id)
            partition.leader = leader
            partition.leader_epoch += 1
            if leader == NO_LEADER:
                self._leaderless.add(partition_id)
            else:
                led = self._leads.get(leader)
                if led is None:
                    self._leads[leader] = {partition_id}
                else:
                    led.add(partition_id)
        partition.partition_epoch += 1
        isr = record.isr
        if isr is not None:
            self._reindex(self._in_isr, partition.isr, isr, partition_id)
            partition.isr = isr
        if record.elr is not None:
            self._reindex(self._in_elr, partition.elr, record.elr, partition_id)
            partition.elr = record.elr
        if record.last_known_elr is not None:
            partition.last_known_elr = record.last_known_elr
        replicas = record.replicas
        if replicas is not None:
            partition.replicas = replicas
        if record.adding is not None:
            partition.adding = record.adding
        if record.removing is not None:
            partition.removing = record.removing
        if record.leader_recovery_state is not None:
            partition.recovery = record.leader_recovery_state
        updates = self._updates
        for broker_id in old_replicas:
            changed = updates.get(broker_id)
            if changed is None:
                updates[broker_id] = {partition_id}
            else:
                changed.add(partition_id)
        if replicas is not None:
            self._note_update(partition_id, replicas)

    @staticmethod
    def _unindex(
        index: dict[BrokerId, set[PartitionId]], broker_id: BrokerId, partition_id: PartitionId
    ) -> None:
        members = index.get(broker_id)
        if members is not None:
            members.discard(partition_id)

    @staticmethod
    def _reindex(
        index: dict[BrokerId, set[PartitionId]],
        before: frozenset[BrokerId],
        after: frozenset[BrokerId],
        partition_id: PartitionId,
    ) -> None:
        if before == after:
            return
        for broker_id in before - after:
            index[broker_id].discard(partition_id)
        for broker_id in after - before:
            members = index.get(broker_id)
            if members is None:
                index[broker_id] = {partition_id}
            else:
                members.add(partition_id)

    def _note_update(self, partition_id: PartitionId, replicas: tuple[BrokerId, ...]) -> None:
        for broker_id in replicas:
            self._updates.setdefault(broker_id, set()).add(partition_id)

    def take_broker_updates(self) -> dict[BrokerId, tuple[PartitionId, ...]]:
        """The partitions changed since the last call, batched per replica broker."""
        updates = {broker_id: tuple(sorted(ids)) for broker_id, ids in self._updates.items() if ids}
        self._updates = {}
        return updates

    # -- partition changes (PartitionChangeBuilder) ------------------------------------------

    def _acceptable(
        self, remove: BrokerId = NO_LEADER, add: BrokerId = NO_LEADER, unclean: BrokerId = NO_LEADER
    ) -> frozenset[BrokerId]:
        """The brokers that may lead (computed once per event): the active ones
        (`ClusterControlManager.isActive`), and `add`, being unfenced in this same batch; never
        `remove` (being fenced or shut down) nor `unclean` (restarting uncleanly)."""
        if add == NO_LEADER and remove == NO_LEADER and unclean == NO_LEADER:
            return self._active
        active = set(self._active)
        if add != NO_LEADER:
            active.add(add)
        active.discard(remove)
        active.discard(unclean)
        return frozenset(active)

    def _build_change(
        self,
        partition_id: PartitionId,
        target_isr: frozenset[BrokerId],
        acceptable: frozenset[BrokerId],
        unclean_election: bool,
        unclean_shutdown: frozenset[BrokerId] = _EMPTY,
        target_replicas: tuple[BrokerId, ...] | None = None,
        target_adding: frozenset[BrokerId] | None = None,
        target_removing: frozenset[BrokerId] | None = None,
        target_recovery: LeaderRecoveryState | None = None,
    ) -> PartitionChangeRecord | None:
        """`PartitionChangeBuilder.build`: the record taking the partition to the targets, or
        None when nothing would change (`target_recovery`: an AlterPartition's KIP-704 state)."""
        partition = self.partitions[partition_id]
        replicas = partition.replicas if target_replicas is None else target_replicas
        adding = partition.adding if target_adding is None else target_adding
        removing = partition.removing if target_removing is None else target_removing
        isr = target_isr
        if adding or removing:  # completeReassignmentIfNeeded
            final_isr = frozenset(replica for replica in isr if replica not in removing)
            final_replicas = tuple(replica for replica in replicas if replica not in removing)
            if final_isr and final_replicas and final_isr >= frozenset(final_replicas):
                isr, replicas, adding, removing = final_isr, final_replicas, _EMPTY, _EMPTY
        elr_enabled = self.elr_enabled
        target_elr = partition.elr
        if elr_enabled:  # maybePopulateTargetElr
            if len(isr) >= min(self.settings.min_insync_replicas, len(partition.replicas)):
                target_elr = _EMPTY
            else:
                target_elr = (partition.elr | partition.isr) - isr - unclean_shutdown
        node, unclean = self._elect(partition, replicas, isr, target_elr, acceptable, unclean_election)
        leader = NO_LEADER_CHANGE
        record_isr: frozenset[BrokerId] | None = None
        recovery: LeaderRecoveryState | None = None
        if node != partition.leader:
            if node in target_elr:
                isr = frozenset((node,))
                target_elr = target_elr - isr
            leader = node
            if unclean:
                record_isr = frozenset((node,))
                if partition.recovery is not LeaderRecoveryState.RECOVERING:
                    recovery = LeaderRecoveryState.RECOVERING
        if leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(replicas):
            leader = partition.leader  # a replica left the assignment: bump the leader epoch
        if record_isr is not None or not elr_enabled:
            target_elr = _EMPTY
        record_elr = None if target_elr == partition.elr else target_elr
        if record_isr is None and (isr or elr_enabled) and isr != partition.isr:
            record_isr = isr
        last_known: tuple[BrokerId, ...] | None = None
        if elr_enabled:  # maybeUpdateLastKnownLeader
            known = partition.last_known_elr
            if (
                record_isr is not None
                and not record_isr
                and (len(known) != 1 or known[0] != partition.leader)
            ):
                last_known = (partition.leader,)
            elif known and (leader >= 0 or NO_LEADER not in (partition.leader, leader)):
                last_known = ()
        if target_recovery is not None and target_recovery is not partition.recovery:
            recovery = target_recovery  # setTargetLeaderRecoveryState wins over the election's
        if (
            leader == NO_LEADER_CHANGE
            and record_isr is None
            and record_elr is None
            and last_known is None
            and recovery is None
            and replicas == partition.replicas
            and adding == partition.adding
            and removing == partition.removing
        ):
            return None  # nothing would change: no record
        return PartitionChangeRecord(
            partition=partition_id,
            leader=leader,
            isr=record_isr,
            elr=record_elr,
            last_known_elr=last_known,
            replicas=None if replicas == partition.replicas else replicas,
            adding=None if adding == partition.adding else adding,
            removing=None if removing == partition.removing else removing,
            leader_recovery_state=recovery,
        )

    def _elect(
        self,
        partition: Partition,
        replicas: tuple[BrokerId, ...],
        isr: frozenset[BrokerId],
        elr: frozenset[BrokerId],
        acceptable: frozenset[BrokerId],
        unclean_election: bool,
    ) -> tuple[BrokerId, bool]:
        """`electAnyLeader`: keep a valid leader, else the first valid replica (ISR, or ELR
        when the ISR is empty), else the last known leader if acceptable, else unclean."""
        electable = isr if isr else elr
        if partition.leader != NO_LEADER and partition.leader in electable and partition.leader in acceptable:
            return partition.leader, False
        for replica in replicas:
            if replica in electable and replica in acceptable:
                return replica, False
        known = partition.last_known_elr
        if self.elr_enabled and not isr and not elr and len(known) == 1 and known[0] in acceptable:
            return known[0], True
        if unclean_election:
            for replica in replicas:
                if replica in acceptable:
                    return replica, True
        return NO_LEADER, False

    def _leader_and_isr_updates(
        self,
        records: list[Entry],
        partition_ids: set[PartitionId] | list[PartitionId],
        remove: BrokerId = NO_LEADER,
        add: BrokerId = NO_LEADER,
        unclean: BrokerId = NO_LEADER,
    ) -> None:
        """`generateLeaderAndIsrUpdates` over the given partitions."""
        acceptable = self._acceptable(remove, add, unclean)
        dropped = frozenset((remove, unclean))
        shutdown = frozenset((unclean,)) if unclean != NO_LEADER else _EMPTY
        # The change depends only on the partition's shape (not its id or epochs), and a broker
        # event meets few shapes (partitions sharing a replica set usually share one): build
        # each shape's change once, and append it once for all the partitions of that shape.
        changes: dict[tuple[object, ...], tuple[PartitionChangeRecord | None, list[PartitionId]]] = {}
        partitions = self.partitions
        for partition_id in sorted(partition_ids):
            partition = partitions[partition_id]
            shape = (
                partition.replicas,
                partition.isr,
                partition.elr,
                partition.last_known_elr,
                partition.leader,
                partition.adding,
                partition.removing,
                partition.recovery,
                partition.unclean,
            )
            built = changes.get(shape)
            if built is not None:
                built[1].append(partition_id)
                continue
            change = self._build_change(
                partition_id, partition.isr - dropped, acceptable, partition.unclean, shutdown
            )
            changes[shape] = (change, [partition_id])
        for change, same_shape in changes.values():
            if change is None:
                continue
            if len(same_shape) == 1:
                records.append(change)
            else:
                records.append(SharedPartitionChange(change, tuple(same_shape)))

    def _fence_records(self, records: list[Entry], broker_id: BrokerId) -> None:
        """`handleBrokerFenced`: out of its ISRs (elections where it led), then the fence."""
        self._leader_and_isr_updates(records, self._in_isr.get(broker_id, set()), remove=broker_id)
        broker = self.brokers[broker_id]
        records.append(BrokerRecord(broker_id, broker.epoch, broker.incarnation, fenced=True))

    # -- requests --------------------------------------------------------------------------

    def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        """`ClusterControlManager.registerBroker`."""

        def handle(records: list[Entry]) -> BrokerRegistrationResponse:
            broker_id = request.broker_id
            existing = self.brokers.get(broker_id)
            if existing is not None and existing.incarnation != request.incarnation and existing.active:
                return BrokerRegistrationResponse(KafkaError.DUPLICATE_BROKER_REGISTRATION, NO_BROKER_EPOCH)
            if existing is not None and request.previous_broker_epoch != existing.epoch:
                touched = self._in_isr.get(broker_id, set()) | self._in_elr.get(broker_id, set())
                self._leader_and_isr_updates(records, touched, unclean=broker_id)
            epoch = self.log_end + record_count(records)
            records.append(BrokerRecord(broker_id, epoch, request.incarnation, fenced=True))
            return BrokerRegistrationResponse(KafkaError.NONE, epoch)

        return self._submit(handle)

    def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        """`processBrokerHeartbeat`: FENCED -> UNFENCED once caught up to its registration;
        UNFENCED -> CONTROLLED_SHUTDOWN (it leads something) or SHUTDOWN_NOW when it wants to
        stop; CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every active
        broker replayed the record that began its shutdown."""

        def handle(records: list[Entry]) -> BrokerHeartbeatResponse:
            broker_id = request.broker_id
            broker = self.brokers.get(broker_id)
            if broker is None or broker.epoch != request.broker_epoch:
                return BrokerHeartbeatResponse(KafkaError.STALE_BROKER_EPOCH, True, False, False)
            broker.offset = request.current_metadata_offset
            leads = bool(self._leads.get(broker_id))
            shut_down = False
            if broker.fenced:
                if request.want_shut_down:
                    self._fence_records(records, broker_id)
                    shut_down = True
                elif request.current_metadata_offset >= broker.epoch:
                    records.append(BrokerRecord(broker_id, broker.epoch, broker.incarnation, fenced=False))
                    self._leader_and_isr_updates(records, self._leaderless, add=broker_id)
                    return BrokerHeartbeatResponse(KafkaError.NONE, False, False, False)
            elif not broker.in_controlled_shutdown:
                if request.want_shut_down:
                    if leads:
                        offset = self.log_end
                        records.append(
                            BrokerRecord(broker_id, broker.epoch, broker.incarnation, False, True, offset)
                        )
                        self._leader_and_isr_updates(
                            records, self._in_isr.get(broker_id, set()), remove=broker_id
                        )
                        return BrokerHeartbeatResponse(KafkaError.NONE, False, True, False)
                    self._fence_records(records, broker_id)
                    shut_down = True
            elif not leads and broker.controlled_shutdown_offset <= self._lowest_active_offset(broker_id):
                self._fence_records(records, broker_id)
                shut_down = True
            if shut_down:
                return BrokerHeartbeatResponse(KafkaError.NONE, True, False, True)
            return BrokerHeartbeatResponse(
                KafkaError.NONE, broker.fenced, broker.in_controlled_shutdown, False
            )

        return self._submit(handle)

    def _lowest_active_offset(self, broker_id: BrokerId) -> int:
        return min(
            (
                other.offset
                for other_id, other in self.brokers.items()
                if other_id != broker_id and other.active
            ),
            default=self.log_end,
        )

    def expire_session(self, broker_id: BrokerId) -> None:
        """The broker's session expired: fence it (`maybeFenceOneStaleBroker`)."""

        def handle(records: list[Entry]) -> None:
            broker = self.brokers.get(broker_id)
            if broker is not None and not broker.fenced:
                self._fence_records(records, broker_id)

        self._submit(handle)

    def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """`ReplicationControlManager.alterPartition` for one partition."""

        def handle(records: list[Entry]) -> AlterPartitionResponse:
            error = self._validate_alter_partition(request)
            if error is not KafkaError.NONE:
                return AlterPartitionResponse(error)
            partition = self.partitions[request.partition]
            new_isr = frozenset(member for member, _ in request.new_isr)
            record = self._build_change(
                request.partition,
                new_isr,
                self._acceptable(),
                partition.unclean,
                target_recovery=request.leader_recovery_state,
            )
            if record is not None:
                records.append(record)
                if record.leader not in (NO_LEADER_CHANGE, request.broker_id):
                    return AlterPartitionResponse(KafkaError.NEW_LEADER_ELECTED)
            return AlterPartitionResponse(KafkaError.NONE)  # the partition is added once replayed

        response = self._submit(handle)
        if response.error is KafkaError.NONE:
            return AlterPartitionResponse(KafkaError.NONE, self._view(request.partition))
        return response

    def _validate_alter_partition(self, request: AlterPartitionRequest) -> KafkaError:
        """`checkBrokerEpoch`, then `validateAlterPartitionData` (see
        `spec.controller.kraft_alter_partition` for the order of the errors)."""
        requester = self.brokers.get(request.broker_id)
        if requester is None or requester.epoch != request.broker_epoch:
            return KafkaError.STALE_BROKER_EPOCH
        partition = self.partitions.get(request.partition)
        if partition is None:
            return KafkaError.UNKNOWN_TOPIC_OR_PARTITION
        if (
            request.leader_epoch > partition.leader_epoch
            or request.partition_epoch > partition.partition_epoch
        ):
            return KafkaError.NOT_CONTROLLER
        if request.leader_epoch < partition.leader_epoch:
            return KafkaError.FENCED_LEADER_EPOCH
        if request.broker_id != partition.leader:
            return KafkaError.INVALID_REQUEST
        if request.partition_epoch < partition.partition_epoch:
            return KafkaError.INVALID_UPDATE_VERSION
        members = {member for member, _ in request.new_isr}
        if partition.leader not in members or not members <= set(partition.replicas):
            return KafkaError.INVALID_REQUEST
        if request.leader_recovery_state is LeaderRecoveryState.RECOVERING and (
            len(members) > 1 or partition.recovery is LeaderRecoveryState.RECOVERED
        ):
            return KafkaError.INVALID_REQUEST
        for member, member_epoch in request.new_isr:
            broker = self.brokers.get(member)
            if broker is None or broker.fenced or broker.in_controlled_shutdown:
                return KafkaError.INELIGIBLE_REPLICA
            if member_epoch not in (UNKNOWN_BROKER_EPOCH, broker.epoch):
                return KafkaError.INELIGIBLE_REPLICA
        return KafkaError.NONE

    def _valid_assignment(self, replicas: tuple[BrokerId, ...]) -> bool:
        return (
            bool(replicas)
            and len(set(replicas)) == len(replicas)
            and all(replica in self.brokers for replica in replicas)
        )

    def create_partition(self, request: CreatePartitionRequest) -> ControllerResponse:
        """`createTopic` with a manual assignment: ISR = the active replicas, the first leads."""

        def handle(records: list[Entry]) -> ControllerResponse:
            if request.partition in self.partitions:
                return ControllerResponse(KafkaError.TOPIC_ALREADY_EXISTS)
            if not self._valid_assignment(request.replicas):
                return ControllerResponse(KafkaError.INVALID_REPLICA_ASSIGNMENT)
            isr = [replica for replica in request.replicas if self.brokers[replica].active]
            if not isr:
                return ControllerResponse(KafkaError.INVALID_REPLICATION_FACTOR)
            self._pending_unclean[request.partition] = request.unclean_leader_election
            records.append(PartitionRecord(request.partition, request.replicas, frozenset(isr), isr[0]))
            return ControllerResponse(KafkaError.NONE)

        return self._submit(handle)

    def reassign(self, request: ReassignPartitionRequest) -> ControllerResponse:
        """`changePartitionReassignment`: replicas := target then those being removed."""

        def handle(records: list[Entry]) -> ControllerResponse:
            partition = self.partitions.get(request.partition)
            target = request.target_replicas
            if partition is None:
                return ControllerResponse(KafkaError.UNKNOWN_TOPIC_OR_PARTITION)
            if not self._valid_assignment(target):
                return ControllerResponse(KafkaError.INVALID_REPLICA_ASSIGNMENT)
            if partition.reassigning:
                return ControllerResponse(KafkaError.REASSIGNMENT_IN_PROGRESS)
            if target == partition.replicas:
                return ControllerResponse(KafkaError.NONE)
            removing = tuple(replica for replica in partition.replicas if replica not in target)
            record = self._build_change(
                request.partition,
                partition.isr,
                self._acceptable(),
                False,
                target_replicas=(*target, *removing),
                target_adding=frozenset(target) - frozenset(partition.replicas),
                target_removing=frozenset(removing),
            )
            if record is not None:
                records.append(record)
            return ControllerResponse(KafkaError.NONE)

        return self._submit(handle)

    def set_unclean_leader_election(self, request: UncleanElectionRequest) -> ControllerResponse:
        """The topic's `unclean.leader.election.enable`; turned on, a leaderless partition elects."""

        def handle(records: list[Entry]) -> ControllerResponse:
            partition = self.partitions.get(request.partition)
            if partition is None:
                return ControllerResponse(KafkaError.UNKNOWN_TOPIC_OR_PARTITION)
            records.append(ConfigRecord(request.partition, request.enabled))
            if request.enabled and partition.leader == NO_LEADER:
                change = self._build_change(request.partition, partition.isr, self._acceptable(), True)
                if change is not None:
                    records.append(change)
            return ControllerResponse(KafkaError.NONE)

        return self._submit(handle)

    # -- views -----------------------------------------------------------------------------

    def _view(self, partition_id: PartitionId) -> PartitionView:
        partition = self.partitions[partition_id]
        return PartitionView(
            partition=partition_id,
            replicas=partition.replicas,
            isr=tuple(sorted(partition.isr)),
            leader=partition.leader,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch,
            elr=tuple(sorted(partition.elr)),
            last_known_elr=partition.last_known_elr,
            adding=tuple(sorted(partition.adding)),
            removing=tuple(sorted(partition.removing)),
            leader_recovery_state=partition.recovery,
            unclean_leader_election=partition.unclean,
        )

    def observe(self) -> ControllerView:
        """The image as plain data."""
        return ControllerView(
            log_end=self.log_end,
            brokers=tuple(
                BrokerView(
                    broker_id,
                    broker.epoch,
                    broker.incarnation,
                    broker.fenced,
                    broker.in_controlled_shutdown,
                    broker.controlled_shutdown_offset,
                )
                for broker_id, broker in sorted(self.brokers.items())
            ),
            partitions=tuple(self._view(partition_id) for partition_id in sorted(self.partitions)),
        )
