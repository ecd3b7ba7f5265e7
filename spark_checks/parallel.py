"""Checking independent pieces of work on several cores: forked worker processes, easy pieces
first, stopping at the first invalid one on request (`--fail-fast`) and at the deadline.

What runs here
    The local engine's parts of a history (a key's calls, a topic-partition, the Kafka
    whole-history part), and `kafkaspec verify`'s files when it is given several. Parts are
    independent by P-compositionality (Herlihy & Wing's locality: a history is linearizable
    iff each object's sub-history is), so any order and any process gives the same answer;
    Porcupine's ``checker.go`` likewise checks its partitions concurrently and, by default,
    stops the others once one is illegal.

Why forked processes
    CPython's threads share one interpreter lock, so only processes use several cores. A
    worker is an `os.fork` of the caller after every import (a few milliseconds, nothing
    loaded again), started when the first piece of work is handed out and kept for the
    next history; it talks over two pipes (`Connection`). Where fork is missing or refused,
    everything runs in this process, in the same order, with the same results
    (`WorkerPool.parallel` says which).

The same answers as one process
    A piece's result depends only on its arguments (the part's calls, the plan and budget),
    never on where or when it ran, and results come back in the order the pieces were given,
    whatever order they finished in. Only the budgets see the difference: a part's share of
    the time left to the deadline is the number of rounds of parts still to run (the parts
    left divided by the workers), as one process gives it the parts left.

Order and stops
    Pieces start smallest first (by the size the caller gives: the calls of a part): the cheap
    parts decide an invalid history early, and under `fail_fast` the first invalid result stops
    the rest. A caller may have its large pieces start first (`start_order`: `verify` over many
    files does, for its large files). Without fail-fast a worker is sent its next piece while
    it still runs one (`_Run._top_up`), so it never waits for this process between pieces; the
    last pieces go to whichever worker is free first. The pieces not finished are answered by the caller's
    `stopped` (a part "not checked"), never dropped. At the deadline a worker still busy is
    killed: the operating system frees its memory at once, where a search in this process has to
    free its cache object by object (see `linearizability`'s release share). An error a piece
    raises as bad input (`HistoryError`, `ValueError`) comes back as itself; of several, the one
    of the earliest piece is raised, as one process in order would; any other exception is a bug
    and is raised at once (`WorkerError`, with the worker's traceback).
"""

from __future__ import annotations

import contextlib
import enum
import gc
import math
import os
import pickle
import select
import signal
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, TypeVar

from spark_checks import kafka_checker
from spark_checks.checking import Budget, Plan, check_part, unchecked_result
from spark_checks.history import Call, CheckResult, HistoryError, Verdict

R = TypeVar("R")

PARALLEL_MIN_CALLS = 500
"""A history with fewer calls has its parts checked in this process: handing parts to workers
costs about a millisecond per history, more than checking a small one takes."""
PARALLEL_MIN_BYTES = 50_000
"""The same threshold for the encoded parts of a JSON Lines history (about 100 bytes a call)."""

EARLY_START_BYTES = 1024 * 1024
"""A history file this large has the workers forked before it is read (`WorkerPool.start`)."""

KILL_GRACE_SECONDS = 0.2
"""A worker still busy this long after the deadline is killed. Its own search stops early
enough to free its cache before the deadline; the grace lets a result that is on its way
arrive with its evidence."""


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def fork_available() -> bool:
    """Whether worker processes can be forked here (POSIX)."""
    return hasattr(os, "fork")


@dataclass(frozen=True)
class TaskContext:
    """What a piece of work is told when it runs: `share`, the rounds of pieces still to run
    (this one included; a linearizability part's share of the time left to the deadline is
    one round), and `say`, which reports progress to the caller (from a worker, over its pipe)."""

    share: int = 1
    say: Callable[[str], None] = field(default=lambda _text: None)


@dataclass(frozen=True)
class Task(Generic[R]):
    """A piece of work: `function(shared, *arguments, context)`, where `shared` is what
    `WorkerPool.run` was given for every task (sent to each worker once: a plan); `size`
    orders the pieces (smallest first), `name` says what it is (a part's key, a file) in
    progress and error reports. `function` and `arguments` must pickle (a module-level
    function and plain data)."""

    size: int
    function: Callable[..., R]
    arguments: tuple[Any, ...]
    name: str = ""


class StopKind(enum.Enum):
    """Why a piece was not finished."""

    DEADLINE = "deadline"  # running at the deadline: its worker was killed
    NOT_STARTED = "not started"  # the deadline came before its turn
    FAIL_FAST = "fail fast"  # another piece was invalid


@dataclass(frozen=True)
class Stop:
    """A piece not finished, and why: `invalid` names the invalid piece under fail-fast."""

    kind: StopKind
    invalid: str = ""


class WorkerError(RuntimeError):
    """An unexpected error (a bug) in a worker process; its traceback is attached as a note."""

    def __init__(self, kind: str, message: str, doing: str, remote_traceback: str) -> None:
        super().__init__(f"{kind}: {message} (in a worker process, {doing})")
        self.add_note(f"Traceback in the worker:\n{remote_traceback.rstrip()}")


class Connection:
    """One end of the pipes between this process and a worker: whole messages of bytes, each
    written as its length (8 bytes, big-endian) then its bytes, over two `os.pipe`s, one each
    way. As multiprocessing's `Connection.send_bytes`/`recv_bytes` frame them, without
    importing multiprocessing (and `socket`), which cost a run with workers ~20 ms before the
    first fork."""

    def __init__(self, reading: int, writing: int) -> None:
        self.reading, self.writing = reading, writing

    def fileno(self) -> int:
        """The descriptor to wait on for a message (`_ready`)."""
        return self.reading

    def send_bytes(self, data: bytes) -> None:
        """Send one message (blocks while the pipe is full), its length and bytes in one write:
        written apart, the reader woke at the length and blocked until the bytes came (two
        more switches between the processes per message, and on a busy machine a wait for the
        writer's next turn on a core)."""
        self._write(len(data).to_bytes(8, "big") + data)

    def recv_bytes(self) -> bytes:
        """The next message; EOFError when the other end is closed."""
        return self._read(int.from_bytes(self._read(8), "big"))

    def close(self) -> None:
        """Close both descriptors (again: nothing)."""
        for descriptor in (self.reading, self.writing):
            if descriptor >= 0:
                with contextlib.suppress(OSError):
                    os.close(descriptor)
        self.reading = self.writing = -1

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.writing, view) :]

    def _read(self, size: int) -> bytes:
        chunks: list[bytes] = []
        while size:
            chunk = os.read(self.reading, min(size, _READ_BYTES))
            if not chunk:
                raise EOFError("the other end of the pipe is closed")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)


_READ_BYTES = 1024 * 1024
"""The most one read of a message asks the system for."""


def _ready(connections: Sequence[Connection], timeout: float | None) -> list[Connection]:
    """The connections with a message (or an end: EOF) to read, waiting up to `timeout`
    seconds (None: until one has)."""
    poller = select.poll()
    for connection in connections:
        poller.register(connection.reading, select.POLLIN)
    by_descriptor = {connection.reading: connection for connection in connections}
    events = poller.poll(None if timeout is None else math.ceil(timeout * 1000))
    return [by_descriptor[descriptor] for descriptor, _ in events]


@dataclass
class _Worker:
    pid: int
    connection: Connection
    task: int = -1  # the piece it runs, -1 when idle
    ahead: list[int] = field(default_factory=list)  # pieces sent after it, waiting in its pipe


def progress_text(done: int, total: int, invalid: int, unknown: int, what: str = "part") -> str:
    """The progress line's counts: `3/10 parts checked, 1 invalid, 2 unknown` (the invalid
    and unknown ones as they are found)."""
    plural = "" if total == 1 else "s"
    return f"{done}/{total} {what}{plural} checked, {invalid} invalid, {unknown} unknown"


class WorkerPool:
    """Up to `workers` forked processes, started on first use and kept until `close`. With
    one worker, or where fork is unavailable, `run` runs every piece in this process."""

    workers: int
    memory_total_bytes: int | None

    def __init__(
        self, workers: int = 1, memory_total_bytes: int | None = None, isolate: bool = False
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers
        self.memory_total_bytes = memory_total_bytes
        """When set, the memory budget of all the searches running at once: each of the
        workers' searches gets its share (`searches_budget`)."""
        self.isolate = isolate
        """Every piece runs in a worker, however small, even alone: for code that may never
        return, a user's model (`--model MODULE:CLASS`), whose step only a worker can be
        stopped in, at the deadline or when `--fail-fast` has an invalid part (as Porcupine
        cancels a blocked partition: its TestTimeoutCancelsStepContext and
        TestIllegalCancelsBlockedPartition)."""
        self._idle: list[_Worker] = []
        self._forking_failed = False

    @property
    def parallel(self) -> bool:
        """Whether pieces may run in worker processes."""
        return self.workers > 1 and fork_available() and not self._forking_failed

    @property
    def idle_workers(self) -> int:
        """The worker processes started and waiting for work."""
        return len(self._idle)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the idle workers (each leaves when its pipe closes) and reap them."""
        idle, self._idle = self._idle, []
        for worker in idle:
            worker.connection.close()
        for worker in idle:
            _reap(worker.pid)

    def run(
        self,
        tasks: Sequence[Task[R]],
        *,
        shared: Any = None,
        is_invalid: Callable[[R], bool],
        stopped: Callable[[int, Stop], R],
        fail_fast: bool = False,
        deadline: float = math.inf,
        on_done: Callable[[int, R], None] | None = None,
        on_progress: Callable[[int, str], None] | None = None,
        on_start: Callable[[int], None] | None = None,
        large_first_from: float = math.inf,
    ) -> list[R]:
        """Every task's result, in the order of `tasks`. `deadline` is a `time.time()`
        instant; `stopped(index, stop)` answers for a task not finished; `on_done(index,
        result)` hears each result as it arrives, `on_progress(index, text)` what a task says,
        `on_start(index)` each task this process runs itself just before it starts. Tasks start
        smallest first, but those of size `large_first_from` or more start before them, largest
        first (`start_order`). They run in workers when there are several, or when the pool
        isolates every piece (`isolate`)."""
        order = start_order(tasks, large_first_from)
        if self.parallel and (len(tasks) > 1 or self.isolate):
            workers = self._start(min(self.workers, len(tasks)))
            if workers:
                run = _Run(tasks, order, workers, self, is_invalid, stopped, on_done, on_progress)
                return run.go(shared, fail_fast, deadline)
        return _inline(tasks, shared, order, is_invalid, stopped, fail_fast, on_done, on_progress, on_start)

    def start(self) -> None:
        """Fork the workers now, before this process holds a large history: a worker forked
        later shares the pages the history occupied at the fork, and keeps them alive after
        this process has dropped it."""
        if self.parallel:
            started = self._start(self.workers)  # `_start` rebinds `_idle`: extend the new list
            self._idle.extend(started)

    def _start(self, count: int) -> list[_Worker]:
        """`count` idle workers (forking the missing ones); fewer if the system refuses."""
        while len(self._idle) < count:
            worker = _fork_worker()
            if worker is None:
                self._forking_failed = not self._idle
                break
            self._idle.append(worker)
        taken, self._idle = self._idle[:count], self._idle[count:]
        return taken

    def _give_back(self, worker: _Worker) -> None:
        worker.task = -1
        self._idle.append(worker)


def start_order(tasks: Sequence[Task[Any]], large_first_from: float = math.inf) -> list[int]:
    """The order tasks start in (indices of `tasks`): smallest first (ties in the given order),
    after those of size `large_first_from` or more, largest first. Smallest first decides an
    invalid history early (`fail_fast`) and shows results soon; a large task is better started
    early: started last, it would keep one worker busy alone at the end (the rule of starting
    the longest jobs first, for a set of tasks whose cost grows with their size)."""
    large = sorted(
        (index for index in range(len(tasks)) if tasks[index].size >= large_first_from),
        key=lambda index: (-tasks[index].size, index),
    )
    small = sorted(
        (index for index in range(len(tasks)) if tasks[index].size < large_first_from),
        key=lambda index: (tasks[index].size, index),
    )
    return large + small


def _inline(
    tasks: Sequence[Task[R]],
    shared: Any,
    order: list[int],
    is_invalid: Callable[[R], bool],
    stopped: Callable[[int, Stop], R],
    fail_fast: bool,
    on_done: Callable[[int, R], None] | None,
    on_progress: Callable[[int, str], None] | None,
    on_start: Callable[[int], None] | None,
) -> list[R]:
    results: dict[int, R] = {}
    errors: dict[int, Exception] = {}
    stop: Stop | None = None
    for position, index in enumerate(order):
        task = tasks[index]
        if errors and index > min(errors):  # only an earlier task's error could be raised instead
            continue
        if stop is not None:
            results[index] = stopped(index, stop)
            continue
        if on_start is not None:
            on_start(index)
        context = TaskContext(share=len(order) - position, say=_teller(on_progress, index))
        try:
            result = task.function(shared, *task.arguments, context)
        except (HistoryError, ValueError) as error:  # bad input: the earliest task's is raised
            errors[index] = error
            continue
        results[index] = result
        if on_done is not None:
            on_done(index, result)
        if fail_fast and is_invalid(result):
            stop = Stop(StopKind.FAIL_FAST, task.name)
    if errors:
        raise errors[min(errors)]
    return [results[index] for index in range(len(tasks))]


def _teller(on_progress: Callable[[int, str], None] | None, index: int) -> Callable[[str], None]:
    """What task `index` calls to report progress."""
    if on_progress is None:
        return TaskContext().say

    def say(text: str) -> None:
        on_progress(index, text)

    return say


class _Run(Generic[R]):
    """One `WorkerPool.run` over worker processes."""

    def __init__(
        self,
        tasks: Sequence[Task[R]],
        order: list[int],
        workers: list[_Worker],
        pool: WorkerPool,
        is_invalid: Callable[[R], bool],
        stopped: Callable[[int, Stop], R],
        on_done: Callable[[int, R], None] | None,
        on_progress: Callable[[int, str], None] | None,
    ) -> None:
        self.tasks, self.queue, self.workers, self.pool = tasks, list(reversed(order)), workers, pool
        self.is_invalid, self.stopped, self.on_done, self.on_progress = (
            is_invalid,
            stopped,
            on_done,
            on_progress,
        )
        self.results: dict[int, R] = {}
        self.errors: dict[int, Exception] = {}
        self.in_flight = 0  # pieces sent and not answered

    def go(self, shared: Any, fail_fast: bool, deadline: float) -> list[R]:
        busy: dict[Connection, _Worker] = {}
        stop: Stop | None = None
        # Without fail-fast no answer stops the others: each worker gets its next piece before
        # it answers (`_top_up`), so it never waits for this process to read the answer.
        ahead = not fail_fast
        try:
            reporting = self.on_progress is not None  # else a worker says nothing: no message, no wake-up
            message = pickle.dumps(("shared", (shared, reporting)), pickle.HIGHEST_PROTOCOL)
            for worker in self.workers:
                worker.connection.send_bytes(message)
            for worker in self.workers:
                if self.queue:
                    self._send(worker, busy)
                else:
                    self.pool._give_back(worker)
            for worker in list(busy.values()):
                self._top_up(worker, ahead, deadline)
            while busy:
                left = deadline + KILL_GRACE_SECONDS - time.time()
                if left <= 0:
                    stop = Stop(StopKind.DEADLINE)
                    break
                ready = _ready(list(busy), None if math.isinf(left) else left)
                for connection in ready:
                    answering = busy.get(connection)
                    if answering is None:  # killed meanwhile (its answer was not needed)
                        continue
                    worker = answering
                    message = self._read(worker)
                    if message[:1] == _SAID:
                        self._hear(message)
                        continue
                    index = worker.task
                    self.in_flight -= 1
                    if worker.ahead:  # already in its pipe: it runs that one now
                        worker.task = worker.ahead.pop(0)
                    else:
                        del busy[worker.connection]
                        if ahead and self.queue and not self.errors and time.time() < deadline:
                            self._send(worker, busy)
                    self._top_up(worker, ahead, deadline)  # before this answer is read and printed
                    self._answer(index, message)
                    if self.errors:  # only an earlier task's error could be raised instead
                        first = min(self.errors)
                        self.queue = [queued for queued in self.queue if queued < first]
                        for needless in [other for other in busy.values() if other.task > first]:
                            _kill(needless)  # its answer would not be used
                            del busy[needless.connection]
                    if fail_fast and index in self.results and self.is_invalid(self.results[index]):
                        stop = Stop(StopKind.FAIL_FAST, self.tasks[index].name)
                    if worker.connection in busy or worker.connection.reading < 0:  # busy, or killed above
                        continue
                    if stop is None and self.queue and time.time() < deadline:
                        self._send(worker, busy)
                    else:
                        self.pool._give_back(worker)
                if stop is not None:
                    break
        except BaseException:
            for worker in busy.values():
                _kill(worker)
            raise
        unstarted = list(self.queue)
        for worker in busy.values():  # running at a stop: killed, answered by `stopped`
            _kill(worker)
            index = worker.task
            self.results[index] = self.stopped(index, stop or Stop(StopKind.DEADLINE))
            unstarted.extend(worker.ahead)
        late = stop if stop is not None and stop.kind is StopKind.FAIL_FAST else Stop(StopKind.NOT_STARTED)
        for index in unstarted:
            self.results[index] = self.stopped(index, late)
        if self.errors:
            raise self.errors[min(self.errors)]
        return [self.results[index] for index in range(len(self.tasks))]

    def _top_up(self, worker: _Worker, ahead: bool, deadline: float) -> None:
        """Send a busy worker its next piece now, to wait in its pipe, while more pieces are
        queued than there are workers: the last ones go to whichever worker is free first, so
        that none is left with two at the end. Measured on Porcupine's 108 logs over two
        workers at load 15-16: the workers waited 0.3-0.4 s each between files before."""
        if not (ahead and worker.task >= 0 and not worker.ahead and not self.errors):
            return
        if len(self.queue) > len(self.workers) and time.time() < deadline:
            worker.ahead.append(self._post(worker))

    def _send(self, worker: _Worker, busy: dict[Connection, _Worker]) -> None:
        """Start the next queued piece on an idle worker."""
        worker.task = self._post(worker)
        busy[worker.connection] = worker

    def _post(self, worker: _Worker) -> int:
        """Send the next queued piece to `worker`; its index."""
        index = self.queue.pop()
        task = self.tasks[index]
        self.in_flight += 1
        share = math.ceil((len(self.queue) + self.in_flight) / len(self.workers))
        worker.connection.send_bytes(
            pickle.dumps(("task", (index, task.function, task.arguments, share)), pickle.HIGHEST_PROTOCOL)
        )
        return index

    def _read(self, worker: _Worker) -> bytes:
        """The next message from a worker (what its task said, `_SAID`, or its answer)."""
        try:
            return worker.connection.recv_bytes()
        except (EOFError, OSError):
            _kill(worker)
            raise WorkerError(
                "WorkerDied", "a worker process ended without an answer", self._doing(worker.task), ""
            ) from None

    def _hear(self, message: bytes) -> None:
        """What a task said (`TaskContext.say`), to `on_progress`."""
        index, text = pickle.loads(message[1:])
        if self.on_progress is not None:
            self.on_progress(index, text)

    def _answer(self, index: int, message: bytes) -> None:
        """Record task `index`'s answer: its result (to `on_done`) or the error it raised."""
        kind, _, payload = pickle.loads(message[1:])
        if kind == "result":
            self.results[index] = payload
            if self.on_done is not None:
                self.on_done(index, payload)
        elif kind == "history-error":
            position, text = payload
            self.errors[index] = HistoryError(position, text)
        elif kind == "value-error":
            self.errors[index] = ValueError(payload)
        else:
            name, text, remote = payload
            raise WorkerError(name, text, self._doing(index), remote)

    def _doing(self, index: int) -> str:
        name = self.tasks[index].name if 0 <= index < len(self.tasks) else ""
        return f"running {name}" if name else "running a task"


def _fork_worker() -> _Worker | None:
    """A new worker process, or None when the system refuses a pipe or a process."""
    try:
        to_worker = os.pipe()
    except OSError:
        return None
    try:
        from_worker = os.pipe()
    except OSError:
        Connection(*to_worker).close()
        return None
    parent_end = Connection(from_worker[0], to_worker[1])
    child_end = Connection(to_worker[0], from_worker[1])
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in a multi-threaded process (a progress spinner's
            # thread): the worker only computes and talks over its pipe.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        parent_end.close()
        child_end.close()
        return None
    if pid == 0:  # the worker: it never returns into the caller's code
        code = 0
        try:
            parent_end.close()
            _serve(child_end)
        except BaseException:  # the caller learns of it by the pipe's end
            code = 1
        os._exit(code)
    child_end.close()
    return _Worker(pid, parent_end)


def _serve(connection: Connection) -> None:
    """A worker's loop: run each task sent, answer with its result or its error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle: it kills us
    gc.freeze()  # the inherited objects are never collected here: keep their pages shared
    shared: Any = None
    reporting = False
    while True:
        try:
            kind, message = pickle.loads(connection.recv_bytes())
        except (EOFError, OSError):  # the caller closed the pipe: done
            return
        if kind == "shared":
            shared, reporting = message
            continue
        index, function, arguments, share = message

        def say(text: str, index: int = index, reporting: bool = reporting) -> None:
            if reporting:
                connection.send_bytes(_SAID + pickle.dumps((index, text)))

        try:
            answer: tuple[str, int, Any] = (
                "result",
                index,
                function(shared, *arguments, TaskContext(share, say)),
            )
        except HistoryError as error:
            answer = ("history-error", index, (error.position, error.message))
        except ValueError as error:
            answer = ("value-error", index, str(error))
        except Exception as error:  # a bug: the caller raises it as a WorkerError
            answer = (
                "bug",
                index,
                (type(error).__name__, str(error), "".join(traceback.format_exception(error))),
            )
        try:
            data = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception as error:  # a result that does not pickle is a bug too
            data = pickle.dumps(("bug", index, (type(error).__name__, str(error), traceback.format_exc())))
        connection.send_bytes(_ANSWER + data)


_SAID: Final = b"s"
"""The first byte of a worker's message that reports what its task said (then a pickle of
(index, text)); its caller tells it from an answer without unpickling either."""
_ANSWER: Final = b"a"
"""The first byte of a worker's answer (then a pickle of (kind, index, payload))."""


def _kill(worker: _Worker) -> None:
    """Kill a worker now (SIGKILL: the system frees its memory at once). It is reaped without
    waiting, so a large cache being unmapped does not delay the caller; one not yet gone is
    reaped by `WorkerPool.close`, or by the system when this process ends."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)
    worker.connection.close()
    _reap(worker.pid, wait_for_it=False)


def _reap(pid: int, wait_for_it: bool = True) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0 if wait_for_it else os.WNOHANG)


# ---------------------------------------------------------------------------------------
# The parts of one history
# ---------------------------------------------------------------------------------------


def check_parts(
    pool: WorkerPool | None,
    plan: Plan,
    parts: Sequence[tuple[str, Sequence[Call]]],
    *,
    fail_fast: bool = False,
    progress: Callable[[str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> list[CheckResult]:
    """`checking.check_part` of every (key, calls) part, in `pool`'s workers (in this process
    without a pool), smallest first; the results in the order of `parts`. `progress` hears
    the counts as results arrive (`progress_text`); `on_start(number)` each part this process
    checks itself, before it starts."""
    tasks = [Task(len(calls), _check_part_task, (key, calls), name=key) for key, calls in parts]
    pool = worth_workers(pool, sum(task.size for task in tasks), PARALLEL_MIN_CALLS)

    def stopped(index: int, stop: Stop) -> CheckResult:
        key, calls = parts[index]
        return unchecked_result(plan, key, len(calls), stop_reason(stop))

    tally = Tally(len(tasks), progress)
    if pool is not None:
        plan = replace(plan, budget=searches_budget(plan.budget, pool, len(tasks)))
    return (pool or WorkerPool()).run(
        tasks,
        shared=plan,
        is_invalid=_is_invalid,
        stopped=stopped,
        fail_fast=fail_fast,
        deadline=plan.budget.deadline,
        on_done=tally.done,
        on_start=on_start,
    )


def worth_workers(pool: WorkerPool | None, size: int, minimum: int) -> WorkerPool | None:
    """`pool` when the work (`size`) reaches `minimum` or the pool isolates every piece, else
    None (this process checks)."""
    return pool if pool is not None and (size >= minimum or pool.isolate) else None


def searches_budget(budget: Budget, pool: WorkerPool, tasks: int) -> Budget:
    """`budget` with each search's memory budget cut to its share of the pool's
    `memory_total_bytes` when `tasks` pieces run in several workers at once (else as it is)."""
    total = pool.memory_total_bytes
    running = min(pool.workers, tasks) if pool.parallel else 1
    if total is None or running <= 1:
        return budget
    return replace(budget, max_memory_bytes=min(budget.max_memory_bytes, max(1, total // running)))


def stop_reason(stop: Stop) -> str:
    """The reason an unfinished part states."""
    if stop.kind is StopKind.FAIL_FAST:
        return f"not checked: --fail-fast stopped at the invalid part {stop.invalid}"
    if stop.kind is StopKind.DEADLINE:
        return f"{kafka_checker.BUDGET_EXHAUSTED_REASON} (stopped at the deadline)"
    return f"not checked: {kafka_checker.BUDGET_EXHAUSTED_REASON}"


def _check_part_task(plan: Plan, key: str, calls: Sequence[Call], context: TaskContext) -> CheckResult:
    return check_part(plan, key, calls, parts_left=context.share)


def _is_invalid(result: CheckResult) -> bool:
    return result.verdict is Verdict.INVALID


class Tally:
    """Counts the parts' verdicts as they arrive and tells `progress` (`progress_text`)."""

    def __init__(self, total: int, progress: Callable[[str], None] | None) -> None:
        self.total, self.progress = total, progress
        self.finished = self.invalid = self.unknown = 0

    def done(self, _index: int, result: CheckResult) -> None:
        """A part's result arrived."""
        self.verdict(result.verdict.value, self.total)

    def verdict(self, verdict: str, total: int) -> None:
        """A part's verdict (`Verdict` value) arrived, of `total` parts."""
        self.total = total
        self.finished += 1
        self.invalid += verdict == Verdict.INVALID.value
        self.unknown += verdict == Verdict.UNKNOWN.value
        if self.progress is not None:
            self.progress(progress_text(self.finished, self.total, self.invalid, self.unknown))


__all__ = [
    "EARLY_START_BYTES",
    "KILL_GRACE_SECONDS",
    "PARALLEL_MIN_BYTES",
    "PARALLEL_MIN_CALLS",
    "Connection",
    "Stop",
    "StopKind",
    "Tally",
    "Task",
    "TaskContext",
    "WorkerError",
    "WorkerPool",
    "available_cores",
    "check_parts",
    "fork_available",
    "progress_text",
    "searches_budget",
    "start_order",
    "stop_reason",
    "worth_workers",
]
