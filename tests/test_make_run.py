"""`make run` ends by telling the user where the documentation is: its one command checks
every scenario, then builds the site from the same findings whatever check found, and ends
with the path of the site's front page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kafkaspec.docs
import spec.scenarios
from kafkaspec.docs import BuildResult
from kafkaspec.outcomes import FindingsCache
from spec.scenarios import SCENARIOS_BY_NAME
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent


def test_make_run_checks_then_builds_the_docs_from_the_same_findings():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    dry = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    commands = [line for line in dry.splitlines() if "kafkaspec " in line]
    assert len(commands) == 1 and commands[0].endswith("kafkaspec check --all --docs build/docs")


def _spy_build(monkeypatch: pytest.MonkeyPatch, caches: list[FindingsCache]) -> None:
    def build(
        target: Path, workers: int | None = None, say: object = None, cache: FindingsCache | None = None
    ) -> BuildResult:
        assert cache is not None
        caches.append(cache)
        target.mkdir(exist_ok=True)
        (target / kafkaspec.docs.STAMP).write_text("built\n")  # as the real build marks its site
        (target / "index.html").write_text("<html></html>")
        return BuildResult(target, ("index",), (), 1.5)

    monkeypatch.setattr(kafkaspec.docs, "build_docs", build)


def test_check_all_docs_hands_the_site_what_it_checked(tmp_path, capsys, monkeypatch):
    """`check --all --docs DIR` builds the site after the checks, from the outcomes they found
    (each scenario checked once), and exits with check's status."""
    chosen = (
        SCENARIOS_BY_NAME["acks1-loss"],
        SCENARIOS_BY_NAME["kip-1251-restamped-retry-returned-partition"],
    )
    monkeypatch.setattr(spec.scenarios, "SCENARIOS", chosen)
    checked: list[str] = []
    real_run = spec.scenarios.run_scenario

    def run(scenario: Any, *arguments: Any, **options: Any) -> Any:
        checked.append(scenario.name)
        return real_run(scenario, *arguments, **options)

    monkeypatch.setattr(spec.scenarios, "run_scenario", run)
    caches: list[FindingsCache] = []
    _spy_build(monkeypatch, caches)
    out = tmp_path / "site"
    code, stdout, _ = run_cli(capsys, "check", "--all", "--workers", "1", "--docs", str(out))
    assert code == 0
    assert checked == [scenario.name for scenario in chosen]
    assert stdout.index("scenarios as expected") < stdout.index("docs: 1 pages")
    [cache] = caches
    for scenario in chosen:
        findings = cache.get(scenario)
        assert findings is not None and findings.outcome.scenario is scenario
    # an unexpected outcome (a bound shorter than the counterexample) still builds the site,
    # and the status stays check's; findings under another bound are not reused
    caches.clear()
    code, stdout, _ = run_cli(
        capsys, "check", "--all", "--workers", "1", "--max-depth", "3", "--docs", str(out)
    )
    assert code == 1
    assert "docs: 1 pages" in stdout
    assert all(caches[0].get(scenario) is None for scenario in chosen)


def test_check_docs_refuses_before_checking(tmp_path, capsys, monkeypatch):
    """A directory the site may not replace is refused (exit 2) before any scenario is checked,
    and nothing in it is touched; --docs needs --all."""
    monkeypatch.setattr(spec.scenarios, "run_scenario", lambda *_, **__: pytest.fail("checked"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    code, _, err = run_cli(capsys, "check", "--all", "--docs", str(mine))
    assert code == 2
    assert "is not empty and is not a kafkaspec docs build" in err
    assert (mine / "notes.txt").read_text() == "keep me"
    code, _, err = run_cli(capsys, "check", "acks1-loss", "--docs", str(tmp_path / "new"))
    assert code == 2 and "--docs goes with --all" in err


def test_docs_ends_with_where_the_front_page_is(tmp_path, capsys, monkeypatch):
    out = tmp_path / "site"
    _spy_build(monkeypatch, [])
    code, stdout, _ = run_cli(capsys, "docs", "--out", str(out))
    assert code == 0
    last = stdout.strip().splitlines()[-1]
    assert last == f"docs: 1 pages in 1.5 s; open {(out / 'index.html').resolve()}"
