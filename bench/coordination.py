"""Classic group coordinator performance of `impl/coordinator.py`, measured side by side in one run.

Usage: python -m bench.coordination [--quick] [--repeat N] [--max-exponent E]

1. Impl against the reference on the same workload, one group of 1,000 (as in 3) and of 2,000
   members: the members join (MEMBER_ID_REQUIRED, then again with the id), the initial rebalance delay
   passes, the leader assigns and every member syncs, then rounds of heartbeats and commits,
   a rebalance (every member rejoins, leader and followers sync) and an OffsetFetch. The same commands
   (`conformance.machines.coordinator`'s) go to `reference.coordinator` (each a spec handler
   on frozen tuples: O(members) per request) and to `impl.coordinator` (a timer command makes
   that timer due and runs the wheel, as the conformance adapter does), both called directly
   and drained of parked answers after every command. Target: impl >= 50x the reference.
2. Heartbeats per second, 100,000 members in 10,000 groups (Stable), the clock moving between
   rounds so every heartbeat moves its session timer to a new bucket. Target >= 300,000/s on
   one core.
   2b: the same for the KIP-848 coordinator (`bench.consumer_group.heartbeat_section`: steady
   ConsumerGroupHeartbeats of members stable at their group's epoch).
3. A full rebalance of one 1,000-member Stable group: every member's JoinGroup (the leader's
   first: it starts the rebalance, the last completes the join phase and answers all 1,000),
   the leader's SyncGroup with the assignment, every follower's SyncGroup. Target < 100 ms.
4. Session-timeout expiry as the coordinator grows from 10^3 to 10^E members (10 per group;
   E = 6 by default) with 100 expiring: every other member heartbeats, then the clock moves
   to the moment the 100 sessions end; the time of that move (popping the 100 timers,
   removing the members, starting their groups' rebalances) per size. Target: flat.

Python is single-threaded, so every number is one core: times are the process's CPU time. The
machine is shared and noisy: each measurement is repeated (`--repeat`, default 3) and the best
kept; ratios measured in the same run matter, absolute numbers less so.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

from bench import consumer_group
from conformance.machines.coordinator import (
    Command,
    ExpireRebalance,
    Heartbeat,
    JoinGroup,
    OffsetCommit,
    OffsetFetch,
    SyncGroup,
)
from impl.coordinator import REBALANCE, CoordinatorConfig, GroupCoordinator
from reference.coordinator import ReferenceClassicCoordinator
from spec.group.types import (
    CONSUMER_PROTOCOL_TYPE,
    Assignment,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Subscription,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    TopicPartition,
)

TARGET_SPEEDUP = 50.0
TARGET_HEARTBEATS = 300_000.0
TARGET_REBALANCE_MS = 100.0
EXPIRING = 100
PROTOCOLS = (JoinGroupRequestProtocol("range", Subscription(("t0",))),)
PARTITIONS = tuple(TopicPartition("t0", number) for number in range(8))


def best_of(repeat: int, run: Callable[[], float]) -> float:
    """The smallest of `repeat` measurements."""
    return min(run() for _ in range(repeat))


def timed(run: Callable[[], object]) -> float:
    """CPU seconds `run()` takes on this process's one core (`time.process_time`: the other
    agents on the shared machine take wall time, not this process's CPU time), with
    Python's cyclic garbage collector off (as `timeit` does): a full collection walks every
    live object, so it would charge whatever else is alive in the process (the other side's
    state, the workload) to the code being timed."""
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        run()
        return time.process_time() - started
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------
# 1. impl vs reference
# ---------------------------------------------------------------------------------------


def workload(groups: int, members: int, rounds: int) -> list[list[Command]]:
    """The commands of the workload in phases; a phase's commands depend on the answers of the
    phase before only through the member ids, which are known in advance (the spec's ids)."""
    group_ids = [f"g{number}" for number in range(groups)]
    ids = {group: [f"c{client}-{client}" for client in range(members)] for group in group_ids}
    join_new = JoinGroupRequest("", None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS)
    joins: list[Command] = []
    for group in group_ids:
        for client in range(members):
            joins.append(JoinGroup(group, join_new, client))
            joins.append(
                JoinGroup(
                    group,
                    JoinGroupRequest(ids[group][client], None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS),
                    client,
                )
            )
    delays: list[Command] = [ExpireRebalance(group) for group in group_ids]

    def syncs(generation: int) -> list[Command]:
        commands: list[Command] = []
        for group in group_ids:
            assignment = tuple(
                SyncGroupRequestAssignment(member, Assignment(PARTITIONS[index % len(PARTITIONS) :][:1]))
                for index, member in enumerate(ids[group])
            )
            for client, member in enumerate(ids[group]):
                given = assignment if client == 0 else ()
                request = SyncGroupRequest(member, generation, None, CONSUMER_PROTOCOL_TYPE, "range", given)
                commands.append(SyncGroup(group, request, client))
        return commands

    steady: list[Command] = []
    for round_number in range(rounds):
        for group in group_ids:
            steady.extend(Heartbeat(group, HeartbeatRequest(member, 1)) for member in ids[group])
            commit = OffsetCommitRequest(ids[group][0], 1, None, ((PARTITIONS[0], round_number),))
            steady.append(OffsetCommit(group, commit))
    rejoins: list[Command] = [
        JoinGroup(group, JoinGroupRequest(member, None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS), client)
        for group in group_ids
        for client, member in enumerate(ids[group])
    ]
    fetches: list[Command] = [OffsetFetch(group, OffsetFetchRequest(None)) for group in group_ids]
    return [joins, delays, syncs(1), steady, rejoins, syncs(2), fetches]


Dispatch = dict[type, Callable[[Any], object]]
"""For each kind of command, the call that performs it on one coordinator."""


def reference_dispatch() -> tuple[Dispatch, Callable[[], object]]:
    """`reference.coordinator`: every request a spec handler; its parked answers' drain."""
    reference = ReferenceClassicCoordinator()
    dispatch: Dispatch = {
        JoinGroup: lambda command: reference.join_group(command.group_id, command.request, command.client),
        SyncGroup: lambda command: reference.sync_group(command.group_id, command.request, command.client),
        Heartbeat: lambda command: reference.heartbeat(command.group_id, command.request),
        OffsetCommit: lambda command: reference.offset_commit(command.group_id, command.request),
        OffsetFetch: lambda command: reference.offset_fetch(command.group_id, command.request),
        ExpireRebalance: lambda command: reference.expire_rebalance(command.group_id),
    }
    return dispatch, reference.deliveries


def impl_dispatch() -> tuple[Dispatch, Callable[[], object]]:
    """`impl.coordinator` called directly (a timer command makes that timer due now and runs
    the wheel, as the conformance adapter does); its parked answers' drain."""
    coordinator = GroupCoordinator()

    def expire_rebalance(command: ExpireRebalance) -> object:
        task = coordinator.group_timer(command.group_id, REBALANCE)
        return coordinator.expire_now(task) if task is not None else None

    dispatch: Dispatch = {
        JoinGroup: lambda command: coordinator.join_group(command.group_id, command.request, command.client),
        SyncGroup: lambda command: coordinator.sync_group(command.group_id, command.request, command.client),
        Heartbeat: lambda command: coordinator.heartbeat(command.group_id, command.request),
        OffsetCommit: lambda command: coordinator.offset_commit(command.group_id, command.request),
        OffsetFetch: lambda command: coordinator.offset_fetch(command.group_id, command.request),
        ExpireRebalance: expire_rebalance,
    }
    return dispatch, coordinator.take_deliveries


def run_workload(
    made: tuple[Dispatch, Callable[[], object]], phases: list[list[Command]]
) -> tuple[float, int]:
    """Seconds to run every command (taking the parked answers after each), and how many."""
    dispatch, drain = made

    def run() -> None:
        for phase in phases:
            for command in phase:
                dispatch[type(command)](command)
                drain()

    return timed(run), sum(len(phase) for phase in phases)


def speedup_section(sizes: tuple[int, ...], rounds: int, repeat: int) -> None:
    print(f"\n1. impl vs reference, same workload (one group, {rounds} heartbeat rounds)")
    print(f"   {'members':>7}  {'commands':>8}  {'reference ms':>12}  {'impl ms':>8}  {'impl/reference':>14}")
    ratios = []
    for members in sizes:
        phases = workload(1, members, rounds)
        reference_seconds, count = min(run_workload(reference_dispatch(), phases) for _ in range(repeat))
        impl_seconds, _ = min(run_workload(impl_dispatch(), phases) for _ in range(repeat))
        ratio = reference_seconds / impl_seconds
        ratios.append(ratio)
        print(
            f"   {members:>7,}  {count:>8,}  {reference_seconds * 1000:>12.1f}  {impl_seconds * 1000:>8.1f}  "
            f"{ratio:>13.0f}x"
        )
    met = [members for members, ratio in zip(sizes, ratios, strict=True) if ratio >= TARGET_SPEEDUP]
    verdict = f"met from {met[0]:,} members" if met else "NOT met"
    print(
        f"   target >= {TARGET_SPEEDUP:.0f}x: {verdict} (the reference is O(members) per request, the "
        "impl O(1): the ratio grows with the group)"
    )


# ---------------------------------------------------------------------------------------
# 2-4. the impl alone, on its own clock
# ---------------------------------------------------------------------------------------


def stable_coordinator(
    groups: int, members: int, config: CoordinatorConfig | None = None
) -> tuple[GroupCoordinator, dict[str, list[str]]]:
    """A coordinator with `groups` Stable groups of `members` dynamic members each (every
    member joined at time 0, the initial delay passed, every member synced)."""
    coordinator = GroupCoordinator(config)
    join = JoinGroupRequest("", None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS, require_known_member_id=False)
    group_ids = [f"g{number}" for number in range(groups)]
    for group in group_ids:
        for client in range(members):
            coordinator.join_group(group, join, client)
    coordinator.advance_to(coordinator.now_ms + coordinator.config.initial_rebalance_delay_ms)
    ids: dict[str, list[str]] = {group: [] for group in group_ids}
    for group, _, response in coordinator.take_deliveries():
        if isinstance(response, JoinGroupResponse):
            ids[group].append(response.member_id)
    for group in group_ids:
        generation = coordinator.describe(group).generation if group == group_ids[0] else 1
        assignment = tuple(SyncGroupRequestAssignment(member, Assignment()) for member in ids[group])
        for client, member in enumerate(ids[group]):
            given = assignment if client == 0 else ()
            request = SyncGroupRequest(member, generation, None, CONSUMER_PROTOCOL_TYPE, "range", given)
            coordinator.sync_group(group, request, client)
    coordinator.take_deliveries()
    return coordinator, ids


def heartbeat_section(groups: int, members: int, rounds: int, repeat: int) -> None:
    print(f"\n2. heartbeats, {groups * members:,} members in {groups:,} groups (Stable)")
    coordinator, ids = stable_coordinator(groups, members)
    requests = [
        (group, HeartbeatRequest(member, 1))
        for group, group_members in ids.items()
        for member in group_members
    ]
    heartbeat = coordinator.heartbeat

    def one_round() -> float:
        coordinator.advance_to(coordinator.now_ms + 1_000)  # every heartbeat moves its timer

        def run() -> None:
            for group, request in requests:
                heartbeat(group, request)

        return timed(run)

    seconds = best_of(max(rounds, repeat), one_round)
    rate = len(requests) / seconds
    verdict = "met" if rate >= TARGET_HEARTBEATS else "NOT met"
    print(
        f"   {rate:,.0f} heartbeats/s ({seconds * 1e9 / len(requests):,.0f} ns each, "
        f"best of {max(rounds, repeat)} rounds; target >= {TARGET_HEARTBEATS:,.0f}/s: {verdict}, "
        f"{rate / TARGET_HEARTBEATS:.1f}x)"
    )


def rebalance_section(members: int, repeat: int) -> None:
    print(f"\n3. full rebalance of one {members:,}-member group")
    coordinator, ids = stable_coordinator(1, members)
    group = "g0"
    member_ids = ids[group]
    rejoin = [JoinGroupRequest(member, None, CONSUMER_PROTOCOL_TYPE, PROTOCOLS) for member in member_ids]

    def one_rebalance() -> float:
        generation = coordinator.describe(group).generation + 1
        assignment = tuple(
            SyncGroupRequestAssignment(member, Assignment(PARTITIONS[index % len(PARTITIONS) :][:1]))
            for index, member in enumerate(member_ids)
        )
        syncs = [
            SyncGroupRequest(
                member, generation, None, CONSUMER_PROTOCOL_TYPE, "range", assignment if client == 0 else ()
            )
            for client, member in enumerate(member_ids)
        ]
        answered: list[object] = []

        def run() -> None:
            for client, request in enumerate(rejoin):  # the leader (first) starts it, the last completes it
                coordinator.join_group(group, request, client)
            for client, sync in enumerate(syncs):  # the leader's first: followers get theirs at once
                coordinator.sync_group(group, sync, client)
            answered.extend(coordinator.take_deliveries())

        seconds = timed(run)
        assert len(answered) == 2 * members - (members - 1), "every JoinGroup and the leader's SyncGroup"
        assert coordinator.describe(group).generation == generation
        return seconds

    seconds = best_of(repeat, one_rebalance)
    verdict = "met" if seconds * 1000 < TARGET_REBALANCE_MS else "NOT met"
    print(
        f"   {seconds * 1000:.1f} ms: {members:,} JoinGroups, the leader's SyncGroup, "
        f"{members - 1:,} followers' SyncGroups (best of {repeat}; "
        f"target < {TARGET_REBALANCE_MS:.0f} ms: {verdict})"
    )


def expiry_seconds(total_members: int) -> tuple[float, int]:
    """Build `total_members` members (10 per group), let all but `EXPIRING` heartbeat, then time
    the clock move that expires those: (seconds, wheel operations)."""
    config = CoordinatorConfig(session_timeout_ms=10_000, initial_rebalance_delay_ms=0)
    coordinator, ids = stable_coordinator(total_members // 10, 10, config)
    start = coordinator.now_ms
    coordinator.advance_to(start + 5_000)
    silent = {(group, members[0]) for group, members in list(ids.items())[:EXPIRING]}
    for group, members in ids.items():
        for member in members:
            if (group, member) not in silent:
                coordinator.heartbeat(group, HeartbeatRequest(member, 1))
    operations = coordinator.timers.operations
    seconds = timed(lambda: coordinator.advance_to(start + 10_000))
    expired = sum(1 for group, member in silent if coordinator.session_timer(group, member) is None)
    assert expired == EXPIRING, f"{expired} of {EXPIRING} expired"
    return seconds, coordinator.timers.operations - operations


def expiry_section(max_exponent: int, repeat: int) -> None:
    print(f"\n4. session-timeout expiry, {EXPIRING} members expiring, as the coordinator grows")
    results = []
    for exponent in range(3, max_exponent + 1):
        total = 10**exponent
        measured = [expiry_seconds(total) for _ in range(repeat if exponent < 6 else 1)]
        seconds, operations = min(measured)
        results.append(seconds)
        print(
            f"   10^{exponent} members: {seconds * 1e6:8.0f} us to expire {EXPIRING} "
            f"({seconds * 1e6 / EXPIRING:5.1f} us each, {operations} wheel operations)"
        )
    spread = max(results) / min(results)
    verdict = "flat" if spread < 3 else "NOT flat"
    print(
        f"   largest / smallest: {spread:.1f}x over a {10 ** (max_exponent - 3):,}x growth "
        f"(target flat: {verdict})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes: a run of a few seconds")
    parser.add_argument(
        "--repeat", type=int, default=3, help="repetitions of each measurement (the best is kept)"
    )
    parser.add_argument(
        "--max-exponent", type=int, default=None, help="largest coordinator for expiry: 10^E members"
    )
    arguments = parser.parse_args(argv)
    quick = arguments.quick
    max_exponent = arguments.max_exponent or (4 if quick else 6)
    if not 3 <= max_exponent <= 7:
        parser.error("--max-exponent must be between 3 and 7")
    repeat = max(1, arguments.repeat)
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus, "
        f"{'quick' if quick else 'full'} run, best of {repeat}"
    )
    started = time.perf_counter()
    speedup_section((200, 400) if quick else (1_000, 2_000), rounds=3, repeat=repeat)
    heartbeat_section(groups=1_000 if quick else 10_000, members=10, rounds=5, repeat=repeat)
    consumer_group.heartbeat_section(groups=1_000 if quick else 10_000, members=10, rounds=5, repeat=repeat)
    rebalance_section(members=1_000, repeat=repeat)
    expiry_section(max_exponent, repeat)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
