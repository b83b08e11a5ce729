"""Every process an agent kernel starts ends with its run, its discard and the server.

Real kernels through jupyter_client (and one real ``jupyter server`` subprocess); the
leftovers are a ``start_new_session`` child, a double-forked daemon and a bash background
job, found afterwards by a scan of ``/proc``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.multikernelmanager import AsyncMultiKernelManager

from jupyter_agent.runtime.kernels import reaper
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from tests.plugins.jupyter_dirs import jupyter_dirs, jupyter_env
from tests.rest_stub import free_port
from tests.runtime.procs import (
    kill_all,
    leaving_bash,
    leaving_cell,
    marker,
    wait_count,
    wait_none,
    with_marker,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def _tagged_sleep(tag: str, mark: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, reaper.TAG_VAR: tag}
    return subprocess.Popen(
        ["sh", "-c", f"sleep {mark} & exec sleep {mark}"], env=env, start_new_session=True
    )


def test_reap_ends_tagged_processes_only():
    mark, other = marker(), marker()
    procs = [_tagged_sleep("k/i/one", mark), _tagged_sleep("k/i/two", other)]
    try:
        assert len(wait_count(mark, 2)) == 2
        ended = reaper.reap(lambda tag: tag == "k/i/one", grace_s=0.5)
        assert len(ended) == 2
        assert wait_none(mark, 2) == []
        assert len(with_marker(other)) == 2  # another tag is left alone
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        kill_all(mark)
        kill_all(other)


def test_instance_ids_survive_pid_reuse():
    me = reaper.instance_id()
    assert reaper.instance_alive(me)
    pid, _, start = me.partition(".")
    assert not reaper.instance_alive(f"{pid}.{int(start) + 1}")  # same pid, another process
    assert not reaper.instance_alive("999999999.1")
    assert not reaper.instance_alive("garbage")


async def _leave_processes(handle, mark: str) -> None:
    result = await handle.run_cell("c1", leaving_cell(mark), timeout_s=30)
    assert [p.text for p in result.prints] == ["started"], result
    bash = await handle.run_bash(leaving_bash(mark), timeout_s=30)
    assert bash.returncode == 0
    assert len(wait_count(mark, 3)) == 3


async def test_discard_ends_every_descendant(kernel_manager: AsyncMultiKernelManager, tmp_path):
    pool = KernelPool(kernel_manager, size=0, root_dir=str(tmp_path))
    handle = await pool.acquire(cwd=str(tmp_path))
    place = pool._places[handle.kernel_id]
    mark = marker()
    try:
        await _leave_processes(handle, mark)
        assert place.kernel_dir.is_dir()
        start = time.monotonic()
        await pool.discard(handle)
        took = time.monotonic() - start
        assert with_marker(mark) == []  # discard returns once they are gone
        assert not place.kernel_dir.exists()
        print(f"discard with 3 leftovers: {took:.3f} s")
    finally:
        kill_all(mark)


async def test_run_end_ends_every_descendant(kernel_manager: AsyncMultiKernelManager, tmp_path):
    pool = KernelPool(kernel_manager, size=0, root_dir=str(tmp_path))
    run_kernel = RunKernel(pool, root_dir=str(tmp_path), cwd=None)
    mark = marker()
    try:
        await _leave_processes(await run_kernel.handle(), mark)
        await run_kernel.release()  # in the background, as at a run's end
        assert await asyncio.to_thread(wait_none, mark, 5.0) == []
    finally:
        await pool.stop()
        kill_all(mark)


async def test_pool_stop_ends_kernels_runs_still_hold(
    kernel_manager: AsyncMultiKernelManager, tmp_path
):
    pool = KernelPool(kernel_manager, size=1, root_dir=str(tmp_path))
    await pool.start()
    held = await pool.acquire(cwd=None)  # never discarded
    mark = marker()
    try:
        await _leave_processes(held, mark)
        await pool.stop()
        assert with_marker(mark) == []
        assert kernel_manager.list_kernel_ids() == []
    finally:
        kill_all(mark)


async def test_start_ends_what_a_crashed_instance_left(
    kernel_manager: AsyncMultiKernelManager, tmp_path
):
    pool = KernelPool(kernel_manager, size=0, root_dir=str(tmp_path))
    key = reaper.server_key(str(tmp_path))
    dead, live = "999999999.1", reaper.instance_id(os.getppid())
    orphan_mark, live_mark, other_mark = marker(), marker(), marker()
    procs = [
        _tagged_sleep(reaper.make_tag(key, dead, "k1"), orphan_mark),
        _tagged_sleep(reaper.make_tag(key, live, "k2"), live_mark),  # a running server's
        _tagged_sleep(reaper.make_tag("otherroot", dead, "k3"), other_mark),
    ]
    stale = pool._base.parent / dead / "k1"
    stale.mkdir(parents=True)
    try:
        for mark in (orphan_mark, live_mark, other_mark):
            assert len(wait_count(mark, 2)) == 2
        await pool.start()
        assert with_marker(orphan_mark) == []
        assert len(with_marker(live_mark)) == 2
        assert len(with_marker(other_mark)) == 2
        assert not stale.parent.exists()
    finally:
        await pool.stop()
        for proc in procs:
            proc.kill()
            proc.wait()
        for mark in (orphan_mark, live_mark, other_mark):
            kill_all(mark)


def _start_server(base: Path) -> tuple[subprocess.Popen[bytes], Path]:
    dirs = jupyter_dirs(base)
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "KernelPool": {"size": 1},
        "JupyterAgent": {"tiers": {"codegen": {"provider": "fake", "model": "m"}}},
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = jupyter_env(dirs)
    argv = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={free_port()}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={dirs['root']}",
        f"--IdentityProvider.token={secrets.token_hex(16)}",
    ]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = (base / "server.log").open("wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    return proc, dirs["data"]


def _ready_pool_client(proc, data: Path, tmp_path: Path) -> BlockingKernelClient:
    """A client of a warm pool kernel that answered ``kernel_info``, from its connection
    file in the kernel's private dir. A pool kernel can die while starting (a port taken
    meanwhile) and is started again with new ports: its old file is then a dead end, so
    the search goes on until one answers."""
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, (tmp_path / "server.log").read_text()
        assert time.monotonic() < deadline, "no pool kernel answered"
        files = list((data / "jupyter_agent" / "kernels").glob("*/*/*/runtime/kernel-*.json"))
        for file in files:
            client = BlockingKernelClient(connection_file=str(file))
            try:
                client.load_connection_file()
                client.start_channels()
                client.wait_for_ready(timeout=30)
                return client
            except (RuntimeError, OSError, ValueError):  # died, gone or half written
                client.stop_channels()
        time.sleep(0.2)


def test_server_stop_leaves_no_process(tmp_path):
    proc, data = _start_server(tmp_path)
    mark = marker()
    try:
        client = _ready_pool_client(proc, data, tmp_path)
        assert not list((tmp_path / "runtime").glob("kernel-*.json"))
        try:
            reply = client.execute_interactive(leaving_cell(mark), timeout=60)
            assert reply["content"]["status"] == "ok"
            client.execute_interactive(
                f"import subprocess; subprocess.run({leaving_bash(mark)!r}, shell=True)",
                timeout=60,
            )
        finally:
            client.stop_channels()
        assert len(wait_count(mark, 3)) == 3
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert wait_none(mark, 5.0) == [], (tmp_path / "server.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(mark)
