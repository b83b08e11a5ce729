"""The Store's memory methods: facts, their vectors, and recall over the index.

A mixin of :class:`~jupyter_agent.store.repo.Store`, like
:class:`~jupyter_agent.store.history.chunk_store.ChunkMethods`; the queries are
:mod:`jupyter_agent.store.memory.queries` and :mod:`jupyter_agent.store.memory.recall_queries`.

Every method takes ``owner`` ("" = the server's user) and never reads or changes another
owner's rows: another owner's id answers None / False, as a missing one does. The store
does not judge a memory's text or category (the memory service does); it stores valid
Unicode (a lone surrogate becomes U+FFFD).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from jupyter_agent.core.memory.records import HIT_KINDS, Memory, RecallHit
from jupyter_agent.store.memory import queries as memory_queries
from jupyter_agent.store.memory import recall_queries, recall_queue
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from jupyter_agent.store.memory.turn_indexer import TurnIndexer

__all__ = ["MemoryMethods"]


class MemoryMethods:
    """Memories, vectors and recall; the Store provides its connections."""

    if TYPE_CHECKING:
        _indexer: TurnIndexer

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    # --- memories ------------------------------------------------------------------------

    def add_memory(self, memory: Memory) -> Memory:
        """Store a new memory (its ``owner`` is its scope) and index it; return it as
        stored (``turn_id`` resolved when its run's turn is already stored). A duplicate
        id is a StoreError."""
        with self._write("cannot save the memory") as conn:
            return memory_queries.add_memory(conn, memory)

    def get_memory(self, memory_id: str, *, owner: str = "") -> Memory | None:
        """The memory, with ``turn_id`` from the turn its run stored; None when missing."""
        with self._read("cannot read the memory") as conn:
            return memory_queries.get_memory(conn, memory_id, owner)

    def update_memory(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | None = None,
        now: str,
        owner: str = "",
    ) -> Memory | None:
        """Change the text and/or the category (None: unchanged), set ``updated`` = ``now``
        and reindex it (a changed text drops its vectors); the memory as stored, or None
        when missing."""
        with self._write("cannot update the memory") as conn:
            return memory_queries.update_memory(
                conn,
                memory_id,
                text=text,
                category=category,
                now=now,
                owner=owner,
            )

    def delete_memory(self, memory_id: str, *, owner: str = "") -> bool:
        """Delete the memory, its recall doc and its vectors, and the recall doc of the turn
        its run stored (the turn stays in its chat; stored later, it is not indexed): a
        forgotten fact is not recalled again. False when missing."""
        with self._write("cannot delete the memory") as conn:
            return memory_queries.delete_memory(conn, memory_id, owner)

    def list_memories(
        self, *, owner: str = "", category: str | None = None, limit: int = 1000
    ) -> list[Memory]:
        """The memories (of ``category``), newest ``updated`` first, at most ``limit``.
        ValueError for a ``limit`` below 1."""
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        with self._read("cannot list memories") as conn:
            return memory_queries.list_memories(conn, owner, category, limit)

    def memory_categories(self, *, owner: str = "") -> list[tuple[str, int]]:
        """The categories in use with their memory counts, sorted by category."""
        with self._read("cannot list memory categories") as conn:
            return memory_queries.categories(conn, owner)

    # --- vectors (the embeddings' side table) ----------------------------------------------

    def put_vector(
        self, memory_id: str, model: str, vector: Sequence[float], *, updated: str | None = None
    ) -> bool:
        """Store the memory's embedding by ``model`` (replacing its previous one); False
        when the memory does not exist (deleted meanwhile) or, ``updated`` given, was
        updated since (the vector is of an older text: discarded)."""
        with self._write("cannot store the vector") as conn:
            return memory_queries.put_vector(conn, memory_id, model, vector, updated)

    def memory_vectors(self, *, owner: str = "", model: str) -> list[tuple[str, list[float]]]:
        """Every (memory id, vector) of the owner's memories embedded by ``model``."""
        with self._read("cannot read vectors") as conn:
            return memory_queries.memory_vectors(conn, owner, model)

    def memory_vectors_stamp(self, *, owner: str = "", model: str) -> tuple[int, str]:
        """A cheap stamp of :meth:`memory_vectors` (count, latest ``updated``): the index
        reloads only when it changed."""
        with self._read("cannot read vectors") as conn:
            return memory_queries.memory_vectors_stamp(conn, owner, model)

    def memories_without_vector(
        self, *, owner: str = "", model: str, limit: int = 100
    ) -> list[Memory]:
        """Up to ``limit`` memories with no vector by ``model``, oldest first (a backfill)."""
        with self._read("cannot read memories") as conn:
            return memory_queries.memories_without_vector(conn, owner, model, limit)

    # --- recall ----------------------------------------------------------------------------

    def index_pending_turns(self, limit: int = recall_queue.BATCH) -> int:
        """Write the recall docs of the ``limit`` first turns waiting for theirs, in one
        transaction; the turns taken (a test or a tool that must see the index complete
        calls it; the indexer thread calls :meth:`index_pending`)."""
        return self.index_pending(limit)[1]

    def index_pending(self, limit: int) -> tuple[int, int]:
        """One batch (:func:`.recall_queue.index_batch`): (waiting rows seen, rows taken:
        fewer when another server's batch holds some)."""
        with self._write("cannot index the stored turns for recall") as conn:
            return recall_queue.index_batch(conn, limit)

    def pending_recall_turns(self) -> int:
        """How many stored turns wait for their recall doc."""
        with self._read("cannot count the turns waiting for recall") as conn:
            return recall_queue.pending_turns(conn)

    def resume_indexing(self) -> None:
        """Index, in the background, the turns an earlier process left waiting (the
        server's start calls it; it does not wait)."""
        self._indexer.resume()

    def recall(
        self,
        query: str,
        *,
        owner: str = "",
        kinds: Sequence[str] = HIT_KINDS,
        k: int = 5,
        category: str | None = None,
        exclude_chat: str | None = None,
        exclude_since: str | None = None,
        exclude_chunks: Sequence[tuple[int, int]] = (),
        candidates: int = DEFAULT_CANDIDATES,
    ) -> list[RecallHit]:
        """The ``k`` docs that best cover ``query``: memories, turns and chunk summaries of
        ``kinds`` (of ``category``: memories only), best first (:func:`.recall_queries.recall`:
        exact on small data; at most ``candidates`` docs of each kind read, whatever the
        query). ``exclude_chat`` + ``exclude_since``: that chat's turns created at or after
        it are left out (a run's window holds them); ``exclude_chunks``: that chat's chunks
        by (level, first_turn). [] when the query has no terms; ValueError for an unknown
        kind or ``candidates`` < 1. Turns this Store stored are found at once: any still
        waiting for their doc are indexed first (none when all of them are left out)."""
        self._indexer.catch_up(exclude_chat, exclude_since)
        with self._read("cannot search memory") as conn:
            return recall_queries.recall(
                conn,
                query,
                owner=owner,
                kinds=kinds,
                k=k,
                category=category,
                exclude_chat=exclude_chat,
                exclude_since=exclude_since,
                exclude_chunks=exclude_chunks,
                candidates=candidates,
            )
