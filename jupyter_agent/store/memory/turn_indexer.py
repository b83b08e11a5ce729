"""The Store's recall indexer: a thread that writes the docs of stored turns in batches.

``append_turn`` queues its turn (:mod:`.recall_queue`) and wakes the indexer after its
commit; the indexer waits :data:`DELAY_S` (turns stored meanwhile join the batch), then
indexes everything waiting, :data:`~.recall_queue.BATCH` turns per transaction, off every
run's path. Contracts:

- **Bounded delay**: a stored turn is in the recall index about :data:`DELAY_S` plus one
  write after its commit. A recall through this Store sees it at once: :meth:`catch_up`
  (called by ``Store.recall`` before it reads) indexes what this Store queued and its
  indexer has not indexed yet, unless the recall leaves all of it out anyway (its own
  chat's window). Through another server on the same database, a turn is
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
import time
import weakref
from typing import Final, Protocol

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store.memory.recall_queue import BATCH

__all__ = ["DELAY_S", "MAX_BACKOFF_S", "THREAD_NAME", "Indexes", "TurnIndexer"]

log = logging.getLogger(__name__)

#: The indexer thread's name (a test counting a run's statements leaves its work out).
THREAD_NAME: Final = "agent-recall-indexer"
#: A woken indexer waits this long before its batch (turns stored meanwhile join it): the
#: run's own end (its log's close, ``run_end``, the summaries' read) usually goes first, and
#: a next message sent 0.1 s after a reply (a script, an eval's cases, another chat) finds
#: the turn indexed rather than indexing it itself before its recall (about 2 ms).
DELAY_S: Final = 0.05
#: The longest pause between retries while the database fails.
MAX_BACKOFF_S: Final = 30.0
#: An idle thread checks this often whether its Store is gone.
_IDLE_S: Final = 5.0
#: How long a drain waits for waiting rows another server's batch holds.
_OTHERS_S: Final = 5.0
#: How long a close waits for a drain under way (its thread's).
_CLOSE_WAIT_S: Final = 30.0


class Indexes(Protocol):
    """What the indexer needs of its Store."""

    def index_pending(self, limit: int) -> tuple[int, int]: ...


class TurnIndexer:
    """Indexes the turns a Store queued (see the module docstring)."""

    def __init__(self, store: Indexes, *, delay_s: float | None = None) -> None:
        self._store = weakref.ref(store)
        self._delay_s = DELAY_S if delay_s is None else delay_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._guard = threading.Lock()  # the thread's start, the counters
        self._drain_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # Wakes told, and the wakes a finished drain covers: turns this Store queued may
        # wait while indexed < queued (a drain under way counts only once it committed).
        self._queued = 0
        self._indexed = 0
        # (wake number, chat, created) of the turns woken for and not yet covered: a
        # recall that leaves all of them out (its own window) need not wait for them.
        self._waiting: list[tuple[int, str | None, str | None]] = []
        self.batches = 0  # batches that indexed something (tests, benches)

    @property
    def dirty(self) -> bool:
        """Whether turns this Store queued may still wait for their doc."""
        return self._indexed < self._queued

    def wake(self, chat_id: str | None = None, created: str | None = None) -> None:
        """A turn was queued (committed): index it within the delay. ``chat_id`` and
        ``created`` (the turn's) let :meth:`catch_up` skip it for a recall that leaves it
        out; without them every recall waits for it."""
        with self._guard:
            self._queued += 1
            self._waiting.append((self._queued, chat_id, created))
        self._start()
        self._wake.set()

    def resume(self) -> None:
        """Index what an earlier process left queued (within the delay; not awaited)."""
        self.wake()

    def catch_up(self, exclude_chat: str | None = None, exclude_since: str | None = None) -> None:
        """Index now what this Store queued and no finished drain covered (a recall is
        about to read): a drain under way is waited for, then whatever is left indexed.
        Free when nothing is, or when every such turn is one the recall leaves out (of
        ``exclude_chat``, created at or after ``exclude_since``: the run's own window, so
        the turn just before a quick next message costs that message nothing); raises
        StoreError as a write would."""
        if not self.dirty:
            return
        if exclude_chat is not None and exclude_since is not None:
            with self._guard:
                waiting = [w for w in self._waiting if w[0] > self._indexed]
            if all(
                chat == exclude_chat and created is not None and created >= exclude_since
                for _, chat, created in waiting
            ):
                return
        self._drain()

    def close(self) -> None:
        """Stop the thread, then index what is left (a failure is logged, not raised)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
        if self.dirty:
            try:
                self._drain(wait_s=_CLOSE_WAIT_S)
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

    def _drain(self, wait_s: float | None = None) -> int:
        """Index every waiting turn, a batch per transaction; the turns taken. Rows another
        server's batch holds are waited for (it commits them) up to :data:`_OTHERS_S`, so
        what this Store queued is indexed, by it or by them, when this returns.
        ``wait_s``: how long to wait for a drain under way (None: as long as it takes)."""
        if not self._drain_lock.acquire(timeout=-1 if wait_s is None else wait_s):
            log.warning("recall: an index drain is still under way; the next start ends it")
            return 0
        try:
            store = self._store()
            if store is None:
                return 0
            target = self._queued
            total = 0
            others_until = time.monotonic() + _OTHERS_S
            while True:
                seen, taken = store.index_pending(BATCH)
                total += taken
                self.batches += bool(taken)
                if seen < BATCH and taken == seen:
                    break  # everything waiting was seen and written
                if taken < seen:  # another server's batch holds some: it commits soon
                    if time.monotonic() > others_until:
                        break
                    time.sleep(0.01)
            with self._guard:
                self._indexed = max(self._indexed, target)
                self._waiting = [w for w in self._waiting if w[0] > self._indexed]
            return total
        finally:
            self._drain_lock.release()

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
