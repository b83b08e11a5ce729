"""The warm pool starts after the agent's start, not on it, and its first fill yields to a
run that came before it: that run's kernel start is not behind pool fills (real kernels)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from jupyter_agent.runtime.assembly import AdminConfig, Parts
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.store.repo import Store
from tests.plugins.kernels import wait_filled

pytestmark = pytest.mark.timeout(180)


def record_starts(pool: KernelPool) -> list[tuple[str, float]]:
    """``("begin" | "end", monotonic time)`` of every kernel start of ``pool``."""
    events: list[tuple[str, float]] = []
    start = pool.starts.start

    async def recorded(**kwargs: Any) -> Any:
        events.append(("begin", time.monotonic()))
        try:
            return await start(**kwargs)
        finally:
            events.append(("end", time.monotonic()))

    pool.starts.start = recorded  # type: ignore[method-assign]
    return events


async def test_a_run_before_the_pool_starts_is_not_behind_its_fill(
    kernel_manager: AsyncMultiKernelManager,
) -> None:
    """Pool of 2, a run acquires at once (before the pool's delayed start): its kernel
    starts at once, and the pool starting meanwhile (after a pause in acquires, when a
    warm refill is due) begins no start of its own until the run has its kernel."""
    pool = KernelPool(kernel_manager, size=2, liveness_interval_s=0.1)
    events = record_starts(pool)
    try:
        acquire = asyncio.create_task(pool.acquire(cwd=None))
        await asyncio.sleep(0.3)  # 3 liveness intervals: a warm refill would be due
        assert not acquire.done(), "a kernel started in 0.3 s: the test shows nothing"
        assert [e for e, _ in events] == ["begin"]  # the run's own start, at once
        await pool.start()
        handle = await acquire
        got = time.monotonic()
        begun = [t for e, t in events if e == "begin" and t <= got]
        assert len(begun) == 1, f"pool starts began before the run had its kernel: {events}"
        await wait_filled(pool)  # and the pool fills after it
        await pool.discard(handle)
    finally:
        await pool.stop()


class _Pool:
    """A pool recording when the parts start it."""

    start_delay_s = 0.4

    def __init__(self) -> None:
        self.started_at: float | None = None

    async def start(self) -> None:
        self.started_at = time.monotonic()

    async def stop(self) -> None: ...


class _NoTransport:
    async def aclose(self) -> None: ...


def _parts(tmp_path: Path, pool: _Pool) -> Parts:
    return Parts(
        admin=AdminConfig(tiers={}),
        store=Store(f"sqlite:///{tmp_path / 'agent.sqlite'}"),
        pool=pool,
        transport=_NoTransport(),
        data_dir=tmp_path / "data",
        root_dir=str(tmp_path),
        environ={},
    )


async def test_the_agent_start_does_not_wait_for_the_pool(tmp_path: Path) -> None:
    pool = _Pool()
    parts = _parts(tmp_path, pool)
    try:
        began = time.monotonic()
        await parts.start()  # what every first request awaits
        assert pool.started_at is None
        await asyncio.sleep(pool.start_delay_s + 0.3)
        assert pool.started_at is not None
        assert pool.started_at - began >= pool.start_delay_s
    finally:
        await parts.stop()


async def test_a_stop_before_the_delay_starts_no_pool(tmp_path: Path) -> None:
    pool = _Pool()
    parts = _parts(tmp_path, pool)
    await parts.start()
    await parts.stop()
    await asyncio.sleep(pool.start_delay_s + 0.2)
    assert pool.started_at is None
