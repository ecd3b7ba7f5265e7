"""Exhaustive conformance of a ZooKeeper-era broker: every short sequence of control requests.

What it is
    The deterministic half of the ZooKeeper-era broker suite (`kafkaspec conformance --suite
    zk-broker`, `zk-broker-exhaustive`). A broker's answer to a control request depends on
    three numbers it holds (its broker epoch, the newest controller epoch, the partition's
    leader epoch) and on where the request's numbers fall against them: older, equal or
    newer. `ALPHABET` has a request on each side of each comparison, from two controllers
    (epochs 1 and 2: a zombie and its successor) to two incarnations of the broker (epochs
    1 and 2, or unknown), and a restart; every sequence of up to `depth` of them (at most
    `MAX_DEPTH`: 22 letters make 11,154 sequences of up to three, 3-5 s) is replayed on a fresh
    target and a fresh reference side by side (`conformance.machines.zk_broker.ZkBrokerPair`),
    answers and views compared after every request.

    The first divergence is reported with its sequence, which is then one of the shortest:
    sequences are tried shortest first.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from conformance.guard import DEFAULT_COMMAND_SECONDS
from conformance.machines.zk_broker import BROKER, Command, Restart, ZkBrokerPair
from conformance.target_calls import DivergenceError
from spec.controller.types import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    ZkBrokerSettings,
)

MAX_DEPTH = 3
"""The longest sequences tried: every state a broker reaches within three requests is one of
its control states with each epoch on each side of the next request's (the broker keeps no
history beyond those numbers)."""

SETTINGS = ZkBrokerSettings(broker_id=BROKER, broker_epoch=1)


def _alphabet() -> tuple[Command, ...]:
    letters: list[Command] = []
    for controller_epoch, leader_epoch, leader, replicas in itertools.product(
        (1, 2), (0, 1), (BROKER, 1), ((BROKER, 1), (1, 2))
    ):
        if leader in replicas:
            isr = tuple(sorted(replicas))
            letters.append(
                LeaderAndIsrRequest(controller_epoch, 1, leader, leader_epoch, isr, leader_epoch, replicas)
            )
    letters += [
        LeaderAndIsrRequest(2, 2, BROKER, 3, (BROKER, 1), 0, (BROKER, 1)),  # to the next incarnation
        LeaderAndIsrRequest(2, -1, BROKER, 2, (BROKER,), 0, (BROKER, 1)),  # broker epoch unknown
        *(StopReplicaRequest(epoch, 1, delete) for epoch in (1, 2) for delete in (False, True)),
        *(UpdateMetadataRequest(epoch, 1) for epoch in (1, 2)),
        UpdateMetadataRequest(3, 2),
        Restart(2),
    ]
    return tuple(letters)


ALPHABET = _alphabet()


@dataclass(frozen=True, slots=True)
class ZkBrokerExhaustiveResult:
    """The outcome of one exhaustive run."""

    passed: bool
    failure: str | None
    sequences: int
    seconds: float


def run_exhaustive(
    target: str, depth: int = MAX_DEPTH, command_seconds: float = DEFAULT_COMMAND_SECONDS
) -> ZkBrokerExhaustiveResult:
    """Replay every sequence of up to `depth` (capped at `MAX_DEPTH`) letters of `ALPHABET` on
    `target` beside the reference; stop at the first divergence."""
    started = time.perf_counter()
    tried = 0
    for length in range(1, min(depth, MAX_DEPTH) + 1):
        for sequence in itertools.product(ALPHABET, repeat=length):
            tried += 1
            pair = ZkBrokerPair(target, SETTINGS, command_seconds)
            try:
                for command in sequence:
                    pair.run(command)
            except DivergenceError as divergence:
                return ZkBrokerExhaustiveResult(False, str(divergence), tried, time.perf_counter() - started)
    return ZkBrokerExhaustiveResult(True, None, tried, time.perf_counter() - started)
