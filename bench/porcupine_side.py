"""Porcupine measured beside kafkaspec, in the same run: its own Go benchmarks over its own test
data, one per log (``BenchmarkEtcdJepsenNNN`` for ``test_data/jepsen/etcd_NNN.log``,
``BenchmarkKv{1Client,10Clients,50Clients}{Ok,Bad}`` for ``test_data/kv/cXX-{ok,bad}.txt``).

Each benchmark parses its log once, then times ``CheckEvents`` alone (``b.ResetTimer``), so its
``ns/op`` is Porcupine's check of that file from typed events: the window `bench.linearizability`
times for kafkaspec. Run with ``GOMAXPROCS=2`` (Porcupine checks a file's partitions in
goroutines) and Go's own default ``-benchtime=1s`` (as many checks per file as fit in a second,
warmed up: 0.162 ms median here, against 0.211 ms at ``-benchtime=10x``), a whole run about
three minutes.

Needs Go and Porcupine's source: ``--porcupine-src DIR`` (a checkout), or else a bare clone at
``PORCUPINE_MIRROR`` is exported to a temporary directory. Without either, `measure` returns
None and the caller prints the figures recorded on this machine earlier, saying so.

Usage alone: python -m bench.porcupine_side [--porcupine-src DIR] [--benchtime 1s]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PORCUPINE_MIRROR = Path("/work/.mirror/anishathalye+porcupine/repo")
"""Where this machine keeps a bare clone of github.com/anishathalye/porcupine."""

_KV_BENCHMARKS = {
    "c01-ok": "Kv1ClientOk",
    "c01-bad": "Kv1ClientBad",
    "c10-ok": "Kv10ClientsOk",
    "c10-bad": "Kv10ClientsBad",
    "c50-ok": "Kv50ClientsOk",
    "c50-bad": "Kv50ClientsBad",
}
_RESULT = re.compile(r"^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op")


@dataclass(frozen=True)
class PorcupineRun:
    """Porcupine's check time per log (seconds, by file name) and where they came from."""

    seconds: dict[str, float]
    go_version: str
    revision: str
    benchtime: str  # Go's -benchtime: a duration per benchmark, or Nx checks


def benchmark_name(file_name: str) -> str | None:
    """The Porcupine benchmark that checks `file_name` (``etcd_002.log``, ``c50-bad.txt``)."""
    stem = Path(file_name).stem
    if stem.startswith("etcd_"):
        return f"EtcdJepsen{stem[5:]}"
    return _KV_BENCHMARKS.get(stem)


@contextmanager
def porcupine_source(given: Path | None) -> Iterator[tuple[Path, str] | None]:
    """A directory holding Porcupine's source and test data, and its revision; None when
    there is no Go or no source."""
    if shutil.which("go") is None:
        yield None
        return
    if given is not None:
        revision = _git(["-C", str(given), "rev-parse", "--short", "HEAD"]) or "unknown revision"
        yield given, revision
        return
    if not PORCUPINE_MIRROR.is_dir():
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="porcupine-") as scratch:
        archive = subprocess.run(
            ["git", "-C", str(PORCUPINE_MIRROR), "archive", "HEAD"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", scratch], input=archive, check=True)
        yield Path(scratch), _git(["-C", str(PORCUPINE_MIRROR), "rev-parse", "--short", "HEAD"])


def _git(arguments: list[str]) -> str:
    return _command(["git", *arguments])


def _command(arguments: list[str]) -> str:
    return subprocess.run(arguments, capture_output=True, text=True, check=False).stdout.strip()


def measure(file_names: list[str], benchtime: str = "1s", source: Path | None = None) -> PorcupineRun | None:
    """Run Porcupine's benchmarks for `file_names` (Go's `-benchtime` each) and return the mean
    check time per file; None when Go or Porcupine's source is missing."""
    wanted = {name: benchmark_name(name) for name in file_names}
    pattern = "^Benchmark(" + "|".join(sorted({b for b in wanted.values() if b})) + ")$"
    with porcupine_source(source) as found:
        if found is None:
            return None
        directory, revision = found
        environment = {**os.environ, "GOMAXPROCS": "2", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
        done = subprocess.run(
            ["go", "test", "-run", "^$", "-bench", pattern, f"-benchtime={benchtime}", "-count=1"],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
            env=environment,
        )
        if done.returncode != 0:
            raise RuntimeError(f"Porcupine's benchmarks failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        version = _command(["go", "version"])
    by_benchmark: dict[str, float] = {}
    for line in done.stdout.splitlines():
        match = _RESULT.match(line)
        if match:
            by_benchmark[match.group(1)] = float(match.group(2)) / 1e9
    seconds = {name: by_benchmark[b] for name, b in wanted.items() if b is not None and b in by_benchmark}
    return PorcupineRun(seconds, version, revision, benchtime)


def main() -> None:
    from bench.linearizability import manifest_rows

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--porcupine-src", type=Path, default=None)
    parser.add_argument("--benchtime", default="1s", help="Go's -benchtime: 1s (default), 10x, ...")
    arguments = parser.parse_args()
    names = [Path(row["file"]).name for row in manifest_rows()]
    run = measure(names, arguments.benchtime, arguments.porcupine_src)
    if run is None:
        print("Porcupine not measured: needs Go and Porcupine's source (--porcupine-src DIR)")
        return
    values = sorted(run.seconds.values())
    median_ms = statistics.median(values) * 1e3
    print(f"Porcupine {run.revision}, {run.go_version}, GOMAXPROCS=2, -benchtime={run.benchtime} per file")
    print(f"  {len(values)} files: checks in all {sum(values):.3f} s, median {median_ms:.3f} ms")


if __name__ == "__main__":
    main()
