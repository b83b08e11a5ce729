"""The warm pool's keepalive tick (:mod:`jupyter_agent.runtime.kernels.pool`): a dead warm
kernel leaves the pool and is shut down, and a live one's ``last_activity`` is refreshed
every :data:`KEEPALIVE_INTERVALS` liveness checks, so the server's culler spares it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any, Final

from jupyter_agent.runtime.kernels.handle import AgentKernelHandle

__all__ = ["KEEPALIVE_INTERVALS", "sweep_warm", "touch"]

#: ``last_activity`` is refreshed every this many liveness intervals (5 s by default).
KEEPALIVE_INTERVALS: Final = 10


def touch(kernel_manager: Any, kernel_id: str) -> None:
    """Mark the kernel active: jupyter_server culls idle kernels by ``last_activity``, and a
    waiting pool kernel is not idle. Never raises (a kernel gone meanwhile: nothing)."""
    with contextlib.suppress(Exception):
        km = kernel_manager.get_kernel(kernel_id)
        if hasattr(km, "last_activity"):
            km.last_activity = datetime.now(timezone.utc)


async def sweep_warm(
    warm: list[AgentKernelHandle],
    *,
    kernel_manager: Any,
    refresh: bool,
    shutdown: Callable[[AgentKernelHandle], Awaitable[None]],
) -> None:
    """One tick over the ``warm`` kernels (changed in place): a dead one is removed and
    shut down; with ``refresh`` each live one is touched. A kernel a run takes meanwhile
    is left to the run."""
    for handle in list(warm):
        alive = await handle.is_alive()
        if handle not in warm:
            continue  # taken by a run meanwhile: the run checks it itself
        if not alive:
            warm.remove(handle)
            await shutdown(handle)
            continue
        if refresh:
            touch(kernel_manager, handle.kernel_id)
