"""The gate in front of every request ``lodviz serve`` answers: Host, identity, role, cross-site.

Order for each HTTP request:

1. the Host header must name this server (loopback names when it listens on
   loopback, else ``--allowed-host`` and the address it listens on): DNS
   rebinding cannot turn a browser into a client;
2. the caller's identity: with ``--auth``, a token from ``Authorization:
   Bearer`` or the session cookie set by ``/login`` (``lodviz.access``); without,
   the local single user (``LOCAL``, an admin), which the page says on screen;
3. the role: the landscape and its callbacks need ``view``; the MCP endpoint
   needs an agent or admin token, and an agent token acts for its own agent
   whatever the path or header names. What a request may *change* is not
   decided here from the shape of its body: each store-changing callback asks
   the identity itself (``AppContext.require_steer``), where the change is made;
4. a state-changing POST must come from this server's own pages (its Origin,
   when sent, is this host), and the session cookie is ``SameSite=Strict``.

The identity reaches the app in the request's ASGI scope
(``lodviz.app.context.IDENTITY_SCOPE_KEY``, which a client cannot write), and
the MCP tools in ``IDENTITY_HEADER`` (any copy the client sent is dropped), so
the audit log says who acted.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable
from urllib.parse import parse_qs, urlsplit

from lodviz import limits
from lodviz.access import IDENTITY_HEADER, LOCAL, Identity
from lodviz.errors import AccessDenied, Unauthenticated
from lodviz.memory import Memory

COOKIE = "lodviz_token"
#: The names of this machine's loopback interface: the one home of the list (the gate, the server, ``serve``).
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: How long a checked token is trusted before it is looked up again (a revocation takes effect within this).
TOKEN_TTL_SECONDS = 2.0
#: Failed sign-ins a client address may make in a minute; past it, only tokens that proved
#: themselves recently are checked, the rest get 429 without a lookup (a flood cannot slow the store).
FAILED_AUTH_PER_MINUTE = 60
#: How long a token that proved itself is let through a flood of failures from its address.
KNOWN_GOOD_SECONDS = 3600.0


class TooManyFailures(Unauthenticated):
    """Too many failed sign-ins from this address in the last minute."""


class Gate:
    def __init__(
        self,
        mem: Memory,
        *,
        host: str,
        auth: bool = False,
        read_only: bool = False,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.mem = mem
        self.auth = auth
        self.read_only = read_only
        self.loopback = host in LOOPBACK
        self.hosts = set(LOOPBACK) if self.loopback else {host, *allowed_hosts}
        self._checked: dict[str, tuple[float, Identity]] = {}
        self.rate = limits.current().rate_per_minute
        self._windows: dict[str, tuple[float, int]] = {}  # identity -> (window start, requests in it)
        self._failures: dict[str, tuple[float, int]] = {}  # client address -> (window start, failures in it)
        self._good: dict[str, float] = {}  # token -> when it last proved itself

    # -- Host --------------------------------------------------------------------------

    def host_ok(self, host_header: str) -> bool:
        name = urlsplit(f"http://{host_header}").hostname or ""
        return name in self.hosts or (not self.loopback and "*" in self.hosts)

    def same_origin(self, origin: str | None, host_header: str) -> bool:
        """A request sent by a page of this server (or by a program, which sends no Origin)."""
        if not origin:
            return True
        return urlsplit(origin).netloc == host_header

    # -- identity -------------------------------------------------------------------------

    def identity(self, headers: dict[str, str], client: str = "") -> Identity:
        """Who sends a request with these (lower-cased) headers from ``client`` (its address);
        ``Unauthenticated`` if nobody valid, ``TooManyFailures`` while its address floods."""
        if not self.auth:
            return LOCAL
        token = bearer(headers.get("authorization")) or cookie(headers.get("cookie"), COOKIE)
        now = time.monotonic()
        if not token:
            self._failed(client, now)
            raise Unauthenticated("this lodviz server needs a token: send Authorization: Bearer <token>, or sign in at /login.")
        seen = self._checked.get(token)
        if seen is not None and now - seen[0] < TOKEN_TTL_SECONDS:
            return seen[1]
        if self._flooding(client, now) and now - self._good.get(token, -KNOWN_GOOD_SECONDS) >= KNOWN_GOOD_SECONDS:
            raise TooManyFailures(f"too many failed sign-ins from this address (over {FAILED_AUTH_PER_MINUTE} a minute); try again in a minute.")
        try:
            identity = self.mem.authenticate(token)
        except Unauthenticated:
            self._failed(client, now)
            raise
        if len(self._checked) > 10_000:
            self._checked.clear()
        if len(self._good) > 10_000:
            self._good.clear()
        self._checked[token] = (now, identity)
        self._good[token] = now
        return identity

    def _failed(self, client: str, now: float) -> None:
        start, count = self._failures.get(client, (now, 0))
        if now - start >= 60.0:
            start, count = now, 0
        if len(self._failures) > 10_000:
            self._failures.clear()
        self._failures[client] = (start, count + 1)

    def _flooding(self, client: str, now: float) -> bool:
        start, count = self._failures.get(client, (now, 0))
        return now - start < 60.0 and count >= FAILED_AUTH_PER_MINUTE

    def forget(self, token: str) -> None:
        self._checked.pop(token, None)
        self._good.pop(token, None)

    def forget_token(self, token_id: str) -> None:
        """Drop every cached check of the token with this id (it was just revoked)."""
        for token, (_, identity) in list(self._checked.items()):
            if identity.token_id == token_id:
                self.forget(token)

    def within_rate(self, identity: Identity) -> bool:
        """Count a request of ``identity``; False past ``LODVIZ_RATE_LIMIT`` in the current minute."""
        if not self.rate or identity is LOCAL:  # the single local user of an unauthenticated server is not throttled
            return True
        now = time.monotonic()
        start, count = self._windows.get(identity.name, (now, 0))
        if now - start >= 60.0:
            start, count = now, 0
        self._windows[identity.name] = (start, count + 1)
        return count + 1 <= self.rate

    # -- what a request may do ----------------------------------------------------------------

    def check_app(self, identity: Identity) -> None:
        """Raise ``AccessDenied`` unless ``identity`` may use the landscape at all.

        Whether a callback may change the store is the callback's own check
        (``lodviz.app.context.AppContext.require_steer``), against this identity.
        """
        identity.require("view", "open the landscape")

    def check_steer(self, identity: Identity, what: str) -> None:
        if self.read_only:
            raise AccessDenied(f"this lodviz server is read-only (a demo); it does not {what}.")
        identity.require("steer", what)


def bearer(value: str | None) -> str | None:
    if value and value[:7].lower() == "bearer ":
        return value[7:].strip() or None
    return None


def cookie(value: str | None, name: str) -> str | None:
    for part in (value or "").split(";"):
        key, _, val = part.strip().partition("=")
        if key == name and val:
            return val
    return None


def with_identity(headers: list[tuple[bytes, bytes]], identity: Identity) -> list[tuple[bytes, bytes]]:
    """ASGI headers with the client's identity header dropped and the server's set."""
    name = IDENTITY_HEADER.lower().encode("latin-1")
    kept = [(k, v) for k, v in headers if k.lower() != name]
    if identity is not LOCAL:
        kept.append((name, identity.name.encode("utf-8")))
    return kept


def login_page(message: str = "", status_note: str = "") -> str:
    note = f'<p class="err">{html.escape(message)}</p>' if message else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>lodviz: sign in</title>
<style>body{{background:#0b1020;color:#c9d3e6;font-family:system-ui,sans-serif;display:grid;place-items:center;height:100vh;margin:0}}
form{{background:#121a31;border:1px solid #1f2a44;border-radius:10px;padding:24px;width:420px}}
input{{width:100%;box-sizing:border-box;padding:9px;border-radius:8px;border:1px solid #2a3758;background:#0b1224;color:#fff;margin:10px 0}}
button{{background:#ffcf5c;border:0;border-radius:8px;padding:8px 14px;font-weight:700;cursor:pointer}}.err{{color:#ff8a80}}</style></head>
<body><form method="post" action="/login"><h2>lodviz</h2><p>This landscape needs a token (<code>lodviz token create NAME --role viewer</code>).</p>
{note}<input type="password" name="token" placeholder="lvz_..." autofocus autocomplete="off">
<button type="submit">Sign in</button>{html.escape(status_note)}</form></body></html>"""


def form_token(body: bytes) -> str | None:
    values = parse_qs(body.decode("utf-8", "replace")).get("token")
    return values[0] if values else None
