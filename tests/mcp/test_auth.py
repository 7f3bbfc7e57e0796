"""`lodviz serve --auth` over real HTTP: who may act as which agent, and who may steer.

One server for the module, on a seeded store with a token per role (and one
revoked before the server started). Every refusal is checked on the MCP
endpoint and on the app's own routes (the Dash callback endpoint,
/api/promote), not by looking at which buttons show.
"""

from __future__ import annotations

import json
import subprocess
import threading
import urllib.error
import urllib.request
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import lodviz

from .conftest import ServeProcess, child_env, lodviz_command, seed_store


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, embedder):
    tmp = tmp_path_factory.mktemp("auth")
    store = tmp / "guarded.duckdb"
    ids = seed_store(store, embedder)
    mem = lodviz.open(store, embedder=embedder)
    tokens = {}
    for name, role, agent in (
        ("alice-bot", "agent", "alice"), ("bob-bot", "agent", "bob"), ("vera", "viewer", None),
        ("otto", "auditor", None), ("ada", "admin", None), ("gone", "agent", "alice"),
    ):
        record, secret = mem.create_token(name, role, agent_id=agent, actor="test")
        tokens[name] = secret
    mem.revoke_token(tokens["gone"].split("_")[1], actor="test")
    mem.close()
    server = ServeProcess(store, child_env(tmp), args=("--auth",)).start()
    server.ids = ids  # type: ignore[attr-defined]
    server.tokens = tokens  # type: ignore[attr-defined]
    yield server
    server.stop()


def request(url: str, *, token: str | None = None, data: Any = None, headers: dict | None = None, method: str | None = None) -> tuple[int, str, dict]:
    body = json.dumps(data).encode() if data is not None and not isinstance(data, bytes) else data
    req = urllib.request.Request(url, data=body, method=method or ("POST" if body is not None else "GET"))
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def mcp_call(url: str, token: str | None, tool: str, args: dict) -> Any:
    """One MCP tool call with a bearer token, in a thread of its own."""
    import httpx2 as httpx

    async def main():
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool(tool, args)

    out: list = []
    worker = threading.Thread(target=lambda: out.append(_catch(lambda: anyio.run(main))))
    worker.start()
    worker.join(60)
    result = out[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _catch(fn):
    try:
        return fn()
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        return exc


def mcp_status(url: str, token: str | None) -> int:
    """The HTTP status of an MCP initialize request."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    status, _, _ = request(url, token=token, data=init, headers={"Accept": "application/json, text/event-stream"})
    return status


def dash_update(server, token: str | None, trigger: str) -> int:
    """POST the page's own callback request for ``trigger`` (built from the app's dependencies)."""
    from tests.serve import dash_requests as dash

    status, text, _ = request(server.url + "_dash-dependencies", token=server_token(server))
    deps = json.loads(text)
    name = trigger.split(".")[0]
    if name.startswith("{"):
        fill = json.loads(name)
        found = dash.find(deps, f"{fill['type']}.n_clicks")
        body = dash.body(found, {"selected-id.data": 1, "agent.value": "alice"}, changed=[trigger], pattern_fill=fill)
    else:
        body = dash.body(dash.find(deps, trigger), {"selected-id.data": 1, "agent.value": "alice", f"{trigger}": 1}, changed=[trigger])
    status, _, _ = request(server.url + "_dash-update-component", token=token, data=body)
    return status


def server_token(server) -> str | None:
    """A token that may read the page's dependencies (none without --auth)."""
    tokens = getattr(server, "tokens", None)
    return tokens["vera"] if tokens else None


def test_mcp_refuses_no_token_a_wrong_one_and_a_revoked_one(guarded):
    url = guarded.mcp_url()
    assert mcp_status(url, None) == 401
    assert mcp_status(url, "lvz_00000000_not-a-real-token") == 401
    assert mcp_status(url, guarded.tokens["alice-bot"] + "x") == 401
    assert mcp_status(url, guarded.tokens["gone"]) == 401
    assert mcp_status(url, guarded.tokens["alice-bot"]) == 200


def test_an_agent_token_cannot_act_as_another_agent(guarded):
    bob = guarded.tokens["bob-bot"]
    assert mcp_status(guarded.mcp_url("alice"), bob) == 403
    status, body, _ = request(guarded.mcp_url(), token=bob, data={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                              headers={"X-Lodviz-Agent": "alice", "Accept": "application/json, text/event-stream"})
    assert status == 403 and "acts for agent 'bob' only" in body


def test_an_agent_token_reads_only_its_own_and_shared_memories(guarded):
    bob = guarded.tokens["bob-bot"]
    alice_private = guarded.ids["alice_cap"]
    found = mcp_call(guarded.mcp_url(), bob, "memory_search", {"query": "liability cap agreed with Paragon"})
    assert alice_private not in [item["id"] for item in found.structured_content["items"]]
    assert all(item["agent_id"] == "bob" or item["visibility"] == "shared" for item in found.structured_content["items"])
    expanded = mcp_call(guarded.mcp_url(), bob, "memory_expand", {"memory_id": alice_private})
    assert expanded.is_error and "No memory" in expanded.content[0].text
    # Nor through the landscape or its API: agents do not get the app at all.
    assert request(guarded.url, token=bob)[0] == 403
    assert request(guarded.url + "api/promote", token=bob, data={"memory_id": alice_private})[0] == 403


def test_the_app_refuses_no_token_and_tokens_that_may_not_view(guarded):
    assert request(guarded.url)[0] == 401  # the sign-in form
    assert dash_update(guarded, None, "promote.n_clicks") == 401
    assert dash_update(guarded, guarded.tokens["gone"], "search.n_clicks") == 401
    assert dash_update(guarded, guarded.tokens["alice-bot"], "search.n_clicks") == 403
    assert request(guarded.url + "_dash-layout", token=guarded.tokens["vera"])[0] == 200


def test_a_viewer_cannot_promote_by_any_route_and_an_auditor_can(guarded):
    vera, otto = guarded.tokens["vera"], guarded.tokens["otto"]
    target = guarded.ids["alice_old"]
    for trigger in ("promote.n_clicks", "demote.n_clicks", "expand.n_clicks", "save-profile.n_clicks",
                    '{"a":1,"b":2,"superseded":0,"type":"resolve"}.n_clicks'):
        assert dash_update(guarded, vera, trigger) == 403, trigger
    status, body, _ = request(guarded.url + "api/promote", token=vera, data={"memory_id": target, "reason": "x"})
    assert status == 403 and "vera (viewer) may not promote" in body
    status, body, _ = request(guarded.url + "api/promote", token=otto, data={"memory_id": target, "reason": "precedent"})
    assert status == 200, body


def test_every_change_names_the_identity_in_the_audit_log(tmp_path, embedder):
    store = tmp_path / "audited.duckdb"
    ids = seed_store(store, embedder)
    mem = lodviz.open(store, embedder=embedder)
    _, alice = mem.create_token("alice-bot", "agent", agent_id="alice", actor="test")
    _, otto = mem.create_token("otto", "auditor", actor="test")
    mem.close()
    server = ServeProcess(store, child_env(tmp_path), args=("--auth",)).start()
    try:
        written = mcp_call(server.mcp_url(), alice, "memory_write", {"text": "Alice's bot filed the Q3 supplier report."})
        assert not written.is_error
        searched = mcp_call(server.mcp_url(), alice, "memory_search", {"query": "supplier report"})
        assert not searched.is_error
        status, _, _ = request(server.url + "api/promote", token=otto, data={"memory_id": ids["alice_tea"], "reason": "keep"})
        assert status == 200
    finally:
        server.stop()
    mem = lodviz.open(store, embedder=embedder)
    events: dict = {}
    for event in mem.audit(limit=20):  # newest first: keep each action's latest
        events.setdefault(event.action, event)
    mem.close()
    assert events["write"].actor == "alice-bot" and events["write"].agent_id == "alice" and events["write"].details["face"] == "mcp"
    assert events["search"].actor == "alice-bot" and events["search"].agent_id == "alice"
    assert events["promote"].actor == "otto" and events["promote"].details.get("reason") == "keep"
    assert events["promote"].details["face"] == "http"
    assert events["token"].actor == "test" and events["token"].details["face"] == "api"


def test_a_cross_site_post_and_a_foreign_host_are_refused(guarded):
    otto = guarded.tokens["otto"]
    status, _, _ = request(guarded.url + "api/promote", token=otto, data={"memory_id": 1}, headers={"Origin": "http://evil.example"})
    assert status == 403
    status, _, _ = request(guarded.url + "api/health", headers={"Host": "evil.example"})
    assert status == 421


def test_sign_in_sets_a_strict_http_only_session(guarded):
    data = f"token={guarded.tokens['vera']}".encode()
    req = urllib.request.Request(guarded.url + "login", data=data, method="POST")
    req.add_header("Content-Type", "application/x-www-form-urlencoded")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(req, timeout=30)
    assert caught.value.code == 303
    cookie = caught.value.headers["Set-Cookie"]
    assert "lodviz_token=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    session = cookie.split(";")[0]
    assert request(guarded.url, headers={"Cookie": session})[0] == 200
    bad = urllib.request.Request(guarded.url + "login", data=b"token=lvz_nope", method="POST")
    bad.add_header("Content-Type", "application/x-www-form-urlencoded")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bad, timeout=30)
    assert refused.value.code == 401


def test_serving_beyond_loopback_without_auth_is_refused_in_one_line(tmp_path):
    result = subprocess.run(lodviz_command("--model", "hash", "serve", "--create", "--store", str(tmp_path / "s.duckdb"), "--host", "0.0.0.0", "--no-open", "--port", "0"),
                            capture_output=True, text=True, env=child_env(tmp_path), timeout=120)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "without authentication" in lines[0] and "--auth" in lines[0]


def test_auth_without_any_token_is_refused_in_one_line(tmp_path):
    result = subprocess.run(lodviz_command("--model", "hash", "serve", "--create", "--store", str(tmp_path / "s.duckdb"), "--auth", "--no-open", "--port", "0"),
                            capture_output=True, text=True, env=child_env(tmp_path), timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["Error: --auth is on but the store has no live token; create one first: `lodviz token create NAME --role admin`."]


def test_a_server_refused_for_auth_starts_no_warm_up(tmp_path, embedder, monkeypatch):
    # A refusal exits at once; a warm-up thread left inside DuckDB then aborted the process (exit -6).
    from lodviz.serve import process

    warmed: list[object] = []
    monkeypatch.setattr(process, "_warm_then_settle", warmed.append)
    monkeypatch.setattr(process.runtime, "share_heap", lambda: True)
    with pytest.raises(process.ServeError, match="no live token"):
        process.serve(tmp_path / "s.duckdb", auth=True, open_browser=False, port=0, embedder=embedder, settle_heap=True)
    assert warmed == []


def test_a_read_only_server_writes_nothing(tmp_path, embedder):
    store = tmp_path / "demo.duckdb"
    ids = seed_store(store, embedder)
    server = ServeProcess(store, child_env(tmp_path), args=("--read-only",)).start()
    try:
        written = mcp_call(server.mcp_url("alice"), None, "memory_write", {"text": "This must not be stored."})
        promoted = mcp_call(server.mcp_url("alice"), None, "memory_promote", {"memory_id": ids["alice_old"], "reason": "x"})
        searched = mcp_call(server.mcp_url("alice"), None, "memory_search", {"query": "liability cap"})
        status, body, _ = request(server.url + "api/promote", data={"memory_id": ids["alice_old"]})
        page_promote = dash_update(server, None, "promote.n_clicks")
        page = request(server.url)
    finally:
        server.stop()
    assert written.is_error and "read-only" in written.content[0].text
    assert promoted.is_error and "read-only" in promoted.content[0].text
    assert not searched.is_error and searched.structured_content["items"]
    assert status == 403 and "read-only" in body and page_promote == 403
    assert page[0] == 200
    mem = lodviz.open(store, embedder=embedder)
    try:
        assert len(mem) == len(ids)
        assert {e.action for e in mem.audit(limit=100)} == {"write"}  # only the seed's: the search left no trace
        assert all(r.retrieval_count == 0 for r in mem.export_records())
    finally:
        mem.close()
