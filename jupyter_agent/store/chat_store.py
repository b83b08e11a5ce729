"""The Store's chat methods: chats (create, import, fork, read, list, rename, delete,
touch) and the durable mailbox (a user message stored before it is acknowledged, a run's
opening).

A mixin of :class:`~jupyter_agent.store.repo.Store`, which provides its sessions and its
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

from sqlalchemy import delete, func, update
from sqlalchemy import select as core_select
from sqlmodel import col, select

from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.store.history import chunk_queries, fork
from jupyter_agent.store.memory import recall_index, recall_queue
from jupyter_agent.store.rows import Chat, chat, mail_row, run_values, valid
from jupyter_agent.store.tables import AgentMailRow, AgentTurnRow, ChatRow

if TYPE_CHECKING:
    from sqlalchemy.sql.dml import Insert
    from sqlmodel import Session

__all__ = ["ChatMethods", "MessageWrite"]

_CHATS: Final = ChatRow.metadata.tables["chats"]
_MAIL: Final = AgentMailRow.metadata.tables["agent_mail"]


def _chat_exists(conn: Any, chat_id: str) -> bool:
    query = core_select(_CHATS.c.id).where(_CHATS.c.id == chat_id)
    return conn.execute(query).first() is not None


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

        def _read(self, what: str) -> AbstractContextManager[Session]: ...
        def _write(self, what: str) -> AbstractContextManager[Session]: ...

    def create_chat(
        self, *, chat_id: str, title: str, now: str, agent: str = "agent", owner: str = ""
    ) -> Chat:
        """Insert a chat (``created`` = ``updated`` = ``now``) of ``owner`` talking to
        ``agent`` (the caller checks the name). A duplicate id is a StoreError."""
        title = valid(title, "chat title")
        owner = valid(owner, "chat owner")
        row = ChatRow(id=chat_id, title=title, created=now, updated=now, agent=agent, owner=owner)
        with self._write("cannot create the chat") as session:
            session.add(row)
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
        row = ChatRow(id=chat_id, title=title, created=now, updated=now, agent=agent, owner=owner)
        with self._write("cannot import the chat") as session:
            session.add(row)
            session.flush()
            fork.add_turns(session.connection(), turns, owner=owner)
        return Chat(id=chat_id, title=title, created=now, updated=now, agent=agent, owner=owner)

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat, or None."""
        with self._read("cannot read the chat") as session:
            row = session.get(ChatRow, chat_id)
            return chat(row) if row is not None else None

    def owner_turn_count(self, owner: str) -> int:
        """How many turns ``owner``'s chats hold, all chats together (one query: what the
        runtime's recall counters start from, :mod:`jupyter_agent.runtime.memory.counts`)."""
        turns = AgentTurnRow.metadata.tables["agent_turns"]
        query = (
            core_select(func.count())
            .select_from(turns.join(_CHATS, turns.c.chat_id == _CHATS.c.id))
            .where(_CHATS.c.owner == owner)
        )
        with self._read("cannot count the turns") as session:
            return int(session.connection().execute(query).scalar() or 0)

    def list_chats(self, *, owner: str | None = None) -> list[Chat]:
        """The chats of ``owner`` (None: every owner's), the most recently updated first
        (ties: larger id first)."""
        query = select(ChatRow).order_by(col(ChatRow.updated).desc(), col(ChatRow.id).desc())
        if owner is not None:
            query = query.where(col(ChatRow.owner) == owner)
        with self._read("cannot list chats") as session:
            return [chat(row) for row in session.exec(query)]

    def rename_chat(self, chat_id: str, title: str, *, now: str) -> Chat | None:
        """Set the title and ``updated``; None when there is no such chat."""
        title = valid(title, "chat title")
        with self._write("cannot rename the chat") as session:
            row = session.get(ChatRow, chat_id)
            if row is None:
                return None
            row.title, row.updated = title, now
            session.add(row)
            session.flush()
            return chat(row)

    def set_chat_model(self, chat_id: str, model: str | None, *, now: str) -> Chat | None:
        """Set (or, with None, drop) the chat's model and ``updated``; None when there is no
        such chat. The value is the caller's to check (:mod:`~.runtime.runs.chat_models`)."""
        with self._write("cannot set the chat's model") as session:
            row = session.get(ChatRow, chat_id)
            if row is None:
                return None
            row.model, row.updated = (valid(model, "chat model") if model else None), now
            session.add(row)
            session.flush()
            return chat(row)

    def retitle_chat_if(self, chat_id: str, expected: str, title: str) -> bool:
        """Set the title only while it is still ``expected`` (one conditional write: a
        rename by the person that lands first wins); True when it was set. ``updated``
        stays (a name given in the background does not move the chat in the list)."""
        title = valid(title, "chat title")
        with self._write("cannot retitle the chat") as session:
            done = session.connection().execute(
                update(_CHATS)
                .where(_CHATS.c.id == chat_id, _CHATS.c.title == expected)
                .values(title=title)
            )
            return bool(done.rowcount)

    def delete_chat(self, chat_id: str) -> bool:
        """Delete the chat, its turns and chunks and their recall docs (runs stay, and so do
        memories saved in it); False when it did not exist."""
        with self._write("cannot delete the chat") as session:
            # The chat row first (FOR UPDATE; SQLite writes are serialised anyway), the
            # order append_turn and add_chunk lock in (the chat by their insert's foreign
            # key and the bump, then the counts): the other order deadlocks on PostgreSQL.
            # Once it is held, no turn or chunk of the chat can be stored until we commit.
            session.connection().execute(
                core_select(_CHATS.c.id).where(_CHATS.c.id == chat_id).with_for_update()
            )
            recall_index.delete_chat_docs(session.connection(), chat_id)
            recall_queue.unqueue_chat(session.connection(), chat_id)
            chunk_queries.delete_chunks(session.connection(), chat_id)
            session.exec(delete(AgentTurnRow).where(col(AgentTurnRow.chat_id) == chat_id))
            session.exec(delete(AgentMailRow).where(col(AgentMailRow.chat_id) == chat_id))
            result = session.exec(delete(ChatRow).where(col(ChatRow.id) == chat_id))
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
        with self._write("cannot fork the chat") as session:
            conn = session.connection()
            # The source's row first (FOR UPDATE), the order append_turn and delete_chat lock
            # in: no turn of it is stored or deleted while it is copied.
            source = conn.execute(
                core_select(_CHATS).where(_CHATS.c.id == source_id).with_for_update()
            ).first()
            if source is None:
                return None
            count = fork.turn_count(conn, source_id)
            if not 0 <= upto <= count:
                raise ValueError(f"the chat has {count} turns: fork at a turn from 0 to {count}")
            origin = json.dumps({"chat_id": source_id, "turn": upto}, separators=(",", ":"))
            row = ChatRow(
                id=chat_id, title=title, created=now, updated=now, agent=source.agent,
                owner=source.owner, forked_from=origin, model=source.model,
            )  # fmt: skip
            session.add(row)
            session.flush()
            fork.copy_history(
                conn, source=source_id, target=chat_id, upto=upto, owner=row.owner, make_id=make_id
            )
            return chat(row)

    def touch_chat(self, chat_id: str, *, now: str, active_run_id: str | None) -> None:
        """Set ``updated`` and the active run (None when no run is going). Unknown: no-op."""
        statement = (
            update(ChatRow)
            .where(col(ChatRow.id) == chat_id)
            .values(updated=now, active_run_id=active_run_id)
        )
        with self._write("cannot update the chat") as session:
            session.exec(statement)

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
        with self._write("cannot store the message") as session:
            conn = session.connection()
            return [self._store_message(conn, write) for write in writes]

    def _store_message(self, conn: Any, write: MessageWrite) -> bool:
        chat_id = write.chat_id
        if not _chat_exists(conn, chat_id):
            return False
        if write.item is not None:
            conn.execute(_MAIL.insert(), mail_row(chat_id, write.item))
        if write.title:
            conn.execute(
                update(_CHATS)
                .where(_CHATS.c.id == chat_id, _CHATS.c.title == "")
                .values(title=valid(write.title, "chat title"), updated=write.now)
            )
        if write.run is not None:
            conn.execute(self._upsert_run_sql, run_values(write.run))
            conn.execute(
                update(_CHATS)
                .where(_CHATS.c.id == chat_id)
                .values(updated=write.run.started, active_run_id=write.run.run_id)
            )
        return True

    def queued_mail(self, chat_id: str | None = None) -> list[dict[str, Any]]:
        """The stored messages no stored turn holds yet, oldest first (ids are ULIDs), as
        mailbox items each with its ``chat_id``; every chat's unless ``chat_id``."""
        query = core_select(_MAIL.c.chat_id, _MAIL.c.item).order_by(_MAIL.c.id)
        if chat_id is not None:
            query = query.where(_MAIL.c.chat_id == chat_id)
        with self._read("cannot read the mailbox") as session:
            rows = session.connection().execute(query).all()
        return [{**json.loads(item), "chat_id": chat} for chat, item in rows]

    def delete_mail(self, ids: Sequence[str]) -> None:
        """Forget these queued messages (a start that failed after storing its message)."""
        if not ids:
            return
        with self._write("cannot update the mailbox") as session:
            session.connection().execute(delete(_MAIL).where(_MAIL.c.id.in_(list(ids))))
