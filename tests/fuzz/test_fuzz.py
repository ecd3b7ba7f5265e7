"""Fuzzing `kafkaspec verify` with malformed histories of every format (a small budget here;
`python -m bench.fuzz` runs the same strategies at length, on both engines).

Whatever the input, the command keeps its contract: a verdict (0, 1, 3) or one stderr line
naming the file with exit code 2 - never a traceback (exit 70), another code, or a hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz.harness import run_verify
from tests.fuzz.strategies import CASES, FuzzCase

EXAMPLES = 30
"""Per format: five formats take about 20 s together on the 2-core machine."""


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_verify_keeps_its_contract_on_malformed_histories(tmp_path_factory, fmt):
    folder = tmp_path_factory.mktemp(fmt)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(CASES[fmt]())
    def check(case: FuzzCase) -> None:
        path = folder / f"history{case.extension}"
        path.write_bytes(case.content)
        path.with_suffix(".html").unlink(missing_ok=True)
        run = run_verify(case.argv(path, "local", 5), 60)
        assert not run.hung, f"hung on {case!r}"
        assert not run.traceback, f"{run.stderr}{run.escaped}"
        assert not run.breach(str(path)), f"{run.breach(str(path))}: {run.stderr!r}"

    check()


def test_an_internal_error_exits_70_with_one_line_and_a_traceback_file(tmp_path, monkeypatch):
    import spark_checks.linearizability

    def broken(*_args: object, **_kwargs: object) -> None:
        raise KeyError("injected bug")

    monkeypatch.setattr(spark_checks.linearizability, "check_partition", broken)
    path = tmp_path / "history.jsonl"
    path.write_text('{"process": 0, "type": "invoke", "f": "write", "value": 1}\n', encoding="utf-8")
    run = run_verify(["verify", str(path), "--engine", "local", "--format", "jsonl", "--model", "register"])
    assert run.code == 70
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    line = lines[0]
    assert line.startswith(
        "kafkaspec: internal error (a bug in kafkaspec, please report it): KeyError: 'injected"
    )
    assert f"while verifying {path}" in line
    log = Path(line.rsplit("traceback written to ", 1)[1])
    try:
        assert log.is_file()
        assert log.parent == Path(__import__("tempfile").gettempdir())
        assert "KeyError: 'injected bug'" in log.read_text(encoding="utf-8")
        assert "Traceback (most recent call last)" in log.read_text(encoding="utf-8")
    finally:
        log.unlink(missing_ok=True)
    debug = run_verify(["--debug", "verify", str(path), "--engine", "local", "--model", "register"])
    assert debug.code == 70
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.splitlines()[-1].endswith("traceback above")


@pytest.mark.parametrize("command", [["scenarios"], ["check", "acks1-loss", "--max-depth", "3"]])
def test_an_internal_error_in_any_command_exits_70(monkeypatch, command):
    import kafkaspec.cli
    import spec.scenarios

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("injected bug\nover two lines")

    # `check` imports run_scenario when it runs (the CLI loads the state machines lazily)
    monkeypatch.setattr(spec.scenarios, "run_scenario", broken)
    monkeypatch.setattr(kafkaspec.cli, "_stdout_console", broken)
    run = run_verify(["--debug", *command])
    assert run.code == 70
    last = run.stderr.splitlines()[-1]
    assert (
        "internal error (a bug in kafkaspec, please report it): RuntimeError: injected bug over two lines"
        in last
    )
    assert f"while running `kafkaspec {command[0]}`" in last
