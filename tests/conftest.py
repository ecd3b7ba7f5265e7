"""Shared pytest configuration: the project root on sys.path and Hypothesis profiles."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# CI runs a fixed, derandomized profile so a red build can be reproduced; locally the
# default profile explores new examples each run.
settings.register_profile(
    "ci", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
