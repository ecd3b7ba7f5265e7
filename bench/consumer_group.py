"""Throughput of the optimized KIP-848 coordinator (`impl.consumer_group`) at scale.

Builds 10,000 consumer groups of 10 members each (100,000 members, 10 partitions per group's
topic), brings every group to a stable assignment with ConsumerGroupHeartbeat rounds (joins,
revocations, epochs), then measures:

* steady heartbeats per second: every member heartbeats with its epoch and owned partitions,
  round after round (the common case: validate the epoch, move the session timer);
* session expiry: 1% of the members stop heartbeating; advancing the clock past their session
  timeout fences exactly them, and the timer wheel's work is counted (buckets visited and tasks
  popped), which must track what expired, not the 100,000 members armed;
* offset retention: every group commits, 1% of the groups empty out; advancing past retention
  clears only theirs.

Usage: ``python -m bench.consumer_group [--groups 10000] [--members 10] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import gc
import time

from impl.consumer_group import ConsumerGroupCoordinator, ConsumerGroupCoordinatorConfig
from spec.group.types import ConsumerGroupHeartbeatRequest, Errors, OffsetCommitRequest, TopicPartition

SESSION_MS = 45_000
RETENTION_MS = 30_000  # shorter than the session timeout, so only offsets expire when it passes


def stable_coordinator(
    groups: int, members: int
) -> tuple[ConsumerGroupCoordinator, list[ConsumerGroupHeartbeatRequest]]:
    """A coordinator with `groups` consumer groups of `members` members each, every member
    stable at its group's epoch, and each member's steady heartbeat."""
    coordinator = ConsumerGroupCoordinator(ConsumerGroupCoordinatorConfig(partitions=members))
    requests: list[ConsumerGroupHeartbeatRequest] = []
    for group in (f"group-{index}" for index in range(groups)):
        state: dict[str, tuple[int, tuple[TopicPartition, ...]]] = {}
        for _ in range(4):  # join, then reconcile until stable
            for member in (f"member-{index}" for index in range(members)):
                epoch, owned = state.get(member, (0, ()))
                answer = coordinator.consumer_group_heartbeat(
                    ConsumerGroupHeartbeatRequest(group, member, epoch, None, -1, ("t0",), None, owned)
                )
                assert answer.error is Errors.NONE and answer.assignment is not None, answer
                state[member] = (answer.member_epoch, answer.assignment)
        requests.extend(
            ConsumerGroupHeartbeatRequest(group, member, epoch, None, -1, None, None, owned)
            for member, (epoch, owned) in state.items()
        )
    return coordinator, requests


def heartbeat_section(groups: int, members: int, rounds: int, repeat: int) -> None:
    """`bench.coordination`'s heartbeat measurement for the KIP-848 coordinator: steady
    ConsumerGroupHeartbeats, the clock moving between rounds so every heartbeat moves its session
    timer to a new bucket; CPU time of one core with the cyclic GC off, best of the rounds."""
    print(
        f"\n2b. KIP-848 ConsumerGroupHeartbeats, {groups * members:,} members in {groups:,} groups (stable)"
    )
    coordinator, requests = stable_coordinator(groups, members)
    handle = coordinator.consumer_group_heartbeat

    def one_round() -> float:
        coordinator.advance_to(coordinator.now_ms + 1_000)
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            for request in requests:
                handle(request)
            return time.process_time() - started
        finally:
            gc.enable()

    seconds = min(one_round() for _ in range(max(rounds, repeat)))
    print(
        f"   {len(requests) / seconds:,.0f} heartbeats/s ({seconds * 1e9 / len(requests):,.0f} ns each, "
        f"best of {max(rounds, repeat)} rounds)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the measurements and print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args(argv)
    config = ConsumerGroupCoordinatorConfig(
        partitions=arguments.members,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=10 * SESSION_MS,
        offsets_retention_ms=RETENTION_MS,
    )
    coordinator = ConsumerGroupCoordinator(config)
    groups = [f"group-{index}" for index in range(arguments.groups)]
    members = [f"member-{index}" for index in range(arguments.members)]
    epoch: dict[tuple[str, str], int] = {}
    owned: dict[tuple[str, str], tuple[TopicPartition, ...]] = {}
    started = time.perf_counter()
    beats = 0
    for round_number in range(4):  # join, then reconcile until stable
        for group in groups:
            for member in members:
                key = (group, member)
                request = ConsumerGroupHeartbeatRequest(
                    group, member, epoch.get(key, 0), None, -1, ("t0",), None, owned.get(key, ())
                )
                answer = coordinator.consumer_group_heartbeat(request)
                beats += 1
                assert answer.error is Errors.NONE, (round_number, answer)
                assert answer.assignment is not None
                epoch[key] = answer.member_epoch
                owned[key] = answer.assignment
    converge_seconds = time.perf_counter() - started
    unstable = sum(
        member.state != "stable" for group in groups for member in coordinator.describe(group).members
    )
    total = arguments.groups * arguments.members
    print(
        f"{total:,} members in {arguments.groups:,} groups: converged with {beats:,} heartbeats in "
        f"{converge_seconds:.1f} s ({beats / converge_seconds:,.0f}/s); members not stable: {unstable}"
    )
    requests = [
        ConsumerGroupHeartbeatRequest(
            group, member, epoch[(group, member)], None, -1, None, None, owned[(group, member)]
        )
        for group in groups
        for member in members
    ]
    handle = coordinator.consumer_group_heartbeat
    started = time.perf_counter()
    for _ in range(arguments.rounds):
        for request in requests:
            handle(request)
    steady = time.perf_counter() - started
    print(
        f"steady heartbeats: {arguments.rounds * total:,} in {steady:.2f} s = "
        f"{arguments.rounds * total / steady:,.0f}/s "
        f"({steady / (arguments.rounds * total) * 1e6:.2f} us each)"
    )
    # 1% of the members stop; the others heartbeat later, then the clock passes the first deadline
    silent = set(range(0, total, 100))
    coordinator.advance_to(SESSION_MS // 2)
    for position, request in enumerate(requests):
        if position not in silent:
            handle(request)
    operations = coordinator.timers.operations
    started = time.perf_counter()
    coordinator.advance_to(SESSION_MS)
    expiry = time.perf_counter() - started
    left = sum(len(coordinator.describe(group).members) for group in groups)
    print(
        f"session expiry: {total - left:,} of {total:,} members fenced in {expiry * 1000:.1f} ms; "
        f"timer wheel work: {coordinator.timers.operations - operations:,} (buckets visited + tasks popped)"
    )
    for group in groups:  # member-1 commits in every group; 1% of the groups then empty out
        committer = (group, members[1])
        offsets = ((TopicPartition("t0", 0), 42),)
        coordinator.offset_commit(group, OffsetCommitRequest(members[1], epoch[committer], None, offsets))
    emptied = groups[1::100]
    for group in emptied:
        for described in coordinator.describe(group).members:
            coordinator.consumer_group_heartbeat(
                ConsumerGroupHeartbeatRequest(group, described.member_id, -1, topic_partitions=())
            )
    for request in requests:  # every live member heartbeats: no session is due before retention
        handle(request)
    operations = coordinator.timers.operations
    started = time.perf_counter()
    coordinator.advance_to(coordinator.now_ms + RETENTION_MS)
    retention = time.perf_counter() - started
    cleared = sum(not coordinator.describe(group).offsets for group in groups)
    print(
        f"offset retention: {cleared:,} of {len(groups):,} groups lost their offsets "
        f"({len(emptied):,} emptied) "
        f"in {retention * 1000:.1f} ms; timer wheel work: {coordinator.timers.operations - operations:,}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
