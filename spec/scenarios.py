"""Named scenarios: a configuration, the properties it checks, and the expected outcome.

Each scenario settles one question about Kafka's replication protocol with the bounded
model checker: either a counterexample exists (the shortest one is printed, step by step),
or none exists within the bound. The table is ARCHITECTURE.md's; the KIP numbers say where
each case is discussed.

Configuration keys (`--set key=value`) use Kafka's names where Kafka has one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial

from spec import partition
from spec.checker import CheckResult, Model, check
from spec.partition import Action, PartitionConfig, PartitionState
from spec.types import Acks, TruncationRule

DEFAULT_MAX_DEPTH = 15
"""The default bound on trace length: the longest counterexample of any scenario below
(11 steps, `hw-truncation-divergence`) plus four, as the design asks."""


@dataclass(frozen=True)
class Scenario:
    """A named model-checking question."""

    name: str
    summary: str
    config: PartitionConfig
    invariants: tuple[str, ...]  # names in spec.partition.INVARIANTS
    expect_violation: bool
    witnesses: tuple[str, ...] = ()  # states that must be reachable when no violation is expected
    reference: str = ""

    @property
    def expected(self) -> str:
        """`counterexample` or `no violation`."""
        return "counterexample" if self.expect_violation else "no violation"


_DIVERGENCE = ("replicas_agree_on_epoch_offsets", "followers_are_prefix_of_leader")
_EVERY_INVARIANT = tuple(partition.INVARIANTS)
_EPOCH_SAFETY = (
    "high_watermark_within_log",
    "leader_in_isr",
    "controller_epoch_is_newest",
    *_DIVERGENCE,
    "committed_records_survive",
    "consumed_records_survive",
    "acks_all_records_survive",
)

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="hw-truncation-loss",
        summary="2 replicas, acks=all, min ISR 1, logs survive crashes, followers truncate to their own HW "
        "(pre-0.11): a committed, acknowledged record is lost",
        config=PartitionConfig(truncation=TruncationRule.HIGH_WATERMARK),
        invariants=("committed_records_survive", "acks_all_records_survive"),
        expect_violation=True,
        reference="KIP-101 scenario 1",
    ),
    Scenario(
        name="hw-truncation-divergence",
        summary="same rule; both replicas crash, one loses its unflushed suffix, returns first and leads: "
        "the replicas hold different records at the same offset",
        config=PartitionConfig(truncation=TruncationRule.HIGH_WATERMARK, max_lossy_crashes=1),
        invariants=_DIVERGENCE,
        expect_violation=True,
        reference="KIP-101 scenario 2",
    ),
    Scenario(
        name="epoch-truncation",
        summary="both configurations above under leader-epoch truncation: replicas never diverge, and no "
        "committed record is lost while no log loses data",
        config=PartitionConfig(max_lossy_crashes=1),
        invariants=_EPOCH_SAFETY,
        expect_violation=False,
        witnesses=("record_committed", "partition_offline"),
        reference="KIP-101, KIP-279, KIP-320",
    ),
    Scenario(
        name="unclean-election-loss",
        summary="unclean.leader.election.enable=true, ISR shrunk to the leader, leader lost: a committed "
        "record is lost",
        config=PartitionConfig(unclean_leader_election=True),
        invariants=("committed_records_survive",),
        expect_violation=True,
        reference="unclean.leader.election.enable",
    ),
    Scenario(
        name="clean-election",
        summary="unclean election disabled: no committed record is lost; the partition goes offline instead",
        config=PartitionConfig(),
        invariants=_EVERY_INVARIANT,
        expect_violation=False,
        witnesses=("record_committed", "partition_offline"),
        reference="unclean.leader.election.enable",
    ),
    Scenario(
        name="acks1-loss",
        summary="acks=1, the leader fails before the follower fetched: an acknowledged record is lost "
        "(it was never committed)",
        config=PartitionConfig(producer_acks=(Acks.LEADER,)),
        invariants=("acknowledged_records_survive",),
        expect_violation=True,
        reference="acks",
    ),
    Scenario(
        name="acks-all-single-isr",
        summary="acks=all, min ISR 1, ISR shrunk to the leader, then the leader loses its unflushed log: "
        "an acknowledged record is lost",
        config=PartitionConfig(max_lossy_crashes=1),
        invariants=("acknowledged_records_survive",),
        expect_violation=True,
        reference="min.insync.replicas; KIP-966 (eligible leader replicas)",
    ),
    Scenario(
        name="acks-all-min-isr-2",
        summary="acks=all, min ISR 2: no acknowledged record is lost; produce is refused with "
        "NOT_ENOUGH_REPLICAS while the ISR is too small",
        config=PartitionConfig(min_insync_replicas=2),
        invariants=(*_EVERY_INVARIANT,),
        expect_violation=False,
        witnesses=("write_acknowledged", "produce_rejected"),
        reference="min.insync.replicas",
    ),
)

SCENARIOS_BY_NAME: Mapping[str, Scenario] = {scenario.name: scenario for scenario in SCENARIOS}


class ConfigError(ValueError):
    """A `--set key=value` override names an unknown key or gives a bad value."""


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in {"true", "yes", "1", "on"}:
        return True
    if lowered in {"false", "no", "0", "off"}:
        return False
    raise ValueError(f"expected true or false, not {text!r}")


def _parse_count(minimum: int, maximum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number, not {text!r}") from None
        if not minimum <= value <= maximum:
            raise ValueError(f"expected a number from {minimum} to {maximum}, not {value}")
        return value

    return parse


def _parse_acks_list(text: str) -> tuple[Acks, ...]:
    settings = tuple(dict.fromkeys(Acks.parse(part) for part in text.split(",")))
    if not settings:
        raise ValueError("expected at least one acks setting")
    return settings


_OVERRIDES: Mapping[str, tuple[str, Callable[[str], object], str]] = {
    "replication.factor": ("replication_factor", _parse_count(1, 4), "replicas (1-4)"),
    "min.insync.replicas": ("min_insync_replicas", _parse_count(1, 4), "min.insync.replicas"),
    "acks": ("producer_acks", _parse_acks_list, "comma-separated producer acks: 0, 1, all"),
    "unclean.leader.election.enable": ("unclean_leader_election", _parse_bool, "true or false"),
    "truncation": ("truncation", TruncationRule.parse, "epoch (KIP-101/279) or hw (pre-0.11)"),
    "replica.lag.time.max.ticks": ("replica_lag_ticks", _parse_count(0, 5), "lag limit in clock ticks"),
    "max.records": ("max_records", _parse_count(0, 6), "bound on records produced"),
    "max.crashes": ("max_crashes", _parse_count(0, 6), "bound on broker crashes"),
    "max.lossy.crashes": ("max_lossy_crashes", _parse_count(0, 6), "bound on crashes losing unflushed data"),
    "max.leader.moves": ("max_leader_moves", _parse_count(0, 6), "bound on controller-initiated elections"),
    "controller.elections": ("controller_elections", _parse_bool, "explore preferred/reassignment elections"),
    "retention": ("retention", _parse_bool, "explore retention moving the log start offset"),
}
"""`--set` keys: the config field each sets, its parser, and what it means."""


def override_keys() -> Mapping[str, str]:
    """Every `--set` key with a short description."""
    return {key: description for key, (_, _, description) in _OVERRIDES.items()}


def apply_overrides(config: PartitionConfig, overrides: Mapping[str, str]) -> PartitionConfig:
    """Return `config` with `--set` overrides applied; raises ConfigError naming the problem."""
    changes: dict[str, object] = {}
    for key, text in overrides.items():
        if key not in _OVERRIDES:
            known = ", ".join(sorted(_OVERRIDES))
            raise ConfigError(f"unknown configuration key {key!r} (known keys: {known})")
        field_name, parse, _ = _OVERRIDES[key]
        try:
            changes[field_name] = parse(text)
        except ValueError as error:
            raise ConfigError(f"bad value for {key}: {error}") from None
    updated = replace(config, **changes)  # type: ignore[arg-type]
    if updated.min_insync_replicas > updated.replication_factor:
        # Kafka uses min(min.insync.replicas, replication factor) as the effective minimum
        # only for the HW; produce with acks=all would always be refused: say so.
        raise ConfigError(
            f"min.insync.replicas={updated.min_insync_replicas} exceeds replication.factor="
            f"{updated.replication_factor}: every acks=all produce would be refused"
        )
    return updated


def model_for(
    config: PartitionConfig, invariants: tuple[str, ...], witnesses: tuple[str, ...] = ()
) -> Model[PartitionState, Action]:
    """The checker's view of the partition spec under `config`."""
    return Model(
        initial_states=(partition.initial_state(config),),
        candidate_actions=partial(partition.candidate_actions, config),
        step=partial(partition.step, config),
        invariants={name: partition.INVARIANTS[name] for name in invariants},
        step_properties=partition.STEP_PROPERTIES,
        witnesses={name: partition.WITNESSES[name] for name in witnesses},
    )


@dataclass(frozen=True)
class ScenarioOutcome:
    """A scenario checked: what was found and whether that is what was expected."""

    scenario: Scenario
    config: PartitionConfig
    result: CheckResult[PartitionState, Action]

    @property
    def found(self) -> str:
        """`counterexample` or `no violation`."""
        return "counterexample" if self.result.violation is not None else "no violation"

    @property
    def missing_witnesses(self) -> tuple[str, ...]:
        """Required reachable states that were never reached (a vacuous pass)."""
        if self.result.violation is not None:
            return ()
        return tuple(name for name in self.scenario.witnesses if not self.result.witnesses_reached.get(name))

    @property
    def as_expected(self) -> bool:
        """The outcome matches the scenario's expectation (and a pass is not vacuous)."""
        return self.found == self.scenario.expected and not self.missing_witnesses


def run_scenario(
    scenario: Scenario,
    max_depth: int = DEFAULT_MAX_DEPTH,
    overrides: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> ScenarioOutcome:
    """Check one scenario (with optional `--set` overrides) and report the outcome; the
    result does not depend on `workers` (see `spec.checker`)."""
    config = apply_overrides(scenario.config, overrides or {})
    model = model_for(config, scenario.invariants, scenario.witnesses)
    return ScenarioOutcome(scenario, config, check(model, max_depth, progress=progress, workers=workers))
