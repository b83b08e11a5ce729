"""A stored turn's recall doc is written after it by the Store's indexer (issue 27 item 3),
on SQLite and PostgreSQL: within the stated delay with no call, at once for a recall
through the same Store, after a restart for what a dead process left, never for a turn
whose chat was deleted or whose fact was forgotten while it waited, exactly once when
two servers index one database while chats are deleted."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.exceptions import StoreError, StoreUnavailable
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.store import Store
from jupyter_agent.store.chat_store import MessageWrite
from jupyter_agent.store.memory import recall_queue, turn_indexer
from jupyter_agent.store.memory.turn_indexer import THREAD_NAME, TurnIndexer
from tests.store.factories import iso, make_run, make_turn
from tests.store.test_recall_races import WORDS, orphans, recount

#: The bound a test allows for the stated delay (DELAY_S plus a write, on a loaded machine).
BOUND_S = 5.0


def _docs(db_url: str) -> list[str]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT ref_id FROM agent_recall_docs WHERE kind = 'turn' ORDER BY doc_id")
            ).all()
    finally:
        engine.dispose()
    return [str(r[0]) for r in rows]


def _turn(n: int, *, chat_id: str = "chat_01A", words: str = "fjord kayak") -> object:
    return replace(make_turn(n, chat_id=chat_id), user_text=f"{words} {n}")


def _until(check: object, bound: float = BOUND_S) -> float:
    """Seconds until ``check()`` is true (fails past ``bound``)."""
    started = time.monotonic()
    while not check():  # type: ignore[operator]
        assert time.monotonic() - started < bound, "not within the bound"
        time.sleep(0.01)
    return time.monotonic() - started


def test_a_stored_turn_is_indexed_within_the_delay_with_no_call(store: Store, db_url: str) -> None:
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    for n in (1, 2, 3):
        assert store.append_turn(_turn(n))  # type: ignore[arg-type]
    assert _docs(db_url) == []  # not in the turn's transaction
    _until(lambda: _docs(db_url) == ["turn_000001", "turn_000002", "turn_000003"])
    assert store.pending_recall_turns() == 0


def test_turns_stored_within_the_delay_are_one_batch(
    store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=1.0))
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    for n in (1, 2, 3):
        assert store.append_turn(_turn(n))  # type: ignore[arg-type]
    assert _docs(db_url) == []
    took = _until(lambda: _docs(db_url) == ["turn_000001", "turn_000002", "turn_000003"])
    assert took >= 0.5  # it waited out the delay
    assert store._indexer.batches == 1  # one transaction for the three


def test_a_recall_through_the_store_sees_a_turn_at_once(
    store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    assert store.append_turn(_turn(1))  # type: ignore[arg-type]
    assert [h.id for h in store.recall("fjord kayak", k=5)] == ["turn_000001"]
    assert store.pending_recall_turns() == 0
    assert store.recall("nothing like it") == []  # and a recall with nothing waiting: free


def test_a_recall_does_not_wait_for_the_turns_it_leaves_out(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quick next message: the turns just stored are in its own window (of its chat,
    from ``exclude_since``), so its recall indexes nothing now; a waiting turn it could
    find (another chat's, or one of its chat from before the window) is indexed first."""
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
    store.create_chat(chat_id="chat_01A", title="a", now=iso(0))
    store.create_chat(chat_id="chat_01B", title="b", now=iso(0))
    turns = [_turn(n) for n in (1, 2)]
    for turn in turns:
        assert store.append_turn(turn)  # type: ignore[arg-type]
    since = turns[0].created  # type: ignore[attr-defined]
    window = {"exclude_chat": "chat_01A", "exclude_since": since}
    assert store.recall("fjord kayak", **window) == []  # type: ignore[arg-type]
    assert store.pending_recall_turns() == 2  # left to the indexer
    later = turns[1].created  # type: ignore[attr-defined]
    hits = store.recall("fjord kayak", exclude_chat="chat_01A", exclude_since=later)
    assert [h.id for h in hits] == ["turn_000001"]  # before this window: indexed first
    assert store.pending_recall_turns() == 0
    assert store.append_turn(_turn(3, chat_id="chat_01B"))  # type: ignore[arg-type]
    hits = store.recall("fjord kayak", **window)  # type: ignore[arg-type]
    assert [h.id for h in hits] == ["turn_000003"]  # another chat's: indexed first
    assert store.pending_recall_turns() == 0


def test_a_restart_indexes_what_a_dead_process_left(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = Store(db_url)
    dead.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    with monkeypatch.context() as patch:  # the process dies right after the commits
        patch.setattr(TurnIndexer, "wake", lambda self, *turn: None)
        for n in (1, 2):
            assert dead.append_turn(_turn(n))  # type: ignore[arg-type]
    dead.close()  # nothing told it of the turns: nothing indexed at its close either
    assert _docs(db_url) == []
    fresh = Store(db_url)
    try:
        assert fresh.pending_recall_turns() == 2
        fresh.resume_indexing()  # the server's start
        _until(lambda: _docs(db_url) == ["turn_000001", "turn_000002"])
        assert fresh.pending_recall_turns() == 0
    finally:
        fresh.close()


def test_a_close_indexes_what_is_left(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turn_indexer, "DELAY_S", 60.0)
    first = Store(db_url)
    first.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    assert first.append_turn(_turn(1))  # type: ignore[arg-type]
    started = time.monotonic()
    first.close()
    assert time.monotonic() - started < BOUND_S  # the close cut the delay short
    assert _docs(db_url) == ["turn_000001"]


def test_what_waits_is_dropped_with_its_chat_or_its_forgotten_fact(
    store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
    for chat in ("chat_01A", "chat_01B"):
        store.create_chat(chat_id=chat, title="t", now=iso(0))
    assert store.append_turn(_turn(1, chat_id="chat_01A"))  # type: ignore[arg-type]
    assert store.append_turn(_turn(2, chat_id="chat_01B"))  # type: ignore[arg-type]
    fact = Memory(
        id="mem_0001",
        text="the kayak is red",
        category="general",
        chat_id="chat_01B",
        run_id="run_000002",
        created=iso(2),
        updated=iso(2),
    )
    store.add_memory(fact)
    assert store.delete_chat("chat_01A")
    assert store.delete_memory("mem_0001")  # turn 2's fact forgotten while it waits
    assert store.pending_recall_turns() == 1  # the deleted chat's turn waits no more
    assert store.index_pending_turns() == 1
    assert _docs(db_url) == []
    assert store.pending_recall_turns() == 0
    stored, expected = recount(db_url)
    assert stored == expected


@pytest.mark.parametrize("servers", [1, 2])
def test_indexers_writers_and_deleters_interleaved(db_url: str, servers: int) -> None:
    """Writers store turns in a kept chat and in chats being deleted, while each server's
    indexer thread runs and a loop indexes by hand: every kept turn gets one doc, no doc
    of a deleted chat is left, the counts are exact, nothing waits at the end."""
    stores = [Store(db_url) for _ in range(servers)]
    try:
        keep = new_id("chat")
        stores[0].create_chat(chat_id=keep, title="kept", now=iso(0))
        errors: list[BaseException] = []
        kept: list[str] = []
        lock = threading.Lock()
        done = threading.Event()

        def index_loop(store: Store) -> None:
            while not done.is_set():
                try:
                    store.index_pending_turns(7)
                except StoreUnavailable:
                    pass  # a lock wait past its timeout: the next pass retries
                except BaseException as exc:
                    with lock:
                        errors.append(exc)
                    return

        loops = [threading.Thread(target=index_loop, args=(s,)) for s in stores]
        for loop in loops:
            loop.start()
        for rnd in range(5):
            doomed = new_id("chat")
            stores[0].create_chat(chat_id=doomed, title="doomed", now=iso(0))
            barrier = threading.Barrier(4)
            threads = [
                threading.Thread(
                    target=_writer,
                    args=(stores[w % servers], barrier, (keep, doomed), rnd * 1000 + w * 100),
                    kwargs={"kept": kept, "errors": errors, "lock": lock},
                )
                for w in range(3)
            ]
            threads.append(
                threading.Thread(
                    target=_deleter,
                    args=(stores[-1], barrier, doomed, 0.002 * rnd),
                    kwargs={"errors": errors, "lock": lock},
                )
            )
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert not any(thread.is_alive() for thread in threads)
        done.set()
        for loop in loops:
            loop.join(timeout=60)
        assert errors == []
        # Each store's own indexer (0.05 s after a write) may hold waiting rows a moment:
        # on PostgreSQL a drain skips rows another transaction locked, so it can answer 0
        # while some wait. Drain until none waits.
        deadline = time.monotonic() + 30
        while stores[0].pending_recall_turns():
            stores[0].index_pending_turns()
            assert time.monotonic() < deadline, stores[0].pending_recall_turns()
            time.sleep(0.01)
        assert sorted(_docs(db_url)) == sorted(kept)  # each kept turn once, no other
        stored, expected = recount(db_url)
        assert stored == expected
        assert orphans(db_url) == 0
    finally:
        for store in stores:
            store.close()


def _writer(
    store: Store,
    barrier: threading.Barrier,
    chats: tuple[str, str],
    first: int,
    *,
    kept: list[str],
    errors: list[BaseException],
    lock: threading.Lock,
) -> None:
    """Store turns in the kept chat and in the doomed one until it is gone."""
    keep, doomed = chats
    barrier.wait()
    for n in range(first, first + 6):
        words = " ".join(WORDS[(n + j) % len(WORDS)] for j in range(4))
        turn = replace(make_turn(n, chat_id=keep), id=new_id("turn"), run_id=new_id("run"))
        turn = replace(turn, user_text=f"{words} {n}")
        try:
            store.append_turn(turn)
            with lock:
                kept.append(turn.id)
            doomed_turn = replace(turn, id=new_id("turn"), run_id=new_id("run"), chat_id=doomed)
            store.append_turn(doomed_turn)
        except StoreError as exc:
            if isinstance(exc, StoreUnavailable) or "foreign key" not in str(exc).lower():
                with lock:
                    errors.append(exc)
            return  # the chat is gone: the "unknown chat" refusal


def _deleter(
    store: Store,
    barrier: threading.Barrier,
    doomed: str,
    after_s: float,
    *,
    errors: list[BaseException],
    lock: threading.Lock,
) -> None:
    barrier.wait()
    time.sleep(after_s)
    try:
        assert store.delete_chat(doomed)
    except BaseException as exc:
        with lock:
            errors.append(exc)


def test_a_recall_waits_for_a_drain_under_way(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The indexer thread is mid-batch when a recall comes: the recall waits for it (a
    drain counts only once committed) and finds the turn."""
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=0.0))
    entered = threading.Event()
    real = recall_queue.put_docs

    def slow(conn: Any, docs: Any) -> None:
        if threading.current_thread().name == THREAD_NAME:
            entered.set()
            time.sleep(0.5)
        real(conn, docs)

    monkeypatch.setattr(recall_queue, "put_docs", slow)
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    assert store.append_turn(_turn(1))  # type: ignore[arg-type]
    assert entered.wait(BOUND_S)
    assert [h.id for h in store.recall("fjord kayak", k=5)] == ["turn_000001"]


@pytest.mark.postgres
def test_a_batch_never_deadlocks_a_grouped_message_commit(
    pg_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A grouped commit locks its chats in arrival order (B, then A) while a batch locks
    A and B: the batch's key-share locks hold up neither."""
    store = Store(pg_db_url)
    try:
        monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
        for chat in ("chat_01A", "chat_01B"):
            store.create_chat(chat_id=chat, title="t", now=iso(0))
        assert store.append_turn(_turn(1, chat_id="chat_01A"))  # type: ignore[arg-type]
        assert store.append_turn(_turn(2, chat_id="chat_01B"))  # type: ignore[arg-type]
        real = store._store_message
        first_done = threading.Event()

        def paused(conn: Any, write: MessageWrite) -> Any:
            stored = real(conn, write)
            if write.chat_id == "chat_01B":
                first_done.set()
                time.sleep(1.0)  # the batch comes now, for A and B
            return stored

        monkeypatch.setattr(store, "_store_message", paused)
        errors: list[tuple[str, BaseException]] = []

        def group() -> None:
            try:
                store.store_messages(
                    [
                        MessageWrite(
                            chat_id="chat_01B",
                            item={"id": "m1", "at": iso(5)},
                            run=make_run(10, status="running", chat_id="chat_01B"),
                        ),
                        MessageWrite(
                            chat_id="chat_01A",
                            item={"id": "m2", "at": iso(5)},
                            run=make_run(11, status="running", chat_id="chat_01A"),
                        ),
                    ]
                )
            except BaseException as exc:
                errors.append(("group", exc))

        def batch() -> None:
            first_done.wait(BOUND_S)
            try:
                assert store.index_pending_turns() == 2
            except BaseException as exc:
                errors.append(("batch", exc))

        threads = [threading.Thread(target=group), threading.Thread(target=batch)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
        assert store.pending_recall_turns() == 0
    finally:
        store.close()


@pytest.mark.postgres
def test_a_catch_up_waits_for_the_rows_another_server_holds(
    pg_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server A's batch holds the first 200 waiting rows; B's recall still finds B's own
    turn, the 251st: its catch-up goes past the rows A holds."""
    a, b = Store(pg_db_url), Store(pg_db_url)
    try:
        monkeypatch.setattr(a, "_indexer", TurnIndexer(a, delay_s=60))
        monkeypatch.setattr(b, "_indexer", TurnIndexer(b, delay_s=60))
        a.create_chat(chat_id="chat_01A", title="t", now=iso(0))
        for n in range(1, 251):
            assert a.append_turn(_turn(n, words="other"))  # type: ignore[arg-type]
        assert b.append_turn(_turn(251))  # type: ignore[arg-type]
        entered = threading.Event()
        real = recall_queue.put_docs

        def slow(conn: Any, docs: Any) -> None:
            if threading.current_thread().name == "server-a":
                entered.set()
                time.sleep(1.0)
            real(conn, docs)

        monkeypatch.setattr(recall_queue, "put_docs", slow)
        first = threading.Thread(target=a.index_pending_turns, name="server-a")
        first.start()
        assert entered.wait(BOUND_S)
        assert [h.id for h in b.recall("fjord kayak", k=5)] == ["turn_000251"]
        first.join()
    finally:
        a.close()
        b.close()
