"""The gate and the small routes against hostile requests: one sentence and a 4xx, never a 500 or a reset."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import Served, post, serving

pytestmark = pytest.mark.slow

BEYOND_BIGINT = 2**63


@pytest.fixture(scope="module", params=["duckdb", "postgres"])
def probed(request, tmp_path_factory) -> Iterator[Served]:
    """One server per backend for the probes that must change nothing (each is refused); the flood
    of bad tokens, which leaves the gate throttling, gets a server of its own (``served``)."""
    with serving(request.param, tmp_path_factory.mktemp(f"probed-{request.param}"), request) as served:
        yield served


def one_sentence(text: str) -> str:
    error = json.loads(text)["error"]
    assert "\n" not in error and "Traceback" not in error
    return error


@pytest.mark.parametrize("body", [b"[]", b"42", b'"promote.n_clicks"', b"null", b"[{\"changedPropIds\": [\"promote.n_clicks\"]}]"])
def test_a_callback_body_that_is_not_a_json_object_gets_a_sentence_not_a_500(probed, body):
    status, text = post(probed.url + "_dash-update-component", body, token=probed.tokens["vera"])
    assert 400 <= status < 500
    assert one_sentence(text)


def test_a_body_over_16_mb_gets_413_and_a_sentence_not_a_reset(probed):
    status, text = post(probed.url + "_dash-update-component", b"{" + b" " * (16 * 1024 * 1024) + b"}", token=probed.tokens["otto"])
    assert status == 413
    assert "16 MB" in one_sentence(text)


def test_promote_over_http_of_an_id_beyond_bigint_is_no_such_memory(probed):
    status, text = post(probed.url + "api/promote", {"memory_id": BEYOND_BIGINT, "reason": "x"}, token=probed.tokens["otto"])
    assert status == 404
    assert one_sentence(text) == f"No memory with id {BEYOND_BIGINT}."


def mcp_call(url: str, token: str, tool: str, args: dict):
    import httpx2 as httpx

    async def main():
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return await client.call_tool(tool, args)

    out: list = []
    worker = threading.Thread(target=lambda: out.append(anyio.run(main)))
    worker.start()
    worker.join(60)
    return out[0]


@pytest.mark.parametrize("tool", ["memory_expand", "memory_promote"])
def test_an_mcp_call_with_an_id_beyond_bigint_is_no_such_memory(probed, tool):
    args = {"memory_id": BEYOND_BIGINT, **({"reason": "key precedent"} if tool == "memory_promote" else {})}
    result = mcp_call(probed.url + "mcp/legal-review", probed.tokens["ada"], tool, args)
    assert result.is_error
    assert result.content[0].text.endswith(f": No memory with id {BEYOND_BIGINT}.")  # the SDK names the tool first


def test_a_flood_of_bad_tokens_gets_429_while_a_token_that_proved_itself_still_gets_in(served):
    import time

    vera = served.tokens["vera"]
    assert post(served.url + "_dash-update-component", b"[]", token=vera)[0] == 400  # vera proves herself once
    answers = [post(served.url + "_dash-update-component", b"[]", token=f"lvz_{i:08x}_flood")[0] for i in range(75)]
    assert set(answers[:60]) == {401}
    assert set(answers[60:]) == {429}
    time.sleep(2.1)  # past the cache of checked tokens: vera is looked up again, in the middle of the flood
    assert post(served.url + "_dash-update-component", b"[]", token=vera)[0] == 400
    assert post(served.url + "_dash-update-component", b"[]", token="lvz_99999999_new-bad-token")[0] == 429
