"""32 runs at once on one real ``jupyter server`` with PostgreSQL: wall time, runs/s, and
the cheap route's latency idle vs loaded.

Run: ``python bench/bench_load.py [--runs 32] [--pool 4] [--pool-max 8] [--idle-s 4]
[--durable]``. A throwaway PostgreSQL cluster (``tests/plugins/postgres.py``; ``--durable``:
with fsync) and one ``jupyter server`` subprocess on it (``tests/faults/server.py``), the
fake model on loopback asking for one cell per run. ``GET agent/status`` is polled every
20 ms from a thread all along: first with the server idle (the warm pool full), then from
the moment N chats send one message each at once (a barrier across N threads; each waits
for its ``run_end`` on its events socket) to the last ``run_end``. Printed: wall time,
runs/s, p50/p99/max of the status polls idle and loaded and their ratios, and whether
every turn was written exactly once (counted in the database). Machines are noisy:
compare the ratios, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jupyter_agent.llm.fake.server import FakeProvider
from tests.deploy.load import ONE_CELL, StatusPoller, burst, pct, settle_pool, stored_turns
from tests.faults.server import FaultServer
from tests.plugins.postgres import create_database, start_cluster


def _ms(value: float) -> str:
    return f"{value * 1e3:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=32, help="chats sending at once")
    parser.add_argument("--pool", type=int, default=4, help="KernelPool.size (warm kernels)")
    parser.add_argument("--pool-max", type=int, default=8, help="KernelPool.pool_max")
    parser.add_argument("--idle-s", type=float, default=4.0, help="seconds of idle polling")
    parser.add_argument("--durable", action="store_true", help="PostgreSQL with fsync on")
    args = parser.parse_args()

    cluster = start_cluster(durable=args.durable)
    fake = FakeProvider(ONE_CELL).start()
    base = Path(tempfile.mkdtemp(prefix="bench-load-"))
    try:
        db_url = create_database(cluster.url)
        server = FaultServer(
            base,
            fake,
            {"db_url": db_url},
            config={"KernelPool": {"size": args.pool, "pool_max": args.pool_max}},
        )
        server.start()
        try:
            with server.client() as client:
                chat_ids = [client.create_chat(f"load {i}")["id"] for i in range(args.runs + 1)]
            first = burst([(server, chat_ids[0])], "warm up")  # first-use imports, connections
            assert not first.failures, first.failures
            warm = chat_ids[1:]
            settle_pool(server, args.pool)
            poller = StatusPoller(server)
            poller.start()
            idle_start = time.perf_counter()
            time.sleep(args.idle_s)
            idle = poller.between(idle_start, time.perf_counter())
            load = burst([(server, chat_id) for chat_id in warm], "go")
            loaded = poller.between(load.start, load.end)
            poller.stop()
            turns = stored_turns(db_url, warm)
        finally:
            server.stop()
        n = len(warm)
        ok = (
            not load.failures
            and len(turns) == n
            and {run for _chat, run in turns} == set(load.run_ids.values())
            and set(load.stop_reasons.values()) == {"done"}
        )
        print(
            f"{n} runs at once (one cell each), pool size {args.pool} / max {args.pool_max}, "
            f"PostgreSQL{' (fsync on)' if args.durable else ' (fsync off)'}"
        )
        print(f"  wall {load.wall_s:.2f} s, {n / load.wall_s:.2f} runs/s")
        i50, i99 = pct(idle, 0.5), pct(idle, 0.99)
        l50, l99, lmax = pct(loaded, 0.5), pct(loaded, 0.99), max(loaded)
        print(f"  GET agent/status idle  ({len(idle)} polls): p50 {_ms(i50)} p99 {_ms(i99)}")
        print(
            f"  GET agent/status loaded ({len(loaded)} polls): p50 {_ms(l50)} p99 {_ms(l99)} "
            f"max {_ms(lmax)}"
        )
        print(f"  ratio loaded/idle: p50 {l50 / i50:.2f}x, p99 {l99 / i99:.2f}x")
        print(
            f"  turns written: {len(turns)} for {n} runs, distinct run ids "
            f"{len({run for _c, run in turns})}; every turn once: {ok}"
        )
        if load.failures or poller.errors:
            print(f"  failures: {load.failures[:5]} status errors: {poller.errors[:5]}")
    finally:
        fake.stop()
        cluster.stop()


if __name__ == "__main__":
    main()
