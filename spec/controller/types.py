"""Plain data of the KRaft controller as a service: its requests, its answers and what it shows.

What it is
    The messages a KRaft controller answers, as `ReplicationControlManager` and
    `ClusterControlManager` handle them (Kafka's `BrokerRegistrationRequest`,
    `BrokerHeartbeatRequest`, `AlterPartitionRequest`, `CreateTopicsRequest` with a manual
    assignment, `AlterPartitionReassignmentsRequest`, `IncrementalAlterConfigs` of
    `unclean.leader.election.enable`), one partition per request, and the controller's image
    as plain data (`ControllerView`: every broker registration and partition registration).
    No logic: the implementations (`reference.controller`, `impl.controller`) and the
    conformance suites (`conformance.controller_sut`) share these types, and `impl/` may
    import only plain data from the spec.

    The error codes (`KafkaError`), the leader recovery state (KIP-704) and the leader
    constants are the spec's own (`spec.controller.kraft_errors`, `kraft_partitions`,
    `kraft_alter_partition`), re-exported here so there is one definition of each.

The ZooKeeper-era broker (the second half of this module)
    The control requests a ZooKeeper-era controller sends a broker (LeaderAndIsr,
    StopReplica, UpdateMetadata, one partition each), the broker's answer and what it
    shows (`ZkBrokerView`), shared by `reference.zk_broker`, `impl.zk_broker` and
    `conformance.zk_broker_sut`.

Simplifications
    Partitions are numbered (`PartitionId`) rather than named by topic and index; a topic's
    `unclean.leader.election.enable` is a flag of each partition. Broker epochs and
    incarnations are integers (Kafka's incarnation is a UUID).
"""

from __future__ import annotations

from dataclasses import dataclass

from spec.controller.kraft_alter_partition import UNKNOWN_BROKER_EPOCH
from spec.controller.kraft_errors import KafkaError
from spec.controller.kraft_partitions import NO_LEADER, NO_LEADER_CHANGE, LeaderRecoveryState

__all__ = [
    "NO_BROKER_EPOCH",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "UNKNOWN_BROKER_EPOCH",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerId",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "BrokerView",
    "ControlRequest",
    "ControlResponse",
    "ControllerResponse",
    "ControllerSettings",
    "ControllerView",
    "CreatePartitionRequest",
    "KafkaError",
    "LeaderAndIsrRequest",
    "LeaderRecoveryState",
    "PartitionId",
    "PartitionView",
    "ReassignPartitionRequest",
    "StopReplicaRequest",
    "UncleanElectionRequest",
    "UpdateMetadataRequest",
    "ZkBrokerSettings",
    "ZkBrokerView",
]

BrokerId = int
PartitionId = int

NO_BROKER_EPOCH = -1
"""The broker epoch of a refused registration, and `previousBrokerEpoch` of a broker without a
clean-shutdown file (KIP-966)."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """The cluster settings a controller's answers depend on: `min.insync.replicas` (one value
    for every topic) and whether KIP-966's eligible leader replicas are on
    (`eligible.leader.replicas.version=1`)."""

    min_insync_replicas: int = 2
    eligible_leader_replicas: bool = True


@dataclass(frozen=True, slots=True)
class BrokerRegistrationRequest:
    """`BrokerRegistrationRequest`: a broker process (`incarnation`) registers;
    `previous_broker_epoch` is the broker epoch its clean-shutdown file names, or
    NO_BROKER_EPOCH after an unclean shutdown (KIP-966, KAFKA-15582)."""

    broker_id: BrokerId
    incarnation: int
    previous_broker_epoch: int = NO_BROKER_EPOCH


@dataclass(frozen=True, slots=True)
class BrokerRegistrationResponse:
    """The error (DUPLICATE_BROKER_REGISTRATION while the old registration is active) and the
    new broker epoch (the offset of its RegisterBrokerRecord), NO_BROKER_EPOCH on error."""

    error: KafkaError
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    """`BrokerHeartbeatRequest`: the broker's epoch, the offset of the last metadata record it
    replayed, and whether it wants to shut down."""

    broker_id: BrokerId
    broker_epoch: int
    current_metadata_offset: int
    want_shut_down: bool = False


@dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    """`BrokerHeartbeatResponse`: the error (STALE_BROKER_EPOCH) and the broker's control
    state after the heartbeat (`should_shut_down`: SHUTDOWN_NOW)."""

    error: KafkaError
    is_fenced: bool
    in_controlled_shutdown: bool
    should_shut_down: bool


@dataclass(frozen=True, slots=True)
class CreatePartitionRequest:
    """`CreateTopics` with a manual assignment, one partition: its replicas in order and its
    topic's `unclean.leader.election.enable`."""

    partition: PartitionId
    replicas: tuple[BrokerId, ...]
    unclean_leader_election: bool = False


@dataclass(frozen=True, slots=True)
class ReassignPartitionRequest:
    """`AlterPartitionReassignments` for one partition: the target replicas in order."""

    partition: PartitionId
    target_replicas: tuple[BrokerId, ...]


@dataclass(frozen=True, slots=True)
class UncleanElectionRequest:
    """`IncrementalAlterConfigs` setting the partition's topic's `unclean.leader.election.enable`."""

    partition: PartitionId
    enabled: bool


@dataclass(frozen=True, slots=True)
class ControllerResponse:
    """The answer to a create, reassignment or config request: its error only."""

    error: KafkaError


@dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """One partition of an `AlterPartitionRequest` (version 3): the leader's broker epoch,
    the leader and partition epochs it knows, the proposed ISR with each member's broker
    epoch (UNKNOWN_BROKER_EPOCH skips the check, KIP-903) sorted by member, and its leader
    recovery state (KIP-704)."""

    partition: PartitionId
    broker_id: BrokerId
    broker_epoch: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[tuple[BrokerId, int], ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition registration as plain data (`PartitionRegistration`): sets as sorted tuples.
    `unclean_leader_election` is its topic's setting."""

    partition: PartitionId
    replicas: tuple[BrokerId, ...]
    isr: tuple[BrokerId, ...]
    leader: BrokerId
    leader_epoch: int
    partition_epoch: int
    elr: tuple[BrokerId, ...] = ()
    last_known_elr: tuple[BrokerId, ...] = ()
    adding: tuple[BrokerId, ...] = ()
    removing: tuple[BrokerId, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    unclean_leader_election: bool = False


@dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    """The partition's error and, when it is NONE, the partition as the change left it."""

    error: KafkaError
    partition: PartitionView | None = None


@dataclass(frozen=True, slots=True)
class BrokerView:
    """A broker registration as plain data (`BrokerRegistration` and the heartbeat manager's
    controlled-shutdown offset, -1 when not shutting down)."""

    broker_id: BrokerId
    epoch: int
    incarnation: int
    fenced: bool
    in_controlled_shutdown: bool
    controlled_shutdown_offset: int


@dataclass(frozen=True, slots=True)
class ControllerView:
    """The controller's image: the end offset of its metadata log (the next record's offset),
    every registered broker by id, every partition by id."""

    log_end: int
    brokers: tuple[BrokerView, ...]
    partitions: tuple[PartitionView, ...]


# ---------------------------------------------------------------------------------------
# The ZooKeeper-era broker: the control requests it answers and what it shows
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZkBrokerSettings:
    """A ZooKeeper-era broker as it starts: its id and the broker epoch its registration got
    (KIP-380: the czxid of its `/brokers/ids/<id>` znode)."""

    broker_id: BrokerId = 0
    broker_epoch: int = 1


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    """A ZooKeeper-era controller's LeaderAndIsr for one partition (`LeaderAndIsrRequest`,
    `LeaderAndIsrPartitionState`): who leads in which leader epoch, the ISR, the zkVersion
    of the partition's state znode, the assignment; and the epochs that fence it
    (`controller_epoch`, and since KIP-380 the recipient's `broker_epoch`, -1 when unknown)."""

    controller_epoch: int
    broker_epoch: int
    leader: BrokerId
    leader_epoch: int
    isr: tuple[BrokerId, ...]
    zk_version: int
    replicas: tuple[BrokerId, ...]


@dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    """StopReplica for one partition, as before KIP-570 (no leader epoch): stop fetching or
    leading, and with `delete` remove the log."""

    controller_epoch: int
    broker_epoch: int
    delete: bool


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    """UpdateMetadata: the part a broker's fencing can see is the controller epoch it carries."""

    controller_epoch: int
    broker_epoch: int


ControlRequest = LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest


@dataclass(frozen=True, slots=True)
class ControlResponse:
    """A broker's answer to a control request: the top-level error, and for LeaderAndIsr the
    partition's error (NONE otherwise)."""

    error: KafkaError
    partition_error: KafkaError = KafkaError.NONE


@dataclass(frozen=True, slots=True)
class ZkBrokerView:
    """What a ZooKeeper-era broker knows of the controller and of its replica of the
    partition: its own broker epoch (the czxid of its registration znode), the newest
    controller epoch it has seen (`ReplicaManager.controllerEpoch`), its role (``none``,
    ``leader``, ``follower``), whom it follows, the leader epoch it applied last, and as
    leader the ISR, the zkVersion its next ISR write expects and the epoch of the
    controller that made it leader (`Partition.controllerEpoch`); `log_deleted` counts the
    StopReplica deletions of its log."""

    broker_epoch: int
    controller_epoch: int
    role: str
    leader: BrokerId
    leader_epoch: int
    isr: tuple[BrokerId, ...]
    zk_version: int
    leader_controller_epoch: int
    log_deleted: int
