"""Kafka's controller: the one broker-side component that decides who leads each partition.

What a controller does
    A Kafka cluster has one active controller. It keeps the cluster's metadata (which brokers
    are alive, each partition's replica assignment, leader, leader epoch and in-sync replica
    set), elects a new leader when a leader's broker fails or shuts down, moves leadership
    for preferred-replica elections and reassignments, and is the only writer of ISR changes
    a partition leader asks for. Brokers learn its decisions and act on them: a broker
    leads or follows a partition only because the controller said so, in a given epoch.

Two generations
    ZooKeeper era (Kafka up to 3.x, removed in 4.0): the controller is the broker that won
    the `/controller` znode; partition state lives in ZooKeeper
    (`LeaderIsrAndControllerEpoch`), broker liveness is the broker's ZooKeeper session, the
    controller pushes `LeaderAndIsr` / `UpdateMetadata` / `StopReplica` requests to brokers,
    and leaders change the ISR by conditional ZooKeeper writes (zkVersion) or, since
    KIP-497, through the `AlterPartition` (formerly `AlterIsr`) RPC.

    KRaft (KIP-500, KIP-631; the only mode since Kafka 4.0): a quorum of controllers
    replicates a metadata log with Raft (KIP-595); the active controller changes metadata
    only by appending records (`RegisterBrokerRecord`, `BrokerRegistrationChangeRecord`,
    `PartitionRecord`, `PartitionChangeRecord`, ...), and brokers replay the committed log.
    Liveness is a broker heartbeat with a broker epoch (KIP-631); ISR changes go through
    `AlterPartition` validated by `ReplicationControlManager` (KIP-841 adds the rule that
    fenced or shutting-down brokers cannot join the ISR, KIP-903 the broker epoch in the
    request); KIP-966 adds the eligible leader replicas (ELR).

Modules
    ZooKeeper era: `spec.controller.zookeeper` and the `spec.controller.zk_*` modules.

    KRaft:
        `kraft_brokers`          broker registration, heartbeats, broker epochs and fencing
                                 (`ClusterControlManager`, `BrokerHeartbeatManager`)
        `kraft_partitions`       partition registrations and the records that change them
                                 (`PartitionRegistration`, `PartitionChangeRecord`,
                                 `PartitionChangeBuilder`); elections from the ISR, then the
                                 ELR, then the last known leader, then unclean
        `kraft_alter_partition`  `AlterPartition` validation as `ReplicationControlManager`
                                 answers it
        `kraft_errors`           the error codes these answers use
        `kraft`                  the controller and its brokers as one state machine:
                                 actions, named rules, invariants, witnesses
        `kraft_scenarios`        the KRaft scenarios (`MACHINE`, `SCENARIOS`)
"""
