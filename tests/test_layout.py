"""The layout's import rules (README, Layout), checked on the source: the spec is standard
library only, impl/ takes only plain types from it, and so on."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLAIN_TYPES = re.compile(r"spec(\.\w+)?\.types(\..+)?")


def imports_of(path: Path) -> set[str]:
    """Dotted names of every module `path` imports at run time (absolute imports only;
    imports under `if TYPE_CHECKING:` exist only for the type checker and are skipped)."""
    tree = ast.parse(path.read_text(), str(path))
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for statement in node.body
        for inner in ast.walk(statement)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("path", files("spec"), ids=lambda path: path.name)
def test_spec_imports_only_the_standard_library(path):
    for name in imports_of(path):
        top = name.split(".")[0]
        assert top in sys.stdlib_module_names or top == "spec", f"{path.name} imports {name}"


@pytest.mark.parametrize("path", files("impl"), ids=lambda path: path.name)
def test_impl_imports_only_plain_data_from_spec(path):
    for name in imports_of(path):
        top = name.split(".")[0]
        if top == "spec":
            # plain data only: `spec.types` and a state machine package's `types` module
            assert PLAIN_TYPES.fullmatch(name), f"{path.name} imports spec logic: {name}"
        else:
            assert top in sys.stdlib_module_names or top == "impl", f"{path.name} imports {name}"


@pytest.mark.parametrize("path", files("reference"), ids=lambda path: path.name)
def test_reference_builds_only_on_spec(path):
    for name in imports_of(path):
        top = name.split(".")[0]
        assert top in sys.stdlib_module_names or top in {"spec", "reference"}, f"{path.name} imports {name}"


@pytest.mark.parametrize("path", files("spark_checks"), ids=lambda path: path.name)
def test_checking_algorithms_do_not_import_pyspark(path):
    if path.name in {"engine.py", "spark_session.py", "spark_read.py"}:
        return  # the engine (and spark_read, its reading half) is where Spark reads, ships and gathers
    for name in imports_of(path):
        assert not name.startswith("pyspark"), f"{path.name} imports {name}"
        if path.name == "__init__.py" and name in {"spec", "spec._compiled"}:
            continue  # the loader alone: it imports the search compiled where built (`ALSO_COMPILED`)
        assert name.split(".")[0] not in {"spec", "impl", "conformance"}, f"{path.name} imports {name}"


def test_nothing_imports_tests_or_conformance_from_the_product():
    for package in ("spec", "reference", "impl", "spark_checks"):
        for path in files(package):
            for name in imports_of(path):
                assert name.split(".")[0] not in {"tests", "conformance"}, f"{path} imports {name}"


def test_the_cli_fronts_the_conformance_suite_but_never_imports_tests():
    # `kafkaspec conformance` is the suite's command, so the CLI alone may import it.
    for path in files("kafkaspec"):
        for name in imports_of(path):
            assert name.split(".")[0] != "tests", f"{path} imports {name}"
            if name.split(".")[0] == "conformance":
                assert path.name == "cli.py", f"{path} imports {name}"
