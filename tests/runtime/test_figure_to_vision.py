"""A figure a cell makes reaches a vision-capable model as an image part (issue 28, item 5):
the agent kernel's default matplotlib backend (nothing chosen in the cell) displays it, the
digest attaches it, and the next model request carries it, on a real kernel and the fake
provider's Anthropic wire."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(120)
pytest.importorskip("matplotlib")

PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('sine-ish')"


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


async def test_a_figure_reaches_the_model_as_an_image(agent: Harness) -> None:
    agent.fake.load([{"text": "Plotting.", "cells": [PLOT]}, {"text": "It peaks at 3."}])
    chat = agent.new_chat()
    answer = await agent.manager.send(chat, text="Plot [1, 3, 2]")
    await agent.finish(answer["run_id"])
    second = agent.fake.requests[1].json
    results = [
        part
        for message in second["messages"]
        if isinstance(message["content"], list)
        for item in message["content"]
        if item.get("type") == "tool_result"
        for part in item["content"]
    ]
    images = [p for p in results if p.get("type") == "image"]
    assert len(images) == 1, results
    data = base64.b64decode(images[0]["source"]["data"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    texts = " ".join(p.get("text", "") for p in results)
    assert "attached as image 1" in texts
    assert verify_run(agent.manager.log_path(answer["run_id"])).identical
