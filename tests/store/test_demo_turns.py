"""Turns the demo model answered are never recalled (issue 28, item 6): a new one is not
indexed, and migration v11 removes the docs an older release wrote for them (with their
document frequencies), leaving every other doc."""

from __future__ import annotations

import dataclasses

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.demo import DEMO_MODEL
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.store import Store, migrations
from jupyter_agent.store.memory import recall_index
from jupyter_agent.store.memory.turn_indexer import TurnIndexer
from tests.store.factories import iso, make_turn, queue_table, sql

WORDS = "quarterly revenue of the teal widgets"


def _turn(n: int, model: str) -> TurnRecord:
    turn = make_turn(n)
    return dataclasses.replace(turn, user_text=f"plot the {WORDS}", model=model)


def _docs(db_url: str) -> list[tuple[str, str]]:
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT kind, ref_id FROM agent_recall_docs")).all()
    finally:
        engine.dispose()
    return sorted((str(k), str(r)) for k, r in rows)


def _alter(db_url: str, change: str, table: str = "chats") -> None:
    sql(db_url, f"ALTER TABLE {table} {change}")


def test_a_demo_turn_is_not_indexed(
    store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its indexer waits past the test: what is pending is this test's to index.
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
    store.create_chat(chat_id="chat_01A", title="demo", now=iso(0))
    assert store.append_turn(_turn(1, DEMO_MODEL))
    assert store.append_turn(_turn(2, "claude-test"))
    assert store.pending_recall_turns() == 1  # the demo's is not even queued
    assert store.index_pending_turns() == 1
    assert _docs(db_url) == [("turn", "turn_000002")]
    assert [h.id for h in store.recall(WORDS, k=5)] == ["turn_000002"]


def test_migration_v11_removes_the_demo_turns_docs(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # what release 10 wrote: demo turns indexed
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:10])
        old = Store(db_url)
        _alter(db_url, "ADD COLUMN forked_from TEXT")  # today's Store writes it (v13)
        _alter(db_url, "ADD COLUMN model TEXT")  # and this (v14)
        _alter(db_url, "ADD COLUMN rerun_of TEXT", table="agent_runs")  # and this (v15)
        queue_table(db_url)  # and queues its turns for recall (v16)
        try:
            old.create_chat(chat_id="chat_01A", title="demo", now=iso(0))
            for n, model in ((1, DEMO_MODEL), (2, "claude-test")):
                turn = _turn(n, model)
                assert old.append_turn(turn)
            old.index_pending_turns()
            engine = create_engine(db_url)
            with engine.begin() as conn:  # as release 10 did: the demo turn indexed too
                demo_doc = recall_index.turn_doc(_turn(1, DEMO_MODEL))
                recall_index.put_docs(conn, [demo_doc])
            engine.dispose()
            assert _docs(db_url) == [("turn", "turn_000001"), ("turn", "turn_000002")]
        finally:
            old.close()
            _alter(db_url, "DROP COLUMN forked_from")
            _alter(db_url, "DROP COLUMN model")
            _alter(db_url, "DROP COLUMN rerun_of", table="agent_runs")
            sql(db_url, "DROP TABLE agent_recall_pending")
    store = Store(db_url)  # migrates to the latest
    try:
        assert _docs(db_url) == [("turn", "turn_000002")]
        assert [h.id for h in store.recall(WORDS, k=5)] == ["turn_000002"]
        # The document frequencies count the one doc left: a term of both counts once.
        engine = create_engine(db_url)
        with engine.connect() as conn:
            df = conn.execute(
                text("SELECT df FROM agent_recall_df WHERE term = 'teal' AND owner = ''")
            ).scalar()
        engine.dispose()
        assert df == 1
    finally:
        store.close()
