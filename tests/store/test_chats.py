"""Chats: create, list newest first, rename, touch, delete (turns go, run summaries stay)."""

from __future__ import annotations

import pytest

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Chat, Store
from tests.store.factories import iso, make_run, make_turn


def test_create_get_and_to_json(store: Store) -> None:
    chat = store.create_chat(chat_id="chat_01A", title="Sales plots", now=iso(1))
    assert chat == Chat(id="chat_01A", title="Sales plots", created=iso(1), updated=iso(1))
    assert store.get_chat("chat_01A") == chat
    assert store.get_chat("chat_missing") is None
    assert chat.to_json() == {
        "id": "chat_01A",
        "title": "Sales plots",
        "created": iso(1),
        "updated": iso(1),
        "active_run_id": None,
        "agent": "agent",
        "owner": "",
        "forked_from": None,
        "model": None,
    }
    other = store.create_chat(
        chat_id="chat_01B", title="Plans", now=iso(2), agent="planner", owner="alice"
    )
    assert (other.agent, other.owner) == ("planner", "alice")
    assert store.get_chat("chat_01B") == other
    assert store.chat_agent("chat_01B") == "planner"


def test_duplicate_id_is_a_store_error(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="a", now=iso(1))
    with pytest.raises(StoreError, match="cannot create the chat"):
        store.create_chat(chat_id="chat_01A", title="b", now=iso(2))
    assert store.get_chat("chat_01A").title == "a"  # type: ignore[union-attr]


def test_list_is_newest_updated_first(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="a", now=iso(1))
    store.create_chat(chat_id="chat_01B", title="b", now=iso(2))
    store.create_chat(chat_id="chat_01C", title="c", now=iso(3))
    assert [c.id for c in store.list_chats()] == ["chat_01C", "chat_01B", "chat_01A"]
    store.touch_chat("chat_01A", now=iso(4), active_run_id="run_9")
    chats = store.list_chats()
    assert [c.id for c in chats] == ["chat_01A", "chat_01C", "chat_01B"]
    assert chats[0].active_run_id == "run_9"
    assert chats[0].updated == iso(4)
    store.touch_chat("chat_01A", now=iso(5), active_run_id=None)
    assert store.get_chat("chat_01A") == Chat(
        id="chat_01A", title="a", created=iso(1), updated=iso(5), active_run_id=None
    )


def test_ties_in_updated_are_broken_by_id(store: Store) -> None:
    for chat_id in ("chat_01B", "chat_01C", "chat_01A"):
        store.create_chat(chat_id=chat_id, title=chat_id, now=iso(7))
    assert [c.id for c in store.list_chats()] == ["chat_01C", "chat_01B", "chat_01A"]


def test_rename(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="old", now=iso(1))
    renamed = store.rename_chat("chat_01A", "new ✓", now=iso(2))
    assert renamed == Chat(id="chat_01A", title="new ✓", created=iso(1), updated=iso(2))
    assert store.get_chat("chat_01A") == renamed
    assert store.rename_chat("chat_missing", "x", now=iso(3)) is None
    assert store.get_chat("chat_missing") is None


def test_touch_unknown_chat_creates_nothing(store: Store) -> None:
    store.touch_chat("chat_missing", now=iso(1), active_run_id="run_1")
    assert store.list_chats() == []


def test_delete_removes_turns_keeps_runs(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="a", now=iso(0))
    store.create_chat(chat_id="chat_01B", title="b", now=iso(0))
    store.append_turn(make_turn(1, chat_id="chat_01A"))
    store.append_turn(make_turn(2, chat_id="chat_01B"))
    store.upsert_run(make_run(1, chat_id="chat_01A"))

    assert store.delete_chat("chat_01A") is True
    assert store.get_chat("chat_01A") is None
    assert store.list_turns("chat_01A") == []
    assert store.get_turn_by_run("run_000001") is None
    # Traces outlive chats: the run summary stays, still naming the deleted chat.
    run = store.get_run("run_000001")
    assert run is not None
    assert run.chat_id == "chat_01A"
    # The other chat is untouched.
    assert [t.id for t in store.list_turns("chat_01B")] == ["turn_000002"]
    assert store.delete_chat("chat_01A") is False
    # The id can be reused and starts empty.
    store.create_chat(chat_id="chat_01A", title="again", now=iso(9))
    assert store.list_turns("chat_01A") == []


def test_a_chats_model_is_set_dropped_and_forked(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="a", now=iso(1))
    chat = store.set_chat_model("chat_01A", "claude-opus-4-1", now=iso(2))
    assert chat is not None
    assert (chat.model, chat.updated) == ("claude-opus-4-1", iso(2))
    assert store.get_chat("chat_01A") == chat
    fork = store.fork_chat(
        "chat_01A", upto=0, chat_id="chat_01F", title="f", now=iso(3), make_id=lambda p: p + "_1"
    )
    assert fork is not None
    assert fork.model == "claude-opus-4-1"
    assert store.set_chat_model("chat_01A", None, now=iso(4)).model is None  # type: ignore[union-attr]
    assert store.get_chat("chat_01F").model == "claude-opus-4-1"  # type: ignore[union-attr]
    assert store.set_chat_model("chat_missing", "x", now=iso(5)) is None
