"""Prompt caching measured through real runs (run manager, driver, SQLite, a real kernel,
the fake model emulating a prefix cache): consecutive turns of a chat send the same prompt
prefix, so the second turn reads most of its input from the cache, and a turn whose
window rolls a chunk over (the anchor moves) reads less; the turn records say what each
window held (``llm.window``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.turns import TurnRecord
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(300)

LONG = " ".join(f"word{n}" for n in range(60))  # ~100 tokens per message


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([], prefix_cache=True), kernel_manager)
    harness.ceilings = {"history_budget_tokens": 1500}
    harness.history_layout = {"chunk_turns": 3, "l2_chunks": 2}
    # Recalled hits sit after the cached prefix (and these look-alike messages would recall
    # each other): this test measures the window's prefix alone.
    harness.recall = {"enabled": False}
    yield harness
    await close_harness(harness)


def read_share(turn: TurnRecord) -> float:
    usage = turn.llm.usage
    return usage.cache_read_tokens / (usage.input_tokens + usage.cache_read_tokens)


async def test_cache_reads_hold_the_stable_prefix_and_drop_at_a_roll_over(
    agent: Harness,
) -> None:
    agent.fake.load({"steps": [{"text": f"Answer {n}: {LONG}"} for n in range(14)]})
    chat = agent.new_chat()
    turns = [await agent.ask(chat, f"Message {n}: {LONG}") for n in range(1, 15)]
    first, second = turns[0], turns[1]
    assert first.llm.usage.cache_read_tokens == 0  # nothing seen yet
    assert read_share(second) >= 0.8, second.llm.usage
    windows = [t.llm.window for t in turns]
    assert all(w is not None for w in windows)
    assert windows[0] is not None
    assert windows[0].raw == 0
    assert windows[1] is not None
    assert (windows[1].raw, windows[1].omitted) == (1, 0)
    assert windows[1].tokens > 0
    # A roll-over: the anchor moved to a later chunk boundary, the omission line grew.
    rolled = [
        n
        for n in range(1, len(turns))
        if (w := windows[n]) is not None
        and (p := windows[n - 1]) is not None
        and w.omitted > p.omitted
    ]
    assert rolled, [w.to_json() for w in windows if w is not None]
    steady = [n for n in range(1, len(turns)) if n not in rolled]
    for n in rolled:
        assert read_share(turns[n]) < min(read_share(turns[s]) for s in steady)
    for n in steady:
        assert read_share(turns[n]) >= 0.8, (n, turns[n].llm.usage)
    # The turn record as stored carries the window.
    stored = agent.store.get_turn_by_run(turns[-1].run_id)
    assert stored is not None
    assert stored.to_json()["llm"]["window"] == windows[-1].to_json()
