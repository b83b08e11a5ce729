"""Deleting a chat while its turns are stored, on SQLite and PostgreSQL: one lock order
(the chat row, then the counts), so no deadlock, no orphan doc, exact counts."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace

from sqlalchemy import create_engine, text

from jupyter_agent.exceptions import StoreError, StoreUnavailable
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.store import Store
from tests.store.factories import iso, make_turn

WORDS = ("sales", "revenue", "plot", "parquet", "histogram", "region", "forecast", "quarter")


def recount(db_url: str) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """(the df counts stored, the counts recomputed from the docs), read past the Store."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            stored = Counter(
                {
                    (str(o), str(t)): int(d)
                    for o, t, d in conn.execute(text("SELECT owner, term, df FROM agent_recall_df"))
                }
            )
            expected: Counter[tuple[str, str]] = Counter()
            for owner, terms in conn.execute(text("SELECT owner, terms FROM agent_recall_docs")):
                expected[(owner, "")] += 1
                for term in set(terms.split()):
                    expected[(owner, term)] += 1
            return stored, expected
    finally:
        engine.dispose()


def orphans(db_url: str) -> int:
    """Turn and chunk docs whose chat is gone."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            found = conn.execute(
                text(
                    "SELECT COUNT(*) FROM agent_recall_docs d WHERE d.kind IN ('turn', 'chunk')"
                    " AND NOT EXISTS (SELECT 1 FROM chats c WHERE c.id = d.chat_id)"
                )
            ).scalar()
            return int(found or 0)
    finally:
        engine.dispose()


def test_deleting_a_chat_while_its_runs_store_turns(store: Store, db_url: str) -> None:
    keep = new_id("chat")
    store.create_chat(chat_id=keep, title="kept", now=iso(0))
    errors: list[BaseException] = []
    refused = 0
    lock = threading.Lock()
    for rnd in range(6):
        doomed = new_id("chat")
        store.create_chat(chat_id=doomed, title="doomed", now=iso(0))
        start = threading.Barrier(4)

        def writer(
            worker: int, chat_id: str = doomed, barrier: threading.Barrier = start, rnd: int = rnd
        ) -> None:
            nonlocal refused
            barrier.wait()
            for i in range(8):
                n = rnd * 1000 + worker * 100 + i
                words = " ".join(WORDS[(n + j) % len(WORDS)] for j in range(4))
                turn = replace(
                    make_turn(n, chat_id=chat_id),
                    id=new_id("turn"),
                    run_id=new_id("run"),
                    user_text=f"{words} {n}",
                )
                try:
                    store.append_turn(turn)
                    store.append_turn(
                        replace(turn, id=new_id("turn"), run_id=new_id("run"), chat_id=keep)
                    )
                except StoreError as exc:
                    with lock:
                        if (
                            isinstance(exc, StoreUnavailable)
                            or "foreign key" not in str(exc).lower()
                        ):
                            errors.append(exc)
                        else:
                            refused += 1  # the chat is gone: the "unknown chat" refusal
                    return

        def deleter(chat_id: str = doomed, barrier: threading.Barrier = start) -> None:
            barrier.wait()
            try:
                assert store.delete_chat(chat_id)
            except BaseException as exc:
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        threads.append(threading.Thread(target=deleter))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    stored, expected = recount(db_url)
    assert stored == expected
    assert orphans(db_url) == 0
    assert store.get_chat(keep) is not None
    assert [c.id for c in store.list_chats()] == [keep]
