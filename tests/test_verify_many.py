"""`kafkaspec verify` over many files: directories, going on past a bad file, the summary
line, the exit code, `--json`, and the progress line (`spark_checks.batch`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_checks.batch import (
    HISTORY_EXTENSIONS,
    BatchProgress,
    Counts,
    FileOutcome,
    exit_code,
    history_files,
    summary_line,
)
from spark_checks.history import Verdict
from tests.helpers import run_cli

VALID = (
    '{"index": 0, "process": 0, "type": "invoke", "f": "write", "value": 1}\n'
    '{"index": 1, "process": 0, "type": "ok", "f": "write", "value": 1}\n'
    '{"index": 2, "process": 1, "type": "invoke", "f": "read", "value": null}\n'
    '{"index": 3, "process": 1, "type": "ok", "f": "read", "value": 1}\n'
)
INVALID = VALID.replace('"ok", "f": "read", "value": 1', '"ok", "f": "read", "value": 2')
BAD = VALID + '{"index": 4, "process": 2, "type": "ok", "f": "read"\n'  # line 5 is cut short


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    histories = tmp_path / "histories"
    histories.mkdir()
    (histories / "b-invalid.jsonl").write_text(INVALID)
    (histories / "a-valid.jsonl").write_text(VALID)
    (histories / "c-bad.jsonl").write_text(BAD)
    (histories / "notes.md").write_text("not a history\n")  # not a history's extension
    (histories / ".hidden.jsonl").write_text(BAD)  # hidden: left out
    (histories / "sub").mkdir()
    (histories / "sub" / "deeper.jsonl").write_text(BAD)  # not in the directory itself
    return histories


def test_a_directory_stands_for_its_history_files_sorted(folder: Path) -> None:
    assert history_files([str(folder)]) == [
        str(folder / "a-valid.jsonl"),
        str(folder / "b-invalid.jsonl"),
        str(folder / "c-bad.jsonl"),
    ]
    assert ".jsonl" in HISTORY_EXTENSIONS and ".edn" in HISTORY_EXTENSIONS and ".md" not in HISTORY_EXTENSIONS


@pytest.mark.parametrize("workers", ["1", "2"])
def test_many_files_go_on_past_a_bad_one_and_end_with_a_summary(
    capsys: pytest.CaptureFixture[str], folder: Path, tmp_path: Path, workers: str
) -> None:
    extra = tmp_path / "extra-valid.jsonl"
    extra.write_text(VALID)
    code, out, err = run_cli(capsys, "verify", str(folder), str(extra), "--workers", workers)
    assert code == 1  # one history is invalid
    lines = out.splitlines()
    verdicts = [line for line in lines if not line.startswith(" ")][:-1]
    assert [line.split(": ")[0] for line in verdicts] == [
        str(folder / "a-valid.jsonl"),
        str(folder / "b-invalid.jsonl"),
        str(extra),
    ]
    assert verdicts[0].startswith(f"{folder / 'a-valid.jsonl'}: VALID")
    assert verdicts[1].startswith(f"{folder / 'b-invalid.jsonl'}: INVALID")
    assert lines[-1].startswith("4 histories: 2 valid, 1 invalid, 0 unknown, 1 bad input (")
    # The bad file gets the one-line message a single bad file gets, with its line.
    assert err.count("\n") == 1
    assert err.startswith(f"kafkaspec: error: {folder / 'c-bad.jsonl'}:5: ")


def test_bad_input_without_an_invalid_history_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a.jsonl").write_text(VALID)
    (tmp_path / "b.jsonl").write_text(BAD)
    code, out, err = run_cli(capsys, "verify", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert code == 2
    assert out.splitlines()[-1].startswith("2 histories: 1 valid, 0 invalid, 0 unknown, 1 bad input")
    assert f"{tmp_path / 'b.jsonl'}:5:" in err


def test_a_missing_file_and_an_empty_directory_are_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a.jsonl").write_text(VALID)
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_cli(
        capsys, "verify", str(tmp_path / "a.jsonl"), str(tmp_path / "nope.jsonl"), str(empty)
    )
    assert code == 2
    assert out.splitlines()[-1].startswith("3 histories: 1 valid, 0 invalid, 0 unknown, 2 bad input")
    messages = err.splitlines()
    assert messages[0] == f"kafkaspec: error: {tmp_path / 'nope.jsonl'}: no such file"
    assert messages[1].startswith(
        f"kafkaspec: error: {empty}: a directory with no history files (extensions "
    )


def test_one_file_behaves_as_before(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(BAD)
    code, out, err = run_cli(capsys, "verify", str(tmp_path / "bad.jsonl"))
    assert (code, out) == (2, "")
    assert err.startswith(f"kafkaspec: error: {tmp_path / 'bad.jsonl'}:5: ")
    (tmp_path / "ok.jsonl").write_text(VALID)
    code, out, _ = run_cli(capsys, "verify", str(tmp_path / "ok.jsonl"))
    assert code == 0
    assert out.count("\n") == 2 and " histories: " not in out  # the verdict and conventions only


def test_many_files_as_json(capsys: pytest.CaptureFixture[str], folder: Path) -> None:
    code, out, err = run_cli(capsys, "verify", str(folder), "--json")
    assert code == 1
    document = json.loads(out)
    assert document["summary"] == {"histories": 3, "valid": 1, "invalid": 1, "unknown": 0, "bad_input": 1}
    assert [h["verdict"] for h in document["histories"]] == ["valid", "invalid"]
    assert [entry["path"] for entry in document["bad_input"]] == [str(folder / "c-bad.jsonl")]
    assert document["bad_input"][0]["error"].startswith(f"{folder / 'c-bad.jsonl'}:5: ")
    assert document["verdict"] == "invalid"
    assert err.count("\n") == 1


def test_fail_fast_over_many_files_still_gives_every_file_a_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for number in range(3):
        (tmp_path / f"h{number}.jsonl").write_text(INVALID if number == 1 else VALID)
    code, out, _ = run_cli(capsys, "verify", str(tmp_path), "--fail-fast")
    assert code == 1
    assert out.splitlines()[-1].startswith("3 histories: 2 valid, 1 invalid, 0 unknown, 0 bad input")


def test_the_exit_code_of_many_files() -> None:
    assert exit_code(Counts(valid=3)) == 0
    assert exit_code(Counts(valid=3, unknown=1)) == 3
    assert exit_code(Counts(valid=3, unknown=1, bad_input=1)) == 2
    assert exit_code(Counts(invalid=1, unknown=1, bad_input=1)) == 1


def test_the_summary_line_and_the_counts() -> None:
    counts = Counts()
    for outcome in (
        FileOutcome("a", problem="a:1: bad"),
        FileOutcome("b", unfinished="stopped at the deadline"),
    ):
        counts = counts.add(outcome)
    assert counts == Counts(unknown=1, bad_input=1)
    assert FileOutcome("b", unfinished="x").verdict is Verdict.UNKNOWN
    assert summary_line(counts, 1.234) == "2 histories: 0 valid, 0 invalid, 1 unknown, 1 bad input (1.23 s)"
    assert (
        summary_line(Counts(valid=1), 0.5) == "1 history: 1 valid, 0 invalid, 0 unknown, 0 bad input (0.50 s)"
    )


def test_the_progress_line_names_the_file_and_counts_invalid_ones() -> None:
    shown = BatchProgress(total=108, counts=Counts(valid=10, invalid=3, unknown=1))
    shown.current, shown.doing = "etcd_040.log", "1/3 parts checked, 1 invalid, 0 unknown"
    assert shown.text() == (
        "14/108 files: 3 invalid, 1 unknown, 0 bad input; "
        "etcd_040.log: 1/3 parts checked, 1 invalid, 0 unknown"
    )


def test_the_progress_of_many_files_reaches_the_callback(folder: Path) -> None:
    from spark_checks.batch import verify_files
    from spark_checks.engine import VerifyOptions
    from spark_checks.parallel import WorkerPool

    said: list[str] = []
    with WorkerPool(2) as pool:
        outcomes = verify_files(history_files([str(folder)]), VerifyOptions(), pool, progress=said.append)
    assert [o.verdict for o in outcomes] == [Verdict.VALID, Verdict.INVALID, None]
    assert said[-1].startswith("3/3 files: 1 invalid, 0 unknown, 1 bad input")
    assert any("1 invalid" in line for line in said)
