"""The panel's own overhead: send -> first cell shown -> reply shown, panel vs REST alone.

    python bench/bench_panel.py [--runs 10] [--pause 1.5]

Starts a real ``jupyter lab`` (the browser tests' :class:`~tests.browser.lab.LabServer`)
with the codegen tier on a loopback fake provider, and per run the same two-step script
(a bubble and one cell, then a reply). Two flows, alternating, each on a fresh chat:

- **panel**: Debian's chromium drives the chat view; times are taken in the page
  (``performance.now()``) from the Enter keydown to the first ``.jp-agent-cell`` and to
  the ``.jp-agent-reply`` being in the DOM (a MutationObserver);
- **rest**: a WebSocket on the chat's events (tornado client) is opened first, then
  ``POST agent/chats/{id}/messages``; times from just before the POST to the ``cell_start``
  event and to the ``reply`` event.

The difference is what the panel adds (request from the browser, event parsing, rendering
with JupyterLab's rendermime). Medians in milliseconds. Machines are noisy: compare the
two columns of one run, not absolute figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import Page, sync_playwright
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_agent.llm.fake.server import FakeProvider
from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS, LabServer, new_chat, open_lab

SCRIPT = [
    {"text": "Computing.", "cells": ["print(sum(range(10)))"]},
    {"text": "The sum is **45**."},
]

_PROBE = """
view => ({done: new Promise(resolve => {
  const box = view.querySelector('.jp-agent-input');
  const t = {};
  box.addEventListener('keydown', e => { if (e.key === 'Enter') t.send = performance.now(); },
                       {capture: true, once: true});
  const obs = new MutationObserver(() => {
    if (t.cell === undefined && view.querySelector('.jp-agent-cell')) t.cell = performance.now();
    if (t.reply === undefined && view.querySelector('.jp-agent-reply')) {
      t.reply = performance.now();
      obs.disconnect();
      resolve(t);
    }
  });
  obs.observe(view, {childList: true, subtree: true});
  window.__agentBenchReady = true;
})})
"""


def panel_once(page: Page) -> tuple[float, float]:
    view = new_chat(page)
    handle = view.element_handle()
    page.evaluate("() => { window.__agentBenchReady = false; }")
    result = page.evaluate_handle(_PROBE, handle)
    page.wait_for_function("() => window.__agentBenchReady")
    box = view.locator(".jp-agent-input")
    box.fill("What is the sum of 0..9?")
    box.press("Enter")
    times: dict[str, float] = page.evaluate("h => h.done", result)
    return times["cell"] - times["send"], times["reply"] - times["send"]


async def _rest_once(lab: LabServer) -> tuple[float, float]:
    chat = lab.request("POST", "agent/chats", {"title": "bench"}).json()
    ws_url = lab.url.replace("http", "ws", 1) + f"agent/chats/{chat['id']}/events?since=0"
    req = HTTPRequest(ws_url, headers={"Authorization": f"token {lab.token}"})
    conn = await websocket_connect(req)
    t0 = time.perf_counter()
    await asyncio.to_thread(
        lab.request, "POST", f"agent/chats/{chat['id']}/messages", {"text": "sum of 0..9?"}
    )
    cell = reply = 0.0
    while True:
        msg = await conn.read_message()
        if msg is None:
            raise RuntimeError("the events socket closed")
        event: dict[str, Any] = json.loads(msg)
        now = time.perf_counter()
        if event["type"] == "cell_start" and not cell:
            cell = now - t0
        elif event["type"] == "reply":
            reply = now - t0
            break
    conn.close()
    return cell * 1000, reply * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pause", type=float, default=1.5, help="seconds between flows")
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"panel": [], "rest": []}
    with tempfile.TemporaryDirectory() as tmp, FakeProvider([]) as fake:
        lab = LabServer(Path(tmp), codegen_base_url=fake.base_url).start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                open_lab(page, lab)
                pool = ThreadPoolExecutor(1)
                for i in range(args.runs + 1):  # the first of each flow warms up
                    # A pause before each flow lets the warm pool refill its kernel (a
                    # run discards its kernel), so neither flow waits for a kernel start.
                    time.sleep(args.pause)
                    fake.load(SCRIPT)
                    panel = panel_once(page)
                    time.sleep(args.pause)
                    fake.load(SCRIPT)
                    # Playwright's sync API owns this thread's loop: the REST flow gets its own.
                    rest = pool.submit(asyncio.run, _rest_once(lab)).result()
                    if i:
                        results["panel"].append(panel)
                        results["rest"].append(rest)
                pool.shutdown()
                browser.close()
        finally:
            lab.stop()
    print(f"send -> first cell shown / reply shown, median of {args.runs} runs (ms)")
    print(f"{'flow':<8}{'first cell':>12}{'reply':>10}")
    for flow, samples in results.items():
        cell = statistics.median(s[0] for s in samples)
        reply = statistics.median(s[1] for s in samples)
        print(f"{flow:<8}{cell:>12.1f}{reply:>10.1f}")
    med = {
        flow: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v))
        for flow, v in results.items()
    }
    cell_d = med["panel"][0] - med["rest"][0]
    reply_d = med["panel"][1] - med["rest"][1]
    print(f"panel overhead: first cell {cell_d:+.1f} ms, reply {reply_d:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
