"""Chunk summaries through a real Jupyter Server: chat turns end, the scheduler makes the
summary in a ``history@v1`` run, listed by ``GET agent/runs?program=history``, shown and
costed by the run routes, and counted in ``GET agent/status``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

CODEGEN = "claude-sonnet-4-5"
CLASSIFY = "claude-haiku-4-5"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    return {
        "pool_size": 0,
        "tiers": {
            "codegen": {"provider": "fake", "model": CODEGEN, "base_url": fake.base_url},
            "classify": {"provider": "fake", "model": CLASSIFY, "base_url": fake.base_url},
        },
    }


def test_a_closed_chunk_gets_a_listed_history_run(
    fetch: Any, spin: Any, agent_service: Any, fake: Any
) -> None:
    agent_service.history.chunk_turns = 2  # a chunk closes every two turns
    chat_id = new_chat(fetch)
    for text in ("the budget is 4,200 EUR", "and the file is plan.xlsx"):
        code, answer = call(
            fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
        )
        assert code == 202
        wait_turn(fetch, spin, chat_id, answer["run_id"])
    deadline = time.monotonic() + 30
    runs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        _, body = call(fetch, "agent", "runs", params={"program": "history"})
        runs = [r for r in body["runs"] if r["status"] != "running"]
        if runs:
            break
        spin(0.05)
    (run,) = runs
    assert run["program"] == "history@v1"
    assert run["chat_id"] == chat_id
    assert run["status"] == "done"
    assert run["model"] == CLASSIFY
    _, toolcallers = call(fetch, "agent", "runs", params={"program": "toolcaller"})
    assert "history@v1" not in {r["program"] for r in toolcallers["runs"]}
    # Two turns, the chat's naming after the first (title@v1), then the summary.
    models = sorted(r.json["model"] for r in fake.requests)
    assert models == sorted([CODEGEN, CODEGEN, CLASSIFY, CLASSIFY])
    (summary_request,) = [r for r in fake.requests if '<turn n="1">' in str(r.json)]
    summary_prompt = str(summary_request.json["messages"])
    assert "4,200 EUR" in summary_prompt
    assert "plan.xlsx" in summary_prompt
    _, detail = call(fetch, "agent", "runs", run["run_id"])
    assert detail["program"] == "history@v1"
    assert detail["turn"] is None
    assert detail["effects"][-1]["name"] == "chunk.store"
    assert detail["effects"][-1]["result"] == {"stored": True}
    _, stats = call(fetch, "agent", "runs", run["run_id"], "stats")
    assert stats["totals"]["calls"] == 1
    assert stats["calls"][0]["tier"] == "classify"
    assert verify_run(agent_service.manager.log_path(run["run_id"])).identical
    _, status = call(fetch, "agent", "status")
    assert status["history"] == {"pending": 0, "failing": 0, "last_error": None}


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_the_demo_model_never_summarises(
    agent_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert agent_service.services.settings.is_demo(owner="")
    assert "codegen" in agent_service.run_config(owner="").tiers  # chat runs get the demo model
    assert agent_service.history_config(owner="").tiers == {}  # summaries wait for a real tier
