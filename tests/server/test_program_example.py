"""The ``plan_first`` example deployed to a real ``jupyter server`` subprocess (issue 16).

The server hosts two agents, the default ``agent`` and ``planner`` (the ``agents`` trait),
with the fake model on loopback and a real agent kernel. ``examples/programs/plan_first``
is deployed over REST to ``planner``'s layer only; a message in a planner chat runs
``toolcaller@v9#...`` (summary, header, turn), its plan bubble comes before its first
cell, and ``jupyter agent replay RUN`` exits 0 (from the server's own data dir, and from
another machine's through ``--addr``). A chat of the default agent still runs
``toolcaller@v8``. After a rollback of ``planner``'s layer a new planner chat runs v6
again, and the v7 run still replays identically.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from examples.programs.record_plan_first import FOLDER, MESSAGE, SCRIPT
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.programs.files import read_source
from tests.server.test_e2e import Server, read_until, start_server, stop_server, wait_turn

pytestmark = pytest.mark.timeout(300)

PLANNER = "planner"
PLAIN = [
    {"text": "Let me compute.", "cells": ["print(6 * 7)"]},
    {"expect": {"last_user_contains": "42"}, "text": "The answer is **42**."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    config = {
        "pool_size": 1,
        "tiers": {"codegen": tier},
        "agents": {PLANNER: {"description": "plans first, then acts"}},
    }
    started = start_server(tmp_path_factory.mktemp("plan-first"), config, fake)
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def data_env(server: Server) -> dict[str, str]:
    """The server's own environment (its Jupyter data dir: local runs and store)."""
    base = server.root.parent
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
    )
    return env


def elsewhere_env(tmp: Path) -> dict[str, str]:
    """An environment whose Jupyter data dir knows nothing of the server's runs."""
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "ipython"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        IPYTHONDIR=str(tmp / "ipython"),
    )
    return env


def cli(server: Server, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``jupyter agent ARGS --addr ... --token ...`` as a subprocess."""
    argv = [
        sys.executable,
        "-c",
        "import sys; from jupyter_agent.cli.main import main; sys.exit(main())",
    ]
    argv += [*args, "--addr", server.url, "--token", server.token]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def replay(server: Server, run_id: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``jupyter agent replay RUN``."""
    return cli(server, env, "replay", run_id)


def ask(server: Server, client: httpx.Client, agent: str | None, text: str) -> dict[str, Any]:
    """A new chat of ``agent`` (None: the default), one message; ``{chat, run_id, turn,
    events}`` once its run ended."""
    response = client.post("agent/chats", json={"agent": agent} if agent else {})
    assert response.status_code == 201, response.text
    chat = response.json()
    ws = server.events(chat["id"])
    try:
        sent = client.post(f"agent/chats/{chat['id']}/messages", json={"text": text})
        assert sent.status_code == 202, sent.text
        run_id = sent.json()["run_id"]
        events = read_until(ws, "run_end", run_id)
    finally:
        ws.close()
    turn = wait_turn(client, chat["id"], run_id)
    return {"chat": chat, "run_id": run_id, "turn": turn, "events": events}


def run_detail(client: httpx.Client, run_id: str) -> dict[str, Any]:
    response = client.get(f"agent/runs/{run_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_deploy_to_planner_run_replay_rollback(server: Server, tmp_path: Path) -> None:
    with server.http() as client:
        agents = client.get("agent/agents").json()["agents"]
        assert [a["name"] for a in agents] == ["agent", PLANNER]

        # Deploy the example to planner only.
        response = client.post(
            "agent/programs/toolcaller", json={"files": read_source(FOLDER), "agent": PLANNER}
        )
        assert response.status_code == 201, response.text
        deployed = response.json()
        ref = deployed["program"]["ref"]
        assert ref.startswith("toolcaller@v9#")
        assert deployed["active"] == ref
        assert deployed["program"]["description"].startswith("plans first")
        listed = client.get("agent/programs").json()["programs"]
        active = next(p for p in listed if p["name"] == "toolcaller")["active"]
        assert active[PLANNER] == ref
        assert active["*"].startswith("toolcaller@v8#")

        # A planner chat runs it.
        server.fake.load(SCRIPT)
        planned = ask(server, client, PLANNER, MESSAGE)
        run_id, turn = planned["run_id"], planned["turn"]
        assert turn["programs"][0] == ref
        assert [p.split("#")[0] for p in turn["programs"]] == [
            "toolcaller@v9", "llm@v1", "history@v1", "autorecall@v1",
        ]  # fmt: skip
        assert turn["fromAgent"] == PLANNER
        assert turn["llm"]["stopReason"] == "done"
        assert turn["llm"]["modelCalls"] == 3
        assert "385" in turn["replies"][-1]["text"]
        types = [e["type"] for e in planned["events"]]
        first_bubble, first_cell = types.index("bubble"), types.index("cell_start")
        assert first_bubble < first_cell
        assert planned["events"][first_bubble]["text"] == turn["replies"][0]["text"]
        assert turn["replies"][0]["text"].startswith("1. ")
        detail = run_detail(client, run_id)
        assert detail["header"]["program"] == "toolcaller@v9"
        assert detail["header"]["programs"] == turn["programs"]
        assert detail["header"]["agent"] == PLANNER
        assert detail["summary"]["program"] == "toolcaller@v9"
        assert detail["summary"]["programs"] == turn["programs"]
        assert detail["summary"]["agent"] == PLANNER
        runs = client.get("agent/runs", params={"program": "toolcaller@v9"}).json()["runs"]
        assert [r["run_id"] for r in runs] == [run_id]

        # It replays identically: on the server's machine, and from elsewhere over --addr.
        for env in (data_env(server), elsewhere_env(tmp_path / "elsewhere")):
            replayed = replay(server, run_id, env)
            assert replayed.returncode == 0, replayed.stdout + replayed.stderr

        # The default agent still runs the built-in loop.
        server.fake.load(PLAIN)
        plain = ask(server, client, None, "what is 6 * 7?")
        assert plain["turn"]["programs"][0] == active["*"]
        assert plain["turn"]["fromAgent"] == "agent"
        assert run_detail(client, plain["run_id"])["header"]["program"] == "toolcaller@v8"

        # Roll planner back: the server-wide version applies to it again.
        response = client.post("agent/programs/toolcaller/rollback", json={"agent": PLANNER})
        assert response.status_code == 200, response.text
        assert response.json()["active"] == active["*"]
        server.fake.load(PLAIN)
        after = ask(server, client, PLANNER, "what is 6 * 7?")
        assert after["turn"]["programs"][0] == active["*"]
        assert after["turn"]["fromAgent"] == PLANNER

    # The v6 run still replays identically (its version is kept: a run names it).
    for env in (data_env(server), elsewhere_env(tmp_path / "elsewhere2")):
        replayed = replay(server, run_id, env)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    listed_runs = cli(server, data_env(server), "trace", "ls", "--program", "toolcaller", "--json")
    assert listed_runs.returncode == 0, listed_runs.stderr
    assert run_id in listed_runs.stdout
    assert ref in listed_runs.stdout
