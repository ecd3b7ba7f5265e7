"""Starting Spark the way kafkaspec needs it: local by default, loopback only, quiet.

`spark_session(master)` returns a session bound to 127.0.0.1 with the UI and console
progress bars off and logs at ERROR (a log4j2 file written to a temporary folder, since
`setLogLevel` acts only after start-up). `master=None` means `local[2]`; any Spark master URL
(`spark://host:7077`, `local[4]`) runs the same job unchanged. The Python workers use the
interpreter running kafkaspec (`PYSPARK_PYTHON`), or they would lose this environment's
packages.

Starting the JVM is the longest silent step of a Spark verification (about 10 s here, 15-30 s
on a loaded machine), so `spark_session(..., progress=say)` says `starting Spark (local[2])`
before it starts the JVM and how long it took once the session exists: a terminal shows what
is happening from the first second (the command's spinner, `kafkaspec verify`).

Environment notes measured on this kind of machine (2 cores): a
session costs about 10 s to start; `pyspark[sql]` pulls in
pandas, and `pandas<3` avoids PySpark's FutureWarning (the engine's tasks use Arrow batches,
`mapInArrow`, not pandas).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"

LONG_JOB_BYTES = 512 * 2**20
"""From this history size on, the JVM compiles hot code fully (C2). Below it, only its quick
compiler runs (`-XX:TieredStopAtLevel=1`), since start-up dominates short jobs. Measured side
by side on 2 cores: C1 alone starts a session and a first small verification about 0.4 s
sooner, while with C2 a 10^7-operation verification took 68 s against 79 s, and Spark's own
JSON parsing of that file 8 s against 30 s. Measured again with `bench.verify_scale --repeat 3`
(10^6 JSON Lines verified three times in one session after its warm-up, the JVM's CPU seconds
by thread, 2-5 sessions each, load 5-6): Spark's task threads spend 1.9-2.2 CPU-s per 10^6
operations once C2 has compiled them, 3.2-4.0 with C1 alone, while C2 itself costs 1.2-3.5
CPU-s per 10^6 and fewer as the run goes on (C2 ~8 CPU-s at 10^7, where C1 alone would cost
the tasks ~15 more); at 10^6 a session's start, warm-up and one verification take 20.0-20.9 JVM
CPU-s with C1 alone, 31-37 with C2."""

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
# An explicit org.apache.spark level equal to root suppresses the start-up banner.
logger.spark.name = org.apache.spark
logger.spark.level = error
"""


def _log4j2_file() -> Path:
    folder = Path(tempfile.gettempdir()) / "kafkaspec-spark"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        path.write_text(_LOG4J2)
    return path


LOCAL_DRIVER_MEMORY = "4g"
"""The driver's heap in local mode, where the driver JVM also runs every task: Spark's default
(1g) ran out (`OutOfMemoryError: Java heap space`) checking a 10^7-operation Parquet history,
whose whole-history part one task holds. A cluster's driver keeps its own setting; `--conf
spark.driver.memory=...` overrides this one."""


ARROW_UNBOUNDED_BYTES = 2**31 - 1
"""`spark.sql.execution.arrow.maxBytesPerBatch`: no byte bound on the Arrow batches Spark
sends the Python tasks; `maxRecordsPerBatch` (10,000 rows) and the split (`engine.RANGE_BYTES`
of text) bound them already, below the default bound (64 MB). With a bound, Spark sizes the
batch being written after every row (`BatchedPythonArrowInput`, `ArrowWriter.sizeInBytes`):
12% of stage 1's JVM samples reading JSON Lines (Java Flight Recorder, 10^6 operations);
Int.MaxValue turns the check off."""


LOCAL_GC = "-XX:+UseParallelGC"
"""The garbage collector of a local-mode JVM, which runs every task: the parallel (throughput)
collector does its work in pauses, with no concurrent marking threads beside the tasks on two
busy cores; G1, the JVM's default, spent 0.8-2.8 CPU-s of its threads (of a JVM's 7-9) on a
10^6-operation JSON Lines verification, the parallel collector 0.3-0.8 (whole JVM: 21.0-21.8
against 22.2-23.4 CPU-s, start-up and warm-up included; load 2-3)."""

LOCAL_JIT = (
    "-XX:Tier4InvocationThreshold=20000 -XX:Tier4MinInvocationThreshold=2400"
    " -XX:Tier4CompileThreshold=60000 -XX:Tier4BackEdgeThreshold=160000"
)
"""A local-mode JVM that compiles fully (`LONG_JOB_BYTES`) hands a method to C2 only after 4x
HotSpot's default counts (5,000 calls, 600 with loops, 15,000 calls and loops, 40,000 loop
iterations): Spark's per-row code is called millions of times and still reaches C2 early, while
the many methods that are merely warm (planning, code generation, start-up) stay with C1 rather
than costing C2 time on two busy cores. Measured with `bench.verify_scale --repeat 3` (10^6
JSON Lines, C2 on, the JVM's CPU seconds over a session: its start, warm-up and three
verifications; load 5-6): 37.7-39.5 (3 sessions) against 42.2-48.2 (5 sessions) with HotSpot's
counts; C2 itself 2.2-2.6, 1.1-1.2, 0.6 CPU-s in the three verifications against 3.1-3.5,
1.6-2.1, 1.2-1.7; the task threads' CPU unchanged (1.7-1.9 in the third against 1.9-2.2); the
session's start 8.5-8.9 against 10.6-13.4 JVM CPU-s. 10x the counts saved no more (36.4, 40.8)
and left the tasks slower (2.2-3.3 CPU-s in the third verification). `-XX:CICompilerCount=2`
is what the JVM picks on 2 cores already (`-XX:+PrintFlagsFinal`)."""

LOCAL_SETTINGS = {
    "spark.shuffle.compress": "false",
    "spark.shuffle.spill.compress": "false",
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}
"""Compression that one machine pays for twice and gains nothing by: shuffle files go to a local
disk (the page cache) and are read back by the same JVM, the persisted stage 1 stays in its
heap. Measured with `LOCAL_GC` at 10^6 operations (JSON Lines, source stages, 3 runs each,
load 6-7): the JVM 6.5-6.9 CPU-s against 7.3-8.4 without both; the CALLS shuffle's tasks
0.6 against 0.6-0.8 CPU-s (33 MB compressed, 96 MB not). A cluster keeps Spark's defaults."""

# Tried in local mode and not kept (`bench.verify_scale --repeat 2`, 10^6 JSON Lines, 2-3 sessions
# each interleaved with Spark's settings, load 5-10; the JVM's CPU-s per verification):
# `spark.sql.execution.arrow.maxRecordsPerBatch=50000` 5.7-7.8 (its task threads 4.0-5.4) against
# 4.9-5.9 (3.5-3.9) at Spark's 10,000, and 4,096 rows 4.0-6.6 against 4.5-5.5 in the same rounds
# (the stages interpreted there);
# `spark.python.unix.domain.socket.enabled` (SPARK-51688) 4.5-5.8,
# `spark.sql.execution.pandas.udf.buffer.size=1048576` 4.7-5.4, both 5.0-5.7 against 4.8-5.5 in
# the same rounds: noise. Class-data sharing of Spark's classes (JDK 17's dynamic archive:
# `-XX:ArchiveClassesAtExit=F` once, then `-XX:SharedArchiveFile=F`) halves the start: 3.3 JVM
# CPU-s and 5.2-5.5 s against 6.3-6.7 and 8.0-11.5 s, the first job and a 10^4-operation
# verification 5.2-5.8 against 8.2-8.6 (load 5-6); not used yet: the archive (172 MB) must match
# the JVM and the classpath, be written by a JVM that exits normally (that run took 72 s against
# ~25 s) and be shared safely between runs (JDK 19's `-XX:+AutoCreateSharedArchive` does it all).
# Also tried and not kept, with C2 on as at 10^7 (`bench.verify_scale --repeat 3`: 10^6 JSON
# Lines, and 10^5 in `--range-bytes 200000` splits, 385 tasks a verification as 10^7's ~490; 2
# sessions each interleaved with this module's settings, load 5-12; JVM CPU-s in the three
# verifications): adaptive execution off (`spark.sql.adaptive.enabled=false`: no second job
# materializing the cached stage 1, border rows shuffled by stage 1's own tasks, 10^7's tasks
# ~490 -> ~330) 6.3/3.4/3.3 and 6.8/4.3/3.0 against 5.7/3.4/3.1 and 5.7/4.3/3.5, with 385
# tasks 9.6/6.8/5.1 and 10.1/6.7/5.2 against 10.0/6.3/4.8 and 11.1/7.3/5.6: noise. Java
# serialization kept from C2 (`-XX:CompileCommand=CompileThresholdScaling,java/io/Object*.*,100.0`:
# six of its methods, ObjectInputStream.readObject0/readSerialData/readClassDesc and
# ObjectOutputStream.writeObject0/writeClassDesc among them, 49-56 KB of code each for every
# task's closure and plan, were half of C2's compile time in a session's first 10^6
# verification, by JFR's jdk.Compilation events): C2 1.9-2.2 -> 1.1 CPU-s there, but with 385
# tasks the tasks paid it back (first verification C2 1.85/1.98 -> 1.27/1.63, tasks 2.90/3.13 ->
# 3.37/3.72; four verifications 20.7/23.0 against 20.9/23.3). Spark 4.3's Arrow cache
# (`spark.sql.cache.serializer=org.apache.spark.sql.execution.columnar.ArrowCachedBatchSerializer`,
# static): tasks 2.9 and 1.9 CPU-s in the first two verifications against 2.2-3.1 and 1.6-2.1.


class SparkStartError(RuntimeError):
    """Spark's JVM exited before its session existed: a setting it refused (`--conf`), no
    Java, too little memory. Its own message is on stderr already."""


INCUBATOR_WARNING = b"WARNING: Using incubator modules:"
"""What Java 17+ prints on its stderr at every start of a JVM given an incubator module: Spark's
launcher gives every driver `--add-modules=jdk.incubator.vector` (`JavaModuleOptions`,
SPARK-36796), and no JVM option silences the line."""


def _start_jvm(settings: Mapping[str, str], master: str) -> None:
    """Start Spark's JVM and its SparkContext as `SparkSession.builder.getOrCreate` would, but
    with the JVM's stderr (and its Python workers') a pipe that a thread copies to this
    process's stderr for the JVM's life, without `INCUBATOR_WARNING`'s line (pyspark's
    `launch_gateway(popen_kwargs=...)`, its hook for capturing the JVM's output). A JVM that
    exits at once (a setting it refuses, no Java): `SparkStartError`, after its message."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    read, write = os.pipe()
    copier = threading.Thread(target=_copy_without_warning, args=(read,), daemon=True)
    copier.start()
    conf = SparkConf().setAll(list(settings.items()))
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write})  # type: ignore[no-untyped-call]
    except Exception as error:
        if getattr(error, "getCondition", lambda: None)() != "JAVA_GATEWAY_EXITED":
            raise
        gateway = None
    finally:
        os.close(write)  # the JVM holds its own end
    if gateway is None:
        copier.join(timeout=10)  # the JVM's own message first
        raise SparkStartError(
            f"Spark did not start: its JVM exited (its message is above); check the --conf settings"
            f" and --master {master}, and that Java 17 or later runs (`java -version`)"
        )
    SparkContext(conf=conf, gateway=gateway)


def stop_with_its_jvm(spark: SparkSession) -> None:
    """Stop the session and the JVM `_start_jvm` started under it (pyspark keeps one JVM per
    process across sessions), so that the next `spark_session` starts a JVM of its own, whose
    compilers have warmed nothing: `bench.verify_scale` compares `local[1]` with `local[2]` so
    (sharing the main run's JVM favoured the later one: 1.78x and 1.97x at 10^7, 1.69x with a
    fresh JVM each). The JVM ends when its stdin closes (pyspark's `launch_gateway`)."""
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    gateway.shutdown()
    if gateway.proc is not None:
        gateway.proc.stdin.close()
        gateway.proc.wait(timeout=120)
    SparkContext._gateway = None
    SparkContext._jvm = None


def _copy_without_warning(read: int, fd: int = 2) -> None:
    """What the JVM writes to `read`, to `fd` (this process's stderr, whatever it is then):
    whole lines but the warning's, and a partial line at once unless it may still become it."""
    pending = b""
    while chunk := os.read(read, 65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        shown = b"".join(line + b"\n" for line in lines if not line.startswith(INCUBATOR_WARNING))
        if not INCUBATOR_WARNING.startswith(pending[: len(INCUBATOR_WARNING)]):
            shown, pending = shown + pending, b""
        _show(shown, fd)
    _show(pending, fd)
    os.close(read)


def _show(data: bytes, fd: int) -> None:
    view = memoryview(data)
    with suppress(OSError):  # a closed stderr: nothing to show it on
        while view:
            view = view[os.write(fd, view) :]


def driver_java_options(history_bytes: int, local: bool = False) -> str:
    """The JVM options of the driver (which runs the tasks in local mode): quiet logs, the
    compilers for jobs over `history_bytes` of histories (`LONG_JOB_BYTES`), and in local mode
    its garbage collector (`LOCAL_GC`) and, compiling fully, C2's counts (`LOCAL_JIT`). A
    `--conf spark.driver.extraJavaOptions=...` replaces them all."""
    options = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} -XX:-UsePerfData"
    if history_bytes < LONG_JOB_BYTES:
        options += " -XX:TieredStopAtLevel=1"
    elif local:
        options += f" {LOCAL_JIT}"
    if local:
        options += f" {LOCAL_GC}"
    return options


def spark_session(
    master: str | None = None,
    app_name: str = "kafkaspec-verify",
    *,
    history_bytes: int = 0,
    progress: Callable[[str], None] | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for verification jobs (see the module docstring); `history_bytes`, the
    size of the histories it will verify, picks the JVM's compilers (`LONG_JOB_BYTES`).
    `progress` hears `starting Spark (MASTER)` before the JVM starts (nothing when this process
    already has a session: it is reused) and `Spark started in S s` after. `conf` is Spark
    configuration set last, as spark-submit's `--conf` (`spark.jars.packages`,
    `spark.hadoop.fs.s3a.endpoint`, ...); on a session this process already has, only the
    settings Spark lets a running session change take effect (runtime SQL settings)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    local = (master or DEFAULT_MASTER).startswith("local")
    settings: dict[str, Any] = {
        "spark.app.name": app_name,
        "spark.master": master or DEFAULT_MASTER,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_UNBOUNDED_BYTES),
        "spark.driver.extraJavaOptions": driver_java_options(history_bytes, local),
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
    }
    if local:
        settings["spark.driver.memory"] = LOCAL_DRIVER_MEMORY
        settings.update(LOCAL_SETTINGS)
    settings.update(conf or {})
    from pyspark import SparkContext

    starting = progress is not None and SparkContext._active_spark_context is None
    started = time.perf_counter()
    if starting and progress is not None:
        progress(f"starting Spark ({master or DEFAULT_MASTER})")
    if SparkContext._gateway is None:  # no JVM yet (a stopped session's is reused)
        _start_jvm(settings, master or DEFAULT_MASTER)
    session = SparkSession.builder.config(map=settings).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if starting and progress is not None:
        progress(f"Spark started in {time.perf_counter() - started:.1f} s")
    return session
