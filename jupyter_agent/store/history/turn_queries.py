"""Reading a chat's turns: all of them, one run's, or only the newest a window can use.

Functions on a SQLAlchemy Core connection (the :class:`~jupyter_agent.store.repo.Store`
opens it and maps failures); portable Core only, the same on SQLite and PostgreSQL. Turns
are ordered by ``(created, id)``, the index ``ix_agent_turns_chat (chat_id, created, id)``.

:func:`read_window` costs O(window), not O(chat). Its raw tail (:func:`read_tail`) reads
the chat's turns newest first in small keyset-paged batches (each an index range scan)
until :func:`~jupyter_agent.core.history.window.tail_size` can tell how many the boot window keeps,
then counts the older ones with one ``count(*)`` over the same index. It holds no chunk
summaries: that is the window of ``toolcaller@v3`` without a layout (the sliding rule of
logs recorded before issue 14); runs since read the anchored window with its summaries
(:func:`jupyter_agent.runtime.runs.parts.read_anchored`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, func, or_
from sqlalchemy import select as core_select

from jupyter_agent.core.history.window import HistoryWindow, tail_size, turn_tokens
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.store.tables import AgentTurnRow

__all__ = [
    "chat_owner",
    "FIRST_BATCH",
    "MAX_BATCH",
    "OMISSION_RESERVE",
    "Tail",
    "list_turns",
    "read_tail",
    "read_window",
    "turn_by_run",
]

_TURNS: Final = AgentTurnRow.metadata.tables["agent_turns"]
_CHATS: Final = AgentTurnRow.metadata.tables["chats"]


def chat_owner(conn: Any, chat_id: str) -> str:
    """The chat's owner ("" for an unknown chat: the server's user). The owner of the
    recall docs of its turns and chunks."""
    found = conn.execute(core_select(_CHATS.c.owner).where(_CHATS.c.id == chat_id)).scalar()
    return str(found or "")


#: Rows of the first batch :func:`read_window` reads; each next one doubles, to MAX_BATCH.
FIRST_BATCH: Final = 8
MAX_BATCH: Final = 256
#: Tokens the boot window keeps free for its omission line when older material follows
#: (``core.window._OMISSION_RESERVE``): the summaries' budget is what is left after it.
OMISSION_RESERVE: Final = 24


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


@dataclass(frozen=True)
class Tail:
    """The raw turns a window keeps (oldest first), how many older turns precede them, and
    what they cost of the budget (their :func:`turn_tokens`)."""

    turns: tuple[TurnRecord, ...]
    omitted: int
    tokens: int


def read_tail(
    conn: Any, chat_id: str, *, budget_tokens: int, chunk_turns: int, l2_chunks: int
) -> Tail:
    """The newest turns the chat's boot window of ``budget_tokens`` keeps in full (or the
    newest alone, to be clipped), and the count of the older ones. ``chunk_turns`` and
    ``l2_chunks`` are the chunk layout, for a selection anchored at chunk boundaries; this
    one keeps the newest turns that fit and does not need them."""
    del chunk_turns, l2_chunks
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
    kept = tuple(reversed(newest[:keep]))
    used = sum(costs[:keep])
    if complete:  # every turn was read: the older ones are those not kept
        return Tail(kept, len(newest) - keep, used)
    count = core_select(func.count()).select_from(_TURNS).where(c.chat_id == chat_id)
    if kept:
        count = count.where(_before(*keys[keep - 1]))
    return Tail(kept, int(conn.execute(count).scalar() or 0), used)


def read_window(
    conn: Any, chat_id: str, *, budget_tokens: int, chunk_turns: int = 10, l2_chunks: int = 5
) -> HistoryWindow:
    """The chat's raw tail (:func:`read_tail`), the count of the turns before it, and the
    stored summaries of those turns the rest of the budget can use (see the module
    docstring): level-1 going back from the tail, then level-2 from where level-1 stops."""
    tail = read_tail(
        conn, chat_id, budget_tokens=budget_tokens, chunk_turns=chunk_turns, l2_chunks=l2_chunks
    )
    return HistoryWindow(turns=tail.turns, omitted=tail.omitted)
