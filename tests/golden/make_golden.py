"""Regenerate the wire golden files in this folder (by hand; not run by the test suite).

    JA_MAKE_GOLDEN=1 python -m pytest tests/golden/make_golden.py -q

The files pin what the serialization code writes today, so a change to the codec that
alters one byte of an existing log or REST answer fails ``tests/golden/test_wire.py``:

- ``run_*.jsonl``: effect logs of real runs (fake model on loopback, a real agent kernel):
  thinking with signatures, text, cells with a figure, bash, in-cell ``llm.chat`` and
  ``chat.post`` calls, steering, a provider error, a hard break, usage with cache and
  reasoning tokens, the turn record of each run;
- ``rest.json``: the REST JSON of the same runs (turn records, run summaries, chats);
- ``messages.json``: the message codec's JSON for every model reply of those logs and of
  ``tests/llm/fixtures`` (parsed by the adapters), plus messages with files and tool results.

The committed files were made by the hand-written codec, before the codec derived from the
types replaced it: regenerate them only on purpose (a deliberate wire change).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.chat import ADAPTERS
from jupyter_agent.messages import (
    File,
    LLMReply,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    to_json,
)
from tests.runtime.harness import Harness, close_harness, make_harness

HERE = Path(__file__).parent
FIXTURES = HERE.parent / "llm" / "fixtures"

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not os.environ.get("JA_MAKE_GOLDEN"), reason="set JA_MAKE_GOLDEN=1"),
]

FIGURE_CELL = (
    "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(2, 2), dpi=20)\nax.plot([1, 3, 2])\nplt.show()\n"
    "print('plotted é ✓')"
)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


def _replies_of(path: Path) -> list[dict[str, Any]]:
    """Every model reply of a log, parsed by its adapter and encoded by the message codec."""
    out: list[dict[str, Any]] = []
    intents: dict[int, dict[str, Any]] = {}
    for raw in path.read_text().splitlines()[1:]:
        line = json.loads(raw)
        if line["name"] != "http.post":
            continue
        if line["phase"] == "intent":
            intents[line["seq"]] = line["data"]
            continue
        data = line["data"]
        if not isinstance(data, dict) or data.get("status") != 200:
            continue
        provider = "anthropic" if intents[line["seq"]]["wire"] == "anthropic" else "openai"
        out.append(to_json(ADAPTERS[provider].parse_reply(data["json"])))
    return out


def _fixture_replies() -> list[dict[str, Any]]:
    out = []
    for path in sorted(FIXTURES.glob("*.json")):
        provider = "anthropic" if path.name.startswith("anthropic") else "openai"
        if path.name.startswith(("openrouter", "vllm")):
            provider = "openai-compatible"
        out.append(to_json(ADAPTERS[provider].parse_reply(json.loads(path.read_text()))))
    return out


def _sample_messages() -> list[dict[str, Any]]:
    png = bytes(range(256)) * 3
    user = Message(
        role="user",
        parts=(
            Text(text="Look at é \u2028 and this:"),
            File(media_type="image/png", data=png),
            File(media_type="application/pdf", data=b"%PDF-1.4", name="a.pdf"),
            ToolResult(
                call_id="toolu_01",
                content=(Text(text="Output\n[1] 1"), File(media_type="image/jpeg", data=b"\xff")),
                is_error=True,
            ),
            ToolResult(call_id="call_2", content=()),
        ),
    )
    assistant = LLMReply(
        parts=(
            Thinking(text="hmm", provider_state={"type": "thinking", "signature": "Eq==\u0000"}),
            Thinking(provider_state={"type": "redacted_thinking", "data": "EmwK"}),
            Thinking(text="plain"),
            Thinking(),
            ToolCall(id="toolu_01", name="run_cell", args={"code": "x", "n": [1, 2.5, None]}),
        ),
        stop="tool",
        usage=Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, reasoning_tokens=4),
        stop_detail="tool_use",
        model="claude-x",
    )
    return [to_json(user), to_json(assistant), to_json(assistant.as_message()), to_json(Usage())]


async def test_make_golden(agent: Harness, fake_provider: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("JA_GOLDEN_KEY", "sk-golden-not-a-secret")
    agent.fake = fake_provider(
        [
            {
                "thinking": "The user wants a plot; let me draw it.",
                "text": "Let me plot it.",
                "cells": [FIGURE_CELL],
                "usage": {"in": 120, "out": 40, "cache_read": 900, "cache_write": 30},
            },
            {
                "thinking": "Now check the shell.",
                "bash": ["echo hi-from-bash"],
                "usage": {"in": 10, "out": 12, "reasoning": 5},
            },
            {
                "cells": [
                    "import time\nchat.post('half way')\nprint(llm.chat('Say hi'))\ntime.sleep(1.5)"
                ]
            },
            {"text": "hi from the nested call"},
            {"expect": {"last_user_contains": "also this"}, "text": "The answer is **42** ✓."},
            {"error": {"status": 400, "message": "bad request body"}},
            {"cells": ["import time\ntime.sleep(30)"]},
        ],
    )
    agent.tier = {
        "provider": "fake",
        "model": "claude-sonnet-4-5",
        "base_url": agent.fake.base_url,
        "api_key_ref": "env:JA_GOLDEN_KEY",
    }
    chat = agent.new_chat("golden é")
    first = await agent.manager.send(chat, text="Plot [1, 3, 2] and tell me the answer")
    while len(agent.fake.requests) < 4:  # the nested llm.chat has been answered
        await asyncio.sleep(0.05)
    assert (await agent.manager.send(chat, text="also this"))["routed"] == "mailbox"
    turns = [await agent.finish(first["run_id"])]
    turns.append(await agent.ask(chat, "and now?"))  # the provider error
    broken = await agent.manager.send(chat, text="sleep a while")
    await agent.wait_event(chat, "cell_start")
    while not any(
        e["type"] == "cell_start" and e["run_id"] == broken["run_id"]
        for e in agent.events.since(chat, 0)
    ):
        await asyncio.sleep(0.05)
    await agent.manager.break_run(broken["run_id"], hard=True)
    turns.append(await agent.finish(broken["run_id"]))

    for old in HERE.glob("run_*.jsonl"):
        old.unlink()
    names = []
    for i, turn in enumerate(turns):
        name = f"run_{i + 1}.jsonl"
        shutil.copyfile(agent.manager.log_path(turn.run_id), HERE / name)
        names.append(name)
    summaries = [agent.store.get_run(t.run_id) for t in turns]
    chat_row = agent.store.get_chat(chat)
    assert chat_row is not None
    stored = [t.to_json() for t in agent.store.list_turns(chat)]
    rest = {
        "logs": names,
        "chat": {**chat_row.to_json(), "turns": stored},
        "turns": [t.to_json() for t in turns],
        "runs": [s.to_json() for s in summaries if s is not None],
    }
    (HERE / "rest.json").write_text(json.dumps(rest, indent=1, ensure_ascii=False) + "\n")
    messages = {
        "log_replies": [r for n in names for r in _replies_of(HERE / n)],
        "fixture_replies": _fixture_replies(),
        "samples": _sample_messages(),
    }
    (HERE / "messages.json").write_text(json.dumps(messages, indent=1, ensure_ascii=False) + "\n")
