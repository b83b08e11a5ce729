"""The events WebSocket during a real run, catch-up with ``since``, and the demo model."""

from __future__ import annotations

import asyncio
import gc
import json
from asyncio import base_events
from typing import Any

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from jupyter_agent.runtime.settings.demo import DEMO_MODEL
from jupyter_agent.server.events import EventsSocket
from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat, wait_turn

SCRIPT = [
    {"text": "Let me compute.", "cells": ["print(6 * 7)"]},
    {"text": "The answer is **42**."},
]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The fake as codegen, unless the test runs the demo (no fake requested)."""
    if "fake" not in request.fixturenames:
        return {"pool_size": 0}
    fake = request.getfixturevalue("fake")
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


async def read_until_run_end(conn: WebSocketClientConnection, run_id: str) -> list[dict[str, Any]]:
    events = []
    while True:
        raw = await conn.read_message()
        assert raw is not None, "the socket closed before run_end"
        event = json.loads(raw)
        events.append(event)
        if event["type"] == "run_end" and event["run_id"] == run_id:
            return events


@pytest.mark.usefixtures("server_kernelspec")
def test_two_clients_get_every_event_and_since_catches_up(
    fetch: Any,
    fake: Any,
    jp_fetch: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    chat_id = new_chat(fetch)
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"

    async def scenario() -> tuple[list[dict[str, Any]], ...]:
        first = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        second = await websocket_connect(HTTPRequest(url + "?since=0", headers=jp_auth_header))
        body = json.dumps({"text": "six times seven?"})
        response = await jp_fetch("agent", "chats", chat_id, "messages", method="POST", body=body)
        run_id = json.loads(response.body)["run_id"]
        a, b = await asyncio.gather(
            read_until_run_end(first, run_id), read_until_run_end(second, run_id)
        )
        first.close()
        second.close()
        # Reconnecting later: the kept events (no deltas) above ``since`` come back.
        late = await websocket_connect(HTTPRequest(url + "?since=2", headers=jp_auth_header))
        c = await read_until_run_end(late, run_id)
        late.close()
        return a, b, c

    a, b, c = jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 60))
    assert [e["seq"] for e in a] == [e["seq"] for e in b]
    types = [e["type"] for e in a]
    assert types[0] == "run_start"
    assert types[-1] == "run_end"
    for wanted in ("bubble", "cell_start", "cell_end", "reply"):
        assert wanted in types
    cell_end = next(e for e in a if e["type"] == "cell_end")
    assert cell_end["kind"] == "python"
    assert "42" in json.dumps(cell_end["outputs"])
    assert all(e["chat_id"] == chat_id for e in a)
    seqs = [e["seq"] for e in a]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    # Kept: all but the live-only types, and but the live output of cells that ended
    # (their cell_end carries the final outputs).
    kept = [e for e in a if e["type"] not in ("delta", "retry", "cell_output") and e["seq"] > 2]
    assert [e["seq"] for e in c] == [e["seq"] for e in kept]


@pytest.mark.usefixtures("server_kernelspec")
def test_demo_model_without_any_key(
    fetch: Any, spin: Any, agent_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    _, status = call(fetch, "agent", "status")
    assert status["demo"] is True
    chat_id = new_chat(fetch)
    _, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hi"}
    )
    turn = wait_turn(fetch, spin, chat_id, answer["run_id"], timeout_s=60)
    assert turn["model"] == DEMO_MODEL
    assert turn["llm"]["stopReason"] == "done"
    assert turn["llm"]["cells"] == 2
    assert turn["llm"]["cost"] == 0
    texts = [r["text"] for r in turn["replies"]]
    assert texts[0].startswith("This is the offline **demo model**: it does not read your question")
    assert "demo model" in texts[-1]
    assert "JupyterAgent.tiers" in texts[-1]
    _, detail = call(fetch, "agent", "runs", answer["run_id"])
    cells = [s for s in detail["steps"] if s["type"] == "cell"]
    assert [c["status"] for c in cells] == ["ok", "ok"]
    assert "55" in json.dumps(cells[1])  # 1 + 4 + 9 + 16 + 25, computed in the kernel
    assert agent_service.demo.running


def test_closed_sockets_are_let_go(
    fetch: Any,
    fake: Any,
    jp_serverapp: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
) -> None:
    """A closed events socket is not held until its keep-alive ping 30 s later (most of the
    server's memory growth per run, bench/bench_memory.py): of 150 sockets opened and
    closed in a row, at most asyncio's own bound of cancelled timers (each holding its
    request's context until the loop purges them) are still in memory."""
    chat_id = new_chat(fetch)
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"
    bus = agent_app(jp_serverapp).services.chats.events

    async def scenario() -> None:
        for _ in range(150):
            conn = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
            while not bus._subscribers.get(chat_id):  # open on the server
                await asyncio.sleep(0.005)
            conn.close()
            while bus._subscribers.get(chat_id):  # its close seen by the server
                await asyncio.sleep(0.005)
        await asyncio.sleep(0.2)  # the last connections' teardown; the loop's purge

    jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 60))
    gc.collect()
    held = [o for o in gc.get_objects() if isinstance(o, EventsSocket)]
    assert len(held) <= base_events._MIN_SCHEDULED_TIMER_HANDLES  # type: ignore[attr-defined]
