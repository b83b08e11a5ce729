"""The embedder and hybrid recall (runtime/memory/embedder.py) over a real store, a real transport
and the fake provider's ``/v1/embeddings`` on loopback."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.core.memory.terms import terms
from jupyter_agent.llm.fake.embed import embed_text
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.memory import vector_index
from jupyter_agent.runtime.memory.embedder import Embedder
from jupyter_agent.runtime.memory.hybrid import recall_hits
from jupyter_agent.store import Store
from jupyter_agent.store.memory.vector_search import pgvector_installed

KEY = "sk-embed-canary-5d1e9c0b7a"
SYNONYMS = {"puppy": "dog", "called": "name", "kitten": "cat"}
FACTS = [
    ("pets", "Our puppy is called Biscuit"),
    ("project", "The quarterly report goes to finance every March"),
    ("preferences", "Plots use the viridis colour map"),
]
QUERY = "what is my dog's name"
MODEL = "fake-embed"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    url = (
        f"sqlite:///{tmp_path / 'agent.sqlite'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_db_url"))
    )
    opened = Store(url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(
        [{"text": "unused"}], expect_key=KEY, embed_terms=terms, embed_synonyms=SYNONYMS
    ) as started:
        yield started


def tier_of(fake: FakeProvider, **extra: Any) -> dict[str, Any]:
    return {
        "provider": "openai-compatible",
        "model": "fake-embed",
        "base_url": fake.base_url + "/v1",
        "api_key_ref": "env:EMBED_KEY",
        **extra,
    }


class Tiers:
    """What the server's settings say the embed tier is (changed by the test)."""

    def __init__(self, tier: dict[str, Any] | None) -> None:
        self.tier = tier

    def __call__(self, owner: str) -> dict[str, Any] | None:
        return self.tier


def embedder_for(store: Store, tiers: Tiers, **options: Any) -> Embedder:
    transport = Transport(env={"EMBED_KEY": KEY}, backoff_base_s=0.05, backoff_max_s=0.2)
    # No scrubber: what keeps the key out of the log lines is the transport's redaction
    # and the embedder's own messages (the server's scrubber is a second net).
    return Embedder(store=store, transport=transport, tier=tiers, **options)


def save(store: Store, category: str, text: str, owner: str = "") -> Memory:
    now = now_iso()
    memory = Memory(
        id=new_id("mem"), text=text, category=category, created=now, updated=now, owner=owner
    )
    return store.add_memory(memory)


def no_key_logged(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        assert KEY not in record.getMessage(), record.getMessage()
        assert KEY not in repr(record.args)
        assert KEY not in (record.exc_text or "")


async def test_a_fact_in_other_words_is_found_with_the_embed_tier_and_not_without(
    store: Store, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    facts = [save(store, c, t) for c, t in FACTS]
    lexical = await recall_hits(store, None, QUERY, k=5, owner="")
    assert [h.id for h in lexical if h.kind == "memory"] == []  # no word in common

    embedder = embedder_for(store, Tiers(tier_of(fake)))
    for memory in facts:
        await embedder.on_saved(memory)  # returns at once; the vector comes in the background
    await embedder.drain()
    assert {i for i, _ in store.memory_vectors(model="fake-embed")} == {m.id for m in facts}

    hits = await recall_hits(store, embedder, QUERY, k=5, owner="")
    assert [(h.kind, h.id) for h in hits][:1] == [("memory", facts[0].id)]
    top = hits[0]
    assert top.text == "Our puppy is called Biscuit"
    assert top.category == "pets"
    cosine = sum(
        a * b
        for a, b in zip(
            embed_text(QUERY, terms=terms, synonyms=SYNONYMS),
            embed_text(FACTS[0][1], terms=terms, synonyms=SYNONYMS),
            strict=True,
        )
    )
    assert top.score == pytest.approx(0.5 * cosine, abs=1e-3)  # lexical 0, cosine alone
    assert top.score >= 0.3  # the default recall threshold
    assert all(h.id != facts[2].id or h.score < 0.3 for h in hits)  # an unrelated fact

    # a query both ways: the lexical score and the cosine add up
    both = await recall_hits(store, embedder, "viridis colour map for plots", k=5, owner="")
    assert both[0].id == facts[2].id
    assert both[0].score > 0.9
    assert fake.embed_requests[-1].headers["authorization"] == f"Bearer {KEY}"
    assert fake.requests == []  # no model step: embeddings are not chat
    no_key_logged(caplog)
    await embedder.transport.aclose()


async def test_recall_is_the_stores_own_without_an_embed_tier(store: Store) -> None:
    facts = [save(store, c, t) for c, t in FACTS]
    embedder = embedder_for(store, Tiers(None))
    assert not embedder.enabled("")
    await embedder.on_saved(facts[0])
    embedder.kick()
    await embedder.drain()
    assert store.memory_vectors(model="fake-embed") == []
    query = "viridis plots"
    assert await recall_hits(store, embedder, query, k=3, owner="") == store.recall(query, k=3)


@pytest.mark.parametrize("failure", ["status 500", "unreachable", "hangs"])
async def test_a_failing_embed_endpoint_leaves_recall_lexical(
    store: Store, fake: FakeProvider, caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    caplog.set_level(logging.DEBUG)
    facts = [save(store, c, t) for c, t in FACTS]
    tier = tier_of(fake)
    if failure == "status 500":
        fake.embed_error = 500
    elif failure == "hangs":
        fake.embed_delay_s = 30
    else:
        with socket.socket() as probe:  # a port nobody listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        tier["base_url"] = f"http://127.0.0.1:{port}/v1"
    embedder = embedder_for(
        store, Tiers(tier), query_deadline_s=1.0, save_deadline_s=1.0, cooldown_s=60
    )
    await embedder.on_saved(facts[0])
    await embedder.drain()  # the save's embedding failed: logged, nothing raised

    for query in ("viridis colour map", QUERY):
        started = time.monotonic()
        hits = await recall_hits(store, embedder, query, k=5, owner="")
        assert time.monotonic() - started < 2.0  # the query deadline, then the cooldown
        assert hits == store.recall(query, k=5)
    assert store.memory_vectors(model="fake-embed") == []
    warnings = [r for r in caplog.records if r.name == "jupyter_agent.runtime.memory.embedder"]
    assert sum(r.levelno == logging.WARNING for r in warnings) == 1  # one per failure streak
    assert "fake-embed at 127.0.0.1" in warnings[0].getMessage()
    calls = len(fake.embed_requests)
    await recall_hits(store, embedder, QUERY, k=5, owner="")
    assert len(fake.embed_requests) == calls  # cooling down: no call tried
    no_key_logged(caplog)
    fake.embed_delay_s = 0
    await embedder.stop()
    await embedder.transport.aclose()


async def test_the_endpoint_heals_and_the_backfill_catches_up(
    store: Store, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    fake.embed_error = 503
    facts = [save(store, c, t) for c, t in FACTS]
    embedder = embedder_for(store, Tiers(tier_of(fake)), cooldown_s=0.0, batch=2)
    for memory in facts:
        await embedder.on_saved(memory)
    await embedder.drain()
    assert store.memory_vectors(model="fake-embed") == []
    fake.embed_error = None
    hits = await recall_hits(
        store, embedder, QUERY, k=5, owner=""
    )  # answers, and kicks the backfill
    await embedder.drain()
    assert {i for i, _ in store.memory_vectors(model="fake-embed")} == {m.id for m in facts}
    assert any("answers again" in r.getMessage() for r in caplog.records)
    hits = await recall_hits(store, embedder, QUERY, k=5, owner="")
    assert hits[0].id == facts[0].id
    batches = [len(r.json["input"]) for r in fake.embed_requests if r.json and not fake.embed_error]
    assert 2 in batches  # the backfill embeds in batches of ``batch``
    await embedder.transport.aclose()


async def test_facts_from_before_the_tier_and_a_new_model_are_backfilled(
    store: Store, fake: FakeProvider
) -> None:
    facts = [save(store, c, t) for c, t in FACTS]
    tiers = Tiers(None)
    embedder = embedder_for(store, tiers)
    embedder.kick()
    await embedder.drain()
    tiers.tier = tier_of(fake)  # the person sets an embed tier from the browser
    embedder.kick()  # what the server does at start, and every query does
    await embedder.drain()
    assert len(store.memory_vectors(model="fake-embed")) == 3
    assert await embedder.backfill() == 0  # nothing left
    tiers.tier = tier_of(fake, model="fake-embed-2")  # a new model: none has its vector
    assert await recall_hits(store, embedder, QUERY, k=5, owner="") == []  # and this query kicks...
    await embedder.drain()
    assert len(store.memory_vectors(model="fake-embed-2")) == 3  # ...the backfill
    assert (await recall_hits(store, embedder, QUERY, k=5, owner=""))[0].id == facts[0].id
    await embedder.transport.aclose()


async def test_an_updated_fact_gets_its_new_vector_and_a_deleted_one_is_never_recalled(
    store: Store, fake: FakeProvider
) -> None:
    facts = [save(store, c, t) for c, t in FACTS]
    embedder = embedder_for(store, Tiers(tier_of(fake)))
    embedder.kick()
    await embedder.drain()
    assert (await recall_hits(store, embedder, QUERY, k=5, owner=""))[0].id == facts[0].id
    updated = store.update_memory(facts[0].id, text="Our kitten is Miso", now=now_iso())
    assert updated is not None
    await embedder.on_saved(updated)
    await embedder.drain()
    hits = await recall_hits(store, embedder, QUERY, k=5, owner="")
    assert facts[0].id not in [h.id for h in hits if h.score >= 0.3]
    cat = await recall_hits(store, embedder, "my cat", k=5, owner="")
    assert cat[0].id == facts[0].id
    assert store.delete_memory(facts[0].id)
    assert facts[0].id not in [
        h.id for h in await recall_hits(store, embedder, "my cat", k=5, owner="")
    ]
    await embedder.transport.aclose()


async def test_owners_and_categories_scope_the_vectors(store: Store, fake: FakeProvider) -> None:
    mine = save(store, "pets", "Our puppy is called Biscuit")
    theirs = save(store, "pets", "My puppy is called Rex", owner="someone")
    embedder = embedder_for(store, Tiers(tier_of(fake)))
    await embedder.on_saved(mine)
    await embedder.on_saved(theirs)
    await embedder.drain()
    assert [h.id for h in await recall_hits(store, embedder, QUERY, k=5, owner="")] == [mine.id]
    found = await recall_hits(store, embedder, QUERY, k=5, owner="someone")
    assert [h.id for h in found] == [theirs.id]
    assert await recall_hits(store, embedder, QUERY, k=5, category="project", owner="") == []
    only_turns = await recall_hits(store, embedder, QUERY, k=5, kinds=("turn",), owner="")
    assert only_turns == []
    # a fact of an owner the embedder never saw saved: that owner's recall kicks its backfill
    other = save(store, "pets", "Her puppy is called Pixel", owner="another")
    await recall_hits(store, embedder, QUERY, k=5, owner="another")
    await embedder.drain()
    found = await recall_hits(store, embedder, QUERY, k=5, owner="another")
    assert [h.id for h in found] == [other.id]
    await embedder.transport.aclose()


async def test_the_index_gives_the_same_cosines_with_and_without_numpy(
    store: Store, fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts = [save(store, c, t) for c, t in FACTS]
    embedder = embedder_for(store, Tiers(tier_of(fake)))
    embedder.kick()
    await embedder.drain()
    query = embed_text(QUERY, terms=terms, synonyms=SYNONYMS)
    with_numpy = await embedder.index("", "fake-embed").cosines(query)
    monkeypatch.setattr(vector_index, "_NUMPY", [None])
    plain = await vector_index.VectorIndex(store, owner="", model="fake-embed").cosines(query)
    assert set(plain) == {m.id for m in facts}
    assert plain == pytest.approx(with_numpy, abs=1e-5)  # float32 both ways
    assert await vector_index.VectorIndex(store, owner="", model="other").cosines(query) == {}
    await embedder.transport.aclose()


def test_pgvector_is_detected_and_absent_on_this_machine(store: Store) -> None:
    # pgvector is not packaged here (BUILD-NOTES): the check runs, finds nothing, and the
    # in-memory index serves (the SQL path of store/memory/vector_search.py is untested here).
    assert pgvector_installed(store) is False
    assert pgvector_installed(store) is False  # cached


@pytest.mark.parametrize("numpy", [True, False])
async def test_the_index_follows_puts_and_drops_between_loads(
    store: Store, monkeypatch: pytest.MonkeyPatch, numpy: bool
) -> None:
    if not numpy:
        monkeypatch.setattr(vector_index, "_NUMPY", [None])
    a, b, c = (save(store, "x", t) for t in ("alpha one", "beta two", "gamma three"))
    vec = {m.id: embed_text(m.text, terms=terms) for m in (a, b, c)}
    store.put_vector(a.id, MODEL, vec[a.id])
    index = vector_index.VectorIndex(store, owner="", model=MODEL)
    assert set(await index.cosines(vec[a.id])) == {a.id}
    store.put_vector(b.id, MODEL, vec[b.id])
    index.put(b.id, vec[b.id])  # what the embedder does after storing it
    index.put(c.id, [1.0, 0.0])  # another dimension: not searchable
    near = await index.nearest(vec[b.id], limit=1)
    assert list(near) == [b.id]
    assert near[b.id] == pytest.approx(1.0, abs=1e-5)
    assert set(await index.nearest(vec[b.id], limit=1, ids=[a.id, c.id, "mem_none"])) == {
        a.id,
        b.id,
    }
    index.put(a.id, vec[b.id])  # a changed fact: its row is replaced
    assert (await index.cosines(vec[b.id]))[a.id] == pytest.approx(1.0, abs=1e-5)
    index.drop(b.id)
    assert set(await index.cosines(vec[b.id])) == {a.id}
    assert len(index) == 1
    assert await index.nearest([1.0, 0.0], limit=5) == {}  # a query of another dimension
    await index.load(force=True)  # the store's truth again: a's old vector, b's
    assert set(await index.cosines(vec[a.id])) == {a.id, b.id}
