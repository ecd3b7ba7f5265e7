"""Start-up cost of the command line: a command imports only what it needs.

pyarrow, numpy, pandas and pyspark take from ~0.1 s to over a second to import; loading the CLI
(`kafkaspec --help`) and verifying a small JSON Lines or EDN history must not pay for them, nor
for every state machine (`spec.scenarios`). Structural tests (which modules are in
`sys.modules`), not timing tests: they hold on a loaded machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
