"""Reading a chat's turns (all of them, or one run's) and a chat's owner.

Functions on a SQLAlchemy Core connection (the :class:`~jupyter_agent.store.repo.Store`
opens it and maps failures); portable Core only, the same on SQLite and PostgreSQL. Turns
are ordered by ``(created, id)``, the index ``ix_agent_turns_chat (chat_id, created, id)``.

A run's boot window reads its turns by position through
:func:`jupyter_agent.store.history.chunk_queries.turns_at`
(:func:`jupyter_agent.runtime.runs.parts.read_anchored`).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select as core_select

from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.store.tables import CHATS, TURNS

__all__ = ["chat_owner", "list_turns", "turn_by_run"]


def chat_owner(conn: Any, chat_id: str) -> str:
    """The chat's owner ("" for an unknown chat: the server's user). The owner of the
    recall docs of its turns and chunks."""
    found = conn.execute(core_select(CHATS.c.owner).where(CHATS.c.id == chat_id)).scalar()
    return str(found or "")


def list_turns(conn: Any, chat_id: str) -> list[TurnRecord]:
    """The chat's turns, oldest first (by ``created``, then id)."""
    query = (
        core_select(TURNS.c.record)
        .where(TURNS.c.chat_id == chat_id)
        .order_by(TURNS.c.created, TURNS.c.id)
    )
    records = conn.execute(query).scalars().all()
    return [TurnRecord.from_json(json.loads(record)) for record in records]


def turn_by_run(conn: Any, run_id: str) -> TurnRecord | None:
    """The turn a run wrote, or None."""
    query = core_select(TURNS.c.record).where(TURNS.c.run_id == run_id)
    record = conn.execute(query).scalar()
    return TurnRecord.from_json(json.loads(record)) if record is not None else None
