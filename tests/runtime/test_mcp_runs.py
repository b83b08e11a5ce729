"""MCP tools in real runs (issue 18): the run manager, a real agent kernel, the hub over the
suite's demo server (stdio), the fake model.

A mutating tool's approval wait does not count against the cell's timeout (the person's
answer time is not the cell's); a denied call is the cell's ``AppCallError`` and never
reaches the server; every run replays identically.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.runtime.mcp.config import parse_servers
from jupyter_agent.runtime.mcp.hub import McpHub
from jupyter_agent.trace.verify import verify_run
from tests.mcp_demo import stdio_command
from tests.runtime.harness import Harness, close_harness, make_harness
from tests.runtime.test_mcp_hub import http_server  # noqa: F401  (the demo over HTTP)

pytestmark = pytest.mark.timeout(120)

NOTE = "print(mcp.demo.write_note(text='kept'))"


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.ceilings = {"approval": "writes", "cell_timeout_s": 2}
    harness.recall = {"enabled": False, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    servers, problems = parse_servers(
        {
            "demo": {
                "command": stdio_command(),
                "tools": ["write_note", "add", "slow"],
                "env": {"MCP_DEMO_NOTES": "env:MCP_DEMO_NOTES"},
            }
        }
    )
    assert not problems
    environ = {**os.environ, "MCP_DEMO_NOTES": str(tmp_path / "notes.txt")}
    hub = McpHub(servers, environ=environ)
    harness.manager.services.mcp = hub
    yield harness
    await hub.aclose()
    await close_harness(harness)


async def _ask_with_approval(agent: Harness, approve: bool, after_s: float) -> tuple[Any, str]:
    chat = agent.new_chat()
    answer = await agent.manager.send(chat, text="write a note")
    run_id = answer["run_id"]
    approval = await agent.wait_event(chat, "approval")
    assert approval["kind"] == "mcp"
    await asyncio.sleep(after_s)  # the person takes longer than the cell's 2 s timeout
    agent.manager.services.approvals.decide(run_id, approval["approval_id"], approve=approve)
    return await agent.finish(run_id), run_id


async def test_an_approval_wait_does_not_count_against_the_cell_timeout(
    agent: Harness, tmp_path: Path
) -> None:
    agent.fake.load(
        [
            {"cells": [NOTE]},
            {"expect": {"last_user_contains": "1 notes"}, "text": "Written."},
        ]
    )
    turn, run_id = await _ask_with_approval(agent, approve=True, after_s=3.0)
    assert turn.replies[-1].text == "Written."
    assert (tmp_path / "notes.txt").read_text() == "kept\n"
    assert verify_run(agent.manager.log_path(run_id)).identical


async def test_a_denied_call_fails_in_the_cell_and_never_reaches_the_server(
    agent: Harness, tmp_path: Path
) -> None:
    agent.fake.load(
        [
            {"cells": [NOTE]},
            {
                "expect": {"last_user_contains": "The person denied mcp.demo.write_note."},
                "text": "Not written.",
            },
        ]
    )
    turn, run_id = await _ask_with_approval(agent, approve=False, after_s=0.1)
    assert turn.replies[-1].text == "Not written."
    assert not (tmp_path / "notes.txt").exists()
    assert verify_run(agent.manager.log_path(run_id)).identical


async def test_a_streamable_http_server_in_a_run_gives_the_model_an_image(
    tmp_path: Path,
    fake_provider: Any,
    kernel_manager: Any,
    http_server: str,  # noqa: F811  (the fixture imported above)
) -> None:
    """The demo served over streamable HTTP: a cell ending with the image tool's value shows
    the model the image (an image part of the tool result), the sum as an object."""
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.recall = {"enabled": False, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    servers, _ = parse_servers({"web": {"url": http_server, "tools": ["add", "image"]}})
    hub = McpHub(servers, environ=dict(os.environ))
    harness.manager.services.mcp = hub
    try:
        harness.fake.load(
            [
                {"cells": ["print(mcp.web.add(a=40, b=2)['sum'])\nmcp.web.image()"]},
                {"expect": {"last_user_contains": "42"}, "text": "A red square."},
            ]
        )
        turn = await harness.ask(harness.new_chat(), "show me the demo image")
        assert turn.replies[-1].text == "A red square."
        [result] = harness.fake.requests[-1].json["messages"][-1]["content"]
        kinds = [part["type"] for part in result["content"]]
        assert "image" in kinds, result
        assert verify_run(harness.manager.log_path(turn.run_id)).identical
    finally:
        await hub.aclose()
        await close_harness(harness)


async def test_a_hard_break_during_an_mcp_call_ends_the_run_at_once(agent: Harness) -> None:
    """The break lands while the cell waits on the MCP server: the run ends now (not when
    the tool answers), and the hub still serves the next call."""
    agent.ceilings = {"approval": "none", "cell_timeout_s": 60}
    agent.fake.load([{"cells": ["mcp.demo.slow(seconds=30)"]}, {"text": "never read"}])
    chat = agent.new_chat()
    run_id = (await agent.manager.send(chat, text="wait on the slow tool"))["run_id"]
    await agent.wait_event(chat, "cell_start")
    await asyncio.sleep(0.5)  # the call is in flight at the server
    started = asyncio.get_running_loop().time()
    await agent.manager.break_run(run_id, hard=True)
    turn = await agent.finish(run_id, timeout_s=20)
    assert asyncio.get_running_loop().time() - started < 10
    assert turn.llm.stop_reason == "break_hard"
    assert verify_run(agent.manager.log_path(run_id)).identical
    hub = agent.manager.services.mcp
    assert (await hub.call("demo", "add", {"a": 1, "b": 1}))["structured"] == {"sum": 2}
