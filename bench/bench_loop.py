"""Loop + driver overhead per model call and per cell, and replay cost (issue 5).

Runs real turns (fake model on loopback, real agent kernels from a warm pool, SQLite store)
and splits each run's wall time into: time inside model calls (Transport.post), time inside
cells (the kernel handle's run_cell), and the rest: the loop, the driver, the effect log,
digests and persistence. Then replays each run's log (no model, no kernel) and prints the
replay time as a fraction of the run's wall time (goal: at most 2%).

    python bench/bench_loop.py [--turns 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCRIPT_STEP = [
    {"text": "Computing.", "cells": ["x = sum(range(1000))\nprint(x)"]},
    {"text": "The sum is 499500."},
]


class TimedTransport:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spent = 0.0
        self.calls = 0

    async def post(self, spec: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await self.inner.post(spec, **kw)
        finally:
            self.spent += time.perf_counter() - t0
            self.calls += 1

    async def aclose(self) -> None:
        await self.inner.aclose()


class TimedHandle:
    def __init__(self, inner: Any, meter: dict[str, float]) -> None:
        self._inner = inner
        self._meter = meter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def run_cell(self, *args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return await self._inner.run_cell(*args, **kw)
        finally:
            self._meter["cells"] += time.perf_counter() - t0
            self._meter["n"] += 1


class TimedPool:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.meter = {"cells": 0.0, "n": 0.0}

    async def acquire(self, *, cwd: str | None) -> Any:
        t0 = time.perf_counter()
        handle = TimedHandle(await self.inner.acquire(cwd=cwd), self.meter)
        self.meter["acquire"] = self.meter.get("acquire", 0.0) + time.perf_counter() - t0
        return handle

    async def discard(self, handle: Any) -> None:
        await self.inner.discard(handle._inner)

    def discard_soon(self, handle: Any) -> None:
        self.inner.discard_soon(handle._inner)

    async def stop(self) -> None:
        await self.inner.stop()


async def main(turns: int) -> None:
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.cli.main import install_kernelspec
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.trace.log import read_log
    from jupyter_agent.trace.verify import replay_run
    from tests.plugins.kernels import wait_filled
    from tests.runtime.harness import close_harness, make_harness

    tmp = Path(tempfile.mkdtemp(prefix="bench-loop-"))
    os.environ["JUPYTER_DATA_DIR"] = str(tmp / "jdata")
    install_kernelspec(user=True)
    km = AsyncMultiKernelManager()
    fake = FakeProvider({"steps": SCRIPT_STEP, "repeat": True}).start()
    harness = await make_harness(tmp, fake, km)
    services = harness.manager.services
    transport = TimedTransport(services.transport)
    pool = TimedPool(services.pool)
    services.transport, services.pool = transport, pool
    await wait_filled(pool.inner)
    chat = harness.new_chat()
    await harness.ask(chat, "warm up")

    walls, overhead_call, overhead_cell, replay_fraction = [], [], [], []
    cpu: list[float] = []
    for i in range(turns):
        await wait_filled(pool.inner)
        model0, calls0 = transport.spent, transport.calls
        cells0, n0 = pool.meter["cells"], pool.meter["n"]
        t0, c0 = time.perf_counter(), time.process_time()
        turn = await harness.ask(harness.new_chat(), f"sum {i}")
        wall = time.perf_counter() - t0
        cpu.append(time.process_time() - c0)
        model = transport.spent - model0
        cells = pool.meter["cells"] - cells0
        n_calls = transport.calls - calls0
        n_cells = int(pool.meter["n"] - n0)
        rest = wall - model - cells
        walls.append(wall)
        overhead_call.append(rest / max(n_calls, 1))
        overhead_cell.append(rest / max(n_calls + n_cells, 1))
        trace = read_log(harness.manager.log_path(turn.run_id))
        r0 = time.perf_counter()
        replay_run(trace)
        replay_fraction.append((time.perf_counter() - r0) / wall)

    # hard-break latency: request -> run ended and its turn written
    model_breaks, cell_breaks = [], []
    for script, sink in (
        ([{"delay_s": 30, "text": "late"}], model_breaks),
        ([{"cells": ["import time\nwhile True: time.sleep(0.05)"]}], cell_breaks),
    ):
        for _ in range(5):
            await wait_filled(pool.inner)
            fake.load(script)
            chat_id = harness.new_chat()
            run = await harness.manager.send(chat_id, text="slow")
            if sink is cell_breaks:
                await harness.wait_event(chat_id, "cell_start")
                await asyncio.sleep(0.2)
            else:
                await harness.wait_requests(len(fake.requests) + 1)
            t0 = time.perf_counter()
            await harness.manager.break_run(run["run_id"], hard=True)
            await harness.finish(run["run_id"])
            sink.append(time.perf_counter() - t0)

    await close_harness(harness)
    fake.stop()
    await km.shutdown_all(now=True)

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1000:7.2f} ms"

    print(
        f"kernel acquire (warm, overlaps the first model call) "
        f"{pool.meter.get('acquire', 0) / (turns + 1) * 1000:.2f} ms per run"
    )
    print(f"turns: {turns} (each: 2 model calls, 1 cell; fake model at loopback; warm pool)")
    print(f"run wall time, median          {ms(walls)}")
    print(f"server-process CPU per run     {ms(cpu)}  (includes the fake's threads)")
    print(f"loop+driver overhead per run   {ms([o * 2 for o in overhead_call])}")
    print(f"  per model call (rest / calls) {ms(overhead_call)}")
    print(f"  per effectful step (calls+cells) {ms(overhead_cell)}")
    frac = statistics.median(replay_fraction)
    print(f"replay time / run wall time    {frac * 100:6.2f} %  (goal <= 2%)")
    print(f"hard break during a 30 s model call -> turn written {ms(model_breaks)}  (goal < 1 s)")
    print(f"hard break during a long cell -> turn written      {ms(cell_breaks)}  (goal < 1 s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument(
        "--no-fsync", action="store_true", help="make fsync/fdatasync no-ops (to see what it costs)"
    )
    args = parser.parse_args()
    if args.no_fsync:
        os.fsync = os.fdatasync = lambda fd: None
    asyncio.run(main(args.turns))
