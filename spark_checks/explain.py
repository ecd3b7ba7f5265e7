"""Why a part of a history failed, in sentences: one per anomaly or unplaceable call.

The checkers return evidence as JSON-ready records (`CheckResult.evidence`); this module turns
each record into a sentence a reader can follow without knowing the record's fields, the way
Elle explains its anomalies ("T1 wrote x=1 which T2 read, and T2 wrote y=2 which T1 read")
and Jepsen's Kafka checker names its error types (`jepsen.tests.kafka`: lost-write, duplicate,
inconsistent-offsets, poll-skip, nonmonotonic-poll, int-poll-skip, unseen, ...). Each
`Explanation` also names the calls it involves, with the role each plays (writer, reader,
T1, the call that cannot be placed), and the key, offsets and values, so that the HTML report
can label them on its timeline and in its per-key view, and `kafkaspec verify` prints the same
sentences (text) or lists them (`--json`, "explanations").

A call is named by its process, function and history indices: "process 0's send (#2-#3)"
is the call invoked at index 2 of the history and completed at index 3.

For linearizability (Wing & Gong / Lowe's search, as Porcupine and Knossos report it) the
sentence says which call no order explains and what the model holds after the longest
linearizable prefix: "no order of the calls explains read -> 2 by process 11 (#84-#85):
after the longest linearizable prefix (43 of 85 calls) the register holds 0". The evidence
names calls by invocation index only; the process comes from the history when it is at hand
(`lookup`), and is left out otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from spark_checks.history import CheckResult, JsonValue, Operation, OpType, Process, Verdict

MAX_PER_TYPE: Final = 50
"""Sentences per anomaly type and part; the rest are counted in one more sentence."""

CYCLE_NAMES: Final = {
    "G0": "write cycle",
    "G0-realtime": "write cycle with real-time order",
    "G1c": "circular information flow",
    "G1c-realtime": "circular information flow with real-time order",
}
"""Adya's and Elle's names of the cycle anomalies Jepsen's Kafka checker reports."""

_NEXT_VALUE: Final = "value'"
"""Elle's name of the later value of a ww step."""

MODEL_STATE_PHRASES: Final = {
    "register": "the register holds {state}",
    "cas-register": "the register holds {state}",
    "kv": "the key holds {state}",
    "multi-register": "the registers hold {state}",
    "mutex": "the lock is {state}",
    "fifo-queue": "the queue holds {state}",
    "unordered-queue": "the queue holds {state}",
    "set": "the set holds {state}",
    "kafka-log": "the log holds {state}",
}
"""How the model's state after the longest linearizable prefix reads in a sentence."""


@dataclass(frozen=True)
class CallRef:
    """A call an explanation involves, and the role it plays there."""

    invoke_index: int
    complete_index: int | None
    role: str
    process: Process | None = None
    f: str | None = None
    outcome: str | None = None

    def indices(self) -> tuple[int, ...]:
        """The history indices of its invocation and completion."""
        return (
            (self.invoke_index,) if self.complete_index is None else (self.invoke_index, self.complete_index)
        )


@dataclass(frozen=True)
class Explanation:
    """One sentence about one anomaly (or one unplaceable call) of one part."""

    part: JsonValue
    kind: str
    sentence: str
    calls: tuple[CallRef, ...] = ()
    key: str | None = None
    offsets: tuple[int, ...] = ()
    values: tuple[JsonValue, ...] = ()
    allowed: bool = False

    def to_json(self) -> dict[str, JsonValue]:
        """As listed by `verify --json` ("explanations")."""
        return {
            "part": self.part,
            "type": self.kind,
            "sentence": self.sentence,
            "allowed": self.allowed,
            "key": self.key,
            "offsets": list(self.offsets),
            "calls": [
                {
                    "role": call.role,
                    "invoke_index": call.invoke_index,
                    "complete_index": call.complete_index,
                    "process": call.process,
                    "f": call.f,
                }
                for call in self.calls
            ],
        }


@dataclass(frozen=True)
class CallSpan:
    """Who made a call and where it ended: what a sentence needs beyond the evidence."""

    process: Process
    f: str
    invoke_index: int
    complete_index: int | None


Lookup = Mapping[int, CallSpan]
"""Calls by the history index of their invocation."""


def call_spans(operations: Iterable[Operation], wanted: Collection[int] | None = None) -> dict[int, CallSpan]:
    """The calls of `operations` by invocation index (only those invoked at `wanted` indices
    when given): each invocation paired with its process's next operation. Stops reading once
    every wanted call has completed."""
    spans: dict[int, CallSpan] = {}
    open_calls: dict[Process, Operation] = {}
    waiting = None if wanted is None else set(wanted)
    for operation in operations:
        if operation.type is OpType.INVOKE:
            if waiting is None or operation.index in waiting:
                open_calls[operation.process] = operation
            continue
        invocation = open_calls.pop(operation.process, None)
        if invocation is None:
            continue
        spans[invocation.index] = CallSpan(
            invocation.process, invocation.f, invocation.index, operation.index
        )
        if waiting is not None:
            waiting.discard(invocation.index)
            if not waiting:
                return spans
    for invocation in open_calls.values():
        spans[invocation.index] = CallSpan(invocation.process, invocation.f, invocation.index, None)
    return spans


# ---------------------------------------------------------------------------------------
# Naming things
# ---------------------------------------------------------------------------------------


def show(value: JsonValue, limit: int = 60) -> str:
    """A value as a reader expects it: strings quoted, nil for None, JSON otherwise, cut."""
    if value is None:
        text = "nil"
    elif isinstance(value, str):
        text = json.dumps(value)
    else:
        try:
            text = json.dumps(value, default=str)
        except ValueError:
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _indices(ref: Mapping[str, Any]) -> str:
    invoke, complete = ref.get("invoke_index"), ref.get("complete_index")
    return f"#{invoke}, never completed" if complete is None else f"#{invoke}-#{complete}"


def call_name(ref: Mapping[str, Any] | None) -> str:
    """Process 0's send (#2-#3), process 1's failed send (#4-#5): an op_ref record."""
    if not ref:
        return "an unknown call"
    return f"process {show(ref.get('process'))}'s {_short(ref)}"


def _short(ref: Mapping[str, Any] | None) -> str:
    """ "send (#2-#3)": a call of a process already named."""
    if not ref:
        return "unknown call"
    adjective = {"fail": "failed ", "info": "indeterminate "}.get(str(ref.get("type")), "")
    return f"{adjective}{ref.get('f')} ({_indices(ref)})"


def _ref(record: Mapping[str, Any] | None, role: str) -> CallRef | None:
    if not isinstance(record, Mapping) or not isinstance(record.get("invoke_index"), int):
        return None
    complete = record.get("complete_index")
    return CallRef(
        invoke_index=int(record["invoke_index"]),
        complete_index=complete if isinstance(complete, int) else None,
        role=role,
        process=record.get("process"),
        f=record.get("f"),
        outcome=record.get("type"),
    )


def _refs(*pairs: tuple[Any, str]) -> tuple[CallRef, ...]:
    found = [_ref(record, role) for record, role in pairs]
    return tuple(ref for ref in found if ref is not None)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _listed(values: Sequence[Any], total: Any = None, limit: int = 8) -> str:
    shown = ", ".join(show(value, 24) for value in values[:limit])
    count = total if isinstance(total, int) else len(values)
    return shown + (f", ... ({count} in all)" if count > min(len(values), limit) else "")


def _ints(values: Any) -> tuple[int, ...]:
    if not isinstance(values, list):
        return ()
    return tuple(value for value in values if isinstance(value, int) and not isinstance(value, bool))


# ---------------------------------------------------------------------------------------
# Kafka (Jepsen's anomaly types)
# ---------------------------------------------------------------------------------------


def _kafka_sentence(kind: str, record: Mapping[str, Any]) -> tuple[str, tuple[CallRef, ...]]:
    """The sentence for one record of `kind`, and the calls it names."""
    key = str(record.get("key"))
    values = _list(record, "values")
    offsets = _list(record, "offsets")
    if kind == "lost-write":
        writer, reader = record.get("writer"), record.get("max-read")
        seen = (
            f"although {call_name(reader)} read further in {key}'s log (position "
            f"{record.get('max-read-index')}, past this value's {record.get('index')})"
            if reader
            else f"although later positions of {key}'s log were read"
        )
        acknowledged = (
            "and acknowledged"
            if (writer or {}).get("type") == "ok"
            else "(it committed: a value it sent was read)"
        )
        return (
            f"lost write: {key}={show(record.get('value'))} (offset {record.get('offset')}), sent by "
            f"{call_name(writer)} {acknowledged}, was never read, {seen}.",
            _refs((writer, "writer"), (reader, "read past it")),
        )
    if kind == "duplicate":
        return (
            f"duplicate: {key}={show(record.get('value'))}, sent by {call_name(record.get('writer'))}, "
            f"appears at {_plural(int(record.get('count') or len(offsets)), 'offset')} of key {key} "
            f"({_listed(offsets)}); {call_name(record.get('first_reader'))} read it first.",
            _refs((record.get("writer"), "writer"), (record.get("first_reader"), "first reader")),
        )
    if kind == "inconsistent-offsets":
        writers = _list(record, "writers")
        described = [
            f"{show(value)} (sent by {call_name(writer) if writer else 'no known call'})"
            for value, writer in zip(values, [*writers, *([None] * len(values))], strict=False)
        ]
        return (
            f"inconsistent offsets: offset {record.get('offset')} of key {key} holds "
            f"{_plural(len(values), 'different value')}: {' and '.join(described)}.",
            _refs(
                *(
                    (writer, f"wrote {show(value, 12)}")
                    for value, writer in zip(values, writers, strict=False)
                )
            ),
        )
    if kind in ("poll-skip", "nonmonotonic-poll", "nonmonotonic-send"):
        first, second = [*_list(record, "ops"), None, None][:2]
        process = show((second or first or {}).get("process"))
        verb = "sent" if kind == "nonmonotonic-send" else "polled"
        before = f"{verb} {key}={show(_at(values, 0))} at offset {_at(offsets, 0)} in its {_short(first)}"
        after = f"{key}={show(_at(values, 1))} at offset {_at(offsets, 1)} in its {_short(second)}"
        if kind == "poll-skip":
            sentence = (
                f"poll skip: process {process} {before}, then jumped to {after}, skipping {_skipped(record)}."
            )
        else:
            name = kind.replace("-", " ")
            sentence = (
                f"{name}: process {process} {before}, then went back to {after} "
                f"(the log position moved by {record.get('delta')}, not forward)."
            )
        return sentence, _refs((first, "before"), (second, "after"))
    if kind.startswith("int-"):
        op = record.get("op")
        verb = "sent" if "send" in kind else "read"
        pair = (
            f"{verb} {key}={show(_at(values, 0))} at offset {_at(offsets, 0)} and then "
            f"{key}={show(_at(values, 1))} at offset {_at(offsets, 1)}"
        )
        if kind.endswith("skip"):
            rest = f"skipping {_skipped(record)} in between"
        else:
            rest = "going backwards in the log"
        name = {"int-poll-skip": "internal poll skip", "int-send-skip": "internal send skip"}.get(
            kind, kind.replace("int-", "internal ").replace("-", " ")
        )
        return f"{name}: {call_name(op)} {pair} within one call, {rest}.", _refs((op, "this call"))
    if kind == "G1a":
        writer, reader = record.get("writer"), record.get("reader")
        return (
            f"aborted read (G1a): {call_name(reader)} read {key}={show(record.get('value'))} at offset "
            f"{record.get('offset')}, which only {call_name(writer)} sent.",
            _refs((writer, "failed writer"), (reader, "reader")),
        )
    if kind == "precommitted-read":
        op = record.get("op")
        return (
            f"precommitted read: {call_name(op)} read its own value{'s' if len(values) > 1 else ''} "
            f"{_listed(values or [record.get('value')])} of key {key} before it committed.",
            _refs((op, "read its own write")),
        )
    if kind == "no-writer-of-value":
        reader = record.get("reader")
        return (
            f"value without a writer: {call_name(reader)} read {key}={show(record.get('value'))} at "
            f"offset {record.get('offset')}, which no call sent.",
            _refs((reader, "reader")),
        )
    if kind == "unseen":
        writers = _list(record, "writers")
        count = int(record.get("count") or len(values))
        return (
            f"unseen: {_plural(count, 'value')} sent to key {key} by acknowledged calls "
            f"{'was' if count == 1 else 'were'} never polled ({_listed(values, count)}).",
            _refs(*((writer, "never read") for writer in writers[:8])),
        )
    if kind in CYCLE_NAMES:
        return _cycle_sentence(kind, record)
    if kind.endswith("-cycle-exists"):
        subgraph = _list(record, "subgraph")
        return (
            f"{kind}: the dependency graph has a cycle among "
            f"{_plural(int(record.get('scc_size') or 0), 'call')} "
            f"over {'+'.join(str(edge) for edge in subgraph)} edges, so the history is not "
            f"{record.get('not')} (Elle's consistency model).",
            (),
        )
    if kind == "empty-transaction-graph":
        return (
            f"empty transaction graph: among {_plural(int(record.get('nodes') or 0), 'call')} no call read "
            "another's write or followed it in real time, so the cycle search had nothing to check "
            "(Jepsen's checker counts this as an error).",
            (),
        )
    return f"{kind}: {show(dict(record), 300)}", ()


def _list(record: Mapping[str, Any], name: str) -> list[Any]:
    value = record.get(name)
    return value if isinstance(value, list) else []


def _skipped(record: Mapping[str, Any]) -> str:
    skipped = _list(record, "skipped")
    count = record.get("skipped_count")
    total = count if isinstance(count, int) else len(skipped)
    return f"{_plural(total, 'value')} ({_listed(skipped, total)})"


def _at(items: Sequence[Any], position: int) -> Any:
    return items[position] if len(items) > position else None


def _cycle_sentence(kind: str, record: Mapping[str, Any]) -> tuple[str, tuple[CallRef, ...]]:
    """Elle's explanation of a cycle: name the calls T1..Tn, then say why each precedes the next."""
    cycle = _list(record, "cycle")
    steps = _list(record, "steps")
    names = [f"T{number}" for number in range(1, len(cycle) + 1)]
    lets = "; ".join(f"{name} = {call_name(call)}" for name, call in zip(names, cycle, strict=True))
    reasons = []
    for position, step in enumerate(steps):
        if not isinstance(step, Mapping) or not cycle:
            continue
        source, target = names[position % len(names)], names[(position + 1) % len(names)]
        key = str(step.get("key"))
        if step.get("type") == "wr":
            reasons.append(f"{source} sent {key}={show(step.get('value'))}, which {target} read")
        elif step.get("type") == "ww":
            reasons.append(
                f"{source} sent {key}={show(step.get('value'))} and {target} sent "
                f"{key}={show(step.get(_NEXT_VALUE))} right after it in {key}'s log"
            )
        elif step.get("type") == "realtime":
            reasons.append(
                f"{source} completed (#{step.get('complete_index')}) before {target} "
                f"was invoked (#{step.get('invoke_index')})"
            )
        else:
            reasons.append(f"{source} precedes {target} ({step.get('type')})")
    sentence = (
        f"{kind} ({CYCLE_NAMES[kind]}): let {lets}. Then {', and '.join(reasons)}: "
        "each call must come before the next, around a cycle."
    )
    return sentence, _refs(*zip(cycle, names, strict=True))


def _kafka_explanations(result: CheckResult, limit: int) -> list[Explanation]:
    anomalies = result.evidence.get("anomalies")
    if not isinstance(anomalies, dict):
        return _undecided(result)
    invalid_because = result.evidence.get("invalid_because")
    errors = set(invalid_because) if isinstance(invalid_because, list) else set(anomalies)
    counts = result.evidence.get("anomaly_counts")
    found: list[Explanation] = []
    for kind in sorted(anomalies, key=lambda name: (name not in errors, name)):
        records = anomalies[kind] if isinstance(anomalies[kind], list) else []
        for record in records[:limit]:
            if not isinstance(record, Mapping):
                continue
            sentence, calls = _kafka_sentence(kind, record)
            found.append(
                Explanation(
                    part=result.partition,
                    kind=kind,
                    sentence=sentence
                    if kind in errors
                    else sentence[:-1] + " (allowed under this test's settings).",
                    calls=calls,
                    key=None if record.get("key") is None else str(record.get("key")),
                    offsets=_offsets_of(record),
                    values=tuple(_values_of(record)),
                    allowed=kind not in errors,
                )
            )
        total = counts.get(kind) if isinstance(counts, dict) else None
        if isinstance(total, int) and total > min(len(records), limit):
            found.append(
                Explanation(
                    part=result.partition,
                    kind=kind,
                    sentence=f"... and {total - min(len(records), limit)} more {kind} anomalies in this part "
                    f"({total} in all; see --json for the records).",
                    allowed=kind not in errors,
                )
            )
    if result.verdict is Verdict.UNKNOWN:
        found.extend(_undecided(result))
    return found


def _offsets_of(record: Mapping[str, Any]) -> tuple[int, ...]:
    offsets = list(_ints(record.get("offsets")))
    offset = record.get("offset")
    if isinstance(offset, int) and not isinstance(offset, bool):
        offsets.append(offset)
    offsets.extend(
        int(step["offset"])
        for step in _list(record, "steps")
        if isinstance(step, Mapping) and isinstance(step.get("offset"), int)
    )
    return tuple(sorted(set(offsets)))


def _values_of(record: Mapping[str, Any]) -> list[JsonValue]:
    values = list(record.get("values") or []) if isinstance(record.get("values"), list) else []
    if "value" in record:
        values.append(record["value"])
    skipped = record.get("skipped")
    if isinstance(skipped, list):
        values.extend(skipped)
    return values


# ---------------------------------------------------------------------------------------
# Linearizability
# ---------------------------------------------------------------------------------------


def state_phrase(model: str, state: str) -> str:
    """ "the register holds 0", "the queue holds (1, 2)", "the model's state is ..."."""
    if model == "mutex":
        state = {"True": "held", "False": "free"}.get(state, state)
    return MODEL_STATE_PHRASES.get(model, "the model's state is {state}").format(state=state)


def _lin_call(index: int, description: str, lookup: Lookup | None, role: str) -> tuple[str, CallRef]:
    span = lookup.get(index) if lookup is not None else None
    if span is None:
        return f"{description} (invoked at #{index})", CallRef(index, None, role)
    where = (
        f"#{index}-#{span.complete_index}"
        if span.complete_index is not None
        else f"#{index}, never completed"
    )
    return (
        f"{description} by process {show(span.process)} ({where})",
        CallRef(index, span.complete_index, role, span.process, span.f),
    )


def _linearizability_explanations(result: CheckResult, lookup: Lookup | None) -> list[Explanation]:
    evidence = result.evidence
    if result.verdict is Verdict.UNKNOWN:
        return _undecided(result)
    stuck = _ints(evidence.get("unlinearizable"))
    blocking = evidence.get("blocking_call")
    given = evidence.get("descriptions")
    descriptions: dict[str, Any] = given if isinstance(given, dict) else {}
    prefix = _ints(evidence.get("longest_linearizable_prefix"))
    searched = evidence.get("calls_searched")
    if not isinstance(blocking, int) and stuck:
        blocking = stuck[0]
    if not isinstance(blocking, int):
        return [Explanation(result.partition, "not-linearizable", "not linearizable (no call was named).")]
    named, blocking_ref = _lin_call(
        blocking, str(descriptions.get(str(blocking), "a call")), lookup, "cannot be placed"
    )
    where = "" if result.partition is None else f" (part {show(result.partition)})"
    why = evidence.get("why")
    if evidence.get("method") == "traceable" and isinstance(why, str):
        # Decided without a search (spark_checks.traceable): no prefix, a reason instead.
        refs = [blocking_ref] + [
            _lin_call(index, str(descriptions.get(str(index), "a call")), lookup, "involved")[1]
            for index in stuck
            if index != blocking
        ]
        sentence = f"not linearizable{where}: {named} cannot be placed: {why}."
        return [Explanation(result.partition, "not-linearizable", sentence, tuple(refs))]
    state = evidence.get("state_after_prefix")
    after = (
        f"after the longest linearizable prefix ({len(prefix)}"
        + (f" of {searched}" if isinstance(searched, int) else "")
        + f" calls) {state_phrase(result.model, str(state))}"
    )
    others = [index for index in stuck if index != blocking]
    refs = [blocking_ref]
    tail = ""
    if others:
        listed = []
        for index in others[:6]:
            text, ref = _lin_call(
                index, str(descriptions.get(str(index), "a call")), lookup, "cannot be placed next either"
            )
            listed.append(text)
            refs.append(ref)
        more = f" and {len(others) - 6} more" if len(others) > 6 else ""
        tail = f", and none of the other calls open there ({'; '.join(listed)}{more}) can come next"
    sentence = f"not linearizable{where}: no order of the calls explains {named}: {after}{tail}."
    return [Explanation(result.partition, "not-linearizable", sentence, tuple(refs))]


def _undecided(result: CheckResult) -> list[Explanation]:
    reason = result.evidence.get("reason") or "the budget ran out"
    prefix = _ints(result.evidence.get("longest_linearizable_prefix"))
    found = f"; the longest linearizable prefix found has {_plural(len(prefix), 'call')}" if prefix else ""
    return [Explanation(result.partition, "unknown", f"undecided: {reason}{found}.")]


# ---------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------


def explain_result(
    result: CheckResult, lookup: Lookup | None = None, limit: int = MAX_PER_TYPE
) -> list[Explanation]:
    """The sentences for one part's result: none for a valid part without anomalies, one per
    anomaly record (at most `limit` per type, then one that counts the rest) for Kafka, one
    for a part that is not linearizable, one saying why a part is undecided."""
    if result.checker == "kafka":
        return _kafka_explanations(result, limit)
    if result.verdict is Verdict.VALID:
        return []
    return _linearizability_explanations(result, lookup)


def explain_results(
    results: Iterable[CheckResult], lookup: Lookup | None = None, limit: int = MAX_PER_TYPE
) -> list[Explanation]:
    """`explain_result` of each result in turn."""
    return [explanation for result in results for explanation in explain_result(result, lookup, limit)]


def indices_to_look_up(results: Iterable[CheckResult]) -> set[int]:
    """The history indices whose operations make the linearizability sentences complete (the
    calls that cannot be placed): their invocations name the process, and the operations
    after them, up to the completion, are looked for by the caller."""
    wanted: set[int] = set()
    for result in results:
        if result.checker != "kafka" and result.verdict is Verdict.INVALID:
            wanted.update(_ints(result.evidence.get("unlinearizable")))
            blocking = result.evidence.get("blocking_call")
            if isinstance(blocking, int):
                wanted.add(blocking)
    return wanted


def deviations_from_jepsen(results: Iterable[CheckResult]) -> list[dict[str, Any]]:
    """Where a Kafka history's verdict or types differ by design from what Jepsen's checker
    would say (the whole-history part's `deviations_from_jepsen`, e.g. the unseen merge). The
    reports show them on a valid history too: that is where such a difference hides."""
    return [
        deviation
        for result in results
        for deviation in result.evidence.get("deviations_from_jepsen") or []
        if isinstance(deviation, dict)
    ]


def deviation_sentence(deviation: Mapping[str, Any]) -> str:
    """One deviation from Jepsen in words: its name, the keys, what Jepsen does instead."""
    keys = ", ".join(show(key) for key in deviation.get("keys") or [])
    return f"deviation from Jepsen: {deviation.get('name')} (keys {keys}): Jepsen {deviation.get('jepsen')}"
