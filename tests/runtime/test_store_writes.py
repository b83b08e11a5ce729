"""A turn's database writes: one transaction to open its run (the message with it), one to
end it (the turn, the run's end summary and the chat's active run), through a real run."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from jupyter_agent.store.engine import WRITE_OPTION
from jupyter_agent.store.memory.turn_indexer import THREAD_NAME
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


class WriteCounter:
    """Counts the write transactions the store begins for the runs (not its recall
    indexer's, which indexes stored turns in a thread of its own, after their runs)."""

    def __init__(self, engine: Any) -> None:
        self.writes = 0
        event.listen(engine, "begin", self._begin)

    def _begin(self, conn: Any) -> None:
        if threading.current_thread().name == THREAD_NAME:
            return
        if conn.get_execution_options().get(WRITE_OPTION, False):
            self.writes += 1


async def test_a_chat_only_turn_is_two_writes(agent: Harness) -> None:
    agent.fake.load([{"text": "Hello."}, {"text": "Again."}])
    chat = agent.new_chat()
    counter = WriteCounter(agent.store._engine)
    first = await agent.ask(chat, "hi")
    assert final_text(first) == "Hello."
    assert counter.writes == 2
    second = await agent.ask(chat, "again")
    assert final_text(second) == "Again."
    assert counter.writes == 4
    # What the three writes of before left, the one end write leaves too.
    summary = agent.store.get_run(second.run_id)
    assert summary is not None
    assert (summary.status, summary.stop_reason, summary.model_calls) == ("done", "done", 1)
    assert summary.ended is not None
    stored = agent.store.get_chat(chat)
    assert stored is not None
    assert stored.active_run_id is None
    assert stored.updated >= summary.ended
    assert agent.store.queued_mail(chat) == []


async def test_a_code_turn_with_steering_adds_one_write_per_message(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["import time\ntime.sleep(1.0)"]},
            {"text": "Done, and noted."},
        ]
    )
    chat = agent.new_chat()
    counter = WriteCounter(agent.store._engine)
    answer = await agent.manager.send(chat, text="sleep")
    await agent.wait_event(chat, "cell_start")
    steer = await agent.manager.send(chat, text="also this")
    assert steer["routed"] == "mailbox"
    turn = await agent.finish(answer["run_id"])
    assert final_text(turn) == "Done, and noted."
    assert counter.writes == 3  # open (with its message), the steering message, the end
    assert agent.store.queued_mail(chat) == []
    summary = agent.store.get_run(turn.run_id)
    assert summary is not None
    assert (summary.status, summary.cells) == ("done", 1)
