"""The embedder's vectors stay those of the facts' current texts (review of issue 15, E):
the index is read once and kept current by puts and drops, a deleted or edited fact's
vector leaves it at once, a late or failed re-embedding never leaves a stale vector, and a
failing pgvector search falls back to the in-memory index. Through the real Embedder, the
MemoryService, the store (SQLite and PostgreSQL) and the fake provider's /v1/embeddings."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pytest

from jupyter_agent.core.memory.terms import terms
from jupyter_agent.llm.fake.embed import embed_text
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.runtime.ids import now_iso
from jupyter_agent.runtime.memory import vector_index
from jupyter_agent.runtime.memory.embedder import Embedder
from jupyter_agent.runtime.memory.hybrid import recall_hits
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.store import Store
from tests.runtime import test_embedder as base
from tests.runtime.test_embedder import MODEL, QUERY, SYNONYMS, Tiers, embedder_for, save, tier_of

# the fixtures of test_embedder.py: a store on each backend, the fake embeddings endpoint
store = base.store
fake = base.fake

DOG = "Our puppy is called Biscuit"


def vec(text: str) -> list[float]:
    return embed_text(text, terms=terms, synonyms=SYNONYMS)


def service_for(store: Store, embedder: Embedder) -> MemoryService:
    # wired as runtime/assembly.py wires it
    return MemoryService(store, embedder=embedder.on_saved, vectors=embedder)


def stored_ids(store: Store, model: str = MODEL) -> set[str]:
    return {i for i, _ in store.memory_vectors(model=model)}


async def test_the_index_is_read_once_and_kept_current_by_the_embedder(
    store: Store, fake: FakeProvider
) -> None:
    embedder = embedder_for(store, Tiers(tier_of(fake)))
    service = service_for(store, embedder)
    dog = await service.save(DOG, author="person", owner="")
    await embedder.drain()
    assert (await recall_hits(store, embedder, QUERY, k=5, owner=""))[0].id == dog.id
    await embedder.drain()  # the backfill the search kicked: done before the next fact
    index = embedder.index("", MODEL)
    # a vector another server wrote: not read again before ``reload_every_s`` ...
    other = save(store, "x", "Her puppy is called Pixel")
    assert store.put_vector(other.id, MODEL, vec(other.text))
    assert set(await index.cosines(vec(QUERY))) == {dog.id}
    # ... while this server's own saves are in the index at once
    cat = await service.save("Our kitten is Miso", author="person", owner="")
    await embedder.drain()
    assert set(await index.cosines(vec(QUERY))) == {dog.id, cat.id}
    embedder.invalidate()  # explicit: read the store again
    assert set(await index.cosines(vec(QUERY))) == {dog.id, cat.id, other.id}
    # a new model is a new index; the owner's old one is let go
    assert embedder.index("", "fake-embed-2") is not index
    assert ("", MODEL) not in embedder._indexes
    await embedder.transport.aclose()


async def test_a_deleted_fact_leaves_the_index_at_once(store: Store, fake: FakeProvider) -> None:
    embedder = embedder_for(store, Tiers(tier_of(fake)))
    service = service_for(store, embedder)
    dog = await service.save(DOG, author="person", owner="")
    keep = await service.save("Plots use the viridis colour map", author="person", owner="")
    await embedder.drain()
    index = embedder.index("", MODEL)
    assert set(await index.cosines(vec(QUERY))) == {dog.id, keep.id}
    await service.delete(dog.id, owner="")
    # the index is not read again: only MemoryService.delete -> on_deleted removed it
    assert set(await index.cosines(vec(QUERY))) == {keep.id}
    assert len(index) == 1
    assert dog.id not in [h.id for h in await recall_hits(store, embedder, QUERY, k=5, owner="")]
    await embedder.transport.aclose()


async def test_an_edit_drops_the_old_vector_before_the_new_one_is_computed(
    store: Store, fake: FakeProvider
) -> None:
    embedder = embedder_for(store, Tiers(tier_of(fake)), save_deadline_s=5.0, cooldown_s=0.0)
    service = service_for(store, embedder)
    dog = await service.save(DOG, author="person", owner="")
    await embedder.drain()
    index = embedder.index("", MODEL)
    assert dog.id in await index.cosines(vec(QUERY))

    fake.embed_delay_s = 1.0  # the re-embedding is slow: the old vector must go now
    await service.update(dog.id, text="Our kitten is Miso", owner="")
    assert dog.id not in stored_ids(store)  # dropped with the old text, in one transaction
    assert dog.id not in await index.cosines(vec(QUERY))
    fake.embed_delay_s = 0.0
    await embedder.drain()
    assert (await index.cosines(vec("my cat")))[dog.id] > 0.3  # the new text's vector

    fake.embed_error = 500  # a failed re-embedding: no vector at all, not the old one
    await service.update(dog.id, text="Our puppy is called Biscuit again", owner="")
    await embedder.drain()
    assert dog.id not in stored_ids(store)
    assert dog.id not in await index.cosines(vec("my cat"))
    hits = await recall_hits(store, embedder, "my cat", k=5, owner="")
    assert dog.id not in [h.id for h in hits]
    # a category-only change keeps the vector (the text it is of is unchanged)
    fake.embed_error = None
    await embedder.backfill()
    assert dog.id in stored_ids(store)
    assert store.update_memory(dog.id, category="pets", now=now_iso()) is not None
    assert dog.id in stored_ids(store)
    await embedder.transport.aclose()


async def test_two_quick_edits_finishing_out_of_order_keep_the_newest_vector(
    store: Store, fake: FakeProvider
) -> None:
    embedder = embedder_for(store, Tiers(tier_of(fake)), save_deadline_s=10.0)
    service = service_for(store, embedder)
    dog = await service.save(DOG, author="person", owner="")
    await embedder.drain()
    first_text, last_text = "Our kitten is Miso", "Plots use the viridis colour map"
    fake.embed_delay_s = 1.5
    sent = len(fake.embed_requests)
    await service.update(dog.id, text=first_text, owner="")  # its embedding hangs 1.5 s ...
    deadline = time.monotonic() + 5
    while len(fake.embed_requests) == sent and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert len(fake.embed_requests) == sent + 1
    fake.embed_delay_s = 0.0
    await asyncio.sleep(0.01)  # a later millisecond: another ``updated``
    last = await service.update(dog.id, text=last_text, owner="")  # ... this one answers first
    await embedder.drain()
    assert fake.embed_requests[-1].json is not None
    [(memory_id, stored)] = store.memory_vectors(model=MODEL)
    assert memory_id == dog.id
    assert stored == pytest.approx(vec(last_text), abs=1e-5)  # not the first edit's
    index = embedder.index("", MODEL)
    assert (await index.cosines(vec(last_text)))[dog.id] == pytest.approx(1.0, abs=1e-5)
    # the store's own guard: a vector of an older ``updated`` is discarded
    assert not store.put_vector(dog.id, MODEL, vec(first_text), updated=dog.updated)
    assert store.put_vector(dog.id, MODEL, vec(last_text), updated=last.updated)
    await embedder.transport.aclose()


async def test_a_failing_pgvector_search_falls_back_to_the_index_with_one_warning(
    store: Store, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # pgvector=True where it is not installed: its SQL fails (SQLite has no ``vector``
    # type nor ANY; PostgreSQL here has no extension), as any error of that path would.
    caplog.set_level(logging.WARNING)
    embedder = embedder_for(store, Tiers(tier_of(fake)), pgvector=True)
    service = service_for(store, embedder)
    dog = await service.save(DOG, author="person", owner="")
    await embedder.drain()
    # the pgvector search fails: the in-memory index was never needed, so it starts
    # loading now and this answer is lexical (nothing: no word in common)
    assert await recall_hits(store, embedder, QUERY, k=5, owner="") == []
    await embedder.drain()
    for _ in range(2):
        hits = await recall_hits(store, embedder, QUERY, k=5, owner="")
        assert [h.id for h in hits][:1] == [dog.id]  # ranked by the in-memory vectors
    warnings = [r.getMessage() for r in caplog.records if "pgvector" in r.getMessage()]
    assert len(warnings) == 1
    assert "searched in memory" in warnings[0]
    await embedder.transport.aclose()


@pytest.mark.parametrize("numpy", [True, False])
async def test_many_changes_are_folded_and_score_as_a_fresh_load(
    store: Store, monkeypatch: pytest.MonkeyPatch, numpy: bool
) -> None:
    if not numpy:
        monkeypatch.setattr(vector_index, "_NUMPY", [None])
    facts = [save(store, "x", f"fact number {n} about topic{n % 7}") for n in range(150)]
    for memory in facts[:50]:
        store.put_vector(memory.id, MODEL, vec(memory.text))
    index = vector_index.VectorIndex(store, owner="", model=MODEL)
    await index.load()
    for memory in facts[50:]:  # more than FOLD_AT changes: folded into a new snapshot
        assert store.put_vector(memory.id, MODEL, vec(memory.text))
        index.put(memory.id, vec(memory.text))
    for memory in facts[:10]:
        index.drop(memory.id)
        store.delete_memory(memory.id)
    query = vec("topic3 fact")
    await index.nearest(query, limit=8, ids=[facts[0].id, facts[20].id])  # starts the fold
    assert index._fold_task is not None  # in the background: the search did not wait
    await index._fold_task
    assert len(index._overlay) < vector_index.FOLD_AT
    near = await index.nearest(query, limit=8, ids=[facts[0].id, facts[20].id])
    fresh = vector_index.VectorIndex(store, owner="", model=MODEL)
    expect = await fresh.nearest(query, limit=8, ids=[facts[0].id, facts[20].id])
    assert near == pytest.approx(expect, abs=1e-5)
    assert facts[0].id not in near
    assert facts[20].id in near
    assert len(index) == len(fresh) == 140
    assert await index.cosines(query) == pytest.approx(await fresh.cosines(query), abs=1e-5)


async def test_the_first_vector_put_while_the_first_load_reads_an_empty_store_is_kept(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new owner's first fact: its vector is stored and put while the index's first load
    # reads the store, which has none yet (the read started before the vector was stored).
    index = vector_index.VectorIndex(store, owner="", model=MODEL)
    reading, release = threading.Event(), threading.Event()
    read = index._read

    def slow_read(dim: int) -> Any:
        found = read(dim)
        reading.set()
        release.wait(10)
        return found

    monkeypatch.setattr(index, "_read", slow_read)
    load = index.start_load()
    assert load is not None
    await asyncio.to_thread(reading.wait, 10)
    dog = save(store, "x", DOG)
    assert store.put_vector(dog.id, MODEL, vec(DOG))
    index.put(dog.id, vec(DOG))
    release.set()
    await load
    assert index.dim == len(vec(DOG))
    assert set(await index.cosines(vec(QUERY))) == {dog.id}


async def test_put_and_drop_on_the_loop_while_a_search_runs_in_a_worker(
    store: Store,
) -> None:
    facts = [save(store, "x", f"fact {n} word{n}") for n in range(40)]
    for memory in facts:
        store.put_vector(memory.id, MODEL, vec(memory.text))
    index = vector_index.VectorIndex(store, owner="", model=MODEL)

    async def churn() -> None:
        for n, memory in enumerate(facts * 3):
            if n % 2:
                index.drop(memory.id)
            else:
                index.put(memory.id, vec(memory.text))
            await asyncio.sleep(0)

    searches: list[Any] = [index.nearest(vec("word3"), limit=5) for _ in range(20)]
    results = await asyncio.gather(churn(), *searches)
    for found in results[1:]:
        assert len(found) <= 5
