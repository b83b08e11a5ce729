"""End to end against a real ``jupyter server`` subprocess, the fake model on loopback.

The server runs with a free loopback port, a random token, its own root and Jupyter
folders (the ``jupyter-agent`` kernelspec installed into its data dir) and a config file
naming the test's :class:`~jupyter_agent.llm.fake.server.FakeProvider` as the codegen tier. Each
test loads the script it needs into that fake. Events are read off the WebSocket with the
``websocket-client`` package (a jupyter_server dependency).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest
import websocket

from jupyter_agent.llm.fake.server import FakeProvider

pytestmark = pytest.mark.timeout(300)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A running server and what the tests need to talk to it."""

    url: str
    token: str
    fake: FakeProvider
    root: Path
    log: Path
    proc: subprocess.Popen[bytes]

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"token {self.token}"}, timeout=30
        )

    def events(self, chat_id: str, since: int = 0) -> websocket.WebSocket:
        ws_url = self.url.replace("http://", "ws://") + f"agent/chats/{chat_id}/events"
        return websocket.create_connection(
            f"{ws_url}?since={since}",
            header=[f"Authorization: token {self.token}"],
            timeout=60,
            suppress_origin=True,
        )


def isolated_env(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "ipython"):
        (base / name).mkdir(parents=True, exist_ok=True)
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
    )
    for name in ("JUPYTER_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)
    return env


def start_server(
    base: Path,
    agent_config: dict[str, Any],
    fake: FakeProvider,
    extra_env: dict[str, str] | None = None,
) -> Server:
    """Start ``jupyter server`` (its environment plus ``extra_env``) and wait until
    ``agent/status`` answers."""
    env = {**isolated_env(base), **(extra_env or {})}
    root = base / "root"
    root.mkdir()
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from jupyter_agent.cli.main import install_kernelspec as i; i(user=True)",
        ],
        env=env,
        check=True,
    )
    config = {"ServerApp": {"jpserver_extensions": {"jupyter_agent": True}}}
    config["JupyterAgent"] = agent_config
    (base / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
    port, token = free_port(), secrets.token_hex(16)
    argv = [
        sys.executable, "-m", "jupyter_server", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    log = base / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}/", token, fake, root, log, proc)
    deadline = time.monotonic() + 60
    with server.http() as client:
        while True:
            try:
                if client.get("agent/status").status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_server(server)
                raise RuntimeError("jupyter server did not start:\n" + log.read_text())
            time.sleep(0.1)


def effect_log(server: Server, run_id: str) -> Path:
    """The effect log of ``run_id`` in the server's data dir."""
    [path] = (server.root.parent / "data").rglob(f"{run_id}.jsonl")
    return path


def stop_server(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    started = start_server(
        tmp_path_factory.mktemp("e2e"), {"pool_size": 1, "tiers": {"codegen": tier}}, fake
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def new_chat(client: httpx.Client) -> str:
    response = client.post("agent/chats", json={})
    assert response.status_code == 201
    return str(response.json()["id"])


def send(client: httpx.Client, chat_id: str, text: str) -> dict[str, Any]:
    response = client.post(f"agent/chats/{chat_id}/messages", json={"text": text})
    assert response.status_code == 202, response.text
    return dict(response.json())


def read_until(ws: websocket.WebSocket, type_: str, run_id: str) -> list[dict[str, Any]]:
    events = []
    while True:
        event = json.loads(ws.recv())
        events.append(event)
        if event["type"] == type_ and event["run_id"] == run_id:
            return events


def wait_turn(client: httpx.Client, chat_id: str, run_id: str, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        chat = client.get(f"agent/chats/{chat_id}").json()
        for turn in chat["turns"]:
            if turn["run_id"] == run_id:
                return turn
        time.sleep(0.05)
    raise AssertionError(f"no turn for {run_id}")


COMPUTE = [
    {"text": "Let me compute.", "cells": ["x = 6 * 7\nprint(x)"], "delay_s": 0.5},
    {"text": "Now the squares.", "cells": ["[i * i for i in range(5)]"]},
    {"text": "The answer is **42**."},
]


def test_message_events_turn_and_mailbox(server: Server) -> None:
    server.fake.load({"steps": COMPUTE, "repeat": True})
    with server.http() as client:
        chat_id = new_chat(client)
        ws = server.events(chat_id)
        try:
            first = send(client, chat_id, "what is six times seven?")
            assert first["routed"] == "run"
            second = send(client, chat_id, "and show the squares too")
            assert second == {
                "run_id": first["run_id"],
                "routed": "mailbox",
                "message_id": second["message_id"],
            }
            assert second["message_id"].startswith("msg_")  # its identity in the events and steps
            events = read_until(ws, "run_end", first["run_id"])
        finally:
            ws.close()
        types = [e["type"] for e in events]
        assert types[0] == "run_start"
        assert {"bubble", "cell_start", "cell_end", "reply", "run_end"} <= set(types)
        ends = [e for e in events if e["type"] == "cell_end"]
        assert "42" in json.dumps(ends[0]["outputs"])
        turn = wait_turn(client, chat_id, first["run_id"])
        assert turn["llm"]["stopReason"] == "done"
        assert turn["replies"][-1]["done"] is True
        # Nothing dropped: the second message reached this run (at its opening drain or a
        # later one: the run has three model calls, so a drain follows either way).
        assert [s["text"] for s in turn["steering"]] == ["and show the squares too"]


def test_hard_break_of_a_slow_run(server: Server) -> None:
    server.fake.load({"steps": [{"text": "slow", "delay_s": 30}], "repeat": True})
    with server.http() as client:
        chat_id = new_chat(client)
        ws = server.events(chat_id)
        try:
            before = len(server.fake.requests)
            run_id = send(client, chat_id, "take your time")["run_id"]
            read_until(ws, "run_start", run_id)
            deadline = time.monotonic() + 10
            while len(server.fake.requests) == before:  # the slow model call is in flight
                assert time.monotonic() < deadline, "the model call never started"
                time.sleep(0.02)
            started = time.monotonic()
            response = client.post(f"agent/break/{run_id}", json={"hard": True})
            assert response.status_code == 202
            assert response.json() == {"run_id": run_id, "state": "breaking"}
            events = read_until(ws, "run_end", run_id)
        finally:
            ws.close()
        turn = wait_turn(client, chat_id, run_id)
        took = time.monotonic() - started
        assert took < 10, took
        assert events[-1]["stop_reason"] == "break_hard"  # snake_case, as every event key
        assert turn["llm"]["stopReason"] == "break_hard"
        again = client.post(f"agent/break/{run_id}", json={"hard": True}).json()
        assert again == {"run_id": run_id, "state": "ended"}


DETERMINISTIC = [
    {"text": "Computing.", "cells": ["import math\nprint(math.factorial(10))"]},
    {"text": "And a value.", "cells": ["sorted({'b': 2, 'a': 1}.items())"]},
    {"text": "Done: 3628800."},
]


def test_exported_notebook_reruns_the_same(server: Server, agent_kernelspec: str) -> None:
    from nbclient import NotebookClient

    server.fake.load({"steps": DETERMINISTIC, "repeat": True})
    with server.http() as client:
        chat_id = new_chat(client)
        run_id = send(client, chat_id, "factorial of ten")["run_id"]
        wait_turn(client, chat_id, run_id)
        nb = nbformat.from_dict(client.get(f"agent/runs/{run_id}/notebook").json())
        nbformat.validate(nb)
        written = client.post(f"agent/runs/{run_id}/notebook", json={}).json()
        assert (server.root / written["path"]).exists()
    assert nb.metadata["kernelspec"]["name"] == "jupyter-agent"
    recorded = {c.id: c.outputs for c in nb.cells if c.cell_type == "code"}
    deterministic = [
        c.id
        for c in nb.cells
        if c.cell_type == "code" and c.metadata["jupyter_agent"].get("deterministic")
    ]
    assert len(deterministic) == 2
    NotebookClient(nb, kernel_name="jupyter-agent", timeout=60).execute()

    def shape(outputs: Any) -> list[Any]:
        return [{k: v for k, v in o.items() if k != "execution_count"} for o in outputs]

    for cell in nb.cells:
        if cell.id in deterministic:
            assert shape(cell.outputs) == shape(recorded[cell.id]), cell.id
    assert "3628800" in json.dumps(recorded[deterministic[0]])


def test_demo_model_with_no_tier_configured(tmp_path: Path) -> None:
    idle = FakeProvider([]).start()  # unused: the demo runs its own fake in the server
    server = start_server(tmp_path, {"pool_size": 0}, idle)
    try:
        with server.http() as client:
            status = client.get("agent/status").json()
            assert status["demo"] is True
            chat_id = new_chat(client)
            run_id = send(client, chat_id, "hello")["run_id"]
            turn = wait_turn(client, chat_id, run_id, timeout_s=90)
        assert turn["model"] == "jupyter-agent-demo"
        assert turn["llm"]["stopReason"] == "done"
        assert "demo model" in turn["replies"][-1]["text"]
        assert idle.requests == []
    finally:
        stop_server(server)
        idle.stop()
