"""The events socket's catch-up, written by its pump (found by scripts/newcomer: a reload
during the catch-up left a ``WebSocketClosedError`` task nobody retrieved in the log).

- A client that goes away in the middle of a long catch-up leaves no task error behind.
- A client that stays gets the kept events, then the live ones published while it was
  catching up: every seq once, in order, none lost.
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_agent.core.events.types import BubbleEvent
from tests.server.helpers import new_chat

KEPT = 1500
LIVE = 50


@pytest.fixture
def agent_config() -> dict[str, Any]:
    return {"pool_size": 0}


def test_catch_up_then_live_in_order_and_a_client_leaving_mid_catch_up(
    fetch: Any,
    agent_service: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    chat_id = new_chat(fetch)
    events = agent_service.events
    for n in range(KEPT):
        events.publish(chat_id, "run_x", BubbleEvent(text=f"kept {n} " + "x" * 4000))
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events?since=0"
    errors: list[dict[str, Any]] = []

    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        try:
            for _ in range(5):  # reloads: connect, then go away at once
                gone = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
                gone.close()
            stays = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
            for n in range(LIVE):  # while it catches up
                events.publish(chat_id, "run_x", BubbleEvent(text=f"live {n}"))
            seqs: list[int] = []
            while len(seqs) < KEPT + LIVE:
                raw = await asyncio.wait_for(stays.read_message(), 30)
                assert raw is not None, "the socket closed"
                seqs.append(int(json.loads(raw)["seq"]))
            stays.close()
            await asyncio.sleep(0.3)  # the closed sockets' pumps end
            gc.collect()  # a task nobody retrieved is reported when it is collected
            await asyncio.sleep(0.05)
            return seqs
        finally:
            loop.set_exception_handler(previous)

    seqs = jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 60))
    assert seqs == list(range(1, KEPT + LIVE + 1))
    assert errors == []
