"""Agent kernel benchmarks: cell round trip, warm acquire, killed-kernel detection.

Run: ``python bench/bench_kernel.py [N]``. Prints figures measured side by side in one run
(the machines are noisy: compare the ratios).

(a) one cell through :class:`AgentKernelHandle` (capture, structured result) plus a log
    write (one JSON line appended and flushed) vs the same code executed in a plain
    ipykernel (``python3``) with a plain ``AsyncKernelClient``, interleaved; goal <= 1.3x.
(b) acquire() to first cell executed: warm pool vs cold start; goal >= 10x.
(c) killed-kernel detection latency (SIGKILL -> KernelDied); goal < 3 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.multikernelmanager import AsyncMultiKernelManager

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.cli.main import install_kernelspec
from jupyter_agent.exceptions import KernelDied
from jupyter_agent.runtime.kernels.pool import KernelPool
from tests.plugins.kernels import wait_filled

CODE = "x = sum(range(1000))\nprint(x)\nx"


def _ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.2f} ms (p90 {_p90(values) * 1e3:.2f})"


def _p90(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.9) - 1]


async def bench_round_trip(km: AsyncMultiKernelManager, n: int, log_path: str) -> None:
    pool = KernelPool(km, size=0)
    handle = await pool.acquire(cwd=None)
    plain_id = await km.start_kernel(kernel_name="python3")
    kc = km.get_kernel(plain_id).client()
    # shell channel only, like the agent handle (which never subscribes to iopub)
    kc.start_channels(iopub=False, hb=False, control=False)
    reply = await kc.execute("pass", reply=True, timeout=60)  # ready
    agent_t: list[float] = []
    plain_t: list[float] = []
    with open(log_path, "a", encoding="utf-8") as log:
        for i in range(5):  # warm up both
            await handle.run_cell(f"w{i}", CODE, timeout_s=30)
            await kc.execute(CODE, reply=True, timeout=30)
        for i in range(n):
            t0 = time.perf_counter()
            result = await handle.run_cell(f"c{i + 1}", CODE, timeout_s=30)
            log.write(json.dumps({"seq": i, "phase": "result", "data": result.to_json()}) + "\n")
            log.flush()
            t1 = time.perf_counter()
            reply = await kc.execute(CODE, reply=True, timeout=30)
            t2 = time.perf_counter()
            assert result.error is None
            assert reply["content"]["status"] == "ok"
            agent_t.append(t1 - t0)
            plain_t.append(t2 - t1)
    kc.stop_channels()
    await km.shutdown_kernel(plain_id, now=True)
    await pool.discard(handle)
    ratio = statistics.median(agent_t) / statistics.median(plain_t)
    print(f"(a) cell round trip, N={n}")
    print(f"    agent handle + capture + log write: {_ms(agent_t)}")
    print(f"    plain ipykernel + AsyncKernelClient (shell only): {_ms(plain_t)}")
    print(f"    ratio of medians: {ratio:.2f}x (goal <= 1.3x)")


async def bench_acquire(km: AsyncMultiKernelManager, rounds: int) -> None:
    warm_t: list[float] = []
    cold_t: list[float] = []
    warm_pool = KernelPool(km, size=1)
    cold_pool = KernelPool(km, size=0)
    await warm_pool.start()
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(rounds):
            await wait_filled(warm_pool)
            t0 = time.perf_counter()
            handle = await warm_pool.acquire(cwd=cwd)
            await handle.run_cell("c1", "1", timeout_s=30)
            warm_t.append(time.perf_counter() - t0)
            await warm_pool.discard(handle)
            t0 = time.perf_counter()
            handle = await cold_pool.acquire(cwd=cwd)
            await handle.run_cell("c1", "1", timeout_s=30)
            cold_t.append(time.perf_counter() - t0)
            await cold_pool.discard(handle)
    await warm_pool.stop()
    ratio = statistics.median(cold_t) / statistics.median(warm_t)
    print(f"(b) acquire() to first cell executed, {rounds} rounds")
    print(f"    warm pool: {_ms(warm_t)}")
    print(f"    cold start: {_ms(cold_t)}")
    print(f"    cold / warm: {ratio:.1f}x (goal >= 10x)")


async def bench_death(km: AsyncMultiKernelManager, rounds: int) -> None:
    latencies: list[float] = []
    pool = KernelPool(km, size=0)
    for _ in range(rounds):
        handle = await pool.acquire(cwd=None)
        pid = int(
            (await handle.run_cell("c1", "import os; print(os.getpid())", timeout_s=30))
            .prints[0]
            .text
        )
        task = asyncio.create_task(
            handle.run_cell("c2", "import time; time.sleep(60)", timeout_s=60)
        )
        await asyncio.sleep(0.2)
        t0 = time.perf_counter()
        os.kill(pid, signal.SIGKILL)
        try:
            await task
        except KernelDied:
            latencies.append(time.perf_counter() - t0)
        await pool.discard(handle)
    print(
        f"(c) killed-kernel detection, {rounds} rounds: {_ms(latencies)}; "
        f"max {max(latencies) * 1e3:.0f} ms (goal < 3 s)"
    )


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUPYTER_DATA_DIR"] = os.path.join(tmp, "data")
        install_kernelspec(user=True)
        km = AsyncMultiKernelManager()
        try:
            await bench_round_trip(km, n, os.path.join(tmp, "log.jsonl"))
            await bench_acquire(km, 7)
            await bench_death(km, 3)
        finally:
            await km.shutdown_all(now=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
