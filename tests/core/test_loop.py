"""The loop driven by hand, with no I/O at all: edge cases the scenario tests can't time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_agent.core.effects import Effect, Result
from jupyter_agent.core.loop import toolcaller
from jupyter_agent.core.turns import TurnRecord

NOW = "2026-01-01T00:00:00.000Z"
TIER = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}


def drive(
    answer: Callable[[Effect, int], tuple[Any, dict[str, Any] | None]],
) -> tuple[TurnRecord, list[Effect]]:
    gen = toolcaller("run_1", "chat_1")
    asked: list[Effect] = []
    effect = next(gen)
    try:
        while True:
            asked.append(effect)
            data, error = answer(effect, len(asked))
            effect = gen.send(Result(seq=len(asked), name=effect.name, data=data, error=error))
    except StopIteration as stop:
        return stop.value, asked


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
