"""Fork from any turn and edit-and-resend (issue 31, item 1), through a real Jupyter Server
with the fake provider: ``POST agent/chats/{id}/fork``.

A chat of three turns is forked at 2: the fork's first run's prompt holds turns 1 and 2 and
nothing after; the original, deleted, leaves the fork whole; a fork of the fork keeps its
origin; edit-and-resend (a fork at N-1 with the edited message) answers in one request;
bad input is refused with nothing made.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.helpers import call, new_chat, refused, wait_turn

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def _say(fetch: Any, spin: Any, chat_id: str, text: str) -> str:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    return str(answer["run_id"])


def _texts(fetch: Any, chat_id: str) -> list[str]:
    _, chat = call(fetch, "agent", "chats", chat_id)
    return [t["userText"] for t in chat["turns"]]


def _prompt(fake: Any) -> str:
    return json.dumps(fake.requests[-1].json["messages"])


def test_fork_at_a_turn_then_the_original_goes(fetch: Any, spin: Any, fake: Any) -> None:
    chat_id = new_chat(fetch, "plans")
    for word in ("alpha", "bravo", "charlie"):
        _say(fetch, spin, chat_id, f"remember {word}")
    code, fork = call(fetch, "agent", "chats", chat_id, "fork", method="POST", body={"turn": 2})
    assert code == 201
    assert fork["forked_from"] == {"chat_id": chat_id, "turn": 2}
    assert fork["title"] == "plans (fork at turn 2)"
    assert _texts(fetch, fork["id"]) == ["remember alpha", "remember bravo"]
    _say(fetch, spin, fork["id"], "remember delta")
    prompt = _prompt(fake)
    assert "remember alpha" in prompt and "remember bravo" in prompt  # noqa: PT018
    assert "charlie" not in prompt
    # The original goes; the fork keeps its history and goes on.
    assert fetch("agent", "chats", chat_id, method="DELETE").code == 204
    assert _texts(fetch, fork["id"]) == ["remember alpha", "remember bravo", "remember delta"]
    _, listed = call(fetch, "agent", "chats")
    assert [c["forked_from"] for c in listed["chats"]] == [{"chat_id": chat_id, "turn": 2}]
    # A fork of the fork; its export says where it came from.
    code, again = call(
        fetch, "agent", "chats", fork["id"], "fork", method="POST",
        body={"turn": 1, "title": "just alpha"},
    )  # fmt: skip
    assert code == 201
    assert (again["title"], again["forked_from"]) == (
        "just alpha",
        {"chat_id": fork["id"], "turn": 1},
    )
    _, nb = call(fetch, "agent", "chats", again["id"], "notebook")
    assert nb["metadata"]["jupyter_agent"]["forked_from"] == {"chat_id": fork["id"], "turn": 1}
    assert f"Forked from chat `{fork['id']}` at turn 1" in nb["cells"][1]["source"]


def test_edit_and_resend_in_one_request(fetch: Any, spin: Any, fake: Any) -> None:
    chat_id = new_chat(fetch, "plans")
    _say(fetch, spin, chat_id, "remember alpha")
    _say(fetch, spin, chat_id, "remember bravo")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "fork", method="POST",
        body={"turn": 1, "message": {"text": "remember bravissimo"}},
    )  # fmt: skip
    assert code == 201
    assert answer["routed"] == "run"
    wait_turn(fetch, spin, answer["id"], answer["run_id"])
    assert _texts(fetch, answer["id"]) == ["remember alpha", "remember bravissimo"]
    assert 'remember bravo"' not in _prompt(fake)
    assert _texts(fetch, chat_id) == ["remember alpha", "remember bravo"]  # unchanged


def test_bad_forks_are_refused_and_make_nothing(fetch: Any, spin: Any) -> None:
    chat_id = new_chat(fetch, "plans")
    _say(fetch, spin, chat_id, "remember alpha")
    path = ("agent", "chats", chat_id, "fork")
    assert (
        refused(fetch, *path, method="POST", body={"turn": 2}, status=400)["reason"] == "bad_turn"
    )
    assert refused(fetch, *path, method="POST", body={}, status=400)["reason"] == "bad_turn"
    assert (
        refused(fetch, *path, method="POST", body={"turn": -1}, status=400)["reason"] == "bad_turn"
    )
    empty = {"turn": 0, "message": {"text": "  "}}
    assert refused(fetch, *path, method="POST", body=empty, status=400)["reason"] == "empty_message"
    odd = {"turn": 0, "color": "red"}
    assert refused(fetch, *path, method="POST", body=odd, status=400)["reason"] == "unknown_field"
    refused(
        fetch, "agent", "chats", "chat_nope", "fork", method="POST", body={"turn": 0}, status=404
    )
    _, listed = call(fetch, "agent", "chats")
    assert [c["id"] for c in listed["chats"]] == [chat_id]  # no fork was made
