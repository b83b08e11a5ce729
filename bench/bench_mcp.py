"""MCP both ways (issue 18): a tool call from a cell vs the SDK's client, and ``chat``
through the MCP endpoint vs the REST route.

Run: ``python bench/bench_mcp.py [--calls 200] [--turns 5]``. Side by side, in one run:

- **(a) a tool call**: the suite's demo MCP server (``tests/mcp_demo``, stdio), its
  read-only ``add`` tool. *Ours*: an in-process run (the run manager, a real agent kernel,
  the hub owning the connection, the fake model on loopback) whose one cell times
  ``mcp.demo.add(a=i, b=1)`` ``--calls`` times (each call: the kernel's stdin request, the
  host's ``app.call`` intent and result lines in the log, the hub, the server and back).
  *Direct*: the SDK's ``Client`` over stdio to the same server, ``call_tool`` the same
  number of times. Also the hub's own ``call`` (no kernel, no log) to split the cost.
  Goal: at most 1.5x per call.
- **(b) a chat turn**: a real ``jupyter server`` with the fake model; the same one-reply
  script sent ``--turns`` times through ``POST agent/chats/{id}/messages`` + waiting for
  the turn (REST), and through the MCP endpoint's ``chat`` tool (the SDK's client over
  streamable HTTP, ``wait=true``).

Compare ratios, not absolute times (2 shared cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.mcp_demo import SERVER, stdio_command  # noqa: E402  (after the path)

TIMED_CELL = """
import time as _t
_times = []
for _i in range({calls}):
    _s = _t.perf_counter()
    mcp.demo.add(a=_i, b=1)
    _times.append(_t.perf_counter() - _s)
_times.sort()
print("median_us", round(_times[len(_times) // 2] * 1e6, 1))
"""
# The same calls made by the SDK's client from inside the cell (what a cell would do with
# no ``mcp`` app): the kernel starts the server and holds the session itself.
SDK_CELL = """
import os as _os, sys as _sys, time as _t
from mcp import Client as _Client
from mcp.client.stdio import StdioServerParameters as _P, stdio_client as _stdio
_times = []
with open(_os.devnull, "w") as _null:
    async with _Client(_stdio(_P(command=_sys.executable, args=[{server!r}]), errlog=_null)) as _c:
        await _c.call_tool("add", {{"a": 0, "b": 1}})
        for _i in range({calls}):
            _s = _t.perf_counter()
            await _c.call_tool("add", {{"a": _i, "b": 1}})
            _times.append(_t.perf_counter() - _s)
_times.sort()
print("median_us", round(_times[len(_times) // 2] * 1e6, 1))
"""


def _median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


async def direct_calls(calls: int) -> list[float]:
    """The SDK's client over stdio to the demo server: one ``call_tool`` per timing."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    with open(os.devnull, "w") as devnull:
        async with Client(stdio_client(params, errlog=devnull)) as client:
            await client.call_tool("add", {"a": 0, "b": 1})  # warm
            times = []
            for i in range(calls):
                start = time.perf_counter()
                await client.call_tool("add", {"a": i, "b": 1})
                times.append(time.perf_counter() - start)
    return times


async def hub_calls(calls: int) -> list[float]:
    """The hub alone (the host side without the kernel or the log)."""
    from jupyter_agent.runtime.mcp.config import parse_servers
    from jupyter_agent.runtime.mcp.hub import McpHub

    servers, _ = parse_servers({"demo": {"command": stdio_command(), "tools": ["add"]}})
    hub = McpHub(servers, environ=dict(os.environ))
    try:
        await hub.catalogue()
        await hub.call("demo", "add", {"a": 0, "b": 1}, timeout_s=30)
        times = []
        for i in range(calls):
            start = time.perf_counter()
            await hub.call("demo", "add", {"a": i, "b": 1}, timeout_s=30)
            times.append(time.perf_counter() - start)
        return times
    finally:
        await hub.aclose()


async def cell_calls(root: Path, calls: int, code: str = TIMED_CELL) -> float:
    """The median call time measured inside a cell of a real run (microseconds): ``code``
    formatted with ``calls`` and the demo server's path."""
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.runtime.mcp.config import parse_servers
    from jupyter_agent.runtime.mcp.hub import McpHub
    from tests.runtime.harness import close_harness, make_harness

    km = AsyncMultiKernelManager()
    fake = FakeProvider({"steps": []}).start()
    harness = await make_harness(root, fake, km)
    servers, _ = parse_servers({"demo": {"command": stdio_command(), "tools": ["add"]}})
    hub = McpHub(servers, environ=dict(os.environ))
    harness.manager.services.mcp = hub
    try:
        harness.fake.load([{"cells": [code.format(calls=calls, server=SERVER)]}, {"text": "Done."}])
        await harness.ask(harness.new_chat(), "time the demo tool")
        text = json.dumps(harness.fake.requests[-1].json["messages"][-1])  # the cell's result
        if "median_us" not in text:
            raise SystemExit(f"the timed cell printed nothing: {text[:2000]}")
        return float(text.split("median_us ", 1)[1].split("\\n", 1)[0].split('"', 1)[0])
    finally:
        await hub.aclose()
        await close_harness(harness)
        fake.stop()


def tool_call_part(calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ours = asyncio.run(cell_calls(Path(tmp), calls))
    with tempfile.TemporaryDirectory() as tmp:
        in_cell = asyncio.run(cell_calls(Path(tmp), calls, SDK_CELL))
    direct = _median_us(asyncio.run(direct_calls(calls)))
    hub = _median_us(asyncio.run(hub_calls(calls)))
    print(f"(a) one MCP tool call, median of {calls} (demo add over stdio)")
    print(f"    from a cell (kernel -> host -> hub -> server): {ours:9.0f} us")
    print(f"    the hub alone (no kernel, no log):             {hub:9.0f} us")
    print(f"    the SDK client directly (this process):        {direct:9.0f} us")
    print(f"    the SDK client from inside a cell:             {in_cell:9.0f} us")
    print(f"    ratio cell / direct: {ours / direct:.2f}x (goal <= 1.5x); cell / SDK in a "
          f"cell: {ours / in_cell:.2f}x; hub / direct: {hub / direct:.2f}x")  # fmt: skip


SCRIPT = [{"cells": ["print(6 * 7)"]}, {"text": "42."}]


def _rest_turn(server: Any, chat_id: str) -> float:
    """POST the message, wait for the run's ``run_end`` on the events socket (as the panel
    does), GET the turn."""
    from tests.server.test_e2e import read_until, send

    ws = server.events(chat_id)
    try:
        with server.http() as client:
            start = time.perf_counter()
            run_id = send(client, chat_id, "what is 6 * 7?")["run_id"]
            read_until(ws, "run_end", run_id)
            turns = client.get(f"agent/chats/{chat_id}").json()["turns"]
            elapsed = time.perf_counter() - start
    finally:
        ws.close()
    if not any(t["run_id"] == run_id for t in turns):
        raise SystemExit("REST: no turn after run_end")
    return elapsed


async def _mcp_turns(server: Any, chat_id: str, turns: int) -> list[float]:
    """The MCP ``chat`` tool with ``wait=true`` through the SDK's client, one session."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"token {server.token}"}
    times = []
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(server.url + "agent/mcp", http_client=http)
        async with Client(transport) as client:
            for _ in range(turns):
                server.fake.load(SCRIPT)
                start = time.perf_counter()
                result = await client.call_tool(
                    "chat", {"text": "what is 6 * 7?", "chat_id": chat_id}
                )
                times.append(time.perf_counter() - start)
                if result.is_error or "42." not in json.dumps(result.structured_content):
                    raise SystemExit(f"MCP chat failed: {result}")
    return times


def chat_turn_times(turns: int) -> tuple[list[float], list[float]]:
    """``turns`` REST turns and ``turns`` MCP turns on one real server (a warm-up first)."""
    from jupyter_agent.llm.fake.server import FakeProvider
    from tests.server.test_e2e import new_chat, start_server, stop_server

    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    config = {"pool_size": 1, "tiers": {"codegen": tier}, "recall": False}
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp), config, fake)
        try:
            with server.http() as client:
                rest_chat, mcp_chat = new_chat(client), new_chat(client)
            fake.load(SCRIPT)
            _rest_turn(server, rest_chat)  # warm: the first kernel, imports
            rest = []
            for _ in range(turns):
                fake.load(SCRIPT)
                rest.append(_rest_turn(server, rest_chat))
            asyncio.run(_mcp_turns(server, mcp_chat, 1))  # warm the endpoint
            mcp = asyncio.run(_mcp_turns(server, mcp_chat, turns))
        finally:
            stop_server(server)
            fake.stop()
    return rest, mcp


def chat_part(turns: int) -> None:
    rest, mcp = chat_turn_times(turns)
    r, m = statistics.median(rest), statistics.median(mcp)
    print(f"(b) one chat turn (a cell and a reply), median of {turns}: a real jupyter server")
    print(
        f"    REST (POST messages, run_end on the events socket, GET the turn): {r * 1e3:6.0f} ms"
    )
    print(
        f"    MCP chat tool (the SDK's client, wait=true):                      {m * 1e3:6.0f} ms"
    )
    print(f"    ratio MCP / REST: {m / r:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--part", choices=("all", "tool", "chat"), default="all")
    args = parser.parse_args()
    if args.part in ("all", "tool"):
        tool_call_part(args.calls)
    if args.part in ("all", "chat"):
        chat_part(args.turns)


if __name__ == "__main__":
    main()
