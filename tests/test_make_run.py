"""`make run` ends by telling the user where the documentation is: its recipe checks every
scenario, then builds the site whatever check found, and `kafkaspec docs` ends with the path
of the site's front page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import kafkaspec.docs
from kafkaspec.docs import BuildResult
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_make_run_checks_then_builds_the_docs_last():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    commands = [line for line in dry.splitlines() if "kafkaspec " in line]
    assert "kafkaspec check --all" in commands[0]
    assert "kafkaspec docs --out build/docs" in commands[-1]
    # the docs are built even when check exits 1 (an outcome not as expected), and make then
    # fails with check's status
    assert "|| status=$?" in dry and "exit $status" in dry


def test_the_recipe_builds_the_docs_after_a_failed_check_and_keeps_its_status(tmp_path):
    """The recipe's shell logic, run with stand-ins for the two commands."""
    if shutil.which("make") is None or shutil.which("sh") is None:
        pytest.skip("make or sh is not installed")
    dry = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    lines = dry.splitlines()
    start = next(index for index, line in enumerate(lines) if "kafkaspec check --all" in line)
    script = "\n".join(lines[start:])
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "kafkaspec"
    fake.write_text('#!/bin/sh\necho "kafkaspec $*" >> calls.txt\n[ "$1" = check ] && exit 1\nexit 0\n')
    fake.chmod(0o755)
    done = subprocess.run(
        ["sh", "-c", script], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert (tmp_path / "calls.txt").read_text().splitlines() == [
        "kafkaspec check --all",
        "kafkaspec docs --out build/docs",
    ]


def test_docs_ends_with_where_the_front_page_is(tmp_path, capsys, monkeypatch):
    out = tmp_path / "site"

    def build(target: Path, workers: int | None = None, say: object = None) -> BuildResult:
        target.mkdir()
        (target / "index.html").write_text("<html></html>")
        return BuildResult(target, ("index",), (), 1.5)

    monkeypatch.setattr(kafkaspec.docs, "build_docs", build)
    code, stdout, _ = run_cli(capsys, "docs", "--out", str(out))
    assert code == 0
    last = stdout.strip().splitlines()[-1]
    assert last == f"docs: 1 pages in 1.5 s; open {(out / 'index.html').resolve()}"
