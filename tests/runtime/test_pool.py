"""The pool under demand, with real kernels: a kernel only when a cell runs, never shared,
a burst grows the pool up to ``pool_max`` and idleness shrinks it, a waiting run takes the
first kernel that becomes ready, and a ``pool_max`` below ``size`` is refused."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from traitlets import TraitError

from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.kernels.starts import start_slots
from tests.plugins.kernels import wait_filled, warm_count
from tests.rest_stub import free_port
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(180)

# The kernel's id, from its connection file's name (``kernel-<id>.json``)
KERNEL_ID_CELL = (
    "import os, time\nfrom ipykernel.connect import get_connection_file\n"
    "print(os.path.basename(get_connection_file())[len('kernel-'):-len('.json')])\n"
    "time.sleep(1.5)"
)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


async def wait_until(check: Any, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def cell_prints(agent: Harness, run_id: str) -> list[str]:
    """The first print of each cell the run's effect log recorded."""
    lines = agent.trace(run_id).lines
    return [
        str(line.data["prints"][0]["text"])
        for line in lines
        if line.phase == "result" and line.name == "cell.run"
    ]


async def test_a_chat_only_turn_starts_no_kernel(
    agent: Harness, kernel_manager: AsyncMultiKernelManager
) -> None:
    pool = agent.manager.services.pool
    await wait_filled(pool)
    before = set(kernel_manager.list_kernel_ids())
    (warm,) = pool._warm
    agent.fake.load([{"text": "Just words, no code."}])
    turn = await agent.ask(agent.new_chat(), "hello")
    assert final_text(turn) == "Just words, no code."
    assert turn.llm is not None
    assert turn.llm.cells == 0
    await asyncio.sleep(2 * pool.liveness_interval_s + 0.5)  # a refill would have begun
    # The warm kernel was not taken (a run holding it discards it at its end and the pool
    # starts another), and no kernel was started for the run.
    assert pool._warm == [warm]
    assert set(kernel_manager.list_kernel_ids()) == before
    assert not pool._starting


async def test_two_concurrent_runs_never_share_a_kernel(
    agent: Harness, kernel_manager: AsyncMultiKernelManager
) -> None:
    pool = agent.manager.services.pool
    await wait_filled(pool)
    agent.fake.load({"steps": [{"cells": [KERNEL_ID_CELL]}, {"text": "ok"}], "per_turn": True})
    chats = [agent.new_chat(f"c{i}") for i in range(3)]
    turns = await asyncio.gather(*(agent.ask(chat, "which kernel?") for chat in chats))
    assert [final_text(t) for t in turns] == ["ok"] * 3
    kernels = [cell_prints(agent, t.run_id) for t in turns]
    assert all(len(k) == 1 for k in kernels), kernels
    ids = [str(uuid.UUID(k[0])) for k in kernels]
    assert len(set(ids)) == 3, ids  # one kernel per run, none shared
    # Each is discarded at its run's end (in the background): gone from the manager.
    await wait_until(
        lambda: not set(ids) & set(kernel_manager.list_kernel_ids()),
        f"a run's kernel outlived its run: {ids}",
    )
    assert not {h.kernel_id for h in pool._warm} & set(ids)


async def test_a_burst_grows_the_pool_to_pool_max_and_idleness_shrinks_it(
    kernel_manager: AsyncMultiKernelManager,
) -> None:
    pool = KernelPool(kernel_manager, size=1, pool_max=3, pool_idle_s=10.0, liveness_interval_s=0.1)
    await pool.start()
    try:
        await wait_filled(pool)
        assert pool.warm_target == 1
        handles = await asyncio.gather(*(pool.acquire(cwd=None) for _ in range(4)))
        assert len({h.kernel_id for h in handles}) == 4
        for handle in handles:
            await pool.discard(handle)
        # Three acquires found the pool empty: it keeps three warm now (not four: pool_max).
        assert pool.warm_target == 3
        await wait_until(lambda: warm_count(pool) == 3, "the pool did not grow to pool_max")
        await asyncio.sleep(0.5)
        assert warm_count(pool) == 3
        assert len(kernel_manager.list_kernel_ids()) == 3
        # The next acquires are warm ones: no wait, no further growth.
        again = await asyncio.gather(*(pool.acquire(cwd=None) for _ in range(3)))
        assert pool.warm_target == 3
        for handle in again:
            await pool.discard(handle)
        await wait_until(lambda: warm_count(pool) == 3, "the pool did not refill")
        # pool_idle_s without an acquire: back to size, the extra kernels shut down.
        await wait_until(lambda: pool.warm_target == 1, "the pool did not shrink", 20)
        await wait_until(
            lambda: warm_count(pool) == 1 and len(kernel_manager.list_kernel_ids()) == 1,
            "the extra warm kernels were not shut down",
            30,
        )
    finally:
        await pool.stop()
    assert kernel_manager.list_kernel_ids() == []


@pytest.mark.skipif(start_slots() < 2, reason="needs two kernel starts at once")
async def test_a_waiting_acquire_takes_the_first_kernel_ready(
    kernel_manager: AsyncMultiKernelManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first acquire's start is slow; the second's finishes first and goes to the
    first acquire (the oldest waiter), not to the one that launched it."""
    real_start = kernel_manager.start_kernel
    started: list[str] = []

    async def start_kernel(**kwargs: Any) -> str:
        if not started:
            started.append("slow")
            await asyncio.sleep(8)
        kernel_id = str(await real_start(**kwargs))
        started.append(kernel_id)
        return kernel_id

    monkeypatch.setattr(kernel_manager, "start_kernel", start_kernel)
    pool = KernelPool(kernel_manager, size=0)
    try:
        first = asyncio.create_task(pool.acquire(cwd=None))
        await asyncio.sleep(0.2)
        second = asyncio.create_task(pool.acquire(cwd=None))
        done, _ = await asyncio.wait([first, second], return_when=asyncio.FIRST_COMPLETED)
        assert done == {first}
        assert first.result().kernel_id == started[1]  # the fast start's kernel
        assert not second.done()
        assert (await second).kernel_id == started[2]
    finally:
        for task in (first, second):
            if task.done() and not task.exception():
                await pool.discard(task.result())
        await pool.stop()
    assert kernel_manager.list_kernel_ids() == []


async def test_a_runs_end_reaches_its_readers_before_its_kernel_shuts_down(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run releases its kernel, then publishes run_end: a reader woken by that event (the
    # events socket) runs before the kernel's shutdown does its synchronous part.
    pool = agent.manager.services.pool
    await wait_filled(pool)
    chat = agent.new_chat()
    read: list[str] = []
    read_at_shutdown: list[list[str]] = []
    real = pool._starts.shutdown

    async def shutdown(handle: Any) -> None:
        read_at_shutdown.append(list(read))
        await real(handle)

    monkeypatch.setattr(pool._starts, "shutdown", shutdown)
    with agent.events.subscribe(chat) as queue:

        async def reader() -> None:
            while True:
                read.append((await queue.get())["type"])

        task = asyncio.create_task(reader())
        try:
            agent.fake.load([{"text": "Running it.", "cells": ["print(1)"]}, {"text": "Done."}])
            await agent.ask(chat, "go")
            await wait_until(lambda: read_at_shutdown, "the run's kernel shut down")
        finally:
            task.cancel()
    assert read_at_shutdown[0][-1] == "run_end"


def test_pool_max_defaults_and_refusal() -> None:
    assert KernelPool(None, size=2).pool_max == 4
    assert KernelPool(None, size=6).pool_max == 6
    assert KernelPool(None, size=0).pool_max == 0  # no warm pool: no growth either
    assert KernelPool(None, size=0, pool_max=3).pool_max == 3
    with pytest.raises(TraitError, match=r"pool_max \(2\) is below KernelPool.size \(3\)"):
        KernelPool(None, size=3, pool_max=2)


def test_server_refuses_to_start_with_pool_max_below_size(tmp_path: Path) -> None:
    dirs = {name: tmp_path / name for name in ("config", "data", "runtime", "root")}
    for folder in dirs.values():
        folder.mkdir()
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "KernelPool": {"size": 3, "pool_max": 2},
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
    }
    argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1"]
    argv += [f"--ServerApp.port={free_port()}", f"--ServerApp.root_dir={dirs['root']}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "KernelPool.pool_max (2) is below KernelPool.size (3)" in done.stderr
    assert "Traceback" not in done.stderr
