"""Reading a chat's turns: all of them, one run's, or only the newest a window can use.

Functions on a SQLAlchemy Core connection (the :class:`~jupyter_agent.store.repo.Store`
opens it and maps failures); portable Core only, the same on SQLite and PostgreSQL. Turns
are ordered by ``(created, id)``, the index ``ix_agent_turns_chat (chat_id, created, id)``.

:func:`read_window` costs O(window), not O(chat): it reads the chat's turns newest first
in small keyset-paged batches (each an index range scan) until
:func:`~jupyter_agent.core.window.tail_size` can tell how many the boot window keeps, then
counts the older ones with one ``count(*)`` over the same index.
"""

from __future__ import annotations

import json
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, func, or_
from sqlalchemy import select as core_select

from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.core.window import HistoryWindow, tail_size, turn_tokens
from jupyter_agent.store.tables import AgentTurnRow

__all__ = ["FIRST_BATCH", "MAX_BATCH", "list_turns", "read_window", "turn_by_run"]

_TURNS: Final = AgentTurnRow.metadata.tables["agent_turns"]
#: Rows of the first batch :func:`read_window` reads; each next one doubles, to MAX_BATCH.
FIRST_BATCH: Final = 8
MAX_BATCH: Final = 256


def list_turns(conn: Any, chat_id: str) -> list[TurnRecord]:
    """The chat's turns, oldest first (by ``created``, then id)."""
    query = (
        core_select(_TURNS.c.record)
        .where(_TURNS.c.chat_id == chat_id)
        .order_by(_TURNS.c.created, _TURNS.c.id)
    )
    records = conn.execute(query).scalars().all()
    return [TurnRecord.from_json(json.loads(record)) for record in records]


def turn_by_run(conn: Any, run_id: str) -> TurnRecord | None:
    """The turn a run wrote, or None."""
    query = core_select(_TURNS.c.record).where(_TURNS.c.run_id == run_id)
    record = conn.execute(query).scalar()
    return TurnRecord.from_json(json.loads(record)) if record is not None else None


def _before(created: str, turn_id: str) -> ColumnElement[bool]:
    """Rows ordered before ``(created, turn_id)``; ``created <=`` first keeps it a range."""
    c = _TURNS.c
    return and_(
        c.created <= created, or_(c.created < created, and_(c.created == created, c.id < turn_id))
    )


def read_window(conn: Any, chat_id: str, *, budget_tokens: int) -> HistoryWindow:
    """The newest turns the chat's boot window of ``budget_tokens`` keeps, oldest first,
    and the count of the older ones (see the module docstring)."""
    c = _TURNS.c
    newest: list[TurnRecord] = []  # newest first
    keys: list[tuple[str, str]] = []  # their (created, id) columns, for the keyset
    costs: list[int] = []
    batch = FIRST_BATCH
    keep: int | None = 0 if budget_tokens <= 0 else None
    complete = False
    while keep is None:
        query = core_select(c.record, c.created, c.id).where(c.chat_id == chat_id)
        if keys:
            query = query.where(_before(*keys[-1]))
        rows = conn.execute(query.order_by(c.created.desc(), c.id.desc()).limit(batch)).all()
        for record, created, turn_id in rows:
            turn = TurnRecord.from_json(json.loads(record))
            newest.append(turn)
            keys.append((created, turn_id))
            costs.append(turn_tokens(turn))
        complete = len(rows) < batch
        keep = tail_size(costs, budget_tokens, complete=complete)
        batch = min(batch * 2, MAX_BATCH)
    kept = newest[:keep]
    if complete:  # every turn was read: the older ones are those not kept
        return HistoryWindow(turns=tuple(reversed(kept)), omitted=len(newest) - keep)
    count = core_select(func.count()).select_from(_TURNS).where(c.chat_id == chat_id)
    if kept:
        count = count.where(_before(*keys[keep - 1]))
    omitted = int(conn.execute(count).scalar() or 0)
    return HistoryWindow(turns=tuple(reversed(kept)), omitted=omitted)
