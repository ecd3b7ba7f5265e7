"""The parts of a history checked in worker processes (`spark_checks.parallel`): the same
results as one process, `--fail-fast`, the deadline kept by killing a busy worker, errors
carried back, and the progress counts."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from spark_checks import readers
from spark_checks.checking import Budget
from spark_checks.engine import HistoryReport, VerifyOptions, verify_history
from spark_checks.history import HistoryError, Position, Verdict
from spark_checks.kafka_histories import INJECTABLE_ANOMALIES, generate_history
from spark_checks.parallel import (
    EARLY_START_BYTES,
    KILL_GRACE_SECONDS,
    PARALLEL_MIN_CALLS,
    Connection,
    Stop,
    StopKind,
    Tally,
    Task,
    TaskContext,
    WorkerError,
    WorkerPool,
    fork_available,
    progress_text,
    worth_workers,
)
from spark_checks.readers import write_jsonl
from tests.helpers import run_cli

PORCUPINE = Path(__file__).resolve().parents[3] / "shared" / "histories" / "porcupine" / "test_data"
needs_histories = pytest.mark.skipif(not PORCUPINE.is_dir(), reason="needs the Porcupine test histories")
needs_fork = pytest.mark.skipif(not fork_available(), reason="needs fork")


def hard_kv_history(path: Path, keys: int, writers: int = 30) -> Path:
    """Per key: a put of "" (so the traceable procedure falls back to the search), then
    `writers` concurrent puts of "1", then a get of "": invalid, and only after trying every
    order of the puts (2^writers cached states)."""
    lines: list[dict[str, Any]] = []

    def add(process: int, kind: str, f: str, key: str, value: str | None) -> None:
        lines.append(
            {"index": len(lines), "process": process, "type": kind, "f": f, "key": key, "value": value}
        )

    for number in range(keys):
        key, base = f"k{number}", number * 1000
        add(base + 999, "invoke", "put", key, "")
        add(base + 999, "ok", "put", key, "")
        for process in range(writers):
            add(base + process, "invoke", "put", key, "1")
        for process in range(writers):
            add(base + process, "ok", "put", key, "1")
        add(base + writers, "invoke", "get", key, None)
        add(base + writers, "ok", "get", key, "")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def comparable(report: HistoryReport) -> list[tuple[Any, ...]]:
    """Everything a part's result says except how long it took."""
    return [
        (r.checker, r.model, r.partition, r.verdict, r.operations, r.evidence, r.conventions)
        for r in report.results
    ]


@needs_fork
@needs_histories
@pytest.mark.parametrize(
    "name",
    ["kv/c50-bad.txt", "kv/c50-ok.txt", "kv/c10-bad.txt", "jepsen/etcd_000.log", "jepsen/etcd_002.log"],
)
def test_workers_give_the_results_of_one_process(name: str) -> None:
    # c50 (over PARALLEL_MIN_CALLS) goes to the workers; the small ones stay in this process.
    path = PORCUPINE / name
    alone = verify_history(path, VerifyOptions(engine="local"))
    with WorkerPool(2) as pool:
        together = verify_history(path, VerifyOptions(engine="local"), pool=pool)
        assert pool.idle_workers == (2 if alone.calls >= PARALLEL_MIN_CALLS and len(alone.results) > 1 else 0)
    assert together.verdict is alone.verdict
    assert comparable(together) == comparable(alone)
    assert (together.operations, together.calls) == (alone.operations, alone.calls)


@needs_fork
@pytest.mark.parametrize("general", [False, True])
def test_workers_give_the_results_of_one_process_on_kafka(tmp_path: Path, general: bool) -> None:
    # JSON Lines goes through the distributed stages (encoded parts sent to the workers),
    # or through call objects with `general`; both with the whole-history cycle part.
    history = tmp_path / "kafka.jsonl"
    write_jsonl(history, generate_history(3_000, 6, seed=11, anomalies=INJECTABLE_ANOMALIES))
    alone = verify_history(history, VerifyOptions(engine="local"), general=general)
    with WorkerPool(2) as pool:
        together = verify_history(history, VerifyOptions(engine="local"), pool=pool, general=general)
        assert pool.idle_workers == 2
    assert alone.verdict is Verdict.INVALID
    assert len(alone.results) > 2
    assert comparable(together) == comparable(alone)


@needs_fork
def test_workers_start_before_a_large_history_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "big.jsonl"
    write_jsonl(history, generate_history(8_000, 8, seed=5))
    assert history.stat().st_size >= EARLY_START_BYTES
    seen: list[int] = []
    reading = readers.open_located

    def watched(*arguments: Any) -> Any:
        seen.append(pool.idle_workers)
        return reading(*arguments)

    monkeypatch.setattr(readers, "open_located", watched)
    with WorkerPool(2) as pool:
        report = verify_history(history, VerifyOptions(engine="local"), pool=pool)
    assert seen and seen[0] == 2  # forked before the history was read
    assert report.verdict is Verdict.VALID


@needs_histories
@pytest.mark.parametrize("workers", [1, 2])
def test_fail_fast_stops_at_the_first_invalid_part(workers: int) -> None:
    with WorkerPool(workers) as pool:
        report = verify_history(PORCUPINE / "kv/c50-bad.txt", VerifyOptions(fail_fast=True), pool=pool)
    assert report.verdict is Verdict.INVALID
    invalid = [r for r in report.results if r.verdict is Verdict.INVALID]
    skipped = [r for r in report.results if r.verdict is Verdict.UNKNOWN]
    assert invalid and skipped
    stopped_at = {json.dumps(r.partition) for r in invalid}
    for result in skipped:
        reason = str(result.evidence["reason"])
        assert reason.startswith("not checked: --fail-fast stopped at the invalid part ")
        assert reason.rsplit(" ", 1)[1] in stopped_at
    # The parts are still reported in key order, each once.
    assert [r.partition for r in report.results] == sorted(r.partition for r in report.results)
    full = verify_history(PORCUPINE / "kv/c50-bad.txt", VerifyOptions())
    assert {r.verdict for r in full.results} <= {Verdict.VALID, Verdict.INVALID}
    assert len(full.results) == len(report.results)


def test_fail_fast_checks_the_smallest_parts_first(tmp_path: Path) -> None:
    # Key k0 is hard (2^30 orders of its puts), k1 small and invalid: checked first, it stops
    # the run before k0 is searched at all.
    history = hard_kv_history(tmp_path / "hard.jsonl", keys=1)
    small = '{"index": 100, "process": 5000, "type": "invoke", "f": "get", "key": "zz", "value": null}\n'
    small += '{"index": 101, "process": 5000, "type": "ok", "f": "get", "key": "zz", "value": "x"}\n'
    history.write_text(history.read_text() + small)
    started = time.perf_counter()
    report = verify_history(history, VerifyOptions(fail_fast=True, budget=Budget(max_seconds=60)))
    assert time.perf_counter() - started < 10
    verdicts = {r.partition: r.verdict for r in report.results}
    assert verdicts == {"k0": Verdict.UNKNOWN, "zz": Verdict.INVALID}


@needs_fork
def test_the_deadline_is_kept_with_workers(tmp_path: Path) -> None:
    # 16 hard keys, 512 calls: over PARALLEL_MIN_CALLS, so two workers search them.
    history = hard_kv_history(tmp_path / "hard.jsonl", keys=16)
    with WorkerPool(2) as pool:
        started = time.time()
        report = verify_history(
            history, VerifyOptions(budget=Budget(max_seconds=60, deadline=started + 1.5)), pool=pool
        )
        elapsed = time.time() - started
    assert report.calls >= PARALLEL_MIN_CALLS
    assert elapsed < 2.5, elapsed  # within 1 s of the deadline
    assert report.verdict is Verdict.UNKNOWN
    assert all("time budget exhausted" in str(r.evidence["reason"]) for r in report.results)


def test_verify_max_seconds_holds_with_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = hard_kv_history(tmp_path / "hard.jsonl", keys=16)
    started = time.perf_counter()
    code, out, _ = run_cli(capsys, "verify", str(history), "--max-seconds", "1.5", "--workers", "2", "--json")
    assert time.perf_counter() - started < 2.5
    assert code == 3
    (report,) = json.loads(out)["histories"]
    assert report["parts"] == 16 and {part["verdict"] for part in report["failing"]} == {"unknown"}


def _sleep(_shared: object, seconds: float, _context: TaskContext) -> str:
    time.sleep(seconds)
    return f"slept {seconds}"


def _pid(_shared: object, verdict: str, _context: TaskContext) -> str:
    return f"{verdict} in {os.getpid()}"


def _stopped(index: int, stop: Stop) -> str:
    return f"{index} {stop.kind.value} {stop.invalid}"


@needs_fork
def test_a_worker_busy_at_the_deadline_is_killed() -> None:
    tasks = [
        Task(1, _sleep, (0.0,), "quick"),
        Task(2, _sleep, (60.0,), "slow"),
        Task(3, _sleep, (60.0,), "later"),
    ]
    with WorkerPool(2) as pool:
        started = time.time()
        results = pool.run(tasks, is_invalid=lambda _r: False, stopped=_stopped, deadline=started + 0.5)
        elapsed = time.time() - started
    assert elapsed < 0.5 + KILL_GRACE_SECONDS + 0.5, elapsed
    assert results[0] == "slept 0.0"
    assert results[1] == "1 deadline "  # running at the deadline: killed
    assert results[2] in ("2 deadline ", "2 not started ")


@needs_fork
def test_fail_fast_kills_the_workers_still_searching() -> None:
    tasks = [Task(2, _sleep, (60.0,), "slow"), Task(1, _pid, ("invalid",), "bad")]
    with WorkerPool(2) as pool:
        started = time.time()
        results = pool.run(
            tasks,
            is_invalid=lambda r: r.startswith("invalid"),
            stopped=_stopped,
            fail_fast=True,
        )
    assert time.time() - started < 5
    assert results[0] == "0 fail fast bad"
    assert results[1].startswith("invalid in ") and results[1] != f"invalid in {os.getpid()}"  # in a worker


@needs_fork
def test_an_isolating_pool_runs_even_one_small_task_in_a_worker_it_can_stop() -> None:
    # A user's model's step may never return: only in a worker can the deadline stop it.
    one = [Task(1, _pid, ("valid",), "only")]
    with WorkerPool(2) as pool:
        assert pool.run(one, is_invalid=lambda _r: False, stopped=_stopped) == [f"valid in {os.getpid()}"]
        assert worth_workers(pool, 1, 500) is None
    with WorkerPool(2, isolate=True) as pool:
        [result] = pool.run(one, is_invalid=lambda _r: False, stopped=_stopped)
        assert result.startswith("valid in ") and result != f"valid in {os.getpid()}"
        assert worth_workers(pool, 1, 500) is pool
        started = time.time()
        blocked = [Task(1, _sleep, (60.0,), "blocked")]
        results = pool.run(blocked, is_invalid=lambda _r: False, stopped=_stopped, deadline=started + 0.5)
    assert results == ["0 deadline "] and time.time() - started < 0.5 + KILL_GRACE_SECONDS + 0.5


def _bad_input(_shared: object, number: int, _context: TaskContext) -> str:
    raise HistoryError(Position("h.jsonl", line=number), f"bad line {number}")


def _bug(_shared: object, _context: TaskContext) -> str:
    known: dict[str, str] = {}
    return known["missing"]


@pytest.mark.parametrize("workers", [1, 2])
def test_the_earliest_bad_input_is_raised_as_itself(workers: int) -> None:
    tasks = [Task(9, _bad_input, (3,), "a"), Task(1, _bad_input, (7,), "b"), Task(5, _sleep, (0.0,), "c")]
    with WorkerPool(workers) as pool, pytest.raises(HistoryError) as raised:
        pool.run(tasks, is_invalid=lambda _r: False, stopped=_stopped)
    assert raised.value.position == Position("h.jsonl", line=3)


@pytest.mark.parametrize("workers", [1, 2])
def test_after_bad_input_only_earlier_tasks_run(workers: int) -> None:
    # Task 1 (the smallest) fails first; task 2 comes after it in the tasks' order, so its
    # result could change nothing: it is not run (or is stopped), and task 0's error is raised.
    tasks = [Task(9, _bad_input, (3,), "a"), Task(1, _bad_input, (7,), "b"), Task(5, _sleep, (60.0,), "c")]
    started = time.time()
    with WorkerPool(workers) as pool, pytest.raises(HistoryError) as raised:
        pool.run(tasks, is_invalid=lambda _r: False, stopped=_stopped)
    assert time.time() - started < 10
    assert raised.value.position == Position("h.jsonl", line=3)


@needs_fork
def test_a_bug_in_a_worker_is_a_worker_error_with_its_traceback() -> None:
    with WorkerPool(2) as pool, pytest.raises(WorkerError) as raised:
        pool.run(
            [Task(1, _bug, (), "k"), Task(2, _sleep, (0.0,), "j")],
            is_invalid=lambda _r: False,
            stopped=_stopped,
        )
    assert "KeyError" in str(raised.value) and "running k" in str(raised.value)
    assert any("Traceback" in note for note in raised.value.__notes__)


def test_the_progress_counts_invalid_and_unknown_parts_as_they_arrive() -> None:
    said: list[str] = []
    tally = Tally(4, said.append)
    for verdict in ("valid", "invalid", "unknown", "invalid"):
        tally.verdict(verdict, 4)
    assert said == [
        "1/4 parts checked, 0 invalid, 0 unknown",
        "2/4 parts checked, 1 invalid, 0 unknown",
        "3/4 parts checked, 1 invalid, 1 unknown",
        "4/4 parts checked, 2 invalid, 1 unknown",
    ]
    assert progress_text(1, 1, 1, 0) == "1/1 part checked, 1 invalid, 0 unknown"


@needs_histories
@pytest.mark.parametrize("workers", [1, 2])
def test_the_engine_reports_invalid_parts_as_they_are_found(workers: int) -> None:
    said: list[str] = []
    with WorkerPool(workers) as pool:
        report = verify_history(
            PORCUPINE / "kv/c50-bad.txt", VerifyOptions(), pool=pool, progress=said.append
        )
    counts = [message for message in said if " parts checked, " in message]
    invalid = sum(r.verdict is Verdict.INVALID for r in report.results)
    assert len(counts) == len(report.results)
    assert counts[-1] == progress_text(len(report.results), len(report.results), invalid, 0)
    assert invalid >= 1


def test_several_searches_share_the_memory_budget() -> None:
    from spark_checks.parallel import searches_budget

    budget = Budget(max_memory_bytes=512)
    assert searches_budget(budget, WorkerPool(1, 768), 10) == budget
    if fork_available():
        assert searches_budget(budget, WorkerPool(2, 768), 10).max_memory_bytes == 384
        assert searches_budget(budget, WorkerPool(2, 768), 1) == budget  # one search alone
        assert searches_budget(budget, WorkerPool(2, None), 10) == budget  # --max-memory given


def test_a_pool_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        WorkerPool(0)
    assert StopKind.FAIL_FAST.value == "fail fast"


def _echo_size(_shared: object, data: bytes, _context: TaskContext) -> tuple[int, bytes]:
    return len(data), data[-3:] * 1_000_000  # a 3 MB answer: many pipe buffers' worth


@needs_fork
def test_large_messages_cross_the_workers_pipes_whole() -> None:
    """A task and an answer far larger than a pipe's buffer (64 KB) arrive whole, in order."""
    sent = [bytes([n]) * (200_000 * (n + 1)) for n in range(4)]
    with WorkerPool(2) as pool:
        results = pool.run(
            [Task(len(data), _echo_size, (data,)) for data in sent],
            is_invalid=lambda _result: False,
            stopped=lambda _index, _stop: (0, b""),
        )
    assert [size for size, _ in results] == [len(data) for data in sent]
    assert [answer == data[-3:] * 1_000_000 for (_, answer), data in zip(results, sent, strict=True)] == [
        True
    ] * 4


def test_a_closed_pipe_ends_the_reading() -> None:
    reading, writing = os.pipe()
    ours = Connection(reading, -1)
    theirs = Connection(-1, writing)
    theirs.send_bytes(b"last words")
    theirs.close()
    assert ours.recv_bytes() == b"last words"
    with pytest.raises(EOFError):
        ours.recv_bytes()
    ours.close()
    ours.close()  # closing again does nothing


def _chatty(_shared: object, number: int, context: TaskContext) -> int:
    for step in range(3):
        context.say(f"task {number}, step {step}")
    return number


@needs_fork
@pytest.mark.parametrize("listening", [True, False])
def test_a_worker_sends_progress_only_to_a_caller_that_listens(
    listening: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every message a worker sends wakes the caller: what a task says crosses the pipe only when
    the caller has an `on_progress` to tell it to, else only the results come back."""
    received: list[bytes] = []
    receive = Connection.recv_bytes

    def counted(connection: Connection) -> bytes:
        message = receive(connection)
        received.append(message)
        return message

    monkeypatch.setattr(Connection, "recv_bytes", counted)
    heard: list[tuple[int, str]] = []
    with WorkerPool(2) as pool:
        results = pool.run(
            [Task(1, _chatty, (number,)) for number in range(4)],
            is_invalid=lambda _result: False,
            stopped=lambda _index, _stop: -1,
            on_progress=(lambda index, text: heard.append((index, text))) if listening else None,
        )
    assert results == [0, 1, 2, 3]
    assert len(received) == 4 + len(heard)
    assert sorted(heard) == (
        [(n, f"task {n}, step {s}") for n in range(4) for s in range(3)] if listening else []
    )


def _where(_shared: object, seconds: float, _context: TaskContext) -> int:
    time.sleep(seconds)
    return os.getpid()


@needs_fork
def test_a_worker_gets_its_next_piece_before_it_answers_while_many_are_queued() -> None:
    """Without fail-fast each worker has its next piece waiting in its pipe while more pieces
    are queued than there are workers; the last ones go to whichever worker is free first.
    Pieces start smallest first: the slow one (size 1) and one quick piece first, each worker
    then given one more at once. The slow worker's waiting piece runs after it, in that same
    worker, while the other worker takes every other piece."""
    tasks = [Task(1, _where, (0.6,)), *(Task(2 + n, _where, (0.0,)) for n in range(8))]
    with WorkerPool(2) as pool:
        pids = pool.run(tasks, is_invalid=lambda _r: False, stopped=lambda _index, _stop: -1)
    slow = pids[0]
    assert pids[2] == slow  # sent to the slow worker ahead, at the start
    assert [pid for pid in pids[3:] if pid == slow] == []  # the rest went to the free worker
    assert len(set(pids)) == 2


@needs_fork
def test_a_piece_waiting_in_a_killed_workers_pipe_is_answered_not_started() -> None:
    tasks = [
        Task(1, _sleep, (60.0,), "slow"),
        Task(2, _sleep, (0.0,), "quick"),
        Task(3, _sleep, (0.0,), "waiting behind the slow one"),
        *(Task(4 + n, _sleep, (0.0,)) for n in range(4)),
    ]
    with WorkerPool(2) as pool:
        started = time.time()
        results = pool.run(tasks, is_invalid=lambda _r: False, stopped=_stopped, deadline=started + 0.5)
    assert time.time() - started < 0.5 + KILL_GRACE_SECONDS + 0.5
    assert results[0] == "0 deadline "  # running at the deadline: killed
    assert results[2] == "2 not started "  # sent ahead to the slow worker, never started
    assert results[1] == results[3] == "slept 0.0"
