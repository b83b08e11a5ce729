"""Group commit of effect logs: one background thread fdatasyncs the logs that need it.

Under the ``run`` sync policy (``RunManager.log_sync``, the configuration guide:
"Durability") a log's lines are written to the OS before the effect they precede, as
always, but no write waits
for the disk: the log asks its :class:`GroupSyncer` (:meth:`GroupSyncer.mark`) the first
time it holds unsynced lines, and the syncer's thread fdatasyncs it.

Contracts:

- One thread per syncer (one syncer per server), started at the first :meth:`mark`; never
  a thread per line or per log. The thread is a daemon: a server that exits without
  :meth:`close` does not hang on it (each log still syncs itself when it closes).
- Sync rounds start at most every ``interval_ms`` and only when some log was marked; a
  line written at time ``t`` is on disk by about ``t + interval_ms`` (plus the round's own
  fdatasync time), so a power loss loses at most that window of a run that has not ended.
- :meth:`mark` is cheap (a lock and a set insert) and never blocks on a sync: the thread
  takes the marked set and syncs outside that lock.
- A log's sync failing (``OSError``) is logged and does not stop the thread; the log's own
  close (which fsyncs) reports the error to its run.
- :meth:`close` syncs what is marked, then stops the thread; :meth:`mark` then answers
  False and the log syncs that line itself (rare: a run still writing as its server stops).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final, Protocol

__all__ = ["THREAD_NAME", "GroupSyncer", "Syncable"]

log = logging.getLogger(__name__)

#: The name of the syncer's thread (its fdatasyncs are on no writer's path).
THREAD_NAME: Final = "effect-log-sync"


class Syncable(Protocol):
    """What the syncer syncs: an effect log (:class:`~jupyter_agent.trace.log.EffectLog`)."""

    def sync_if_dirty(self) -> bool:
        """fdatasync when lines were written since the last sync; True if it synced."""
        ...


class GroupSyncer:
    """The background syncer of a server's effect logs (see the module docstring)."""

    def __init__(self, interval_ms: int) -> None:
        if interval_ms < 1:
            raise ValueError(f"interval_ms must be >= 1, not {interval_ms}")
        self.interval_s = interval_ms / 1000
        self._cond = threading.Condition()
        self._marked: set[Syncable] = set()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.rounds = 0  # sync rounds so far (for tests and benchmarks)

    def mark(self, target: Syncable) -> bool:
        """``target`` holds unsynced lines: sync it in the next round.

        Called with the target's write lock held, so it never syncs itself: False once
        the syncer is closed, and the caller then syncs on its own.
        """
        with self._cond:
            if self._closed:
                return False
            self._marked.add(target)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
                self._thread.start()
            self._cond.notify()
            return True

    def close(self, timeout_s: float = 30) -> None:
        """Sync every marked log, then stop the thread (idempotent)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _loop(self) -> None:
        last = float("-inf")
        while True:
            with self._cond:
                while not self._marked and not self._closed:
                    self._cond.wait()
                if not self._marked:
                    return  # closed, nothing left
                # At most one round per interval: lines written meanwhile join this round.
                delay = last + self.interval_s - time.monotonic()
                if delay > 0 and not self._closed:
                    self._cond.wait_for(lambda: self._closed, timeout=delay)
                marked, self._marked = self._marked, set()
            last = time.monotonic()
            self.rounds += 1
            for target in marked:
                try:
                    target.sync_if_dirty()
                except OSError:
                    log.warning("background sync of an effect log failed", exc_info=True)
