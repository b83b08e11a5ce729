"""Opening an up-to-date database costs one query (the start path reads one version row);
an older or newer one still goes through the migrations, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import Connection

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import LATEST_VERSION, Store, migrations
from jupyter_agent.store.migrations import Migration


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Every SQL statement any engine sends through SQLAlchemy while the test runs."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", record)


def _raw(db_url: str) -> Engine:
    return create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))


def _versions(db_url: str) -> list[int]:
    engine = _raw(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version FROM schema_version ORDER BY 1"))
            return [v for (v,) in rows]
    finally:
        engine.dispose()


def test_opening_an_up_to_date_database_is_one_query(db_url: str, statements: list[str]) -> None:
    Store(db_url).close()  # a new database: every step, each with its version row
    assert sum("schema_version" in s for s in statements) > LATEST_VERSION
    statements.clear()
    store = Store(db_url)
    try:
        assert statements == ["SELECT MAX(version) FROM schema_version"]
        assert store.list_chats() == []  # and the store works
    finally:
        store.close()
    assert _versions(db_url) == list(range(1, LATEST_VERSION + 1))


def test_a_database_behind_the_code_still_migrates(
    db_url: str, statements: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code one step ahead (a new release's step 10): the version read differs, so the
    migrations run and apply it."""
    Store(db_url).close()
    ahead = LATEST_VERSION + 1

    def step(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE step_ahead (x INTEGER)"))

    monkeypatch.setattr(
        migrations, "MIGRATIONS", (*migrations.MIGRATIONS, Migration(ahead, "t", step))
    )
    monkeypatch.setattr(migrations, "LATEST_VERSION", ahead)
    statements.clear()
    Store(db_url).close()
    assert statements[0] == "SELECT MAX(version) FROM schema_version"
    assert "CREATE TABLE step_ahead (x INTEGER)" in statements
    assert _versions(db_url) == list(range(1, ahead + 1))
    statements.clear()
    Store(db_url).close()  # up to date again: one query
    assert statements == ["SELECT MAX(version) FROM schema_version"]


def test_a_newer_database_is_refused_after_the_one_query(db_url: str) -> None:
    Store(db_url).close()
    engine = _raw(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(
                text("INSERT INTO schema_version (version, applied) VALUES (:v, 'x')"),
                {"v": LATEST_VERSION + 1},
            )
    finally:
        engine.dispose()
    with pytest.raises(StoreError, match="newer than this"):
        Store(db_url)
