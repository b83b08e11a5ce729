"""The demo model through the server: every run plays its script from the start.

Concurrent demo runs (several chats at once, or one chat's next message) never share or
interleave steps; the demo says it does not read the question and how to connect a model.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.server.helpers import call, new_chat


@pytest.fixture
def agent_config() -> dict[str, Any]:
    return {"pool_size": 0}


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _send(fetch: Any, chat_id: str, text: str) -> str:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    assert answer["routed"] == "run"
    return str(answer["run_id"])


def _turns_when_idle(fetch: Any, spin: Any, chat_ids: list[str], count: int) -> list[Any]:
    deadline = time.monotonic() + 120
    while True:
        chats = [call(fetch, "agent", "chats", c)[1] for c in chat_ids]
        turns = [t for chat in chats for t in chat["turns"]]
        if len(turns) >= count and all(chat["active_run_id"] is None for chat in chats):
            return turns
        assert time.monotonic() < deadline, "the demo runs did not end"
        spin(0.1)


@pytest.mark.usefixtures("no_keys", "server_kernelspec")
def test_concurrent_demo_runs_each_play_the_whole_script(fetch: Any, spin: Any) -> None:
    assert call(fetch, "agent", "status")[1]["demo"] is True
    chats = [new_chat(fetch) for _ in range(3)]
    for chat_id in chats:  # all three at once: their model calls interleave at the provider
        _send(fetch, chat_id, "what is in my data?")
    turns = _turns_when_idle(fetch, spin, chats, 3)
    again = _send(fetch, chats[0], "and now?")  # the next turn of a chat starts over too
    turns = _turns_when_idle(fetch, spin, chats, 4)
    assert any(t["run_id"] == again for t in turns)
    for turn in turns:
        assert turn["model"] == "jupyter-agent-demo"
        assert (turn["llm"]["stopReason"], turn["llm"]["cells"]) == ("done", 2), turn
        texts = [r["text"] for r in turn["replies"]]
        assert len(texts) == 3
        assert [r["done"] for r in turn["replies"]] == [False, False, True]
        assert "does not read your question" in texts[0]
        assert "ANTHROPIC_API_KEY=... jupyter lab" in texts[-1]
