"""The Store: the agent database behind a small synchronous API (Session in, dataclasses out).

One engine per Store (pooled), one Session per call. Methods are blocking: the server calls
them through ``asyncio.to_thread``; a Store is safe to share between threads.

Writes on SQLite are serialised in-process by a lock shared by every Store on the same
file, and across processes by ``BEGIN IMMEDIATE`` plus a 5 s busy timeout. Any database
failure surfaces as :class:`~jupyter_agent.exceptions.StoreError`, whose message carries
the driver's message (never the statement's parameters, never a password); one a retry may
cure (SQLite locked or busy past the timeout or unable to write its file, a PostgreSQL
server that cannot be reached or times out a lock) is its subclass
:class:`~jupyter_agent.exceptions.StoreUnavailable` (503 with ``Retry-After``).

Decisions worth knowing:

- ``delete_chat`` deletes the chat, its turns and its chunk summaries; its run summaries
  stay (traces outlive chats) and keep the deleted chat's id, so ``trace ls`` still lists them.
- ``append_turn`` is idempotent on the turn's id and keeps one turn per run: the first write
  for a run wins and later ones (a replayed or recovered write) are ignored. It returns
  whether it inserted.
- ``list_runs`` pages newest first by ``(started, run_id)``; the cursor is opaque text.
  Its ``program`` filter is a name (every version: ``toolcaller`` matches
  ``toolcaller@v1`` and ``toolcaller@v2``, not ``toolcaller2@v1``) or ``name@vN`` (that
  version only), matched case-sensitively on both backends
  (:func:`~jupyter_agent.store.filters.program_filter`).
- ``turn_count`` and ``turns_at`` read a chat's turns by position
  (:mod:`jupyter_agent.store.history.chunk_queries`): a run's history window costs
  O(window), however long the chat.
- ``prune_runs`` never deletes a run whose status is still ``running``.
- A turn's and a chunk's recall doc (:mod:`.recall_index`) is written in the transaction
  storing it; ``delete_chat`` deletes them (memories saved in the chat stay, with theirs).
  ``delete_chat`` locks the chat row before the counts, as ``append_turn`` does: one lock
  order, no deadlock between deleting a chat and storing its turn on PostgreSQL.
- The durable mailbox: ``accept_message`` stores a user message before the server
  acknowledges it (``open_run`` stores the message opening a run with that run);
  ``append_turn(turn, delivered=ids)`` deletes the messages the turn holds in the
  transaction that stores it, so a message is always in a turn or in ``queued_mail``.
- Text is stored as valid Unicode: a lone surrogate that reached a write (a chat title, a
  turn's record or columns, a run summary) is replaced by U+FFFD
  (:mod:`jupyter_agent.text`) and a warning logged, instead of failing the write with
  ``UnicodeEncodeError``. Requests with one are refused and provider replies repaired
  before this; this is the last line of defence, free on valid text.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from sqlalchemy import Engine, and_, bindparam, delete, or_, update
from sqlalchemy import select as core_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlmodel import Session, col, select

from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import StoreError, StoreUnavailable
from jupyter_agent.store.engine import (
    WRITE_OPTION,
    create_store_engine,
    mask_url,
    normalise_url,
    scrub,
)
from jupyter_agent.store.filters import program_filter
from jupyter_agent.store.history import chunk_queries, turn_queries
from jupyter_agent.store.history.chunk_store import ChunkMethods
from jupyter_agent.store.memory import recall_index
from jupyter_agent.store.memory.store import MemoryMethods
from jupyter_agent.store.migrations import migrate
from jupyter_agent.store.program_store import ProgramMethods
from jupyter_agent.store.proposal_store import ProposalMethods
from jupyter_agent.store.rows import (
    RUN_COLUMNS,
    Chat,
    chat,
    decode_cursor,
    encode_cursor,
    mail_row,
    run_values,
    summary,
    turn_values,
    valid,
)
from jupyter_agent.store.settings_store import SettingsMethods
from jupyter_agent.store.tables import AgentMailRow, AgentRunRow, AgentTurnRow, ChatRow

__all__ = ["MAX_PAGE", "Chat", "Store"]

log = logging.getLogger(__name__)

#: The largest ``limit`` :meth:`Store.list_runs` accepts.
MAX_PAGE: Final = 1000

_TURNS: Final = AgentTurnRow.metadata.tables["agent_turns"]
_RUNS: Final = AgentRunRow.metadata.tables["agent_runs"]
_CHATS: Final = ChatRow.metadata.tables["chats"]
_MAIL: Final = AgentMailRow.metadata.tables["agent_mail"]
# Bump a chat's ``updated`` to a turn's time, never backwards.
_BUMP_CHAT: Final = (
    update(_CHATS)
    .where(_CHATS.c.id == bindparam("b_chat"), _CHATS.c.updated < bindparam("b_at"))
    .values(updated=bindparam("b_at"))
)


def _chat_exists(conn: Any, chat_id: str) -> bool:
    query = core_select(_CHATS.c.id).where(_CHATS.c.id == chat_id)
    return conn.execute(query).first() is not None


_SQLITE_TRANSIENT: Final = (
    "locked",
    "busy",
    "disk i/o error",
    "readonly database",
    "unable to open",
    "disk is full",
)
_SQLITE_LOCKS: dict[str, threading.Lock] = {}
_SQLITE_LOCKS_GUARD = threading.Lock()


class Store(ChunkMethods, MemoryMethods, ProgramMethods, ProposalMethods, SettingsMethods):
    """The agent database at ``url`` (``sqlite:///path`` or ``postgresql://...``); its
    chunk methods are :class:`~.chunk_store.ChunkMethods`, its memory and recall methods
    :class:`~.memory_store.MemoryMethods`, its program methods (deployed versions,
    activations, a chat's agent) :class:`~.program_store.ProgramMethods`, its notebook
    proposals :class:`~.proposal_store.ProposalMethods`.

    Opening it creates the SQLite file's folder and runs pending migrations; a bad URL or an
    unreachable server raises StoreError.
    """

    def __init__(self, url: str) -> None:
        self._url = normalise_url(url)
        self._masked = mask_url(self._url)
        self._engine: Engine = create_store_engine(self._url)
        self._writer: Engine = self._engine.execution_options(**{WRITE_OPTION: True})
        self._sqlite = self._url.get_backend_name() == "sqlite"
        self._lock: threading.Lock | None = None
        if self._sqlite:
            with _SQLITE_LOCKS_GUARD:
                key = self._url.database or ""
                self._lock = _SQLITE_LOCKS.setdefault(key, threading.Lock())
        # Built once: a statement compiled per call cost more than the SQLite write itself.
        dialect = sqlite if self._sqlite else postgresql
        turn_insert = dialect.insert(_TURNS)
        self._append_turn_sql = turn_insert.on_conflict_do_nothing().returning(_TURNS.c.id)
        run_insert = dialect.insert(_RUNS)
        self._upsert_run_sql = run_insert.on_conflict_do_update(
            index_elements=[_RUNS.c.run_id],
            set_={c.name: run_insert.excluded[c.name] for c in _RUNS.c if c.name != "run_id"},
        )
        try:
            with self._locked():
                migrate(self._writer)
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise self._error("cannot open the database", exc) from None
        except StoreError:
            self._engine.dispose()
            raise

    @property
    def url(self) -> str:
        """The database URL for display: any password is ``***``."""
        return self._masked

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.dialect.name

    def __repr__(self) -> str:
        return f"Store({self._masked!r})"

    def close(self) -> None:
        """Close every pooled connection. The Store must not be used afterwards."""
        self._engine.dispose()

    # --- sessions ------------------------------------------------------------------------

    def _error(self, what: str, exc: BaseException) -> StoreError:
        orig = getattr(exc, "orig", None)
        detail = str(orig if orig is not None else exc).strip().splitlines()
        message = f"{what} ({self._masked}): {type(exc).__name__}: {' '.join(detail)[:500]}"
        if self._transient(exc, " ".join(detail)):
            return StoreUnavailable(scrub(message, self._url))
        return StoreError(scrub(message, self._url))

    def _transient(self, exc: BaseException, detail: str) -> bool:
        """True for a failure a retry may cure: a lost connection, SQLite's lock or busy
        timeout or a file it cannot write now (an I/O error, a read-only or immutable
        file, a full disk: an operator can fix those), any PostgreSQL OperationalError
        (connection, lock timeout, shutdown)."""
        if isinstance(exc, DBAPIError) and exc.connection_invalidated:
            return True
        if not isinstance(exc, OperationalError):
            return False
        if not self._sqlite:
            return True
        text = detail.lower()
        return any(sign in text for sign in _SQLITE_TRANSIENT)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if self._lock is None:
            yield
            return
        with self._lock:
            yield

    @contextmanager
    def _read(self, what: str) -> Iterator[Session]:
        try:
            with Session(self._engine) as session:
                yield session
        except SQLAlchemyError as exc:
            raise self._error(what, exc) from exc

    @contextmanager
    def _write(self, what: str) -> Iterator[Session]:
        try:
            with self._locked(), Session(self._writer) as session, session.begin():
                yield session
        except SQLAlchemyError as exc:
            raise self._error(what, exc) from exc

    # --- chats ---------------------------------------------------------------------------

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

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat, or None."""
        with self._read("cannot read the chat") as session:
            row = session.get(ChatRow, chat_id)
            return chat(row) if row is not None else None

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
            chunk_queries.delete_chunks(session.connection(), chat_id)
            session.exec(delete(AgentTurnRow).where(col(AgentTurnRow.chat_id) == chat_id))
            session.exec(delete(AgentMailRow).where(col(AgentMailRow.chat_id) == chat_id))
            result = session.exec(delete(ChatRow).where(col(ChatRow.id) == chat_id))
            return bool(result.rowcount)

    def touch_chat(self, chat_id: str, *, now: str, active_run_id: str | None) -> None:
        """Set ``updated`` and the active run (None when no run is going). Unknown: no-op."""
        statement = (
            update(ChatRow)
            .where(col(ChatRow.id) == chat_id)
            .values(updated=now, active_run_id=active_run_id)
        )
        with self._write("cannot update the chat") as session:
            session.exec(statement)

    # --- turns ---------------------------------------------------------------------------

    def append_turn(
        self,
        turn: TurnRecord,
        *,
        delivered: Sequence[str] = (),
        ended: RunSummary | None = None,
        bump_to_end: bool = True,
    ) -> bool:
        """Store a turn and bump its chat's ``updated`` to ``turn.created`` (never back).

        ``delivered``: the ids of the queued messages the turn holds, deleted from the
        durable mailbox in the same transaction (also when the turn was already stored).
        ``ended``: the summary of the run that ended with this turn, stored (replacing the
        ``running`` one) in the same transaction, which also clears the chat's active run if
        it is still this one and (``bump_to_end``) bumps ``updated`` to ``ended.ended``: a
        run's end is one write, not three. Recovery passes ``bump_to_end=False``: a run
        ended by a restart must not move its chat to the top of the list.
        Idempotent: a turn whose id, or whose run, is already stored is ignored (first write
        wins) and False is returned. A turn for an unknown chat is a StoreError. A stored
        turn's recall doc is written in the same transaction (none when a memory its run
        saved was deleted meanwhile: :func:`.recall_index.run_suppressed`).
        """
        with self._write("cannot append the turn") as session:
            # RETURNING, not rowcount: rowcount is unreliable here through psycopg.
            conn = session.connection()  # Core: the ORM execution path doubled the cost
            found = conn.execute(self._append_turn_sql, turn_values(turn)).first()
            inserted = found is not None
            if inserted:
                conn.execute(_BUMP_CHAT, {"b_chat": turn.chat_id, "b_at": turn.created})
                if not recall_index.run_suppressed(conn, turn.run_id):
                    # The chat's owner's doc: recall never finds another owner's turns.
                    owner = turn_queries.chat_owner(conn, turn.chat_id)
                    recall_index.put_docs(conn, [recall_index.turn_doc(turn, owner)])
            if delivered:
                conn.execute(delete(_MAIL).where(_MAIL.c.id.in_(list(delivered))))
            if ended is not None:
                conn.execute(self._upsert_run_sql, run_values(ended))
                conn.execute(
                    update(_CHATS)
                    .where(_CHATS.c.id == ended.chat_id, _CHATS.c.active_run_id == ended.run_id)
                    .values(active_run_id=None)
                )
                if ended.ended and bump_to_end:
                    conn.execute(_BUMP_CHAT, {"b_chat": ended.chat_id, "b_at": ended.ended})
            return inserted

    def list_turns(self, chat_id: str) -> list[TurnRecord]:
        """The chat's turns, oldest first (by ``created``, then id)."""
        with self._read("cannot list turns") as session:
            return turn_queries.list_turns(session.connection(), chat_id)

    def get_turn_by_run(self, run_id: str) -> TurnRecord | None:
        """The turn a run wrote, or None."""
        with self._read("cannot read the turn") as session:
            return turn_queries.turn_by_run(session.connection(), run_id)

    # --- the durable mailbox --------------------------------------------------------------

    def accept_message(self, chat_id: str, item: Mapping[str, Any]) -> bool:
        """Store a user message (a mailbox item with ``id`` and ``at``) before it is
        acknowledged; False (nothing stored) when the chat does not exist. A duplicate id
        is a StoreError."""
        with self._write("cannot queue the message") as session:
            conn = session.connection()
            if not _chat_exists(conn, chat_id):
                return False
            conn.execute(_MAIL.insert(), mail_row(chat_id, item))
            return True

    def open_run(self, run: RunSummary, *, message: Mapping[str, Any] | None = None) -> bool:
        """Store the summary of a run that starts and make it its chat's active run (chat
        ``updated`` = ``run.started``); with ``message``, the user message opening it is
        stored too (see :meth:`accept_message`). One transaction: all of it or nothing;
        False (nothing stored) when the chat does not exist."""
        with self._write("cannot start the run") as session:
            conn = session.connection()
            if not _chat_exists(conn, run.chat_id):
                return False
            if message is not None:
                conn.execute(_MAIL.insert(), mail_row(run.chat_id, message))
            conn.execute(self._upsert_run_sql, run_values(run))
            conn.execute(
                update(_CHATS)
                .where(_CHATS.c.id == run.chat_id)
                .values(updated=run.started, active_run_id=run.run_id)
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

    # --- runs ----------------------------------------------------------------------------

    def upsert_run(self, summary: RunSummary) -> None:
        """Insert the run's summary, or replace every field of the stored one."""
        with self._write("cannot store the run") as session:
            session.connection().execute(self._upsert_run_sql, run_values(summary))

    def get_run(self, run_id: str) -> RunSummary | None:
        """The run's summary, or None."""
        query = core_select(*RUN_COLUMNS).where(_RUNS.c.run_id == run_id)
        with self._read("cannot read the run") as session:
            row = session.connection().execute(query).first()
        return summary(row) if row is not None else None

    def list_runs(
        self,
        *,
        program: str | None = None,
        limit: int = 50,
        before: str | None = None,
        owner: str | None = None,
    ) -> tuple[list[RunSummary], str | None]:
        """One page of runs, newest first (by ``started``, then ``run_id``).

        ``owner``: only that owner's runs (None: every owner's). ``program``: a name
        (every version) or ``name@vN`` (one version), see
        :func:`~jupyter_agent.store.filters.program_filter`. ``before`` is the ``next``
        cursor of the previous page; ``next`` is None on the last page. Raises ValueError
        for a ``limit`` outside 1..MAX_PAGE or a malformed cursor.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        started, run_id = _RUNS.c.started, _RUNS.c.run_id
        query = core_select(*RUN_COLUMNS)
        if owner is not None:
            query = query.where(_RUNS.c.owner == owner)
        if program is not None:
            query = query.where(program_filter(_RUNS.c.program, program))
        if before is not None:
            at, last = decode_cursor(before)
            # started <= at first, so the index range scan starts at the cursor.
            query = query.where(
                started <= at, or_(started < at, and_(started == at, run_id < last))
            )
        query = query.order_by(started.desc(), run_id.desc()).limit(limit + 1)
        with self._read("cannot list runs") as session:
            rows = [summary(row) for row in session.connection().execute(query)]
        if len(rows) <= limit:
            return rows, None
        page = rows[:limit]
        return page, encode_cursor(page[-1].started, page[-1].run_id)

    def runs_with_status(self, status: str) -> list[RunSummary]:
        """Every run with this status, oldest first (recovery asks for ``running``)."""
        query = (
            core_select(*RUN_COLUMNS)
            .where(_RUNS.c.status == status)
            .order_by(_RUNS.c.started, _RUNS.c.run_id)
        )
        with self._read("cannot list runs") as session:
            return [summary(row) for row in session.connection().execute(query)]

    def prune_runs(self, *, older_than: str) -> list[str]:
        """Delete the summaries of runs started before ``older_than`` (not ``running`` ones).

        Returns the deleted run ids, so the caller can delete their trace files.
        """
        condition = and_(
            col(AgentRunRow.started) < older_than, col(AgentRunRow.status) != "running"
        )
        with self._write("cannot prune runs") as session:
            ids = list(session.exec(select(AgentRunRow.run_id).where(condition)))
            if ids:
                session.exec(delete(AgentRunRow).where(col(AgentRunRow.run_id).in_(ids)))
            return ids
