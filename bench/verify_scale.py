"""`kafkaspec verify` at scale, side by side in one run: every format on Spark, scaling from
`local[1]` to `local[2]`, Spark's own JSON reader as the floor, memory as histories grow.

Usage: python -m bench.verify_scale [--sizes 100000,1000000,10000000] [--formats jsonl,edn,parquet]
                                    [--shapes bench,jepsen] [--jepsen-max 1000000] [--keys N]
                                    [--scaling | --no-scaling] [--floor-runs 2] [--local-max 1000000]
                                    [--folder DIR] [--master URL] [--timeline] [--repeat 1]
                                    [--range-bytes 16777216] [--conf KEY=VALUE ...]

What it measures, for each history shape, size (operations: invocations + completions) and
format, in one SparkSession:

* `spark verify`: `verify_history(..., VerifyOptions(engine="spark"))`, the whole Spark engine
  (reading, pairing, splitting, checking, gathering), wall seconds and the CPU seconds of every
  process of the job (this driver, the JVM, Spark's Python workers, printed per kind of
  process too), sampled while the job runs (`sampled_cpu`: Spark ends idle Python workers,
  whose time no parent receives), which other jobs on a shared machine inflate much less than
  the wall-clock time;
* memory, as peak resident set sizes (Linux `VmHWM`, reset before each verification through
  `/proc/PID/clear_refs`, so nothing is sampled or missed): the driver, i.e. this Python process
  that runs `verify_history` (what must stay flat as the history grows: it must never hold the
  history), and the JVM beside it, which in local mode is Spark's driver and its executors in one
  process (its heap is bounded by Spark's settings, not by the history). Spark's Python workers
  are not counted here (they are the executors' memory, per task);
* `floor`: Spark's own JSON reader with the history's schema (`LINE_SCHEMA`) on the same JSON
  Lines file, counting a parsed column and summing the micro-operations' count, so it parses
  every line: the least any Spark job that looks inside the lines pays (the fastest of
  `--floor-runs`), and the ratio `spark verify / floor` (issue target: <= 4);
* `local ops/s`: the local engine's operations per second (sizes up to `--local-max`);
* scaling (`--scaling`, the default): the largest JSON Lines history of the bench's shape
  verified again on `local[1]` and on `local[2]` (a session and a JVM each), and the speed-up (target >= 1.8),
  with the cores each kept busy (CPU seconds over wall seconds) and the most `local[2]` could
  gain on 2 cores with its own CPU seconds (2 x local[1]'s wall over local[2]'s CPU: local[1]
  already runs the JVM's compilers, collector and other threads beside its one task);
* the job's shape in time (`--timeline`): each verification's Spark stages from Spark's own
  event log (`spark.eventLog.enabled`, written to a temporary folder): when each ran, its
  tasks, their summed and longest time, the JVM CPU seconds of its tasks' threads (`Executor
  CPU Time`: reading, Arrow conversion, shuffles; not the Python workers'; and apart, `Executor
  Deserialize CPU Time`, each task's deserializing of its closure and plan), the bytes it
  shuffled, and how many tasks ran at each moment (`busy`: a digit per twentieth of the
  run), so an idle core, a straggler or a serial tail shows (stage 2's first task is the
  whole-history part, one task whatever the size);
* the JVM's CPU seconds by kind of thread (`jvm_cpu_by_thread`: Spark's tasks, each JIT
  compiler, the collector, Py4J's calls, threads that ended), after the session's start and a
  warm-up verification (what they cost is printed first); `--repeat N` verifies each history N
  times in the session, so the JVM's compilation, mostly paid in the first run, shows apart from
  the steady state; each verification's clock times are printed with it, to cut a Java Flight
  Recorder recording (`--conf spark.driver.extraJavaOptions=... -XX:StartFlightRecording=...`)
  to one verification;
* per-task costs (`--range-bytes N`): the engine's splits of N bytes instead of `RANGE_BYTES`, so
  a small history makes as many tasks as a large one (10^5 operations in 200,000-byte splits:
  385 tasks a verification, about 10^7's 490).

History shapes. `bench`: the generator's defaults over 1,000 keys (polls of a few records).
`jepsen`: shaped like Jepsen's Kafka workload over 64 keys, 20 processes (10 producers, 10
consumers), polls of up to 500 records per key, and Jepsen's final polls that drain every key
from offset 0 (the last lines hold the whole topic: megabytes each; 10^6 operations make
~400 MB of JSON Lines). Jepsen-shaped sizes above `--jepsen-max` are skipped (10^7 would be
~4 GB per format). Histories are generated once into `--folder` and reused: JSON Lines first,
then the same operations as Jepsen EDN (one op map per line, as Jepsen writes `history.edn`) and
as Parquet. Generating the 10^7-operation JSON Lines history takes about 5 minutes; EDN and
Parquet copies as long again.

The issue's targets (2 cores): 10^7 operations in < 60 s (JSON Lines), < 90 s (EDN), < 45 s
(Parquet); local[2] >= 1.8x local[1]; <= 4x the floor; driver memory flat from 10^5 to 10^7.
The run prints the machine's load average at its start and its end: on a shared machine the
wall times are only as good as the load allows, the CPU seconds much better.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from spark_checks.engine import RANGE_BYTES, VerifyOptions, verify_history
from spark_checks.kafka_histories import generate_history
from spark_checks.readers import open_history, write_edn, write_jsonl, write_parquet
from spark_checks.spark_session import spark_session, stop_with_its_jvm
from spec import _compiled

T = TypeVar("T")

FORMATS = ("jsonl", "edn", "parquet")
SHAPES = ("bench", "jepsen")
EXTENSIONS = {"jsonl": ".jsonl", "edn": ".edn", "parquet": ".parquet"}

LINE_SCHEMA = "index long, time long, process string, type string, f string, value array<array<string>>"
"""A Kafka history line for Spark's JSON reader: a micro-operation's mixed elements (a name,
a key, a value or a map of polled pairs) are kept as their JSON text."""

JEPSEN_SHAPE: dict[str, Any] = {
    "producers": 10,
    "consumers": 10,
    "max_batch": 500,
    "final_polls": "from-start",
    "final_batch": None,
}
"""`HistoryGenerator` options for Jepsen-shaped histories (`jepsen.tests.kafka`'s workload)."""
DEFAULT_KEYS = {"bench": 1000, "jepsen": 64}


# ---------------------------------------------------------------------------------------
# What is measured
# ---------------------------------------------------------------------------------------


def tree_cpu_seconds() -> float:
    """CPU seconds used so far by this process and its descendants (the JVM, Spark's Python
    workers; those already ended and reaped count through their parents)."""
    return sum(cpu_by_kind().values())


def cpu_by_kind() -> dict[str, float]:
    """`tree_cpu_seconds` split by kind of process: `driver` (this one), `jvm` (Spark's driver
    and, in local mode, its executors), `python` (Spark's Python workers and anything else
    below); what ended and was reaped counts in `reaped`."""
    kinds = {"driver": 0.0, "jvm": 0.0, "python": 0.0, "reaped": 0.0}
    for (kind, _pid), seconds in process_cpu().items():
        kinds[kind] += seconds
    return kinds


def process_cpu() -> dict[tuple[str, int], float]:
    """CPU seconds so far of each process of the tree, by (kind, pid); ("reaped", pid): what
    the process's ended children used."""
    tick = os.sysconf("SC_CLK_TCK")
    jvm = jvm_pid()
    seconds: dict[tuple[str, int], float] = {}
    for pid in descendants(os.getpid()) | {os.getpid()}:
        fields = _stat_fields(pid)
        if fields is not None:
            kind = "driver" if pid == os.getpid() else "jvm" if pid == jvm else "python"
            seconds[(kind, pid)] = (int(fields[11]) + int(fields[12])) / tick  # utime stime
            seconds[("reaped", pid)] = (int(fields[13]) + int(fields[14])) / tick  # cutime cstime
    return seconds


SAMPLE_SECONDS = 0.5


def sampled_cpu(action: Callable[[], T]) -> tuple[T, dict[str, float], dict[str, float]]:
    """`action()`, the CPU seconds its process tree used meanwhile, by kind, and the JVM's by
    kind of thread (`jvm_cpu_by_thread`), sampled every `SAMPLE_SECONDS`: Spark ends a Python
    worker idle for a minute (one whose bucket of parts was done while another's went on), and
    pyspark's daemon ignores SIGCHLD, so an ended worker's time reaches no parent; each process
    (and each JVM thread) keeps its last sample (a worker ended between two samples loses at
    most `SAMPLE_SECONDS`; a JVM thread's loss is counted, see `jvm_cpu_by_thread`)."""
    import threading

    jvm = jvm_pid()
    before, threads_before = process_cpu(), jvm_threads(jvm)
    last, threads_last = dict(before), dict(threads_before)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_SECONDS):
            last.update(process_cpu())
            threads_last.update(jvm_threads(jvm))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        value = action()
    finally:
        done.set()
        sampler.join()
    last.update(process_cpu())
    threads_last.update(jvm_threads(jvm))
    kinds = {"driver": 0.0, "jvm": 0.0, "python": 0.0, "reaped": 0.0}
    for (kind, pid), seconds in last.items():
        kinds[kind] += seconds - before.get((kind, pid), 0.0)
    return value, kinds, jvm_cpu_by_thread(threads_before, threads_last, kinds["jvm"])


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (None if the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def descendants(root: int) -> set[int]:
    """The processes below `root` (children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[1])
    tree: set[int] = set()
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if (parent == root or parent in tree) and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def jvm_pid() -> int | None:
    """The JVM this driver started (local mode: Spark's driver and executors), if any."""
    for pid in sorted(descendants(os.getpid())):
        try:
            with open(f"/proc/{pid}/comm", encoding="ascii") as comm:
                if comm.read().strip() == "java":
                    return pid
        except OSError:
            continue
    return None


JVM_THREAD_KINDS = (
    ("Executor task", "tasks"),
    ("C1 Compiler", "JIT C1"),
    ("C2 Compiler", "JIT C2"),
    ("GC Thread", "GC"),
    ("G1 ", "GC"),
    ("VM Thread", "GC"),
    ("Thread-", "driver calls"),
)
"""The JVM's threads by name (Linux keeps 15 characters): Spark's task threads, the JIT
compilers, the garbage collector's (G1's concurrent ones, ParallelGC's, the VM thread that runs
its pauses), Py4J's connection threads (the driver's calls: planning, collecting); the rest is
`other` (shuffle, scheduler, listeners, heartbeats, the threads feeding Python workers)."""

ENDED_THREADS = "ended threads"
"""The JVM's CPU seconds that no live thread's sample holds: what threads used after their last
sample before they ended. HotSpot starts and ends JIT compiler threads as its queues grow and
shrink (`UseDynamicNumberOfCompilerThreads`), so a compiler's time can land here."""


def jvm_threads(pid: int | None) -> dict[int, tuple[str, float]]:
    """The JVM's live threads: CPU seconds so far and kind (`JVM_THREAD_KINDS`), by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    threads: dict[int, tuple[str, float]] = {}
    try:
        ids = os.listdir(f"/proc/{pid}/task") if pid is not None else []
    except OSError:
        return threads
    for thread in ids:
        try:
            with open(f"/proc/{pid}/task/{thread}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        kind = next((kind for prefix, kind in JVM_THREAD_KINDS if name.startswith(prefix)), "other")
        threads[int(thread)] = (kind, (int(fields[11]) + int(fields[12])) / tick)
    return threads


def jvm_cpu_by_thread(
    before: dict[int, tuple[str, float]], last: dict[int, tuple[str, float]], jvm_seconds: float
) -> dict[str, float]:
    """The JVM's CPU seconds between two samplings by kind of thread: each thread's last sample
    less its first (a thread started meanwhile from 0; one that ended keeps its last sample,
    never a negative share), and `ENDED_THREADS`, the JVM's own count (`jvm_seconds`, which
    includes ended threads) less the threads' sum, when that is a tick or more."""
    kinds: dict[str, float] = {}
    for thread, (kind, seconds) in last.items():
        kinds[kind] = kinds.get(kind, 0.0) + seconds - before.get(thread, (kind, 0.0))[1]
    rest = jvm_seconds - sum(kinds.values())
    if rest >= 1 / os.sysconf("SC_CLK_TCK"):
        kinds[ENDED_THREADS] = rest
    return kinds


def reset_peak(pid: int) -> None:
    """Reset the process's peak resident set size (`VmHWM`) to its current size (Linux: 5 to
    /proc/PID/clear_refs)."""
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")


def peak_bytes(pid: int) -> int:
    """The process's peak resident set size since its last `reset_peak` (`VmHWM`)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass(frozen=True)
class Measured:
    """One verification: wall and CPU seconds, peak memory, and what it answered."""

    wall: float
    cpu: float
    driver_peak: int  # bytes, this Python process
    jvm_peak: int  # bytes, the JVM (0: none, e.g. the local engine)
    verdict: str
    operations: int
    cpu_kinds: dict[str, float]  # CPU seconds by kind of process (`cpu_by_kind`)
    jvm_threads: dict[str, float]  # the JVM's CPU seconds by kind of thread (`jvm_cpu_by_thread`)


def measure(action: Callable[[], Any]) -> Measured:
    """Run `action` (a verification) and measure it (see the module docstring)."""
    jvm = jvm_pid()
    reset_peak(os.getpid())
    if jvm is not None:
        reset_peak(jvm)
    started = time.perf_counter()
    report, kinds, threads = sampled_cpu(action)
    wall = time.perf_counter() - started
    jvm_peak = peak_bytes(jvm) if jvm is not None else 0
    return Measured(
        wall,
        sum(kinds.values()),
        peak_bytes(os.getpid()),
        jvm_peak,
        report.verdict.value,
        report.operations,
        kinds,
        threads,
    )


def fastest(runs: int, action: Callable[[], T]) -> tuple[float, T]:
    """The fastest of `runs` runs of `action`, and its value."""
    best: tuple[float, T] | None = None
    for _ in range(runs):
        started = time.perf_counter()
        value = action()
        seconds = time.perf_counter() - started
        if best is None or seconds < best[0]:
            best = (seconds, value)
    assert best is not None
    return best


def timeline_conf(folder: Path) -> dict[str, str]:
    """Spark settings that write its event log, plain JSON lines, into `folder`."""
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": folder.resolve().as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }


def spark_events(folder: Path) -> list[dict[str, Any]]:
    """The events the newest Spark session logged so far under `folder` (a file per session;
    Spark flushes it at each stage's end)."""
    logs = [path for path in folder.rglob("*") if path.is_file() and not path.name.startswith("appstatus")]
    if not logs:
        return []
    with max(logs, key=lambda path: path.stat().st_mtime).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


TIMELINE_COLUMNS = 20


def _call_site(stage_name: str) -> str:
    """`collect at /path/spark_checks/engine.py:608` -> `collect at engine.py:608`."""
    action, _, where = stage_name.partition(" at ")
    return f"{action} at {os.path.basename(where)}" if where else action


def stage_timeline(events: list[dict[str, Any]], started: float, ended: float) -> list[str]:
    """What Spark ran between `started` and `ended` (epoch seconds), a line per stage, and a
    line of how many tasks ran in each twentieth of that time (see the module docstring)."""
    begin, end = started * 1000, ended * 1000
    stages: dict[tuple[int, int], dict[str, Any]] = {}
    tasks: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for event in events:
        if event["Event"] == "SparkListenerStageCompleted":
            info = event["Stage Info"]
            if begin <= info.get("Submission Time", 0) <= end:
                stages[(info["Stage ID"], info["Stage Attempt ID"])] = info
        elif event["Event"] == "SparkListenerTaskEnd":
            tasks.setdefault((event["Stage ID"], event["Stage Attempt ID"]), []).append(event)
    lines, spans = [], []
    for key, info in sorted(stages.items(), key=lambda item: item[1]["Submission Time"]):
        ran = [
            (task["Task Info"]["Launch Time"], task["Task Info"]["Finish Time"])
            for task in tasks.get(key, [])
        ]
        spans.extend(ran)
        metrics = [task["Task Metrics"] for task in tasks.get(key, []) if task.get("Task Metrics")]
        jvm = sum(metric["Executor CPU Time"] for metric in metrics) / 1e9
        deserializing = sum(metric["Executor Deserialize CPU Time"] for metric in metrics) / 1e9
        shuffled = sum(metric["Shuffle Write Metrics"]["Shuffle Bytes Written"] for metric in metrics) / 1e6
        longest = max((finish - launch for launch, finish in ran), default=0) / 1000
        in_tasks = sum(finish - launch for launch, finish in ran) / 1000
        lines.append(
            f"    stage {info['Stage ID']:>4} {(info['Submission Time'] - begin) / 1000:6.1f}-"
            f"{(info['Completion Time'] - begin) / 1000:6.1f} s: {len(ran):>4} tasks, "
            f"{in_tasks:7.1f} s in tasks (longest {longest:.1f}), "
            f"JVM {jvm:5.1f} CPU-s (+{deserializing:.1f} deserializing), shuffled {shuffled:6.1f} MB; "
            f"{_call_site(info['Stage Name'])}"
        )
    step = (end - begin) / TIMELINE_COLUMNS
    busy = [
        sum(1 for launch, finish in spans if launch <= begin + (column + 0.5) * step < finish)
        for column in range(TIMELINE_COLUMNS)
    ]
    lines.append(
        f"    busy (tasks running, a digit per {step / 1000:.1f} s): {''.join(str(min(n, 9)) for n in busy)}"
    )
    return lines


# ---------------------------------------------------------------------------------------
# Histories
# ---------------------------------------------------------------------------------------


def history_file(folder: Path, operations: int, keys: int, shape: str, fmt: str) -> Path:
    """The generated history (made once, then reused): JSON Lines from the generator, the other
    formats from the JSON Lines file."""
    suffix = "" if shape == "bench" else f"-{shape}"
    path = folder / f"kafka-{operations}-ops-{keys}-keys{suffix}{EXTENSIONS[fmt]}"
    if path.exists():
        return path
    started = time.perf_counter()
    unfinished = path.with_name(path.name + ".partial")
    unfinished.unlink(missing_ok=True)
    if fmt == "jsonl":
        options = JEPSEN_SHAPE if shape == "jepsen" else {}
        generated = generate_history(
            operations // 2, keys, seed=operations, anomalies=["lost-write"], **options
        )
        write_jsonl(unfinished, generated)
    else:
        source = history_file(folder, operations, keys, shape, "jsonl")
        _, read = open_history(source, "jsonl")
        if fmt == "edn":
            write_edn(unfinished, read)
        else:
            write_parquet(unfinished, read)
    unfinished.rename(path)
    megabytes = path.stat().st_size / 1e6
    print(f"  made {path.name} ({megabytes:,.0f} MB) in {time.perf_counter() - started:.0f} s", flush=True)
    return path


# ---------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    shape: str
    fmt: str
    size: int
    megabytes: float
    spark: Measured
    floor: float | None  # seconds (JSON Lines only)
    local_rate: float | None  # operations/s of the local engine


def parse_and_count(spark: Any, path: Path) -> int:
    """Spark's own JSON reader with the history's schema: every line parsed (the `f` column
    counted, the micro-operations summed), nothing else."""
    parsed = spark.read.schema(LINE_SCHEMA).json(str(path))
    row = parsed.selectExpr("count(f)", "sum(size(value))").first()
    return int(row[0]) if row is not None else 0


def verify_on(spark: Any, path: Path, range_bytes: int = RANGE_BYTES) -> Measured:
    """`path` verified on Spark, in splits of `range_bytes` (the engine's `RANGE_BYTES` unless
    `--range-bytes` says otherwise: smaller splits make more tasks, so per-task costs show)."""
    options = VerifyOptions(engine="spark", spark_range_bytes=range_bytes)
    return measure(lambda: verify_history(path, options, spark))


def jvm_gc_and_jit(spark: Any) -> tuple[float, float]:
    """The JVM's garbage collectors' summed seconds so far (`GarbageCollectorMXBean`'s
    collection time: pauses and, for G1, its concurrent cycles' phases) and its JIT compilers'
    seconds (`CompilationMXBean`), asked of the JVM through Py4J."""
    management = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    collected = sum(bean.getCollectionTime() for bean in management.getGarbageCollectorMXBeans())
    return collected / 1000, management.getCompilationMXBean().getTotalCompilationTime() / 1000


def warm_up(spark: Any, folder: Path) -> None:
    """Start-up costs are not part of any measurement: the first job's, and the Python workers'
    (started, importing kafkaspec, on the first verification)."""
    spark.range(10).count()
    verify_history(history_file(folder, 10_000, 100, "bench", "jsonl"), VerifyOptions(engine="spark"), spark)


def finished_at(action: Callable[[], object]) -> float:
    """`action()`, then the clock (`time.perf_counter`) when it returned."""
    action()
    return time.perf_counter()


def engine_revision() -> str:
    """The git revision of the checked-out spark_checks (and whether it has changes), if known."""
    here = Path(__file__).resolve().parent.parent
    try:
        described = subprocess.run(
            ["git", "-C", str(here), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"
    return described.stdout.strip()


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--jepsen-max", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=None, help="default: 1000 (bench shape), 64 (jepsen)")
    parser.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--floor-runs", type=int, default=2)
    parser.add_argument("--local-max", type=int, default=1_000_000)
    parser.add_argument("--folder", type=Path, default=Path("/tmp/kafkaspec-bench"))
    parser.add_argument("--master", default=None)
    parser.add_argument("--timeline", action="store_true", help="each verification's Spark stages in time")
    parser.add_argument(
        "--repeat", type=int, default=1, help="verify each history N times in the session (the JVM warm)"
    )
    parser.add_argument(
        "--range-bytes", type=int, default=RANGE_BYTES, help="the engine's split size (per-task costs)"
    )
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")]
    formats = [fmt for fmt in arguments.formats.split(",") if fmt]
    shapes = [shape for shape in arguments.shapes.split(",") if shape]
    if not set(formats) <= set(FORMATS) or not set(shapes) <= set(SHAPES):
        parser.error(f"--formats from {FORMATS}, --shapes from {SHAPES}")
    arguments.folder.mkdir(parents=True, exist_ok=True)
    print(
        f"{os.cpu_count()} cores, {load()}; engine revision {engine_revision()}; "
        f"histories in {arguments.folder}"
    )
    print(f"stages (the driver's and Spark's Python workers'): {_compiled.describe()}")
    runs = [
        (shape, size, fmt)
        for shape in shapes
        for size in sizes
        if shape != "jepsen" or size <= arguments.jepsen_max
        for fmt in formats
        for _ in range(arguments.repeat)
    ]
    keys = {shape: arguments.keys or DEFAULT_KEYS[shape] for shape in shapes}
    files = {
        (shape, size, fmt): history_file(arguments.folder, size, keys[shape], shape, fmt)
        for shape, size, fmt in runs
    }
    wall_started, cpu_started = time.perf_counter(), tree_cpu_seconds()

    largest = max((path.stat().st_size for path in files.values()), default=0)
    events = Path(tempfile.mkdtemp(prefix="kafkaspec-events-")) if arguments.timeline else None
    conf = {
        **(timeline_conf(events) if events is not None else {}),
        **dict(setting.split("=", 1) for setting in arguments.conf),
    }
    starting = time.perf_counter()
    (spark, started), cpu, _ = sampled_cpu(
        lambda: (spark_session(arguments.master, history_bytes=largest, conf=conf), time.perf_counter())
    )
    warmed, warm, _ = sampled_cpu(partial(finished_at, partial(warm_up, spark, arguments.folder)))
    print(  # what no verification below pays: the JVM's start, the first job, the Python workers' start
        f"  Spark started in {started - starting:.1f} s ({cpu['jvm']:.1f} JVM CPU-s), warmed up in "
        f"{warmed - started:.1f} s ({warm['jvm']:.1f} JVM CPU-s, {warm['python']:.1f} Python); {load()}",
        flush=True,
    )
    rows = []
    for shape, size, fmt in runs:
        path = files[(shape, size, fmt)]
        started, (gc_before, jit_before) = time.time(), jvm_gc_and_jit(spark)
        measured = verify_on(spark, path, arguments.range_bytes)
        ended, (gc_after, jit_after) = time.time(), jvm_gc_and_jit(spark)
        floor = (
            fastest(arguments.floor_runs, partial(parse_and_count, spark, path))[0]
            if fmt == "jsonl" and arguments.floor_runs > 0
            else None
        )
        rows.append((shape, fmt, size, path, measured, floor))
        split = ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in measured.cpu_kinds.items())
        print(
            f"  {shape} {fmt} {size:,}: {measured.wall:.1f} s, {measured.cpu:.1f} CPU-s ({split}; "
            f"JVM's GC {gc_after - gc_before:.1f} s, JIT {jit_after - jit_before:.1f} s; {load()})",
            flush=True,
        )
        print(thread_line(measured, started, ended), flush=True)
        if events is not None:
            print("\n".join(stage_timeline(spark_events(events), started, ended)), flush=True)

    scaling: dict[str, Measured] = {}
    scaled = max((size for shape, size, fmt in runs if shape == "bench" and fmt == "jsonl"), default=None)
    if arguments.scaling and scaled is not None and arguments.master is None:
        stop_with_its_jvm(spark)  # the scaling runs' sessions: a JVM each, none warmed by the main run
        path = files[("bench", scaled, "jsonl")]
        for master in ("local[1]", "local[2]"):
            spark = spark_session(master, history_bytes=largest, conf=conf)  # a JVM of its own
            warm_up(spark, arguments.folder)
            started = time.time()
            scaling[master] = verify_on(spark, path, arguments.range_bytes)
            ended = time.time()
            stop_with_its_jvm(spark)
            kinds = ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in scaling[master].cpu_kinds.items())
            print(
                f"  {master} jsonl {scaled:,}: {scaling[master].wall:.1f} s, "
                f"{scaling[master].cpu:.1f} CPU-s ({kinds}; {load()})",
                flush=True,
            )
            print(thread_line(scaling[master], started, ended), flush=True)
            if events is not None:
                print("\n".join(stage_timeline(spark_events(events), started, ended)), flush=True)
    else:
        spark.stop()

    table = [
        Row(
            shape,
            fmt,
            size,
            path.stat().st_size / 1e6,
            measured,
            floor,
            _local_rate(path, size) if size <= arguments.local_max else None,
        )
        for shape, fmt, size, path, measured, floor in rows
    ]
    print()
    print_table(table)
    if scaling:
        one, two = scaling["local[1]"], scaling["local[2]"]
        print(
            f"\nscaling, {scaled:,} operations (bench shape, JSON Lines): local[1] {one.wall:.1f} s "
            f"({one.cpu:.1f} CPU-s), local[2] {two.wall:.1f} s ({two.cpu:.1f} CPU-s): "
            f"speed-up {one.wall / two.wall:.2f}x (target >= 1.8); cores busy {one.cpu / one.wall:.2f} "
            f"and {two.cpu / two.wall:.2f}, so at most {2 * one.wall / two.cpu:.2f}x on 2 cores with "
            "local[2]'s CPU seconds (local[1]'s JVM and Python worker already run side by side)"
        )
    print(
        f"\nthe whole run: {time.perf_counter() - wall_started:.0f} s, "
        f"{tree_cpu_seconds() - cpu_started:.0f} CPU-s (generation not counted); {load()}"
    )
    print(
        "targets at 10^7: JSON Lines < 60 s, EDN < 90 s, Parquet < 45 s; verify/floor <= 4; "
        "driver peak flat from 10^5 to 10^7"
    )
    if events is not None:
        shutil.rmtree(events, ignore_errors=True)


def thread_line(measured: Measured, started: float, ended: float) -> str:
    """The JVM's CPU seconds by kind of thread (`by_thread`) and when the verification ran (epoch
    seconds, printed as the local clock's HH:MM:SS.mmm, as `jfr print` prints a Java Flight
    Recorder's events: a recording taken with `--conf spark.driver.extraJavaOptions=...` can be
    cut to one verification)."""
    return f"    JVM CPU-s by thread: {by_thread(measured)} ({_clock(started)}-{_clock(ended)})"


def _clock(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch)) + f".{int(epoch % 1 * 1000):03d}"


def by_thread(measured: Measured) -> str:
    """The JVM's CPU seconds by kind of thread, the largest first."""
    spent = sorted(measured.jvm_threads.items(), key=lambda item: -item[1])
    return ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in spent)


def _local_rate(path: Path, size: int) -> float:
    started = time.perf_counter()
    verify_history(path, VerifyOptions(engine="local"))
    return size / (time.perf_counter() - started)


def print_table(rows: Iterable[Row]) -> None:
    header = (
        f"{'shape':<7}{'format':<8}{'operations':>12}{'MB':>8}{'spark verify':>14}{'CPU':>9}"
        f"{'floor':>8}{'ratio':>7}{'driver peak':>13}{'JVM peak':>10}{'local ops/s':>13}{'verdict':>9}"
    )
    print(header)
    for row in rows:
        floor = f"{row.floor:>7.1f}s{row.spark.wall / row.floor:>7.1f}" if row.floor else f"{'-':>8}{'-':>7}"
        local = f"{row.local_rate:>13,.0f}" if row.local_rate else f"{'-':>13}"
        print(
            f"{row.shape:<7}{row.fmt:<8}{row.size:>12,}{row.megabytes:>8,.0f}{row.spark.wall:>13.1f}s"
            f"{row.spark.cpu:>8.1f}s{floor}{row.spark.driver_peak / 2**20:>11.0f}MB"
            f"{row.spark.jvm_peak / 2**20:>8.0f}MB{local}{row.spark.verdict:>9}"
        )


if __name__ == "__main__":
    main()
