"""The replication conformance machine against the reference, broken partitions, and the CLI."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, settings

from conformance import partition_sut
from conformance.machines.partition import (
    ALWAYS,
    ReferencePartitionConformance,
    first_difference,
    invariants_in_force,
)
from conformance.partition_sut import (
    PartitionUnderTest,
    ReferencePartitionTarget,
    ReplicationSettings,
    make_partition,
    resolve_partition_target,
    view_of,
)
from conformance.run import SUITES, run_conformance, suites_for
from spec import partition as spec_partition
from spec.partition import History
from spec.types import Acks, TruncationRule
from tests.helpers import run_cli

ReferencePartitionConformance.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
TestReferencePartitionConformance = ReferencePartitionConformance.TestCase

BROKEN = "tests.conformance.broken_partitions"


def listed_commands(failure: str) -> list[str]:
    """The numbered command list a divergence message ends with."""
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


def test_the_reference_conforms_to_itself() -> None:
    result = run_conformance("reference", examples=60, seed=0, suite="partition")
    assert result.passed, result.failure
    assert result.suite_names == ("partition",)
    assert result.failure is None


@pytest.mark.parametrize(
    ("factory", "divergence", "max_commands"),
    [
        ("HighWatermarkOffByOne", "replicas[0].high_watermark after produce(", 2),
        ("IsrNeverShrinks", "leader_shrink_isr(leader=0, follower=1): target answered False", 3),
        ("FollowerHighWatermarkFromLeaderEnd", ".high_watermark after follower_handle_fetch_response(", 6),
        ("AcksAllBeforeHighWatermark", "produce(leader=0, acks=all, value=", 2),
        ("AcceptsProduceOnFollower", "reference answered None", 3),
    ],
)
def test_a_broken_partition_is_caught_with_a_shrunk_sequence(
    factory: str, divergence: str, max_commands: int
) -> None:
    result = run_conformance(f"{BROKEN}:{factory}", examples=200, seed=0, suite="partition")
    assert not result.passed
    assert result.failure is not None
    assert f"state = PartitionConformance_tests_conformance_broken_partitions_{factory}()" in result.failure
    assert "state.start(replication=ReplicationSettings(" in result.failure
    assert divergence in result.failure
    commands = listed_commands(result.failure)
    assert 1 <= len(commands) <= max_commands, commands  # from up to 40 steps
    # The printed program names each command's spec action.
    assert result.failure.count("Draw ") == len(commands)


def test_truncating_to_the_high_watermark_under_the_epoch_rule_is_caught() -> None:
    # It takes a replicated record, a leader change and the follower's truncation: found
    # quickly, but shrinking it takes minutes; the exhaustive suite finds a shortest
    # sequence instead (tests/conformance/test_exhaustive.py).
    result = run_conformance(
        f"{BROKEN}:TruncatesToHighWatermark", examples=200, seed=3, suite="partition", shrink=False
    )
    assert not result.passed
    assert result.failure is not None
    assert ".records after follower_truncate(" in result.failure


def test_a_run_with_a_seed_is_repeatable() -> None:
    target = f"{BROKEN}:IsrNeverShrinks"
    first = run_conformance(target, examples=100, seed=2, suite="partition", shrink=False)
    second = run_conformance(target, examples=100, seed=2, suite="partition", shrink=False)
    assert not first.passed
    assert first.failure == second.failure


def test_module_factory_targets_load() -> None:
    partition = make_partition(f"{BROKEN}:make_reference", ReplicationSettings(replication_factor=2))
    assert isinstance(partition, ReferencePartitionTarget)
    assert isinstance(partition, PartitionUnderTest)
    outcome = partition.produce(0, Acks.LEADER, 0)
    assert outcome is not None and outcome.offset == 0
    assert partition.observe().acknowledged == {(0, 0)}
    assert run_conformance(f"{BROKEN}:make_reference", examples=5, seed=0, suite="partition").passed


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nonsense", "expected one of impl, reference or MODULE:FACTORY"),
        ("no.such.module:make", "cannot import 'no.such.module'"),
        (f"{BROKEN}:missing", "has no callable 'missing'"),
        (f"{BROKEN}:BROKEN_NOTHING", "has no callable 'BROKEN_NOTHING'"),
        (":make", "expected one of"),
    ],
)
def test_a_bad_target_is_a_clear_value_error(target: str, message: str) -> None:
    with pytest.raises(ValueError, match="conformance target") as caught:
        run_conformance(target, examples=1, seed=0, suite="partition")
    assert message in str(caught.value)


def test_a_factory_must_return_a_partition_under_test() -> None:
    with pytest.raises(ValueError, match="returned object, not a PartitionUnderTest"):
        make_partition(f"{BROKEN}:make_nothing", ReplicationSettings())


def test_impl_is_imported_only_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partition_sut, "IMPL_MODULE", "conformance.no_such_partition")
    assert resolve_partition_target("reference") is ReferencePartitionTarget
    with pytest.raises(ValueError, match=r"conformance target 'impl': .*conformance\.no_such_partition"):
        resolve_partition_target("impl")


def test_which_suites_run() -> None:
    every = suites_for("impl", None)
    assert every[:3] == ("log", "partition", "exhaustive")
    assert {"coordinator-exhaustive", "coordinator-machine"} <= set(every)  # and each other machine's
    assert suites_for("reference", "all") == every
    assert suites_for(f"{BROKEN}:make_reference", None) == ("log",)
    assert suites_for(f"{BROKEN}:make_reference", "partition") == ("partition",)
    with pytest.raises(ValueError, match="name its suite"):
        suites_for(f"{BROKEN}:make_reference", "all")
    with pytest.raises(ValueError, match="unknown conformance suite 'replication'"):
        suites_for("impl", "replication")


def test_invariants_in_force_follow_the_settings_and_the_history() -> None:
    everything = set(spec_partition.INVARIANTS)
    epoch = ReplicationSettings(truncation=TruncationRule.LEADER_EPOCH)
    legacy = ReplicationSettings(truncation=TruncationRule.HIGH_WATERMARK)
    assert set(invariants_in_force(epoch, History())) == everything
    assert invariants_in_force(legacy, History()) == ALWAYS
    after_unclean = set(invariants_in_force(epoch, History(unclean_elections=1)))
    assert "committed_records_survive" not in after_unclean
    assert {"acks_all_records_survive", "followers_are_prefix_of_leader"} <= after_unclean
    acks_1 = History(acknowledged=frozenset({(0, 0)}))
    assert "acknowledged_records_survive" not in invariants_in_force(epoch, acks_1)
    assert "acknowledged_records_survive" not in invariants_in_force(epoch, History(lossy_crashes=1))


def test_first_difference_names_the_field() -> None:
    reference = ReferencePartitionTarget(ReplicationSettings(replication_factor=2))
    view = reference.observe()
    assert first_difference(view, view) is None
    reference.produce(0, Acks.LEADER, 0)
    assert first_difference(view, reference.observe()) == (
        "replicas[0].records",
        (),
        reference.observe().replicas[0].records,
    )
    other = view_of(reference.partition.state)
    assert first_difference(other, view)[0] == "replicas[0].records"  # type: ignore[index]


def test_cli_partition_suite_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "conformance",
        "--target",
        "reference",
        "--suite",
        "partition",
        "--examples",
        "10",
        "--seed",
        "0",
    )
    assert code == 0, out
    assert "reference, partition suite: conforms" in out
    broken = f"{BROKEN}:HighWatermarkOffByOne"
    code, out, _ = run_cli(
        capsys,
        "conformance",
        "--target",
        broken,
        "--suite",
        "partition",
        "--examples",
        "50",
        "--seed",
        "0",
        "--json",
    )
    assert code == 1
    document = json.loads(out)
    assert document["suites"] == ["partition"]
    assert document["conforms"] is False
    assert document["results"][0]["suite"] == "partition"
    assert "high_watermark after produce(" in document["failure"]


def test_cli_default_suites_for_the_reference(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys,
        "conformance",
        "--target",
        "reference",
        "--examples",
        "3",
        "--seed",
        "0",
        "--depth",
        "2",
        "--json",
    )
    assert code == 0, out
    document = json.loads(out)
    assert document["suites"] == list(SUITES)  # every suite, the coordinator's and controller's too
    assert document["depth"] == 2
    assert [entry["conforms"] for entry in document["results"]] == [True] * len(SUITES)


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (("--target", f"{BROKEN}:make_reference", "--suite", "all"), "name its suite"),
        (("--target", "no_such_module:factory", "--suite", "partition"), "cannot import 'no_such_module'"),
        (("--target", f"{BROKEN}:make_nothing", "--suite", "partition"), "not a PartitionUnderTest"),
        (("--target", "reference", "--suite", "replication"), "Invalid value for '--suite'"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], arguments: tuple[str, ...], error: str
) -> None:
    code, out, err = run_cli(capsys, "conformance", *arguments, "--examples", "2", "--seed", "0")
    assert code == 2
    assert out == ""
    assert error in err
    assert "Traceback" not in err
