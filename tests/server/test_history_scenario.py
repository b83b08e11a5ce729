"""Issue 14's scenario through a real Jupyter Server: a 60-turn chat with a small context
window gets level-1 and level-2 summaries from the classify tier, and turn 61's prompt holds
the older material (level-2, then level-1 summaries) ahead of the raw turns, covering turn 1:
a fact said in turn 1 reaches the model through a summary.

Two fakes on loopback: one answers the chat (codegen), one the summaries (classify). The
scheduler is let finish after each turn, so the summary requests come in a known order and
the classify script can check each one and answer it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jupyter_agent.core.history.chunks import closed_spans
from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

CODEGEN = "claude-sonnet-4-5"
CLASSIFY = "claude-haiku-4-5"
CHUNK_TURNS, L2_CHUNKS, TURNS = 5, 3, 60
FACT = "the launch code is 4817"


def _summary_script() -> list[dict[str, Any]]:
    """One step per summary, in the order the scheduler makes them (oldest first, level 1
    before level 2, as each chunk closes); the first chunk's and every level-2 span over
    it carry the fact (each checked: the fact must be in what it summarises)."""
    steps: list[dict[str, Any]] = []
    have: set[tuple[int, int]] = set()
    for count in range(1, TURNS + 1):
        while due := closed_spans(count, CHUNK_TURNS, L2_CHUNKS, have):
            span = due[0]  # one at a time, the oldest first, as the scheduler makes them
            have.add((span.level, span.first_turn))
            step: dict[str, Any] = {"expect": {"model": CLASSIFY}}
            if span.first_turn == 1:
                step["expect"]["last_user_contains"] = "4817"
                step["text"] = f"Early on the person said {FACT}; keep it."
            else:
                step["text"] = (
                    f"Turns {span.first_turn}-{span.last_turn}: small talk about the weather, "
                    "the office, lunch plans, the train home and other things of no consequence."
                )
            steps.append(step)
    return steps


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def chat_fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def summary_fake(fake_provider: Any) -> Any:
    return fake_provider(_summary_script())


@pytest.fixture
def jp_server_config(chat_fake: Any, summary_fake: Any) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {
            "pool_size": 0,
            "tiers": {
                "codegen": {"provider": "fake", "model": CODEGEN, "base_url": chat_fake.base_url},
                "classify": {
                    "provider": "fake",
                    "model": CLASSIFY,
                    "base_url": summary_fake.base_url,
                },
            },
            # A small window: a quarter of 2,400 tokens for the history.
            "profiles": {CODEGEN: {"context_window": 2400}},
            # The classify script answers the summaries, in order: no naming call between
            # (naming has its own tests: tests/server/test_chat_naming.py).
            "name_chats": False,
        },
        "RunManager": {"chunk_turns": CHUNK_TURNS, "l2_chunks": L2_CHUNKS},
    }


def _say(fetch: Any, spin: Any, loop: Any, service: Any, chat_id: str, text: str) -> str:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    loop.run_until_complete(asyncio.wait_for(service.history.idle(), 30))
    return str(answer["run_id"])


def test_turn_61_reads_turn_1_through_the_summaries(
    fetch: Any,
    spin: Any,
    jp_asyncio_loop: Any,
    agent_service: Any,
    chat_fake: Any,
    summary_fake: Any,
) -> None:
    chat_id = new_chat(fetch)
    _say(fetch, spin, jp_asyncio_loop, agent_service, chat_id, f"Remember: {FACT}.")
    for n in range(2, TURNS + 1):
        words = " ".join(["and", "so", "on"] * 6)
        _say(fetch, spin, jp_asyncio_loop, agent_service, chat_id, f"message {n}: {words}")
    assert summary_fake.remaining == 0  # every summary was asked for, in order
    _, history = call(fetch, "agent", "chats", chat_id, "history")
    levels = [(c["level"], c["first_turn"], c["last_turn"]) for c in history["chunks"]]
    assert len([lv for lv in levels if lv[0] == 1]) == TURNS // CHUNK_TURNS
    assert (2, 1, CHUNK_TURNS * L2_CHUNKS) in levels
    assert history["pending"] == 0
    assert all(r.json["model"] == CLASSIFY for r in summary_fake.requests)
    # Each was published on the chat's events as it was made: `summary` {chunk}.
    made = [e for e in agent_service.events.since(chat_id, 0) if e["type"] == "summary"]
    in_order = sorted(history["chunks"], key=lambda c: c["created"])  # as they were made
    assert made
    assert [e["chunk"] for e in made] == in_order[-len(made) :]
    assert all(e["run_id"] == e["chunk"]["run_id"] for e in made)
    assert made[-1]["chunk"]["level"] == 2

    before = len(chat_fake.requests)
    run_id = _say(fetch, spin, jp_asyncio_loop, agent_service, chat_id, "What was the code?")
    prompt = chat_fake.requests[before].json["messages"]
    first_user = prompt[0]["content"]
    older = first_user[0]["text"]  # the older material: its own block, ahead of raw turns
    assert "[summary of turns 1-15]" in older
    assert FACT in older
    # Turn 1 itself is not in the window (toolcaller@v4's autorecall may bring it back: a
    # recalled earlier turn of this chat, in the synthetic result before the message).
    blocks = [b for m in prompt for b in m["content"]]
    window = [b for b in blocks if "recall_1" not in (b.get("id"), b.get("tool_use_id"))]
    assert f"Remember: {FACT}" not in str(window)
    # Level 2 first (oldest), then level 1, then the raw turns.
    assert older.index("[summary of turns 1-15]") < older.index("[summary of turns", 30)
    _, turn = call(fetch, "agent", "runs", run_id)
    window = turn["turn"]["llm"]["window"]
    assert window["l2"] >= 1
    assert window["l1"] >= 1
    assert window["raw"] >= 1
    assert window["tokens"] <= 2400 // 4 + 50
    # A summary run replays identically, with no model.
    _, runs = call(fetch, "agent", "runs", params={"program": "history"})
    assert {r["chat_id"] for r in runs["runs"]} == {chat_id}
    first = min(runs["runs"], key=lambda r: r["started"])
    assert verify_run(agent_service.manager.log_path(first["run_id"])).identical
