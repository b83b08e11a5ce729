"""Cell round trip through a kernel gateway vs a local agent kernel, side by side.

Run: ``python bench/bench_gateway.py [N]``. Starts a real ``jupyter kernelgateway`` on
loopback (``tests/deploy/gateway.py``: its own dirs, the agent kernelspec installed there),
takes one agent kernel through jupyter_server's ``GatewayMappingKernelManager`` (what
``--gateway-url`` configures) and one local agent kernel (jupyter_client's manager), and
runs the same cell N times on each, interleaved, through :class:`AgentKernelHandle`. Prints
both medians (p90) and the ratio gateway / local; then a cell with one in-cell app call
(a stdin round trip) the same way. Stops everything it started.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayMappingKernelManager

from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.server.gateway_channels import gateway_kernels
from tests.deploy.gateway import Gateway

CODE = "x = sum(range(1000))\nprint(x)\nx"
APP_CODE = "print(len(memory.list()))"


class _Host:
    """Answers every app call at once (the round trip, not the app, is measured)."""

    async def call(
        self, app: str, method: str, args: dict[str, Any], *, parent: int | None
    ) -> dict[str, Any]:
        return {"ok": True, "value": [], "error": None, "seq": 1, "mutation": False}


def _fmt(values: list[float]) -> str:
    p90 = sorted(values)[max(0, int(len(values) * 0.9) - 1)]
    return f"median {statistics.median(values) * 1e3:.2f} ms (p90 {p90 * 1e3:.2f})"


async def _side_by_side(local: Any, remote: Any, code: str, n: int) -> None:
    host = _Host()
    times: dict[str, list[float]] = {"local": [], "gateway": []}
    for i in range(n + 5):
        for name, handle in (("local", local), ("gateway", remote)):
            t0 = time.perf_counter()
            result = await handle.run_cell(f"c{i}", code, timeout_s=30, host=host)
            took = time.perf_counter() - t0
            assert result.error is None, result
            if i >= 5:  # the first five warm both up
                times[name].append(took)
    for name, values in times.items():
        print(f"  {name:8s} {_fmt(values)}")
    ratio = statistics.median(times["gateway"]) / statistics.median(times["local"])
    print(f"  ratio gateway/local: {ratio:.2f}x")


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gateway = Gateway(Path(tmp) / "gateway")
        gateway.base.mkdir(parents=True, exist_ok=True)
        gateway.start()
        local_km = AsyncMultiKernelManager()
        GatewayClient.instance(url=gateway.url, auth_token=gateway.token)
        remote_km = GatewayMappingKernelManager()
        local_pool = KernelPool(local_km, size=0, root_dir=tmp)
        remote_pool = KernelPool(
            remote_km,
            size=0,
            root_dir=tmp,
            kernel_name=gateway.kernel_name,
            remote=gateway_kernels(remote_km),
        )
        try:
            for pool in (local_pool, remote_pool):
                await asyncio.to_thread(pool.check)
                await pool.start()
            local = await local_pool.acquire(cwd=None)
            remote = await remote_pool.acquire(cwd=None)
            print(f"(a) one cell, {n} runs each, interleaved:")
            await _side_by_side(local, remote, CODE, n)
            print(f"(b) one cell with one in-cell app call (stdin round trip), {n} runs each:")
            await _side_by_side(local, remote, APP_CODE, n)
        finally:
            await local_pool.stop()
            await remote_pool.stop()
            gateway.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
