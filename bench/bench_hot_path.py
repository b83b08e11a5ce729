"""The hot path, side by side in one run (issue 13), through a real ``jupyter server``.

Run: ``python bench/bench_hot_path.py [N]`` (default N=40: medians of N turns). One fake
provider on loopback answers at once; the agent and the floors run the same script.

Prints:
- the floors by hand: a chat turn (one httpx post to the fake) and a code turn (two posts
  and one execute in a warm ipykernel);
- a chat turn and a code turn through REST and the events WebSocket (POST the message, wait
  for ``run_end``), their medians and the overhead over the floor (goals: code <= 4 ms,
  chat <= 3 ms);
- a burst of 8 messages in 8 chats at once, each running one cell: every reply and the
  slowest over a single code turn (goal <= 2x);
- message 1 vs message 100 of one chat, chat-only turns (median of messages 1-5 vs
  96-100; goal <= 1.2x) and the runs' log sizes at message 1, 10 and 100;
- the server's RSS before and after 1,000 chat-only runs over 50 chats, after 200 warm-up
  runs, some chats deleted and made again (goal: growth under 10 MB);
- cold start: spawning the server to the first reply (goal < 2 s);
- a profile: where a chat turn's time goes inside the server (the effect log's timestamps:
  model call, log, store, and the rest), from the logs of the runs above.
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
from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import Server, _ms

from jupyter_agent.llm.fake.server import FakeProvider

MODEL = "claude-sonnet-4-5"
CHAT = [{"text": "Hello."}]
CODE = [{"text": "Running it.", "cells": ["x = sum(range(1000))\nprint(x)"]}, {"text": "Done."}]
BODY = {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "go"}]}


def _med(values: list[float]) -> float:
    return statistics.median(values)


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Agent:
    """A server with the agent on the fake, plus a client and the events of a chat."""

    def __init__(self, base: Path, fake: FakeProvider, extra: dict[str, Any]) -> None:
        tier = {"provider": "fake", "model": MODEL, "base_url": fake.base_url}
        self.server = Server(base, {"tiers": {"codegen": tier}})
        path = base / "config" / "jupyter_server_config.json"
        config = json.loads(path.read_text())
        config.update(extra)
        path.write_text(json.dumps(config))
        self.fake = fake
        self.client: httpx.Client | None = None
        self.replies: list[float] = []

    def start(self) -> float:
        """Start the server; the seconds from spawn to its first reply."""
        started = time.perf_counter()
        self.server.start()
        self.client = self.server.client()
        self.server.wait_ready(self.client)
        self.fake.load({"steps": CHAT, "repeat": True})
        self.turn(self.chat())
        return time.perf_counter() - started

    def chat(self) -> str:
        assert self.client is not None
        return str(self.client.post("agent/chats", json={"title": "bench"}).json()["id"])

    def turn(self, chat_id: str, text: str = "go") -> tuple[float, str]:
        """One message to its ``run_end``: (seconds, run id). The time to its final
        ``reply`` event (what the person sees) is appended to :attr:`replies`."""
        assert self.client is not None
        ws = self.server.events(chat_id)
        try:
            start = time.perf_counter()
            answer = self.client.post(f"agent/chats/{chat_id}/messages", json={"text": text})
            run_id = str(answer.json()["run_id"])
            while True:
                event = json.loads(ws.recv())
                if event.get("run_id") != run_id:  # a catch-up notice has none
                    continue
                if event["type"] == "reply" and event.get("done"):
                    self.replies.append(time.perf_counter() - start)
                if event["type"] == "run_end":
                    return time.perf_counter() - start, run_id
        finally:
            ws.close()

    def log_of(self, run_id: str) -> Path:
        return next(self.server.base.glob(f"data/**/runs/{run_id}.jsonl"))

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        self.server.stop()


def floors(fake: FakeProvider, n: int) -> tuple[list[float], list[float]]:
    """The chat floor (one post) and the code floor (two posts and an execute), by hand."""
    km, kc = start_new_kernel(kernel_name="python3")
    chat, code = [], []
    try:
        with httpx.Client(trust_env=False) as http:
            url = fake.base_url + "/v1/messages"
            for _ in range(n):
                fake.load(CHAT)
                start = time.perf_counter()
                http.post(url, json=BODY).raise_for_status()
                chat.append(time.perf_counter() - start)
                fake.load(CODE)
                start = time.perf_counter()
                http.post(url, json=BODY).raise_for_status()
                kc.execute_interactive("x = sum(range(1000))\nprint(x)", output_hook=lambda m: None)
                http.post(url, json=BODY).raise_for_status()
                code.append(time.perf_counter() - start)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return chat, code


def burst(agent: Agent, size: int = 8) -> list[float]:
    """``size`` messages to ``size`` chats at once, each running one cell."""
    chats = [agent.chat() for _ in range(size)]
    agent.fake.load({"steps": CODE, "repeat": True})
    times: list[float] = [0.0] * size
    go = threading.Barrier(size)

    def one(i: int) -> None:
        go.wait()
        times[i] = agent.turn(chats[i])[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def _t(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def profile(logs: list[Path]) -> dict[str, float]:
    """Median ms per run by phase, from the logs' timestamps: the model calls (intent to
    result of ``http.post``), the rest of the effects, and the gaps between them (the loop,
    the log writes, the driver)."""
    phases: dict[str, list[float]] = {"model call": [], "other effects": [], "between": []}
    for path in logs:
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        intents = {line["seq"]: line for line in lines if line["phase"] == "intent"}
        spans: dict[str, float] = {"model call": 0.0, "other effects": 0.0}
        busy = 0.0
        for line in lines:
            if line["phase"] != "result" or line["seq"] not in intents:
                continue
            intent = intents[line["seq"]]
            took = _t(line["t"]) - _t(intent["t"])
            spans["model call" if intent["name"] == "http.post" else "other effects"] += took
            busy += took
        total = _t(lines[-1]["t"]) - _t(lines[0]["t"]) if lines else 0.0
        phases["model call"].append(spans["model call"])
        phases["other effects"].append(spans["other effects"])
        phases["between"].append(max(0.0, total - busy))
    return {name: _med(values) * 1e3 for name, values in phases.items() if values}


def main(n: int = 40) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-hot-"))
    fake = FakeProvider({"steps": CHAT, "repeat": True}).start()
    agent = Agent(base / "a", fake, {"KernelPool": {"size": 2, "pool_max": 8}})
    try:
        cold = agent.start()
        chat_floor, code_floor = floors(fake, n)

        chat_id = agent.chat()
        fake.load({"steps": CHAT, "repeat": True})
        chat_turns, chat_runs = [], []
        agent.replies.clear()
        for _ in range(n):
            took, run_id = agent.turn(agent.chat())
            chat_turns.append(took)
            chat_runs.append(run_id)
        chat_replies = list(agent.replies)
        fake.load({"steps": CODE, "repeat": True})
        code_turns = []
        agent.replies.clear()
        for _ in range(min(n, 20)):
            # A warm pool and an idle machine, as a person typing leaves them: at 0.5 s
            # apart the refills' kernel starts (a core-second each) share the 2 cores
            # with the turns, and that is what the burst measures.
            time.sleep(2.5)
            code_turns.append(agent.turn(agent.chat())[0])
        code_replies = list(agent.replies)
        time.sleep(2.0)
        bursts = burst(agent)

        fake.load({"steps": CHAT, "repeat": True})
        long_chat: list[float] = []
        sizes: dict[int, int] = {}
        for i in range(1, 101):
            took, run_id = agent.turn(chat_id, text=f"message {i} " + "words " * 40)
            long_chat.append(took)
            if i in (1, 10, 100):
                sizes[i] = agent.log_of(run_id).stat().st_size

        assert agent.server.proc is not None
        pid = agent.server.proc.pid
        chats = [agent.chat() for _ in range(50)]
        for i in range(200):  # warm-up: caches and the heap's first high-water mark
            agent.turn(chats[i % 50])
        rss_before = _rss_kb(pid)
        for i in range(1000):
            agent.turn(chats[i % 50])
            if i % 200 == 199 and agent.client is not None:  # some chats go away
                agent.client.delete(f"agent/chats/{chats[i % 50]}")
                chats[i % 50] = agent.chat()
        rss_after = _rss_kb(pid)
        phases = profile([agent.log_of(r) for r in chat_runs])
    finally:
        agent.stop()
        fake.stop()

    cf, kf = _med(chat_floor), _med(code_floor)
    ct, kt = _med(chat_turns), _med(code_turns)
    single = kt
    print(f"floors by hand: chat {_ms(cf)}, code {_ms(kf)}")
    cr, kr = _med(chat_replies or [0.0]), _med(code_replies or [0.0])
    print(f"chat turn: to its reply {_ms(cr)} (overhead {_ms(cr - cf)}, goal <= 3 ms); to "
          f"run_end, turn stored, {_ms(ct)} (overhead {_ms(ct - cf)}); "
          f"{ct / cf:.1f}x the floor")  # fmt: skip
    print(f"code turn: to its reply {_ms(kr)} (overhead {_ms(kr - kf)}, goal <= 4 ms); to "
          f"run_end, turn stored, {_ms(kt)} (overhead {_ms(kt - kf)}); "
          f"{kt / kf:.1f}x the floor")  # fmt: skip
    print(f"burst of 8 code turns in 8 chats: {', '.join(_ms(t) for t in bursts)}; slowest "
          f"{max(bursts) / single:.2f}x a single code turn (goal <= 2x)")  # fmt: skip
    first, last = _med(long_chat[:5]), _med(long_chat[-5:])
    print(f"one chat: messages 1-5 {_ms(first)}, messages 96-100 {_ms(last)}: "
          f"{last / first:.2f}x (goal <= 1.2x); log bytes at message 1/10/100: "
          f"{sizes.get(1)}/{sizes.get(10)}/{sizes.get(100)}")  # fmt: skip
    print(f"RSS: {rss_before / 1024:.1f} MB before 1,000 runs, {rss_after / 1024:.1f} MB after: "
          f"{(rss_after - rss_before) / 1024:+.1f} MB (goal < 10 MB)")  # fmt: skip
    print(f"cold start: spawn -> first reply {_ms(cold)} (goal < 2 s)")
    print("where a chat turn's time goes inside the run (median ms per run): "
          + ", ".join(f"{name} {value:.2f}" for name, value in phases.items()))  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
