"""The agent's kernels are never the person's (issue 30, item 9): its warm pool is in no
listing of ``GET /api/kernels`` (JupyterLab's Running panel), and shutting down every
kernel that listing shows (JupyterLab's "Shut Down All") never breaks a running turn."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("server_kernelspec")]

SLOW = "import time\nfor i in range(30):\n    time.sleep(0.1)\nprint('survived')"


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Working.", "cells": [SLOW]}, {"text": "Done."}]})


@pytest.fixture
def jp_server_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 1, "tiers": {"codegen": tier}},
    }


def _kernels(fetch: Any) -> list[dict[str, Any]]:
    return list(json.loads(fetch("api", "kernels").body))


def test_pool_kernels_are_not_the_persons_and_shut_down_all_spares_a_turn(
    fetch: Any, spin: Any, agent_service: Any, jp_asyncio_loop: Any, jp_serverapp: Any
) -> None:
    jp_asyncio_loop.run_until_complete(agent_service.start())  # as the server's start does
    pool = agent_service.pool
    deadline = time.monotonic() + 60
    while len(pool._warm) < 1:  # the warm pool filled: a kernel of the agent's is up
        assert time.monotonic() < deadline, "the pool did not fill"
        spin(0.1)
    assert _kernels(fetch) == []
    _code, status = call(fetch, "agent", "status")
    assert status["kernels"]["warm"] == 1  # the agent counts them in its own status
    # The person's own kernel is listed (and only it).
    code, _ = call(fetch, "api", "kernels", method="POST", body={"name": "python3"})
    assert code == 201
    assert len(_kernels(fetch)) == 1
    chat_id = new_chat(fetch)
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "go"}
    )
    assert code == 202
    # Once the agent's cell runs, the person shuts every listed kernel down.
    events = agent_service.events
    deadline = time.monotonic() + 60
    while not any(e["type"] == "cell_start" for e in events.since(chat_id, 0)):
        assert time.monotonic() < deadline, "no cell started"
        spin(0.05)
    # The agent's turn is the server's activity: idle shutdown and a Hub's culler wait.
    app = agent_app(jp_serverapp)
    assert app.current_activity() is True
    assert jp_serverapp.extension_manager.any_activity()
    app._activity.start(jp_serverapp.web_app)  # as the extension's start does
    app._activity.touch()
    assert "jupyter_agent" in jp_serverapp.web_app.settings["last_activity_times"]
    for kernel in _kernels(fetch):
        fetch("api", "kernels", kernel["id"], method="DELETE")
    assert _kernels(fetch) == []
    jp_asyncio_loop.run_until_complete(agent_service.manager.wait(sent["run_id"]))
    turn = agent_service.store.get_turn_by_run(sent["run_id"])
    assert turn.llm.stop_reason == "done"
    assert turn.replies[-1].text == "Done."
    ends = [e for e in events.since(chat_id, 0) if e["type"] == "cell_end"]
    assert ends[-1]["status"] == "ok"
    assert app.current_activity() is False  # the turn ended, its kernel went back
    app._activity.stop()
