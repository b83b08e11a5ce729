"""``setup``, ``step`` and ``end`` of toolcaller@v1 driven by hand (next/send, no I/O).

In the style of httpx's auth-flow tests: each test steps the generator, checks the effect
it asks for, and sends the answer a host would give. One test per branch.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.loop.machine import Turn, end, setup, step
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import Effect, EffectGen, Result
from jupyter_agent.exceptions import ProviderStatusError, RunCancelled

NOW = "2026-01-01T00:00:00.000Z"
TIER = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}
HELLO = {"kind": "message", "text": "hi", "at": NOW}


def reply(*content: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(content),
        "stop_reason": stop,
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
    return {"status": 200, "json": body, "attempts": []}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def cell(code: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "run_cell", "input": {"code": code}}


class Stepper:
    """Steps a generator: ``asks(name)`` checks the next effect, ``send`` answers it."""

    def __init__(self, gen: EffectGen[Any]) -> None:
        self.gen = gen
        self.seq = 0
        self.effect: Effect | None = next(gen)
        self.value: Any = None

    def asks(self, name: str) -> Effect:
        assert self.effect is not None, "the generator has returned"
        assert self.effect.name == name, (self.effect.name, self.effect.data)
        return self.effect

    def send(self, data: Any = None, error: dict[str, Any] | None = None) -> None:
        assert self.effect is not None
        self.seq += 1
        try:
            self.effect = self.gen.send(
                Result(seq=self.seq, name=self.effect.name, data=data, error=error)
            )
        except StopIteration as stop:
            self.effect, self.value = None, stop.value

    def answer(self, name: str, data: Any = None, error: dict[str, Any] | None = None) -> Effect:
        effect = self.asks(name)
        self.send(data, error)
        return effect

    @property
    def returned(self) -> bool:
        return self.effect is None


def configured(s: Stepper, ceilings: dict[str, Any] | None = None, tier: Any = TIER) -> None:
    s.answer("clock.now", NOW)
    s.answer("config.get", ceilings or {})
    s.answer("config.get", {})  # spaces
    s.answer("config.get", tier)  # llm.tier.codegen
    s.answer("config.get", None)  # llm.profile.<model>


def make_turn(ceilings: dict[str, Any] | None = None, drained: list[Any] | None = None) -> Turn:
    s = Stepper(setup("run_1", "chat_1", version=3))  # v4's memory steps: test_loop_recall
    configured(s, ceilings)
    s.answer("config.get", [])  # history
    s.answer("mailbox.drain", drained if drained is not None else [HELLO])
    assert s.returned
    assert isinstance(s.value, Turn)
    return s.value


def finishes(s: Stepper) -> TurnRecord:
    s.answer("clock.now", NOW)
    s.answer("id.new", "turn_1")
    appended = s.answer("turn.append", {"ok": True})
    assert s.returned
    assert isinstance(s.value, TurnRecord)
    assert appended.data == s.value.to_json()
    return s.value


# --- setup ---------------------------------------------------------------------------------


def test_setup_builds_the_turn_from_config_and_the_opening_drain() -> None:
    more = {"kind": "message", "text": "and more", "at": NOW}
    turn = make_turn(drained=[HELLO, more])
    assert turn.user_text == "hi"
    assert [m.text for m in turn.state.steering] == ["and more"]
    assert set(turn.state.fingerprints) == {"system", "identity"}
    assert turn.messages[-1].role == "user"
    assert "and more" in str(turn.messages[-1])


def test_setup_digest_options_come_from_ceilings_spaces_and_profile() -> None:
    s = Stepper(setup("run_1", "chat_1", version=3))
    s.answer("clock.now", NOW)
    s.answer("config.get", {"value_budget_tokens": 400, "total_budget_tokens": 2000})
    s.answer("config.get", {"env_prefix": "/opt/env", "home": "/home/me"})
    s.answer("config.get", TIER)
    s.answer("config.get", {"vision": True})  # llm.profile.<model>
    s.answer("config.get", [])
    s.answer("mailbox.drain", [HELLO])
    assert isinstance(s.value, Turn)
    assert s.value.options == DigestOptions(
        value_budget_tokens=400,
        total_budget_tokens=2000,
        vision=True,
        env_prefix="/opt/env",
        home="/home/me",
    )


def test_setup_with_a_bad_tier_says_so_and_ends() -> None:
    s = Stepper(setup("run_1", "chat_1", version=6))
    configured(s, tier={"provider": "no-such-provider", "model": "m"})
    s.answer("mailbox.drain", [HELLO])
    post = s.answer("chat.post", "msg_1")
    assert post.data["done"] is True
    assert "not configured correctly" in post.data["text"]
    record = finishes(s)
    assert (record.llm.stop_reason, record.user_text) == ("error", "hi")


@pytest.mark.parametrize(
    ("drained", "stop", "user_text"),
    [
        ([], "error", ""),
        ([HELLO, {"kind": "break", "hard": True, "at": NOW}], "break_hard", "hi"),
    ],
)
def test_setup_ends_at_once_with_nothing_to_answer_or_a_hard_break(
    drained: list[Any], stop: str, user_text: str
) -> None:
    s = Stepper(setup("run_1", "chat_1", version=6))
    configured(s)
    s.answer("config.get", [])
    s.answer("mailbox.drain", drained)
    record = finishes(s)
    assert (record.llm.stop_reason, record.user_text) == (stop, user_text)


# --- step ----------------------------------------------------------------------------------


def test_step_done_posts_the_final_reply() -> None:
    turn = make_turn()
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(text("All good.")))
    assert s.answer("chat.post", "msg_1").data == {"text": "All good.", "done": True}
    assert (s.returned, s.value) == (True, "done")
    assert [(r.text, r.done) for r in turn.state.replies] == [("All good.", True)]


def test_step_deferred_final_reply_becomes_a_bubble_and_goes_on() -> None:
    turn = make_turn()
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(text("Answer.")))
    late = {"kind": "message", "text": "wait, also", "at": NOW}
    s.answer("chat.post", {"deferred": [late]})
    assert s.answer("chat.post", "msg_2").data == {"text": "Answer.", "done": False}
    assert (s.returned, s.value) == (True, None)
    assert [m.text for m in turn.state.steering] == ["wait, also"]
    assert "wait, also" in str(turn.messages[-1])


def test_step_tool_call_posts_the_text_runs_the_cell_and_goes_on() -> None:
    turn = make_turn()
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(text("Looking."), cell("print(1)"), stop="tool_use"))
    assert s.answer("chat.post", "msg_1").data == {"text": "Looking.", "done": False}
    run = s.answer("cell.run", {"cell_id": "c1", "prints": [{"text": "1"}]})
    assert run.data["code"] == "print(1)"
    assert (s.returned, s.value) == (True, None)
    assert turn.messages[-1].role == "user"
    assert turn.state.cells == 1


def test_step_past_the_cell_ceiling_answers_the_rest_as_not_run_and_wraps_up() -> None:
    turn = make_turn(ceilings={"max_cells": 1})
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    second = {**cell("print(2)"), "id": "t2"}
    s.answer("http.post", reply(cell("print(1)"), second, stop="tool_use"))
    s.answer("cell.run", {"cell_id": "c1"})
    assert (s.returned, s.value) == (True, "ceiling:cells")
    assert "Not run: the cell ceiling" in str(turn.messages[-1])


def test_step_length_stop_asks_to_wrap_up() -> None:
    s = Stepper(step(make_turn(), drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(text("I was going"), stop="max_tokens"))
    assert (s.returned, s.value) == (True, "length")


def test_step_drains_steering_and_a_soft_break_first() -> None:
    turn = make_turn()
    s = Stepper(step(turn, drain_first=True))
    steer = {"kind": "message", "text": "steer", "at": NOW}
    s.answer("mailbox.drain", [steer, {"kind": "break", "hard": False, "at": NOW}])
    assert (s.returned, s.value) == (True, "break_soft")
    assert [m.text for m in turn.state.steering] == ["steer"]


def test_step_hard_break_in_a_drain_raises() -> None:
    s = Stepper(step(make_turn(), drain_first=True))
    s.asks("mailbox.drain")
    with pytest.raises(RunCancelled):
        s.send([{"kind": "break", "hard": True, "at": NOW}])


def test_step_ceiling_on_wall_time() -> None:
    s = Stepper(step(make_turn(ceilings={"max_wall_s": 1}), drain_first=False))
    s.answer("clock.now", "2026-01-01T00:00:05.000Z")
    assert (s.returned, s.value) == (True, "ceiling:wall_s")


def test_step_provider_error_raises() -> None:
    s = Stepper(step(make_turn(), drain_first=False))
    s.answer("clock.now", NOW)
    s.asks("http.post")
    with pytest.raises(ProviderStatusError):
        s.send(None, {"type": "ProviderStatusError", "message": "boom", "status": 500})


def test_step_cancelled_cell_raises_with_its_detail() -> None:
    s = Stepper(step(make_turn(), drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(cell("go()"), stop="tool_use"))
    s.asks("cell.run")
    with pytest.raises(RunCancelled) as info:
        s.send({"cancelled": "break_hard", "bubbles": ["half"]})
    assert info.value.detail["bubbles"] == ["half"]


# --- end -----------------------------------------------------------------------------------


def test_end_done_writes_the_turn() -> None:
    record = finishes(Stepper(end(make_turn(), "done")))
    assert (record.llm.stop_reason, record.llm.end_cause) == ("done", "done")


def test_end_wraps_up_with_a_text_only_call() -> None:
    turn = make_turn()
    s = Stepper(end(turn, "ceiling:model_calls"))
    call = s.answer("http.post", reply(text("Summary.")))
    assert "tools" not in call.data["json"]
    assert "all the model calls" in str(call.data["json"]["messages"][-1])
    assert s.answer("chat.post", "msg_1").data == {"text": "Summary.", "done": True}
    record = finishes(s)
    assert (record.llm.stop_reason, record.llm.end_cause) == ("wrapup", "ceiling:model_calls")


def test_step_deferred_mail_survives_a_hard_break_during_the_bubble() -> None:
    turn = make_turn()
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(text("Answer.")))
    late = {"kind": "message", "text": "wait, also", "at": NOW}
    s.answer("chat.post", {"deferred": [late]})
    s.asks("chat.post")  # the bubble
    with pytest.raises(RunCancelled):
        s.send({"cancelled": "break_hard"})
    assert [m.text for m in turn.state.steering] == ["wait, also"]
