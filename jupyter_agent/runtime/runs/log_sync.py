"""The effect logs' fdatasync policy: the run manager's two traits and the server's syncer.

``c.RunManager.log_sync`` (the configuration guide, "Durability"): under both policies
every line is written to the OS before the effect it precedes (a SIGKILLed server loses
none) and a run's end is on disk before its turn is stored:

- ``effect``: every intent of an effect that reaches outside the process is on disk
  before the effect starts (power-loss safe; one fdatasync per such effect on the run's
  path, in a worker thread);
- ``run`` (the default, like SQLite's ``synchronous=NORMAL``; DESIGN section 3's name, and
  ``group`` is accepted for it): no effect waits for the
  disk; one background thread per server syncs the logs with new lines at most every
  ``log_sync_interval_ms``, so a power loss loses at most about that much of a run that
  has not ended.

The traits are made here and declared on :class:`~jupyter_agent.runtime.runs.manager.RunManager`
(which leaves :data:`LOG_SYNC_TRAITS` out of its ``ceilings``); :class:`ServerSyncer` is
the manager's one :class:`~jupyter_agent.trace.syncer.GroupSyncer`.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from traitlets import Enum, Int

from jupyter_agent.trace.log import SYNC_POLICIES, GroupSyncer

__all__ = ["LOG_SYNC_TRAITS", "ServerSyncer", "log_sync_interval_trait", "log_sync_trait"]

LOG_SYNC_TRAITS: Final = frozenset({"log_sync", "log_sync_interval_ms"})


def log_sync_trait() -> Any:
    """``RunManager.log_sync``: ``effect`` or ``run`` (the default; ``group`` is its alias)."""
    return Enum(
        [*SYNC_POLICIES, "group"],
        default_value="run",
        help="When effect log lines reach the disk. 'effect': before every effect that "
        "reaches outside the process (survives power loss). 'run' (or 'group'): group "
        "commit in the background at most every log_sync_interval_ms and at the run's end "
        "(a killed server loses nothing; a power loss at most that window of a running run).",
    ).tag(config=True)


def log_sync_interval_trait() -> Any:
    """``RunManager.log_sync_interval_ms``: the group syncer's interval."""
    return Int(
        200,
        min=1,
        help="Under log_sync='run': the most milliseconds between two background syncs "
        "of the effect logs with new lines.",
    ).tag(config=True)


class ServerSyncer:
    """The one group syncer of a server's runs, made at the first ``run``-policy run."""

    def __init__(self) -> None:
        self._syncer: GroupSyncer | None = None
        self._lock = threading.Lock()

    def for_new_log(self, policy: str, interval_ms: int) -> GroupSyncer | None:
        """What a new run's log is created with: None under ``effect`` (it syncs itself),
        else the server's syncer (its interval is the one given at its first use)."""
        if policy == "effect":
            return None
        with self._lock:
            if self._syncer is None:
                self._syncer = GroupSyncer(interval_ms)
            return self._syncer

    def close(self) -> None:
        """Sync what is pending and stop the thread (blocking: call it in a worker thread).
        Logs still open after this sync their own lines."""
        with self._lock:
            syncer = self._syncer
        if syncer is not None:
            syncer.close()
