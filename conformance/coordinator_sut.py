"""The system under test: what a classic group coordinator must offer to be checked for conformance.

What it is
    `ClassicCoordinatorUnderTest` is the typed Protocol the coordinator suites drive
    (`conformance.machines.coordinator`, `conformance.coordinator_exhaustive`): what a
    Kafka-compatible broker's group coordinator implements for the classic protocol. It has
    one method per request of the classic group APIs, taking and returning the plain
    request and response types of `spec.group.types` (Kafka's message definitions), one per
    coordinator timer, and `observe()`:

    * `join_group`, `sync_group`: the answer, or None when the coordinator parks the request
      until the join or sync phase completes (Kafka holds the response future); a parked
      request is answered later, to the connection (`client`) that sent it, and
      `deliveries()` returns those answers, each once, in the order they were given;
    * `heartbeat`, `leave_group`, `offset_commit`, `offset_fetch`: always answered at once;
    * the timers, fired by the suite (time is abstract in the spec, see below):
      `expire_session(group, member)` (`session.timeout.ms` of a member, or of a member id
      handed out with MEMBER_ID_REQUIRED, passed without a heartbeat), `expire_rebalance`
      (the join phase's rebalance timeout, or the initial rebalance delay after Empty),
      `expire_pending_sync` (members of a new generation that did not send SyncGroup within
      the rebalance timeout) and `expire_offsets` (`offsets.retention.minutes` passed);
    * `observe(group)`: a `GroupView`, compared field by field with the reference's after
      every command.

    Every method takes the group id first: a coordinator serves many groups, and the suites
    use more than one so a coordinator that mixes groups up is caught.

Timers
    The spec abstracts time: a timer "fires" when the suite says so, and fires as the spec
    says even if the member heartbeated a moment ago (a timer is a timer: the suite is the
    clock). A coordinator with a real clock maps each command onto it (the built-in adapter,
    `conformance.impl_coordinator`, makes that one timer due now and runs its timer wheel).
    A timer that the coordinator would not have armed (an unknown member, a group not
    rebalancing, offsets of a group with members) must change nothing.

Member ids
    Ids are compared as they are: a new dynamic member's id is ``c{client}-{n}`` and a
    static member's ``{group.instance.id}-{n}``, where n counts the ids the group has handed
    out so far (the spec's `new_member_id`; Kafka appends a UUID instead). A target that
    makes other ids can wrap itself in an adapter that renames them.

Plugging in your own
    ``--target MODULE:FACTORY --suite coordinator``: ``FACTORY(settings)`` takes a
    `CoordinatorSettings` (the broker's group settings: `group.max.size`) and returns a fresh
    coordinator that has no groups yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from conformance.sut import resolve_factory
from reference.coordinator import ReferenceClassicCoordinator
from spec.group.classic_coordinator import ClassicGroup, CoordinatorRules
from spec.group.types import (
    Assignment,
    ClassicGroupState,
    GroupInstanceId,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberId,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartition,
)

GroupId = str

DEFAULT_GROUP_MAX_SIZE = 2**31 - 1
"""`group.max.size`'s default (Kafka: `Integer.MAX_VALUE`)."""


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """The broker settings the classic coordinator's answers depend on."""

    group_max_size: int = DEFAULT_GROUP_MAX_SIZE


@dataclass(frozen=True, slots=True)
class Delivery:
    """The answer to a parked JoinGroup or SyncGroup, given to the connection that sent it."""

    group_id: GroupId
    client: int
    response: JoinGroupResponse | SyncGroupResponse


@dataclass(frozen=True, slots=True)
class MemberView:
    """One member as a coordinator knows it (`ClassicGroupMember`; DescribeGroups shows most of
    it): whether a JoinGroup or SyncGroup of it is parked, and its assignment."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    client: int
    protocols: tuple[JoinGroupRequestProtocol, ...]
    awaiting_join: bool
    awaiting_sync: bool
    assignment: Assignment


@dataclass(frozen=True, slots=True)
class GroupView:
    """Everything observable about one classic group, as plain data.

    `members` are in the order they joined (a static member replaced by a new instance keeps
    its place): Kafka's leader is the first to join, and a new leader the first remaining.
    `pending_members` are ids handed out with MEMBER_ID_REQUIRED that have not joined yet, in
    the order given; `pending_sync` the members of the current generation that have not sent
    SyncGroup, sorted; `offsets` the committed offsets, sorted by partition."""

    state: ClassicGroupState
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: MemberId | None
    members: tuple[MemberView, ...]
    pending_members: tuple[MemberId, ...]
    pending_sync: tuple[MemberId, ...]
    offsets: tuple[tuple[TopicPartition, int], ...]


@runtime_checkable
class ClassicCoordinatorUnderTest(Protocol):
    """A classic-protocol group coordinator serving many groups (see the module docstring)."""

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        """Handle a JoinGroup from connection `client`; None when it is parked."""
        ...

    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None:
        """Handle a SyncGroup from connection `client`; None when it is parked."""
        ...

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        """Handle a Heartbeat."""
        ...

    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse:
        """Handle a LeaveGroup (a batch of members, KIP-345)."""
        ...

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """Handle an OffsetCommit."""
        ...

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """Handle an OffsetFetch."""
        ...

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        """The session timer of a member (or of a pending member id) fires."""
        ...

    def expire_rebalance(self, group_id: GroupId) -> None:
        """The join phase's rebalance timer (or the initial rebalance delay) fires."""
        ...

    def expire_pending_sync(self, group_id: GroupId) -> None:
        """The pending-sync timer fires."""
        ...

    def expire_offsets(self, group_id: GroupId) -> None:
        """Offset retention passes for the group."""
        ...

    def deliveries(self) -> tuple[Delivery, ...]:
        """The answers to parked requests given since the last call, in order; each is
        returned once."""
        ...

    def observe(self, group_id: GroupId) -> GroupView:
        """The group as it is now (a group never used: Empty, generation 0, nothing in it)."""
        ...

    def close(self) -> None:
        """Release any resources."""
        ...


CoordinatorFactory = Callable[[CoordinatorSettings], ClassicCoordinatorUnderTest]


def coordinator_rules(settings: CoordinatorSettings) -> CoordinatorRules:
    """The spec's rules for a broker with `settings` (Kafka's current behaviour)."""
    return CoordinatorRules(group_max_size=settings.group_max_size)


def view_of(group: ClassicGroup) -> GroupView:
    """The observable view of a spec group."""
    return GroupView(
        state=group.state,
        generation=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader,
        members=tuple(
            MemberView(
                member.member_id,
                member.group_instance_id,
                member.client,
                member.protocols,
                member.awaiting_join,
                member.awaiting_sync,
                member.assignment,
            )
            for member in group.members
        ),
        pending_members=group.pending_members,
        pending_sync=tuple(sorted(group.pending_sync)),
        offsets=tuple((partition, commit.offset) for partition, commit in group.offsets),
    )


class ReferenceCoordinatorTarget:
    """`reference.coordinator.ReferenceClassicCoordinator` as a `ClassicCoordinatorUnderTest`."""

    def __init__(self, settings: CoordinatorSettings) -> None:
        self.reference = ReferenceClassicCoordinator(coordinator_rules(settings))

    def join_group(
        self, group_id: GroupId, request: JoinGroupRequest, client: int
    ) -> JoinGroupResponse | None:
        return self.reference.join_group(group_id, request, client)

    def sync_group(
        self, group_id: GroupId, request: SyncGroupRequest, client: int
    ) -> SyncGroupResponse | None:
        return self.reference.sync_group(group_id, request, client)

    def heartbeat(self, group_id: GroupId, request: HeartbeatRequest) -> HeartbeatResponse:
        return self.reference.heartbeat(group_id, request)

    def leave_group(self, group_id: GroupId, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return self.reference.leave_group(group_id, request)

    def offset_commit(self, group_id: GroupId, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.reference.offset_commit(group_id, request)

    def offset_fetch(self, group_id: GroupId, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.reference.offset_fetch(group_id, request)

    def expire_session(self, group_id: GroupId, member_id: MemberId) -> None:
        self.reference.expire_session(group_id, member_id)

    def expire_rebalance(self, group_id: GroupId) -> None:
        self.reference.expire_rebalance(group_id)

    def expire_pending_sync(self, group_id: GroupId) -> None:
        self.reference.expire_pending_sync(group_id)

    def expire_offsets(self, group_id: GroupId) -> None:
        self.reference.expire_offsets(group_id)

    def deliveries(self) -> tuple[Delivery, ...]:
        return tuple(
            Delivery(group_id, client, response)
            for group_id, (client, response) in self.reference.deliveries()
        )

    def observe(self, group_id: GroupId) -> GroupView:
        return view_of(self.reference.group(group_id))

    def close(self) -> None:
        """Nothing to release."""


IMPL_MODULE = "conformance.impl_coordinator"
"""Where kafkaspec's optimized coordinator adapter lives (imported only when asked for)."""


def resolve_coordinator_target(target: str) -> CoordinatorFactory:
    """The factory named by `target`: ``reference``, ``impl`` or ``MODULE:FACTORY``; a
    ValueError saying what is accepted for anything else."""
    checked: CoordinatorFactory = resolve_factory(
        target,
        ReferenceCoordinatorTarget,
        (IMPL_MODULE, "ImplCoordinator", "the optimized coordinator"),
        "it must take CoordinatorSettings and return a ClassicCoordinatorUnderTest",
    )
    return checked


def make_coordinator(target: str, settings: CoordinatorSettings) -> ClassicCoordinatorUnderTest:
    """A fresh coordinator for `target`, checked to implement `ClassicCoordinatorUnderTest`."""
    made = resolve_coordinator_target(target)(settings)
    if not isinstance(made, ClassicCoordinatorUnderTest):
        raise ValueError(
            f"conformance target {target!r}: factory returned {type(made).__name__}, "
            "not a ClassicCoordinatorUnderTest"
        )
    return made
