"""``POST agent/runs/{run_id}/approvals/{approval_id}`` through a real Jupyter Server.

``c.JupyterAgent.approval = "every_cell"`` reaches the run (its recorded ``ceilings``), the
run's first cell waits (an ``approval`` event), the REST answer lets it run, a second
answer is 409 ``approval_decided``, an unknown wait 404, a bad body 400; the view's
``cell_id`` reaches the model's header.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_agent.server.app import JupyterAgent
from tests.server.helpers import call, new_chat, refused, wait_turn

SCRIPT = [
    {"cells": ["print(6 * 7)"]},
    {"expect": {"last_user_contains": "42"}, "text": "The answer is **42**."},
]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "per_turn": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "approval": "every_cell"}


def approval_of(agent_service: Any, spin: Any, chat_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for event in agent_service.events.since(chat_id, 0):
            if event["type"] == "approval":
                return dict(event)
        spin(0.05)
    raise AssertionError("no approval event")


def test_the_trait_defaults_to_writes() -> None:
    assert JupyterAgent().approval == "writes"


@pytest.mark.usefixtures("server_kernelspec")
def test_rest_approval_lets_the_waiting_cell_run(
    fetch: Any, spin: Any, agent_service: Any, fake: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "work").mkdir()  # the kernel runs in the viewed notebook's folder
    chat_id = new_chat(fetch)
    view = {"path": "work/a.ipynb", "cell": 2, "cell_id": "c0ffee"}
    code, answer = call(
        fetch,
        "agent",
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"text": "what is 6 * 7?", "view": view},
    )
    assert code == 202
    run_id = answer["run_id"]
    approval = approval_of(agent_service, spin, chat_id)
    assert approval["kind"] == "cell"
    assert approval["code"] == "print(6 * 7)"
    types = [e["type"] for e in agent_service.events.since(chat_id, 0)]
    assert "cell_start" not in types
    path = ("agent", "runs", run_id, "approvals", approval["approval_id"])
    refused(fetch, *path, method="POST", body={"approve": "yes"}, status=400)
    refused(fetch, *path, method="POST", body={"approve": True, "x": 1}, status=400)
    refused(
        fetch, "agent", "runs", run_id, "approvals", "appr_nope",
        method="POST", body={"approve": True}, status=404,
    )  # fmt: skip
    code, decided = call(fetch, *path, method="POST", body={"approve": True})
    assert code == 200
    assert decided == {
        "run_id": run_id,
        "approval_id": approval["approval_id"],
        "approve": True,
        "rest_of_turn": False,
    }
    again = refused(fetch, *path, method="POST", body={"approve": False}, status=409)
    assert again["reason"] == "approval_decided"
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["replies"][-1]["text"] == "The answer is **42**."
    assert turn["llm"]["cells"] == 1
    # The trait reached the run through its recorded ceilings.
    _, detail = call(fetch, "agent", "runs", run_id, params={"full": "1"})
    asked = [e for e in detail["effects"] if e["name"] == "config.get"]
    start = next(e for e in asked if (e.get("intent") or {}).get("key") == "start")
    assert start["result"]["ceilings"]["approval"] == "every_cell"
    # The view's cell id is in the header the model read.
    first = fake.requests[0].json["messages"][-1]["content"][0]["text"]
    assert first.splitlines()[0].endswith(
        "the person has `work/a.ipynb` open, at cell 2 (id `c0ffee`); notebook.read() shows it]"
    )
