"""The ``store`` fixture: a real Store on a SQLite file and on a fresh PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_agent.store import Store


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A URL of an empty database on each backend (PostgreSQL only when requested)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('db')}/agent.sqlite"
    return str(request.getfixturevalue("pg_db_url"))


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A Store on ``db_url``, closed after the test."""
    opened = Store(db_url)
    try:
        yield opened
    finally:
        opened.close()
