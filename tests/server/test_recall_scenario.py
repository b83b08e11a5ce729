"""Issue 15's acceptance, end to end: a real ``jupyter server`` subprocess (the assembly as
production builds it), a real agent kernel, the fake model on loopback.

A fact the agent saves in chat A (``memory.save`` in a cell the fake's reply asks for) is
recalled in a new chat B: the model's first request holds the synthetic ``run_cell`` call
(``memory.search(...)``) and its result before the person's message, the ``recall`` event
and the turn record say what was recalled, the memory categories are in the system
prompt, the run replays identically (``jupyter agent replay``) and its exported notebook
has the synthetic cell. An irrelevant message recalls nothing; a forgotten fact is not
recalled again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.core.loop.machine import NEW_CHAT_LEAD
from jupyter_agent.core.memory.recall import HEADER
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.programs.builtin import run_refs
from jupyter_agent.trace.notebook_marks import TITLE
from jupyter_agent.trace.verify import verify_run
from tests.server.test_e2e import (
    Server,
    effect_log,
    new_chat,
    send,
    start_server,
    stop_server,
    wait_turn,
)
from tests.trace.logs_support import without_setup

pytestmark = pytest.mark.timeout(300)

#: What a toolcaller@v7 run records (issue 16): every program it used, hashed, its own first.
RUN_PROGRAMS = [ref.text for ref in run_refs("toolcaller@v8")]

FACT = "The person's favourite chart colour is teal."
SAVE = f"""
fact = memory.save({FACT!r}, category="preferences")
print(fact.startswith("mem_"), [m["category"] for m in memory.list()])
"""
QUESTION = "Which colour should the sales chart use?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    started = start_server(
        tmp_path_factory.mktemp("recall"),
        {"pool_size": 0, "cell_timeout_s": 30, "tiers": {"codegen": tier}},
        fake,
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def ask(server: Server, chat_id: str, text: str, steps: list[dict[str, Any]]) -> tuple[Any, Any]:
    """Send ``text``; the fake answers with ``steps``. (The turn, the run's first request.)"""
    server.fake.load(steps)
    before = len(server.fake.requests)
    with server.http() as client:
        run_id = send(client, chat_id, text)["run_id"]
        turn = wait_turn(client, chat_id, run_id, timeout_s=120)
    assert server.fake.remaining == 0
    return turn, server.fake.requests[before].json


def recalled_ids(request: dict[str, Any]) -> list[str]:
    """The ids the synthetic result shows (none: no synthetic call in the request)."""
    text = json.dumps(request["messages"])
    return [m for m in text.split('"') if m.startswith("mem_")] if "recall_1" in text else []


def chat_events(server: Server, chat_id: str) -> list[dict[str, Any]]:
    ws = server.events(chat_id)
    try:
        events = []
        while True:
            event = json.loads(ws.recv())
            events.append(event)
            if event["type"] == "run_end":
                return events
    finally:
        ws.close()


@pytest.fixture(scope="module")
def saved(server: Server) -> dict[str, Any]:
    """Chat A: the agent saves the fact from a cell."""
    with server.http() as client:
        chat_a = new_chat(client)
    turn, first = ask(
        server,
        chat_a,
        "Remember that I like teal for charts.",
        [
            {"text": "Saving that.", "cells": [SAVE]},
            {"expect": {"last_user_contains": "True ['preferences']"}, "text": "Saved."},
        ],
    )
    assert turn["replies"][-1]["text"] == "Saved."
    assert "recall_1" not in json.dumps(first)  # memory was empty: nothing recalled
    assert "recall" not in turn
    assert turn["programs"] == RUN_PROGRAMS
    with server.http() as client:
        [fact] = client.get("agent/memories").json()["memories"]
    assert (fact["text"], fact["category"], fact["author"]) == (FACT, "preferences", "agent")
    return {"chat_a": chat_a, "fact": fact}


@pytest.fixture(scope="module")
def recalled(server: Server, saved: dict[str, Any]) -> dict[str, Any]:
    """Chat B, new: the same person asks something the fact answers."""
    with server.http() as client:
        chat_b = new_chat(client)
    turn, request = ask(server, chat_b, QUESTION, [{"text": "Teal, as you prefer."}])
    return {"chat_b": chat_b, "turn": turn, "request": request, **saved}


def test_a_fact_saved_in_chat_a_is_recalled_in_chat_b_before_the_message(
    recalled: dict[str, Any],
) -> None:
    messages, fact = recalled["request"]["messages"], recalled["fact"]
    # A new chat has no window: a short user lead-in opens the conversation (the API
    # wants the user's message first; the fake refuses anything else, as it does), then
    # the synthetic call, its result first in the person's turn, then the message.
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["text"] for b in messages[0]["content"]] == [NEW_CHAT_LEAD]
    [call] = messages[1]["content"]
    assert call["type"] == "tool_use"
    assert (call["id"], call["name"]) == ("recall_1", "run_cell")
    assert call["input"]["code"] == f'memory.search("{QUESTION}", k=5, history=True)'
    result, message = messages[2]["content"]
    assert (result["type"], result["tool_use_id"]) == ("tool_result", "recall_1")
    shown = result["content"][0]["text"]
    assert shown.startswith(HEADER)
    first_hit = shown.splitlines()[1]
    assert first_hit.startswith("1. [memory · preferences · ")
    assert first_hit.endswith(FACT)
    assert message["type"] == "text"
    assert message["text"].endswith(QUESTION)
    # The turn record says what was recalled (the memory first: memories outrank turns).
    recall = recalled["turn"]["recall"]
    assert recall["program"] == "autorecall@v1"
    assert recall["hits"][0]["id"] == fact["id"]
    assert recall["hits"][0]["kind"] == "memory"
    assert 0 < recall["tokens"] <= 800
    assert recalled["turn"]["programs"] == RUN_PROGRAMS


def test_the_categories_reach_the_system_prompt(recalled: dict[str, Any]) -> None:
    system = recalled["request"]["system"][0]["text"]
    assert "# Memory categories in use\n\n- preferences (1)\n" in system
    assert "memory.save(" in system  # the memory app is listed for toolcaller@v7
    assert "memory.search(" in system


def test_the_recall_event_shows_what_the_model_read(
    server: Server, recalled: dict[str, Any]
) -> None:
    events = chat_events(server, recalled["chat_b"])
    [event] = [e for e in events if e["type"] == "recall"]
    assert event["run_id"] == recalled["turn"]["run_id"]
    assert [h["id"] for h in event["hits"]] == [h["id"] for h in recalled["turn"]["recall"]["hits"]]
    assert event["hits"][0]["text"] == recalled["fact"]["text"]
    assert event["tokens"] == recalled["turn"]["recall"]["tokens"]
    types = [e["type"] for e in events]
    assert types.index("run_start") < types.index("recall") < types.index("reply")


def test_a_recalled_run_replays_identically(
    server: Server, recalled: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = recalled["turn"]["run_id"]
    path = effect_log(server, run_id)
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert header["program"] == "toolcaller@v8"
    assert header["programs"] == RUN_PROGRAMS
    # The CLI fetches the log from the server and replays it: no model, no store, no kernel.
    addr = ["--addr", server.url, "--token", server.token]
    assert main(["replay", run_id, *addr]) == 0
    assert "identical" in capsys.readouterr().out
    assert verify_run(path).identical


def test_the_exported_notebook_has_the_synthetic_cell(
    server: Server, recalled: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "run.ipynb"
    addr = ["--addr", server.url, "--token", server.token]
    assert main(["export", recalled["turn"]["run_id"], "-o", str(out), *addr]) == 0
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    assert "'method': 'search'" not in nb.cells[0].source  # autorecall's search: no cell's
    without_setup(nb)
    kinds = [c.metadata["jupyter_agent"]["kind"] for c in nb.cells]
    assert kinds == ["user", "recall", "recall", "reply"]
    title, cell = nb.cells[1], nb.cells[2]
    assert TITLE in title.source
    assert cell.metadata["jupyter_agent"]["synthetic"] is True
    assert cell.metadata["jupyter_agent"]["program"] == "autorecall@v1"
    assert cell.source == f'memory.search("{QUESTION}", k=5, history=True)'
    assert cell.metadata["tags"] == ["skip-execution"]  # a re-run would search today's memory
    assert FACT in cell.outputs[0]["text"]


def test_an_irrelevant_message_recalls_nothing(server: Server, recalled: dict[str, Any]) -> None:
    with server.http() as client:
        chat_c = new_chat(client)
    turn, request = ask(
        server, chat_c, "How do I reverse a Python list in place?", [{"text": "lst.reverse()"}]
    )
    assert "recall_1" not in json.dumps(request["messages"])
    assert [m["role"] for m in request["messages"]] == ["user"]
    assert "recall" not in turn
    assert not [e for e in chat_events(server, chat_c) if e["type"] == "recall"]


def test_a_forgotten_fact_is_not_recalled_again(server: Server, recalled: dict[str, Any]) -> None:
    fact = recalled["fact"]
    with server.http() as client:
        assert client.delete(f"agent/memories/{fact['id']}").status_code == 204
        chat_d = new_chat(client)
    turn, request = ask(server, chat_d, QUESTION, [{"text": "Any colour you like."}])
    assert fact["id"] not in recalled_ids(request)
    assert FACT not in json.dumps(request["messages"])
    assert fact["id"] not in json.dumps(turn.get("recall"))
    # The categories follow: none left.
    assert "# Memory categories in use\n\nnone yet" in request["system"][0]["text"]
