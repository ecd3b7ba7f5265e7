"""Import the spec's modules compiled to C by `python -m kafkaspec.native` (mypyc) when a build
of the source as it is now exists; the interpreted source otherwise.

The compiled spec is the default, as black and mypy ship their own code compiled with mypyc:
the model checker runs it 2.5-4x faster (`bench.model_check`), with the same states,
transitions and counterexamples (`tests/spec/test_native.py`). The same build compiles the
linearizability search and the Kafka stages of `kafkaspec verify` (`ALSO_COMPILED`;
`spark_checks` asks this loader for them), which this switch and the digest govern alike.
`make run` and `make test` build it when they install (`build/native/`); without a C compiler
the source runs.
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
source (and importing hashlib and json to do it) would cost every `import spec` 51 M
instructions (10-15 ms), 30 times what `import spec` cost before, so the check first compares
what `os.stat` says of each source file (size, modification and change times, inode) with a
record of them taken when the digest last matched (`SOURCE_STATS`, written by
`python -m kafkaspec.native`), as git compares its index with the work tree: 2 M instructions;
at any difference the digest decides. All or nothing: compiled modules call each other directly in C,
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
file-system clock could leave its stats unchanged (git's "racy" files)."""
LOADER = Path(__file__).name
"""This module: interpreted always (`kafkaspec.native` does not compile it), and left out of the
digest, so that an edit to it does not make the build stale."""
ALSO_COMPILED = (
    "spark_checks/linearizability.py",
    "spark_checks/distributed.py",
    "spark_checks/kafka_checker.py",
    "spark_checks/readers/_common.py",
    "spark_checks/readers/edn_fast.py",
    "spark_checks/readers/parquet.py",
)
"""Modules outside the spec compiled in the same build, by their paths beside the spec's folder
(`kafkaspec.native.also_compiled_copy` marks the few classes that stay Python classes):

* the linearizability search (`kafkaspec verify`'s Wing & Gong / Lowe search), whose median
  check of Porcupine's logs costs 29% less CPU compiled (0.209 -> 0.149 ms; callgrind 1.607 M
  -> 1.105 M instructions, the 12 etcd logs around the median);
* the stages both engines run over a Kafka history (`spark_checks.distributed`: reading,
  pairing, splitting; `kafka_checker`: the per-key and whole-history checks; the readers'
  `edn_fast`, `parquet` and `_common`), which run in the local engine's workers and in Spark's
  Python workers alike. The local engine at 10^6 operations (`kafkaspec verify --engine local
  --json`), CPU seconds of every process, the stages compiled against their source side by
  side, one run each at load 7-10: the bench's shape as JSON Lines 23.2 -> 17.6 (-24%), EDN
  31.1 -> 27.5 (-12%), Parquet 30.2 -> 25.1 (-17%); Jepsen's shape as JSON Lines 30.3 -> 24.9
  (-18%); identical output. The Spark engine at 10^6 (`bench.verify_scale --sizes 1000000
  --shapes bench`, compiled run first, load 6-9 against 9-14), CPU seconds of Spark's Python
  workers: JSON Lines 20.8 -> 14.2, EDN 31.4 -> 21.3, Parquet 21.0 -> 17.1 (all processes 30.7
  -> 21.2, 41.7 -> 29.3, 31.4 -> 26.2). They handle values as JSON (`Any`) and calls as
  Python objects (`history.Call`), which is why they gain less than the spec. Not compiled:
  `checking` (per part, not per call; its `Sequence` subclass cannot be native), `history`
  (`Call`'s slot-setting constructor is the interpreter's), `readers.jsonl` (0.2% of the
  JSON Lines stages' profile: `distributed.jsonl_ops` reads the lines).

They are in the digest like the spec's (an edit to one of them leaves the whole build stale,
the spec's modules too, until `make native`), and `spark_checks` installs this loader for
them (`spark_checks.COMPILED`)."""


def source_digest(package: Path = PACKAGE) -> str:
    """SHA-256 of every module of the package but the loader (path and content, in path order;
    bytecode caches are not modules)."""
    import hashlib  # here, not at the top: `import spec` should not pay for it unless asked

    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        if name != LOADER and "__pycache__" not in path.parts:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    for also in _also_compiled(package):
        digest.update(f"../{also.relative_to(package.parent).as_posix()}".encode() + b"\0")
        digest.update(also.read_bytes() + b"\0")
    return digest.hexdigest()


def _also_compiled(package: Path) -> list[Path]:
    """The `ALSO_COMPILED` modules beside `package` (a test's stand-in package has none)."""
    return [package.parent / name for name in ALSO_COMPILED if (package.parent / name).exists()]


def _stat_key(status: os.stat_result) -> str:
    """What changes when a file is written, replaced or touched."""
    return f"{status.st_size} {status.st_mtime_ns} {status.st_ctime_ns} {status.st_ino}"


class CompiledFinder:
    """Finds the compiled extension module of each name the build's manifest lists."""

    def __init__(self, modules: dict[str, str]) -> None:
        self.modules = modules

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        import importlib.util

        location = self.modules.get(fullname)
        return None if location is None else importlib.util.spec_from_file_location(fullname, location)


def _sources(package: Path) -> list[tuple[str, os.stat_result]]:
    """Each module of the package that `source_digest` reads, with what `os.stat` says of it, as
    `os.walk` finds them (plain strings: `Path.rglob` would cost `import spec` ten times more)."""
    loader = os.path.join(package, LOADER)
    found: list[tuple[str, os.stat_result]] = []
    for folder, subfolders, names in os.walk(package):
        if "__pycache__" in subfolders:
            subfolders.remove("__pycache__")
        paths = (os.path.join(folder, name) for name in names if name.endswith(".py"))
        found.extend((path, os.stat(path)) for path in paths if path != loader)
    for name in ALSO_COMPILED:
        path = os.path.join(os.path.dirname(package), name)
        if os.path.exists(path):  # as `_also_compiled`
            found.append((path, os.stat(path)))
    return found


def _stats_line(paths: list[tuple[str, os.stat_result]]) -> str:
    return "\t".join(f"{path} {_stat_key(status)}" for path, status in paths)


def _folders(modules: dict[str, str]) -> list[tuple[str, os.stat_result]]:
    """The folders of the compiled modules: removing or renaming a module changes their stats."""
    return [
        (folder, os.stat(folder)) for folder in sorted({os.path.dirname(path) for path in modules.values()})
    ]


def _recorded_modules(package: Path) -> dict[str, str] | None:
    """The build's modules when `SOURCE_STATS` records the manifest, every source file and the
    modules' folders as `os.stat` sees them now; None when anything differs (the digest then
    decides)."""
    try:
        header, sources, folders, *rows = SOURCE_STATS.read_text().split("\n")
        if header != f"{sys.implementation.cache_tag}\t{_stat_key(MANIFEST.stat())}":
            return None
        if sources != _stats_line(_sources(package)):
            return None
        modules: dict[str, str] = dict(row.split("\t") for row in rows)
        return modules if folders == _stats_line(_folders(modules)) else None
    except (OSError, ValueError):
        return None


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


def _digested_modules(package: Path) -> dict[str, str] | None:
    """The build's modules when its manifest's digest is the source's (and they exist)."""
    manifest = _manifest()
    if manifest is None or manifest.get("cache_tag") != sys.implementation.cache_tag:
        return None
    listed = manifest.get("modules")
    if manifest.get("digest") != source_digest(package) or not isinstance(listed, dict):
        return None
    modules = {str(name): os.path.join(BUILD, str(where)) for name, where in listed.items()}
    return modules if all(os.path.exists(path) for path in modules.values()) else None


def compiled_modules(package: Path = PACKAGE) -> dict[str, str] | None:
    """The compiled module of each name, when a build exists for this interpreter and matches
    the source; None otherwise."""
    return _recorded_modules(package) or _digested_modules(package)


def record_source_stats(package: Path = PACKAGE) -> bool:
    """Record in `SOURCE_STATS` what `os.stat` says of each source file, of the manifest and of
    the compiled modules' folders when the build matches the source (True then), so that later
    imports check the build with `os.stat` alone; remove the record otherwise. The stats are
    taken before the digest reads the files: a file written since has other stats, and the
    digest decides for it. A file changed within `_RECENT_NS` is waited for (a few seconds)."""
    import time

    SOURCE_STATS.unlink(missing_ok=True)
    for attempt in range(2):
        try:
            manifest_key = _stat_key(MANIFEST.stat())
            sources = _sources(package)
        except OSError:
            return False
        freshest = max((max(status.st_mtime_ns, status.st_ctime_ns) for _, status in sources), default=0)
        wait = freshest + _RECENT_NS - time.time_ns()
        if wait <= 0:
            break
        if attempt:
            return _digested_modules(package) is not None  # still changing: the digest decides
        time.sleep(min(wait, _RECENT_NS) / 1e9)
    modules = _digested_modules(package)
    if modules is None:
        return False
    rows = [f"{sys.implementation.cache_tag}\t{manifest_key}", _stats_line(sources)]
    rows += [_stats_line(_folders(modules)), *(f"{name}\t{path}" for name, path in modules.items())]
    scratch = SOURCE_STATS.with_suffix(".tmp")
    scratch.write_text("\n".join(rows))
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
