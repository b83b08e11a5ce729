"""``toolcaller@v7`` through the run manager and driver (real SQLite store, real kernel pool,
the fake model on loopback): one ``config.get start`` per run, and recall only when the
owner has something to find, known from the in-process counters the writers keep (no
recall query in a chat-free database: the SQL statements are counted)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.runtime.memory.counts import counts_of
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.secrets import NO_SECRETS
from jupyter_agent.store.memory.turn_indexer import THREAD_NAME
from jupyter_agent.trace.log import pair_effects
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(120)

FACT = "Quarterly sales figures live in data/q_sales.parquet."


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    yield harness
    await close_harness(harness)


@contextmanager
def statements(agent: Harness) -> Iterator[list[str]]:
    """Every SQL statement the store runs meanwhile for the runs (not its recall indexer's,
    which indexes stored turns in a thread of its own, after their runs)."""
    seen: list[str] = []
    engine = agent.store._engine

    def listen(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        if threading.current_thread().name != THREAD_NAME:
            seen.append(sql)

    event.listen(engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", listen)


def effects(agent: Harness, run_id: str) -> list[Any]:
    return [e for e in pair_effects(agent.trace(run_id)) if e.parent is None]


def recall_sql(seen: list[str]) -> list[str]:
    """The recall searches among ``seen``: reads of the index's docs, full-text table or
    document frequencies (storing a turn's own doc, its indexing, is not one)."""
    tables = ("agent_recall_docs", "agent_recall_fts", "agent_recall_df")
    return [
        s for s in seen if s.lstrip().upper().startswith("SELECT") and any(t in s for t in tables)
    ]


async def test_a_chat_turn_in_a_chat_free_database_makes_no_recall_query(agent: Harness) -> None:
    chat = agent.new_chat()
    counts_of(agent.store).forget()
    with statements(agent) as seen:
        turn = await agent.ask(chat, "Where are the quarterly sales figures?")
    names = [e.name for e in effects(agent, turn.run_id)]
    assert "recall.search" not in names
    configs = [e for e in effects(agent, turn.run_id) if e.name == "config.get"]
    assert [c.data for c in configs] == [{"key": "start", "tier": "codegen"}]
    assert names[:3] == ["clock.now", "config.get", "mailbox.drain"]
    assert recall_sql(seen) == []
    assert verify_run(agent.manager.log_path(turn.run_id)).identical
    # The next turn of the same chat: its one turn is in the window, nothing to find.
    with statements(agent) as again:
        second = await agent.ask(chat, "And the yearly ones?")
    assert "recall.search" not in [e.name for e in effects(agent, second.run_id)]
    assert recall_sql(again) == []
    # The counts are kept, not read again: no memory category or owner-wide turn count.
    counted = [s for s in again if "GROUP BY" in s or "JOIN chats" in s]
    assert counted == [], counted
    print(f"statements per chat turn: first {len(seen)}, second {len(again)}")


async def test_a_turn_after_a_memory_is_saved_recalls_it(agent: Harness) -> None:
    chat = agent.new_chat()
    first = await agent.ask(chat, "Hello there.")
    assert "recall.search" not in [e.name for e in effects(agent, first.run_id)]
    saved = await MemoryService(agent.store, NO_SECRETS).save(
        FACT, category="project", author="person", owner=""
    )
    with statements(agent) as seen:
        turn = await agent.ask(agent.new_chat(), "Where are the quarterly sales figures?")
    [start] = [e for e in effects(agent, turn.run_id) if e.name == "config.get"]
    assert start.result is not None
    assert start.result.data["findable"] == {"memories": 1, "turns": 1}
    assert start.result.data["memory"]["categories"] == [{"category": "project", "count": 1}]
    [searched] = [e for e in effects(agent, turn.run_id) if e.name == "recall.search"]
    assert searched.result is not None
    assert saved.id in [h["id"] for h in searched.result.data["hits"]]
    assert turn.recall is not None
    assert recall_sql(seen)  # it did search
    assert verify_run(agent.manager.log_path(turn.run_id)).identical


async def test_another_chats_turn_makes_the_next_chat_recall(agent: Harness) -> None:
    chat = agent.new_chat()
    await agent.ask(chat, "The ingest pipeline runs nightly at 02:00.")
    turn = await agent.ask(agent.new_chat(), "When does the ingest pipeline run?")
    [searched] = [e for e in effects(agent, turn.run_id) if e.name == "recall.search"]
    assert searched.result is not None
    assert turn.recall is not None
    assert {h.chat_id for h in turn.recall.hits} == {chat}


async def test_a_turn_reads_the_store_once_for_its_recall(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search begun with the start answer is the one ``recall.search`` answers with
    (the program's intent equals the planned one): one store read per turn, begun before
    the program asked, and the hits the log holds are that read's."""
    first = agent.new_chat()
    await agent.ask(first, "The ingest pipeline runs nightly at 02:00.")
    reads: list[str] = []
    recall = agent.store.recall

    def counted(query: str, **kwargs: Any) -> list[RecallHit]:
        reads.append(query)
        return recall(query, **kwargs)

    monkeypatch.setattr(agent.store, "recall", counted)
    turn = await agent.ask(agent.new_chat(), "When does the ingest pipeline run?")
    [searched] = [e for e in effects(agent, turn.run_id) if e.name == "recall.search"]
    assert reads == [searched.data["query"]]
    assert searched.result is not None
    assert {h["chat_id"] for h in searched.result.data["hits"]} == {first}
