"""Issue 18's consuming acceptance, end to end: a real ``jupyter server`` subprocess whose
``c.JupyterAgent.mcp_servers`` names the suite's own MCP server (stdio), a real agent
kernel, the fake model on loopback.

The model calls an MCP tool from a cell: the system prompt lists the tool (one line, from
its input schema), the result is in the digest the model reads next, the log holds the
``config.get mcp`` catalogue and the ``app.call``, and the run replays identically after
the server (and with it the MCP server) is gone. A mutating tool waits for the person under
``writes``: the ``approval`` event has kind ``mcp``, the REST answer lets the call run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.reader import pair_effects
from jupyter_agent.trace.verify import verify_run
from tests.mcp_demo import stdio_command
from tests.server.test_e2e import (
    Server,
    effect_log,
    new_chat,
    send,
    start_server,
    stop_server,
    wait_turn,
)

pytestmark = pytest.mark.timeout(300)

ADD = "r = mcp.demo.add(a=2, b=3)\nprint('pid', mcp.demo.pid())\nr"
NOTE = "mcp.demo.write_note(text='hello from the agent')"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from jupyter_agent.llm.fake.server import FakeProvider

    base = tmp_path_factory.mktemp("mcp")
    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    config = {
        "pool_size": 0,
        "cell_timeout_s": 60,
        "tiers": {"codegen": tier},
        "approval": "writes",
        "mcp_servers": {
            "demo": {
                "command": stdio_command(),
                "tools": ["add", "pid", "write_note"],
                "env": {"MCP_DEMO_NOTES": "env:DEMO_NOTES_FILE"},
            }
        },
    }
    notes = base / "notes.txt"
    started = start_server(base, config, fake, extra_env={"DEMO_NOTES_FILE": str(notes)})
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _status(pid)


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


@pytest.fixture(scope="module")
def added(server: Server) -> dict[str, Any]:
    with server.http() as client:
        chat_id = new_chat(client)
        server.fake.load(
            [
                {"text": "Asking the demo server.", "cells": [ADD]},
                {"expect": {"last_user_contains": "'sum': 5"}, "text": "2 + 3 = 5."},
            ]
        )
        before = len(server.fake.requests)
        run_id = send(client, chat_id, "Add 2 and 3 with the demo tool.")["run_id"]
        turn = wait_turn(client, chat_id, run_id, timeout_s=120)
    assert server.fake.remaining == 0
    requests = [r.json for r in server.fake.requests[before:]]
    return {"chat_id": chat_id, "run_id": run_id, "turn": turn, "requests": requests}


def test_the_prompt_lists_the_tool_and_the_digest_holds_its_result(
    added: dict[str, Any],
) -> None:
    first, second = added["requests"]
    system = json.dumps(first["system"])
    assert "mcp.demo.add(a: int, b: int) -> Any" in system
    assert "mcp.demo.write_note(text: str) -> Any" in system
    assert "may wait for the person" in system  # write_note is mutating
    assert "Installed apps" in system
    assert "mcp" in system.split("Installed apps", 1)[1].split("\\n", 1)[0]
    assert "'sum': 5" in json.dumps(second["messages"][-1])
    assert added["turn"]["replies"][-1]["text"] == "2 + 3 = 5."


def test_the_log_records_the_catalogue_and_the_call(server: Server, added: dict[str, Any]) -> None:
    effects = pair_effects(read_log(effect_log(server, added["run_id"])))
    # toolcaller@v7: the catalogue is part of the one start answer.
    [start] = [e for e in effects if e.name == "config.get" and e.data.get("key") == "start"]
    assert start.result is not None
    answer = start.result.data["mcp"]
    assert [s["name"] for s in answer["servers"]] == ["demo"]
    assert [t["name"] for t in answer["servers"][0]["tools"]] == [
        "add",
        "write_note",
        "pid",
    ]  # the server's order
    calls = [e for e in effects if e.name == "app.call" and e.data.get("app") == "mcp"]
    assert [c.data["method"] for c in calls] == ["demo.add", "demo.pid"]
    assert calls[0].result is not None
    assert calls[0].result.data["value"]["structured"] == {"sum": 5}
    cell = next(e for e in effects if e.name == "cell.run")
    assert {c.parent for c in calls} == {cell.seq}


def test_a_mutating_tool_waits_for_the_person_then_runs(server: Server) -> None:
    notes = server.root.parent / "notes.txt"
    with server.http() as client:
        chat_id = new_chat(client)
        server.fake.load(
            [
                {"text": "Writing the note.", "cells": [NOTE]},
                {"expect": {"last_user_contains": "1 notes"}, "text": "Noted."},
            ]
        )
        ws = server.events(chat_id)
        try:
            run_id = send(client, chat_id, "Write a note.")["run_id"]
            while True:
                event = json.loads(ws.recv())
                if event["type"] == "approval":
                    break
                assert event["type"] != "run_end", "the run ended without asking"
        finally:
            ws.close()
        assert event["kind"] == "mcp"
        assert event["code"] == "mcp.demo.write_note(text='hello from the agent')"
        assert not notes.exists()  # nothing ran before the answer
        path = f"agent/runs/{run_id}/approvals/{event['approval_id']}"
        assert client.post(path, json={"approve": True}).status_code == 200
        turn = wait_turn(client, chat_id, run_id, timeout_s=120)
    assert turn["replies"][-1]["text"] == "Noted."
    assert notes.read_text().splitlines() == ["hello from the agent"]


def test_the_run_replays_identically_without_the_mcp_server(
    server: Server, added: dict[str, Any]
) -> None:
    path = effect_log(server, added["run_id"])
    stop_server(server)  # the server's hub stops its MCP servers with it
    digest = json.dumps(added["requests"][1]["messages"][-1])
    pid = int(digest.split("pid ", 1)[1].split("\\n", 1)[0])
    assert not _alive(pid), "the MCP server outlived the Jupyter server"
    report = verify_run(path)
    assert report.identical, report
