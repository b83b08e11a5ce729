"""The Store: the agent database behind a small synchronous API (Core in, dataclasses out).

One engine per Store (pooled), one SQLAlchemy Core connection per call (a read's
transaction ends with it; a write is one transaction, committed at its end). Methods are
blocking: the server calls them through ``asyncio.to_thread``; a Store is safe to share
between threads.

Writes on SQLite are serialised in-process by a lock shared by every Store on the same
file, and across processes by ``BEGIN IMMEDIATE`` plus a 5 s busy timeout. Any database
failure surfaces as :class:`~jupyter_agent.exceptions.StoreError`, whose message carries
the driver's message (never the statement's parameters, never a password); one a retry may
cure (SQLite locked or busy past the timeout or unable to write its file, a PostgreSQL
server that cannot be reached or times out a lock) is its subclass
:class:`~jupyter_agent.exceptions.StoreUnavailable` (503 with ``Retry-After``).

Its methods by concern: chats and the durable mailbox
(:class:`~jupyter_agent.store.chat_store.ChatMethods`), run summaries
(:class:`~jupyter_agent.store.run_store.RunMethods`), chunk summaries and turns by position
(:class:`~jupyter_agent.store.history.chunk_store.ChunkMethods`), memories and recall
(:class:`~jupyter_agent.store.memory.store.MemoryMethods`), deployed programs
(:class:`~jupyter_agent.store.program_store.ProgramMethods`), notebook proposals
(:class:`~jupyter_agent.store.proposal_store.ProposalMethods`), each owner's settings
(:class:`~jupyter_agent.store.settings_store.SettingsMethods`); the turns are here.

Decisions worth knowing:

- ``append_turn`` is idempotent on the turn's id and keeps one turn per run: the first write
  for a run wins and later ones (a replayed or recovered write) are ignored. It returns
  whether it inserted. A turn's recall doc (:mod:`.memory.recall_index`) is written after
  it, off the run's path, by the Store's indexer thread (:mod:`.memory.turn_indexer`: the
  transaction storing the turn queues it; a recall through this Store indexes what is
  queued first, so it never misses a turn this Store stored).
  ``append_turn(turn, delivered=ids)`` deletes the messages of the durable mailbox the
  turn holds in that transaction, so a message is always in a turn or
  in ``queued_mail``.
- ``turn_count`` and ``turns_at`` read a chat's turns by position
  (:mod:`jupyter_agent.store.history.chunk_queries`): a run's history window costs
  O(window), however long the chat.
- Text is stored as valid Unicode: a lone surrogate that reached a write (a chat title, a
  turn's record or columns, a run summary) is replaced by U+FFFD
  (:mod:`jupyter_agent.text`) and a warning logged, instead of failing the write with
  ``UnicodeEncodeError``. Requests with one are refused and provider replies repaired
  before this; this is the last line of defence, free on valid text.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from sqlalchemy import Connection, Engine, bindparam, case, delete, null, update
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from jupyter_agent.core.demo import is_demo_model
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import StoreError, StoreUnavailable
from jupyter_agent.store.chat_store import ChatMethods, MessageWrite
from jupyter_agent.store.engine import (
    WRITE_OPTION,
    create_store_engine,
    dialect_module,
    mask_url,
    normalise_url,
    scrub,
)
from jupyter_agent.store.history import turn_queries
from jupyter_agent.store.history.chunk_store import ChunkMethods
from jupyter_agent.store.memory import recall_queue
from jupyter_agent.store.memory.store import MemoryMethods
from jupyter_agent.store.memory.turn_indexer import TurnIndexer
from jupyter_agent.store.migrations import is_current, migrate
from jupyter_agent.store.program_store import ProgramMethods
from jupyter_agent.store.proposal_store import ProposalMethods
from jupyter_agent.store.rows import Chat, run_values, turn_values
from jupyter_agent.store.run_store import MAX_PAGE, RunMethods
from jupyter_agent.store.settings_store import SettingsMethods
from jupyter_agent.store.tables import CHATS, MAIL, RUNS, TURNS

__all__ = ["MAX_PAGE", "Chat", "MessageWrite", "Store"]

log = logging.getLogger(__name__)

# A turn's write of its chat's row (``append_turn``), one UPDATE: ``updated`` bumped to the
# latest of the turn's time and its run's end, never backwards; the chat's active run
# cleared when it is still the run that ended.
_CHAT_ROW: Final = update(CHATS).where(CHATS.c.id == bindparam("b_chat"))
_BUMPED: Final = case(
    (CHATS.c.updated < bindparam("b_at"), bindparam("b_at")), else_=CHATS.c.updated
)
_CLEARED: Final = case(
    (CHATS.c.active_run_id == bindparam("b_run"), null()), else_=CHATS.c.active_run_id
)
_BUMP_CHAT: Final = _CHAT_ROW.where(CHATS.c.updated < bindparam("b_at")).values(
    updated=bindparam("b_at")
)
_END_CHAT: Final = _CHAT_ROW.values(active_run_id=_CLEARED)
_BUMP_END_CHAT: Final = _CHAT_ROW.values(updated=_BUMPED, active_run_id=_CLEARED)


def _chat_row(
    turn: TurnRecord, inserted: bool, ended: RunSummary | None, bump: bool
) -> tuple[Any, dict[str, Any]] | None:
    """``append_turn``'s write of the chat's row (None: nothing to write)."""
    times = [turn.created] if inserted else []
    if ended is not None and ended.ended and bump:
        times.append(ended.ended)
    params: dict[str, Any] = {"b_chat": turn.chat_id, "b_at": max(times, default=None)}
    if ended is None:
        return (_BUMP_CHAT, params) if times else None
    params["b_run"] = ended.run_id
    return (_BUMP_END_CHAT if times else _END_CHAT, params)


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


class Store(
    ChatMethods,
    RunMethods,
    ChunkMethods,
    MemoryMethods,
    ProgramMethods,
    ProposalMethods,
    SettingsMethods,
):
    """The agent database at ``url`` (``sqlite:///path`` or ``postgresql://...``); its
    methods by concern are the mixins named in the module docstring.

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
        dialect = dialect_module(self.dialect)
        turn_insert = dialect.insert(TURNS)
        self._append_turn_sql = turn_insert.on_conflict_do_nothing().returning(TURNS.c.id)
        run_insert = dialect.insert(RUNS)
        self._upsert_run_sql = run_insert.on_conflict_do_update(
            index_elements=[RUNS.c.run_id],
            set_={c.name: run_insert.excluded[c.name] for c in RUNS.c if c.name != "run_id"},
        )
        try:
            if not is_current(self._engine):  # one query when up to date
                with self._locked():
                    migrate(self._writer)
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise self._error("cannot open the database", exc) from None
        except StoreError:
            self._engine.dispose()
            raise
        self._indexer = TurnIndexer(self)

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
        """Index the turns still waiting for their recall doc, then close every pooled
        connection. The Store must not be used afterwards."""
        self._indexer.close()
        self._engine.dispose()

    # --- connections ---------------------------------------------------------------------

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
    def _read(self, what: str) -> Iterator[Connection]:
        """A connection whose first statement begins a transaction; closing it rolls the
        transaction back (a read writes nothing)."""
        try:
            with self._engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise self._error(what, exc) from exc

    @contextmanager
    def _write(self, what: str) -> Iterator[Connection]:
        """A connection in one write transaction (``BEGIN IMMEDIATE`` on SQLite, under the
        file's lock), committed when the block ends, rolled back when it raises."""
        try:
            with self._locked(), self._writer.begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise self._error(what, exc) from exc

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
        ``ended``: the summary of the run that ended with this turn (ValueError for another
        run's), stored (replacing the ``running`` one) in the same transaction, which also
        clears the chat's active run if it is still this one and (``bump_to_end``) bumps
        ``updated`` to ``ended.ended``: a run's end is one write, not three. Recovery passes
        ``bump_to_end=False``: a run ended by a restart must not move its chat to the top
        of the list.
        Idempotent: a turn whose id, or whose run, is already stored is ignored (first write
        wins) and False is returned. A turn for an unknown chat is a StoreError. A stored
        turn is queued for its recall doc in the same transaction, and the indexer woken
        after the commit (:mod:`.memory.recall_queue`: no doc when a memory its run saved
        was deleted before it is indexed; none for a turn the demo model answered, not
        even queued: its scripted text is no one's words).
        """
        if ended is not None and (ended.chat_id, ended.run_id) != (turn.chat_id, turn.run_id):
            raise ValueError(f"{ended.run_id} is not the run of turn {turn.id}")
        inserted = self._store_turn(turn, delivered=delivered, ended=ended, bump=bump_to_end)
        if inserted and not is_demo_model(turn.model):
            self._indexer.wake(turn.chat_id, turn.created)
        return inserted

    def _store_turn(
        self,
        turn: TurnRecord,
        *,
        delivered: Sequence[str],
        ended: RunSummary | None,
        bump: bool,
    ) -> bool:
        with self._write("cannot append the turn") as conn:
            # RETURNING, not rowcount: rowcount is unreliable here through psycopg.
            found = conn.execute(self._append_turn_sql, turn_values(turn)).first()
            inserted = found is not None
            # The chat's row right after the turn (the lock order delete_chat keeps).
            row = _chat_row(turn, inserted, ended, bump)
            if row is not None:
                conn.execute(*row)
            if inserted and not is_demo_model(turn.model):
                recall_queue.queue_turn(conn, turn.id)
            if delivered:
                conn.execute(delete(MAIL).where(MAIL.c.id.in_(list(delivered))))
            if ended is not None:
                conn.execute(self._upsert_run_sql, run_values(ended))
            return inserted

    def list_turns(self, chat_id: str) -> list[TurnRecord]:
        """The chat's turns, oldest first (by ``created``, then id)."""
        with self._read("cannot list turns") as conn:
            return turn_queries.list_turns(conn, chat_id)

    def get_turn_by_run(self, run_id: str) -> TurnRecord | None:
        """The turn a run wrote, or None."""
        with self._read("cannot read the turn") as conn:
            return turn_queries.turn_by_run(conn, run_id)
