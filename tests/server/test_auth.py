"""Every agent route is authenticated and authorized; POSTs on a cookie session need XSRF."""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import Any, ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from tests.server.helpers import call, new_chat

ROUTES: list[tuple[str, tuple[str, ...], Any]] = [
    ("GET", ("status",), None),
    ("GET", ("settings",), None),
    ("PUT", ("settings",), {"tiers": {}}),
    ("GET", ("chats",), None),
    ("POST", ("chats",), {"title": "t"}),
    ("GET", ("chats", "{chat}"), None),
    ("PATCH", ("chats", "{chat}"), {"title": "t"}),
    ("DELETE", ("chats", "{chat}"), None),
    ("GET", ("chats", "{chat}", "notebook"), None),
    ("POST", ("chats", "{chat}", "notebook"), {}),
    ("POST", ("chats", "{chat}", "messages"), {"text": "hi"}),
    ("GET", ("runs",), None),
    ("GET", ("runs", "run_01X"), None),
    ("GET", ("runs", "run_01X", "stats"), None),
    ("GET", ("runs", "run_01X", "notebook"), None),
    ("POST", ("runs", "run_01X", "notebook"), {}),
    ("POST", ("break", "run_01X"), {"hard": True}),
    ("GET", ("memories",), None),
    ("POST", ("memories",), {"text": "a fact"}),
    ("GET", ("memories", "mem_01X"), None),
    ("PATCH", ("memories", "mem_01X"), {"text": "changed"}),
    ("DELETE", ("memories", "mem_01X"), None),
]


class DenyAllAuthorizer(Authorizer):  # type: ignore[misc]
    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return False


class ReadOnlyAuthorizer(Authorizer):  # type: ignore[misc]
    """Allows reads and writes on ``agent`` but never ``execute``: records what was asked."""

    asked: ClassVar[list[tuple[str, str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((handler.request.method, action, resource))
        return action != "execute"


def routes_with(chat_id: str) -> list[tuple[str, list[str], Any]]:
    return [(m, [p.format(chat=chat_id) for p in parts], b) for m, parts, b in ROUTES]


def expect_403(fetch: Any, method: str, parts: list[str], body: Any, **kw: Any) -> dict[str, Any]:
    data = None if body is None else json.dumps(body)
    with pytest.raises(HTTPClientError) as info:
        fetch("agent", *parts, method=method, body=data, allow_nonstandard_methods=True, **kw)
    assert info.value.code == 403, (method, parts, info.value.code)
    assert info.value.response is not None
    answer: dict[str, Any] = json.loads(info.value.response.body)
    assert set(answer) >= {"message"}
    return answer


NO_TOKEN = {
    "message": "missing or invalid token: none was given (send the server's token in an "
    "'Authorization: token T' header)",
    "reason": "auth",
}
BAD_TOKEN = {
    "message": "missing or invalid token: the token given was not accepted by this server",
    "reason": "auth",
}


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_every_route_needs_a_token(fetch: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch, "mine")
    wrong = "token wrong-" + secrets.token_hex(8)
    mcp = ("POST", ["mcp"], {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    for method, parts, body in [*routes_with(chat_id), mcp]:
        # Never Jupyter's "'_xsrf' argument missing from POST" or a bare "Forbidden".
        for auth, expected in (("", NO_TOKEN), (wrong, BAD_TOKEN)):
            answer = expect_403(fetch, method, parts, body, headers={"Authorization": auth})
            assert answer == expected, (method, parts, auth)
    assert [c.title for c in agent_service.store.list_chats()] == ["mine"]
    assert agent_service.store.list_runs()[0] == []


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": DenyAllAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_denying_authorizer_refuses_every_route(
    fetch: Any,
    agent_service: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    for method, parts, body in routes_with("chat_01X"):
        expect_403(fetch, method, parts, body)
    assert agent_service.store.list_chats() == []
    chat = agent_service.store.create_chat(
        chat_id="chat_01WS", title="", now="2026-01-01T00:00:00Z"
    )
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat.id}/events"
    with pytest.raises(HTTPClientError) as info:
        jp_asyncio_loop.run_until_complete(
            websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        )
    assert info.value.code == 403


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": ReadOnlyAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_send_break_settings_and_export_need_execute(fetch: Any, agent_service: Any) -> None:
    ReadOnlyAuthorizer.asked.clear()
    chat_id = new_chat(fetch)  # creating a chat is a write
    needs_execute = [
        ("PUT", ["settings"], {"tiers": {}}),
        ("POST", ["chats", chat_id, "messages"], {"text": "hi"}),
        ("POST", ["break", "run_01X"], {}),
        ("POST", ["runs", "run_01X", "notebook"], {}),
    ]
    for method, parts, body in needs_execute:
        expect_403(fetch, method, parts, body)
    asked = {(m, a) for m, a, r in ReadOnlyAuthorizer.asked if r == "agent"}
    assert ("POST", "write") in asked
    assert ("PUT", "execute") in asked
    assert ("POST", "execute") in asked
    code, _ = call(fetch, "agent", "chats", chat_id)
    assert code == 200
    assert agent_service.store.list_runs()[0] == []


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_cookie_session_post_needs_xsrf(fetch: Any, jp_serverapp: Any, agent_service: Any) -> None:
    token = jp_serverapp.identity_provider.token
    response = fetch("agent", "status", params={"token": token}, headers={"Authorization": ""})
    cookies = [c.split(";", 1)[0] for c in response.headers.get_list("Set-Cookie")]
    assert cookies, "the token in the URL should have set a login cookie"
    cookie = "; ".join(cookies)
    # The cookie alone authenticates a read...
    code, _ = call(fetch, "agent", "chats", headers={"Authorization": "", "Cookie": cookie})
    assert code == 200
    # ...but a POST with the cookie and no (or a forged) _xsrf is refused.
    for extra in ({}, {"X-XSRFToken": "forged-" + secrets.token_hex(8)}):
        headers = {"Authorization": "", "Cookie": cookie, **extra}
        answer = expect_403(fetch, "POST", ["chats"], {"title": "forged"}, headers=headers)
        assert "xsrf" in answer["message"].lower()  # the person is known: it is about XSRF
        assert answer["reason"] != "auth"
    assert agent_service.store.list_chats() == []


def ws_url(jp_serverapp: Any, jp_http_port: int, jp_base_url: str, chat_id: str) -> str:
    return f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_websocket_needs_token_and_known_chat(
    fetch: Any,
    jp_serverapp: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    chat_id = new_chat(fetch)

    def connect(chat: str, headers: dict[str, str], query: str = "") -> int:
        url = ws_url(jp_serverapp, jp_http_port, jp_base_url, chat) + query
        request = HTTPRequest(url, headers=headers)

        async def go() -> int:
            try:
                conn = await websocket_connect(request)
            except HTTPClientError as exc:
                return exc.code
            conn.close()
            return 101

        return int(jp_asyncio_loop.run_until_complete(asyncio.wait_for(go(), 10)))

    assert connect(chat_id, {}) == 403
    assert connect(chat_id, {"Authorization": "token nope"}) == 403
    assert connect("chat_unknown", jp_auth_header) == 404
    assert connect(chat_id, jp_auth_header, "?since=abc") == 400
    assert connect(chat_id, jp_auth_header, "?since=0") == 101


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": ReadOnlyAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_deleting_a_chat_with_a_running_turn_needs_execute(
    fetch: Any, agent_service: Any, jp_asyncio_loop: Any, spin: Any
) -> None:
    chat_id = new_chat(fetch)

    async def start() -> dict[str, Any]:
        # started from inside (sending over HTTP needs execute, which this user lacks)
        result: dict[str, Any] = await agent_service.manager.send(chat_id, text="hi")
        return result

    run = jp_asyncio_loop.run_until_complete(start())
    expect_403(fetch, "DELETE", ["chats", chat_id], None)
    code, chat = call(fetch, "agent", "chats", chat_id)
    assert code == 200
    assert chat["id"] == chat_id
    jp_asyncio_loop.run_until_complete(agent_service.manager.break_run(run["run_id"], hard=True))
    jp_asyncio_loop.run_until_complete(agent_service.manager.wait(run["run_id"]))
    code, _ = call(fetch, "agent", "chats", chat_id, method="DELETE")
    assert code == 204
