"""PostgreSQL for real: several servers on one database, and a database that goes away.

- Four ``jupyter server`` processes started at once on one fresh database all answer
  ``GET agent/status``, and the schema's version table records every migration once (the
  migrations ran under the advisory lock, once).
- While a run's cell sleeps, every connection of the server to its database is killed
  (``pg_terminate_backend`` from an admin connection): the run ends with its turn written,
  and the next message in the chat runs and is written too.
- The PostgreSQL server restarts between two runs: the second run works and is written.

The servers are :class:`~tests.faults.server.FaultServer` subprocesses with the fake
provider as their model. The restart test starts its own cluster (it restarts it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.store.migrations import _CREATE_VERSION_TABLE, LATEST_VERSION
from tests.deploy.conftest import deploy_required
from tests.faults.server import FaultServer, wait_for
from tests.plugins.postgres import (
    PgCluster,
    _libpq,
    create_database,
    drop_database,
    start_cluster,
)

pytestmark = pytest.mark.timeout(420)

SERVERS = 4


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


def _admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(_libpq(url), autocommit=True)


def _servers_connections(admin_url: str, db_url: str) -> list[int]:
    """Backend pids connected to the database of ``db_url`` (the servers' pools)."""
    from sqlalchemy.engine import make_url

    name = make_url(db_url).database
    with _admin(admin_url) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return [int(r[0]) for r in rows]


def _kill_connections(admin_url: str, db_url: str) -> int:
    """``pg_terminate_backend`` on every connection to the database; how many it cut."""
    pids = _servers_connections(admin_url, db_url)
    with _admin(admin_url) as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return len(pids)


def _waiting_cell(ran: Path, go: Path) -> str:
    """A cell that says it started, then waits (bounded) until ``go`` exists."""
    return (
        "import os, time\n"
        f"open({str(ran)!r}, 'a').write('ran\\n')\n"
        "for _ in range(1200):\n"
        f"    if os.path.exists({str(go)!r}):\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "print('cell done')\n"
    )


def _stored_turns(db_url: str, chat_id: str) -> list[tuple[str, str]]:
    """``(run_id, stop_reason)`` of the chat's stored turns, read from the database."""
    with _admin(db_url) as conn:
        rows = conn.execute(
            "SELECT run_id, stop_reason FROM agent_turns WHERE chat_id = %s ORDER BY created",
            (chat_id,),
        ).fetchall()
    return [(str(r[0]), str(r[1])) for r in rows]


def _done(turn: dict[str, Any]) -> str:
    """The turn's reply text, after checking it ended normally (stop reason ``done``)."""
    assert (turn["llm"]["stopReason"], turn["llm"]["endCause"]) == ("done", "done"), turn
    return "\n".join(r["text"] for r in turn["replies"])


def _waiting_backends(admin_url: str, db_url: str) -> int:
    """How many connections to the database wait on a lock (a table's or an advisory one)."""
    from sqlalchemy.engine import make_url

    with _admin(admin_url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE NOT l.granted AND a.datname = %s",
            (make_url(db_url).database,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_four_servers_started_at_once_migrate_one_database_once(
    tmp_path: Path, fake: FakeProvider, pg_url: str, pg_db_url: str
) -> None:
    """The four openers are made to meet: the test holds ``schema_version`` locked until
    every server waits on the database, then lets them all go at once. Without the
    migration lock all four would read version 0 and three would fail on tables that
    already exist; with it one migrates and three find nothing to do."""
    servers = [
        FaultServer(tmp_path / f"srv{i}", fake, {"db_url": pg_db_url}) for i in range(SERVERS)
    ]
    errors: list[BaseException] = []

    def start(server: FaultServer) -> None:
        try:
            server.start(timeout_s=180)
        except BaseException as exc:  # reported below, with every server's log
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(s,)) for s in servers]
    gate = psycopg.connect(_libpq(pg_db_url))  # one transaction, held open
    try:
        gate.execute(_CREATE_VERSION_TABLE)  # committed first: the servers see it exists
        gate.commit()
        gate.execute("LOCK TABLE schema_version IN ACCESS EXCLUSIVE MODE")
        for thread in threads:
            thread.start()
        wait_for(
            f"{SERVERS} servers to wait on the database",
            lambda: _waiting_backends(pg_url, pg_db_url) >= SERVERS or errors,
            180,
        )
        assert not errors, (errors, [s.log_text[-3000:] for s in servers])
        gate.commit()  # every server goes at once
        for thread in threads:
            thread.join(240)
        assert not errors, (errors, [s.log_text[-3000:] for s in servers])
        for server in servers:
            with server.client() as client:
                assert client.status()["tiers"]
        with _admin(pg_db_url) as conn:
            rows = conn.execute(
                "SELECT version, COUNT(*) FROM schema_version GROUP BY version ORDER BY version"
            ).fetchall()
            locks = conn.execute(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'"
            ).fetchone()
        assert [(int(v), int(n)) for v, n in rows] == [(v, 1) for v in range(1, LATEST_VERSION + 1)]
        assert locks is not None
        assert locks[0] == 0, "a server still holds the migration lock"
        # One chat through each server: they all work on the one schema.
        for i, server in enumerate(servers):
            fake.load([{"text": f"hello from server {i}"}])
            with server.client() as client:
                chat_id = client.create_chat(f"server {i}")["id"]
            assert _done(server.send_and_wait(chat_id, "hi")) == f"hello from server {i}"
        with _admin(pg_db_url) as conn:
            counted = conn.execute("SELECT COUNT(*) FROM agent_turns").fetchone()
        assert counted is not None
        assert counted[0] == SERVERS
    finally:
        gate.close()
        for server in servers:
            server.stop()
        for thread in threads:
            thread.join(60)


def test_connections_killed_mid_run_the_run_ends_written_and_the_next_message_works(
    tmp_path: Path, fake: FakeProvider, pg_url: str, pg_db_url: str
) -> None:
    server = FaultServer(tmp_path / "srv", fake, {"db_url": pg_db_url})
    ran, go = server.root / "ran.txt", server.root / "go"
    fake.load(
        [
            {"text": "Running the slow cell.", "cells": [_waiting_cell(ran, go)]},
            {"text": "The slow cell finished."},
            {"text": "Second run: fine."},
        ]
    )
    try:
        server.start()
        with server.client() as client:
            chat_id = client.create_chat("connection loss")["id"]
            sent = client.send(chat_id, "run the slow cell")
        wait_for("the cell to start", ran.exists)
        assert _kill_connections(pg_url, pg_db_url) >= 1, "the server held no connection"
        with server.client() as client:  # the server answers while its connections are gone
            assert client.status()["tiers"]
        go.touch()
        first = wait_for(
            f"the turn of {sent['run_id']}",
            lambda: server.turn_of(chat_id, sent["run_id"]),
            120,
        )
        assert _done(first) == "Running the slow cell.\nThe slow cell finished."
        # And again, now while no run is active: the next message works.
        _kill_connections(pg_url, pg_db_url)
        second = server.send_and_wait(chat_id, "and now?")
        assert _done(second) == "Second run: fine."
        stored = _stored_turns(pg_db_url, chat_id)
        assert [run for run, _ in stored] == [sent["run_id"], second["run_id"]], stored
        with server.client() as client:
            summary = client.run(sent["run_id"])["summary"]
        assert summary["status"] != "running", summary
    finally:
        server.stop()


class Storm:
    """Kill every connection to the database, over and over, until stopped."""

    def __init__(self, admin_url: str, db_url: str, every_s: float = 0.02) -> None:
        self.kills = 0
        self._args = (admin_url, db_url)
        self._every = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.kills += _kill_connections(*self._args)
            self._stop.wait(self._every)

    def __enter__(self) -> Storm:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(30)


def test_a_storm_of_killed_connections_through_a_runs_end_loses_and_doubles_nothing(
    tmp_path: Path, fake: FakeProvider, pg_url: str, pg_db_url: str
) -> None:
    """Connections die again and again while the run's cell ends, its last model call is
    made and its turn and summary are written: the writes are retried, the turn is stored
    once, and once the storm is over the chat takes the next message."""
    server = FaultServer(tmp_path / "srv", fake, {"db_url": pg_db_url})
    ran, go = server.root / "ran.txt", server.root / "go"
    fake.load(
        [
            {"text": "Running it.", "cells": [_waiting_cell(ran, go)]},
            {"text": "Done through the storm."},
            {"text": "Calm again."},
        ]
    )
    try:
        server.start()
        with server.client() as client:
            chat_id = client.create_chat("storm")["id"]
            sent = client.send(chat_id, "run it")
        wait_for("the cell to start", ran.exists)
        with Storm(pg_url, pg_db_url) as storm:
            go.touch()
            # The run ends inside the storm: its writes meet dead connections.
            wait_for("the run's turn in its log", lambda: "turn.append" in _log_of(server), 60)
            time.sleep(2.0)
        assert storm.kills >= 1
        first = wait_for(
            f"the turn of {sent['run_id']}",
            lambda: server.turn_of(chat_id, sent["run_id"]),
            120,
        )
        assert _done(first) == "Running it.\nDone through the storm."
        second = server.send_and_wait(chat_id, "and now?")
        assert _done(second) == "Calm again."
        assert [r for r, _ in _stored_turns(pg_db_url, chat_id)] == [
            sent["run_id"],
            second["run_id"],
        ]
        with server.client() as client:
            assert client.run(sent["run_id"])["summary"]["status"] == "done"
    finally:
        server.stop()


def _log_of(server: FaultServer) -> str:
    """Every run log of the server, as text (where a run's effects are written first)."""
    return "".join(p.read_text(errors="replace") for p in server.dirs["data"].rglob("runs/*.jsonl"))


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    """A cluster of this test's own (it is restarted; the session's is shared)."""
    try:
        cluster = start_cluster()
    except FileNotFoundError as exc:
        deploy_required(f"PostgreSQL binaries: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_postgresql_restart_between_two_runs(
    tmp_path: Path, fake: FakeProvider, own_cluster: PgCluster
) -> None:
    db_url = create_database(own_cluster.url)
    server = FaultServer(tmp_path / "srv", fake, {"db_url": db_url})
    fake.load([{"text": "Before the restart."}, {"text": "After the restart."}])
    try:
        server.start()
        with server.client() as client:
            chat_id = client.create_chat("restart")["id"]
        first = server.send_and_wait(chat_id, "one")
        assert _done(first) == "Before the restart."
        own_cluster.restart()
        second = server.send_and_wait(chat_id, "two")
        assert _done(second) == "After the restart."
        assert [r for r, _ in _stored_turns(db_url, chat_id)] == [
            first["run_id"],
            second["run_id"],
        ]
    finally:
        server.stop()
        drop_database(own_cluster.url, db_url)
