"""kafkaspec against Porcupine on Porcupine's own test data: the 102 non-empty etcd logs and the
6 kv logs of its ``test_data`` (a copy beside this repository, with a manifest of the verdicts).

Usage: python -m bench.linearizability [--repeat N] [--workers N]

Two measurements, as the targets are stated:

1. Per file, in this process: the *check* (what Porcupine's ``CheckEvents`` does with events
   already parsed: split the calls into parts and decide each part), the median of `--repeat`
   runs, one process, no workers (`spark_checks.parallel` is not involved: every file's parts
   are checked in order here). The window starts from the calls in the model's form
   (`checking.model_calls`: each call's input, output and outcome as the model's ``prepare``
   makes them, in invocation order), as Porcupine's parsers hand ``CheckEvents`` typed
   ``etcdInput``/``etcdOutput`` and ``kvInput``/``kvOutput`` values in history order; it holds
   `checking.split_model_calls` and `checking.check_part` of every part, verdicts and
   evidence included. `kafkaspec verify` prepares each part's calls inside its check, so the
   *verify* time beside it holds everything from the file to the verdicts: reading,
   pairing, preparing and checking. Their median and total, this process's time and peak
   memory (``ru_maxrss``).
2. The whole set in ONE ``kafkaspec verify --fail-fast`` process over the 108 files (a
   subprocess, timed from its start to its exit, Python's start-up included), with its peak
   memory: the largest process (``ru_maxrss`` of the children) and the sum over the process
   and its workers, sampled every 10 ms.

3. Porcupine in the same run (`bench.porcupine_side`: its own Go benchmarks, one per log, the
   check from typed events alone, GOMAXPROCS=2), when Go and Porcupine's source are here
   (`--porcupine-src DIR`, else the bare clone `bench.porcupine_side.PORCUPINE_MIRROR`): the
   targets' ratios are taken against it, so both sides see the same machine and load. Without
   Go, the figures recorded here earlier (Porcupine 55508eb, Go 1.19.8, GOMAXPROCS=2, an idle
   machine) stand in, and the output says so.

Nothing is cached between runs: every repeat reads the file.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import porcupine_side
from spark_checks import readers
from spark_checks.checking import check_part, model_calls, split_model_calls
from spark_checks.engine import VerifyOptions, _plan
from spark_checks.history import CheckResult, pair_calls
from spec import _compiled

HISTORIES = Path(__file__).resolve().parents[2] / "shared" / "histories" / "porcupine"
EXPECTED = {"linearizable": "valid", "not-linearizable": "invalid"}

PORCUPINE_SECONDS_ALL = 0.78
"""Porcupine's checks of all 108 files, in seconds (measured on this machine: see the docstring)."""
PORCUPINE_MEDIAN_MS = 0.066
"""Porcupine's median check per file, in milliseconds."""
PORCUPINE_PEAK_MB = 58.0
"""Porcupine's peak memory over the set, in MB."""
PEAK_TARGET_MB = 1024.0


def manifest_rows() -> list[dict[str, str]]:
    """The manifest's rows: the non-empty logs with a known verdict."""
    manifest = HISTORIES / "MANIFEST.tsv"
    lines = [line for line in manifest.read_text().splitlines() if line and not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter="\t"))
    return [
        row
        for row in rows
        if row["expected_verdict"] in EXPECTED and (HISTORIES / row["file"]).stat().st_size
    ]


def check_seconds(path: Path) -> tuple[float, float, str, float]:
    """(the check's seconds, the whole verification's seconds, the verdict, the check's CPU
    seconds) of one run."""
    started = time.perf_counter()
    info, operations = readers.open_history(path, "auto")
    operations_list = list(operations)
    plan = _plan(VerifyOptions(engine="local"), info, operations_list[:2000])
    calls = model_calls(plan, pair_calls(iter(operations_list), str(path)))
    checking, cpu = time.perf_counter(), time.process_time()
    parts = sorted(split_model_calls(plan, calls).items())
    results: list[CheckResult] = [
        check_part(plan, key, part, parts_left=len(parts) - number)
        for number, (key, part) in enumerate(parts)
    ]
    done, cpu_done = time.perf_counter(), time.process_time()
    verdicts = {result.verdict.value for result in results}
    verdict = "invalid" if "invalid" in verdicts else "unknown" if "unknown" in verdicts else "valid"
    return done - checking, done - started, verdict, cpu_done - cpu


def peak_rss_mb(pid: int, stop: threading.Event, peak: list[float]) -> None:
    """Sample the resident memory of `pid` and its descendants until `stop`: the greatest sum."""
    page = os.sysconf("SC_PAGE_SIZE")
    while not stop.wait(0.01):
        total = 0
        pending = [pid]
        while pending:
            current = pending.pop()
            try:
                total += int(Path(f"/proc/{current}/statm").read_text().split()[1]) * page
                children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
            except (OSError, ValueError, IndexError):
                continue
            pending.extend(int(child) for child in children)
        peak[0] = max(peak[0], total / 1e6)


def whole_set(files: list[Path], workers: int | None) -> tuple[float, float, float, float, str, int]:
    """One `kafkaspec verify --fail-fast` over every file: (seconds, CPU seconds, largest
    process MB, sum of the processes MB, its summary line, its exit code)."""
    program = Path(sys.executable).with_name("kafkaspec")
    command = [str(program), "verify", "--fail-fast", *(str(file) for file in files)]
    if workers is not None:
        command += ["--workers", str(workers)]
    stop, peak = threading.Event(), [0.0]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = threading.Thread(target=peak_rss_mb, args=(process.pid, stop, peak), daemon=True)
    sampler.start()
    out, _ = process.communicate()
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    return (
        seconds,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        peak[0],
        summary,
        process.returncode,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per file; the median is kept")
    parser.add_argument("--workers", type=int, default=None, help="for the one-process run [default: cores]")
    parser.add_argument("--porcupine-src", type=Path, default=None, help="a checkout of Porcupine's source")
    parser.add_argument("--porcupine-benchtime", default="1s", help="Go's -benchtime for Porcupine's run")
    arguments = parser.parse_args()
    process_started = time.perf_counter()
    rows = manifest_rows()
    print(f"{'history':22} {'calls':>6} {'verdict':>8} {'expected':>9} {'check ms':>9} {'verify ms':>10}")
    checks: list[float] = []
    verifies: list[float] = []
    cpu: list[float] = []
    mismatches = 0
    for row in rows:
        path = HISTORIES / row["file"]
        runs = [check_seconds(path) for _ in range(arguments.repeat)]
        check = statistics.median(run[0] for run in runs)
        whole = statistics.median(run[1] for run in runs)
        verdict = runs[0][2]
        expected = EXPECTED[row["expected_verdict"]]
        mismatches += verdict != expected
        checks.append(check)
        cpu.append(statistics.median(run[3] for run in runs))
        verifies.append(whole)
        print(
            f"{Path(row['file']).name:22} {row['ops_count']:>6} {verdict:>8} {expected:>9} "
            f"{check * 1000:>9.3f} {whole * 1000:>10.3f}"
        )
    median_ms = statistics.median(checks) * 1000
    in_process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print()
    print(
        f"{len(rows)} files ({mismatches} verdicts differ from the manifest), median of {arguments.repeat} "
        f"runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start"
    )
    # Compiled with the spec where built (`spec._compiled.ALSO_COMPILED`); KAFKASPEC_NATIVE=0: the source.
    print(f"linearizability search: {_compiled.describe()}")
    print(
        f"kafkaspec, one process, no workers: median check {median_ms:.3f} ms per file, checks in all "
        f"{sum(checks):.3f} s (CPU: median {statistics.median(cpu) * 1000:.3f} ms, in all {sum(cpu):.3f} s); "
        f"median verify (read, pair, prepare, check) {statistics.median(verifies) * 1000:.3f} ms, "
        f"in all {sum(verifies):.3f} s; this process {time.perf_counter() - process_started:.2f} s, "
        f"peak {in_process_peak:.0f} MB"
    )
    files = [HISTORIES / row["file"] for row in rows]
    seconds, cpu_seconds, largest, summed, summary, code = whole_set(files, arguments.workers)
    print(
        f"kafkaspec verify --fail-fast, the {len(files)} files in one process (start-up included): "
        f"{seconds:.3f} s ({cpu_seconds:.3f} CPU-s), exit {code}, peak {largest:.0f} MB (largest process), "
        f"{summed:.0f} MB (all processes)"
    )
    print(f"  its summary: {summary}")
    porcupine = porcupine_side.measure(
        [path.name for path in files], arguments.porcupine_benchtime, arguments.porcupine_src
    )
    if porcupine is not None and len(porcupine.seconds) == len(files):
        porcupine_all = sum(porcupine.seconds.values())
        porcupine_median_ms = statistics.median(porcupine.seconds.values()) * 1000
        print(
            f"Porcupine {porcupine.revision} ({porcupine.go_version}, GOMAXPROCS=2, its own benchmarks, "
            f"-benchtime={porcupine.benchtime} per file), measured in this run (load average "
            f"{os.getloadavg()[0]:.1f}): checks of all {len(files)} files {porcupine_all:.3f} s, median "
            f"{porcupine_median_ms:.3f} ms per file"
        )
    else:
        porcupine_all, porcupine_median_ms = PORCUPINE_SECONDS_ALL, PORCUPINE_MEDIAN_MS
        print(
            f"Porcupine not measured in this run (needs Go and its source: --porcupine-src); recorded on "
            f"this machine before (Go 1.19.8, GOMAXPROCS=2): checks of all {len(files)} files "
            f"{PORCUPINE_SECONDS_ALL} s, median {PORCUPINE_MEDIAN_MS} ms per file, "
            f"peak {PORCUPINE_PEAK_MB:.0f} MB"
        )
    print("targets:")
    _target("whole set in one process < Porcupine's checks", seconds, porcupine_all, "s", 1.0)
    _target("median check per file <= 1.5x Porcupine's", median_ms, porcupine_median_ms, "ms", 1.5)
    _target("peak memory (all processes) <= 1 GB", summed, PEAK_TARGET_MB, "MB", 1.0)


def _target(what: str, ours: float, theirs: float, unit: str, allowed: float) -> None:
    ratio = ours / theirs
    met = "met" if ratio <= allowed else "NOT met"
    print(f"  {what}: {ours:.3f} {unit} against {theirs:.3f} {unit}: {ratio:.2f}x ({met})")


if __name__ == "__main__":
    main()
