"""KRaft partition registrations and how they change, record by record.

Kafka classes: `PartitionRegistration`, `PartitionChangeRecord`, `PartitionChangeBuilder`.

What it is
    In KRaft the controller's view of a partition is a `PartitionRegistration`: its replica
    assignment (in assignment order), the in-sync replicas, the eligible leader replicas and
    last known ELR of KIP-966, the leader, the leader recovery state (KIP-704), the leader
    epoch and the partition epoch. It changes only by records in the metadata log: a
    `PartitionChangeRecord` is a *delta* (a field left unset means "unchanged"; leader
    `NO_LEADER_CHANGE` = -2 means the leader is not set, `NO_LEADER` = -1 means "no leader"),
    and `PartitionRegistration.merge` applies one: the partition epoch grows by one with every
    record, the leader epoch by one exactly when the record sets the leader field.

    `build_partition_change` is Kafka's `PartitionChangeBuilder.build`, in its order:
    complete a reassignment the new ISR allows; maintain the ELR; elect a leader if the
    current one is no longer valid; bump the leader epoch when a replica leaves the
    assignment; write the ELR fields; write the ISR (empty only with ELR); remember the last
    known leader; write the assignment; suppress a record that changes nothing. Every
    controller path that touches a partition (broker fenced, unfenced, in controlled
    shutdown, re-registered after an unclean shutdown, AlterPartition, reassignment) builds
    its record here, each with its own target ISR and its own idea of an acceptable leader.

Elections (`elect_leader`, `PartitionChangeBuilder.electLeader`)
    A valid new leader is an acceptable broker (registered, not fenced, not in controlled
    shutdown: `ClusterControlManager.isActive`) that is in the target ISR, or, when the target
    ISR is empty, in the target ELR (KIP-966). In order: keep the current leader if it is
    still valid; else the first valid replica in assignment order; else, with ELR, the last
    known leader when ISR and ELR are both empty (KIP-966's "balanced" recovery, flagged
    unclean); else, with `unclean.leader.election.enable`, the first acceptable replica in
    assignment order (the ISR becomes just that leader and the partition RECOVERING); else no
    leader. A leader elected from the ELR becomes the whole ISR and leaves the ELR.

Rules (named, so a counterexample can be replayed against the rule it broke)
    `LastKnownLeaderRule.UNCHECKED`: Kafka 3.7-4.0, `canElectLastKnownLeader` returns true
    without asking whether the last known leader is acceptable, so a fenced broker can be
    elected (KAFKA-19522). `LastKnownLeaderRule.ACCEPTABLE` is the fix (Kafka 4.1): the last
    known leader is elected only if it is acceptable.

    `ElrRule.ENABLED` / `DISABLED`: KIP-966's eligible leader replicas (the
    `eligible.leader.replicas.version` feature). Without it the ISR never becomes empty: the
    last member stays even when it is fenced, and no ELR or last known leader is kept.

Not modelled: directories (KIP-858, every replica's directory is online), the leader epoch
bump on ISR shrink that metadata versions before 3.6 needed (KAFKA-15021), the PREFERRED
election type, `useLastKnownLeaderInBalancedRecovery` = false (log-inspection recovery).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init, memoized

BrokerId = int

NO_LEADER = -1
"""`LeaderConstants.NO_LEADER`: the partition has no leader (it is offline)."""

NO_LEADER_CHANGE = -2
"""`LeaderConstants.NO_LEADER_CHANGE`: a change record that leaves the leader (and the leader epoch) as is."""


class LeaderRecoveryState(enum.Enum):
    """KIP-704: RECOVERING after an unclean election until the leader says it has recovered."""

    RECOVERED = "recovered"
    RECOVERING = "recovering"

    __hash__ = object.__hash__


class ElrRule(enum.Enum):
    """KIP-966 eligible leader replicas: on (`eligible.leader.replicas.version=1`) or off."""

    ENABLED = "on"
    DISABLED = "off"

    __hash__ = object.__hash__


class LastKnownLeaderRule(enum.Enum):
    """Whether the last known leader (KIP-966 balanced recovery) must be acceptable to be elected."""

    UNCHECKED = "unchecked"  # Kafka 3.7-4.0: a fenced last known leader is elected (KAFKA-19522)
    ACCEPTABLE = "acceptable"  # the fix of KAFKA-19522 (Kafka 4.1)

    __hash__ = object.__hash__


class Election(enum.Enum):
    """`PartitionChangeBuilder.Election`: ONLINE elects from the ISR (and ELR); UNCLEAN may
    elect outside them (`unclean.leader.election.enable`)."""

    ONLINE = "online"
    UNCLEAN = "unclean"

    __hash__ = object.__hash__


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """The controller's record of one partition (`org.apache.kafka.metadata.PartitionRegistration`)."""

    replicas: tuple[BrokerId, ...]  # the assignment, in order (elections scan it in this order)
    isr: frozenset[BrokerId]
    leader: BrokerId  # NO_LEADER when offline
    leader_epoch: int
    partition_epoch: int
    elr: frozenset[BrokerId] = frozenset()  # KIP-966 eligible leader replicas
    last_known_elr: tuple[BrokerId, ...] = ()  # KIP-966: here always the last known leader, or empty
    adding: frozenset[BrokerId] = frozenset()  # reassignment in progress: replicas being added
    removing: frozenset[BrokerId] = frozenset()  # ... and being removed
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def has_leader(self) -> bool:
        """The partition is online."""
        return self.leader != NO_LEADER

    @property
    def reassigning(self) -> bool:
        """A reassignment is in progress (`isReassignmentInProgress`)."""
        return bool(self.adding or self.removing)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A `PartitionChangeRecord`: a delta, every field None (or NO_LEADER_CHANGE) = unchanged."""

    leader: BrokerId = NO_LEADER_CHANGE
    isr: frozenset[BrokerId] | None = None
    elr: frozenset[BrokerId] | None = None
    last_known_elr: tuple[BrokerId, ...] | None = None
    replicas: tuple[BrokerId, ...] | None = None
    adding: frozenset[BrokerId] | None = None
    removing: frozenset[BrokerId] | None = None
    leader_recovery_state: LeaderRecoveryState | None = None
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@memoized
def merge(partition: PartitionRegistration, record: PartitionChangeRecord) -> PartitionRegistration:
    """`PartitionRegistration.merge`: apply one change record. The partition epoch always
    grows by one; the leader epoch grows by one exactly when the record sets the leader."""
    if record.leader == NO_LEADER_CHANGE:
        leader, leader_epoch = partition.leader, partition.leader_epoch
    else:
        leader, leader_epoch = record.leader, partition.leader_epoch + 1
    return PartitionRegistration(
        replicas=partition.replicas if record.replicas is None else record.replicas,
        isr=partition.isr if record.isr is None else record.isr,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition.partition_epoch + 1,
        elr=partition.elr if record.elr is None else record.elr,
        last_known_elr=partition.last_known_elr if record.last_known_elr is None else record.last_known_elr,
        adding=partition.adding if record.adding is None else record.adding,
        removing=partition.removing if record.removing is None else record.removing,
        leader_recovery_state=(
            partition.leader_recovery_state
            if record.leader_recovery_state is None
            else record.leader_recovery_state
        ),
    )


@fast_init
@dataclass(frozen=True, slots=True)
class ElectionResult:
    """`PartitionChangeBuilder.ElectionResult`: the chosen node (or NO_LEADER) and whether the
    choice may lose committed data."""

    node: BrokerId
    unclean: bool


def elect_leader(
    partition: PartitionRegistration,
    target_replicas: tuple[BrokerId, ...],
    target_isr: frozenset[BrokerId],
    target_elr: frozenset[BrokerId],
    acceptable: Callable[[BrokerId], bool],
    election: Election,
    elr: ElrRule,
    last_known_leader: LastKnownLeaderRule,
) -> ElectionResult:
    """`PartitionChangeBuilder.electAnyLeader` (see the module docstring for the order)."""

    def valid(replica: BrokerId) -> bool:
        in_isr = replica in target_isr or (not target_isr and replica in target_elr)
        return in_isr and acceptable(replica)

    if partition.leader != NO_LEADER and valid(partition.leader):
        return ElectionResult(partition.leader, False)
    for replica in target_replicas:
        if valid(replica):
            return ElectionResult(replica, False)
    if _can_elect_last_known_leader(partition, target_isr, target_elr, acceptable, elr, last_known_leader):
        return ElectionResult(partition.last_known_elr[0], True)
    if election is Election.UNCLEAN:
        for replica in target_replicas:
            if acceptable(replica):
                return ElectionResult(replica, True)
    return ElectionResult(NO_LEADER, False)


def _can_elect_last_known_leader(
    partition: PartitionRegistration,
    target_isr: frozenset[BrokerId],
    target_elr: frozenset[BrokerId],
    acceptable: Callable[[BrokerId], bool],
    elr: ElrRule,
    rule: LastKnownLeaderRule,
) -> bool:
    """`canElectLastKnownLeader`: with ELR, ISR and ELR both empty and exactly one last known
    leader. Before KAFKA-19522 the leader's acceptability was only logged, not required."""
    if elr is ElrRule.DISABLED or target_isr or target_elr or len(partition.last_known_elr) != 1:
        return False
    return rule is LastKnownLeaderRule.UNCHECKED or acceptable(partition.last_known_elr[0])


@fast_init
@dataclass(frozen=True, slots=True)
class ChangeOutcome:
    """What `build_partition_change` decided: the record (None when nothing changes) and how
    the leader was chosen, for the ghost history (`from_elr`, `unclean`)."""

    record: PartitionChangeRecord | None
    unclean: bool = False  # an unclean or last-known-leader election happened
    from_elr: bool = False  # the new leader came from the ELR (KIP-966)


def build_partition_change(
    partition: PartitionRegistration,
    target_isr: frozenset[BrokerId],
    acceptable: Callable[[BrokerId], bool],
    min_isr: int,
    election: Election,
    elr: ElrRule,
    last_known_leader: LastKnownLeaderRule,
    unclean_shutdown_replicas: frozenset[BrokerId] = frozenset(),
    target_replicas: tuple[BrokerId, ...] | None = None,
    target_adding: frozenset[BrokerId] | None = None,
    target_removing: frozenset[BrokerId] | None = None,
    target_recovery: LeaderRecoveryState | None = None,
) -> ChangeOutcome:
    """`PartitionChangeBuilder.build` (useLastKnownLeaderInBalancedRecovery = true, metadata
    version 3.7 or later): the change record that takes `partition` towards the targets.
    `target_recovery` is an AlterPartition's leader recovery state (KIP-704: the leader of a
    RECOVERING partition says RECOVERED once it has recovered); None keeps the partition's."""
    replicas = partition.replicas if target_replicas is None else target_replicas
    adding = partition.adding if target_adding is None else target_adding
    removing = partition.removing if target_removing is None else target_removing
    isr = target_isr

    # completeReassignmentIfNeeded (PartitionReassignmentReplicas.maybeCompleteReassignment)
    if adding or removing:
        final_isr = frozenset(replica for replica in isr if replica not in removing)
        final_replicas = tuple(replica for replica in replicas if replica not in removing)
        if final_isr and final_replicas and final_isr >= frozenset(final_replicas):
            isr, replicas, adding, removing = final_isr, final_replicas, frozenset(), frozenset()

    # maybePopulateTargetElr
    target_elr = partition.elr
    if elr is ElrRule.ENABLED:
        if len(isr) >= min_isr:
            target_elr = frozenset()
        else:
            target_elr = (partition.elr | partition.isr) - isr - unclean_shutdown_replicas

    # tryElection
    leader = NO_LEADER_CHANGE
    record_isr: frozenset[BrokerId] | None = None
    recovery: LeaderRecoveryState | None = None
    result = elect_leader(partition, replicas, isr, target_elr, acceptable, election, elr, last_known_leader)
    from_elr = False
    if result.node != partition.leader:
        if result.node in target_elr:
            isr = frozenset({result.node})
            target_elr = target_elr - {result.node}
            from_elr = True
        leader = result.node
        if result.unclean:
            record_isr = frozenset({result.node})
            if partition.leader_recovery_state is not LeaderRecoveryState.RECOVERING:
                recovery = LeaderRecoveryState.RECOVERING

    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(replicas):
        leader = partition.leader

    # maybeUpdateRecordElr
    if record_isr is not None or elr is ElrRule.DISABLED:
        target_elr = frozenset()
    record_elr = None if target_elr == partition.elr else target_elr

    # the ISR field: empty only with ELR
    if record_isr is None and (isr or elr is ElrRule.ENABLED) and isr != partition.isr:
        record_isr = isr

    # maybeUpdateLastKnownLeader
    record_last_known: tuple[BrokerId, ...] | None = None
    if elr is ElrRule.ENABLED:
        if (
            record_isr is not None
            and not record_isr
            and (len(partition.last_known_elr) != 1 or partition.last_known_elr[0] != partition.leader)
        ):
            record_last_known = (partition.leader,)
        elif partition.last_known_elr and (leader >= 0 or NO_LEADER not in (partition.leader, leader)):
            record_last_known = ()

    # setTargetLeaderRecoveryState: the requested state wins over the election's
    if target_recovery is not None and target_recovery is not partition.leader_recovery_state:
        recovery = target_recovery

    record = PartitionChangeRecord(
        leader=leader,
        isr=record_isr,
        elr=record_elr,
        last_known_elr=record_last_known,
        replicas=None if replicas == partition.replicas else replicas,
        adding=None if adding == partition.adding else adding,
        removing=None if removing == partition.removing else removing,
        leader_recovery_state=recovery,
    )
    if record == _NO_OP:
        return ChangeOutcome(None)
    unclean = result.unclean and result.node != partition.leader
    return ChangeOutcome(record, unclean=unclean, from_elr=from_elr)


_NO_OP = PartitionChangeRecord()
