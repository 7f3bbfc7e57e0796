"""The exceptions lodviz raises.

Every error the library raises on purpose derives from ``LodvizError``; the
faces (CLI, app, MCP server) catch that one class and show its message as a
single sentence. The hierarchy::

    LodvizError
    ├── InvalidParameters      alpha, lambda, thresholds or k out of range
    ├── InvalidInput           text that cannot be stored (empty, not UTF-8, ...)
    │   └── ImportFormatError  a malformed line or row in an import file
    ├── MemoryNotFound         unknown id, or a memory the caller may not see
    ├── AgentNotFound          no such agent or preset
    ├── BudgetTooSmall         a token budget that cannot hold one headline
    ├── StoreError             the store file cannot be opened or used
    │   └── EmbeddingMismatch  the embedding model does not fit the store
    ├── EmbedderUnavailable    the embedding model cannot be loaded
    ├── CompressorError        the LLM compressor is misconfigured or its endpoint failed
    └── AccessDenied           no identity, or one whose role may not do this
        └── Unauthenticated    no token, an unknown one, or a revoked one
"""

from __future__ import annotations


class LodvizError(Exception):
    """Base class of every error lodviz raises on purpose."""


class InvalidParameters(LodvizError, ValueError):
    """Scoring parameters outside their ranges, or thresholds out of order."""


class InvalidInput(LodvizError, ValueError):
    """Input that cannot become a memory."""


class ImportFormatError(InvalidInput):
    """A malformed record in an import file; the message names where."""


class MemoryNotFound(LodvizError, KeyError):
    """No memory with this id is visible to the caller.

    The same message is used whether the memory does not exist or belongs to
    another agent, so that private memories cannot be probed for.
    """

    def __init__(self, memory_id: object) -> None:
        super().__init__(f"No memory with id {memory_id!r}.")
        self.memory_id = memory_id

    def __str__(self) -> str:  # KeyError quotes its argument; we do not want that
        return str(self.args[0])


class AgentNotFound(LodvizError, KeyError):
    """No agent profile or preset by this name."""

    def __str__(self) -> str:
        return str(self.args[0])


class BudgetTooSmall(LodvizError, ValueError):
    """A token budget too small to hold even one headline."""


class StoreError(LodvizError):
    """The store cannot be opened, read or written."""


class EmbeddingMismatch(StoreError):
    """The embedding model's dimension differs from the store's."""


class EmbedderUnavailable(LodvizError):
    """The embedding model cannot be loaded."""


class CompressorError(LodvizError):
    """The compressor cannot make a summary or headline.

    Raised for a missing configuration, an endpoint that keeps failing after
    its retries, or an answer that is not a usable summary or headline. The
    message names the endpoint and the HTTP status, never the API key.
    ``endpoint`` and ``status`` carry the same facts for programs (``status``
    is None when no HTTP answer came back).
    """

    def __init__(self, message: str, *, endpoint: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status


class AccessDenied(LodvizError):
    """The caller's identity may not do this (a viewer promoting, an agent acting for another)."""


class Unauthenticated(AccessDenied):
    """No token, a token lodviz does not know, or a revoked one."""
