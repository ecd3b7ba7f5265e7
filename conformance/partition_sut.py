"""The system under test for replication: the interface a replicated partition must offer.

What it is
    `PartitionUnderTest` is the typed Protocol the partition conformance machine drives
    (`conformance.machines.partition`). Its operations are the actions of the replication
    spec (`spec.partition`), one method per action with the action's parameters, so a
    command sequence means the same thing to the spec, the reference and any target:

        produce                          ProducerSend (plus the value, which the spec draws itself)
        leader_handle_fetch              LeaderHandleFetch
        follower_handle_fetch_response   FollowerHandleFetchResponse
        follower_truncate                FollowerTruncate
        leader_shrink_isr                LeaderShrinkIsr
        clock_tick                       ClockTick
        controller_move_leadership       ControllerMoveLeadership
        broker_crash                     BrokerCrash
        broker_restart                   BrokerRestart
        become_leader_or_follower        ReplicaBecomeLeaderOrFollower
        advance_log_start_offset         LeaderAdvanceLogStartOffset

    Each method returns False, changing nothing, when the spec's guard does not hold (the
    action is not enabled in this state): a target must refuse exactly what the spec
    refuses. Everything a client or an operator can observe is in `observe()`, as plain
    data, and is compared with the reference after every step.

Values
    Every value a target is given is unique: the suite sends 0, 1, 2, ... in the order the
    records are appended (a refused or rejected send does not use up a value), which is how
    the spec numbers them (`History.next_value`), so a target stores exactly what it was
    given and its logs compare equal to the reference's.

Plugging in your own
    A target is named by a string: ``reference`` (`ReferencePartitionTarget`, over the
    definitional `reference.partition.ReferencePartition`), ``impl`` (kafkaspec's optimized
    partition, `conformance.impl_partition.ImplPartition`, imported only when asked for) or
    ``MODULE:FACTORY``, where ``FACTORY(settings)`` (an attribute of the importable
    ``MODULE``) returns a fresh `PartitionUnderTest` for the `ReplicationSettings`.
    `resolve_partition_target` turns the string into a `PartitionFactory`; the suite calls it
    once per generated test case and `close()`s what it returns.

Why actions and not requests
    Kafka's wire protocol leaves the interleaving to the network; the conformance suite
    must choose it (which follower fetches, when a response arrives, when a broker dies)
    to reach the states where implementations differ. The spec's actions are exactly
    those choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from conformance.sut import resolve_factory
from reference.partition import ReferencePartition, running_config
from spec.partition import PartitionConfig, PartitionState, Replica
from spec.types import Acks, EpochEntry, ErrorCode, Record, ReplicaId, TruncationRule


@dataclass(frozen=True, slots=True)
class ReplicationSettings:
    """The Kafka configuration a target is built with (the behaviour-relevant part of
    `spec.partition.PartitionConfig`; the checker's bounds are not behaviour)."""

    replication_factor: int = 3
    min_insync_replicas: int = 2  # min.insync.replicas
    unclean_leader_election: bool = False  # unclean.leader.election.enable
    truncation: TruncationRule = TruncationRule.LEADER_EPOCH
    replica_lag_ticks: int = 0  # replica.lag.time.max.ms in clock ticks (see PartitionConfig)


@dataclass(frozen=True, slots=True)
class ProduceOutcome:
    """What a producer is told at once: an error, or the offset its record was appended at.

    acks=0 and acks=1 complete immediately (error NONE and the offset). An acks=all send that
    was appended completes later, when the high watermark passes it: `completed` is False
    and the acknowledgement appears in `PartitionView.acknowledged` when it happens (already
    after this step when the HW passes the record at once, as with a one-member ISR). An
    acks=all send refused with NOT_ENOUGH_REPLICAS has no offset and is completed.
    """

    error: ErrorCode  # NONE or NOT_ENOUGH_REPLICAS (acks=all with the ISR below min.insync.replicas)
    offset: int | None  # None when nothing was appended
    completed: bool


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One broker's replica of the partition, as far as anyone outside can see it."""

    alive: bool
    role: str  # "leader", "follower" or "unknown" (never applied a LeaderAndIsr)
    leader_epoch: int  # the epoch of the newest LeaderAndIsr it applied
    leader: ReplicaId | None  # whom it follows; itself when it leads
    log_start_offset: int
    records: tuple[Record, ...]  # records[i] is at offset log_start_offset + i
    high_watermark: int
    epoch_cache: tuple[EpochEntry, ...]
    isr: frozenset[ReplicaId]  # the ISR it believes in when it leads; empty otherwise

    @property
    def log_end_offset(self) -> int:
        """LEO: the offset the next appended record gets."""
        return self.log_start_offset + len(self.records)


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The whole observable state of a replicated partition."""

    replicas: tuple[ReplicaView, ...]  # indexed by replica id
    controller_leader: ReplicaId | None  # None: the partition is offline
    controller_epoch: int
    controller_isr: frozenset[ReplicaId]
    acknowledged: frozenset[tuple[int, int]]  # every (offset, value) acknowledged to a producer so far


@runtime_checkable
class PartitionUnderTest(Protocol):
    """A partition replicated on `replication_factor` brokers, driven action by action.

    A fresh target is the spec's `initial_state`: all logs empty, broker 0 leads epoch 0, every
    replica in the ISR and every broker has applied the first LeaderAndIsr.
    """

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceOutcome | None:
        """A producer sends `value` to `leader`; None when `leader` does not act as leader."""
        ...

    def leader_handle_fetch(self, follower: ReplicaId) -> bool:
        """`follower`'s leader answers its fetch (the response is then in flight)."""
        ...

    def follower_handle_fetch_response(self, follower: ReplicaId) -> bool:
        """`follower` appends what it fetched and adopts the leader's HW."""
        ...

    def follower_truncate(self, follower: ReplicaId) -> bool:
        """A follower in a new epoch truncates its unconfirmed suffix."""
        ...

    def leader_shrink_isr(self, leader: ReplicaId, follower: ReplicaId) -> bool:
        """`leader` drops `follower`, lagging longer than `replica.lag.time.max.ms`, from the ISR."""
        ...

    def clock_tick(self) -> bool:
        """One tick of logical time passes."""
        ...

    def controller_move_leadership(self, new_leader: ReplicaId) -> bool:
        """The controller moves leadership to a live ISR member."""
        ...

    def broker_crash(self, replica: ReplicaId, surviving_end: int) -> bool:
        """`replica`'s broker dies; its disk keeps offsets below `surviving_end`."""
        ...

    def broker_restart(self, replica: ReplicaId) -> bool:
        """`replica`'s broker starts again."""
        ...

    def become_leader_or_follower(self, replica: ReplicaId) -> bool:
        """`replica` applies the controller's newest LeaderAndIsr."""
        ...

    def advance_log_start_offset(self, leader: ReplicaId, new_start: int) -> bool:
        """Retention on `leader` deletes the records below `new_start`."""
        ...

    def observe(self) -> PartitionView:
        """Everything observable, now."""
        ...

    def close(self) -> None:
        """Release every resource."""
        ...


PartitionFactory = Callable[[ReplicationSettings], PartitionUnderTest]
"""Makes a fresh partition under test, in the spec's initial state, for the given settings."""


def spec_config(settings: ReplicationSettings) -> PartitionConfig:
    """The spec configuration a running partition with `settings` follows (no exploration bounds)."""
    return running_config(
        replication_factor=settings.replication_factor,
        min_insync_replicas=settings.min_insync_replicas,
        unclean_leader_election=settings.unclean_leader_election,
        truncation=settings.truncation,
        replica_lag_ticks=settings.replica_lag_ticks,
    )


def replica_view(replica: Replica) -> ReplicaView:
    """What anyone outside can see of one spec replica (its fetcher phase, fetch in flight,
    follower progress and waiting acks=all requests are internal)."""
    log = replica.log
    return ReplicaView(
        alive=replica.alive,
        role=replica.role.value,
        leader_epoch=replica.leader_epoch,
        leader=replica.leader,
        log_start_offset=log.log_start_offset,
        records=log.records,
        high_watermark=log.high_watermark,
        epoch_cache=log.epoch_cache,
        isr=replica.isr,
    )


def view_of(state: PartitionState) -> PartitionView:
    """The observable part of a spec state: what every target's `observe()` must return."""
    controller = state.controller
    return PartitionView(
        replicas=tuple(replica_view(replica) for replica in state.replicas),
        controller_leader=controller.leader,
        controller_epoch=controller.leader_epoch,
        controller_isr=controller.isr,
        acknowledged=state.history.acknowledged,
    )


class ReferencePartitionTarget:
    """`PartitionUnderTest` over the definitional `reference.partition.ReferencePartition`."""

    def __init__(self, settings: ReplicationSettings) -> None:
        self.settings = settings
        self.partition = ReferencePartition(spec_config(settings))

    def produce(self, leader: ReplicaId, acks: Acks, value: int) -> ProduceOutcome | None:
        """See `PartitionUnderTest.produce` (values must come in order: see the module docstring)."""
        result = self.partition.produce(leader, acks, value)
        return None if result is None else ProduceOutcome(result.error, result.offset, result.completed)

    def leader_handle_fetch(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.leader_handle_fetch`."""
        return self.partition.leader_handle_fetch(follower)

    def follower_handle_fetch_response(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.follower_handle_fetch_response`."""
        return self.partition.follower_handle_fetch_response(follower)

    def follower_truncate(self, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.follower_truncate`."""
        return self.partition.follower_truncate(follower)

    def leader_shrink_isr(self, leader: ReplicaId, follower: ReplicaId) -> bool:
        """See `PartitionUnderTest.leader_shrink_isr`."""
        return self.partition.leader_shrink_isr(leader, follower)

    def clock_tick(self) -> bool:
        """See `PartitionUnderTest.clock_tick`."""
        return self.partition.clock_tick()

    def controller_move_leadership(self, new_leader: ReplicaId) -> bool:
        """See `PartitionUnderTest.controller_move_leadership`."""
        return self.partition.controller_move_leadership(new_leader)

    def broker_crash(self, replica: ReplicaId, surviving_end: int) -> bool:
        """See `PartitionUnderTest.broker_crash`."""
        return self.partition.broker_crash(replica, surviving_end)

    def broker_restart(self, replica: ReplicaId) -> bool:
        """See `PartitionUnderTest.broker_restart`."""
        return self.partition.broker_restart(replica)

    def become_leader_or_follower(self, replica: ReplicaId) -> bool:
        """See `PartitionUnderTest.become_leader_or_follower`."""
        return self.partition.become_leader_or_follower(replica)

    def advance_log_start_offset(self, leader: ReplicaId, new_start: int) -> bool:
        """See `PartitionUnderTest.advance_log_start_offset`."""
        return self.partition.advance_log_start_offset(leader, new_start)

    def observe(self) -> PartitionView:
        """See `PartitionUnderTest.observe`."""
        return view_of(self.partition.state)

    def close(self) -> None:
        """Nothing to release."""


IMPL_MODULE = "conformance.impl_partition"
"""Where kafkaspec's optimized partition adapter lives (imported only when asked for)."""


def resolve_partition_target(target: str) -> PartitionFactory:
    """The factory named by `target`: ``reference``, ``impl`` or ``MODULE:FACTORY``.

    Raises ValueError, saying what is accepted, for anything else (an unknown name, a module
    that does not import, a missing or non-callable factory).
    """
    checked: PartitionFactory = resolve_factory(
        target,
        ReferencePartitionTarget,
        (IMPL_MODULE, "ImplPartition", "the optimized partition"),
        "it must take ReplicationSettings and return a PartitionUnderTest",
    )
    return checked


def make_partition(target: str, settings: ReplicationSettings) -> PartitionUnderTest:
    """A fresh partition for `target` with `settings`, checked to implement `PartitionUnderTest`."""
    made = resolve_partition_target(target)(settings)
    if not isinstance(made, PartitionUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, not a PartitionUnderTest"
        )
    return made
