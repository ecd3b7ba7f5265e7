"""The Kafka protocol error codes the controller specs answer with (KRaft and ZooKeeper-era).

Kafka's `org.apache.kafka.common.protocol.Errors`. Errors are values inside responses, as on
Kafka's wire; the numbers are Kafka's codes.
"""

from __future__ import annotations

import enum


class KafkaError(enum.Enum):
    """An error code of a controller response (Kafka's name and number)."""

    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    STALE_CONTROLLER_EPOCH = 11
    TOPIC_ALREADY_EXISTS = 36
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    OPERATION_NOT_ATTEMPTED = 55
    REASSIGNMENT_IN_PROGRESS = 60
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    INVALID_UPDATE_VERSION = 95
    DUPLICATE_BROKER_REGISTRATION = 101
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's
