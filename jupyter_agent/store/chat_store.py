"""The Store's chat methods: chats (create, import, fork, read, list, rename, delete,
touch) and the durable mailbox (a user message stored before it is acknowledged, a run's
opening).

A mixin of :class:`~jupyter_agent.store.repo.Store`, which provides its connections and its
prepared run upsert. ``delete_chat`` deletes the chat, its turns, its chunk summaries,
their recall docs and its queued messages; its run summaries stay (traces outlive chats)
and memories saved in it stay, with their docs. It locks the chat row before anything
else, the order ``append_turn`` and ``add_chunk`` lock in: no deadlock on PostgreSQL.
The mailbox: ``accept_message`` stores a user message before the server acknowledges it;
``open_run`` stores the message opening a run with that run (one transaction);
``store_messages`` stores several such writes (of different chats) in one transaction, the
group commit of messages sent at the same time (one commit, one sync of the database).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import bindparam, case, delete, func, update
from sqlalchemy import select as core_select

from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.store.history import chunk_queries, fork
from jupyter_agent.store.memory import recall_index, recall_queue
from jupyter_agent.store.rows import Chat, chat, mail_row, run_values, valid
from jupyter_agent.store.tables import CHATS, MAIL, TURNS

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.sql.dml import Insert

__all__ = ["ChatMethods", "MessageWrite", "read_chat"]

#: What a new chat's row holds unless given: every column is written.
_NEW_CHAT: Final[dict[str, Any]] = {
    "active_run_id": None,
    "agent": "agent",
    "owner": "",
    "forked_from": None,
    "model": None,
}
# Built once: the hot reads (a message's send reads its chat).
_CHAT_BY_ID: Final = core_select(CHATS).where(CHATS.c.id == bindparam("chat_id"))


def read_chat(conn: Any, chat_id: str) -> Chat | None:
    """The chat, or None (in the caller's transaction)."""
    row = conn.execute(_CHAT_BY_ID, {"chat_id": chat_id}).first()
    return chat(row._mapping) if row is not None else None


def _insert_chat(conn: Any, **values: Any) -> Chat:
    """Insert a chat row (the columns not given as in :data:`_NEW_CHAT`); the chat."""
    row = {**_NEW_CHAT, **values}
    conn.execute(CHATS.insert(), row)
    return chat(row)


def _set_chat(conn: Any, chat_id: str, **values: Any) -> Chat | None:
    """Set these columns of the chat; the chat as stored, or None when there is none."""
    statement = update(CHATS).where(CHATS.c.id == chat_id).values(**values)
    row = conn.execute(statement.returning(*CHATS.c)).first()
    return chat(row._mapping) if row is not None else None


def _chat_exists(conn: Any, chat_id: str) -> bool:
    """Whether the chat exists, its row held until the commit (PostgreSQL: FOR KEY SHARE, so
    a delete_chat waits and then deletes what this transaction queued; SQLite's write
    transaction holds the whole database)."""
    query = core_select(CHATS.c.id).where(CHATS.c.id == chat_id).with_for_update(key_share=True)
    return conn.execute(query).first() is not None


# A message's write of its chat's row (:meth:`ChatMethods.store_messages`): a first message
# names an untitled chat (``updated`` = its time; a titled chat keeps both), a message
# opening a run makes it the active run (``updated`` = the run's start). SET expressions
# read the row as it was, so ``updated``'s CASE sees the old title.
_UNTITLED: Final = CHATS.c.title == ""
_TITLE: Final = case((_UNTITLED, bindparam("m_title")), else_=CHATS.c.title)
_CHAT_ROW: Final = update(CHATS).where(CHATS.c.id == bindparam("m_chat")).returning(CHATS.c.id)
_NAME: Final = _CHAT_ROW.values(
    title=_TITLE, updated=case((_UNTITLED, bindparam("m_now")), else_=CHATS.c.updated)
)
_OPEN: Final = _CHAT_ROW.values(updated=bindparam("m_started"), active_run_id=bindparam("m_run"))
_OPEN_NAMED: Final = _CHAT_ROW.values(
    title=_TITLE, updated=bindparam("m_started"), active_run_id=bindparam("m_run")
)


@dataclass(frozen=True, kw_only=True)
class MessageWrite:
    """What one message writes before it is acknowledged (:meth:`ChatMethods.store_messages`):
    its mailbox ``item`` (``id`` and ``at`` set; None: a run opened with mail already
    stored), the ``run`` it opens (its ``running`` summary, made the chat's active run,
    chat ``updated`` = ``run.started``), and the chat's ``title`` to set if it has none yet
    (its first message names it; ``updated`` = ``now``)."""

    chat_id: str
    item: Mapping[str, Any] | None = None
    run: RunSummary | None = None
    title: str | None = None
    now: str = ""


class ChatMethods:
    """Chats and the durable mailbox (see the module docstring)."""

    if TYPE_CHECKING:
        _upsert_run_sql: Insert

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    def create_chat(
        self, *, chat_id: str, title: str, now: str, agent: str = "agent", owner: str = ""
    ) -> Chat:
        """Insert a chat (``created`` = ``updated`` = ``now``) of ``owner`` talking to
        ``agent`` (the caller checks the name). A duplicate id is a StoreError."""
        title = valid(title, "chat title")
        owner = valid(owner, "chat owner")
        values = {"title": title, "created": now, "updated": now, "agent": agent, "owner": owner}
        with self._write("cannot create the chat") as conn:
            _insert_chat(conn, id=chat_id, **values)
        return Chat(id=chat_id, title=title, created=now, updated=now, agent=agent, owner=owner)

    def import_chat(
        self,
        *,
        chat_id: str,
        title: str,
        now: str,
        turns: Sequence[TurnRecord],
        agent: str = "agent",
        owner: str = "",
    ) -> Chat:
        """:meth:`create_chat` holding ``turns`` (each of this chat, with a run id no other
        turn has) and their recall docs, in one transaction (see
        :func:`~.history.fork.add_turns`): all of it or nothing."""
        title = valid(title, "chat title")
        owner = valid(owner, "chat owner")
        values = {"title": title, "created": now, "updated": now, "agent": agent, "owner": owner}
        with self._write("cannot import the chat") as conn:
            _insert_chat(conn, id=chat_id, **values)
            fork.add_turns(conn, turns, owner=owner)
        return Chat(id=chat_id, title=title, created=now, updated=now, agent=agent, owner=owner)

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat, or None."""
        with self._read("cannot read the chat") as conn:
            return read_chat(conn, chat_id)

    def owner_turn_count(self, owner: str) -> int:
        """How many turns ``owner``'s chats hold, all chats together (one query: what the
        runtime's recall counters start from, :mod:`jupyter_agent.runtime.memory.counts`)."""
        query = (
            core_select(func.count())
            .select_from(TURNS.join(CHATS, TURNS.c.chat_id == CHATS.c.id))
            .where(CHATS.c.owner == owner)
        )
        with self._read("cannot count the turns") as conn:
            return int(conn.execute(query).scalar() or 0)

    def list_chats(self, *, owner: str | None = None) -> list[Chat]:
        """The chats of ``owner`` (None: every owner's), the most recently updated first
        (ties: larger id first)."""
        query = core_select(CHATS).order_by(CHATS.c.updated.desc(), CHATS.c.id.desc())
        if owner is not None:
            query = query.where(CHATS.c.owner == owner)
        with self._read("cannot list chats") as conn:
            return [chat(row._mapping) for row in conn.execute(query)]

    def rename_chat(self, chat_id: str, title: str, *, now: str) -> Chat | None:
        """Set the title and ``updated``; None when there is no such chat."""
        title = valid(title, "chat title")
        with self._write("cannot rename the chat") as conn:
            return _set_chat(conn, chat_id, title=title, updated=now)

    def set_chat_model(self, chat_id: str, model: str | None, *, now: str) -> Chat | None:
        """Set (or, with None, drop) the chat's model and ``updated``; None when there is no
        such chat. The value is the caller's to check (:mod:`~.runtime.runs.chat_models`)."""
        model = valid(model, "chat model") if model else None
        with self._write("cannot set the chat's model") as conn:
            return _set_chat(conn, chat_id, model=model, updated=now)

    def retitle_chat_if(self, chat_id: str, expected: str, title: str) -> bool:
        """Set the title only while it is still ``expected`` (one conditional write: a
        rename by the person that lands first wins); True when it was set. ``updated``
        stays (a name given in the background does not move the chat in the list)."""
        title = valid(title, "chat title")
        with self._write("cannot retitle the chat") as conn:
            done = conn.execute(
                update(CHATS)
                .where(CHATS.c.id == chat_id, CHATS.c.title == expected)
                .values(title=title)
            )
            return bool(done.rowcount)

    def delete_chat(self, chat_id: str) -> bool:
        """Delete the chat, its turns and chunks and their recall docs (runs stay, and so do
        memories saved in it); False when it did not exist."""
        with self._write("cannot delete the chat") as conn:
            # The chat row first (FOR UPDATE; SQLite writes are serialised anyway), the
            # order append_turn and add_chunk lock in (the chat by their insert's foreign
            # key and the bump, then the counts): the other order deadlocks on PostgreSQL.
            # Once it is held, no turn or chunk of the chat can be stored until we commit.
            conn.execute(core_select(CHATS.c.id).where(CHATS.c.id == chat_id).with_for_update())
            recall_index.delete_chat_docs(conn, chat_id)
            recall_queue.unqueue_chat(conn, chat_id)
            chunk_queries.delete_chunks(conn, chat_id)
            conn.execute(delete(TURNS).where(TURNS.c.chat_id == chat_id))
            conn.execute(delete(MAIL).where(MAIL.c.chat_id == chat_id))
            result = conn.execute(delete(CHATS).where(CHATS.c.id == chat_id))
            return bool(result.rowcount)

    def fork_chat(
        self,
        source_id: str,
        *,
        upto: int,
        chat_id: str,
        title: str,
        now: str,
        make_id: Callable[[str], str],
    ) -> Chat | None:
        """A new chat ``chat_id`` (``created`` = ``updated`` = ``now``) of the source's owner
        agent and model, ``forked_from: {chat_id: source_id, turn: upto}``, holding copies of the
        source's turns 1..``upto`` (ids from ``make_id``) and of the summaries within them
        (:func:`~.history.fork.copy_history`), in one transaction. None for an unknown
        source; ``ValueError`` (nothing written) when ``upto`` is not in 0..its turn count."""
        title = valid(title, "chat title")
        with self._write("cannot fork the chat") as conn:
            # The source's row first (FOR UPDATE), the order append_turn and delete_chat lock
            # in: no turn of it is stored or deleted while it is copied.
            source = conn.execute(
                core_select(CHATS).where(CHATS.c.id == source_id).with_for_update()
            ).first()
            if source is None:
                return None
            count = fork.turn_count(conn, source_id)
            if not 0 <= upto <= count:
                raise ValueError(f"the chat has {count} turns: fork at a turn from 0 to {count}")
            origin = json.dumps({"chat_id": source_id, "turn": upto}, separators=(",", ":"))
            made = _insert_chat(
                conn, id=chat_id, title=title, created=now, updated=now, agent=source.agent,
                owner=source.owner, forked_from=origin, model=source.model,
            )  # fmt: skip
            fork.copy_history(
                conn, source=source_id, target=chat_id, upto=upto, owner=made.owner, make_id=make_id
            )
            return made

    def touch_chat(self, chat_id: str, *, now: str, active_run_id: str | None) -> None:
        """Set ``updated`` and the active run (None when no run is going). Unknown: no-op."""
        statement = (
            update(CHATS)
            .where(CHATS.c.id == chat_id)
            .values(updated=now, active_run_id=active_run_id)
        )
        with self._write("cannot update the chat") as conn:
            conn.execute(statement)

    # --- the durable mailbox --------------------------------------------------------------

    def accept_message(self, chat_id: str, item: Mapping[str, Any]) -> bool:
        """Store a user message (a mailbox item with ``id`` and ``at``) before it is
        acknowledged; False (nothing stored) when the chat does not exist. A duplicate id
        is a StoreError."""
        return self.store_messages([MessageWrite(chat_id=chat_id, item=item)])[0]

    def open_run(self, run: RunSummary, *, message: Mapping[str, Any] | None = None) -> bool:
        """Store the summary of a run that starts and make it its chat's active run (chat
        ``updated`` = ``run.started``); with ``message``, the user message opening it is
        stored too (see :meth:`accept_message`). One transaction: all of it or nothing;
        False (nothing stored) when the chat does not exist."""
        return self.store_messages([MessageWrite(chat_id=run.chat_id, item=message, run=run)])[0]

    def store_messages(self, writes: Sequence[MessageWrite]) -> list[bool]:
        """Store every write (see :class:`MessageWrite`) in ONE transaction, in order; one
        answer per write: False for one whose chat does not exist (nothing of it stored),
        True for the others. A database error (a duplicate id, a lock) stores none of
        them: the caller may try them one by one to tell whose it was."""
        with self._write("cannot store the message") as conn:
            return [self._store_message(conn, write) for write in writes]

    def _store_message(self, conn: Any, write: MessageWrite) -> bool:
        chat_id = write.chat_id
        # The chat's row first, in one statement that also tells whether it exists (its
        # RETURNING): a message costs three statements, not five.
        params: dict[str, Any] = {"m_chat": chat_id}
        statement: Any
        if write.title:
            params.update(m_title=valid(write.title, "chat title"), m_now=write.now)
        if write.run is not None:
            params.update(m_started=write.run.started, m_run=write.run.run_id)
            statement = _OPEN_NAMED if write.title else _OPEN
        else:
            statement = _NAME if write.title else None
        if statement is None:
            if not _chat_exists(conn, chat_id):
                return False
        elif conn.execute(statement, params).first() is None:
            return False
        if write.item is not None:
            conn.execute(MAIL.insert(), mail_row(chat_id, write.item))
        if write.run is not None:
            conn.execute(self._upsert_run_sql, run_values(write.run))
        return True

    def queued_mail(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The stored messages no stored turn holds yet, oldest first (ids are ULIDs), as
        mailbox items each with its ``chat_id``; every chat's unless ``chat_id``."""
        query = core_select(MAIL.c.chat_id, MAIL.c.item).order_by(MAIL.c.id)
        if chat_id is not None:
            query = query.where(MAIL.c.chat_id == chat_id)
        with self._read("cannot read the mailbox") as conn:
            rows = conn.execute(query).all()
        return [{**json.loads(item), "chat_id": chat} for chat, item in rows]

    def delete_mail(self, ids: Sequence[str]) -> None:
        """Forget these queued messages (a start that failed after storing its message)."""
        if not ids:
            return
        with self._write("cannot update the mailbox") as conn:
            conn.execute(delete(MAIL).where(MAIL.c.id.in_(list(ids))))
