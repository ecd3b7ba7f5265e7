"""Kafka client histories: Jepsen's anomaly taxonomy, with Jepsen's definitions and names.

This checker reimplements the analysis of Jepsen's Kafka workload (`jepsen.tests.kafka`,
function `analysis` and the `*-cases` functions it calls; cycle search as in `elle.txn`). It
is pure Python (no pyspark): Spark only partitions, ships and gathers.

History shape (Jepsen's Kafka workload)
---------------------------------------
Values are lists of micro-operations: `["send", k, v]` completes as `["send", k, [offset, v]]`
(offset may be null when unknown); `["poll"]` completes as `["poll", {k: [[offset, v], ...]}]`.
`f` is `send`, `poll` or `txn` (any mix). `assign`/`subscribe` carry a list of keys and replace
the process's assignment. `commit`, `crash`, `debug`, `debug-topic-partitions` and any other
function are tolerated and ignored. Keys are compared as strings (JSON object keys are strings,
so a send to `7` and a poll of `"7"` are the same key); values must be hashable (ints).

Which value of a call is analysed (Jepsen analyses completion operations): an `ok` call's
output; for `fail`/`info`, the completion's value (`Call.completion_value`) when there was
one, else the invocation's value (what Jepsen's client puts in an `info` completion). As in
Jepsen, sends are read only from `send`/`txn` calls and polls only from `poll`/`txn` calls.

Preliminaries (`version-orders`, `writer-of`, `readers-of`, `must-have-committed?`)
----------------------------------------------------------------------------------
* A send *must have committed* if its call is `ok`, or `info` and some value it sent (to any
  key) was read by an `ok` poll/txn.
* The log of a key maps offsets to the values seen there: from every poll (also `fail`/`info`
  ones: Kafka pollers must be safe) and from the sends of calls that must have committed.
  Offsets become dense *indices* (holes ignored). The version order takes one value per
  offset (Jepsen takes an arbitrary one of a conflicting set; here the smallest, so results
  are deterministic); a value's index is its last position in that order.
* `writer-of[k][v]`: the last completed call that sent v to k (any outcome).

Anomalies (the function that defines each, in `jepsen.tests.kafka`)
-------------------------------------------------------------------
`inconsistent-offsets` (`version-orders`): an offset of a key holds two or more values.
`duplicate` (`duplicate-cases`): a value appears at more than one offset of a key.
`lost-write` (`lost-write-cases`): for a key read by some `ok` call, `bound` is the highest
    first-index of a value read by an `ok` call; every value whose *last* index is <= bound
    and that no `ok` call read is lost, if its writer must have committed.
`G1a` (`g1a-cases`): an `ok` poll/txn read a value sent by a `fail`ed call.
`precommitted-read` (`precommitted-read-cases`): a call polled a value it sent itself.
`poll-skip` / `nonmonotonic-poll` (`poll-skip+nonmonotonic-cases`): per process, over
    consecutive calls reading key k: delta = index(first value this call read of k) -
    index(last value the previous `ok` call read of k); > 1 is a skip, < 1 nonmonotonic. Every
    poll/txn is compared (also `fail`/`info` ones), only `ok` ones move the position; an
    `ok`/`info` assign or subscribe keeps the position of the keys it names only.
`int-poll-skip` / `int-nonmonotonic-poll` (`int-poll-skip+nonmonotonic-cases`): the same
    delta between consecutive values of one key read inside one call.
`int-send-skip` / `int-nonmonotonic-send` (`int-send-skip+nonmonotonic-cases`): the same
    between consecutive values of one key sent inside one completed call.
`nonmonotonic-send` (`nonmonotonic-send-cases`): per process over `ok`/`info` send/txn
    calls, the first value a call sent to k is not after the last value the previous call
    sent to k (delta < 1); `ok`/`info` assign/subscribe prune as for polls.
`unseen` (`unseen`): values sent by `ok` calls that no `ok` call ever polled (one record per
    key with the count).
`G1c`, `G1c-realtime` (`cycles!`, Elle's `txn/cycles!` with `:strict-serializable`): cycles
    of completed send/poll/txn calls over *wr* edges (the writer of v -> every other reader
    of v) and *realtime* edges (an `ok` call -> every `ok`/`info` call invoked after it
    completed). *ww* edges are off (Jepsen's default `:ww-deps false`) and *rw* edges are
    commented out upstream, so `G0*` cycles cannot arise; one cycle is reported per strongly
    connected component: a pure-wr cycle (`G1c`) if one exists, else one with a realtime edge.
    Values are compared against version-order indices only when both are known (else delta
    is taken as 1, as upstream).

Validity (`allowed-error-types`, `checker`)
-------------------------------------------
The history is invalid iff some anomaly type outside the allowed set was found:
* always allowed: `int-send-skip`, `G0`, `G0-process`, `G0-realtime`, `PL-1-cycle-exists`,
  `strong-PL-1-cycle-exists`;
* also allowed when the test used `subscribe` (`:sub-via`): `poll-skip` and
  `nonmonotonic-poll`, since rebalances legitimately move consumers. `sub_via` is inferred as
  the set of assign/subscribe functions present in the history unless given.
So `unseen` (checked at the end of the history) is an error, as upstream.

Deviations, stated: `no-writer-of-value` (a value was read that no call sent) is reported as
an error: upstream throws (`:no-writer-of-value`) and the check ends `:unknown`. A
`precommitted-read` is reported per (call, key) with all such values (upstream: the first key
of a call only). `:rebalance-log` (which exempts keys from int-poll checks) has no place in the
canonical format and is not supported. Elle's `:empty-transaction-graph` is not reported.
Realtime lag, consume counts and plots are left out. Calls are analysed in completion order;
calls that never completed (`info`, no completion index) come last.

Records
-------
`evidence["anomalies"]` maps each type found to JSON-ready records, sorted (by key, then
content). A call is named by `op_ref`: `{process, f, type, invoke_index, complete_index}`.
Records carry the `key`, the `value(s)` and `offset(s)` involved, Jepsen's fields (`delta`,
`skipped`, `index`, `max-read-index`, `count`) and the calls: `ops` (previous and current call
of a process), `op` (one call), `writer`/`reader`/`max-read`/`first_reader`, `writers` (per
value), or `cycle` + `steps` (each step `wr` with key and value, or `realtime`). Lists of
values are cut at `MAX_LISTED` with an exact `*_count`. `anomaly_counts` is exact even when
`max_per_type` cuts the lists.

P-compositionality
------------------
Every anomaly type except `G1c`/`G1c-realtime` is a function of one key's sub-history:
`split_by_key` routes each call to the keys it touches and every assign/subscribe to every
key (`partition_key` returns `ALL_KEYS`: an assign that does not name k ends the tracking of
k). `split_call` cuts one call into per-key pieces for shipping; it gives no piece for an
assign/subscribe, which the caller must add to every part. `check_kafka_key` checks one part,
`merge_results` joins the parts. The one cross-key input is whether an `info` send committed
(a value it sent to another key was read): pass `committed_info=committed_info_calls(history)`
for results equal to `check_kafka`'s; without it a key uses its own evidence only. Cycles
(`G1c*`) need the whole history: only `check_kafka` looks for them.

Cost: one pass over the calls into per-key dicts keyed by offset and value, then one pass per
key; about 10^5 calls/s in CPython. Every check takes a `deadline` (a `time.time()` instant,
none by default): the clock is read every `_CALLS_PER_CLOCK_READ` calls of the first pass, per
key of the second and per component of the cycle search, and a check still running at the
deadline answers `unknown` with the reason (`budget_exhausted`), never a partial verdict.
The cycle graph is built only when a call both sends and polls or a read precedes its send
(otherwise no cycle can exist; see `_cycles`).
"""

from __future__ import annotations

import enum
import gc
import json
import math
import sys
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Iterable
from typing import Any, Final, Literal

from spark_checks.history import (
    UNNAMED,
    Call,
    CheckResult,
    HistoryError,
    JsonValue,
    Outcome,
    Position,
    Process,
    Verdict,
    new_call,
)

Key = str
"""A topic-partition key, normalised to a string."""

Record = dict[str, JsonValue]
"""One anomaly, JSON-ready."""

DATA_FUNCTIONS: Final = frozenset({"send", "poll", "txn"})
SUBSCRIPTION_FUNCTIONS: Final = frozenset({"assign", "subscribe"})

ANOMALY_TYPES: Final = (
    "G1a",
    "G1c",
    "G1c-realtime",
    "duplicate",
    "inconsistent-offsets",
    "int-nonmonotonic-poll",
    "int-nonmonotonic-send",
    "int-poll-skip",
    "int-send-skip",
    "lost-write",
    "no-writer-of-value",
    "nonmonotonic-poll",
    "nonmonotonic-send",
    "poll-skip",
    "precommitted-read",
    "unseen",
)
"""Every anomaly type this checker reports."""

WHOLE_HISTORY_ANOMALY_TYPES: Final = frozenset({"G1c", "G1c-realtime"})
"""Found only by `check_kafka`: cycles span keys."""

PER_KEY_ANOMALY_TYPES: Final = frozenset(ANOMALY_TYPES) - WHOLE_HISTORY_ANOMALY_TYPES
"""Found identically by `check_kafka_key` on every key + `merge_results`."""

ALWAYS_ALLOWED: Final = frozenset(
    {"int-send-skip", "G0", "G0-process", "G0-realtime", "PL-1-cycle-exists", "strong-PL-1-cycle-exists"}
)
"""`allowed-error-types`: Kafka transactions interleave writes, so these are expected."""

ALLOWED_UNDER_SUBSCRIBE: Final = frozenset({"poll-skip", "nonmonotonic-poll"})
"""`allowed-error-types` when `:sub-via` contains `:subscribe`: rebalances move consumers."""

MAX_LISTED: Final = 32
"""Longest list of values inside one record (skipped values, unseen values); counts are exact."""

_CALLS_PER_CLOCK_READ: Final = 4096
"""Calls of the first pass between two reads of the clock (a read costs about a call's work)."""

_SEND: Final = frozenset({"send", ":send"})
_POLL: Final = frozenset({"poll", ":poll"})
_LAST: Final = sys.maxsize // 2
_OK: Final = Outcome.OK
_FAIL: Final = Outcome.FAIL
_INFO: Final = Outcome.INFO


class Broadcast(enum.Enum):
    """Route of a call that every key's sub-history needs (assign, subscribe)."""

    ALL = "all"


ALL_KEYS: Final = Broadcast.ALL
KeyRoute = tuple[Key, ...] | Literal[Broadcast.ALL]

Writes = dict[Key, list[tuple[Any, Any]]]
"""key -> [(offset or None, value)] in send order."""
Reads = dict[Key, list[Any]]
"""key -> [[offset, value], ...] in poll order (several poll micro-ops concatenated)."""


def allowed_error_types(sub_via: Collection[str]) -> frozenset[str]:
    """Anomaly types that do not invalidate a history (Jepsen's `allowed-error-types`)."""
    if "subscribe" in sub_via:
        return ALWAYS_ALLOWED | ALLOWED_UNDER_SUBSCRIBE
    return ALWAYS_ALLOWED


def op_ref(call: Call) -> Record:
    """How a record names a call: its process, function, outcome and history indices."""
    return {
        "process": call.process,
        "f": call.f,
        "type": call.outcome.value,
        "invoke_index": call.invoke_index,
        "complete_index": call.complete_index,
    }


# ---------------------------------------------------------------------------------------
# Reading calls
# ---------------------------------------------------------------------------------------


def _norm_key(key: Any) -> Key:
    return key if key.__class__ is str else str(key)


def analysed_value(call: Call) -> JsonValue:
    """The one value of a call the Kafka checks read (see "Which value of a call is
    analysed" above): the completion's, or the invocation's when unknown. A piece shipped
    with only this value is checked alike."""
    value = call.output if call.outcome is _OK else call.completion_value
    return call.input if value is None else value


def _order(call: Call) -> int:
    """Completion order (Jepsen's history order of completions); never-completed calls last."""
    index = call.complete_index
    return index if index is not None else _LAST + call.invoke_index


def _malformed(call: Call, what: str) -> HistoryError:
    index = call.complete_index if call.complete_index is not None else call.invoke_index
    return HistoryError(
        Position(UNNAMED, index=index),
        f"{call.f} by process {call.process!r} (index {index}): {what}",
    )


def _parse(call: Call, only: Key | None) -> tuple[Writes | None, Reads | None]:
    """A data call's sends and polls by key (only `only`'s when given)."""
    value = analysed_value(call)
    if not value:
        return None, None
    f = call.f
    want_writes = f != "poll"
    want_reads = f != "send"
    writes: Writes | None = None
    reads: Reads | None = None
    if only is not None and value.__class__ is list and len(value) == 1:
        # Fast path, one key's piece of a plain send or poll (nearly every call a per-key
        # check sees); any other shape goes the long way.
        mop = value[0]
        if mop.__class__ is list and len(mop) > 1 and mop[0].__class__ is str:
            name = mop[0]
            polled = mop[1]
            if name in _POLL and polled.__class__ is dict and len(polled) == 1:
                for raw_key, pairs in polled.items():
                    if raw_key.__class__ is str and pairs.__class__ is list:
                        return None, ({raw_key: pairs} if want_reads and raw_key == only else None)
            elif name in _SEND and len(mop) == 3:
                key = mop[1] if mop[1].__class__ is str else str(mop[1])
                sent = mop[2]
                if sent.__class__ is list and len(sent) == 2:
                    return ({key: [(sent[0], sent[1])]} if want_writes and key == only else None), None
    try:
        if want_reads and only is None and len(value) == 1:
            # Fast path, a single poll whose keys are already strings: its map is the reads.
            mop = value[0]
            if mop[0] in _POLL:
                polled = mop[1] if len(mop) > 1 else None
                if not polled:
                    return None, None
                if all(k.__class__ is str and v.__class__ is list for k, v in polled.items()):
                    return None, polled
        for mop in value:
            name = mop[0]
            if name in _SEND:
                if not want_writes:
                    continue
                key = mop[1]
                if key.__class__ is not str:
                    key = str(key)
                if only is not None and key != only:
                    continue
                sent = mop[2]
                if sent.__class__ is list or sent.__class__ is tuple:
                    offset, v = sent
                else:
                    offset, v = None, sent
                if writes is None:
                    writes = {key: [(offset, v)]}
                elif key in writes:
                    writes[key].append((offset, v))
                else:
                    writes[key] = [(offset, v)]
            elif name in _POLL:
                if not want_reads or len(mop) < 2 or mop[1] is None:
                    continue
                for raw_key, pairs in mop[1].items():
                    key = raw_key if raw_key.__class__ is str else str(raw_key)
                    if only is not None and key != only:
                        continue
                    listed = pairs if pairs.__class__ is list else list(pairs)
                    if reads is None:
                        reads = {key: listed}
                    elif key in reads:
                        reads[key] = reads[key] + listed
                    else:
                        reads[key] = listed
            # Other micro-operations are ignored, as Jepsen's op-writes/op-reads do.
    except (TypeError, ValueError, IndexError, AttributeError, KeyError) as error:
        raise _malformed(
            call, f"expected [[send, key, value | [offset, value]] | [poll, {{key: [[offset, v]]}}]]: {error}"
        ) from None
    return writes, reads


def _keys_of(call: Call) -> set[Key]:
    writes, reads = _parse(call, None)
    keys: set[Key] = set()
    if writes:
        keys.update(writes)
    if reads:
        keys.update(reads)
    return keys


def partition_key(call: Call) -> KeyRoute:
    """The keys whose sub-histories need this call: those it sends to or polls, or `ALL_KEYS`
    for assign/subscribe (a key not named by an assign stops being tracked). Other functions
    (crash, commit, debug) touch no key."""
    if call.f in SUBSCRIPTION_FUNCTIONS:
        return ALL_KEYS
    if call.f not in DATA_FUNCTIONS:
        return ()
    return tuple(sorted(_keys_of(call)))


def _restrict(value: JsonValue, key: Key) -> JsonValue:
    if not isinstance(value, list):
        return value
    kept: list[JsonValue] = []
    for mop in value:
        if not isinstance(mop, list | tuple) or not mop:
            continue
        name = mop[0]
        if name in _SEND:
            if len(mop) > 1 and _norm_key(mop[1]) == key:
                kept.append(mop)
        elif name in _POLL:
            if len(mop) > 1 and isinstance(mop[1], dict):
                kept.append([name, {k: v for k, v in mop[1].items() if _norm_key(k) == key}])
            else:
                kept.append(mop)
    return kept


def split_call(call: Call) -> list[tuple[Key, Call]]:
    """A data call as one piece per key it touches, each holding only that key's micro-ops
    (for shipping parts to Spark tasks). Assign/subscribe calls give no piece: they belong to
    every part (`partition_key(call) is ALL_KEYS`); the caller must add them to each part."""
    f = call.f
    if f not in DATA_FUNCTIONS:
        return []
    key = _single_send_key(call) if f != "poll" else None
    if key is not None:
        return [(key, _piece(call, key, call.input, call.output, call.completion_value))]
    keys = sorted(_keys_of(call))
    if len(keys) == 1:
        return [(keys[0], _piece(call, keys[0], call.input, call.output, call.completion_value))]
    inputs = _restrict_each(call.input, keys)
    outputs = _restrict_each(call.output, keys)
    # An ok call's output is its completion's value: restrict it once.
    same = call.completion_value is call.output
    completions = outputs if same else _restrict_each(call.completion_value, keys)
    return [(key, _piece(call, key, inputs[key], outputs[key], completions[key])) for key in keys]


def _single_send_key(call: Call) -> Key | None:
    return single_send_key(analysed_value(call))


def single_send_key(value: JsonValue) -> Key | None:
    """The key of a call whose analysed value is exactly one well-formed send (the commonest
    call of all), which `_keys_of` would find the long way; None for any other shape."""
    if value.__class__ is not list or len(value) != 1:
        return None
    mop = value[0]
    if mop.__class__ is not list or len(mop) != 3 or mop[0].__class__ is not str or mop[0] not in _SEND:
        return None
    sent = mop[2]
    if sent.__class__ is list and len(sent) != 2:
        return None  # malformed: the long way says so
    if sent.__class__ is tuple:
        return None
    return _norm_key(mop[1])


def plain_sends(value: JsonValue) -> list[Key] | None:
    """The keys (distinct, sorted) of a call whose analysed value is only well-formed sends,
    which `split_call` would find the long way; None for any other shape."""
    if value.__class__ is not list or not value:
        return None
    keys: set[Key] = set()
    for mop in value:
        if mop.__class__ is not list or len(mop) != 3 or mop[0].__class__ is not str or mop[0] not in _SEND:
            return None
        sent = mop[2]
        if (sent.__class__ is list and len(sent) != 2) or sent.__class__ is tuple:
            return None  # malformed: the long way says so
        keys.add(_norm_key(mop[1]))
    return sorted(keys)


def plain_poll(value: JsonValue) -> dict[str, Any] | None:
    """The map of a call whose analysed value is one poll of string keys and lists of pairs
    (the other common call), from which `split_call` takes its keys: empty when it polled
    nothing; None for any other shape (`split_call` then finds the keys the long way)."""
    if not value:
        return {}  # `_parse` reads nothing from an empty value
    if value.__class__ is not list or len(value) != 1:
        return None
    mop = value[0]
    if mop.__class__ is not list or not mop or mop[0].__class__ is not str or mop[0] not in _POLL:
        return None
    polled = mop[1] if len(mop) > 1 else None
    if not polled:
        return {}
    if polled.__class__ is not dict:
        return None
    for k, v in polled.items():
        if k.__class__ is not str or v.__class__ is not list:
            return None
    return polled


def restrict_each(value: JsonValue, keys: list[Key]) -> dict[Key, JsonValue]:
    """`split_call`'s restriction of one of a call's values to each of `keys`."""
    return _restrict_each(value, keys)


def _restrict_each(value: JsonValue, keys: list[Key]) -> dict[Key, JsonValue]:
    """`_restrict(value, key)` for every key; one pass for the shapes of a plain poll."""
    if not isinstance(value, list):
        return dict.fromkeys(keys, value)  # `_restrict` leaves anything but a list alone
    if len(value) == 1:
        mop = value[0]
        if mop.__class__ is list and mop and mop[0].__class__ is str and mop[0] in _POLL:
            if len(mop) == 1:
                kept = [mop]
                return dict.fromkeys(keys, kept)
            polled = mop[1]
            if len(mop) == 2 and polled.__class__ is dict and all(k.__class__ is str for k in polled):
                # JSON object keys are distinct strings: `_norm_key(k) == key` only for k == key.
                name = mop[0]
                return {key: [[name, {key: polled[key]} if key in polled else {}]] for key in keys}
    sends = _sends_by_key(value, keys)
    if sends is not None:
        return sends
    return {key: _restrict(value, key) for key in keys}


def _sends_by_key(value: list[Any], keys: list[Key]) -> dict[Key, JsonValue] | None:
    """`_restrict(value, key)` for every key, in one pass, when `value` holds only sends (a
    send to several keys); None for any other shape."""
    grouped: dict[Key, list[Any]] = {key: [] for key in keys}
    for mop in value:
        if mop.__class__ is not list or len(mop) < 2 or mop[0].__class__ is not str or mop[0] not in _SEND:
            return None
        kept = grouped.get(_norm_key(mop[1]))
        if kept is not None:
            kept.append(mop)
    return dict(grouped)


def _piece(call: Call, key: Key, given: JsonValue, output: JsonValue, completion_value: JsonValue) -> Call:
    # A constructor directly: `dataclasses.replace` costs several times more, once per call
    # of every history.
    return new_call(
        call.process,
        call.f,
        given,
        output,
        call.outcome,
        call.invoke_index,
        call.complete_index,
        key,
        call.invoke_time,
        call.complete_time,
        completion_value,
    )


def split_by_key(calls: Iterable[Call]) -> dict[Key, list[Call]]:
    """Each key's sub-history (in completion order): the calls that touch it, plus every
    assign/subscribe call."""
    parts: dict[Key, list[Call]] = {}
    broadcast: list[Call] = []
    for call in calls:
        route = partition_key(call)
        if route is ALL_KEYS:
            broadcast.append(call)
            continue
        for key in route:
            part = parts.get(key)
            if part is None:
                parts[key] = [call]
            else:
                part.append(call)
    for part in parts.values():
        part.extend(broadcast)
        part.sort(key=_order)
    return parts


def commit_facts(call: Call) -> tuple[list[tuple[Key, Any]], list[tuple[Key, Any]]]:
    """What `committed_info_calls` joins, for one call: the (key, value) pairs an `ok` data
    call read, and the (key, value) pairs an `info` data call sent. A distributed engine
    computes these per call and joins them to get the same set."""
    if call.f not in DATA_FUNCTIONS:
        return [], []
    if call.outcome is _OK:
        _, reads = _parse(call, None)
        return [(key, pair[1]) for key, pairs in (reads or {}).items() for pair in pairs], []
    if call.outcome is _INFO:
        writes, _ = _parse(call, None)
        return [], [(key, value) for key, sends in (writes or {}).items() for _, value in sends]
    return [], []


def committed_info_calls(calls: Iterable[Call]) -> frozenset[int]:
    """Invocation indices of the `info` calls that must have committed (`must-have-committed?`):
    some value they sent was read by an `ok` poll/txn. The one cross-key fact per-key checks
    need (pass it to `check_kafka_key`)."""
    ok_reads: dict[Key, set[Any]] = {}
    infos: list[tuple[Call, Writes]] = []
    for call in calls:
        if call.f not in DATA_FUNCTIONS:
            continue
        if call.outcome is _OK:
            _, reads = _parse(call, None)
            if reads:
                for key, pairs in reads.items():
                    seen = ok_reads.setdefault(key, set())
                    try:
                        seen.update(pair[1] for pair in pairs)
                    except (TypeError, IndexError, KeyError) as error:  # the pass over calls says it too
                        raise _malformed(call, f"expected [offset, value] pairs: {error}") from None
        elif call.outcome is _INFO:
            writes, _ = _parse(call, None)
            if writes:
                infos.append((call, writes))
    committed: set[int] = set()
    for call, writes in infos:
        try:
            if any(v in ok_reads.get(key, ()) for key, sends in writes.items() for _, v in sends):
                committed.add(call.invoke_index)
        except TypeError as error:  # an unhashable value
            raise _malformed(call, f"expected [offset, value] pairs: {error}") from None
    return frozenset(committed)


# ---------------------------------------------------------------------------------------
# Pass 1: one walk over the calls in completion order
# ---------------------------------------------------------------------------------------


class _KeyState:
    """Everything pass 2 needs about one key."""

    __slots__ = (
        "conflicts",
        "deferred",
        "failed",
        "int_polls",
        "int_sends",
        "log",
        "ok_read",
        "ok_sent",
        "other_read",
        "poll_pairs",
        "precommitted",
        "send_pairs",
        "writer_of",
    )

    def __init__(self) -> None:
        self.log: dict[Any, Any] = {}  # offset -> first value seen there
        self.conflicts: dict[Any, set[Any]] = {}  # offset -> every value, when several
        self.ok_read: dict[Any, Call] = {}  # value -> first ok reader
        self.other_read: dict[Any, Call] = {}  # value -> first fail/info reader
        self.writer_of: dict[Any, Call] = {}  # value -> last writer
        self.failed: set[Any] = set()  # values sent by failed calls
        self.ok_sent: set[Any] = set()  # values sent by ok calls
        self.deferred: list[tuple[Call, list[tuple[Any, Any]]]] = []  # info sends with offsets
        self.int_polls: list[tuple[Call, list[Any]]] = []  # calls reading >= 2 values
        self.int_sends: list[tuple[Call, list[Any]]] = []  # calls sending >= 2 values
        self.poll_pairs: list[tuple[Call, Any, Call, Any]] = []  # (prev, last v, call, first v)
        self.send_pairs: list[tuple[Call, Any, Call, Any]] = []
        self.precommitted: list[tuple[Call, list[Any]]] = []

    def put(self, offset: Any, value: Any) -> None:
        current = self.log.setdefault(offset, value)
        if current != value:
            self.conflict(offset, current, value)

    def conflict(self, offset: Any, current: Any, value: Any) -> None:
        values = self.conflicts.get(offset)
        if values is None:
            self.conflicts[offset] = {current, value}
        else:
            values.add(value)


class _Collected:
    __slots__ = ("calls", "mixed", "ordered", "states", "sub_via_seen")

    def __init__(self) -> None:
        self.states: dict[Key, _KeyState] = {}
        self.ordered: list[Call] = []
        self.sub_via_seen: set[str] = set()
        self.mixed = False  # some call both sent and polled
        self.calls = 0


class Assignments:
    """The assign/subscribe calls of a history, prepared once for the checks of many keys
    (`check_kafka_key(..., assignments=...)`): the same results as adding `calls` to every
    key's part, without walking them all per key.

    Within one key's check a process tracks that key alone, and an assignment matters only
    if it is one of the process's own, did not fail, and does not name the key: it then ends
    the tracking before the process's next data call. So each key's walk asks, per data
    call, whether such an assignment came (in completion order) since the process's previous
    call: a bisection into the process's assignments, usually answered by the first."""

    __slots__ = ("_named", "calls", "functions", "orders", "values")

    def __init__(self, calls: Iterable[Call]) -> None:
        self.calls: tuple[Call, ...] = tuple(calls)
        self.functions = frozenset(call.f for call in self.calls)
        live = sorted((call for call in self.calls if call.outcome is not _FAIL), key=_order)
        self.orders: dict[Process, list[int]] = {}  # per process, completion orders, ascending
        self.values: dict[Process, list[JsonValue]] = {}  # the assignments' analysed values
        for call in live:
            self.orders.setdefault(call.process, []).append(_order(call))
            self.values.setdefault(call.process, []).append(analysed_value(call))
        self._named: dict[tuple[Process, int], frozenset[str]] = {}

    def names(self, process: Process, position: int) -> frozenset[str]:
        """The keys one assignment names (as strings), computed once for every key's check."""
        named = self._named.get((process, position))
        if named is None:
            value = self.values[process][position]
            named = frozenset(map(str, value)) if isinstance(value, list) else frozenset()
            self._named[(process, position)] = named
        return named


class _Pruner:
    """One key's walk through `Assignments` (see there): where each process stands."""

    __slots__ = ("assignments", "done", "key")

    def __init__(self, assignments: Assignments, key: Key) -> None:
        self.assignments = assignments
        self.key = key
        self.done: dict[Process, int] = {}

    def before(
        self,
        call: Call,
        last_reads: dict[Process, dict[Key, tuple[Call, Any]]],
        last_sends: dict[Process, dict[Key, tuple[Call, Any]]],
    ) -> None:
        """Apply the assignments of `call`'s process that came before it (ties come after, as
        a stable sort of the part's calls followed by the assignments puts them)."""
        process = call.process
        orders = self.assignments.orders.get(process)
        if orders is None:
            return
        start = self.done.get(process, 0)
        order = call.complete_index
        if order is None:
            order = _LAST + call.invoke_index  # `_order`, inline: this runs once per call
        if start == len(orders) or orders[start] >= order:
            return  # no assignment since the process's previous call
        end = bisect_left(orders, order, start)
        self.done[process] = end
        reads = last_reads.get(process)
        sends = last_sends.get(process)
        if not reads and not sends:
            return
        key = self.key
        names = self.assignments.names
        for position in range(start, end):
            if key not in names(process, position):
                if reads:
                    reads.pop(key, None)
                if sends:
                    sends.pop(key, None)
                return


class _OutOfTimeError(Exception):
    """The check reached its deadline (caught in `_check`)."""


def _check_clock(deadline: float) -> None:
    if time.time() >= deadline:
        raise _OutOfTimeError


def _collect(
    calls: Iterable[Call],
    only: Key | None,
    assignments: Assignments | None = None,
    deadline: float = math.inf,
) -> _Collected:
    out = _Collected()
    ordered = list(calls)
    out.calls = len(ordered)
    subscribing = SUBSCRIPTION_FUNCTIONS
    pruner: _Pruner | None = None
    broadcast = any(call.f in subscribing for call in ordered)
    if assignments is not None:
        if only is None or broadcast:
            ordered.extend(assignments.calls)  # the general way
            broadcast = broadcast or any(call.f in subscribing for call in assignments.calls)
        else:
            out.calls += len(assignments.calls)
            out.sub_via_seen.update(assignments.functions)
            pruner = _Pruner(assignments, only)
    if broadcast:
        # An assignment only prunes what its process tracks, and a process tracks keys only
        # through its own data calls here: the assignments of other processes, and failed
        # ones, change nothing (they are most of a key's part when there are many keys).
        out.sub_via_seen.update(call.f for call in ordered if call.f in subscribing)
        active = {call.process for call in ordered if call.f not in subscribing}
        ordered = [
            call
            for call in ordered
            if call.f not in subscribing or (call.process in active and call.outcome is not _FAIL)
        ]
    ordered.sort(key=_order)
    out.ordered = ordered
    states = out.states
    # Per process: key -> (call that last read/sent it, its last value there).
    last_reads: dict[Process, dict[Key, tuple[Call, Any]]] = {}
    last_sends: dict[Process, dict[Key, tuple[Call, Any]]] = {}
    timed = deadline != math.inf
    countdown = _CALLS_PER_CLOCK_READ
    for call in ordered:
        if timed:
            countdown -= 1
            if not countdown:
                countdown = _CALLS_PER_CLOCK_READ
                _check_clock(deadline)
        f = call.f
        if f in SUBSCRIPTION_FUNCTIONS:
            out.sub_via_seen.add(f)
            if call.outcome is _FAIL:
                continue
            if not last_reads.get(call.process) and not last_sends.get(call.process):
                continue  # nothing tracked for this process: the assignment changes nothing here
            value = analysed_value(call)
            # `_norm_key` of each, in C: an assignment can name every key, and it is seen per part.
            named = set(map(str, value)) if isinstance(value, list) else set()
            for table in (last_reads, last_sends):
                tracked = table.get(call.process)
                if tracked:
                    for key in [key for key in tracked if key not in named]:
                        del tracked[key]
            continue
        if f not in DATA_FUNCTIONS:
            continue
        writes, reads = _parse(call, only)
        if writes is None and reads is None:
            continue
        if pruner is not None:
            pruner.before(call, last_reads, last_sends)
        outcome = call.outcome
        ok = outcome is _OK
        process = call.process
        try:
            if writes is not None:
                sent_by: dict[Key, tuple[Call, Any]] | None = None
                if outcome is not _FAIL:
                    sent_by = last_sends.get(process)
                    if sent_by is None:
                        sent_by = last_sends[process] = {}
                for key, sends in writes.items():
                    state = states.get(key)
                    if state is None:
                        state = states[key] = _KeyState()
                    writer_of = state.writer_of
                    for _, v in sends:
                        writer_of[v] = call
                    if ok:
                        ok_sent = state.ok_sent
                        log = state.log
                        for offset, v in sends:
                            ok_sent.add(v)
                            if offset is not None:
                                current = log.setdefault(offset, v)
                                if current != v:
                                    state.conflict(offset, current, v)
                    elif outcome is _FAIL:
                        state.failed.update(v for _, v in sends)
                    elif any(offset is not None for offset, _ in sends):
                        state.deferred.append((call, sends))
                    if len(sends) > 1:
                        state.int_sends.append((call, [v for _, v in sends]))
                    if sent_by is not None:
                        previous = sent_by.get(key)
                        if previous is not None:
                            state.send_pairs.append((previous[0], previous[1], call, sends[0][1]))
                        sent_by[key] = (call, sends[-1][1])
            if reads is not None:
                if writes is not None:
                    out.mixed = True
                read_by = last_reads.get(process)
                for key, pairs in reads.items():
                    state = states.get(key)
                    if state is None:
                        state = states[key] = _KeyState()
                    log = state.log
                    readers = state.ok_read if ok else state.other_read
                    for offset, v in pairs:
                        if offset is not None:
                            current = log.setdefault(offset, v)
                            if current != v:
                                state.conflict(offset, current, v)
                        readers.setdefault(v, call)
                    count = len(pairs)
                    if count > 1:
                        state.int_polls.append((call, pairs))
                    if read_by is not None:
                        previous = read_by.get(key)
                        if previous is not None and previous[1] is not None and count:
                            state.poll_pairs.append((previous[0], previous[1], call, pairs[0][1]))
                    if ok:
                        if read_by is None:
                            read_by = last_reads[process] = {}
                        read_by[key] = (call, pairs[-1][1] if count else None)
                    if writes is not None and key in writes:
                        own = {v for _, v in writes[key]}
                        seen = sorted({pair[1] for pair in pairs if pair[1] in own}, key=_sort_token)
                        if seen:
                            state.precommitted.append((call, seen))
        except (TypeError, ValueError) as error:
            raise _malformed(call, f"expected [offset, value] pairs: {error}") from None
    return out


class _Committed:
    """`must-have-committed?`, cached per call."""

    def __init__(self, collected: _Collected, given: Collection[int] | None, only: Key | None) -> None:
        self.states = collected.states
        self.given = given
        self.only = only
        self.cache: dict[int, bool] = {}

    def __call__(self, call: Call) -> bool:
        if call.outcome is _OK:
            return True
        if call.outcome is not _INFO:
            return False
        if self.given is not None:
            return call.invoke_index in self.given
        known = self.cache.get(call.invoke_index)
        if known is None:
            writes, _ = _parse(call, self.only)
            known = False
            if writes:
                for key, sends in writes.items():
                    state = self.states.get(key)
                    if state is not None and any(v in state.ok_read for _, v in sends):
                        known = True
                        break
            self.cache[call.invoke_index] = known
        return known


# ---------------------------------------------------------------------------------------
# Pass 2: per key
# ---------------------------------------------------------------------------------------


def _sort_token(value: Any) -> tuple[int, Any]:
    """Orders ints (and strings) naturally and anything else by its repr."""
    if value.__class__ is int:
        return (0, value)
    if value.__class__ is str:
        return (1, value)
    return (2, repr(value))


def _smallest(values: Iterable[Any]) -> Any:
    return min(values, key=_sort_token)


def _listed(values: list[Any]) -> list[Any]:
    return values if len(values) <= MAX_LISTED else values[:MAX_LISTED]


class _Order:
    """A key's version order: offsets, one value per offset, and each value's index."""

    __slots__ = ("by_value", "clean", "offsets", "values")

    def __init__(self, state: _KeyState) -> None:
        log = state.log
        conflicts = state.conflicts
        self.offsets: list[Any] = sorted(log)
        if conflicts:
            self.values = [_smallest(conflicts[o]) if o in conflicts else log[o] for o in self.offsets]
        else:
            self.values = [log[o] for o in self.offsets]
        self.by_value: dict[Any, int] = {v: i for i, v in enumerate(self.values)}
        self.clean = not conflicts and len(self.by_value) == len(self.values)

    def values_at(self, state: _KeyState, index: int) -> list[Any]:
        """All values seen at the offset of this index."""
        offset = self.offsets[index]
        conflict = state.conflicts.get(offset)
        return sorted(conflict, key=_sort_token) if conflict else [state.log[offset]]


def _delta_record(key: Key, order: _Order, v1: Any, v2: Any, i: int, j: int) -> Record:
    return {
        "key": key,
        "values": [v1, v2],
        "offsets": [order.offsets[i], order.offsets[j]],
        "delta": j - i,
    }


def _skip_fields(record: Record, order: _Order, i: int, j: int) -> Record:
    skipped = order.values[i + 1 : j] if j - i - 1 <= MAX_LISTED else order.values[i + 1 : i + 1 + MAX_LISTED]
    record["skipped"] = skipped
    record["skipped_count"] = j - i - 1
    return record


def _first_reader(state: _KeyState, value: Any) -> Call | None:
    ok = state.ok_read.get(value)
    other = state.other_read.get(value)
    if ok is None or other is None:
        return ok if ok is not None else other
    return ok if _order(ok) < _order(other) else other


def _analyze_key(
    key: Key,
    state: _KeyState,
    committed: Callable[[Call], bool],
    found: dict[str, list[Record]],
    g1a_targets: dict[Key, set[Any]],
) -> None:
    def emit(name: str, record: Record) -> None:
        found.setdefault(name, []).append(record)

    for call, sends in state.deferred:  # info sends join the log once shown committed
        if committed(call):
            for offset, v in sends:
                if offset is not None:
                    state.put(offset, v)
    order = _Order(state)
    offsets, values, by_value = order.offsets, order.values, order.by_value

    def writer_ref(value: Any) -> Record | None:
        call = state.writer_of.get(value)
        return None if call is None else op_ref(call)

    def reader_ref(value: Any) -> Record | None:
        call = _first_reader(state, value)
        return None if call is None else op_ref(call)

    # inconsistent-offsets
    for offset in sorted(state.conflicts, key=_sort_token):
        clash = sorted(state.conflicts[offset], key=_sort_token)
        emit(
            "inconsistent-offsets",
            {
                "key": key,
                "offset": offset,
                "index": bisect_left(offsets, offset),
                "values": clash,
                "writers": [writer_ref(v) for v in clash],
                "first_readers": [reader_ref(v) for v in clash],
            },
        )

    # duplicate; and, for lost-write, first/last index of every value
    first_index: dict[Any, int] = by_value
    last_groups: list[list[Any]] = []
    if not order.clean:
        first_index = {}
        last_index: dict[Any, int] = {}
        seen_at: dict[Any, list[Any]] = {}
        for index in range(len(offsets)):
            for v in order.values_at(state, index):
                first_index.setdefault(v, index)
                last_index[v] = index
                seen_at.setdefault(v, []).append(offsets[index])
        for v, at in seen_at.items():
            if len(at) > 1:
                emit(
                    "duplicate",
                    {
                        "key": key,
                        "value": v,
                        "count": len(at),
                        "offsets": at,
                        "writer": writer_ref(v),
                        "first_reader": reader_ref(v),
                    },
                )
        last_groups = [[] for _ in offsets]
        for v, index in last_index.items():
            last_groups[index].append(v)
        for group in last_groups:
            group.sort(key=_sort_token)

    # lost-write
    ok_read = state.ok_read
    if ok_read:
        bound = -1
        for v in ok_read:
            first = first_index.get(v)
            if first is not None and first > bound:
                bound = first
        if bound >= 0:
            if order.clean:
                unread = [v for v in values[: bound + 1] if v not in ok_read]
                at_bound = [values[bound]]
            else:
                unread = [v for group in last_groups[: bound + 1] for v in group if v not in ok_read]
                at_bound = last_groups[bound]
            if unread:
                max_reader = _first_reader(state, at_bound[0]) if at_bound else None
                for v in unread:
                    writer = state.writer_of.get(v)
                    if writer is None or not committed(writer):
                        continue
                    first = first_index[v]
                    emit(
                        "lost-write",
                        {
                            "key": key,
                            "value": v,
                            "index": first,
                            "offset": offsets[first],
                            "max-read-index": bound,
                            "writer": op_ref(writer),
                            "max-read": None if max_reader is None else op_ref(max_reader),
                        },
                    )

    # poll-skip / nonmonotonic-poll (pairs found by the per-process walk)
    for previous, v1, call, v2 in state.poll_pairs:
        i = by_value.get(v1)
        j = by_value.get(v2)
        if i is None or j is None:
            continue
        if j - i > 1:
            record = _skip_fields(_delta_record(key, order, v1, v2, i, j), order, i, j)
            record["ops"] = [op_ref(previous), op_ref(call)]
            emit("poll-skip", record)
        elif j - i < 1:
            record = _delta_record(key, order, v1, v2, i, j)
            record["ops"] = [op_ref(previous), op_ref(call)]
            emit("nonmonotonic-poll", record)

    # nonmonotonic-send
    for previous, v1, call, v2 in state.send_pairs:
        i = by_value.get(v1)
        j = by_value.get(v2)
        if i is not None and j is not None and j - i < 1:
            record = _delta_record(key, order, v1, v2, i, j)
            record["ops"] = [op_ref(previous), op_ref(call)]
            emit("nonmonotonic-send", record)

    # int-poll-skip / int-nonmonotonic-poll, int-send-skip / int-nonmonotonic-send
    polled = [(call, [pair[1] for pair in pairs]) for call, pairs in state.int_polls]
    for kind, events in (("poll", polled), ("send", state.int_sends)):
        for call, seq in events:
            indices = [by_value.get(v) for v in seq]
            start = indices[0]
            if start is not None and indices == list(range(start, start + len(indices))):
                continue  # every step is +1
            for n in range(len(seq) - 1):
                i, j = indices[n], indices[n + 1]
                if i is None or j is None or j - i == 1:
                    continue
                record = _delta_record(key, order, seq[n], seq[n + 1], i, j)
                if j - i > 1:
                    _skip_fields(record, order, i, j)
                record["op"] = op_ref(call)
                emit(f"int-{kind}-skip" if j - i > 1 else f"int-nonmonotonic-{kind}", record)

    # precommitted-read
    for call, seen in state.precommitted:
        emit("precommitted-read", {"key": key, "value": seen[0], "values": seen, "op": op_ref(call)})

    # G1a: readers are found by a second look at the calls (rare)
    failed_read = {v for v in state.failed if v in ok_read}
    if failed_read:
        g1a_targets[key] = failed_read

    # unseen
    unseen = sorted((v for v in state.ok_sent if v not in ok_read), key=_sort_token)
    if unseen:
        listed = _listed(unseen)
        emit(
            "unseen",
            {"key": key, "count": len(unseen), "values": listed, "writers": [writer_ref(v) for v in listed]},
        )

    # no-writer-of-value
    writer_of = state.writer_of
    for readers in (ok_read, state.other_read):
        for v in readers.keys() - writer_of.keys():
            if readers is state.other_read and v in ok_read:
                continue
            record = {"key": key, "value": v, "reader": reader_ref(v)}
            position = by_value.get(v)
            if position is not None:
                record["offset"] = offsets[position]
            emit("no-writer-of-value", record)


def _g1a(
    collected: _Collected, only: Key | None, targets: dict[Key, set[Any]], found: dict[str, list[Record]]
) -> None:
    """`g1a-cases`: every (ok reader, key, value) where the value's sender failed."""
    records = found.setdefault("G1a", [])
    for call in collected.ordered:
        if call.outcome is not _OK or call.f not in ("poll", "txn"):
            continue
        _, reads = _parse(call, only)
        if not reads:
            continue
        for key, pairs in reads.items():
            wanted = targets.get(key)
            if not wanted:
                continue
            for offset, v in pairs:
                if v in wanted:
                    writer = collected.states[key].writer_of[v]
                    records.append(
                        {
                            "key": key,
                            "value": v,
                            "offset": offset,
                            "writer": op_ref(writer),
                            "reader": op_ref(call),
                        }
                    )


# ---------------------------------------------------------------------------------------
# Cycles (whole history): G1c and G1c-realtime over wr + realtime edges
# ---------------------------------------------------------------------------------------


def _strongly_connected(adjacency: list[list[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative; components of two or more nodes."""
    count = len(adjacency)
    index = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(count):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            node, position = work[-1]
            neighbours = adjacency[node]
            if position < len(neighbours):
                work[-1] = (node, position + 1)
                nxt = neighbours[position]
                if index[nxt] == -1:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack[nxt] = True
                    work.append((nxt, 0))
                elif on_stack[nxt] and index[nxt] < low[node]:
                    low[node] = index[nxt]
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def _has_backward_read(collected: _Collected) -> bool:
    """Some ok call read a value before its (ok/info) sender was invoked: a 2-cycle."""
    for state in collected.states.values():
        writer_of = state.writer_of
        for v, reader in state.ok_read.items():
            writer = writer_of.get(v)
            if writer is None or writer is reader or writer.outcome is _FAIL:
                continue
            complete = reader.complete_index
            if complete is not None and complete < writer.invoke_index:
                return True
    return False


def _cycles(collected: _Collected, found: dict[str, list[Record]], deadline: float = math.inf) -> None:
    """`cycles!`: one G1c (pure wr) or G1c-realtime cycle per strongly connected component.

    Without calls that both send and poll, every cycle is a read that completed before its
    sender was invoked (each edge otherwise moves forward in time), so the graph is only
    built when such a read or such a call exists."""
    if not collected.mixed and not _has_backward_read(collected):
        return
    states = collected.states
    nodes = [call for call in collected.ordered if call.f in DATA_FUNCTIONS]
    node_of = {id(call): n for n, call in enumerate(nodes)}
    ops = len(nodes)
    wr: list[list[int]] = [[] for _ in range(ops)]
    for n, call in enumerate(nodes):
        _, reads = _parse(call, None)
        if not reads:
            continue
        for key, pairs in reads.items():
            writer_of = states[key].writer_of
            for pair in pairs:
                writer = writer_of.get(pair[1])
                if writer is not None and writer is not call:
                    wr[node_of[id(writer)]].append(n)
    # Realtime order as a chain of time points: ok call -> its completion point, an
    # invocation point -> the ok/info call invoked there; a path call -> ... -> call exists
    # iff the first completed before the second was invoked.
    adjacency = [list(edges) for edges in wr]
    events: list[tuple[int, int, int]] = []
    for n, call in enumerate(nodes):
        if call.outcome is _OK and call.complete_index is not None:
            events.append((call.complete_index, 0, n))
        if call.outcome is not _FAIL:
            events.append((call.invoke_index, 1, n))
    events.sort()
    point = -1
    kind_before = -1
    for _, kind, n in events:
        if kind != kind_before:
            adjacency.append([])
            if point >= 0:
                adjacency[point].append(len(adjacency) - 1)
            point = len(adjacency) - 1
            kind_before = kind
        if kind == 0:
            adjacency[n].append(point)
        else:
            adjacency[point].append(n)

    _check_clock(deadline)
    for component in _strongly_connected(adjacency):
        _check_clock(deadline)
        members = set(component)
        calls_in = sorted(m for m in component if m < ops)
        sub = _wr_cycle(wr, calls_in)
        if sub is not None:
            found.setdefault("G1c", []).append(_cycle_record(sub, nodes, states, ops, len(calls_in)))
            continue
        path = _shortest_cycle(adjacency, members, calls_in[0], ops)
        found.setdefault("G1c-realtime", []).append(_cycle_record(path, nodes, states, ops, len(calls_in)))


def _wr_cycle(wr: list[list[int]], calls_in: list[int]) -> list[int] | None:
    """A shortest cycle of wr edges among these calls, if any."""
    local = {node: n for n, node in enumerate(calls_in)}
    adjacency = [[local[m] for m in wr[node] if m in local] for node in calls_in]
    components = _strongly_connected(adjacency)
    if not components:
        return None
    inside = {calls_in[n] for n in components[0]}
    start = min(inside)
    parent: dict[int, int] = {start: -1}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in wr[node]:
            if nxt == start:
                path = [node]
                while parent[path[-1]] != -1:
                    path.append(parent[path[-1]])
                return path[::-1]
            if nxt in inside and nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return None  # pragma: no cover - a strongly connected component has a cycle


def _shortest_cycle(adjacency: list[list[int]], members: set[int], start: int, ops: int) -> list[int]:
    """0-1 BFS from `start` back to it inside one component; edges out of a call cost 1,
    edges out of a time point cost 0, so the length counts wr and realtime steps."""
    distance: dict[int, int] = {start: 0}
    parent: dict[int, int] = {start: -1}
    queue = deque([start])
    best = -1
    best_length = sys.maxsize
    while queue:
        node = queue.popleft()
        here = distance[node]
        if here >= best_length:
            break
        cost = 1 if node < ops else 0
        for nxt in adjacency[node]:
            if nxt not in members:
                continue
            length = here + cost
            if nxt == start:
                if length < best_length:
                    best_length, best = length, node
                continue
            if length < distance.get(nxt, sys.maxsize):
                distance[nxt] = length
                parent[nxt] = node
                if cost:
                    queue.append(nxt)
                else:
                    queue.appendleft(nxt)
    path = [best]
    while parent[path[-1]] != -1:
        path.append(parent[path[-1]])
    return path[::-1]


def _cycle_record(
    path: list[int], nodes: list[Call], states: dict[Key, _KeyState], ops: int, size: int
) -> Record:
    cycle = [n for n in path if n < ops]
    steps: list[JsonValue] = []
    for position, n in enumerate(cycle):
        nxt = cycle[(position + 1) % len(cycle)]
        # A direct edge between two calls in the path is wr; through time points, realtime.
        at = path.index(n)
        follower = path[(at + 1) % len(path)]
        if follower == nxt:
            steps.append(_wr_step(nodes[n], nodes[nxt], states))
        else:
            steps.append(
                {
                    "type": "realtime",
                    "complete_index": nodes[n].complete_index,
                    "invoke_index": nodes[nxt].invoke_index,
                }
            )
    return {"cycle": [op_ref(nodes[n]) for n in cycle], "steps": steps, "scc_size": size}


def _wr_step(writer: Call, reader: Call, states: dict[Key, _KeyState]) -> Record:
    _, reads = _parse(reader, None)
    for key, pairs in (reads or {}).items():
        writer_of = states[key].writer_of
        for offset, v in pairs:
            if writer_of.get(v) is writer:
                return {"type": "wr", "key": key, "value": v, "offset": offset}
    return {"type": "wr"}  # pragma: no cover - the edge came from such a read


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------


def _record_order(record: Record) -> tuple[str, str]:
    return (str(record.get("key", "")), json.dumps(record, sort_keys=True, default=str))


def _conventions(sub_via: Collection[str], inferred: bool, info_evidence: str) -> dict[str, JsonValue]:
    return {
        "source": "jepsen.tests.kafka/analysis and allowed-error-types",
        "sub_via": sorted(sub_via),
        "sub_via_inferred": inferred,
        "subscribe_allows_poll_skips": True,
        "allowed_error_types": sorted(allowed_error_types(sub_via)),
        "ww_deps": False,
        "unseen_is_error": True,
        "no_writer_of_value_is_error": True,
        "info_send_committed_if_a_value_was_read": True,
        "info_commit_evidence": info_evidence,
        "fail_info_value": "completion value, else invocation value",
        "conflicting_offset_representative": "smallest value",
        "keys": "compared as strings",
        "rebalance_log": "not supported",
        "max_listed_values": MAX_LISTED,
    }


def _result(
    partition: JsonValue,
    found: dict[str, list[Record]],
    operations: int,
    keys: int,
    conventions: dict[str, JsonValue],
    max_per_type: int | None,
    started: float,
    counts: dict[str, int] | None = None,
) -> CheckResult:
    anomalies: dict[str, JsonValue] = {}
    anomaly_counts: dict[str, int] = {}
    for name in sorted(set(found) | set(counts or ())):
        records = found.get(name, [])
        count = len(records) if counts is None else counts.get(name, 0)
        if not count:
            continue
        records.sort(key=_record_order)
        anomaly_counts[name] = count
        anomalies[name] = records if max_per_type is None else records[:max_per_type]
    allowed = conventions["allowed_error_types"]
    assert isinstance(allowed, list)
    invalid_because = [name for name in anomaly_counts if name not in allowed]
    return CheckResult(
        checker="kafka",
        model="kafka",
        partition=partition,
        verdict=Verdict.INVALID if invalid_because else Verdict.VALID,
        operations=operations,
        evidence={
            "anomalies": anomalies,
            "anomaly_counts": dict(anomaly_counts),
            "invalid_because": list(invalid_because),
            "keys": keys,
        },
        conventions=conventions,
        seconds=time.perf_counter() - started,
    )


def _check(
    calls: Iterable[Call],
    only: Key | None,
    sub_via: Collection[str] | None,
    committed_info: Collection[int] | None,
    max_per_type: int | None,
    assignments: Assignments | None = None,
    decided: list[frozenset[int]] | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    # The analysis allocates millions of small acyclic objects; the cyclic collector would
    # rescan them over and over (~15% of the time) and can free nothing.
    collecting = gc.isenabled()
    gc.disable()
    started = time.perf_counter()
    calls = calls if isinstance(calls, list) else list(calls)
    try:
        return _check_all(calls, only, sub_via, committed_info, max_per_type, assignments, decided, deadline)
    except _OutOfTimeError:
        if decided is not None:
            decided.append(frozenset())
        operations = len(calls) + (len(assignments.calls) if assignments is not None else 0)
        used = set(sub_via) if sub_via is not None else {c.f for c in calls if c.f in SUBSCRIPTION_FUNCTIONS}
        result = budget_exhausted(only, operations, _conventions(used, sub_via is None, "not decided"))
        return _with_seconds(result, time.perf_counter() - started)
    finally:
        if collecting:
            gc.enable()


def _check_all(
    calls: Iterable[Call],
    only: Key | None,
    sub_via: Collection[str] | None,
    committed_info: Collection[int] | None,
    max_per_type: int | None,
    assignments: Assignments | None,
    decided: list[frozenset[int]] | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    started = time.perf_counter()
    _check_clock(deadline)
    collected = _collect(calls, only, assignments, deadline)
    if decided is not None:
        committed_info = _committed_by_own_reads(collected)
        decided.append(committed_info)
    committed = _Committed(collected, committed_info, only)
    found: dict[str, list[Record]] = {}
    g1a_targets: dict[Key, set[Any]] = {}
    for key, state in collected.states.items():
        _check_clock(deadline)
        _analyze_key(key, state, committed, found, g1a_targets)
    if g1a_targets:
        _g1a(collected, only, g1a_targets, found)
    if only is None:
        _cycles(collected, found, deadline)
    inferred = sub_via is None
    used = collected.sub_via_seen if sub_via is None else set(sub_via)
    evidence = "whole history" if only is None else "this key only"
    if committed_info is not None:
        evidence = "given"
    return _result(
        only,
        found,
        collected.calls,
        len(collected.states),
        _conventions(used, inferred, evidence),
        max_per_type,
        started,
    )


def check_kafka(
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    committed_info: Collection[int] | None = None,
    max_per_type: int | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    """Check a whole Kafka history (calls in any order; analysed in completion order).

    `sub_via`: the subscription functions the test used (`{"assign"}`, `{"subscribe"}`);
    inferred from the history when None. `max_per_type` caps the records kept per anomaly
    type (the smallest in a canonical order; counts stay exact). Past `deadline` (a
    `time.time()` instant) the result is `unknown` (`budget_exhausted`)."""
    return _check(calls, None, sub_via, committed_info, max_per_type, deadline=deadline)


def check_kafka_key(
    key: JsonValue,
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    committed_info: Collection[int] | None = None,
    max_per_type: int | None = None,
    assignments: Assignments | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    """Check one key's sub-history: the calls touching `key` (whole calls or `split_call`
    pieces) and every assign/subscribe call. Only `key`'s micro-operations are looked at.
    Pass `committed_info=committed_info_calls(history)` to decide `info` sends exactly as
    `check_kafka` does. The assign/subscribe calls may come in `calls` or, prepared once for
    many keys, as `assignments` (the same result, much faster when there are many keys).
    Past `deadline` (a `time.time()` instant) the result is `unknown`."""
    return _check(
        calls, _norm_key(key), sub_via, committed_info, max_per_type, assignments, deadline=deadline
    )


def check_kafka_key_deciding_commits(
    key: JsonValue,
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    assignments: Assignments | None = None,
    deadline: float = math.inf,
) -> tuple[CheckResult, frozenset[int]]:
    """`check_kafka_key(key, calls, committed_info=committed_info_calls(calls))` and that
    set, for `calls` that are `split_call` pieces of `key` alone: the info calls whose sends
    this part shows committed, found in the check's own pass over the calls (a second pass
    cost a fifth of a part's check). A part that ran out of time decides no call."""
    decided: list[frozenset[int]] = []
    result = _check(calls, _norm_key(key), sub_via, None, None, assignments, decided, deadline)
    return result, decided[0]


BUDGET_EXHAUSTED_REASON: Final = "time budget exhausted"


def budget_exhausted(
    partition: JsonValue,
    operations: int,
    conventions: dict[str, JsonValue],
    reason: str = BUDGET_EXHAUSTED_REASON,
) -> CheckResult:
    """The `unknown` result of a part whose check did not finish (or start) within its budget."""
    return CheckResult(
        checker="kafka",
        model="kafka",
        partition=partition,
        verdict=Verdict.UNKNOWN,
        operations=operations,
        evidence={"reason": reason},
        conventions=conventions,
    )


def unchecked_conventions(sub_via: Collection[str] | None) -> dict[str, JsonValue]:
    """The conventions a part's result states when the part was not checked."""
    return _conventions(sub_via or (), sub_via is None, "not decided")


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


def _committed_by_own_reads(collected: _Collected) -> frozenset[int]:
    # `committed_info_calls` over the collected calls: an info data call committed if a value
    # it sent was read by an ok call (`ok_read` holds exactly those values, per key).
    states = collected.states
    committed: set[int] = set()
    for call in collected.ordered:
        if call.outcome is not _INFO or call.f not in DATA_FUNCTIONS or call.f == "poll":
            continue
        writes, _ = _parse(call, None)
        for key, sends in (writes or {}).items():
            state = states.get(key)
            if state is not None and any(v in state.ok_read for _, v in sends):
                committed.add(call.invoke_index)
                break
    return frozenset(committed)


def merge_results(results: Iterable[CheckResult], *, max_per_type: int | None = None) -> CheckResult:
    """Join per-key results into one for the whole history (`partition` None): anomalies are
    concatenated, counts added, and validity decided again with the union of the parts'
    `sub_via`. Cycle anomalies are not per-key: `check_kafka` alone finds them."""
    started = time.perf_counter()
    found: dict[str, list[Record]] = {}
    counts: dict[str, int] = {}
    sub_via: set[str] = set()
    inferred = True
    evidence = "given"
    operations = keys = 0
    for number, result in enumerate(results):
        anomalies = result.evidence.get("anomalies", {})
        for name, records in anomalies.items():
            found.setdefault(name, []).extend(records)
        for name, count in result.evidence.get("anomaly_counts", {}).items():
            counts[name] = counts.get(name, 0) + count
        conventions = result.conventions
        sub_via.update(conventions.get("sub_via", ()))
        inferred = inferred and bool(conventions.get("sub_via_inferred", True))
        if number == 0:
            evidence = str(conventions.get("info_commit_evidence", evidence))
        elif conventions.get("info_commit_evidence") != evidence:
            evidence = "mixed"
        operations += result.operations
        keys += int(result.evidence.get("keys", 0))
    return _result(
        None,
        found,
        operations,
        keys,
        _conventions(sub_via, inferred, evidence),
        max_per_type,
        started,
        counts,
    )
