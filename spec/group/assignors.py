"""The client-side partition assignors of the classic protocol, as pure functions.

Under the classic protocol the coordinator never looks inside the assignment: the group's
leader (a consumer) runs the assignor the group selected (`partition.assignment.strategy`,
voted on by all members in JoinGroup) over every member's `Subscription` and sends the result
in its SyncGroup request. These are the assignors of Kafka's Java client:

* `range` (`RangeAssignor`, the default before 3.0 alongside cooperative-sticky): per topic,
  the members subscribed to it in order take consecutive ranges; the first
  `partitions % members` take one extra;
* `roundrobin` (`RoundRobinAssignor`): every partition of every topic, in order, to the next
  member (in a circle) subscribed to its topic;
* `cooperative-sticky` (`CooperativeStickyAssignor` over `AbstractStickyAssignor`, KIP-429):
  balanced (every member gets `floor(P/N)` or `ceil(P/N)`), sticky (a member keeps what it
  owns up to its quota), and cooperative: a partition that must move to another member is left
  unassigned in this round (`adjustAssignment`), so its owner revokes it first and the next
  round hands it over. Conflicting claims (two members claim one partition) are resolved by the
  generation in the subscription (KIP-792): the higher generation keeps it, and claims in the
  same generation are both dropped (KAFKA-12984, KAFKA-14639).

Members are ordered as Kafka's `MemberInfo.compareTo` orders them: static members (KIP-345)
first, by `group.instance.id`, then dynamic members by member id, so a restarted static member
gets the same partitions back. The spec models groups whose members subscribe to the same
topics (what the sticky assignor's `constrainedAssign` path assumes); the range and
round-robin assignors also honour differing subscriptions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from spec._frozen import fast_init
from spec.group.types import (
    UNKNOWN_GENERATION_ID,
    GroupInstanceId,
    MemberId,
    RebalanceProtocol,
    TopicPartition,
)

RANGE = "range"
ROUND_ROBIN = "roundrobin"
COOPERATIVE_STICKY = "cooperative-sticky"


@fast_init
@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What the leader knows of one member: its ids and the `Subscription` it joined with."""

    member_id: MemberId
    group_instance_id: GroupInstanceId | None
    topics: tuple[str, ...]
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = UNKNOWN_GENERATION_ID


GroupAssignment = dict[MemberId, tuple[TopicPartition, ...]]
"""The leader's result: every member's partitions, sorted."""


def member_order(member: MemberSubscription) -> tuple[int, str]:
    """`MemberInfo.compareTo`: static members first by instance id, then dynamic by member id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def all_partitions(partitions_per_topic: Mapping[str, int], topics: Sequence[str]) -> list[TopicPartition]:
    """Every partition of `topics` that exists, sorted by topic then partition."""
    return [
        TopicPartition(topic, number)
        for topic in sorted(set(topics))
        if topic in partitions_per_topic
        for number in range(partitions_per_topic[topic])
    ]


def _sorted_result(
    members: Sequence[MemberSubscription], chosen: Mapping[MemberId, list[TopicPartition]]
) -> GroupAssignment:
    return {member.member_id: tuple(sorted(chosen.get(member.member_id, []))) for member in members}


def range_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> GroupAssignment:
    """`RangeAssignor.assign`: per topic, consumer i of N (in member order) takes partitions
    `[i*(P//N) + min(i, P%N), ...)`, `P//N` of them plus one for the first `P%N` consumers."""
    chosen: dict[MemberId, list[TopicPartition]] = {member.member_id: [] for member in members}
    topics = sorted({topic for member in members for topic in member.topics})
    for topic in topics:
        if topic not in partitions_per_topic:
            continue
        subscribed = sorted((member for member in members if topic in member.topics), key=member_order)
        count = partitions_per_topic[topic]
        per_member, with_extra = divmod(count, len(subscribed))
        for index, member in enumerate(subscribed):
            start = per_member * index + min(index, with_extra)
            length = per_member + (1 if index < with_extra else 0)
            chosen[member.member_id].extend(
                TopicPartition(topic, number) for number in range(start, start + length)
            )
    return _sorted_result(members, chosen)


def round_robin_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> GroupAssignment:
    """`RoundRobinAssignor.assign`: partitions in (topic, partition) order, each to the next
    member in circular member order that subscribes to its topic."""
    chosen: dict[MemberId, list[TopicPartition]] = {member.member_id: [] for member in members}
    ordered = sorted(members, key=member_order)
    if not ordered:
        return {}
    topics = sorted({topic for member in members for topic in member.topics})
    position = 0
    for partition in all_partitions(partitions_per_topic, topics):
        for _ in range(len(ordered)):
            member = ordered[position % len(ordered)]
            position += 1
            if partition.topic in member.topics:
                chosen[member.member_id].append(partition)
                break
    return _sorted_result(members, chosen)


def valid_claims(
    members: Sequence[MemberSubscription], partitions: set[TopicPartition]
) -> dict[MemberId, list[TopicPartition]]:
    """`AbstractStickyAssignor.allSubscriptionsEqual`: each member's owned partitions that it
    may keep as its previous assignment. A partition claimed by two members goes to the one
    with the higher generation; two claims in the same generation are both dropped (the
    partition is then assigned afresh)."""
    claims: dict[MemberId, list[TopicPartition]] = {member.member_id: [] for member in members}
    owner_of: dict[TopicPartition, MemberSubscription] = {}
    contested: set[TopicPartition] = set()
    for member in members:
        for partition in member.owned_partitions:
            if partition not in partitions or partition in contested:
                continue
            other = owner_of.get(partition)
            if other is None:
                owner_of[partition] = member
                claims[member.member_id].append(partition)
            elif member.generation_id == other.generation_id:
                claims[other.member_id].remove(partition)
                contested.add(partition)
                del owner_of[partition]
            elif member.generation_id > other.generation_id:
                claims[other.member_id].remove(partition)
                claims[member.member_id].append(partition)
                owner_of[partition] = member
    return claims


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    withhold_transferring_partitions: bool = True,
) -> GroupAssignment:
    """`AbstractStickyAssignor.constrainedAssign` for members with equal subscriptions, then,
    when `withhold_transferring_partitions`, `CooperativeStickyAssignor.adjustAssignment`.

    Quotas: with P partitions and N members every member gets `P//N` (the minimum quota) or one
    more, and exactly `P%N` members get one more. A member first keeps its valid claims up to
    its quota (at most `P%N` members keep more than the minimum); the rest go, in partition
    order, to the members with the fewest. A partition that ends up with a member other than
    the one that claimed it is *transferring*: the cooperative protocol leaves it unassigned in
    this round (its owner will revoke it and rejoin), so nothing is ever revoked and assigned in
    one round (`ConsumerCoordinator.validateCooperativeAssignment` checks exactly that).
    """
    ordered = sorted(members, key=member_order)
    if not ordered:
        return {}
    topics = sorted({topic for member in members for topic in member.topics})
    partitions = all_partitions(partitions_per_topic, topics)
    claims = valid_claims(ordered, set(partitions))
    min_quota, with_extra = divmod(len(partitions), len(ordered))
    chosen: dict[MemberId, list[TopicPartition]] = {member.member_id: [] for member in ordered}
    extra_left = with_extra
    # keep claims: the members claiming most keep one over the minimum first
    for member in sorted(ordered, key=lambda item: -len(claims[item.member_id])):
        owned = sorted(claims[member.member_id])
        keep = min(len(owned), min_quota)
        if len(owned) > min_quota and extra_left > 0:
            keep += 1
            extra_left -= 1
        chosen[member.member_id] = owned[:keep]
    taken = {partition for kept in chosen.values() for partition in kept}
    for partition in partitions:
        if partition in taken:
            continue
        under_min = [member for member in ordered if len(chosen[member.member_id]) < min_quota]
        if under_min:
            receiver = under_min[0]
        else:
            receiver = next(member for member in ordered if len(chosen[member.member_id]) == min_quota)
            extra_left -= 1
        chosen[receiver.member_id].append(partition)
    if withhold_transferring_partitions:
        claimed_by = {partition: owner for owner, owned in claims.items() for partition in owned}
        for member_id, assigned in chosen.items():
            chosen[member_id] = [
                partition for partition in assigned if claimed_by.get(partition, member_id) == member_id
            ]
    return _sorted_result(ordered, chosen)


def cooperative_sticky_assign(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> GroupAssignment:
    """`CooperativeStickyAssignor.assign`: the sticky assignment with transferring partitions
    withheld for a second round."""
    return sticky_assign(partitions_per_topic, members, withhold_transferring_partitions=True)


Assignor = Callable[[Mapping[str, int], Sequence[MemberSubscription]], GroupAssignment]

ASSIGNORS: Mapping[str, Assignor] = {
    RANGE: range_assign,
    ROUND_ROBIN: round_robin_assign,
    COOPERATIVE_STICKY: cooperative_sticky_assign,
}
"""The assignors by the protocol name a consumer puts in JoinGroup (`ConsumerPartitionAssignor.name`)."""

SUPPORTED_PROTOCOLS: Mapping[str, tuple[RebalanceProtocol, ...]] = {
    RANGE: (RebalanceProtocol.EAGER,),
    ROUND_ROBIN: (RebalanceProtocol.EAGER,),
    COOPERATIVE_STICKY: (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE),
}
"""`ConsumerPartitionAssignor.supportedProtocols`: the consumer uses COOPERATIVE only when every
configured assignor supports it (`ConsumerCoordinator`'s constructor picks the highest common one)."""


def rebalance_protocol(strategy: Sequence[str]) -> RebalanceProtocol:
    """The rebalance protocol a consumer with `partition.assignment.strategy` uses: the highest
    protocol every assignor in the list supports."""
    common = set(RebalanceProtocol)
    for name in strategy:
        common &= set(SUPPORTED_PROTOCOLS[name])
    return (
        RebalanceProtocol.COOPERATIVE if RebalanceProtocol.COOPERATIVE in common else RebalanceProtocol.EAGER
    )


def partitions_moved_in_one_round(
    members: Sequence[MemberSubscription], assignment: Mapping[MemberId, Sequence[TopicPartition]]
) -> tuple[TopicPartition, ...]:
    """`ConsumerCoordinator.validateCooperativeAssignment`: the partitions that are revoked from
    one member and assigned to another in the same round (none, for a cooperative assignment)."""
    revoked = {
        partition
        for member in members
        for partition in member.owned_partitions
        if partition not in assignment.get(member.member_id, ())
    }
    added = {
        partition
        for member in members
        for partition in assignment.get(member.member_id, ())
        if partition not in member.owned_partitions
    }
    return tuple(sorted(revoked & added))


__all__ = [
    "ASSIGNORS",
    "COOPERATIVE_STICKY",
    "RANGE",
    "ROUND_ROBIN",
    "SUPPORTED_PROTOCOLS",
    "Assignor",
    "GroupAssignment",
    "MemberSubscription",
    "all_partitions",
    "cooperative_sticky_assign",
    "member_order",
    "partitions_moved_in_one_round",
    "range_assign",
    "rebalance_protocol",
    "round_robin_assign",
    "sticky_assign",
    "valid_claims",
]
