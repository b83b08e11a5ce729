"""Two rules of ``toolcaller@v7`` (issue 30, items 2 and 8), in real runs (the run
manager, a real agent kernel, the fake provider):

- a message the run takes that no model call reads (it came with a stop) is not the
  stopped turn's: the next turn opens with it and answers it;
- the same failing cell (same code, same error) three times ends the turn, end cause
  ``repeating``, with a reply saying so, instead of running to a ceiling.

Every run replays identically.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(120)

SLOW = "import time\nfor _ in range(20):\n    time.sleep(0.1)\nprint('slow done')"
BROKEN = "import no_such_module_here"


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


async def _next_run(agent: Harness, chat: str, after: str, timeout_s: float = 60) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        for event in agent.events.since(chat, 0):
            if event["type"] == "run_start" and event["run_id"] != after:
                return str(event["run_id"])
        await asyncio.sleep(0.02)
    raise AssertionError("no next run started")


async def test_a_message_sent_with_a_stop_opens_the_next_turn(agent: Harness) -> None:
    agent.fake.load(
        [
            {"text": "Counting.", "cells": [SLOW]},
            {"text": "Stopped as asked: the count ran."},  # the wrap-up
            {"expect": {"last_user_contains": "also the minimum"}, "text": "The minimum is 0."},
        ]
    )
    chat = agent.new_chat()
    first = (await agent.manager.send(chat, text="count slowly"))["run_id"]
    await agent.wait_event(chat, "cell_start")
    sent = await agent.manager.send(chat, text="also the minimum")
    assert sent["routed"] == "mailbox"
    await agent.manager.break_run(first, hard=False)
    stopped = await agent.finish(first)
    assert stopped.llm.end_cause == "break_soft"
    assert [s.text for s in stopped.steering] == []  # no model call read it
    second = await _next_run(agent, chat, first)
    answered = await agent.finish(second)
    assert answered.user_text == "also the minimum"
    assert answered.replies[-1].text == "The minimum is 0."
    for run_id in (first, second):
        assert verify_run(agent.manager.log_path(run_id)).identical


async def test_the_same_failure_three_times_ends_the_turn(agent: Harness) -> None:
    agent.fake.load({"steps": [{"text": "Trying.", "cells": [BROKEN]}], "repeat": True})
    chat = agent.new_chat()
    turn = await agent.ask(chat, "import it")
    assert turn.llm.end_cause == "repeating"
    assert turn.llm.cells == 3
    assert turn.llm.model_calls == 3
    final = turn.replies[-1]
    assert final.done
    assert "failed 3 times with the same error" in final.text
    assert "ModuleNotFoundError: No module named 'no_such_module_here'" in final.text
    assert verify_run(agent.manager.log_path(turn.run_id)).identical


async def test_different_failures_do_not_count_as_repeating(agent: Harness) -> None:
    cells = [f"raise ValueError('attempt {i}')" for i in range(4)]
    agent.fake.load([*({"cells": [c]} for c in cells), {"text": "Gave up on it."}])
    chat = agent.new_chat()
    turn = await agent.ask(chat, "try things")
    assert turn.llm.end_cause == "done"
    assert turn.llm.cells == 4
