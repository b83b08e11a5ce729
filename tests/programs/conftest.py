"""The store fixture of tests/store (SQLite, and PostgreSQL when asked) for program tests."""

from __future__ import annotations

from tests.store.conftest import db_url, store

__all__ = ["db_url", "store"]
