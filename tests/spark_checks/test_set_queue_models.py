"""The `set` and `unordered-queue` models (Knossos's `knossos.model/set` and `unordered-queue`).

Every history in `model_histories/` is verified with the model and flags `cases.json` gives it
and must get the verdict listed there; the cases come from Porcupine's `TestSetModel`, Jepsen's
`queue-test` (which checks its histories against Knossos's unordered queue) and the semantics
of Knossos's model. The step functions are also checked directly, against a brute force over
every order of the calls of small sequential histories.
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest

from reference.models import DEFAULT_CONVENTIONS, Set, UnorderedQueue
from spark_checks.history import Call, Outcome, Verdict
from spark_checks.linearizability import check_linearizability, overall_verdict
from tests.helpers import run_cli

FOLDER = Path(__file__).parent / "model_histories"
CASES: list[dict[str, Any]] = json.loads((FOLDER / "cases.json").read_text())["cases"]
EXIT = {"valid": 0, "invalid": 1}


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{case['model']}:{case['file']}:{'-'.join(case['flags'])}" for case in CASES]
)
def test_each_history_gets_its_verdict(capsys, case):
    code, out, err = run_cli(
        capsys, "verify", str(FOLDER / case["file"]), "--model", case["model"], "--json", *case["flags"]
    )
    assert code == EXIT[case["verdict"]], (case["source"], err, out)
    assert json.loads(out)["verdict"] == case["verdict"]


def test_every_history_file_is_a_case():
    listed = {case["file"] for case in CASES}
    present = {path.name for path in FOLDER.iterdir() if path.suffix in (".edn", ".jsonl")}
    assert listed == present


def test_the_indeterminate_dequeue_is_what_makes_the_empty_read_legal(capsys, tmp_path):
    # uq-unknown-dequeue-empties is valid only because the indeterminate dequeue may have
    # removed 2: without it, the queue still holds 2 when a dequeue finds it empty.
    lines = (FOLDER / "uq-unknown-dequeue-empties.jsonl").read_text().splitlines()
    without = [line for line in lines if '"process": 1' not in line]
    assert len(without) == len(lines) - 2
    path = tmp_path / "without.jsonl"
    path.write_text("\n".join(without) + "\n")
    code, _, _ = run_cli(capsys, "verify", str(path), "--model", "unordered-queue", "--nil-read", "absent")
    assert code == 1


def test_a_set_read_that_is_not_a_list_is_bad_input_with_its_line(capsys, tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"process": 0, "type": "invoke", "f": "read", "value": null}\n'
        '{"process": 0, "type": "ok", "f": "read", "value": 3}\n'
    )
    code, _, err = run_cli(capsys, "verify", str(path), "--model", "set")
    assert code == 2
    assert f"{path}:2" in err and "set model: a read returns a list of elements; got 3" in err


def test_unsupported_functions_are_bad_input(capsys, tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"process": 0, "type": "invoke", "f": "peek", "value": null}\n'
        '{"process": 0, "type": "ok", "f": "peek", "value": 3}\n'
    )
    for model in ("set", "unordered-queue"):
        code, _, err = run_cli(capsys, "verify", str(path), "--model", model)
        assert code == 2 and f"{model} model: unsupported operation 'peek'" in err, err


# ---------------------------------------------------------------------------------------
# The step functions against a brute force
# ---------------------------------------------------------------------------------------


def call(f: str, value: Any, outcome: Outcome = Outcome.OK, index: int = 0) -> Call:
    return Call(0, f, value if f in ("add", "enqueue") else None, value, outcome, index, index + 1)


def run(model: Any, calls: list[Call], initial: Any = None) -> Any:
    """Apply the calls in order; None when one is impossible."""
    state = model.init(initial)
    for each in calls:
        prepared = model.prepare(each, DEFAULT_CONVENTIONS)
        if prepared is None:
            continue
        state = model.step(state, *prepared)
        if state is None:
            return None
    return state


def set_legal(calls: list[Call]) -> bool:
    """Knossos's set, by definition: each read returns exactly the values added before it."""
    added: list[Any] = []
    for each in calls:
        if each.f == "add":
            added.append(each.input)
        elif sorted(each.output) != sorted(set(added)):
            return False
    return True


def queue_legal(calls: list[Call]) -> bool:
    """Knossos's unordered queue, by definition: every dequeue takes one pending copy."""
    pending: list[Any] = []
    for each in calls:
        if each.f == "enqueue":
            pending.append(each.input)
        elif each.output in pending:
            pending.remove(each.output)
        else:
            return False
    return True


SET_CALLS = [call("add", 1), call("add", 2), call("add", 1), call("read", [1]), call("read", [1, 2])]
QUEUE_CALLS = [
    call("enqueue", 1),
    call("enqueue", 1),
    call("enqueue", 2),
    call("dequeue", 1),
    call("dequeue", 2),
]


@pytest.mark.parametrize(
    ("model", "calls", "legal"), [(Set(), SET_CALLS, set_legal), (UnorderedQueue(), QUEUE_CALLS, queue_legal)]
)
def test_steps_agree_with_the_definition_on_every_order(model, calls, legal):
    verdicts = []
    for length in range(1, len(calls) + 1):
        for order in itertools.permutations(calls, length):
            sequence = list(order)
            verdicts.append(legal(sequence))
            assert (run(model, sequence) is not None) == verdicts[-1], sequence
    assert any(verdicts) and not all(verdicts)


def test_a_read_repeating_an_element_is_never_legal():
    model = Set()
    state = run(model, [call("add", 1)])
    prepared = model.prepare(call("read", [1, 1]), DEFAULT_CONVENTIONS)
    assert prepared is not None
    assert model.step(state, *prepared) is None
    assert model.step(state, *must(model.prepare(call("read", [1]), DEFAULT_CONVENTIONS))) == state


def test_nil_reads_follow_the_convention():
    model = Set()
    absent = {**DEFAULT_CONVENTIONS, "nil_read": "absent"}
    nil_read = call("read", None)
    assert model.prepare(nil_read, DEFAULT_CONVENTIONS) is None  # tells nothing
    prepared = model.prepare(nil_read, absent)
    assert prepared is not None
    assert model.step(frozenset(), *prepared) == frozenset()
    assert model.step(frozenset({1}), *prepared) is None


def test_an_unknown_dequeue_removes_any_one_pending_element():
    model = UnorderedQueue()
    state = run(model, [call("enqueue", 1), call("enqueue", 2), call("enqueue", 2)])
    crashed = call("dequeue", None, Outcome.INFO)
    # Left out where no empty queue can be observed (it could only forbid later dequeues).
    assert model.prepare(crashed, DEFAULT_CONVENTIONS) is None
    prepared = model.prepare(crashed, {**DEFAULT_CONVENTIONS, "nil_read": "absent"})
    assert prepared == (("d?",), None, "info")
    after = must(model.step(state, *prepared))
    assert model.describe_state(after) == "{1, 2, 2}, then a dequeue of one of the above, {}"
    # A dequeue of 1 leaves the unknown one a 2 to have taken.
    assert model.step(after, ("d",), 1, "ok") == (frozenset({(2, 2)}), frozenset())
    # Dequeuing both 2s leaves one possibility: the unknown dequeue took 1, the queue is empty.
    twice = must(model.step(must(model.step(after, ("d",), 2, "ok")), ("d",), 2, "ok"))
    assert model.describe_state(twice) == "{}"
    assert model.step(twice, ("d0",), None, "ok") == twice
    assert model.step(twice, ("d",), 1, "ok") is None


def oracle_step(worlds: frozenset[tuple[int, ...]], op: tuple[Any, ...]) -> frozenset[tuple[int, ...]]:
    """Porcupine's power-set construction, by brute force: every sorted tuple the queue may hold."""
    after: set[tuple[int, ...]] = set()
    for world in worlds:
        if op[0] == "e":
            after.add(tuple(sorted((*world, op[1]))))
        elif op[0] == "d0":
            after.update(() for _ in [world] if not world)
        else:
            taken = [op[1]] if op[0] == "d" else sorted(set(world))
            for value in taken:
                if value in world:
                    rest = list(world)
                    rest.remove(value)
                    after.add(tuple(rest))
    return frozenset(after)


def prepared(op: tuple[Any, ...]) -> tuple[Any, Any]:
    """The model's prepared (input, output) of a step: the value is the input of an enqueue
    and the output of a dequeue."""
    return (op, None) if op[0] == "e" else (op[:1], op[1] if len(op) > 1 else None)


def test_the_grouped_state_is_exactly_the_power_set():
    # Random runs of enqueue, dequeue -> v, unknown dequeues and empty observations over three
    # values: after every step the grouped state allows exactly the next steps the set of every
    # possible multiset allows (so it stands for the same set), on every path, legal or not.
    model = UnorderedQueue()
    steps = [("e", 1), ("e", 2), ("e", 3), ("d", 1), ("d", 2), ("d", 3), ("d?",), ("d0",)]
    weights = [3, 3, 2, 2, 2, 1, 3, 1]
    rng = random.Random(20261124)
    compared = legal = 0
    for _ in range(1500):
        state: Any = model.init(None)
        worlds: frozenset[tuple[int, ...]] = frozenset({()})
        for op in rng.choices(steps, weights, k=14):
            for probe in steps:
                expected = oracle_step(worlds, probe)
                got = model.step(state, *prepared(probe), "ok")
                assert (got is not None) == bool(expected), (worlds, state, probe)
                compared += 1
            after_worlds = oracle_step(worlds, op)
            if not after_worlds:
                break
            legal += 1
            state = must(model.step(state, *prepared(op), "ok"))
            worlds = after_worlds
    assert compared > 30_000 and legal > 3_000


def must(state: Any) -> Any:
    """A state that must exist (not None)."""
    assert state is not None
    return state


def test_initial_contents():
    assert Set().init([1, 2]) == frozenset({1, 2})
    assert Set().init(0) == frozenset()  # a register's initial value (EDN readers attach 0)
    queue = UnorderedQueue()
    assert queue.describe_state(queue.init([1, 1])) == "{1, 1}"
    assert run(queue, [call("dequeue", 1), call("dequeue", 1)], initial=[1, 1]) is not None


def real_queue_history(seed: int, operations: int = 150) -> list[Call]:
    """Calls recorded from a real multiset queue by 4 concurrent clients: each call takes
    effect when it completes; a crash (info) loses the result and the client; a dequeue of
    an empty queue returns nil (observed empty under `nil_read = absent`)."""
    rng = random.Random(seed)
    pending: list[int] = []
    calls: list[Call] = []
    open_calls: dict[int, tuple[str, int | None, int]] = {}
    clients, index, made = [0, 1, 2, 3], 0, 0
    while made < operations or open_calls:
        client = rng.choice(clients)
        if client in open_calls:
            f, value, invoked = open_calls.pop(client)
            if f == "enqueue":
                pending.append(cast(int, value))
            else:
                value = pending.pop(rng.randrange(len(pending))) if pending else None
            outcome = Outcome.INFO if rng.random() < 0.1 else Outcome.OK
            if outcome is Outcome.INFO:
                clients[clients.index(client)] = max(clients) + 1
            shown = value if outcome is Outcome.OK or f == "enqueue" else None
            given = value if f == "enqueue" else None
            calls.append(
                Call(client, f, given, shown if outcome is Outcome.OK else None, outcome, invoked, index)
            )
        elif made < operations:
            made += 1
            f = rng.choice(("enqueue", "dequeue"))
            open_calls[client] = (f, made if f == "enqueue" else None, index)
        index += 1
    return calls


def test_histories_of_a_real_queue_are_valid_and_a_wrong_value_is_not():
    absent = {**DEFAULT_CONVENTIONS, "nil_read": "absent"}
    refuted = 0
    for seed in range(20):
        calls = real_queue_history(seed)
        assert any(c.f == "dequeue" and c.outcome is Outcome.INFO for c in calls)
        assert overall_verdict(check_linearizability(calls, "unordered-queue", absent)) is Verdict.VALID
        # One dequeue returns a value never enqueued (the first: refuting a late one is the
        # search's exponential case).
        first = next(i for i, c in enumerate(calls) if c.f == "dequeue" and c.outcome is Outcome.OK)
        calls[first] = replace(calls[first], output=-1)
        assert overall_verdict(check_linearizability(calls, "unordered-queue", absent)) is Verdict.INVALID
        refuted += 1
    assert refuted == 20
