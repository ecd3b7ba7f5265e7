"""`ControllerUnderTest` over the optimized KRaft controller (`impl.controller`).

The adapter the controller suites drive when the target is `impl`. The controller already
speaks the plain types of `spec.controller.types`, so the adapter only builds it from the
suite's settings; `impl/` may not import the conformance suite, which is why the factory
lives here.
"""

from __future__ import annotations

from impl.controller import KRaftController
from spec.controller.types import ControllerSettings


def ImplController(settings: ControllerSettings) -> KRaftController:  # noqa: N802 (a factory, named as the target)
    """A fresh `impl.controller.KRaftController` with the suite's settings."""
    return KRaftController(settings)
