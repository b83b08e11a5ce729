"""``toolcaller@v7``: one ``config.get start`` read, recall only when something is findable,
driven by hand (no I/O); and a v7 log read by the trace's readers (stats, verify, view)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.loop.drive import drive
from jupyter_agent.core.loop.machine import V7_PROGRAMS, Turn, program, setup
from jupyter_agent.core.loop.start import Findable, StartAnswer, planned_recall
from jupyter_agent.core.memory.program import MemoryConfig, RecallSettings
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import Effect
from jupyter_agent.trace.cells_view import build_view
from jupyter_agent.trace.log import EffectLog, read_log
from jupyter_agent.trace.stats import run_stats
from jupyter_agent.trace.verify import verify_run
from tests.core.test_loop_history import earlier
from tests.core.test_loop_recall import fact
from tests.core.test_loop_step import NOW, TIER, Stepper, reply, text

V7 = "toolcaller@v7"
LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
QUESTION = "What colour should the sales chart use?"
ASK = {"kind": "message", "text": QUESTION, "at": NOW}
ON = RecallSettings(enabled=True, k=5, budget_tokens=800, threshold=0.3)


def answer(findable: Findable, turns: int = 0, **more: Any) -> StartAnswer:
    window = HistoryWindow(
        turns=tuple(earlier(i) for i in range(1, turns + 1)), layout=LAYOUT, anchor=0
    )
    fields: dict[str, Any] = {
        "ceilings": {"history_budget_tokens": 2000},
        "tier": dict(TIER),
        "history": window,
        "memory": MemoryConfig(categories=(("preferences", 2),), recall=ON),
        "findable": findable,
        **more,
    }
    return StartAnswer(**fields)


def opened(start: StartAnswer, drained: list[Any] | None = None) -> tuple[Stepper, list[Effect]]:
    """A v7 set-up stepped through its start read and its opening drain."""
    s = Stepper(setup("run_1", "chat_b", version=7))
    asked = [s.answer("clock.now", NOW)]
    asked.append(s.answer("config.get", start.to_json()))
    asked.append(s.answer("mailbox.drain", drained or [ASK]))
    return s, asked


def test_one_start_read_then_the_drain_and_no_search_with_nothing_findable() -> None:
    s, asked = opened(answer(Findable()))
    assert [e.name for e in asked] == ["clock.now", "config.get", "mailbox.drain"]
    assert asked[1].data == {"key": "start", "tier": "codegen"}
    assert asked[2].data == {"notices": True}
    assert s.returned  # no recall.search: nothing to find
    turn = s.value
    assert isinstance(turn, Turn)
    assert turn.state.programs == V7_PROGRAMS == ("toolcaller@v7", "autorecall@v1")
    assert "- preferences (2)" in turn.system  # the categories come with the answer
    assert turn.state.recall is None


def test_the_windows_own_turns_are_not_worth_a_search() -> None:
    s, _ = opened(answer(Findable(turns=2), turns=2))
    assert s.returned  # both turns are in the window: nothing beyond it


def test_a_memory_or_a_turn_beyond_the_window_is_searched_with_the_planned_intent() -> None:
    for findable, turns in ((Findable(memories=1), 0), (Findable(turns=3), 2)):
        start = answer(findable, turns=turns)
        s, _ = opened(start)
        searched = s.answer("recall.search", {"hits": [fact()]})
        assert searched.data == planned_recall(start, QUESTION, "chat_b")
        assert searched.data["query"] == QUESTION
        assert s.returned
        turn = s.value
        assert isinstance(turn, Turn)
        assert turn.state.recall is not None
        assert [h.id for h in turn.state.recall.hits] == ["mem_1"]


def test_recall_off_never_searches_whatever_is_findable() -> None:
    memory = MemoryConfig(recall=RecallSettings(enabled=False))
    s, _ = opened(answer(Findable(memories=5, turns=5), memory=memory))
    assert s.returned
    assert planned_recall(answer(Findable(memories=5), memory=memory), QUESTION, "c") is None


def test_a_bad_tier_or_an_unread_history_or_a_failed_read_says_so_and_ends() -> None:
    cases = [
        (answer(Findable(), tier=None), "The agent is not configured correctly"),
        (answer(Findable(), history=None, history_error="boom"), "earlier turns could not be"),
    ]
    for start, said in cases:
        s, _ = opened(start)
        posted = s.answer("chat.post", "msg_1")
        assert said in posted.data["text"]
        s.answer("clock.now", NOW)
        s.answer("id.new", "turn_1")
        s.answer("turn.append", {"ok": True})
        assert s.returned
        assert isinstance(s.value, TurnRecord)
        assert s.value.llm.stop_reason == "error"
    s = Stepper(setup("run_1", "chat_b", version=7))
    s.answer("clock.now", NOW)
    s.answer("config.get", None, {"type": "StoreUnavailable", "message": "locked"})
    s.answer("mailbox.drain", [ASK])
    posted = s.answer("chat.post", "msg_1")
    assert "its settings could not be read (locked)" in posted.data["text"]


def test_the_answer_reads_back_as_written() -> None:
    start = answer(Findable(memories=2, turns=7), turns=3, spaces={"agent_name": "a"})
    again = StartAnswer.from_json(start.to_json())
    assert again.to_json() == start.to_json()
    assert again.findable == Findable(memories=2, turns=7)
    view = again.config_view()
    assert view["llm.tier.codegen"] == TIER
    assert view["llm.profile.claude-sonnet-4-5"] is None
    assert view["ceilings"] == {"history_budget_tokens": 2000}
    assert StartAnswer.from_json("nonsense").error is not None


def test_a_v7_log_replays_and_the_trace_reads_its_tier_and_ceilings(tmp_path: Path) -> None:
    path = tmp_path / "run_1.jsonl"
    start = answer(Findable(memories=1), ceilings={"history_budget_tokens": 2000, "max_cells": 3})
    answers: dict[str, Any] = {
        "clock.now": NOW,
        "config.get": start.to_json(),
        "mailbox.drain": [ASK],
        "recall.search": {"hits": [fact()]},
        "chat.post": "msg_1",
        "id.new": "turn_1",
        "turn.append": {"ok": True},
    }
    header = {"run_id": "run_1", "chat_id": "chat_b", "program": V7, "created": NOW}
    with EffectLog.create(path, header) as log:

        def perform(effect: Effect) -> Any:
            seq = log.intent(effect)
            if effect.name == "http.post":
                return log.result(seq, effect.name, reply(text("Teal.")))
            return log.result(seq, effect.name, answers[effect.name])

        turn = drive(program(V7, "run_1", "chat_b"), perform)
    assert turn.recall is not None
    trace = read_log(str(path))
    starts = [ln for ln in trace.lines if ln.phase == "intent" and ln.name == "config.get"]
    assert [ln.data for ln in starts] == [{"key": "start", "tier": "codegen"}]
    assert verify_run(str(path)).identical
    [call] = run_stats(trace)["calls"]
    assert (call["tier"], call["model"]) == ("codegen", "claude-sonnet-4-5")
    assert build_view(trace).model == "claude-sonnet-4-5"
