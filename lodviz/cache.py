"""A small least-recently-used cache: the service keeps the last few queries' work."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class LRU(Generic[V]):
    """At most ``size`` values; the least recently used one goes first. Not thread-safe:
    its owner (``Memory``) serialises access."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("an LRU cache holds at least one value")
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value for ``key``, made (and kept) on a miss."""
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        value = make()
        self._items[key] = value
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


__all__ = ["LRU"]
