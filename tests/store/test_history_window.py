"""``Store.read_window``: the newest turns a boot window keeps, read in O(window) rows."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from jupyter_agent.core.history.window import tail_size, turn_tokens
from jupyter_agent.store import Store
from jupyter_agent.store.history.turn_queries import FIRST_BATCH
from tests.store.factories import iso, make_turn


@pytest.fixture
def chat(store: Store) -> str:
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    store.create_chat(chat_id="chat_01B", title="other", now=iso(0))
    return "chat_01A"


def expected(store: Store, chat: str, budget: int) -> tuple[list[str], int]:
    """What the whole list cut by ``tail_size`` gives (the v2 path's window)."""
    turns = store.list_turns(chat)
    keep = tail_size([turn_tokens(t) for t in reversed(turns)], budget, complete=True)
    assert keep is not None
    return [t.id for t in turns[len(turns) - keep :]] if keep else [], len(turns) - keep


def test_the_window_is_the_newest_that_fit_oldest_first(store: Store, chat: str) -> None:
    for n in (5, 1, 3, 2, 4, *range(6, 41)):
        store.append_turn(make_turn(n, chat_id=chat))
    store.append_turn(make_turn(99, chat_id="chat_01B"))  # another chat's turn never counts
    per_turn = turn_tokens(make_turn(40, chat_id=chat))
    # Four turns and the omission line's room (24 tokens), not a fifth.
    budget = sum(turn_tokens(make_turn(n, chat_id=chat)) for n in (37, 38, 39, 40)) + 24
    window = store.read_window(chat, budget_tokens=budget)
    assert [t.id for t in window.turns] == [f"turn_{n:06d}" for n in (37, 38, 39, 40)]
    assert window.omitted == 36
    assert sum(turn_tokens(t) for t in window.turns) <= budget
    assert window.turns[-1] == make_turn(40, chat_id=chat)  # the record itself, round-tripped
    for budget in (0, 1, 30, per_turn, per_turn * 11, per_turn * 39, per_turn * 41, 10**6):
        got = store.read_window(chat, budget_tokens=budget)
        assert ([t.id for t in got.turns], got.omitted) == expected(store, chat, budget), budget


def test_an_over_long_newest_turn_is_kept_alone(store: Store, chat: str) -> None:
    for n in range(1, 4):
        store.append_turn(make_turn(n, chat_id=chat))
    window = store.read_window(chat, budget_tokens=5)  # less than any one turn
    assert [t.id for t in window.turns] == ["turn_000003"]
    assert window.omitted == 2


def test_ties_in_created_page_by_id(store: Store, chat: str) -> None:
    # More turns than one batch, all at the same time: the keyset must go on by id.
    count = FIRST_BATCH * 3 + 1
    for n in range(1, count + 1):
        store.append_turn(make_turn(n, chat_id=chat, created=iso(50)))
    window = store.read_window(chat, budget_tokens=10**6)
    assert [t.id for t in window.turns] == [f"turn_{n:06d}" for n in range(1, count + 1)]
    assert window.omitted == 0
    budget = sum(turn_tokens(t) for t in store.list_turns(chat)[-12:]) + 24
    window = store.read_window(chat, budget_tokens=budget)  # past the first batch
    assert [t.id for t in window.turns] == [f"turn_{n:06d}" for n in range(count - 11, count + 1)]
    assert window.omitted == count - 12


def test_an_empty_or_unknown_chat(store: Store, chat: str) -> None:
    assert store.read_window(chat, budget_tokens=1000).to_json() == {
        "turns": [],
        "omitted": 0,
    }
    assert store.read_window("chat_none", budget_tokens=1000).to_json() == {
        "turns": [],
        "omitted": 0,
    }


def test_rows_read_do_not_grow_with_the_chat(store: Store, chat: str) -> None:
    for n in range(1, 121):
        store.append_turn(make_turn(n, chat_id=chat))
    per_turn = turn_tokens(make_turn(120, chat_id=chat))
    fetched: list[int] = []

    def count_rows(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if "agent_turns" in statement and "count(" not in statement.lower():
            fetched.append(1)

    engine = store._engine
    event.listen(engine, "after_cursor_execute", count_rows)
    try:
        window = store.read_window(chat, budget_tokens=per_turn * 3 + 30)
    finally:
        event.remove(engine, "after_cursor_execute", count_rows)
    assert len(window.turns) == 3
    assert window.omitted == 117
    assert len(fetched) == 1  # one batch of FIRST_BATCH rows held the window
