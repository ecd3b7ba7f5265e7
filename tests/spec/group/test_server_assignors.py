"""The KIP-848 server-side assignors (`spec.group.server_assignors`): tables of Kafka's examples and
Hypothesis properties (every partition exactly once, balance, stickiness of `uniform`, contiguous
ranges in member order for `range`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec.group.server_assignors import range_assignment, range_order, uniform_assignment


def _sizes(assignment: dict[int, frozenset[int]]) -> list[int]:
    return [len(partitions) for partitions in assignment.values()]


@pytest.mark.parametrize(
    ("members", "partitions", "current", "expected"),
    [
        # first member: everything
        ([0], 3, {}, {0: {0, 1, 2}}),
        # a second member joins: the first keeps its quota (lowest first), the excess moves
        ([0, 1], 3, {0: {0, 1, 2}}, {0: {0, 1}, 1: {2}}),
        ([0, 1], 2, {0: {0, 1}}, {0: {0}, 1: {1}}),
        # more members than partitions: the last one gets nothing
        ([0, 1, 2], 2, {0: {0}, 1: {1}}, {0: {0}, 1: {1}, 2: set()}),
        # a member leaves: its partitions go to those below quota, the others keep theirs
        ([1, 2], 3, {0: {0}, 1: {1}, 2: {2}}, {1: {0, 1}, 2: {2}}),
        # stickiness beats order: member 1 keeps what it had even though member 0 comes first
        ([0, 1], 2, {1: {0}}, {0: {1}, 1: {0}}),
    ],
)
def test_uniform_assignment_table(
    members: list[int], partitions: int, current: dict[int, set[int]], expected: dict[int, set[int]]
) -> None:
    frozen = {member: frozenset(parts) for member, parts in current.items()}
    result = uniform_assignment(members, partitions, frozen)
    assert result == {member: frozenset(parts) for member, parts in expected.items()}


@pytest.mark.parametrize(
    ("members", "partitions", "static", "expected"),
    [
        # RangeAssignor's javadoc example, one topic of 3 partitions: M0 [P0, P1], M1 [P2]
        ([0, 1], 3, set(), {0: {0, 1}, 1: {2}}),
        ([0, 1, 2], 2, set(), {0: {0}, 1: {1}, 2: set()}),
        # static members come first, whatever their number
        ([0, 1, 2], 3, {2}, {2: {0}, 0: {1}, 1: {2}}),
        ([0, 1, 2, 3], 6, set(), {0: {0, 1}, 1: {2, 3}, 2: {4}, 3: {5}}),
    ],
)
def test_range_assignment_table(
    members: list[int], partitions: int, static: set[int], expected: dict[int, set[int]]
) -> None:
    result = range_assignment(members, partitions, frozenset(static))
    assert result == {member: frozenset(parts) for member, parts in expected.items()}


def test_range_order_static_first() -> None:
    assert range_order([3, 1, 2, 0], frozenset({3, 2})) == [2, 3, 0, 1]


def test_no_members_no_assignment() -> None:
    assert uniform_assignment([], 3, {}) == {}
    assert range_assignment([], 3) == {}


_MEMBERS = st.lists(st.integers(0, 5), min_size=1, max_size=5, unique=True)


@st.composite
def _group(draw: st.DrawFn) -> tuple[list[int], int, dict[int, frozenset[int]]]:
    """Members, a partition count, and a current target assignment (each partition to at most one
    member, possibly to members no longer in the group)."""
    members = draw(_MEMBERS)
    partitions = draw(st.integers(0, 7))
    holders = draw(
        st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=partitions, max_size=partitions)
    )
    current: dict[int, set[int]] = {}
    for partition, holder in enumerate(holders):
        if holder is not None:
            current.setdefault(holder, set()).add(partition)
    return members, partitions, {member: frozenset(parts) for member, parts in current.items()}


def _each_partition_once(assignment: dict[int, frozenset[int]], partitions: int) -> bool:
    seen: list[int] = [p for parts in assignment.values() for p in parts]
    return sorted(seen) == list(range(partitions))


@settings(max_examples=200, deadline=None)
@given(_group())
def test_uniform_gives_each_partition_once_and_balances(
    group: tuple[list[int], int, dict[int, frozenset[int]]],
) -> None:
    members, partitions, current = group
    result = uniform_assignment(members, partitions, current)
    assert set(result) == set(members)
    assert _each_partition_once(result, partitions)
    sizes = _sizes(result)
    assert max(sizes) - min(sizes) <= 1


@settings(max_examples=200, deadline=None)
@given(_group())
def test_uniform_is_sticky(group: tuple[list[int], int, dict[int, frozenset[int]]]) -> None:
    """A member keeps as many of its current partitions as the balanced quota lets it: at least
    min(|current|, partitions // members)."""
    members, partitions, current = group
    result = uniform_assignment(members, partitions, current)
    floor = partitions // len(members)
    for member in members:
        mine = current.get(member, frozenset())
        assert len(result[member] & mine) >= min(len(mine), floor)


@settings(max_examples=200, deadline=None)
@given(_group())
def test_uniform_is_stable_when_balanced(group: tuple[list[int], int, dict[int, frozenset[int]]]) -> None:
    """Assigning again from its own result changes nothing (no needless movement)."""
    members, partitions, current = group
    first = uniform_assignment(members, partitions, current)
    assert uniform_assignment(members, partitions, first) == first


@settings(max_examples=200, deadline=None)
@given(_MEMBERS, st.integers(0, 7), st.data())
def test_range_gives_contiguous_ranges_in_member_order(
    members: list[int], partitions: int, data: st.DataObject
) -> None:
    static = frozenset(data.draw(st.sets(st.sampled_from(members))))
    result = range_assignment(members, partitions, static)
    assert _each_partition_once(result, partitions)
    sizes = _sizes(result)
    assert max(sizes) - min(sizes) <= 1
    start = 0
    for member in range_order(members, static):
        parts = sorted(result[member])
        assert parts == list(range(start, start + len(parts)))
        start += len(parts)
    # the first members take the extra partitions
    ordered_sizes = [len(result[member]) for member in range_order(members, static)]
    assert ordered_sizes == sorted(ordered_sizes, reverse=True)
