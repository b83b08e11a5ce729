"""``GET agent/chats/{id}/history`` through a real Jupyter Server: the chat's stored chunk
summaries and how many are pending, under the configured chunk layout (issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.history.chunks import StoredChunk
from tests.server.helpers import call, new_chat, refused
from tests.store.factories import iso, make_turn


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """No warm kernels; chunks of 4 turns, level-2 chunks of 2 level-1 chunks."""
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "KernelPool": {"size": 0},
        "RunManager": {"chunk_turns": 4, "l2_chunks": 2},
    }


def summary(chat_id: str, level: int, first: int, last: int) -> StoredChunk:
    return StoredChunk(
        chat_id=chat_id,
        level=level,  # type: ignore[arg-type]
        first_turn=first,
        last_turn=last,
        text=f"turns {first}-{last}: the user loaded sales_é.csv, x = {first}",
        run_id=f"run_sum{level}{first:03d}",
        model="claude-test",
        created=iso(900 + first),
    )


def test_an_empty_chat_has_no_chunks_and_none_pending(fetch: Any) -> None:
    chat_id = new_chat(fetch)
    assert call(fetch, "agent", "chats", chat_id, "history") == (
        200,
        {"chunks": [], "pending": 0},
    )


def test_stored_chunks_and_pending_follow_the_layout(fetch: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch)
    store = agent_service.store
    for n in range(1, 10):  # 9 turns: level-1 chunks 1-4 and 5-8 are closed
        store.append_turn(make_turn(n, chat_id=chat_id))
    assert call(fetch, "agent", "chats", chat_id, "history") == (
        200,
        {"chunks": [], "pending": 2},
    )
    store.add_chunk(summary(chat_id, 1, 5, 8))
    store.add_chunk(summary(chat_id, 1, 1, 4))
    # Both level-1 summaries of level-2 chunk 1-8 exist: it is the one pending now.
    code, body = call(fetch, "agent", "chats", chat_id, "history")
    assert code == 200
    assert body == {
        "chunks": [summary(chat_id, 1, 1, 4).to_json(), summary(chat_id, 1, 5, 8).to_json()],
        "pending": 1,
    }
    assert body["chunks"][0] == {
        "level": 1,
        "first_turn": 1,
        "last_turn": 4,
        "text": "turns 1-4: the user loaded sales_é.csv, x = 1",
        "run_id": "run_sum1001",
        "created": iso(901),
    }
    store.add_chunk(summary(chat_id, 2, 1, 8))
    code, body = call(fetch, "agent", "chats", chat_id, "history")
    assert [(c["level"], c["first_turn"]) for c in body["chunks"]] == [(1, 1), (1, 5), (2, 1)]
    assert body["pending"] == 0


def test_an_unknown_chat_is_404(fetch: Any) -> None:
    error = refused(fetch, "agent", "chats", "chat_nope", "history", status=404)
    assert error["reason"] == "not_found"


def test_deleting_the_chat_deletes_its_chunks(fetch: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch)
    other = new_chat(fetch)
    store = agent_service.store
    for n in range(1, 5):
        store.append_turn(make_turn(n, chat_id=chat_id))
    store.add_chunk(summary(chat_id, 1, 1, 4))
    store.add_chunk(summary(other, 1, 1, 4))
    assert len(call(fetch, "agent", "chats", chat_id, "history")[1]["chunks"]) == 1
    code, _ = call(fetch, "agent", "chats", chat_id, method="DELETE")
    assert code == 204
    assert store.list_chunks(chat_id) == []
    refused(fetch, "agent", "chats", chat_id, "history", status=404)
    assert call(fetch, "agent", "chats", other, "history")[1]["chunks"] == [
        summary(other, 1, 1, 4).to_json()
    ]
