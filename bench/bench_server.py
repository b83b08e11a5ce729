"""Server benchmarks through the REST API of a real ``jupyter server`` subprocess.

Run: ``python bench/bench_server.py [N]`` (default N=20). Prints figures measured side by
side in one run (the machines are noisy: compare the ratios).

(a) message -> one cell -> reply through the REST API (POST the message, wait for the
    ``run_end`` event on the WebSocket; fake model at loopback, warm pool) vs the floor of
    doing the same by hand: two httpx posts to the fake + one jupyter_client execute in a
    warm kernel. Medians; goal <= 2x.
(b) server cold start (process spawn) to the first reply.
(c) ``GET agent/status`` p50/p99 while 16 runs are in progress (fake ``delay_s``) vs idle.
(d) break latency: ``POST agent/break/{id}`` (hard) -> run ended and turn written
    (the ``run_end`` event is published after the turn and the run row are stored).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websocket
from jupyter_client.manager import start_new_kernel

from jupyter_agent.llm.fake.server import FakeProvider

ONE_CELL = [{"text": "Running it.", "cells": ["x = sum(range(1000))\nprint(x)"]}, {"text": "Done."}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ms(value: float) -> str:
    return f"{value * 1e3:.1f} ms"


class Server:
    """A ``jupyter server`` subprocess with the agent, isolated folders, a random token."""

    def __init__(self, base: Path, agent: dict[str, Any]) -> None:
        self.base = base
        self.env = dict(os.environ)
        for name in ("config", "data", "runtime", "ipython", "root"):
            (base / name).mkdir(parents=True, exist_ok=True)
        self.env.update(
            JUPYTER_CONFIG_DIR=str(base / "config"),
            JUPYTER_DATA_DIR=str(base / "data"),
            JUPYTER_RUNTIME_DIR=str(base / "runtime"),
            IPYTHONDIR=str(base / "ipython"),
        )
        self.env.pop("JUPYTER_TOKEN", None)
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import jupyter_agent.cli.main as c; c.install_kernelspec(user=True)",
            ],
            env=self.env,
            check=True,
        )
        config = {
            "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
            "JupyterAgent": agent,
        }
        (base / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        argv = [
            sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.base / 'root'}", f"--IdentityProvider.token={self.token}",
        ]  # fmt: skip
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            argv.append("--allow-root")
        log = (self.base / "server.log").open("wb")
        self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self, client: httpx.Client) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if client.get("agent/status").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        raise RuntimeError((self.base / "server.log").read_text())

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"token {self.token}"}, timeout=60
        )

    def events(self, chat_id: str) -> websocket.WebSocket:
        url = self.url.replace("http://", "ws://") + f"agent/chats/{chat_id}/events"
        return websocket.create_connection(
            url, header=[f"Authorization: token {self.token}"], timeout=60, suppress_origin=True
        )


def _until(ws: websocket.WebSocket, type_: str, run_id: str) -> dict[str, Any]:
    while True:
        event = json.loads(ws.recv())
        if event["type"] == type_ and event["run_id"] == run_id:
            return dict(event)


def _one_turn(server: Server, client: httpx.Client) -> float:
    chat_id = client.post("agent/chats", json={"title": "bench"}).json()["id"]
    ws = server.events(chat_id)
    try:
        start = time.perf_counter()
        run_id = client.post(f"agent/chats/{chat_id}/messages", json={"text": "go"}).json()[
            "run_id"
        ]
        _until(ws, "run_end", run_id)
        return time.perf_counter() - start
    finally:
        ws.close()


def _floor(fake: FakeProvider, n: int) -> list[float]:
    """Two posts to the fake and one execute in a warm kernel, by hand."""
    km, kc = start_new_kernel(kernel_name="python3")
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "go"}],
    }
    times = []
    try:
        with httpx.Client(trust_env=False) as http:
            for _ in range(n):
                fake.load(ONE_CELL)
                start = time.perf_counter()
                http.post(fake.base_url + "/v1/messages", json=body).raise_for_status()
                kc.execute_interactive("x = sum(range(1000))\nprint(x)", output_hook=lambda m: None)
                http.post(fake.base_url + "/v1/messages", json=body).raise_for_status()
                times.append(time.perf_counter() - start)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return times


def main(n: int = 20) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-server-"))
    fake = FakeProvider({"steps": ONE_CELL, "repeat": True}).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    server = Server(base / "a", {"pool_size": 2, "tiers": {"codegen": tier}})
    t0 = time.perf_counter()
    server.start()
    try:
        with server.client() as client:
            server.wait_ready(client)
            cold = _one_turn(server, client)
            cold_total = time.perf_counter() - t0
            print(f"(b) cold start: spawn -> first reply {_ms(cold_total)} "
                  f"(first turn itself {_ms(cold)})")  # fmt: skip

            rest = []
            for _ in range(n):
                time.sleep(0.6)  # let the pool refill: the figure is for a warm pool
                fake.load({"steps": ONE_CELL, "repeat": True})
                rest.append(_one_turn(server, client))
            os.environ["JUPYTER_DATA_DIR"] = server.env["JUPYTER_DATA_DIR"]
            floor = _floor(fake, n)
            ratio = statistics.median(rest) / statistics.median(floor)
            print(f"(a) message -> cell -> reply via REST: median {_ms(statistics.median(rest))}"
                  f" (p90 {_ms(_pct(rest, 0.9))}); by hand floor median "
                  f"{_ms(statistics.median(floor))}; ratio {ratio:.2f}x (goal <= 2x)")  # fmt: skip

            def status_times(count: int) -> list[float]:
                out = []
                for _ in range(count):
                    start = time.perf_counter()
                    client.get("agent/status").raise_for_status()
                    out.append(time.perf_counter() - start)
                return out

            idle = status_times(200)
            fake.load({"steps": [{"text": "slow", "delay_s": 20}], "repeat": True})
            runs = []
            for _ in range(16):
                chat_id = client.post("agent/chats", json={}).json()["id"]
                sent = client.post(f"agent/chats/{chat_id}/messages", json={"text": "slow"})
                runs.append(sent.json()["run_id"])
            time.sleep(1.0)
            busy = status_times(200)
            print(f"(c) GET agent/status idle p50 {_ms(_pct(idle, 0.5))} "
                  f"p99 {_ms(_pct(idle, 0.99))}; with 16 runs in progress "
                  f"p50 {_ms(_pct(busy, 0.5))} "
                  f"p99 {_ms(_pct(busy, 0.99))}")  # fmt: skip
            for run_id in runs:
                client.post(f"agent/break/{run_id}", json={"hard": True})
            time.sleep(2.0)

            breaks = []
            for _ in range(5):
                time.sleep(0.6)
                chat_id = client.post("agent/chats", json={}).json()["id"]
                ws = server.events(chat_id)
                try:
                    before = len(fake.requests)
                    run_id = client.post(
                        f"agent/chats/{chat_id}/messages", json={"text": "slow"}
                    ).json()["run_id"]
                    while len(fake.requests) == before:
                        time.sleep(0.005)
                    start = time.perf_counter()
                    client.post(f"agent/break/{run_id}", json={"hard": True})
                    _until(ws, "run_end", run_id)
                    breaks.append(time.perf_counter() - start)
                finally:
                    ws.close()
            print(f"(d) hard break -> run ended and turn written: median "
                  f"{_ms(statistics.median(breaks))} (max {_ms(max(breaks))})")  # fmt: skip
    finally:
        server.stop()
        fake.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
