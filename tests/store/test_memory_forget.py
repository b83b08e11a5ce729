"""Forgetting a fact (issue 15), on SQLite and PostgreSQL: deleting a memory removes it and
the turn that saved it from later recalls (the turn stays in its chat), also when that turn
is stored after the fact was forgotten."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.core.turns import Reply, TurnRecord
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.store import Store
from tests.store.factories import iso, make_turn
from tests.store.test_recall_races import recount

FACT = "the quarterly revenue figures live in warehouse.parquet"


@pytest.fixture
def chat(store: Store) -> str:
    chat_id = new_id("chat")
    store.create_chat(chat_id=chat_id, title="t", now=iso(0))
    return chat_id


def fact_of(chat_id: str, run_id: str | None, n: int = 1) -> Memory:
    """A fact as the memory tool saves it: in a chat, by a run (``run_<ulid>``)."""
    return Memory(
        id=new_id("mem"),
        text=FACT,
        category="data",
        chat_id=chat_id,
        run_id=run_id,
        author="agent",
        created=iso(n),
        updated=iso(n),
    )


def saved_fact(store: Store, chat_id: str, run_id: str, n: int = 1) -> Memory:
    return store.add_memory(fact_of(chat_id, run_id, n))


def saving_turn(chat_id: str, run_id: str, n: int = 2) -> TurnRecord:
    return replace(
        make_turn(n, chat_id=chat_id),
        id=new_id("turn"),
        run_id=run_id,
        user_text=f"remember: {FACT}",
        replies=(Reply(text="Saved: revenue figures are in warehouse.parquet.", done=True),),
    )


def kinds(store: Store) -> list[tuple[str, str]]:
    return [(hit.kind, hit.id) for hit in store.recall("where are the revenue figures?")]


def test_forgetting_a_fact_removes_the_turn_that_saved_it(
    store: Store, chat: str, db_url: str
) -> None:
    run_id = new_id("run")
    fact = saved_fact(store, chat, run_id)
    turn = saving_turn(chat, run_id)
    assert store.append_turn(turn)
    other = replace(turn, id=new_id("turn"), run_id=new_id("run"), created=iso(5))
    store.append_turn(other)
    found = kinds(store)
    assert ("memory", fact.id) in found
    assert ("turn", turn.id) in found
    assert store.delete_memory(fact.id)
    found = kinds(store)
    assert ("memory", fact.id) not in found
    assert ("turn", turn.id) not in found
    assert ("turn", other.id) in found  # another run's turn with the words stays recalled
    assert [t.id for t in store.list_turns(chat)] == [turn.id, other.id]
    stored, expected = recount(db_url)
    assert stored == expected
    assert not store.delete_memory(fact.id)


def test_a_fact_forgotten_mid_run_keeps_its_turn_out_of_the_index(
    store: Store, chat: str, db_url: str
) -> None:
    run_id = new_id("run")
    fact = saved_fact(store, chat, run_id)
    assert store.delete_memory(fact.id)  # forgotten before the run's turn is stored
    turn = saving_turn(chat, run_id)
    assert store.append_turn(turn)
    assert store.get_turn_by_run(run_id) is not None
    assert kinds(store) == []
    later = replace(turn, id=new_id("turn"), run_id=new_id("run"), created=iso(9))
    store.append_turn(later)  # the next run is indexed as usual
    assert kinds(store) == [("turn", later.id)]
    stored, expected = recount(db_url)
    assert stored == expected


def test_a_fact_without_a_run_or_whose_chat_is_gone_is_forgotten(
    store: Store, chat: str, db_url: str
) -> None:
    loose = store.add_memory(fact_of(chat, None))
    assert store.delete_memory(loose.id)
    assert kinds(store) == []
    run_id = new_id("run")
    fact = saved_fact(store, chat, run_id, 3)
    store.append_turn(saving_turn(chat, run_id))
    assert store.delete_chat(chat)
    assert kinds(store) == [("memory", fact.id)]  # the chat's turn went with it
    assert store.delete_memory(fact.id)  # its chat is gone: nothing to lock, nothing else
    assert kinds(store) == []
    stored, expected = recount(db_url)
    assert stored == expected
