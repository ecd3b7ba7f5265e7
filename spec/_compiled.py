"""Import the spec's modules compiled to C by `python -m kafkaspec.native` (mypyc) when a build
of the source as it is now exists; the interpreted source otherwise.

The compiled spec is the default, as black and mypy ship their own code compiled with mypyc:
the model checker runs it 2.5-3x faster (`bench.model_check`), with the same states,
transitions and counterexamples (`tests/spec/test_native.py`). `make run` and `make test`
build it when they install (`build/native/`); without a C compiler the source runs.
`KAFKASPEC_NATIVE` in the environment chooses:

* unset (or any other value): the build when it matches the source, else the source, silently;
* `0`: the source. What introspects the spec's functions needs it: `kafkaspec docs` shows their
  source (it renders its pages in a process started with `0`), CrossHair executes them
  symbolically, the tests that monkeypatch a spec function (compiled callers never look it up)
  run with it (`tests/conftest.py`), and so do coverage and debuggers;
* `1`: the build, demanded: when it is missing or stale, one line on stderr, and the source runs.

The compiled modules live apart from the source, so a stale build never shadows an edited
module: the build's manifest records a digest of every `spec/**/*.py` but this loader (never
compiled), and the build is used only while it equals the source's digest. Hashing 2 MB of
source (and importing hashlib and json to do it) would cost every `import spec` about 9 ms, so
the check first compares what `os.stat` says of each source file (size, modification and change
times, inode) with a record of them taken when the digest last matched (`SOURCE_STATS`, written
by `python -m kafkaspec.native`), as git compares its index with the work tree; at any
difference the digest decides. All or nothing: compiled modules call each other directly in C,
so a mix of compiled and interpreted modules is never loaded.
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
SOURCE_STATS = BUILD / "source-stats.tsv"
SWITCH = "KAFKASPEC_NATIVE"
_RECENT_NS = 3_000_000_000
"""No record is written while a source file is this fresh: an edit in the same tick of a coarse
file-system clock could leave its stats unchanged (git's "racy" files); the digest decides."""
LOADER = Path(__file__).name
"""This module: interpreted always (`kafkaspec.native` does not compile it), and left out of the
digest, so that an edit to it does not make the build stale."""


def source_digest(package: Path = PACKAGE) -> str:
    """SHA-256 of every module of the package but the loader (path and content, in path order)."""
    import hashlib  # here, not at the top: `import spec` should not pay for it unless asked

    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if name != LOADER:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _stat_key(status: os.stat_result) -> str:
    """What changes when a file is written, replaced or touched."""
    return f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} {status.st_ino}"


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


def _present(modules: dict[str, Path]) -> dict[str, Path] | None:
    return modules if all(os.path.exists(path) for path in modules.values()) else None


def _source_stats(package: Path) -> dict[str, str]:
    """The `_stat_key` of each module of the package (the files `source_digest` reads), by its
    path from the package. `os.walk`, not `Path.rglob`: ten times cheaper here."""
    stats: dict[str, str] = {}
    prefix = len(str(package)) + 1
    for folder, _, names in os.walk(package):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                stats[path[prefix:].replace(os.sep, "/")] = _stat_key(os.stat(path))
    stats.pop(LOADER, None)
    return stats


def _recorded_modules(package: Path) -> dict[str, Path] | None:
    """The build's modules when `SOURCE_STATS` records the manifest and every source file as
    `os.stat` sees them now; None when anything differs (the digest then decides)."""
    try:
        header, *rows = SOURCE_STATS.read_text().splitlines()
        if header != f"{sys.implementation.cache_tag}\t{_stat_key(MANIFEST.stat())}":
            return None
        sources: dict[str, str] = {}
        modules: dict[str, Path] = {}
        for row in rows:
            kind, name, value = row.split("\t")
            if kind == "source":
                sources[name] = value
            else:
                modules[name] = BUILD / value
        if sources != _source_stats(package):
            return None
    except (OSError, ValueError):
        return None
    return _present(modules)


def _manifest() -> dict[str, object] | None:
    try:
        text = MANIFEST.read_text()  # before importing json: no build, no cost
    except OSError:
        return None
    import json

    try:
        manifest = json.loads(text)
    except ValueError:
        return None
    return manifest if isinstance(manifest, dict) else None


def compiled_modules(package: Path = PACKAGE) -> dict[str, Path] | None:
    """The compiled module of each name, when a build exists for this interpreter and matches
    the source; None otherwise."""
    recorded = _recorded_modules(package)
    if recorded is not None:
        return recorded
    manifest = _manifest()
    if manifest is None or manifest.get("cache_tag") != sys.implementation.cache_tag:
        return None
    if manifest.get("digest") != source_digest(package):
        return None
    listed = manifest.get("modules")
    return (
        _present({str(name): BUILD / str(where) for name, where in listed.items()})
        if isinstance(listed, dict)
        else None
    )


def record_source_stats(package: Path = PACKAGE) -> bool:
    """Record each source file's stats in `SOURCE_STATS` when the build matches the source (True
    then), so that later imports check the build with `os.stat` alone; remove the record
    otherwise. The stats are taken before the digest reads the files: a file written since has
    other stats, and the digest decides for it."""
    import time

    SOURCE_STATS.unlink(missing_ok=True)
    try:
        manifest_key = _stat_key(MANIFEST.stat())
        stats = {name: (package / name).stat() for name in sorted(_source_stats(package))}
    except OSError:
        return False
    manifest = _manifest()
    if manifest is None or manifest.get("cache_tag") != sys.implementation.cache_tag:
        return False
    listed = manifest.get("modules")
    if manifest.get("digest") != source_digest(package) or not isinstance(listed, dict):
        return False
    recent = time.time_ns() - _RECENT_NS
    if any(max(status.st_mtime_ns, status.st_ctime_ns) > recent for status in stats.values()):
        return True  # matches, but some file is too fresh to trust its stats: the digest decides
    rows = [f"{sys.implementation.cache_tag}\t{manifest_key}"]
    rows += [f"source\t{name}\t{_stat_key(status)}" for name, status in stats.items()]
    rows += [f"module\t{name}\t{where}" for name, where in listed.items()]
    scratch = SOURCE_STATS.with_suffix(".tmp")
    scratch.write_text("\n".join(rows) + "\n")
    scratch.replace(SOURCE_STATS)
    return True


def install() -> bool:
    """Import the spec's modules from the compiled build from now on when it matches the source,
    unless `KAFKASPEC_NATIVE=0`; True when it will."""
    choice = os.environ.get(SWITCH)
    if choice == "0" or active():
        return False
    modules = compiled_modules()
    if modules is None:
        if choice == "1":  # demanded, yet absent or built from another source: say so once
            print(
                f"kafkaspec: {SWITCH}=1 but no compiled spec matches the source ({MANIFEST}): "
                "running the interpreted spec; `make native` builds it",
                file=sys.stderr,
            )
        return False
    sys.meta_path.insert(0, CompiledFinder(modules))
    return True


def active() -> bool:
    """This process imports the spec's modules from the compiled build."""
    return any(isinstance(finder, CompiledFinder) for finder in sys.meta_path)


def describe() -> str:
    """Which spec this process runs, and why, in a few words (`kafkaspec check --all`,
    `bench.model_check`)."""
    if active():
        return "compiled with mypyc"
    if os.environ.get(SWITCH) == "0":
        return f"interpreted source ({SWITCH}=0)"
    if not MANIFEST.exists():
        return "interpreted source (no compiled build: `make native`)"
    return "interpreted source (the compiled build is stale: `make native`)"
