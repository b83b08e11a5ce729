"""The agent database (SQLAlchemy Core): chats, turns, run summaries, memories and recall.

SQLite by default, PostgreSQL by URL, with the same code. :class:`Store` is the whole
public surface (see :mod:`jupyter_agent.store.repo`); the schema lives in
:mod:`~jupyter_agent.store.tables` and evolves through
:mod:`~jupyter_agent.store.migrations`. The only package that imports sqlalchemy (its Core
only, never the ORM: the server's start imports this); it may import core/ (the records it
stores) and the top-level contracts. Used by runtime/ (through the assembly) and by the
tests.
"""

from __future__ import annotations

from jupyter_agent.store.migrations import LATEST_VERSION
from jupyter_agent.store.repo import MAX_PAGE, Chat, Store

__all__ = ["LATEST_VERSION", "MAX_PAGE", "Chat", "Store"]
