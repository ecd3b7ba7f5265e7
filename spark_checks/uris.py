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

When Spark cannot read a URI, its error is a Java stack trace; `unreadable_message` turns the
usual causes into the one line of bad input (exit 2): no filesystem for the scheme (Hadoop's
`UnsupportedFileSystemException`, or the connector's class missing: `ClassNotFoundException`
for `S3AFileSystem` when `hadoop-aws` is not on the classpath), with the connector to add and
the Hadoop version it must match (`hadoop_version`, from the jars pyspark ships), and a path
that does not exist (Spark's `PATH_NOT_FOUND`).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Final

_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")
_NO_FILESYSTEM: Final = re.compile(
    r'No FileSystem for scheme "?([A-Za-z0-9+.-]+)"?|Class ([\w.$]+FileSystem) not found'
)
_NOT_FOUND: Final = re.compile(r"PATH_NOT_FOUND|Path does not exist")
CONNECTORS: Final = {
    "s3a": "org.apache.hadoop:hadoop-aws",
    "gs": "com.google.cloud.bigdataoss:gcs-connector",
    "abfs": "org.apache.hadoop:hadoop-azure",
    "abfss": "org.apache.hadoop:hadoop-azure",
    "wasb": "org.apache.hadoop:hadoop-azure",
    "wasbs": "org.apache.hadoop:hadoop-azure",
}
"""The Maven artifact of each common scheme's Hadoop filesystem (Hadoop's own modules take
Spark's Hadoop version; Google's connector has versions of its own)."""
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


def hadoop_version() -> str | None:
    """The version of the Hadoop client pyspark ships (`jars/hadoop-client-api-3.5.0.jar`), which
    a connector from Hadoop (`hadoop-aws`, `hadoop-azure`) must match; None without pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    for jar in sorted((Path(spec.origin).parent / "jars").glob("hadoop-client-api-*.jar")):
        return jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return None


def unreadable_message(uri: str, error_text: str, version: str | None = None) -> str | None:
    """The one-line bad-input message when Spark could not read `uri` and said `error_text`
    (the text of its exception), or None for any other failure. `version` is the Hadoop
    version a connector must match (default: `hadoop_version()`)."""
    if _NOT_FOUND.search(error_text):
        return f"{uri}: no such file"
    missing = _NO_FILESYSTEM.search(error_text)
    if missing is None:
        return None
    name = scheme(uri) or "file"
    artifact = CONNECTORS.get(name)
    if artifact is None:
        add = "add the connector of that scheme to Spark's classpath"
    else:
        hadoop = version if version is not None else hadoop_version()
        matching = hadoop if artifact.startswith("org.apache.hadoop:") and hadoop else "VERSION"
        add = f"add its connector, e.g. --conf spark.jars.packages={artifact}:{matching}"
    return (
        f"{uri}: Spark has no filesystem for {name}:// here ({missing.group(0)}); "
        f"{add} (README: Paths and URIs)"
    )
