"""The Store's recall indexer: a thread that writes the docs of stored turns in batches.

``append_turn`` queues its turn (:mod:`.recall_queue`) and wakes the indexer after its
commit; the indexer waits :data:`DELAY_S` (turns stored meanwhile join the batch), then
indexes everything waiting, :data:`~.recall_queue.BATCH` turns per transaction, off every
run's path. Contracts:

- **Bounded delay**: a stored turn is in the recall index about :data:`DELAY_S` plus one
  write after its commit. A recall through this Store sees it at once: :meth:`catch_up`
  (called by ``Store.recall`` before it reads) indexes what this Store queued and its
  indexer has not indexed yet. Through another server on the same database, a turn is
  found once that server's indexer wrote it (the same bound).
- **Durable**: what is queued is in the database; :meth:`resume` (the server's start)
  indexes what an earlier process left, and :meth:`close` indexes what is left before the
  Store closes (a failure there is logged: the next start finishes it).
- **Failures** (the database unavailable) are logged once per streak and retried with a
  growing pause (up to :data:`MAX_BACKOFF_S`); a recall's catch-up raises them as any read
  would.
- The thread starts at the first wake, holds the Store weakly and ends with it (or at
  :meth:`close`). A Store that never stores a turn starts no thread.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Final, Protocol

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store.memory.recall_queue import BATCH

__all__ = ["DELAY_S", "MAX_BACKOFF_S", "THREAD_NAME", "Indexes", "TurnIndexer"]

log = logging.getLogger(__name__)

#: The indexer thread's name (a test counting a run's statements leaves its work out).
THREAD_NAME: Final = "agent-recall-indexer"
#: A woken indexer waits this long before its batch (turns stored meanwhile join it).
DELAY_S: Final = 0.2
#: The longest pause between retries while the database fails.
MAX_BACKOFF_S: Final = 30.0
#: An idle thread checks this often whether its Store is gone.
_IDLE_S: Final = 5.0


class Indexes(Protocol):
    """What the indexer needs of its Store."""

    def index_pending_turns(self, limit: int = ...) -> int: ...


class TurnIndexer:
    """Indexes the turns a Store queued (see the module docstring)."""

    def __init__(self, store: Indexes, *, delay_s: float | None = None) -> None:
        self._store = weakref.ref(store)
        self._delay_s = DELAY_S if delay_s is None else delay_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._guard = threading.Lock()  # the thread's start, and one drain at a time
        self._drain_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._dirty = False  # turns queued by this Store that may not be indexed yet
        self.batches = 0  # batches that indexed something (tests, benches)

    @property
    def dirty(self) -> bool:
        """Whether turns this Store queued may still wait for their doc."""
        return self._dirty

    def wake(self) -> None:
        """A turn was queued (committed): index it within the delay."""
        self._dirty = True
        self._start()
        self._wake.set()

    def resume(self) -> None:
        """Index what an earlier process left queued (within the delay; not awaited)."""
        self.wake()

    def catch_up(self) -> None:
        """Index now what this Store queued and its thread has not indexed yet (a recall
        is about to read). Free when nothing is; raises StoreError as a write would."""
        if self._dirty:
            self._drain()

    def close(self) -> None:
        """Stop the thread, then index what is left (a failure is logged, not raised)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        if self._dirty:
            try:
                self._drain()
            except StoreError as err:
                log.warning("recall: turns left to index at the next start (%s)", err)

    def _start(self) -> None:
        with self._guard:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=_run, args=(weakref.ref(self),), name=THREAD_NAME, daemon=True
            )
            self._thread.start()

    def _drain(self) -> int:
        """Index every waiting turn, a batch per transaction; the turns taken."""
        with self._drain_lock:
            store = self._store()
            if store is None:
                return 0
            self._dirty = False
            total = 0
            try:
                while True:
                    taken = store.index_pending_turns(BATCH)
                    total += taken
                    if taken:
                        self.batches += 1
                    if taken < BATCH:
                        return total
            except BaseException:
                self._dirty = True  # still to do
                raise

    def _cycle(self) -> bool:
        """One wake's work; False when the thread should end."""
        if not self._wake.wait(timeout=_IDLE_S):
            return self._store() is not None and not self._stop.is_set()
        if self._stop.is_set():
            return False
        self._stop.wait(self._delay_s)  # a close cuts the wait: it drains itself
        self._wake.clear()
        if self._stop.is_set():
            return False
        self._drain()
        return True


def _run(ref: weakref.ReferenceType[TurnIndexer]) -> None:
    """The thread: one cycle per wake, retrying failures with a growing pause."""
    backoff = 0.0
    while True:
        indexer = ref()
        if indexer is None:
            return
        try:
            if not indexer._cycle():
                return
            backoff = 0.0
        except StoreError as err:
            if not backoff:
                log.warning("recall: could not index stored turns, retrying (%s)", err)
            backoff = min(MAX_BACKOFF_S, max(1.0, backoff * 2))
            indexer._wake.set()
            stop = indexer._stop
            del indexer  # not held while it sleeps
            if stop.wait(backoff):
                return
        except Exception:  # a bug: said, and the thread goes on at the next wake
            log.exception("recall: the indexer failed")
        finally:
            indexer = None
