"""The Store's history methods: summaries of chunks of a chat's turns and turns by
position (what a run's window reads). A mixin of :class:`~jupyter_agent.store.repo.Store`,
kept apart so each module stays small; the queries are
:mod:`jupyter_agent.store.history.chunk_queries` and
:mod:`jupyter_agent.store.history.turn_queries`.

Positions are 1-based in the chat's turn order (:mod:`jupyter_agent.core.history.chunks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from jupyter_agent.core.history.chunks import ChunkSpan, StoredChunk
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.store.history import chunk_queries, turn_queries
from jupyter_agent.store.memory import recall_index

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["ChunkMethods", "WindowReads"]


class WindowReads:
    """A chat's history as one read transaction sees it (what a run's window reads: its
    turn count, its summaries, its turns by position); see
    :meth:`ChunkMethods.window_reads`. On SQLite the transaction's read lock gives every
    read one state of the chat; on PostgreSQL (read committed) each read sees what was
    committed before it, as separate reads did."""

    def __init__(self, conn: Any, chat_id: str) -> None:
        self._conn = conn
        self.chat_id = chat_id

    def turn_count(self) -> int:
        """How many turns the chat has (0 for an unknown chat)."""
        return chunk_queries.turn_count(self._conn, self.chat_id)

    def list_chunks(self) -> list[StoredChunk]:
        """The chat's stored summaries, in (level, first_turn) order."""
        return chunk_queries.list_chunks(self._conn, self.chat_id)

    def turns_at(self, first_turn: int, last_turn: int) -> list[TurnRecord]:
        """As :meth:`ChunkMethods.turns_at`, in this transaction."""
        return chunk_queries.turns_at(self._conn, self.chat_id, first_turn, last_turn)


class ChunkMethods:
    """Chunk summaries and turn positions; the Store provides its connections."""

    if TYPE_CHECKING:

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    def add_chunk(self, chunk: StoredChunk) -> bool:
        """Store a chunk's summary. Idempotent: the first write for (chat, level,
        first_turn) wins and False is returned for a later one. StoreError for an unknown
        chat (or a span that is not one). A stored summary's recall doc is written in the
        same transaction."""
        with self._write("cannot store the chunk") as conn:
            inserted = chunk_queries.add_chunk(conn, chunk)
            if inserted:
                owner = turn_queries.chat_owner(conn, chunk.chat_id)
                recall_index.put_docs(conn, [recall_index.chunk_doc(chunk, owner)])
            return inserted

    @contextmanager
    def window_reads(self, chat_id: str) -> Iterator[WindowReads]:
        """One read transaction for a run's window: every read of the
        :class:`WindowReads` it yields shares it (one connection, one begin, one end:
        a window's three or four reads cost about one). Store errors are raised as the
        other reads raise them."""
        with self._read("cannot read the chat's history") as conn:
            yield WindowReads(conn, chat_id)

    def list_chunks(self, chat_id: str) -> list[StoredChunk]:
        """The chat's stored summaries, in (level, first_turn) order."""
        with self._read("cannot list the chat's chunks") as conn:
            return chunk_queries.list_chunks(conn, chat_id)

    def turn_count(self, chat_id: str) -> int:
        """How many turns the chat has (0 for an unknown chat)."""
        with self._read("cannot count the chat's turns") as conn:
            return chunk_queries.turn_count(conn, chat_id)

    def turns_at(self, chat_id: str, first_turn: int, last_turn: int) -> list[TurnRecord]:
        """The turns at positions ``first_turn``..``last_turn`` (inclusive), oldest first,
        read in O(range) rows; fewer where the chat is shorter. ValueError for a range
        that is not one (``first_turn < 1`` or ``last_turn < first_turn``)."""
        with self._read("cannot read the chat's turns") as conn:
            return chunk_queries.turns_at(conn, chat_id, first_turn, last_turn)

    def pending_spans(self, chat_id: str, chunk_turns: int, l2_chunks: int) -> list[ChunkSpan]:
        """The chat's closed spans that have no stored summary yet, oldest first, level 1
        before level 2 (:func:`~jupyter_agent.core.history.chunks.closed_spans`)."""
        with self._read("cannot read the chat's chunks") as conn:
            return chunk_queries.pending_spans(conn, chat_id, chunk_turns, l2_chunks)
