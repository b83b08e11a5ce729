"""Embeddings through a real Jupyter Server (issue 15, section E): a fact saved in other
words than the message is recalled when an ``embed`` tier is set, and not without it; an
embed endpoint that fails leaves recall lexical and the run unharmed; no key in any log.

Two fakes on loopback: one answers the chat (codegen, keyless), one the embeddings (with a
key the server resolves from its environment). The embeddings fake relates "puppy" to
"dog" and "called" to "name" (its synonyms), as a real embedding model would.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest

from jupyter_agent.core.memory.terms import terms
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.trace.verify import verify_run
from tests.server.helpers import call, new_chat, wait_turn

KEY = "sk-embed-scenario-canary-91f0c2"
MODEL = "fake-embed"
FACT = "Our puppy is called Biscuit"
MESSAGE = "What is my dog's name?"
SYNONYMS = {"puppy": "dog", "called": "name"}


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def chat_fake(fake_provider: Any) -> FakeProvider:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def embed_fake(fake_provider: Any) -> FakeProvider:
    return fake_provider(
        [{"text": "unused"}], expect_key=KEY, embed_terms=terms, embed_synonyms=SYNONYMS
    )


@pytest.fixture
def with_embed() -> bool:
    return True


@pytest.fixture
def jp_server_config(
    chat_fake: FakeProvider,
    embed_fake: FakeProvider,
    with_embed: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    monkeypatch.setenv("EMBED_KEY", KEY)
    tiers: dict[str, Any] = {
        "codegen": {
            "provider": "fake",
            "model": "claude-sonnet-4-5",
            "base_url": chat_fake.base_url,
        }
    }
    if with_embed:
        tiers["embed"] = {
            "provider": "openai-compatible",
            "model": MODEL,
            "base_url": embed_fake.base_url + "/v1",
            "api_key_ref": "env:EMBED_KEY",
        }
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "tiers": tiers},
    }


def save_fact(fetch: Any, text: str = FACT) -> str:
    code, memory = call(
        fetch, "agent", "memories", method="POST", body={"text": text, "category": "pets"}
    )
    assert code == 201
    return str(memory["id"])


def wait_vector(spin: Any, service: Any, memory_id: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if memory_id in dict(service.store.memory_vectors(model=MODEL)):
            return
        spin(0.05)
    raise AssertionError("the saved fact got no vector")


def say(fetch: Any, spin: Any, text: str) -> tuple[str, dict[str, Any]]:
    chat_id = new_chat(fetch)
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    return str(answer["run_id"]), wait_turn(fetch, spin, chat_id, answer["run_id"])


def last_prompt(fake: FakeProvider) -> str:
    return json.dumps(fake.requests[-1].json)


def no_key_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records  # the server did log
    for record in caplog.records:
        assert KEY not in record.getMessage()
        assert KEY not in (record.exc_text or "")


def test_a_fact_in_other_words_is_recalled_with_the_embed_tier(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    chat_fake: FakeProvider,
    embed_fake: FakeProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    _, status = call(fetch, "agent", "status")
    assert status["tiers"]["embed"]["ready"] is True
    memory_id = save_fact(fetch)
    wait_vector(spin, agent_service, memory_id)  # embedded in the background after the save
    assert embed_fake.embed_requests[0].headers["authorization"] == f"Bearer {KEY}"

    run_id, turn = say(fetch, spin, MESSAGE)
    assert turn["replies"][-1]["text"] == "Noted."
    assert [h["id"] for h in turn["recall"]["hits"]] == [memory_id]
    assert turn["recall"]["hits"][0]["score"] >= 0.3
    prompt = last_prompt(chat_fake)
    assert FACT in prompt  # the synthetic call's result, before the message
    assert prompt.index(FACT) < prompt.rindex("What is my dog")
    # the person's own search ranks the same way
    _, found = call(fetch, "agent", "memories", params={"q": MESSAGE})
    assert [m["id"] for m in found["memories"]] == [memory_id]
    # the run replays from its log alone (the recall is one recorded effect)
    assert verify_run(agent_service.manager.runs_dir / f"{run_id}.jsonl").identical
    no_key_logged(caplog)


@pytest.mark.parametrize("with_embed", [False])
def test_without_the_embed_tier_the_same_message_recalls_nothing(
    fetch: Any, spin: Any, agent_service: Any, chat_fake: FakeProvider, embed_fake: FakeProvider
) -> None:
    _, status = call(fetch, "agent", "status")
    assert "embed" not in status["tiers"]
    save_fact(fetch)
    _, turn = say(fetch, spin, MESSAGE)
    assert turn["replies"][-1]["text"] == "Noted."
    assert "recall" not in turn
    assert FACT not in last_prompt(chat_fake)
    assert embed_fake.embed_requests == []
    assert agent_service.store.memory_vectors(model=MODEL) == []


def test_a_failing_embed_endpoint_leaves_recall_lexical_and_the_run_unharmed(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    chat_fake: FakeProvider,
    embed_fake: FakeProvider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    embed_fake.embed_error = 500
    memory_id = save_fact(fetch)  # saved: its embedding fails in the background
    _, turn = say(fetch, spin, MESSAGE)
    assert turn["replies"][-1]["text"] == "Noted."
    assert "recall" not in turn  # no word in common, no vector: nothing recalled
    _, turn = say(fetch, spin, "Tell me about Biscuit the puppy")
    assert turn["replies"][-1]["text"] == "Noted."
    assert [h["id"] for h in turn["recall"]["hits"]] == [memory_id]  # lexical still works
    assert agent_service.store.memory_vectors(model=MODEL) == []
    warnings = [
        r
        for r in caplog.records
        if r.name == "jupyter_agent.runtime.memory.embedder" and r.levelno >= logging.WARNING
    ]
    assert len(warnings) == 1  # one line per failure streak
    assert "recall is lexical" in warnings[0].getMessage()
    no_key_logged(caplog)
