"""Recall over memories, turns and chunk summaries (issue 15), on SQLite and PostgreSQL:
the ranking against a reference computed from the texts, the hits' shapes, exclusions,
and the index kept current by the transactions that store chunks and by the indexer that
follows the turns."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.core.memory.recall import without_secrets
from jupyter_agent.core.memory.records import Memory, RecallHit
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Store
from jupyter_agent.store.memory.turn_indexer import TurnIndexer
from jupyter_agent.store.migrations import MIGRATIONS
from jupyter_agent.store.rows import turn_values
from jupyter_agent.store.tables import TURNS
from tests.store import recall_corpus
from tests.store.factories import iso

CHAT = "chat_01A"


def rows_of(db_url: str, sql: str) -> list[tuple[object, ...]]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql))]
    finally:
        engine.dispose()


def turn(
    n: int, user: str, reply: str, *, chat_id: str = CHAT, created: str | None = None
) -> TurnRecord:
    return TurnRecord(
        id=f"turn_{n:04d}",
        chat_id=chat_id,
        run_id=f"run_{n:04d}",
        user_text=user,
        created=created or iso(n),
        llm=TurnLLM(stop_reason="done", end_cause="done"),
        replies=(Reply(text="looking into it", done=False), Reply(text=reply, done=True)),
    )


def chunk(level: int, first: int, body: str, *, chat_id: str = CHAT) -> StoredChunk:
    return StoredChunk(
        chat_id=chat_id,
        level=level,  # type: ignore[arg-type]
        first_turn=first,
        last_turn=first + (9 if level == 1 else 49),
        text=body,
        run_id=f"run_h{level}{first}",
        model=None,
        created=iso(500 + first),
    )


def fact(n: int, body: str, *, category: str = "general", created: str | None = None) -> Memory:
    return Memory(
        id=f"mem_{n:04d}",
        text=body,
        category=category,
        author="person",
        created=created or iso(n),
        updated=created or iso(n),
    )


@pytest.fixture
def chats(store: Store) -> Store:
    store.create_chat(chat_id=CHAT, title="Sales analysis", now=iso(0))
    store.create_chat(chat_id="chat_01B", title="Other chat", now=iso(0))
    return store


@pytest.fixture(scope="module")
def corpus() -> recall_corpus.Corpus:
    return recall_corpus.build()


@pytest.fixture
def loaded(store: Store, corpus: recall_corpus.Corpus) -> Store:
    recall_corpus.load(store, corpus)
    return store


def test_recall_ranks_as_the_reference_does(loaded: Store, corpus: recall_corpus.Corpus) -> None:
    """Max-score pruning returns exactly the top k of scoring every doc."""
    for query in corpus.queries:
        for k in (1, 5, 12):
            got = [(h.kind, h.id, h.score) for h in loaded.recall(query, k=k)]
            assert got == recall_corpus.reference(corpus, query, k=k), (query, k)
    for kinds in (("memory",), ("turn", "chunk")):
        query = corpus.queries[3]
        got = [(h.kind, h.id, h.score) for h in loaded.recall(query, kinds=kinds, k=8)]
        assert got == recall_corpus.reference(corpus, query, k=8, kinds=kinds)


def test_hits_carry_their_text_chat_and_span(chats: Store) -> None:
    store = chats
    store.append_turn(turn(1, "Plot the revenue by region", "Done: revenue_by_region.png"))
    store.add_chunk(chunk(1, 1, "The person analysed quarterly revenue per region."))
    store.add_memory(fact(2, "Revenue figures are in EUR, not USD.", category="data"))
    hits = store.recall("revenue by region", k=10)
    assert [h.kind for h in hits] == ["chunk", "turn", "memory"]
    chunk_hit, turn_hit, memory_hit = hits
    assert chunk_hit == RecallHit(
        kind="chunk",
        id=f"{CHAT}:1:1",
        chat_id=CHAT,
        text="The person analysed quarterly revenue per region.",
        score=0.9,
        created=iso(501),
        chat_title="Sales analysis",
        level=1,
        first_turn=1,
        last_turn=10,
    )
    assert turn_hit == RecallHit(
        kind="turn",
        id="turn_0001",
        chat_id=CHAT,
        text="user: Plot the revenue by region\nagent: Done: revenue_by_region.png",
        score=0.8,
        created=iso(1),
        chat_title="Sales analysis",
    )
    assert memory_hit.category == "data"
    assert memory_hit.chat_id is None
    assert memory_hit.chat_title is None
    assert 0 < memory_hit.score < 0.8  # holds "revenue" only
    assert memory_hit.to_json() == {
        "kind": "memory",
        "id": "mem_0002",
        "chat_id": None,
        "text": "Revenue figures are in EUR, not USD.",
        "score": memory_hit.score,
        "created": iso(2),
        "category": "data",
    }


def test_kind_weights_then_time_then_id_break_ties(chats: Store) -> None:
    store = chats
    store.add_memory(fact(1, "quokka habitat notes", created=iso(5)))
    store.add_memory(fact(2, "quokka habitat", created=iso(9)))
    store.add_memory(fact(3, "habitat of the quokka", created=iso(9)))
    store.append_turn(turn(4, "quokka habitat?", "yes", created=iso(99)))
    store.add_chunk(chunk(1, 1, "We read about the quokka habitat."))
    hits = store.recall("quokka habitat", k=10)
    assert [(h.id, h.score) for h in hits] == [
        ("mem_0002", 1.0),  # newest first, then by id
        ("mem_0003", 1.0),
        ("mem_0001", 1.0),
        (f"{CHAT}:1:1", 0.9),
        ("turn_0004", 0.8),
    ]
    assert [h.id for h in store.recall("quokka habitat", k=2)] == ["mem_0002", "mem_0003"]


def test_a_long_text_is_clipped(chats: Store) -> None:
    body = "zeppelin " + "word " * 300  # char 599 starts a word: cut at the space before
    chats.add_memory(fact(1, body))
    (hit,) = chats.recall("zeppelin")
    assert hit.text == body[:598] + "…"
    assert len(hit.text) == 599


def test_a_run_longer_than_the_clip_is_dropped(chats: Store) -> None:
    chats.add_memory(fact(1, "zeppelin " + "x" * 1500))
    (hit,) = chats.recall("zeppelin")
    assert hit.text == "zeppelin…"


def test_a_token_straddling_the_clip_is_recalled_neither_whole_nor_in_part(
    chats: Store,
) -> None:
    # Cut mid-token, the first 10 chars of a key lose the shape the secret filter knows.
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    body = "zeppelin " + "x " * 291 + token + " tail"
    assert body.index(token) < 600 < body.index(token) + len(token)
    chats.add_memory(fact(1, body))
    hits = chats.recall("zeppelin")
    assert [h.id for h in hits] == ["mem_0001"]
    assert "ghp_" not in hits[0].text
    assert without_secrets(hits) == hits  # what is left is no credential
    # Whole, the same text is refused by the filter.
    chats.add_memory(fact(2, "zeppelin " + token))
    assert [h.id for h in without_secrets(chats.recall("zeppelin"))] == ["mem_0001"]


def test_queries_without_terms_or_kinds_find_nothing(chats: Store) -> None:
    chats.add_memory(fact(1, "the plan is to ship it"))
    assert chats.recall("") == []
    assert chats.recall("the of and it is to") == []  # stopwords only
    assert chats.recall("x y z") == []  # one-character tokens only
    assert chats.recall("ship", kinds=()) == []
    assert chats.recall("ship", k=0) == []
    assert chats.recall("unknownword") == []
    assert [h.id for h in chats.recall("shipping plans")] == ["mem_0001"]
    with pytest.raises(ValueError, match="unknown recall kinds"):
        chats.recall("ship", kinds=("memory", "notes"))


def test_category_keeps_that_category_s_memories_only(chats: Store) -> None:
    chats.add_memory(fact(1, "the sales data is in sales.parquet", category="data"))
    chats.add_memory(fact(2, "sales charts in green", category="preferences"))
    chats.append_turn(turn(3, "load the sales data", "loaded"))
    assert [h.id for h in chats.recall("sales", k=10)] == ["mem_0002", "mem_0001", "turn_0003"]
    assert [h.id for h in chats.recall("sales", category="data")] == ["mem_0001"]
    assert chats.recall("sales", category="none") == []


def test_the_window_s_turns_and_chunks_are_left_out(chats: Store) -> None:
    store = chats
    for n in range(1, 5):
        store.append_turn(turn(n, f"marzipan step {n}", "ok"))
    store.append_turn(turn(9, "marzipan elsewhere", "ok", chat_id="chat_01B"))
    store.add_chunk(chunk(1, 1, "marzipan recipe, part one"))
    store.add_chunk(chunk(1, 11, "marzipan recipe, part two"))
    store.add_chunk(chunk(1, 1, "marzipan in the other chat", chat_id="chat_01B"))
    every = {h.id for h in store.recall("marzipan", k=20)}
    assert len(every) == 8
    hits = store.recall(
        "marzipan",
        k=20,
        exclude_chat=CHAT,
        exclude_since=iso(3),
        exclude_chunks=[(1, 11)],
    )
    assert {h.id for h in hits} == every - {"turn_0003", "turn_0004", f"{CHAT}:1:11"}
    # Without exclude_since (a window of no raw turns) no turn is left out.
    hits = store.recall("marzipan", k=20, exclude_chat=CHAT, exclude_chunks=[(1, 1)])
    assert {h.id for h in hits} == every - {f"{CHAT}:1:1"}


def test_a_turn_is_queued_with_it_and_indexed_after_it(
    chats: Store, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = chats
    # Its indexer waits past the test: what is pending is this test's to index.
    monkeypatch.setattr(store, "_indexer", TurnIndexer(store, delay_s=60))
    assert store.append_turn(turn(1, "fjord trip", "booked"))
    assert store.append_turn(turn(1, "fjord trip", "booked")) is False  # replayed: one doc
    assert rows_of(db_url, "SELECT turn_id FROM agent_recall_pending") == [("turn_0001",)]
    assert store.index_pending_turns() == 1
    assert rows_of(
        db_url, "SELECT kind, ref_id, chat_id, terms, n_terms FROM agent_recall_docs"
    ) == [("turn", "turn_0001", CHAT, "fjord trip book", 3)]
    assert store.pending_recall_turns() == 0
    # A turn indexed already (a doc written another way) is skipped, not a failed batch.
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO agent_recall_docs (owner, kind, ref_id, chat_id, created, terms,"
                " n_terms) VALUES ('', 'turn', 'turn_0002', NULL, '', '', 0)"
            )
        )
    engine.dispose()
    assert store.append_turn(turn(2, "fjord again", "ok"))
    assert store.index_pending_turns() == 1
    assert store.pending_recall_turns() == 0
    assert [t.id for t in store.list_turns(CHAT)] == ["turn_0001", "turn_0002"]
    with pytest.raises(StoreError):
        store.append_turn(turn(3, "no such chat", "ok", chat_id="chat_none"))
    assert store.pending_recall_turns() == 0  # nothing of a failed write is queued
    assert [h.id for h in store.recall("fjord", k=10)] == ["turn_0001"]


def test_a_chunk_s_doc_is_written_in_the_transaction_that_stores_it(
    chats: Store, db_url: str
) -> None:
    store = chats
    assert store.add_chunk(chunk(1, 1, "xylograph printing"))
    assert store.add_chunk(chunk(1, 1, "a second summary of the span")) is False
    assert [h.text for h in store.recall("xylograph printing summary", k=10)] == [
        "xylograph printing"
    ]
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO agent_recall_docs (owner, kind, ref_id, chat_id, created, terms,"
                f" n_terms) VALUES ('', 'chunk', '{CHAT}:1:11', NULL, '', '', 0)"
            )
        )
    engine.dispose()
    with pytest.raises(StoreError):
        store.add_chunk(chunk(1, 11, "xylograph again"))
    assert [c.first_turn for c in store.list_chunks(CHAT)] == [1]


def test_deleting_a_chat_deletes_its_docs_not_its_memories(chats: Store, db_url: str) -> None:
    store = chats
    store.append_turn(turn(1, "quokka census", "done"))
    store.append_turn(turn(2, "quokka census", "done", chat_id="chat_01B"))
    store.add_chunk(chunk(1, 1, "quokka census summary"))
    saved = Memory(
        id="mem_0009",
        text="the quokka census is yearly",
        category="project",
        chat_id=CHAT,
        run_id="run_0001",
        author="agent",
        created=iso(3),
        updated=iso(3),
    )
    store.add_memory(saved)
    assert store.delete_chat(CHAT)
    assert [h.id for h in store.recall("quokka census", k=10)] == ["mem_0009", "turn_0002"]
    assert rows_of(db_url, "SELECT kind, ref_id FROM agent_recall_docs ORDER BY kind") == [
        ("memory", "mem_0009"),
        ("turn", "turn_0002"),
    ]
    assert rows_of(db_url, "SELECT df FROM agent_recall_df WHERE term IN ('', 'quokka')") == [
        (2,),
        (2,),
    ]


def test_migration_v5_indexes_the_turns_and_chunks_already_stored(
    db_url: str, corpus: recall_corpus.Corpus
) -> None:
    """A v4 database (turns and chunks, no index) upgraded: the same docs and hits as a
    database that indexed them as they were stored."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.begin() as conn:
        conn.execute(
            text("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)")
        )
        for step in MIGRATIONS[:4]:
            step.apply(conn)
            conn.execute(text(f"INSERT INTO schema_version VALUES ({step.version}, 'x')"))
        for chat_id in recall_corpus.CHATS:
            conn.execute(
                text("INSERT INTO chats VALUES (:c, :t, :n, :n, NULL)"),
                {"c": chat_id, "t": f"title of {chat_id}", "n": iso(0)},
            )
        conn.execute(TURNS.insert(), [turn_values(t) for t in corpus.turns])
        for c in corpus.chunks:
            conn.execute(
                text(
                    "INSERT INTO agent_chunks VALUES (:id, :chat, :level, :first, :last, :text,"
                    " :run, NULL, :created)"
                ),
                {
                    "id": f"chunk_{c.chat_id}_{c.level}_{c.first_turn}",
                    "chat": c.chat_id,
                    "level": c.level,
                    "first": c.first_turn,
                    "last": c.last_turn,
                    "text": c.text,
                    "run": c.run_id,
                    "created": c.created,
                },
            )
    engine.dispose()
    upgraded = Store(db_url)
    try:
        without_memories = recall_corpus.Corpus((), corpus.turns, corpus.chunks, corpus.queries)
        for query in corpus.queries:
            got = [(h.kind, h.id, h.score) for h in upgraded.recall(query, k=5)]
            assert got == recall_corpus.reference(without_memories, query), query
        docs = rows_of(db_url, "SELECT kind, ref_id, terms FROM agent_recall_docs")
        assert len(docs) == len(corpus.turns) + len(corpus.chunks)
    finally:
        upgraded.close()


def test_work_is_bounded_by_candidates_newest_docs_of_the_rarest_terms(chats: Store) -> None:
    store = chats
    for n in range(1, 11):
        store.add_memory(fact(n, f"alpha note {n}"))
    store.add_memory(fact(11, "alpha gamma", created=iso(0)))
    everything = [h.id for h in store.recall("alpha gamma", k=4)]
    assert everything == ["mem_0011", "mem_0010", "mem_0009", "mem_0008"]
    # candidates=3: the rarest terms within that many docs (gamma: 1 doc; alpha would make
    # it 12) are the candidates: the docs holding only alpha are not read.
    assert [h.id for h in store.recall("alpha gamma", k=4, candidates=3)] == ["mem_0011"]
    # One common term: the last `candidates` docs written holding it (mem_0011 was written
    # last), ranked as ever (by time: mem_0011 says it is older).
    assert [h.id for h in store.recall("alpha", k=10, candidates=3)] == [
        "mem_0010",
        "mem_0009",
        "mem_0011",
    ]
    with pytest.raises(ValueError, match="candidates"):
        store.recall("alpha", candidates=0)
