"""Stage 2's Kafka fast paths against what they stand for: one key's walk reading a plain send
or poll in place (`kafka_checker._collect_key`) against the long way (`_parse`, `_add_call`);
the keys an assignment names, one set per distinct list (`_names_of`), against the strings of
its keys; the `LAG_LISTED`th greatest lag (`_least_listed`) against `heapq.nlargest`; and the
assign/subscribe calls' context kept for the next bucket (`remembered_context`) against one
made anew."""

from __future__ import annotations

import heapq
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_checks.checking import KafkaContext, kafka_context, remembered_context
from spark_checks.distributed import decode_part, dumps, kafka_fields, subscriptions_context
from spark_checks.history import Call, CheckResult, Outcome
from spark_checks.kafka_checker import (
    LAG_LISTED,
    Assignments,
    _int_named,
    _least_listed,
    _names_of,
    check_kafka_key,
    check_kafka_key_deciding_commits,
)

# Send keys whose strings are, or look like, the keys checked: 7 and "7" are one key, "07",
# True and 7.0 are others ("07", "True", "7.0").
_SEND_KEYS: list[Any] = ["7", 7, "07", True, 7.0, "x", -3, "-3"]
_CHECKED = ["7", "07", "True", "7.0", "x", "-3", "+7"]


def _fields(result: CheckResult) -> tuple[Any, ...]:
    return (result.partition, result.verdict, result.operations, result.evidence, result.conventions)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n_calls=st.integers(1, 40))
def test_a_keys_walk_reads_plain_pieces_in_place_as_the_long_way(data: st.DataObject, n_calls: int) -> None:
    # The same calls twice: each value one micro-operation (read in place), then followed by
    # an unknown one, which Jepsen's checker ignores and which sends the value the long way.
    # Three processes, any outcome, offsets known, unknown or clashing, keys of several types;
    # and assignments between them (prepared, `_Pruner`), naming the keys in several ways.
    indices = iter(data.draw(st.permutations(range(2 * n_calls + 8))))
    plain: list[Call] = []
    for value in range(n_calls):
        process = data.draw(st.integers(0, 2))
        outcome = data.draw(st.sampled_from([Outcome.OK, Outcome.OK, Outcome.FAIL, Outcome.INFO]))
        key = data.draw(st.sampled_from(_SEND_KEYS))
        offset = data.draw(st.one_of(st.integers(0, 6), st.none()))
        f = data.draw(st.sampled_from(["send", "poll", "txn"]))
        mop: list[Any]
        if data.draw(st.booleans()):
            mop = [data.draw(st.sampled_from(["send", ":send"])), key, [offset, value % 5]]
        else:
            pairs = data.draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)).map(list), max_size=3))
            mop = [data.draw(st.sampled_from(["poll", ":poll"])), {str(key): pairs}]
        first, second = sorted((next(indices), next(indices)))
        plain.append(Call(process, f, [mop], [mop], outcome, first, second, completion_value=[mop]))
    assignments = [
        Call(
            data.draw(st.integers(0, 2)),
            "assign",
            named,
            named,
            Outcome.OK,
            at,
            at + 1,
            completion_value=named,
        )
        for at in range(2 * n_calls + 8, 2 * n_calls + 8 + 40, 10)
        for named in [data.draw(st.lists(st.sampled_from([*_SEND_KEYS, "y"]), max_size=3))]
    ]
    # Assignments completed among the calls: their indices are drawn from the same range.
    assignments = [
        Call(a.process, a.f, a.input, a.output, a.outcome, i, i + 1, completion_value=a.completion_value)
        for a, i in zip(assignments, [next(indices) * 2 + 1 for _ in assignments], strict=False)
    ]
    long_way = [
        Call(
            c.process,
            c.f,
            [*c.input, ["other"]],
            [*c.output, ["other"]],
            c.outcome,
            c.invoke_index,
            c.complete_index,
            completion_value=[*c.output, ["other"]],
        )
        for c in plain
    ]
    prepared = Assignments(assignments)
    for only in _CHECKED:
        assert _fields(check_kafka_key(only, plain, committed_info=frozenset())) == _fields(
            check_kafka_key(only, long_way, committed_info=frozenset())
        )
        with_assignments = check_kafka_key(only, plain + assignments, committed_info=frozenset())
        for calls in (plain, long_way):
            got = check_kafka_key(only, calls, committed_info=frozenset(), assignments=prepared)
            assert _fields(got) == _fields(with_assignments)
        result, committed = check_kafka_key_deciding_commits(only, plain, assignments=prepared)
        long_result, long_committed = check_kafka_key_deciding_commits(only, long_way, assignments=prepared)
        assert (_fields(result), committed) == (_fields(long_result), long_committed)


def test_an_int_names_a_key_when_its_string_is_the_key() -> None:
    for key in ["7", "-3", "0", "07", "+7", " 7", "7.0", "True", "x", "1_000", "٣", "-0"]:
        number = _int_named(key)
        assert number is None or str(number) == key
        assert (number is not None) == any(str(n) == key for n in range(-10, 1001))


_KEY_LISTS: list[Any] = [
    [1, 2, 3],
    [True, 2, 3],  # equal to the first list, other strings
    [1.0, 2, 3],
    ["1", "2", "3"],
    [1, "2", 3],
    [],
    [[1], 2],  # unhashable
    [None, "x"],
    "not a list",
    None,
]


def test_an_assignments_names_are_the_strings_of_its_keys_however_lists_repeat() -> None:
    known: dict[tuple[Any, ...], frozenset[str]] = {}
    for value in _KEY_LISTS + list(reversed(_KEY_LISTS)) + _KEY_LISTS:
        expected = frozenset(map(str, value)) if isinstance(value, list) else frozenset()
        assert _names_of(value, known) == expected
    # and prepared for the per-key checks
    calls = [Call(n, "assign", v, v, Outcome.OK, 2 * n, 2 * n + 1) for n, v in enumerate(_KEY_LISTS)]
    prepared = Assignments(calls)
    for n, value in enumerate(_KEY_LISTS):
        expected = frozenset(map(str, value)) if isinstance(value, list) else frozenset()
        assert prepared.names(n, 0) == expected


def test_the_least_listed_lag_is_the_last_of_the_greatest() -> None:
    rng = random.Random(7)
    for size in [0, 1, LAG_LISTED - 1, LAG_LISTED, LAG_LISTED + 1, 1000, 5000]:
        for spread in [1, 3, 10**9]:
            lags = [rng.randrange(spread) for _ in range(size)]
            top = heapq.nlargest(LAG_LISTED, lags)
            assert _least_listed(lags) == (top[-1] if len(top) == LAG_LISTED else 0)


def _assign_payloads(keys: list[list[Any]]) -> list[bytes]:
    """CALLS payloads of assign calls of `keys` (as stage 1 ships them), two calls a payload."""
    rows = [
        kafka_fields(process % 3, "assign", named, "ok", 2 * process, 2 * process + 1, None, (None, None))
        for process, named in enumerate(keys)
    ]
    return [dumps(rows[at : at + 2]) for at in range(0, len(rows), 2)]


def test_a_remembered_context_is_made_again_for_other_payloads_only() -> None:
    # The memo against `kafka_context` of the decoded calls, made anew each time: the same
    # payloads in any order (new objects, as the next Spark task gets them) give the kept
    # context; other payloads a new one, which then is the one kept.
    first = _assign_payloads([["1", "2"], ["2", 3], [4], ["1"], [5, 6]])
    other = _assign_payloads([["1", "2"], [7]])

    def made(payloads: list[bytes]) -> KafkaContext:
        return kafka_context(sorted(decode_part(payloads)[0], key=lambda call: call.invoke_index))

    kept = remembered_context(sorted(first), decode_part)
    assert kept == made(first) and kept.subscriptions
    again = remembered_context(sorted(bytes(payload) for payload in reversed(first)), decode_part)
    assert again is kept
    new = remembered_context(sorted(other), decode_part)
    assert new is not kept and new == made(other) != kept
    assert remembered_context(sorted(other), decode_part) is new
    # Through stage 2's own entry, with the info calls known to have committed set per call.
    context = subscriptions_context(list(reversed(other)), frozenset({9}))
    assert context.prepared is new.prepared and context.committed_info == {9} and not context.whole_by_keys
    assert remembered_context(sorted(first), decode_part) is not kept  # one entry: made again
