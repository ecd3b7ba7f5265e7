"""Run `kafkaspec verify` in this process on one input and classify what it did.

The contract (README, "Command line"): exit 0, 1 or 3 is a verdict, 2 is bad input with exactly
one line on stderr naming the file, 70 is an internal error (a bug). `run_verify` captures
stdout and stderr as UTF-8 byte streams with Python's own error handlers for them: strict for
stdout (a lone surrogate printed there is an error, as it is for the real process writing to a
pipe), backslash escapes for stderr (as Python's stderr does), and stops a run that
outlives its time with SIGALRM (`Hang` is a BaseException, so the command line's handler of
internal errors does not swallow it). Shared by the fuzz tests and `bench.fuzz`.
"""

from __future__ import annotations

import io
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

from kafkaspec.cli import EXIT_INTERNAL, main

VERDICTS = frozenset({0, 1, 3})
EXIT_BAD_INPUT = 2


class Hang(BaseException):
    """Raised in the run by the watchdog when its time is up."""


@dataclass(frozen=True)
class Run:
    """What one `kafkaspec verify` run did."""

    argv: tuple[str, ...]
    code: int | None  # None when it hung or raised through `main`
    stdout: str
    stderr: str
    escaped: str = ""  # the traceback of an exception that got out of `main`
    hung: bool = False

    @property
    def traceback(self) -> bool:
        """It crashed: an internal error (exit 70) or an exception out of `main`."""
        return self.code == EXIT_INTERNAL or bool(self.escaped)

    def breach(self, path: str) -> str:
        """How the run broke the contract for an input at `path` ('' when it kept it):
        a code that is no verdict, no input error and no internal error, or an input error
        that is not one stderr line naming the file."""
        if self.hung or self.traceback:
            return ""  # counted on their own
        if self.code in VERDICTS:
            return ""
        if self.code != EXIT_BAD_INPUT:
            return f"exit code {self.code}"
        lines = self.stderr.splitlines()
        if len(lines) != 1:
            return f"input error on {len(lines)} stderr lines"
        if path not in lines[0]:
            return "input error that does not name the file"
        return ""


@contextmanager
def _watchdog(seconds: float) -> Iterator[None]:
    def expire(_signal: int, _frame: FrameType | None) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_verify(argv: Sequence[str], timeout: float = 60.0) -> Run:
    """`kafkaspec ARGV...` in this process, its output captured as UTF-8 bytes."""
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="backslashreplace", write_through=True)
    saved = sys.stdout, sys.stderr
    code: int | None = None
    escaped = ""
    hung = False
    sys.stdout, sys.stderr = out, err
    try:
        with _watchdog(timeout):
            main(list(argv))
    except SystemExit as exit_info:
        code = exit_info.code if isinstance(exit_info.code, int) else 0
    except Hang:
        hung = True
    except Exception:
        escaped = traceback.format_exc()
    finally:
        sys.stdout, sys.stderr = saved
    return Run(tuple(argv), code, _text(out_bytes), _text(err_bytes), escaped, hung)


def _text(data: io.BytesIO) -> str:
    return data.getvalue().decode("utf-8", errors="replace")
