"""The ``plan_first`` example program, pure: replayed over its recorded scenario and driven
by hand against a world built from that scenario's results (no model, no kernel)."""

from __future__ import annotations

import copy
import inspect
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from examples.programs.plan_first.plan import GO_PROMPT, PLAN_MAX_TOKENS, PLAN_PROMPT
from examples.programs.plan_first.program import program
from jupyter_agent.core.loop.drive import drive
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import EFFECT_NAMES, Effect, Result
from jupyter_agent.trace.log import TraceFile, read_log
from jupyter_agent.trace.replay import replay

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "programs" / "plan_first"
SCENARIO = FOLDER / "scenarios" / "plan_first.jsonl"


@pytest.fixture(scope="module")
def trace() -> TraceFile:
    return read_log(SCENARIO)


def run_of(trace: TraceFile) -> tuple[str, str]:
    return str(trace.header["run_id"]), str(trace.header["chat_id"])


def recorded(trace: TraceFile, name: str, phase: str = "result") -> list[Any]:
    return [line.data for line in trace.lines if line.name == name and line.phase == phase]


def reply(text: str = "", *, cells: tuple[str, ...] = (), stop: str | None = None) -> Any:
    """An Anthropic Messages reply body, as the transport records it."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for n, code in enumerate(cells):
        content.append(
            {"type": "tool_use", "id": f"toolu_{n}", "name": "run_cell", "input": {"code": code}}
        )
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop or ("tool_use" if cells else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return {"status": 200, "json": body, "attempts": [{"status": 200, "error": None, "wait_s": 0}]}


class World:
    """Answers effects by name from the scenario's results in order (the last repeats),
    except ``http.post`` (``replies``, in order: a dict is a result's data, ``("error",
    {...})`` an error, ``"cancel"`` a hard break) and ``mailbox.drain`` after the first
    (``mail``, in order, then empty). Records every effect asked."""

    def __init__(
        self,
        trace: TraceFile,
        replies: list[Any],
        *,
        mail: list[list[dict[str, Any]]] | None = None,
        ceilings: dict[str, Any] | None = None,
    ) -> None:
        self.queues: dict[str, list[Any]] = defaultdict(list)
        for line in trace.lines:
            if line.phase == "result" and line.name not in ("http.post", "config.get"):
                self.queues[line.name].append(line.data)
        intents = recorded(trace, "config.get", "intent")
        answers = recorded(trace, "config.get")
        self.config = {i["key"]: r for i, r in zip(intents, answers, strict=True)}
        if ceilings is not None:
            self.config["ceilings"] = ceilings
        self.replies = list(replies)
        self.mail = list(mail or [])
        self.asked: list[Effect] = []
        self.drains = 0

    def __call__(self, effect: Effect) -> Result:
        assert effect.name in EFFECT_NAMES
        self.asked.append(effect)
        seq = len(self.asked)
        if effect.name == "config.get":
            return Result(
                seq=seq, name=effect.name, data=copy.deepcopy(self.config[effect.data["key"]])
            )
        if effect.name == "http.post":
            answer = self.replies.pop(0)
            if answer == "cancel":
                return Result(seq=seq, name=effect.name, data={"cancelled": "break_hard"})
            if isinstance(answer, tuple):
                return Result(seq=seq, name=effect.name, error=answer[1])
            return Result(seq=seq, name=effect.name, data=answer)
        if effect.name == "mailbox.drain":
            self.drains += 1
            if self.drains > 1:
                return Result(seq=seq, name=effect.name, data=self.mail.pop(0) if self.mail else [])
        queue = self.queues[effect.name]
        data = queue.pop(0) if len(queue) > 1 else queue[0]
        return Result(seq=seq, name=effect.name, data=copy.deepcopy(data))

    def requests(self) -> list[dict[str, Any]]:
        return [e.data["json"] for e in self.asked if e.name == "http.post"]

    def posts(self) -> list[tuple[str, bool]]:
        return [(e.data["text"], e.data["done"]) for e in self.asked if e.name == "chat.post"]


def user_text(message: dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def test_entry_point_is_a_generator_function() -> None:
    assert inspect.isgeneratorfunction(program)
    meta = json.loads((FOLDER / "program.json").read_text())
    assert meta["entry"] == "program"
    assert meta["uses"] == ["llm@v1", "history@v1", "autorecall@v1"]
    assert meta["description"]


def test_the_recorded_scenario_replays_identically(trace: TraceFile) -> None:
    turn = replay(program(*run_of(trace)), trace)
    assert isinstance(turn, TurnRecord)
    assert turn.llm.stop_reason == "done"
    assert turn.llm.end_cause == "done"
    assert turn.llm.model_calls == 3
    assert turn.llm.cells == 1
    plan = recorded(trace, "chat.post", "intent")[0]
    assert plan["done"] is False
    assert plan["text"].startswith("1. ")
    assert next((r.text, r.done) for r in turn.replies) == (plan["text"], False)
    assert turn.replies[-1].done
    assert "385" in turn.replies[-1].text
    assert turn.programs is None  # the host names the programs (the driver's header list)
    # The turn's record is what the log's turn.append holds.
    assert recorded(trace, "turn.append", "intent")[0] == turn.to_json()


def test_the_scenario_was_recorded_from_a_deployed_version(trace: TraceFile) -> None:
    assert trace.header["program"] == "toolcaller@v5"
    assert trace.header["programs"][0].startswith("toolcaller@v5#")
    assert [p.split("#")[0] for p in trace.header["programs"][1:]] == [
        "llm@v1",
        "history@v1",
        "autorecall@v1",
    ]


def test_the_plan_is_posted_before_the_first_cell(trace: TraceFile) -> None:
    names = [line.name for line in trace.lines if line.phase == "intent"]
    assert names.index("chat.post") < names.index("cell.run")
    assert names.count("http.post") == 3


def test_the_planning_call_offers_no_tool_and_the_loop_reads_the_plan(trace: TraceFile) -> None:
    planning, first, _ = (intent["json"] for intent in recorded(trace, "http.post", "intent"))
    assert "tools" not in planning
    assert planning["max_tokens"] == PLAN_MAX_TOKENS
    assert PLAN_PROMPT in user_text(planning["messages"][-1])
    assert "tools" in first  # the tool loop offers run_cell (and bash)
    roles = [m["role"] for m in first["messages"]]
    assert roles == ["user", "assistant", "user"]
    plan_text = recorded(trace, "chat.post", "intent")[0]["text"]
    assert user_text(first["messages"][1]) == plan_text
    assert user_text(first["messages"][2]) == GO_PROMPT


def test_a_tool_call_in_the_planning_reply_is_not_run(trace: TraceFile) -> None:
    world = World(trace, [reply("1. Look.", cells=("print(1)",)), reply("Done.")])
    turn = drive(program(*run_of(trace)), world)
    assert turn.llm.cells == 0
    assert world.posts() == [("1. Look.", False), ("Done.", True)]
    second = world.requests()[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert all(p["type"] == "text" for p in second[1]["content"])


def test_an_empty_plan_leaves_the_conversation_as_it_was(trace: TraceFile) -> None:
    world = World(trace, [reply(""), reply("Done.")])
    turn = drive(program(*run_of(trace)), world)
    assert world.posts() == [("Done.", True)]
    assert turn.llm.model_calls == 2
    second = world.requests()[1]["messages"]
    assert len(second) == 1
    assert PLAN_PROMPT not in user_text(second[0])


def test_a_message_sent_while_planning_steers_the_first_tool_call(trace: TraceFile) -> None:
    mail = [[{"kind": "message", "text": "use a formula", "at": "2026-01-01T00:00:00.000Z"}]]
    world = World(trace, [reply("1. Sum."), reply("n(n+1)(2n+1)/6 = 385.")], mail=mail)
    turn = drive(program(*run_of(trace)), world)
    assert [s.text for s in turn.steering] == ["use a formula"]
    assert "use a formula" in user_text(world.requests()[1]["messages"][-1])


def test_a_soft_break_while_planning_wraps_up(trace: TraceFile) -> None:
    mail = [[{"kind": "break"}]]
    world = World(trace, [reply("1. Sum."), reply("Stopped after planning.")], mail=mail)
    turn = drive(program(*run_of(trace)), world)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "break_soft")
    assert world.posts() == [("1. Sum.", False), ("Stopped after planning.", True)]
    assert "tools" not in world.requests()[1]


def test_the_model_call_ceiling_counts_the_plan(trace: TraceFile) -> None:
    world = World(
        trace, [reply("1. Sum."), reply("Out of calls.")], ceilings={"max_model_calls": 1}
    )
    turn = drive(program(*run_of(trace)), world)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "ceiling:model_calls")
    assert turn.llm.model_calls == 2  # the plan and the wrap-up, as v4 counts a wrap-up


def test_a_hard_break_during_the_plan_ends_with_a_minimal_turn(trace: TraceFile) -> None:
    world = World(trace, ["cancel"])
    turn = drive(program(*run_of(trace)), world)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("break_hard", "break_hard")
    assert turn.interrupted
    assert world.posts() == []
    assert world.asked[-1].name == "turn.append"


def test_a_failed_planning_call_ends_the_run_saying_so(trace: TraceFile) -> None:
    error = {
        "type": "ProviderStatusError",
        "error": "ProviderStatusError",
        "message": "overloaded",
        "status": 529,
        "attempts": [{"status": 529}, {"status": 529}],
    }
    world = World(trace, [("error", error)])
    turn = drive(program(*run_of(trace)), world)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "error")
    assert turn.llm.model_calls == 1
    [(text, done)] = world.posts()
    assert done
    assert "The model call failed (HTTP 529) after 2 attempts" in text
