"""Vacuous checks: a history the chosen model would check nothing of.

`kafkaspec verify --model kafka` on a register history used to answer a verdict about nothing:
the Kafka checker ignores functions it does not know (Jepsen's does the same: a `:crash` or
`:debug-topic-partitions` operation is tolerated), so a history of reads and writes became a
Kafka history with no operation, "valid in 0 parts" (and, since Elle's graph of it has no
edge, later "invalid: empty-transaction-graph"). Neither is an answer about the history. The
rules here, applied by both engines after the check (`spark_checks.engine.verify_history`):

* A history with no operation at all (an empty file, or one holding only blank lines) is
  `unknown` for every model, with the reason: nothing was recorded, so nothing can be decided
  (Porcupine's own tests skip such a log, `etcd_095.log`, whose Jepsen run failed to start).
* A history with operations of which the model checks none is bad input (exit 2), with one
  message naming the file, the model, the functions the history has and those the model
  checks. For the Kafka model the functions checked are `send`, `poll`, `txn`, `assign` and
  `subscribe`: a history of assign calls alone is checked (Jepsen's `empty-history-test`:
  invalid, `empty-transaction-graph`), one of `crash` calls alone is not. For the other
  models an operation of a function the model does not know is already bad input (the model
  says which), so what is left is a history with no call at all: only lines that pair with
  no invocation, such as a nemesis's `info` lines.

Finding which functions a history has needs a second read of the file; it is done only when
the check found nothing to check, which costs nothing on the histories that matter.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

from spark_checks import readers
from spark_checks.history import CheckResult, HistoryError, JsonValue, Position, Verdict
from spark_checks.kafka_checker import DATA_FUNCTIONS, SUBSCRIPTION_FUNCTIONS

EMPTY_HISTORY_REASON: Final = "the history is empty: no operation was recorded, so there is nothing to check"

KAFKA_CHECKED_FUNCTIONS: Final = ("send", "poll", "txn", "assign", "subscribe")
"""What the Kafka model checks, in the order the message names them."""

_LISTED_FUNCTIONS: Final = 8
"""A refusal names at most this many of the history's functions."""

assert frozenset(KAFKA_CHECKED_FUNCTIONS) == DATA_FUNCTIONS | SUBSCRIPTION_FUNCTIONS


def empty_history_result(model: str, conventions: dict[str, JsonValue]) -> CheckResult:
    """The one result of a history without operations: `unknown`, saying why."""
    return CheckResult(
        checker="verify",
        model=model,
        partition=None,
        verdict=Verdict.UNKNOWN,
        operations=0,
        evidence={"reason": EMPTY_HISTORY_REASON},
        conventions=conventions,
    )


def history_functions(path: str | Path, fmt: str) -> tuple[str, ...]:
    """Every distinct function of the history's operations, sorted (a second read)."""
    _, operations = readers.open_history(path, fmt)
    return tuple(sorted({operation.f for operation in operations}))


def kafka_checks_some(functions: Iterable[str]) -> bool:
    """Whether a history with these functions has an operation the Kafka model checks."""
    return any(f in KAFKA_CHECKED_FUNCTIONS for f in functions)


def vacuous_check_error(path: str | Path, model: str, functions: Iterable[str], kafka: bool) -> HistoryError:
    """The bad-input error of a history the model checks no operation of. `kafka`: the model
    is the Kafka checker (which ignores unknown functions), else a linearizability model
    (which refuses them, so the history had no call at all)."""
    names = list(functions)
    shown = ", ".join(names[:_LISTED_FUNCTIONS]) + (", ..." if len(names) > _LISTED_FUNCTIONS else "")
    if kafka:
        why = (
            f"its operations' functions are {shown}; the {model} model checks "
            f"{', '.join(KAFKA_CHECKED_FUNCTIONS[:-1])} and {KAFKA_CHECKED_FUNCTIONS[-1]}"
        )
    else:
        why = f"it has no invocation: its operations, of functions {shown}, pair with none"
    return HistoryError(
        Position(str(path)),
        f"no operation of this history is one the {model} model checks ({why}): nothing would be verified",
    )
