"""Symbolic checks: CrossHair searches for inputs that break the spec's PEP 316 contracts.

The contracts live in the docstrings of the core pure functions (high-watermark rules,
truncation offsets, epoch-cache lookups). CrossHair is not fully deterministic, so the
analysis kind and the time budget are pinned here; a run takes well under a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINNED = ["--analysis_kind=PEP316", "--per_condition_timeout=4", "--per_path_timeout=1"]
CHECKED_MODULES = ["spec.isr", "spec.truncation", "spec.log"]


def crosshair(*targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crosshair", "check", *PINNED, *targets],
        capture_output=True,
        text=True,
        cwd=ROOT,
        # CrossHair executes the source symbolically: never the compiled build (spec._compiled)
        env={**os.environ, "KAFKASPEC_NATIVE": "0"},
        timeout=600,
        check=False,
    )


def test_every_checked_module_has_contracts():
    # Guard against a vacuous pass: the functions CrossHair checks do carry contracts.
    for module in CHECKED_MODULES:
        source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
        assert source.count("post: ") >= 2, module


@pytest.mark.crosshair
@pytest.mark.slow
def test_spec_contracts_hold():
    completed = crosshair(*CHECKED_MODULES)
    assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.crosshair
def test_crosshair_finds_a_broken_contract():
    completed = crosshair("tests.spec.fixtures.broken_contracts")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "leader_high_watermark_taking_the_max" in completed.stdout
