"""Memories: the queries behind the Store's memory methods, and their vectors.

Functions on a SQLAlchemy Core connection (the :class:`~jupyter_agent.store.repo.Store`
opens it and maps failures); portable Core, the same on SQLite and PostgreSQL. Every
query is scoped by ``owner``: another owner's memory reads as missing. A memory's recall
doc (:mod:`jupyter_agent.store.memory.recall_index`) is written in the same transaction as the
memory; its vectors go with it (``ON DELETE CASCADE``).

Orders are decided in Python where text decides them (a category list), so both backends
agree whatever PostgreSQL's collation; listing is by ``updated`` (ISO times, one format)
then id (ULIDs), the same in every collation.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import delete, func, update
from sqlalchemy import select as core_select

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.store.memory import recall_index
from jupyter_agent.store.rows import valid
from jupyter_agent.store.tables import CHATS, MEMORIES, MEMORY_VECTORS, TURNS

__all__ = [
    "add_memory",
    "categories",
    "delete_memory",
    "get_memory",
    "list_memories",
    "memories_without_vector",
    "memory_vectors",
    "memory_vectors_stamp",
    "put_vector",
    "update_memory",
]

_M = MEMORIES.c
_COLUMNS: Final = (
    _M.id,
    _M.text,
    _M.category,
    _M.chat_id,
    TURNS.c.id,
    _M.author,
    _M.created,
    _M.updated,
    _M.run_id,
    _M.owner,
)
# turn_id: the turn the saving run stored, once it is stored.
_SELECT: Final = core_select(*_COLUMNS).select_from(
    MEMORIES.outerjoin(TURNS, TURNS.c.run_id == _M.run_id)
)


def _memory(row: Any) -> Memory:
    memory_id, body, category, chat_id, turn_id, author, created, updated, run_id, owner = row
    return Memory(
        id=memory_id,
        text=body,
        category=category,
        chat_id=chat_id,
        turn_id=turn_id,
        author=author,
        created=created,
        updated=updated,
        run_id=run_id,
        owner=owner,
    )


def _doc(memory: Memory) -> recall_index.Doc:
    # created = updated: a fact restated is as new as its latest text.
    return recall_index.Doc.of(
        owner=memory.owner,
        kind="memory",
        ref_id=memory.id,
        chat_id=memory.chat_id,
        created=memory.updated,
        body=memory.text,
    )


def get_memory(conn: Any, memory_id: str, owner: str) -> Memory | None:
    """The owner's memory, or None."""
    row = conn.execute(_SELECT.where(_M.id == memory_id, _M.owner == owner)).first()
    return _memory(row) if row is not None else None


def add_memory(conn: Any, memory: Memory) -> Memory:
    """Insert the memory and its doc; return it as stored (text repaired, turn resolved).
    A duplicate id is a database error."""
    what = f"memory {memory.id}"
    values = {
        "id": memory.id,
        "owner": memory.owner,
        "category": valid(memory.category, what),
        "text": valid(memory.text, what),
        "chat_id": memory.chat_id,
        "run_id": memory.run_id,
        "author": memory.author,
        "created": memory.created,
        "updated": memory.updated,
    }
    conn.execute(MEMORIES.insert(), values)
    stored = get_memory(conn, memory.id, memory.owner)
    assert stored is not None  # inserted just above, in this transaction
    recall_index.put_docs(conn, [_doc(stored)])
    return stored


def update_memory(
    conn: Any,
    memory_id: str,
    *,
    text: str | None,
    category: str | None,
    now: str,
    owner: str,
) -> Memory | None:
    """Set the text and/or category and ``updated`` = ``now``; reindex it. None when the
    owner has no such memory. A changed text drops the memory's vectors in the same
    transaction: they were of the old text (the embedder computes the new one)."""
    what = f"memory {memory_id}"
    before = get_memory(conn, memory_id, owner) if text is not None else None
    values: dict[str, Any] = {"updated": now}
    if text is not None:
        values["text"] = valid(text, what)
    if category is not None:
        values["category"] = valid(category, what)
    found = conn.execute(
        update(MEMORIES)
        .where(_M.id == memory_id, _M.owner == owner)
        .values(**values)
        .returning(_M.id)
    ).first()
    if found is None:
        return None
    stored = get_memory(conn, memory_id, owner)
    assert stored is not None
    if before is not None and before.text != stored.text:
        conn.execute(delete(MEMORY_VECTORS).where(MEMORY_VECTORS.c.memory_id == memory_id))
    recall_index.replace_doc(conn, _doc(stored))
    return stored


def delete_memory(conn: Any, memory_id: str, owner: str) -> bool:
    """Delete the owner's memory, its doc, (cascade) its vectors and the doc of the turn its
    run stored (:func:`.recall_index.forget_run_turn`: the fact is not recalled through
    it, even when that turn is stored later); False when missing.

    The memory's chat row is locked first (``FOR UPDATE`` on PostgreSQL; SQLite writes are
    serialised anyway), the order ``append_turn`` takes its locks in (the chat, then the
    counts): a turn of that run being stored now is either committed before the turn doc
    is looked for, or waits and then sees the run suppressed.
    """
    found = conn.execute(
        core_select(_M.chat_id, _M.run_id).where(_M.id == memory_id, _M.owner == owner)
    ).first()
    if found is None:
        return False
    chat_id, run_id = found
    if chat_id is not None:
        conn.execute(core_select(CHATS.c.id).where(CHATS.c.id == chat_id).with_for_update())
    deleted = conn.execute(
        delete(MEMORIES).where(_M.id == memory_id, _M.owner == owner).returning(_M.id)
    ).first()
    if deleted is None:
        return False
    if run_id is None:
        recall_index.delete_doc(conn, "memory", memory_id)
    else:
        recall_index.forget_run_turn(conn, run_id, memory_id=memory_id)
    return True


def list_memories(conn: Any, owner: str, category: str | None, limit: int) -> list[Memory]:
    """The owner's memories (of ``category``), newest ``updated`` first (then larger id)."""
    query = _SELECT.where(_M.owner == owner)
    if category is not None:
        query = query.where(_M.category == category)
    query = query.order_by(_M.updated.desc(), _M.id.desc()).limit(limit)
    return [_memory(row) for row in conn.execute(query)]


def categories(conn: Any, owner: str) -> list[tuple[str, int]]:
    """The owner's categories with their memory counts, sorted by category (code points)."""
    query = core_select(_M.category, func.count()).where(_M.owner == owner).group_by(_M.category)
    return sorted((str(name), int(count)) for name, count in conn.execute(query))


def put_vector(
    conn: Any, memory_id: str, model: str, vector: Sequence[float], updated: str | None = None
) -> bool:
    """Store (or replace) the memory's vector; False when there is no such memory, or
    (``updated`` given) when its ``updated`` is no longer that: the text embedded was
    replaced meanwhile, so the vector is stale and discarded. The row is locked (``FOR
    UPDATE`` on PostgreSQL; SQLite's write transaction is exclusive) so an update cannot
    commit between the check and the insert."""
    exists = conn.execute(
        core_select(_M.updated).where(_M.id == memory_id).with_for_update()
    ).first()
    if exists is None or (updated is not None and exists[0] != updated):
        return False
    values = {
        "memory_id": memory_id,
        "model": model,
        "dim": len(vector),
        "vector": json.dumps([float(x) for x in vector], separators=(",", ":")),
    }
    conn.execute(delete(MEMORY_VECTORS).where(MEMORY_VECTORS.c.memory_id == memory_id))
    conn.execute(MEMORY_VECTORS.insert(), values)
    return True


def memory_vectors(conn: Any, owner: str, model: str) -> list[tuple[str, list[float]]]:
    """The owner's memories' vectors by ``model``, as (memory id, vector), by memory id."""
    query = (
        core_select(MEMORY_VECTORS.c.memory_id, MEMORY_VECTORS.c.vector)
        .select_from(MEMORY_VECTORS.join(MEMORIES, _M.id == MEMORY_VECTORS.c.memory_id))
        .where(_M.owner == owner, MEMORY_VECTORS.c.model == model)
    )
    found = [(str(mid), [float(x) for x in json.loads(v)]) for mid, v in conn.execute(query)]
    return sorted(found)


def memory_vectors_stamp(conn: Any, owner: str, model: str) -> tuple[int, str]:
    """A cheap stamp of :func:`memory_vectors`' answer: how many, and the latest
    ``updated`` of their memories (a vector stored, dropped or replaced changes it)."""
    query = (
        core_select(func.count(), func.max(_M.updated))
        .select_from(MEMORY_VECTORS.join(MEMORIES, _M.id == MEMORY_VECTORS.c.memory_id))
        .where(_M.owner == owner, MEMORY_VECTORS.c.model == model)
    )
    count, latest = conn.execute(query).one()
    return int(count or 0), str(latest or "")


def memories_without_vector(conn: Any, owner: str, model: str, limit: int) -> list[Memory]:
    """Up to ``limit`` of the owner's memories with no vector by ``model``, oldest first."""
    has = core_select(MEMORY_VECTORS.c.memory_id).where(
        MEMORY_VECTORS.c.memory_id == _M.id, MEMORY_VECTORS.c.model == model
    )
    query = _SELECT.where(_M.owner == owner, ~has.exists()).order_by(_M.created, _M.id).limit(limit)
    return [_memory(row) for row in conn.execute(query)]
