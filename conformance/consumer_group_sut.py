"""The system under test: what a KIP-848 consumer-group coordinator must offer to be checked for conformance.

What it is
    `ConsumerGroupCoordinatorUnderTest` is the typed Protocol the consumer-group suites drive
    (`conformance.machines.consumer_group`, `conformance.consumer_group_exhaustive`): a
    broker's group coordinator for the *consumer* rebalance protocol (KIP-848), serving many
    groups. One method per request, taking and returning the plain types of
    `spec.group.types` (Kafka's message definitions), one per coordinator timer, and
    `observe()`:

    * `consumer_group_heartbeat(request)`: `ConsumerGroupHeartbeat` (join with epoch 0,
      heartbeat, leave with -1, a static member's temporary leave with -2);
    * `offset_commit(group, request)` and `offset_fetch(group, request)` with the member
      epoch (OffsetCommit v9+, OffsetFetch v9+);
    * timers, fired by the suite (the spec abstracts time): `expire_session(group, member)`
      (`group.consumer.session.timeout.ms` passed without a heartbeat), `expire_rebalance(group,
      member)` (the member's rebalance timeout, armed while it revokes; fences it if it is still
      at the epoch the timer was armed at) and `expire_offsets(group)` (`offsets.retention.minutes`
      passed: an empty group's offsets go);
    * `observe(group)`: a `ConsumerGroupView`, compared field by field with the reference's
      after every command.

The suites' domain
    The spec (`spec.group.consumer`) models one topic and a fixed set of consumers, so the
    suites send requests from consumers ``m0``, ``m1``, ... (their member ids, which Kafka 4.0
    clients choose themselves, KIP-1082), the first `static_members` of them with
    group.instance.id ``i0``, ``i1``, ...; every consumer subscribes to topic ``t0`` of
    `partitions` partitions with the broker's assignor. A target is free to handle anything
    else as it likes: nothing else is sent.

Plugging in your own
    ``--target MODULE:FACTORY --suite consumer-group``: ``FACTORY(settings)`` takes a
    `ConsumerGroupSettings` (the topic's partition count, the server assignor, and which of
    Kafka's rule versions to follow) and returns a fresh coordinator without groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from conformance.sut import resolve_factory
from reference.consumer_group import ReferenceConsumerGroupCoordinator
from spec.group.consumer import (
    CommitEpochRule,
    ConsumerGroupConfig,
    Coordinator,
    RejoinRule,
    RevocationEpochRule,
    ServerAssignor,
    StaticRejoinRule,
)
from spec.group.types import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    GroupInstanceId,
    MemberId,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    TopicPartition,
)

GroupId = str

TOPIC = "t0"
"""The one topic every consumer subscribes to."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """The broker settings a consumer-group coordinator's answers depend on, and the suites'
    consumers. `members` and `static_members` only say which consumers the suites use (the
    coordinator learns them from requests); the rest are broker settings:

    * `partitions`: partitions of topic ``t0``;
    * `assignor`: ``uniform`` or ``range`` (`group.consumer.assignors`);
    * `rejoin`: ``fixed`` (KAFKA-19233 fixed: epoch 0 always rejoins) or ``old``;
    * `commit_rule`: ``exact`` (member epoch equality, Kafka up to 4.2) or ``range`` (KIP-1251);
    * `revocation_epoch`: ``bump`` (Kafka up to 4.1) or ``keep`` (4.2+, KAFKA-19974);
    * `static_rejoin`: ``replace`` (Kafka 4.x) or ``in-place`` (apache/kafka #23542)."""

    members: int = 3
    partitions: int = 3
    static_members: int = 1
    assignor: str = "uniform"
    rejoin: str = "fixed"
    commit_rule: str = "exact"
    revocation_epoch: str = "bump"
    static_rejoin: str = "replace"


def config_of(settings: ConsumerGroupSettings) -> ConsumerGroupConfig:
    """The spec's configuration for `settings` (the protocol rules and the group's shape; the
    exploration bounds stay off: the suites fire the timers)."""
    return ConsumerGroupConfig(
        members=settings.members,
        partitions=settings.partitions,
        static_members=settings.static_members,
        assignor=ServerAssignor(settings.assignor),
        rejoin=RejoinRule(settings.rejoin),
        commit_rule=CommitEpochRule(settings.commit_rule),
        revocation_epoch=RevocationEpochRule(settings.revocation_epoch),
        static_rejoin=StaticRejoinRule(settings.static_rejoin),
    )


def settings_of(config: ConsumerGroupConfig) -> ConsumerGroupSettings:
    """The settings of a spec configuration (the inverse of `config_of` on its fields)."""
    return ConsumerGroupSettings(
        members=config.members,
        partitions=config.partitions,
        static_members=config.static_members,
        assignor=config.assignor.value,
        rejoin=config.rejoin.value,
        commit_rule=config.commit_rule.value,
        revocation_epoch=config.revocation_epoch.value,
        static_rejoin=config.static_rejoin.value,
    )


def member_id_of(client: int) -> MemberId:
    """The member id consumer `client` uses."""
    return f"m{client}"


def instance_id_of(settings: ConsumerGroupSettings, client: int) -> GroupInstanceId | None:
    """Consumer `client`'s group.instance.id (None for a dynamic member)."""
    return f"i{client}" if client < settings.static_members else None


@dataclass(frozen=True, slots=True)
class ConsumerMemberView:
    """One member as the coordinator records it (`ConsumerGroupMember`; ConsumerGroupDescribe
    shows most of it). `state` is Kafka's `MemberState` display name; `assignment_epochs` the
    epoch at which each held partition was assigned (KIP-1251); `rebalance_timer_epoch` the
    member epoch at which its rebalance timeout was armed (None: not armed)."""

    member_id: MemberId
    instance_id: GroupInstanceId | None
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned: tuple[TopicPartition, ...]
    pending_revocation: tuple[TopicPartition, ...]
    assignment_epochs: tuple[tuple[TopicPartition, int], ...]
    rebalance_timer_epoch: int | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupView:
    """Everything observable about one consumer group, as plain data, sorted: members and
    targets by member id, owners and offsets by partition. `partition_owners` is the partition
    epoch table (`ConsumerGroup.currentPartitionEpoch`): partition, holder, holder's epoch."""

    group_epoch: int
    assignment_epoch: int
    target: tuple[tuple[MemberId, tuple[TopicPartition, ...]], ...]
    members: tuple[ConsumerMemberView, ...]
    partition_owners: tuple[tuple[TopicPartition, MemberId, int], ...]
    offsets: tuple[tuple[TopicPartition, int], ...]


@runtime_checkable
class ConsumerGroupCoordinatorUnderTest(Protocol):
    """A KIP-848 consumer-group coordinator serving many groups (see the module docstring)."""

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        """Handle a ConsumerGroupHeartbeat."""
        ...

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """Handle an OffsetCommit (the member epoch in `generation_id_or_member_epoch`)."""
        ...

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """Handle an OffsetFetch."""
        ...

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        """The member's session timer fires."""
        ...

    def expire_rebalance(self, group_id: GroupId, member_id: MemberId) -> None:
        """The member's rebalance timer fires."""
        ...

    def expire_offsets(self, group_id: GroupId) -> None:
        """Offset retention passes for the group."""
        ...

    def observe(self, group_id: GroupId) -> ConsumerGroupView:
        """The group as it is now (a group never used: epoch 0, nothing in it)."""
        ...

    def close(self) -> None:
        """Release any resources."""
        ...


ConsumerGroupFactory = Callable[[ConsumerGroupSettings], ConsumerGroupCoordinatorUnderTest]


def _partitions(partitions: frozenset[int]) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(TOPIC, p) for p in sorted(partitions))


def view_of(
    settings: ConsumerGroupSettings, coordinator: Coordinator, offsets: dict[int, int]
) -> ConsumerGroupView:
    """The observable view of a spec coordinator and its committed offsets."""
    members = []
    target = []
    for client, member in enumerate(coordinator.members):
        entry = coordinator.target[client]
        if entry is not None:
            target.append((member_id_of(client), _partitions(entry)))
        if member is None:
            continue
        members.append(
            ConsumerMemberView(
                member_id_of(client),
                instance_id_of(settings, client),
                member.epoch,
                member.previous_epoch,
                member.state.value,
                _partitions(member.assigned),
                _partitions(member.pending_revocation),
                tuple((TopicPartition(TOPIC, p), epoch) for p, epoch in member.assignment_epochs),
                member.rebalance_deadline,
            )
        )
    owners = tuple(
        (TopicPartition(TOPIC, p), member_id_of(owner[0]), owner[1])
        for p, owner in enumerate(coordinator.owners)
        if owner is not None
    )
    return ConsumerGroupView(
        coordinator.group_epoch,
        coordinator.assignment_epoch,
        tuple(sorted(target)),
        tuple(sorted(members, key=lambda view: view.member_id)),
        owners,
        tuple((TopicPartition(TOPIC, p), offset) for p, offset in sorted(offsets.items())),
    )


class ReferenceConsumerGroupTarget:
    """`reference.consumer_group.ReferenceConsumerGroupCoordinator` as a
    `ConsumerGroupCoordinatorUnderTest`."""

    def __init__(self, settings: ConsumerGroupSettings) -> None:
        self.settings = settings
        self.reference = ReferenceConsumerGroupCoordinator(config_of(settings))

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        return self.reference.consumer_group_heartbeat(request)

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.reference.offset_commit(group_id, request)

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.reference.offset_fetch(group_id, request)

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        self.reference.expire_session(group_id, member_id)

    def expire_rebalance(self, group_id: GroupId, member_id: MemberId) -> None:
        self.reference.expire_rebalance(group_id, member_id)

    def expire_offsets(self, group_id: GroupId) -> None:
        self.reference.expire_offsets(group_id)

    def observe(self, group_id: GroupId) -> ConsumerGroupView:
        return view_of(self.settings, self.reference.group(group_id), self.reference.offsets(group_id))

    def close(self) -> None:
        """Nothing to release."""


IMPL_MODULE = "conformance.impl_consumer_group"
"""Where kafkaspec's optimized consumer-group coordinator adapter lives (imported only when asked for)."""


def resolve_consumer_group_target(target: str) -> ConsumerGroupFactory:
    """The factory named by `target`: ``reference``, ``impl`` or ``MODULE:FACTORY``; a
    ValueError saying what is accepted for anything else."""
    checked: ConsumerGroupFactory = resolve_factory(
        target,
        ReferenceConsumerGroupTarget,
        (IMPL_MODULE, "ImplConsumerGroupCoordinator", "the optimized consumer-group coordinator"),
        "it must take ConsumerGroupSettings and return a ConsumerGroupCoordinatorUnderTest",
    )
    return checked


def make_consumer_group_coordinator(
    target: str, settings: ConsumerGroupSettings
) -> ConsumerGroupCoordinatorUnderTest:
    """A fresh coordinator for `target`, checked to implement `ConsumerGroupCoordinatorUnderTest`."""
    made = resolve_consumer_group_target(target)(settings)
    if not isinstance(made, ConsumerGroupCoordinatorUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, "
            "not a ConsumerGroupCoordinatorUnderTest"
        )
    return made
