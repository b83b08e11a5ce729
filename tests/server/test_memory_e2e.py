"""The memory app end to end: a real ``jupyter server`` subprocess (the assembly as
production builds it), a real agent kernel, the fake provider behind the Anthropic adapter
keyed by an environment variable.

A cell saves a fact (REST then shows it, the agent's, with its chat, run and turn) and
tries to save the provider key it read from the server's environment: the kernel's
scrubber has already turned it into ``[redacted: ANTHROPIC_API_KEY]``, the host refuses
that, the cell gets ``AppCallError`` with the reason; nothing else is stored, and the key
is in no record; the run replays.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.trace.verify import verify_run
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

KEY = "sk-ant-e2e-" + secrets.token_hex(20)

CELL = r"""
import os
environ = open(f"/proc/{os.getppid()}/environ").read().split("\0")
key = [x.split("=", 1)[1] for x in environ if x.startswith("ANTHROPIC_API_KEY=")][0]
fact = memory.save("The person keeps notebooks in the analysis/ folder.", category="project")
try:
    memory.save("the provider key is " + key, category="secrets")
except AppCallError as err:
    print("refused:", err)
print(fact.startswith("mem_"), [m["category"] for m in memory.list()])
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": fake.base_url,
        "api_key_ref": "env:ANTHROPIC_API_KEY",
    }
    started = start_server(
        tmp_path_factory.mktemp("memory"),
        {"pool_size": 0, "cell_timeout_s": 30, "tiers": {"codegen": tier}},
        fake,
        extra_env={"ANTHROPIC_API_KEY": KEY},
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def test_a_cell_saves_a_fact_and_is_refused_the_key(server: Server) -> None:
    server.fake.load(
        [
            {"text": "Noting that.", "cells": [CELL]},
            {"expect": {"last_user_contains": "True ['project']"}, "text": "Noted."},
        ]
    )
    with server.http() as client:
        chat_id = new_chat(client)
        run_id = send(client, chat_id, "my notebooks live in analysis/")["run_id"]
        turn = wait_turn(client, chat_id, run_id, timeout_s=120)
        assert turn["replies"][-1]["text"] == "Noted.", turn

        [fact] = client.get("agent/memories").json()["memories"]
        assert fact["text"] == "The person keeps notebooks in the analysis/ folder."
        assert (fact["category"], fact["author"]) == ("project", "agent")
        assert (fact["chat_id"], fact["run_id"], fact["turn_id"]) == (chat_id, run_id, turn["id"])
        hits = client.get("agent/memories", params={"q": "where are the notebooks"}).json()
        assert [m["id"] for m in hits["memories"]] == [fact["id"]]

        path = effect_log(server, run_id)
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
        [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
        printed = json.dumps(cell["prints"])
        assert "refused: Not saved: the text holds a secret this server knows" in printed
        calls = cell["app_calls"]
        assert [(c["method"], c["ok"]) for c in calls] == [
            ("save", True),
            ("save", False),
            ("list", True),
        ]
        assert calls[1]["args"] == {"text": "[refused: credential]", "category": "secrets"}
        digest = cell["digest"]["text"]
        assert f"#{calls[0]['seq']} memory.save (mutation)" in digest
        assert f"#{calls[1]['seq']} memory.save (mutation) failed: Not saved" in digest

        everything = [
            path.read_text(encoding="utf-8"),
            json.dumps(client.get("agent/memories").json()),
            json.dumps(client.get(f"agent/chats/{chat_id}").json()),
            client.get(f"agent/runs/{run_id}").text,
            json.dumps([r.json for r in server.fake.requests]),
            server.log.read_text(errors="replace"),
        ]
        for text in everything:
            assert KEY not in text
    outcome = verify_run(path)
    assert outcome.identical, outcome.message
