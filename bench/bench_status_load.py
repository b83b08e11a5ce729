"""``GET agent/status`` latency while many chats run at once, through a real server.

Run: ``python bench/bench_status_load.py [--levels 8,16,32] [--pool N] [--repeat K]
[--lag]``. Prints figures measured side by side in one run (the machines are noisy:
compare the ratios).

A ``jupyter server`` subprocess with the agent (fake provider on loopback, script
``per_turn``: each run's model asks for one cell, then replies) is polled on ``GET
agent/status`` every ~20 ms from a thread, all along. First idle (4 s), then for each
level N: N chats (created beforehand, each with its events WebSocket open) send one
message at the same moment (a barrier across N threads); each run takes its own kernel
(warm from the pool, or started on demand), runs the cell and replies. The figures of a
level are the status polls made from the send to the last ``run_end``: p50, p99 and max,
and their ratios to idle; then the pool is let refill before the next level.

``--pool N`` is ``KernelPool.size`` (default 2, the server's default; ``--pool 32``: every
run of the largest level finds a warm kernel). ``--lag`` loads :mod:`loop_lag` into the
server (through a ``jupyter_server_config.py``) and prints the ranked blocking sites of
its event loop: busy stretches of the main thread of at least 50 ms, by the project frame
they were in. ``--spy`` records the server with ``py-spy`` (when installed: a dev tool,
``pip install py-spy``) and ranks its main thread's samples the same way, plus a ``py-spy
dump`` whenever a status poll has waited over 2 s. ``--renice`` gives the kernels nice 10
(an experiment: the server's loop ahead of booting kernels). Each level line also gives
the share of the level's wall time the server's main thread was on a CPU: far under 100%
with a slow status means the loop waits for the CPU (or in a system call), not on its own
Python work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import websocket

sys.path.insert(0, str(Path(__file__).resolve().parent))

import loop_lag
from bench_server import Server, _pct

from jupyter_agent.llm.fake.server import FakeProvider

CELL = "x = sum(range(1000))\nprint(x)"
SCRIPT = {
    "steps": [{"text": "Running it.", "cells": [CELL]}, {"text": "Done."}],
    "repeat": True,
    "per_turn": True,
}
_LAG_CONFIG = """\
import sys
sys.path.insert(0, {bench!r})
import loop_lag
loop_lag.start({path!r})
"""


class Poller(threading.Thread):
    """Polls ``GET agent/status`` every ``interval_s`` and keeps ``(sent_at, latency)``."""

    def __init__(self, server: Server, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.server, self.interval_s = server, interval_s
        self.samples: list[tuple[float, float]] = []
        self.errors = 0
        self.in_flight = 0.0
        self.stopping = threading.Event()

    def run(self) -> None:
        with self.server.client() as client:
            while not self.stopping.is_set():
                start = self.in_flight = time.perf_counter()
                try:
                    client.get("agent/status").raise_for_status()
                except httpx.HTTPError:
                    self.errors += 1
                took = time.perf_counter() - start
                self.in_flight = 0.0
                self.samples.append((start, took))
                time.sleep(max(0.0, self.interval_s - took))

    def between(self, start: float, end: float) -> list[float]:
        return [took for at, took in list(self.samples) if start <= at <= end]


_RECORD = ("py-spy", "record", "--format", "raw", "--threads", "--nonblocking", "-r", "250")


class Spy:
    """``py-spy record`` of the server's main thread during the load, and a ``py-spy dump``
    whenever a status poll has waited over 2 s (when py-spy is installed)."""

    def __init__(self, pid: int, base: Path, poller: Poller) -> None:
        self.pid, self.base, self.poller = pid, base, poller
        self.raw = base / "spy.txt"
        self.dumps: list[str] = []
        self.proc = subprocess.Popen(
            [*_RECORD, "-o", str(self.raw), "--pid", str(pid)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.stopping = threading.Event()
        self.watch = threading.Thread(target=self._watch, daemon=True)
        self.watch.start()

    def _watch(self) -> None:
        dumped_for = 0.0
        while not self.stopping.wait(0.2):
            began = self.poller.in_flight
            if began and began != dumped_for and time.perf_counter() - began > 2.0:
                dumped_for = began
                out = subprocess.run(
                    ["py-spy", "dump", "--nonblocking", "--pid", str(self.pid)],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                self.dumps.append(out.stdout)

    def stop(self) -> None:
        self.stopping.set()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def rank(self, top: int = 12) -> list[tuple[str, float, str]]:
        """Main-thread CPU samples by site: ``(site, ms, most common stack)``."""
        per_site: dict[str, float] = {}
        stacks: dict[str, dict[str, float]] = {}
        if not self.raw.exists():
            return []
        for line in self.raw.read_text().splitlines():
            head, _, count = line.rpartition(" ")
            frames = head.split(";")
            if "MainThread" not in frames[0] or len(frames) < 2:
                continue
            inner = frames[1:][::-1]  # innermost first
            as_paths = [_spy_frame(f) for f in inner]
            site = loop_lag.site(as_paths)
            ms = int(count) * 4.0  # 250 Hz
            per_site[site] = per_site.get(site, 0.0) + ms
            key = "\n".join(loop_lag.short(f) for f in as_paths[:10])
            stacks.setdefault(site, {})[key] = stacks.get(site, {}).get(key, 0.0) + ms
        ranked = sorted(per_site, key=lambda k: -per_site[k])[:top]
        return [(k, per_site[k], max(stacks[k], key=lambda x: stacks[k][x])) for k in ranked]


def _spy_frame(frame: str) -> str:
    """``func (file:line)`` as ``file:line func`` (the loop_lag form)."""
    func, _, where = frame.rpartition(" (")
    return f"{where.rstrip(')')} {func}"


class Renicer(threading.Thread):
    """Gives every child process of ``pid`` (the kernels) nice 10 soon after it starts: the
    experiment of agent kernels at a lower CPU priority than the server's event loop."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.done, self.stopping = pid, set[int](), threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.02):
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) in self.done:
                    continue
                try:
                    stat = (entry / "stat").read_text()
                    ppid = int(stat.rsplit(")", 1)[1].split()[1])
                    if ppid == self.pid:
                        os.setpriority(os.PRIO_PROCESS, int(entry.name), 10)
                        self.done.add(int(entry.name))
                except (OSError, ValueError, IndexError):
                    continue


def _main_cpu_s(pid: int) -> float:
    """CPU seconds the server's main thread has used (user + system)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stats(values: list[float]) -> tuple[float, float, float]:
    return _pct(values, 0.5), _pct(values, 0.99), max(values)


def _ms(value: float) -> str:
    return f"{value * 1e3:7.1f}"


def _kernel_count(client: httpx.Client) -> int:
    # The agent's kernels are in no Jupyter listing: its status counts them.
    kernels = client.get("agent/status").json()["kernels"]
    return int(kernels["warm"] + kernels["starting"] + kernels["in_use"])


def _settle(client: httpx.Client, pool: int, timeout_s: float = 300) -> None:
    """Wait until only the pool's warm kernels are left (and started), then a little."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _kernel_count(client) != pool:
        time.sleep(0.5)
    time.sleep(3.0)


def _level(server: Server, client: httpx.Client, n: int) -> tuple[float, float, list[str]]:
    """N chats send at once; ``(first send, last run_end, failures)`` in perf_counter."""
    chats = [client.post("agent/chats", json={"title": f"load {i}"}).json()["id"] for i in range(n)]
    sockets = [server.events(chat_id) for chat_id in chats]
    barrier = threading.Barrier(n + 1)
    ends: list[float] = []
    failures: list[str] = []

    def one(chat_id: str, ws: websocket.WebSocket) -> None:
        with server.client() as own:
            barrier.wait()
            try:
                sent = own.post(f"agent/chats/{chat_id}/messages", json={"text": "go"})
                run_id = sent.json()["run_id"]
                while True:
                    event = json.loads(ws.recv())
                    if event["type"] == "run_end" and event["run_id"] == run_id:
                        if event["stop_reason"] != "done":
                            failures.append(f"{run_id}: {event['stop_reason']}")
                        break
            except Exception as exc:  # a failed run is reported, not fatal to the bench
                failures.append(f"{chat_id}: {exc!r}")
            finally:
                ends.append(time.perf_counter())
                ws.close()

    threads = [threading.Thread(target=one, args=pair) for pair in zip(chats, sockets, strict=True)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return start, max(ends), failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="8,16,32", help="chats sending at once, per level")
    parser.add_argument("--pool", type=int, default=2, help="KernelPool.size (warm kernels)")
    parser.add_argument("--repeat", type=int, default=1, help="times each level is run")
    parser.add_argument("--idle-s", type=float, default=4.0, help="seconds of idle polling")
    parser.add_argument("--lag", action="store_true", help="rank the event loop's blockers")
    parser.add_argument("--spy", action="store_true", help="py-spy the server's main thread")
    parser.add_argument("--renice", action="store_true", help="kernels at nice 10 (experiment)")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",") if x]

    base = Path(tempfile.mkdtemp(prefix="bench-status-load-"))
    fake = FakeProvider(SCRIPT).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    server = Server(base / "s", {"tiers": {"codegen": tier}})
    config_file = base / "s" / "config" / "jupyter_server_config.json"
    config = json.loads(config_file.read_text())
    config["KernelPool"] = {"size": args.pool}
    config_file.write_text(json.dumps(config))
    lag_file = base / "loop_lag.jsonl"
    if args.lag:
        code = _LAG_CONFIG.format(bench=str(Path(__file__).resolve().parent), path=str(lag_file))
        (base / "s" / "config" / "jupyter_server_config.py").write_text(code)
    server.start()
    assert server.proc is not None
    pid = server.proc.pid
    poller = Poller(server)
    spy: Spy | None = None
    try:
        with server.client() as client:
            server.wait_ready(client)
            if args.renice:
                Renicer(pid).start()
            _level(server, client, 1)  # warm-up: first-use imports and connections
            _settle(client, args.pool)
            poller.start()
            t0 = time.perf_counter()
            time.sleep(args.idle_s)
            idle = poller.between(t0, time.perf_counter())
            i50, i99, imax = _stats(idle)
            nice = "; kernels at nice 10" if args.renice else ""
            print(f"pool {args.pool}{nice}; status polled every 20 ms; ms (ratio to idle p50/p99)")
            print(f"{'':>14} {'p50':>7} {'p99':>7} {'max':>7}   polls")
            print(f"{'idle':>14} {_ms(i50)} {_ms(i99)} {_ms(imax)}   {len(idle)}")
            if args.spy and shutil.which("py-spy"):
                spy = Spy(pid, base, poller)
            for n in levels:
                for _ in range(args.repeat):
                    cpu0 = _main_cpu_s(pid)
                    start, end, failures = _level(server, client, n)
                    busy = (_main_cpu_s(pid) - cpu0) / (end - start)
                    p50, p99, pmax = _stats(poller.between(start, end))
                    polls = len(poller.between(start, end))
                    failed = f"; FAILED {failures[:3]}" if failures else ""
                    print(
                        f"{f'{n} chats':>14} {_ms(p50)} {_ms(p99)} {_ms(pmax)}   {polls}"
                        f"  (x{p50 / i50:.1f} / x{p99 / i99:.1f}); all replied in "
                        f"{end - start:.1f} s, loop thread on CPU {busy:.0%}{failed}"
                    )
                    _settle(client, args.pool)
            if poller.errors:
                print(f"status errors: {poller.errors}")
    finally:
        poller.stopping.set()
        if spy is not None:
            spy.stop()
        server.stop()
        fake.stop()
    if args.lag:
        print("\nevent loop blockers (main thread busy >= 50 ms), ranked by total ms:")
        for k, entry in enumerate(loop_lag.rank(lag_file), 1):
            print(
                f"{k:2}. {entry['total_ms']:8.0f} ms in {entry['stretches']:4} stretches "
                f"(max {entry['max_stretch_ms']:6.0f} ms)  {entry['site']}"
            )
            for frame in entry["stack"][:8]:
                print(f"        {frame}")
        print(f"(raw: {lag_file})")
    if spy is not None:
        print("\nmain thread CPU under load (py-spy, 250 Hz, idle excluded), ranked:")
        for k, (where, ms, stack) in enumerate(spy.rank(), 1):
            print(f"{k:2}. {ms:8.0f} ms  {where}")
            for frame in stack.splitlines()[:8]:
                print(f"        {frame}")
        for dump in spy.dumps:
            print("\nstall (a status poll waiting > 2 s), py-spy dump:\n" + dump)


if __name__ == "__main__":
    main()
