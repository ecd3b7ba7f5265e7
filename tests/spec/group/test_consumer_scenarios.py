"""The KIP-848 consumer group's named scenarios (`spec.group.consumer_scenarios`): each one's
outcome, its shortest counterexample's length, its witnesses, the machine's text view and
`--set` keys, and that the one-line bugs a mutation run injects (a member-epoch check off by
one, a partition released before its revocation, a commit epoch check off by one) are caught by
some scenario."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

import spec.group.consumer_reconciliation as reconciliation
from kafkaspec.docs import diagram_graph
from spec._frozen import replace
from spec.group import consumer
from spec.group.consumer_scenarios import CONSUMER_GROUP, MACHINE, SCENARIOS, describe_state, explain
from spec.group.types import Errors
from spec.machines import ConfigError, Scenario, run_scenario
from tests.shared_findings import SHARED_FINDINGS

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}

SHORTEST_TRACE = {
    "static-rejoin-unreleased": 2,
    "consumer-zombie-processing": 5,
    "kafka-19233-rejoin-refused": 5,
    "kip-1251-exact-commit-fenced": 6,
    "kip-1251-restamped-retry-exact": 9,
    "kip-1251-restamped-retry-returned-partition": 11,
    "kafka-19974-exact-zombie-commit": 9,
}
"""The length of each counterexample scenario's shortest trace (breadth-first, so exact)."""

VIOLATED = {
    "static-rejoin-unreleased": "no_self_fencing",
    "consumer-zombie-processing": "no_partition_processed_twice",
    "kafka-19233-rejoin-refused": "rebalance_completes",
    "kip-1251-exact-commit-fenced": "no_false_fencing",
    "kip-1251-restamped-retry-exact": "no_zombie_commit",
    "kip-1251-restamped-retry-returned-partition": "no_zombie_commit",
    "kafka-19974-exact-zombie-commit": "no_zombie_commit",
}


def test_names_and_machine() -> None:
    assert MACHINE is CONSUMER_GROUP and MACHINE.name == "consumer-group"
    assert len(BY_NAME) == len(SCENARIOS)
    assert {name for name, scenario in BY_NAME.items() if scenario.expect_violation} == set(SHORTEST_TRACE)
    for scenario in SCENARIOS:
        assert scenario.machine is MACHINE and scenario.reference
        if not scenario.expect_violation:
            assert scenario.witnesses, f"{scenario.name} could pass vacuously"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.name)
def test_scenario_outcome(scenario: Scenario[consumer.ConsumerGroupConfig]) -> None:
    outcome = SHARED_FINDINGS.outcome(scenario)
    assert outcome.as_expected, (outcome.found, outcome.missing_witnesses)
    result = outcome.result
    if scenario.expect_violation:
        assert result.violation is not None
        assert result.violation.property_name == VIOLATED[scenario.name]
        assert len(result.violation.trace) - 1 == SHORTEST_TRACE[scenario.name]
        assert outcome.explanation and "fails" not in outcome.explanation
    else:
        assert result.complete, f"{scenario.name} stopped at its depth bound"
        assert all(result.witnesses_reached[name] for name in scenario.witnesses)


def test_kafka_19233_trace_is_the_refused_rejoin() -> None:
    """The stuck state: consumer 1 is joining, and its member is still on the coordinator two
    epochs ahead of what the consumer ever heard."""
    violation = SHARED_FINDINGS.outcome(BY_NAME["kafka-19233-rejoin-refused"]).result.violation
    assert violation is not None
    last = violation.trace[-1].state
    assert last.clients[1].status is consumer.ClientStatus.JOINING and last.clients[1].was_fenced
    member = last.coordinator.members[1]
    assert member is not None and member.epoch == 3 and member.previous_epoch == 2
    assert "keeps rejoining" in explain("rebalance_completes", last)


def test_describe_state_lines_have_stable_labels() -> None:
    violation = SHARED_FINDINGS.outcome(BY_NAME["kafka-19974-exact-zombie-commit"]).result.violation
    assert violation is not None
    for trace_step in violation.trace:
        lines = describe_state(trace_step.state)
        labels = [line.split(":")[0] for line in lines]
        assert labels[:4] == ["group", "member m0", "member m1", "member m2"]
        assert labels[4:7] == ["consumer 0", "consumer 1", "consumer 2"]
        assert labels[7] == "partition epochs"


def test_state_diagram_reaches_every_member_state() -> None:
    graph = diagram_graph(MACHINE)
    assert graph is not None
    for node in (
        "no member / consumer joining",
        "stable / consumer member",
        "unrevoked_partitions / consumer member",
        "unreleased_partitions / consumer member",
        "left for now (-2) / consumer stopped",
        "no member / consumer member",  # fenced by the rebalance timeout, not yet told
    ):
        assert node in graph.nodes


def test_settings_and_validation() -> None:
    config = BY_NAME["consumer-join"].config
    changed = MACHINE.apply_overrides(
        config,
        {
            "members": "3",
            "group.consumer.assignors": "range",
            "rejoin.rule": "old",
            "commit.epoch.rule": "range",
            "revocation.epoch.rule": "keep",
            "static.rejoin.rule": "in-place",
            "max.lost.responses": "2",
        },
    )
    assert (changed.members, changed.assignor, changed.rejoin) == (
        3,
        consumer.ServerAssignor.RANGE,
        consumer.RejoinRule.OLD,
    )
    assert changed.commit_rule is consumer.CommitEpochRule.RANGE
    assert changed.revocation_epoch is consumer.RevocationEpochRule.KEEP and changed.max_lost_responses == 2
    assert changed.static_rejoin is consumer.StaticRejoinRule.IN_PLACE
    with pytest.raises(ConfigError):
        MACHINE.apply_overrides(config, {"rejoin.rule": "sometimes"})
    with pytest.raises(ConfigError):
        MACHINE.apply_overrides(config, {"static.members": "3"})  # more static consumers than consumers
    with pytest.raises(ConfigError):
        MACHINE.apply_overrides(config, {"static.leaves": "true"})  # no static consumer


# --- one-line bugs the scenarios must catch ----------------------------------------------------


@pytest.fixture
def fresh_memos() -> Iterator[None]:
    """The spec memoizes pure functions; a test that patches what they call must start and end
    with empty memos."""

    def clear() -> None:
        consumer.handle_heartbeat.cache_clear()  # type: ignore[attr-defined]
        consumer.target_assignment.cache_clear()  # type: ignore[attr-defined]
        consumer._observe.cache_clear()  # type: ignore[attr-defined]

    clear()
    yield
    clear()


def _caught(name: str) -> bool:
    return not run_scenario(BY_NAME[name]).as_expected


def _epoch_check(
    ahead: Callable[[int, int], bool], behind: Callable[[int, int], bool]
) -> Callable[..., Errors | None]:
    """`member_epoch_error` with the two comparisons replaced."""

    def check(
        member: reconciliation.ServerMember,
        received: int,
        owned: frozenset[int] | None,
        rejoin: consumer.RejoinRule,
    ) -> Errors | None:
        if rejoin is consumer.RejoinRule.FIXED and received == 0:
            return None
        if ahead(received, member.epoch):
            return Errors.FENCED_MEMBER_EPOCH
        if behind(received, member.epoch) and (
            received != member.previous_epoch or owned is None or not owned <= member.assigned
        ):
            return Errors.FENCED_MEMBER_EPOCH
        return None

    return check


@pytest.mark.parametrize(
    ("ahead", "behind", "scenario"),
    [
        (
            lambda received, epoch: received >= epoch,
            lambda received, epoch: received < epoch,
            "consumer-rebalance-timeout",
        ),
        (
            lambda received, epoch: received > epoch,
            lambda received, epoch: received <= epoch,
            "consumer-static-leave-return",
        ),
    ],
    ids=["ahead-check-off-by-one", "behind-check-off-by-one"],
)
def test_member_epoch_check_off_by_one_is_caught(
    monkeypatch: pytest.MonkeyPatch,
    fresh_memos: None,
    ahead: Callable[[int, int], bool],
    behind: Callable[[int, int], bool],
    scenario: str,
) -> None:
    assert not _caught(scenario)
    consumer.handle_heartbeat.cache_clear()  # type: ignore[attr-defined]
    monkeypatch.setattr(consumer, "member_epoch_error", _epoch_check(ahead, behind))
    assert _caught(scenario)


def test_partition_released_before_revocation_is_caught(
    monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    """The coordinator frees a partition pending revocation as if the consumer had already given
    it up: another member gets it while the first still processes it."""
    original = reconciliation.compute_next_assignment

    def released_early(
        member: reconciliation.ServerMember,
        member_epoch: int,
        target_epoch: int,
        target: frozenset[int],
        partition_epoch: Callable[[int], int],
        owned: frozenset[int] | None,
    ) -> reconciliation.ServerMember:
        return original(member, member_epoch, target_epoch, target, partition_epoch, frozenset())

    monkeypatch.setattr(reconciliation, "compute_next_assignment", released_early)
    violation = run_scenario(BY_NAME["consumer-join"]).result.violation
    assert violation is not None and violation.property_name == "one_owner_per_partition"


def test_pending_revocation_left_out_of_partition_epochs_is_caught(
    monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    """The partition epochs forget a member's partitions pending revocation (Kafka adds both
    sets): the table no longer says who holds what."""
    original = consumer._with_member

    def forgetful(
        coordinator: consumer.Coordinator, client: int, member: reconciliation.ServerMember | None
    ) -> consumer.Coordinator:
        if member is None or not member.pending_revocation:
            return original(coordinator, client, member)
        updated = original(coordinator, client, replace(member, pending_revocation=frozenset()))
        members = (*updated.members[:client], member, *updated.members[client + 1 :])
        return replace(updated, members=members)

    monkeypatch.setattr(consumer, "_with_member", forgetful)
    assert _caught("consumer-join")


def test_commit_epoch_check_off_by_one_is_caught(monkeypatch: pytest.MonkeyPatch, fresh_memos: None) -> None:
    """The exact rule accepting the epoch before the member's lets a zombie's late commit land."""
    original = consumer.commit_error

    def lax(
        member: reconciliation.ServerMember | None, partition: int, epoch: int, rule: consumer.CommitEpochRule
    ) -> Errors:
        if member is not None and rule is consumer.CommitEpochRule.EXACT:
            return Errors.NONE if epoch >= member.epoch - 1 else Errors.STALE_MEMBER_EPOCH
        return original(member, partition, epoch, rule)

    monkeypatch.setattr(consumer, "commit_error", lax)
    outcome = run_scenario(BY_NAME["consumer-zombie-commit"])
    assert (
        outcome.result.violation is not None and outcome.result.violation.property_name == "no_zombie_commit"
    )


def test_range_rule_without_the_partition_check_is_caught(
    monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    """KIP-1251's rule without its per-partition check lets a late commit for a partition since
    given to another member land."""
    original = consumer.commit_error

    def unchecked(
        member: reconciliation.ServerMember | None, partition: int, epoch: int, rule: consumer.CommitEpochRule
    ) -> Errors:
        if member is not None and rule is consumer.CommitEpochRule.RANGE:
            assigned_at = member.assignment_epoch(partition)
            floor = 0 if assigned_at is None else assigned_at
            return Errors.NONE if floor <= epoch <= member.epoch else Errors.STALE_MEMBER_EPOCH
        return original(member, partition, epoch, rule)

    monkeypatch.setattr(consumer, "commit_error", unchecked)
    assert _caught("kip-1251-range-commit")
