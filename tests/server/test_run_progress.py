"""Polling a running run shows its progress (issue 30, item 7): ``GET agent/runs/{id}``
counts the model calls and cells so far and gives the running cell's outputs so far, from
the server's memory, through the real route with a real kernel and the fake provider."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.server.helpers import call, new_chat

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("server_kernelspec")]

SLOW_CELL = (
    "import time\nfor i in range(400):\n    print('line', i, flush=True)\n    time.sleep(0.05)"
)
SCRIPT = [{"text": "Counting.", "cells": [SLOW_CELL]}, {"text": "Done."}]


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT})


@pytest.fixture
def jp_server_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "tiers": {"codegen": tier}},
    }


def test_a_running_run_shows_its_calls_cells_and_outputs_so_far(
    fetch: Any, spin: Any, agent_service: Any, jp_asyncio_loop: Any
) -> None:
    chat_id = new_chat(fetch)
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "count"}
    )
    assert code == 202
    run_id = sent["run_id"]
    deadline = time.monotonic() + 120
    detail: dict[str, Any] = {}
    lines: list[str] = []
    while time.monotonic() < deadline:
        code, detail = call(fetch, "agent", "runs", run_id)
        assert code == 200
        cells = [s for s in detail["steps"] if s["type"] == "cell"]
        if cells and cells[-1]["status"] == "unfinished":
            text = "".join(
                o.get("text", "") for o in cells[-1]["outputs"] if o.get("output_type") == "stream"
            )
            lines = text.splitlines()
            if len(lines) >= 10:
                break
        spin(0.1)
    assert len(lines) >= 10, detail
    assert lines[:3] == ["line 0", "line 1", "line 2"]
    summary = detail["summary"]
    assert summary["status"] == "running"
    assert summary["modelCalls"] == 1
    assert summary["cells"] == 1
    # Nothing of it was stored: the row is still the one the start wrote.
    stored = agent_service.store.get_run(run_id)
    assert (stored.model_calls, stored.cells) == (0, 0)
    jp_asyncio_loop.run_until_complete(agent_service.manager.break_run(run_id, hard=True))
    jp_asyncio_loop.run_until_complete(agent_service.manager.wait(run_id))
    code, ended = call(fetch, "agent", "runs", run_id)
    assert ended["summary"]["status"] != "running"
    assert ended["summary"]["cells"] == 1
