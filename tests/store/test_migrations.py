"""Versioned migrations: a fresh database, a v1 database upgraded in place, drift, refusal."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, inspect, text
from sqlmodel import SQLModel

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import LATEST_VERSION, Store, tables
from tests.store.factories import iso, make_turn

# The schema release 1 created, frozen here on purpose: if migrations.py's step 1 ever
# changes, this test still builds what real v1 databases look like.
V1_SQL = (
    """CREATE TABLE chats (id TEXT PRIMARY KEY, title TEXT NOT NULL, created TEXT NOT NULL,
        updated TEXT NOT NULL, active_run_id TEXT)""",
    "CREATE INDEX ix_chats_updated ON chats (updated, id)",
    """CREATE TABLE agent_turns (id TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
        run_id TEXT NOT NULL UNIQUE, user_text TEXT NOT NULL, created TEXT NOT NULL,
        interrupted BOOLEAN NOT NULL, from_agent TEXT NOT NULL, duration_ms BIGINT NOT NULL,
        model TEXT, stop_reason TEXT NOT NULL, model_calls INTEGER NOT NULL,
        cells INTEGER NOT NULL, usage_in BIGINT NOT NULL, usage_out BIGINT NOT NULL,
        usage_cache_read BIGINT NOT NULL, usage_cache_write BIGINT NOT NULL,
        usage_reasoning BIGINT NOT NULL, cost DOUBLE PRECISION, fingerprint_system TEXT,
        fingerprint_identity TEXT, record TEXT NOT NULL)""",
    "CREATE INDEX ix_agent_turns_chat ON agent_turns (chat_id, created, id)",
    """CREATE TABLE agent_runs (run_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL,
        program TEXT NOT NULL, status TEXT NOT NULL, started TEXT NOT NULL, ended TEXT,
        model TEXT, model_calls INTEGER NOT NULL, cells INTEGER NOT NULL,
        usage_in BIGINT NOT NULL, usage_out BIGINT NOT NULL, usage_cache_read BIGINT NOT NULL,
        usage_cache_write BIGINT NOT NULL, usage_reasoning BIGINT NOT NULL,
        cost DOUBLE PRECISION, stop_reason TEXT)""",
    "CREATE INDEX ix_agent_runs_program_started ON agent_runs (program, started, run_id)",
    "CREATE INDEX ix_agent_runs_started ON agent_runs (started, run_id)",
    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)",
    "INSERT INTO schema_version (version, applied) VALUES (1, '2024-01-01T00:00:00.000Z')",
)


@pytest.fixture
def raw(db_url: str) -> Iterator[Engine]:
    """A plain SQLAlchemy engine on the test database, bypassing the Store."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        yield engine
    finally:
        engine.dispose()


def _versions(raw: Engine) -> list[int]:
    with raw.connect() as conn:
        return [v for (v,) in conn.execute(text("SELECT version FROM schema_version ORDER BY 1"))]


def test_fresh_database_reaches_latest(db_url: str, raw: Engine) -> None:
    Store(db_url).close()
    assert _versions(raw) == list(range(1, LATEST_VERSION + 1))
    Store(db_url).close()  # reopening applies nothing twice
    assert _versions(raw) == list(range(1, LATEST_VERSION + 1))


def test_schema_matches_the_table_models(db_url: str, raw: Engine) -> None:
    assert set(tables.__all__) == {
        "AgentChunkRow",
        "AgentMailRow",
        "AgentRunRow",
        "AgentTurnRow",
        "ChatRow",
        "SchemaVersionRow",
    }
    Store(db_url).close()
    inspector = inspect(raw)
    names = ("chats", "agent_turns", "agent_runs", "agent_mail", "agent_chunks", "schema_version")
    for name in names:
        table = SQLModel.metadata.tables[name]
        columns = {c["name"] for c in inspector.get_columns(table.name)}
        assert columns == {c.name for c in table.columns}, table.name
        reflected = {i["name"] for i in inspector.get_indexes(table.name)}
        assert {n for n in reflected if n and n.startswith("ix_")} == {
            i.name for i in table.indexes
        }, table.name


def test_v1_database_upgrades_in_place(db_url: str, raw: Engine) -> None:
    turn = make_turn(1, end_cause="ceiling:cells")
    record = turn.to_json()
    with raw.begin() as conn:
        for statement in V1_SQL:
            conn.execute(text(statement))
        conn.execute(
            text("INSERT INTO chats VALUES ('chat_01A', 'old chat', :c, :c, NULL)"),
            {"c": iso(0)},
        )
        conn.execute(
            text(
                "INSERT INTO agent_turns (id, chat_id, run_id, user_text, created, interrupted,"
                " from_agent, duration_ms, model, stop_reason, model_calls, cells, usage_in,"
                " usage_out, usage_cache_read, usage_cache_write, usage_reasoning, cost,"
                " fingerprint_system, fingerprint_identity, record) VALUES (:id, 'chat_01A',"
                " :run, :u, :c, false, 'analyst', 1235, 'claude-test', 'wrapup', 4, 2, 1001,"
                " 200, 5000, 40, 7, 0.0125, 'sys1', 'id1', :record)"
            ),
            {
                "id": turn.id,
                "run": turn.run_id,
                "u": turn.user_text,
                "c": turn.created,
                "record": json.dumps(record),
            },
        )
        conn.execute(
            text(
                "INSERT INTO agent_runs VALUES (:run, 'chat_01A', 'toolcaller', 'done', :c, :c,"
                " 'claude-test', 4, 2, 1001, 200, 5000, 40, 7, 0.0125, 'wrapup')"
            ),
            {"run": turn.run_id, "c": turn.created},
        )
    assert _versions(raw) == [1]

    store = Store(db_url)
    try:
        assert _versions(raw) == list(range(1, LATEST_VERSION + 1))
        chat = store.get_chat("chat_01A")
        assert chat is not None
        assert chat.title == "old chat"
        assert store.list_turns("chat_01A") == [turn]
        assert store.list_turns("chat_01A")[0].to_json() == record
        run = store.get_run(turn.run_id)
        assert run is not None
        assert run.end_cause == "ceiling:cells"  # backfilled from the turn's record
        assert run.stop_reason == "wrapup"
        # The upgraded database works like a fresh one.
        store.append_turn(make_turn(2))
        assert [t.id for t in store.list_turns("chat_01A")] == [turn.id, "turn_000002"]
    finally:
        store.close()
    with raw.connect() as conn:
        causes = conn.execute(text("SELECT id, end_cause FROM agent_turns ORDER BY id")).all()
    assert [tuple(c) for c in causes] == [(turn.id, "ceiling:cells"), ("turn_000002", "done")]


def test_newer_database_is_refused_untouched(db_url: str, raw: Engine) -> None:
    Store(db_url).close()
    with raw.begin() as conn:
        conn.execute(text("INSERT INTO schema_version VALUES (99, '2099-01-01T00:00:00.000Z')"))
    with pytest.raises(StoreError, match="newer than this jupyter-agent supports"):
        Store(db_url)
    assert _versions(raw)[-1] == 99


def test_concurrent_openers_migrate_once(db_url: str, raw: Engine) -> None:
    barrier = threading.Barrier(4)
    errors: list[BaseException] = []
    opened: list[Store] = []

    def open_store() -> None:
        barrier.wait()
        try:
            opened.append(Store(db_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for store in opened:
        store.close()
    assert errors == []
    assert _versions(raw) == list(range(1, LATEST_VERSION + 1))
