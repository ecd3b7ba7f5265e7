"""Stage 1's Kafka shape helpers (`kafka_checker.single_send`, `plain_poll_offsets`,
`plain_max_offsets`, `restrict_each`) against what they stand for: the helpers they fuse,
and the long way (`_max_offsets` of a call, `_restrict`), on common and odd values."""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_checks import kafka_checker
from spark_checks.history import HistoryError, Outcome, new_call

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
def test_single_send_is_the_key_and_max_offsets_of_a_send(value: Any) -> None:
    found = kafka_checker.single_send(value)
    key = kafka_checker.single_send_key(value)
    if key is None:
        assert found is None
        return
    assert found == (key, kafka_checker.plain_max_offsets("send", value))


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
