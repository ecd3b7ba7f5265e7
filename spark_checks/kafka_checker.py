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
Cycles (`cycles!`: Elle's `elle.txn/cycles` with `:strict-serializable`, as Jepsen runs it)
    over the completed send/poll/txn calls (and, here, calls never completed), with *wr*
    edges (the writer of v -> every other call that polled v, any outcome), *realtime* edges
    (an `ok` call -> every call invoked after it completed, failed ones included, as Elle's
    `realtime-graph`) and, with `ww_deps` (Jepsen's `:ww-deps`), *ww* edges (the writer of a
    key's previous value in the version order -> the writer of the next). *rw* edges are
    commented out upstream and there are no process edges. `empty-transaction-graph`: the
    graph has no edge (Elle marks it; Jepsen's checker counts it as an error). Per strongly
    connected component, Elle's `cycle-exists-cases` and its search give, with these edges:
    a ww cycle: `PL-1-cycle-exists` + `G0` (which implies every other type); else a ww+wr
    cycle: `PL-2-cycle-exists` + `G1c`, plus `strong-PL-1-cycle-exists` + `G0-realtime` when
    a ww+realtime cycle exists too; else a ww+realtime cycle: `strong-PL-1-cycle-exists` +
    `G0-realtime`; else `strong-PL-2-cycle-exists` + `G1c-realtime`. One shortest cycle is
    reported per type and component, its steps explained as Elle does (ww, then wr, then
    realtime). Values are compared against version-order indices only when both are known
    (else delta is taken as 1, as upstream).
Realtime lag (`realtime-lag`, `worst-realtime-lag`): see `realtime_lags`; reported in the
    whole-history evidence as the worst lag and the greatest per process and key.

Validity (`allowed-error-types`, `checker`)
-------------------------------------------
The history is invalid iff some anomaly type outside the allowed set was found:
* always allowed: `int-send-skip`, `G0`, `G0-process`, `G0-realtime`, `PL-1-cycle-exists`,
  `strong-PL-1-cycle-exists`;
* also allowed when the test used `subscribe` (`:sub-via`): `poll-skip` and
  `nonmonotonic-poll`, since rebalances legitimately move consumers. `sub_via` is inferred as
  the set of assign/subscribe functions present in the history unless given;
* also allowed with `ww_deps`: `G1c`, `G1c-process`, `G1c-realtime`, `PL-2-cycle-exists`,
  `strong-PL-2-cycle-exists`.
Every type found is listed (`error_types`, and `allowed_error_types_found`), as Jepsen's
checker lists `:error-types`.
So `unseen` (checked at the end of the history) is an error, as upstream.

Deviations, stated: `no-writer-of-value` (a value was read that no call sent) is reported as
an error: upstream throws (`:no-writer-of-value`) and the check ends `:unknown`; the
whole-history part names it in `deviations_from_jepsen`. A
`precommitted-read` is reported per (call, key) with all such values (upstream: the first key
of a call only). `:rebalance-log` (which exempts keys from int-poll checks) has no place in the
canonical format and is not supported. `unseen-merge`: Jepsen's `unseen` fold merges the
polled map into the unseen one, so a key that no earlier `ok` call sent to or polled, polled
by the history's last `ok` data call, gets its polled values counted as unseen; kafkaspec
reports only values never read, names the difference in `deviations_from_jepsen`, and with
`unseen="jepsen"` (`--jepsen-unseen`) reports it as Jepsen does. Elle's
`cycle-search-timeout` has no counterpart: the search is exact, bounded by `deadline`.
Consume counts and plots are left out. Calls are analysed in completion order; calls that
never completed (`info`, no completion index) come last.

Records
-------
`evidence["anomalies"]` maps each type found to JSON-ready records, sorted (by key, then
content). A call is named by `op_ref`: `{process, f, type, invoke_index, complete_index}`.
Records carry the `key`, the `value(s)` and `offset(s)` involved, Jepsen's fields (`delta`,
`skipped`, `index`, `max-read-index`, `count`) and the calls: `ops` (previous and current call
of a process), `op` (one call), `writer`/`reader`/`max-read`/`first_reader`, `writers` (per
value), or `cycle` + `steps` (each step `ww` with key, `value` and `value'`, `wr` with key
and value, or `realtime`); a `*-cycle-exists` record has `not` (Elle's model name),
`subgraph` and `scc_size`. Lists of
values are cut at `MAX_LISTED` with an exact `*_count`. `anomaly_counts` is exact even when
`max_per_type` cuts the lists.

P-compositionality
------------------
Every anomaly type except `WHOLE_HISTORY_ANOMALY_TYPES` is a function of one key's sub-history:
`split_by_key` routes each call to the keys it touches and every assign/subscribe to every
key (`partition_key` returns `ALL_KEYS`: an assign that does not name k ends the tracking of
k). `split_call` cuts one call into per-key pieces for shipping; it gives no piece for an
assign/subscribe, which the caller must add to every part. `check_kafka_key` checks one part,
`merge_results` joins the parts. The one cross-key input is whether an `info` send committed
(a value it sent to another key was read): pass `committed_info=committed_info_calls(history)`
for results equal to `check_kafka`'s; without it a key uses its own evidence only. Cycles,
`empty-transaction-graph`, realtime lag and the unseen merge need the whole history:
`check_kafka` finds them, and `check_kafka_whole` finds only them (the engines' extra part).
Without transactions and `ww_deps` all of them but realtime lag follow from per-key facts
(`KeyFacts`, which `check_kafka_key_deciding_commits` hands in; `whole_from_facts` has the
proof), so the extra part then only measures realtime lag (`history_facts`). Realtime lag is
not per key: a (process, key) lag is measured at each of the process's polls, of any key.

Cost: one pass over the calls into per-key dicts keyed by offset and value, then one pass per
key; about 10^5 calls/s in CPython. Every check takes a `deadline` (a `time.time()` instant,
none by default): the clock is read every `_CALLS_PER_CLOCK_READ` calls of the first pass, per
key of the second and per component of the cycle search, and a check still running at the
deadline answers `unknown` with the reason (`budget_exhausted`), never a partial verdict.
Without `ww_deps` the cycle graph is built only when a call both sends and polls or a read
completed before its sender was invoked (otherwise no cycle can exist; see `_cycles`).
Realtime lag costs about as much again as the first pass (each stretch of a process's polls
at one offset is measured once, not per poll and assigned key).
"""

from __future__ import annotations

import enum
import gc
import heapq
import itertools
import json
import math
import operator
import sys
import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, TypeVar, cast

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
    "G0",
    "G0-realtime",
    "G1a",
    "G1c",
    "G1c-realtime",
    "PL-1-cycle-exists",
    "PL-2-cycle-exists",
    "strong-PL-1-cycle-exists",
    "strong-PL-2-cycle-exists",
    "empty-transaction-graph",
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

WHOLE_HISTORY_ANOMALY_TYPES: Final = frozenset(
    {
        "G0",
        "G0-realtime",
        "G1c",
        "G1c-realtime",
        "PL-1-cycle-exists",
        "PL-2-cycle-exists",
        "strong-PL-1-cycle-exists",
        "strong-PL-2-cycle-exists",
        "empty-transaction-graph",
    }
)
"""Found only by `check_kafka` / `check_kafka_whole`: the dependency graph spans keys."""

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


ALLOWED_UNDER_WW_DEPS: Final = frozenset(
    {"G1c", "G1c-process", "G1c-realtime", "PL-2-cycle-exists", "strong-PL-2-cycle-exists"}
)
"""`allowed-error-types` with `:ww-deps`: without write isolation, t0 <ww t1 <wr t0 is expected."""

UNSEEN_MODES: Final = ("kafkaspec", "jepsen")
"""How `unseen` is computed: values no `ok` call read (kafkaspec), or as Jepsen's `unseen`
fold does, which also counts, for a key that no earlier `ok` call sent to or polled, the
values the history's last `ok` data call polled there (its map merge keeps a key found only
in the polled map with the polled set)."""


def allowed_error_types(sub_via: Collection[str], ww_deps: bool = False) -> frozenset[str]:
    """Anomaly types that do not invalidate a history (Jepsen's `allowed-error-types`)."""
    allowed = ALWAYS_ALLOWED
    if "subscribe" in sub_via:
        allowed = allowed | ALLOWED_UNDER_SUBSCRIBE
    if ww_deps:
        allowed = allowed | ALLOWED_UNDER_WW_DEPS
    return allowed


def op_ref(call: Call | Piece) -> Record:
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


def _order(call: Call | CallFacts | Piece) -> int:
    """Completion order (Jepsen's history order of completions); never-completed calls last."""
    index = call.complete_index
    return index if index is not None else _LAST + call.invoke_index


def _malformed(call: Call | Piece, what: str) -> HistoryError:
    index = call.complete_index if call.complete_index is not None else call.invoke_index
    return HistoryError(
        Position(UNNAMED, index=index),
        f"{call.f} by process {call.process!r} (index {index}): {what}",
    )


def _parse(call: Call | Piece, only: Key | None) -> tuple[Writes | None, Reads | None]:
    """A data call's sends and polls by key (only `only`'s when given)."""
    value = call.value if isinstance(call, Piece) else analysed_value(call)
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
            name: JsonValue = mop[0]  # not `str`: the loop below reads any micro-operation's
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
                key = _norm_key(mop[1])
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
    except (TypeError, ValueError, IndexError, AttributeError, KeyError):
        # Python's own words for the error are left out: compiled (mypyc) they differ.
        raise _malformed(
            call, "expected [[send, key, value | [offset, value]] | [poll, {key: [[offset, v]]}]]"
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
    fields = single_send(value)
    return None if fields is None else _norm_key(fields[1])


def single_send(value: JsonValue) -> list[Any] | None:
    """The send of a value that is exactly one well-formed send ([send, key, value or
    [offset, value]], the key as written: `KeyNames` names it), else None. Typed locals and
    `type` checks: compiled, C reads."""
    if type(value) is not list:
        return None
    mops: list[Any] = value
    if len(mops) != 1:
        return None
    mop = mops[0]
    if type(mop) is not list:
        return None
    fields: list[Any] = mop
    if len(fields) != 3 or type(fields[0]) is not str or not _is_send(fields[0]):
        return None
    sent = fields[2]
    if type(sent) is list and len(sent) != 2:
        return None  # malformed: the long way says so
    if type(sent) is tuple:
        return None
    return fields


def _is_send(name: str) -> bool:
    """`name in _SEND`, by comparisons (a value's name is a new string per line: a set lookup
    hashes it)."""
    return name in ("send", ":send")


def _is_int(value: object) -> bool:
    """`type(value) is int`, in a function: compiled, a value narrowed to `int` in its caller
    is unboxed, then boxed into a new object where it is listed or passed on."""
    return type(value) is int


class KeyNames:
    """`_norm_key` of the keys a stage reads, an integer's string made once: a send's key is
    most often an integer, whose string was otherwise made, hashed and freed per call."""

    __slots__ = ("_names",)

    def __init__(self) -> None:
        self._names: dict[Any, Key] = {}  # (Any: an int key typed int is boxed anew per lookup)

    def of(self, key: Any) -> Key:
        """`_norm_key(key)`."""
        if not _is_int(key):
            return _norm_key(key)
        name = self._names.get(key)
        if name is None:
            name = self._names[key] = str(key)
        return name


def _plain_sends(value: JsonValue, names: KeyNames, offsets: list[Any] | None, pieces: list[Any]) -> bool:
    """Of a value that is only well-formed sends: each key then its greatest offset (the keys
    in the order they come: `_max_offsets`') appended to `offsets` (unless None: a failed
    call's, which shows none), each key then its sends (`restrict_each`'s) to `pieces`, in one
    pass; False for any other shape, or a send without an int offset where they are wanted
    (the long way finds what they show)."""
    if type(value) is not list or not value:
        return False
    mops: list[Any] = value
    grouped: dict[Key, list[Any]] = {}
    highest: dict[Key, Any] = {}
    for mop in mops:
        if type(mop) is not list:
            return False
        fields: list[Any] = mop
        if len(fields) != 3 or type(fields[0]) is not str or not _is_send(fields[0]):
            return False
        sent = fields[2]
        if (type(sent) is list and len(sent) != 2) or type(sent) is tuple:
            return False  # malformed: the long way says so
        key = names.of(fields[1])
        kept = grouped.get(key)
        if kept is None:
            kept = grouped[key] = []
        kept.append(mop)
        if offsets is not None:
            if type(sent) is not list or not _is_int(sent[0]):
                return False
            known = highest.get(key)
            highest[key] = sent[0] if known is None or sent[0] > known else known
    if offsets is not None:
        for key, offset in highest.items():
            offsets.append(key)
            offsets.append(offset)
    for key, kept in grouped.items():
        pieces.append(key)
        pieces.append(kept if len(grouped) > 1 else value)
    return True


_FIRST: Final = operator.itemgetter(0)


def plain_poll_offsets(value: JsonValue) -> dict[str, int] | None:
    """The keys of a call whose analysed value is one poll of string keys and lists of pairs
    with int offsets (the other common call), each with the greatest offset it polled (-1 for
    none): `split_call`'s keys and `_max_offsets` in one pass. Empty when it polled nothing;
    None for any other shape (the long way then finds either)."""
    if not value:
        return {}  # `_parse` reads nothing from an empty value
    fields = _one_poll(value)
    if fields is None:
        return None
    polled = fields[1] if len(fields) > 1 else None
    if not polled:
        return {}
    if type(polled) is not dict:
        return None
    by_key: dict[Any, Any] = polled
    out: dict[str, int] = {}
    for key, pairs in by_key.items():
        if type(key) is not str or type(pairs) is not list:
            return None
        best = _pairs_offset(pairs)
        if best is None:
            return None  # a null offset, or a malformed pair: the long way says which
        out[key] = best
    return out


def _one_poll(value: JsonValue) -> list[Any] | None:
    """The micro-operation of a value that is exactly one poll ([poll] or [poll, polled]),
    else None (`plain_poll_offsets` and `_plain_poll` then read what it polled)."""
    if type(value) is not list:
        return None
    mops: list[Any] = value
    if len(mops) != 1 or type(mops[0]) is not list:
        return None
    mop: list[Any] = mops[0]
    if not mop or type(mop[0]) is not str or mop[0] not in _POLL:
        return None
    return mop


def _pairs_offset(pairs: list[Any]) -> Any:
    """The greatest offset (at least -1) of a poll's pairs of one key, as `max` orders them;
    None when they have none (a null offset, a malformed pair)."""
    best = _greatest_offset(pairs)
    if best is not None:
        return best
    try:  # pairs not all [int offset, ...]
        some = max(map(_FIRST, pairs))
        return some if some > -1 else -1
    except (TypeError, IndexError, KeyError):
        return None


def _greatest_offset(pairs: list[Any]) -> int | None:
    """The greatest of the offsets (at least -1) of pairs that are all lists starting with an
    int (a poll's pairs: compiled, a typed loop in C, 5x fewer instructions than `max` over
    `map`), else None."""
    best = -1
    for pair in pairs:
        if type(pair) is not list:
            return None
        items: list[Any] = pair
        if not items or type(items[0]) is not int:
            return None
        offset: int = items[0]
        best = max(best, offset)
    return best


def restrict_each(value: JsonValue, keys: list[Key]) -> dict[Key, JsonValue]:
    """`split_call`'s restriction of one of a call's values to each of `keys`."""
    return _restrict_each(value, keys)


def _restrict_each(value: JsonValue, keys: list[Key]) -> dict[Key, JsonValue]:
    """`_restrict(value, key)` for every key; one pass for the shapes of a plain poll."""
    if not isinstance(value, list):
        return dict.fromkeys(keys, value)  # `_restrict` leaves anything but a list alone
    mops: list[Any] = value
    if len(mops) == 1 and type(mops[0]) is list:
        mop: list[Any] = mops[0]
        if mop and type(mop[0]) is str and mop[0] in _POLL:
            if len(mop) == 1:
                kept = [mop]
                return dict.fromkeys(keys, kept)
            polled = mop[1]
            if len(mop) == 2 and type(polled) is dict:
                by_key: dict[Any, Any] = polled
                if all(type(k) is str for k in by_key):
                    # JSON object keys are distinct strings: `_norm_key(k) == key` only for k == key.
                    name = mop[0]
                    return {key: [[name, {key: by_key[key]} if key in by_key else {}]] for key in keys}
    sends = _sends_by_key(mops, keys)
    if sends is not None:
        return sends
    return {key: _restrict(value, key) for key in keys}


def _sends_by_key(value: list[Any], keys: list[Key]) -> dict[Key, JsonValue] | None:
    """`_restrict(value, key)` for every key, in one pass, when `value` holds only sends (a
    send to several keys); None for any other shape."""
    grouped: dict[Key, list[Any]] = {key: [] for key in keys}
    for mop in value:
        if type(mop) is not list:
            return None
        fields: list[Any] = mop
        if len(fields) < 2 or type(fields[0]) is not str or fields[0] not in _SEND:
            return None
        kept = grouped.get(_norm_key(fields[1]))
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


def sends_to_several_keys(call: Call) -> bool:
    """Whether an info call sent to several keys (`commit_facts`): only such a call's
    commitment can depend on another part (rare: transactions)."""
    _, sends = commit_facts(call)
    return len({key for key, _ in sends}) > 1


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
                    except (TypeError, IndexError, KeyError):  # the pass over calls says it too
                        raise _malformed(call, "expected [offset, value] pairs") from None
        elif call.outcome is _INFO:
            writes, _ = _parse(call, None)
            if writes:
                infos.append((call, writes))
    committed: set[int] = set()
    for call, writes in infos:
        try:
            if any(v in ok_reads.get(key, ()) for key, sends in writes.items() for _, v in sends):
                committed.add(call.invoke_index)
        except TypeError:  # an unhashable value
            raise _malformed(call, "expected [offset, value] pairs") from None
    return frozenset(committed)


# ---------------------------------------------------------------------------------------
# Pass 1: one walk over the calls in completion order
# ---------------------------------------------------------------------------------------


class Piece:
    """A call as one key's check reads it (`check_kafka_key`): its process, function, outcome
    and indices (all a record names of it, `op_ref`) and the one value the checks read
    (`analysed_value`). A native object when compiled (mypyc): made and read in a few
    instructions, where a `Call` (a frozen dataclass of history.py, not compiled) cost ~10,000
    to make from its shipped fields and a generic attribute lookup per read. Stage 2's
    per-key parts are decoded into these (`distributed.decode_part`), and a key's check makes
    them of the `Call`s it is given (`of`). With `_collect_key`'s in-place reading of plain
    sends and polls, stage 2's per-key parts, compiled, callgrind, side by side with 61612d7:
    10^5 bench file 1,656 -> 887 M instructions, 10^6 15.5 -> 8.0 G, 10^5 Jepsen-shaped 3,026
    -> 1,965 M (its drain polls' pairs and their decoding dominate)."""

    __slots__ = ("complete_index", "f", "invoke_index", "outcome", "process", "value")

    def __init__(
        self,
        process: Any,
        f: str,
        value: JsonValue,
        outcome: Outcome,
        invoke_index: int,
        complete_index: int | None,
    ) -> None:
        self.process = process
        self.f = f
        self.value = value
        self.outcome = outcome
        self.invoke_index = invoke_index
        self.complete_index = complete_index

    @staticmethod
    def of(call: Call) -> Piece:
        """What the per-key checks read of `call`."""
        value = analysed_value(call)
        return Piece(call.process, call.f, value, call.outcome, call.invoke_index, call.complete_index)


def pieces_of(rows: list[list[Any]]) -> list[Piece]:
    """`Piece.of` each call shipped as a row of `distributed.call_fields` (process, function,
    input, completion value, whether the output is it, output, outcome, invocation and
    completion indices, ...), without making the `Call`."""
    pieces: list[Piece] = []
    for fields in rows:
        completion_value = fields[3]
        named = fields[6]  # compared, not hashed: a decoded string's hash is not yet computed
        outcome = _OK if named == "ok" else _OUTCOME_NAMED[named]
        value = (completion_value if fields[4] else fields[5]) if outcome is _OK else completion_value
        if value is None:
            value = fields[2]  # `analysed_value`: the invocation's
        pieces.append(Piece(fields[0], fields[1], value, outcome, fields[7], fields[8]))
    return pieces


def _piece_order(piece: Piece) -> int:
    """`_order` of a piece (a compiled sort key)."""
    index = piece.complete_index
    return index if index is not None else _LAST + piece.invoke_index


_AnyCall = Call | Piece
"""How a check holds its calls: the whole history's as `Call`s, one key's as `Piece`s. (Not a
type variable of generic classes: compiled, `Generic` classes are not native, and pass 1 reads
`_KeyState`'s fields for every call.)"""


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
        self.ok_read: dict[Any, _AnyCall] = {}  # value -> first ok reader
        self.other_read: dict[Any, _AnyCall] = {}  # value -> first fail/info reader
        self.writer_of: dict[Any, _AnyCall] = {}  # value -> last writer
        self.failed: set[Any] = set()  # values sent by failed calls
        self.ok_sent: set[Any] = set()  # values sent by ok calls
        self.deferred: list[tuple[_AnyCall, list[tuple[Any, Any]]]] = []  # info sends with offsets
        self.int_polls: list[tuple[_AnyCall, list[Any]]] = []  # calls reading >= 2 values
        self.int_sends: list[tuple[_AnyCall, list[Any]]] = []  # calls sending >= 2 values
        self.poll_pairs: list[tuple[_AnyCall, Any, _AnyCall, Any]] = []  # (prev, last v, call, first v)
        self.send_pairs: list[tuple[_AnyCall, Any, _AnyCall, Any]] = []
        self.precommitted: list[tuple[_AnyCall, list[Any]]] = []

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
        self.ordered: list[Call] | list[Piece] = []
        self.sub_via_seen: set[str] = set()
        self.mixed = False  # some call both sent and polled
        self.calls = 0


class Assignments:
    """The assign/subscribe calls of a history, prepared once for the checks of many keys
    (`check_kafka_key(..., assignments=...)`): the same results as adding `calls` to every
    key's part, without walking them all per key.

    Within one key's check a process tracks that key alone, and an assignment matters only
    if it is one of the process's own, did not fail, and does not name the key: it then ends
    the tracking before the process's next data call. So each key's walk asks, at a data call
    of a process that tracks the key, whether such an assignment came (in completion order)
    since the call it tracks (`_Pruner`)."""

    __slots__ = ("_by_list", "_named", "calls", "functions", "orders", "values")

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
        self._by_list: dict[tuple[Any, ...], frozenset[Key]] = {}  # `_names_of`'s sets

    def __reduce__(self) -> tuple[type[Assignments], tuple[tuple[Call, ...]]]:
        # Rebuilt from its calls in the local engine's workers: the compiled class (mypyc) has
        # no `__dict__` or slots for pickle's default.
        return Assignments, (self.calls,)

    def names(self, process: Process, position: int) -> frozenset[str]:
        """The keys one assignment names (as strings), computed once for every key's check,
        one set per distinct list of keys (`_names_of`)."""
        named = self._named.get((process, position))
        if named is None:
            value = self.values[process][position]
            named = self._named[(process, position)] = _names_of(value, self._by_list)
        return named


class _Pruner:
    """One key's walk through `Assignments` (see there).

    A tracked value (a process's last read or send of the key) ends at the first of the
    process's assignments not naming the key that completed at or after the call it came
    from (an assignment tied with a call comes after it, as a stable sort of the part's calls
    followed by the assignments puts them) and before the process's next data call. So only
    a call of a process that tracks the key looks at assignments, and only at those since
    the tracked calls: nothing per process is kept or copied per key, where the walk that
    stepped each process through its assignments kept a position for every process (one per
    crash: 27,000 at 10^7 operations, copied for each of 1,000 keys) and updated it at
    nearly every call (most processes touch a key once). Compiled, callgrind, 100 keys of
    the 10^6 bench history: the copies and `before` 87 -> 42 M instructions (26 -> 12 M of
    them the keys the assignments name, `_names_of`)."""

    __slots__ = ("assignments", "key")

    def __init__(self, assignments: Assignments, key: Key) -> None:
        self.assignments = assignments
        self.key = key

    def before(
        self,
        call: Piece,
        last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
        last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
    ) -> None:
        """End what `call`'s process tracks of the key where one of its assignments that
        came before `call` says so."""
        process = call.process
        reads = last_reads.get(process)
        sends = last_sends.get(process)
        if not reads and not sends:
            return  # nothing tracked (a process's first call on the key, most often)
        orders = self.assignments.orders.get(process)
        if orders is None:
            return
        until = call.complete_index
        if until is None:
            until = _LAST + call.invoke_index  # `_order`
        key = self.key
        for tracked in (reads, sends):
            if tracked:
                last = tracked.get(key)
                if last is not None and self._ended(process, orders, _order(last[0]), until):
                    del tracked[key]

    def _ended(self, process: Process, orders: list[int], since: int, until: int) -> bool:
        """Whether an assignment of `process` (completion `orders`, ascending) in
        [`since`, `until`) does not name the key (a process has a few assignments)."""
        names = self.assignments.names
        key = self.key
        for position in range(len(orders)):
            at = orders[position]
            if at >= until:
                return False
            if at >= since and key not in names(process, position):
                return True
        return False


class _OutOfTimeError(Exception):
    """The check reached its deadline (caught in `_check`)."""


_Call = TypeVar("_Call", Call, Piece)


def _clocked(ordered: list[_Call], deadline: float) -> Iterator[_Call]:
    """`ordered` for a first pass, the clock read before every `_CALLS_PER_CLOCK_READ`th
    call (`_OutOfTimeError` past `deadline`; never read without one)."""
    every = _CALLS_PER_CLOCK_READ
    if deadline == math.inf:
        yield from ordered
        return
    yield from ordered[: every - 1]
    for start in range(every - 1, len(ordered), every):
        _check_clock(deadline)
        yield from ordered[start : start + every]


def _check_clock(deadline: float) -> None:
    if time.time() >= deadline:
        raise _OutOfTimeError


_PAIRS_EXPECTED: Final = "expected [offset, value] pairs, each offset an integer or null"


def _collect(
    calls: Iterable[Call],
    assignments: Assignments | None = None,
    deadline: float = math.inf,
) -> _Collected:
    """Pass 1 over a whole history's calls (one key's: `_collect_key`)."""
    out: _Collected = _Collected()
    ordered = list(calls)
    out.calls = len(ordered)
    subscribing = SUBSCRIPTION_FUNCTIONS
    if assignments is not None:
        ordered.extend(assignments.calls)
    if any(call.f in subscribing for call in ordered):
        out.sub_via_seen.update(call.f for call in ordered if call.f in subscribing)
        ordered = _live_assignments(ordered)
    ordered.sort(key=_order)
    out.ordered = ordered
    # Per process: key -> (call that last read/sent it, its last value there).
    last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]] = {}
    last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]] = {}
    for call in _clocked(ordered, deadline):
        f = call.f
        if f in SUBSCRIPTION_FUNCTIONS:
            _assign(out, call, analysed_value(call), last_reads, last_sends)
            continue
        if f not in DATA_FUNCTIONS:
            continue
        writes, reads = _parse(call, None)
        if writes is None and reads is None:
            continue
        _add_call(out, call, writes, reads, last_reads, last_sends)
    return out


def _assign(
    out: _Collected,
    call: _AnyCall,
    value: JsonValue,
    last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
    last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
) -> None:
    """Pass 1 at an assign/subscribe call (`value`, its analysed value): its process stops
    tracking the keys it does not name."""
    out.sub_via_seen.add(call.f)
    if call.outcome is _FAIL:
        return
    if not last_reads.get(call.process) and not last_sends.get(call.process):
        return  # nothing tracked for this process: the assignment changes nothing here
    # `_norm_key` of each, in C: an assignment can name every key, and it is seen per part.
    named = set(map(str, value)) if isinstance(value, list) else set()
    for table in (last_reads, last_sends):
        tracked = table.get(call.process)
        if tracked:
            for key in [key for key in tracked if key not in named]:
                del tracked[key]


def _add_call(
    out: _Collected,
    call: _AnyCall,
    writes: Writes | None,
    reads: Reads | None,
    last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
    last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
) -> None:
    """Pass 1 at a data call: its sends and polls (`_parse`) into the keys' states, the polls
    key by key (`_add_poll`). (The sends are not `_add_send`'s, one by one: several sends of
    one call to a key are one step of its process, not several. A `_add_sends` for both, a
    one-send piece given as a list of its pair, cost the 10^6 bench history's per-key parts
    28 M instructions more, callgrind, 3.5%.)"""
    states = out.states
    outcome = call.outcome
    ok = outcome is _OK
    process = call.process
    try:
        if writes is not None:
            sent_by: dict[Key, tuple[_AnyCall, Any]] | None = None
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
                            if offset.__class__ is not int:
                                raise TypeError  # an offset orders a key's log: an integer
                            current = log.setdefault(offset, v)
                            if current != v:
                                state.conflict(offset, current, v)
                elif outcome is _FAIL:
                    state.failed.update(v for _, v in sends)
                elif any(offset is not None for offset, _ in sends):
                    if any(offset is not None and offset.__class__ is not int for offset, _ in sends):
                        raise TypeError  # as an ok send's: the log may take them
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
            for key, pairs in reads.items():
                state = states.get(key)
                if state is None:
                    state = states[key] = _KeyState()
                _add_poll(state, call, pairs, last_reads, key)
                if writes is not None and key in writes:
                    own = {v for _, v in writes[key]}
                    seen = sorted({pair[1] for pair in pairs if pair[1] in own}, key=_sort_token)
                    if seen:
                        state.precommitted.append((call, seen))
    except (TypeError, ValueError):
        raise _malformed(call, _PAIRS_EXPECTED) from None


def _collect_key(
    pieces: list[Piece],
    only: Key,
    assignments: Assignments | None = None,
    deadline: float = math.inf,
) -> _Collected:
    """Pass 1 over one key's pieces (in invocation order): `_collect`'s states of `only`, the
    history's assignments taken from `assignments` (`_Pruner`) when the part has none of its
    own. A piece that is one send to the key or one poll of it alone (nearly all of them) is
    read here in place, as `_parse` and `_add_call` read it, without the dictionaries and
    lists `_parse` builds; any other shape goes their way."""
    out: _Collected = _Collected()
    ordered = pieces
    out.calls = len(ordered)
    subscribing = SUBSCRIPTION_FUNCTIONS
    pruner: _Pruner | None = None
    broadcast = any(_subscribes(piece.f) for piece in ordered)
    if assignments is not None:
        if broadcast:
            ordered.extend([Piece.of(call) for call in assignments.calls])  # the general way
        else:
            out.calls += len(assignments.calls)
            out.sub_via_seen.update(assignments.functions)
            pruner = _Pruner(assignments, only)
    if broadcast:
        out.sub_via_seen.update(piece.f for piece in ordered if piece.f in subscribing)
        active = {piece.process for piece in ordered if piece.f not in subscribing}
        ordered = [  # `_live_assignments`
            piece
            for piece in ordered
            if piece.f not in subscribing or (piece.process in active and piece.outcome is not _FAIL)
        ]
    ordered.sort(key=_piece_order)
    out.ordered = ordered
    state: _KeyState | None = None
    last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]] = {}
    last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]] = {}
    only_int = _int_named(only)
    for call in _clocked(ordered, deadline):
        # The function and a micro-op's name are compared (mypyc compiles `in` a tuple of
        # strings to comparisons), not looked up in sets: decoded strings have no hash
        # computed yet (SipHash of each, ~4% of the per-key parts).
        f = call.f
        if f not in ("send", "poll", "txn"):  # DATA_FUNCTIONS
            if _subscribes(f):
                _assign(out, call, call.value, last_reads, last_sends)
            continue
        # `_parse`'s fast path: one key's piece of a plain send or poll. `type(x) is list`, not
        # `x.__class__ is list`: compiled, a C type check, not an attribute lookup.
        value = call.value
        sent: list[Any] | None = None
        pairs: list[Any] | None = None
        skip = False  # the piece shows nothing of this key
        mop: Any = value[0] if type(value) is list and len(value) == 1 else None
        if type(mop) is list and len(mop) > 1 and type(mop[0]) is str:
            name = mop[0]
            polled = mop[1]
            if name in ("poll", ":poll") and type(polled) is dict and len(polled) == 1:
                for raw_key, listed in polled.items():
                    if type(raw_key) is str and type(listed) is list:
                        pairs = listed
                        skip = f == "send" or raw_key != only
            elif name in ("send", ":send") and len(mop) == 3:
                raw = mop[1]
                given = mop[2]
                if type(given) is list and len(given) == 2:
                    sent = given
                    if type(raw) is str:
                        skip = f == "poll" or raw != only
                    elif type(raw) is int:  # `str(raw) != only`, without making the string
                        skip = f == "poll" or only_int is None or raw != only_int
                    else:
                        skip = f == "poll" or str(raw) != only
        if skip:
            continue
        if pairs is not None:
            if pruner is not None:
                pruner.before(call, last_reads, last_sends)
            if state is None:
                state = out.states[only] = _KeyState()
            _add_poll(state, call, pairs, last_reads, only)
        elif sent is not None:
            if pruner is not None:
                pruner.before(call, last_reads, last_sends)
            if state is None:
                state = out.states[only] = _KeyState()
            _add_send(state, call, sent[0], sent[1], last_sends, only)
        else:
            writes, reads = _parse(call, only)
            if writes is None and reads is None:
                continue
            if pruner is not None:
                pruner.before(call, last_reads, last_sends)
            _add_call(out, call, writes, reads, last_reads, last_sends)
            state = out.states.get(only)
    return out


def _subscribes(f: str) -> bool:
    """`f in SUBSCRIPTION_FUNCTIONS`, by comparisons (see `_collect_key`)."""
    return f in ("assign", "subscribe")


def _int_named(key: Key) -> int | None:
    """The int whose string is `key` (`_norm_key`), if any: a send's int key names `key`
    exactly when it equals this."""
    try:
        number = int(key)
    except ValueError:
        return None
    return number if str(number) == key else None


def _add_send(
    state: _KeyState,
    call: Piece,
    offset: Any,
    v: Any,
    last_sends: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
    key: Key,
) -> None:
    """`_add_call` of one send, (offset, v), to `key` (whose state is `state`)."""
    outcome = call.outcome
    try:
        state.writer_of[v] = call
        if outcome is _OK:
            state.ok_sent.add(v)
            if offset is not None:
                if type(offset) is not int:
                    raise TypeError  # an offset orders a key's log: an integer
                current = state.log.setdefault(offset, v)
                if current != v:
                    state.conflict(offset, current, v)
        elif outcome is _FAIL:
            state.failed.add(v)
            return  # a failed send is no process's last
        elif offset is not None:
            if type(offset) is not int:
                raise TypeError  # as an ok send's: the log may take them
            state.deferred.append((call, [(offset, v)]))
        process = call.process
        sent_by = last_sends.get(process)
        if sent_by is None:
            sent_by = last_sends[process] = {}
        previous = sent_by.get(key)
        if previous is not None:
            state.send_pairs.append((previous[0], previous[1], call, v))
        sent_by[key] = (call, v)
    except (TypeError, ValueError):
        raise _malformed(call, _PAIRS_EXPECTED) from None


def _add_poll(
    state: _KeyState,
    call: _AnyCall,
    pairs: list[Any],
    last_reads: dict[Process, dict[Key, tuple[_AnyCall, Any]]],
    key: Key,
) -> None:
    """Pass 1 at the polls of one call of `key` (whose state is `state`; `_add_call`'s, key by
    key): the [offset, value] `pairs` it read (lists or tuples; offsets None when unknown)."""
    ok = call.outcome is _OK
    process = call.process
    try:
        log = state.log
        readers = state.ok_read if ok else state.other_read
        for pair in pairs:
            if type(pair) is list and len(pair) == 2:
                offset = pair[0]  # compiled: two list reads, not an iterator's unpacking
                v = pair[1]
            else:
                offset, v = pair
            if offset is not None:
                if type(offset) is not int:
                    raise TypeError  # an offset orders a key's log: an integer
                current = log.setdefault(offset, v)
                if current != v:
                    state.conflict(offset, current, v)
            readers.setdefault(v, call)
        count = len(pairs)
        if count > 1:
            state.int_polls.append((call, pairs))
        read_by = last_reads.get(process)
        if read_by is not None:
            previous = read_by.get(key)
            if previous is not None and previous[1] is not None and count:
                state.poll_pairs.append((previous[0], previous[1], call, pairs[0][1]))
        if ok:
            if read_by is None:
                read_by = last_reads[process] = {}
            read_by[key] = (call, pairs[-1][1] if count else None)
    except (TypeError, ValueError):
        raise _malformed(call, _PAIRS_EXPECTED) from None


def _live_assignments(calls: list[_Timed]) -> list[_Timed]:
    """`calls` without the assign/subscribe calls that change nothing here: an assignment only
    prunes what its process tracks, and a process tracks keys only through its own data calls,
    so the assignments of other processes, and failed ones, go (they are most of a key's part
    when there are many keys)."""
    subscribing = SUBSCRIPTION_FUNCTIONS
    active = {call.process for call in calls if call.f not in subscribing}
    return [
        call
        for call in calls
        if call.f not in subscribing or (call.process in active and call.outcome is not _FAIL)
    ]


class _Committed:
    """`must-have-committed?`, cached per call."""

    def __init__(self, collected: _Collected, given: Collection[int] | None, only: Key | None) -> None:
        self.states: dict[Key, _KeyState] = collected.states
        self.given = given
        self.only = only
        self.cache: dict[int, bool] = {}

    def __call__(self, call: _AnyCall) -> bool:
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


def _first_reader(state: _KeyState, value: Any) -> _AnyCall | None:
    ok = state.ok_read.get(value)
    other = state.other_read.get(value)
    if ok is None or other is None:
        return ok if ok is not None else other
    return ok if _order(ok) < _order(other) else other


# `_analyze_key`'s helpers are functions, not closures: compiled, a closure and its
# environment refer to each other, so the key's whole state would outlive the call as cyclic
# garbage, which stage 2 (its collector off) kept, then scanned at great cost when the
# collector came back on (10^7 operations on Spark: 17 CPU-s of collections).


def _emit(found: dict[str, list[Record]], name: str, record: Record) -> None:
    found.setdefault(name, []).append(record)


def _writer_ref(state: _KeyState, value: Any) -> Record | None:
    call = state.writer_of.get(value)
    return None if call is None else op_ref(call)


def _reader_ref(state: _KeyState, value: Any) -> Record | None:
    call = _first_reader(state, value)
    return None if call is None else op_ref(call)


def _analyze_key(
    key: Key,
    state: _KeyState,
    committed: Callable[[_AnyCall], bool],
    found: dict[str, list[Record]],
    g1a_targets: dict[Key, set[Any]],
) -> None:
    for call, sends in state.deferred:  # info sends join the log once shown committed
        if committed(call):
            for offset, v in sends:
                if offset is not None:
                    state.put(offset, v)
    order = _Order(state)
    offsets, values, by_value = order.offsets, order.values, order.by_value

    # inconsistent-offsets
    for offset in sorted(state.conflicts, key=_sort_token):
        clash = sorted(state.conflicts[offset], key=_sort_token)
        _emit(
            found,
            "inconsistent-offsets",
            {
                "key": key,
                "offset": offset,
                "index": bisect_left(offsets, offset),
                "values": clash,
                "writers": [_writer_ref(state, v) for v in clash],
                "first_readers": [_reader_ref(state, v) for v in clash],
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
                _emit(
                    found,
                    "duplicate",
                    {
                        "key": key,
                        "value": v,
                        "count": len(at),
                        "offsets": at,
                        "writer": _writer_ref(state, v),
                        "first_reader": _reader_ref(state, v),
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
                    _emit(
                        found,
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
            _emit(found, "poll-skip", record)
        elif j - i < 1:
            record = _delta_record(key, order, v1, v2, i, j)
            record["ops"] = [op_ref(previous), op_ref(call)]
            _emit(found, "nonmonotonic-poll", record)

    # nonmonotonic-send
    for previous, v1, call, v2 in state.send_pairs:
        i = by_value.get(v1)
        j = by_value.get(v2)
        if i is not None and j is not None and j - i < 1:
            record = _delta_record(key, order, v1, v2, i, j)
            record["ops"] = [op_ref(previous), op_ref(call)]
            _emit(found, "nonmonotonic-send", record)

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
                _emit(found, f"int-{kind}-skip" if j - i > 1 else f"int-nonmonotonic-{kind}", record)

    # precommitted-read
    for call, seen in state.precommitted:
        _emit(found, "precommitted-read", {"key": key, "value": seen[0], "values": seen, "op": op_ref(call)})

    # G1a: readers are found by a second look at the calls (rare)
    failed_read = {v for v in state.failed if v in ok_read}
    if failed_read:
        g1a_targets[key] = failed_read

    # unseen
    unseen = sorted((v for v in state.ok_sent if v not in ok_read), key=_sort_token)
    if unseen:
        listed = _listed(unseen)
        _emit(
            found,
            "unseen",
            {
                "key": key,
                "count": len(unseen),
                "values": listed,
                "writers": [_writer_ref(state, v) for v in listed],
            },
        )

    # no-writer-of-value
    writer_of = state.writer_of
    for readers in (ok_read, state.other_read):
        for v in readers:  # (`_result` sorts the records)
            if v in writer_of or (readers is state.other_read and v in ok_read):
                continue
            record = {"key": key, "value": v, "reader": _reader_ref(state, v)}
            position = by_value.get(v)
            if position is not None:
                record["offset"] = offsets[position]
            _emit(found, "no-writer-of-value", record)


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
    """Some call read a value before its sender was invoked: a 2-cycle with a realtime edge."""
    for state in collected.states.values():
        writer_of = state.writer_of
        for readers in (state.ok_read, state.other_read):
            for v, reader in readers.items():
                writer = writer_of.get(v)
                if writer is None or writer is reader or reader.outcome is not _OK:
                    continue
                complete = reader.complete_index
                if complete is not None and complete < writer.invoke_index:
                    return True
    return False


_MODEL_NAMES: Final = {
    "PL-1": "read-uncommitted",
    "PL-2": "read-committed",
    "strong-PL-1": "strong-read-uncommitted",
    "strong-PL-2": "strong-read-committed",
}
"""Elle's friendly names of the models whose `*-cycle-exists` entries a Kafka graph can give."""


class _Graph:
    """The dependency graph Jepsen's Kafka checker gives Elle, over the data calls: *ww*
    (with `ww_deps`: the writer of a key's previous value in the version order -> the writer
    of the next), *wr* (the writer of a value -> every other call that polled it) and
    *realtime* (an `ok` call -> every call invoked after it completed; Elle's
    `realtime-graph`, failed calls included)."""

    __slots__ = ("nodes", "orders", "states", "wr", "ww")

    def __init__(self, nodes: list[Call], states: dict[Key, _KeyState]) -> None:
        self.nodes = nodes
        self.states = states
        self.wr: list[list[int]] = [[] for _ in nodes]
        self.ww: list[list[int]] = [[] for _ in nodes]
        self.orders: dict[Key, _Order] = {}

    def has_edge(self) -> bool:
        """Elle's graph has a vertex (so an edge): else `empty-transaction-graph`."""
        if any(self.wr) or any(self.ww):
            return True
        first_done = min(
            (c.complete_index for c in self.nodes if c.outcome is _OK and c.complete_index is not None),
            default=None,
        )
        return first_done is not None and any(c.invoke_index > first_done for c in self.nodes)

    def subgraph(self, members: list[int], ww: bool, wr: bool, realtime: bool) -> list[list[int]]:
        """Adjacency over `members` (local numbers 0..m-1) with the chosen edges; realtime
        edges go through a chain of time points (numbers m and up): an `ok` call -> its
        completion point, an invocation point -> the call invoked there, each point -> the
        next, so a path call -> ... -> call exists iff the first completed before the second
        was invoked (linear size, where the relation itself is quadratic)."""
        local = {node: n for n, node in enumerate(members)}
        adjacency: list[list[int]] = []
        for node in members:
            out: list[int] = []
            if ww:
                out.extend(local[m] for m in self.ww[node] if m in local)
            if wr:
                out.extend(local[m] for m in self.wr[node] if m in local)
            adjacency.append(out)
        if realtime:
            events: list[tuple[int, int, int]] = []
            for n, node in enumerate(members):
                call = self.nodes[node]
                if call.outcome is _OK and call.complete_index is not None:
                    events.append((call.complete_index, 0, n))
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
        return adjacency


def _apply_deferred(state: _KeyState, committed: Callable[[_AnyCall], bool]) -> None:
    """`info` sends join the log once shown committed (idempotent)."""
    for call, sends in state.deferred:
        if committed(call):
            for offset, v in sends:
                if offset is not None:
                    state.put(offset, v)


def _whole_calls(collected: _Collected) -> list[Call]:
    """The calls of a whole history's pass 1 (`_collect` holds `Call`s)."""
    return cast(list[Call], collected.ordered)


def _build_graph(collected: _Collected, committed: Callable[[_AnyCall], bool], ww_deps: bool) -> _Graph:
    states = collected.states
    nodes = [call for call in _whole_calls(collected) if call.f in DATA_FUNCTIONS]
    graph = _Graph(nodes, states)
    node_of = {id(call): n for n, call in enumerate(nodes)}
    for n, call in enumerate(nodes):
        _, reads = _parse(call, None)
        if not reads:
            continue
        for key, pairs in reads.items():
            writer_of = states[key].writer_of
            for pair in pairs:
                writer = writer_of.get(pair[1])
                if writer is not None and writer is not call:
                    graph.wr[node_of[id(writer)]].append(n)
    if ww_deps:
        for key, state in states.items():
            _apply_deferred(state, committed)
            order = graph.orders[key] = _Order(state)
            writer_of = state.writer_of
            for v2, second in writer_of.items():
                at = order.by_value.get(v2)
                if not at:
                    continue  # unknown position, or first in the order
                first = writer_of.get(order.values[at - 1])
                if first is not None and first is not second:
                    graph.ww[node_of[id(first)]].append(node_of[id(second)])
    return graph


def _components(graph: _Graph, members: list[int], ww: bool, wr: bool, realtime: bool) -> list[list[int]]:
    """The nontrivial strongly connected components of a subgraph, as sorted lists of calls
    (graph numbers), smallest first (Elle reports the smallest's size)."""
    if not (wr or realtime) and not any(graph.ww[m] for m in members):
        return []
    adjacency = graph.subgraph(members, ww, wr, realtime)
    count = len(members)
    found = [
        sorted(members[n] for n in component if n < count) for component in _strongly_connected(adjacency)
    ]
    return sorted((c for c in found if len(c) > 1), key=len)


def _cycles(
    collected: _Collected,
    committed: Callable[[_AnyCall], bool],
    found: dict[str, list[Record]],
    ww_deps: bool,
    deadline: float = math.inf,
) -> None:
    """Elle's `cycles` over the Kafka graph, as Jepsen's checker runs it (`:strict-serializable`):
    `empty-transaction-graph` when the graph has no edge; then per strongly connected
    component, the `*-cycle-exists` entries of `cycle-exists-cases` and one cycle per
    anomaly type Elle's search reports, its types and their order of search.

    With only ww, wr and realtime edges (no rw, no process edges) Elle's lattice leaves four
    cases per component: a ww cycle (`PL-1-cycle-exists`, `G0`: G0 implies every other
    type); else a ww+wr cycle (`PL-2-cycle-exists`, `G1c`, and when a ww+realtime cycle
    exists too, `strong-PL-1-cycle-exists` and `G0-realtime`, which G1c does not imply);
    else a ww+realtime cycle (`strong-PL-1-cycle-exists`, `G0-realtime`, which implies
    G1c-realtime); else (`strong-PL-2-cycle-exists`, `G1c-realtime`)."""
    if not ww_deps and not collected.mixed and not _has_backward_read(collected):
        # Every wr and realtime edge then goes forward in time: no cycle. Only ask whether
        # the graph has an edge at all.
        if not _any_edge(collected):
            found.setdefault("empty-transaction-graph", []).append({"nodes": _data_calls(collected)})
        return
    graph = _build_graph(collected, committed, ww_deps)
    if not graph.has_edge():
        found.setdefault("empty-transaction-graph", []).append({"nodes": len(graph.nodes)})
        return
    _check_clock(deadline)
    everything = list(range(len(graph.nodes)))
    for component in _components(graph, everything, True, True, True):
        _check_clock(deadline)
        ww_only = _components(graph, component, True, False, False) if ww_deps else []
        if ww_only:
            _exists(found, "PL-1", ["ww"], ww_only[0])
            _report_cycle(found, "G0", graph, ww_only[0], True, False, False, len(component))
            continue
        data = _components(graph, component, True, True, False)
        ww_realtime = _components(graph, component, True, False, True) if ww_deps else []
        if data:
            _exists(found, "PL-2", ["ww", "wr"], data[0])
            _report_cycle(found, "G1c", graph, data[0], True, True, False, len(component))
        if ww_realtime:
            _exists(found, "strong-PL-1", ["ww", "realtime"], ww_realtime[0])
            _report_cycle(found, "G0-realtime", graph, ww_realtime[0], True, False, True, len(component))
        if not data and not ww_realtime:
            _exists(found, "strong-PL-2", ["ww", "wr", "realtime"], component)
            _report_cycle(found, "G1c-realtime", graph, component, True, True, True, len(component))


def _data_calls(collected: _Collected) -> int:
    return sum(1 for call in collected.ordered if call.f in DATA_FUNCTIONS)


def _any_edge(collected: _Collected) -> bool:
    """Whether Elle's graph has an edge, without building it: a value polled by a call
    other than its writer, or an `ok` call completed before another call's invocation."""
    return any(_wr_edge_of(collected, state) for state in collected.states.values()) or _realtime_edge(
        _whole_calls(collected)
    )


def _wr_edge_of(collected: _Collected, state: _KeyState) -> bool:
    """A value of this key polled by a call other than its writer (Elle's wr edge)."""
    writer_of = state.writer_of
    for readers in (state.ok_read, state.other_read):
        for v, reader in readers.items():
            writer = writer_of.get(v)
            if writer is not None and writer is not reader:
                return True
    return len(state.ok_read) + len(state.other_read) > 0 and _several_readers(collected, state)


def _realtime_edge(ordered: Sequence[Call | CallFacts]) -> bool:
    """An `ok` data call completed before another data call was invoked (Elle's realtime edge)."""
    calls = [call for call in ordered if call.f in DATA_FUNCTIONS]
    first_done = min(
        (c.complete_index for c in calls if c.outcome is _OK and c.complete_index is not None), default=None
    )
    return first_done is not None and any(c.invoke_index > first_done for c in calls)


def _several_readers(collected: _Collected, state: _KeyState) -> bool:
    # `ok_read`/`other_read` keep one reader per value; a value's other readers also get a wr
    # edge from its writer when it is not theirs. Only a value whose first reader is its own
    # writer can hide such an edge, and a writer that polls its own value is rare: look again.
    for readers in (state.ok_read, state.other_read):
        for v, reader in readers.items():
            if state.writer_of.get(v) is reader:
                return _wr_edge_exists(collected)
    return False


def _wr_edge_exists(collected: _Collected) -> bool:
    for call in collected.ordered:
        if call.f not in DATA_FUNCTIONS:
            continue
        _, reads = _parse(call, None)
        for key, pairs in (reads or {}).items():
            writer_of = collected.states[key].writer_of
            for pair in pairs:
                writer = writer_of.get(pair[1])
                if writer is not None and writer is not call:
                    return True
    return False


def _exists(found: dict[str, list[Record]], model: str, subgraph: list[str], scc: list[int]) -> None:
    found.setdefault(f"{model}-cycle-exists", []).append(
        {"not": _MODEL_NAMES[model], "subgraph": list(subgraph), "scc_size": len(scc)}
    )


def _report_cycle(
    found: dict[str, list[Record]],
    name: str,
    graph: _Graph,
    members: list[int],
    ww: bool,
    wr: bool,
    realtime: bool,
    size: int,
) -> None:
    """A shortest cycle of this strongly connected subgraph, with its steps explained as
    Elle's explainers do (ww first, then wr, then realtime)."""
    adjacency = graph.subgraph(members, ww, wr, realtime)
    count = len(members)
    path = _shortest_cycle(adjacency, set(range(len(adjacency))), 0, count)
    cycle = [n for n in path if n < count]
    steps: list[JsonValue] = []
    for position, n in enumerate(cycle):
        nxt = cycle[(position + 1) % len(cycle)]
        at = path.index(n)
        follower = path[(at + 1) % len(path)]
        first, second = graph.nodes[members[n]], graph.nodes[members[nxt]]
        if follower == nxt and ww and members[nxt] in graph.ww[members[n]]:
            steps.append(_ww_step(first, second, graph))
        elif follower == nxt:
            steps.append(_wr_step(first, second, graph.states))
        else:
            steps.append(
                {
                    "type": "realtime",
                    "complete_index": first.complete_index,
                    "invoke_index": second.invoke_index,
                }
            )
    found.setdefault(name, []).append(
        {"cycle": [op_ref(graph.nodes[members[n]]) for n in cycle], "steps": steps, "scc_size": size}
    )


def _shortest_cycle(adjacency: list[list[int]], members: set[int], start: int, ops: int) -> list[int]:
    """0-1 BFS from `start` back to it inside one component; edges out of a call cost 1,
    edges out of a time point cost 0, so the length counts data and realtime steps. A start
    on no cycle (it may lie outside the component's cycles) moves on to the next call."""
    for begin in range(start, ops):
        path = _shortest_cycle_from(adjacency, members, begin, ops)
        if path:
            return path
    return []  # pragma: no cover - a strongly connected subgraph has a cycle


def _shortest_cycle_from(adjacency: list[list[int]], members: set[int], start: int, ops: int) -> list[int]:
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
    if best < 0:
        return []
    path = [best]
    while parent[path[-1]] != -1:
        path.append(parent[path[-1]])
    return path[::-1]


def _ww_step(first: Call, second: Call, graph: _Graph) -> Record:
    writes, _ = _parse(second, None)
    for key, sends in (writes or {}).items():
        order = graph.orders.get(key)
        writer_of = graph.states[key].writer_of
        if order is None:
            continue
        for _, v2 in sends:
            at = order.by_value.get(v2)
            if at and writer_of.get(order.values[at - 1]) is first:
                return {"type": "ww", "key": key, "value": order.values[at - 1], "value'": v2}
    return {"type": "ww"}  # pragma: no cover - the edge came from such a pair


def _wr_step(writer: Call, reader: Call, states: dict[Key, _KeyState]) -> Record:
    _, reads = _parse(reader, None)
    for key, pairs in (reads or {}).items():
        writer_of = states[key].writer_of
        for offset, v in pairs:
            if writer_of.get(v) is writer:
                return {"type": "wr", "key": key, "value": v, "offset": offset}
    return {"type": "wr"}  # pragma: no cover - the edge came from such a read


# ---------------------------------------------------------------------------------------
# Whole-history figures: realtime lag, Jepsen's unseen merge
# ---------------------------------------------------------------------------------------


class CallFacts(NamedTuple):
    """What the whole-history part reads of a call on the per-key route (`history_facts`,
    where the keys' checks hand in the rest as `KeyFacts`): who, which function, how it ended,
    its indices and times, and per key the greatest offset it showed to exist (`offsets`:
    `_max_offsets`, -1 for a key polled empty; an assign's are the keys it names, at -1, as it
    shows none), never its value. Stage 1 ships a data call to that part as a flat JSON list
    (`facts_fields`, `from_fields`): process, kind (function and outcome in one small integer,
    `_FUNCTION_KIND` + `_OUTCOME_KIND`), the two indices, the two times, then each key and its
    offset in turn; a fraction of the call's bytes, with `_max_offsets` found where the call is
    read. The part reads those lists as they come (`history_facts`), no `CallFacts` per call
    (10^6-operation bench history, 496,304 data calls: `orjson.loads` of the part 0.28 -> 0.18
    CPU-s, no dict and no strings per call; `from_fields` took 0.3 more, compiled). Stage 1
    pays the same (10^5 bench history, compiled, callgrind: 3,097.8 M -> 3,098.3 M instructions;
    the part's bytes 32.1 -> 26.0 MB at 10^6)."""

    process: Any
    f: str
    outcome: Outcome
    invoke_index: int
    complete_index: int | None
    invoke_time: int | None
    complete_time: int | None
    offsets: dict[Key, int]

    @staticmethod
    def from_fields(fields: Sequence[Any]) -> CallFacts:
        """The inverse of `facts_fields`."""
        kind = fields[1]
        offsets = {fields[i]: fields[i + 1] for i in range(_FACTS_OFFSETS, len(fields), 2)}
        return CallFacts(
            fields[0],
            _KIND_FUNCTIONS[kind // 3],
            _KIND_OUTCOMES[kind % 3],
            fields[2],
            fields[3],
            fields[4],
            fields[5],
            offsets,
        )


_OUTCOME_NAMED: Final = {outcome.value: outcome for outcome in Outcome}
_FUNCTION_KIND: Final = {"send": 0, "poll": 3, "txn": 6}
_OUTCOME_KIND: Final = {"ok": 0, "info": 1, "fail": 2}
_KIND_FUNCTIONS: Final = ("send", "poll", "txn")
_KIND_OUTCOMES: Final = (_OK, _INFO, _FAIL)
_POLL_OK: Final = 3
_TXN_OK: Final = 6
_OTHER_KIND: Final = 9
"""Kinds 9-11: a call of no data function (in `history_facts` only, never shipped)."""
_FACTS_OFFSETS: Final = 6
"""Where a facts list's keys and offsets begin."""
_Timed = TypeVar("_Timed", bound="Call | CallFacts")


def facts_fields(
    process: Any,
    f: str,
    outcome: str,
    invoked: Any,
    completed: Any,
    invoke_time: Any,
    complete_time: Any,
    offsets: dict[Key, int],
) -> list[Any]:
    """A data call's `CallFacts` as stage 1 ships them (JSON-ready), the outcome by its name.
    (Indices and times typed Any: compiled, an `int` parameter is unboxed, then boxed into a
    new object where it is listed.)"""
    fields = [process, facts_kind(f, outcome), invoked, completed, invoke_time, complete_time]
    for key, offset in offsets.items():
        fields.append(key)
        fields.append(offset)
    return fields


def plain_facts_fields(
    process: Any,
    f: str,
    outcome: str,
    invoked: Any,
    completed: Any,
    invoke_time: Any,
    complete_time: Any,
    value: JsonValue,
    names: KeyNames,
    pieces: list[Any],
) -> list[Any] | None:
    """`call_facts_fields` of a call that sends or polls in the commonest shapes (one send,
    sends with offsets, one poll of string keys: `single_send`, `_plain_sends`,
    `plain_poll_offsets`), straight from its analysed value `value`, without a dict of its
    offsets where it can; each key of its pieces (`split_call`'s, in no order) goes to
    `pieces`, followed by the value its piece analyses (`restrict_each`'s). None for any other
    shape or offsets (the long way finds them). Stage 1 of the 10^5-op bench file, compiled,
    callgrind: `distributed._fast_pieces` 369 -> 204 M instructions against `plain_sends`,
    `plain_max_offsets` and `restrict_each` called apart, each send's offsets in a dict and
    each integer key's string made per call (`test_stage1_helpers` compares it with
    `call_facts_fields` and `split_call`)."""
    if f == "poll":
        fields = [process, facts_kind(f, outcome), invoked, completed, invoke_time, complete_time]
        return fields if _plain_poll(value, fields if outcome != "fail" else [], pieces) else None
    if f != "send":
        return None
    send = single_send(value)  # the commonest call
    if send is not None:
        pieces.append(names.of(send[1]))
        pieces.append(value)
        return send_facts_fields(
            process, outcome, invoked, completed, invoke_time, complete_time, pieces[0], send[2]
        )
    fields = [process, facts_kind(f, outcome), invoked, completed, invoke_time, complete_time]
    return fields if _plain_sends(value, names, fields if outcome != "fail" else None, pieces) else None


def _plain_poll(value: JsonValue, offsets: list[Any], pieces: list[Any]) -> bool:
    """`plain_poll_offsets` of a value, each key then its offset appended to `offsets`, with
    each key and the value restricted to it (`restrict_each`'s) to `pieces`, in one pass;
    False for any other shape (a poll of several keys but for a pair: the long way)."""
    if not value:
        return True  # `_parse` reads nothing from an empty value
    mop = _one_poll(value)
    if mop is None:
        return False
    polled = mop[1] if len(mop) > 1 else None
    if not polled:
        return True
    if type(polled) is not dict:
        return False
    by_key: dict[Any, Any] = polled
    several = len(by_key) > 1
    if several and len(mop) != 2:
        return False
    for key, pairs in by_key.items():
        if type(key) is not str or type(pairs) is not list:
            return False
        best = _pairs_offset(pairs)
        if best is None:
            return False  # a null offset, or a malformed pair: the long way says which
        offsets.append(key)
        offsets.append(best)
        pieces.append(key)
        pieces.append([[mop[0], {key: pairs}]] if several else value)
    return True


def send_facts_fields(
    process: Any,
    outcome: str,
    invoked: Any,
    completed: Any,
    invoke_time: Any,
    complete_time: Any,
    key: Key,
    sent: JsonValue,
) -> list[Any] | None:
    """`facts_fields` of a call that is one send (`single_send`) to `key` of `sent`, without
    its offsets' dict; None when its offset is no int (the long way finds it)."""
    fields = [process, facts_kind("send", outcome), invoked, completed, invoke_time, complete_time]
    if type(sent) is list and outcome != "fail":  # else no offset: a failed call, or none sent
        pair: list[Any] = sent
        offset = pair[0]
        if not _is_int(offset):
            return None
        fields.append(key)
        fields.append(offset)
    return fields


def facts_kind(f: str, outcome: str) -> int:
    """A data call's function and outcome in one small integer (`_FUNCTION_KIND` plus
    `_OUTCOME_KIND`), the common names told by comparisons (stage 1 reads each line's names
    as new strings, which a lookup would hash)."""
    function = 0 if f == "send" else _POLL_OK if f == "poll" else _FUNCTION_KIND[f]
    return function + (0 if outcome == "ok" else 1 if outcome == "info" else _OUTCOME_KIND[outcome])


def call_facts_fields(call: Call | CallFacts) -> list[Any]:
    """`facts_fields` of a data call (or of its `call_facts`), as stage 1 ships them."""
    facts = call if isinstance(call, CallFacts) else call_facts(call)
    return facts_fields(
        facts.process,
        facts.f,
        facts.outcome.value,
        facts.invoke_index,
        facts.complete_index,
        facts.invoke_time,
        facts.complete_time,
        facts.offsets,
    )


def call_facts(call: Call) -> CallFacts:
    """A call's `CallFacts`."""
    if call.f == "assign":
        value = analysed_value(call)
        offsets = dict.fromkeys(map(str, value), -1) if isinstance(value, list) else {}  # `_norm_key`, in C
    else:
        offsets = _max_offsets(call)
    return CallFacts(
        call.process,
        call.f,
        call.outcome,
        call.invoke_index,
        call.complete_index,
        call.invoke_time,
        call.complete_time,
        offsets,
    )


def _max_offsets(call: Call) -> dict[Key, int]:
    """Jepsen's `op->max-offsets` of an `ok`/`info` call: per key, the highest offset polled
    (-1 for an empty poll) or sent. As upstream, a send without an offset restarts the
    call's send map (its `reduce` step returns nil there)."""
    if call.outcome is _FAIL or call.f not in DATA_FUNCTIONS:
        return {}
    fast = plain_max_offsets(call.f, analysed_value(call))
    if fast is not None:
        return fast
    try:
        return _parsed_max_offsets(call)
    except (TypeError, IndexError, KeyError):  # a pair that is empty or no list: as `_collect` says
        raise _malformed(call, "expected [offset, value] pairs") from None


def _parsed_max_offsets(call: Call) -> dict[Key, int]:
    """`_max_offsets` of a data call that did not fail, the long way (any shape)."""
    writes, reads = _parse(call, None)
    if not writes or all(offset is not None for sends in writes.values() for offset, _ in sends):
        # The common shapes, from the parsed call: no send without an offset to restart on.
        out: dict[Key, Any] = {}  # offsets as sent: in a malformed send, any JSON value
        for key, pairs in (reads or {}).items():
            best = -1
            for pair in pairs:
                offset = pair[0]
                if offset.__class__ is int and offset > best:
                    best = offset
            out[key] = best
        for key, sends in (writes or {}).items():
            highest = max(offset for offset, _ in sends)  # any JSON value in a malformed send
            out[key] = highest if key not in out else max(out[key], highest)
        return out
    value = analysed_value(call)
    polled: dict[Key, int] = {}
    sent: dict[Key, int] = {}
    for mop in value if isinstance(value, list) else ():
        if not isinstance(mop, list | tuple) or not mop:
            continue
        if mop[0] in _POLL and call.f != "send":
            for raw_key, pairs in (mop[1] if len(mop) > 1 and isinstance(mop[1], dict) else {}).items():
                offsets = [pair[0] for pair in pairs if isinstance(pair[0], int)]
                key = _norm_key(raw_key)
                polled[key] = max([polled.get(key, -1), -1, *offsets])
        elif mop[0] in _SEND and call.f != "poll" and len(mop) == 3:
            sent_value = mop[2]
            if isinstance(sent_value, list) and len(sent_value) == 2 and isinstance(sent_value[0], int):
                key = _norm_key(mop[1])
                sent[key] = max(sent.get(key, 0), sent_value[0])
            else:
                sent = {}
    for key, offset in sent.items():
        polled[key] = max(polled.get(key, offset), offset)
    return polled


def plain_max_offsets(f: str, value: JsonValue) -> dict[Key, int] | None:
    """`_max_offsets` of a data call `f` that did not fail, of analysed value `value`, when it
    is one plain poll (`plain_poll_offsets`), one send (with an offset, or without: nothing
    shown) or sends that all have offsets, the commonest calls, in C where it can; None for
    any other shape."""
    if type(value) is not list or len(value) != 1:
        return _sends_max_offsets(f, value)
    mops: list[Any] = value
    if type(mops[0]) is not list or not mops[0]:
        return None
    mop: list[Any] = mops[0]
    name = mop[0]
    if name in _POLL and f != "send":
        return plain_poll_offsets(value)
    if name in _SEND and f != "poll" and len(mop) == 3:
        sent = mop[2]
        if type(sent) is list and len(sent) == 2 and type(sent[0]) is int:
            return {_norm_key(mop[1]): sent[0]}
        if type(sent) is not list and type(sent) is not tuple:
            return {}  # no offset: upstream's send map restarts, and nothing follows
    return None


def _sends_max_offsets(f: str, value: JsonValue) -> dict[Key, int] | None:
    """`_max_offsets` of several sends that all have an int offset (the greatest per key, the
    keys in the order they come: `_parse`'s); None for any other value."""
    if f == "poll" or type(value) is not list or not value:
        return None
    mops: list[Any] = value
    out: dict[Key, int] = {}
    for mop in mops:
        if type(mop) is not list:
            return None
        fields: list[Any] = mop
        if len(fields) != 3 or type(fields[0]) is not str or fields[0] not in _SEND:
            return None
        sent = fields[2]
        if type(sent) is not list or len(sent) != 2 or type(sent[0]) is not int:
            return None
        offset: int = sent[0]
        key = _norm_key(fields[1])
        known = out.get(key)
        out[key] = offset if known is None or offset > known else known
    return out


def realtime_lags(calls: Iterable[Call]) -> list[Record] | None:
    """Jepsen's `realtime-lag`: for each `ok` poll/txn and each key its process has (by
    assign, or by polling it), a lower bound on how stale the poll was: its invocation
    time minus the time at which an offset above the one the process has reached was known
    to exist (0 when none was). An `ok` assign keeps the offsets of the keys it names (-1
    for new ones) and drops the others; an `ok` subscribe drops all. Times are the
    history's own; None when a call lacks one (upstream skips histories without times)."""
    ordered = sorted(calls, key=_order)
    if any(call.invoke_time is None for call in ordered):
        return None
    expired = _expired_times(ordered, [_max_offsets(call) for call in ordered])
    positions: dict[Process, dict[Key, int]] = {}
    lags: list[Record] = []
    for call in ordered:
        if call.outcome is not _OK:
            continue
        if call.f == "assign":
            value = analysed_value(call)
            named = [_norm_key(k) for k in value] if isinstance(value, list) else []
            before = positions.get(call.process, {})
            positions[call.process] = {key: before.get(key, -1) for key in named}
        elif call.f == "subscribe":
            positions[call.process] = {}
        elif call.f in ("poll", "txn"):
            offsets = dict(positions.get(call.process, {}))
            for key, offset in _max_offsets(call).items():
                offsets[key] = max(offsets.get(key, offset), offset)
            positions[call.process] = offsets
            started = call.invoke_time
            assert started is not None
            for key, offset in offsets.items():
                known_at = _known_at(expired.get(key, []), offset + 1)
                lag = 0 if known_at is None else max(0, started - known_at)
                lags.append({"time": started, "process": call.process, "key": key, "lag": lag})
    return lags


def _expired_times(ordered: Sequence[Call | CallFacts], maxes: list[dict[Key, Any]]) -> dict[Key, list[int]]:
    """Per key, the completion time of the first call (in completion order) that showed each
    offset or a higher one to exist (Jepsen's `expired` vectors), at that offset's index: a
    call fills in only offsets above those known, so what is known is always 0..n-1."""
    expired: dict[Key, list[int]] = {}
    for call, known_offsets in zip(ordered, maxes, strict=True):
        time_done = call.complete_time
        if time_done is None:
            continue
        for key, known in known_offsets.items():
            times = expired.get(key)
            if times is None:
                times = expired[key] = []
            if known >= len(times):
                times.extend(itertools.repeat(time_done, known + 1 - len(times)))
    return expired


def _known_at(times: list[int], offset: int) -> int | None:
    """When `offset` was first known to exist (`_expired_times`' list of its key), or None."""
    return times[offset] if offset < len(times) else None


def lag_summary(lags: list[Record] | None) -> dict[str, JsonValue]:
    """The worst lag (Jepsen's `worst-realtime-lag`: the first greatest) and the greatest
    per process and key, from `realtime_lags`' list."""
    if lags is None:
        return _NO_LAG
    by: dict[tuple[str, Key], Record] = {}
    # `util/max-by`: the first greatest; `{:time 0 :lag 0}` only when there is no lag at all.
    worst: Record = dict(lags[0]) if lags else {"time": 0, "lag": 0}
    for lag in lags:
        value = int(str(lag["lag"]))
        if value > int(str(worst["lag"])):
            worst = lag
        slot = (json.dumps(lag["process"], default=str), str(lag["key"]))
        kept = by.get(slot)
        if kept is None or value > int(str(kept["max_lag"])):
            by[slot] = {"process": lag["process"], "key": lag["key"], "max_lag": value, "time": lag["time"]}
    return _lag_record(worst, by)


_NO_LAG: Final[dict[str, JsonValue]] = {"available": False, "reason": "a call has no time"}


LAG_LISTED: Final = 100
"""Most (process, key) lags listed (the greatest; a history has processes x keys of them)."""


def _lag_record(
    worst: Record, by: dict[tuple[str, Key], Record], count: int | None = None
) -> dict[str, JsonValue]:
    kept = heapq.nsmallest(LAG_LISTED, by, key=lambda slot: (-int(str(by[slot]["max_lag"])), slot))
    return {
        "available": True,
        "worst": dict(worst),
        "by_process_key": [by[slot] for slot in sorted(kept)],
        "by_process_key_count": len(by) if count is None else count,
        "time_unit": "the history's time field",
    }


def realtime_lag_summary(calls: Iterable[Call]) -> dict[str, JsonValue]:
    """`lag_summary(realtime_lags(calls))` without listing every (poll, key) lag, which is
    polls x assigned keys: for a fixed offset a process's lag on a key only grows with its
    polls' times, so each stretch of polls at one offset is measured at its last poll
    (`history_facts`)."""
    return history_facts(calls).realtime_lag


def _facts_row(call: Call | CallFacts) -> list[Any]:
    """A call that is no assign/subscribe as `facts_fields` lists it (a call of no data
    function as `_OTHER_KIND`, showing no offset)."""
    outcome = _OUTCOME_KIND[call.outcome.value]
    if call.f not in DATA_FUNCTIONS:
        kind = _OTHER_KIND + outcome
        return [
            call.process,
            kind,
            call.invoke_index,
            call.complete_index,
            call.invoke_time,
            call.complete_time,
        ]
    return call_facts_fields(call)


def _row_order(row: list[Any]) -> Any:
    """`_order` of a facts list."""
    completed = row[3]
    return completed if completed is not None else _LAST + row[2]


class _Assignment:
    """An assign/subscribe call as realtime lag reads it: its process, whether it is `ok`,
    its `_order`, times, and the keys it names (`_named_keys`; none for a subscribe, which
    drops them all)."""

    __slots__ = ("complete_time", "invoke_time", "named", "ok", "order", "process", "rows_before")

    def __init__(self, call: Call | CallFacts, named: frozenset[Key]) -> None:
        self.process: Process = call.process
        self.ok = call.outcome is _OK
        self.order = _order(call)
        self.invoke_time: Any = call.invoke_time
        self.complete_time: Any = call.complete_time
        self.named = named
        self.rows_before = 0  # the facts lists before it in completion order (`_lag_summary_of`)


def _assignment_order(assignment: _Assignment) -> int:
    return assignment.order


class _OrderedFacts:
    """A whole-history part's facts lists in completion order (`_row_order`), read from its
    windows (`decode` gives each window's lists; stage 1 ships a window per split every
    `distributed.WINDOW_CALLS` calls) without holding them all: `chain`, the windows that are
    each in order and follow one another (a split's calls), decoded one at a time, merged with
    `stragglers`, the sorted lists of the other windows (the calls paired across splits, few).
    `rows()` places each of `assignments` (in completion order) as it goes, after the lists of
    an order not above its own (`rows_before`); it may be called again.

    Why not every list at once: at 10^7 bench operations the part's 5 x 10^6 lists took 1.9 GB,
    and first touches of fresh memory cost the Spark task as much as the part's own work. The
    part's Spark task at 10^7 (`resource.getrusage` in it, load 1-2): 14.8 -> 9.6 s, user 6.5
    -> 6.7 CPU-s, system 8.0 -> 2.7 (page faults 868 K -> 360 K, peak RSS 4.1 -> 2.2 GB); the
    verification (`bench.verify_scale`, 10^7 JSON Lines) 45.8 -> 39.9 and 38.6 s, its stage 2
    18.3 -> 12.6 and 14.2 s. In one process, where faults cost less, the same 8.0 CPU-s both
    ways (user 6.2-6.5 -> 7.3-7.5: the windows are decoded twice)."""

    __slots__ = ("assignments", "chain", "decode", "stragglers", "windows")

    def __init__(
        self,
        windows: Sequence[Any],
        decode: Callable[[Any], list[list[Any]]],
        chain: list[int],
        stragglers: list[list[Any]],
        assignments: list[_Assignment],
    ) -> None:
        self.windows = windows
        self.decode = decode
        self.chain = chain
        self.stragglers = stragglers
        self.assignments = assignments

    def rows(self) -> Iterator[list[Any]]:
        """The lists in completion order (of equal orders, a chain window's first), each
        assignment placed before the first list of a greater order."""
        stragglers = self.stragglers
        assignments = self.assignments
        for assignment in assignments:
            assignment.rows_before = _UNPLACED
        waiting = 0  # the next straggler
        placed = 0  # the next assignment
        index = 0
        for window in self.chain:
            for row in self.decode(self.windows[window]):
                order = _row_order(row)
                while waiting < len(stragglers) and _row_order(stragglers[waiting]) < order:
                    placed = _place(assignments, placed, _row_order(stragglers[waiting]), index)
                    yield stragglers[waiting]
                    waiting += 1
                    index += 1
                placed = _place(assignments, placed, order, index)
                yield row
                index += 1
        while waiting < len(stragglers):
            placed = _place(assignments, placed, _row_order(stragglers[waiting]), index)
            yield stragglers[waiting]
            waiting += 1
            index += 1
        for assignment in assignments[placed:]:
            assignment.rows_before = index


_UNPLACED: Final = sys.maxsize
"""`_Assignment.rows_before` until `_OrderedFacts.rows` reaches it."""


def _place(assignments: list[_Assignment], placed: int, order: Any, index: int) -> int:
    """Place the assignments of an order below `order` before the list at `index`."""
    while placed < len(assignments) and assignments[placed].order < order:
        assignments[placed].rows_before = index
        placed += 1
    return placed


def _named_keys(call: Call | CallFacts, known: dict[tuple[Any, ...], frozenset[Key]]) -> frozenset[Key]:
    """The keys an assign names as `call_facts` lists them (its `offsets`), as a set built key
    by key in that order (`_names_of`; `_lag_summary_of` sees a repeated assignment by
    identity)."""
    if isinstance(call, CallFacts):
        return frozenset(iter(call.offsets))
    if call.f != "assign":
        return frozenset()
    return _names_of(analysed_value(call), known)


def _names_of(value: JsonValue, known: dict[tuple[Any, ...], frozenset[Key]]) -> frozenset[Key]:
    """The keys a list of keys names, as strings (`_norm_key` of each; none if `value` is no
    list), one set per distinct list (`known`): most assigns repeat a few lists, so each
    key's string is made once, not per assign (the bench's histories: 4 lists of 250 keys
    among 3,220 assigns at 10^6 operations, 32,000 at 10^7). Compiled, callgrind, 10^6
    bench history: the whole-history part's 303 -> 126 M instructions (a set per distinct
    list already, its keys checked by `set(map(type, value))` before); 100 keys' parts 88 ->
    12 M (a set of strings per assign, 21 KB each: 0.7 GB for every assign at 10^7)."""
    if not isinstance(value, list):
        return frozenset()
    for item in value:
        # Equal lists give equal strings when their keys are all exact ints or strings (1,
        # True and 1.0 are equal, their strings are not). A loop: compiled, a few
        # instructions a key, where `set(map(type, value)) <= {int, str}` cost hundreds.
        if type(item) is not int and type(item) is not str:
            return frozenset(map(str, value))
    token = tuple(value)
    named = known.get(token)
    if named is None:
        named = known[token] = frozenset(map(str, value))
    return named


def _expired_of_rows(rows: Iterable[list[Any]], assignments: list[_Assignment]) -> dict[Key, list[int]]:
    """`_expired_times` of facts lists in completion order and of assignments (which show no
    offset: a key an assign names that completed is listed, with no time). Times and offsets
    are ints here (the readers take no other time; a key's offsets are checked where the
    calls are read), so typed: compiled, they are compared and added as machine integers
    (see `_lag_summary_of`)."""
    expired: dict[Key, list[int]] = {}
    for row in rows:
        time_done: int | None = row[5]
        if time_done is not None:
            _note_offsets(expired, row, time_done)
    listed: set[frozenset[Key]] = set()
    for assignment in assignments:
        if assignment.complete_time is not None and assignment.named not in listed:
            listed.add(assignment.named)
            for key in assignment.named:
                if key not in expired:
                    expired[key] = []
    return expired


def _note_offsets(expired: dict[Key, list[int]], row: list[Any], time_done: int) -> None:
    """`_expired_times`' step for one facts list that completed at `time_done`."""
    for i in range(_FACTS_OFFSETS, len(row), 2):
        known: int = row[i + 1]
        times = _known_times(expired, row[i])
        if known >= len(times):
            if known == len(times):
                times.append(time_done)
            else:
                times.extend(itertools.repeat(time_done, known + 1 - len(times)))


def _known_times(expired: dict[Key, list[int]], key: Key) -> list[int]:
    """The key's `_expired_times` list, made empty if it has none yet (it grows in place)."""
    times = expired.get(key)
    if times is None:
        times = expired[key] = []
    return times


class _KeyLag:
    """One key of one process in `_lag_summary_of`: the offset the process has reached, how
    many polls it had made when it reached it (the stretch at that offset starts there), the
    key's `_expired_times` list, and the greatest lag measured (-1: none yet) with its poll's
    invocation time."""

    __slots__ = ("first", "known", "max_lag", "max_time", "offset")

    def __init__(self, known: list[int] | None, offset: int, first: int) -> None:
        self.known = known
        self.offset = offset
        self.first = first
        self.max_lag = -1
        self.max_time = 0


class _ProcessLag:
    """One process in `_lag_summary_of`: the keys it has (`held`), those it had and dropped
    (their greatest lag goes on if it has them again), its `ok` polls so far and the last
    one's invocation time, and the keys its last assign named."""

    __slots__ = ("dropped", "held", "last_started", "named", "polls")

    def __init__(self) -> None:
        self.held: dict[Key, _KeyLag] = {}
        self.dropped: dict[Key, _KeyLag] = {}
        self.polls = 0
        self.last_started: Any = None
        self.named: frozenset[Key] | None = None


def _key_order(key: Key) -> tuple[str, str]:
    """Keys in one order whatever their types (the least key is named where Jepsen's choice
    follows a hash map's order)."""
    return str(type(key)), str(key)


class _WorstLag:
    """The first greatest lag measured (Jepsen's `worst-realtime-lag`; 0: none yet): of equal
    lags, the earliest poll's; of polls at one time the first measured, and of one process's
    keys measured at one poll the least key (they are measured in the order of a set, which
    differs from run to run with Python's string hashing)."""

    __slots__ = ("key", "lag", "process", "time")

    def __init__(self) -> None:
        self.lag = 0
        self.time = 0
        self.process: Any = None
        self.key: Any = None

    def key_order(self) -> tuple[str, str]:
        return _key_order(self.key)

    def measure(self, process: Process, key: Key, lag_of: _KeyLag, started: int) -> None:
        """The lag of the stretch of polls of `key` at `lag_of.offset` that ended with the poll
        invoked at `started`."""
        known = lag_of.known
        following = lag_of.offset + 1
        if known is None or following >= len(known) or known[following] > started:
            lag = 0
        else:
            lag = started - known[following]
        if lag > lag_of.max_lag:
            lag_of.max_lag = lag
            lag_of.max_time = started
        if lag > self.lag or (
            lag
            and lag == self.lag
            and (
                started < self.time
                or (started == self.time and process == self.process and _key_order(key) < self.key_order())
            )
        ):
            self.lag = lag
            self.time = started
            self.process = process
            self.key = key


def _lag_summary_of(ordered: _OrderedFacts) -> dict[str, JsonValue]:
    """`realtime_lag_summary` of facts lists (`facts_fields`; `_OTHER_KIND` for calls of other
    functions) and of assign/subscribe calls, each in completion order, each assignment
    taken after its `rows_before` facts lists (`_OrderedFacts.rows`).

    Per (process, key) one `_KeyLag`, found by one dict lookup per key a poll shows; the
    stretches an assign ends are measured there and then, a process's stretches still open
    at the end last. Against the previous walk over `CallFacts` (a tuple per key and
    position, a closure per measured stretch), the whole-history part in one process
    (decoding included), compiled, load 5-9: 10^6-operation bench history 4.10-4.40 -> 1.27-1.33
    CPU-s, Jepsen's shape 2.44 -> 0.64, 10^7 bench 44.9 -> 14.6 (source, 10^6: 3.96 -> 1.89).
    Its times, offsets and lags typed `int` (`_KeyLag`, `_WorstLag`, `_expired_of_rows`:
    compiled, machine integers, not generic comparisons and arithmetic), with `_least_listed`
    and `_names_of`: the whole part at 10^6, compiled, callgrind, 5,845 -> 4,361 M
    instructions; one process, load 3-4, 10^6 1.11-1.15 -> 0.91-0.92 CPU-s, 10^7 11.4 -> 8.9.

    One pass over the lists: each key's `_expired_times` list grows as they come
    (`_walk_lags`), which gives the lags of a walk over the finished lists whenever completion
    times never fall along completion order and no `ok` call completed before it was invoked
    (a stretch is measured at its last poll P against the time the next offset was known: a
    call completing later than P that shows it completed no earlier than P was invoked, a lag
    of 0 both ways). A history whose times do otherwise gets the finished lists first."""
    if any(assignment.invoke_time is None for assignment in ordered.assignments):
        return _NO_LAG
    walk = _walk_lags(ordered, None)
    if walk is None:  # times out of completion order: every key's list first
        walk = _walk_lags(ordered, _expired_of_rows(ordered.rows(), ordered.assignments))
    if walk is None or walk.timeless:
        return _NO_LAG
    return _lag_report(walk)


class _LagWalk:
    """What `_walk_lags` found: each process's keys, the worst lag, the first (poll, key) lag
    (Jepsen's worst when all are 0), or that a call has no time (`timeless`)."""

    __slots__ = ("first_lag", "processes", "timeless", "worst")

    def __init__(self) -> None:
        self.processes: dict[Process, _ProcessLag] = {}  # in the order they first complete an ok call
        self.worst = _WorstLag()
        self.first_lag: Record | None = None
        self.timeless = False


def _walk_lags(ordered: _OrderedFacts, expired: dict[Key, list[int]] | None) -> _LagWalk | None:
    """The walk of `_lag_summary_of` with every key's finished `_expired_times` list
    (`expired`), or, with None, the lists grown as the facts lists come: None then if a
    completion time falls along completion order or an `ok` call completed before it was
    invoked (or has no completion time)."""
    walk = _LagWalk()
    growing = expired is None
    known: dict[Key, list[int]] = {} if expired is None else expired
    processes = walk.processes
    worst = walk.worst
    assignments = ordered.assignments
    pending = len(assignments)
    at = 0
    last_done = -sys.maxsize
    for index, row in enumerate(ordered.rows()):
        while at < pending and assignments[at].rows_before <= index:
            _apply_assignment(assignments[at], processes, known, worst)
            at += 1
        started: int | None = row[4]
        if started is None:
            walk.timeless = True
            return walk
        kind: int = row[1]
        if growing:
            done: int | None = row[5]
            if done is None:
                if kind % 3 == 0:
                    return None
            else:
                if done < last_done or (kind % 3 == 0 and started > done):
                    return None
                last_done = done
                _note_offsets(known, row, done)
        if kind % 3:  # not ok
            continue
        process = row[0]
        state = processes.get(process)
        if state is None:
            state = processes[process] = _ProcessLag()
        if kind not in (_POLL_OK, _TXN_OK):
            continue
        now = state.polls
        held = state.held
        for i in range(_FACTS_OFFSETS, len(row), 2):
            key = row[i]
            seen: int = row[i + 1]
            lag_of = held.get(key)
            if lag_of is None:
                dropped = state.dropped
                if key in dropped:
                    lag_of = dropped.pop(key)
                    lag_of.offset = seen
                    lag_of.first = now
                else:
                    lag_of = _KeyLag(_known_times(known, key), seen, now)
                held[key] = lag_of
            elif seen > lag_of.offset:
                if now > lag_of.first:  # polls at the old offset, the last one just before this
                    worst.measure(process, key, lag_of, state.last_started)
                lag_of.offset = seen
                lag_of.first = now
        state.polls = now + 1
        state.last_started = started
        if walk.first_lag is None and held:
            # Which key Jepsen names here follows its map's iteration order (a hash map's, for
            # more than 8 keys): no order the history gives, so the least key, which every
            # engine agrees on however a poll's keys were split and merged.
            least = min(held, key=_key_order)
            walk.first_lag = {"time": started, "process": process, "key": least, "lag": 0}
    while at < pending:
        _apply_assignment(assignments[at], processes, known, worst)
        at += 1
    return walk


def _lag_report(walk: _LagWalk) -> dict[str, JsonValue]:
    """`_lag_summary_of`'s record of a finished walk: the stretches still open measured, the
    greatest lags listed."""
    processes = walk.processes
    worst = walk.worst
    for process, state in processes.items():
        polls = state.polls
        if polls:
            for key, lag_of in state.held.items():
                if polls > lag_of.first:
                    worst.measure(process, key, lag_of, state.last_started)
    lags = [
        lag_of.max_lag
        for state in processes.values()
        for keys in (state.held, state.dropped)
        for lag_of in keys.values()
        if lag_of.max_lag >= 0
    ]
    cut = _least_listed(lags)
    by: dict[tuple[str, Key], Record] = {}
    for process, state in processes.items():
        for keys in (state.held, state.dropped):
            for key, lag_of in keys.items():
                if lag_of.max_lag >= cut:  # (-1: never measured)
                    # else not among the greatest: `_lag_record` drops it (the count stays exact)
                    by[json.dumps(process, default=str), key] = {
                        "process": process,
                        "key": key,
                        "max_lag": lag_of.max_lag,
                        "time": lag_of.max_time,
                    }
    record: Record = walk.first_lag if walk.first_lag is not None else {"time": 0, "lag": 0}
    if worst.lag:
        record = {"time": worst.time, "process": worst.process, "key": worst.key, "lag": worst.lag}
    return _lag_record(record, by, len(lags))


def _least_listed(lags: list[int]) -> int:
    """The `LAG_LISTED`th greatest of `lags`, or 0 when there are fewer (lags are never
    negative): `heapq.nlargest(LAG_LISTED, lags)[-1]` by a compiled loop that touches the
    heap only for a lag above the least kept (`nlargest` is Python code): over the 668,500
    (process, key) lags of the 10^6 bench history, compiled, callgrind, 480 -> 207 M
    instructions."""
    if len(lags) < LAG_LISTED:
        return 0
    heap = lags[:LAG_LISTED]
    heapq.heapify(heap)
    least = heap[0]
    for index in range(LAG_LISTED, len(lags)):
        lag = lags[index]
        if lag > least:
            heapq.heapreplace(heap, lag)
            least = heap[0]
    return least


def _apply_assignment(
    assignment: _Assignment,
    processes: dict[Process, _ProcessLag],
    expired: dict[Key, list[int]],
    worst: _WorstLag,
) -> None:
    """An assign/subscribe in `_lag_summary_of`: an `ok` one ends the stretches of the keys
    its process drops (measured at its last poll) and starts the new keys at -1."""
    if not assignment.ok:
        return
    process = assignment.process
    state = processes.get(process)
    if state is None:
        state = processes[process] = _ProcessLag()
    named = assignment.named
    held = state.held
    if named and named is state.named and len(held) == len(named):
        return  # its last assign named the same keys and it has no other: nothing changes
    polls = state.polls
    dropped = state.dropped
    for key in held.keys() - named if named else list(held):
        lag_of = held.pop(key)
        if polls > lag_of.first:
            worst.measure(process, key, lag_of, state.last_started)
        dropped[key] = lag_of
    # (`frozenset - dict_keys` is a set at run time, made by `dict_keys`' reflected operator.)
    named_keys: Any = named
    for key in named_keys - held.keys():
        if key in dropped:
            lag_of = dropped.pop(key)
            lag_of.offset = -1
            lag_of.first = polls
        else:
            lag_of = _KeyLag(_known_times(expired, key), -1, polls)
        held[key] = lag_of
    state.named = named


def _unseen_merge_keys(collected: _Collected) -> dict[Key, list[Any]]:
    """Keys where Jepsen's `unseen` fold counts polled values as unseen: the last `ok` data
    call polled them, and no earlier `ok` data call sent to or polled the key (nor this one
    sent to it). Values per key, sorted."""
    last = None
    for call in reversed(_whole_calls(collected)):
        if call.outcome is _OK and call.f in DATA_FUNCTIONS:
            last = call
            break
    if last is None:
        return {}
    writes, reads = _parse(last, None)
    states = collected.states
    candidates = [
        key
        for key, pairs in (reads or {}).items()
        if pairs
        and not (writes and key in writes)
        and not states[key].ok_sent
        and all(reader is last for reader in states[key].ok_read.values())
    ]
    if not candidates:
        return {}  # an earlier ok call read or sent every key the last one polled
    data = [call for call in _whole_calls(collected) if call.outcome is _OK and call.f in DATA_FUNCTIONS]
    touched: set[Key] = set()
    for call in data[:-1]:
        writes, reads = _parse(call, None)
        touched.update(writes or ())
        touched.update(reads or ())
    writes, reads = _parse(data[-1], None)
    touched.update(writes or ())
    out: dict[Key, list[Any]] = {}
    for key, pairs in (reads or {}).items():
        if key not in touched and pairs:
            out[key] = sorted({pair[1] for pair in pairs}, key=_sort_token)
    return out


def _unseen_merge(
    keys: dict[Key, list[Any]], unseen: str, found: dict[str, list[Record]], deviations: list[JsonValue]
) -> None:
    """Report `_unseen_merge_keys`' keys as `unseen` (Jepsen's way) or name the deviation."""
    if not keys:
        return
    if unseen == "jepsen":
        for key, values in keys.items():
            found.setdefault("unseen", []).append(
                {"key": key, "count": len(values), "values": _listed(values), "jepsen_unseen_merge": True}
            )
    else:
        deviations.append(
            {
                "name": "unseen-merge",
                "keys": sorted(keys),
                "jepsen": "reports these keys' polled values as unseen (flag --jepsen-unseen)",
            }
        )


def _no_writer(state: _KeyState) -> bool:
    """Some value of this key was read that no call sent."""
    writer_of = state.writer_of  # a loop, not a set difference built per key
    return any(v not in writer_of for v in state.ok_read) or any(v not in writer_of for v in state.other_read)


def _no_writer_deviation(keys: list[Key], deviations: list[JsonValue]) -> None:
    """Name the difference when some value read was sent by no call (`keys`: where, sorted):
    Jepsen's analysis throws `:no-writer-of-value` there (its checker answers `:unknown`); the
    keys report the anomaly `no-writer-of-value`."""
    if keys:
        deviations.append(
            {
                "name": "no-writer-of-value",
                "keys": keys,
                "jepsen": "throws :no-writer-of-value, so its checker answers unknown",
            }
        )


# ---------------------------------------------------------------------------------------
# The whole-history part from per-key facts (no transactions, no ww_deps)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyFacts:
    """One key's share of what the whole-history part reports, found by the key's own check
    (`check_kafka_key_deciding_commits(..., key_facts=...)`) from the state it builds anyway.
    `backward_read`: an `ok` call polled a value of the key before the value's sender was
    invoked (then a cycle exists: the engine checks the whole part in full). `wr_edge`: a
    value polled by a call other than its sender. `no_writer`: a value polled that no call
    sent. `sole_reader`/`sole_values`: when exactly one `ok` data call touched the key and it
    polled values of it without sending to it, that call's invocation index and the values,
    sorted (Jepsen's unseen merge, if that call is the history's last `ok` data call)."""

    key: Key
    has_state: bool
    backward_read: bool
    wr_edge: bool
    no_writer: bool
    sole_reader: int | None
    sole_values: tuple[Any, ...]

    def to_json(self) -> JsonValue:
        """These facts as JSON (they travel inside a part's answer)."""
        return [
            self.key,
            self.has_state,
            self.backward_read,
            self.wr_edge,
            self.no_writer,
            self.sole_reader,
            list(self.sole_values),
        ]

    @staticmethod
    def from_json(data: Any) -> KeyFacts:
        key, has_state, backward_read, wr_edge, no_writer, sole_reader, values = data
        return KeyFacts(key, has_state, backward_read, wr_edge, no_writer, sole_reader, tuple(values))


@dataclass(frozen=True)
class HistoryFacts:
    """What the whole-history part still finds itself when the keys give `KeyFacts`: the
    calls' count and subscription functions, the data calls' count, whether an `ok` data call
    completed before another was invoked (a realtime edge), the invocation index of the last
    `ok` data call (completion order), whether any call is a transaction, and realtime lag."""

    operations: int
    sub_via_seen: frozenset[str]
    data_calls: int
    realtime_edge: bool
    last_ok_data_call: int | None
    transactions: bool
    realtime_lag: dict[str, JsonValue]

    def to_json(self) -> JsonValue:
        """These facts as JSON (they travel inside a part's answer)."""
        return [
            self.operations,
            sorted(self.sub_via_seen),
            self.data_calls,
            self.realtime_edge,
            self.last_ok_data_call,
            self.transactions,
            self.realtime_lag,
        ]

    @staticmethod
    def from_json(data: Any) -> HistoryFacts:
        operations, seen, data_calls, realtime_edge, last, transactions, lag = data
        return HistoryFacts(operations, frozenset(seen), data_calls, realtime_edge, last, transactions, lag)


def _key_facts(key: Key, collected: _Collected) -> KeyFacts:
    state = collected.states.get(key)
    if state is None:
        return KeyFacts(key, False, False, False, False, None, ())
    reader, values = _sole_reader(key, collected, state)
    return KeyFacts(
        key,
        True,
        _has_backward_read(collected),
        _wr_edge_of(collected, state),
        _no_writer(state),
        reader,
        values,
    )


def _sole_reader(key: Key, collected: _Collected, state: _KeyState) -> tuple[int | None, tuple[Any, ...]]:
    if state.ok_sent or len({id(reader) for reader in state.ok_read.values()}) > 1:
        return None, ()  # two ok calls touched the key (looked for only where it may be otherwise)
    touching = [
        call
        for call in collected.ordered
        if call.outcome is _OK and call.f in DATA_FUNCTIONS and any(_parse(call, key))
    ]
    if len(touching) != 1:
        return None, ()
    writes, reads = _parse(touching[0], key)
    pairs = (reads or {}).get(key)
    if writes or not pairs:
        return None, ()
    return touching[0].invoke_index, tuple(sorted({pair[1] for pair in pairs}, key=_sort_token))


def history_facts(calls: Iterable[Call | CallFacts | list[Any]]) -> HistoryFacts:
    """`HistoryFacts` of a history's data and assign/subscribe calls, of their `CallFacts`, or
    of their facts lists as stage 1 ships a data call to the whole-history part
    (`facts_fields`), in any order: `history_facts_of_windows` of them as one window."""
    others: list[Call | CallFacts | list[Any]] = []
    subscriptions: list[Call | CallFacts] = []
    for call in calls:
        if not isinstance(call, list) and call.f in SUBSCRIPTION_FUNCTIONS:
            subscriptions.append(call)
        else:
            others.append(call)
    return history_facts_of_windows([others], facts_rows, subscriptions)


def facts_rows(calls: Iterable[Call | CallFacts | list[Any]]) -> list[list[Any]]:
    """The facts lists (`facts_fields`) of calls other than assign/subscribe (or of their
    `CallFacts`; a facts list stays as it is)."""
    return [call if isinstance(call, list) else _facts_row(call) for call in calls]


def history_facts_of_windows(
    windows: Sequence[Any],
    decode: Callable[[Any], list[list[Any]]],
    subscriptions: Sequence[Call | CallFacts],
) -> HistoryFacts:
    """`HistoryFacts` of a history's calls other than assign/subscribe, as facts lists in
    `windows` (`decode` gives a window's lists; a stage 1 CALLS payload, or a list of them),
    and of its assign/subscribe calls: realtime lag over the calls in completion order, as
    `check_kafka_whole` measures it (the assign/subscribe calls of processes that made no
    other call, and failed ones, left out: they change no lag). The windows are read twice,
    one at a time (`_OrderedFacts`): first for what needs no order and each window's span of
    completion orders, then in completion order for realtime lag."""
    chain, stragglers, counts = _survey_windows(windows, decode)
    named: dict[tuple[Any, ...], frozenset[Key]] = {}
    live = [
        _Assignment(call, _named_keys(call, named))
        for call in subscriptions
        if call.outcome is not _FAIL and call.process in counts.processes
    ]
    live.sort(key=_assignment_order)
    ordered = _OrderedFacts(windows, decode, chain, stragglers, live)
    return HistoryFacts(
        counts.rows + len(subscriptions),
        frozenset(call.f for call in subscriptions),
        counts.data,
        counts.first_done is not None and counts.last_invoked > counts.first_done,  # Elle's realtime edge
        counts.last,
        counts.transactions,
        _lag_summary_of(ordered),
    )


class _WindowCounts:
    """What `_survey_windows` counts, in any order: the facts lists, their processes, the data
    calls, the least completion index of an `ok` data call, the greatest invocation index of a
    data call, the invocation index of the last `ok` data call (in completion order), whether
    any is a transaction."""

    __slots__ = (
        "data",
        "first_done",
        "last",
        "last_invoked",
        "last_order",
        "processes",
        "rows",
        "transactions",
    )

    def __init__(self) -> None:
        self.rows = 0
        self.processes: set[Process] = set()
        self.data = 0
        self.first_done: Any = None
        self.last_invoked: Any = None
        self.last: Any = None
        self.last_order: Any = None
        self.transactions = False


def _survey_windows(
    windows: Sequence[Any], decode: Callable[[Any], list[list[Any]]]
) -> tuple[list[int], list[list[Any]], _WindowCounts]:
    """One read of the windows: their `_WindowCounts`, the chain (the windows each in
    completion order, by their first list's order, each after the last one's lists) and the
    other windows' lists, sorted (stably: of equal orders, the one read first)."""
    counts = _WindowCounts()
    spans: list[tuple[Any, Any, int]] = []  # first and last order of a window in order, its number
    others: list[int] = []
    for number, window in enumerate(windows):
        rows = decode(window)
        if not rows:
            continue
        previous: Any = None
        in_order = True
        for row in rows:
            order = _row_order(row)
            if previous is not None and order < previous:
                in_order = False
            previous = order
            _count_row(counts, row, order)
        if in_order:
            spans.append((_row_order(rows[0]), previous, number))
        else:
            others.append(number)
    spans.sort()
    chain: list[int] = []
    reached: Any = None
    for first, last, number in spans:
        if reached is None or first > reached:
            chain.append(number)
            reached = last
        else:
            others.append(number)
    others.sort()
    stragglers = [row for number in others for row in decode(windows[number])]
    stragglers.sort(key=_row_order)
    return chain, stragglers, counts


def _count_row(counts: _WindowCounts, row: list[Any], order: Any) -> None:
    counts.rows += 1
    counts.processes.add(row[0])
    kind: int = row[1]
    if kind >= _OTHER_KIND:
        return
    counts.data += 1
    invoked = row[2]
    if counts.last_invoked is None or invoked > counts.last_invoked:
        counts.last_invoked = invoked
    if kind >= _TXN_OK:
        counts.transactions = True
    if kind % 3 == 0:
        if counts.last_order is None or order >= counts.last_order:
            counts.last_order = order
            counts.last = invoked
        completed = row[3]
        if completed is not None and (counts.first_done is None or completed < counts.first_done):
            counts.first_done = completed


def whole_from_facts(
    history: HistoryFacts, keys: Iterable[KeyFacts], options: KafkaOptions
) -> CheckResult | None:
    """`check_kafka_whole`'s result from `history_facts` of its calls and the `KeyFacts` of
    every key, or None when they cannot give it (a transaction, `ww_deps`, or a backward read,
    where Elle's graph is searched: `check_kafka_whole` must run).

    Why this is exact: without transactions a send only has wr edges out and a poll only
    realtime edges out (a realtime edge leaves an `ok` call), and `ww_deps` is off, so along
    any cycle each step goes to a call invoked later (realtime: invoked after the `ok` call
    completed; wr followed by realtime: the sender was invoked before the `ok` poll completed,
    unless the poll read backward), which no cycle can do. So with no backward read there is
    no cycle, and what remains (an edge at all, the unseen merge, values without a writer)
    is a union over keys (`_any_edge`, `_unseen_merge_keys`, `_no_writer_deviation`)."""
    started = time.perf_counter()
    keys = list(keys)
    if history.transactions or options.ww_deps or any(facts.backward_read for facts in keys):
        return None
    found: dict[str, list[Record]] = {}
    if not history.realtime_edge and not any(facts.wr_edge for facts in keys):
        found["empty-transaction-graph"] = [{"nodes": history.data_calls}]
    deviations: list[JsonValue] = []
    merged = {
        facts.key: list(facts.sole_values)
        for facts in keys
        if facts.sole_reader is not None and facts.sole_reader == history.last_ok_data_call
    }
    _unseen_merge(merged, options.unseen, found, deviations)
    _no_writer_deviation(sorted(facts.key for facts in keys if facts.no_writer), deviations)
    used = history.sub_via_seen if options.sub_via is None else set(options.sub_via)
    return _result(
        None,
        found,
        history.operations,
        sum(1 for facts in keys if facts.has_state),
        _conventions(used, options.inferred(), "whole history", options.ww_deps, options.unseen),
        None,
        started,
        extra={"deviations_from_jepsen": deviations, "realtime_lag": history.realtime_lag},
    )


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------


def _record_order(record: Record) -> tuple[str, str]:
    return (str(record.get("key", "")), json.dumps(record, sort_keys=True, default=str))


def _conventions(
    sub_via: Collection[str],
    inferred: bool,
    info_evidence: str,
    ww_deps: bool = False,
    unseen: str = "kafkaspec",
) -> dict[str, JsonValue]:
    return {
        "source": "jepsen.tests.kafka/analysis and allowed-error-types",
        "sub_via": sorted(sub_via),
        "sub_via_inferred": inferred,
        "subscribe_allows_poll_skips": True,
        "allowed_error_types": sorted(allowed_error_types(sub_via, ww_deps)),
        "ww_deps": ww_deps,
        "unseen": unseen,
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
    extra: dict[str, JsonValue] | None = None,
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
    # As Jepsen's checker: every type found (`:error-types`), the allowed ones too.
    allowed_found = [name for name in anomaly_counts if name in allowed]
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
            "error_types": sorted(anomaly_counts),
            "allowed_error_types_found": allowed_found,
            "keys": keys,
            **(extra or {}),
        },
        conventions=conventions,
        seconds=time.perf_counter() - started,
    )


@dataclass(frozen=True)
class KafkaOptions:
    """What a Jepsen user sets on the Kafka checker: `sub_via` (`:sub-via`; inferred from the
    history when None; `sub_via_inferred` says what the report states when the caller
    inferred it itself), `ww_deps` (`:ww-deps`) and how `unseen` is computed
    (`UNSEEN_MODES`)."""

    sub_via: tuple[str, ...] | None = None
    sub_via_inferred: bool | None = None
    ww_deps: bool = False
    unseen: str = "kafkaspec"

    def __post_init__(self) -> None:
        if self.unseen not in UNSEEN_MODES:
            raise ValueError(f"unseen must be one of {', '.join(UNSEEN_MODES)}, got {self.unseen!r}")

    def inferred(self) -> bool:
        return self.sub_via is None if self.sub_via_inferred is None else self.sub_via_inferred


_SCOPE_ALL: Final = "all"
_SCOPE_KEY: Final = "key"
_SCOPE_WHOLE: Final = "whole"


def _check(
    calls: Iterable[Call | Piece],
    only: Key | None,
    options: KafkaOptions,
    committed_info: Collection[int] | None,
    max_per_type: int | None,
    assignments: Assignments | None = None,
    decided: list[frozenset[int]] | None = None,
    deadline: float = math.inf,
    scope: str = _SCOPE_ALL,
    key_facts: list[KeyFacts] | None = None,
) -> CheckResult:
    # The analysis allocates millions of small acyclic objects; the cyclic collector would
    # rescan them over and over (~15% of the time) and can free nothing.
    collecting = gc.isenabled()
    gc.disable()
    started = time.perf_counter()
    given = calls if isinstance(calls, list) else list(calls)
    try:
        return _check_all(
            given,
            only,
            options,
            committed_info,
            max_per_type,
            assignments,
            decided,
            deadline,
            scope,
            key_facts,
        )
    except _OutOfTimeError:
        if decided is not None:
            decided.append(frozenset())
        operations = len(given) + (len(assignments.calls) if assignments is not None else 0)
        sub_via = options.sub_via
        used = set(sub_via) if sub_via is not None else {c.f for c in given if c.f in SUBSCRIPTION_FUNCTIONS}
        conventions = _conventions(used, options.inferred(), "not decided", options.ww_deps, options.unseen)
        result = budget_exhausted(only, operations, conventions)
        return _with_seconds(result, time.perf_counter() - started)
    finally:
        if collecting:
            gc.enable()


def _check_all(
    calls: list[Call | Piece],
    only: Key | None,
    options: KafkaOptions,
    committed_info: Collection[int] | None,
    max_per_type: int | None,
    assignments: Assignments | None,
    decided: list[frozenset[int]] | None = None,
    deadline: float = math.inf,
    scope: str = _SCOPE_ALL,
    key_facts: list[KeyFacts] | None = None,
) -> CheckResult:
    started = time.perf_counter()
    _check_clock(deadline)
    found: dict[str, list[Record]] = {}
    extra: dict[str, JsonValue] = {}
    if only is not None:
        # One key's check reads its calls as `Piece`s (a fresh list: `_collect_key` sorts it).
        pieces = [call if isinstance(call, Piece) else Piece.of(call) for call in calls]
        by_key = _collect_key(pieces, only, assignments, deadline)
        if decided is not None:
            committed_info = _committed_by_own_reads(by_key)
            decided.append(committed_info)
        _analyze_keys(by_key, only, _Committed(by_key, committed_info, only), found, deadline)
        if key_facts is not None:
            key_facts.append(_key_facts(only, by_key))
        seen, operations, keys = by_key.sub_via_seen, by_key.calls, len(by_key.states)
    else:
        collected = _collect([call for call in calls if not isinstance(call, Piece)], assignments, deadline)
        if decided is not None:
            committed_info = _committed_by_own_reads(collected)
            decided.append(committed_info)
        committed = _Committed(collected, committed_info, only)
        if scope != _SCOPE_WHOLE:
            _analyze_keys(collected, only, committed, found, deadline)
        _cycles(collected, committed, found, options.ww_deps, deadline)
        deviations: list[JsonValue] = []
        _unseen_merge(_unseen_merge_keys(collected), options.unseen, found, deviations)
        _no_writer_deviation(
            sorted(k for k, state in collected.states.items() if _no_writer(state)), deviations
        )
        extra["deviations_from_jepsen"] = deviations
        extra["realtime_lag"] = realtime_lag_summary(_whole_calls(collected))
        seen, operations, keys = collected.sub_via_seen, collected.calls, len(collected.states)
    used = seen if options.sub_via is None else set(options.sub_via)
    evidence = "whole history" if only is None else "this key only"
    if committed_info is not None:
        evidence = "given"
    return _result(
        only,
        found,
        operations,
        keys,
        _conventions(used, options.inferred(), evidence, options.ww_deps, options.unseen),
        max_per_type,
        started,
        extra=extra,
    )


def _analyze_keys(
    collected: _Collected,
    only: Key | None,
    committed: _Committed,
    found: dict[str, list[Record]],
    deadline: float,
) -> None:
    """Pass 2: every key's anomalies (`_analyze_key`), then G1a's readers (`_g1a`)."""
    g1a_targets: dict[Key, set[Any]] = {}
    for key, state in collected.states.items():
        _check_clock(deadline)
        _analyze_key(key, state, committed, found, g1a_targets)
    if g1a_targets:
        _g1a(collected, only, g1a_targets, found)


def _options(
    sub_via: Collection[str] | None, sub_via_inferred: bool | None, ww_deps: bool, unseen: str
) -> KafkaOptions:
    given = None if sub_via is None else tuple(sorted(set(sub_via)))
    return KafkaOptions(given, sub_via_inferred, ww_deps, unseen)


def check_kafka(
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    sub_via_inferred: bool | None = None,
    ww_deps: bool = False,
    unseen: str = "kafkaspec",
    committed_info: Collection[int] | None = None,
    max_per_type: int | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    """Check a whole Kafka history (calls in any order; analysed in completion order).

    `sub_via`: the subscription functions the test used (`{"assign"}`, `{"subscribe"}`);
    inferred from the history when None (`sub_via_inferred` overrides what the report says,
    for a caller that inferred it). `ww_deps`: Jepsen's `:ww-deps` (write-write edges, so
    G0 cycles and ww-based G1c are found; G1c then is allowed). `unseen`: `UNSEEN_MODES`.
    `max_per_type` caps the records kept per anomaly type (the smallest in a canonical
    order; counts stay exact). Past `deadline` (a `time.time()` instant) the result is
    `unknown` (`budget_exhausted`)."""
    options = _options(sub_via, sub_via_inferred, ww_deps, unseen)
    return _check(calls, None, options, committed_info, max_per_type, deadline=deadline)


def check_kafka_whole(
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    sub_via_inferred: bool | None = None,
    ww_deps: bool = False,
    unseen: str = "kafkaspec",
    max_per_type: int | None = None,
    deadline: float = math.inf,
) -> CheckResult:
    """Only what needs the whole history at once (`WHOLE_HISTORY_ANOMALY_TYPES`, Jepsen's
    `unseen` merge, realtime lag): `check_kafka`'s findings of those, without the per-key
    analysis that the key parts make. `calls`: every data call and assign/subscribe call."""
    options = _options(sub_via, sub_via_inferred, ww_deps, unseen)
    return _check(calls, None, options, None, max_per_type, deadline=deadline, scope=_SCOPE_WHOLE)


def check_kafka_key(
    key: JsonValue,
    calls: Iterable[Call],
    *,
    sub_via: Collection[str] | None = None,
    sub_via_inferred: bool | None = None,
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
    options = _options(sub_via, sub_via_inferred, False, "kafkaspec")
    return _check(
        calls, _norm_key(key), options, committed_info, max_per_type, assignments, deadline=deadline
    )


def check_kafka_key_deciding_commits(
    key: JsonValue,
    calls: Iterable[Call | Piece],
    *,
    sub_via: Collection[str] | None = None,
    sub_via_inferred: bool | None = None,
    assignments: Assignments | None = None,
    deadline: float = math.inf,
    key_facts: list[KeyFacts] | None = None,
) -> tuple[CheckResult, frozenset[int]]:
    """`check_kafka_key(key, calls, committed_info=committed_info_calls(calls))` and that
    set, for `calls` that are `split_call` pieces of `key` alone: the info calls whose sends
    this part shows committed, found in the check's own pass over the calls (a second pass
    cost a fifth of a part's check). `calls` may be `Piece`s (what the check reads of each
    call; stage 2 decodes them so). A part that ran out of time decides no call. With
    `key_facts`, the key's `KeyFacts` are appended to it (none when it ran out of time)."""
    decided: list[frozenset[int]] = []
    options = _options(sub_via, sub_via_inferred, False, "kafkaspec")
    key = _norm_key(key)
    result = _check(calls, key, options, None, None, assignments, decided, deadline, key_facts=key_facts)
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
    ww_deps = False
    unseen = "kafkaspec"
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
        ww_deps = ww_deps or bool(conventions.get("ww_deps", False))
        unseen = str(conventions.get("unseen", unseen))
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
        _conventions(sub_via, inferred, evidence, ww_deps, unseen),
        max_per_type,
        started,
        counts,
    )
