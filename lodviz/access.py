"""Who may do what: identities, their roles, and the tokens that prove them.

A token belongs to one identity (a name: a person or an agent) with one role:

    viewer    read the landscape and the audit log
    auditor   also promote, demote, expand, resolve conflicts, change profiles, save golden queries
    agent     its own MCP calls, as exactly one agent name
    admin     everything, including acting as any agent

A token is shown once, when created (``lvz_<id>_<secret>``); the store keeps
its id and the SHA-256 of the whole token, never the token. Checking one is a
lookup by id and a constant-time comparison of hashes.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lodviz.errors import AccessDenied, InvalidInput

ROLES = ("viewer", "auditor", "agent", "admin")
#: What each role may do, by action name (the faces name the action they are about to take).
PERMISSIONS: dict[str, frozenset[str]] = {
    "viewer": frozenset({"view"}),
    "auditor": frozenset({"view", "steer"}),
    "agent": frozenset({"act"}),
    "admin": frozenset({"view", "steer", "act", "act-as-any", "manage"}),
}
PREFIX = "lvz_"
#: The header ``lodviz serve`` sets to the authenticated identity's name for the
#: app and the MCP tools (a client's own copy is dropped before it gets there).
IDENTITY_HEADER = "X-Lodviz-Identity"
#: Where ``lodviz serve`` puts the authenticated ``Identity`` in a request's ASGI scope, for
#: the app and its routes: a client can send any header, but cannot write the scope.
IDENTITY_SCOPE_KEY = "lodviz.identity"
#: Who acts for a person in the landscape of a server run without authentication.
APP_ACTOR = "app"
AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}")


def check_agent(name: object) -> str:
    """A valid agent name, or ``InvalidInput`` saying what a name may be."""
    # fullmatch: a pattern ending in "$" lets a trailing newline through.
    if not isinstance(name, str) or not AGENT_NAME.fullmatch(name):
        raise InvalidInput(f"agent name {name!r} must be 1-64 letters, digits or _.:@- characters, starting with a letter or digit.")
    return name


@dataclass(frozen=True)
class Identity:
    """Who a request comes from: a name, a role, and for an agent token its agent."""

    name: str
    role: str
    agent_id: str | None = None
    token_id: str | None = None

    def can(self, action: str) -> bool:
        return action in PERMISSIONS.get(self.role, frozenset())

    def require(self, action: str, what: str) -> None:
        """Raise ``AccessDenied`` (one sentence) unless this identity may ``action``."""
        if not self.can(action):
            raise AccessDenied(f"{self.name} ({self.role}) may not {what}.")

    def acting_agent(self, named: str | None) -> str | None:
        """The agent this identity's MCP call acts for, given the agent a request names."""
        if self.role == "agent":
            if named and named != self.agent_id:
                raise AccessDenied(f"this token acts for agent {self.agent_id!r} only, not {named!r}.")
            return self.agent_id
        if self.role == "admin":
            return named
        raise AccessDenied(f"{self.name} ({self.role}) has no agent to act for; MCP calls need an agent or admin token.")


#: The identity of a server run without authentication (local, single user).
LOCAL = Identity(name="local", role="admin")


@dataclass(frozen=True)
class TokenRecord:
    """A token as the store keeps it: never the token itself."""

    id: str
    name: str
    role: str
    agent_id: str | None
    secret_sha256: str
    created_at: datetime
    created_by: str
    revoked_at: datetime | None = None

    @property
    def identity(self) -> Identity:
        return Identity(self.name, self.role, self.agent_id, self.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "role": self.role, "agent_id": self.agent_id,
            "created_at": self.created_at.isoformat(), "created_by": self.created_by,
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def check_role(role: str, agent_id: str | None) -> None:
    if role not in ROLES:
        raise InvalidInput(f"unknown role {role!r}; choose one of {', '.join(ROLES)}.")
    if role == "agent" and not agent_id:
        raise InvalidInput("an agent token needs the agent it acts for (--agent NAME).")
    if role != "agent" and agent_id:
        raise InvalidInput("only an agent token acts for an agent; leave out --agent for other roles.")


def new_token() -> tuple[str, str]:
    """(token id, the whole token) for a new token."""
    token_id = secrets.token_hex(4)
    return token_id, f"{PREFIX}{token_id}_{secrets.token_urlsafe(32)}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def token_id_of(token: str) -> str | None:
    """The id inside a token, or None for anything that is not shaped like one."""
    if not token.startswith(PREFIX):
        return None
    token_id, _, rest = token[len(PREFIX):].partition("_")
    return token_id if len(token_id) == 8 and rest else None


#: The id looked up for a string that is not shaped like a token (no token has it: ids are hex).
NO_TOKEN_ID = "--------"
#: What an unknown token's digest is compared with, so that it costs what a known one does.
_NO_DIGEST = "0" * 64


def matches(record: TokenRecord | None, token: str) -> bool:
    """Does ``token`` prove ``record``? One hash and one constant-time comparison, record or not."""
    expected = record.secret_sha256 if record is not None else _NO_DIGEST
    same = hmac.compare_digest(expected, digest(token))
    return record is not None and same


#: Which face a change comes through ("cli", "app", "mcp", "api" for the library),
#: recorded in every audit line (``details["face"]``) beside who made it.
_FACE: contextvars.ContextVar[str] = contextvars.ContextVar("lodviz_face", default="api")


def current_face() -> str:
    return _FACE.get()


def set_face(face: str) -> contextvars.Token[str]:
    """Mark what this thread (or task) does from now on as coming through ``face``."""
    return _FACE.set(face)
