"""What every callback of one app instance shares, and who is asking in this request.

``AppContext`` is created by ``create_app`` and passed to each ``register``
function, so no module holds user data. It also answers the one question a
store-changing callback must ask before it acts: may the identity behind this
request steer? The identity is the one ``lodviz serve`` authenticated and put
into the request's ASGI scope (``IDENTITY_SCOPE_KEY``), which no client can
write; a header or the shape of a request body decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lodviz.access import APP_ACTOR, IDENTITY_SCOPE_KEY, LOCAL, Identity
from lodviz.app.view import DEFAULT_DRAW_LIMIT, ReferenceAnswers
from lodviz.errors import AccessDenied, Unauthenticated
from lodviz.mapping import LayoutJob
from lodviz.memory import Memory

__all__ = ["APP_ACTOR", "AppContext", "app_actor", "request_identity"]


def request_identity() -> Identity | None:
    """The identity the server authenticated for this request (a2wsgi hands the ASGI scope to
    the app as ``environ["asgi.scope"]``), or None outside a request or without one."""
    from flask import has_request_context, request

    if not has_request_context():
        return None
    scope = request.environ.get("asgi.scope")
    identity = scope.get(IDENTITY_SCOPE_KEY) if isinstance(scope, dict) else None
    return identity if isinstance(identity, Identity) else None


def app_actor() -> str:
    """Who acts in this request: the identity the server authenticated, else ``APP_ACTOR``."""
    identity = request_identity()
    return identity.name if identity is not None and identity is not LOCAL else APP_ACTOR


@dataclass
class AppContext:
    mem: Memory
    layout_job: LayoutJob
    draw_limit: int = DEFAULT_DRAW_LIMIT
    read_only: bool = False  # a demo: the page writes nothing, not even its searches' audit lines
    auth: bool = False  # the server checks tokens: a request without an identity may do nothing
    references: ReferenceAnswers = field(default_factory=ReferenceAnswers)  # "what changed"'s reference answers, kept

    def identity(self) -> Identity:
        """Who sends the current request: the server's identity; without --auth the local user."""
        identity = request_identity()
        if identity is not None:
            return identity
        if self.auth:
            raise Unauthenticated("this landscape needs a token: sign in at /login.")
        return LOCAL

    def require_steer(self, what: str) -> None:
        """Raise ``AccessDenied`` unless this request may change the store by doing ``what``.

        Every callback that changes the store calls this before it acts: the
        check sits where the change is made, whatever the request that got there.
        """
        if self.read_only:
            raise AccessDenied(f"this lodviz server is read-only (a demo): it does not {what}.")
        self.identity().require("steer", what)
