"""A burst of messages to many chats at once, through a real ``jupyter server`` subprocess.

Run: ``python bench/bench_pool_burst.py [N]`` (default N=8 chats). Each message runs one
cell (fake model on loopback); a reply's latency is from its POST to its ``run_end`` event.
Two servers side by side in one run, both ``KernelPool.size = 2``:

- before: ``pool_max = 2`` (the pool never grows: the runs beyond the warm ones wait for
  kernel starts);
- after: ``pool_max = N`` (runs finding the pool empty grow it; it stays grown until
  ``pool_idle_s`` pass without a run).

For each: a single reply (median of 5, warm pool), then a first burst (the pool at rest,
``size`` warm) and a second burst (once the pool refilled to its target), each reply's
latency and the slowest / single ratio. Goal: the second burst's ratio <= 2x with growth.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import ONE_CELL, Server, _until

from jupyter_agent.llm.fake.server import FakeProvider

SIZE = 2


def _kernels(client: httpx.Client) -> int:
    # The agent's kernels are in no Jupyter listing: its status counts them.
    kernels = client.get("agent/status").json()["kernels"]
    return int(kernels["warm"] + kernels["starting"] + kernels["in_use"])


def _settle(client: httpx.Client, count: int, timeout_s: float = 120) -> float:
    """Wait until the server holds ``count`` kernels (the warm pool, no run): seconds."""
    start = time.monotonic()
    stable = 0
    while stable < 5:
        if time.monotonic() - start > timeout_s:
            raise RuntimeError(f"the server holds {_kernels(client)} kernels, not {count}")
        stable = stable + 1 if _kernels(client) == count else 0
        time.sleep(0.1)
    return time.monotonic() - start


def _reply(server: Server, client: httpx.Client, chat_id: str, go: threading.Barrier) -> float:
    ws = server.events(chat_id)
    try:
        go.wait()
        start = time.perf_counter()
        answer = client.post(f"agent/chats/{chat_id}/messages", json={"text": "go"})
        _until(ws, "run_end", answer.json()["run_id"])
        return time.perf_counter() - start
    finally:
        ws.close()


def _burst(server: Server, client: httpx.Client, n: int) -> list[float]:
    chats = [client.post("agent/chats", json={"title": f"b{i}"}).json()["id"] for i in range(n)]
    go = threading.Barrier(n)
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda chat: _reply(server, client, chat, go), chats))


def _fmt(values: list[float]) -> str:
    return ", ".join(f"{v * 1e3:.0f}" for v in values) + " ms"


def _measure(base: Path, tier: dict[str, Any], pool_max: int, n: int) -> dict[str, Any]:
    server = Server(base, {"tiers": {"codegen": tier}})
    config_file = base / "config" / "jupyter_server_config.json"
    config = json.loads(config_file.read_text())
    config["KernelPool"] = {"size": SIZE, "pool_max": pool_max}
    config_file.write_text(json.dumps(config))
    server.start()
    try:
        with server.client() as client:
            server.wait_ready(client)
            _settle(client, SIZE)
            singles = []
            for _ in range(5):
                singles.append(_burst(server, client, 1)[0])
                _settle(client, SIZE)
            single = statistics.median(singles)
            first = _burst(server, client, n)
            grown = min(pool_max, max(SIZE, n))  # each run that waited grew the target
            refill_s = _settle(client, grown)
            second = _burst(server, client, n)
            return {
                "single": single,
                "first": first,
                "second": second,
                "grown": grown,
                "refill_s": refill_s,
            }
    finally:
        server.stop()


def main(n: int = 8) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-pool-burst-"))
    fake = FakeProvider({"steps": ONE_CELL, "per_turn": True}).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    try:
        figures = {
            label: _measure(base / label, tier, pool_max, n)
            for label, pool_max in (("before", SIZE), ("after", n))
        }
    finally:
        fake.stop()
    print(f"burst of {n} messages to {n} chats, one cell each; KernelPool.size = {SIZE}")
    for label, f in figures.items():
        pool_max = SIZE if label == "before" else n
        print(f"{label} (pool_max = {pool_max}): single reply {f['single'] * 1e3:.0f} ms")
        for name in ("first", "second"):
            values = f[name]
            ratio = max(values) / f["single"]
            print(f"  {name} burst: {_fmt(values)}; slowest {max(values) * 1e3:.0f} ms = "
                  f"{ratio:.1f}x single")  # fmt: skip
        print(f"  (between bursts the pool refilled to {f['grown']} warm in {f['refill_s']:.1f} s)")
    print("goal: second burst slowest <= 2x single with pool_max = N")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
