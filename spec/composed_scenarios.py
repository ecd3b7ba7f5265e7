"""The replication scenarios again, with leadership and the ISR coming from the real controller.

Each scenario of `spec.partition_scenarios` is re-run on the replicated partition composed
with the controller of each generation: `spec.replication_with_controller` (KRaft: metadata
log replay, AlterPartition, fencing at session expiry) and `spec.replication_with_zk_controller`
(ZooKeeper era: LeaderAndIsr requests, conditional znode writes, BrokerChange and
IsrChangeNotification events). Same Kafka settings, same properties, same expected outcome;
one machine, whose `controller` setting (`kraft` or `zk`) picks the model, so
`kafkaspec check acks1-loss-on-kraft --set controller=zk` runs the ZooKeeper-era one.
What changes is how leadership and the ISR travel: a broker becomes leader or follower only
by replaying a metadata record or accepting a LeaderAndIsr request, the ISR changes only
through AlterPartition or a conditional ZooKeeper write, and the controller learns of a
crash only when the broker's session expires. Counterexamples are therefore longer (a
failover is a crash, a session expiry and a replay or request instead of a crash and a
LeaderAndIsr), and the state spaces larger; the bounds a scenario tightens to stay fast are
named in its summary (`_TIGHTER`).

Names: `<partition scenario>-on-kraft` and `-on-zk` (kebab-case: scenario names are also
documentation page names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from spec import partition, partition_scenarios
from spec import replication_with_controller as composed
from spec import replication_with_zk_controller as zk_composed
from spec._frozen import replace
from spec.checker import Model
from spec.controller.kraft_alter_partition import AlterPartitionRule
from spec.controller.kraft_partitions import NO_LEADER
from spec.machines import Diagram, Machine, Scenario, Setting, parse_choice, parse_count
from spec.partition import PartitionState
from spec.partition_scenarios import replica_role_and_phase
from spec.partition_view import describe_state as describe_partition_state
from spec.partition_view import explain as explain_partition
from spec.partition_view import state_json as partition_state_json
from spec.replication_with_controller import ComposedConfig, ComposedState, ControllerGeneration
from spec.replication_with_zk_controller import ZkComposedState

SETTINGS: Mapping[str, Setting] = {
    **partition_scenarios.SETTINGS,
    "controller": Setting(
        "controller", parse_choice(ControllerGeneration), "kraft or zk (the controller generation)"
    ),
    "alter.partition": Setting(
        "alter_partition",
        parse_choice(AlterPartitionRule),
        "AlterPartition member broker epochs: kip-903 (checked) or pre-kip-903",
    ),
    "max.alter.partitions": Setting(
        "max_alter_partitions", parse_count(0, 6), "bound on AlterPartition requests sent"
    ),
}
"""The partition's `--set` keys, the controller generation, and the AlterPartition keys."""


def model_for(
    config: ComposedConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[Any, Any]:
    """The checker's view of the composition with the controller generation `config` names."""
    if config.controller is ControllerGeneration.ZK:
        return Model(
            initial_states=(zk_composed.initial_state(config),),
            candidate_actions=partial(zk_composed.candidate_actions, config),
            step=partial(zk_composed.step, config),
            invariants={name: zk_composed.INVARIANTS[name] for name in invariants},
            step_properties=zk_composed.STEP_PROPERTIES,
            witnesses={name: zk_composed.WITNESSES[name] for name in witnesses},
        )
    return Model(
        initial_states=(composed.initial_state(config),),
        candidate_actions=partial(composed.candidate_actions, config),
        step=partial(composed.step, config),
        invariants={name: composed.INVARIANTS[name] for name in invariants},
        step_properties=composed.STEP_PROPERTIES,
        witnesses={name: composed.WITNESSES[name] for name in witnesses},
        canonical=composed.canonical,
    )


def validate(config: ComposedConfig) -> str | None:
    """Why a configuration is inconsistent, or None."""
    return partition_scenarios.validate(composed.partition_config(config))


def _as_partition_state(state: ComposedState | ZkComposedState) -> PartitionState:
    if isinstance(state, ZkComposedState):
        return zk_composed.as_partition_state(state)
    return composed.as_partition_state(state)


def _format_set(members: frozenset[int]) -> str:
    return "{" + ",".join(str(member) for member in sorted(members)) + "}"


def describe_state(state: ComposedState | ZkComposedState) -> Sequence[str]:
    """The controller's state, each broker's registration and what is in flight to it,
    then the partition spec's replica and client lines."""
    if isinstance(state, ZkComposedState):
        return _describe_zk_state(state)
    controller = state.controller
    registration = controller.partition
    leader = registration.leader if registration.leader != NO_LEADER else "none (offline)"
    lines = [
        f"controller: leader {leader}  leader epoch {registration.leader_epoch}  partition epoch "
        f"{registration.partition_epoch}  ISR {_format_set(registration.isr)}  metadata log end "
        f"{controller.log_end}"
    ]
    for broker_id, metadata in enumerate(state.brokers):
        broker_registration = controller.registrations[broker_id]
        if broker_registration is None:
            registered = "unregistered"
        else:
            fenced = "fenced" if broker_registration.fenced else "unfenced"
            registered = f"registered epoch {broker_registration.epoch} {fenced}"
        parts = [f"broker {broker_id}: {registered}", f"replayed to {metadata.metadata_offset}"]
        if metadata.pending is not None:
            parts.append(f"awaits AlterPartition ISR {_format_set(metadata.pending.isr)}")
        request = state.alter_requests[broker_id]
        if request is not None:
            parts.append(f"(AlterPartition ISR {_format_set(request.isr)} in flight)")
        answer = state.alter_answers[broker_id]
        if answer is not None:
            parts.append(f"(answer {answer[1].name} in flight)")
        lines.append("  ".join(parts))
    lines += list(describe_partition_state(composed.as_partition_state(state)))[1:]
    return lines


def _describe_zk_state(state: ZkComposedState) -> Sequence[str]:
    znode = state.zk.partition
    assert znode is not None
    leader = znode.leader if znode.leader != NO_LEADER else "none (offline)"
    events = "".join(f"  event {event.name} pending" for event in sorted(state.events))
    cached = state.cached
    lines = [
        f"zookeeper: leader {leader}  leader epoch {znode.leader_epoch}  ISR "
        f"{_format_set(frozenset(znode.isr))}  zkVersion {znode.zk_version}",
        f"controller: live brokers {dict(state.live)}  cached leader epoch {cached.leader_epoch}  cached ISR "
        f"{_format_set(frozenset(cached.isr))}{events}",
    ]
    for broker_id, channel in enumerate(state.channels):
        session = state.zk.sessions[broker_id]
        parts = [f"broker {broker_id}: session {session if session else 'none'}"]
        parts.append(f"knows zkVersion {state.zk_versions[broker_id]}")
        if channel:
            requests = ", ".join(
                f"leader {request.leader} epoch {request.leader_epoch}" for request in channel
            )
            parts.append(f"(LeaderAndIsr in flight: {requests})")
        lines.append("  ".join(parts))
    lines += list(describe_partition_state(zk_composed.as_partition_state(state)))[1:]
    return lines


def state_json(state: ComposedState | ZkComposedState) -> Any:
    """The partition spec's JSON view, with the controller's side."""
    value = partition_state_json(_as_partition_state(state))
    if isinstance(state, ZkComposedState):
        value["zookeeper"] = {"sessions": list(state.zk.sessions), "zk_versions": list(state.zk_versions)}
        return value
    registration = state.controller.partition
    value["controller"] = {
        "leader": registration.leader if registration.leader != NO_LEADER else None,
        "leader_epoch": registration.leader_epoch,
        "partition_epoch": registration.partition_epoch,
        "isr": sorted(registration.isr),
        "metadata_log_end": state.controller.log_end,
    }
    value["brokers"] = [
        {
            "broker_epoch": metadata.broker_epoch,
            "metadata_offset": metadata.metadata_offset,
            "pending_alter_partition": sorted(metadata.pending.isr) if metadata.pending else None,
        }
        for metadata in state.brokers
    ]
    return value


def explain(property_name: str, state: ComposedState | ZkComposedState) -> str:
    """Why `property_name` fails in `state`, in one sentence."""
    if property_name not in partition.INVARIANTS:
        module: Any = zk_composed if isinstance(state, ZkComposedState) else composed
        description = (module.INVARIANTS[property_name].__doc__ or property_name).split(".")[0]
        return f"this state breaks: {' '.join(description.split())}"
    return explain_partition(property_name, _as_partition_state(state))


def replica_zero_role_and_phase(state: ComposedState | ZkComposedState) -> str:
    """Replica 0's role and fetch phase, as in the partition's diagram: the composition keeps
    the replica's own machine and changes how it moves (metadata replay, LeaderAndIsr)."""
    node = replica_role_and_phase(_as_partition_state(state))
    if isinstance(state, ComposedState):
        return node.replace("awaiting LeaderAndIsr", "awaiting metadata replay")
    return node


REPLICATION_WITH_CONTROLLER: Machine[ComposedConfig, Any, Any] = Machine(
    name="replication-with-controller",
    title="one replicated partition whose leadership and ISR come from the real controller (KRaft or ZK)",
    settings=SETTINGS,
    model=model_for,
    describe_state=describe_state,
    validate=validate,
    state_json=state_json,
    explain=explain,
    modules=(
        "spec.replication_with_controller",
        "spec.replication_with_zk_controller",
        "spec.partition",
        "spec.controller.kraft_partitions",
        "spec.controller.kraft_alter_partition",
        "spec.controller.kraft_brokers",
        "spec.controller.zookeeper",
        "spec.controller.zk_requests",
        "spec.controller.zk_states",
    ),
    diagram=Diagram(
        title="replica 0 on KRaft: role and fetch phase",
        project=replica_zero_role_and_phase,
        # one record, one move, one crash: every role and phase within 12 steps (9,067 states);
        # a second crash adds only "restarted -> down" and costs eight times the states
        config=ComposedConfig(max_records=1, max_leader_moves=1, max_crashes=1, max_alter_partitions=1),
        max_depth=12,
    ),
)


def _kraft_config(config: Any, **bounds: Any) -> ComposedConfig:
    """The composed configuration with a partition scenario's settings (and tighter bounds)."""
    fields = {
        name: getattr(config, name)
        for name in (
            "replication_factor",
            "min_insync_replicas",
            "producer_acks",
            "unclean_leader_election",
            "truncation",
            "replica_lag_ticks",
            "max_records",
            "max_leader_moves",
            "max_crashes",
            "max_lossy_crashes",
            "controller_elections",
            "retention",
        )
    }
    fields.update(bounds)
    return ComposedConfig(controller=ControllerGeneration.KRAFT, **fields)


_ORIGINALS = {scenario.name: scenario for scenario in partition_scenarios.SCENARIOS}

_ONE_FAILOVER_PATH = (
    "bounds: 1 crash, no controller-initiated elections, 16 steps (KIP-101 scenario 2's path)"
)
_SMALLER = "bounds: 1 record, 1 controller-initiated election, 14 steps"

_TIGHTER: Mapping[str, tuple[dict[str, Any], int, str]] = {
    # name: (bounds, max depth, what the bounds are); {} and 15 = the partition scenario's own
    "hw-truncation-loss": ({}, 15, ""),
    "hw-truncation-divergence": ({"max_crashes": 1, "controller_elections": False}, 16, _ONE_FAILOVER_PATH),
    "epoch-truncation": ({"max_crashes": 1, "controller_elections": False}, 16, _ONE_FAILOVER_PATH),
    "unclean-election-loss": ({}, 15, ""),
    "clean-election": ({"max_records": 1, "max_leader_moves": 1}, 14, _SMALLER),
    "acks1-loss": ({}, 15, ""),
    "acks-all-single-isr": ({}, 15, ""),
    "acks-all-min-isr-2": ({"max_records": 1, "max_leader_moves": 1}, 14, _SMALLER),
}
"""Per partition scenario: the bounds the composition tightens to stay fast, and why."""


_GLUE = ("maximal_isr_covers_controller_isr",)
"""The composition's own invariants, checked by every scenario that expects no violation."""


def _composed(name: str, generation: ControllerGeneration) -> Scenario[ComposedConfig]:
    original = _ORIGINALS[name]
    bounds, depth, note = _TIGHTER[name]
    title = "KRaft controller" if generation is ControllerGeneration.KRAFT else "ZooKeeper-era controller"
    reference = "KIP-631, KIP-497" if generation is ControllerGeneration.KRAFT else "KIP-380, KAFKA-2729"
    return Scenario(
        machine=REPLICATION_WITH_CONTROLLER,
        name=f"{name}-on-{generation.value}",
        summary=f"{original.summary} ({title}{'; ' + note if note else ''})",
        config=replace(_kraft_config(original.config, **bounds), controller=generation),
        invariants=original.invariants if original.expect_violation else (*original.invariants, *_GLUE),
        expect_violation=original.expect_violation,
        witnesses=original.witnesses,
        reference=f"{original.reference}; {reference}",
        max_depth=depth,
    )


SCENARIOS: tuple[Scenario[ComposedConfig], ...] = tuple(
    _composed(name, generation) for generation in ControllerGeneration for name in _TIGHTER
)
"""Every replication scenario, on the partition composed with each controller generation."""

__all__ = ["REPLICATION_WITH_CONTROLLER", "SCENARIOS"]
