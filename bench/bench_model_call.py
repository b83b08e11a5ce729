"""The model call at the cost of the wire: ``perform(http.post)`` vs a bare httpx stream.

Not a test: ``python bench/bench_model_call.py [N] [--profile]``. Against the loopback fake
provider, for each wire (Anthropic, OpenAI chat, OpenAI-compatible, OpenAI Responses), in
one run and interleaved (floor, production, floor, production, ...) so machine noise hits
both alike:

- **floor**: a bare ``httpx.AsyncClient`` (reused, no proxy) streaming POST of the very
  bytes the production path sends, reading every byte and assembling nothing;
- **transport**: ``Transport.post`` of the same request alone (no guard, no effect);
- **perform**: :func:`jupyter_agent.runtime.loop.model_calls.perform` of the ``http.post``
  effect an adapter built (``chat.build_request`` of a short chat, streamed, native tools),
  through the production stack: the server's :class:`~jupyter_agent.llm.transport.Transport`
  wrapped in the :class:`~jupyter_agent.runtime.secret_guard.ScrubbingTransport` with known
  secrets (the provider keys and a server token), deltas forwarded.

Prints medians and p99 of N calls each (ms) and the overhead (perform - floor medians).
``--profile`` adds a cProfile of N production calls per wire (top 15 by cumulative time).
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable

import httpx

from jupyter_agent.effects import HTTP_POST, Effect
from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.spec import RequestParams, RequestSpec
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.llm.transport import Transport
from jupyter_agent.messages import Message, Text, ToolCall, ToolResult
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.secret_guard import ScrubbingTransport
from jupyter_agent.runtime.secrets import SERVER_TOKEN, Scrubber
from jupyter_agent.tools import BASH, RUN_CELL

ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-bench-0123456789abcdef",
    "OPENAI_API_KEY": "sk-openai-bench-0123456789abcdef",
}
TOKEN = "0123456789abcdef0123456789abcdef0123456789abcdef"
COLS = range(40)
WORDS = " ".join(f"word{i}" for i in range(40))
STEP = {"text": WORDS, "cells": ["import pandas as pd\nprint(pd.__version__)"]}
# label, provider, model, api, wire; the fake's base URL (+ "/v1" for OpenAI's wires)
CASES = [
    ("anthropic", "anthropic", "claude-sonnet-4-5", "chat", ""),
    ("openai chat", "openai", "gpt-4.1", "chat", "/v1"),
    ("openai-compatible", "openai-compatible", "gpt-4.1", "chat", "/v1"),
    ("openai responses", "openai", "gpt-4.1", "responses", "/v1"),
]


def chat() -> list[Message]:
    """A short chat: a question, one cell and its output, a follow-up (~3 KB)."""
    return [
        Message(role="user", parts=(Text(text="Load sales.csv and show me the columns."),)),
        Message(
            role="assistant",
            parts=(
                Text(text="Loading it."),
                ToolCall(
                    id="call_1",
                    name="run_cell",
                    args={"code": "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.info()"},
                ),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResult(
                    call_id="call_1",
                    content=(
                        Text(text="\n".join(f"col{i}  int64  1000 non-null" for i in range(40))),
                    ),
                ),
            ),
        ),
        Message(role="user", parts=(Text(text="And the mean of col3?"),)),
    ]


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def effects(base_url: str) -> list[tuple[str, Effect]]:
    out = []
    for label, provider, model, api, suffix in CASES:
        data = {"provider": provider, "model": model, "api": api, "base_url": base_url + suffix}
        if provider == "openai-compatible":
            data["api_key_ref"] = "env:OPENAI_API_KEY"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tier = tier_from_config("codegen", data)
        params = RequestParams(
            messages=chat(), system="You are the agent.", tier=tier, tools=(RUN_CELL, BASH)
        )
        spec = build_request(params)
        out.append((label, Effect(name=HTTP_POST, data=spec.to_intent())))
    return out


async def run(n: int, profile: bool) -> None:
    scrubber = Scrubber({**{v: k for k, v in ENV.items()}, TOKEN: SERVER_TOKEN})
    with FakeProvider({"steps": [STEP], "repeat": True}) as fake:
        inner = Transport(env=ENV)
        transport = ScrubbingTransport(inner, scrubber)
        raw = httpx.AsyncClient(trust_env=False)
        cases = effects(fake.base_url)
        calls: dict[str, Callable[[], Awaitable[object]]] = {}
        for label, effect in cases:
            spec = effect.data
            body = json.dumps(spec["json"]).encode()
            headers = {"content-type": "application/json", **spec["headers"]}
            headers["authorization"] = "Bearer " + ENV["OPENAI_API_KEY"]
            headers["x-api-key"] = ENV["ANTHROPIC_API_KEY"]

            async def floor(url: str = spec["url"], body: bytes = body, h: dict = headers) -> None:
                async with raw.stream("POST", url, content=body, headers=h) as reply:
                    async for _ in reply.aiter_raw():
                        pass

            async def production(effect: Effect = effect) -> None:
                _data, error = await perform(
                    effect, config={}, transport=transport, on_delta=lambda _d: None
                )
                assert error is None, error

            request = RequestSpec.from_intent(effect.data)

            async def bare(spec: RequestSpec = request) -> None:
                await inner.post(spec, on_delta=lambda _d: None)

            calls[f"{label}|floor"] = floor
            calls[f"{label}|transport"] = bare
            calls[f"{label}|perform"] = production
        for _ in range(20):  # warm up connections and code paths
            for call in calls.values():
                await call()
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(n):
            for name, call in calls.items():
                started = time.perf_counter()
                await call()
                times[name].append((time.perf_counter() - started) * 1000)
        stats = None
        if profile:
            profiler = cProfile.Profile()
            production_calls = [c for name, c in calls.items() if name.endswith("|perform")]
            profiler.enable()
            for _ in range(n):
                for call in production_calls:
                    await call()
            profiler.disable()
            stream = io.StringIO()
            stats = pstats.Stats(profiler, stream=stream)
            stats.sort_stats("cumulative").print_stats(r"jupyter_agent|json|codec", 15)
            stats.sort_stats("tottime").print_stats(20)
        await raw.aclose()
        await inner.aclose()

    print(f"N={n} per kind, loopback fake provider, streamed, times in ms")
    print(
        f"{'wire':<20}{'floor med':>10}{'p99':>8}{'transport':>10}{'perform med':>13}{'p99':>8}"
        f"{'over':>8}"
    )
    for label, *_ in CASES:
        f, t, p = (times[f"{label}|{kind}"] for kind in ("floor", "transport", "perform"))
        over = statistics.median(p) - statistics.median(f)
        print(
            f"{label:<20}{statistics.median(f):>10.3f}{p99(f):>8.3f}{statistics.median(t):>10.3f}"
            f"{statistics.median(p):>13.3f}{p99(p):>8.3f}{over:>8.3f}"
        )
    print("transport: Transport.post alone (no secret guard, no effect); over: perform - floor")
    if stats is not None:
        print(f"\ncProfile of {n} production calls per wire ({n * len(CASES)} in all):")
        print(stream.getvalue())


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(run(int(args[0]) if args else 200, "--profile" in sys.argv))
