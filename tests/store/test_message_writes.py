"""``store_messages``: the writes of several messages (their mail, the runs they open, the
chats' titles) in one transaction, one answer each; all or nothing on a database error."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import event

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Store
from jupyter_agent.store.repo import MessageWrite
from tests.store.factories import iso, make_run


def _item(msg_id: str, text: str) -> dict[str, str]:
    return {"kind": "message", "text": text, "at": iso(5), "id": msg_id}


def test_one_transaction_one_answer_per_write(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="", now=iso(1))
    store.create_chat(chat_id="chat_01B", title="Kept", now=iso(1))
    run = make_run(1, status="running", started=iso(6), chat_id="chat_01A")
    answers = store.store_messages(
        [
            MessageWrite(chat_id="chat_01A", item=_item("msg_1", "hi"), run=run, title="hi"),
            MessageWrite(chat_id="chat_gone", item=_item("msg_2", "lost"), title="x"),
            MessageWrite(chat_id="chat_01B", item=_item("msg_3", "more"), title="new", now=iso(7)),
        ]
    )
    assert answers == [True, False, True]
    opened = store.get_chat("chat_01A")
    assert opened is not None
    assert (opened.title, opened.active_run_id, opened.updated) == ("hi", run.run_id, iso(6))
    kept = store.get_chat("chat_01B")
    assert kept is not None
    assert (kept.title, kept.updated) == ("Kept", iso(1))  # a titled chat keeps both
    assert store.get_run(run.run_id) == run
    queued = [(m["chat_id"], m["id"]) for m in store.queued_mail()]
    assert queued == [("chat_01A", "msg_1"), ("chat_01B", "msg_3")]


def test_a_message_opening_a_run_names_only_an_untitled_chat(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="Kept", now=iso(1))
    store.create_chat(chat_id="chat_01B", title="", now=iso(1))
    for chat_id, n in (("chat_01A", 1), ("chat_01B", 2)):
        run = make_run(n, status="running", started=iso(6), chat_id=chat_id)
        write = MessageWrite(chat_id=chat_id, item=_item(f"m{n}", "hi"), run=run, title="hi")
        assert store.store_messages([write]) == [True]
        opened = store.get_chat(chat_id)
        assert opened is not None
        assert (opened.active_run_id, opened.updated) == (run.run_id, iso(6))
    titles = [getattr(store.get_chat(c), "title", None) for c in ("chat_01A", "chat_01B")]
    assert titles == ["Kept", "hi"]


def test_a_database_error_stores_none_of_the_group(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="a", now=iso(1))
    assert store.accept_message("chat_01A", _item("msg_1", "first"))
    with pytest.raises(StoreError, match="cannot store the message"):
        store.store_messages(
            [
                MessageWrite(chat_id="chat_01A", item=_item("msg_2", "second")),
                MessageWrite(chat_id="chat_01A", item=_item("msg_1", "duplicate")),
            ]
        )
    assert [m["id"] for m in store.queued_mail()] == ["msg_1"]


def test_a_message_and_its_chats_delete_interleaved_leave_no_orphan_mail(store: Store) -> None:
    # A plain message (no run, no title) checks its chat exists, then queues its mail. A
    # delete of the chat committed in between would leave the mail of a deleted chat: the
    # check holds the chat's row (PostgreSQL: FOR KEY SHARE) until the message commits, so
    # the delete waits, and then deletes that mail with the chat.
    store.create_chat(chat_id="chat_01A", title="a", now=iso(1))
    checked, go = threading.Event(), threading.Event()
    writer = threading.get_ident()

    def pause(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if threading.get_ident() == writer and statement.lstrip().upper().startswith("SELECT"):
            checked.set()
            go.wait(10)

    deleted: list[bool] = []
    event.listen(store._engine, "after_cursor_execute", pause)
    try:
        deleter = threading.Thread(target=lambda: deleted.append(store.delete_chat("chat_01A")))

        def release() -> None:
            checked.wait(10)
            deleter.start()
            time.sleep(0.5)  # the delete runs now, or waits for the chat's row
            go.set()

        releaser = threading.Thread(target=release)
        releaser.start()
        stored = store.store_messages([MessageWrite(chat_id="chat_01A", item=_item("m1", "hi"))])
        releaser.join(10)
        deleter.join(10)
    finally:
        event.remove(store._engine, "after_cursor_execute", pause)
    assert stored == [True]
    assert deleted == [True]
    assert store.get_chat("chat_01A") is None
    assert store.queued_mail() == []
