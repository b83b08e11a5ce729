"""Soak of the event bus: RSS and the bus's kept bytes over 1,000 runs.

Run: ``python bench/bench_event_soak.py [RUNS] [CHATS]`` (default 1000 runs, 50 chats).

The real agent (:func:`~jupyter_agent.runtime.assembly.assemble`, the chats service's
``create`` / ``send`` / ``delete``, the real run manager and driver,
SQLite and effect logs in a temporary folder) with the scripted fake provider on
loopback, in this process. Turns are chat only (no kernel): each posts a final reply of
about 4 KB, so every run leaves kept events of about 9 KB (``run_start``, ``reply``,
``run_end`` with its turn). ``CHATS`` chats are live at a time, taken in turn; each is
deleted after :data:`RUNS_PER_CHAT` runs and a new one takes its place (the soak deletes
most chats).

After :data:`WARM_UP` runs in a chat of their own (deleted, not counted), prints at 0,
100, 250, 500, 750 and 1,000 runs (and at the last run, for another RUNS): the process's
RSS (``VmRSS`` of ``/proc/self/status``), its growth since run 0, and the bytes the bus
keeps (the encoded JSON of its kept events; summed here from its history for a bus that
does not count them) with its peak so far (every chat is deleted at a multiple of
``CHATS * RUNS_PER_CHAT`` runs, so the bus may hold little at a checkpoint). Goal: growth
under 10 MB per 1,000 runs.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS_PER_CHAT = 5
WARM_UP = 20
CHECKPOINTS = (0, 100, 250, 500, 750, 1000)
REPLY = "Here is the answer, at some length. " * 110  # ~4 KB


def rss_kb() -> int:
    """The resident set size of this process in KB (Linux ``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def bus_bytes(bus: Any) -> tuple[int, int]:
    """(bytes of the kept events' encoded JSON, number of chats the bus holds anything of)."""
    if hasattr(bus, "kept_bytes"):
        return int(bus.kept_bytes), len(bus.chats())
    history = bus._history  # the bus before issue 13 kept no count: sum it here
    total = sum(len(json.dumps(e)) for events in history.values() for e in events)
    return total, len(history)


async def soak(runs: int, n_chats: int, base: Path) -> None:
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.runtime.assembly import AdminConfig, assemble

    script = {"steps": [{"text": REPLY}], "repeat": True}
    fake = FakeProvider(script).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    admin = AdminConfig(
        tiers={"codegen": tier}, db_url=f"sqlite:///{base / 'agent.sqlite'}", pool_size=0
    )
    (base / "root").mkdir()
    parts = assemble(
        admin=admin,
        data_dir=base / "data",
        root_dir=str(base / "root"),
        kernel_manager=AsyncMultiKernelManager(),  # chat-only turns: no kernel is taken
    )
    chats = parts.services.chats
    await parts.start()
    # Warm up (imports, caches, the first SQLite pages): not measured.
    warm = (await chats.create(owner="", title="warm up"))["id"]
    for i in range(WARM_UP):
        answer = await chats.send(warm, owner="", text=f"warm up {i}")
        await parts.manager.wait(answer["run_id"])
    await chats.delete(warm, owner="")
    live = [(await chats.create(owner="", title=f"soak {i}"))["id"] for i in range(n_chats)]
    used = dict.fromkeys(live, 0)
    deleted = 0
    started = time.perf_counter()
    base_rss = 0
    peak = 0
    try:
        for done in range(runs + 1):
            if done in CHECKPOINTS or done == runs:
                fake.requests.clear()  # the fake's own record of requests is not the server's
                gc.collect()
                rss = rss_kb()
                base_rss = base_rss or rss
                kept, held = bus_bytes(parts.events)
                peak = max(peak, kept)
                print(
                    f"runs {done:5d}: RSS {rss / 1024:7.1f} MB (+{(rss - base_rss) / 1024:5.1f} MB)"
                    f"  bus {kept / 1024:8.1f} KB in {held:3d} chats (peak {peak / 1024:8.1f} KB)"
                    f"  deleted chats {deleted:3d}"
                    f"  {time.perf_counter() - started:6.1f} s",
                    flush=True,
                )
            if done == runs:
                break
            slot = done % n_chats
            chat_id = live[slot]
            answer = await chats.send(chat_id, owner="", text=f"question {done}")
            await parts.manager.wait(answer["run_id"])
            used[chat_id] += 1
            if hasattr(parts.events, "kept_bytes"):  # the old bus only grows: no peak to track
                peak = max(peak, parts.events.kept_bytes)
            if used[chat_id] >= RUNS_PER_CHAT:
                await chats.delete(chat_id, owner="")
                deleted += 1
                new = (await chats.create(owner="", title=f"soak {done}"))["id"]
                live[slot] = new
                used[new] = 0
            if done % 50 == 0:
                fake.requests.clear()
    finally:
        await parts.stop()
        fake.stop()


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 1000
    chats = int(argv[2]) if len(argv) > 2 else 50
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="agent-soak-") as tmp:
        base = Path(tmp)
        os.environ["JUPYTER_DATA_DIR"] = str(base / "jupyter-data")
        asyncio.run(soak(runs, chats, base))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
