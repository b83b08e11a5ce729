"""The loop driven by hand, with no I/O at all: edge cases the scenario tests can't time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jupyter_agent.core.loop.drive import drive as run_gen
from jupyter_agent.core.loop.machine import toolcaller
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import Effect, Result

NOW = "2026-01-01T00:00:00.000Z"
TIER = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}


def drive(
    answer: Callable[[Effect, int], tuple[Any, dict[str, Any] | None]],
) -> tuple[TurnRecord, list[Effect]]:
    asked: list[Effect] = []

    def perform(effect: Effect) -> Result:
        asked.append(effect)
        data, error = answer(effect, len(asked))
        return Result(seq=len(asked), name=effect.name, data=data, error=error)

    return run_gen(toolcaller("run_1", "chat_1", version=6), perform), asked


def world(overrides: dict[str, Callable[[Effect], Any]]) -> Callable[[Effect, int], Any]:
    drains = iter([[{"kind": "message", "text": "hi", "at": NOW}]])

    def answer(effect: Effect, seq: int) -> tuple[Any, dict[str, Any] | None]:
        if effect.name in overrides:
            return overrides[effect.name](effect)
        if effect.name == "clock.now":
            return NOW, None
        if effect.name == "config.get":
            key = effect.data["key"]
            return {"llm.tier.codegen": TIER, "history": [], "ceilings": {}}.get(key), None
        if effect.name == "mailbox.drain":
            return next(drains, []), None
        if effect.name == "id.new":
            return "turn_1", None
        if effect.name == "turn.append":
            return {"ok": True}, None
        raise AssertionError(f"unexpected effect {effect.name}")

    return answer


def test_a_hard_break_while_reporting_a_provider_error_still_ends_with_a_turn() -> None:
    failure = {"type": "ProviderStatusError", "message": "boom", "status": 500}
    turn, asked = drive(
        world(
            {
                "http.post": lambda e: (None, failure),
                "chat.post": lambda e: ({"cancelled": "break_hard"}, None),
            }
        )
    )
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("break_hard", "break_hard")
    assert turn.user_text == "hi"
    assert asked[-1].name == "turn.append"
    assert asked[-1].data == turn.to_json()


def test_an_empty_opening_drain_ends_at_once_with_a_minimal_turn() -> None:
    turn, asked = drive(world({"mailbox.drain": lambda e: ([], None)}))
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "error")
    assert [e.name for e in asked].count("http.post") == 0


def test_a_hard_break_before_the_first_model_call() -> None:
    opening = [
        {"kind": "message", "text": "hi", "at": NOW},
        {"kind": "break", "hard": True, "at": NOW},
    ]
    turn, asked = drive(world({"mailbox.drain": lambda e: (opening, None)}))
    assert turn.llm.stop_reason == "break_hard"
    assert "http.post" not in [e.name for e in asked]


def _anthropic_text(text: str) -> dict[str, Any]:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    return {"status": 200, "json": body, "attempts": []}


def _replies(*texts: str) -> Callable[[Effect], Any]:
    queue = iter(texts)
    return lambda e: (_anthropic_text(next(queue)), None)


def test_a_deferred_final_reply_becomes_a_bubble_and_the_model_reads_the_mail() -> None:
    late = {"kind": "message", "text": "and this?", "at": NOW}
    posts: list[dict[str, Any]] = []

    def post(effect: Effect) -> Any:
        posts.append(dict(effect.data))
        if effect.data["done"] and len(posts) == 1:  # the host held the final reply back
            return {"deferred": [late]}, None
        return f"msg_{len(posts)}", None

    turn, asked = drive(world({"http.post": _replies("first", "second"), "chat.post": post}))
    assert posts == [
        {"text": "first", "done": True},
        {"text": "first", "done": False},
        {"text": "second", "done": True},
    ]
    assert [(r.text, r.done) for r in turn.replies] == [("first", False), ("second", True)]
    assert [s.text for s in turn.steering] == ["and this?"]
    second_call = [e for e in asked if e.name == "http.post"][1]
    assert "and this?" in str(second_call.data["json"]["messages"][-1])
    assert (turn.llm.stop_reason, turn.llm.model_calls) == ("done", 2)


def test_a_deferred_error_reply_keeps_the_mail_as_steering() -> None:
    failure = {"type": "ProviderStatusError", "message": "boom", "status": 500}
    late = {"kind": "message", "text": "late", "at": NOW}
    answers = iter([({"deferred": [late]}, None), ("msg_2", None)])
    turn, asked = drive(
        world({"http.post": lambda e: (None, failure), "chat.post": lambda e: next(answers)})
    )
    assert (turn.llm.stop_reason, [s.text for s in turn.steering]) == ("error", ["late"])
    assert [e.name for e in asked].count("chat.post") == 2
    assert turn.replies[-1].done


def test_a_hard_break_hands_back_the_mail_and_the_cut_cells_bubbles() -> None:
    tool = _anthropic_text("x")
    tool["json"]["content"] = [
        {"type": "tool_use", "id": "t1", "name": "run_cell", "input": {"code": "go()"}}
    ]
    tool["json"]["stop_reason"] = "tool_use"
    cancelled = {
        "cancelled": "break_hard",
        "bubbles": ["halfway"],
        "deferred": [{"kind": "message", "text": "queued", "at": NOW}],
    }
    turn, _asked = drive(
        world({"http.post": lambda e: (tool, None), "cell.run": lambda e: (cancelled, None)})
    )
    assert turn.llm.stop_reason == "break_hard"
    assert [(r.text, r.done) for r in turn.replies] == [("halfway", False)]
    assert [s.text for s in turn.steering] == ["queued"]


def test_a_finished_cells_bubbles_join_the_replies_in_order() -> None:
    tool = _anthropic_text("x")
    tool["json"]["content"] = [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "t1", "name": "run_cell", "input": {"code": "go()"}},
    ]
    tool["json"]["stop_reason"] = "tool_use"
    replies = iter([(tool, None), (_anthropic_text("Done."), None)])
    cell = {"cell_id": "c1", "bubbles": ["one", "two"]}
    turn, _ = drive(
        world(
            {
                "http.post": lambda e: next(replies),
                "cell.run": lambda e: (cell, None),
                "chat.post": lambda e: ("msg", None),
            }
        )
    )
    assert [(r.text, r.done) for r in turn.replies] == [
        ("Looking.", False),
        ("one", False),
        ("two", False),
        ("Done.", True),
    ]


def test_a_hard_break_with_the_opening_message_keeps_its_text() -> None:
    opening = [
        {"kind": "message", "text": "hi", "at": NOW},
        {"kind": "message", "text": "more", "at": NOW},
        {"kind": "break", "hard": True, "at": NOW},
    ]
    turn, _ = drive(world({"mailbox.drain": lambda e: (opening, None)}))
    assert (turn.user_text, [s.text for s in turn.steering]) == ("hi", ["more"])


def test_every_program_version_is_known_to_the_trace_package() -> None:
    from jupyter_agent.core.loop.machine import PROGRAM, PROGRAMS, program
    from jupyter_agent.trace import log

    assert log.PROGRAM == PROGRAM  # trace may not import core: the constant is repeated
    assert PROGRAM in PROGRAMS
    assert "toolcaller@v1" in PROGRAMS  # the golden logs replay with it
    with pytest.raises(ValueError, match="unknown program 'toolcaller@v9'"):
        program("toolcaller@v9", "run_x", "chat_x")
