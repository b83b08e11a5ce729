"""The kernel pool and handle with real kernels: warm acquire, cwd, env, death, timeouts."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

from jupyter_agent.exceptions import KernelDied
from jupyter_agent.runtime.kernels.pool import AgentKernelHandle, KernelPool
from tests.plugins.kernels import wait_filled, warm_count

CANARIES = {
    "MY_API_KEY": "canary-api-key-7f3a",
    "SOME_TOKEN": "canary-token-7f3a",
    "X_SECRET": "canary-secret-7f3a",
    "DB_PASSWORD": "canary-password-7f3a",
    "A_CREDENTIAL": "canary-credential-7f3a",
    "JUPYTER_TOKEN": "canary-jupyter-7f3a",
    "SSH_AUTH_SOCK": "/nonexistent/canary.sock",
    "AWS_REGION": "canary-region-7f3a",
    "AZURE_X": "canary-azure-7f3a",
    "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/canary.json",
    "DATABASE_URL": "postgres://u:canary7f3a@h/db",
}


async def _kernel_pid(handle: AgentKernelHandle) -> int:
    result = await handle.run_cell("pid", "import os\nprint(os.getpid())", timeout_s=30)
    return int(result.prints[0].text)


async def test_warm_acquire_is_fast_and_the_pool_refills(kernel_pool: KernelPool, tmp_path):
    await wait_filled(kernel_pool)
    start = time.monotonic()
    handle = await kernel_pool.acquire(cwd=str(tmp_path))
    warm_s = time.monotonic() - start
    try:
        assert warm_count(kernel_pool) == 0
        result = await handle.run_cell("c1", "import os\nprint(os.getcwd())", timeout_s=30)
        assert [p.text for p in result.prints] == [str(tmp_path)]
        await wait_filled(kernel_pool)
        assert warm_count(kernel_pool) == 1
        second = await kernel_pool.acquire(cwd=None)
        assert second.kernel_id != handle.kernel_id
        await kernel_pool.discard(second)
    finally:
        await kernel_pool.discard(handle)
    # one chdir round trip, not a kernel start (wide bound: a refill may load the machine)
    assert warm_s < 10.0


async def test_size_zero_is_a_cold_start(kernel_manager: AsyncMultiKernelManager, tmp_path):
    pool = KernelPool(kernel_manager, size=0)
    await pool.start()
    try:
        handle = await pool.acquire(cwd=str(tmp_path))
        result = await handle.run_cell("c1", "1 + 1", timeout_s=30)
        assert result.last is not None
        assert result.last.repr.text == "2"
        assert warm_count(pool) == 0
        await pool.discard(handle)
        assert handle.kernel_id not in kernel_manager.list_kernel_ids()
    finally:
        await pool.stop()


async def test_a_kernel_dying_while_starting_is_started_again(
    kernel_manager: AsyncMultiKernelManager, tmp_path
):
    """As when another process takes one of its ports between pick and bind: the kernel
    exits before it answers, and the run gets a fresh one, not ``KernelDied``."""
    real_start = kernel_manager.start_kernel
    died: list[str] = []

    async def start_then_kill_first(**kwargs):
        kernel_id = await real_start(**kwargs)
        if not died:
            died.append(kernel_id)
            kernel_manager.get_kernel(kernel_id).provisioner.process.kill()
        return kernel_id

    kernel_manager.start_kernel = start_then_kill_first  # type: ignore[method-assign]
    pool = KernelPool(kernel_manager, size=0)
    await pool.start()
    try:
        handle = await pool.acquire(cwd=str(tmp_path))
        result = await handle.run_cell("c1", "1 + 1", timeout_s=30)
        assert result.last is not None
        assert result.last.repr.text == "2"
        assert died
        assert handle.kernel_id != died[0]
        assert died[0] not in kernel_manager.list_kernel_ids()
        await pool.discard(handle)
    finally:
        await pool.stop()


@pytest.mark.parametrize("manager", ["jupyter_client", "jupyter_server"])
async def test_kernel_env_is_filtered(monkeypatch, agent_kernelspec, tmp_path: Path, manager: str):
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KEEP_ME_TOKEN", "kept-7f3a")
    km = (
        AsyncMultiKernelManager()
        if manager == "jupyter_client"
        else AsyncMappingKernelManager(root_dir=str(tmp_path))
    )
    pool = KernelPool(km, size=0, env_keep=["KEEP_ME_TOKEN"])
    handle = await pool.acquire(cwd=str(tmp_path))
    try:
        code = (
            "import os\n"
            f"print(sorted(n for n in {sorted(CANARIES)!r} if n in os.environ))\n"
            "print(os.environ.get('KEEP_ME_TOKEN'))\n"
            "print(any('7f3a' in v and 'kept' not in v for v in os.environ.values()))"
        )
        result = await handle.run_cell("c1", code, timeout_s=30)
        assert [p.text for p in result.prints] == ["[]", "kept-7f3a", "False"]
    finally:
        await pool.discard(handle)
        await km.shutdown_all(now=True)


async def test_killed_kernel_is_reported_as_died(agent_kernel: AgentKernelHandle):
    pid = await _kernel_pid(agent_kernel)
    task = asyncio.create_task(
        agent_kernel.run_cell("c2", "import time\ntime.sleep(60)", timeout_s=60)
    )
    await asyncio.sleep(0.3)
    start = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(KernelDied):
        await task
    assert time.monotonic() - start < 10
    assert not await agent_kernel.is_alive()
    with pytest.raises(KernelDied):
        await agent_kernel.run_cell("c3", "1", timeout_s=30)


async def test_runaway_cell_is_interrupted_and_the_namespace_kept(agent_kernel: AgentKernelHandle):
    await agent_kernel.run_cell("c1", "kept = 41", timeout_s=30)
    start = time.monotonic()
    result = await agent_kernel.run_cell("c2", 'print("spinning")\nwhile True: pass', timeout_s=2)
    assert time.monotonic() - start < 10
    assert result.error is not None
    assert result.error.ename == "CellTimeout"
    assert "namespace is kept" in result.error.evalue
    assert [p.text for p in result.prints] == ["spinning"]
    after = await agent_kernel.run_cell("c3", "kept + 1", timeout_s=30)
    assert after.error is None
    assert after.last is not None
    assert after.last.repr.text == "42"


async def test_cell_ignoring_interrupt_restarts_the_kernel(
    agent_kernel: AgentKernelHandle, tmp_path: Path
):
    await agent_kernel.run_cell("c1", "kept = 41", timeout_s=30)
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"
    result = await agent_kernel.run_cell("c2", code, timeout_s=1)
    assert result.error is not None
    assert result.error.ename == "CellTimeout"
    assert "namespace is lost" in result.error.evalue
    after = await agent_kernel.run_cell(
        "c3", "import os\nprint('kept' in dir(), os.getcwd())", timeout_s=30
    )
    assert [p.text for p in after.prints] == [f"False {tmp_path}"]


async def test_dead_pool_kernel_is_replaced(kernel_manager: AsyncMultiKernelManager):
    pool = KernelPool(kernel_manager, size=1, liveness_interval_s=0.1)
    await pool.start()
    try:
        await wait_filled(pool)
        (first,) = pool._warm
        await kernel_manager.shutdown_kernel(first.kernel_id, now=True)  # as a culler would
        deadline = time.monotonic() + 30
        while not (warm_count(pool) == 1 and pool._warm[0].kernel_id != first.kernel_id):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
    finally:
        await pool.stop()
    assert kernel_manager.list_kernel_ids() == []


async def test_pool_kernels_keep_last_activity_fresh(agent_kernelspec, tmp_path: Path):
    km = AsyncMappingKernelManager(root_dir=str(tmp_path))
    pool = KernelPool(km, size=1, liveness_interval_s=0.05)
    await pool.start()
    try:
        await wait_filled(pool)
        kernel = km.get_kernel(pool._warm[0].kernel_id)
        old = datetime.now(timezone.utc) - timedelta(hours=1)
        kernel.last_activity = old
        deadline = time.monotonic() + 10
        while kernel.last_activity == old:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        assert kernel.last_activity > old + timedelta(minutes=59)
    finally:
        await pool.stop()
        await km.shutdown_all(now=True)


async def test_chdir_to_missing_folder_fails_clearly(agent_kernel: AgentKernelHandle, tmp_path):
    from jupyter_agent.exceptions import KernelError

    with pytest.raises(KernelError, match="FileNotFoundError"):
        await agent_kernel.chdir(str(tmp_path / "missing"))


async def test_app_call_in_the_first_cell_after_connect(kernel_manager: AsyncMultiKernelManager):
    # the kernel's stdin ROUTER may not know a just-connected client yet: the request
    # must be retried, not dropped (which would hang the cell until its timeout)
    from tests.plugins.kernels import RecordingHost

    pool = KernelPool(kernel_manager, size=0)
    for _ in range(3):
        handle = await pool.acquire(cwd=None)
        try:
            result = await handle.run_cell(
                "c1", 'print(chat.post("x"))', timeout_s=10, host=RecordingHost()
            )
            assert [p.text for p in result.prints] == ["chat.post#101"], result
        finally:
            await pool.discard(handle)


async def test_a_kernel_reports_its_folder_so_acquire_can_skip_the_chdir(
    kernel_manager: AsyncMultiKernelManager, tmp_path
):
    pool = KernelPool(kernel_manager, size=0)
    handle = await pool.acquire(cwd=None)
    try:
        started_in = handle.cwd
        assert started_in == os.getcwd()  # reported in kernel_info, no execute needed
        result = await handle.run_cell("c1", "import os\nprint(os.getcwd())", timeout_s=30)
        assert [p.text for p in result.prints] == [started_in]
        await handle.chdir(str(tmp_path))
        assert handle.cwd == str(tmp_path)
    finally:
        await pool.discard(handle)


async def test_the_warm_up_leaves_no_trace_and_the_first_cell_is_warm(
    agent_kernel: AgentKernelHandle,
):
    """connect() ran an empty agent cell: no execution count, history or values left."""
    # (the shell's own count, read inside a cell, is the next one under IPython 9 and the
    # current one under 8: the reply's count is the one that means the same in both)
    code = "print(len(get_ipython().history_manager.input_hist_raw), values.cells())"
    result = await agent_kernel.run_cell("c1", code, timeout_s=30)
    assert [p.text for p in result.prints] == ["2 []"]
    assert result.execution_count == 1
    second = await agent_kernel.run_cell("c2", "pass", timeout_s=30)
    assert second.execution_count == 2
