"""``agent/memories`` through a real Jupyter Server: add, list, search, read, edit, delete;
bad input to every route is a clear 400/404 that writes nothing; a credential-like text is
refused (400 ``credential``) without echoing it; changes need ``execute``."""

from __future__ import annotations

import json
import logging
import secrets
from typing import Any, ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer

from tests.server.helpers import call, refused

KEY_ENV = "JA_MEMORY_TEST_KEY"
KEY = "configured-" + secrets.token_hex(12)


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def agent_config(key_env: None) -> dict[str, Any]:
    # A tier keyed by the environment variable: its value is a secret the server knows.
    tier = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": "http://127.0.0.1:9",
        "api_key_ref": f"env:{KEY_ENV}",
    }
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def memories(fetch: Any, **params: Any) -> dict[str, Any]:
    code, body = call(fetch, "agent", "memories", params=params)
    assert code == 200
    assert set(body) == {"memories", "categories"}
    return dict(body)


def add(fetch: Any, text: str, category: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text}
    if category is not None:
        body["category"] = category
    code, memory = call(fetch, "agent", "memories", method="POST", body=body)
    assert code == 201
    return dict(memory)


def test_add_list_search_read_edit_delete(fetch: Any, agent_service: Any) -> None:
    assert memories(fetch) == {"memories": [], "categories": []}
    tea = add(fetch, "  The person drinks green tea, no sugar. ", "Preferences")
    assert set(tea) == {
        "id",
        "text",
        "category",
        "chat_id",
        "turn_id",
        "author",
        "created",
        "updated",
        "run_id",
    }
    assert tea["id"].startswith("mem_")
    assert (tea["text"], tea["category"], tea["author"]) == (
        "The person drinks green tea, no sugar.",
        "preferences",
        "person",
    )
    assert (tea["chat_id"], tea["turn_id"], tea["run_id"]) == (None, None, None)
    data = add(fetch, "Quarterly sales live in data/q_sales.parquet")
    assert data["category"] == "general"

    listed = memories(fetch)
    assert [m["id"] for m in listed["memories"]] == [data["id"], tea["id"]]
    assert listed["categories"] == [
        {"category": "general", "count": 1},
        {"category": "preferences", "count": 1},
    ]
    only = memories(fetch, category="preferences")
    assert [m["id"] for m in only["memories"]] == [tea["id"]]
    assert len(only["categories"]) == 2  # counts of every fact, whatever the filter
    assert [m["id"] for m in memories(fetch, limit=1)["memories"]] == [data["id"]]

    found = memories(fetch, q="what tea does the person drink")["memories"]
    assert [m["id"] for m in found] == [tea["id"]]
    assert 0 < found[0]["score"] <= 1
    assert found[0]["author"] == "person"  # the whole fact, with its score
    assert memories(fetch, q="tea", category="general")["memories"] == []
    assert memories(fetch, q="zebra unicorn")["memories"] == []
    assert len(memories(fetch, q="   ")["memories"]) == 2  # a blank query lists

    code, got = call(fetch, "agent", "memories", tea["id"])
    assert (code, got) == (200, tea)
    code, changed = call(
        fetch, "agent", "memories", tea["id"], method="PATCH", body={"text": "Black tea now."}
    )
    assert code == 200
    assert (changed["text"], changed["category"]) == ("Black tea now.", "preferences")
    assert changed["created"] == tea["created"]
    code, moved = call(
        fetch, "agent", "memories", tea["id"], method="PATCH", body={"category": "drinks"}
    )
    assert (code, moved["text"], moved["category"]) == (200, "Black tea now.", "drinks")
    assert [m["id"] for m in memories(fetch, q="black tea")["memories"]] == [tea["id"]]

    code, nothing = call(fetch, "agent", "memories", tea["id"], method="DELETE")
    assert (code, nothing) == (204, None)
    for method in ("GET", "PATCH", "DELETE"):
        body = {"text": "x"} if method == "PATCH" else None
        error = refused(fetch, "agent", "memories", tea["id"], status=404, method=method, body=body)
        assert error == {"message": f"no memory {tea['id']!r}", "reason": "not_found"}
    assert [m.id for m in agent_service.store.list_memories()] == [data["id"]]


BAD_POSTS: list[tuple[Any, int, str, str]] = [
    ({}, 400, "bad_memory", "'text' must be a string"),
    ({"text": 42}, 400, "bad_memory", "'text' must be a string"),
    ({"text": ""}, 400, "bad_memory", "'text' is empty"),
    ({"text": " \n\t "}, 400, "bad_memory", "'text' is empty"),
    ({"text": "x" * 2001}, 400, "bad_memory", "at most 2000"),
    ({"text": "fine", "category": ""}, 400, "bad_memory", "'category' must be 1 to 40"),
    ({"text": "fine", "category": "a" * 41}, 400, "bad_memory", "'category' must be 1 to 40"),
    ({"text": "fine", "category": "a/b"}, 400, "bad_memory", "'category' must be 1 to 40"),
    ({"text": "fine", "category": 7}, 400, "bad_memory", "'category' must be a string"),
    ({"text": "fine", "owner": "bob"}, 400, "bad_memory", "unknown field(s) owner"),
    ({"text": "fine", "author": "agent"}, 400, "bad_memory", "unknown field(s) author"),
    (b"not json", 400, "bad_json", "Invalid JSON body"),
    (b"[1, 2]", 400, "bad_json", "must be an object"),
    (b'{"text": "half \\ud800"}', 400, "bad_unicode", "'text' holds a lone surrogate"),
    (b"{" + b'"text":' * 100_000, 400, "bad_json", "Invalid JSON body"),
]


def test_bad_input_to_every_route_is_refused_and_writes_nothing(
    fetch: Any, agent_service: Any
) -> None:
    kept = add(fetch, "the one fact", "project")
    for body, status, reason, says in BAD_POSTS:
        error = refused(fetch, "agent", "memories", status=status, method="POST", body=body)
        assert error["reason"] == reason, (body, error)
        assert says in error["message"], (body, error)
    error = refused(
        fetch, "agent", "memories", status=413, method="POST", body=b" " * (11 * 1024 * 1024)
    )
    assert error["reason"] == "body_too_large"

    bad_patches: list[tuple[Any, str, str]] = [
        ({}, "bad_memory", "nothing to change"),
        ({"text": None, "category": None}, "bad_memory", "nothing to change"),
        ({"text": ""}, "bad_memory", "'text' is empty"),
        ({"text": 3}, "bad_memory", "'text' must be a string"),
        ({"category": "NO!"}, "bad_memory", "'category' must be 1 to 40"),
        ({"title": "x"}, "bad_memory", "unknown field(s) title"),
        (b"{", "bad_json", "Invalid JSON body"),
    ]
    for body, reason, says in bad_patches:
        error = refused(
            fetch, "agent", "memories", kept["id"], status=400, method="PATCH", body=body
        )
        assert (error["reason"], says in error["message"]) == (reason, True), (body, error)

    bad_queries: list[tuple[dict[str, str], str]] = [
        ({"limit": "abc"}, "'limit' must be an integer"),
        ({"limit": "0"}, "'limit' must be an integer from 1 to 10000"),
        ({"limit": "10001"}, "'limit' must be an integer from 1 to 10000"),
        ({"q": "fact", "limit": "51"}, "'limit' must be an integer from 1 to 50"),
        ({"category": "Bad/Cat"}, "'category' must be 1 to 40"),
        ({"q": "fact", "category": "!"}, "'category' must be 1 to 40"),
        ({"q": "q" * 2001}, "'query' must be valid text"),
    ]
    for params, says in bad_queries:
        error = refused(fetch, "agent", "memories", status=400, params=params)
        assert error["reason"] in ("bad_memory", "bad_limit"), (params, error)
        assert says in error["message"], (params, error)

    for method in ("GET", "PATCH", "DELETE"):
        body = {"text": "new"} if method == "PATCH" else None
        for memory_id in ("mem_missing", "x" * 5000, "ä ö"):
            error = refused(
                fetch, "agent", "memories", memory_id, status=404, method=method, body=body
            )
            assert error["reason"] == "not_found"
            assert len(error["message"]) < 200  # a long id is shown cut

    [only] = agent_service.store.list_memories()
    assert only.to_json() == kept


CREDENTIALS = [
    "sk-ant-api03-" + secrets.token_hex(20),
    "ghp_" + secrets.token_hex(18),
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "postgres://me:" + secrets.token_hex(6) + "@db.example.com/x",
    "password=" + secrets.token_hex(6),
    "AKIA" + secrets.token_hex(8).upper(),
]


def test_a_credential_like_text_is_refused_and_never_echoed(
    fetch: Any, agent_service: Any, jp_serverapp: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    kept = add(fetch, "a harmless fact")
    server_token = jp_serverapp.identity_provider.token
    cases = [(f"remember {value} for later", value) for value in CREDENTIALS]
    cases += [(f"the key is {KEY}", KEY), (f"the server token is {server_token}", server_token)]
    for text, secret in cases:
        for method, parts in (
            ("POST", ("agent", "memories")),
            ("PATCH", ("agent", "memories", kept["id"])),
        ):
            error = refused(fetch, *parts, status=400, method=method, body={"text": text})
            assert error["reason"] == "credential", (text, error)
            assert error["message"].startswith("Not saved: the text ")
            assert secret not in error["message"]
            assert secret not in caplog.text
    assert KEY not in caplog.text
    assert server_token not in caplog.text
    [only] = agent_service.store.list_memories()
    assert only.to_json() == kept  # nothing added, nothing changed
    dumped = json.dumps(memories(fetch))
    assert KEY not in dumped


class ReadOnlyAuthorizer(Authorizer):  # type: ignore[misc]
    """Allows ``read`` and ``write`` on ``agent``, never ``execute``."""

    asked: ClassVar[list[tuple[str, str]]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append((handler.request.method, action))
        return action != "execute"


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": ReadOnlyAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_reads_need_read_and_changes_need_execute(fetch: Any, agent_service: Any) -> None:
    from jupyter_agent.core.memory.records import Memory

    agent_service.store.add_memory(
        Memory(
            id="mem_01RO",
            text="a fact",
            category="general",
            created="2026-01-01T00:00:00.000Z",
            updated="2026-01-01T00:00:00.000Z",
        )
    )
    ReadOnlyAuthorizer.asked.clear()
    assert [m["id"] for m in memories(fetch)["memories"]] == ["mem_01RO"]
    assert call(fetch, "agent", "memories", "mem_01RO")[0] == 200
    for method, parts, body in (
        ("POST", ("agent", "memories"), {"text": "new"}),
        ("PATCH", ("agent", "memories", "mem_01RO"), {"text": "changed"}),
        ("DELETE", ("agent", "memories", "mem_01RO"), None),
    ):
        refused(fetch, *parts, status=403, method=method, body=body)
    assert ("GET", "read") in ReadOnlyAuthorizer.asked
    assert {("POST", "execute"), ("PATCH", "execute"), ("DELETE", "execute")} <= set(
        ReadOnlyAuthorizer.asked
    )
    [only] = agent_service.store.list_memories()
    assert only.text == "a fact"


def test_a_search_never_answers_a_fact_holding_a_credential(fetch: Any, agent_service: Any) -> None:
    from dataclasses import replace

    from jupyter_agent.core.memory.records import Memory

    kept = add(fetch, "The nightly report job mails the finance team")
    # Facts written before their value was a secret (saving checks; the store does not).
    first = Memory.from_json(kept)
    agent_service.store.add_memory(
        replace(first, id="mem_configured", text=f"The nightly report job key {KEY}")
    )
    shaped = "ghp_" + secrets.token_hex(12)
    agent_service.store.add_memory(
        replace(first, id="mem_shaped", text=f"The nightly report job token {shaped}")
    )
    found = memories(fetch, q="nightly report job")["memories"]
    assert [m["id"] for m in found] == [kept["id"]]
    assert KEY not in json.dumps(found)
    assert shaped not in json.dumps(found)
