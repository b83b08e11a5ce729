"""The Store's chunk summaries and turn positions (issue 14), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading

import pytest
from sqlalchemy import event, text

from jupyter_agent.core.history.chunks import ChunkSpan, StoredChunk
from jupyter_agent.core.history.window import turn_tokens
from jupyter_agent.exceptions import StoreError
from jupyter_agent.runtime.runs.parts import read_anchored
from jupyter_agent.store import Store
from jupyter_agent.store.history.chunk_queries import _ParsedTurns
from jupyter_agent.store.memory.turn_indexer import THREAD_NAME
from tests.store.factories import iso, make_turn

CHAT = "chat_01A"


def chunk(level: int, first: int, last: int, *, text: str = "", chat_id: str = CHAT) -> StoredChunk:
    return StoredChunk(
        chat_id=chat_id,
        level=level,  # type: ignore[arg-type]
        first_turn=first,
        last_turn=last,
        text=text or f"L{level} summary of {first}-{last}: é→π 🚀",
        run_id=f"run_h{level}_{first:04d}",
        model="claude-test" if level == 1 else None,
        created=iso(1000 + first),
    )


@pytest.fixture
def chat(store: Store) -> str:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    store.create_chat(chat_id="chat_01B", title="other", now=iso(0))
    return CHAT


def test_add_chunk_round_trips_and_the_first_write_wins(store: Store, chat: str) -> None:
    l2 = chunk(2, 1, 50)
    firsts = [chunk(1, 11, 20), l2, chunk(1, 1, 10)]
    assert [store.add_chunk(c) for c in firsts] == [True, True, True]
    # A second summary of the same span (a retried run) is ignored, whatever it says.
    assert store.add_chunk(chunk(1, 1, 10, text="another text")) is False
    assert store.add_chunk(chunk(2, 1, 50, text="another")) is False
    assert store.list_chunks(chat) == [chunk(1, 1, 10), chunk(1, 11, 20), l2]
    assert store.list_chunks("chat_01B") == []
    assert chunk(1, 1, 10).to_json() == {
        "level": 1,
        "first_turn": 1,
        "last_turn": 10,
        "text": "L1 summary of 1-10: é→π 🚀",
        "run_id": "run_h1_0001",
        "created": iso(1001),
    }


def test_add_chunk_refuses_an_unknown_chat_or_a_bad_span(store: Store, chat: str) -> None:
    with pytest.raises(StoreError, match="no chat"):
        store.add_chunk(chunk(1, 1, 10, chat_id="chat_none"))
    for bad in (chunk(1, 0, 10), chunk(1, 10, 9), chunk(3, 1, 10)):
        with pytest.raises(StoreError, match="not a chunk span"):
            store.add_chunk(bad)
    assert store.list_chunks(chat) == []


def test_a_lone_surrogate_in_a_summary_is_stored_repaired(store: Store, chat: str) -> None:
    assert store.add_chunk(chunk(1, 1, 10, text="bad \ud800 text"))
    assert store.list_chunks(chat)[0].text == "bad \ufffd text"


def test_turn_count_and_turns_at_follow_turn_order(store: Store, chat: str) -> None:
    assert store.turn_count(chat) == 0
    assert store.turns_at(chat, 1, 10) == []
    for n in (5, 1, 3, 2, 4, *range(6, 26)):  # stored out of order: positions follow `created`
        store.append_turn(make_turn(n, chat_id=chat))
    store.append_turn(make_turn(99, chat_id="chat_01B"))
    # Ties in `created` are ordered by id, as every turn read orders them.
    store.append_turn(make_turn(27, chat_id=chat, created=iso(26), turn_id="turn_b"))
    store.append_turn(make_turn(26, chat_id=chat, created=iso(26), turn_id="turn_a"))
    assert store.turn_count(chat) == 27
    assert store.turn_count("chat_none") == 0
    ids = [t.id for t in store.list_turns(chat)]
    assert [t.id for t in store.turns_at(chat, 1, 10)] == ids[0:10]
    assert [t.id for t in store.turns_at(chat, 11, 20)] == ids[10:20]
    assert [t.id for t in store.turns_at(chat, 21, 30)] == ids[20:27]  # past the end: fewer
    assert [t.id for t in store.turns_at(chat, 26, 27)] == ["turn_a", "turn_b"]
    assert store.turns_at(chat, 7, 7) == [make_turn(7, chat_id=chat)]  # the record itself
    assert store.turns_at(chat, 40, 50) == []
    for first, last in ((0, 3), (5, 4)):
        with pytest.raises(ValueError, match="not a range"):
            store.turns_at(chat, first, last)


def test_turns_at_reads_only_its_range(store: Store, chat: str) -> None:
    for n in range(1, 121):
        store.append_turn(make_turn(n, chat_id=chat))
    rows: list[int] = []

    def count_rows(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if threading.current_thread().name == THREAD_NAME:
            return  # the recall indexer reads the turns just appended, in its own time
        if "agent_turns" in statement and "record" in statement:
            rows.append(-1)

    engine = store._engine
    event.listen(engine, "after_cursor_execute", count_rows)
    try:
        got = store.turns_at(chat, 101, 110)
    finally:
        event.remove(engine, "after_cursor_execute", count_rows)
    assert [t.id for t in got] == [f"turn_{n:06d}" for n in range(101, 111)]
    assert len(rows) == 1  # one statement, LIMIT 10 OFFSET 100


def test_a_runs_window_is_read_in_one_transaction(store: Store, chat: str) -> None:
    # A window that needs its count, its summaries and three batches of turns (8, 16, 32).
    for n in range(1, 61):
        store.append_turn(make_turn(n, chat_id=chat))
    store.add_chunk(chunk(1, 1, 10))
    begins: list[int] = []
    statements: list[str] = []

    def on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        if threading.current_thread().name != THREAD_NAME:  # the recall indexer's own
            begins.append(1)

    def on_statement(conn, cursor, statement, parameters, context, executemany) -> None:  # type: ignore[no-untyped-def]
        if threading.current_thread().name != THREAD_NAME and "SELECT" in statement:
            statements.append(statement)

    engine = store._engine
    event.listen(engine, "begin", on_begin)
    event.listen(engine, "after_cursor_execute", on_statement)
    try:
        window = read_anchored(store, chat, 1_000_000, {"chunk_turns": 10, "l2_chunks": 2})
    finally:
        event.remove(engine, "begin", on_begin)
        event.remove(engine, "after_cursor_execute", on_statement)
    assert [t.id for t in window.turns] == [f"turn_{n:06d}" for n in range(1, 61)]
    assert len(statements) >= 5  # count, summaries, turns 53-60, 37-52, 5-36, 1-4
    assert len(begins) == 1


def test_a_windows_turns_are_parsed_once_and_a_rewritten_record_again(
    store: Store, chat: str
) -> None:
    for n in range(1, 4):
        store.append_turn(make_turn(n, chat_id=chat))
    layout = {"chunk_turns": 10, "l2_chunks": 2}
    first = read_anchored(store, chat, 1_000_000, layout).turns
    again = read_anchored(store, chat, 1_000_000, layout).turns
    assert [t.id for t in again] == [f"turn_{n:06d}" for n in range(1, 4)]
    assert all(a is b for a, b in zip(first, again, strict=True))  # parsed once
    # A migration's rewrite of a stored record (as program_renumber's) is read as written.
    changed = {**first[1].to_json(), "userText": "rewritten"}
    with store._engine.begin() as conn:
        conn.execute(
            text("UPDATE agent_turns SET record = :rec WHERE id = :id"),
            {"rec": json.dumps(changed), "id": first[1].id},
        )
    after = read_anchored(store, chat, 1_000_000, layout).turns
    assert [t.user_text for t in after] == [first[0].user_text, "rewritten", first[2].user_text]
    assert after[0] is first[0]
    assert after[2] is first[2]


def test_a_window_that_keeps_every_turn_records_no_summary(store: Store, chat: str) -> None:
    for n in range(1, 13):
        store.append_turn(make_turn(n, chat_id=chat))
    store.add_chunk(chunk(1, 1, 10))
    layout = {"chunk_turns": 10, "l2_chunks": 2}
    whole = read_anchored(store, chat, 1_000_000, layout)
    assert (whole.omitted, whole.chunks, len(whole.turns)) == (0, (), 12)
    # One that leaves turns out shows the summary of those it left out.
    small = read_anchored(store, chat, 2 * turn_tokens(make_turn(1, chat_id=chat)) + 60, layout)
    assert small.omitted > 0
    assert [c.first_turn for c in small.chunks] == [1]


def test_the_parsed_records_kept_are_bounded_by_their_json() -> None:
    raws = [json.dumps(make_turn(n, chat_id=CHAT).to_json()) for n in range(1, 5)]
    kept = _ParsedTurns(max_chars=2 * len(raws[0]) + 1)
    first = [kept.get(raw) for raw in raws[:2]]
    assert kept.get(raws[0]) is first[0]  # read again: the same object, now the newest
    kept.get(raws[2])  # over the bound: the least recently read one (raws[1]) goes
    assert kept.get(raws[0]) is first[0]
    assert kept.get(raws[1]) is not first[1]
    assert kept.get(raws[1]).id == first[1].id
    long = json.dumps({**make_turn(9, chat_id=CHAT).to_json(), "userText": "x" * 9000})
    assert kept.get(long) is not kept.get(long)  # too long to keep: parsed at each read


def test_pending_spans_from_the_stored_chunks(store: Store, chat: str) -> None:
    for n in range(1, 24):
        store.append_turn(make_turn(n, chat_id=chat))
    assert store.pending_spans(chat, 10, 2) == [ChunkSpan(1, 1, 10), ChunkSpan(1, 11, 20)]
    store.add_chunk(chunk(1, 1, 10))
    assert store.pending_spans(chat, 10, 2) == [ChunkSpan(1, 11, 20)]
    store.add_chunk(chunk(1, 11, 20))
    # Both level-1 summaries of level-2 chunk 0 exist: it is due now.
    assert store.pending_spans(chat, 10, 2) == [ChunkSpan(2, 1, 20)]
    store.add_chunk(chunk(2, 1, 20))
    assert store.pending_spans(chat, 10, 2) == []
    assert store.pending_spans(chat, 5, 2) == [
        ChunkSpan(1, 6, 10),
        ChunkSpan(1, 16, 20),
    ]
    assert store.pending_spans("chat_01B", 10, 5) == []


def test_deleting_a_chat_deletes_its_chunks_only(store: Store, chat: str) -> None:
    store.add_chunk(chunk(1, 1, 10))
    store.add_chunk(chunk(2, 1, 50))
    store.add_chunk(chunk(1, 1, 10, chat_id="chat_01B"))
    assert store.delete_chat(chat) is True
    assert store.list_chunks(chat) == []
    assert store.list_chunks("chat_01B") == [chunk(1, 1, 10, chat_id="chat_01B")]
    # The chat can come back under its id with no summaries left over.
    store.create_chat(chat_id=chat, title="again", now=iso(5))
    assert store.list_chunks(chat) == []
    assert store.add_chunk(chunk(1, 1, 10, text="new")) is True
