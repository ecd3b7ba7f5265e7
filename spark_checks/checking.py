"""What both engines run: pick the model, split a history into independent parts, check a part.

The engines differ only in *where* these functions run: in this process (`--engine local`)
or in Spark tasks (`--engine spark`). Nothing here imports pyspark, so every verdict and
every piece of evidence is the same whichever engine produced it (and is unit-tested
without a JVM).

Splitting (P-compositionality): a history of independent objects is linearizable iff each
object's sub-history is (Herlihy & Wing). Register-like models split by the operation's
`key`; Kafka histories split by topic-partition key: a `poll` or `txn` that touches several
keys becomes one sub-call per key holding only that key's micro-operations.

Budgets (`Budget`): a part that cannot be decided within its budget is `unknown`, never a
guess. `deadline` is the instant (`time.time()`, so it means the same in a Spark task) by
which the whole verification must be done: a part started after it is not checked, a Kafka
part gets the time left, and a linearizability part, whose search can use any amount of
time, gets its share of the time left (`check_part`'s `parts_left`), so one hard part
cannot starve the others (c50-bad: four keys are too hard for any budget, the other six are
refuted in milliseconds each).
"""

from __future__ import annotations

import json
import math
import operator
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, field, replace
from typing import Any, cast, overload

import orjson

from reference.models import Prepared, key_partition, resolve_conventions
from spark_checks import kafka_checker, linearizability, maelstrom_kafka
from spark_checks.history import Call, CheckResult, JsonValue, Operation, Outcome, Verdict

KAFKA_FUNCTIONS = frozenset({"send", "poll", "assign", "subscribe", "txn", "commit", "crash", "debug"})


@dataclass(frozen=True)
class Budget:
    """How much a part may cost before its verdict becomes `unknown`: `max_seconds` and
    `max_states` per part, `max_memory_bytes` of search cache per part (an estimate, see
    `linearizability`), and `deadline`, a `time.time()` instant by which every part must be
    done. A budget that is not a positive number (NaN, zero, negative) is a `ValueError`."""

    max_seconds: float = 60.0
    max_states: int = 10_000_000
    max_memory_bytes: int = linearizability.DEFAULT_MAX_MEMORY_BYTES
    deadline: float = math.inf

    def __post_init__(self) -> None:
        linearizability.check_budget(self.max_seconds, self.max_states, self.max_memory_bytes)
        if math.isnan(self.deadline):
            raise ValueError("the deadline must be a time, got nan")


@dataclass(frozen=True)
class KafkaContext:
    """The few facts about a Kafka history that every key's check needs: computed once over
    the whole history, then shipped with each part (they are small)."""

    subscriptions: tuple[Call, ...] = ()  # assign/subscribe calls: they belong to every key's part
    sub_via: tuple[str, ...] = ()  # which of assign/subscribe the test used
    committed_info: frozenset[int] = frozenset()  # info sends that must have committed (read elsewhere)
    has_transactions: bool = False  # cross-key cycles (G1c) are searched only then
    prepared: kafka_checker.Assignments | None = field(default=None, compare=False, repr=False)
    """`subscriptions` prepared for many keys' checks (made on first use when None)."""
    whole_by_keys: bool = False
    """The whole-history part may be found from the keys' own facts (`WHOLE_FACTS`): set for
    the first round of the distributed stages (`distributed.subscriptions_context`)."""

    def assignments(self) -> kafka_checker.Assignments:
        """`subscriptions` prepared for the per-key checks."""
        return self.prepared or kafka_checker.Assignments(self.subscriptions)


@dataclass(frozen=True)
class Plan:
    """What to check a history against."""

    model: str
    conventions: dict[str, JsonValue] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    kafka: KafkaContext | None = None
    whole_calls: bool = False
    """Kafka: stage 1 ships every data call whole to the whole-history part, not only its
    `kafka_checker.CallFacts` (see `ships_whole_calls`)."""

    def with_kafka_context(self, context: KafkaContext) -> Plan:
        """This plan with the whole-history Kafka facts filled in."""
        return replace(self, kafka=context)

    def ships_whole_calls(self) -> bool:
        """Whether stage 1 ships the whole-history part (`CYCLES_PART`) every data call whole,
        for Elle's search over them all: asked (`whole_calls`: a transaction among the
        history's first operations, or the engine's second round, below), under `--ww-deps`
        (ww edges need every key's version order at once) or for Maelstrom (its stats count
        every call). Else it ships each data call's `kafka_checker.CallFacts` alone, all the
        per-key route needs (`whole_by_keys`): no value is decoded, `_max_offsets` is found
        in parallel where the calls are read, and the part's bytes fall to 25% (Jepsen-shaped
        polls of several pairs) to 63% (the bench's one-pair polls) at 10^6 operations. When
        the keys then find the part must be checked in full (a transaction, a backward read),
        the engine reads the history again with `whole_calls`, for that part's calls (a second
        stage 1, on a path taken only then): the calls are not put together from the keys'
        pieces, which lack the calls that touch no key, the order of micro-operations across
        keys and the times, so they are read as they are."""
        return (
            self.whole_calls
            or bool(self.conventions.get("ww_deps", False))
            or maelstrom_kafka.is_maelstrom(self.conventions)
        )


_INVOKE_INDEX = operator.attrgetter("invoke_index")

WHOLE_FACTS = "whole_history_facts"
"""The evidence entry by which, on the per-key route (`whole_by_keys`), each key's part hands
its share of the whole-history part (`kafka_checker.KeyFacts`) and the whole-history part its
own (`kafka_checker.HistoryFacts`); `whole_by_keys` takes them out before any report."""

CYCLES_PART = "cross-key cycles"
"""The part that holds every data call of a Kafka history, for what needs them all at once:
Elle's cycle search (G0, G1c, G1c-realtime, the `*-cycle-exists` entries,
`empty-transaction-graph`), realtime lag and Jepsen's `unseen` merge."""


def kafka_options(plan: Plan, context: KafkaContext) -> kafka_checker.KafkaOptions:
    """The Kafka checker's options: the verify flags (`sub_via`, `ww_deps`, `unseen` in the
    plan's conventions) over the facts inferred from the history."""
    given = plan.conventions.get("sub_via")
    sub_via = tuple(sorted(str(f) for f in given)) if isinstance(given, list) else context.sub_via
    return kafka_checker.KafkaOptions(
        sub_via=sub_via,
        sub_via_inferred=not isinstance(given, list),
        ww_deps=bool(plan.conventions.get("ww_deps", False)),
        unseen=str(plan.conventions.get("unseen", "kafkaspec")),
    )


def kafka_context(calls: Iterable[Call]) -> KafkaContext:
    """One pass over a Kafka history's calls for the facts every part needs."""
    subscriptions: list[Call] = []
    data: list[Call] = []
    has_transactions = False
    for call in calls:
        if call.f in kafka_checker.SUBSCRIPTION_FUNCTIONS:
            subscriptions.append(call)
        elif call.f in kafka_checker.DATA_FUNCTIONS:
            data.append(call)
            has_transactions = has_transactions or call.f == "txn"
    return KafkaContext(
        subscriptions=tuple(subscriptions),
        sub_via=tuple(sorted({call.f for call in subscriptions if call.outcome is not Outcome.FAIL})),
        committed_info=kafka_checker.committed_info_calls(data),
        has_transactions=has_transactions,
        prepared=kafka_checker.Assignments(subscriptions),
    )


_REMEMBERED: list[tuple[list[bytes], KafkaContext]] = []
"""`remembered_context`'s one entry: the payloads and the context made of them."""


def remembered_context(
    payloads: list[bytes], decode: Callable[[list[bytes]], tuple[Sequence[Call], Any]]
) -> KafkaContext:
    """`kafka_context` of the assign/subscribe calls `decode` reads from these CALLS payloads
    (sorted: their order does not matter), kept for the next call with the same payloads (one
    entry, until other payloads come). Every bucket of the Spark engine's stage 2 holds all of
    a history's assign/subscribe calls, and each Python worker checks several buckets of one
    history: at 10^7 bench operations 33.5 MB, 0.34-0.71 CPU-s a bucket to decode and prepare
    (a fifth to a third of a key bucket's), now once per worker. One worker's 11 buckets at
    10^7: 28.1-29.1 -> 24.7-26.2 CPU-s. It keeps 209 MB and the payloads in a worker at 10^7,
    until the next history's calls replace them."""
    if _REMEMBERED and _REMEMBERED[0][0] == payloads:
        return _REMEMBERED[0][1]
    context = kafka_context(sorted(decode(payloads)[0], key=_INVOKE_INDEX))
    _REMEMBERED[:] = [(payloads, context)]
    return context


def detect_model(sample: Sequence[Operation]) -> str:
    """Guess the model from the functions in the first operations of a history."""
    functions = {operation.f for operation in sample}
    if functions & {"send", "poll"} or (functions <= KAFKA_FUNCTIONS and functions & {"assign", "subscribe"}):
        return "kafka"
    if "txn" in functions:
        values = [operation.value for operation in sample if operation.f == "txn" and operation.value]
        if any(
            isinstance(micro, list) and micro and micro[0] in ("send", "poll")  # a tuple: no hashing
            for value in values
            if isinstance(value, list)  # anything else is malformed: the model's checks say so
            for micro in value
        ):
            return "kafka"
        return "multi-register"
    if functions & {"get", "put", "append"}:
        return "kv"
    if "cas" in functions:
        return "cas-register"
    if functions & {"acquire", "release"}:
        return "mutex"
    if functions & {"enqueue", "dequeue"}:
        return "fifo-queue"
    if functions & {"read", "write"}:
        return "register"
    seen = ", ".join(sorted(functions)) or "none"
    raise ValueError(f"cannot tell the model from the operations' functions ({seen}); pass --model")


def partition_key_json(key: JsonValue) -> str:
    """A part's key as canonical JSON text (Spark groups by it; `null` for the whole history).
    A key orjson cannot write (an integer beyond 64 bits, a lone surrogate) is written by the
    standard library, with ASCII escapes, which `json.loads` reads back exactly."""
    try:
        return orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:
        return json.dumps(key, sort_keys=True, separators=(",", ":"))


def split_calls(plan: Plan, calls: Iterable[Call]) -> Iterator[tuple[str, Call]]:
    """Each call (or per-key piece of a call) with the key of the part it belongs to."""
    if plan.model == "kafka":
        for call in calls:
            for key, piece in kafka_checker.split_call(call):
                yield partition_key_json(key), piece
        return
    partition_key = linearizability.get_model(plan.model).partition_key
    names: dict[Hashable, str] = {}  # the JSON of string keys and None, written once each
    for call in calls:
        frozen = partition_key(call)
        if frozen is None or frozen.__class__ is str:  # not 1 for True: only str and None are cached
            name = names.get(frozen)
            if name is None:
                name = names[frozen] = partition_key_json(frozen)
            yield name, call
        else:
            yield partition_key_json(frozen), call


@dataclass(frozen=True)
class ModelCalls(Sequence[Call]):
    """Calls in invocation order, each with its form in the sequential model
    (`SequentialModel.prepare`: the model's input, output and outcome, or None for a call the
    search leaves out), made once, where the calls are read (`model_calls`), as Porcupine's
    parsers give its checker typed inputs and outputs. `check_part` takes them as they are;
    plain calls it prepares itself."""

    calls: Sequence[Call]
    forms: Sequence[Prepared | None]

    def __len__(self) -> int:
        return len(self.calls)

    @overload
    def __getitem__(self, index: int) -> Call: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Call]: ...
    def __getitem__(self, index: int | slice) -> Call | Sequence[Call]:
        return self.calls[index]


class DecodedCalls(Sequence[Call]):
    """A part's calls as stage 2 decodes them (`distributed.decode_part`): the shipped rows of
    fields, made into `Call`s (`as_call`) only when read as calls, once. The first round's
    check of a Kafka key (`check_key_deciding_commits`) reads them as `kafka_checker.Piece`s
    (`as_pieces`) instead: 10^5-operation bench history, compiled, callgrind of the per-key
    parts 1,656 M instructions with a `Call` made per piece (564 M of it making them)."""

    __slots__ = ("_as_call", "_as_pieces", "_calls", "rows")

    def __init__(
        self,
        rows: list[list[Any]],
        as_call: Callable[[list[Any]], Call],
        as_pieces: Callable[[list[list[Any]]], list[kafka_checker.Piece]],
    ) -> None:
        self.rows = rows
        self._as_call = as_call
        self._as_pieces = as_pieces
        self._calls: list[Call] | None = None

    def calls(self) -> list[Call]:
        """The rows as `Call`s (made on the first read)."""
        if self._calls is None:
            as_call = self._as_call
            self._calls = [as_call(fields) for fields in self.rows]
        return self._calls

    def pieces(self) -> list[kafka_checker.Piece]:
        """The rows as `kafka_checker.Piece`s, a new list."""
        return self._as_pieces(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Call]:
        return iter(self.calls())

    @overload
    def __getitem__(self, index: int) -> Call: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Call]: ...
    def __getitem__(self, index: int | slice) -> Call | Sequence[Call]:
        return self.calls()[index]


def model_calls(plan: Plan, calls: Iterable[Call]) -> ModelCalls:
    """`calls` in invocation order with their forms in `plan`'s sequential model (not Kafka);
    a value the model cannot hold is a `ValueError` naming the call."""
    ordered = sorted(calls, key=_INVOKE_INDEX)
    return ModelCalls(ordered, linearizability.prepare_calls(ordered, plan.model, plan.conventions))


def split_model_calls(plan: Plan, calls: ModelCalls) -> dict[str, ModelCalls]:
    """`split_calls` of calls in the model's form: the parts by key, each in invocation order.
    A history of one key (Porcupine's etcd logs) is its one part as it is."""
    if not calls.calls:
        return {}
    if linearizability.get_model(plan.model).partition_key is key_partition:
        # Grouped by the key field itself: one key (a str or None, which equal no other JSON
        # value: 1 == True == 1.0 are three parts) is one part, told in C.
        keys = [call.key for call in calls.calls]
        first = keys[0]
        if (first is None or first.__class__ is str) and keys.count(first) == len(keys):
            return {partition_key_json(first): calls}
    names = [name for name, _ in split_calls(plan, calls.calls)]
    parts: dict[str, tuple[list[Call], list[Prepared | None]]] = {}
    for name, call, form in zip(names, calls.calls, calls.forms, strict=True):
        part = parts.get(name)
        if part is None:
            part = parts[name] = ([], [])
        part[0].append(call)
        part[1].append(form)
    return {name: ModelCalls(*part) for name, part in parts.items()}


def check_part(plan: Plan, key_json: str, calls: Sequence[Call], parts_left: int = 1) -> CheckResult:
    """Check one independent part; the result's `partition` is its key. `parts_left`: the
    parts still to check before the deadline, this one included (a linearizability part gets
    that share of the time left)."""
    started = time.perf_counter()
    late = _not_checked(plan, key_json, calls)
    if late is not None:
        return late
    forms = calls.forms if isinstance(calls, ModelCalls) else None
    ordered = calls.calls if isinstance(calls, ModelCalls) else sorted(calls, key=_INVOKE_INDEX)
    if key_json == CYCLES_PART:
        return _with_seconds(_check_cycles(plan, ordered), time.perf_counter() - started)
    key = None if key_json == "null" else json.loads(key_json)  # one-key histories: no parse
    budget = plan.budget
    if plan.model == "kafka":
        context = plan.kafka or KafkaContext()
        options = kafka_options(plan, context)
        result = kafka_checker.check_kafka_key(
            key,
            ordered,
            sub_via=options.sub_via,
            sub_via_inferred=options.sub_via_inferred,
            committed_info=context.committed_info,
            assignments=context.assignments(),
            deadline=budget.deadline,
        )
    else:
        now = time.time()
        # The part is one partition of the model already (split by its key): searched as it is.
        return linearizability.check_partition(
            ordered,
            plan.model,
            plan.conventions,
            budget.max_seconds,
            budget.max_states,
            partition=key,
            max_memory_bytes=budget.max_memory_bytes,
            deadline=now + (budget.deadline - now) / max(parts_left, 1),
            forms=forms,
            began=started,
        )
    return _with_seconds(result, time.perf_counter() - started)


def _not_checked(plan: Plan, key_json: str, calls: Sized) -> CheckResult | None:
    """The `unknown` result of a part reached after the deadline (None before it)."""
    if time.time() < plan.budget.deadline:
        return None
    reason = f"not checked: {kafka_checker.BUDGET_EXHAUSTED_REASON}"
    return unchecked_result(plan, key_json, len(calls), reason)


def unchecked_result(plan: Plan, key_json: str, operations: int, reason: str) -> CheckResult:
    """The `unknown` result of a part with `operations` calls that was not checked, or not to
    the end, and why (`reason`): the deadline, or another part found invalid (`--fail-fast`)."""
    key: JsonValue = CYCLES_PART if key_json == CYCLES_PART else json.loads(key_json)
    if plan.model == "kafka":
        context = plan.kafka or KafkaContext()
        conventions = kafka_checker.unchecked_conventions(kafka_options(plan, context).sub_via)
        return kafka_checker.budget_exhausted(key, operations, conventions, reason)
    return CheckResult(
        checker=linearizability.CHECKER,
        model=plan.model,
        partition=key,
        verdict=Verdict.UNKNOWN,
        operations=operations,
        evidence={"reason": reason},
        conventions=dict(resolve_conventions(plan.conventions)),
    )


def check_key_deciding_commits(
    plan: Plan, context: KafkaContext, key_json: str, calls: Sequence[Call]
) -> tuple[CheckResult, frozenset[int]]:
    """`check_part` of one Kafka key's pieces under `context` with its `committed_info` taken
    from this part alone (`kafka_checker.committed_info_calls(calls)`), and that set: what a
    distributed engine decides first, in the same pass as the check."""
    started = time.perf_counter()
    late = _not_checked(plan, key_json, calls)
    if late is not None:
        return late, frozenset()
    ordered: Iterable[Call | kafka_checker.Piece]
    if isinstance(calls, DecodedCalls):
        pieces = calls.pieces()  # no `Call` made
        pieces.sort(key=_INVOKE_INDEX)
        ordered = pieces
    else:
        ordered = sorted(calls, key=_INVOKE_INDEX)
    options = kafka_options(plan, context)
    facts: list[kafka_checker.KeyFacts] | None = [] if _by_keys(plan, context) else None
    result, own = kafka_checker.check_kafka_key_deciding_commits(
        json.loads(key_json),
        ordered,
        sub_via=options.sub_via,
        sub_via_inferred=options.sub_via_inferred,
        assignments=context.assignments(),
        deadline=plan.budget.deadline,
        key_facts=facts,
    )
    if facts:
        result.evidence[WHOLE_FACTS] = facts[0].to_json()
    return _with_seconds(result, time.perf_counter() - started), own


def _by_keys(plan: Plan, context: KafkaContext) -> bool:
    """Whether the whole-history part is found from the keys' facts: on the first round of the
    distributed stages, when stage 1 ships its calls' facts alone (`Plan.ships_whole_calls`;
    under `--ww-deps`, for Maelstrom or with a transaction seen it is checked in full)."""
    return context.whole_by_keys and not plan.ships_whole_calls()


def whole_by_keys(plan: Plan, results: list[CheckResult]) -> tuple[list[CheckResult], bool]:
    """On the per-key route, the whole-history part's result made from the facts the parts
    handed in (`kafka_checker.whole_from_facts`; the facts leave the evidence), and whether
    the whole-history part must be checked in full instead (a transaction, or a key read a
    value before its sender was invoked: Elle's graph is searched). A key part without facts
    (not checked, out of time) leaves the whole-history part unknown, with its reason."""
    lean: CheckResult | None = None
    keys: list[kafka_checker.KeyFacts] = []
    missing: CheckResult | None = None
    for result in results:
        facts = result.evidence.pop(WHOLE_FACTS, None)
        if result.partition == CYCLES_PART:
            lean = result if facts is not None else None
            history = facts
        elif facts is not None:
            keys.append(kafka_checker.KeyFacts.from_json(facts))
        elif missing is None:
            missing = result
    if lean is None:
        return results, False
    if missing is not None:
        reason = missing.evidence.get("reason", kafka_checker.BUDGET_EXHAUSTED_REASON)
        whole = unchecked_result(plan, CYCLES_PART, lean.operations, str(reason))
    else:
        assert isinstance(history, list)
        sub_via, inferred, *facts_json = history
        options = kafka_checker.KafkaOptions(
            tuple(sub_via),
            bool(inferred),
            False,
            str(plan.conventions.get("unseen", "kafkaspec")),
        )
        merged = kafka_checker.whole_from_facts(
            kafka_checker.HistoryFacts.from_json(facts_json), keys, options
        )
        if merged is None:
            return results, True
        whole = CheckResult(
            merged.checker,
            merged.model,
            CYCLES_PART,
            merged.verdict,
            merged.operations,
            merged.evidence,
            merged.conventions,
            lean.seconds,
        )
    return [whole if result is lean else result for result in results], False


def check_whole_facts(
    plan: Plan, windows: Sequence[Any], decode: Callable[[Any], list[list[Any]]]
) -> CheckResult:
    """The whole-history part on the per-key route (`_by_keys`, required) from its data calls'
    facts as stage 1 ships them (`kafka_checker.facts_fields`), in windows (stage 1's CALLS
    payloads) that `decode` gives (`loads`; `kafka_checker.facts_rows` of calls): its `HistoryFacts` in the
    evidence (`WHOLE_FACTS`); the rest comes from the keys' facts (`whole_by_keys`), and the
    verdict waits for them."""
    started = time.perf_counter()
    context = plan.kafka or KafkaContext()
    if time.time() >= plan.budget.deadline:  # not checked: its calls counted
        late = _not_checked(plan, CYCLES_PART, [row for window in windows for row in decode(window)])
        if late is not None:
            return late
    assert _by_keys(plan, context), "the whole-history part's facts serve the per-key route only"
    options = kafka_options(plan, context)
    history = kafka_checker.history_facts_of_windows(windows, decode, context.subscriptions)
    facts = [list(options.sub_via or ()), options.inferred(), *cast("list[JsonValue]", history.to_json())]
    conventions = kafka_checker.unchecked_conventions(options.sub_via)
    evidence: dict[str, JsonValue] = {WHOLE_FACTS: facts}
    seconds = time.perf_counter() - started
    return CheckResult(
        "kafka", "kafka", CYCLES_PART, Verdict.VALID, history.operations, evidence, conventions, seconds
    )


def _check_cycles(plan: Plan, calls: Sequence[Call]) -> CheckResult:
    """What needs the whole Kafka history (`kafka_checker.check_kafka_whole`): the other
    anomaly types are reported by the per-key parts. The part holds every data call, so it
    decides which `info` sends committed itself."""
    context = plan.kafka or KafkaContext()
    options = kafka_options(plan, context)
    if _by_keys(plan, context):
        return check_whole_facts(plan, [calls], kafka_checker.facts_rows)
    whole = kafka_checker.check_kafka_whole(
        [*calls, *context.subscriptions],
        sub_via=options.sub_via,
        sub_via_inferred=options.sub_via_inferred,
        ww_deps=options.ww_deps,
        unseen=options.unseen,
        deadline=plan.budget.deadline,
    )
    if maelstrom_kafka.is_maelstrom(plan.conventions):  # Maelstrom's :stats check needs every call
        whole = maelstrom_kafka.with_stats(whole, [*calls, *context.subscriptions])
    return CheckResult(
        whole.checker,
        whole.model,
        CYCLES_PART,
        whole.verdict,
        whole.operations,
        whole.evidence,
        whole.conventions,
    )


def cycle_calls(plan: Plan, calls: Iterable[Call]) -> Iterator[Call]:
    """The calls of the cycle part: every data call of a Kafka history (cycles need no
    transaction: a poll that read a send invoked after it completed is one)."""
    if plan.model != "kafka" or plan.kafka is None:
        return
    for call in calls:
        if call.f in kafka_checker.DATA_FUNCTIONS:
            yield call


def _with_seconds(result: CheckResult, seconds: float) -> CheckResult:
    return CheckResult(
        result.checker,
        result.model,
        result.partition,
        result.verdict,
        result.operations,
        result.evidence,
        result.conventions,
        seconds,
    )


def combine_verdicts(verdicts: Iterable[Verdict]) -> Verdict:
    """The verdict of the whole: invalid if any part is, else unknown if any part is, else valid."""
    seen = set(verdicts)
    if Verdict.INVALID in seen:
        return Verdict.INVALID
    if Verdict.UNKNOWN in seen:
        return Verdict.UNKNOWN
    return Verdict.VALID
