"""The client-side assignors: Kafka's examples as tables, and Hypothesis properties (every
partition assigned once, balance, stickiness, no transfer within one cooperative round)."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from spec.group.assignors import (
    MemberSubscription,
    cooperative_sticky_assign,
    member_order,
    partitions_moved_in_one_round,
    range_assign,
    rebalance_protocol,
    round_robin_assign,
    sticky_assign,
    valid_claims,
)
from spec.group.types import RebalanceProtocol, TopicPartition


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def member(
    member_id: str,
    topics: tuple[str, ...] = ("t0", "t1"),
    owned: tuple[TopicPartition, ...] | list[TopicPartition] = (),
    generation: int = -1,
    instance: str | None = None,
) -> MemberSubscription:
    return MemberSubscription(member_id, instance, tuple(topics), tuple(owned), generation)


def test_range_gives_the_first_members_the_extra_partitions_per_topic():
    # RangeAssignor's javadoc: C0, C1; t0 and t1 with 3 partitions each
    result = range_assign({"t0": 3, "t1": 3}, [member("C1"), member("C0")])
    assert result == {
        "C0": (tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)),
        "C1": (tp("t0", 2), tp("t1", 2)),
    }


def test_range_only_assigns_a_topic_to_its_subscribers():
    result = range_assign({"t0": 2, "t1": 1}, [member("a", ("t0",)), member("b", ("t0", "t1"))])
    assert result == {"a": (tp("t0", 0),), "b": (tp("t0", 1), tp("t1", 0))}


def test_round_robin_interleaves_partitions_over_members():
    # RoundRobinAssignor's javadoc: C0, C1; t0 and t1 with 3 partitions each
    result = round_robin_assign({"t0": 3, "t1": 3}, [member("C0"), member("C1")])
    assert result == {
        "C0": (tp("t0", 0), tp("t0", 2), tp("t1", 1)),
        "C1": (tp("t0", 1), tp("t1", 0), tp("t1", 2)),
    }


def test_static_members_come_first_by_instance_id():
    members = [member("a-1"), member("z-9", instance="i2"), member("b-2", instance="i1")]
    assert [m.member_id for m in sorted(members, key=member_order)] == ["b-2", "z-9", "a-1"]
    result = range_assign({"t0": 3}, members)
    assert (
        result["b-2"] == (tp("t0", 0),)
        and result["z-9"] == (tp("t0", 1),)
        and result["a-1"] == (tp("t0", 2),)
    )


def test_sticky_keeps_claims_within_quota_and_cooperative_withholds_the_moving_ones():
    owned = (tp("t0", 0), tp("t0", 1), tp("t0", 2))
    members = [member("a", ("t0",), owned, 1), member("b", ("t0",), (), 1), member("c", ("t0",), (), 1)]
    eager = sticky_assign({"t0": 3}, members, withhold_transferring_partitions=False)
    assert eager["a"] == (tp("t0", 0),)
    assert sorted(eager["b"] + eager["c"]) == [tp("t0", 1), tp("t0", 2)]
    cooperative = cooperative_sticky_assign({"t0": 3}, members)
    assert cooperative == {"a": (tp("t0", 0),), "b": (), "c": ()}
    assert partitions_moved_in_one_round(members, eager) == (tp("t0", 1), tp("t0", 2))
    assert partitions_moved_in_one_round(members, cooperative) == ()


def test_conflicting_claims_go_to_the_higher_generation_and_same_generation_claims_are_dropped():
    partitions = {tp("t0", 0), tp("t0", 1)}
    older = member("a", ("t0",), (tp("t0", 0),), 1)
    newer = member("b", ("t0",), (tp("t0", 0),), 2)
    assert valid_claims([older, newer], partitions) == {"a": [], "b": [tp("t0", 0)]}
    assert valid_claims([newer, older], partitions) == {"b": [tp("t0", 0)], "a": []}
    twin = member("c", ("t0",), (tp("t0", 0),), 2)
    assert valid_claims([newer, twin], partitions) == {"b": [], "c": []}


def test_rebalance_protocol_is_the_highest_every_assignor_supports():
    assert rebalance_protocol(("cooperative-sticky",)) is RebalanceProtocol.COOPERATIVE
    assert rebalance_protocol(("cooperative-sticky", "range")) is RebalanceProtocol.EAGER
    assert rebalance_protocol(("range",)) is RebalanceProtocol.EAGER


# --- properties ----------------------------------------------------------------------------------

topics_strategy = st.dictionaries(st.sampled_from(["t0", "t1"]), st.integers(0, 6), min_size=1)


@st.composite
def groups(draw, with_claims: bool):
    """Members subscribed to every topic; with claims, a disjoint previous ownership."""
    partitions_per_topic = draw(topics_strategy)
    count = draw(st.integers(1, 5))
    names = [f"m{index}" for index in range(count)]
    partitions = [tp(topic, n) for topic, total in sorted(partitions_per_topic.items()) for n in range(total)]
    owned: dict[str, list[TopicPartition]] = {name: [] for name in names}
    if with_claims:
        for partition in partitions:
            owner = draw(st.sampled_from([None, *names]))
            if owner is not None:
                owned[owner].append(partition)
    statics = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    members = [
        member(name, tuple(partitions_per_topic), owned[name], 3, f"i{index}" if statics[index] else None)
        for index, name in enumerate(names)
    ]
    return partitions_per_topic, members, partitions


def assigned_once(result: Mapping[str, tuple[TopicPartition, ...]], partitions: list[TopicPartition]) -> bool:
    flat = [partition for assigned in result.values() for partition in assigned]
    return sorted(flat) == sorted(partitions)


@settings(max_examples=60, deadline=None)
@given(groups(with_claims=False))
def test_range_and_round_robin_assign_every_partition_exactly_once(group):
    partitions_per_topic, members, partitions = group
    for assign in (range_assign, round_robin_assign):
        result = assign(partitions_per_topic, members)
        assert set(result) == {m.member_id for m in members}
        assert assigned_once(result, partitions)
    # range balances each topic; round-robin the whole assignment (equal subscriptions)
    for topic in partitions_per_topic:
        counts = [
            sum(1 for p in assigned if p.topic == topic)
            for assigned in range_assign(partitions_per_topic, members).values()
        ]
        assert max(counts) - min(counts) <= 1
    counts = [len(assigned) for assigned in round_robin_assign(partitions_per_topic, members).values()]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=80, deadline=None)
@given(groups(with_claims=True))
def test_sticky_assigns_every_partition_once_balanced_and_keeps_claims_up_to_quota(group):
    partitions_per_topic, members, partitions = group
    result = sticky_assign(partitions_per_topic, members, withhold_transferring_partitions=False)
    assert assigned_once(result, partitions)
    counts = [len(assigned) for assigned in result.values()]
    assert max(counts) - min(counts) <= 1
    min_quota = len(partitions) // len(members)
    for m in members:
        kept = set(m.owned_partitions) & set(result[m.member_id])
        assert len(kept) >= min(len(m.owned_partitions), min_quota)


@settings(max_examples=80, deadline=None)
@given(groups(with_claims=True))
def test_cooperative_sticky_never_moves_a_partition_in_one_round(group):
    partitions_per_topic, members, partitions = group
    result = cooperative_sticky_assign(partitions_per_topic, members)
    flat = [partition for assigned in result.values() for partition in assigned]
    assert len(flat) == len(set(flat))
    assert partitions_moved_in_one_round(members, result) == ()
    # what it withholds is exactly what the sticky assignment moves
    full = sticky_assign(partitions_per_topic, members, withhold_transferring_partitions=False)
    assert set(full) == set(result)
    assert set(partitions) - set(flat) == set(partitions_moved_in_one_round(members, full))
