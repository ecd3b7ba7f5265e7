"""`kafkaspec conformance` against targets that try to escape the suite: a module that does not
import is bad input (one line, exit 2); a target that hangs is stopped by the per-command
timeout and one that calls `sys.exit` is a divergence (exit 1), never a silent exit 0."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from conformance.guard import TargetExitError, TargetHungError, call_target
from tests.helpers import run_cli

TARGETS = "tests.conformance.escaping_targets"


def conformance(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return run_cli(capsys, "conformance", "--examples", "5", "--seed", "1", *argv)


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("def broken(:\n", "SyntaxError: "),
        ("raise RuntimeError('no database here')\n", "RuntimeError: no database here"),
        ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
        ("from . import nothing\n", "ImportError: "),
    ],
)
def test_a_target_module_that_fails_to_import_is_bad_input(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    source: str,
    fragment: str,
) -> None:
    name = f"kafkaspec_target_{abs(hash(source))}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = conformance(capsys, "--target", f"{name}:factory")
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"kafkaspec: error: --target {name}:factory: ")
    assert f"cannot import {name!r}: {fragment}" in err


def test_a_relative_module_name_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = conformance(capsys, "--target", ".relative:factory")
    assert code == 2
    assert err.count("\n") == 1, err
    assert "cannot import '.relative'" in err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("ExitsOnRead", "the target called sys.exit(0)"),
        ("RaisesSystemExitOnAppend", "the target called sys.exit('bye')"),
    ],
)
def test_a_target_that_exits_diverges(capsys: pytest.CaptureFixture[str], target: str, message: str) -> None:
    code, out, _ = conformance(capsys, "--target", f"{TARGETS}:{target}", "--suite", "log")
    assert code == 1, out
    assert "DIVERGES" in out
    assert message in out


def test_a_target_that_hangs_is_stopped_and_reported(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    code, out, _ = conformance(
        capsys, "--target", f"{TARGETS}:HangsOnRead", "--suite", "log", "--command-timeout", "0.3"
    )
    assert time.perf_counter() - started < 10
    assert code == 1, out
    assert "the target did not answer within 0.3 s (hung?); stopped" in out
    assert "read(" in out  # names the command that hung


@pytest.mark.parametrize("suite", ["partition", "exhaustive"])
def test_a_partition_that_hangs_is_stopped_and_reported(
    capsys: pytest.CaptureFixture[str], suite: str
) -> None:
    code, out, _ = conformance(
        capsys,
        "--target",
        f"{TARGETS}:HangingPartition",
        "--suite",
        suite,
        "--command-timeout",
        "0.3",
        "--json",
    )
    assert code == 1, out
    assert "observe() after" in out and "did not answer within 0.3 s" in out


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_bad_command_timeout_is_bad_input(capsys: pytest.CaptureFixture[str], value: str) -> None:
    code, _, err = conformance(capsys, "--target", "reference", "--command-timeout", value)
    assert code == 2
    assert "--command-timeout" in err


def test_the_watchdog_leaves_no_alarm_behind() -> None:
    assert call_target(lambda: 7, 0.2, "quick") == 7
    time.sleep(0.3)  # an alarm left armed would fire here
    with pytest.raises(TargetHungError, match=r"slow: the target did not answer within 0\.1 s"):
        call_target(lambda: time.sleep(5), 0.1, "slow")
    with pytest.raises(TargetExitError, match=r"quits: the target called sys.exit\(2\)"):
        call_target(lambda: sys.exit(2), 1.0, "quits")
    time.sleep(0.3)
