"""`verify --report`: a path that cannot take a new file is refused before the verification
starts, and the report is created exclusively (a file that appears meanwhile is kept)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import spark_checks.engine
from spark_checks.engine import verify_history
from spark_checks.report import ReportPathError, check_report_path, write_report
from tests.helpers import run_cli

HISTORY = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "histories"
    / "porcupine"
    / "test_data"
    / "jepsen"
    / "etcd_000.log"
)


def refused_before_checking(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, report: Path, fragment: str
) -> None:
    checked: list[str] = []

    def spy(path: str, *args: Any, **kwargs: Any) -> Any:
        checked.append(path)
        return verify_history(path, *args, **kwargs)

    # the CLI imports the engine when verify runs, so the engine's own name is the one to spy on
    monkeypatch.setattr(spark_checks.engine, "verify_history", spy)
    code, out, err = run_cli(capsys, "verify", str(HISTORY), "--report", str(report))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert fragment in err
    assert "Traceback" not in err
    assert checked == []  # refused before any history was read


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared/histories")
def test_a_report_in_a_missing_folder_is_refused_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    refused_before_checking(capsys, monkeypatch, tmp_path / "nope" / "r.html", "does not exist")


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared/histories")
def test_a_report_under_a_file_is_refused_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    refused_before_checking(capsys, monkeypatch, tmp_path / "file" / "r.html", "is not a folder")


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared/histories")
def test_a_report_in_a_folder_that_takes_no_file_is_refused_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # /proc takes no new file, even for root; a read-only folder refuses other users.
    refused_before_checking(capsys, monkeypatch, Path("/proc/r.html"), "does not take new files")
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        refused_before_checking(capsys, monkeypatch, locked / "r.html", "does not take new files")


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared/histories")
def test_a_file_that_appears_while_checking_is_not_overwritten(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = tmp_path / "r.html"

    def someone_else_writes(path: str, *args: Any, **kwargs: Any) -> Any:
        report.write_text("theirs")
        return verify_history(path, *args, **kwargs)

    monkeypatch.setattr(spark_checks.engine, "verify_history", someone_else_writes)
    code, out, err = run_cli(capsys, "verify", str(HISTORY), "--report", str(report))
    assert code == 2
    assert "INVALID" in out  # the verdict is still printed
    assert "appeared while the histories were checked; not overwritten" in err
    assert report.read_text() == "theirs"


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared/histories")
def test_a_report_is_written_when_the_path_is_free(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.html"
    code, out, _ = run_cli(capsys, "verify", str(HISTORY), "--report", str(report))
    assert code == 1
    assert f"report: {report}" in out
    assert report.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no probe file left behind


def test_write_report_never_replaces_a_file(tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    write_report(path, "first")
    with pytest.raises(FileExistsError):
        write_report(path, "second")
    assert path.read_text() == "first"
    with pytest.raises(ReportPathError, match="already exists"):
        check_report_path(path)
    dangling = tmp_path / "link.html"
    dangling.symlink_to(tmp_path / "missing")
    with pytest.raises(ReportPathError, match="already exists"):
        check_report_path(dangling)
