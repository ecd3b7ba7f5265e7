"""A watchdog around every call the conformance suites make into a target.

What it is
    `call_target(operation, seconds)` runs one command on the system under test and turns
    the two ways a target can escape the suite into reportable outcomes:

    * a command that does not return within `seconds` (a hang, an endless loop) is stopped
      by `SIGALRM` (`signal.setitimer` in the main thread, as pytest-timeout's signal method
      does) and raises `TargetHungError`;
    * a target that calls `sys.exit` or raises `SystemExit` raises `TargetExitError`, an
      ordinary exception the machines report as a divergence (it must never end the run with
      the target's exit code, least of all 0).

Why a BaseException for a hang
    `TargetHungError` derives from `BaseException`, not `Exception`: a target that catches
    `Exception` around its endless loop cannot swallow it, and Hypothesis lets it through
    instead of shrinking (every replay of a hanging sequence would wait the whole timeout
    again; minutes per shrink step). `conformance.run` reports it as a divergence naming the
    command that hung.

Limits
    The alarm is delivered between Python bytecodes and interrupts blocking system calls, so
    it stops Python loops and sleeps; a C extension that never returns to the interpreter
    cannot be stopped this way. Outside the main thread (where signals cannot be used) the
    command runs without a watchdog.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_COMMAND_SECONDS = 10.0
"""How long one command may take before the target is declared hung: generous for a log or a
partition on a slow disk (every command of the built-in targets takes milliseconds)."""


class TargetHungError(BaseException):
    """A command did not return within its time limit (see the module docstring)."""


class TargetExitError(Exception):
    """The target called `sys.exit` or raised `SystemExit` inside a command."""


def check_command_seconds(seconds: float) -> float:
    """`seconds` if it is a usable per-command limit (positive, finite), else a ValueError."""
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"the per-command timeout must be a positive number of seconds, got {seconds!r}")
    return seconds


def call_target(operation: Callable[[], T], seconds: float, command: str) -> T:
    """`operation()`, stopped after `seconds` (`TargetHungError`); `SystemExit` inside it
    becomes `TargetExitError`. `command` names the call in both messages."""
    if threading.current_thread() is not threading.main_thread():
        return _no_exit(operation, command)

    def expire(signum: int, frame: object) -> None:
        raise TargetHungError(f"{command}: the target did not answer within {seconds:g} s (hung?); stopped")

    previous_handler = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return _no_exit(operation, command)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_delay > 0:  # someone else's alarm was pending: give back what is left of it
            left = previous_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), previous_interval)


def _no_exit(operation: Callable[[], T], command: str) -> T:
    try:
        return operation()
    except SystemExit as error:
        raise TargetExitError(f"{command}: the target called sys.exit({error.code!r})") from None
