"""The replica-log conformance machine against the optimized log, the reference, and broken targets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from conformance.machines.log import ImplLogConformance, ReferenceLogConformance
from conformance.run import ConformanceResult, run_conformance
from conformance.sut import ImplLog, LogUnderTest, ReferenceLog, make_log, resolve_target
from spec.types import Record

MACHINE_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

ImplLogConformance.TestCase.settings = MACHINE_SETTINGS
ReferenceLogConformance.TestCase.settings = MACHINE_SETTINGS
TestImplLogConformance = ImplLogConformance.TestCase
TestReferenceLogConformance = ReferenceLogConformance.TestCase

BROKEN = "tests.conformance.broken_targets"


def test_the_optimized_log_conforms() -> None:
    result = run_conformance("impl", examples=60, seed=1, suite="log")
    assert result == ConformanceResult("impl", 60, True, None, result.seconds, result.suites)
    assert result.suite_names == ("log",)
    assert result.seconds > 0


def test_a_run_with_a_seed_is_repeatable() -> None:
    target = f"{BROKEN}:TruncateKeepsOneTooMany"
    first = run_conformance(target, examples=50, seed=3, shrink=False)
    second = run_conformance(target, examples=50, seed=3, shrink=False)
    assert not first.passed
    assert first.failure == second.failure


@pytest.mark.parametrize(
    ("factory", "command"),
    [
        ("EndOffsetOffByOne", "end_offset_for_epoch("),
        ("TruncateKeepsOneTooMany", "truncate_to("),
        ("CrashKeepsEverything", "crash()"),
    ],
)
def test_a_broken_target_is_caught_with_the_command_named(factory: str, command: str) -> None:
    result = run_conformance(f"{BROKEN}:{factory}", examples=200, seed=0)
    assert not result.passed
    assert result.failure is not None
    assert "state = LogConformance_" in result.failure  # the minimal program Hypothesis printed
    assert command in result.failure
    assert "target answered" in result.failure and "reference answered" in result.failure


def test_module_factory_targets_load() -> None:
    log = make_log(f"{BROKEN}:make_reference")
    assert isinstance(log, ReferenceLog)
    assert log.append((Record(0, 1),)) == 0
    assert run_conformance(f"{BROKEN}:make_reference", examples=5, seed=0).passed


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nonsense", "expected one of impl, reference or MODULE:FACTORY"),
        ("no.such.module:make", "cannot import 'no.such.module'"),
        (f"{BROKEN}:missing", "has no callable 'missing'"),
        (f"{BROKEN}:NOT_CALLABLE", "has no callable 'NOT_CALLABLE'"),
        (":make", "expected one of"),
        (f"{BROKEN}:", "expected one of"),
    ],
)
def test_a_bad_target_is_a_clear_value_error(target: str, message: str) -> None:
    with pytest.raises(ValueError, match="conformance target") as caught:
        run_conformance(target, examples=1, seed=0)
    assert message in str(caught.value)


def test_a_factory_must_return_a_log_under_test() -> None:
    with pytest.raises(ValueError, match="not a LogUnderTest"):
        make_log("builtins:object")


def test_the_builtin_adapters_are_logs_under_test() -> None:
    for target, kind in (("impl", ImplLog), ("reference", ReferenceLog)):
        log = make_log(target)
        try:
            assert isinstance(log, kind)
            assert isinstance(log, LogUnderTest)
        finally:
            log.close()
    assert resolve_target("impl") is ImplLog


def test_an_impl_crash_keeps_only_flushed_records() -> None:
    log = ImplLog()
    try:
        log.append(tuple(Record(0, value) for value in range(12)))
        log.update_high_watermark(12)
        log.flush()
        log.append(tuple(Record(1, value) for value in range(12, 20)))
        log.update_high_watermark(20)
        log.crash()
        snapshot = log.snapshot()
        assert snapshot.log_end_offset == 12
        assert snapshot.high_watermark == 12
        assert snapshot.records == tuple(Record(0, value) for value in range(12))
        assert log.end_offset_for_epoch(0) == (0, 12)
        assert [entry.epoch for entry in snapshot.epoch_cache] == [0]
    finally:
        log.close()
