"""Demo turns stay out of recall and history (issue 28, item 6), through a real server.

A newcomer's first chat is answered by the demo model; once a real model is set (a tier
changed from the browser: ``PUT agent/settings``), a second chat about the same words
recalls nothing of the demo's scripted text, and the model's request holds none of it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from jupyter_agent.runtime.settings.demo import DEMO_MODEL
from tests.server.helpers import call, new_chat, wait_turn

QUESTION = "Plot the quarterly revenue of the teal widgets"


@pytest.fixture
def agent_config() -> dict[str, Any]:
    return {"pool_size": 0}


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Here is the teal widgets plan."}], "repeat": True})


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _send(fetch: Any, spin: Any, chat_id: str, text: str) -> dict[str, Any]:
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    return wait_turn(fetch, spin, chat_id, sent["run_id"], timeout_s=120)


@pytest.mark.usefixtures("no_keys", "server_kernelspec")
def test_a_demo_turn_is_never_recalled(
    fetch: Any, spin: Any, agent_service: Any, fake: Any
) -> None:
    demo_chat = new_chat(fetch)
    demo_turn = _send(fetch, spin, demo_chat, QUESTION)
    assert demo_turn["model"] == DEMO_MODEL
    demo_words = [r["text"] for r in demo_turn["replies"] if r["text"].strip()]
    assert demo_words
    # A real model now, set as a newcomer does: from the settings dialog.
    tier = {
        "provider": "openai-compatible",
        "model": "gpt-4o-mini",
        "base_url": fake.base_url + "/v1",
    }
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": tier}}
    )
    assert code == 200, settings
    deadline = time.monotonic() + 30
    while call(fetch, "agent", "status")[1]["demo"]:
        assert time.monotonic() < deadline, "the real tier did not become ready"
        spin(0.2)
    real_chat = new_chat(fetch)
    turn = _send(fetch, spin, real_chat, QUESTION)
    assert turn["model"] == "gpt-4o-mini", json.dumps(turn)[:800]
    assert not turn.get("recall")  # nothing recalled: the demo turn is not a hit
    sent = json.dumps([r.json for r in fake.requests])
    for words in demo_words:
        assert words[:60] not in sent
    # The real turn itself is recallable: a third chat finds it.
    third = _send(fetch, spin, new_chat(fetch), QUESTION)
    hits = (third.get("recall") or {}).get("hits") or []
    assert [h for h in hits if h.get("chat_id") == real_chat]
    assert not [h for h in hits if h.get("chat_id") == demo_chat]
