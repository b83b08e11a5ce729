"""A long chat through the real run path (run manager, driver, SQLite, fake model): the
history a ``toolcaller@v3`` run reads, and so its effect log, stays bounded by the budget
however long the chat; the prompt is v2's for the same chat; v2 logs still replay."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.history.window import window_record
from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.trace.log import TraceFile, pair_effects
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(300)

BUDGET = 150  # tokens: a few of these turns (~30 tokens each) and the omission line


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.ceilings = {"history_budget_tokens": BUDGET}
    yield harness
    await close_harness(harness)


def history_result(trace: TraceFile) -> tuple[dict[str, Any], Any]:
    """The history a run read: (what it asked, the window). v3..v6 read it with
    ``config.get history``; v7 in its start answer (its budget there too)."""
    for effect in pair_effects(trace):
        key = effect.intent.data.get("key") if effect.name == "config.get" else None
        if key == "history":
            assert effect.result is not None
            return effect.intent.data, effect.result.data
        if key == "start":
            assert effect.result is not None
            answer = effect.result.data
            return {"key": "history", "budget_tokens": answer["budget_tokens"]}, answer["history"]
    raise AssertionError("the run read no history")


def first_model_call(trace: TraceFile) -> Any:
    return next(e.intent.data for e in pair_effects(trace) if e.name == "http.post")


async def test_a_long_chats_logs_stay_bounded_and_v2_still_replays(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent.fake.load([{"text": f"Answer number {n}, in a sentence or two."} for n in range(101)])
    chat = agent.new_chat()
    sizes: dict[int, int] = {}
    run_ids: dict[int, str] = {}
    for n in range(1, 101):
        turn = await agent.ask(chat, f"Message {n}: tell me one more thing about the data.")
        run_ids[n] = turn.run_id
        sizes[n] = agent.manager.log_path(turn.run_id).stat().st_size
    # Bounded: message 100's log is about message 10's (the window holds the same few turns).
    assert sizes[100] <= sizes[10] * 1.02, sizes
    assert sizes[10] > sizes[1]  # the history is in the log, up to the budget
    trace = agent.trace(run_ids[100])
    assert trace.header["program"] == PROGRAM == "toolcaller@v8"
    asked, window = history_result(trace)
    assert asked == {"key": "history", "budget_tokens": BUDGET}
    assert 1 < len(window["turns"]) < 10
    assert window["omitted"] == 99 - len(window["turns"])
    stored = [t.to_json() for t in agent.store.list_turns(chat)]
    newest = agent.store.list_turns(chat)[99 - len(window["turns"]) : 99]
    # The newest turns, oldest first, as window records (what the window renders)
    assert window["turns"] == [window_record(t) for t in newest]
    assert verify_run(agent.manager.log_path(run_ids[100])).identical

    # The model got what the log says; the older material leads (a budget this small fits
    # no whole chunk: the sliding rule, the omission line ahead of the oldest turn shown).
    request = first_model_call(trace)
    assert agent.fake.requests[99].json == request["json"]  # what the model received
    text = request["json"]["messages"][0]["content"][0]["text"]
    assert text.startswith(f"[{window['omitted']} earlier turns of this chat are not shown]")
    assert window["anchor"] == 0

    # A v2 run (recorded now, by the real path: v2 activated server-wide through the
    # program registry) reads the whole chat, and still replays.
    agent.store.activate("", "toolcaller", 2)
    agent.manager.services.programs = ProgramRegistry(agent.store, agent.root / "programs")
    old = await agent.ask(chat, "Message 101: and one more?")
    old_trace = agent.trace(old.run_id)
    assert old_trace.header["program"] == "toolcaller@v2"
    asked, whole = history_result(old_trace)
    assert asked == {"key": "history"}
    assert whole == stored  # every earlier turn, in the log
    # What the bound saves: v2's history line holds all 100 turns, v3's a few.
    assert len(json.dumps(whole)) > 10 * len(json.dumps(window))
    assert agent.manager.log_path(old.run_id).stat().st_size > sizes[100] * 3
    outcome = verify_run(agent.manager.log_path(old.run_id))
    assert outcome.identical, outcome.message
