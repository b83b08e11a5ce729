"""Chats named after their first turn (issue 30, item 10), through a real Jupyter Server.

With a ``classify`` tier of its own, a chat whose title is still its first message's line
gets a short name from one ``title@v1`` run (listed, costed, replayable), and its event
stream carries a ``title`` event; a chat the person titled or renamed keeps its name, also
when the rename lands while the naming call is under way; no classify tier (or
``name_chats`` off): no call at all.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

CODEGEN = "claude-sonnet-4-5"
CLASSIFY = "claude-haiku-4-5"
FIRST = "Plot a sine wave and tell me its maximum"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Its maximum is 1.0."}], "repeat": True})


@pytest.fixture
def namer(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Sine wave maximum", "delay_s": 0.5}]})


def _tiers(fake: Any, namer: Any | None) -> dict[str, Any]:
    tiers = {"codegen": {"provider": "fake", "model": CODEGEN, "base_url": fake.base_url}}
    if namer is not None:
        tiers["classify"] = {"provider": "fake", "model": CLASSIFY, "base_url": namer.base_url}
    return tiers


@pytest.fixture
def case(request: pytest.FixtureRequest) -> str:
    """How the server is configured: ``named`` (a classify tier), ``no classify tier``,
    ``name_chats off``, ``demo`` (the demo answers the chat, a classify tier is ready)."""
    return str(getattr(request, "param", "named"))


@pytest.fixture
def agent_config(fake: Any, namer: Any, case: str) -> dict[str, Any]:
    config: dict[str, Any] = {"pool_size": 0, "tiers": _tiers(fake, namer)}
    if case == "no classify tier":
        config["tiers"] = _tiers(fake, None)
    elif case == "name_chats off":
        config["name_chats"] = False
    elif case == "demo":  # codegen has no key: the demo answers; classify is ready
        tiers = _tiers(fake, namer)
        tiers["codegen"] = {"provider": "anthropic", "model": CODEGEN}
        config["tiers"] = tiers
    return config


def _send(fetch: Any, spin: Any, chat_id: str, text: str) -> str:
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    return str(sent["run_id"])


def _settle(agent_service: Any, loop: Any) -> None:
    loop.run_until_complete(asyncio.wait_for(agent_service.history.idle(), 30))


def _title(fetch: Any, chat_id: str) -> str:
    _, chat = call(fetch, "agent", "chats", chat_id)
    return str(chat["title"])


def _title_runs(fetch: Any) -> list[dict[str, Any]]:
    """The naming runs, as ``trace ls --program title`` lists them."""
    _, page = call(fetch, "agent", "runs", params={"program": "title"})
    _, every = call(fetch, "agent", "runs")
    runs: list[dict[str, Any]] = page["runs"]
    assert [r["run_id"] for r in runs] == [
        r["run_id"] for r in every["runs"] if r["program"].split("#")[0] == "title@v1"
    ]
    return runs


def test_a_chat_is_named_after_its_first_turn(
    fetch: Any, spin: Any, agent_service: Any, namer: Any, jp_asyncio_loop: Any
) -> None:
    chat_id = new_chat(fetch)
    _send(fetch, spin, chat_id, FIRST)
    assert _title(fetch, chat_id) in (FIRST, "Sine wave maximum")
    deadline = time.monotonic() + 30
    while _title(fetch, chat_id) != "Sine wave maximum":
        assert time.monotonic() < deadline, "the chat was not named"
        spin(0.05)
    _settle(agent_service, jp_asyncio_loop)
    (run,) = _title_runs(fetch)
    assert run["chat_id"] == chat_id
    assert run["status"] == "done"
    assert run["model"] == CLASSIFY
    titles = [e for e in agent_service.events.since(chat_id, 0) if e["type"] == "title"]
    assert [(e["title"], e["run_id"]) for e in titles] == [("Sine wave maximum", run["run_id"])]
    _, detail = call(fetch, "agent", "runs", run["run_id"])
    assert detail["effects"][-1]["name"] == "chat.retitle"
    assert detail["effects"][-1]["result"] == {"retitled": True}
    assert verify_run(agent_service.manager.log_path(run["run_id"])).identical
    prompt = str(namer.requests[0].json["messages"])
    assert FIRST in prompt
    assert "Its maximum is 1.0." in prompt
    # The second turn names nothing: still one naming call.
    _send(fetch, spin, chat_id, "and the minimum?")
    _settle(agent_service, jp_asyncio_loop)
    assert len(namer.requests) == 1
    assert _title(fetch, chat_id) == "Sine wave maximum"


def test_a_rename_during_the_naming_call_wins(
    fetch: Any, spin: Any, agent_service: Any, namer: Any, jp_asyncio_loop: Any
) -> None:
    chat_id = new_chat(fetch)
    _send(fetch, spin, chat_id, FIRST)
    deadline = time.monotonic() + 30
    while not namer.requests:  # the naming call is under way (the fake waits 0.5 s)
        assert time.monotonic() < deadline, "no naming call"
        spin(0.02)
    code, _ = call(fetch, "agent", "chats", chat_id, method="PATCH", body={"title": "My plan"})
    assert code == 200
    _settle(agent_service, jp_asyncio_loop)
    assert _title(fetch, chat_id) == "My plan"
    (run,) = _title_runs(fetch)
    _, detail = call(fetch, "agent", "runs", run["run_id"])
    assert detail["effects"][-1]["result"] == {"retitled": False}
    assert not [e for e in agent_service.events.since(chat_id, 0) if e["type"] == "title"]


def test_a_chat_the_person_titled_keeps_its_title(
    fetch: Any, spin: Any, agent_service: Any, namer: Any, jp_asyncio_loop: Any
) -> None:
    chat_id = new_chat(fetch, "Quarterly numbers")
    _send(fetch, spin, chat_id, FIRST)
    _settle(agent_service, jp_asyncio_loop)
    assert _title(fetch, chat_id) == "Quarterly numbers"
    assert namer.requests == []
    assert _title_runs(fetch) == []


@pytest.mark.parametrize("case", ["no classify tier", "name_chats off"], indirect=True)
def test_no_naming_without_a_classify_tier_or_when_off(
    case: str,
    fake: Any,
    namer: Any,
    fetch: Any,
    spin: Any,
    agent_service: Any,
    jp_asyncio_loop: Any,
) -> None:
    chat_id = new_chat(fetch)
    _send(fetch, spin, chat_id, FIRST)
    _settle(agent_service, jp_asyncio_loop)
    assert _title(fetch, chat_id) == FIRST
    assert namer.requests == []
    assert [r.json["model"] for r in fake.requests] == [CODEGEN]
    assert _title_runs(fetch) == []


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_keys", "server_kernelspec")
@pytest.mark.parametrize("case", ["demo"], indirect=True)
def test_a_chat_the_demo_answered_is_not_named(
    case: str, fetch: Any, spin: Any, agent_service: Any, namer: Any, jp_asyncio_loop: Any
) -> None:
    chat_id = new_chat(fetch)
    _send(fetch, spin, chat_id, FIRST)
    _settle(agent_service, jp_asyncio_loop)
    assert _title(fetch, chat_id) == FIRST
    assert namer.requests == []  # the classify tier is ready, but a demo is no one's words
    assert _title_runs(fetch) == []
