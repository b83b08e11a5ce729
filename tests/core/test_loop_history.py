"""``toolcaller@v3`` reads its history as the window, driven by hand (no I/O).

It asks ``config.get {key: "history", budget_tokens}`` with the budget v2 cut the whole
history to, and builds from the answer the very prompt v2 builds from the whole chat.
"""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.history.window import HistoryWindow, tail_size, turn_tokens
from jupyter_agent.core.loop.machine import program
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from tests.core.test_loop_step import NOW, Stepper, configured, reply, text

HELLO = {"kind": "message", "text": "what next?", "at": NOW}


def earlier(n: int, size: int = 200) -> TurnRecord:
    return TurnRecord(
        id=f"turn_{n:04d}",
        chat_id="chat_1",
        run_id=f"run_{n:04d}",
        user_text=f"question {n} " + "q" * size,
        created=f"2025-01-01T00:00:{n:02d}.000Z",
        llm=TurnLLM(stop_reason="done", end_cause="done"),
        replies=(Reply(text=f"answer {n} " + "a" * size, done=True),),
    )


def first_request(
    name: str, history: Any, ceilings: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``name`` to its first model call: (the history intent, the http.post intent)."""
    s = Stepper(program(name, "run_1", "chat_1"))
    configured(s, ceilings)
    asked = s.answer("config.get", history)
    s.answer("mailbox.drain", [HELLO])
    s.answer("clock.now", NOW)  # the wall-time ceiling's check
    post = s.answer("http.post", reply(text("done.")))
    return asked.data, post.data


def test_v3_asks_for_the_window_with_the_budget_v2_cut_to() -> None:
    asked, _ = first_request(
        "toolcaller@v3", {"turns": [], "omitted": 0}, {"history_budget_tokens": 777}
    )
    assert asked == {"key": "history", "budget_tokens": 777}
    # The profile's context window / 4 bounds it too (claude-sonnet-4-5: 200k -> 50k).
    asked, _ = first_request(
        "toolcaller@v3", {"turns": [], "omitted": 0}, {"history_budget_tokens": 10**9}
    )
    assert asked == {"key": "history", "budget_tokens": 50_000}
    asked, _ = first_request("toolcaller@v2", [])
    assert asked == {"key": "history"}  # v2 unchanged: the whole chat


def test_v3_builds_the_prompt_v2_builds_from_the_whole_chat() -> None:
    chat = [earlier(n) for n in range(1, 31)]
    budget = 500
    costs = [turn_tokens(t) for t in reversed(chat)]
    keep = tail_size(costs, budget, complete=True)
    assert keep is not None
    assert 0 < keep < len(chat)
    window = HistoryWindow(turns=tuple(chat[-keep:]), omitted=len(chat) - keep)
    ceilings = {"history_budget_tokens": budget}
    _, v2 = first_request("toolcaller@v2", [t.to_json() for t in chat], ceilings)
    _, v3 = first_request("toolcaller@v3", window.to_json(), ceilings)
    assert v3 == v2
    first = v3["json"]["messages"][0]["content"][0]["text"]
    assert first.startswith(f"[{len(chat) - keep} earlier turns of this chat are not shown]")
    assert f"question {len(chat)} " in str(v3["json"]["messages"])


def test_v3_ends_the_run_saying_so_when_the_history_cannot_be_read() -> None:
    s = Stepper(program("toolcaller@v3", "run_1", "chat_1"))
    configured(s)
    s.answer("config.get", None, {"type": "StoreUnavailable", "message": "locked"})
    s.answer("mailbox.drain", [HELLO])
    posted = s.answer("chat.post", "msg_1")
    assert posted.data == {"text": "The chat's earlier turns could not be read.", "done": True}
    s.answer("clock.now", NOW)
    s.answer("id.new", "turn_1")
    s.answer("turn.append", {"ok": True})
    assert s.returned
    turn = s.value
    assert isinstance(turn, TurnRecord)
    assert (turn.user_text, turn.llm.stop_reason, turn.llm.model_calls) == (
        "what next?",
        "error",
        0,
    )
