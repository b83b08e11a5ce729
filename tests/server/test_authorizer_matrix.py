"""The whole route table under authorizers that deny, allow ``read`` only and allow all, in a
sync and an async form (issue 25: one authorization path, every answer awaited).

The routes are the running extension's handlers, every method each defines (a new route is
covered without a line here). Each test's server is configured with one form
(``ServerApp.authorizer_class``); the table runs under it, then under the other form of the
same policy installed as the server installs its own, from the same state: both give the
same status and reason for every (route, method), and are asked the same questions.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from tests.plugins.authorizers import ASKED, AUTHORIZERS, authorizer_config, install
from tests.server.conftest import agent_app

pytestmark = pytest.mark.timeout(240)

CHAT = "chat_01MATRIX"
IDS = {
    "chat_id": CHAT,
    "run_id": "run_01MATRIX",
    "other": "run_02MATRIX",
    "memory_id": "mem_01MATRIX",
    "approval_id": "appr_01MATRIX",
    "name": "toolcaller",
    "proposal_id": "p01matrix",
    "eval_id": "eval_01MATRIX",
}
_METHODS = ("get", "post", "put", "patch", "delete")
#: jupyter_server's authorization refusal: 403 with no reason of the agent's own.
REFUSED = (403, "Forbidden")
#: The GETs that need ``execute``: looking into the person's kernel runs code there.
EXECUTE_READS = frozenset({("GET", "agent/variables")})
#: The one route that takes a non-GET with ``read`` (its tools ask for more per call).
MCP = "agent/mcp"

Answer = tuple[int, Any]


def route_table(serverapp: Any) -> list[tuple[str, str]]:
    """``(METHOD, path)`` of every method every handler of the running extension defines,
    path parameters filled in from :data:`IDS`."""
    rows = []
    for pattern, handler in agent_app(serverapp).handlers:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: IDS[m.group(1)], pattern).lstrip("/")
        for name in _METHODS:
            method = getattr(handler, name, None)
            if method is not None and method.__module__.startswith("jupyter_agent."):
                rows.append((name.upper(), path))
    return rows


def _answer(status: int, body: bytes | None) -> Answer:
    try:
        value = json.loads(body or b"null")
    except ValueError:
        return status, None
    return status, value.get("reason") if isinstance(value, dict) else None


def run_table(
    fetch: Any, service: Any, routes: list[tuple[str, str]], ws: Any
) -> dict[tuple[str, str], Answer]:
    """Every route's ``(status, reason)``, each asked from the same state (the chat
    :data:`CHAT` exists), and the events socket's upgrade (``("WS", path)``)."""
    answers: dict[tuple[str, str], Answer] = {}
    for method, path in routes:
        if service.store.get_chat(CHAT) is None:
            service.store.create_chat(chat_id=CHAT, title="t", now="2026-01-01T00:00:00Z")
        body = None if method in ("GET", "DELETE") else b"{}"
        try:
            response = fetch(
                *path.split("/"), method=method, body=body, allow_nonstandard_methods=True
            )
            answers[(method, path)] = _answer(response.code, response.body)
        except HTTPClientError as exc:
            answers[(method, path)] = _answer(exc.code, exc.response.body if exc.response else None)
    if service.store.get_chat(CHAT) is None:
        service.store.create_chat(chat_id=CHAT, title="t", now="2026-01-01T00:00:00Z")
    answers[("WS", f"agent/chats/{CHAT}/events")] = (ws(CHAT), None)
    return answers


@pytest.fixture
def ws(jp_http_port: int, jp_base_url: str, jp_asyncio_loop: Any, jp_auth_header: Any) -> Any:
    """``ws(chat_id)``: the events socket's answer, 101 when it upgraded."""

    def connect(chat_id: str) -> int:
        url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"

        async def go() -> int:
            try:
                conn = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
            except HTTPClientError as exc:
                return exc.code
            conn.close()
            return 101

        return int(jp_asyncio_loop.run_until_complete(asyncio.wait_for(go(), 30)))

    return connect


CONFIGS = [
    pytest.param(authorizer_config(cls, {"pool_size": 0}), id=f"{policy}-{form}")
    for policy in ("deny", "read", "all")
    for form, cls in AUTHORIZERS[policy].items()
]


@pytest.mark.parametrize("jp_server_config", CONFIGS)
def test_every_route_answers_alike_under_the_sync_and_the_async_form(
    fetch: Any, jp_serverapp: Any, agent_service: Any, ws: Any, jp_root_dir: Path
) -> None:
    configured = type(jp_serverapp.authorizer)
    policy, form = configured.policy, configured.form
    other = AUTHORIZERS[policy]["async" if form == "sync" else "sync"]
    routes = route_table(jp_serverapp)
    assert len(routes) > 30  # the whole table
    assert ("POST", MCP) in routes
    ASKED.clear()
    before = set(jp_root_dir.rglob("*"))
    first = run_table(fetch, agent_service, routes, ws)
    first_asked = list(ASKED)
    written = sorted(set(jp_root_dir.rglob("*")) - before, reverse=True)
    for path in written:  # the second pass starts from the same contents (an export made)
        path.rmdir() if path.is_dir() else path.unlink()
    install(jp_serverapp, other)
    ASKED.clear()
    second = run_table(fetch, agent_service, routes, ws)
    differ = {k: (first[k], second[k]) for k in first if first[k] != second[k]}
    assert differ == {}, f"{form} vs {other.form} under {policy}: {differ}"
    assert first_asked == ASKED  # the same questions, each answer awaited
    asked = {(m, p) for m, p, _a, _r in ASKED}
    silent = [
        (m, p)
        for m, p in routes
        if not any(a == (m, a[1]) and a[1].endswith("/" + p) for a in asked)
    ]
    assert silent == [], f"routes that never asked the authorizer: {silent}"

    if policy == "deny":
        wrong = {k: v for k, v in first.items() if k[0] != "WS" and v != REFUSED}
        assert wrong == {}, wrong
        assert first[("WS", f"agent/chats/{CHAT}/events")][0] == 403
    elif policy == "read":
        writes = {k for k in first if k[0] not in ("GET", "WS") and k[1] != MCP}
        # A read that runs code in the person's kernel (a silent look) needs execute.
        writes |= {k for k in first if k in EXECUTE_READS}
        assert writes, "no write route found"
        wrong = {k: first[k] for k in writes if first[k] != REFUSED}
        assert wrong == {}, f"read-only got past these writes: {wrong}"
        reads = {k: v for k, v in first.items() if k not in writes and v == REFUSED}
        assert reads == {}, f"read-only was refused these reads: {reads}"
        assert first[("WS", f"agent/chats/{CHAT}/events")][0] == 101
    else:
        refused = {k: v for k, v in first.items() if v == REFUSED}
        assert refused == {}, f"allow-all was refused: {refused}"
        assert first[("WS", f"agent/chats/{CHAT}/events")][0] == 101
