"""What both engines run: pick the model, split a history into independent parts, check a part.

The engines differ only in *where* these functions run: in this process (`--engine local`)
or in Spark tasks (`--engine spark`). Nothing here imports pyspark, so every verdict and
every piece of evidence is the same whichever engine produced it (and is unit-tested
without a JVM).

Splitting (P-compositionality): a history of independent objects is linearizable iff each
object's sub-history is (Herlihy & Wing). Register-like models split by the operation's
`key`; Kafka histories split by topic-partition key: a `poll` or `txn` that touches several
keys becomes one sub-call per key holding only that key's micro-operations.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import orjson

from spark_checks import kafka_checker, linearizability
from spark_checks.history import Call, CheckResult, JsonValue, Operation, Outcome, Verdict

KAFKA_FUNCTIONS = frozenset({"send", "poll", "assign", "subscribe", "txn", "commit", "crash", "debug"})
MODEL_NAMES = (
    "kafka",
    "register",
    "cas-register",
    "kv",
    "multi-register",
    "mutex",
    "fifo-queue",
    "kafka-log",
)


@dataclass(frozen=True)
class Budget:
    """How much one part may cost before its verdict becomes `unknown`."""

    max_seconds: float = 60.0
    max_states: int = 10_000_000


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

    def with_kafka_context(self, context: KafkaContext) -> Plan:
        """This plan with the whole-history Kafka facts filled in."""
        return Plan(self.model, self.conventions, self.budget, context)


_INVOKE_INDEX = operator.attrgetter("invoke_index")

CYCLES_PART = "cross-key cycles"
"""The part that searches the whole Kafka history for G1c cycles (transactional histories)."""


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


def detect_model(sample: Sequence[Operation]) -> str:
    """Guess the model from the functions in the first operations of a history."""
    functions = {operation.f for operation in sample}
    if functions & {"send", "poll"} or (functions <= KAFKA_FUNCTIONS and functions & {"assign", "subscribe"}):
        return "kafka"
    if "txn" in functions:
        values = [operation.value for operation in sample if operation.f == "txn" and operation.value]
        if any(
            isinstance(micro, list) and micro and micro[0] in {"send", "poll"}
            for value in values
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
    """A part's key as canonical JSON text (Spark groups by it; `null` for the whole history)."""
    return orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode("utf-8")


def split_calls(plan: Plan, calls: Iterable[Call]) -> Iterator[tuple[str, Call]]:
    """Each call (or per-key piece of a call) with the key of the part it belongs to."""
    if plan.model == "kafka":
        for call in calls:
            for key, piece in kafka_checker.split_call(call):
                yield partition_key_json(key), piece
        return
    model = linearizability.MODELS[plan.model]
    for call in calls:
        yield partition_key_json(model.partition_key(call)), call


def check_part(plan: Plan, key_json: str, calls: Sequence[Call]) -> CheckResult:
    """Check one independent part; the result's `partition` is its key."""
    started = time.perf_counter()
    ordered = sorted(calls, key=_INVOKE_INDEX)
    if key_json == CYCLES_PART:
        return _with_seconds(_check_cycles(plan, ordered), time.perf_counter() - started)
    key = json.loads(key_json)
    if plan.model == "kafka":
        context = plan.kafka or KafkaContext()
        result = kafka_checker.check_kafka_key(
            key,
            ordered,
            sub_via=context.sub_via,
            committed_info=context.committed_info,
            assignments=context.assignments(),
        )
    else:
        results = linearizability.check_linearizability(
            ordered,
            plan.model,
            plan.conventions,
            max_seconds=plan.budget.max_seconds,
            max_states=plan.budget.max_states,
        )
        result = _single(results, key)
    return _with_seconds(result, time.perf_counter() - started)


def check_key_deciding_commits(
    plan: Plan, context: KafkaContext, key_json: str, calls: Sequence[Call]
) -> tuple[CheckResult, frozenset[int]]:
    """`check_part` of one Kafka key's pieces under `context` with its `committed_info` taken
    from this part alone (`kafka_checker.committed_info_calls(calls)`), and that set: what a
    distributed engine decides first, in the same pass as the check."""
    started = time.perf_counter()
    ordered = sorted(calls, key=_INVOKE_INDEX)
    result, own = kafka_checker.check_kafka_key_deciding_commits(
        json.loads(key_json), ordered, sub_via=context.sub_via, assignments=context.assignments()
    )
    return _with_seconds(result, time.perf_counter() - started), own


def _check_cycles(plan: Plan, calls: Sequence[Call]) -> CheckResult:
    """G1c / G1c-realtime over the whole transactional history; other anomaly types are
    reported by the per-key parts, so only the cross-key ones are kept here."""
    context = plan.kafka or KafkaContext()
    whole = kafka_checker.check_kafka(
        [*calls, *context.subscriptions], sub_via=context.sub_via, committed_info=context.committed_info
    )
    anomalies = {
        name: records
        for name, records in whole.evidence.get("anomalies", {}).items()
        if name in kafka_checker.WHOLE_HISTORY_ANOMALY_TYPES
    }
    counts = {
        name: whole.evidence.get("anomaly_counts", {}).get(name, len(records))
        for name, records in anomalies.items()
    }
    allowed = kafka_checker.allowed_error_types(context.sub_via)
    invalid_because = sorted(name for name in anomalies if name not in allowed)
    evidence: dict[str, JsonValue] = {
        "anomalies": anomalies,
        "anomaly_counts": counts,
        "invalid_because": invalid_because,
    }
    verdict = Verdict.INVALID if invalid_because else Verdict.VALID
    return CheckResult(
        whole.checker, whole.model, CYCLES_PART, verdict, whole.operations, evidence, whole.conventions
    )


def cycle_calls(plan: Plan, calls: Iterable[Call]) -> Iterator[Call]:
    """The calls of the cycle part: every data call, when the history has transactions."""
    if plan.model != "kafka" or plan.kafka is None or not plan.kafka.has_transactions:
        return
    for call in calls:
        if call.f in kafka_checker.DATA_FUNCTIONS:
            yield call


def _single(results: Sequence[CheckResult], key: JsonValue) -> CheckResult:
    # A part is already one partition of the model, so the checker returns one result.
    if len(results) == 1:
        result = results[0]
        return CheckResult(
            result.checker,
            result.model,
            key,
            result.verdict,
            result.operations,
            result.evidence,
            result.conventions,
            result.seconds,
        )
    verdict = combine_verdicts(result.verdict for result in results)
    evidence = {"parts": [result.evidence for result in results]}
    first = results[0]
    return CheckResult(
        first.checker,
        first.model,
        key,
        verdict,
        sum(r.operations for r in results),
        evidence,
        first.conventions,
    )


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
