"""Start-up cost of the command line: a command imports only what it needs.

pyarrow, numpy, pandas and pyspark take from ~0.1 s to over a second to import; loading the CLI
(`kafkaspec --help`) and verifying a small JSON Lines or EDN history must not pay for them, nor
for every state machine (`spec.scenarios`). Every command's `--help` loads only click and the
command line itself: no checker, reader, engine, rich console, state machine or reference
(issue 11's target: `--help` and `verify` of a small history within 0.2 s; `bench/startup.py`
measures it). Structural tests (which modules are in `sys.modules`), not timing tests: they
hold on a loaded machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_checks.history import Operation, OpType
from spark_checks.readers import write_jsonl, write_parquet

HEAVY = ("pyarrow", "pyspark", "pandas", "numpy")
WATCHED = (*HEAVY, "spec.scenarios")
MARKER = "loaded-modules:"

# Runs `kafkaspec ARGV...` and, at exit, prints which of the watched modules were imported.
RUN_CLI = f"""
import atexit, json, sys

def report():
    print({MARKER!r} + json.dumps([name for name in {WATCHED!r} if name in sys.modules]), file=sys.stderr)

atexit.register(report)
from kafkaspec.cli import main
main(sys.argv[1:])
"""

EDN_HISTORY = """\
{:process 0, :type :invoke, :f :write, :value 1}
{:process 0, :type :ok, :f :write, :value 1}
{:process 1, :type :invoke, :f :read, :value nil}
{:process 1, :type :ok, :f :read, :value 1}
"""

OPERATIONS = [
    Operation(index=0, time=0, process=0, type=OpType.INVOKE, f="write", value=1),
    Operation(index=1, time=1, process=0, type=OpType.OK, f="write", value=1),
    Operation(index=2, time=2, process=1, type=OpType.INVOKE, f="read", value=None),
    Operation(index=3, time=3, process=1, type=OpType.OK, f="read", value=1),
]


# Runs `kafkaspec ARGV...` and, at exit, prints every module imported.
RUN_CLI_ALL_MODULES = f"""
import atexit, json, sys

def report():
    print({MARKER!r} + json.dumps(sorted(sys.modules)), file=sys.stderr)

atexit.register(report)
from kafkaspec.cli import main
main(sys.argv[1:])
"""

COMMANDS = ("verify", "check", "scenarios", "conformance", "docs")

NOT_FOR_HELP = (
    *HEAVY,
    "rich.console",
    "multiprocessing",
    "spec",
    "reference",
    "impl",
    "conformance",
    "spark_checks.batch",
    "spark_checks.checking",
    "spark_checks.distributed",
    "spark_checks.engine",
    "spark_checks.explain",
    "spark_checks.history",
    "spark_checks.kafka_checker",
    "spark_checks.linearizability",
    "spark_checks.parallel",
    "spark_checks.readers",
    "spark_checks.report",
    "spark_checks.spark_session",
)
"""What no `--help` may import (a name stands for its sub-modules too)."""

NOT_FOR_ONE_SMALL_HISTORY = (
    *HEAVY,
    "rich",  # plain lines (`PlainLines`); rich draws only a terminal's progress line
    "multiprocessing",  # a small history is checked in this process: no worker is forked
    "spec",
    "impl",
    "conformance",
    "kafkaspec.render",
    "kafkaspec.docs",
    "spark_checks.batch",  # many files only
    "spark_checks.report_html",  # --report only
    "spark_checks.spark_read",
    "spark_checks.kafka_histories",
    "tempfile",  # --report only (its folder's probe file)
    "fractions",  # EDN ratios only
)
"""What `verify` of one small register history may not import."""


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def _all_loaded_by(*argv: str) -> tuple[int, set[str]]:
    """Run the CLI in a fresh interpreter: its exit code and every module it imported."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI_ALL_MODULES, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith(MARKER)]
    assert lines, done.stderr
    return done.returncode, set(json.loads(lines[-1].removeprefix(MARKER)))


def _loaded_by(*argv: str) -> tuple[int, list[str]]:
    """Run the CLI in a fresh interpreter: its exit code and the watched modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith(MARKER)]
    assert lines, done.stderr
    return done.returncode, json.loads(lines[-1].removeprefix(MARKER))


def test_loading_the_cli_imports_no_heavy_module():
    probe = f"import kafkaspec.cli, sys; print(sorted(m for m in {WATCHED!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_help_imports_no_heavy_module():
    code, loaded = _loaded_by("--help")
    assert code == 0
    assert loaded == []


def test_verifying_a_small_edn_history_imports_no_heavy_module(tmp_path: Path):
    history = tmp_path / "history.edn"
    history.write_text(EDN_HISTORY)
    code, loaded = _loaded_by("verify", str(history))
    assert code == 0  # a valid register history: the command really ran
    assert loaded == []


def test_verifying_a_small_jsonl_history_imports_no_heavy_module(tmp_path: Path):
    history = tmp_path / "history.jsonl"
    write_jsonl(history, OPERATIONS)
    code, loaded = _loaded_by("verify", str(history))
    assert code == 0
    assert loaded == []


def test_verifying_parquet_does_import_pyarrow(tmp_path: Path):
    """The probe sees an import when there is one: the Parquet reader needs pyarrow."""
    history = tmp_path / "history.parquet"
    write_parquet(history, OPERATIONS)
    code, loaded = _loaded_by("verify", str(history))
    assert code == 0
    assert "pyarrow" in loaded
    assert "pyspark" not in loaded


def test_the_scenarios_command_still_loads_the_scenarios():
    code, loaded = _loaded_by("scenarios", "--json")
    assert code == 0
    assert "spec.scenarios" in loaded


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_of_every_command_loads_only_the_command_line(command: str | None):
    argv = ["--help"] if command is None else [command, "--help"]
    code, loaded = _all_loaded_by(*argv)
    assert code == 0
    assert "click" in loaded and "kafkaspec.cli" in loaded  # the probe sees what was imported
    assert sorted(name for name in loaded if _within(name, NOT_FOR_HELP)) == []


def test_verifying_a_small_register_history_loads_no_spark_workers_or_spec(tmp_path: Path):
    history = tmp_path / "history.edn"
    history.write_text(EDN_HISTORY)
    code, loaded = _all_loaded_by("verify", str(history))
    assert code == 0
    assert "spark_checks.linearizability" in loaded  # it was checked
    # The spec's loader alone, which imports the search compiled where built (`spark_checks`).
    loader = {"spec", "spec._compiled"}
    assert sorted(name for name in loaded - loader if _within(name, NOT_FOR_ONE_SMALL_HISTORY)) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked")
def test_workers_talk_over_plain_pipes(tmp_path: Path):
    """Files go to forked workers with more than one file; their pipes are the system's
    (`parallel.Connection`), not multiprocessing's (which imports `socket` and more)."""
    history = tmp_path / "history.edn"
    history.write_text(EDN_HISTORY)
    code, loaded = _all_loaded_by("verify", "--workers", "2", str(history), str(history))
    assert code == 0
    assert "spark_checks.batch" in loaded  # the many-files path ran
    assert sorted(name for name in loaded if _within(name, ("multiprocessing", "socket"))) == []


def test_the_verify_choices_are_their_modules_own():
    """`spark_checks.choices` (what the command line offers without loading the checkers)
    holds the names and defaults the checkers, readers and engines use."""
    from spark_checks import choices, engine, linearizability, readers

    # every sequential model the checker knows, and the Kafka checkers' two dialects
    assert set(choices.MODEL_NAMES) == set(linearizability.MODELS) | {"kafka", "maelstrom-kafka"}
    assert choices.FORMATS == readers.FORMATS
    assert choices.ENGINES == engine.ENGINES
    assert choices.DEFAULT_MAX_MEMORY_BYTES == linearizability.DEFAULT_MAX_MEMORY_BYTES


def test_verify_prints_its_lines_as_they_are(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`verify` writes plain lines (not rich's console, which costs start-up time and reads
    `:x:` as an emoji code): a path holding an emoji code is printed as it is."""
    from tests.helpers import run_cli

    history = tmp_path / "run:x:1.edn"
    history.write_text(EDN_HISTORY)
    code, out, _ = run_cli(capsys, "verify", str(history), str(history))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{history}: VALID (register, edn, local engine, 4 operations")
    assert lines[-1].startswith("2 histories: 2 valid, 0 invalid, 0 unknown, 0 bad input (")


SPINNER_PROBE = """
import sys, time
import kafkaspec.cli as cli
cli.SPINNER_AFTER_SECONDS = float(sys.argv[1])
with cli._progress(True) as start:
    say = start("verify")
    say("part 1/1")
    time.sleep(float(sys.argv[2]))
    say("part 2/2")
print("rich.progress" in sys.modules)
"""


@pytest.mark.parametrize(("after", "working", "drawn"), [("5", "0", False), ("0", "0.5", True)])
def test_a_terminals_spinner_appears_only_once_the_command_has_worked_a_while(
    after: str, working: str, drawn: bool
):
    """A short command (a small history's `verify`) never loads rich's progress display; a
    longer one has it drawn by a timer, with what its tasks last said."""
    done = subprocess.run(
        [sys.executable, "-c", SPINNER_PROBE, after, working],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == str(drawn)
