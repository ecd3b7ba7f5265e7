"""What every conformance suite does the same way when it drives a target beside the reference.

* `DivergenceError`: the target and the reference disagree, or the reference left the spec;
  its message ends with the settings and every command so far with the reference's answer,
  which is what a user replays.
* `first_difference(target, reference)`: the first field, in declaration order and item by
  item, where a view or an answer differs: "replicas[1].high_watermark", "members (count)".
  A list holding the same items as the reference's tuple is the same observation (a target
  written in another style may return lists).
* `bound_machine`: a suite's state machine class bound to one target (Hypothesis runs a
  class, so the target and the per-call time limit are class attributes).
* `TargetCalls`: the command log, the failure message built from it, and the guarded call
  into the target (`conformance.guard`): an exception or `sys.exit` from the target is a
  divergence, and a call that hangs is stopped and reported with the commands so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Generic, TypeVar, cast

from conformance.guard import TargetExitError, TargetHungError, call_target, check_command_seconds

T = TypeVar("T")
Machine = TypeVar("Machine", bound=type)
Settings = TypeVar("Settings")


class DivergenceError(AssertionError):
    """The target and the reference disagree, or the reference left the spec."""


def first_difference(target: object, reference: object, path: str = "") -> tuple[str, object, object] | None:
    """The first field (in declaration order, item by item) where `target` differs from
    `reference`: (its path, the target's value, the reference's value); None if equal."""
    if isinstance(reference, tuple) and isinstance(target, list):
        target = tuple(target)
    if target == reference:
        return None
    if is_dataclass(reference) and not isinstance(reference, type):
        for item in fields(reference):
            if not hasattr(target, item.name):
                return f"{path}.{item.name}".lstrip("."), "(missing)", getattr(reference, item.name)
            found = first_difference(
                getattr(target, item.name), getattr(reference, item.name), f"{path}.{item.name}".lstrip(".")
            )
            if found is not None:
                return found
        if type(target) is not type(reference):
            return path or "answer", target, reference
        return None
    if isinstance(reference, tuple) and isinstance(target, tuple):
        if len(target) != len(reference):
            return f"{path} (count)".lstrip(), len(target), len(reference)
        for index, (mine, theirs) in enumerate(zip(target, reference, strict=True)):
            found = first_difference(mine, theirs, f"{path}[{index}]")
            if found is not None:
                return found
    return path or "answer", target, reference


class TargetCalls(Generic[Settings]):
    """The command log and the guarded calls of a suite that drives a target (a mixin: the
    suite sets `settings`, `command_seconds`, `hung` and `commands`)."""

    settings: Settings
    command_seconds: float
    hung: bool
    commands: list[str]  # every command so far, with the reference's answer

    def fail(self, message: str) -> DivergenceError:
        """A divergence naming the settings and every command so far."""
        lines = [message, f"settings: {self.settings}", "commands (with the reference's answer):"]
        lines += [f"  {number}. {command}" for number, command in enumerate(self.commands, 1)]
        return DivergenceError("\n".join(lines))

    def guarded(self, command: str, operation: Callable[[], T], usage_errors: bool = False) -> T:
        """Run `operation` on the target; an exception from it (or `sys.exit`) is a divergence
        too, and a call that hangs is stopped: `TargetHungError` with the commands so far. With
        `usage_errors`, a ValueError is the user's mistake (a bad target) and passes through."""
        try:
            return call_target(operation, self.command_seconds, command)
        except TargetHungError as error:
            self.hung = True
            raise TargetHungError(str(self.fail(str(error)))) from None
        except TargetExitError as error:
            raise self.fail(str(error)) from None
        except Exception as error:
            if usage_errors and isinstance(error, ValueError):
                raise
            raise self.fail(f"{command}: the target raised {error!r}") from error


def bound_machine(
    machine: Machine, target: str, command_seconds: float, resolve: Callable[[str], object], **extra: object
) -> Machine:
    """A subclass of `machine` whose `target` and `command_seconds` (checked) are `target` and
    `command_seconds`, and whose other class attributes are `extra`. `resolve(target)` runs
    first, so a bad target string fails at once with its clear ValueError."""
    resolve(target)
    safe = "".join(character if character.isalnum() else "_" for character in target)
    attributes = {"target": target, "command_seconds": check_command_seconds(command_seconds), **extra}
    name = f"{machine.__name__.removesuffix('Machine')}_{safe}"  # e.g. ControllerConformance_impl
    return cast(Machine, type(name, (machine,), attributes))
