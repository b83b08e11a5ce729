"""What each owner has that recall could find, counted in process: their memories per
category and the turns their chats hold.

A ``toolcaller@v7`` turn reads these at its start (the ``config.get start`` answer's
``memory.categories`` and ``findable``) instead of querying the store each turn: recall
searches only when something is findable, and the prompt's category list comes from here.

:func:`counts_of` gives the :class:`RecallCounts` of one store (one per store object in
this process, kept as long as the store is). Contracts:

- **Lazy, one query per owner**: the first :meth:`RecallCounts.snapshot` of an owner reads
  their categories and their turn count (``store.memory_categories``,
  ``store.owner_turn_count``, in a worker thread); later snapshots answer from memory.
- **Kept current by the writers of this process**: a saved memory adds to its category
  (:meth:`~RecallCounts.memory_saved`), a stored turn to the turns
  (:meth:`~RecallCounts.turn_stored`: the ``turn.append`` performer); a memory edited or
  deleted and a chat deleted make the owner's counts read again at their next snapshot
  (:meth:`~RecallCounts.forget`; those are rare and the exact category is not at hand).
  A write made while the counts are being read makes that read count as stale.
- **Several servers on one database** (or a writer that does not tell, like the minimal
  turn of a run that failed to start): counts may be low here. Low counts can only make a
  turn skip a search that would have found something, so counts that say *no memory* are
  read again when older than :data:`RECHECK_S`: a memory saved through another server is
  recalled here at most ``RECHECK_S`` seconds later, and a turn stored elsewhere likewise.
  Counts that say there is something may be high (a delete elsewhere): that costs one
  search that finds nothing, never a missed recall.
- A failed read counts as "maybe something" (a memory and a turn): the turn searches, as
  before counters.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["RECHECK_S", "Counts", "RecallCounts", "counts_of"]

log = logging.getLogger(__name__)

#: Counts with no memory are read again when older than this (see the module docstring).
RECHECK_S: Final = 30.0


@dataclass(frozen=True)
class Counts:
    """One owner's counts: memories per category (sorted by category) and stored turns."""

    categories: tuple[tuple[str, int], ...] = ()
    turns: int = 0

    @property
    def memories(self) -> int:
        return sum(n for _, n in self.categories)


@dataclass
class _Entry:
    categories: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    read_at: float = 0.0
    stale: bool = False


class RecallCounts:
    """The counts of one store's owners (see the module docstring)."""

    def __init__(self, store: Any, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._store = weakref.ref(store)
        self._clock = clock
        self._lock = threading.Lock()
        self._owners: dict[str, _Entry] = {}
        self._writes: dict[str, int] = {}  # owner -> writes told (a read in flight is stale)
        self.reads = 0  # store reads made (tests)

    async def snapshot(self, owner: str) -> Counts:
        """``owner``'s counts: from memory, or read (in a worker thread) the first time,
        after :meth:`forget`, or when they say no memory and are older than RECHECK_S."""
        with self._lock:
            entry = self._owners.get(owner)
            if entry is not None and not self._due(entry):
                return self._counts(entry)
            writes = self._writes.get(owner, 0)
        read = await asyncio.to_thread(self._read, owner)
        with self._lock:
            if self._writes.get(owner, 0) != writes:  # told of a write meanwhile
                read.stale = True
            self._owners[owner] = read
            return self._counts(read)

    def _due(self, entry: _Entry) -> bool:
        if entry.stale:
            return True
        empty = not any(entry.categories.values())
        return empty and self._clock() - entry.read_at >= RECHECK_S

    @staticmethod
    def _counts(entry: _Entry) -> Counts:
        categories = tuple(sorted((c, n) for c, n in entry.categories.items() if n > 0))
        return Counts(categories=categories, turns=entry.turns)

    def _read(self, owner: str) -> _Entry:
        store = self._store()
        self.reads += 1
        try:
            if store is None:
                raise RuntimeError("the store is gone")
            rows = store.memory_categories(owner=owner)
            turns = int(store.owner_turn_count(owner))
        except Exception as err:  # unknown: assume something is findable, read next time
            log.warning("recall counts of %r could not be read (%s)", owner, type(err).__name__)
            return _Entry(categories={}, turns=1, read_at=self._clock(), stale=True)
        categories = {str(c): int(n) for c, n in rows}
        return _Entry(categories=categories, turns=turns, read_at=self._clock())

    def _wrote(self, owner: str) -> _Entry | None:
        self._writes[owner] = self._writes.get(owner, 0) + 1
        return self._owners.get(owner)

    def memory_saved(self, owner: str, category: str) -> None:
        """A memory of ``category`` was stored for ``owner``."""
        with self._lock:
            entry = self._wrote(owner)
            if entry is not None:
                entry.categories[category] = entry.categories.get(category, 0) + 1

    def turn_stored(self, owner: str) -> None:
        """A turn was stored in one of ``owner``'s chats."""
        with self._lock:
            entry = self._wrote(owner)
            if entry is not None:
                entry.turns += 1

    def forget(self, owner: str | None = None) -> None:
        """``owner``'s counts (None: every owner's) are read again at their next snapshot
        (a memory edited or deleted, a chat deleted)."""
        with self._lock:
            owners = list(self._owners) if owner is None else [owner]
            for name in owners:
                entry = self._wrote(name)
                if entry is not None:
                    entry.stale = True


_BY_STORE: weakref.WeakKeyDictionary[Any, RecallCounts] = weakref.WeakKeyDictionary()
_BY_STORE_LOCK: Final = threading.Lock()


def counts_of(store: Any) -> RecallCounts:
    """The counts of ``store`` (one per store object in this process)."""
    with _BY_STORE_LOCK:
        counts = _BY_STORE.get(store)
        if counts is None:
            counts = _BY_STORE[store] = RecallCounts(store)
        return counts
