"""The server-side assignors of the KIP-848 consumer protocol: `uniform` and `range`.

Under the consumer protocol the group coordinator, not a group leader, computes the target
assignment (`TargetAssignmentBuilder`), with the assignor the members name in
`ConsumerGroupHeartbeat.ServerAssignor` (`group.consumer.assignors`; `uniform` is Kafka's
default). Both assignors here are pure functions of the group's members, the topic's partition
count and, for `uniform`, the current target assignment, as Kafka's `UniformAssignor` and
`RangeAssignor` of the group coordinator's `assignor` package compute them for a *homogeneous*
group (every member subscribes to the same topics, here one topic):

* `uniform_assignment` (`UniformHomogeneousAssignmentBuilder`): balance first (member sizes differ
  by at most one partition), then stickiness (a member keeps the partitions of its current target
  assignment up to its quota; only the excess and the unassigned partitions move);
* `range_assignment` (`RangeAssignor.assignHomogeneousGroup`): contiguous ranges of partitions in
  member order, static members (KIP-345, by `group.instance.id`) before dynamic ones (by member id),
  the first `partitions % members` members one partition more. Not sticky: a member joining or
  leaving shifts the ranges.

Member keys are member ids (strings) or numbers (the consumer spec numbers its consumers). Kafka iterates
members in hash-map order where no order is specified (which members of `uniform` get the extra
partition); the spec fixes sorted order, so a result is deterministic and reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

Member = TypeVar("Member", int, str)


def uniform_assignment(
    members: Sequence[Member],
    partitions: int,
    current: Mapping[Member, frozenset[int]],
) -> dict[Member, frozenset[int]]:
    """`UniformAssignor` for a homogeneous group: every partition 0..partitions-1 goes to exactly
    one member; sizes differ by at most one; each member keeps as much of `current` (its present
    target assignment) as its quota allows.

    Members are visited in sorted order: the first `partitions % len(members)` of them have quota
    `partitions // len(members) + 1`, the rest one less (`maybeRevokePartitions`). A member keeps
    its current partitions (lowest first) up to its quota and gives up the rest. The partitions no
    member holds (ascending), then those given up (in visiting order), fill the members below quota
    in visiting order (`assignRemainingPartitions`). `current` must not give a partition to two
    members (a target assignment never does).
    """
    if not members:
        return {}
    ordered = sorted(set(members))
    minimum, extra = divmod(partitions, len(ordered))
    held = {p for member in ordered for p in current.get(member, frozenset()) if 0 <= p < partitions}
    unassigned = [p for p in range(partitions) if p not in held]  # nobody in the group holds them
    kept: dict[Member, frozenset[int]] = {}
    room: dict[Member, int] = {}
    for index, member in enumerate(ordered):
        quota = minimum + (1 if index < extra else 0)
        mine = sorted(p for p in current.get(member, frozenset()) if 0 <= p < partitions)
        kept[member] = frozenset(mine[:quota])
        unassigned.extend(mine[quota:])  # over quota: revoked, to be assigned again below
        room[member] = quota - len(kept[member])
    result: dict[Member, frozenset[int]] = {}
    cursor = 0
    for member in ordered:
        take = unassigned[cursor : cursor + room[member]]
        cursor += len(take)
        result[member] = kept[member] | frozenset(take)
    return result


def range_order(members: Sequence[Member], static: frozenset[Member]) -> list[Member]:
    """`RangeAssignor.sortMemberIds`: static members first, by instance id, then dynamic members
    by member id (here both are the member key)."""
    return sorted(set(members), key=lambda member: (member not in static, member))


def range_assignment(
    members: Sequence[Member],
    partitions: int,
    static: frozenset[Member] = frozenset(),
) -> dict[Member, frozenset[int]]:
    """`RangeAssignor` for a homogeneous group with one topic: members in `range_order` take
    contiguous ranges; the first `partitions % len(members)` take one partition more than the
    others; with more members than partitions the last members get nothing."""
    if not members:
        return {}
    ordered = range_order(members, static)
    minimum, extra = divmod(partitions, len(ordered))
    result: dict[Member, frozenset[int]] = {}
    start = 0
    for index, member in enumerate(ordered):
        end = min(start + minimum + (1 if index < extra else 0), partitions)
        result[member] = frozenset(range(start, end))
        start = end
    return result


__all__ = ["range_assignment", "range_order", "uniform_assignment"]
