"""Live cell output benchmarks through a real ``jupyter server`` subprocess.

Run: ``python bench/bench_live_output.py [N]`` (default N=15). Prints figures measured
side by side in one run (the machines are noisy: compare the ratios).

(a) cell round trip of a cell printing 10,000 lines, with a WebSocket client connected to
    the chat's events (it reads every ``cell_output`` event) vs with none, interleaved.
    The round trip is the ``cell.run`` effect's intent-to-result time in the run's log
    (millisecond stamps): what the run waits for the cell. Medians; goal <= 1.2x.
(b) event latency from the kernel's ``print`` to a WebSocket client: a cell prints a
    line with ``time.time()`` every 5 ms for about 2 s; each line's latency is the
    client's receive time minus the printed time (same machine, same clock). Median and
    p99 over all lines, with the events per second the throttle let through.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import Server, _pct

from jupyter_agent.llm.fake.server import FakeProvider

TEN_K = "for i in range(10_000):\n    print('line', i)"
STAMPS = "import time\nfor _ in range(400):\n    print(f'{time.time():.6f}')\n    time.sleep(0.005)"


def _script(code: str) -> list[dict[str, Any]]:
    return [{"text": "Running it.", "cells": [code]}, {"text": "Done."}]


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _cell_round_trip(client: httpx.Client, run_id: str) -> float:
    raw = client.get(f"agent/runs/{run_id}", params={"log": "raw"}).text.splitlines()
    lines = [json.loads(line) for line in raw[1:]]
    intent = next(x for x in lines if x["name"] == "cell.run" and x["phase"] == "intent")
    result = next(x for x in lines if x["seq"] == intent["seq"] and x["phase"] == "result")
    return _t(result["t"]) - _t(intent["t"])


def _wait_turn(client: httpx.Client, chat_id: str, run_id: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        chat = client.get(f"agent/chats/{chat_id}").json()
        if chat["active_run_id"] != run_id and any(t["run_id"] == run_id for t in chat["turns"]):
            return
        time.sleep(0.02)
    raise TimeoutError(run_id)


class Reader(threading.Thread):
    """Reads a chat's events until ``run_end``; keeps each with its receive time."""

    def __init__(self, server: Server, chat_id: str) -> None:
        super().__init__(daemon=True)
        self.ws = server.events(chat_id)
        self.raw: list[tuple[float, str]] = []

    def run(self) -> None:
        # Parsed afterwards: the client's own work must not load the machine it measures.
        try:
            while True:
                raw = self.ws.recv()
                self.raw.append((time.time(), raw))
                if '"type": "run_end"' in raw[:40]:
                    return
        finally:
            self.ws.close()

    @property
    def events(self) -> list[tuple[float, dict[str, Any]]]:
        return [(at, json.loads(raw)) for at, raw in self.raw]


def _turn(
    server: Server, client: httpx.Client, fake: FakeProvider, code: str, *, subscribed: bool
) -> tuple[float, Reader | None]:
    fake.load(_script(code))
    chat_id = client.post("agent/chats", json={"title": "bench"}).json()["id"]
    reader = Reader(server, chat_id) if subscribed else None
    if reader is not None:
        reader.start()
    run_id = client.post(f"agent/chats/{chat_id}/messages", json={"text": "go"}).json()["run_id"]
    _wait_turn(client, chat_id, run_id)
    if reader is not None:
        reader.join(60)
    return _cell_round_trip(client, run_id), reader


def main(n: int = 15) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-live-"))
    fake = FakeProvider(_script(TEN_K)).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    server = Server(base / "a", {"pool_size": 2, "tiers": {"codegen": tier}})
    server.start()
    try:
        with server.client() as client:
            server.wait_ready(client)
            _turn(server, client, fake, TEN_K, subscribed=True)  # warm up
            quiet, watched, counts = [], [], []
            for _ in range(n):
                for subscribed in (False, True):
                    time.sleep(0.6)  # let the pool refill: both figures are for a warm pool
                    rt, reader = _turn(server, client, fake, TEN_K, subscribed=subscribed)
                    (watched if subscribed else quiet).append(rt)
                    if reader is not None:
                        counts.append(sum(e["type"] == "cell_output" for _, e in reader.events))
            ratio = statistics.median(watched) / statistics.median(quiet)
            print(
                f"(a) 10,000-line cell round trip: with a subscriber median "
                f"{statistics.median(watched) * 1e3:.1f} ms (p90 {_pct(watched, 0.9) * 1e3:.1f}),"
                f" without median {statistics.median(quiet) * 1e3:.1f} ms "
                f"(p90 {_pct(quiet, 0.9) * 1e3:.1f}); ratio {ratio:.2f}x (goal <= 1.2x); "
                f"cell_output events per cell: median {statistics.median(counts):.0f}"
            )

            time.sleep(0.6)
            _, reader = _turn(server, client, fake, STAMPS, subscribed=True)
            assert reader is not None
            latencies: list[float] = []
            outputs = [(at, e) for at, e in reader.events if e["type"] == "cell_output"]
            for at, event in outputs:
                for line in str(event["output"].get("text", "")).splitlines():
                    latencies.append(at - float(line))
            span = outputs[-1][0] - outputs[0][0] if len(outputs) > 1 else 1.0
            print(
                f"(b) print -> WebSocket client latency over {len(latencies)} lines: median "
                f"{statistics.median(latencies) * 1e3:.1f} ms, p99 "
                f"{_pct(latencies, 0.99) * 1e3:.1f} ms; {len(outputs)} cell_output events "
                f"in {span:.2f} s ({len(outputs) / span:.1f}/s)"
            )
    finally:
        server.stop()
        fake.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
