"""Transport.post overhead vs a raw reused httpx.AsyncClient, against the loopback fake.

Not a test: ``python bench/bench_transport.py [N]``. Runs N calls of each kind, interleaved
(raw, transport, raw, transport, ...) so machine noise hits both alike, non-streaming and
streaming (Anthropic wire, a ~40-word reply with one tool call). The raw streaming call
reads every SSE line but assembles nothing. Prints medians, p99 and the ratios.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

import httpx

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.transport import Transport

WORDS = " ".join(f"word{i}" for i in range(40))
STEP = {"text": WORDS, "cells": ["import pandas as pd\nprint(pd.__version__)"]}


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def run(n: int) -> None:
    body = {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "x" * 2000}],
    }
    with FakeProvider({"steps": [STEP], "repeat": True}) as fake:
        url = fake.base_url + "/v1/messages"
        transport = Transport()
        raw = httpx.AsyncClient(trust_env=False)
        times: dict[str, list[float]] = {
            k: [] for k in ("raw", "transport", "raw-sse", "transport-sse")
        }

        async def raw_post() -> None:
            reply = await raw.post(url, json=body)
            reply.json()

        async def raw_stream() -> None:
            async with raw.stream("POST", url, json=dict(body, stream=True)) as reply:
                async for _ in reply.aiter_lines():
                    pass

        plain = RequestSpec(url=url, json=body, wire="anthropic")
        streamed = RequestSpec(url=url, json=dict(body, stream=True), wire="anthropic", stream=True)
        calls = {
            "raw": raw_post,
            "transport": lambda: transport.post(plain),
            "raw-sse": raw_stream,
            "transport-sse": lambda: transport.post(streamed, on_delta=lambda _d: None),
        }
        for _ in range(10):  # warm up connections and code paths
            for call in calls.values():
                await call()
        for _ in range(n):
            for name, call in calls.items():
                started = time.perf_counter()
                await call()
                times[name].append((time.perf_counter() - started) * 1000)
        await raw.aclose()
        await transport.aclose()

    print(f"N={n} per kind, loopback fake provider, Anthropic wire, times in ms")
    print(f"{'kind':<15}{'median':>10}{'p99':>10}")
    for name, values in times.items():
        print(f"{name:<15}{statistics.median(values):>10.3f}{p99(values):>10.3f}")
    for kind in ("", "-sse"):
        ratio = statistics.median(times["transport" + kind]) / statistics.median(
            times["raw" + kind]
        )
        print(f"ratio transport{kind} / raw{kind} (medians): {ratio:.2f}")


if __name__ == "__main__":
    asyncio.run(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
