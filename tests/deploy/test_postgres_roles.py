"""PostgreSQL per-user roles with row-level security (issue 25; docs/jupyterhub.md).

A cluster of its own, where only the superuser logs in without a password (every other
role by scram-sha-256). The agent's database belongs to an owner role, whose URL creates the
schema; then exactly ``examples/zero-to-jupyterhub/postgres-roles.sql`` is applied, and a
login role per user is made as the docs say. alice's and bob's servers (real ``jupyter
server`` processes, each user's identity, a sandbox) each hold only their own role's URL:
each starts (its schema check runs under that role), chats (a turn with a cell that saves a
memory), adds a memory and changes a setting. Then, with bob's credentials (what bob's pod
holds), no query returns any of alice's rows in any table, nothing of hers can be changed
or deleted, no row can be written in her name, and his password does not open her role;
the owner's URL (the control) sees both users' rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.runtime.kernels.sandbox import SandboxUnavailable, check_sandbox, parse_sandbox
from jupyter_agent.store.repo import Store
from tests.faults.server import FaultServer
from tests.plugins.postgres import PgCluster, _libpq, create_database, start_cluster

pytestmark = [pytest.mark.deploy, pytest.mark.postgres, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
ROLES_SQL = ROOT / "examples/zero-to-jupyterhub/postgres-roles.sql"
DOC = ROOT / "docs/jupyterhub.md"
PASSWORDS = {"agent_owner": "owner-pw-1", "alice": "alice-pw-2", "bob": "bob-pw-3"}
CELL = "memory.save('the team meets on thursdays', category='general')\nprint('saved')"
SCRIPT = {"steps": [{"text": "Saving.", "cells": [CELL]}, {"text": "Saved."}], "repeat": True}
# The tables holding a user's data: (table, the column naming the row).
OWNED = {
    "chats": "id",
    "agent_turns": "id",
    "agent_runs": "run_id",
    "agent_mail": "id",
    "agent_chunks": "id",
    "agent_memories": "id",
    "agent_memory_vectors": "memory_id",
    "agent_recall_docs": "doc_id",
    "agent_recall_df": "owner || '/' || term",
    "agent_recall_suppressed": "run_id",
    "agent_recall_pending": "turn_id",
    "agent_proposals": "id",
    "agent_settings": "owner",
}


def _url(db_url: str, role: str) -> str:
    return (
        make_url(db_url)
        .set(username=role, password=PASSWORDS[role])
        .render_as_string(hide_password=False)
    )


@pytest.fixture
def cluster() -> Iterator[PgCluster]:
    """A cluster of its own: the superuser by trust, every other role by password."""
    try:
        cluster = start_cluster()
    except FileNotFoundError as exc:  # no PostgreSQL binaries: skip, or fail under CI
        from tests.deploy.conftest import deploy_required

        deploy_required(str(exc))
    try:
        with psycopg.connect(_libpq(cluster.url), autocommit=True) as conn:
            hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))  # type: ignore[index]
            hba.write_text(
                "local all postgres trust\n"
                "host all postgres 127.0.0.1/32 trust\n"
                "host all all 127.0.0.1/32 scram-sha-256\n"
            )
            conn.execute("SELECT pg_reload_conf()")
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def roles_db(cluster: PgCluster) -> str:
    """The agent's database, owned by ``agent_owner``, schema made, the roles SQL applied,
    alice and bob made as the docs say; its URL without credentials."""
    db_url = create_database(cluster.url)
    name = make_url(db_url).database
    with psycopg.connect(_libpq(cluster.url), autocommit=True) as conn:
        conn.execute(
            f"CREATE ROLE agent_owner LOGIN CREATEROLE PASSWORD '{PASSWORDS['agent_owner']}'"
        )
        conn.execute(f'ALTER DATABASE "{name}" OWNER TO agent_owner')
    owner_url = _url(db_url, "agent_owner")
    Store(owner_url).close()  # the schema, as the docs' first step makes it
    with psycopg.connect(_libpq(owner_url), autocommit=True) as conn:
        conn.execute(ROLES_SQL.read_text())
        for user in ("alice", "bob"):  # the docs' line, with this user's name and password
            conn.execute(
                f"CREATE ROLE \"{user}\" LOGIN PASSWORD '{PASSWORDS[user]}' IN ROLE agent_users"
            )
    return db_url


def _sandbox() -> dict[str, Any]:
    try:
        check_sandbox(parse_sandbox("bwrap"))
    except SandboxUnavailable:  # each pod is one person's: the documented allowance
        return {}
    return {"KernelPool": {"kernel_sandbox": "bwrap"}}


def _server(base: Path, fake: FakeProvider, user: str, db_url: str) -> FaultServer:
    token = f"token-of-{user}"
    sandbox = _sandbox()
    server = FaultServer(
        base,
        fake,
        {"db_url": _url(db_url, user), "allow_unsandboxed_owners": not sandbox},
        config={
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_agent": True,
                    "jupyterlab": False,
                    "jupyter_lsp": False,
                    "jupyter_server_terminals": False,
                    "notebook_shim": False,
                },
                "identity_provider_class": "tests.plugins.identities.TokenUsersIdentityProvider",
            },
            "TokenUsersIdentityProvider": {"users": {token: user}},
            **sandbox,
        },
    )
    server.token = token  # the server's token is the user's: every request is theirs
    return server


def _write_as(server: FaultServer, user: str) -> dict[str, str]:
    """A chat with a turn (its cell saved a memory), a memory, a setting: the ids."""
    with server.client(timeout=60) as client:
        chat = client.create_chat(f"{user}'s chat")
        assert chat["owner"] == user
        memory = client.add_memory(f"{user} likes tea", category="general")
        client.put_settings(
            {
                "tiers": {
                    "classify": {
                        "provider": "openai-compatible",
                        "model": f"{user}-model",
                        "base_url": "http://127.0.0.1:9/v1",
                    }
                }
            }
        )
    turn = server.send_and_wait(chat["id"], f"{user}: remember the meeting day", 240)
    assert turn["replies"][-1]["text"] == "Saved.", turn
    return {"chat": chat["id"], "run": turn["run_id"], "memory": memory["id"]}


def _rows(url: str) -> dict[str, set[str]]:
    """Every row key of every owned table, as ``url``'s role sees them."""
    with psycopg.connect(_libpq(url)) as conn:
        return {
            table: {str(r[0]) for r in conn.execute(f"SELECT {key} FROM {table}")}
            for table, key in OWNED.items()
        }


def test_bobs_credentials_read_none_of_alices_rows(roles_db: str, tmp_path: Path) -> None:
    fake = FakeProvider(SCRIPT).start()
    servers = {u: _server(tmp_path / u, fake, u, roles_db) for u in ("alice", "bob")}
    try:
        ids = {}
        for user, server in servers.items():
            server.start(timeout_s=180)  # the schema check, under the user's own role
            ids[user] = _write_as(server, user)
    finally:
        for server in servers.values():
            server.stop()
        fake.stop()
    for user, server in servers.items():  # nothing the app does is refused to its role
        for refusal in ("permission denied", "row-level security", "InsufficientPrivilege"):
            assert refusal not in server.log_text, (user, server.log_text)

    # The control: the owner's role sees both users' rows, in every table they wrote.
    everything = _rows(_url(roles_db, "agent_owner"))
    for table in ("chats", "agent_turns", "agent_runs", "agent_memories", "agent_settings"):
        with psycopg.connect(_libpq(_url(roles_db, "agent_owner"))) as conn:
            owners = {
                str(r[0])
                for r in conn.execute(
                    "SELECT c.owner FROM agent_turns t JOIN chats c ON c.id = t.chat_id"
                    if table == "agent_turns"
                    else f"SELECT owner FROM {table}"
                )
            }
        assert owners == {"alice", "bob"}, (table, owners)
    assert ids["alice"]["chat"] in everything["chats"]
    assert "alice" in everything["agent_settings"]

    # bob's credentials: his rows only, in every table.
    bob_url = _url(roles_db, "bob")
    seen = _rows(bob_url)
    assert seen["chats"] == {ids["bob"]["chat"]}
    assert ids["bob"]["run"] in seen["agent_runs"]
    assert ids["alice"]["run"] not in seen["agent_runs"]
    assert seen["agent_settings"] == {"bob"}
    assert ids["alice"]["memory"] not in seen["agent_memories"]
    for table, keys in seen.items():
        assert keys <= everything[table], table
        assert not any("alice" in k for k in keys), (table, keys)
    with psycopg.connect(_libpq(bob_url)) as conn:
        assert conn.execute("SELECT count(*) FROM agent_turns").fetchone() == (1,)
        text = " ".join(
            str(r[0])
            for r in conn.execute(
                "SELECT record FROM agent_turns UNION ALL SELECT text FROM agent_memories "
                "UNION ALL SELECT terms FROM agent_recall_docs UNION ALL SELECT tiers::text "
                "FROM agent_settings UNION ALL SELECT title FROM chats"
            )
        )
        assert "bob" in text
        assert "alice" not in text
        # Nothing of hers changes or goes, and nothing can be written in her name.
        assert conn.execute("UPDATE chats SET title = 'x' WHERE owner = 'alice'").rowcount == 0
        assert conn.execute("DELETE FROM agent_memories WHERE owner = 'alice'").rowcount == 0
        alices_turns = "DELETE FROM agent_turns WHERE chat_id = %s"
        assert conn.execute(alices_turns, [ids["alice"]["chat"]]).rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO chats (id, title, created, updated, owner) "
                "VALUES ('c-forged', 't', 'x', 'x', 'alice')"
            )
        conn.rollback()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("CREATE TABLE stolen (x TEXT)")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(_libpq(make_url(bob_url).set(username="alice").render_as_string(False)))
    # alice's rows are all there after bob's attempts.
    assert _rows(_url(roles_db, "agent_owner")) == everything


def test_the_docs_quote_the_roles_sql_verbatim() -> None:
    doc = DOC.read_text()
    blocks = re.findall(r"```(?:sql|postgresql)\n(.*?)```", doc, flags=re.S)
    assert ROLES_SQL.read_text() in blocks, "docs/jupyterhub.md must quote postgres-roles.sql"
    assert 'CREATE ROLE "alice" LOGIN PASSWORD' in doc
