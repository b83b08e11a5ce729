"""A chat forked from another at a turn: its first turns and the summaries of them, copied.

:func:`copy_history` runs inside the fork's one write transaction (the caller made the new
chat row, ``forked_from: {chat_id, turn}``, and holds the source chat's row): it copies
the source's turns 1..``upto`` (oldest first, by ``(created, id)``) into the new chat, and
the chunk summaries whose span ends at or before ``upto`` (so the fork's boot window uses
them as the original's would; a summary reaching past ``upto`` is not the fork's history
and is left to be made again). Copies, not references: deleting either chat never breaks
the other.

A copied turn keeps its record (its replies, its ``run_id``: the run whose effect log
holds its trace, which outlives chats) with a new id and the new chat's id; the row's
``run_id`` projection, unique per row, is ``<run_id>~<chat_id>`` (a lookup by run finds
the turn the run wrote, not its copies). Copied turns and summaries get their recall docs
(the owner's), except a turn the demo model answered (as ``append_turn``).

:func:`add_turns` stores turns made elsewhere (an imported chat's, which point at no
effect log: their run ids are new) the same way, in the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import select as core_select

from jupyter_agent.core.demo import is_demo_model
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.store.history.chunk_queries import add_chunk, list_chunks, turn_count
from jupyter_agent.store.memory import recall_index
from jupyter_agent.store.rows import turn_values
from jupyter_agent.store.tables import TURNS

__all__ = ["add_turns", "copy_history", "turn_count"]


def copy_history(
    conn: Any, *, source: str, target: str, upto: int, owner: str, make_id: Callable[[str], str]
) -> int:
    """Copy ``source``'s turns 1..``upto`` and the summaries within them into ``target``
    (see the module docstring), the copies' ids from ``make_id("turn")``; the number of
    turns copied."""
    query = (
        core_select(TURNS.c.record)
        .where(TURNS.c.chat_id == source)
        .order_by(TURNS.c.created, TURNS.c.id)
        .limit(upto)
    )
    turns = [TurnRecord.from_json(json.loads(row[0])) for row in conn.execute(query)]
    docs = []
    for turn in turns:
        copy = replace(turn, id=make_id("turn"), chat_id=target)
        values = turn_values(copy)
        values["run_id"] = f"{turn.run_id}~{target}"  # the projection is unique per row
        conn.execute(TURNS.insert(), values)
        if not is_demo_model(copy.model):
            docs.append(recall_index.turn_doc(copy, owner))
    for stored in list_chunks(conn, source):
        if stored.last_turn > len(turns):
            continue
        chunk = replace(stored, chat_id=target)
        if add_chunk(conn, chunk):
            docs.append(recall_index.chunk_doc(chunk, owner))
    recall_index.put_docs(conn, docs)
    return len(turns)


def add_turns(conn: Any, turns: Sequence[TurnRecord], *, owner: str) -> None:
    """Insert ``turns`` as they are (their ``run_id`` is the row's projection: unique)
    with their recall docs (``owner``'s; none for a demo turn), in the caller's
    transaction."""
    docs = []
    for turn in turns:
        conn.execute(TURNS.insert(), turn_values(turn))
        if not is_demo_model(turn.model):
            docs.append(recall_index.turn_doc(turn, owner))
    recall_index.put_docs(conn, docs)
