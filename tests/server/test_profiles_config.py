"""``c.JupyterAgent.profiles``: an admin's per-model profile overrides reach the runs
through a real server (issue 14), and bad ones are refused with a TraitError naming them."""

from __future__ import annotations

from typing import Any

import pytest
from traitlets import TraitError

from jupyter_agent.server.app import JupyterAgent
from jupyter_agent.trace.log import pair_effects, read_log
from tests.server.helpers import call, new_chat, wait_turn

MODEL = "my-local-llm"
PROFILES = {
    MODEL: {
        "context_window": 4000,
        "max_output": 512,
        "tool_mode": "native",
        "prices": {"in": 1, "out": 2.5, "cache_read": None},
    }
}


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Hello there."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": MODEL, "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "profiles": PROFILES}


def config_gets(log_path: Any) -> dict[str, tuple[dict[str, Any], Any]]:
    found = {}
    for effect in pair_effects(read_log(log_path)):
        if effect.name == "config.get" and effect.result is not None:
            found[effect.intent.data["key"]] = (effect.intent.data, effect.result.data)
    return found


@pytest.mark.usefixtures("server_kernelspec")
def test_a_run_reads_the_admin_profile(fetch: Any, spin: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch)
    body = {"text": "hello"}
    code, answer = call(fetch, "agent", "chats", chat_id, "messages", method="POST", body=body)
    assert code == 202
    turn = wait_turn(fetch, spin, chat_id, answer["run_id"])
    assert turn["llm"]["stopReason"] == "done"
    gets = config_gets(agent_service.manager.log_path(answer["run_id"]))
    _, start = gets["start"]  # toolcaller@v7: one start answer
    profile = start["profile"]
    assert profile == {
        "context_window": 4000,
        "max_output": 512,
        "tool_mode": "native",
        "price_in": 1.0,
        "price_out": 2.5,
        "price_cache_read": None,
    }
    # The history budget is a quarter of the overridden window, not the default 50,000.
    assert start["budget_tokens"] == 1000


@pytest.mark.parametrize(
    ("profiles", "named"),
    [
        ({MODEL: {"context_windw": 4000}}, "context_windw"),
        ({MODEL: {"system_role": "developer"}}, "system_role"),
        ({MODEL: {"context_window": 0}}, "'context_window'] must be a positive int, not 0"),
        ({MODEL: {"max_output": "big"}}, "'max_output'] must be a positive int"),
        ({MODEL: {"tool_mode": "json"}}, "'tool_mode'] must be one of fenced, native, xml"),
        ({MODEL: {"prices": {"input": 1}}}, "unknown key(s) input"),
        ({MODEL: {"prices": {"in": -1}}}, "'in'] must be a number >= 0, not -1"),
        ({MODEL: "small"}, "must map a model name to a dict"),
    ],
)
def test_bad_profiles_are_refused(profiles: dict[str, Any], named: str) -> None:
    with pytest.raises(TraitError) as info:
        JupyterAgent(profiles=profiles)
    assert str(info.value).startswith(f"JupyterAgent.profiles[{MODEL!r}]")
    assert named in str(info.value)


def test_good_profiles_are_kept() -> None:
    assert JupyterAgent(profiles=PROFILES).profiles == PROFILES
    assert JupyterAgent().profiles == {}
