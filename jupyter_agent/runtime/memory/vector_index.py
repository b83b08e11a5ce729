"""The facts' vectors of one owner and model, held in memory for cosine search.

:class:`VectorIndex` reads the store's ``memory_vectors(owner=, model=)`` once, then is
kept current by the embedder: :meth:`VectorIndex.put` when it stores a vector,
:meth:`VectorIndex.drop` when a fact is deleted or its text changes. Vectors another
server writes to the same database are picked up by :meth:`VectorIndex.refresh`, which
the embedder calls at most every ``reload_every_s`` (60 s): a cheap check first (the
count of the vectors and the latest ``updated`` of their facts,
``store.memory_vectors_stamp``), then a reload only when it changed. A new model is a new
index.

The load is one task owned by the index (:meth:`VectorIndex.start_load`): started early
(the embedder's start and first save), awaited only through ``asyncio.shield`` (a
cancelled search never stops it) and never on a search's path: until it is done
:attr:`VectorIndex.loaded` is False and recall is lexical. A reload (``force``, a
refresh) keeps answering from the old snapshot until the new one is ready.

Nothing heavy runs on the event loop: the load (JSON parsing, stacking), folding changes
into the matrix and every scoring run in ``asyncio.to_thread``. The loop only records a
change (a dict entry) and hands the worker immutable inputs: a *snapshot* (ids and, with
numpy, one float32 matrix; without numpy, a tuple of ``array('f')``) that is replaced,
never mutated, plus a copy of the small *overlay* of changes since (id -> ``array('f')``,
or None for dropped). Past :data:`FOLD_AT` changes the overlay is folded into a new
snapshot (in a worker, a background task: a search never waits for it).

Compact, because a server keeps it for good: 4 bytes a dimension (10,000 facts of 768
dimensions: 31 MB), with numpy searched by one matrix product and a partial sort (a few
ms; ~100x faster than the pure-Python dot products without it).

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
from typing import Any, Final

_NUMPY: list[Any] = []  # numpy (or None without it), imported once vectors exist


def _numpy() -> Any:
    """numpy, imported at the first index that holds vectors (a matrix product is ~100x
    faster than Python loops at 10,000 facts), or None when it is not installed: a server
    with no embed tier never imports it."""
    if not _NUMPY:
        try:
            import numpy
        except ImportError:  # pragma: no cover - numpy ships with the default install
            _NUMPY.append(None)
        else:
            _NUMPY.append(numpy)
    return _NUMPY[0]


__all__ = ["FOLD_AT", "VectorIndex"]

#: Changes held beside the snapshot before they are folded into a new one.
FOLD_AT: Final = 64

Overlay = dict[str, "array[float] | None"]


def _vec(values: Sequence[float]) -> array[float]:
    return values if isinstance(values, array) and values.typecode == "f" else array("f", values)


class _Snapshot:
    """Immutable: the ids and their vectors (numpy: a float32 matrix; else arrays)."""

    __slots__ = ("ids", "matrix", "row", "vectors")

    def __init__(self, ids: Sequence[str], vectors: Sequence[array[float]], dim: int) -> None:
        self.ids: tuple[str, ...] = tuple(ids)
        self.row: dict[str, int] = {i: n for n, i in enumerate(self.ids)}
        self.vectors: tuple[array[float], ...] = ()
        self.matrix: Any = None
        np = _numpy() if self.ids else None
        if np is None:
            self.vectors = tuple(vectors)
        elif self.ids:
            flat = b"".join(v.tobytes() for v in vectors)
            self.matrix = np.frombuffer(flat, dtype=np.float32).reshape(len(self.ids), dim)

    def items(self) -> list[tuple[str, array[float]]]:
        if self.matrix is None:
            return list(zip(self.ids, self.vectors, strict=True))
        return [(i, array("f", self.matrix[n].tobytes())) for n, i in enumerate(self.ids)]


_EMPTY: Final = _Snapshot((), (), 0)


class VectorIndex:
    """The vectors of ``(owner, model)`` (see the module docstring)."""

    def __init__(self, store: Any, *, owner: str, model: str) -> None:
        self.store = store
        self.owner = owner
        self.model = model
        self.dim = 0
        self._snap = _EMPTY
        self._overlay: Overlay = {}
        self._loaded = False
        self._lock = asyncio.Lock()  # one load or fold at a time
        self._load_task: asyncio.Task[None] | None = None
        self._fold_task: asyncio.Task[None] | None = None
        self._stamp: Any = None  # the store's stamp of the vectors last read
        self._checked = time.monotonic()  # the last load or refresh check
        # changes made while a load reads the store: the rows read may predate them
        self._during_load: Overlay | None = None

    def __len__(self) -> int:
        gone = sum(1 for i in self._overlay if i in self._snap.row)
        return len(self._snap.ids) - gone + sum(v is not None for v in self._overlay.values())

    def put(self, memory_id: str, vector: Sequence[float]) -> None:
        """Hold ``vector`` for ``memory_id`` (just stored by the embedder). O(dim), on the
        loop: the worker's inputs are never mutated."""
        values = _vec(vector)
        if not self.dim:
            self.dim = len(values)
        held = values if len(values) == self.dim else None  # another dimension: unsearchable
        self._overlay[memory_id] = held
        if self._during_load is not None:
            self._during_load[memory_id] = held

    def drop(self, memory_id: str) -> None:
        """Forget ``memory_id``'s vector (its fact was deleted, or its text changed)."""
        self._overlay[memory_id] = None
        if self._during_load is not None:
            self._during_load[memory_id] = None

    @property
    def loaded(self) -> bool:
        """True once the store's vectors were read (searches before it are lexical)."""
        return self._loaded

    def invalidate(self) -> None:
        """Read the store again, in the background (the old snapshot answers meanwhile)."""
        self.start_load(force=True)

    def start_load(self, *, force: bool = False) -> asyncio.Task[None] | None:
        """Start reading the store (a task of the index) unless loaded (and not ``force``)
        or a load runs; the running or started load's task, None when there is none."""
        if self._load_task is not None and not self._load_task.done():
            return self._load_task
        if self._loaded and not force:
            return None
        self._load_task = asyncio.get_running_loop().create_task(self._load_now())
        return self._load_task

    async def load(self, *, force: bool = False) -> None:
        """Read the vectors from the store (in a worker) when never read or ``force``; the
        changes made meanwhile are kept over the rows read. Cancelling the caller never
        cancels the load (shielded): the next caller waits for the same one. Loaded and
        not ``force``: returns at once (a reload running meanwhile is not waited for)."""
        if self._loaded and not force:
            return
        task = self.start_load(force=force)
        if task is not None:
            await asyncio.shield(task)

    async def _load_now(self) -> None:
        async with self._lock:
            self._during_load = {}
            try:
                snap, dim, stamp = await asyncio.to_thread(self._read, self.dim)
                later = self._during_load
            finally:
                self._during_load = None
            # The store held no vector (its read kept the dimension known at its start):
            # a vector put meanwhile (the first fact saved) gives the dimension, it is not
            # dropped as another one's.
            dim = dim or self.dim
            self._snap, self.dim, self._stamp = snap, dim, stamp
            self._overlay = {i: v for i, v in later.items() if v is None or len(v) == dim}
            self._loaded = True
            self._checked = time.monotonic()

    def refresh(self, *, every_s: float) -> asyncio.Task[None] | None:
        """At most every ``every_s``: check the store's stamp in the background and reload
        when it changed (vectors another server wrote). Never waited for by a search."""
        if not self._loaded or time.monotonic() - self._checked < every_s:
            return None
        if self._load_task is not None and not self._load_task.done():
            return None
        self._checked = time.monotonic()
        self._load_task = asyncio.get_running_loop().create_task(self._refresh_now())
        return self._load_task

    async def _refresh_now(self) -> None:
        stamp = await asyncio.to_thread(self._read_stamp)
        if stamp is None or stamp != self._stamp:
            await self._load_now()

    def _read_stamp(self) -> Any:
        """The store's cheap stamp of the vectors (None: the store has none: reload)."""
        read = getattr(self.store, "memory_vectors_stamp", None)
        return None if read is None else read(owner=self.owner, model=self.model)

    def _read(self, dim: int) -> tuple[_Snapshot, int, Any]:
        """The store's vectors as a snapshot, and its stamp read first (a worker thread:
        a write between the two is seen by the next refresh)."""
        stamp = self._read_stamp()
        rows = self.store.memory_vectors(owner=self.owner, model=self.model)
        dims = Counter(len(v) for _, v in rows)
        dim = dims.most_common(1)[0][0] if dims else dim
        kept = [(str(i), array("f", v)) for i, v in rows if len(v) == dim]
        return _Snapshot([i for i, _ in kept], [v for _, v in kept], dim), dim, stamp

    async def _fold(self) -> None:
        """Fold the overlay into a new snapshot (in a worker; a background task)."""
        async with self._lock:
            folded = dict(self._overlay)
            if len(folded) < FOLD_AT:
                return
            snap, dim = self._snap, self.dim

            def build() -> _Snapshot:
                merged = {i: v for i, v in snap.items() if i not in folded}
                merged.update({i: v for i, v in folded.items() if v is not None})
                return _Snapshot(list(merged), list(merged.values()), dim)

            self._snap = await asyncio.to_thread(build)
            for i, v in folded.items():  # keep what changed while the worker built
                if i in self._overlay and self._overlay[i] is v:
                    del self._overlay[i]

    def start_fold(self) -> asyncio.Task[None] | None:
        """Fold the overlay in the background past :data:`FOLD_AT` changes (searches
        score the overlay meanwhile)."""
        if len(self._overlay) < FOLD_AT:
            return None
        if self._fold_task is None or self._fold_task.done():
            self._fold_task = asyncio.get_running_loop().create_task(self._fold())
        return self._fold_task

    async def cosines(self, query: Sequence[float]) -> dict[str, float]:
        """``{memory_id: cosine with query}`` of every held vector (waits for the load or
        the reload running)."""
        await self.load()
        if self._load_task is not None and not self._load_task.done():
            await asyncio.shield(self._load_task)
        return await self.nearest(query, limit=len(self))

    async def nearest(
        self, query: Sequence[float], *, limit: int, ids: Sequence[str] = ()
    ) -> dict[str, float]:
        """``{memory_id: cosine}`` of the ``limit`` facts nearest ``query`` and of ``ids``
        (those held); nothing for a query of another dimension than the index's. Waits
        for the first load (shielded; a search checks :attr:`loaded` first and does not
        call this before); a fold runs in the background."""
        await self.load()
        self.start_fold()
        if len(query) != self.dim or (limit <= 0 and not ids):
            return {}
        norm = math.sqrt(math.fsum(q * q for q in query)) or 1.0
        unit = array("f", [q / norm for q in query])
        snap, overlay = self._snap, dict(self._overlay)
        return await asyncio.to_thread(_score, snap, overlay, unit, limit, tuple(ids))


def _score(
    snap: _Snapshot, overlay: Overlay, unit: array[float], limit: int, ids: tuple[str, ...]
) -> dict[str, float]:
    """The scoring of :meth:`VectorIndex.nearest` (a worker thread; inputs not shared)."""
    held: list[tuple[float, str]] = [
        (_dot(v, unit), i) for i, v in overlay.items() if v is not None
    ]
    asked = set(ids)
    wanted = {i for i in asked if i in snap.row and i not in overlay}
    np = _numpy() if snap.matrix is not None else None
    if np is not None:
        scores = snap.matrix @ np.frombuffer(unit.tobytes(), dtype=np.float32)
        for i in overlay:
            if i in snap.row:
                scores[snap.row[i]] = -np.inf  # replaced or dropped: the overlay says
        live = len(snap.ids) - sum(1 for i in overlay if i in snap.row)
        count = min(limit, live)
        if 0 < count < len(scores):
            picked = np.argpartition(-scores, count - 1)[:count].tolist()  # O(n)
        else:
            picked = list(range(len(scores))) if count > 0 else []
        held.extend((float(scores[n]), snap.ids[n]) for n in picked if scores[n] > -np.inf)
        extra = {i: float(scores[snap.row[i]]) for i in wanted}
    else:
        live_snap = [
            (_dot(v, unit), i)
            for i, v in zip(snap.ids, snap.vectors, strict=True)
            if i not in overlay
        ]
        held.extend(live_snap)
        extra = {i: s for s, i in live_snap if i in wanted}
    top = heapq.nlargest(max(limit, 0), held)
    found = {i: round(s, 6) for s, i in top}
    found.update({i: round(s, 6) for i, s in extra.items()})
    found.update({i: round(s, 6) for s, i in held if i in asked})
    return found


def _dot(a: array[float], b: array[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))
