"""Import the spec's modules compiled to C by `python -m kafkaspec.native` (mypyc), when asked
and when they were built from the source as it is now.

The compiled modules live apart from the source (`build/native/`), so a stale build can never
shadow an edited module: the build's manifest records a digest of every `spec/**/*.py`, and
they are used only when it equals the source's digest. They are used only with
`KAFKASPEC_NATIVE=1` in the environment: the model checker then runs 2.5-3x faster
(`bench.model_check`), but what introspects the spec's functions (`kafkaspec docs` shows
their source, CrossHair symbolically executes them, coverage and debuggers trace them) needs
the interpreted source, which is the default. All or nothing: compiled modules call each
other directly in C, so a mix of compiled and interpreted modules is never loaded.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

PACKAGE = Path(__file__).resolve().parent
BUILD = PACKAGE.parent / "build" / "native"
MANIFEST = BUILD / "manifest.json"
SWITCH = "KAFKASPEC_NATIVE"


def source_digest(package: Path = PACKAGE) -> str:
    """SHA-256 of every module of the package (path and content, in path order)."""
    import hashlib  # here, not at the top: `import spec` should not pay for it unless asked

    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class CompiledFinder:
    """Finds the compiled extension module of each name the build's manifest lists."""

    def __init__(self, modules: dict[str, Path]) -> None:
        self.modules = modules

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        import importlib.util

        location = self.modules.get(fullname)
        return None if location is None else importlib.util.spec_from_file_location(fullname, location)


def compiled_modules() -> dict[str, Path] | None:
    """The compiled module of each name, when a build exists for this interpreter and matches
    the source; None otherwise."""
    import json

    try:
        manifest = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("cache_tag") != sys.implementation.cache_tag or manifest.get("digest") != source_digest():
        return None
    modules = {name: BUILD / relative for name, relative in manifest["modules"].items()}
    return modules if all(path.exists() for path in modules.values()) else None


def install() -> bool:
    """Import the spec's modules from the compiled build from now on, if asked
    (`KAFKASPEC_NATIVE=1`) and the build is current; True when it will."""
    if os.environ.get(SWITCH) != "1" or any(isinstance(item, CompiledFinder) for item in sys.meta_path):
        return False
    modules = compiled_modules()
    if modules is None:
        # asked for, yet absent or built from another source: say so once, run the source
        print(
            f"kafkaspec: {SWITCH}=1 but no compiled spec matches the source ({MANIFEST}): "
            "running the interpreted spec; `make native` builds it",
            file=sys.stderr,
        )
        return False
    sys.meta_path.insert(0, CompiledFinder(modules))
    return True
