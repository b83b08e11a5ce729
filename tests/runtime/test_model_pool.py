"""Runs share the server's model connections: one pool per provider, reused run after run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runtime.harness import close_harness, final_text, make_harness


async def test_three_runs_make_their_model_calls_over_one_connection(
    tmp_path: Path, fake_provider: Any, kernel_manager: Any
) -> None:
    fake = fake_provider({"steps": [{"text": "hello again"}], "repeat": True})
    agent = await make_harness(tmp_path, fake, kernel_manager)
    try:
        chat = agent.new_chat()
        other = agent.new_chat("other")
        for chat_id in (chat, other, chat):
            turn = await agent.ask(chat_id, "hi")
            assert final_text(turn) == "hello again"
        assert len(fake.requests) >= 3
        assert fake.accepted == 1  # every run's calls went over the first connection
        assert agent.manager.services.transport.pools() == (f"http://127.0.0.1:{fake.port}",)
    finally:
        await close_harness(agent)
    assert agent.manager.services.transport.pools() == ()  # closed with the server
