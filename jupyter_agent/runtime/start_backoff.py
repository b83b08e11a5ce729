"""When the warm pool tries a kernel start again after failures, and what the log says.

A start that fails for a lasting reason (a read-only data dir, a missing kernelspec, a full
disk) fails again at once: retried every second, each with a traceback, it filled the log
(56 KB a minute) and loaded the machine. :class:`StartBackoff` spaces the pool's own
(warm) retries exponentially, ``first_s`` doubling up to ``cap_s``, and speaks once: one
warning line naming the cause when starts begin to fail (again when the cause changes),
one info line when a start works again. Each failure's traceback is a debug line.

A run asking for a kernel meanwhile is not held back: its start is tried at once (the
cause may be gone) and, failing, gives that run :func:`start_error`, a ``KernelError``
that names the cause, so the run ends with a clear error instead of waiting.

Pure bookkeeping: it is told the time. Its lines go to the logger it is given (the pool's:
the server's log, where an info line shows), else this module's.
"""

from __future__ import annotations

import logging
from typing import Final

from jupyter_agent.exceptions import KernelError

__all__ = ["StartBackoff", "cause", "start_error"]

log = logging.getLogger("jupyter_agent.runtime.kernels.pool")

#: The first pause after a failed start, and the longest.
FIRST_S: Final = 1.0
CAP_S: Final = 60.0


def cause(exc: BaseException) -> str:
    """The failure as one line: ``PermissionError: [Errno 1] ...: '/path'``."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def start_error(exc: BaseException) -> KernelError:
    """What a run waiting for a kernel gets when its start failed (``exc`` as the cause)."""
    if isinstance(exc, KernelError):
        return exc
    error = KernelError(f"an agent kernel could not start: {cause(exc)}")
    error.__cause__ = exc
    return error


class StartBackoff:
    """The warm pool's retry schedule after failed starts (see the module docstring)."""

    def __init__(
        self,
        *,
        first_s: float = FIRST_S,
        cap_s: float = CAP_S,
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger] | None = None,
    ) -> None:
        self._log = logger or log
        self.first_s = first_s
        self.cap_s = cap_s
        self.failures = 0
        """Starts failed in a row."""
        self.retry_at = 0.0
        """Monotonic time before which the pool starts no warm kernel."""
        self._said: str | None = None  # the cause the last warning named

    def ready(self, now: float) -> bool:
        """True when the pool may try a warm start at ``now``."""
        return now >= self.retry_at

    def failed(self, exc: BaseException, now: float) -> float:
        """A start failed at ``now``: the pause before the next warm try (also set as
        :attr:`retry_at`). Warns once per cause; the rest is debug."""
        self.failures += 1
        pause = min(self.cap_s, self.first_s * 2.0 ** min(self.failures - 1, 32))
        self.retry_at = now + pause
        why = cause(exc)
        self._log.debug("jupyter-agent: kernel start %d failed", self.failures, exc_info=exc)
        if why != self._said:
            self._said = why
            self._log.warning(
                "jupyter-agent: agent kernels cannot start: %s; the pool tries again after "
                "%g s, backing off up to %g s between tries (a run needing a kernel "
                "meanwhile gets this error)",
                why,
                pause,
                self.cap_s,
            )
        return pause

    def succeeded(self) -> None:
        """A start worked: say so once if starts had been failing; reset the schedule."""
        if self.failures:
            self._log.info(
                "jupyter-agent: agent kernels start again (after %d failed starts)", self.failures
            )
        self.failures = 0
        self.retry_at = 0.0
        self._said = None
