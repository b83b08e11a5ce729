"""The agent's work as server activity: an idle server is one with no agent turn going.

The agent's kernels are in a kernel manager of its own (never the person's), so Jupyter's
idle checks no longer see them: :class:`AgentActivity` says what they should know.

- :meth:`AgentActivity.busy` is the extension's ``current_activity()``: true while a run
  goes or a kernel is held by one, so ``ServerApp.shutdown_no_activity_timeout`` never
  stops a server in the middle of a turn.
- While busy, a periodic touch keeps ``web_app.settings["last_activity_times"]`` fresh
  (what ``GET /api/status`` reports as ``last_activity``): JupyterHub's idle culler does
  not cull a server whose person closed the browser during a long turn.
- :func:`close_kernel_manager` releases the agent's own kernel manager at the stop (its
  ZMQ context and culler), as the server does for its own.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import datetime, timezone
from typing import Any, Final

from tornado.ioloop import PeriodicCallback

__all__ = ["AgentActivity", "close_kernel_manager"]

log = logging.getLogger(__name__)

#: The key of the agent in ``last_activity_times``.
SOURCE: Final = "jupyter_agent"
#: How often a busy agent touches the server's activity (ms).
TOUCH_MS: Final = 30_000


class AgentActivity:
    """The agent's activity as the server sees it (see the module docstring); ``parts``
    gives the agent's parts (None before they are built or after the stop)."""

    def __init__(self, parts: Any) -> None:
        self._parts = parts
        self._timer: PeriodicCallback | None = None
        self._settings: dict[str, Any] | None = None

    def busy(self) -> bool:
        """True while a run goes or a kernel is held by one."""
        parts = self._parts()
        if parts is None:
            return False
        if parts.manager.running_ids():
            return True
        counts = getattr(parts.pool, "counts", None)
        return bool(counts is not None and counts().get("in_use"))

    def start(self, web_app: Any) -> None:
        """Touch ``web_app``'s activity every :data:`TOUCH_MS` while busy."""
        settings = getattr(web_app, "settings", None)
        if not isinstance(settings, dict) or self._timer is not None:
            return
        self._settings = settings
        self._timer = PeriodicCallback(self.touch, TOUCH_MS)
        self._timer.start()

    def touch(self) -> None:
        """Mark the server active now, when the agent is busy."""
        if self._settings is None or not self.busy():
            return
        times = self._settings.setdefault("last_activity_times", {})
        times[SOURCE] = datetime.now(timezone.utc)

    def stop(self) -> None:
        """Stop touching."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None


def close_kernel_manager(km: Any) -> None:
    """Release a kernel manager of the agent's own (its kernels are shut down already):
    its ZMQ context and its culler, as ``ServerApp`` does for its own at exit."""
    if km is None:
        return
    with contextlib.suppress(Exception):
        km.stop_culler()
    try:
        km.__del__()  # MultiKernelManager's: destroys the context it created
    except Exception:  # a manager without one: nothing held
        log.debug("closing the agent's kernel manager", exc_info=True)
