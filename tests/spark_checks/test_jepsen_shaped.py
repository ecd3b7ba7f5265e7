"""Histories shaped like Jepsen's Kafka workload (`final_polls="from-start"`): every thread
ends by reading every key from offset 0, so the last poll lines hold whole topics, and such a
history is valid, or invalid with exactly the injected anomaly."""

from __future__ import annotations

import pytest

from spark_checks import kafka_checker
from spark_checks.history import OpType, Verdict, pair_calls
from spark_checks.kafka_histories import HistoryGenerator


def jepsen_shaped(n_calls: int, seed: int, anomalies: tuple[str, ...] = ()) -> HistoryGenerator:
    """Three producers and three consumers over eight keys, Jepsen's final polls."""
    return HistoryGenerator(
        n_calls,
        8,
        seed,
        anomalies,
        producers=3,
        consumers=3,
        max_batch=500,
        final_polls="from-start",
        final_batch=None,
    )


def test_the_final_polls_read_every_key_from_the_start() -> None:
    generator = jepsen_shaped(600, 3)
    operations = list(generator)
    threads = 6
    crashes = [op for op in operations[-400:] if op.f == "crash" and op.type is OpType.INFO]
    assert len(crashes) == threads  # every thread, producers too, gets a fresh client
    final_assigns = [op for op in operations if op.f == "assign" and op.value == list(range(8))]
    assert len(final_assigns) >= 2 * threads  # invoke and ok, each thread
    sent: dict[str, set[int]] = {}
    for op in operations:
        if op.f == "send" and op.type is OpType.OK:
            for _, key, (offset, _value) in op.value:
                sent.setdefault(str(key), set()).add(offset)
    last_poll = next(op for op in reversed(operations) if op.f == "poll" and op.type is OpType.OK)
    reads = last_poll.value[0][1]
    # one poll with no limit reads every key from offset 0 to its end
    for key, offsets in sent.items():
        polled = [offset for offset, _ in reads[key]]
        assert polled == sorted(polled) and polled[0] == 0
        assert offsets <= set(polled)


def test_a_jepsen_shaped_history_is_valid() -> None:
    calls = pair_calls(iter(jepsen_shaped(1500, 5)))
    result = kafka_checker.check_kafka(calls)
    assert result.verdict is Verdict.VALID, result.evidence["anomaly_counts"]


@pytest.mark.parametrize("anomaly", ["lost-write", "duplicate"])
def test_an_injected_anomaly_is_found_in_a_jepsen_shaped_history(anomaly: str) -> None:
    generator = jepsen_shaped(1500, 5, (anomaly,))
    result = kafka_checker.check_kafka(list(pair_calls(iter(generator))))
    assert anomaly in generator.injected
    assert result.verdict is Verdict.INVALID
    assert anomaly in result.evidence["anomaly_counts"]
