"""The event bus's bounds through a real server: deleting a chat drops its events (and its
events WebSocket answers 404, not stale events); a ``since`` older than the tail the bus
kept (``c.EventBus.tail_bytes``) gets a ``gap`` frame first."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from tests.server.helpers import call, new_chat, wait_turn

REPLY = "A reply of some length. " * 100  # ~2.4 KB: two runs overflow a 4 KB tail
TAIL = 4096


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": REPLY}], "repeat": True})


@pytest.fixture
def jp_server_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "tiers": {"codegen": tier}},
        "EventBus": {"tail_bytes": TAIL},
    }


def ask(fetch: Any, spin: Any, chat_id: str, text: str) -> str:
    _, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    run_id = str(answer["run_id"])
    wait_turn(fetch, spin, chat_id, run_id)
    return run_id


def frames(
    jp_asyncio_loop: Any, url: str, headers: dict[str, str], until_seq: int
) -> list[dict[str, Any]]:
    """The socket's frames up to the event with seq ``until_seq``."""

    async def read() -> list[dict[str, Any]]:
        conn = await websocket_connect(HTTPRequest(url, headers=headers))
        got: list[dict[str, Any]] = []
        try:
            while not got or got[-1].get("seq") != until_seq:
                raw = await conn.read_message()
                assert raw is not None, got
                got.append(json.loads(raw))
        finally:
            conn.close()
        return got

    result: list[dict[str, Any]] = jp_asyncio_loop.run_until_complete(asyncio.wait_for(read(), 30))
    return result


def test_deleting_a_chat_drops_its_events(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    events = agent_service.events
    chat_id, other = new_chat(fetch), new_chat(fetch)
    ask(fetch, spin, chat_id, "first")
    ask(fetch, spin, other, "second")
    assert events.since(chat_id, 0)
    kept_other = events.chat_bytes(other)
    assert events.kept_bytes == events.chat_bytes(chat_id) + kept_other

    code, _ = call(fetch, "agent", "chats", chat_id, method="DELETE")
    assert code == 204
    assert events.since(chat_id, 0) == []
    assert chat_id not in events.chats()
    assert events.kept_bytes == kept_other  # the other chat's are untouched

    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events?since=0"

    async def connect() -> None:
        await websocket_connect(HTTPRequest(url, headers=jp_auth_header))

    with pytest.raises(HTTPClientError) as info:
        jp_asyncio_loop.run_until_complete(asyncio.wait_for(connect(), 30))
    assert info.value.code == 404
    assert info.value.response is not None
    assert json.loads(info.value.response.body)["reason"] == "not_found"


def test_a_since_older_than_the_tail_gets_a_gap_first(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    events = agent_service.events
    assert events.tail_bytes == TAIL
    chat_id = new_chat(fetch)
    ask(fetch, spin, chat_id, "first")
    second = ask(fetch, spin, chat_id, "second")
    kept = events.since(chat_id, 0)
    assert events.chat_bytes(chat_id) <= TAIL
    assert kept[0]["seq"] > 1  # the first run's events went
    last = kept[-1]
    assert (last["type"], last["run_id"]) == ("run_end", second)

    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"
    got = frames(jp_asyncio_loop, url + "?since=1", jp_auth_header, last["seq"])
    gap, *rest = got
    assert gap == {
        "type": "gap",
        "chat_id": chat_id,
        "since": 1,
        "pruned_through": kept[0]["seq"] - 1,
    }
    assert rest == kept
    # A client that missed nothing that went gets no gap.
    since = kept[0]["seq"] - 1
    assert frames(jp_asyncio_loop, f"{url}?since={since}", jp_auth_header, last["seq"]) == kept
