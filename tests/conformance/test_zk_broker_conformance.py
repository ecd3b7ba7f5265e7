"""The ZooKeeper-era broker suites: both built-in targets conform, broken brokers are caught
with a shortest failing sequence, the reference is the spec's `deliver_request`, and the
suites are wired into `kafkaspec conformance`."""

from __future__ import annotations

import itertools
import re

import pytest

from conformance.run import run_conformance, suites_for
from conformance.zk_broker_exhaustive import ALPHABET, run_exhaustive
from conformance.zk_broker_sut import ZkBrokerUnderTest, make_zk_broker, resolve_zk_broker_target
from reference.zk_broker import ReferenceZkBroker, spec_request
from spec.controller.types import KafkaError, LeaderAndIsrRequest, ZkBrokerSettings
from spec.controller.zk_requests import PartitionVerdict, accepts_leader_epoch, partition_verdict
from tests.helpers import run_cli

BROKEN = "tests.conformance.broken_zk_brokers"
FACTORIES = ("ObeysZombieControllers", "ObeysEarlierIncarnations", "RestartKeepsControllerEpoch")


def listed_commands(failure: str) -> list[str]:
    """The numbered command list a divergence message ends with."""
    return re.findall(r"^  \d+\. (.*)$", failure, flags=re.MULTILINE)


@pytest.mark.parametrize("target", ["reference", "impl"])
def test_the_built_in_targets_conform(target: str) -> None:
    result = run_conformance(target, examples=40, seed=0, suite="zk-broker")
    assert result.passed, result.failure
    assert result.suite_names == ("zk-broker-exhaustive", "zk-broker-machine")


def test_the_targets_implement_the_protocol() -> None:
    assert isinstance(make_zk_broker("impl", ZkBrokerSettings()), ZkBrokerUnderTest)
    assert isinstance(make_zk_broker("reference", ZkBrokerSettings()), ReferenceZkBroker)


@pytest.mark.parametrize("factory", FACTORIES)
def test_the_exhaustive_suite_catches_a_broken_broker_with_a_shortest_sequence(factory: str) -> None:
    result = run_exhaustive(f"{BROKEN}:{factory}")
    assert not result.passed
    assert result.failure is not None
    assert 1 <= len(listed_commands(result.failure)) <= 3, result.failure


@pytest.mark.parametrize("factory", FACTORIES)
def test_the_random_machine_catches_a_broken_broker(factory: str) -> None:
    result = run_conformance(f"{BROKEN}:{factory}", examples=200, seed=0, suite="zk-broker-machine")
    assert not result.passed, factory
    assert result.failure is not None and "target" in result.failure


def test_the_zombie_controller_divergence_names_the_stale_request() -> None:
    result = run_exhaustive(f"{BROKEN}:ObeysZombieControllers")
    assert result.failure is not None
    assert "STALE_CONTROLLER_EPOCH" in result.failure  # the reference refused what the target obeyed


def test_the_partition_verdict_is_the_spec_broker_rule() -> None:
    """`partition_verdict` applies exactly what the spec's broker applies (`accepts_leader_epoch`
    for a replica of the assignment), and its error codes are Kafka's."""
    for leader_epoch, current, replicas in itertools.product(range(3), range(-1, 3), ((0, 1), (1, 2))):
        request = spec_request(LeaderAndIsrRequest(1, 1, replicas[0], leader_epoch, replicas, 0, replicas))
        verdict = partition_verdict(request, 0, current)
        applied = 0 in replicas and accepts_leader_epoch(leader_epoch, current)
        assert (verdict is PartitionVerdict.APPLIED) == applied
    older = spec_request(LeaderAndIsrRequest(1, 1, 0, 0, (0,), 0, (0,)))
    assert partition_verdict(older, 0, 1).error is KafkaError.STALE_CONTROLLER_EPOCH


def test_the_alphabet_reaches_every_answer() -> None:
    """Within the exhaustive suite's depth the reference gives every error a broker can give."""
    seen: set[tuple[KafkaError, KafkaError]] = set()
    for first, second in itertools.product(ALPHABET, repeat=2):
        broker = ReferenceZkBroker(ZkBrokerSettings())
        for command in (first, second):
            if isinstance(command, LeaderAndIsrRequest) or hasattr(command, "controller_epoch"):
                answer = broker.handle(command)  # type: ignore[arg-type]
                seen.add((answer.error, answer.partition_error))
            else:
                broker.restart(2)
    assert (KafkaError.STALE_CONTROLLER_EPOCH, KafkaError.NONE) in seen
    assert (KafkaError.STALE_BROKER_EPOCH, KafkaError.NONE) in seen
    assert (KafkaError.NONE, KafkaError.STALE_CONTROLLER_EPOCH) in seen
    assert (KafkaError.NONE, KafkaError.UNKNOWN_TOPIC_OR_PARTITION) in seen


def test_targets_suites_and_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert suites_for("impl", "zk-broker") == ("zk-broker-exhaustive", "zk-broker-machine")
    assert "zk-broker-machine" in suites_for("impl", None)
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        resolve_zk_broker_target("no_such_module:factory")
    with pytest.raises(ValueError, match="not a ZkBrokerUnderTest"):
        make_zk_broker("spec.controller.types:ZkBrokerSettings", ZkBrokerSettings())
    code, out, _ = run_cli(
        capsys, "conformance", "--target", "impl", "--suite", "zk-broker", "--examples", "5"
    )
    assert code == 0, out
    assert "impl, zk-broker-exhaustive suite: conforms" in out
    code, out, _ = run_cli(
        capsys, "conformance", "--target", f"{BROKEN}:ObeysZombieControllers", "--suite", "zk-broker"
    )
    assert code == 1, out
    assert "DIVERGES" in out
