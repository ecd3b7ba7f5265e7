"""The definitional KRaft controller: every answer one of the spec's functions, many partitions.

What it is
    A small mutable holder of the controller's image (Kafka's `ClusterControlManager` and
    `ReplicationControlManager` state): the end offset of the metadata log, one
    `spec.controller.kraft_brokers.BrokerRegistration` per broker, one
    `spec.controller.kraft_partitions.PartitionRegistration` per partition. Every decision is
    the spec's:

    * registration: `registration_refusal` (DUPLICATE_BROKER_REGISTRATION), the removal of a
      broker that did not shut down cleanly from every ISR and ELR (`handleBrokerUncleanShutdown`,
      KAFKA-18106), then the RegisterBrokerRecord, whose offset is the broker epoch;
    * heartbeats: `check_broker_epoch`, then `next_broker_state` (`BrokerHeartbeatManager`),
      with the partition changes each new control state makes (`handleBrokerUnfenced`,
      `handleBrokerInControlledShutdown`, `handleBrokerFenced`);
    * session expiry: `handleBrokerFenced`;
    * AlterPartition: `validate_alter_partition` (KIP-497, KIP-841, KIP-903), then the change;
    * reassignment: `changePartitionReassignment`'s targets;
    * every partition change: `build_partition_change` (`PartitionChangeBuilder`), applied
      with `merge`, one record each.

    The orchestration (which partitions a broker event touches, in which order the records
    are written, which broker is acceptable as leader) is `spec.controller.kraft`'s for its
    one partition, done here for each partition the event touches; the exhaustive controller
    suite (`conformance.controller_exhaustive`) checks, along every path it replays, that this
    holder's image is exactly the spec's.

Where it follows Kafka rather than the one-partition spec
    * The lowest metadata offset of the active brokers, which decides when a broker in
      controlled shutdown may stop, is the one each broker's last heartbeat reported
      (`BrokerHeartbeatManager`); the spec reads the live brokers' replay positions directly.
    * Partition creation, reassignment requests and the unclean-election config are answered
      for requests the spec never makes (an unknown broker, a reassignment in progress):
      INVALID_REPLICA_ASSIGNMENT, REASSIGNMENT_IN_PROGRESS (Kafka would replace the
      reassignment; the spec models one), UNKNOWN_TOPIC_OR_PARTITION.
    * Turning `unclean.leader.election.enable` on elects an unclean leader for the
      partition at once if it has none (Kafka's controller does so in a periodic task).
"""

from __future__ import annotations

from collections.abc import Callable

from spec._frozen import replace
from spec.controller.kraft_alter_partition import AlterPartitionRequest as SpecAlterPartitionRequest
from spec.controller.kraft_alter_partition import AlterPartitionRule, validate_alter_partition
from spec.controller.kraft_brokers import (
    BrokerControlState,
    BrokerRegistration,
    Heartbeat,
    check_broker_epoch,
    next_broker_state,
    registration_refusal,
)
from spec.controller.kraft_partitions import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    Election,
    ElrRule,
    LastKnownLeaderRule,
    PartitionRegistration,
    build_partition_change,
    merge,
)
from spec.controller.types import (
    NO_BROKER_EPOCH,
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
    PartitionId,
    PartitionView,
    ReassignPartitionRequest,
    UncleanElectionRequest,
)

UNKNOWN_OFFSET = -1
"""A broker's replayed metadata offset before its first heartbeat of this registration."""


def partition_view(
    partition_id: PartitionId, partition: PartitionRegistration, unclean: bool
) -> PartitionView:
    """The plain view of a spec partition registration."""
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
        leader_recovery_state=partition.leader_recovery_state,
        unclean_leader_election=unclean,
    )


def broker_view(broker_id: BrokerId, registration: BrokerRegistration) -> BrokerView:
    """The plain view of a spec broker registration."""
    return BrokerView(
        broker_id=broker_id,
        epoch=registration.epoch,
        incarnation=registration.incarnation,
        fenced=registration.fenced,
        in_controlled_shutdown=registration.in_controlled_shutdown,
        controlled_shutdown_offset=registration.controlled_shutdown_offset,
    )


class ReferenceController:
    """The controller's image and the spec's answers (see the module docstring)."""

    def __init__(self, settings: ControllerSettings) -> None:
        self.settings = settings
        self.elr = ElrRule.ENABLED if settings.eligible_leader_replicas else ElrRule.DISABLED
        self.log_end = 0
        self.registrations: dict[BrokerId, BrokerRegistration] = {}
        self.partitions: dict[PartitionId, PartitionRegistration] = {}
        self.unclean: dict[PartitionId, bool] = {}
        self.reported_offsets: dict[BrokerId, int] = {}

    # -- helpers -------------------------------------------------------------------------

    def _active(self, broker_id: BrokerId) -> bool:
        registration = self.registrations.get(broker_id)
        return registration is not None and registration.active

    def _acceptor(
        self, remove: BrokerId = NO_LEADER, add: BrokerId = NO_LEADER, unclean: BrokerId = NO_LEADER
    ) -> Callable[[BrokerId], bool]:
        """`spec.controller.kraft`'s acceptable leader: never `remove` or `unclean`; `add`
        although its registration still says fenced; otherwise an active broker."""

        def acceptable(replica: BrokerId) -> bool:
            if replica in (remove, unclean):
                return False
            return replica == add or self._active(replica)

        return acceptable

    def _election(self, partition_id: PartitionId) -> Election:
        return Election.UNCLEAN if self.unclean[partition_id] else Election.ONLINE

    def _min_isr(self, partition: PartitionRegistration) -> int:
        """`getTopicEffectiveMinIsr`: min.insync.replicas capped at the replication factor."""
        return min(self.settings.min_insync_replicas, len(partition.replicas))

    def _write(self, partition_id: PartitionId, partition: PartitionRegistration) -> None:
        self.partitions[partition_id] = partition
        self.log_end += 1

    def _update(
        self,
        partition_id: PartitionId,
        remove: BrokerId = NO_LEADER,
        add: BrokerId = NO_LEADER,
        unclean: BrokerId = NO_LEADER,
    ) -> None:
        """`generateLeaderAndIsrUpdates` for one partition: the ISR without `remove` and
        `unclean`, a new leader if needed, `unclean` also out of the ELR."""
        partition = self.partitions[partition_id]
        outcome = build_partition_change(
            partition,
            partition.isr - {remove, unclean},
            self._acceptor(remove, add, unclean),
            self._min_isr(partition),
            self._election(partition_id),
            self.elr,
            LastKnownLeaderRule.ACCEPTABLE,
            unclean_shutdown_replicas=frozenset({unclean}) - {NO_LEADER},
        )
        if outcome.record is not None:
            self._write(partition_id, merge(partition, outcome.record))

    def _register_record(self, broker_id: BrokerId, registration: BrokerRegistration) -> None:
        self.registrations[broker_id] = registration
        self.log_end += 1

    def _fence(self, broker_id: BrokerId) -> None:
        """`handleBrokerFenced`: out of every ISR (a new leader where it led), then the fence record."""
        for partition_id in sorted(self.partitions):
            if broker_id in self.partitions[partition_id].isr:
                self._update(partition_id, remove=broker_id)
        registration = self.registrations[broker_id]
        fenced = replace(
            registration, fenced=True, in_controlled_shutdown=False, controlled_shutdown_offset=-1
        )
        self._register_record(broker_id, fenced)

    # -- requests ------------------------------------------------------------------------

    def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
        """`ClusterControlManager.registerBroker`."""
        broker_id = request.broker_id
        existing = self.registrations.get(broker_id)
        refusal = registration_refusal(existing, request.incarnation)
        if refusal is not KafkaError.NONE:
            return BrokerRegistrationResponse(refusal, NO_BROKER_EPOCH)
        if existing is not None and request.previous_broker_epoch != existing.epoch:
            for partition_id in sorted(self.partitions):
                partition = self.partitions[partition_id]
                if broker_id in partition.isr or broker_id in partition.elr:
                    self._update(partition_id, unclean=broker_id)
        epoch = self.log_end
        self._register_record(broker_id, BrokerRegistration(epoch=epoch, incarnation=request.incarnation))
        self.reported_offsets[broker_id] = UNKNOWN_OFFSET
        return BrokerRegistrationResponse(KafkaError.NONE, epoch)

    def heartbeat(self, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
        """`ReplicationControlManager.processBrokerHeartbeat`."""
        broker_id = request.broker_id
        registration = self.registrations.get(broker_id)
        error = check_broker_epoch(registration, request.broker_epoch)
        if error is not KafkaError.NONE or registration is None:
            return BrokerHeartbeatResponse(error, True, False, False)
        self.reported_offsets[broker_id] = request.current_metadata_offset
        current = registration.control_state
        following = current
        if registration.fenced or registration.in_controlled_shutdown or request.want_shut_down:
            lowest = min(
                (
                    self.reported_offsets.get(other, UNKNOWN_OFFSET)
                    for other in self.registrations
                    if other != broker_id and self._active(other)
                ),
                default=self.log_end,
            )
            leads = any(partition.leader == broker_id for partition in self.partitions.values())
            heartbeat = Heartbeat(
                request.broker_epoch, request.current_metadata_offset, request.want_shut_down
            )
            following = next_broker_state(registration, heartbeat, leads, lowest)
        if following is not current:
            self._transition(broker_id, registration, following)
        after = self.registrations[broker_id]
        return BrokerHeartbeatResponse(
            KafkaError.NONE,
            after.fenced,
            after.in_controlled_shutdown,
            following is BrokerControlState.SHUTDOWN_NOW,
        )

    def _transition(
        self, broker_id: BrokerId, registration: BrokerRegistration, following: BrokerControlState
    ) -> None:
        if following is BrokerControlState.UNFENCED:
            self._register_record(broker_id, replace(registration, fenced=False))
            for partition_id in sorted(self.partitions):
                if not self.partitions[partition_id].has_leader:
                    self._update(partition_id, add=broker_id)
        elif following is BrokerControlState.CONTROLLED_SHUTDOWN:
            shutting = replace(
                registration, in_controlled_shutdown=True, controlled_shutdown_offset=self.log_end
            )
            self._register_record(broker_id, shutting)
            for partition_id in sorted(self.partitions):
                if broker_id in self.partitions[partition_id].isr:
                    self._update(partition_id, remove=broker_id)
        else:  # SHUTDOWN_NOW
            self._fence(broker_id)

    def expire_session(self, broker_id: BrokerId) -> None:
        """`maybeFenceOneStaleBroker`: an unfenced broker whose session expired is fenced."""
        registration = self.registrations.get(broker_id)
        if registration is not None and not registration.fenced:
            self._fence(broker_id)

    def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """`ReplicationControlManager.alterPartition` for one partition."""
        partition = self.partitions.get(request.partition)
        spec_request = SpecAlterPartitionRequest(
            broker_id=request.broker_id,
            broker_epoch=request.broker_epoch,
            leader_epoch=request.leader_epoch,
            partition_epoch=request.partition_epoch,
            new_isr=request.new_isr,
            leader_recovery_state=request.leader_recovery_state,
        )
        error = validate_alter_partition(
            spec_request, partition, self.registrations, AlterPartitionRule.BROKER_EPOCHS
        )
        if error is not KafkaError.NONE or partition is None:
            return AlterPartitionResponse(error)
        outcome = build_partition_change(
            partition,
            spec_request.isr,
            self._acceptor(),
            self._min_isr(partition),
            self._election(request.partition),
            self.elr,
            LastKnownLeaderRule.ACCEPTABLE,
            target_recovery=spec_request.leader_recovery_state,
        )
        record = outcome.record
        if record is not None:
            self._write(request.partition, merge(partition, record))
            if record.leader not in (NO_LEADER_CHANGE, request.broker_id):
                return AlterPartitionResponse(KafkaError.NEW_LEADER_ELECTED)
        after = self.partitions[request.partition]
        return AlterPartitionResponse(
            KafkaError.NONE, partition_view(request.partition, after, self.unclean[request.partition])
        )

    def create_partition(self, request: CreatePartitionRequest) -> ControllerResponse:
        """`ReplicationControlManager.createTopic` with a manual assignment: the ISR is the
        active replicas, the first of them leads epoch 0."""
        if request.partition in self.partitions:
            return ControllerResponse(KafkaError.TOPIC_ALREADY_EXISTS)
        if not self._valid_assignment(request.replicas):
            return ControllerResponse(KafkaError.INVALID_REPLICA_ASSIGNMENT)
        isr = [replica for replica in request.replicas if self._active(replica)]
        if not isr:
            return ControllerResponse(KafkaError.INVALID_REPLICATION_FACTOR)
        partition = PartitionRegistration(
            replicas=request.replicas, isr=frozenset(isr), leader=isr[0], leader_epoch=0, partition_epoch=0
        )
        self.unclean[request.partition] = request.unclean_leader_election
        self._write(request.partition, partition)
        return ControllerResponse(KafkaError.NONE)

    def _valid_assignment(self, replicas: tuple[BrokerId, ...]) -> bool:
        """`validateManualPartitionAssignment`: not empty, distinct, every broker registered."""
        return (
            bool(replicas)
            and len(set(replicas)) == len(replicas)
            and all(replica in self.registrations for replica in replicas)
        )

    def reassign(self, request: ReassignPartitionRequest) -> ControllerResponse:
        """`changePartitionReassignment`: replicas := target followed by those being removed."""
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
        outcome = build_partition_change(
            partition,
            partition.isr,
            self._acceptor(),
            self._min_isr(partition),
            Election.ONLINE,
            self.elr,
            LastKnownLeaderRule.ACCEPTABLE,
            target_replicas=(*target, *removing),
            target_adding=frozenset(target) - frozenset(partition.replicas),
            target_removing=frozenset(removing),
        )
        if outcome.record is not None:
            self._write(request.partition, merge(partition, outcome.record))
        return ControllerResponse(KafkaError.NONE)

    def set_unclean_leader_election(self, request: UncleanElectionRequest) -> ControllerResponse:
        """The topic's `unclean.leader.election.enable` (one ConfigRecord); turned on, a
        leaderless partition elects (unclean if it must)."""
        partition = self.partitions.get(request.partition)
        if partition is None:
            return ControllerResponse(KafkaError.UNKNOWN_TOPIC_OR_PARTITION)
        self.unclean[request.partition] = request.enabled
        self.log_end += 1
        if request.enabled and not partition.has_leader:
            self._update(request.partition)
        return ControllerResponse(KafkaError.NONE)

    def observe(self) -> ControllerView:
        """The image as plain data."""
        return ControllerView(
            log_end=self.log_end,
            brokers=tuple(
                broker_view(broker_id, self.registrations[broker_id])
                for broker_id in sorted(self.registrations)
            ),
            partitions=tuple(
                partition_view(partition_id, self.partitions[partition_id], self.unclean[partition_id])
                for partition_id in sorted(self.partitions)
            ),
        )
