"""History readers: canonical JSON Lines and Parquet, Jepsen/Knossos EDN, Porcupine's logs.

    info, operations = open_history("history.edn")        # format sniffed
    info.format        # "edn"
    info.dialect       # "jepsen-edn"
    info.conventions   # {"initial": 0, "nil_read": "unconstrained", ...}
    for operation in operations: ...                      # streamed, never the whole file

`open_history` checks that the file can be read and picks the format (and, for Porcupine, the
dialect) at once; the operations are then read lazily as the iterator is consumed. Any malformed
line or form raises `HistoryError` naming the file and the line (byte offset for Parquet, and for
bytes that are not UTF-8) and what was expected, when it is reached.

Sniffing (`sniff_format`): Parquet's magic bytes `PAR1` or a `.parquet` extension -> parquet;
otherwise the first non-blank line decides: `INFO ... jepsen.util` -> porcupine (etcd log); a line
starting `{:process` in a `.txt` file -> porcupine (kv log); a JSON object (`{"...`) -> jsonl;
`[`, `(`, `{`, `#` or a `;` comment -> edn. An empty file, or one whose first line fits no
format, goes by its extension (`.jsonl`, `.ndjson`, `.json`, `.edn`, `.log` and `.txt` for
porcupine, `.parquet`), so that format's reader says what is wrong; with none of these, the
HistoryError lists the supported formats.

Conventions (`SourceInfo.conventions`, a contract with the checkers): four keys.

* `initial`: the value each register/key holds at the start.
* `nil_read`: "absent" (an ok read of nil observed the nil value) or "unconstrained" (an ok
  read of nil tells nothing).
* `failed_cas`: "did-not-happen" (a `fail` cas had no effect, nothing learned) or "no-effect"
  (it executed and returned false: the value differed from its `from`).
* `failed_read`: "did-not-happen" or "unknown" (treat the read as `info`).

| source (dialect)           | initial    | nil_read      | failed_cas     | failed_read    |
|----------------------------|------------|---------------|----------------|----------------|
| canonical jsonl / parquet  | None       | unconstrained | did-not-happen | did-not-happen |
| Jepsen/Knossos EDN         | 0          | unconstrained | did-not-happen | did-not-happen |
| Porcupine etcd log         | None       | absent        | no-effect      | unknown        |
| Porcupine kv log           | "" per key | unconstrained | did-not-happen | did-not-happen |

The canonical defaults are Jepsen's semantics (the canonical form follows Jepsen's history
format, so Jepsen histories map 1:1) with a nil initial value; they equal
`reference.models.DEFAULT_CONVENTIONS`, which the checkers use for any key a source leaves out.

Sources: Knossos (github.com/jepsen-io/knossos: its test examples check cas-register histories
from 0 and multi-register ones from {:x 0 :y 0}; a nil read is unknown; failed operations are
dropped) and Porcupine (github.com/anishathalye/porcupine: its etcd test model starts at nil, a
`:fail :cas` is a CAS that returned false, `:fail :read :timed-out` and `:info` operations have
unknown outcomes; its kv test model starts every key at the empty string).
A Parquet file written with `write_parquet(..., conventions=...)` reports the stored conventions.
The Porcupine etcd reader itself turns a completion marked `:timed-out` into `info` (see
`spark_checks.readers.porcupine`). Each reader module documents its format in detail.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from spark_checks.choices import FORMATS
from spark_checks.history import HistoryError, JsonValue, Operation, Position
from spark_checks.readers._common import (
    CANONICAL_CONVENTIONS,
    KNOSSOS_CONVENTIONS,
    PORCUPINE_ETCD_CONVENTIONS,
    PORCUPINE_KV_CONVENTIONS,
    SourceInfo,
    display_name,
)
from spark_checks.readers.edn import edn_located, write_edn
from spark_checks.readers.jsonl import jsonl_located, write_jsonl
from spark_checks.readers.porcupine import etcd_log_located, kv_first_line, kv_log_located

__all__ = [
    "CANONICAL_CONVENTIONS",
    "FORMATS",
    "KNOSSOS_CONVENTIONS",
    "PORCUPINE_ETCD_CONVENTIONS",
    "PORCUPINE_KV_CONVENTIONS",
    "Located",
    "SourceInfo",
    "open_history",
    "open_located",
    "operation_positions",
    "sniff_format",
    "write_edn",
    "write_jsonl",
    "write_parquet",
]

SNIFF_BYTES: Final = 64 * 1024
PARQUET_MAGIC: Final = b"PAR1"
"""`parquet.MAGIC`, spelled here so that sniffing a file does not import pyarrow."""
EXTENSIONS: Final = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".edn": "edn",
    ".log": "porcupine",
    ".txt": "porcupine",
    ".parquet": "parquet",
}
SUPPORTED: Final = (
    "jsonl (one JSON object per line), edn (Jepsen/Knossos op maps), porcupine (etcd Jepsen log "
    "lines 'INFO  jepsen.util - ...' or kv lines '{:process ...}' in a .txt), parquet"
)


def write_parquet(
    path: str | os.PathLike[str],
    operations: Iterable[Operation],
    *,
    overwrite: bool = False,
    conventions: Mapping[str, JsonValue] | None = None,
) -> int:
    """`parquet.write_parquet` (see there)."""
    # pyarrow and numpy cost ~130 ms to import: only the Parquet path pays it
    from spark_checks.readers.parquet import write_parquet as write

    return write(path, operations, overwrite=overwrite, conventions=conventions)


def _head(path: str | os.PathLike[str], name: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(SNIFF_BYTES)
    except OSError as error:
        raise HistoryError(Position(name), f"cannot read the file: {error.strerror}") from None


def _first_line(head: bytes) -> tuple[str, str, int]:
    """The first non-blank line of the text (left-stripped), the text from there on, its line number."""
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    rest = text.lstrip()
    line_number = text.count("\n", 0, len(text) - len(rest)) + 1
    return rest.split("\n", 1)[0].rstrip("\r"), rest, line_number


def sniff_format(path: str | os.PathLike[str]) -> str:
    """The format of a history file (one of FORMATS), from its extension and first bytes."""
    return _identify(path, "auto").format


def _identify(path: str | os.PathLike[str], fmt: str) -> SourceInfo:
    """What a history is (`fmt`, or sniffed when "auto"; for Porcupine, which dialect), from one
    read of its first bytes, which also says now whether the file can be read (Parquet's reader
    checks that itself and fills in its conventions: `open_located`)."""
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"format must be auto or one of {', '.join(FORMATS)}; got {fmt!r}")
    name = display_name(path)
    extension = os.path.splitext(name)[1].lower()
    if fmt == "parquet" or (fmt == "auto" and extension == ".parquet"):
        return SourceInfo("parquet", dict(CANONICAL_CONVENTIONS), "parquet")
    head = _head(path, name)
    first, rest, line_number = _first_line(head)
    if fmt == "auto":
        fmt = _sniffed(name, extension, head, first, rest, line_number)
    if fmt == "parquet":
        return SourceInfo("parquet", dict(CANONICAL_CONVENTIONS), "parquet")
    if fmt == "jsonl":
        return SourceInfo("jsonl", dict(CANONICAL_CONVENTIONS), "jsonl")
    if fmt == "edn":
        return SourceInfo("edn", dict(KNOSSOS_CONVENTIONS), "jepsen-edn")
    if kv_first_line(first):
        return SourceInfo("porcupine", dict(PORCUPINE_KV_CONVENTIONS), "porcupine-kv")
    return SourceInfo("porcupine", dict(PORCUPINE_ETCD_CONVENTIONS), "porcupine-etcd")


def _sniffed(name: str, extension: str, head: bytes, first: str, rest: str, line_number: int) -> str:
    """The format the first bytes and the extension tell (see the module docstring)."""
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if not first:
        if extension in EXTENSIONS:
            return EXTENSIONS[extension]
        raise HistoryError(
            Position(name), f"the file is empty: cannot tell its format from it; supported: {SUPPORTED}"
        )
    if first.startswith("INFO") and "jepsen.util" in first:
        return "porcupine"
    if first.startswith("{:process") and extension == ".txt":
        return "porcupine"
    if first.startswith("{") and rest[1:].lstrip()[:1] in ('"', "}"):
        return "jsonl"
    if first[0] in "[({#;":
        return "edn"
    if extension in EXTENSIONS:  # the content is no format's: let that format's reader say why
        return EXTENSIONS[extension]
    raise HistoryError(
        Position(name, line=line_number),
        f"cannot tell the history format from the extension or the first bytes; supported: {SUPPORTED}",
    )


Located = tuple[Operation, int]
"""An operation with where it was read: its line (the first line of an EDN map), or its row
(0-based) in a Parquet file."""

_LOCATED = {
    "jsonl": jsonl_located,
    "jepsen-edn": edn_located,
    "porcupine-kv": kv_log_located,
    "porcupine-etcd": etcd_log_located,
}


def open_located(path: str | os.PathLike[str], fmt: str = "auto") -> tuple[SourceInfo, Iterator[Located]]:
    """`open_history` with each operation's line (or Parquet row): one reading of the history
    gives both what the checks need and where an error found later lies."""
    info = _identify(path, fmt)
    if info.format == "parquet":
        from spark_checks.readers.parquet import open_parquet  # pyarrow: only the Parquet path pays it

        conventions, operations = open_parquet(path)
        return SourceInfo("parquet", conventions, "parquet"), _rows(operations)
    return info, _LOCATED[info.dialect](path)


def _rows(operations: Iterator[Operation]) -> Iterator[Located]:
    return ((operation, row) for row, operation in enumerate(operations))


def operation_positions(path: str | os.PathLike[str], fmt: str) -> Iterator[tuple[Operation, Position]]:
    """The operations of a history (format `fmt`, as `open_history` found it) each with where
    it was read: its line, or its row in Parquet. For error paths: an error found in a call
    (a value the model cannot hold) is reported at its operation's line."""
    name = display_name(path)
    info, located = open_located(path, fmt)
    if info.format == "parquet":
        return ((operation, Position(name, row=row)) for operation, row in located)
    return ((operation, Position(name, line=line)) for operation, line in located)


def open_history(path: str | os.PathLike[str], fmt: str = "auto") -> tuple[SourceInfo, Iterator[Operation]]:
    """Open a history: what it is (format, dialect, conventions) and a stream of its operations.

    `fmt` is "auto" (sniff) or one of FORMATS. Raises HistoryError now if the file cannot be
    read or its format told; malformed content raises HistoryError while iterating.
    """
    info, located = open_located(path, fmt)
    return info, (operation for operation, _ in located)
