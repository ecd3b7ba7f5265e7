"""Stage 1's Kafka shape helpers (`kafka_checker.single_send`, `send_facts_fields`,
`facts_kind`, `KeyNames`, `plain_poll_offsets`, `plain_max_offsets`, `restrict_each`) against
what they stand for: the helpers they fuse, and the long way (`_max_offsets` of a call,
`_restrict`), on common and odd values; and `distributed.jsonl_ops` against the reader's
`parse_line` on lines orjson cannot read exactly."""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_checks import distributed, kafka_checker
from spark_checks.history import HistoryError, Outcome, new_call
from spark_checks.readers.jsonl import parse_line

ODD_VALUES: list[Any] = [
    [["send", "x", [3, 1]]],
    [["send", 7, [3, 1]]],
    [[":send", 7, [3, 1]]],
    [["send", "x", 1]],
    [["send", "x", [True, 1]]],
    [["send", "x", [None, 1]]],
    [["send", "x", [1.5, 1]]],
    [["send", "x", [1, 2, 3]]],
    [["send", "x", (1, 2)]],
    [["send", "x", "v"]],
    [["send", "x"]],
    [["send", "x", [0, 1]], ["send", "y", [4, 2]], ["send", "x", [2, 3]]],
    [["poll", {"x": [[0, 1], [5, 2]], "y": []}]],
    [["poll", {"x": [[0, 1], [True, 2]]}]],
    [["poll", {"x": [[0.5, 1], [2.5, 2]]}]],
    [["poll", {"x": [[None, 1]]}]],
    [["poll", {"x": [[], [1, 2]]}]],
    [["poll", {"x": ["ab"]}]],
    [["poll", {"x": [{"0": 1}]}]],
    [["poll", {"x": "not pairs"}]],
    [["poll", {}]],
    [["poll"]],
    [[":poll", {"x": [[-4, 1]]}]],
    [["poll", [["x", 1]]]],
    [[1, 2]],
    [],
    None,
    5,
    "send",
]


def random_value(rng: random.Random) -> Any:
    """A plain send, sends, or a poll with random offsets (-2..9) over a few keys."""
    keys = ["a", "b", "c", 7]
    if rng.random() < 0.5:
        return [
            ["send", rng.choice(keys), [rng.randint(-2, 9), rng.randint(0, 9)]]
            for _ in range(rng.randint(1, 3))
        ]
    polled = {
        str(key): [[rng.randint(-2, 9), 0] for _ in range(rng.randint(0, 3))]
        for key in keys[: rng.randint(0, 4)]
    }
    return [["poll", polled]]


def values() -> list[Any]:
    rng = random.Random(52)
    return ODD_VALUES + [random_value(rng) for _ in range(60)]


def old_poll_offsets(value: Any) -> dict[str, Any] | None:
    """`plain_poll_offsets` as it was written before its typed loop: `max` over the pairs'
    first items (source semantics)."""
    if not value:
        return {}
    if value.__class__ is not list or len(value) != 1:
        return None
    mop = value[0]
    if mop.__class__ is not list or not mop or mop[0].__class__ is not str or mop[0] not in ("poll", ":poll"):
        return None
    polled = mop[1] if len(mop) > 1 else None
    if not polled:
        return {}
    if polled.__class__ is not dict:
        return None
    out: dict[str, Any] = {}
    try:
        for key, pairs in polled.items():
            if key.__class__ is not str or pairs.__class__ is not list:
                return None
            best = max(pair[0] for pair in pairs) if pairs else -1
            out[key] = best if best > -1 else -1
    except (TypeError, IndexError, KeyError):
        return None
    return out


@pytest.mark.parametrize("value", values())
def test_single_send_is_the_send_of_a_value_of_one_send(value: Any) -> None:
    found = kafka_checker.single_send(value)
    key = kafka_checker.single_send_key(value)
    if key is None:
        assert found is None
        return
    assert found is value[0]
    assert kafka_checker._norm_key(found[1]) == key


@pytest.mark.parametrize("value", values())
@pytest.mark.parametrize("outcome", ["ok", "info", "fail"])
def test_send_facts_fields_are_the_facts_fields_of_a_send(value: Any, outcome: str) -> None:
    send = kafka_checker.single_send(value)
    if send is None:
        return
    key = kafka_checker._norm_key(send[1])
    fast = kafka_checker.send_facts_fields(3, outcome, 10, 11, 100, None, key, send[2])
    offsets = {} if outcome == "fail" else kafka_checker.plain_max_offsets("send", value)
    if offsets is None:
        assert fast is None  # the long way finds them
        return
    assert fast == kafka_checker.facts_fields(3, "send", outcome, 10, 11, 100, None, offsets)


@pytest.mark.parametrize("f", ["send", "poll", "txn"])
@pytest.mark.parametrize("outcome", ["ok", "info", "fail"])
def test_facts_kind_is_the_function_and_outcome_kinds(f: str, outcome: str) -> None:
    expected = kafka_checker._FUNCTION_KIND[f] + kafka_checker._OUTCOME_KIND[outcome]
    assert kafka_checker.facts_kind("".join(f), "".join(outcome)) == expected  # (new strings)


def test_key_names_are_norm_key_each_integer_made_once() -> None:
    names = kafka_checker.KeyNames()
    keys: list[Any] = [7, "7", True, 1, 1.0, 2**70, -3, None, "x", 7, 1, True, 1.0]
    assert [names.of(key) for key in keys] == [kafka_checker._norm_key(key) for key in keys]
    assert names.of(7) is names.of(7) and names.of(2**70) is names.of(2**70)


@pytest.mark.parametrize("value", values())
def test_plain_poll_offsets_are_the_greatest_offsets_per_key(value: Any) -> None:
    try:
        expected = old_poll_offsets(value)
    except TypeError:  # an unhashable micro-operation name
        return
    assert kafka_checker.plain_poll_offsets(value) == expected


@pytest.mark.parametrize("value", values())
@pytest.mark.parametrize("f", ["send", "poll", "txn"])
def test_plain_max_offsets_are_the_calls_max_offsets(value: Any, f: str) -> None:
    fast = kafka_checker.plain_max_offsets(f, value)
    if fast is None:
        return
    call = new_call(1, f, None, value, Outcome.OK, 0, 1, None, 0, 1, value)
    try:
        slow = kafka_checker._parsed_max_offsets(call)
    except (TypeError, IndexError, KeyError, HistoryError):
        return  # the long way refuses it (`_max_offsets` reports it as malformed)
    if all(type(offset) is int for offset in fast.values()):
        assert fast == slow


@pytest.mark.parametrize("value", values())
def test_restrict_each_is_restrict_per_key(value: Any) -> None:
    keys = sorted({"a", "b", "c", "x", "y", "7"})
    assert kafka_checker.restrict_each(value, keys) == {
        key: kafka_checker._restrict(value, key) for key in keys
    }


def test_jsonl_ops_read_what_orjson_cannot_as_the_reader_does() -> None:
    # orjson reads an integer beyond 64 bits as a float: such lines (or a float anywhere in the
    # operation) go the reader's exact way, wherever the number is.
    head = b'{"process": 1, "type": "invoke", "f": "w", '
    lines = [
        head + b'"index": 0, "value": [["send", 7, 1]]}',
        head + b'"index": 1, "value": [["send", 7, [0, 123456789012345678901]]]}',
        head + b'"index": 2, "value": 1.5, "key": -9223372036854775809}',
        head + b'"index": 3, "value": {"a": [2.0, [18446744073709551616]]}}',
        head + b'"index": 18446744073709551617, "value": 1}',
        head + b'"index": 5, "value": 1, "time": 99999999999999999999}',
        head + b'"index": 6, "value": 1, "extra": 1e400}',
        head + b'"index": 7, "value": 1, "extra": 1e300}',
        b'{"index": 8, "process": 2.0, "type": "ok", "f": "w", "value": 1}',
        head + b'"value": [1, 2.5, 36893488147419103232]}',
        head + b'"value": [1, 2]}',
        head + b'"index": 11, "value": {"k": -0, "l": 1E2}}',
    ]
    for number, raw in enumerate(lines):
        try:
            expected: Any = distributed.operation_op(parse_line(raw, number, "h", number + 1))  # type: ignore[arg-type]
        except HistoryError as error:
            expected = error.message
        try:
            read: Any = list(distributed.jsonl_ops([[raw]], "h", number + 1, number))
        except HistoryError as error:
            read = error.message
        else:
            assert [line for line, _ in read] == [number + 1]
            read = read[0][1]
        assert repr(read) == repr(expected)  # (repr: 1 == 1.0, the types differ)


@pytest.mark.parametrize("value", values())
@pytest.mark.parametrize("f", ["send", "poll", "txn"])
@pytest.mark.parametrize("outcome", [Outcome.OK, Outcome.INFO, Outcome.FAIL])
def test_plain_facts_fields_are_the_calls_facts_and_pieces(value: Any, f: str, outcome: Outcome) -> None:
    pieces: list[Any] = []
    names = kafka_checker.KeyNames()
    facts = kafka_checker.plain_facts_fields(3, f, outcome.value, 10, 11, 100, None, value, names, pieces)
    call = new_call(3, f, None, value, outcome, 10, 11, None, 100, None, value)
    try:
        expected = kafka_checker.call_facts_fields(call)
        split = kafka_checker.split_call(call)
    except HistoryError:
        assert facts is None  # the long way reports it
        return
    if facts is None:
        return  # left to the long way
    assert facts == expected
    analysed = {key: kafka_checker.analysed_value(piece) for key, piece in split}
    assert len(pieces) == 2 * len(analysed)
    assert dict(zip(pieces[::2], pieces[1::2], strict=True)) == analysed
