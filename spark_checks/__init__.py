"""spark_checks: verification of client histories, locally or on Spark.

Readers for Jepsen/Knossos EDN, Porcupine's logs, JSON Lines and Parquet (`readers`), the
linearizability search (`linearizability`), Jepsen's Kafka anomaly checks (`kafka_checker`),
the local and Spark engines (`engine`; only it, `spark_session` and `spark_read`, the Spark
data-source reading the engine will move to, import pyspark) and the reports (`report`).
`kafkaspec verify` is its command.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

COMPILED: frozenset[str] = frozenset(
    {
        "spark_checks.linearizability",
        "spark_checks.distributed",
        "spark_checks.kafka_checker",
        "spark_checks.readers._common",
        "spark_checks.readers.edn_fast",
        "spark_checks.readers.parquet",
    }
)
"""The modules of this package the spec's build compiles (`spec._compiled.ALSO_COMPILED`, by
module name: `tests/spec/test_native.py` holds the two lists equal). Named here so that
importing any other module of the package never looks at the build."""


class _CompiledModules:
    """Imports the `COMPILED` modules compiled when the build of `make native` matches the
    source, asking the spec's loader only then: `--help` and what never checks a history do not
    pay for its look at the build. All of them or none: the compiled modules call each other
    in C, and the spec's finder is either installed or not."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in COMPILED:
            return None
        try:
            from spec import _compiled  # `import spec` installs its finder when the build is current
        except ImportError:  # the spec not installed beside (a task's copy of spark_checks alone)
            return None
        finders = [finder for finder in sys.meta_path if isinstance(finder, _compiled.CompiledFinder)]
        return finders[0].find_spec(fullname, path, target) if finders else None


sys.meta_path.insert(0, _CompiledModules())
