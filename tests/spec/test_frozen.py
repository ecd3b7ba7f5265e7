"""The dataclass speed-ups (`spec._frozen`) keep the meaning of the classes they speed up."""

from __future__ import annotations

import dataclasses
import gc
from dataclasses import dataclass, field
from typing import Any

import pytest

from spec import log, partition
from spec._frozen import cache_hash, fast_init, memoized, replace
from spec.checker import Model, check
from spec.log import EMPTY_LOG, ReplicaLog, append, truncate_to
from spec.partition import (
    ClockTick,
    FollowerProgress,
    PartitionConfig,
    PartitionState,
    ProducerSend,
    Replica,
    initial_state,
)
from spec.types import Acks, EpochEntry, Record

SPED_UP = [
    cls
    for module in (log, partition)
    for cls in vars(module).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
]


def test_every_spec_dataclass_has_the_fast_init():
    assert len(SPED_UP) > 10
    for cls in SPED_UP:
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__", cls
        assert cls.__init__.__code__.co_filename == "<string>", cls


def test_fast_init_keeps_signature_defaults_and_factories():
    assert Replica() == Replica(True, EMPTY_LOG)
    assert Replica()._hash is None
    assert FollowerProgress(3, ticks_since_caught_up=1) == FollowerProgress(
        log_end_offset=3, ticks_since_caught_up=1
    )
    assert ProducerSend(0, Acks.ALL) == ProducerSend(leader=0, acks=Acks.ALL)
    assert ClockTick() == ClockTick()
    state = initial_state(PartitionConfig())
    # `history` has a default factory: every instance gets a fresh History().
    assert PartitionState(state.replicas, state.controller).history == partition.History()
    with pytest.raises(TypeError, match="ticks_since_caught_up"):
        FollowerProgress(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Replica(nonsense=1)  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Replica().alive = False  # type: ignore[misc]


def test_fast_init_refuses_what_it_cannot_construct():
    @dataclass(frozen=True, slots=True)
    class WithPostInit:
        value: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        value: int

    for cls in (WithPostInit, KeywordOnly):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)


def test_replace_matches_dataclasses_replace():
    state = initial_state(PartitionConfig())
    leader = state.replicas[0]
    assert replace(leader, alive=False) == dataclasses.replace(leader, alive=False)
    assert replace(leader) == leader
    assert replace(leader, alive=False)._hash is None  # the cached hash is not copied
    assert replace(state.history, crashes=2, lossy_crashes=1) == dataclasses.replace(
        state.history, crashes=2, lossy_crashes=1
    )
    with pytest.raises(TypeError):
        replace(leader, nonsense=1)


def test_cached_hash_equals_the_generated_hash():
    @cache_hash
    @dataclass(frozen=True, slots=True)
    class Pair:
        first: int
        second: int
        _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    pair = Pair(1, 2)
    assert hash(pair) == hash((1, 2)) == hash(pair)
    assert pair._hash == hash((1, 2))
    assert pair == Pair(1, 2)

    # Every spec class with a cached hash hashes as its dataclass would: the tuple of the
    # compared fields.
    state = initial_state(PartitionConfig())
    state = partition.step(PartitionConfig(), state, ProducerSend(0, Acks.ALL)) or state
    samples: list[Any] = [state, state.controller, state.history, PartitionConfig(), *state.replicas]
    samples += [replica.log for replica in state.replicas]
    assert {type(sample).__name__ for sample in samples} >= {"PartitionState", "Replica", "ReplicaLog"}
    for sample in samples:
        compared = tuple(getattr(sample, item.name) for item in dataclasses.fields(sample) if item.compare)
        assert hash(sample) == hash(compared), type(sample)


def test_no_op_log_operations_return_the_same_log():
    # Sharing unchanged parts keeps hashing and equality of successor states cheap.
    held = append(EMPTY_LOG, (Record(0, 7), Record(0, 8)))
    assert append(held, ()) is held
    assert truncate_to(held, held.log_end_offset) is held
    assert truncate_to(held, 99) is held
    assert truncate_to(held, 1) != held
    # An epoch assigned at the log end is still forgotten when truncating there.
    fresh_epoch = ReplicaLog(records=held.records, epoch_cache=(EpochEntry(0, 0), EpochEntry(1, 2)))
    assert truncate_to(fresh_epoch, 2).epoch_cache == (EpochEntry(0, 0),)


def test_check_pauses_the_garbage_collector_and_restores_it():
    seen: list[bool] = []

    def moves(state: int) -> tuple[int, ...]:
        seen.append(gc.isenabled())
        return (1,)

    model: Model[int, int] = Model(
        initial_states=(0,),
        candidate_actions=moves,
        step=lambda state, step: state + step if state < 3 else None,
        invariants={},
    )
    assert gc.isenabled()
    assert check(model, max_depth=10).distinct_states == 4
    assert seen and not any(seen)
    assert gc.isenabled()
    gc.disable()
    try:
        check(model, max_depth=10)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_memoized_functions_answer_as_the_plain_function_and_share_equal_results():
    calls: list[tuple[int, int]] = []

    @memoized
    def pair(first: int, second: int) -> tuple[int, int]:
        calls.append((first, second))
        return (first, second)

    assert pair(1, 2) == (1, 2)
    assert pair(1, 2) is pair(1, 2)  # one object for equal arguments
    assert calls == [(1, 2)]
    # The spec's memoized log operations: equal logs give the very same result object,
    # whose hash is then computed once.
    grown = append(EMPTY_LOG, (Record(0, 1), Record(0, 2)))
    same = ReplicaLog(0, (Record(0, 1), Record(0, 2)), 0, (EpochEntry(0, 0),))
    assert same == grown and same is not grown
    assert truncate_to(grown, 1) is truncate_to(same, 1)
    assert truncate_to(grown, 1) == ReplicaLog(0, (Record(0, 1),), 0, (EpochEntry(0, 0),))


def test_fast_init_keeps_the_field_types_for_tools_that_read_the_signature() -> None:
    # CrossHair builds a state's instances from its __init__'s type hints: without them it
    # tried EpochEntry(2, '') and "found" a TypeError in spec.log.assign_epoch.
    import typing

    from spec.types import EpochEntry

    hints = typing.get_type_hints(EpochEntry.__init__)
    assert hints == {"epoch": int, "start_offset": int, "return": type(None)}
