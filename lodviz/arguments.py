"""What a caller sent, checked before it is used: a memory id, a whole number of at least 1.

Shared by the service's facade (``lodviz.memory``) and the parts it hands
requests to, so that a bad id or count is refused in the same words
wherever it arrives. Pure.
"""

from __future__ import annotations

from typing import Any

from lodviz.errors import InvalidInput, MemoryNotFound

#: Ids are BIGINT in both stores: anything outside 1 .. 2**63 - 1 names no memory.
MAX_ID = 2**63 - 1


def as_id(value: Any) -> int:
    """A memory id from what a caller sent; ``MemoryNotFound`` for anything no memory can have."""
    if isinstance(value, bool):
        raise MemoryNotFound(value)
    try:
        memory_id = int(str(value).strip())
    except (TypeError, ValueError):
        raise MemoryNotFound(value) from None
    if not 1 <= memory_id <= MAX_ID:
        raise MemoryNotFound(memory_id)
    return memory_id


def positive(value: Any, name: str) -> int:
    """``value`` if it is a whole number of at least 1; ``InvalidInput`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{name} must be a whole number of at least 1, got {value!r}.")
    return value


__all__ = ["MAX_ID", "as_id", "positive"]
