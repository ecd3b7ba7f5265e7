"""How a partition state reads: as text lines for a trace, and as plain JSON values.

One line for the controller, one per replica (role, leader epoch, LEO, HW, log as
`offset:value@epoch`), one for what clients were told. The command line prints at each step of
a trace only the lines that changed (`spec.machines.changed_lines`), and ends a counterexample
with `explain`'s sentence: which record is missing from which leader's log, or at which offset
two replicas diverge.
"""

from __future__ import annotations

from typing import Any

from spec import partition
from spec.log import ReplicaLog, record_at
from spec.partition import PartitionState, Replica, Role


def _format_set(members: frozenset[int]) -> str:
    return "{" + ",".join(str(member) for member in sorted(members)) + "}"


def _format_log(log: ReplicaLog) -> str:
    entries = " ".join(
        f"{log.log_start_offset + index}:v{record.value}@e{record.epoch}"
        for index, record in enumerate(log.records)
    )
    return f"[{entries}]"


def _format_entries(entries: frozenset[tuple[int, int]]) -> str:
    return "{" + " ".join(f"{offset}:v{value}" for offset, value in sorted(entries)) + "}"


def _describe_replica(replica_id: int, replica: Replica) -> str:
    if not replica.alive:
        status = "down"
    elif replica.role is Role.FOLLOWER:
        status = (
            f"follower of {replica.leader if replica.leader is not None else '-'} ({replica.phase.value})"
        )
    else:
        status = replica.role.value
    log = replica.log
    parts = [
        f"replica {replica_id}: {status:28}",
        f"epoch {replica.leader_epoch:>2}",
        f"LEO {log.log_end_offset}",
        f"HW {log.high_watermark}",
    ]
    if log.log_start_offset:
        parts.append(f"start {log.log_start_offset}")
    parts.append(f"log {_format_log(log)}")
    if replica.alive and replica.role is Role.LEADER:
        parts.append(f"ISR {_format_set(replica.isr)}")
    if replica.fetch_in_flight is not None:
        response = replica.fetch_in_flight
        in_flight = f"{len(response.records)} records, HW {response.leader_high_watermark}"
        parts.append(f"(fetch response in flight: {in_flight})")
    if replica.pending_truncation is not None:  # KAFKA-14704's window: the HW taken, truncation next
        parts.append(f"(truncation to {replica.pending_truncation} pending)")
    return "  ".join(parts)


def describe_state(state: PartitionState) -> list[str]:
    """One line for the controller, one per replica, one for what clients were promised."""
    controller = state.controller
    leader = controller.leader if controller.leader is not None else "none (offline)"
    lines = [
        f"controller: leader {leader}  epoch {controller.leader_epoch}  ISR {_format_set(controller.isr)}"
    ]
    lines += [_describe_replica(replica_id, replica) for replica_id, replica in enumerate(state.replicas)]
    history = state.history
    lines.append(
        f"clients: acknowledged {_format_entries(history.acknowledged)}"
        + f"  committed {_format_entries(history.committed)}"
        + (f"  lossy crashes {history.lossy_crashes}" if history.lossy_crashes else "")
        + (f"  unclean elections {history.unclean_elections}" if history.unclean_elections else "")
    )
    return lines


def state_json(state: PartitionState) -> dict[str, Any]:
    """The state as plain JSON values."""
    controller = state.controller
    return {
        "controller": {
            "leader": controller.leader,
            "leader_epoch": controller.leader_epoch,
            "isr": sorted(controller.isr),
        },
        "replicas": [
            {
                "id": replica_id,
                "alive": replica.alive,
                "role": replica.role.value,
                "leader": replica.leader,
                "leader_epoch": replica.leader_epoch,
                "phase": replica.phase.value,
                "log_start_offset": replica.log.log_start_offset,
                "log_end_offset": replica.log.log_end_offset,
                "high_watermark": replica.log.high_watermark,
                "records": [
                    {
                        "offset": replica.log.log_start_offset + index,
                        "epoch": record.epoch,
                        "value": record.value,
                    }
                    for index, record in enumerate(replica.log.records)
                ],
                "epoch_cache": [[entry.epoch, entry.start_offset] for entry in replica.log.epoch_cache],
                "isr": sorted(replica.isr),
                "fetch_in_flight": replica.fetch_in_flight is not None,
            }
            for replica_id, replica in enumerate(state.replicas)
        ],
        "acknowledged": sorted(map(list, state.history.acknowledged)),
        "committed": sorted(map(list, state.history.committed)),
        "lossy_crashes": state.history.lossy_crashes,
        "unclean_elections": state.history.unclean_elections,
    }


def _missing_record(state: PartitionState, entries: frozenset[tuple[int, int]], what: str) -> str:
    """Which of `entries` the true leader's log lacks, in words."""
    leader_id = partition.true_leader(state)
    if leader_id is None:
        return f"a {what} record is missing, and the partition has no leader"
    log = state.replicas[leader_id].log
    for offset, value in sorted(entries):
        if offset < max(log.log_start_offset, state.history.retention_floor):
            continue
        held = record_at(log, offset)
        if held is None:
            return f"record {offset}:v{value}, {what}, is missing from the leader {leader_id}'s log"
        if held.value != value:
            return (
                f"record {offset}:v{value}, {what}, was replaced by {offset}:v{held.value}@e{held.epoch} "
                f"in the leader {leader_id}'s log"
            )
    return f"every {what} record is in the leader {leader_id}'s log"


def _divergence(state: PartitionState) -> str:
    """Two replicas that hold different records at one offset, in words."""
    for first_id, first in enumerate(state.replicas):
        for second_id in range(first_id + 1, len(state.replicas)):
            second = state.replicas[second_id]
            start = max(first.log.log_start_offset, second.log.log_start_offset)
            for offset in range(start, min(first.log.log_end_offset, second.log.log_end_offset)):
                mine, theirs = record_at(first.log, offset), record_at(second.log, offset)
                if mine is not None and theirs is not None and mine != theirs:
                    return (
                        f"replicas {first_id} and {second_id} hold different records at offset {offset}: "
                        f"v{mine.value}@e{mine.epoch} and v{theirs.value}@e{theirs.epoch}"
                    )
    return "the replicas' logs diverge"


def _format_record_at(log: ReplicaLog, offset: int) -> str:
    record = record_at(log, offset)
    return "nothing" if record is None else f"v{record.value}@e{record.epoch}"


def _strong_isr_gap(state: PartitionState) -> str:
    """A record below a presumed leader's HW that an ISR member lacks, in words."""
    for leader_id, leader in enumerate(state.replicas):
        if not leader.alive or leader.role is not Role.LEADER:
            continue
        for member in sorted(state.controller.isr):
            log = state.replicas[member].log
            for offset in range(
                max(leader.log.log_start_offset, log.log_start_offset), leader.log.high_watermark
            ):
                if record_at(log, offset) != record_at(leader.log, offset):
                    return (
                        f"replica {leader_id} (leader in epoch {leader.leader_epoch}) has HW "
                        f"{leader.log.high_watermark} over {_format_record_at(leader.log, offset)} at offset "
                        f"{offset}, where ISR member {member} holds {_format_record_at(log, offset)}"
                    )
    return "a record below a leader's HW is missing from an ISR member"


def _follower_read_gap(state: PartitionState) -> str:
    """A record below a follower's HW that the true leader does not hold, in words."""
    leader_id = partition.true_leader(state)
    if leader_id is not None:
        leader_log = state.replicas[leader_id].log
        for replica_id, replica in enumerate(state.replicas):
            if not replica.alive or replica.role is Role.LEADER:
                continue
            log = replica.log
            for offset in range(log.log_start_offset, log.high_watermark):
                if record_at(log, offset) != record_at(leader_log, offset):
                    return (
                        f"replica {replica_id}'s HW {log.high_watermark} lets a consumer read "
                        f"{_format_record_at(log, offset)} at offset {offset}, where the leader {leader_id} "
                        f"holds {_format_record_at(leader_log, offset)}"
                    )
    return "a follower's HW covers a record the leader does not hold"


def explain(property_name: str, state: PartitionState) -> str:
    """Why `property_name` fails in `state`, in one sentence."""
    history = state.history
    if property_name == "committed_records_survive":
        return _missing_record(state, history.committed, "committed (the HW passed it)")
    if property_name == "consumed_records_survive":
        return _missing_record(state, history.consumable, "readable by consumers")
    if property_name == "acknowledged_records_survive":
        return _missing_record(state, history.acknowledged, "acknowledged to its producer")
    if property_name == "acks_all_records_survive":
        return _missing_record(state, history.acknowledged_all, "acknowledged with acks=all")
    if property_name in {"replicas_agree_on_epoch_offsets", "followers_are_prefix_of_leader"}:
        return _divergence(state)
    if property_name == "strong_isr":
        return _strong_isr_gap(state)
    if property_name == "follower_reads_survive":
        return _follower_read_gap(state)
    invariant = partition.INVARIANTS.get(property_name) or partition.RULE_INVARIANTS[property_name]
    description = (invariant.__doc__ or property_name).split(".")[0]
    return f"this state breaks: {' '.join(description.split())}"
