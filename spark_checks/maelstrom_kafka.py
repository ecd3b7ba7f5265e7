"""Maelstrom's `kafka` workload ("Gossip Glomers" challenge 5): its history and its checks.

Maelstrom (`jepsen-io/maelstrom`, `src/maelstrom/workload/kafka.clj` and `doc/workloads.md`)
tests a toy log service through four RPCs: `send {key, msg}` -> `send_ok {offset}`,
`poll {offsets: {key: offset}}` -> `poll_ok {msgs: {key: [[offset, msg], ...]}}`,
`commit_offsets {offsets}` -> `commit_offsets_ok` and `list_committed_offsets {keys}` ->
`list_committed_offsets_ok {offsets}`. Its Jepsen client records *operations*, not RPCs, in
the `history.edn` a run leaves in `store/` (one map per line, as `jepsen.history.Op` prints):

* `send`: invoked `[[:send "k" msg]]`, completed `[[:send "k" [offset msg]]]`.
* `poll`: invoked `[[:poll]]`, completed `[[:poll {"k" [[offset msg] ...]}]]` (a key with no
  message may be left out; `{}` when none). After every poll that read something the client
  sends `commit_offsets` with the highest offset polled per key: that RPC is part of the
  poll operation, so a failed commit makes the poll an `info` (or `fail`) with its messages
  unrecorded.
* `assign`: `["k" ...]`, the keys to poll from now on; the client asks
  `list_committed_offsets` for the keys it did not already hold and starts polling there (0
  without a committed offset). The final phase assigns every key with
  `:seek-to-beginning? true` (from offset 0, no RPC). An assign is idempotent: a timeout
  fails it.
* `crash`: invoked and completed `info`; the client is torn down and its worker continues
  as a new process, as after any `info`.

Keys are strings (the workload rewrites Jepsen's integer keys so they can be JSON object
keys), offsets integers, messages the integers Jepsen's generator sends. Errors: a timeout
or an indefinite Maelstrom error code makes a send or poll `info`; a definite one (e.g. 11,
`temporarily-unavailable`) makes it `fail`; the completion carries `:error`. So
`commit_offsets` and `list_committed_offsets` never appear in the history: a committed offset
that goes backwards is seen only through the polls that follow an assign, and Jepsen stops
tracking a key's position when an assign leaves it out, so Maelstrom reports no anomaly for
it (`committed-offsets-backwards.edn` in the tests).

The checks, as `maelstrom.core/maelstrom-test` composes them for this workload (Maelstrom
depends on Jepsen 0.3.7, whose `jepsen/tests/kafka.clj` differs from Jepsen's current one only
in its source of randomness):

* `:workload`: `jepsen.tests.kafka/checker` unchanged (`spark_checks.kafka_checker`), with the
  test options the workload sets: `:sub-via #{:assign}` (so `poll-skip` and
  `nonmonotonic-poll` are errors), `:txn? false` and no `:ww-deps`. Allowed types:
  `int-send-skip`, `G0`, `G0-process`, `G0-realtime`, `PL-1-cycle-exists`,
  `strong-PL-1-cycle-exists`; every other type found makes the history invalid. Jepsen's own
  `unseen` fold is used (`unseen="jepsen"`), since that is what Maelstrom reports.
* `:stats`: `jepsen.checker/stats` wrapped by `jepsen.tests.kafka/stats-checker`: every
  function with completions (the client's, not the nemesis's) except `crash` and
  `debug-topic-partitions` must have at least one `ok` completion (a service that refuses
  every send fails here even if no anomaly is found). Reported as `maelstrom_stats` in the
  whole-history part, with Jepsen's per-function counts.
* Not from the history, so not here: `:availability` (only with Maelstrom's
  `--availability`; valid otherwise), `:net` (the network journal), `:perf`, `:timeline`,
  `:exceptions` (always valid).

Dialect detection (`--model auto`): an EDN Kafka history without `txn` or `subscribe`
operations whose keys (in sends, polls and assigns) are all integers written as strings is
Maelstrom's (Jepsen's Kafka workload uses integer keys, its unit tests keywords such as `:x`,
which the EDN reader reads as the string "x"). `--model
maelstrom-kafka` selects it for any format. The dialect is carried as conventions of a
`kafka` plan (`dialect`, `sub_via`, `unseen`), so both engines run it unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from spark_checks.history import Call, CheckResult, JsonValue, Operation, Verdict

MODEL: Final = "maelstrom-kafka"
"""The `--model` name of Maelstrom's kafka workload."""

DIALECT_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "dialect": MODEL,
    "sub_via": ["assign"],
    "unseen": "jepsen",
}
"""The conventions a Maelstrom kafka plan adds to the Kafka checker's (flags still override)."""

REPORT_CONVENTIONS: Final[Mapping[str, JsonValue]] = {
    "dialect": MODEL,
    "maelstrom_checks": "jepsen.tests.kafka/checker (:sub-via #{:assign}, :txn? false) and "
    "jepsen.checker/stats (every function but crash and debug-topic-partitions has an ok)",
}
"""What a report on a Maelstrom kafka history states besides the Kafka checker's conventions."""

STATS_IGNORED: Final = frozenset({"crash", "debug-topic-partitions"})
"""Functions `jepsen.tests.kafka/stats-checker` lets have no `ok` completion."""

_KAFKA_FUNCTIONS: Final = frozenset({"send", "poll", "assign", "subscribe", "txn"})


def is_maelstrom(conventions: Mapping[str, JsonValue]) -> bool:
    """Whether a plan's conventions select Maelstrom's kafka dialect."""
    return conventions.get("dialect") == MODEL


def resolve(
    model: str, detected: bool, fmt: str, sample: Sequence[Operation]
) -> tuple[str, dict[str, JsonValue]]:
    """The plan's model and the dialect conventions it adds: `maelstrom-kafka` (asked for, or
    `kafka` detected on an EDN history that `looks_like_maelstrom`) is the `kafka` model with
    `DIALECT_CONVENTIONS`; any other model is itself, with none."""
    if model == MODEL or (detected and model == "kafka" and fmt == "edn" and looks_like_maelstrom(sample)):
        return "kafka", dict(DIALECT_CONVENTIONS)
    return model, {}


def looks_like_maelstrom(sample: Iterable[Operation]) -> bool:
    """A Kafka history of sends, polls and assigns whose keys are all integers written as
    strings ("0", "17"), with at least one key: how Maelstrom's kafka workload records them
    (see the module docstring). Jepsen's Kafka tests use integer keys and its unit tests
    keywords (`:x`, read as "x"), neither of which is taken for Maelstrom's."""
    keys = 0
    for operation in sample:
        if operation.f in ("txn", "subscribe"):
            return False
        found = _keys(operation)
        if found is None:
            return False
        keys += len(found)
    return keys > 0


_LONG_TEXT: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
"""A key as Maelstrom writes it: Clojure's `str` of Jepsen's integer key (its generator turns
them back with `parse-long`)."""


def _keys(operation: Operation) -> list[Any] | None:
    """The keys an operation names; None if one is not an integer written as a string."""
    value = operation.value
    found: list[Any] = []
    if operation.f == "assign" and isinstance(value, list):
        found.extend(value)
    elif operation.f in ("send", "poll") and isinstance(value, list):
        for micro in value:
            if not isinstance(micro, list) or not micro:
                continue
            if micro[0] == "send" and len(micro) > 1:
                found.append(micro[1])
            elif micro[0] == "poll" and len(micro) > 1 and isinstance(micro[1], dict):
                found.extend(micro[1])
    return found if all(isinstance(key, str) and _LONG_TEXT.fullmatch(key) for key in found) else None


def stats(calls: Iterable[Call]) -> dict[str, JsonValue]:
    """`jepsen.checker/stats` over the completions of the client's Kafka calls, as
    `jepsen.tests.kafka/stats-checker` judges it: per function the ok, fail and info counts;
    valid when every function but `STATS_IGNORED` has an `ok`. A call never completed has no
    completion to count."""
    counts: dict[str, dict[str, int]] = {}
    for call in calls:
        if call.complete_index is None or not isinstance(call.process, int) or call.f not in _KAFKA_FUNCTIONS:
            continue
        by_type = counts.setdefault(call.f, {"ok": 0, "fail": 0, "info": 0})
        by_type[call.outcome.value] += 1
    by_f: dict[str, JsonValue] = {
        f: {
            "valid": counted["ok"] > 0,
            "count": sum(counted.values()),
            "ok_count": counted["ok"],
            "fail_count": counted["fail"],
            "info_count": counted["info"],
        }
        for f, counted in sorted(counts.items())
    }
    without_ok = [f for f, counted in sorted(counts.items()) if not counted["ok"] and f not in STATS_IGNORED]
    return {"valid": not without_ok, "without_ok": without_ok, "by_f": by_f}


def with_stats(result: CheckResult, calls: Iterable[Call]) -> CheckResult:
    """The Kafka whole-history part's result with Maelstrom's `:stats` check added: its
    figures in `maelstrom_stats`; when it fails, the part is invalid and `invalid_because`
    names `stats` (an `unknown` part stays unknown: its anomalies were not decided)."""
    figures = stats(calls)
    verdict = result.verdict
    evidence = {**result.evidence, "maelstrom_stats": figures}
    because = evidence.get("invalid_because")
    if not figures["valid"] and verdict is not Verdict.UNKNOWN:
        verdict = Verdict.INVALID
        # Maelstrom's composed result names the failing checker: `:stats`.
        evidence["invalid_because"] = [*(because if isinstance(because, list) else []), "stats"]
    return CheckResult(
        result.checker,
        result.model,
        result.partition,
        verdict,
        result.operations,
        evidence,
        {**result.conventions, **REPORT_CONVENTIONS},
        result.seconds,
    )


def report_model(model: str, conventions: Mapping[str, JsonValue]) -> str:
    """The model a report names: `maelstrom-kafka` for the Kafka model in Maelstrom's dialect."""
    return MODEL if model == "kafka" and is_maelstrom(conventions) else model


def report_conventions(
    conventions: Mapping[str, JsonValue], plan_conventions: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """A report's conventions, with Maelstrom's when the plan is in its dialect. A Kafka
    report's `ww_deps`, `unseen` and allowed types are the plan's (`--ww-deps`,
    `--jepsen-unseen`): the conventions given may be a per-key part's, which is checked
    without them (they only change the whole-history part's findings)."""
    reported = dict(conventions)
    if "allowed_error_types" in reported:
        from spark_checks.kafka_checker import allowed_error_types  # only a Kafka report needs it

        ww_deps = bool(plan_conventions.get("ww_deps", False))
        sub_via = reported.get("sub_via")
        reported["ww_deps"] = ww_deps
        reported["unseen"] = plan_conventions.get("unseen", "kafkaspec")
        reported["allowed_error_types"] = sorted(
            allowed_error_types(sub_via if isinstance(sub_via, list) else [], ww_deps)
        )
    if is_maelstrom(plan_conventions):
        return {**reported, **REPORT_CONVENTIONS, "unseen": plan_conventions.get("unseen", "jepsen")}
    return reported
