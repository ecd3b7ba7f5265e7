"""Shared pytest configuration: Hypothesis profiles and the session-wide SparkSession."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# CI runs a fixed, derandomized profile so a red build can be reproduced; locally the
# default profile explores new examples each run.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# ---------------------------------------------------------------------------------------
# Spark: one session for the whole test run (a session costs ~10 s to start).
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession shared by every Spark test; skipped without Java or pyspark."""
    if shutil.which("java") is None:
        pytest.skip("Java is not installed: Spark tests need a JVM")
    pytest.importorskip("pyspark")
    from spark_checks.spark_session import spark_session

    session = spark_session()
    yield session
    session.stop()
