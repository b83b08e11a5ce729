"""The warm pool of agent kernels: started ahead through the server's kernel manager.

N kernels wait ready; a run takes one (moved to its working folder before its first cell)
and the pool refills in the background; a run's kernel is never reused. Pool kernels keep
their ``last_activity`` fresh so the server's culler leaves them alone, and a dead or culled
one is replaced. The kernel manager is received as an object (see
:mod:`jupyter_agent.runtime.kernel_handle`); kernels start with the filtered environment of
:mod:`jupyter_agent.runtime.envfilter`.

:class:`KernelPool` is configurable (``c.KernelPool.size = 3`` in a
``jupyter_server_config.py``); the extension app passes it the server's config.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from jupyter_core.utils import ensure_async
from traitlets import Float, Int, List, Unicode
from traitlets.config import LoggingConfigurable

from jupyter_agent.runtime.envfilter import filter_env
from jupyter_agent.runtime.kernel_handle import AgentKernelHandle, AppHost

__all__ = ["AgentKernelHandle", "AppHost", "KernelPool"]

log = logging.getLogger(__name__)

# last_activity is refreshed every this many liveness intervals (5 s by default)
_KEEPALIVE_INTERVALS = 10


class KernelPool(LoggingConfigurable):
    """Warm agent kernels, one per run; a run's kernel is never reused.

    ``kernel_manager`` is the server's (multi) kernel manager; ``base_env`` is the
    environment the kernel's is filtered from (default: the server's ``os.environ``). The
    settings are traits (``size``, ``kernel_name``, ``env_keep``, ``liveness_interval_s``),
    given as keyword arguments or through ``config`` / ``parent``.
    """

    size = Int(
        2,
        min=0,
        help="Number of warm agent kernels kept ready for new runs (0: start on demand).",
    ).tag(config=True)

    kernel_name = Unicode("jupyter-agent", help="Kernelspec the agent's kernels start from.").tag(
        config=True
    )

    env_keep = List(
        Unicode(),
        default_value=[],
        help=(
            "Names of environment variables let through the agent kernel's environment "
            "filter (which removes names containing KEY, TOKEN, SECRET, PASSWORD or "
            "CREDENTIAL, JUPYTER_TOKEN, SSH_AUTH_SOCK, AWS_*, AZURE_*, "
            "GOOGLE_APPLICATION_CREDENTIALS and URLs with a user:password part)."
        ),
    ).tag(config=True)

    liveness_interval_s = Float(
        0.5,
        min=0.01,
        help=(
            "Seconds between liveness checks of a kernel (warm or running a cell); warm "
            "kernels' last_activity is refreshed every 10 checks, so the culler spares them."
        ),
    ).tag(config=True)

    def __init__(
        self, kernel_manager: Any, *, base_env: Mapping[str, str] | None = None, **traits: Any
    ) -> None:
        super().__init__(**traits)
        self._km = kernel_manager
        self._base_env = base_env
        self._warm: list[AgentKernelHandle] = []
        self._starting = 0
        self._fill_task: asyncio.Task[None] | None = None
        self._keepalive_task: asyncio.Task[None] | None = None
        self._running = False
        self._closing: set[asyncio.Task[None]] = set()

    def kernel_env(self) -> dict[str, str]:
        """The complete (filtered) environment kernels are launched with."""
        return filter_env(os.environ if self._base_env is None else self._base_env, self.env_keep)

    async def start(self) -> None:
        """Start filling the pool in the background, and keeping its kernels fresh."""
        self._running = True
        self._kick_fill()
        self._keepalive_task = asyncio.create_task(self._keepalive())

    async def _start_handle(self) -> AgentKernelHandle:
        kernel_id = await ensure_async(
            self._km.start_kernel(kernel_name=self.kernel_name, env=self.kernel_env())
        )
        handle = AgentKernelHandle(
            self._km, str(kernel_id), liveness_interval_s=self.liveness_interval_s
        )
        try:
            await handle.connect()
        except BaseException:
            await self._shutdown(handle)
            raise
        return handle

    def _kick_fill(self) -> None:
        if self._running and (self._fill_task is None or self._fill_task.done()):
            self._fill_task = asyncio.create_task(self._fill())

    async def _fill(self) -> None:
        while self._running and len(self._warm) + self._starting < self.size:
            self._starting += 1
            try:
                handle = await self._start_handle()
            except Exception:
                log.warning("starting a pool kernel failed", exc_info=True)
                await asyncio.sleep(1.0)  # a failing start must not spin
                continue
            finally:
                self._starting -= 1
            if self._running:
                self._warm.append(handle)
            else:
                await self._shutdown(handle)

    async def _keepalive(self) -> None:
        last_touch = 0.0
        while self._running:
            await asyncio.sleep(self.liveness_interval_s)
            touch = time.monotonic() - last_touch >= _KEEPALIVE_INTERVALS * self.liveness_interval_s
            for handle in list(self._warm):
                if not await handle.is_alive():
                    self._warm.remove(handle)
                    await self._shutdown(handle)
                    continue
                if touch:
                    self._touch(handle.kernel_id)
            if touch:
                last_touch = time.monotonic()
            self._kick_fill()

    def _touch(self, kernel_id: str) -> None:
        # jupyter_server culls idle kernels by last_activity: a waiting pool kernel is not idle
        with contextlib.suppress(Exception):
            km = self._km.get_kernel(kernel_id)
            if hasattr(km, "last_activity"):
                km.last_activity = datetime.now(timezone.utc)

    async def acquire(self, *, cwd: str | None) -> AgentKernelHandle:
        """A warm kernel (a cold start when none is), moved to ``cwd``; the pool refills.

        The refill starts at the next liveness tick, not now: launching a kernel blocks the
        event loop for a few ms and loads a core for a second, which would land on the
        run's first model call and cell.
        """
        handle = None
        while self._warm:
            candidate = self._warm.pop(0)
            if await candidate.is_alive():
                handle = candidate
                break
            await self._shutdown(candidate)
        if not self._running or self._keepalive_task is None:
            self._kick_fill()
        if handle is None:
            handle = await self._start_handle()
        self._touch(handle.kernel_id)
        if cwd is not None and handle.cwd != os.path.abspath(cwd):
            try:
                await handle.chdir(cwd)
            except BaseException:
                await self.discard(handle)
                raise
        return handle

    async def discard(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down."""
        await self._shutdown(handle)

    def discard_soon(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down in the background (a run need not wait for it).

        :meth:`stop` waits for these shutdowns, so no kernel outlives the pool.
        """
        task = asyncio.create_task(self._shutdown(handle))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shutdown(self, handle: AgentKernelHandle) -> None:
        await handle.close()
        with contextlib.suppress(Exception):
            await ensure_async(self._km.shutdown_kernel(handle.kernel_id, now=True))

    async def stop(self) -> None:
        """Stop filling and shut the warm kernels down."""
        self._running = False
        if self._keepalive_task is not None:
            self._keepalive_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive_task
        if self._fill_task is not None:
            # Let a kernel start in progress finish (the fill then shuts it down): cancelling
            # mid-start leaves a half-registered kernel in the manager.
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._fill_task), 60)
            self._fill_task.cancel()
        warm, self._warm = self._warm, []
        await asyncio.gather(*(self._shutdown(h) for h in warm), *self._closing)
