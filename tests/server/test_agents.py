"""Several agents on one server, end to end: a real ``jupyter server`` subprocess hosting
the default agent, ``reviewer`` (the ``agents`` trait: its space folder, its own codegen
model) and ``critic`` (a folder ``{data_dir}/jupyter_agent/agents/critic/`` with an
``agent.json``), each with its own ``_soul.md``; the fake provider on loopback.

``GET agent/agents`` lists the three with their own soul fingerprints; a chat made for
``reviewer`` gets runs answered by it: the turn's ``fromAgent`` and identity fingerprint,
the run summary's and the log header's ``agent``, the model the request went to and the
soul in the system prompt the fake received. An unknown agent is a 400 ``unknown_agent``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.trace.verify import verify_run
from tests.server.test_e2e import Server, send, start_server, stop_server, wait_turn

pytestmark = pytest.mark.timeout(300)

REVIEWER_SOUL = "You are Reviewer, who reads code slowly and says what could break.\n"
CRITIC_SOUL = "You are Critic, terse and exacting.\n"
DEFAULT_MODEL = "claude-sonnet-4-5"
REVIEWER_MODEL = "claude-haiku-4-5"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("agents")
    reviewer_space = base / "reviewer-space"
    (reviewer_space / "skills").mkdir(parents=True)
    (reviewer_space / "_soul.md").write_text(REVIEWER_SOUL, encoding="utf-8")
    (reviewer_space / "skills" / "review.md").write_text("# Review\nRead the diff.\n")
    critic = base / "data" / "jupyter_agent" / "agents" / "critic"
    critic.mkdir(parents=True)
    (critic / "_soul.md").write_text(CRITIC_SOUL, encoding="utf-8")
    (critic / "agent.json").write_text(json.dumps({"description": "Finds faults"}))
    (critic.parent / "Not-A-Name").mkdir()
    fake = FakeProvider([]).start()
    tier = {"provider": "fake", "model": DEFAULT_MODEL, "base_url": fake.base_url}
    agents = {
        "reviewer": {
            "space": str(reviewer_space),
            "description": "Reviews code",
            "tiers": {"codegen": {**tier, "model": REVIEWER_MODEL}},
        }
    }
    started = start_server(
        base, {"pool_size": 0, "tiers": {"codegen": tier}, "agents": agents}, fake
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def new_chat(client: httpx.Client, **body: Any) -> dict[str, Any]:
    response = client.post("agent/chats", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def effect_header(server: Server, run_id: str) -> dict[str, Any]:
    [path] = (server.root.parent / "data").rglob(f"{run_id}.jsonl")
    return dict(json.loads(path.read_text(encoding="utf-8").splitlines()[0]))


def test_the_agents_are_listed_with_their_own_souls(server: Server) -> None:
    with server.http() as client:
        response = client.get("agent/agents")
    assert response.status_code == 200, response.text
    agents = {a["name"]: a for a in response.json()["agents"]}
    assert list(agents) == ["agent", "critic", "reviewer"]  # the default first
    assert [a["default"] for a in agents.values()] == [True, False, False]
    assert agents["reviewer"]["soul_fingerprint"] == sha(REVIEWER_SOUL)
    assert agents["critic"]["soul_fingerprint"] == sha(CRITIC_SOUL)
    assert len({a["soul_fingerprint"] for a in agents.values()}) == 3
    assert (agents["reviewer"]["description"], agents["critic"]["description"]) == (
        "Reviews code",
        "Finds faults",
    )
    assert agents["reviewer"]["tiers"]["codegen"] == {"provider": "fake", "model": REVIEWER_MODEL}
    assert agents["agent"]["tiers"]["codegen"] == {"provider": "fake", "model": DEFAULT_MODEL}
    assert "base_url" not in response.text
    # The folder with a bad name was skipped, and said so at start.
    assert "Not-A-Name" in server.log.read_text(errors="replace")


def _run(server: Server, client: httpx.Client, chat_id: str, text: str) -> tuple[Any, Any]:
    server.fake.load([{"text": f"Answer to {text}."}])
    before = len(server.fake.requests)
    run_id = send(client, chat_id, text)["run_id"]
    turn = wait_turn(client, chat_id, run_id)
    [request] = server.fake.requests[before:]
    return turn, request


def test_a_chat_of_an_agent_is_answered_by_it(server: Server) -> None:
    with server.http() as client:
        chat = new_chat(client, title="review", agent="reviewer")
        assert chat["agent"] == "reviewer"
        listed = {c["id"]: c for c in client.get("agent/chats").json()["chats"]}
        assert listed[chat["id"]]["agent"] == "reviewer"
        turn, request = _run(server, client, chat["id"], "look at my diff")
        assert turn["fromAgent"] == "reviewer"
        assert turn["llm"]["fingerprints"]["identity"] == sha(REVIEWER_SOUL)
        assert request.json["model"] == REVIEWER_MODEL
        system = json.dumps(request.json["system"])
        assert json.dumps(REVIEWER_SOUL)[1:-1] in system
        assert "Agent name: reviewer" in system
        assert "review" in system  # the agent's user skill is listed
        runs = {r["run_id"]: r for r in client.get("agent/runs").json()["runs"]}
        assert runs[turn["run_id"]]["agent"] == "reviewer"
        assert effect_header(server, turn["run_id"])["agent"] == "reviewer"

        default_chat = new_chat(client)
        assert default_chat["agent"] == "agent"
        other, other_request = _run(server, client, default_chat["id"], "hello")
        assert other["fromAgent"] == "agent"
        assert other["llm"]["fingerprints"]["identity"] != sha(REVIEWER_SOUL)
        assert other_request.json["model"] == DEFAULT_MODEL
        assert json.dumps(REVIEWER_SOUL)[1:-1] not in json.dumps(other_request.json["system"])

        critic_chat = new_chat(client, agent="critic")
        critic, critic_request = _run(server, client, critic_chat["id"], "judge")
        assert critic["fromAgent"] == "critic"
        assert critic["llm"]["fingerprints"]["identity"] == sha(CRITIC_SOUL)
        assert json.dumps(CRITIC_SOUL)[1:-1] in json.dumps(critic_request.json["system"])
    [path] = (server.root.parent / "data").rglob(f"{turn['run_id']}.jsonl")
    outcome = verify_run(path)
    assert outcome.identical, outcome.message


def test_an_unknown_agent_is_refused(server: Server) -> None:
    with server.http() as client:
        before = len(client.get("agent/chats").json()["chats"])
        for body in ({"agent": "nobody"}, {"agent": "Reviewer"}, {"agent": 3}):
            response = client.post("agent/chats", json=body)
            assert response.status_code == 400, response.text
            assert response.json()["reason"] == "unknown_agent"
        assert len(client.get("agent/chats").json()["chats"]) == before
