"""How long `kafkaspec` takes to start: each command's `--help` and `verify` of a small register
history, side by side with `python -c pass` (the interpreter alone) in the same run.

Usage: python -m bench.startup [--runs N] [--history FILE] [--bytecode-cache DIR]

Every command is run `--runs` times as a subprocess, the commands interleaved (so a change in the
machine's load touches them all alike); the median and the least wall-clock seconds and the median
CPU seconds (user + system of the child, `RUSAGE_CHILDREN`) are printed per command, with the
load average at the start and the end. Issue 11's target: `kafkaspec --help` and `verify` of a
small file within 0.2 s on an idle core. Nothing is cached between runs except what the system
caches (Python's bytecode files, the page cache): a first run after an edit pays for compiling.

Bytecode: with `PYTHONDONTWRITEBYTECODE` set (as on the machine these figures were first taken
on) every run compiles kafkaspec's modules again, about 11,000 lines for `verify`; an installed
package has them compiled once (pip byte-compiles on install). `--bytecode-cache DIR` has the
runs keep their bytecode in DIR (`PYTHONPYCACHEPREFIX`, the variable unset), as an installed
tool runs; the first header line says which.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HISTORY = Path(__file__).resolve().parents[2] / "shared" / "histories" / "porcupine" / "test_data"
SMALL_HISTORY = HISTORY / "jepsen" / "etcd_090.log"
"""A 6.7 KB etcd register log of Porcupine's: a small history, one key (exit 1: not linearizable)."""
TARGET_SECONDS = 0.2


def commands(history: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of what is timed: the interpreter alone, then kafkaspec's commands."""
    program = str(Path(sys.executable).with_name("kafkaspec"))
    python = sys.executable
    return [
        ("python -c pass", [python, "-c", "pass"]),
        ("kafkaspec --help", [program, "--help"]),
        ("kafkaspec verify --help", [program, "verify", "--help"]),
        ("kafkaspec check --help", [program, "check", "--help"]),
        ("kafkaspec scenarios --help", [program, "scenarios", "--help"]),
        ("kafkaspec conformance --help", [program, "conformance", "--help"]),
        ("kafkaspec docs --help", [program, "docs", "--help"]),
        (f"kafkaspec verify {history.name}", [program, "verify", str(history)]),
    ]


def timed(argv: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `argv`, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="runs per command; medians are printed")
    parser.add_argument("--history", type=Path, default=SMALL_HISTORY, help="the small history to verify")
    parser.add_argument(
        "--bytecode-cache", type=Path, default=None, help="keep the runs' bytecode here (PYTHONPYCACHEPREFIX)"
    )
    arguments = parser.parse_args()
    chosen = commands(arguments.history)
    environment = dict(os.environ)
    if arguments.bytecode_cache is not None:
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        environment["PYTHONPYCACHEPREFIX"] = str(arguments.bytecode_cache.resolve())
    compiled = "every run compiles" if environment.get("PYTHONDONTWRITEBYTECODE") else "bytecode kept"
    load_before = os.getloadavg()
    for _, argv in chosen:  # one warm-up run each: bytecode compiled, files in the page cache
        timed(argv, environment)
    walls: dict[str, list[float]] = {label: [] for label, _ in chosen}
    cpus: dict[str, list[float]] = {label: [] for label, _ in chosen}
    for _ in range(arguments.runs):
        for label, argv in chosen:
            wall, cpu = timed(argv, environment)
            walls[label].append(wall)
            cpus[label].append(cpu)
    load_after = os.getloadavg()
    print(
        f"{arguments.runs} runs each, interleaved; load average {load_before[0]:.2f} at the start, "
        f"{load_after[0]:.2f} at the end, {os.cpu_count()} cores; {compiled}"
    )
    print(f"{'command':40} {'median s':>9} {'least s':>8} {'CPU s':>7} {'minus python':>13}")
    interpreter = statistics.median(walls[chosen[0][0]])
    for label, _ in chosen:
        median = statistics.median(walls[label])
        mark = "" if label == chosen[0][0] else ("  ok" if median <= TARGET_SECONDS else "  over 0.2 s")
        print(
            f"{label:40} {median:>9.3f} {min(walls[label]):>8.3f} {statistics.median(cpus[label]):>7.3f} "
            f"{median - interpreter:>13.3f}{mark}"
        )


if __name__ == "__main__":
    main()
