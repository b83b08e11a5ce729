"""The effect logs' fdatasync policy: two traits of the run manager and its group syncer.

``c.RunManager.log_sync`` (README "Durability"): under both policies every line is written
to the OS before the effect it precedes (a SIGKILLed server loses none) and a run's end is
on disk before its turn is stored:

- ``effect``: every intent of an effect that reaches outside the process is on disk
  before the effect starts (power-loss safe; one fdatasync per such effect on the run's
  path, in a worker thread);
- ``group`` (the default, like SQLite's ``synchronous=NORMAL``): no effect waits for the
  disk; one background thread per server syncs the logs with new lines at most every
  ``log_sync_interval_ms``, so a power loss loses at most about that much of a run that
  has not ended.

These traits are declared on a base class of :class:`~jupyter_agent.runtime.runs.RunManager`
so they stay out of its ``ceilings`` (the manager's own traits, recorded in each log).
"""

from __future__ import annotations

import threading

from traitlets import Enum, Int
from traitlets.config import LoggingConfigurable

from jupyter_agent.trace.log import SYNC_POLICIES, GroupSyncer, SyncPolicy

__all__ = ["LogSyncTraits"]


class LogSyncTraits(LoggingConfigurable):
    """The log sync traits (``c.RunManager.log_sync``) and the server's one syncer."""

    log_sync = Enum(
        list(SYNC_POLICIES),
        default_value="group",
        help="When effect log lines reach the disk. 'effect': before every effect that "
        "reaches outside the process (survives power loss). 'group': in the background "
        "at most every log_sync_interval_ms and at the run's end (a killed server loses "
        "nothing; a power loss at most that window of a running run).",
    ).tag(config=True)
    log_sync_interval_ms = Int(
        200,
        min=1,
        help="Under log_sync='group': the most milliseconds between two background syncs "
        "of the effect logs with new lines.",
    ).tag(config=True)

    _syncer: GroupSyncer | None = None
    _syncer_lock = threading.Lock()

    @property
    def log_policy(self) -> SyncPolicy:
        """The policy new runs' logs get."""
        return "effect" if self.log_sync == "effect" else "group"

    def log_syncer(self) -> GroupSyncer | None:
        """The syncer to create a new run's log with: None under ``effect``; under
        ``group`` this server's one :class:`GroupSyncer` (made at its first use)."""
        if self.log_policy == "effect":
            return None
        with self._syncer_lock:
            if self._syncer is None:
                self._syncer = GroupSyncer(self.log_sync_interval_ms)
            return self._syncer

    def close_log_syncer(self) -> None:
        """Sync what is pending and stop the syncer's thread (blocking: call it in a
        worker thread). Logs still open then sync their own lines."""
        with self._syncer_lock:
            syncer = self._syncer
        if syncer is not None:
            syncer.close()
