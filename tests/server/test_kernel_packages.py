"""The model knows what the agent kernel can import (issue 28, item 5): a real run's system
prompt names the installed data packages with their versions, the run's log records them,
and the run replays identically (with no server reading the packages again)."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "pandas is there."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def test_the_prompt_names_the_kernels_data_packages(
    fetch: Any, spin: Any, agent_service: Any, fake: Any
) -> None:
    chat_id = new_chat(fetch)
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hi"}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    system = "".join(b["text"] for b in fake.requests[0].json["system"])
    line = next(ln for ln in system.splitlines() if ln.startswith("- Data packages"))
    for name in ("numpy", "pandas", "matplotlib"):  # the default install's (issue 28)
        assert f"{name} {metadata.version(name)}" in line
    path = agent_service.manager.log_path(sent["run_id"])
    assert read_log(path).lines
    assert '"kernel_packages"' in path.read_text()  # the start answer recorded them
    assert verify_run(path).identical
