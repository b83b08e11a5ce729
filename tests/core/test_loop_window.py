"""``toolcaller@v3`` records what its boot window held (``llm.window``) in the turn,
driven by hand (no I/O): the figures match the prompt it sent."""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_agent.core.history.window import ChunkSummary, HistoryWindow, boot_window
from jupyter_agent.core.loop.machine import program
from jupyter_agent.core.turns import TurnRecord
from tests.core.test_loop_history import HELLO, earlier
from tests.core.test_loop_step import NOW, Stepper, configured, reply, text

LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
BUDGET = 1200


def run_to_the_end(name: str, history: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """One turn with one model call: (the http.post intent, the turn.append intent)."""
    s = Stepper(program(name, "run_1", "chat_1"))
    configured(s, {"history_budget_tokens": BUDGET})
    s.answer("config.get", history)
    s.answer("mailbox.drain", [HELLO])
    s.answer("clock.now", NOW)
    post = s.answer("http.post", reply(text("done.")))
    answers = {"chat.post": "msg_1", "clock.now": NOW, "id.new": "turn_1", "mailbox.drain": []}
    while s.effect is not None and s.effect.name != "turn.append":
        s.answer(s.effect.name, answers.get(s.effect.name))
    appended = s.answer("turn.append", {"ok": True})
    assert s.returned
    assert isinstance(s.value, TurnRecord)
    assert s.value.to_json() == appended.data
    return post.data, appended.data


def test_v3_records_the_window_it_sent() -> None:
    chat = [earlier(n) for n in range(1, 61)]
    chunks = (
        *tuple(
            ChunkSummary(level=1, first_turn=f, last_turn=f + 9, text=f"turns {f}+ were about x")
            for f in range(1, 51, 10)
        ),
        ChunkSummary(level=2, first_turn=1, last_turn=50, text="the first fifty turns"),
    )
    window = HistoryWindow(turns=tuple(chat[-15:]), omitted=45, chunks=chunks, layout=LAYOUT)
    post, turn = run_to_the_end("toolcaller@v3", window.to_json())
    got = turn["llm"]["window"]
    assert set(got) == {"raw", "l1", "l2", "omitted", "tokens"}
    prompt = json.dumps(post["json"]["messages"])
    raw = len(set(re.findall(r"question (\d+) ", prompt)))
    assert got["raw"] == raw > 0
    assert got["l1"] + got["l2"] == prompt.count("[summary of ") > 0
    assert got["l1"] == len(re.findall(r"were about x", prompt))
    shown = boot_window(
        list(window.turns),
        budget_tokens=BUDGET,
        older=45,
        first_position=46,
        chunks=chunks,
        chunk_turns=10,
    )
    assert got["tokens"] == shown.tokens > 0
    assert got["omitted"] == shown.omitted
    if got["omitted"]:
        assert f"[{got['omitted']} earlier turns of this chat are not shown]" in prompt
    else:
        assert "are not shown]" not in prompt


def test_v3_without_a_layout_and_v2_record_no_window() -> None:
    chat = [earlier(n) for n in range(1, 6)]
    _, turn = run_to_the_end("toolcaller@v3", HistoryWindow(turns=tuple(chat)).to_json())
    assert "window" not in turn["llm"]  # logs recorded before issue 14 replay identically
    _, turn = run_to_the_end("toolcaller@v2", [t.to_json() for t in chat])
    assert "window" not in turn["llm"]
