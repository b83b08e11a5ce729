"""An MCP session belongs to the identity that opened it (issue 25): bob, holding alice's
``Mcp-Session-Id``, is answered exactly as for a session that does not exist, and can
neither use nor end it; alice's session works until she ends it, then is forgotten."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from tests.plugins.identities import identity_server_config

TOKENS = {"alice": "tok-alice-mcp", "bob": "tok-bob-mcp"}
VERSION = "2025-06-18"


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return identity_server_config({"pool_size": 0}, TOKENS)


def _headers(who: str, session: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"token {TOKENS[who]}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    if session is not None:
        headers.update({"Mcp-Session-Id": session, "Mcp-Protocol-Version": VERSION})
    return headers


def _result(response: Any) -> Any:
    """The JSON-RPC message of a JSON or an SSE answer."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(
            line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip()
        )
    return json.loads(text)


@pytest.fixture
def mcp(jp_http_port: int, jp_asyncio_loop: Any, fetch: Any) -> Any:
    """``mcp(method, who, session=None, body=...)``: one raw request to ``agent/mcp``."""
    url = f"http://127.0.0.1:{jp_http_port}/agent/mcp"

    def send(method: str, who: str, session: str | None = None, body: Any = None) -> Any:
        async def go() -> Any:
            async with httpx2.AsyncClient(timeout=60) as http:
                return await http.request(method, url, headers=_headers(who, session), json=body)

        return jp_asyncio_loop.run_until_complete(go())

    return send


def _rpc(method: str, id_: int | None = 1, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id_ is not None:
        body["id"] = id_
    return body


def _open(mcp: Any, who: str) -> str:
    info = {"name": "t", "version": "1"}
    answer = mcp(
        "POST",
        who,
        body=_rpc("initialize", protocolVersion=VERSION, capabilities={}, clientInfo=info),
    )
    assert answer.status_code == 200, answer.text
    session = str(answer.headers["mcp-session-id"])
    done = mcp("POST", who, session, _rpc("notifications/initialized", None))
    assert done.status_code == 202, done.text
    return session


def test_bob_cannot_use_or_end_alices_session(mcp: Any) -> None:
    alice = _open(mcp, "alice")
    listing = _rpc("tools/list", 2)
    mine = mcp("POST", "alice", alice, listing)
    assert mine.status_code == 200
    assert [t["name"] for t in _result(mine)["result"]["tools"]]

    unknown = mcp("POST", "bob", "0" * 32, listing)  # a session that does not exist
    assert unknown.status_code == 404
    for method, body in (("POST", listing), ("GET", None), ("DELETE", None)):
        theirs = mcp(method, "bob", alice, body)
        assert theirs.status_code == 404, (method, theirs.text)
        assert theirs.content == unknown.content, method  # nothing says it exists
        assert theirs.headers.get("mcp-session-id") is None

    # bob's DELETE ended nothing: alice's session still answers her.
    again = mcp("POST", "alice", alice, _rpc("tools/list", 3))
    assert again.status_code == 200
    assert _result(again)["result"] == _result(mine)["result"]
    # bob's own session is his: alice cannot use it either.
    bob = _open(mcp, "bob")
    assert mcp("POST", "alice", bob, _rpc("tools/list", 4)).status_code == 404
    assert mcp("POST", "bob", bob, _rpc("tools/list", 5)).status_code == 200

    # alice ends hers; then it is unknown to everyone, her included.
    assert mcp("DELETE", "alice", alice).status_code == 200
    assert mcp("POST", "alice", alice, _rpc("tools/list", 6)).status_code == 404
