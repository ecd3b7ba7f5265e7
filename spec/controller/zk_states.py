"""The ZooKeeper-era controller's partition and replica state machines, and its leader elections.

Partition state machine (`kafka.controller.PartitionStateMachine`)
    The controller keeps one state per partition; a transition is legal only from one of the
    target's `validPreviousStates`:

    ====================  ===============================================  ============================
    target                valid previous states                            what the move does
    ====================  ===============================================  ============================
    NewPartition          NonExistentPartition                             load the assignment
    OnlinePartition       NewPartition, OnlinePartition, OfflinePartition  from New: the first live
                                                                           replica leads, ISR = live
                                                                           replicas; otherwise elect
                                                                           with a strategy; write the
                                                                           state znode; LeaderAndIsr
    OfflinePartition      NewPartition, OnlinePartition, OfflinePartition  mark only (leader died)
    NonExistentPartition  OfflinePartition                                 mark only (topic deleted)
    ====================  ===============================================  ============================

Replica state machine (`kafka.controller.ReplicaStateMachine`)

    =========================  ========================================================
    target                     valid previous states
    =========================  ========================================================
    NewReplica                 NonExistentReplica
    OnlineReplica              NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    OfflineReplica             NewReplica, OnlineReplica, OfflineReplica, ReplicaDeletionIneligible
    ReplicaDeletionStarted     OfflineReplica
    ReplicaDeletionSuccessful  ReplicaDeletionStarted
    ReplicaDeletionIneligible  OfflineReplica, ReplicaDeletionStarted
    NonExistentReplica         ReplicaDeletionSuccessful
    =========================  ========================================================

    Kafka checks every requested move against these tables (`checkValidPartitionStateChange`,
    `checkValidReplicaStateChange`) and logs an invalid one as an error without making it; the
    spec does the same and also records it, so "no invalid move is ever asked for" is a
    property the model checker can check.

Leader election strategies (`PartitionLeaderElectionAlgorithms`, `kafka.controller.Election`)
    All scan a replica list in order, which is why brokers are not interchangeable here:

    * offline (`OfflinePartitionLeaderElectionStrategy`): the first assigned replica that is
      live and in the ISR; the new ISR is the live ISR members. If there is none and unclean
      election is allowed (`unclean.leader.election.enable`), the first live assigned replica,
      with ISR := [it].
    * reassignment (`ReassignPartitionLeaderElectionStrategy`): the first *target* replica
      that is live and in the ISR; the ISR is kept.
    * preferred replica (`PreferredReplicaPartitionLeaderElectionStrategy`): the head of the
      assignment, only if it is live and in the ISR; the ISR is kept.
    * controlled shutdown (`ControlledShutdownPartitionLeaderElectionStrategy`): the first
      assigned replica that is live (shutting down counts as live), in the ISR and not
      shutting down; the new ISR leaves out the brokers shutting down.

    Every new leader gets leader epoch + 1 (`LeaderAndIsr.newLeaderAndIsr`).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from spec._frozen import fast_init


class PartitionState(enum.Enum):
    """`kafka.controller.PartitionState`."""

    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"

    __hash__ = object.__hash__


class ReplicaState(enum.Enum):
    """`kafka.controller.ReplicaState`."""

    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    __hash__ = object.__hash__


_P = PartitionState
_R = ReplicaState

PARTITION_VALID_PREVIOUS: Mapping[PartitionState, frozenset[PartitionState]] = {
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
}
"""`PartitionState.validPreviousStates`, target -> the states it may be entered from."""

REPLICA_VALID_PREVIOUS: Mapping[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}
"""`ReplicaState.validPreviousStates`, target -> the states it may be entered from."""


def partition_move_is_legal(current: PartitionState, target: PartitionState) -> bool:
    """Kafka's `checkValidPartitionStateChange` for one partition."""
    return current in PARTITION_VALID_PREVIOUS[target]


def replica_move_is_legal(current: ReplicaState, target: ReplicaState) -> bool:
    """Kafka's `checkValidReplicaStateChange` for one replica."""
    return current in REPLICA_VALID_PREVIOUS[target]


# ---------------------------------------------------------------------------------------
# Leader election strategies
# ---------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class Election:
    """An election's result: the new leader, the new ISR, and whether it was unclean."""

    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_election(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], allow_unclean: bool
) -> Election | None:
    """`offlinePartitionLeaderElection` and `Election.leaderForOffline`."""
    for replica in assignment:
        if replica in live and replica in isr:
            return Election(replica, tuple(sorted(member for member in isr if member in live)))
    if allow_unclean:
        for replica in assignment:
            if replica in live:
                return Election(replica, (replica,), unclean=True)
    return None


def reassignment_election(
    target: Sequence[int], isr: Collection[int], live: Collection[int]
) -> Election | None:
    """`reassignPartitionLeaderElection`: first target replica that is live and in the ISR."""
    for replica in target:
        if replica in live and replica in isr:
            return Election(replica, tuple(sorted(isr)))
    return None


def preferred_election(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int]
) -> Election | None:
    """`preferredReplicaPartitionLeaderElection`: the head of the assignment or nobody."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return Election(assignment[0], tuple(sorted(isr)))
    return None


def controlled_shutdown_election(
    assignment: Sequence[int],
    isr: Collection[int],
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> Election | None:
    """`controlledShutdownPartitionLeaderElection`: the first assigned replica live (or
    shutting down), in the ISR and not shutting down; the ISR loses the shutting-down brokers."""
    for replica in assignment:
        if replica in live_or_shutting_down and replica in isr and replica not in shutting_down:
            return Election(replica, tuple(sorted(member for member in isr if member not in shutting_down)))
    return None
