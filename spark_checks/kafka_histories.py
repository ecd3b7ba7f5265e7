"""Kafka client histories as canonical `Operation`s: hand-written ones and generated ones.

* `KafkaHistoryBuilder` writes small histories that read like the scenario they show:
  `b.send(0, "x", 10)` invokes and completes a send (the builder keeps each key's log and
  returns the offset), `b.poll(1, {"x": [0, 1]})` polls offsets 0 and 1 of `x`, and
  `b.last_call` gives the history indices of the call just written. `invoke`/`complete`
  write overlapping calls.
* `generate_history(n_calls, n_keys, seed, anomalies)` streams a valid history of about
  `n_calls` calls (two operations each) over `n_keys` keys with memory independent of its
  length, optionally with injected anomalies (`INJECTABLE_ANOMALIES`). `HistoryGenerator`
  is the same with a record of what was injected where.

Generated histories follow Jepsen's Kafka workload with `:sub-via #{:assign}`: producers send
one to three values per call (values are unique: `offset * n_keys + key`, offsets assigned at
invocation, so a value may be polled before its send completes); some sends fail (their
offsets stay empty) or end indeterminate (`info`: applied or not); each key is assigned to one
consumer, which polls it in order and, at the end, until it has read everything; consumers may
run transactions that poll and send (`txn_share`); `crash` ops and every `info` completion
give the thread a new process, which assigns itself again, as Jepsen does.

Jepsen's own final polls (`final_polls="from-start"`, `jepsen.tests.kafka/final-polls`): at
the end every thread, producers too, crashes its client, assigns itself every key with
`:seek-to-beginning? true` and polls until it has read every key from offset 0, up to
`final_batch` records per key per poll (None: no limit, so one poll line holds the whole
topic, as in real Jepsen histories whose last line is megabytes long). `max_batch` bounds
the records per key of an ordinary poll; Jepsen's consumers take hundreds at a time.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from spark_checks.history import Call, JsonValue, Operation, OpType, Process, pair_calls

INJECTABLE_ANOMALIES: Final = (
    "lost-write",
    "duplicate",
    "poll-skip",
    "nonmonotonic-poll",
    "inconsistent-offsets",
    "G1a",
    "unseen",
)
"""What `generate_history` can inject, each once. Side effects are those a real fault has:
a lost write is also skipped by its consumer (`poll-skip` or `int-poll-skip`) and `unseen`;
a poll skip leaves a value nobody read (`lost-write`, `unseen`); a duplicate and an
inconsistent offset disturb the version order around them (`int-nonmonotonic-poll`, ...)."""

_TYPES: Final = {"ok": OpType.OK, "fail": OpType.FAIL, "info": OpType.INFO}
_SAME: Final = object()


class KafkaHistoryBuilder:
    """Writes a history call by call. Every high-level method writes an invocation and its
    completion at once (sequential calls); use `invoke`/`complete` for overlapping ones."""

    def __init__(self) -> None:
        self._operations: list[Operation] = []
        self._open: dict[Process, Operation] = {}
        self._logs: dict[str, dict[int, JsonValue]] = {}
        self._next_offset: dict[str, int] = {}
        self.last_call: tuple[int, int | None] = (-1, None)
        """(invoke index, complete index) of the last call completed."""

    # -- results ---------------------------------------------------------------------

    @property
    def operations(self) -> list[Operation]:
        return list(self._operations)

    def calls(self) -> list[Call]:
        return list(pair_calls(self._operations))

    # -- low level ---------------------------------------------------------------------

    def invoke(self, process: Process, f: str, value: JsonValue = None) -> int:
        """Write an invocation; returns its index."""
        index = len(self._operations)
        operation = Operation(index, process, OpType.INVOKE, f, value, time=index * 1000)
        self._operations.append(operation)
        self._open[process] = operation
        return index

    def complete(self, process: Process, outcome: str = "ok", value: Any = _SAME) -> int:
        """Write the completion of `process`'s open call (`ok`, `fail` or `info`); the value
        defaults to the invocation's. Returns its index."""
        invocation = self._open.pop(process)
        index = len(self._operations)
        completed = invocation.value if value is _SAME else value
        self._operations.append(
            Operation(index, process, _TYPES[outcome], invocation.f, completed, time=index * 1000)
        )
        self.last_call = (invocation.index, index)
        return index

    def record(self, key: object, value: JsonValue, offset: int | None = None) -> int:
        """Put `value` in the builder's log of `key` (at `offset`, else the next one)."""
        name = str(key)
        at = self._next_offset.get(name, 0) if offset is None else offset
        self._logs.setdefault(name, {})[at] = value
        self._next_offset[name] = max(self._next_offset.get(name, 0), at + 1)
        return at

    def reserve(self, key: object) -> int:
        """Take the next offset of `key` without a value (a hole, e.g. a transaction marker)."""
        name = str(key)
        at = self._next_offset.get(name, 0)
        self._next_offset[name] = at + 1
        return at

    def value_at(self, key: object, offset: int) -> JsonValue:
        return self._logs[str(key)][offset]

    # -- high level --------------------------------------------------------------------

    def send(
        self,
        process: Process,
        key: object,
        value: JsonValue,
        *,
        outcome: str = "ok",
        offset: int | None = None,
        logged: bool | None = None,
        ack_offset: int | None = None,
    ) -> int | None:
        """Send `value` to `key` in one call; returns the offset it got (None if not logged).

        `ok` sends are logged at `offset` (default: next) and the completion reports it (or
        `ack_offset`, to make a client see a wrong offset). `fail` sends are not logged
        unless `logged=True` (an aborted read to come); `info` sends are logged only if
        `logged=True`, and their completion carries the invocation value."""
        offsets = self.send_many(
            process,
            [(key, value)],
            outcome=outcome,
            offsets=None if offset is None else [offset],
            logged=logged,
            ack_offsets=None if ack_offset is None else [ack_offset],
        )
        return offsets[0]

    def send_many(
        self,
        process: Process,
        sends: Sequence[tuple[object, JsonValue]],
        *,
        outcome: str = "ok",
        f: str = "send",
        offsets: Sequence[int] | None = None,
        logged: bool | None = None,
        ack_offsets: Sequence[int | None] | None = None,
    ) -> list[int | None]:
        """One call sending several values (in order); returns their offsets."""
        is_logged = (outcome == "ok") if logged is None else logged
        self.invoke(process, f, [["send", key, value] for key, value in sends])
        got: list[int | None] = []
        completed: list[JsonValue] = []
        for n, (key, value) in enumerate(sends):
            at = self.record(key, value, None if offsets is None else offsets[n]) if is_logged else None
            got.append(at)
            acked = at if ack_offsets is None else ack_offsets[n]
            completed.append(["send", key, [acked, value]])
        if outcome == "ok":
            self.complete(process, "ok", completed)
        else:
            self.complete(process, outcome)
        return got

    def _pairs(self, key: object, reads: Sequence[Any]) -> list[list[JsonValue]]:
        pairs: list[list[JsonValue]] = []
        for read in reads:
            if isinstance(read, int):
                pairs.append([read, self.value_at(key, read)])
            else:
                offset, value = read
                pairs.append([offset, value])
        return pairs

    def poll(
        self,
        process: Process,
        reads: Mapping[object, Sequence[Any]] | None = None,
        *,
        outcome: str = "ok",
        f: str = "poll",
    ) -> None:
        """One poll: for each key, offsets (read from the builder's log) or explicit
        `(offset, value)` pairs. A `fail`/`info` poll with `reads` reports them in its
        completion (as a Jepsen transaction that aborted after polling does)."""
        self.invoke(process, f, [["poll"]])
        if reads is None:
            if outcome == "ok":
                self.complete(process, "ok", [["poll", {}]])
            else:
                self.complete(process, outcome)
            return
        result = {str(key): self._pairs(key, offsets) for key, offsets in reads.items()}
        self.complete(process, outcome, [["poll", result]])

    def txn(
        self, process: Process, mops: Sequence[Sequence[Any]], *, outcome: str = "ok"
    ) -> list[int | None]:
        """A transaction of `("send", key, value)` and `("poll", {key: offsets or pairs})`
        micro-ops, in order; sends of an `ok` txn are logged at the next offsets. Returns the
        offsets of its sends."""
        invocation: list[JsonValue] = []
        completed: list[JsonValue] = []
        offsets: list[int | None] = []
        for mop in mops:
            if mop[0] == "send":
                key, value = mop[1], mop[2]
                invocation.append(["send", key, value])
                at = self.record(key, value) if outcome == "ok" else None
                offsets.append(at)
                completed.append(["send", key, [at, value]] if at is not None else ["send", key, value])
            else:
                invocation.append(["poll"])
                reads: Mapping[object, Sequence[Any]] = mop[1] if len(mop) > 1 else {}
                completed.append(["poll", {str(key): self._pairs(key, rs) for key, rs in reads.items()}])
        self.invoke(process, "txn", invocation)
        self.complete(process, outcome, completed)
        return offsets

    def assign(self, process: Process, keys: Iterable[object], *, outcome: str = "ok") -> None:
        self.invoke(process, "assign", list(keys))
        self.complete(process, outcome)

    def subscribe(self, process: Process, keys: Iterable[object], *, outcome: str = "ok") -> None:
        self.invoke(process, "subscribe", list(keys))
        self.complete(process, outcome)

    def crash(self, process: Process) -> None:
        """Jepsen's client crash: an `info` completion."""
        self.invoke(process, "crash")
        self.complete(process, "info")

    def other(self, process: Process, f: str, value: JsonValue = None, *, outcome: str = "ok") -> None:
        """Any other call (commit, debug-topic-partitions, ...)."""
        self.invoke(process, f, value)
        self.complete(process, outcome)


# ---------------------------------------------------------------------------------------
# Generated histories
# ---------------------------------------------------------------------------------------


class HistoryGenerator:
    """Streams one generated history (see the module docstring); `injected` says, once the
    stream is exhausted, which anomalies were injected and where (an anomaly whose moment
    never came, in a very short history, is missing from it)."""

    def __init__(
        self,
        n_calls: int,
        n_keys: int,
        seed: int,
        anomalies: Iterable[str] = (),
        *,
        producers: int = 4,
        consumers: int = 4,
        txn_share: float = 0.0,
        crash_share: float = 0.001,
        fail_share: float = 0.01,
        info_share: float = 0.01,
        max_batch: int = 8,
        final_polls: str = "rest",
        final_batch: int | None = 256,
    ) -> None:
        unknown = set(anomalies) - set(INJECTABLE_ANOMALIES)
        if unknown:
            raise ValueError(f"cannot inject {sorted(unknown)}; choose from {list(INJECTABLE_ANOMALIES)}")
        if n_keys < 1 or producers < 1 or consumers < 1:
            raise ValueError("need at least one key, one producer and one consumer")
        if final_polls not in ("rest", "from-start"):
            raise ValueError(f"final_polls must be 'rest' or 'from-start', not {final_polls!r}")
        self.n_calls = n_calls
        self.n_keys = n_keys
        self.seed = seed
        self.anomalies = tuple(dict.fromkeys(anomalies))
        self.producers = producers
        self.consumers = consumers
        self.txn_share = txn_share
        self.crash_share = crash_share
        self.fail_share = fail_share
        self.info_share = info_share
        self.max_batch = max_batch
        self.final_polls = final_polls
        self.final_batch = final_batch
        self.injected: dict[str, dict[str, JsonValue]] = {}

    def __iter__(self) -> Iterator[Operation]:
        return _Run(self).operations()


def generate_history(
    n_calls: int,
    n_keys: int,
    seed: int,
    anomalies: Iterable[str] = (),
    **options: Any,
) -> Iterator[Operation]:
    """A generated history as a stream of operations (see `HistoryGenerator`)."""
    return iter(HistoryGenerator(n_calls, n_keys, seed, anomalies, **options))


class _Run:
    """The state of one generation; memory is O(keys + threads + failed sends)."""

    def __init__(self, spec: HistoryGenerator) -> None:
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.keys = spec.n_keys
        self.threads = spec.producers + spec.consumers
        self.index = 0
        self.high = [0] * self.keys  # next offset per key
        self.holes: list[set[int]] = [set() for _ in range(self.keys)]  # offsets with no value
        self.overrides: dict[tuple[int, int], int] = {}  # (key, offset) -> value, when not the default
        self.lost: set[tuple[int, int]] = set()  # offsets the broker lost (injected)
        self.position = [0] * self.keys  # the owning consumer's next offset per key
        self.has_read = [False] * self.keys  # the owner's current process read the key (ok poll)
        self.last_read = [-1] * self.keys  # last offset the owner read
        self.process = list(range(self.threads))
        self.generation = [0] * self.threads
        self.assigned = [
            [k for k in range(self.keys) if k % spec.consumers == t - spec.producers]
            if t >= spec.producers
            else []
            for t in range(self.threads)
        ]
        self.cursor = [0] * self.threads
        self.needs_assign = [t >= spec.producers for t in range(self.threads)]
        self.protected = [False] * self.threads  # no crash: an injected poll anomaly waits on it
        self.txn_values = 0
        self.pending: dict[int, tuple[Any, ...]] = {}
        self.busy: list[int] = []
        self.idle: list[int] = list(range(self.threads))
        self.triggers = {name: int(spec.n_calls * self.rng.uniform(0.2, 0.6)) for name in spec.anomalies}
        self.waiting: list[str] = []  # anomalies whose moment came, not yet injected
        self.lost_next: set[int] = set()  # keys whose next ok send the broker loses
        self.lost_keys: list[int] = []

    def below(self, n: int) -> int:
        """A uniform integer in [0, n) (faster than `randrange`)."""
        return int(self.rng.random() * n)

    # -- operations ------------------------------------------------------------------------

    def _op(self, thread: int, kind: OpType, f: str, value: JsonValue) -> Operation:
        operation = Operation(self.index, self.process[thread], kind, f, value, time=self.index * 1000)
        self.index += 1
        return operation

    def value(self, key: int, offset: int) -> int:
        value = self.overrides.get((key, offset))
        return offset * self.keys + key if value is None else value

    def valued(self, key: int, offset: int) -> bool:
        return offset not in self.holes[key] and (key, offset) not in self.lost

    def _new_process(self, thread: int) -> None:
        self.generation[thread] += 1
        self.process[thread] = thread + self.generation[thread] * self.threads
        if thread >= self.spec.producers:
            self.needs_assign[thread] = True
            for key in self.assigned[thread]:
                self.has_read[key] = False

    # -- invocations -----------------------------------------------------------------------

    def _invoke(self, thread: int) -> Operation:
        spec, rng = self.spec, self.rng
        if thread < spec.producers:
            if rng.random() < spec.crash_share:
                self.pending[thread] = ("crash",)
                return self._op(thread, OpType.INVOKE, "crash", None)
            return self._invoke_send(thread)
        if self.needs_assign[thread]:
            self.pending[thread] = ("assign",)
            return self._op(thread, OpType.INVOKE, "assign", list(self.assigned[thread]))
        roll = rng.random()
        if roll < spec.crash_share and not self.protected[thread]:
            self.pending[thread] = ("crash",)
            return self._op(thread, OpType.INVOKE, "crash", None)
        if roll < spec.crash_share + 0.002:
            self.pending[thread] = ("assign",)
            return self._op(thread, OpType.INVOKE, "assign", list(self.assigned[thread]))
        if roll < spec.crash_share + 0.002 + spec.txn_share:
            key = self.below(self.keys)
            self.txn_values += 1
            value = -self.txn_values
            self.pending[thread] = ("txn", key, value)
            return self._op(thread, OpType.INVOKE, "txn", [["poll"], ["send", key, value]])
        self.pending[thread] = ("poll",)
        return self._op(thread, OpType.INVOKE, "poll", [["poll"]])

    def _invoke_send(self, thread: int) -> Operation:
        spec, rng = self.spec, self.rng
        count = 1 if rng.random() < 0.9 else 2 + self.below(2)
        keys = [self.below(self.keys) for _ in range(count)]
        roll = rng.random()
        outcome = (
            "ok"
            if roll >= spec.fail_share + spec.info_share
            else "fail"
            if roll < spec.fail_share
            else "info"
        )
        applied = outcome == "ok" or (outcome == "info" and rng.random() < 0.5)
        wrong_ack: int | None = None
        if "G1a" in self.waiting and outcome == "ok" and count == 1:
            self._done(
                "G1a",
                key=str(keys[0]),
                offset=self.high[keys[0]],
                value=self.value(keys[0], self.high[keys[0]]),
            )
            outcome = "fail"  # ... yet the broker keeps it: an aborted read to come
        if "inconsistent-offsets" in self.waiting and outcome == "ok" and count == 1:
            wrong_ack = self._valued_below(keys[0], self.high[keys[0]])
            if wrong_ack is not None:
                self._done(
                    "inconsistent-offsets", key=str(keys[0]), offset=wrong_ack, real_offset=self.high[keys[0]]
                )
        invocation: list[JsonValue] = []
        completion: list[JsonValue] = []
        for key in keys:
            offset = self.high[key]
            self.high[key] += 1
            value = offset * self.keys + key
            if not applied:
                self.holes[key].add(offset)
            elif outcome == "ok" and key in self.lost_next:
                self.lost_next.discard(key)
                self.lost.add((key, offset))
                self.lost_keys.append(key)
                self._done("lost-write", key=str(key), offset=offset, value=value)
            invocation.append(["send", key, value])
            completion.append(["send", key, [offset if wrong_ack is None else wrong_ack, value]])
        self.pending[thread] = ("send", outcome, invocation, completion)
        return self._op(thread, OpType.INVOKE, "send", invocation)

    # -- completions -----------------------------------------------------------------------

    def _complete(self, thread: int) -> Operation:
        pending = self.pending.pop(thread)
        kind = pending[0]
        if kind == "send":
            _, outcome, invocation, completion = pending
            if outcome == "ok":
                return self._op(thread, OpType.OK, "send", completion)
            operation = self._op(
                thread, OpType.FAIL if outcome == "fail" else OpType.INFO, "send", invocation
            )
            if outcome == "info":
                self._new_process(thread)
            return operation
        if kind == "crash":
            operation = self._op(thread, OpType.INFO, "crash", None)
            self._new_process(thread)
            return operation
        if kind == "assign":
            self.needs_assign[thread] = False
            return self._op(thread, OpType.OK, "assign", list(self.assigned[thread]))
        roll = self.rng.random()
        if kind == "poll" and roll < self.spec.fail_share:
            return self._op(thread, OpType.FAIL, "poll", [["poll"]])
        if (
            kind == "poll"
            and roll < self.spec.fail_share + self.spec.info_share
            and not self.protected[thread]
        ):
            operation = self._op(thread, OpType.INFO, "poll", [["poll"]])
            self._new_process(thread)
            return operation
        reads = self._read(thread, self.max_keys(thread), self.spec.max_batch)
        if kind == "poll":
            return self._op(thread, OpType.OK, "poll", [["poll", reads]])
        _, key, value = pending
        offset = self.high[key]
        self.high[key] += 1
        self.overrides[(key, offset)] = value
        return self._op(thread, OpType.OK, "txn", [["poll", reads], ["send", key, [offset, value]]])

    def max_keys(self, thread: int) -> int:
        return min(4, len(self.assigned[thread]))

    def _read(self, thread: int, keys: int, batch: int) -> dict[str, JsonValue]:
        """What an ok poll by `thread` returns now: up to `batch` values from each of the next
        `keys` assigned keys (round robin)."""
        result: dict[str, JsonValue] = {}
        assigned = self.assigned[thread]
        for _ in range(keys):
            key = assigned[self.cursor[thread] % len(assigned)]
            self.cursor[thread] += 1
            pairs, self.position[key] = self._pairs(key, self.position[key], batch)
            if pairs:
                result[str(key)] = pairs
                self.has_read[key] = True
                self.last_read[key] = pairs[-1][0]
        return result

    def _pairs(self, key: int, at: int, batch: int) -> tuple[list[list[int]], int]:
        """Up to `batch` [offset, value] pairs of `key` from offset `at` (holes and lost
        offsets skipped), and the offset after the last one looked at."""
        pairs: list[list[int]] = []
        high = self.high[key]
        while at < high and len(pairs) < batch:
            if self.valued(key, at):
                pairs.append([at, self.value(key, at)])
            at += 1
        return pairs, at

    @property
    def _final_batch(self) -> int:
        """Records per key of a final poll (`final_batch`; None is no limit)."""
        return sys.maxsize if self.spec.final_batch is None else self.spec.final_batch

    # -- injections ------------------------------------------------------------------------

    def _done(self, name: str, **where: JsonValue) -> None:
        self.waiting.remove(name)
        self.spec.injected[name] = dict(where)

    def _valued_below(self, key: int, offset: int) -> int | None:
        for below in range(offset - 1, max(-1, offset - 64), -1):
            if self.valued(key, below):
                return below
        return None

    def _inject(self) -> None:
        """Try each anomaly whose moment has come (those injected at a send wait there)."""
        for name in list(self.waiting):
            if name == "lost-write":
                if not self.lost_next:
                    self.lost_next.add(self.below(self.keys))
            elif name == "duplicate":
                key = self.below(self.keys)
                source = self._valued_below(key, self.high[key])
                if source is not None:
                    offset = self.high[key]
                    self.high[key] += 1
                    self.overrides[(key, offset)] = self.value(key, source)
                    self._done(name, key=str(key), offset=offset, value=self.value(key, source), first=source)
            elif name in ("poll-skip", "nonmonotonic-poll"):
                self._inject_poll(name)

    def _inject_poll(self, name: str) -> None:
        key = self.below(self.keys)
        owner = self.spec.producers + key % self.spec.consumers
        if not self.has_read[key] or self.needs_assign[owner]:
            return
        if name == "nonmonotonic-poll":
            if self.last_read[key] < 0:
                return
            self.position[key] = self.last_read[key]  # the next poll reads it again
            self.protected[owner] = True
            self._done(name, key=str(key), offset=self.last_read[key], process=self.process[owner])
            return
        at = self.position[key]
        while at < self.high[key] and not self.valued(key, at):
            at += 1
        if at >= self.high[key] - 1 or not any(self.valued(key, o) for o in range(at + 1, self.high[key])):
            return  # needs a value to skip and one after it
        self.position[key] = at + 1
        self.protected[owner] = True
        self._done(name, key=str(key), offset=at, value=self.value(key, at), process=self.process[owner])

    # -- the run ---------------------------------------------------------------------------

    def operations(self) -> Iterator[Operation]:
        spec, rng = self.spec, self.rng
        started = 0
        triggers = sorted(self.triggers.items(), key=lambda item: item[1])
        while started < spec.n_calls or self.busy:
            while triggers and started >= triggers[0][1]:
                self.waiting.append(triggers.pop(0)[0])
            if self.waiting and "unseen" in self.waiting:
                self.waiting.remove("unseen")  # injected at the very end
            if self.waiting:
                self._inject()
            if self.busy and (started >= spec.n_calls or not self.idle or rng.random() < 0.5):
                slot = self.below(len(self.busy))
                thread = self.busy[slot]
                self.busy[slot] = self.busy[-1]
                self.busy.pop()
                self.idle.append(thread)
                yield self._complete(thread)
            else:
                slot = self.below(len(self.idle))
                thread = self.idle[slot]
                self.idle[slot] = self.idle[-1]
                self.idle.pop()
                self.busy.append(thread)
                started += 1
                yield self._invoke(thread)
        yield from self._final()

    def _sequential_send(self, key: int) -> Iterator[Operation]:
        offset = self.high[key]
        self.high[key] += 1
        value = offset * self.keys + key
        yield self._op(0, OpType.INVOKE, "send", [["send", key, value]])
        yield self._op(0, OpType.OK, "send", [["send", key, [offset, value]]])

    def _final(self) -> Iterator[Operation]:
        """The final polls: every consumer reads everything left (or, with
        `final_polls="from-start"`, every thread reads every key from the start, as Jepsen's
        `final-polls` does); then the unseen send."""
        for key in self.lost_keys:  # a later value, so the lost one is below what is read
            yield from self._sequential_send(key)
        if self.spec.final_polls == "from-start":
            yield from self._final_from_start()
        else:
            yield from self._final_rest()
        if "unseen" in self.spec.anomalies:
            key = self.below(self.keys)
            self.spec.injected["unseen"] = {"key": str(key), "offset": self.high[key]}
            yield from self._sequential_send(key)

    def _final_from_start(self) -> Iterator[Operation]:
        """Each thread: crash (a new process), assign every key seeking to the beginning, poll
        until every key is read to its end."""
        every_key = list(range(self.keys))
        for thread in range(self.threads):
            yield self._op(thread, OpType.INVOKE, "crash", None)
            yield self._op(thread, OpType.INFO, "crash", None)
            self._new_process(thread)
            self.needs_assign[thread] = False
            yield self._op(thread, OpType.INVOKE, "assign", list(every_key))
            yield self._op(thread, OpType.OK, "assign", list(every_key))
            positions = [0] * self.keys
            while any(positions[key] < self.high[key] for key in every_key):
                yield self._op(thread, OpType.INVOKE, "poll", [["poll"]])
                reads: dict[str, JsonValue] = {}
                for key in every_key:
                    pairs, positions[key] = self._pairs(key, positions[key], self._final_batch)
                    if pairs:
                        reads[str(key)] = pairs
                yield self._op(thread, OpType.OK, "poll", [["poll", reads]])

    def _final_rest(self) -> Iterator[Operation]:
        """Every consumer reads what is left of its keys."""
        for thread in range(self.spec.producers, self.threads):
            if self.needs_assign[thread]:
                yield self._op(thread, OpType.INVOKE, "assign", list(self.assigned[thread]))
                self.needs_assign[thread] = False
                yield self._op(thread, OpType.OK, "assign", list(self.assigned[thread]))
            while any(self.position[key] < self.high[key] for key in self.assigned[thread]):
                yield self._op(thread, OpType.INVOKE, "poll", [["poll"]])
                reads = self._read(thread, len(self.assigned[thread]), self._final_batch)
                yield self._op(thread, OpType.OK, "poll", [["poll", reads]])
