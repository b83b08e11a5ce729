"""Chunk summaries and turn positions: the queries behind the Store's chunk methods.

Functions on a SQLAlchemy Core connection (the :class:`~jupyter_agent.store.repo.Store`
opens it and maps failures); portable Core only, the same on SQLite and PostgreSQL.

Turn positions are 1-based in the chat's turn order ``(created, id)``
(:mod:`jupyter_agent.core.history.chunks`); :func:`turns_at` reads a range of them with
``LIMIT``/``OFFSET`` over the index ``ix_agent_turns_chat``. Summaries are read by
``(chat_id, level, first_turn)``, the index of the unique constraint
``uq_agent_chunks_span``. A run's window reads all of a chat's summaries (a tenth of its
turns by default, one indexed range scan) and records only those it shows.

A stored turn record is never changed once written (only migrations rewrite them), and a
chat's next run reads again most of the turns its last run read: :func:`turns_at` keeps
the newest records it parsed, by their stored JSON text (so a rewritten record is parsed
again), up to :data:`PARSED_TURNS_CHARS` characters of JSON in all (a 100-turn window of
500-character turns is 50,000), and parses only the others. A long chat's window read
(100 turns) went from about 5.5 to 2 ms (bench/bench_long_chat.py).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Final

from sqlalchemy import func
from sqlalchemy import select as core_select

from jupyter_agent.core.history.chunks import ChunkSpan, StoredChunk, closed_spans
from jupyter_agent.core.turns import TurnRecord

# The line the boot window renders a summary as, so a summary costs what it will cost there.
from jupyter_agent.exceptions import StoreError
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.store.engine import dialect_module
from jupyter_agent.store.rows import valid
from jupyter_agent.store.tables import CHATS, CHUNKS, TURNS

__all__ = [
    "PARSED_TURNS_CHARS",
    "add_chunk",
    "delete_chunks",
    "list_chunks",
    "pending_spans",
    "turn_count",
    "turns_at",
]


_COLUMNS: Final = (
    CHUNKS.c.chat_id,
    CHUNKS.c.level,
    CHUNKS.c.first_turn,
    CHUNKS.c.last_turn,
    CHUNKS.c.text,
    CHUNKS.c.run_id,
    CHUNKS.c.model,
    CHUNKS.c.created,
)


def _chunk(row: Any) -> StoredChunk:
    chat_id, level, first, last, text, run_id, model, created = row
    return StoredChunk(
        chat_id=chat_id,
        level=level,
        first_turn=int(first),
        last_turn=int(last),
        text=text,
        run_id=run_id,
        model=model,
        created=created,
    )


def add_chunk(conn: Any, chunk: StoredChunk) -> bool:
    """Store a summary; False (nothing written) when its (chat, level, first_turn) is
    already stored: the first write wins. StoreError for an unknown chat or a bad span."""
    if chunk.level not in (1, 2) or not 1 <= chunk.first_turn <= chunk.last_turn:
        raise StoreError(
            f"not a chunk span: level {chunk.level}, turns {chunk.first_turn}-{chunk.last_turn}"
        )
    found = conn.execute(core_select(CHATS.c.id).where(CHATS.c.id == chunk.chat_id)).first()
    if found is None:
        raise StoreError(f"cannot store the chunk: no chat {chunk.chat_id!r}")
    what = f"chunk of chat {chunk.chat_id}"
    values = {
        "id": new_id("chunk"),
        "chat_id": chunk.chat_id,
        "level": chunk.level,
        "first_turn": chunk.first_turn,
        "last_turn": chunk.last_turn,
        "text": valid(chunk.text, what),
        "run_id": chunk.run_id,
        "model": valid(chunk.model, what) if chunk.model is not None else None,
        "created": chunk.created,
    }
    dialect = dialect_module(conn.dialect.name)
    # RETURNING, not rowcount: rowcount is unreliable through psycopg.
    insert = dialect.insert(CHUNKS).on_conflict_do_nothing().returning(CHUNKS.c.id)
    return conn.execute(insert, values).first() is not None


def delete_chunks(conn: Any, chat_id: str) -> None:
    """Delete the chat's summaries (in the caller's transaction)."""
    conn.execute(CHUNKS.delete().where(CHUNKS.c.chat_id == chat_id))


def list_chunks(conn: Any, chat_id: str) -> list[StoredChunk]:
    """The chat's summaries in (level, first_turn) order."""
    query = (
        core_select(*_COLUMNS)
        .where(CHUNKS.c.chat_id == chat_id)
        .order_by(CHUNKS.c.level, CHUNKS.c.first_turn)
    )
    return [_chunk(row) for row in conn.execute(query)]


def turn_count(conn: Any, chat_id: str) -> int:
    """How many turns the chat has (0 for an unknown chat)."""
    query = core_select(func.count()).select_from(TURNS).where(TURNS.c.chat_id == chat_id)
    return int(conn.execute(query).scalar() or 0)


def turns_at(conn: Any, chat_id: str, first_turn: int, last_turn: int) -> list[TurnRecord]:
    """The turns at positions ``first_turn``..``last_turn`` (1-based, inclusive), oldest
    first; fewer (or none) where the chat has fewer turns. ValueError for a bad range."""
    if first_turn < 1 or last_turn < first_turn:
        raise ValueError(f"not a range of turn positions: {first_turn}..{last_turn}")
    query = (
        core_select(TURNS.c.record)
        .where(TURNS.c.chat_id == chat_id)
        .order_by(TURNS.c.created, TURNS.c.id)
        .limit(last_turn - first_turn + 1)
        .offset(first_turn - 1)
    )
    return [_parsed(r) for r in conn.execute(query).scalars()]


def pending_spans(conn: Any, chat_id: str, chunk_turns: int, l2_chunks: int) -> list[ChunkSpan]:
    """The chat's closed spans with no stored summary
    (:func:`~jupyter_agent.core.history.chunks.closed_spans`)."""
    have_query = core_select(CHUNKS.c.level, CHUNKS.c.first_turn).where(CHUNKS.c.chat_id == chat_id)
    have = [(int(level), int(first)) for level, first in conn.execute(have_query)]
    return closed_spans(turn_count(conn, chat_id), chunk_turns, l2_chunks, have)


#: The characters of stored JSON whose parsed records :func:`turns_at` keeps, in all (a
#: bound on memory whatever the records hold: a parsed record takes a few times its JSON).
PARSED_TURNS_CHARS: Final = 256 * 1024
#: A record's JSON longer than this is parsed at each read, not kept.
_KEPT_JSON_CHARS: Final = 8 * 1024


class _ParsedTurns:
    """The newest parsed records by their JSON text, least recently read evicted first."""

    def __init__(self, max_chars: int) -> None:
        self._max_chars = max_chars
        self._records: OrderedDict[str, TurnRecord] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()  # window reads run in worker threads

    def get(self, raw: str) -> TurnRecord:
        with self._lock:
            found = self._records.get(raw)
            if found is not None:
                self._records.move_to_end(raw)
                return found
        # Shared once kept: safe, TurnRecord is frozen and nothing changes its parts.
        record = TurnRecord.from_json(json.loads(raw))
        if len(raw) <= _KEPT_JSON_CHARS:
            with self._lock:
                if raw not in self._records:
                    self._records[raw] = record
                    self._chars += len(raw)
                    while self._chars > self._max_chars:
                        old, _ = self._records.popitem(last=False)
                        self._chars -= len(old)
        return record


_parsed = _ParsedTurns(PARSED_TURNS_CHARS).get
