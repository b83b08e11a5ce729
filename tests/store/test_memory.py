"""The Store's memories (issue 15), on SQLite and PostgreSQL: CRUD, owners, categories,
vectors, and the memory docs of the recall index kept with them."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Store
from tests.store.factories import iso, make_turn

CHAT = "chat_01A"


def memory(
    n: int,
    body: str | None = None,
    *,
    category: str = "general",
    owner: str = "",
    chat_id: str | None = CHAT,
    run_id: str | None = None,
    author: str = "agent",
) -> Memory:
    return Memory(
        id=f"mem_{n:04d}",
        text=body or f"fact {n}: the sales data is in sales.parquet é→π 🚀",
        category=category,
        chat_id=chat_id,
        run_id=run_id,
        author=author,  # type: ignore[arg-type]
        created=iso(n),
        updated=iso(n),
        owner=owner,
    )


def rows_of(db_url: str, sql: str) -> list[tuple[object, ...]]:
    """Rows read past the Store (what the tables hold)."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql))]
    finally:
        engine.dispose()


def test_add_get_round_trip_with_the_turn_resolved(store: Store) -> None:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    saved = store.add_memory(memory(1, run_id="run_000007"))
    assert saved == memory(1, run_id="run_000007")  # its turn is not stored yet
    assert saved.turn_id is None
    store.append_turn(make_turn(7))  # the saving run's turn: run_000007
    got = store.get_memory("mem_0001")
    assert got is not None
    assert got.turn_id == "turn_000007"
    assert got.to_json() == {
        "id": "mem_0001",
        "text": "fact 1: the sales data is in sales.parquet é→π 🚀",
        "category": "general",
        "chat_id": CHAT,
        "turn_id": "turn_000007",
        "author": "agent",
        "created": iso(1),
        "updated": iso(1),
        "run_id": "run_000007",
    }
    assert store.get_memory("mem_none") is None
    # A person's fact has no chat and no run.
    person = store.add_memory(memory(2, chat_id=None, author="person"))
    assert (person.chat_id, person.run_id, person.turn_id, person.author) == (
        None,
        None,
        None,
        "person",
    )
    with pytest.raises(StoreError):
        store.add_memory(memory(2))  # a duplicate id


def test_a_memory_outlives_its_chat(store: Store) -> None:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    store.add_memory(memory(1))
    assert store.delete_chat(CHAT)
    got = store.get_memory("mem_0001")
    assert got is not None
    assert got.chat_id == CHAT
    assert [h.id for h in store.recall("sales data")] == ["mem_0001"]


def test_update_changes_text_category_and_updated_and_reindexes(store: Store) -> None:
    store.add_memory(memory(1, "the deadline is friday", chat_id=None))
    assert [h.id for h in store.recall("deadline")] == ["mem_0001"]
    changed = store.update_memory("mem_0001", text="the launch moved to monday", now=iso(50))
    assert changed is not None
    assert (changed.text, changed.category, changed.created, changed.updated) == (
        "the launch moved to monday",
        "general",
        iso(1),
        iso(50),
    )
    assert store.recall("deadline") == []
    hits = store.recall("when is the launch")
    assert [(h.id, h.text, h.created) for h in hits] == [
        ("mem_0001", "the launch moved to monday", iso(50))
    ]
    recategorised = store.update_memory("mem_0001", category="project", now=iso(51))
    assert recategorised is not None
    assert (recategorised.text, recategorised.category) == ("the launch moved to monday", "project")
    assert store.memory_categories() == [("project", 1)]
    assert store.update_memory("mem_none", text="x", now=iso(52)) is None
    # A lone surrogate is stored repaired, like every other text.
    fixed = store.update_memory("mem_0001", text="bad \ud800 text", now=iso(53))
    assert fixed is not None
    assert fixed.text == "bad \ufffd text"


def test_delete_removes_the_memory_its_doc_and_its_vectors(store: Store, db_url: str) -> None:
    store.add_memory(memory(1, chat_id=None))
    store.add_memory(memory(2, chat_id=None))
    assert store.put_vector("mem_0001", "emb-1", [0.5, -0.25, 1.0])
    assert store.delete_memory("mem_0001")
    assert store.get_memory("mem_0001") is None
    assert store.delete_memory("mem_0001") is False
    assert [h.id for h in store.recall("sales data")] == ["mem_0002"]
    # The vector went with its memory (the foreign key's cascade), the doc with the memory.
    assert rows_of(db_url, "SELECT memory_id FROM agent_memory_vectors") == []
    assert rows_of(db_url, "SELECT ref_id FROM agent_recall_docs ORDER BY ref_id") == [
        ("mem_0002",)
    ]


def test_list_newest_first_by_category_with_a_limit(store: Store) -> None:
    for n, category in ((1, "data"), (2, "preferences"), (3, "data"), (4, "project")):
        store.add_memory(memory(n, category=category, chat_id=None))
    store.update_memory("mem_0001", text="restated", now=iso(10))
    assert [m.id for m in store.list_memories()] == [
        "mem_0001",
        "mem_0004",
        "mem_0003",
        "mem_0002",
    ]
    assert [m.id for m in store.list_memories(category="data")] == ["mem_0001", "mem_0003"]
    assert [m.id for m in store.list_memories(limit=2)] == ["mem_0001", "mem_0004"]
    assert store.list_memories(category="none") == []
    with pytest.raises(ValueError, match="limit"):
        store.list_memories(limit=0)
    assert store.memory_categories() == [("data", 2), ("preferences", 1), ("project", 1)]


def test_another_owner_sees_nothing_and_changes_nothing(store: Store) -> None:
    store.add_memory(memory(1, "alice likes seaborn plots", owner="alice", chat_id=None))
    store.add_memory(memory(2, "bob likes plotly plots", owner="bob", chat_id=None))
    store.add_memory(memory(3, "the server user likes ggplot plots", chat_id=None))
    assert [m.id for m in store.list_memories(owner="alice")] == ["mem_0001"]
    assert [m.id for m in store.list_memories()] == ["mem_0003"]
    assert store.get_memory("mem_0001") is None
    assert store.get_memory("mem_0001", owner="bob") is None
    assert store.update_memory("mem_0001", text="x", now=iso(9), owner="bob") is None
    assert store.delete_memory("mem_0001", owner="bob") is False
    assert store.memory_categories(owner="alice") == [("general", 1)]
    assert store.memory_categories(owner="carol") == []
    assert [h.id for h in store.recall("plots", owner="alice")] == ["mem_0001"]
    assert [h.id for h in store.recall("plots", owner="bob")] == ["mem_0002"]
    assert [h.id for h in store.recall("plots")] == ["mem_0003"]
    got = store.get_memory("mem_0001", owner="alice")
    assert got is not None
    assert got.text == "alice likes seaborn plots"
    assert got.owner == "alice"
    assert "owner" not in got.to_json()


def test_vectors_by_model_and_the_memories_without_one(store: Store) -> None:
    for n in (1, 2, 3):
        store.add_memory(memory(n, chat_id=None))
    store.add_memory(memory(4, owner="alice", chat_id=None))
    assert store.put_vector("mem_0002", "emb-1", [1.0, 0.0])
    assert store.put_vector("mem_0001", "emb-1", [0.0, 1.0])
    assert store.put_vector("mem_0004", "emb-1", [0.5, 0.5])
    assert store.put_vector("mem_0001", "emb-1", [0.25, 0.75])  # replaces
    assert store.put_vector("mem_none", "emb-1", [1.0]) is False
    assert store.memory_vectors(model="emb-1") == [
        ("mem_0001", [0.25, 0.75]),
        ("mem_0002", [1.0, 0.0]),
    ]
    assert store.memory_vectors(owner="alice", model="emb-1") == [("mem_0004", [0.5, 0.5])]
    assert store.memory_vectors(model="emb-2") == []
    assert [m.id for m in store.memories_without_vector(model="emb-1", limit=10)] == ["mem_0003"]
    assert [m.id for m in store.memories_without_vector(model="emb-2", limit=2)] == [
        "mem_0001",
        "mem_0002",
    ]
    assert store.memories_without_vector(owner="alice", model="emb-1", limit=10) == []


def test_document_frequencies_follow_every_write(store: Store, db_url: str) -> None:
    store.add_memory(memory(1, "sales data sales", chat_id=None))
    store.add_memory(memory(2, "sales report", chat_id=None))
    store.add_memory(memory(3, "report", owner="alice", chat_id=None))

    def df() -> list[tuple[object, ...]]:
        return rows_of(db_url, "SELECT owner, term, df FROM agent_recall_df ORDER BY 1, 2")

    assert df() == [
        ("", "", 2),
        ("", "data", 1),
        ("", "report", 1),
        ("", "sale", 2),
        ("alice", "", 1),
        ("alice", "report", 1),
    ]
    store.update_memory("mem_0002", text="quarterly report", now=iso(9))
    store.delete_memory("mem_0001")
    assert df() == [
        ("", "", 1),
        ("", "quarter", 1),
        ("", "report", 1),
        ("alice", "", 1),
        ("alice", "report", 1),
    ]


def test_a_memory_without_terms_is_kept_and_never_recalled(store: Store) -> None:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    store.add_memory(memory(1, "it is what it is!", chat_id=None))  # stopwords only
    store.append_turn(replace(make_turn(1), user_text="?!", replies=()))  # no terms either
    assert [m.id for m in store.list_memories()] == ["mem_0001"]
    assert store.recall("what is it") == []
    changed = store.update_memory("mem_0001", text="it is the plan", now=iso(5))
    assert changed is not None
    assert [h.id for h in store.recall("plans", kinds=("memory",))] == ["mem_0001"]
