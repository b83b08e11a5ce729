"""Live cell output over the events WebSocket, catch-up with ``since``, and a stopped cell
through the REST routes (run detail, notebook), against a real server and agent kernel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

TICKS = "import time\nfor i in range(6):\n    print('tick', i, flush=True)\n    time.sleep(0.25)\n"
LOOP = "import time\nprint('printed-before-the-stop')\nfor _ in range(600):\n    time.sleep(0.1)"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider([])


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


async def read_until(
    conn: WebSocketClientConnection, stop: Any, into: list[dict[str, Any]]
) -> dict[str, Any]:
    while True:
        raw = await conn.read_message()
        assert raw is not None, "the socket closed"
        event = json.loads(raw)
        into.append(event)
        if stop(event):
            return event


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["output"].get("text", "") for e in events if e["type"] == "cell_output")


@pytest.mark.usefixtures("server_kernelspec")
def test_cell_output_is_live_and_a_late_client_catches_up(
    fake: Any,
    agent_service: Any,
    jp_fetch: Any,
    jp_http_port: int,
    jp_base_url: str,
    jp_asyncio_loop: Any,
    jp_auth_header: dict[str, str],
    fetch: Any,
    spin: Any,
) -> None:
    fake.load([{"cells": [TICKS]}, {"expect": {"last_user_contains": "tick 5"}, "text": "done"}])
    chat_id = new_chat(fetch)
    url = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{chat_id}/events"

    async def scenario() -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
        first = await websocket_connect(HTTPRequest(url, headers=jp_auth_header))
        body = json.dumps({"text": "count for me"})
        response = await jp_fetch("agent", "chats", chat_id, "messages", method="POST", body=body)
        run_id = json.loads(response.body)["run_id"]
        seen: list[dict[str, Any]] = []
        start = await read_until(first, lambda e: e["type"] == "cell_start", seen)
        await read_until(first, lambda e: "tick 1" in text_of([e]), seen)
        # A second client connects mid-cell from the cell's start: it gets what it missed.
        late = await websocket_connect(
            HTTPRequest(f"{url}?since={start['seq']}", headers=jp_auth_header)
        )
        caught: list[dict[str, Any]] = []
        await read_until(late, lambda e: e["type"] == "run_end", caught)
        await read_until(first, lambda e: e["type"] == "run_end", seen)
        first.close()
        late.close()
        return run_id, seen, caught

    run_id, seen, caught = jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 90))
    types = [e["type"] for e in seen]
    live = [e for e in seen[: types.index("cell_end")] if e["type"] == "cell_output"]
    assert len(live) >= 3  # several events while the cell ran, not one at its end
    assert text_of(live) == "".join(f"tick {i}\n" for i in range(6))
    after_start = [e["seq"] for e in seen if e["seq"] > seen[types.index("cell_start")]["seq"]]
    assert [e["seq"] for e in caught] == after_start  # the missed cell_output events included
    assert text_of(caught).startswith("tick 0\ntick 1\n")
    end = next(e for e in seen if e["type"] == "cell_end")
    assert end["status"] == "ok"
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["replies"][-1]["text"] == "done"
    # Replaying the recorded log asks for exactly what was recorded: live output left no mark.
    outcome = verify_run(agent_service.manager.log_path(run_id))
    assert outcome.identical, outcome.message
    _, raw = call(fetch, "agent", "runs", run_id)
    [cell] = [e for e in raw["effects"] if e["name"] == "cell.run"]
    assert "cancelled" not in cell["result"]


@pytest.mark.usefixtures("server_kernelspec")
def test_a_hard_stopped_cell_is_cancelled_with_its_output_in_the_routes(
    fake: Any, agent_service: Any, fetch: Any, spin: Any
) -> None:
    fake.load([{"text": "Looping.", "cells": [LOOP]}, {"text": "never"}])
    chat_id = new_chat(fetch)
    _, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "loop"}
    )
    run_id = answer["run_id"]
    events = agent_service.events
    for _ in range(600):
        if "printed-before-the-stop" in text_of(events.since(chat_id, 0)):
            break
        spin(0.05)
    else:
        raise AssertionError("no live output")
    code, _ = call(fetch, "agent", "break", run_id, method="POST", body={"hard": True})
    assert code == 202
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["llm"]["stopReason"] == "break_hard"

    end = next(e for e in events.since(chat_id, 0) if e["type"] == "cell_end")
    assert end["status"] == "cancelled"
    assert "printed-before-the-stop" in json.dumps(end["outputs"])

    _, detail = call(fetch, "agent", "runs", run_id)
    [step] = [s for s in detail["steps"] if s["type"] == "cell"]
    assert step["status"] == "cancelled"
    assert step["outputs"] == end["outputs"]  # one shape: the step is what the events said
    assert step["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "printed-before-the-stop\n"}
    ]
    assert step["end_status"] == end["status"] == "cancelled"
    [effect] = [e for e in detail["effects"] if e["name"] == "cell.run"]
    assert effect["result"]["cancelled"] == "break_hard"
    assert effect["result"]["cell"]["outputs"][0]["text"] == "printed-before-the-stop\n"

    _, nb = call(fetch, "agent", "runs", run_id, "notebook")
    setup, cell = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert setup["id"] == "replay-setup"
    assert cell["metadata"]["jupyter_agent"]["status"] == "cancelled"
    assert cell["metadata"]["tags"] == ["skip-execution"]  # a re-run leaves it
    assert "printed-before-the-stop" in json.dumps(cell["outputs"])
    outcome = verify_run(agent_service.manager.log_path(run_id))
    assert outcome.identical, outcome.message
