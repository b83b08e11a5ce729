"""``store_messages``: the writes of several messages (their mail, the runs they open, the
chats' titles) in one transaction, one answer each; all or nothing on a database error."""

from __future__ import annotations

import pytest

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
