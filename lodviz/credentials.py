"""The tokens of one store: who may act as whom (``lodviz.access`` says what a role may do).

``Credentials`` creates a token (shown once; the store keeps its id and the
SHA-256 of the whole token), lists them, revokes one for good, and checks a
presented token. Every creation and revocation is an audit line. Handed the
store; the faces (the CLI, ``lodviz serve``'s gate) reach it through ``Memory``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from lodviz import access
from lodviz.access import Identity, TokenRecord
from lodviz.errors import InvalidInput, Unauthenticated
from lodviz.records import AuditEvent
from lodviz.store.base import Store


class Credentials:
    """Tokens over one store; ``actor`` is who acts when a call names nobody."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def create(self, name: str, role: str, agent_id: str | None, actor: str) -> tuple[TokenRecord, str]:
        """A new token for identity ``name`` with ``role``: its record, and the token (shown once, never kept)."""
        if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
            raise InvalidInput("an identity name is 1-200 printable characters.")
        access.check_role(role, agent_id)
        if agent_id is not None:
            access.check_agent(agent_id)
        token_id, token = access.new_token()
        record = TokenRecord(token_id, name.strip(), role, agent_id, access.digest(token), datetime.now(UTC), actor)
        event = AuditEvent(action="token", actor=actor, agent_id=agent_id, details={"created": token_id, "name": record.name, "role": role})
        self._store.add_token(record, event)
        return record, token

    def all(self) -> list[TokenRecord]:
        """Every token's record (live and revoked), oldest first; no token is ever shown again."""
        return sorted(self._store.tokens(), key=lambda t: t.created_at)

    def revoke(self, token_id: str, actor: str) -> TokenRecord:
        """Revoke a token for good; its identity is refused from the next request on."""
        record = self._store.token(token_id)
        if record is None:
            raise InvalidInput(f"no token {token_id!r}; `lodviz token list` shows them.")
        event = AuditEvent(action="token", actor=actor, agent_id=record.agent_id,
                           details={"revoked": token_id, "name": record.name, "role": record.role})
        if not self._store.revoke_token(token_id, datetime.now(UTC), event):
            raise InvalidInput(f"token {token_id} is already revoked.")
        revoked = self._store.token(token_id)
        assert revoked is not None
        return revoked

    def authenticate(self, token: str | None) -> Identity:
        """The identity a token proves; ``Unauthenticated`` for none, an unknown or a revoked one.

        The same work whatever the token (the whole token table read, one hash,
        one constant-time comparison), so the time of a refusal does not tell
        whether a token id exists; a lookup by id would (a found row costs more).
        """
        token = token or ""
        record = {t.id: t for t in self._store.tokens()}.get(access.token_id_of(token) or access.NO_TOKEN_ID)
        if not access.matches(record, token):
            raise Unauthenticated("no valid token: send Authorization: Bearer <token> (`lodviz token create`).")
        assert record is not None
        if record.revoked_at is not None:
            raise Unauthenticated(f"token {record.id} was revoked.")
        return record.identity


__all__ = ["Credentials"]
