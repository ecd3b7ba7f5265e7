"""Plain data of the group protocols: error codes, topic partitions, requests and responses.

Values only, no protocol logic (as `spec.types` for replication), so an implementation of the
group coordinator may import this module and nothing else from `spec.group`: the spec and an
implementation share the vocabulary, never the behaviour.

* `Errors`: the codes of Kafka's `org.apache.kafka.common.protocol.Errors` that the group APIs
  answer (the numbers are Kafka's wire codes);
* `TopicPartition`, and the embedded consumer protocol's `Subscription` and `Assignment`
  (`ConsumerProtocolSubscription` v2 with `OwnedPartitions` (KIP-429) and `GenerationId`
  (KIP-792); `ConsumerProtocolAssignment`): what consumers put in the opaque protocol metadata
  of JoinGroup and SyncGroup;
* the requests and responses of the classic protocol's APIs with the fields the spec reads
  (`JoinGroup`, `SyncGroup`, `Heartbeat`, `LeaveGroup`, `OffsetCommit`, `OffsetFetch`), named as
  in Kafka's message definitions (`JoinGroupRequest.json` and so on). The group id, timeouts and
  client ids are left out: the spec models one group, and time is abstracted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TypeAlias

from spec._frozen import cache_hash, fast_init

MemberId: TypeAlias = str
"""A member id the coordinator hands out (Kafka: client id + "-" + a UUID)."""

GroupInstanceId: TypeAlias = str
"""A static member's `group.instance.id` (KIP-345)."""

UNKNOWN_MEMBER_ID: MemberId = ""
"""`JoinGroupRequest.UNKNOWN_MEMBER_ID`: a member that has no id yet joins with the empty id."""

UNKNOWN_GENERATION_ID = -1
"""`JoinGroupRequest.UNKNOWN_GENERATION_ID` (and `OffsetCommitRequest.DEFAULT_GENERATION_ID`): no
generation; an OffsetCommit with it and no member id is the admin / simple-consumer path."""

NO_OFFSET = -1
"""`OffsetFetchResponse.INVALID_OFFSET`: no offset committed for the partition."""

CONSUMER_PROTOCOL_TYPE = "consumer"
"""`ConsumerProtocol.PROTOCOL_TYPE`: the protocol type every Kafka consumer joins with."""


class Errors(enum.Enum):
    """Kafka's error codes (`org.apache.kafka.common.protocol.Errors`) the group APIs answer.

    Errors are values inside responses, as on the wire; the spec and an implementation must
    answer the same code in the same situation.
    """

    UNKNOWN_SERVER_ERROR = -1  # an exception in the coordinator (`handleOperationException`)
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    UNSTABLE_OFFSET_COMMIT = 88
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128

    __hash__ = object.__hash__  # members are singletons: hashing by identity is cheaper than Enum's


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of a topic (`org.apache.kafka.common.TopicPartition`)."""

    topic: str
    partition: int
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class ClassicGroupState(enum.Enum):
    """The states of a classic group (`ClassicGroupState`); the names are Kafka's display names.

    The transitions allowed between them are a rule of the protocol and live in
    `spec.group.classic` (`VALID_PREVIOUS_STATES`).
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.value


class RebalanceProtocol(enum.Enum):
    """`ConsumerPartitionAssignor.RebalanceProtocol`: how a classic-protocol consumer gives up
    partitions. EAGER revokes everything before it rejoins; COOPERATIVE (KIP-429) keeps what it
    owns and revokes only what the new assignment takes away, then rejoins."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"

    __hash__ = object.__hash__

    @classmethod
    def parse(cls, text: str) -> RebalanceProtocol:
        """Parse `eager` or `cooperative`."""
        for protocol in cls:
            if protocol.value == text.strip().lower():
                return protocol
        raise ValueError(f"rebalance.protocol must be 'eager' or 'cooperative', not {text!r}")


# --- the embedded consumer protocol (opaque bytes to the coordinator) ------------------------


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Subscription:
    """`ConsumerProtocolSubscription` (v2): the topics a consumer subscribes to, the partitions
    it owns now (v1, KIP-429: the cooperative assignor keeps them where they are) and the
    generation in which it owned them (v2, KIP-792: lets the leader drop stale claims)."""

    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = UNKNOWN_GENERATION_ID
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class Assignment:
    """`ConsumerProtocolAssignment`: the partitions the leader assigns to one member."""

    partitions: tuple[TopicPartition, ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


EMPTY_ASSIGNMENT = Assignment()
"""No partitions (`ConsumerProtocol`'s empty assignment; what the coordinator fills in for a
member the leader left out)."""


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class JoinGroupRequestProtocol:
    """One entry of `JoinGroupRequest.Protocols`: an assignor name (`range`, `roundrobin`,
    `cooperative-sticky`, ...) in the member's order of preference, with its metadata."""

    name: str
    metadata: Subscription
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


# --- JoinGroup --------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    """`JoinGroupRequest` (v5+: `GroupInstanceId`; `require_known_member_id` is what v4+ means)."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    require_known_member_id: bool = True


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class JoinGroupResponseMember:
    """One member in the leader's JoinGroup response: its id, instance id and metadata for the
    protocol the group selected."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    metadata: Subscription
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    """`JoinGroupResponse`. `members` is non-empty only in the leader's response;
    `skip_assignment` (v9+) tells a static leader whose restart did not rebalance not to
    compute an assignment again."""

    error: Errors
    generation_id: int = UNKNOWN_GENERATION_ID
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: MemberId = UNKNOWN_MEMBER_ID
    skip_assignment: bool = False
    member_id: MemberId = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


# --- SyncGroup --------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class SyncGroupRequestAssignment:
    """One entry of `SyncGroupRequest.Assignments` (only the leader sends any)."""

    member_id: MemberId
    assignment: Assignment


@fast_init
@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    """`SyncGroupRequest` (v5+: protocol type and name)."""

    member_id: MemberId
    generation_id: int
    group_instance_id: GroupInstanceId | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    """`SyncGroupResponse`: the member's own assignment."""

    error: Errors
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: Assignment = EMPTY_ASSIGNMENT
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


# --- Heartbeat and LeaveGroup -----------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """`HeartbeatRequest`."""

    member_id: MemberId
    generation_id: int
    group_instance_id: GroupInstanceId | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """`HeartbeatResponse`."""

    error: Errors


@fast_init
@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One member of a batch `LeaveGroupRequest` (v3+, KIP-345): by member id, or by instance id
    with the member id unknown."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    """`LeaveGroupRequest` (v3+: a batch of members)."""

    members: tuple[MemberIdentity, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class MemberResponse:
    """One member's answer in a `LeaveGroupResponse`."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    error: Errors


@fast_init
@dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    """`LeaveGroupResponse`: a top-level error and one answer per member."""

    error: Errors
    members: tuple[MemberResponse, ...] = ()


# --- OffsetCommit and OffsetFetch -------------------------------------------------------------


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    """`OffsetCommitRequest`. `generation_id_or_member_epoch` is the classic generation id or,
    for a KIP-848 member, its member epoch (v9+ names the field so); -1 with an empty member id
    is a commit from outside the group (admin tools, a consumer using `assign`)."""

    member_id: MemberId
    generation_id_or_member_epoch: int
    group_instance_id: GroupInstanceId | None
    offsets: tuple[tuple[TopicPartition, int], ...]
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommitPartitionResponse:
    """One partition's answer in an `OffsetCommitResponse`."""

    partition: TopicPartition
    error: Errors


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    """`OffsetCommitResponse`: one error per partition (a group-level error is repeated for
    every partition, as Kafka does)."""

    partitions: tuple[OffsetCommitPartitionResponse, ...]


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """`OffsetFetchRequest` (`partitions` None: all the group's committed offsets). `member_id`
    and `member_epoch` (v9+) are checked only for KIP-848 consumer groups."""

    partitions: tuple[TopicPartition, ...] | None
    member_id: MemberId | None = None
    member_epoch: int = UNKNOWN_GENERATION_ID


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetFetchPartitionResponse:
    """One partition's committed offset (`NO_OFFSET` when none) in an `OffsetFetchResponse`."""

    partition: TopicPartition
    committed_offset: int
    error: Errors = Errors.NONE


@fast_init
@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    """`OffsetFetchResponse`."""

    error: Errors
    partitions: tuple[OffsetFetchPartitionResponse, ...] = ()


# --- ConsumerGroupHeartbeat (KIP-848) ---------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """`ConsumerGroupHeartbeatRequest` (KIP-848): the member epoch says what the member is doing
    (0 join, -1 leave, -2 a static member leaves for now, else the epoch it last heard);
    `topic_partitions` are the partitions it owns (None: not sent). `rebalance_timeout_ms`
    (-1: the broker's default), `subscribed_topic_names` and `server_assignor` are carried as
    Kafka's clients send them."""

    group_id: str
    member_id: MemberId
    member_epoch: int
    instance_id: GroupInstanceId | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartition, ...] | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    """`ConsumerGroupHeartbeatResponse`: the error, the member id and epoch, and the member's
    assignment (None when the response carries none), sorted."""

    error: Errors
    member_id: MemberId | None = None
    member_epoch: int = -1
    assignment: tuple[TopicPartition, ...] | None = None
