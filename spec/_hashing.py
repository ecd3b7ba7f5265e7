"""Hash caching for the spec's composite frozen dataclasses.

The model checker hashes every state it reaches. A state shares most of its parts with
its predecessor (an action changes one replica, not all), so remembering each part's hash
makes hashing a new state cost one level instead of the whole tree. Purely a speed-up:
equality and hashing keep their meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def cache_hash(cls: type[T]) -> type[T]:
    """Make a frozen, slotted dataclass with a `_hash: int | None` field (init=False,
    compare=False) compute its generated `__hash__` once per instance."""
    compute: Callable[[Any], int] = cls.__hash__

    def cached(self: Any) -> int:
        value: int | None = self._hash
        if value is None:
            value = compute(self)
            object.__setattr__(self, "_hash", value)
        return value

    cls.__hash__ = cached  # type: ignore[method-assign]
    return cls
