"""The compiled build of the spec (`kafkaspec.native`) and the loader that picks it
(`spec._compiled`): the copy mypyc compiles spells out what `@dataclass` would generate, the
compiled modules get their docstrings back, and a build is used by default while current,
never when stale or when `KAFKASPEC_NATIVE=0`."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import pickle
import re
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

import pytest

import spec.scenarios
from kafkaspec import native
from spec import _compiled
from tests.helpers import run_cli

SAMPLE = '''
from __future__ import annotations

from dataclasses import dataclass, field

from spec._frozen import cache_hash, fast_init


@cache_hash
@fast_init
@dataclass(frozen=True, slots=True, order=True)
class Part:
    """One part."""

    name: str
    count: int = 0
    items: tuple[int, ...] = field(default_factory=tuple)
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True)
class Plain:
    value: int


class Oops(AssertionError):
    pass
'''


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == name)


def test_the_copy_spells_out_the_generated_methods():
    tree = ast.parse(native.transform(SAMPLE))
    part = _class(tree, "Part")
    # the run-time speed-ups are dropped (the methods are the class's own), `@dataclass` kept
    decorators = [ast.unparse(item) for item in part.decorator_list]
    assert decorators == ["dataclass(frozen=True, slots=True)"]
    init = _method(part, "__init__")
    assert [arg.arg for arg in init.args.args] == ["self", "name", "count", "items"]
    assert [ast.unparse(value) for value in init.args.defaults] == ["0", "tuple()"]
    assigned = [ast.unparse(item.targets[0]) for item in init.body if isinstance(item, ast.Assign)]
    assert assigned == ["self.name", "self.count", "self.items", "self._hash"]
    # equality, hash and order cover the compared fields only (not the cached hash)
    assert "_hash" not in ast.unparse(_method(part, "__eq__"))
    assert "hash((self.name, self.count, self.items))" in ast.unparse(_method(part, "__hash__"))
    assert "(self.name, self.count, self.items) < (other.name, other.count, other.items)" in ast.unparse(
        _method(part, "__lt__")
    )
    # `replace` without a dictionary: one keyword-only parameter per init field, kept when not given
    replacer = _method(part, "__replace__")
    assert [arg.arg for arg in replacer.args.kwonlyargs] == ["name", "count", "items"]
    assert "self.count if count is _native_KEEP else _native_cast('int', count)" in ast.unparse(replacer)
    assert (
        ast.unparse(_method(_class(tree, "Plain"), "__reduce__").body[0]) == "return (Plain, (self.value,))"
    )
    # mypyc compiles no subclass of a built-in exception but Exception's
    assert [ast.unparse(item) for item in _class(tree, "Oops").decorator_list] == [
        "mypyc_attr(native_class=False)"
    ]


REWRITTEN = """
from __future__ import annotations

LIMIT = 3
NAMES: tuple[str, ...] = ("a", "b")
Alias = int | None
T = TypeVar("T")
SHADOWED = 1
SHADOWED = 2


def pairs(state, other):
    return [a + b for a, b in zip(state.items, other.items, strict=True)], zip(f(), state.items, strict=True)
"""


def test_the_copy_rewrites_what_mypyc_compiles_slowly():
    """`zip(..., strict=True)` becomes a plain `zip` (which mypyc compiles into an indexed loop)
    whose arguments are checked to be as long as the first; module constants bound once become
    `Final` (inlined or kept in a C static); type aliases, type variables and names bound twice
    stay as they are."""
    text = native.transform(REWRITTEN)
    assert "zip(state.items, _native_same_length(other.items, state.items))" in text
    assert "zip(f(), state.items, strict=True)" in text  # `f()` would be called twice
    assert "LIMIT: _NativeFinal = 3" in text
    assert "NAMES: _NativeFinal[tuple[str, ...]] = " in text
    assert "Alias = int | None" in text and 'T = TypeVar("T")' in text
    assert "SHADOWED = 1" in text and "SHADOWED = 2" in text
    assert "from typing import Final as _NativeFinal" in text
    namespace: dict[str, object] = {}
    exec(native.SUPPORT_SOURCE, namespace)
    same_length: Callable[[object, object], object] = namespace["same_length"]  # type: ignore[assignment]
    assert same_length((1, 2), "ab") == (1, 2)
    with pytest.raises(ValueError, match="different lengths"):
        same_length((1, 2), "abc")


@pytest.mark.parametrize(
    "module_name",
    ["spec.partition", "spec.controller.zk_controller", "spec.group.consumer", "spec.group.types"],
)
def test_every_sped_up_class_gets_its_dataclass_signature_and_fields(module_name):
    """The generated `__init__` takes what the dataclass's takes, in the same order with the same
    defaults; `__eq__` compares, and `__hash__` hashes, the fields the dataclass's would."""
    module = importlib.import_module(module_name)
    source = (_compiled.PACKAGE.parent / (module_name.replace(".", "/") + ".py")).read_text()
    tree = ast.parse(native.transform(source))
    checked = 0
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        if not any(isinstance(item, ast.FunctionDef) and item.name == "__replace__" for item in cls.body):
            continue  # not a `@fast_init` class
        real = getattr(module, cls.name)
        fields = dataclasses.fields(real)
        init = _method(cls, "__init__")
        assert [arg.arg for arg in init.args.args[1:]] == [item.name for item in fields if item.init], (
            cls.name
        )
        compared = [item.name for item in fields if item.compare]
        equality = ast.unparse(_method(cls, "__eq__"))
        assert all(f"self.{name} " in equality for name in compared), cls.name
        assert not any(f"self.{item.name} " in equality for item in fields if not item.compare), cls.name
        if real.__hash__ is not None:
            hashed = "".join(f"self.{name}, " for name in compared).rstrip(", ")
            assert f"hash(({hashed}" in ast.unparse(_method(cls, "__hash__")).replace(",)", ")"), cls.name
        checked += 1
    assert checked >= 5


C_MODULE = """static PyMethodDef log___ReplicaLog_methods[] = {
    {"__init__",
     (PyCFunction)CPyPy_log___ReplicaLog_____init__,
     METH_FASTCALL | METH_KEYWORDS, PyDoc_STR("__init__($self, records=())\\n--\\n\\n")},
    {NULL}  /* Sentinel */
};

static PyTypeObject CPyType_log___ReplicaLog_template_ = {
    .tp_doc = PyDoc_STR("ReplicaLog(records=())\\n--\\n\\n"),
};

static PyMethodDef logmodule_methods[] = {
    {"append", (PyCFunction)CPyPy_log___append, METH_FASTCALL | METH_KEYWORDS,
    PyDoc_STR("append(log)\\n--\\n\\n") /* docstring */},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef logmodule = {
    PyModuleDef_HEAD_INIT,
    "spec.log",
    NULL, /* docstring */
    0,
};
"""


def test_docstrings_go_back_into_the_generated_c():
    source = (
        '"""The log."""\nclass ReplicaLog:\n    """A log."""\ndef append(log):\n    """Add ≥ 1 "record"."""\n'
    )
    docs = native.docstrings(source)
    patched = native.restore_docstrings(C_MODULE, docs)
    assert '.tp_doc = PyDoc_STR("ReplicaLog(records=())\\n--\\n\\n" "A log.")' in patched
    # octal escapes: UTF-8 bytes and quotes survive any C compiler's character set
    assert 'PyDoc_STR("append(log)\\n--\\n\\n" "Add \\342\\211\\245 1 \\042record\\042.")' in patched
    assert '"spec.log",\n    "The log.",' in patched
    assert 'PyDoc_STR("__init__($self, records=())\\n--\\n\\n")' in patched  # no docstring: unchanged


def _manifest(tmp_path: Path, digest: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "module.so").write_bytes(b"")
    manifest = {
        "cache_tag": sys.implementation.cache_tag,
        "digest": digest,
        "modules": {"spec.x": "src/module.so"},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def build_in(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Point `spec._compiled` at a build in another folder; `install` adds its finder to a copy
    of `sys.meta_path`."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))

    def point(folder: Path) -> None:
        monkeypatch.setattr(_compiled, "BUILD", folder)
        monkeypatch.setattr(_compiled, "MANIFEST", folder / "manifest.json")
        monkeypatch.setattr(_compiled, "SOURCE_STATS", folder / "source-stats.tsv")

    return point


def test_a_build_is_used_only_while_it_matches_the_source(tmp_path, build_in):
    build_in(tmp_path)
    assert _compiled.compiled_modules() is None  # no build
    _manifest(tmp_path, _compiled.source_digest())
    assert _compiled.compiled_modules() == {"spec.x": str(tmp_path / "src" / "module.so")}
    (tmp_path / "manifest.json").unlink()
    (tmp_path / "src" / "module.so").unlink()
    (tmp_path / "src").rmdir()
    _manifest(tmp_path, "0" * 64)  # built from another source
    assert _compiled.compiled_modules() is None


def test_the_digest_changes_with_any_module(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "_compiled.py").write_text("# the loader\n")
    before = _compiled.source_digest(tmp_path)
    (tmp_path / "_compiled.py").write_text("# the loader, edited: never compiled, so not stale\n")
    assert _compiled.source_digest(tmp_path) == before
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    assert _compiled.source_digest(tmp_path) != before


def test_the_recorded_stats_stand_for_the_digest_until_a_file_changes(tmp_path, build_in, monkeypatch):
    """While every source file's stats are what the record says, the build is used without
    reading the source; an edited, added or removed file, or a rebuilt manifest, sends the
    check back to the digest."""
    package, build = tmp_path / "package", tmp_path / "build"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    build.mkdir()
    build_in(build)
    _manifest(build, _compiled.source_digest(package))
    modules = {"spec.x": str(build / "src" / "module.so")}
    # files written this instant are waited for (an edit in the same tick of the file system's
    # clock could keep their stats); still fresh after the wait, no record
    waited: list[float] = []
    with monkeypatch.context() as patched:
        patched.setattr(time, "sleep", waited.append)
        patched.setattr(_compiled, "_RECENT_NS", 10**10)
        assert _compiled.record_source_stats(package) is True
    assert len(waited) == 1 and 9 < waited[0] <= 10
    assert not _compiled.SOURCE_STATS.exists()
    # as if written long ago (an edit in the same tick of the file system's clock as the
    # recorded write could keep the modification time: what `_RECENT_NS` guards against)
    for path in package.rglob("*.py"):
        os.utime(path, ns=(10**18, 10**18))
    monkeypatch.setattr(_compiled, "_RECENT_NS", -(10**18))
    assert _compiled.record_source_stats(package) is True
    assert _compiled.SOURCE_STATS.exists()

    def unread(package: Path = _compiled.PACKAGE) -> str:
        raise AssertionError("the source was read")

    with monkeypatch.context() as patched:
        patched.setattr(_compiled, "source_digest", unread)
        assert _compiled.compiled_modules(package) == modules
    (package / "sub" / "b.py").write_text("y = 3\n")  # same size, new content
    assert _compiled.compiled_modules(package) is None
    (package / "sub" / "b.py").write_text("y = 2\n")  # back: the digest says it matches
    assert _compiled.compiled_modules(package) == modules
    assert _compiled.record_source_stats(package) is True
    (package / "c.py").write_text("")
    assert _compiled.compiled_modules(package) is None
    (package / "c.py").unlink()
    assert _compiled.compiled_modules(package) == modules
    assert _compiled.record_source_stats(package) is True
    (build / "src" / "module.so").rename(build / "src" / "moved.so")  # a compiled module gone
    assert _compiled.compiled_modules(package) is None
    (build / "src" / "moved.so").rename(build / "src" / "module.so")
    # a rebuilt manifest (here: of another source) is not the one recorded
    assert _compiled.record_source_stats(package) is True
    (build / "manifest.json").unlink()
    (build / "src" / "module.so").unlink()
    (build / "src").rmdir()
    _manifest(build, "0" * 64)
    assert _compiled.compiled_modules(package) is None
    assert _compiled.record_source_stats(package) is False
    assert not _compiled.SOURCE_STATS.exists()


def test_the_compiled_build_is_the_default_while_current(tmp_path, build_in, monkeypatch, capsys):
    build_in(tmp_path)
    monkeypatch.delenv(_compiled.SWITCH, raising=False)
    _manifest(tmp_path, "0" * 64)  # stale: the source runs, silently
    assert _compiled.install() is False
    assert capsys.readouterr().err == ""
    assert _compiled.describe() == "interpreted source (the compiled build is stale: `make native`)"
    (tmp_path / "manifest.json").write_text(
        (tmp_path / "manifest.json").read_text().replace("0" * 64, _compiled.source_digest())
    )
    monkeypatch.setenv(_compiled.SWITCH, "0")  # forced off
    assert _compiled.install() is False
    assert _compiled.describe() == "interpreted source (KAFKASPEC_NATIVE=0)"
    monkeypatch.delenv(_compiled.SWITCH)
    assert _compiled.install() is True
    assert _compiled.active()
    assert _compiled.describe() == "compiled with mypyc"
    assert _compiled.install() is False  # once


def test_asking_for_a_stale_build_says_the_source_runs(tmp_path, build_in, monkeypatch, capsys):
    build_in(tmp_path)
    monkeypatch.setenv(_compiled.SWITCH, "1")
    _manifest(tmp_path, "0" * 64)  # built from another source
    assert _compiled.install() is False
    assert "no compiled spec matches the source" in capsys.readouterr().err


_WHICH = """
import json, sys
import spec.checker
from spec import _compiled
print(json.dumps([spec.checker.__file__, _compiled.describe()]))
"""


def _python(
    arguments: list[str], environment: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    """This interpreter run in the repository with `arguments` and `environment`, its output kept."""
    return subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        env=environment,
        cwd=native.ROOT,
        check=check,
        timeout=300,
    )


def _which(environment: dict[str, str]) -> list[str]:
    found: list[str] = json.loads(_python(["-c", _WHICH], environment).stdout)
    return found


def test_a_fresh_build_is_what_a_process_imports_unless_told_otherwise():
    """The test session runs the source (`tests/conftest.py`); a process started without
    `KAFKASPEC_NATIVE` imports the build when it is current, and with `KAFKASPEC_NATIVE=0` the
    source."""
    if _compiled.compiled_modules() is None:
        pytest.skip("no compiled build of this source (`make native`)")
    default = {name: value for name, value in os.environ.items() if name != _compiled.SWITCH}
    compiled_file, said = _which(default)
    assert compiled_file.startswith(str(_compiled.BUILD)) and compiled_file.endswith(EXTENSION_SUFFIXES[0])
    assert said == "compiled with mypyc"
    source_file, said = _which({**default, _compiled.SWITCH: "0"})
    assert source_file == str(_compiled.PACKAGE / "checker.py")
    assert said == "interpreted source (KAFKASPEC_NATIVE=0)"


_SETTLE = """
import json, sys
from spec import checker
from spec.scenarios import SCENARIOS_BY_NAME

assert "mypyc_attr" in open(checker.__file__).read() or sys.argv[1] == "source", checker.__file__
found = {}
for name in sys.argv[2:]:
    scenario = SCENARIOS_BY_NAME[name]
    model = scenario.machine.model(scenario.config, scenario.invariants, scenario.witnesses)
    result = checker.check(model, scenario.max_depth)
    violation = result.violation
    steps = [] if violation is None else [repr(step.action) for step in violation.trace]
    trace = None if violation is None else [violation.property_name, steps]
    found[name] = [result.distinct_states, result.transitions, result.depth, result.complete, trace]
print(json.dumps(found))
"""

# One scenario of each machine, small enough for a test: a counterexample and a full exploration.
_SCENARIOS = (
    "hw-truncation-loss",
    "classic-zombie-commit-unchecked",
    "consumer-zombie-commit",
    "zk-conditional-isr-write",
    "kraft-fenced-last-known-leader",
)


def _settle(root: Path, what: str) -> dict[str, object]:
    environment = {**os.environ, "PYTHONPATH": str(root), _compiled.SWITCH: "0"}
    done = subprocess.run(
        [sys.executable, "-c", _SETTLE, what, *_SCENARIOS],
        capture_output=True,
        text=True,
        env=environment,
        cwd=root,
        check=False,
        timeout=300,  # the source settles them in about 2 s
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout)
    return found


@pytest.mark.slow
def test_the_copy_mypyc_compiles_settles_scenarios_as_the_source_does(tmp_path: Path) -> None:
    """The methods the copy spells out (`__init__`, `__eq__`, `__hash__`, `__replace__`,
    `__reduce__`, comparisons) behave as the generated ones: run interpreted, the copy finds the
    same states, transitions and counterexamples as the source on one scenario per machine (what
    mypyc then compiles is the copy; its own correctness is mypyc's). Interpreted, a frozen
    dataclass refuses the plain assignments compiled code makes directly in the object's
    struct, so here they go through `object.__setattr__`, as `@dataclass`'s own do."""
    import re

    assigned = re.compile(r"^(\s*)self\.(\w+) = (.+?)  # type: ignore\[misc(, unused-ignore)?\]$", re.M)
    # a slotted class interpreted has no room for the hash a compiled object keeps beside its
    # fields: interpreted, the copy computes it every time (the same value)
    kept = rf"({native.HIDDEN_HASH}|{native.HASH_WORD})(: int \| None = None|: _native_i64 = 0| = value)"
    hidden = re.compile(rf"^(\s*)self\.{kept}  # .*$", re.M)
    for module in native.write_sources(tmp_path):
        path = tmp_path / module
        text = hidden.sub(r"\1pass", path.read_text())
        text = text.replace(f"cached: object = self.{native.HIDDEN_HASH}", "cached = None")
        path.write_text(assigned.sub(r"\1object.__setattr__(self, '\2', \3)", text))
    assert _settle(tmp_path, "copy") == _settle(native.ROOT, "source")


_FINDINGS = """
import pickle, sys
from kafkaspec.docs import scenario_findings
from kafkaspec.outcomes import FindingsCache
from spec import _compiled
from spec.scenarios import SCENARIOS_BY_NAME

assert _compiled.active() == (sys.argv[1] == "compiled"), _compiled.describe()
found = scenario_findings([SCENARIOS_BY_NAME[name] for name in sys.argv[2:]], FindingsCache())
sys.stdout.buffer.write(pickle.dumps([(item.outcome.result, item.witnesses) for item in found]))
"""


def _findings(what: str, environment: dict[str, str], names: list[str]) -> list[tuple[Any, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", _FINDINGS, what, *names],
        capture_output=True,
        env=environment,
        cwd=native.ROOT,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    found: list[tuple[Any, Any]] = pickle.loads(done.stdout)
    return found


def test_findings_of_the_compiled_spec_are_the_sources_once_unpickled():
    """`kafkaspec docs` run with the compiled spec computes the findings compiled and renders
    the pages in a process that runs the source, handing them over by pickle
    (`kafkaspec.docs._build_from_source`): unpickled there, the counterexamples and witness
    traces are those the source finds itself."""
    if _compiled.compiled_modules() is None:
        pytest.skip("no compiled build of this source (`make native`)")
    names = [*_SCENARIOS, "classic-zombie-commit-fenced", "classic-static-replaced"]
    default = {name: value for name, value in os.environ.items() if name != _compiled.SWITCH}
    compiled = _findings("compiled", default, names)
    source = _findings("source", {**default, _compiled.SWITCH: "0"}, names)
    assert any(witnesses for _, witnesses in source)
    for name, (compiled_result, compiled_witnesses), (result, witnesses) in zip(
        names, compiled, source, strict=True
    ):
        assert type(compiled_result.violation) is type(result.violation), name
        assert compiled_result.violation == result.violation, name
        assert (compiled_result.distinct_states, compiled_result.transitions) == (
            result.distinct_states,
            result.transitions,
        ), name
        assert compiled_witnesses == witnesses, name


def test_check_all_says_which_spec_ran(capsys, monkeypatch):
    monkeypatch.setattr(
        spec.scenarios, "SCENARIOS", (spec.scenarios.SCENARIOS_BY_NAME["classic-member-joins"],)
    )
    code, stdout, _ = run_cli(capsys, "check", "--all", "--workers", "1")
    assert code == 0
    assert "1/1 scenarios as expected in" in stdout
    assert "(spec: interpreted source (KAFKASPEC_NATIVE=0))" in " ".join(stdout.split())


def test_docs_with_the_compiled_spec_builds_in_a_process_that_runs_the_source(tmp_path, monkeypatch):
    """With the compiled spec loaded, `build_docs` checks the scenarios here and hands their
    findings to a process started with `KAFKASPEC_NATIVE=0`, whose refusal comes back as this
    process's `DocsError` (the whole site from the compiled spec: `make run`, by hand)."""
    pytest.importorskip("sphinx")
    from kafkaspec import docs
    from kafkaspec.outcomes import FindingsCache

    monkeypatch.setattr(_compiled, "active", lambda: True)
    scenario = spec.scenarios.SCENARIOS_BY_NAME["classic-member-joins"]
    monkeypatch.setattr(docs, "SCENARIOS", (scenario,))
    (tmp_path / "a-file").write_text("")
    said: list[str] = []
    cache = FindingsCache()
    with pytest.raises(docs.DocsError, match="cannot create"):
        docs.build_docs(tmp_path / "a-file" / "site", workers=1, say=said.append, cache=cache)
    assert said == ["checking 1 scenarios for their pages", "rendering the pages from the interpreted spec"]
    findings = cache.get(scenario)
    assert findings is not None and findings.complete  # checked here, then handed over


_PORCUPINE = Path(__file__).resolve().parents[3] / "shared" / "histories" / "porcupine" / "test_data"


def _verify_json(environment: dict[str, str], files: list[Path]) -> tuple[str, str]:
    arguments = ["-m", "kafkaspec.cli", "verify", "--json", "--workers", "1", *map(str, files)]
    done = _python(arguments, environment, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    code = (
        "import sys, spark_checks.linearizability as search, spec._compiled as c; "
        "print(search.__file__, c.describe())"
    )
    which = _python(["-c", code], environment)
    # Seconds differ from run to run; everything else is the verdicts and their evidence.
    return re.sub(r'("[a-z_]*seconds[a-z_]*"): [0-9.e+-]+', r"\1: 0", done.stdout), which.stdout


def test_the_compiled_search_gives_the_sources_verdicts_and_evidence():
    """The linearizability search is compiled in the same build (`spec._compiled.ALSO_COMPILED`):
    over Porcupine's etcd logs and three kv logs, `verify --json` says exactly what the source
    says, evidence included."""
    if _compiled.compiled_modules() is None:
        pytest.skip("no compiled build of this source (`make native`)")
    if not _PORCUPINE.is_dir():
        pytest.skip("Porcupine's logs are not beside the repository")
    files = sorted((_PORCUPINE / "jepsen").glob("*.log")) + [
        _PORCUPINE / "kv" / name for name in ("c01-bad.txt", "c01-ok.txt", "c10-ok.txt")
    ]
    default = {name: value for name, value in os.environ.items() if name != _compiled.SWITCH}
    compiled, compiled_which = _verify_json(default, files)
    source, source_which = _verify_json({**default, _compiled.SWITCH: "0"}, files)
    assert compiled_which.split()[0].endswith(EXTENSION_SUFFIXES[0]), compiled_which
    assert source_which.split()[0].endswith("linearizability.py"), source_which
    assert '"invalid"' in source and '"valid"' in source
    assert compiled == source


MEMOIZED = """
from __future__ import annotations

from spec._frozen import memoized

CALLS: list[tuple[object, ...]] = []


@memoized
def scaled(values: tuple[int, ...], factor: int) -> tuple[int, ...]:
    \"\"\"Every value times `factor`.\"\"\"
    CALLS.append((values, factor))
    return tuple(value * factor for value in values)


@memoized  # one argument: the memo's key is the argument itself
def doubled(values: tuple[int, ...]) -> tuple[int, ...]:
    CALLS.append((values,))
    return scaled(values, 2)


def replaced(items: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    return (*items[:index], value, *items[index + 1 :])


def kept(items: tuple[int, ...], index: int) -> tuple[int, ...]:
    return (*items[:index], items[index], *items[index + 2 :])
"""


def test_the_copy_memoizes_in_dictionaries_it_can_empty(monkeypatch):
    """A `@memoized` function of the copy is a lookup in a memo of its module (`new_memo`) in front
    of the function under another name: called again with equal arguments it answers the same
    object without calling it, and `clear_memos` empties every memo, as `cache_clear` empties an
    `lru_cache`. A tuple with one item replaced is built by `with_item`, with the display's
    meaning for any index; a display of another shape stays as it is."""
    text = native.transform(MEMOIZED)
    assert "@memoized" not in text
    assert "def _native_uncached_scaled(values: tuple[int, ...], factor: int)" in text
    assert "key: object = (values, factor,)" in text and "key: object = values" in text
    assert '"""Every value times `factor`."""' in text.split("def scaled(")[1]  # the docstring stays
    assert "return _native_with_item(items, index, value)" in text
    assert "return (*items[:index], items[index], *items[index + 2 :])" in text
    support = type(sys)("spec._native_support")
    exec(native.SUPPORT_SOURCE, vars(support))
    monkeypatch.setitem(sys.modules, "spec._native_support", support)
    namespace: dict[str, Any] = {"__name__": "copy"}
    exec(compile(text, "copy", "exec"), namespace)
    calls: list[tuple[object, ...]] = namespace["CALLS"]
    first = namespace["doubled"]((1, 2))
    again = namespace["doubled"]((1, 2))
    assert first == (2, 4) and again is first
    assert calls == [((1, 2),), ((1, 2), 2)]
    assert namespace["scaled"]((1, 2), 2) is first  # the inner call's memo
    support.clear_memos()
    assert namespace["doubled"]((1, 2)) == first and len(calls) == 4
    for index in (-4, -1, 0, 1, 2, 3, 7):
        assert namespace["replaced"]((1, 2, 3), index, 9) == (*(1, 2, 3)[:index], 9, *(1, 2, 3)[index + 1 :])
    memo = support.new_memo()
    for number in range(support.MEMO_SIZE + 1):
        support.remember(memo, number, number)
    assert memo == {support.MEMO_SIZE: support.MEMO_SIZE}  # emptied when full, as lru_cache is bounded


# Completions of a send or poll whose value is not what Jepsen's Kafka client writes (what the
# compiled stages read with annotations a malformed history does not keep): each one goes in a
# history of its own, among well-formed calls.
_ODD_VALUES: tuple[tuple[str, Any, Any], ...] = (
    ("send", [["send", 7, 1]], [["send", 7, [0, 1]]]),
    ("send", [["send", "x", 1]], [["send", "x", 1]]),
    ("send", [["send", "x", 1]], [["send", "x", [0, 1, 2]]]),
    ("send", [["send", "x", 1]], [["send", "x", [0]]]),
    ("send", [["send", "x", 1]], [["send", "x", [0.5, 1]]]),
    ("send", [["send", "x", 1]], [["send", "x", [None, 1]]]),
    ("send", [["send", "x", 1]], [["send", "x", {"0": 1}]]),
    ("send", [["send", "x", 1]], [["send", "x"]]),
    ("send", [["send", "x", 1]], [["send"]]),
    ("send", [["send", "x", 1]], [[]]),
    ("send", [["send", "x", 1]], ["send", "x", [0, 1]]),
    ("send", [["send", "x", 1]], "sent"),
    ("send", [["send", "x", 1]], 5),
    ("send", [["send", "x", 1]], {"x": 1}),
    ("send", [["send", ["x"], 1]], [["send", ["x"], [0, 1]]]),
    ("send", [["send", {"k": 1}, 1]], [["send", {"k": 1}, [0, 1]]]),
    ("send", [["send", None, 1]], [["send", None, [0, 1]]]),
    ("send", [["send", True, 1]], [["send", True, [0, 1]]]),
    ("send", [["send", "x", [1, 2]]], [["send", "x", [0, [1, 2]]]]),
    ("send", [["send", "x", {"v": 1}]], [["send", "x", [0, {"v": 1}]]]),
    ("send", [["send", "x", 1], ["send", "y"]], [["send", "x", [0, 1]], ["send", "y"]]),
    ("send", [["send", "x", 1], ["send", 7, 2]], [["send", "x", [0, 1]], ["send", 7, [0, 2]]]),
    ("send", [["send", "x", 1], ["poll"]], [["send", "x", [0, 1]], ["poll", {"x": [[0, 1]]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[0, 1]], "y": [[3, 4]], "z": []}]]),
    ("poll", [["poll"]], [["poll", {}]]),
    ("poll", [["poll"]], [["poll"]]),
    ("poll", [["poll"]], [["poll", None]]),
    ("poll", [["poll"]], [["poll", {"x": [[0, 1]]}, "extra"]]),
    ("poll", [["poll"]], [["poll", {"x": "not pairs"}]]),
    ("poll", [["poll"]], [["poll", {"x": [0, 1]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[0]]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[0, 1, 2]]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[None, 1]]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[1, 1], [0, 1]]}]]),
    ("poll", [["poll"]], [["poll", {"x": [[0, [1]]]}]]),
    ("poll", [["poll"]], [["poll", {"x": None}]]),
    ("poll", [["poll"]], [["poll", {"x": {"0": 1}}]]),
    ("poll", [["poll"]], [["poll", [["x", 1]]]]),
    ("poll", [["poll"]], [[1, 2]]),
    ("poll", [["poll"]], [[None]]),
    ("poll", [["poll"]], 5),
    ("poll", [["poll"]], []),
    ("poll", [["poll"]], None),
    ("txn", [["send", "x", 1], ["poll"]], [["send", "x", [0, 1]], ["poll", {"x": "pairs"}]]),
    ("txn", [["send", "x", 1], ["poll"]], [["send", "x", 1, 2], ["poll", {"y": [[0, 2]]}]]),
    ("assign", ["x", "y"], ["x", "y"]),
    ("assign", "x", "x"),
    ("assign", [["x"]], [["x"]]),
    ("assign", None, None),
    ("subscribe", [1, "x"], [1, "x"]),
)
"""(function, invocation's value, completion's value)."""

# Lines whose fields have types no Kafka client writes: each replaces a well-formed line.
_ODD_FIELDS: tuple[dict[str, Any], ...] = (
    {"index": "3", "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3.5, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": None, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": [1], "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": {"p": 1}, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1.5, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": True, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1, "type": 7, "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1, "type": "bogus", "f": "send", "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1, "type": "ok", "f": 7, "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1, "type": "ok", "f": None, "value": [["send", "x", [1, 5]]]},
    {"index": 3, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]], "time": "t"},
    {"index": 3, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]], "time": 1.5},
    {"index": 3, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]], "time": [1]},
    {"index": 3, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]], "key": "x"},
    {"index": 3, "process": 1, "type": "ok", "f": "send"},
    {"index": 3, "process": 1, "type": "ok"},
    {"process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]]},
)


def _kafka_lines(
    odd_completion: dict[str, Any] | None = None, odd: tuple[str, Any, Any] | None = None
) -> list[dict[str, Any]]:
    """A small Kafka history as JSON lines: sends and polls of x and y, a transaction; with
    `odd`'s call after the first send, or `odd_completion` in place of the second send's
    completion (index 3)."""
    lines: list[dict[str, Any]] = [
        {"index": 0, "process": 0, "type": "invoke", "f": "send", "value": [["send", "x", 4]], "time": 10},
        {"index": 1, "process": 0, "type": "ok", "f": "send", "value": [["send", "x", [0, 4]]], "time": 11},
        {"index": 2, "process": 1, "type": "invoke", "f": "send", "value": [["send", "x", 5]], "time": 12},
        {"index": 3, "process": 1, "type": "ok", "f": "send", "value": [["send", "x", [1, 5]]], "time": 13},
    ]
    if odd_completion is not None:
        lines[3] = {**odd_completion, **({"time": 13} if "time" not in odd_completion else {})}
    more: list[dict[str, Any]] = []
    if odd is not None:
        f, given, done = odd
        for kind in ("ok", "info", "fail"):
            more += [
                {"process": 3, "type": "invoke", "f": f, "value": given},
                {"process": 3, "type": kind, "f": f, "value": done},
            ]
    more += [
        {"process": 2, "type": "invoke", "f": "txn", "value": [["send", "y", 6], ["poll"]]},
        {"process": 2, "type": "ok", "f": "txn", "value": [["send", "y", [0, 6]], ["poll", {"x": [[0, 4]]}]]},
        {"process": 0, "type": "invoke", "f": "poll", "value": [["poll"]]},
        {
            "process": 0,
            "type": "ok",
            "f": "poll",
            "value": [["poll", {"x": [[0, 4], [1, 5]], "y": [[0, 6]]}]],
        },
    ]
    for number, line in enumerate(more, start=len(lines)):
        lines.append({"index": number, **line, "time": 10 + number})
    return lines


def _kafka_histories(folder: Path) -> list[Path]:
    """Kafka histories of every shape the compiled stages read: generated (the bench's shape
    and Jepsen's, with anomalies, as JSON Lines, EDN and Parquet), the peer suites' (Jepsen's
    own deftests as restated there), Maelstrom's fixtures, and malformed ones."""
    from bench.verify_scale import JEPSEN_SHAPE
    from spark_checks.history import Operation, OpType
    from spark_checks.kafka_histories import generate_history
    from spark_checks.readers import write_edn, write_jsonl, write_parquet
    from tests.spark_checks import test_jepsen_parity as parity
    from tests.spark_checks.test_peer_suites_kafka import PARITY_HISTORIES

    files: list[Path] = []
    injected = ["lost-write", "duplicate", "poll-skip", "nonmonotonic-poll", "inconsistent-offsets"]
    for shape, options in (("bench", {}), ("jepsen", JEPSEN_SHAPE)):
        operations = list(generate_history(600, 8, seed=5, anomalies=injected, **options))
        for suffix, write in ((".jsonl", write_jsonl), (".edn", write_edn), (".parquet", write_parquet)):
            files.append(folder / f"{shape}{suffix}")
            write(files[-1], operations)
    for number, (build, _) in enumerate(value for _, value in sorted(PARITY_HISTORIES.items())):
        files.append(folder / f"peer-{number}.jsonl")
        parity.write_jsonl(files[-1], build())
    files += sorted(
        (Path(__file__).resolve().parents[1] / "spark_checks" / "data" / "maelstrom").glob("*.edn")
    )
    for number, odd in enumerate(_ODD_VALUES):
        lines = _kafka_lines(odd=odd)
        operations = [
            Operation(
                line["index"],
                line["process"],
                OpType(line["type"]),
                line["f"],
                line["value"],
                None,
                line["time"],
            )
            for line in lines
        ]
        for suffix, write in ((".jsonl", write_jsonl), (".edn", write_edn), (".parquet", write_parquet)):
            files.append(folder / f"odd-value-{number}{suffix}")
            write(files[-1], operations)
    for number, odd_line in enumerate(_ODD_FIELDS):
        files.append(folder / f"odd-field-{number}.jsonl")
        files[-1].write_text("".join(json.dumps(line) + "\n" for line in _kafka_lines(odd_line)))
    broken = "".join(json.dumps(line) + "\n" for line in _kafka_lines())
    (folder / "truncated.jsonl").write_text(broken[: broken.index("\n", 200) - 3] + "\n" + broken)
    (folder / "not-an-object.jsonl").write_text("[1, 2]\n" + broken)
    files += [folder / "truncated.jsonl", folder / "not-an-object.jsonl"]
    return files


def _verify_all(environment: dict[str, str], files: list[Path]) -> tuple[int, str, str]:
    """`verify --json` of `files` in one command (each file's bad input is its own line of the
    output, `bad_input`): exit code, output with the seconds zeroed, error output."""
    arguments = ["-m", "kafkaspec.cli", "verify", "--json", "--workers", "2", *map(str, files)]
    done = _python(arguments, environment, check=False)
    assert done.returncode in (0, 1, 2), done.stderr[-2000:]
    return (
        done.returncode,
        re.sub(r'("[a-z_]*seconds[a-z_]*"): [0-9.e+-]+', r"\1: 0", done.stdout),
        done.stderr,
    )


_STAGES = """
import json, pickle, sys
from spark_checks import checking, distributed, kafka_checker
from spark_checks.history import Call, Outcome
from spec import _compiled
calls = [
    Call(1, "assign", ["x"], ["x"], Outcome.OK, 0, 1),
    Call(2, "subscribe", ["y"], None, Outcome.INFO, 2, None),
]
assignments = pickle.loads(pickle.dumps(kafka_checker.Assignments(calls)))
plan = checking.Plan("kafka")
print(json.dumps([
    [module.__file__ for module in (distributed, kafka_checker)],
    [
        assignments.calls == tuple(calls),
        assignments.orders == kafka_checker.Assignments(calls).orders,
        assignments.names(1, 0) == {"x"},
    ],
    pickle.loads(pickle.dumps(plan)) == plan,
    _compiled.describe(),
]))
"""


def test_the_compiled_stages_give_the_sources_verdicts_evidence_and_errors(tmp_path: Path) -> None:
    """The stages of `kafkaspec verify` are compiled in the same build (`ALSO_COMPILED`): over
    Kafka histories of every shape (generated, Jepsen's own, Maelstrom's, malformed values and
    fields in the three formats), `verify --json` says exactly what the source says: verdicts,
    evidence, and each bad input's one-line error (mypyc checks annotations at run time, where
    the source goes on to its "bad input" path). What crosses to worker processes pickles."""
    if _compiled.compiled_modules() is None:
        pytest.skip("no compiled build of this source (`make native`)")
    files = _kafka_histories(tmp_path)
    default = {name: value for name, value in os.environ.items() if name != _compiled.SWITCH}
    compiled = _verify_all(default, files)
    source = _verify_all({**default, _compiled.SWITCH: "0"}, files)
    report = json.loads(source[1])
    assert report["summary"]["histories"] == len(files)
    assert report["summary"]["bad_input"] > 50 and report["summary"]["invalid"] > 10
    assert report["summary"]["valid"] > 0
    assert compiled == source
    compiled_files, pickled, plan_pickled, said = json.loads(_python(["-c", _STAGES], default).stdout)
    assert all(path.endswith(EXTENSION_SUFFIXES[0]) for path in compiled_files), compiled_files
    assert pickled == [True, True, True] and plan_pickled
    assert said == "compiled with mypyc"


_NO_CYCLES = """
import gc, json, sys
from collections import Counter, defaultdict
from spark_checks import distributed, linearizability
from spark_checks.checking import Plan
from spark_checks.history import Call, Outcome
from spec import _compiled

gc.disable()
gc.set_debug(gc.DEBUG_SAVEALL)
plan, path, parts = Plan("kafka"), sys.argv[1], defaultdict(list)
with open(path, "rb") as handle:
    ops = distributed.jsonl_ops([handle.readlines()], path, 1, 0)
    for kind, part, _, _, payload in distributed.stage1_rows(plan, [(0, ops)], path):
        if kind == distributed.CALLS:
            parts[part].append(payload)
context = distributed.subscriptions_context(parts.pop(distributed.SUBSCRIPTIONS_PART, ()), None)
shared = (plan.with_kafka_context(context), context, None)
answers = [distributed._check_part(shared, name, payloads, None) for name, payloads in parts.items()]
register = [
    Call(0, "write", 1, None, Outcome.OK, 0, 1),
    Call(1, "read", None, 2, Outcome.OK, 2, 3),
]
searched = linearizability.check_partition(register, "register")
gc.collect()
print(json.dumps([
    _compiled.describe(),
    sorted(answer.result.verdict.value for answer in answers if answer.result is not None),
    searched.verdict.value,
    Counter(type(thing).__name__ for thing in gc.garbage).most_common(5),
]))
"""


def test_the_compiled_stages_leave_no_cyclic_garbage(tmp_path: Path) -> None:
    """Stage 2 runs with the cyclic collector off (`distributed.no_cyclic_gc`), so whatever it
    leaves in a reference cycle stays until the collector is back on, which then scans it all:
    a closure in a compiled function is such a cycle (it and its environment refer to each
    other), and `_analyze_key`'s kept every key's state so (10^7 operations on Spark: 17 CPU-s
    of collections). Compiled, checking a Kafka history's parts and a register's calls leaves
    no garbage in a cycle. (`check_rows`' progress closures keep the task's payloads, which it
    holds to its end anyway.)"""
    if _compiled.compiled_modules() is None:
        pytest.skip("no compiled build of this source (`make native`)")
    from spark_checks.kafka_histories import generate_history
    from spark_checks.readers import write_jsonl

    path = tmp_path / "kafka.jsonl"
    write_jsonl(path, generate_history(600, 8, seed=5, anomalies=["lost-write", "duplicate", "poll-skip"]))
    default = {name: value for name, value in os.environ.items() if name != _compiled.SWITCH}
    said, verdicts, searched, garbage = json.loads(_python(["-c", _NO_CYCLES, str(path)], default).stdout)
    assert said == "compiled with mypyc"
    assert len(verdicts) == 9 and "invalid" in verdicts  # 8 keys and the whole history, checked
    assert searched == "invalid"
    assert garbage == []


def test_spark_checks_names_the_modules_the_build_compiles() -> None:
    """`spark_checks.COMPILED` (what its finder asks the build for) is `ALSO_COMPILED`."""
    import spark_checks

    also = {name.removesuffix(".py").replace("/", ".") for name in _compiled.ALSO_COMPILED}
    assert also == spark_checks.COMPILED


STAGE_MODULE = '''"""A stage module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


@dataclass(frozen=True)
class Plan:
    model: str


@dataclass
class Tally:
    count: int


class Walk:
    __slots__ = ("done",)


class Facts(NamedTuple):
    index: int


class Calls(Sequence[int]):
    pass


class Refused(ValueError):
    pass


class Stop(Exception):
    pass
'''


def test_the_copy_of_a_stage_module_leaves_native_only_what_mypyc_keeps_native() -> None:
    """Frozen dataclasses (pickled to workers, `dataclasses.replace`d) and subclasses of what
    mypyc cannot subclass natively are marked non-native; the rest is unchanged."""
    copy = native.also_compiled_copy(STAGE_MODULE)
    marked = [
        line
        for previous, line in zip(copy.splitlines(), copy.splitlines()[1:], strict=False)
        if previous == native._NON_NATIVE
    ]
    assert marked == ["@dataclass(frozen=True)", "class Calls(Sequence[int]):", "class Refused(ValueError):"]
    assert "from mypy_extensions import mypyc_attr" in copy
    assert copy.replace(native._NON_NATIVE + "\n", "").replace(
        "from mypy_extensions import mypyc_attr\n", ""
    ) == (STAGE_MODULE)
    assert native.also_compiled_copy('"""Plain."""\n\nfrom __future__ import annotations\n') == (
        '"""Plain."""\n\nfrom __future__ import annotations\n'
    )
