"""The group coordinator: how Kafka consumers share a topic's partitions.

Every consumer group has one coordinator, the broker that leads the partition of the internal
`__consumer_offsets` topic the group id hashes to. The coordinator keeps the group's members,
decides when the group rebalances, hands out generations (epochs of the group's membership) and
stores the offsets the members commit. Kafka has two protocols for it:

* the *classic* protocol (`JoinGroup`, `SyncGroup`, `Heartbeat`, `LeaveGroup`; Kafka's
  `ClassicGroup`, KIP-62, KIP-345, KIP-394, KIP-429): the coordinator only orchestrates; one
  member, the leader, computes the assignment with a client-side assignor, and the clients alone
  decide when they give partitions up (eagerly, or cooperatively under KIP-429). Its spec is
  `spec.group.classic` (with the client-side assignors in `spec.group.assignors`);
* the *consumer* protocol of KIP-848 (`ConsumerGroupHeartbeat`; Kafka's `ConsumerGroup`): the
  coordinator computes the assignment itself and reconciles each member towards it, epoch by
  epoch (`spec.group.consumer`).

Both answer with the error codes of `spec.group.types`, Kafka's `Errors`; both serve
`OffsetCommit` and `OffsetFetch` with their own fencing rule (generation id or member epoch).
"""
