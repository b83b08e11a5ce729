"""Owners (issue 19): three identities on one real Jupyter server.

The server's identity provider is :class:`tests.plugins.identities.TokenUsersIdentityProvider`
(``owners = "auto"`` resolves it to ``identity``): alice, bob and carol (an admin) each
call with a token of their own. Runs are real (fake provider, real agent kernels); every
check goes through the REST routes, the events socket or the MCP endpoint.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from tests.plugins.identities import identity_server_config
from tests.server.helpers import call, refused

pytestmark = pytest.mark.timeout(240)

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2", "carol": "tok-carol-3"}
# Searches first (so a hit can only be an earlier run's), then saves; sleeps so the race
# below finds the run going.
CELL = (
    "import time\n"
    "hits = memory.search('zebra', k=5, history=True)\n"
    "print('HITS', len(hits))\n"
    "memory.save('zebra stripes are the favourite pattern', category='general')\n"
    "time.sleep(1.5)\n"
)
SCRIPT = [{"text": "Looking.", "cells": [CELL]}, {"text": "Done."}]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(fake: Any, server_kernelspec: str) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "pool_size": 0,
        "cell_timeout_s": 60,
        "tiers": {"codegen": tier},
        "admin_users": ["carol"],
    }


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    return identity_server_config(agent_config, TOKENS)


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"token {TOKENS[name]}"}


def _send(fetch: Any, who: str, chat_id: str, text: str) -> str:
    code, answer = call(
        fetch,
        "agent",
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"text": text},
        headers=_as(who),
    )
    assert code == 202
    return str(answer["run_id"])


def _wait(fetch: Any, spin: Any, who: str, chat_id: str, run_id: str) -> dict[str, Any]:
    for _ in range(2400):
        _, chat = call(fetch, "agent", "chats", chat_id, headers=_as(who))
        for turn in chat["turns"]:
            if turn["run_id"] == run_id and chat["active_run_id"] != run_id:
                return dict(turn)
        spin(0.05)
    raise AssertionError(f"no turn for {run_id}")


def _hits(fetch: Any, who: str, run_id: str) -> str:
    """What the run's cell printed (from its raw log, read as ``who``)."""
    response = fetch("agent", "runs", run_id, params={"log": "raw"}, headers=_as(who))
    lines = [json.loads(line) for line in response.body.decode().splitlines()[1:]]
    [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    return json.dumps(cell["prints"])


def _chat(fetch: Any, who: str, title: str) -> str:
    code, chat = call(
        fetch, "agent", "chats", method="POST", body={"title": title}, headers=_as(who)
    )
    assert code == 201
    assert chat["owner"] == who
    return str(chat["id"])


def _not_found(fetch: Any, *parts: str, who: str = "bob", **kw: Any) -> None:
    data = refused(fetch, *parts, status=404, headers=_as(who), **kw)
    assert data["reason"] == "not_found", data


def test_three_identities_see_only_their_own(
    fetch: Any,
    spin: Any,
    agent_service: Any,
    jp_asyncio_loop: Any,
    jp_http_port: int,
    jp_base_url: str,
) -> None:
    alice_chat = _chat(fetch, "alice", "alice's plans")
    alice_run = _send(fetch, "alice", alice_chat, "tell me about zebra patterns")

    # The race: alice's run is going while bob asks for her chat and run. Every answer is
    # the 404 of a missing object, and nothing of hers changes.
    for _ in range(200):
        if agent_service.manager.active_run_id(alice_chat) == alice_run:
            break
        spin(0.02)
    assert agent_service.manager.active_run_id(alice_chat) == alice_run
    _not_found(fetch, "agent", "chats", alice_chat)
    _not_found(fetch, "agent", "chats", alice_chat, "history")
    _not_found(fetch, "agent", "chats", alice_chat, "notebook")
    _not_found(fetch, "agent", "chats", alice_chat, "notebook", method="POST")
    _not_found(fetch, "agent", "chats", alice_chat, method="PATCH", body={"title": "mine"})
    _not_found(fetch, "agent", "chats", alice_chat, method="DELETE")
    _not_found(fetch, "agent", "chats", alice_chat, "messages", method="POST", body={"text": "x"})
    _not_found(
        fetch,
        "agent",
        "chats",
        alice_chat,
        "messages",
        method="POST",
        body={"control": {"kind": "break", "hard": True}},
    )
    _not_found(fetch, "agent", "break", alice_run, method="POST", body={"hard": True})
    _not_found(
        fetch,
        "agent",
        "runs",
        alice_run,
        "approvals",
        "appr_x",
        method="POST",
        body={"approve": True},
    )
    ws = f"ws://127.0.0.1:{jp_http_port}{jp_base_url}agent/chats/{alice_chat}/events"

    async def connect() -> None:
        await websocket_connect(HTTPRequest(ws, headers=_as("bob")))

    with pytest.raises(HTTPClientError) as info:
        jp_asyncio_loop.run_until_complete(connect())
    assert info.value.code == 404  # refused before the upgrade
    assert agent_service.manager.active_run_id(alice_chat) == alice_run  # not broken

    turn = _wait(fetch, spin, "alice", alice_chat, alice_run)
    assert turn["replies"][-1]["text"] == "Done."
    assert "HITS 0" in _hits(fetch, "alice", alice_run)
    _, chat = call(fetch, "agent", "chats", alice_chat, headers=_as("alice"))
    assert chat["title"] == "alice's plans"
    assert [t["run_id"] for t in chat["turns"]] == [alice_run]

    # Her run, after it ended: bob gets 404 on every read of it.
    for parts in ((), ("stats",), ("notebook",)):
        _not_found(fetch, "agent", "runs", alice_run, *parts)
    _not_found(fetch, "agent", "runs", alice_run, params={"log": "raw"})
    _not_found(fetch, "agent", "runs", alice_run, "notebook", method="POST", body={})
    # Her memory (her run saved it): not in bob's list, 404 for get, edit and delete.
    _, hers = call(fetch, "agent", "memories", headers=_as("alice"))
    [fact] = hers["memories"]
    assert fact["run_id"] == alice_run
    _, mine = call(fetch, "agent", "memories", headers=_as("bob"))
    assert mine["memories"] == []
    assert mine["categories"] == []
    _, found = call(fetch, "agent", "memories", params={"q": "zebra"}, headers=_as("bob"))
    assert found["memories"] == []
    _not_found(fetch, "agent", "memories", fact["id"])
    _not_found(fetch, "agent", "memories", fact["id"], method="PATCH", body={"text": "mine"})
    _not_found(fetch, "agent", "memories", fact["id"], method="DELETE")
    _, props = call(fetch, "agent", "proposals", params={"chat_id": alice_chat}, headers=_as("bob"))
    assert props == {"proposals": []}
    _, listed = call(fetch, "agent", "chats", headers=_as("bob"))
    assert listed["chats"] == []
    _, runs = call(fetch, "agent", "runs", headers=_as("bob"))
    assert runs["runs"] == []

    # Bob's own run: recall (autorecall and memory.search over history) finds nothing of
    # alice's turns or memories, though both hold "zebra".
    bob_chat = _chat(fetch, "bob", "bob's")
    bob_run = _send(fetch, "bob", bob_chat, "what about zebra patterns")
    bob_turn = _wait(fetch, spin, "bob", bob_chat, bob_run)
    assert "HITS 0" in _hits(fetch, "bob", bob_run)
    assert not (bob_turn.get("recall") or {}).get("hits")
    # The control: alice's second run does find her own earlier turn and memory.
    again = _send(fetch, "alice", alice_chat, "zebra patterns again")
    _wait(fetch, spin, "alice", alice_chat, again)
    assert "HITS 0" not in _hits(fetch, "alice", again)

    # Listing: each sees their own; carol (admin) lists everyone's and reads any run.
    _, runs = call(fetch, "agent", "runs", headers=_as("alice"))
    assert {r["run_id"] for r in runs["runs"]} == {alice_run, again}
    assert {r["owner"] for r in runs["runs"]} == {"alice"}
    refused_all = refused(
        fetch, "agent", "runs", status=403, params={"owner": "*"}, headers=_as("bob")
    )
    assert refused_all["reason"] == "not_admin"
    _, everyone = call(fetch, "agent", "runs", params={"owner": "*"}, headers=_as("carol"))
    assert {r["run_id"] for r in everyone["runs"]} == {alice_run, again, bob_run}
    _, of_bob = call(fetch, "agent", "runs", params={"owner": "bob"}, headers=_as("carol"))
    assert [r["run_id"] for r in of_bob["runs"]] == [bob_run]
    code, detail = call(fetch, "agent", "runs", alice_run, headers=_as("carol"))
    assert code == 200
    assert detail["summary"]["owner"] == "alice"
    assert call(fetch, "agent", "runs", alice_run, "stats", headers=_as("carol"))[0] == 200
    # ... but nothing else of hers: no break, no chat.
    _not_found(fetch, "agent", "break", alice_run, method="POST", body={}, who="carol")
    _not_found(fetch, "agent", "chats", alice_chat, who="carol")
    _, mine = call(fetch, "agent", "runs", headers=_as("carol"))
    assert mine["runs"] == []


def test_mcp_calls_are_the_callers(
    fetch: Any, spin: Any, jp_asyncio_loop: Any, jp_http_port: int, jp_base_url: str
) -> None:
    alice_chat = _chat(fetch, "alice", "alice's")
    alice_run = _send(fetch, "alice", alice_chat, "hello")
    _wait(fetch, spin, "alice", alice_chat, alice_run)
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}agent/mcp"

    async def go(who: str) -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers=_as(who), timeout=120) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            shown = await client.call_tool("show_run", {"run_id": alice_run})
            sent = await client.call_tool(
                "chat", {"chat_id": alice_chat, "text": "hi", "wait": False}
            )
            listed = await client.call_tool("list_runs", {})
            resources = await client.list_resources()
            return {"shown": shown, "sent": sent, "listed": listed, "res": resources}

    bob = jp_asyncio_loop.run_until_complete(go("bob"))
    assert bob["shown"].is_error
    assert "no run" in bob["shown"].content[0].text
    assert bob["sent"].is_error
    assert "no chat" in bob["sent"].content[0].text
    assert json.loads(bob["listed"].content[0].text)["runs"] == []
    assert bob["res"].resources == []
    spin(0.3)  # a run bob's send had started would be going by now
    _, chat = call(fetch, "agent", "chats", alice_chat, headers=_as("alice"))
    assert [t["run_id"] for t in chat["turns"]] == [alice_run]  # bob's send: nothing
    assert chat["active_run_id"] is None
    alice = jp_asyncio_loop.run_until_complete(go("alice"))
    assert not alice["shown"].is_error
    assert not alice["sent"].is_error  # the control: her own send is taken
    assert {str(r.uri) for r in alice["res"].resources} >= {
        f"agent://chats/{alice_chat}",
        f"agent://runs/{alice_run}",
    }


def test_a_reserved_run_is_its_chats_owners_to_break(fetch: Any, agent_service: Any) -> None:
    """A run reserved after a closing one has no stored row yet: it is still its chat's
    owner's (alice breaks it: "breaking"), and bob gets the 404 of a missing run."""
    chat_id = _chat(fetch, "alice", "alice's")
    slots = agent_service.manager.slots
    slot = slots.slot(chat_id)
    reserved = slots.reserve(slot)  # as a send during a closing run does
    run_id = reserved.run_id
    try:
        _not_found(fetch, "agent", "break", run_id, method="POST", body={})
        assert reserved.hard_break is False
        code, answer = call(
            fetch, "agent", "break", run_id, method="POST", body={}, headers=_as("alice")
        )
        assert (code, answer["state"]) == (202, "breaking")
        assert reserved.hard_break is True
    finally:
        slots.unreserve(slot)


def test_with_several_users_only_an_admin_deploys_a_program(fetch: Any) -> None:
    """A deployed program runs in every owner's runs: bob (token, not an admin) is refused
    403 ``not_admin`` and nothing is stored; carol (admin) deploys and rolls back."""
    from tests.server.test_programs_rest import FILES

    body = {"files": FILES}
    for path in (("toolcaller",), ("toolcaller", "rollback")):
        data = refused(
            fetch,
            "agent",
            "programs",
            *path,
            method="POST",
            body=body,
            status=403,
            headers=_as("bob"),
        )
        assert data["reason"] == "not_admin", data
    _, listed = call(fetch, "agent", "programs", headers=_as("bob"))
    before = next(p for p in listed["programs"] if p["name"] == "toolcaller")["active"]
    code, deployed = call(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=body,
        headers=_as("carol"),
    )
    assert code == 201, deployed
    _, listed = call(fetch, "agent", "programs", headers=_as("bob"))
    after = next(p for p in listed["programs"] if p["name"] == "toolcaller")["active"]
    assert after != before
    code, _ = call(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        "rollback",
        method="POST",
        body={},
        headers=_as("carol"),
    )
    assert code == 200


def test_an_eval_is_its_owners_alone(fetch: Any, spin: Any, jp_root_dir: Any) -> None:
    """Another owner (an admin too) gets 404 for an eval, and may not re-run a run of
    someone else's through an eval."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Say done."), nbformat.v4.new_code_cell("pass")]
    nbformat.write(nb, jp_root_dir / "suite.ipynb")
    chat_id = _chat(fetch, "alice", "hers")
    run_id = _send(fetch, "alice", chat_id, "look for zebras")
    _wait(fetch, spin, "alice", chat_id, run_id)
    code, state = call(
        fetch, "agent", "evals", method="POST", body={"suite": "suite.ipynb"}, headers=_as("alice")
    )
    assert code == 202
    for who in ("bob", "carol"):
        _not_found(fetch, "agent", "evals", state["eval_id"], who=who)
        _not_found(fetch, "agent", "evals", who=who, method="POST", body={"runs": [run_id]})
    _, mine = call(fetch, "agent", "evals", state["eval_id"], headers=_as("alice"))
    assert mine["eval_id"] == state["eval_id"]
