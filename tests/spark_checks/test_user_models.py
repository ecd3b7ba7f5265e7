"""`kafkaspec verify --model MODULE:CLASS`: a model written as a user writes one (in a module of
their own folder) gets the verdicts of the built-in model it restates, a nondeterministic model
is checked as Porcupine's `NondeterministicModel` is, and every bad `--model` is one line, exit 2.

The models here are Porcupine's test models (`porcupine_test.go`: registerModel, kvModel with its
partition by key, nondeterministicRegisterModel) and Knossos's cas-register, restated in the
protocol of `kafkaspec.model`; the histories are Porcupine's and Knossos's own test data
(../shared/histories) and the examples of Porcupine's tests.
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkaspec.model import UNKNOWN, Input, Model, NondeterministicModel
from spark_checks import user_models
from spark_checks.engine import VerifyOptions, verify_history
from spark_checks.history import Verdict
from tests.helpers import run_cli

HISTORIES = Path(__file__).resolve().parents[3] / "shared" / "histories"

MODELS = '''
"""Models as a user writes them for kafkaspec verify --model MODULE:CLASS."""

from __future__ import annotations

import itertools
from typing import Any

from kafkaspec.model import UNKNOWN, Input


class CasRegister:
    """Knossos's cas-register: read, write, cas [from to]; a nil read tells nothing."""

    def init(self) -> Any:
        return 0

    def step(self, state: Any, input: Input, output: Any) -> Any:
        if input.f == "write":
            return input.value
        if input.f == "cas":
            expected, new = input.value
            return new if state == expected else None
        if output is UNKNOWN or output is None:
            return state
        return state if output == state else None

    def describe_operation(self, input: Input, output: Any) -> str:
        return f"{input.f}({input.value!r}) => {output!r}"

    def describe_state(self, state: Any) -> str:
        return f"register holding {state!r}"


class Register(CasRegister):
    """Porcupine's registerModel: put and get of one integer, 0 initially."""

    def step(self, state: Any, input: Input, output: Any) -> Any:
        if input.f == "put":
            return input.value
        return state if output is UNKNOWN or output == state else None


class KeyValue:
    """Porcupine's kvModel: get/put/append of strings, one part per key."""

    def partition(self, input: Input) -> Any:
        return input.key

    def init(self) -> str:
        return ""

    def step(self, state: str, input: Input, output: Any) -> str | None:
        if input.f == "get":
            return state if output is UNKNOWN or output == state else None
        if input.f == "put":
            return input.value
        return state + input.value


class PutAnyRegister:
    """Porcupine's nondeterministicRegisterModel: put-any writes some subset of its values,
    get-any reads some subset of the register, get-all reads all of it."""

    nondeterministic = True

    def init(self) -> list[frozenset[int]]:
        return [frozenset()]

    def step(self, state: frozenset[int], input: Input, output: Any) -> list[frozenset[int]]:
        if input.f == "put-any":
            values = input.value
            return [frozenset(c) for n in range(len(values) + 1) for c in itertools.combinations(values, n)]
        if output is UNKNOWN:
            return [state]
        if input.f == "get-any":
            return [state] if set(output) <= state else []
        return [state] if set(output) == state else []

    def describe_state(self, state: frozenset[int]) -> str:
        return "{" + ", ".join(map(str, sorted(state))) + "}"


class PutAnyAsDeterministic(PutAnyRegister):
    """The same register with put-any taken as writing every value: wrong for this object."""

    nondeterministic = False

    def init(self) -> frozenset[int]:
        return frozenset()

    def step(self, state: Any, input: Input, output: Any) -> Any:
        if input.f == "put-any":
            return frozenset(input.value)
        return next(iter(PutAnyRegister.step(self, state, input, output)), None)


register_object = Register()
'''


@pytest.fixture
def user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with the user's model module, the current folder of the command; what the
    command puts on `sys.path` and the modules it imports are taken back afterwards."""
    (tmp_path / "usermodels.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("usermodels", "broken_", "odd_")):
            del sys.modules[name]


def write_jsonl(path: Path, operations: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(operation) + "\n" for operation in operations))
    return path


def ops(*events: tuple[Any, ...]) -> list[dict[str, Any]]:
    """(process, type, f, value[, key]) events as JSON Lines operations."""
    return [
        {"process": e[0], "type": e[1], "f": e[2], "value": e[3], **({"key": e[4]} if len(e) > 4 else {})}
        for e in events
    ]


def verify(
    capsys: pytest.CaptureFixture[str], path: Path, model: str, *flags: str
) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(capsys, "verify", str(path), "--model", model, "--json", *flags)
    assert code in (0, 1, 3), err
    return code, json.loads(out)


# ---------------------------------------------------------------------------------------
# The same verdicts as the built-in models
# ---------------------------------------------------------------------------------------


def knossos_cas_register_files() -> list[Path]:
    return sorted((HISTORIES / "knossos" / "data" / "cas-register").glob("*/*.edn"))


@pytest.mark.skipif(not knossos_cas_register_files(), reason="../shared/histories is not there")
def test_a_user_cas_register_gets_knossos_verdicts_like_the_builtin(capsys, user_folder):
    files = knossos_cas_register_files()
    assert len(files) >= 10
    for path in files:
        expected = 0 if path.parent.name == "good" else 1
        user_code, user = verify(capsys, path, "usermodels:CasRegister")
        builtin_code, _ = verify(capsys, path, "cas-register")
        assert (user_code, builtin_code) == (expected, expected), path.name
        assert user["histories"][0]["model"] == "usermodels:CasRegister"


@pytest.mark.skipif(not (HISTORIES / "porcupine").is_dir(), reason="../shared/histories is not there")
@pytest.mark.parametrize("name", ["c01-ok", "c01-bad", "c10-ok", "c10-bad"])
def test_a_user_kv_model_partitioned_by_key_gets_porcupines_verdicts(capsys, user_folder, name):
    path = HISTORIES / "porcupine" / "test_data" / "kv" / f"{name}.txt"
    user_code, user = verify(capsys, path, "usermodels:KeyValue")
    builtin_code, builtin = verify(capsys, path, "kv")
    assert user_code == builtin_code == (0 if name.endswith("ok") else 1)
    # One part per key, as the built-in kv model (Porcupine's kvModel partitions by key).
    parts = [report["histories"][0]["parts"] for report in (user, builtin)]
    assert parts[0] == parts[1] > 1


def test_porcupines_register_examples(capsys, user_folder):
    # porcupine_test.go TestRegisterModel: the 6.824 quiz examples, as a user's history.
    valid = ops(
        (0, "invoke", "put", 100),
        (1, "invoke", "get", None),
        (2, "invoke", "get", None),
        (2, "ok", "get", 0),
        (1, "ok", "get", 100),
        (0, "ok", "put", 100),
    )
    invalid = ops(
        (0, "invoke", "put", 200),
        (1, "invoke", "get", None),
        (1, "ok", "get", 200),
        (2, "invoke", "get", None),
        (2, "ok", "get", 0),
        (0, "ok", "put", 200),
    )
    for spec in ("usermodels:Register", "usermodels:register_object"):
        assert verify(capsys, write_jsonl(user_folder / "ok.jsonl", valid), spec)[0] == 0
        code, report = verify(capsys, write_jsonl(user_folder / "bad.jsonl", invalid), spec)
        assert code == 1
        evidence = report["histories"][0]["failing"][0]["evidence"]
        # describe_state and describe_operation are the user's.
        assert evidence["state_after_prefix"] == "register holding 200"
        assert set(evidence["descriptions"].values()) == {"get(None) => 0"}


def test_an_indeterminate_call_may_happen_or_not(capsys, user_folder):
    # A crashed put (info) may take effect after a later read, or never.
    history = ops(
        (0, "invoke", "put", 5),
        (0, "info", "put", 5),
        (1, "invoke", "get", None),
        (1, "ok", "get", 0),
        (1, "invoke", "get", None),
        (1, "ok", "get", 5),
    )
    assert verify(capsys, write_jsonl(user_folder / "h.jsonl", history), "usermodels:Register")[0] == 0
    history[-1]["value"] = 6  # no call wrote 6
    assert verify(capsys, write_jsonl(user_folder / "h.jsonl", history), "usermodels:Register")[0] == 1


# ---------------------------------------------------------------------------------------
# Nondeterministic models
# ---------------------------------------------------------------------------------------

PUT_ANY = ops(
    # porcupine_test.go TestNondeterministicRegisterModel: put-any {1 2 3 4}; get-any -> {2},
    # get-any -> {1 4}; get-all -> {1 2 3}: no subset of {1 2 3 4} explains all three reads.
    (0, "invoke", "put-any", [1, 2, 3, 4]),
    (1, "invoke", "get-any", None),
    (2, "invoke", "get-any", None),
    (3, "invoke", "get-all", None),
    (2, "ok", "get-any", [2]),
    (1, "ok", "get-any", [1, 4]),
    (3, "ok", "get-all", [1, 2, 3]),
    (0, "ok", "put-any", []),
)


def test_porcupines_nondeterministic_register(capsys, user_folder):
    code, report = verify(
        capsys, write_jsonl(user_folder / "bad.jsonl", PUT_ANY), "usermodels:PutAnyRegister"
    )
    assert code == 1  # Porcupine: Illegal
    evidence = report["histories"][0]["failing"][0]["evidence"]
    assert evidence["state_after_prefix"].startswith("{")  # the set of possible states, described
    explained = [dict(operation) for operation in PUT_ANY]
    explained[6]["value"] = [1, 2, 4]  # get-all sees the subset both get-any reads came from
    assert (
        verify(capsys, write_jsonl(user_folder / "ok.jsonl", explained), "usermodels:PutAnyRegister")[0] == 0
    )
    # Taken as deterministic (put-any writes everything) the valid history is refuted: the
    # other states are what the power-set construction keeps.
    assert (
        verify(capsys, write_jsonl(user_folder / "ok.jsonl", explained), "usermodels:PutAnyAsDeterministic")[
            0
        ]
        == 1
    )


def test_the_power_set_state_is_the_set_of_possible_states(user_folder, monkeypatch):
    monkeypatch.syspath_prepend(str(user_folder))
    model = user_models.load_model("usermodels:PutAnyRegister")
    assert isinstance(model, user_models.PowerSetModel)
    start = model.init(None)
    assert start == frozenset({frozenset()})
    after_put = model.step(start, user_models.Input("put-any", (1, 2)), (), "ok")
    assert after_put == frozenset({frozenset(), frozenset({1}), frozenset({2}), frozenset({1, 2})})
    after_read = model.step(after_put, user_models.Input("get-any", None), (2,), "ok")
    assert after_read == frozenset({frozenset({2}), frozenset({1, 2})})
    assert model.step(after_read, user_models.Input("get-all", None), (1,), "ok") is None
    assert model.describe_state(after_read) == "{{1, 2}, {2}}"


# ---------------------------------------------------------------------------------------
# Bad --model values: one line, exit 2
# ---------------------------------------------------------------------------------------

BROKEN_MODULES = {
    "broken_raises": "raise RuntimeError('no database configured')\n",
    "broken_syntax": "def step(:\n",
    "broken_exits": "import sys\nsys.exit(3)\n",
    "odd_models": textwrap.dedent(
        """
        class NeedsArguments:
            def __init__(self, size):
                self.size = size
            def init(self): return 0
            def step(self, state, input, output): return state

        class NoStep:
            def init(self): return 0

        class ListState:
            def init(self): return []
            def step(self, state, input, output): return state

        class NoInitialStates:
            nondeterministic = True
            def init(self): return []
            def step(self, state, input, output): return [state]

        class NoneState:
            def init(self): return None
            def step(self, state, input, output): return state

        class InitRaises:
            def init(self): raise KeyError("initial")
            def step(self, state, input, output): return state

        class StepRaises:
            def init(self): return 0
            def step(self, state, input, output): return {}[input.f]

        class StepReturnsList:
            def init(self): return ()
            def step(self, state, input, output): return [input.value]

        class NondeterministicStepReturnsNumber:
            nondeterministic = True
            def init(self): return [0]
            def step(self, state, input, output): return 1

        class PartitionReturnsSet:
            def init(self): return 0
            def step(self, state, input, output): return state
            def partition(self, input): return {input.key}

        class DescribeNotCallable:
            describe_state = "text"
            def init(self): return 0
            def step(self, state, input, output): return state
        """
    ),
}


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("nosuchmodel", "expected auto, kafka, register"),
        (":Register", "expected MODULE:CLASS"),
        ("usermodels:", "expected MODULE:CLASS"),
        (".usermodels:Register", "expected MODULE:CLASS"),
        ("missing_module_xyz:Model", "cannot import missing_module_xyz: ModuleNotFoundError"),
        ("broken_raises:Model", "cannot import broken_raises: RuntimeError: no database configured"),
        ("broken_syntax:Model", "cannot import broken_syntax: SyntaxError"),
        ("broken_exits:Model", "cannot import broken_exits: SystemExit: 3"),
        ("usermodels:Missing", "module usermodels has no Missing"),
        ("odd_models:NeedsArguments", "NeedsArguments() failed: TypeError"),
        ("odd_models:NoStep", "NoStep is not a model: it has no step method"),
        ("odd_models:ListState", "init() returned an unhashable state (list)"),
        ("odd_models:NoInitialStates", "init() returned no state"),
        ("odd_models:InitRaises", "init raised KeyError: 'initial'"),
        ("odd_models:NoneState", "init() returned None, which cannot be a state"),
        ("odd_models:DescribeNotCallable", "DescribeNotCallable.describe_state is not a method"),
    ],
)
def test_a_bad_model_is_one_line_and_exit_2(capsys, user_folder, spec, fragment):
    for name, text in BROKEN_MODULES.items():
        (user_folder / f"{name}.py").write_text(text)
    history = write_jsonl(user_folder / "h.jsonl", ops((0, "invoke", "put", 1), (0, "ok", "put", 1)))
    code, out, err = run_cli(capsys, "verify", str(history), "--model", spec)
    assert code == 2, err
    assert out == ""
    assert err.startswith("kafkaspec: error: ") and err.count("\n") == 1, err
    assert fragment in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "flag", [("--initial", "3"), ("--nil-read", "absent"), ("--failed-cas", "no-effect")]
)
def test_the_builtin_models_conventions_are_refused_with_a_users_model(capsys, user_folder, flag):
    history = write_jsonl(user_folder / "h.jsonl", ops((0, "invoke", "put", 1), (0, "ok", "put", 1)))
    code, _, err = run_cli(capsys, "verify", str(history), "--model", "usermodels:Register", *flag)
    assert code == 2 and err.count("\n") == 1
    assert (
        "are the built-in models' conventions; --model usermodels:Register reads the values as recorded"
        in err
    )


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("odd_models:StepRaises", "step raised KeyError: 'put'"),
        ("odd_models:StepReturnsList", "returned an unhashable state (list)"),
        ("odd_models:NondeterministicStepReturnsNumber", "step must return an iterable of hashable states"),
        ("odd_models:PartitionReturnsSet", "a key must be a string, number, bool, None or a tuple"),
    ],
)
def test_a_model_that_fails_during_the_check_is_one_line_and_exit_2(capsys, user_folder, spec, fragment):
    (user_folder / "odd_models.py").write_text(BROKEN_MODULES["odd_models"])
    history = write_jsonl(user_folder / "h.jsonl", ops((0, "invoke", "put", 1), (0, "ok", "put", 1)))
    for flags in ((), ("--format", "jsonl", "--report", str(user_folder / "r.html"))):
        code, _, err = run_cli(capsys, "verify", str(history), "--model", spec, *flags)
        assert code == 2, err
        assert err.count("\n") == 1 and fragment in err and "internal error" not in err, err


# ---------------------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_workers_import_the_users_model(spark, tmp_path, monkeypatch):
    # A module name of its own: Spark's Python workers are reused across the test session.
    (tmp_path / "usermodels_on_spark.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    history = write_jsonl(
        tmp_path / "kv.jsonl",
        ops(
            (0, "invoke", "append", "x", "a"),
            (0, "ok", "append", "x", "a"),
            (1, "invoke", "get", None, "a"),
            (1, "ok", "get", "x", "a"),
            (2, "invoke", "append", "y", "b"),
            (2, "ok", "append", "y", "b"),
            (1, "invoke", "get", None, "b"),
            (1, "ok", "get", "", "b"),  # after y was appended: not linearizable
        ),
    )
    spec = "usermodels_on_spark:KeyValue"
    local = verify_history(history, VerifyOptions(model=spec, engine="local"))
    distributed = verify_history(history, VerifyOptions(model=spec, engine="spark"), spark=spark)
    assert local.verdict is distributed.verdict is Verdict.INVALID
    assert sorted(r.partition for r in distributed.results) == ["a", "b"]
    assert {r.partition: r.verdict for r in distributed.results} == {"a": Verdict.VALID, "b": Verdict.INVALID}


# ---------------------------------------------------------------------------------------
# The README's example, as written there
# ---------------------------------------------------------------------------------------


def readme_blocks() -> list[str]:
    """The fenced blocks of the README's "Your own model" section, in order."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("### Your own model", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n", 1)[1] for block in section.split("```")[1::2]]


def test_the_readme_example_runs_as_written(capsys, tmp_path, monkeypatch):
    blocks = readme_blocks()
    module = next(block for block in blocks if block.startswith('"""Models for'))
    history = next(block for block in blocks if block.startswith('{"process"'))
    session = next(block for block in blocks if block.startswith("$ kafkaspec verify counter.jsonl"))
    (tmp_path / "mymodels.py").write_text(module)
    (tmp_path / "counter.jsonl").write_text(history)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "mymodels", raising=False)
    commands = [line for line in session.splitlines() if line.startswith("$ kafkaspec ")]
    assert len(commands) == 3
    for command in commands:
        argv = command.removeprefix("$ kafkaspec ").split()
        code, out, err = run_cli(capsys, *argv)
        shown = session.split(command + "\n", 1)[1].split("$ ", 1)[0]
        first_line = shown.splitlines()[0]
        # The first line as shown, but for the time the check took.
        said = (out or err).splitlines()[0]
        assert said.rsplit(", ", 1)[0] == first_line.rsplit(", ", 1)[0], (said, first_line)
        assert code == {"INVALID": 1, "VALID": 0}.get(first_line.split(": ")[1].split()[0], 2)
    sys.modules.pop("mymodels", None)


# ---------------------------------------------------------------------------------------
# The protocols type-check a user's classes (mypy --strict runs on this file), and a package
# goes to Spark zipped
# ---------------------------------------------------------------------------------------


class TypedRegister:
    def init(self) -> int:
        return 0

    def step(self, state: int, input: Input, output: object) -> int | None:
        if input.f == "write":
            return int(input.value)
        return state if output is UNKNOWN or output == state else None


class TypedLossyRegister:
    nondeterministic = True

    def init(self) -> list[int]:
        return [0]

    def step(self, state: int, input: Input, output: object) -> list[int]:
        if input.f == "write":
            return [state, int(input.value)]  # the write may be lost
        return [state] if output is UNKNOWN or output == state else []


def test_typed_user_classes_satisfy_the_protocols(tmp_path, monkeypatch):
    deterministic: Model[int] = TypedRegister()
    nondeterministic: NondeterministicModel[int] = TypedLossyRegister()
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert isinstance(user_models.load_model(f"{__name__}:TypedRegister"), user_models.UserModel)
    lossy = user_models.load_model(f"{__name__}:TypedLossyRegister")
    assert isinstance(lossy, user_models.PowerSetModel)
    assert lossy.step(frozenset({0}), Input("write", 3), None, "ok") == frozenset({0, 3})
    assert deterministic.step(0, Input("read"), 1) is None
    assert list(nondeterministic.init()) == [0]


class RecordingSession:
    """What `ship_to_spark` uses of a SparkSession: `sparkContext.addPyFile`."""

    def __init__(self) -> None:
        self.sparkContext = self
        self.shipped: list[str] = []

    def addPyFile(self, path: str) -> None:
        self.shipped.append(path)


def test_a_package_model_is_shipped_zipped_and_a_module_as_its_file(tmp_path, monkeypatch):
    package = tmp_path / "shipped_pkg"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("")
    (package / "models" / "kv.py").write_text(MODELS)
    (tmp_path / "shipped_single.py").write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        session = RecordingSession()
        user_models.load_model("shipped_pkg.models.kv:KeyValue")
        user_models.ship_to_spark(session, "shipped_pkg.models.kv:KeyValue")  # type: ignore[arg-type]
        user_models.ship_to_spark(session, "shipped_single:KeyValue")  # type: ignore[arg-type]
        user_models.ship_to_spark(session, "kv")  # type: ignore[arg-type]
        zipped, single = session.shipped
        assert Path(single) == tmp_path / "shipped_single.py"
        with zipfile.ZipFile(zipped) as archive:
            assert sorted(archive.namelist()) == [
                "shipped_pkg/__init__.py",
                "shipped_pkg/models/__init__.py",
                "shipped_pkg/models/kv.py",
            ]
    finally:
        for name in [name for name in sys.modules if name.startswith("shipped_")]:
            del sys.modules[name]
