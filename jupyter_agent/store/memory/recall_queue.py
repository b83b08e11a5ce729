"""The turns waiting for their recall doc, and the batch that writes their docs.

A stored turn's doc is not written by the transaction that stores it: ``append_turn`` adds
one row to ``agent_recall_pending`` instead (:func:`queue_turn`), and :func:`index_batch`
writes the docs of waiting turns in the order they were stored (``seq``: doc ids keep
following the turns, as recall's newest-first reads expect), in one transaction of its
own, run by the Store's indexer thread (:mod:`.turn_indexer`) after the turn's run has
ended. Indexing (the doc's terms, the full-text postings, the owner's document
frequencies) costs more than the turn's row, and on PostgreSQL it locks the owner's
doc-count row until the commit: done in the turn's transaction, it would serialise every
turn of an owner and make each one pay for it before its run ends.

Contracts:

- **Durable**: the waiting row commits with the turn; a batch deletes the rows it indexed
  in the transaction that writes their docs. A server that stops or dies before its
  indexer ran leaves the rows, and the next one indexes them (``Store.resume_indexing``).
- **The same doc as before**: a turn's doc is :func:`.recall_index.turn_doc`'s, owned by its
  chat's owner; none for a turn the demo model answered (not even queued) or whose run is
  suppressed (a memory it saved was deleted: checked when the batch runs, so a deletion
  made while the turn waited counts); a turn whose chat was deleted meanwhile is dropped.
- **Locks** (PostgreSQL; SQLite's writes are serialised by the Store): the batch locks its
  turns' chat rows ``FOR KEY SHARE`` in id order first (the chat before anything else, as
  ``delete_chat``, ``delete_memory`` and ``fork_chat`` take it ``FOR UPDATE``: the batch
  waits for them and they for it; the writes of turns and messages are not held up),
  then its waiting rows ``FOR UPDATE SKIP LOCKED`` (two servers on one database never
  index the same turn), and only then reads the turns and the suppressed runs: a chat
  deleted or a memory forgotten while the batch waited for the lock is seen.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import bindparam, text

from jupyter_agent.store.memory.recall_index import (
    Doc,
    put_docs,
    record_reply,
    turn_text,
)

__all__ = ["BATCH", "index_batch", "pending_turns", "queue_turn", "unqueue_chat"]

#: At most this many turns are indexed by one batch (one transaction).
BATCH: Final = 200

_QUEUE: Final = text(
    "INSERT INTO agent_recall_pending (turn_id) VALUES (:turn) ON CONFLICT (turn_id) DO NOTHING"
)
_WAITING: Final = text(
    "SELECT p.turn_id, t.chat_id FROM agent_recall_pending p"
    " LEFT JOIN agent_turns t ON t.id = p.turn_id ORDER BY p.seq LIMIT :n"
)
# KEY SHARE: it waits for (and holds off) the FOR UPDATE of delete_chat, delete_memory and
# fork_chat, never for the writes of turns and messages (a grouped commit of several chats'
# messages locks them in arrival order: FOR UPDATE here would deadlock with it).
_LOCK_CHATS: Final = text(
    "SELECT id FROM chats WHERE id IN :chats ORDER BY id FOR KEY SHARE"
).bindparams(bindparam("chats", expanding=True))
_TAKE: Final = text(
    "SELECT turn_id FROM agent_recall_pending WHERE turn_id IN :ids ORDER BY seq"
    " FOR UPDATE SKIP LOCKED"
).bindparams(bindparam("ids", expanding=True))
_TURNS: Final = text(
    "SELECT t.id, t.chat_id, t.created, t.user_text, t.record, t.run_id, c.owner"
    " FROM agent_turns t JOIN chats c ON c.id = t.chat_id WHERE t.id IN :ids"
).bindparams(bindparam("ids", expanding=True))
_SUPPRESSED: Final = text(
    "SELECT run_id FROM agent_recall_suppressed WHERE run_id IN :runs"
).bindparams(bindparam("runs", expanding=True))
_INDEXED: Final = text(
    "SELECT ref_id FROM agent_recall_docs WHERE kind = 'turn' AND ref_id IN :ids"
).bindparams(bindparam("ids", expanding=True))
_DONE: Final = text("DELETE FROM agent_recall_pending WHERE turn_id IN :ids").bindparams(
    bindparam("ids", expanding=True)
)
_UNQUEUE_CHAT: Final = text(
    "DELETE FROM agent_recall_pending"
    " WHERE turn_id IN (SELECT id FROM agent_turns WHERE chat_id = :chat)"
)


def queue_turn(conn: Any, turn_id: str) -> None:
    """The stored turn ``turn_id`` waits for its doc (in the caller's transaction)."""
    conn.execute(_QUEUE, {"turn": turn_id})


def unqueue_chat(conn: Any, chat_id: str) -> None:
    """The chat's turns wait no more (the chat is being deleted, in this transaction)."""
    conn.execute(_UNQUEUE_CHAT, {"chat": chat_id})


def pending_turns(conn: Any) -> int:
    """How many stored turns wait for their doc."""
    return int(conn.execute(text("SELECT COUNT(*) FROM agent_recall_pending")).scalar() or 0)


def index_batch(conn: Any, limit: int = BATCH) -> tuple[int, int]:
    """Write the docs of the ``limit`` first waiting turns (in the order they were stored)
    and delete their waiting rows, in the caller's (write) transaction: (the waiting rows
    seen, the rows taken). Fewer are taken than seen when another server's batch holds
    some (it writes them); (0, 0): none waits."""
    waiting = conn.execute(_WAITING, {"n": limit}).all()
    if not waiting:
        return 0, 0
    ids = [str(turn_id) for turn_id, _ in waiting]
    if conn.dialect.name == "postgresql":
        chats = sorted({str(chat) for _, chat in waiting if chat is not None})
        if chats:
            conn.execute(_LOCK_CHATS, {"chats": chats})
        ids = [str(row[0]) for row in conn.execute(_TAKE, {"ids": ids})]
        if not ids:
            return len(waiting), 0
    order = {turn_id: n for n, turn_id in enumerate(ids)}  # docs in the order turns were stored
    rows = sorted(conn.execute(_TURNS, {"ids": ids}).all(), key=lambda r: order[str(r.id)])
    runs = sorted({str(row.run_id) for row in rows})
    suppressed = {str(r[0]) for r in conn.execute(_SUPPRESSED, {"runs": runs})} if runs else set()
    indexed = {str(r[0]) for r in conn.execute(_INDEXED, {"ids": ids})}
    docs = [
        Doc.of(
            owner=str(row.owner or ""),
            kind="turn",
            ref_id=str(row.id),
            chat_id=str(row.chat_id),
            created=str(row.created),
            body=turn_text(str(row.user_text), record_reply(str(row.record))),
        )
        for row in rows
        if str(row.run_id) not in suppressed and str(row.id) not in indexed
    ]
    put_docs(conn, docs)
    conn.execute(_DONE, {"ids": ids})
    return len(waiting), len(ids)
