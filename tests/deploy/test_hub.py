"""The agent behind a real JupyterHub: two users, one shared PostgreSQL, isolation.

One Hub (:mod:`tests.deploy.hub`) for the module: alice and bob, each with a single-user
server (``jupyterhub-singleuser``) that loads the agent with the fake provider as codegen
and the same PostgreSQL database. Each user talks to the agent through the Hub's proxy URL
(``/user/NAME/agent/...``) with a token the Hub issued to them, as the panel and the CLI do.

Isolation (issue 19): on his own server bob gets 404 for alice's chat, run, events socket,
exports and memories, with the message a missing id gets (ids do not leak); his lists show
none of hers; bob's token on alice's URL is refused by the Hub itself (403).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.llm.fake.server import FakeProvider
from tests.deploy.hub import Hub, HubUser, need_chp
from tests.faults.server import wait_for
from tests.plugins.postgres import create_database, drop_database

pytestmark = [pytest.mark.deploy, pytest.mark.postgres]

SCRIPT = {
    "steps": [{"text": "Let me compute.", "cells": ["6 * 7"]}, {"text": "The answer is 42."}],
    "repeat": True,
    "per_turn": True,
}
# Only the agent and the Hub's own extension: the others only cost start time here.
OTHERS_OFF = {
    "jupyterlab": False,
    "jupyter_lsp": False,
    "jupyter_server_terminals": False,
    "notebook_shim": False,
}


@dataclass
class HubPair:
    hub: Hub
    alice: HubUser
    bob: HubUser
    db_url: str


@pytest.fixture(scope="module")
def hub_pair(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubPair]:
    """The module's Hub with alice and bob running; stopped with no process left."""
    chp = need_chp()
    db_url = create_database(pg_url)
    fake = FakeProvider(SCRIPT).start()
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True, **OTHERS_OFF}},
        "JupyterAgent": {
            "pool_size": 0,
            # A server per user, as examples/zero-to-jupyterhub sets it (the agent's own
            # scoping is what this module tests; kernels: tests/server/test_isolation*).
            "allow_unsandboxed_owners": True,
            "db_url": db_url,
            "tiers": {
                "codegen": {
                    "provider": "fake",
                    "model": "claude-sonnet-4-5",
                    "base_url": fake.base_url,
                }
            },
        },
    }
    hub = Hub(Path(tmp_path_factory.mktemp("hub")), chp, config)
    try:
        hub.start()
        alice, bob = hub.add_users("alice", "bob")
        yield HubPair(hub=hub, alice=alice, bob=bob, db_url=db_url)
    finally:
        hub.stop()
        left = hub.leftovers()
        fake.stop()
        drop_database(pg_url, db_url)
    assert not left, f"processes left after the Hub stopped: {left}"


def client(user: HubUser, token: str | None = None) -> AgentClient:
    """A client of ``user``'s server through the proxy, with ``token`` (default theirs)."""
    return AgentClient(user.url, token or user.token, timeout=60)


def chat_and_run(user: HubUser, text: str) -> tuple[str, str]:
    """``(chat_id, run_id)`` of a new chat's first run on ``user``'s server, once written."""
    with client(user) as c:
        chat = c.create_chat(f"{user.name}'s chat")
        sent = c.send(chat["id"], text)
        assert sent["routed"] == "run", sent

        def written() -> dict[str, Any] | None:
            detail = c.chat(chat["id"])
            if detail["active_run_id"] is not None:
                return None
            return next((t for t in detail["turns"] if t["run_id"] == sent["run_id"]), None)

        turn = wait_for(f"{user.name}'s turn", written, 120)
    assert turn["replies"][-1]["text"] == "The answer is 42.", turn
    assert turn["llm"]["cells"] == 1, turn["llm"]
    return chat["id"], sent["run_id"]


async def first_events(user: HubUser, chat_id: str, until: str) -> list[str]:
    """The event types of the chat's socket (through the proxy) up to the first ``until``."""
    types: list[str] = []
    with client(user) as c:

        async def read() -> None:
            async for event in c.events(chat_id, since=0):
                types.append(event["type"])
                if event["type"] == until:
                    return

        await asyncio.wait_for(read(), 60)
    return types


def db_rows(db_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    _scheme, _, rest = db_url.partition("://")
    with psycopg.connect(f"postgresql://{rest}") as conn:
        return list(conn.execute(sql, args).fetchall())


def test_each_user_chats_with_the_agent_through_the_hub(hub_pair: HubPair) -> None:
    """alice and bob each run a cell through the proxy; both runs are in the one database
    and each user's events socket works through the proxy."""
    alice_chat, alice_run = chat_and_run(hub_pair.alice, "what is 6*7?")
    bob_chat, bob_run = chat_and_run(hub_pair.bob, "and for me?")
    assert len({alice_run, bob_run}) == 2
    rows = db_rows(
        hub_pair.db_url,
        "SELECT chat_id, run_id FROM agent_turns WHERE run_id = ANY(%s) ORDER BY chat_id",
        [alice_run, bob_run],
    )
    assert sorted(rows) == sorted([(alice_chat, alice_run), (bob_chat, bob_run)])
    for user, chat_id in ((hub_pair.alice, alice_chat), (hub_pair.bob, bob_chat)):
        types = asyncio.run(first_events(user, chat_id, until="run_end"))
        assert "run_start" in types, types
        assert types[-1] == "run_end", types


def test_runs_record_the_hub_user_as_owner(hub_pair: HubPair) -> None:
    """The owner of a chat and of its run is the Hub user who made them (spec A.3, A.6)."""
    chat_id, run_id = chat_and_run(hub_pair.alice, "whose is this?")
    with client(hub_pair.alice) as c:
        summary = next(ch for ch in c.chats() if ch["id"] == chat_id)
        run = next(r for r in c.runs()["runs"] if r["run_id"] == run_id)
    assert summary["owner"] == "alice"
    assert run["owner"] == "alice"
    assert db_rows(hub_pair.db_url, "SELECT owner FROM chats WHERE id = %s", chat_id) == [
        ("alice",)
    ]
    assert db_rows(hub_pair.db_url, "SELECT owner FROM agent_runs WHERE run_id = %s", run_id) == [
        ("alice",)
    ]


def test_a_users_tier_change_is_theirs_alone(hub_pair: HubPair) -> None:
    """alice's tier change on her server is stored under her name in the shared database;
    bob's server keeps the admin's tiers for him, and alice's is back on a revert."""
    with client(hub_pair.alice) as a, client(hub_pair.bob) as b:
        admin = a.settings()["tiers"]["codegen"]
        mine = {**admin, "model": "claude-haiku-4-5"}
        try:
            changed = a.put_settings({"tiers": {"codegen": mine}})
            assert changed["tiers"]["codegen"]["model"] == "claude-haiku-4-5"
            assert b.settings()["tiers"]["codegen"] == admin
            assert b.settings()["overridden"] == []
            assert b.status()["tiers"]["codegen"]["model"] == admin["model"]
            assert a.status()["tiers"]["codegen"]["model"] == "claude-haiku-4-5"
            rows = db_rows(hub_pair.db_url, "SELECT owner FROM agent_settings ORDER BY owner")
            assert rows == [("alice",)]
        finally:
            a.put_settings({"tiers": {"codegen": None}})
        assert a.settings()["tiers"]["codegen"] == admin


def missing_like(real_id: str) -> str:
    """An id of the same shape as ``real_id`` that names nothing."""
    prefix, _, rest = real_id.partition("_")
    return f"{prefix}_{'0' * len(rest)}"


def refused_404(call: Any, real_id: str, missing: Any) -> None:
    """``call()`` (on alice's id) and ``missing()`` (on a made-up id) both fail 404 with
    the same message once the ids are blanked: the answer tells nothing about the id."""
    with pytest.raises(ClientError) as got:
        call()
    with pytest.raises(ClientError) as baseline:
        missing()
    assert got.value.status == 404, got.value
    assert baseline.value.status == 404, baseline.value
    fake_id = missing_like(real_id)
    assert got.value.message.replace(real_id, "ID") == baseline.value.message.replace(fake_id, "ID")


def test_bob_gets_404_for_alices_objects(hub_pair: HubPair) -> None:
    """On his own server (same database) bob cannot see, use or export alice's objects."""
    chat_id, run_id = chat_and_run(hub_pair.alice, "alice's secret analysis")
    with client(hub_pair.alice) as a:
        memory = a.add_memory("alice prefers seaborn for plots", category="style")
    chat_x, run_x, mem_x = missing_like(chat_id), missing_like(run_id), missing_like(memory["id"])

    with client(hub_pair.bob) as b:
        assert chat_id not in {ch["id"] for ch in b.chats()}
        assert run_id not in {r["run_id"] for r in b.runs(limit=1000)["runs"]}
        assert memory["id"] not in {m["id"] for m in b.list_memories()}
        assert all("seaborn" not in m["text"] for m in b.list_memories(q="seaborn"))

        chat_calls = [
            lambda i: b.chat(i),
            lambda i: b._json("GET", f"agent/chats/{i}/history"),
            lambda i: b.chat_notebook(i),
            lambda i: b.write_chat_notebook(i),
            lambda i: b.send(i, "let me in"),
            lambda i: b.rename_chat(i, "mine now"),
        ]
        for call in chat_calls:
            refused_404(lambda c=call: c(chat_id), chat_id, lambda c=call: c(chat_x))
        run_calls = [
            lambda i: b.run(i),
            lambda i: b.run_log(i),
            lambda i: b.run_stats(i),
            lambda i: b.run_notebook(i),
            lambda i: b.write_run_notebook(i),
            lambda i: b.break_run(i, hard=True),
        ]
        for call in run_calls:
            refused_404(lambda c=call: c(run_id), run_id, lambda c=call: c(run_x))
        memory_calls = [
            lambda i: b.get_memory(i),
            lambda i: b.update_memory(i, text="bob was here"),
            lambda i: b.delete_memory(i),
        ]
        for call in memory_calls:
            refused_404(lambda c=call: c(memory["id"]), memory["id"], lambda c=call: c(mem_x))

        async def open_events() -> None:
            async for _event in b.events(chat_id):
                raise AssertionError("bob's socket on alice's chat was accepted")

        with pytest.raises(ClientError) as socket_refused:
            asyncio.run(asyncio.wait_for(open_events(), 30))
        assert socket_refused.value.status == 404, socket_refused.value

        # Last: a delete that went through would take alice's chat away.
        refused_404(lambda: b.delete_chat(chat_id), chat_id, lambda: b.delete_chat(chat_x))

    with client(hub_pair.alice) as a:  # everything of hers is still there, unchanged
        detail = a.chat(chat_id)
        assert detail["title"] == "alice's chat"
        assert [t["run_id"] for t in detail["turns"]] == [run_id]
        assert a.get_memory(memory["id"])["text"] == "alice prefers seaborn for plots"


def test_bobs_token_on_alices_url_is_refused_by_the_hub(hub_pair: HubPair) -> None:
    """The Hub's auth of alice's server refuses bob's token, before the agent is asked."""
    chat_id, _run_id = chat_and_run(hub_pair.alice, "only for alice")
    with client(hub_pair.alice, token=hub_pair.bob.token) as wrong:
        for call in (wrong.chats, lambda: wrong.chat(chat_id), wrong.status):
            with pytest.raises(ClientError) as refused:
                call()
            assert refused.value.status == 403, refused.value
            assert hub_pair.bob.token not in str(refused.value)
    with httpx.Client(timeout=30) as http:  # the same with no agent client in between
        answer = http.get(
            f"{hub_pair.alice.url}agent/chats/{chat_id}",
            headers={"Authorization": f"token {hub_pair.bob.token}"},
        )
    assert answer.status_code == 403
    assert chat_id not in answer.text
    assert "only for alice" not in answer.text


VALUES = Path(__file__).resolve().parents[2] / "examples/zero-to-jupyterhub/values.yaml"


def test_the_zero_to_jupyterhub_config_is_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config file the Helm values mount loads, names only real traits of the agent
    and the pool, and takes the database URL from the secret's environment variable."""
    import yaml
    from traitlets.config.loader import PyFileConfigLoader

    from jupyter_agent.runtime.kernels.pool import KernelPool
    from jupyter_agent.server.app import JupyterAgent

    values = yaml.safe_load(VALUES.read_text())
    single = values["singleuser"]
    assert "JUPYTER_AGENT_DB_URL" not in single["extraEnv"]  # one role per user, not shared
    assert "JUPYTER_AGENT_DB_URL" in values["hub"]["extraConfig"]["jupyterAgentDbUrl"]
    assert single["extraEnv"]["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"]
    mounted = single["extraFiles"]["jupyter-agent-config"]
    assert mounted["mountPath"].endswith("/jupyter_server_config.py")
    (tmp_path / "jupyter_server_config.py").write_text(mounted["stringData"])
    monkeypatch.setenv("JUPYTER_AGENT_DB_URL", "postgresql+psycopg://agent@db.invalid/agent")
    config = PyFileConfigLoader("jupyter_server_config.py", path=str(tmp_path)).load_config()

    unknown = set(config.JupyterAgent) - set(JupyterAgent.class_trait_names(config=True))
    assert not unknown, f"not JupyterAgent traits: {sorted(unknown)}"
    assert not set(config.KernelPool) - set(KernelPool.class_trait_names(config=True))
    agent = JupyterAgent(config=config)  # every value passes the traits' validation
    assert agent.db_url == "postgresql+psycopg://agent@db.invalid/agent"
    for tier in agent.tiers.values():  # keys only by reference, each bound to its URL
        assert tier["api_key_ref"].startswith("env:")
        assert tier["base_url"] in agent.key_bindings[tier["api_key_ref"]]
    pool = KernelPool(kernel_manager=None, config=config)  # size <= pool_max
    # Several owners: a sandbox, or the allowance set knowingly (a pod per user).
    assert agent.owners == "identity"
    assert agent.allow_unsandboxed_owners or pool.kernel_sandbox != "none"
