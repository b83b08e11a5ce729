"""``toolcaller@v4`` and later: memory categories and ``autorecall@v1``, driven by hand (no I/O).

Each test answers the effects a host would: the window, the opening drain, ``config.get
memory`` (v6: ``config.get mcp``, no server here), at most one ``recall.search``, then one
model call. The request the loop builds
is checked on the wire (the fake provider speaks Anthropic's): the synthetic ``run_cell``
call and its result come after the boot window and before the person's message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.history.window import ChunkSummary, HistoryWindow, render_turn
from jupyter_agent.core.loop.drive import drive
from jupyter_agent.core.loop.machine import NEW_CHAT_LEAD, V6_PROGRAMS, program
from jupyter_agent.core.memory.recall import CALL_ID, HEADER, recall_code
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import Effect, Result
from jupyter_agent.llm.fake.script import SYNTHETIC_CALLS, turn_position
from jupyter_agent.trace.log import EffectLog
from jupyter_agent.trace.verify import verify_run
from tests.core.test_loop_history import earlier
from tests.core.test_loop_step import NOW, TIER, Stepper, configured, reply, text

#: The version these tests drive (v7's one start read: test_loop_start.py).
V6 = "toolcaller@v6"
LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
QUESTION = "What colour should the sales chart use?"
ASK = {"kind": "message", "text": QUESTION, "at": NOW}
ON = {"enabled": True, "k": 5, "budget_tokens": 800, "threshold": 0.3}
MEMORY = {"categories": [{"category": "preferences", "count": 2}], "recall": ON}


def fact(
    n: int = 1, score: float = 0.8, text: str = "The person likes teal charts."
) -> dict[str, Any]:
    return RecallHit(
        kind="memory",
        id=f"mem_{n}",
        chat_id="chat_a",
        text=text,
        score=score,
        created="2026-01-01T00:00:00.000Z",
        category="preferences",
    ).to_json()


def window(n: int = 0, **more: Any) -> dict[str, Any]:
    turns = tuple(earlier(i) for i in range(1, n + 1))
    return HistoryWindow(turns=turns, layout=LAYOUT, anchor=0, **more).to_json()


class Run:
    """A v4 run stepped to its first model call, then to its end (one reply)."""

    def __init__(
        self,
        history: dict[str, Any],
        memory: Any,
        *,
        drained: list[Any] | None = None,
        profile: Any = None,
        tier: Any = TIER,
    ) -> None:
        self.s = Stepper(program(V6, "run_1", "chat_b"))
        self.s.answer("clock.now", NOW)
        self.s.answer("config.get", {"history_budget_tokens": 2000})
        self.s.answer("config.get", {})  # spaces
        self.s.answer("config.get", tier)
        self.s.answer("config.get", profile)
        self.s.answer("config.get", history)
        self.s.answer("mailbox.drain", drained or [ASK])
        asked = self.s.answer("config.get", memory)
        assert asked.data == {"key": "memory"}
        assert self.s.answer("config.get", None).data == {"key": "mcp"}  # (v6) no server
        self.search: Effect | None = None

    def recall(self, data: Any = None, error: dict[str, Any] | None = None) -> Effect:
        self.search = self.s.answer("recall.search", data, error)
        return self.search

    def call(self) -> dict[str, Any]:
        self.s.answer("clock.now", NOW)
        post = self.s.answer("http.post", reply(text("Teal, as you like.")))
        return dict(post.data)

    def finish(self) -> dict[str, Any]:
        answers = {"chat.post": "msg_1", "clock.now": NOW, "id.new": "turn_1"}
        while self.s.effect is not None and self.s.effect.name != "turn.append":
            self.s.answer(self.s.effect.name, answers.get(self.s.effect.name))
        appended = self.s.answer("turn.append", {"ok": True})
        assert self.s.returned
        assert isinstance(self.s.value, TurnRecord)
        assert self.s.value.to_json() == appended.data
        return dict(appended.data)


def test_hits_become_a_synthetic_call_and_result_before_the_message() -> None:
    run = Run(window(2), MEMORY)
    search = run.recall({"hits": [fact()]})
    assert search.data == {
        "query": QUESTION,
        "k": 5,
        "threshold": 0.3,
        "budget_tokens": 800,
        "chat_id": "chat_b",
        "exclude_since": earlier(1).created,  # the oldest raw turn of the window
        "exclude_chunks": [],
    }
    request = run.call()["json"]
    messages = request["messages"]
    # The window (two turns), then the synthetic call merged into the last assistant turn
    # on Anthropic's wire, then its result opening the person's message.
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    call = messages[3]["content"][-1]
    assert call == {
        "type": "tool_use",
        "id": "recall_1",
        "name": "run_cell",
        "input": {"code": recall_code(QUESTION, 5)},
    }
    assert call["input"]["code"] == f'memory.search("{QUESTION}", k=5, history=True)'
    result, message = messages[4]["content"][0], messages[4]["content"][-1]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "recall_1"
    shown = result["content"][0]["text"]
    assert shown.startswith(HEADER)
    assert (
        "1. [memory · preferences · 2026-01-01 · score 0.80] The person likes teal charts." in shown
    )
    assert message["type"] == "text"
    assert message["text"].endswith(QUESTION)
    # The boot window's cache breakpoint stays on the window's last block (before recall).
    assert "cache_control" in messages[3]["content"][0]
    assert "cache_control" not in call
    assert "- preferences (2)" in request["system"][0]["text"]
    turn = run.finish()
    assert turn["recall"] == {
        "program": "autorecall@v1",
        "hits": [
            {
                "kind": "memory",
                "id": "mem_1",
                "chat_id": "chat_a",
                "score": 0.8,
                "text": "The person likes teal charts.",
            }
        ],
        "tokens": turn["recall"]["tokens"],
    }
    assert 0 < turn["recall"]["tokens"] <= 800
    assert turn["programs"] == ["toolcaller@v6", "autorecall@v1"] == list(V6_PROGRAMS)


def test_a_new_chat_gets_the_call_before_its_first_message() -> None:
    # Anthropic's wire: the first message must be the user's, so a short lead-in opens it.
    run = Run(window(0), MEMORY)
    search = run.recall({"hits": [fact()]})
    assert search.data["exclude_since"] is None
    messages = run.call()["json"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [(b["type"], b["text"]) for b in messages[0]["content"]] == [("text", NEW_CHAT_LEAD)]
    assert messages[1]["content"][0]["id"] == "recall_1"
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text"]
    assert messages[2]["content"][-1]["text"].endswith(QUESTION)
    assert NEW_CHAT_LEAD not in json.dumps(run.finish())  # the prompt's, not the record's


def test_a_new_chat_on_chat_completions_opens_with_the_users_message() -> None:
    tier = {"provider": "openai-compatible", "model": "qwen3", "base_url": "http://127.0.0.1:9/v1"}
    run = Run(window(0), MEMORY, tier=tier, profile={"tool_mode": "native"})
    run.recall({"hits": [fact()]})
    run.s.answer("clock.now", NOW)
    messages = run.s.asks("http.post").data["json"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[1]["content"] == NEW_CHAT_LEAD
    assert messages[2]["tool_calls"][0]["id"] == "recall_1"
    assert messages[3]["tool_call_id"] == "recall_1"
    assert messages[4]["content"].endswith(QUESTION)


def test_a_new_chat_without_hits_has_no_lead_in() -> None:
    run = Run(window(0), MEMORY)
    run.recall({"hits": []})
    messages = run.call()["json"]["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert NEW_CHAT_LEAD not in json.dumps(messages)


def test_the_fake_provider_reads_a_recalled_request_as_a_new_turn() -> None:
    # Its per-turn scripts (the demo model's) start every turn at their first step: the
    # synthetic call is not one of the model's replies.
    assert CALL_ID in SYNTHETIC_CALLS
    for history in (window(0), window(2)):
        run = Run(history, MEMORY)
        run.recall({"hits": [fact()]})
        assert turn_position("anthropic", run.call()["json"]) == 0


def test_the_windows_summaries_and_raw_turns_are_left_out_of_the_search() -> None:
    chunks = (ChunkSummary(level=1, first_turn=1, last_turn=10, text="turns 1+ were about x"),)
    turns = tuple(earlier(i) for i in range(11, 14))
    history = HistoryWindow(
        turns=turns, omitted=10, chunks=chunks, layout=LAYOUT, anchor=11
    ).to_json()
    run = Run(history, MEMORY)
    search = run.recall({"hits": []})
    assert search.data["exclude_chunks"] == [[1, 1]]
    assert search.data["exclude_since"] == earlier(11).created


def test_no_hits_injects_nothing_and_records_no_recall() -> None:
    run = Run(window(1), MEMORY)
    run.recall({"hits": []})
    messages = run.call()["json"]["messages"]
    assert "recall_1" not in json.dumps(messages)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    turn = run.finish()
    assert "recall" not in turn
    assert turn["programs"] == ["toolcaller@v6", "autorecall@v1"]


def test_hits_below_the_threshold_or_past_the_budget_are_not_shown() -> None:
    memory = {**MEMORY, "recall": {**ON, "threshold": 0.5, "budget_tokens": 120}}
    run = Run(window(0), memory)
    long = fact(2, 0.9, "y" * 2000)  # a performer that did not pack: the loop bounds it
    run.recall({"hits": [fact(1, 0.4), long, fact(3, 0.6, "Charts are teal.")]})
    shown = json.dumps(run.call()["json"]["messages"])
    assert "Charts are teal." in shown
    assert "mem_1" not in json.dumps(run.finish()["recall"])
    assert "yyyy" not in shown


@pytest.mark.parametrize(
    "memory",
    [
        {**MEMORY, "recall": {**ON, "enabled": False}},
        {"categories": []},  # no recall settings: off
        None,
    ],
)
def test_recall_off_makes_no_search(memory: Any) -> None:
    run = Run(window(1), memory)
    assert run.s.asks("clock.now")  # straight to the first model call
    run.call()
    assert "recall" not in run.finish()


def test_a_message_without_query_terms_makes_no_search() -> None:
    run = Run(window(0), MEMORY, drained=[{**ASK, "text": "?! ..."}])
    assert run.s.asks("clock.now")


def test_a_failed_search_goes_on_without_recall() -> None:
    run = Run(window(1), MEMORY)
    run.recall(None, {"type": "StoreUnavailable", "message": "locked"})
    messages = run.call()["json"]["messages"]
    assert "recall_1" not in json.dumps(messages)
    turn = run.finish()
    assert turn["llm"]["stopReason"] == "done"
    assert "recall" not in turn


@pytest.mark.parametrize("answer", [{"hits": [{"kind": "memory"}]}, {"hits": "x"}, []])
def test_an_unreadable_answer_is_no_recall(answer: Any) -> None:
    run = Run(window(0), MEMORY)
    run.recall(answer)
    assert "recall_1" not in json.dumps(run.call())


def test_a_failed_memory_read_is_no_categories_and_no_recall() -> None:
    s = Stepper(program(V6, "run_1", "chat_b"))
    configured(s)
    s.answer("config.get", window(0))
    s.answer("mailbox.drain", [ASK])
    s.answer("config.get", None, {"type": "StoreUnavailable", "message": "locked"})
    s.answer("config.get", None)  # (v6) mcp: no server
    s.answer("clock.now", NOW)
    post = s.answer("http.post", reply(text("ok")))
    assert "# Memory categories in use\n\nnone yet" in post.data["json"]["system"][0]["text"]


def _system(categories: list[dict[str, Any]]) -> tuple[str, str]:
    run = Run(window(0), {"categories": categories, "recall": {"enabled": False}})
    request = run.call()
    turn = run.finish()
    return request["json"]["system"][0]["text"], turn["llm"]["fingerprints"]["system"]


def test_the_prompt_lists_categories_with_counts_and_the_fingerprint_ignores_counts() -> None:
    text, fp = _system([{"category": "project", "count": 3}, {"category": "data", "count": 1}])
    assert "# Memory categories in use\n\n- data (1)\n- project (3)\n" in text
    more, fp_more = _system([{"category": "project", "count": 9}, {"category": "data", "count": 2}])
    assert more != text
    assert fp_more == fp  # one more fact in a category: the same system fingerprint
    _, fp_new = _system([{"category": "project", "count": 9}, {"category": "people", "count": 1}])
    assert fp_new != fp  # a new category: a new one
    empty, fp_empty = _system([])
    assert "# Memory categories in use\n\nnone yet" in empty
    assert fp_empty != fp


def test_fenced_mode_renders_the_call_and_result_as_text() -> None:
    run = Run(window(1), MEMORY, profile={"tool_mode": "fenced"})
    run.recall({"hits": [fact()]})
    messages = run.call()["json"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    said = messages[1]["content"][-1]["text"]
    assert said == f"```python\n{recall_code(QUESTION, 5)}\n```"
    result = messages[2]["content"][0]["text"]
    assert result.startswith("Result of run_cell:\n```result\n" + HEADER)
    assert result.rstrip().endswith(QUESTION)


def test_chat_completions_get_one_assistant_turn_and_a_tool_message() -> None:
    tier = {"provider": "openai-compatible", "model": "qwen3", "base_url": "http://127.0.0.1:9/v1"}
    run = Run(window(1), MEMORY, tier=tier, profile={"tool_mode": "native"})
    run.recall({"hits": [fact()]})
    run.s.answer("clock.now", NOW)
    messages = run.s.asks("http.post").data["json"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assistant = messages[2]
    assert assistant["content"].startswith("answer 1 ")  # the window's last reply, then
    [call] = assistant["tool_calls"]  # the synthetic call, in the same turn
    assert (call["id"], call["function"]["name"]) == ("recall_1", "run_cell")
    assert json.loads(call["function"]["arguments"]) == {"code": recall_code(QUESTION, 5)}
    assert messages[3]["tool_call_id"] == "recall_1"
    assert messages[3]["content"].startswith(HEADER)
    assert messages[4]["content"].endswith(QUESTION)


def test_the_window_never_renders_a_turns_recall() -> None:
    run = Run(window(0), MEMORY)
    run.recall({"hits": [fact()]})
    run.call()
    turn = TurnRecord.from_json(run.finish())
    assert turn.recall is not None
    user, assistant = render_turn(turn)
    assert "teal charts" not in user + assistant
    assert "recall" not in json.dumps(HistoryWindow(turns=(turn,)).to_json())


def test_v3_asks_no_memory_and_records_no_programs() -> None:
    s = Stepper(program("toolcaller@v3", "run_1", "chat_b"))
    configured(s)
    s.answer("config.get", window(0))
    s.answer("mailbox.drain", [ASK])
    s.answer("clock.now", NOW)  # no config.get memory, no recall.search
    s.answer("http.post", reply(text("ok")))
    s.answer("chat.post", "msg_1")
    s.answer("clock.now", NOW)
    s.answer("id.new", "turn_1")
    appended = s.answer("turn.append", {"ok": True})
    assert "programs" not in appended.data
    assert "recall" not in appended.data


# --- replay --------------------------------------------------------------------------


def record(path: Path, answer: Callable[[Effect], Any]) -> TurnRecord:
    """Run v4 against ``answer`` (the world), writing its effect log at ``path``."""
    header = {"run_id": "run_1", "chat_id": "chat_b", "program": V6, "created": NOW}
    with EffectLog.create(path, header) as log:

        def perform(effect: Effect) -> Result:
            seq = log.intent(effect)
            return log.result(seq, effect.name, answer(effect))

        turn = drive(program(V6, "run_1", "chat_b"), perform)
    assert isinstance(turn, TurnRecord)
    return turn


def world(hits: list[dict[str, Any]]) -> Callable[[Effect], Any]:
    def answer(effect: Effect) -> Any:
        key = effect.data.get("key")
        fixed: dict[Any, Any] = {
            "ceilings": {},
            "spaces": {},
            "llm.tier.codegen": TIER,
            "history": window(1),
            "memory": MEMORY,
        }
        if effect.name == "config.get":
            return fixed.get(key)
        return {
            "clock.now": NOW,
            "mailbox.drain": [ASK],
            "recall.search": {"hits": hits},
            "http.post": reply(text("Teal.")),
            "chat.post": "msg_1",
            "id.new": "turn_1",
            "turn.append": {"ok": True},
        }[effect.name]

    return answer


def test_a_recalled_run_replays_identically_and_a_changed_search_diverges(tmp_path: Path) -> None:
    turn = record(tmp_path / "run_1.jsonl", world([fact()]))
    assert turn.recall is not None
    outcome = verify_run(tmp_path / "run_1.jsonl")
    assert outcome.identical, outcome.message
    # The search is the recorded effect: a replay never reads today's memory.
    lines = (tmp_path / "run_1.jsonl").read_text().splitlines()
    names = [json.loads(line).get("name") for line in lines[1:]]
    assert names.count("recall.search") == 2  # its intent and result
    # Another answer to the search is another prompt: the replay diverges at the model call.
    edited = [
        line.replace("likes teal", "likes red") if '"recall.search"' in line else line
        for line in lines
    ]
    (tmp_path / "edited.jsonl").write_text("\n".join(edited) + "\n")
    changed = verify_run(tmp_path / "edited.jsonl")
    assert not changed.identical
    assert changed.recorded is not None
    assert changed.recorded["name"] == "http.post"
