"""A model nobody described (issue 30, item 8): the settings say what runs assume of it,
and the person sets its window, output cap and tool mode there; runs then use them."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.trace.log import read_log
from tests.server.helpers import call

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("server_kernelspec")]


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Hi."}], "repeat": True})


@pytest.fixture
def jp_server_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "tiers": {"codegen": tier}},
    }


def test_the_assumed_profile_is_shown_and_the_persons_is_used(
    fetch: Any, fake: Any, agent_service: Any, jp_asyncio_loop: Any
) -> None:
    mine = {"provider": "fake", "model": "my-local-llm", "base_url": fake.base_url}
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": mine}}
    )
    assert code == 200
    assert settings["readiness"]["codegen"]["profile"] == {
        "context_window": 8192,
        "max_output": 2048,
        "tool_mode": "fenced",
        "assumed": True,
    }
    said = {"context_window": 32768, "max_output": 4096, "tool_mode": "native"}
    body = {"tiers": {"codegen": {**mine, "profile": said}}}
    code, settings = call(fetch, "agent", "settings", method="PUT", body=body)
    assert code == 200
    assert settings["tiers"]["codegen"]["profile"] == said
    assert settings["readiness"]["codegen"]["profile"] == {**said, "assumed": False}
    # A run of that tier reads the model's profile with the person's fields.
    chat = agent_service.store.create_chat(chat_id="chat_01P", title="", now="2026-01-01T00:00:00Z")
    sent = jp_asyncio_loop.run_until_complete(agent_service.manager.send(chat.id, text="hi"))
    jp_asyncio_loop.run_until_complete(agent_service.manager.wait(sent["run_id"]))
    trace = read_log(agent_service.manager.log_path(sent["run_id"]))
    intents = {
        line.seq: line.data
        for line in trace.lines
        if line.phase == "intent" and line.name == "config.get"
    }
    results = {line.seq: line.data for line in trace.lines if line.phase == "result"}
    # toolcaller@v7: the tier and its model's profile come in the one start answer.
    start = next(results[seq] for seq, data in intents.items() if data.get("key") == "start")
    profile = start["profile"]
    assert (profile["context_window"], profile["max_output"], profile["tool_mode"]) == (
        32768,
        4096,
        "native",
    )
    assert (
        "profile" not in start["tier"]
    )  # the tier as the loop reads it: the profile went to its model
