"""Agent kernel fixtures: the kernelspec in the isolated data dir, a kernel manager, a pool.

- ``agent_kernelspec``: installs the ``jupyter-agent`` kernelspec into the current
  (isolated) ``JUPYTER_DATA_DIR``; returns its folder.
- ``kernel_manager``: a jupyter_client ``AsyncMultiKernelManager``; every kernel it started
  is shut down at teardown.
- ``kernel_pool``: a started :class:`~jupyter_agent.runtime.kernels.pool.KernelPool` of size 1.
- ``agent_kernel``: an acquired handle (a cold start), discarded at teardown.
- ``RecordingHost``: an AppHost answering every call, counting them and their overlap.
- ``warm_count(pool)``, ``wait_filled(pool)``: how many kernels are warm; wait until the
  pool holds ``size`` (tests and benchmarks: the server never waits for its pool).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from jupyter_agent.cli.main import install_kernelspec
from jupyter_agent.runtime.kernels.pool import AgentKernelHandle, KernelPool


def warm_count(pool: KernelPool) -> int:
    """How many kernels are ready to be acquired now."""
    return len(pool._warm)


async def wait_filled(pool: KernelPool, timeout_s: float = 60.0) -> None:
    """Wait until ``pool.size`` kernels are warm; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while warm_count(pool) < pool.size:
        assert time.monotonic() < deadline, "the kernel pool did not fill in time"
        await asyncio.sleep(0.02)


class RecordingHost:
    """An AppHost for tests: answers ``app.method`` with a value naming the call.

    ``fail`` names methods (``"app.method"``) that answer ok=False; ``delay_s`` makes each
    call take that long, so concurrency shows in ``max_in_flight``.
    """

    def __init__(self, *, delay_s: float = 0.0, fail: tuple[str, ...] = ()) -> None:
        self.calls: list[tuple[str, str, dict[str, Any], int | None]] = []
        self.delay_s = delay_s
        self.fail = fail
        self.in_flight = 0
        self.max_in_flight = 0
        self._seq = 100

    async def call(
        self, app: str, method: str, args: dict[str, Any], *, parent: int | None
    ) -> dict[str, Any]:
        self._seq += 1
        seq = self._seq
        self.calls.append((app, method, args, parent))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        if f"{app}.{method}" in self.fail:
            return {
                "ok": False,
                "value": None,
                "error": f"{app}.{method} refused",
                "seq": seq,
                "mutation": app == "chat",
            }
        return {
            "ok": True,
            "value": f"{app}.{method}#{seq}",
            "error": None,
            "seq": seq,
            "mutation": app == "chat",
        }


@pytest.fixture
def agent_kernelspec() -> str:
    return install_kernelspec(user=True)


@pytest.fixture
async def kernel_manager(agent_kernelspec: str) -> AsyncIterator[AsyncMultiKernelManager]:
    km = AsyncMultiKernelManager()
    yield km
    await km.shutdown_all(now=True)


@pytest.fixture
async def kernel_pool(kernel_manager: AsyncMultiKernelManager) -> AsyncIterator[KernelPool]:
    pool = KernelPool(kernel_manager, size=1)
    await pool.start()
    yield pool
    await pool.stop()


@pytest.fixture
async def agent_kernel(
    kernel_manager: AsyncMultiKernelManager, tmp_path: Any
) -> AsyncIterator[AgentKernelHandle]:
    pool = KernelPool(kernel_manager, size=0)
    handle = await pool.acquire(cwd=str(tmp_path))
    yield handle
    await pool.discard(handle)
