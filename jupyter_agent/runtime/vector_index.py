"""The facts' vectors of one owner and model, held in memory for cosine search.

:class:`VectorIndex` keeps ``{memory_id: unit vector}`` as the store's
``memory_vectors(owner=, model=)`` gave them (read in a worker thread, never on the event
loop), updated in place when the embedder stores a new vector, and read again from the
store when older than ``ttl_s`` (deleted facts, vectors written by another server on the
same database). A search over 10,000 facts is one matrix product with numpy (when
importable), else a pure-Python dot product per fact.

Vectors are unit length (:func:`jupyter_agent.llm.embeddings.normalise`), so a dot product
is the cosine. A vector whose dimension differs from the query's (stored by another model
of the same name) is skipped, never an error.
"""

from __future__ import annotations

import asyncio
import math
import time
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
        self._vectors: dict[str, list[float]] = {}
        self._loaded_at: float | None = None
        self._matrix: Any = None  # numpy (ids, matrix) cache, rebuilt after a change
        self._ids: list[str] = []
        self._lock = asyncio.Lock()
        # puts made while a load reads the store: the rows read may predate them
        self._during_load: dict[str, list[float]] | None = None

    def __len__(self) -> int:
        return len(self._vectors)

    def put(self, memory_id: str, vector: Sequence[float]) -> None:
        """Hold ``vector`` for ``memory_id`` (just stored by the embedder)."""
        self._vectors[memory_id] = list(vector)
        if self._during_load is not None:
            self._during_load[memory_id] = list(vector)
        self._matrix = None

    def drop(self, memory_id: str) -> None:
        """Forget ``memory_id``'s vector (its fact was deleted)."""
        if self._vectors.pop(memory_id, None) is not None:
            self._matrix = None

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
                vectors = {str(i): [float(x) for x in v] for i, v in rows}
                vectors.update(self._during_load)
            finally:
                self._during_load = None
            self._vectors = vectors
            self._matrix = None
            self._loaded_at = time.monotonic()

    async def cosines(self, query: Sequence[float]) -> dict[str, float]:
        """``{memory_id: cosine with query}`` for every held vector of the query's dimension."""
        await self.load()
        if not self._vectors:
            return {}
        norm = math.sqrt(math.fsum(q * q for q in query)) or 1.0
        unit = [q / norm for q in query]
        if np is not None:
            return self._numpy_cosines(unit)
        dim = len(unit)
        return {
            i: round(math.fsum(a * b for a, b in zip(v, unit, strict=True)), 6)
            for i, v in self._vectors.items()
            if len(v) == dim
        }

    def _numpy_cosines(self, unit: list[float]) -> dict[str, float]:
        dim = len(unit)
        if self._matrix is None or self._matrix.shape[1:] != (dim,):
            self._ids = [i for i, v in self._vectors.items() if len(v) == dim]
            rows = [self._vectors[i] for i in self._ids]
            self._matrix = np.asarray(rows, dtype=np.float64).reshape(len(rows), dim)
        if not self._ids:
            return {}
        scores = self._matrix @ np.asarray(unit, dtype=np.float64)
        return {i: round(float(s), 6) for i, s in zip(self._ids, scores, strict=True)}
