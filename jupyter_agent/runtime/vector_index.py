"""The facts' vectors of one owner and model, held in memory for cosine search.

:class:`VectorIndex` holds the vectors the store's ``memory_vectors(owner=, model=)`` gave
(read in a worker thread, never on the event loop), updated in place when the embedder
stores a new one, and read again from the store when older than ``ttl_s`` (deleted facts,
vectors written by another server on the same database).

Compact, because a server keeps it for good: with numpy (when importable) one float32
matrix (10,000 facts of 1,536 dimensions: 61 MB), searched by one matrix product and a
partial sort (:meth:`VectorIndex.nearest`: a few ms); without numpy an ``array('f')`` per
fact and a pure-Python dot product each.

Vectors are unit length (:func:`jupyter_agent.llm.embeddings.normalise`), so a dot product
is the cosine. The index holds one dimension: the one most of the model's vectors have (a
model re-served under the same name with another size leaves a few stragglers, skipped
until they are embedded again); a query of another dimension finds nothing.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

try:  # optional: a matrix product is ~100x faster than Python loops at 10,000 facts
    import numpy as np
except ImportError:  # pragma: no cover - numpy ships with the test environment
    np = None  # type: ignore[assignment]

__all__ = ["VectorIndex"]


class VectorIndex:
    """The vectors of ``(owner, model)`` (see the module docstring)."""

    def __init__(self, store: Any, *, owner: str, model: str, ttl_s: float = 60.0) -> None:
        self.store = store
        self.owner = owner
        self.model = model
        self.ttl_s = ttl_s
        self.dim = 0
        self._ids: list[str] = []  # row -> id (numpy: the matrix's rows)
        self._row: dict[str, int] = {}
        self._matrix: Any = None  # numpy: float32 (rows, dim); None without numpy
        self._plain: dict[str, array[float]] = {}  # without numpy
        self._pending: dict[str, list[float]] = {}  # numpy: new rows, stacked at a search
        self._dropped: set[str] = set()
        self._loaded_at: float | None = None
        self._lock = asyncio.Lock()
        # puts made while a load reads the store: the rows read may predate them
        self._during_load: dict[str, list[float]] | None = None

    def __len__(self) -> int:
        if np is None:
            return len(self._plain)
        return len(set(self._row) - self._dropped) + len(set(self._pending) - set(self._row))

    def put(self, memory_id: str, vector: Sequence[float]) -> None:
        """Hold ``vector`` for ``memory_id`` (just stored by the embedder)."""
        values = [float(x) for x in vector]
        if self._during_load is not None:
            self._during_load[memory_id] = values
        self._dropped.discard(memory_id)
        if not self.dim:
            self.dim = len(values)
        if len(values) != self.dim:
            self.drop(memory_id)  # another dimension than the index's: not searchable
            return
        if np is None:
            self._plain[memory_id] = array("f", values)
        elif memory_id in self._row:
            self._matrix[self._row[memory_id]] = values
        else:
            self._pending[memory_id] = values

    def drop(self, memory_id: str) -> None:
        """Forget ``memory_id``'s vector (its fact was deleted)."""
        self._plain.pop(memory_id, None)
        self._pending.pop(memory_id, None)
        if memory_id in self._row:
            self._dropped.add(memory_id)

    async def load(self, *, force: bool = False) -> None:
        """Read the vectors from the store when never read, stale, or ``force``."""
        async with self._lock:
            fresh = self._loaded_at is not None and (
                time.monotonic() - self._loaded_at < self.ttl_s
            )
            if fresh and not force:
                return
            self._during_load = {}
            try:
                rows = await asyncio.to_thread(
                    self.store.memory_vectors, owner=self.owner, model=self.model
                )
                later = self._during_load
            finally:
                self._during_load = None
            self._build([(str(i), v) for i, v in rows], later)
            self._loaded_at = time.monotonic()

    def _build(self, rows: list[tuple[str, list[float]]], later: dict[str, list[float]]) -> None:
        merged = dict(rows)
        merged.update(later)
        dims = Counter(len(v) for v in merged.values())
        self.dim = dims.most_common(1)[0][0] if dims else self.dim
        kept = {i: v for i, v in merged.items() if len(v) == self.dim}
        self._pending, self._dropped = {}, set()
        if np is None:
            self._plain = {i: array("f", v) for i, v in kept.items()}
            return
        self._ids = list(kept)
        self._row = {i: n for n, i in enumerate(self._ids)}
        self._matrix = (
            np.asarray(list(kept.values()), dtype=np.float32).reshape(len(kept), self.dim)
            if kept
            else None
        )

    def _stack(self) -> None:
        """Fold the pending rows into the matrix and the dropped ones out of it."""
        if self._dropped and self._matrix is not None:
            keep = [n for n, i in enumerate(self._ids) if i not in self._dropped]
            self._ids = [self._ids[n] for n in keep]
            self._matrix = self._matrix[keep]
            self._row = {i: n for n, i in enumerate(self._ids)}
            self._dropped = set()
        if self._pending:
            new = np.asarray(list(self._pending.values()), dtype=np.float32)
            has_rows = self._matrix is not None and len(self._ids) > 0
            self._matrix = np.vstack([self._matrix, new]) if has_rows else new
            for memory_id in self._pending:
                self._row[memory_id] = len(self._ids)
                self._ids.append(memory_id)
            self._pending = {}

    async def cosines(self, query: Sequence[float]) -> dict[str, float]:
        """``{memory_id: cosine with query}`` of every held vector."""
        await self.load()
        return await self.nearest(query, limit=len(self))

    async def nearest(
        self, query: Sequence[float], *, limit: int, ids: Sequence[str] = ()
    ) -> dict[str, float]:
        """``{memory_id: cosine}`` of the ``limit`` facts nearest ``query`` and of ``ids``
        (those held); nothing for a query of another dimension than the index's."""
        await self.load()
        if len(query) != self.dim or (limit <= 0 and not ids):
            return {}
        norm = math.sqrt(math.fsum(q * q for q in query)) or 1.0
        unit = [q / norm for q in query]
        if np is not None:
            return self._numpy_nearest(unit, limit, ids)
        scores = {
            i: round(math.fsum(a * b for a, b in zip(v, unit, strict=True)), 6)
            for i, v in self._plain.items()
        }
        found = dict(heapq.nlargest(limit, scores.items(), key=lambda p: (p[1], p[0])))
        found.update({i: scores[i] for i in ids if i in scores})
        return found

    def _numpy_nearest(self, unit: list[float], limit: int, ids: Sequence[str]) -> dict[str, float]:
        self._stack()
        if not self._ids:
            return {}
        scores = self._matrix @ np.asarray(unit, dtype=np.float32)
        if 0 < limit < len(scores):
            picked = np.argpartition(-scores, limit - 1)[:limit]  # O(n): no full sort
        else:
            picked = np.arange(len(scores) if limit > 0 else 0)
        found = {self._ids[n]: round(float(scores[n]), 6) for n in picked.tolist()}
        for i in ids:
            n = self._row.get(i)
            if n is not None:
                found[i] = round(float(scores[n]), 6)
        return found
