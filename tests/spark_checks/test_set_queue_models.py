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
from pathlib import Path
from typing import Any

import pytest

from reference.models import DEFAULT_CONVENTIONS, Set, UnorderedQueue
from spark_checks.history import Call, Outcome
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
    prepared = model.prepare(call("dequeue", None, Outcome.INFO), DEFAULT_CONVENTIONS)
    assert prepared == (("d?",), None, "info")
    after = model.step(state, *prepared)
    assert after is not None
    assert model.describe_state(after) == "one of {1, 2} or {2, 2}"
    # One more dequeue of 1 is possible in one of the two states only.
    assert model.describe_state(must(model.step(after, ("d",), 1, "ok"))) == "{2}"
    # Dequeuing both 2s leaves one possibility: the unknown dequeue took 1, the queue is empty.
    twice = must(model.step(must(model.step(after, ("d",), 2, "ok")), ("d",), 2, "ok"))
    assert model.describe_state(twice) == "{}"
    assert model.step(twice, ("d0",), None, "ok") == twice
    assert model.step(twice, ("d",), 1, "ok") is None


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
