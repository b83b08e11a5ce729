"""Chat and message routes through a real Jupyter Server: success paths and refusals.

Every refused call must leave no trace: no chat or run row, no mailbox item, no kernel
(the pool is empty here, so any kernel would be one a refused call started).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.helpers import active_runs, call, new_chat, refused

SMALL = {"pool_size": 0, "max_body_bytes": 4096}


def assert_nothing_started(service: Any, jp_serverapp: Any, chat_id: str | None = None) -> None:
    runs, _ = service.store.list_runs()
    assert runs == []
    assert service.pool.counts() == {"warm": 0, "starting": 0, "in_use": 0}
    assert active_runs(service.manager) == []
    if chat_id is not None:
        assert service.mailbox.pending(chat_id) == 0
        assert service.store.list_turns(chat_id) == []


@pytest.mark.parametrize("agent_config", [SMALL])
def test_chat_crud(fetch: Any, agent_service: Any, jp_serverapp: Any) -> None:
    code, chat = call(fetch, "agent", "chats", method="POST", body={"title": "First"})
    assert code == 201
    assert set(chat) == {
        "id", "title", "created", "updated", "active_run_id", "agent", "owner", "forked_from",
        "model",
    }  # fmt: skip
    assert chat["agent"] == "agent"
    assert chat["id"].startswith("chat_")
    assert chat["title"] == "First"
    assert chat["created"].endswith("Z")
    assert chat["active_run_id"] is None
    untitled = new_chat(fetch)
    code, listing = call(fetch, "agent", "chats")
    assert code == 200
    assert {c["id"] for c in listing["chats"]} == {chat["id"], untitled}
    code, one = call(fetch, "agent", "chats", chat["id"])
    assert code == 200
    assert one["turns"] == []
    assert one["title"] == "First"
    code, renamed = call(fetch, "agent", "chats", chat["id"], method="PATCH", body={"title": "R"})
    assert code == 200
    assert renamed["title"] == "R"
    assert renamed["updated"] >= chat["updated"]
    response = fetch("agent", "chats", chat["id"], method="DELETE")
    assert response.code == 204
    refused(fetch, "agent", "chats", chat["id"], status=404)
    refused(fetch, "agent", "chats", chat["id"], method="DELETE", status=404)
    refused(fetch, "agent", "chats", chat["id"], method="PATCH", body={"title": "x"}, status=404)
    code, nb = call(fetch, "agent", "chats", untitled, "notebook")
    assert code == 200
    assert nb["nbformat"] == 4
    assert nb["cells"] == []
    assert_nothing_started(agent_service, jp_serverapp)


BAD_CHAT_BODIES = [
    (b"{not json", 400),
    (b"[1, 2]", 400),
    (json.dumps({"title": 5}).encode(), 400),
    (json.dumps({"title": "x" * 201}).encode(), 400),
    (json.dumps({"title": "y" * 5000}).encode(), 413),
]


@pytest.mark.parametrize("agent_config", [SMALL])
def test_bad_chat_bodies_write_nothing(fetch: Any, agent_service: Any) -> None:
    for body, status in BAD_CHAT_BODIES:
        refused(fetch, "agent", "chats", method="POST", body=body, status=status)
    assert agent_service.store.list_chats() == []
    chat_id = new_chat(fetch, "keep")
    for body, status in BAD_CHAT_BODIES:
        refused(fetch, "agent", "chats", chat_id, method="PATCH", body=body, status=status)
    refused(fetch, "agent", "chats", chat_id, method="PATCH", body={}, status=400)
    assert agent_service.store.get_chat(chat_id).title == "keep"


BAD_MESSAGES: list[tuple[Any, int, str]] = [
    (b"{oops", 400, "bad_json"),
    (b'"text"', 400, "bad_json"),
    ({}, 400, "empty_message"),
    ({"text": "   \n"}, 400, "empty_message"),
    ({"text": 42}, 400, "bad_text"),
    ({"text": ["a"]}, 400, "bad_text"),
    ({"text": "hi", "control": {"kind": "stop"}}, 400, "bad_control"),
    ({"text": "hi", "control": {"kind": "break", "hard": "yes"}}, 400, "bad_control"),
    ({"text": "hi", "control": "break"}, 400, "bad_control"),
    ({"text": "hi", "view": "nb.ipynb"}, 400, "bad_view"),
    ({"text": "hi", "view": {"path": 3}}, 400, "bad_view"),
    ({"text": "hi", "view": {"colour": "red"}}, 400, "bad_view"),
    ({"text": "hi", "view": {"path": "../outside.ipynb"}}, 400, "bad_path"),
    ({"text": "hi", "attachments": "a.txt"}, 400, "bad_attachments"),
    ({"text": "hi", "attachments": [1]}, 400, "bad_attachments"),
    ({"text": "hi", "attachments": ["../../etc/passwd"]}, 400, "bad_path"),
    ({"text": "hi", "attachments": ["/../secret.txt"]}, 400, "bad_path"),
    ({"text": "hi", "attachments": ["missing.txt"]}, 400, "bad_attachments"),
    ({"text": "hi", "attachments": ["folder"]}, 400, "bad_attachments"),
    ({"text": "z" * 5000}, 413, "body_too_large"),
]


@pytest.mark.parametrize("agent_config", [SMALL])
def test_bad_messages_write_and_start_nothing(
    fetch: Any, agent_service: Any, jp_serverapp: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "folder").mkdir()
    chat_id = new_chat(fetch)
    for body, status, reason in BAD_MESSAGES:
        error = refused(
            fetch, "agent", "chats", chat_id, "messages", method="POST", body=body, status=status
        )
        assert error["reason"] == reason, (body, error)
    # An unknown chat: 404, and still nothing written.
    error = refused(
        fetch,
        "agent",
        "chats",
        "chat_nope",
        "messages",
        method="POST",
        body={"text": "hi"},
        status=404,
    )
    assert "chat_nope" in error["message"]
    assert agent_service.store.get_chat("chat_nope") is None
    assert agent_service.store.get_chat(chat_id).title == ""  # no title from a refused call
    assert_nothing_started(agent_service, jp_serverapp, chat_id)


@pytest.mark.parametrize("agent_config", [SMALL])
def test_break_message_without_a_run(fetch: Any, agent_service: Any, jp_serverapp: Any) -> None:
    chat_id = new_chat(fetch)
    for control in ({"kind": "break"}, {"kind": "break", "hard": True}):
        code, answer = call(
            fetch, "agent", "chats", chat_id, "messages", method="POST", body={"control": control}
        )
        assert code == 202
        assert answer == {"run_id": None, "routed": "none"}
    assert_nothing_started(agent_service, jp_serverapp, chat_id)
