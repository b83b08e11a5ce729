"""Nearest facts by vector inside PostgreSQL, when its ``vector`` extension (pgvector) is in.

The vectors live in the plain table ``agent_memory_vectors`` on every backend (``vector``
holds the JSON list ``[0.1,0.2,...]``, which is also pgvector's text form). When the agent's
PostgreSQL database has the extension installed (``CREATE EXTENSION vector``, the admin's
choice: it needs the privileges), :func:`nearest_vectors` has the database compute the
cosines (``1 - (vector <=> query)``) so no vector leaves it; otherwise (SQLite, PostgreSQL
without it) :func:`pgvector_installed` is False and the embedder searches its in-memory
index (:mod:`jupyter_agent.runtime.memory.vector_index`).

The extension is detected once per store (``pg_extension``; a failed check counts as not
installed). **The pgvector path is untested on the build machine**: pgvector is not
packaged for its PostgreSQL (see BUILD-NOTES); the detection, and the fallback, are: the
embedder catches any error of :func:`nearest_vectors`, logs one warning and searches its
in-memory index from then on (``tests/runtime/test_embedder_freshness.py``).
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text

__all__ = ["nearest_vectors", "pgvector_installed"]

log = logging.getLogger(__name__)

_INSTALLED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

_NEAREST = text(
    """
    SELECT v.memory_id, 1 - (CAST(v.vector AS vector) <=> CAST(:q AS vector)) AS cosine
    FROM agent_memory_vectors v JOIN agent_memories m ON m.id = v.memory_id
    WHERE m.owner = :owner AND v.model = :model AND v.dim = :dim
    ORDER BY CAST(v.vector AS vector) <=> CAST(:q AS vector), v.memory_id
    LIMIT :limit
    """
)
_OF_IDS = text(
    """
    SELECT v.memory_id, 1 - (CAST(v.vector AS vector) <=> CAST(:q AS vector)) AS cosine
    FROM agent_memory_vectors v JOIN agent_memories m ON m.id = v.memory_id
    WHERE m.owner = :owner AND v.model = :model AND v.dim = :dim
      AND v.memory_id = ANY(CAST(:ids AS TEXT[]))
    """
)


def pgvector_installed(store: Any) -> bool:
    """True when ``store`` is PostgreSQL with the ``vector`` extension installed (cached)."""
    if store in _INSTALLED:
        return _INSTALLED[store]
    found = False
    if store.dialect == "postgresql":
        try:
            with store._read("cannot check for pgvector") as conn:
                row = conn.execute(
                    text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                )
                found = row.first() is not None
        except Exception as exc:  # a store error: the plain path works everywhere
            log.info("jupyter-agent: no pgvector (%s): vectors are searched in memory", exc)
    if found:
        log.info("jupyter-agent: pgvector is installed: facts' vectors are searched in SQL")
    _INSTALLED[store] = found
    return found


def nearest_vectors(
    store: Any,
    query: Sequence[float],
    *,
    owner: str,
    model: str,
    limit: int,
    ids: Sequence[str] = (),
) -> dict[str, float]:
    """``{memory_id: cosine}``: the ``limit`` nearest of the owner's facts by ``model``, and
    the facts ``ids`` (the lexical hits, whose cosine the hybrid score needs). pgvector only
    (:func:`pgvector_installed`); a store error is raised as the store's other reads do."""
    params = {
        "q": json.dumps([float(x) for x in query], separators=(",", ":")),
        "owner": owner,
        "model": model,
        "dim": len(query),
    }
    with store._read("cannot search vectors") as conn:
        found = {str(i): float(c) for i, c in conn.execute(_NEAREST, {**params, "limit": limit})}
        if ids:
            rows = conn.execute(_OF_IDS, {**params, "ids": list(ids)})
            found.update({str(i): float(c) for i, c in rows})
    return {i: round(c, 6) for i, c in found.items()}
