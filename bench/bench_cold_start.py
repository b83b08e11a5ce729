"""Cold start (issue 27): a ``jupyter server`` with the agent against a bare one of the same
venv, alternating, K of each (``python bench/bench_cold_start.py [K]``, default 5).

The agent's starts after the first run on the database it made (as every start after a
person's first does); the first, which makes it (about 80 ms more), is printed apart. For
each start, from the spawn: ready (the agent's ``GET agent/status`` 200; the bare
server's ``GET api/status`` 200), and for the agent the first reply (a message in a new chat
until its ``run_end``: the fake provider answers at once) and the first reply after ready.
Then the import profile: ``import jupyter_agent.server.app`` beyond what
``import jupyter_server.serverapp`` imports alone, its top modules by cumulative time.

Every process runs from compiled bytecode, as an installed wheel does (pip compiles it): where
``PYTHONDONTWRITEBYTECODE`` is set (as on these machines), the package of a clone would
otherwise be compiled from source at every start (about 0.25 s) while the bare server's
site-packages are not; so the servers write and read their bytecode under one
``PYTHONPYCACHEPREFIX`` of the bench's, and one start of each kind, not counted, fills it.

Each server's RSS (the server process's ``VmRSS``, Linux only; its kernels are processes
of their own, not counted) is read 1 s after its start's last step (the agent's first reply,
the bare server's ready): what a server with the agent holds once it has answered, against
one without.

Goals (the issue's): ready <= 1.1x the bare server; first reply after ready <= 0.5 s; cold
start to the first reply <= the bare server's ready + 0.5 s; RSS after the start <= 120 MB.
Printed, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import Server

from jupyter_agent.llm.fake.server import FakeProvider

#: Seconds a server is left before its RSS is read (the start's work in threads, the first
#: turn's warming, takes about 0.3 s here: assumed done, not checked).
SETTLE_S = 1.0

#: The issue's goal for the RSS of a server with the agent after its start.
RSS_GOAL_MB = 120.0

#: The bytecode of every process of the bench (see the module docstring).
PYCACHE = {"PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="bench-cold-pyc-")}


def _compiled(env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **PYCACHE}


def _wait(client: httpx.Client, path: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if client.get(path).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        time.sleep(0.01)
    raise RuntimeError(f"{path} never answered")


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid`` in MB (Linux ``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def agent_start(base: Path, fake: FakeProvider) -> tuple[float, float, float]:
    """(ready, first reply) seconds from the spawn of a server with the agent, and its RSS
    (MB) :data:`SETTLE_S` after that first reply (its start's work all done)."""
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    server = Server(base, {"tiers": {"codegen": tier}})
    server.env = _compiled(server.env)
    started = time.perf_counter()
    server.start()
    assert server.proc is not None
    client = server.client()
    try:
        _wait(client, "agent/status", server.proc)
        ready = time.perf_counter() - started
        chat = client.post("agent/chats", json={"title": "cold"}).json()["id"]
        ws = server.events(chat)
        run_id = client.post(f"agent/chats/{chat}/messages", json={"text": "hi"}).json()["run_id"]
        while True:
            event = json.loads(ws.recv())
            if event["type"] == "run_end" and event["run_id"] == run_id:
                break
        ws.close()
        first = time.perf_counter() - started
        time.sleep(SETTLE_S)
        return ready, first, rss_mb(server.proc.pid)
    finally:
        client.close()
        server.stop()


def bare_start(base: Path) -> tuple[float, float]:
    """Seconds from the spawn of a bare ``jupyter server`` (no agent) to ``api/status``, and
    its RSS (MB) :data:`SETTLE_S` after."""
    server = Server(base, {})
    server.env = _compiled(server.env)
    path = base / "config" / "jupyter_server_config.json"
    config = json.loads(path.read_text())
    config["ServerApp"]["jpserver_extensions"] = {"jupyter_agent": False}
    path.write_text(json.dumps(config))
    started = time.perf_counter()
    server.start()
    assert server.proc is not None
    client = server.client()
    try:
        _wait(client, "api/status", server.proc)
        ready = time.perf_counter() - started
        time.sleep(SETTLE_S)
        return ready, rss_mb(server.proc.pid)
    finally:
        client.close()
        server.stop()


def import_profile(top: int = 15) -> list[tuple[str, float]]:
    """The modules ``jupyter_agent.server.app`` adds to ``jupyter_server.serverapp``'s
    imports, by cumulative import time (ms), slowest first."""

    def times(code: str) -> dict[str, float]:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code],
            capture_output=True,
            text=True,
            env=_compiled(dict(os.environ)),
        )
        out: dict[str, float] = {}
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                out[parts[2].strip()] = int(parts[1]) / 1000
        return out

    base = times("import jupyter_server.serverapp")
    full = times("import jupyter_server.serverapp; import jupyter_agent.server.app")
    extra = {name: ms for name, ms in full.items() if name not in base}
    return sorted(extra.items(), key=lambda kv: -kv[1])[:top]


def main(k: int = 5) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    fake = FakeProvider({"steps": [{"text": "Hello."}], "repeat": True}).start()
    ready, first, bare, rss, bare_rss = [], [], [], [], []
    try:
        bare_start(root / "bare-warm")  # fills the bytecode cache: not counted
        agent_start(root / "agent-warm", fake)
        # The agent's starts share one data folder: the first makes its database (printed
        # apart), the others start on it, as every start after a person's first does.
        new_ready, new_first, _ = agent_start(root / "agent", fake)
        for i in range(k):
            b_ready, b_rss = bare_start(root / f"bare{i}")
            bare.append(b_ready)
            bare_rss.append(b_rss)
            r, f, m = agent_start(root / "agent", fake)
            ready.append(r)
            first.append(f)
            rss.append(m)
    finally:
        fake.stop()
    med = statistics.median
    b, r, f = med(bare), med(ready), med(first)
    after = med([x - y for x, y in zip(first, ready, strict=True)])
    print(f"bare jupyter server ready: {b:.2f} s (median of {k})")
    print(f"agent server ready:        {r:.2f} s = {r / b:.2f}x bare (goal <= 1.1x)")
    print(f"first reply after ready:   {after:.2f} s (goal <= 0.5 s)")
    print(f"cold start to first reply: {f:.2f} s = bare + {f - b:.2f} s (goal <= bare + 0.5 s)")
    agent_mb, bare_mb = med(rss), med(bare_rss)
    verdict = "met" if agent_mb <= RSS_GOAL_MB else "missed"
    print(
        f"RSS after the start:       {agent_mb:.1f} MB (goal <= {RSS_GOAL_MB:.0f} MB: {verdict});"
        f" bare {bare_mb:.1f} MB: the agent adds {agent_mb - bare_mb:.1f} MB"
    )
    print(
        f"the very first start (it makes the database): ready {new_ready:.2f} s ="
        f" {new_ready / b:.2f}x bare, first reply {new_first:.2f} s = bare + {new_first - b:.2f} s"
    )
    print("what the agent's import adds (cumulative ms, top modules):")
    for name, ms in import_profile():
        print(f"  {ms:8.1f}  {name}")
    shutil.rmtree(PYCACHE["PYTHONPYCACHEPREFIX"], ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
