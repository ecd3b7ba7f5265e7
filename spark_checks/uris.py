"""Where a history is: a local path, a `file:` URI, or a URI only Spark can read.

`kafkaspec verify` takes, where it takes a path, a URI as Hadoop's `FileSystem` names files
(the names `spark.read.text` and `spark.read.parquet` accept): `file:///runs/history.edn`,
`hdfs://namenode:8020/runs/history.edn`, `s3a://bucket/runs/history.edn`. What each engine can
read:

* a local path or a `file:` URI (`file:///abs/path`, `file:/abs/path`,
  `file://localhost/abs/path`, as RFC 8089 allows; written as Hadoop's `Path` writes them, a
  space as a space: no percent-escapes are decoded, `#` and `?` are part of the name): both
  engines. The command
  turns it into a local path (`history_argument`), so everything that reads a local file (the
  local engine, directory arguments, the re-read that names a bad line) works unchanged;
* any other URI (`hdfs://`, `s3a://`, `abfss://`, `gs://`, ...): the Spark engine only, passed
  to Spark as given. Whether the cluster can read it is Spark's to say (the Hadoop connector of
  that scheme on its classpath: `hadoop-aws` for `s3a://`). With the local engine it is refused
  with one line (`RemoteHistoryError`, exit 2): this process does not read through Hadoop.

A text is a URI when it starts with a scheme (RFC 3986: a letter, then letters, digits, `+`,
`-`, `.`) of two characters or more followed by `:/` (`hdfs://nn/x`, or Hadoop's `hdfs:/x` on
the default namenode), or with `file:`; anything else is a path, so a local file named
`notes:1.jsonl` stays a path. A URI is text, never a `pathlib.Path`: `Path("hdfs://nn/x")`
is `hdfs:/nn/x`, another file. The Spark engine reads through Spark's data
sources by URI (`spark_uri`: a local path becomes `file:///abs/path`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
LOCAL_HOSTS: Final = ("", "localhost")
"""The hosts a `file:` URI may name: none (`file:///x`, `file:/x`) or `localhost` (RFC 8089)."""


class RemoteHistoryError(ValueError):
    """A URI the chosen engine cannot read (the local engine and `hdfs://`, `s3a://`, ...), or a
    `file:` URI that names no local file (another host, a relative path)."""


def scheme(text: str) -> str | None:
    """The URI scheme of `text`, lower-cased (`"hdfs"`), or None when `text` is a path."""
    match = _SCHEME.match(text)
    if match is None:
        return None
    name = match.group(1).lower()
    if name == "file" or text[match.end() :].startswith("/"):
        return name
    return None


def is_remote(text: str) -> bool:
    """Whether `text` is a URI that only Spark reads (any scheme but `file`)."""
    name = scheme(text)
    return name is not None and name != "file"


def file_uri_path(text: str) -> Path:
    """The local path a `file:` URI names. Raises RemoteHistoryError for a URI with a host
    other than localhost, or a relative path (`file:x`), which RFC 8089 does not allow."""
    rest = text[len("file:") :]
    host, path = "", rest
    if rest.startswith("//"):
        host, slash, tail = rest[2:].partition("/")
        path = slash + tail
    if host.lower() not in LOCAL_HOSTS:
        raise RemoteHistoryError(
            f"{text}: a file: URI names a file on this machine (file:///path); {host!r} is another host"
        )
    if not path.startswith("/"):
        raise RemoteHistoryError(f"{text}: a file: URI needs an absolute path (file:///path)")
    return Path(path)


def history_argument(text: str, engine: str) -> str:
    """What `kafkaspec verify` hands its engine for the argument `text` with `--engine
    engine`: a local path as it is, a `file:` URI as its local path, and any other URI as it
    is unless the engine is `local` (RemoteHistoryError: one line naming the URI and the way
    out, `--engine spark`)."""
    name = scheme(text)
    if name is None:
        return text
    if name == "file":
        return str(file_uri_path(text))
    if engine == "local":
        raise RemoteHistoryError(
            f"{text}: the local engine reads local files only (a path or a file:// URI); "
            f"{name}:// is read through Spark only: use --engine spark"
        )
    return text


def spark_uri(text: str) -> str:
    """The URI Spark reads `text` at: a remote URI as it is, a `file:` URI or a local path as
    `file:///absolute/path`, not percent-escaped (Hadoop's `Path` would escape the escapes;
    a relative path is taken from this process's folder, which Spark's executors do not
    share)."""
    if is_remote(text):
        return text
    path = file_uri_path(text) if scheme(text) == "file" else Path(text)
    return "file://" + str(path.absolute())
