"""A run's recall under its short deadline (``recall_timeout_ms``) with an embed tier
(review of issue 15): the vector index loads in the background and a search never waits
for it (lexical until loaded, hybrid after), an endpoint slower than the search's share of
the deadline leaves that answer lexical without switching the tier off, and the index
picks up vectors another server wrote (a cheap check, at most every ``reload_every_s``).
Through the real store (SQLite), transport and the fake provider's /v1/embeddings."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.runtime.memory.hybrid import hybrid_rank
from jupyter_agent.runtime.memory.search import begin_search
from jupyter_agent.store import Store
from tests.runtime import test_embedder as base
from tests.runtime.test_embedder import FACTS, MODEL, QUERY, Tiers, embedder_for, save, tier_of
from tests.runtime.test_embedder_freshness import vec

fake = base.fake

DEADLINE_S = 0.25  # the RunManager's recall_timeout_ms default
LEXICAL = "viridis colour map"  # shares words with FACTS[2]; QUERY shares none with any


def intent(query: str) -> dict[str, Any]:
    return {"query": query, "k": 5, "threshold": 0.0, "budget_tokens": 800}


class SlowStore(Store):
    """A store whose vectors take ``delay_s`` to read (hundreds of 768-dim facts' JSON)."""

    delay_s = 0.0

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.reads = 0
        self.stamps = 0
        self._count = threading.Lock()

    def memory_vectors(self, *, owner: str = "", model: str) -> list[tuple[str, list[float]]]:
        with self._count:
            self.reads += 1
        time.sleep(self.delay_s)
        return super().memory_vectors(owner=owner, model=model)

    def memory_vectors_stamp(self, *, owner: str = "", model: str) -> tuple[int, str]:
        with self._count:
            self.stamps += 1
        return super().memory_vectors_stamp(owner=owner, model=model)


@pytest.fixture
def slow_store(tmp_path: Path) -> Any:
    opened = SlowStore(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    try:
        yield opened
    finally:
        opened.close()


def embedded(store: Store) -> list[str]:
    """FACTS saved with their vectors (as by an earlier server)."""
    ids = []
    for category, text in FACTS:
        memory = save(store, category, text)
        assert store.put_vector(memory.id, MODEL, vec(text))
        ids.append(memory.id)
    return ids


async def test_a_slow_index_load_leaves_recall_lexical_until_it_is_done(
    slow_store: SlowStore, fake: FakeProvider
) -> None:
    ids = embedded(slow_store)
    slow_store.delay_s = 1.5  # far past the search's deadline
    embedder = embedder_for(slow_store, Tiers(tier_of(fake)), pgvector=False)
    rank = hybrid_rank(embedder, "")
    embedder.kick()  # the server's start: the load begins now, in the background
    for _ in range(3):  # every search while it loads: lexical, in time, never cancelling it
        hits = await begin_search(
            slow_store, intent(LEXICAL), rank=rank, timeout_s=DEADLINE_S, owner=""
        )
        assert [h.id for h in hits][:1] == [ids[2]]
        assert (
            await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
            == []
        )
    index = embedder.index("", MODEL)
    assert not index.loaded
    await embedder.drain()
    assert index.loaded
    assert slow_store.reads == 1  # one load, never restarted by the cancelled searches
    # Loaded: hybrid now (a wide deadline: the query's embedding call is not what is tested).
    hits = await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=5.0, owner="")
    assert [h.id for h in hits][:1] == [ids[0]]  # the fact in other words
    await embedder.transport.aclose()


async def test_the_first_save_starts_the_load_and_a_cancelled_wait_does_not_stop_it(
    slow_store: SlowStore, fake: FakeProvider
) -> None:
    embedded(slow_store)
    slow_store.delay_s = 0.5
    embedder = embedder_for(slow_store, Tiers(tier_of(fake)), pgvector=False)
    await embedder.on_saved(save(slow_store, "x", "Lunch is at noon"))
    index = embedder.index("", MODEL)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(index.load(), 0.05)  # shielded: the load goes on
    await embedder.drain()
    assert index.loaded
    assert slow_store.reads == 1
    assert len(index) == len(FACTS) + 1
    await embedder.transport.aclose()


async def test_a_slow_endpoint_under_the_search_deadline_is_not_a_tier_failure(
    slow_store: SlowStore, fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ids = embedded(slow_store)
    embedder = embedder_for(slow_store, Tiers(tier_of(fake)), pgvector=False)
    rank = hybrid_rank(embedder, "")
    embedder.kick()
    await embedder.drain()  # the index is loaded
    fake.embed_delay_s = 1.0  # a hosted endpoint: slower than 0.6 x 250 ms
    started = time.monotonic()
    hits = await begin_search(
        slow_store, intent(LEXICAL), rank=rank, timeout_s=DEADLINE_S, owner=""
    )
    assert time.monotonic() - started < DEADLINE_S
    assert [h.id for h in hits][:1] == [ids[2]]  # the lexical answer, in time
    assert (
        await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
        == []
    )
    assert not embedder._cooling()  # the caller's deadline: no cooldown ...
    records = [r for r in caplog.records if r.name == "jupyter_agent.runtime.memory.embedder"]
    assert not [r for r in records if r.levelno >= logging.WARNING]  # ... and no warning
    assert any("within the caller's" in r.getMessage() for r in records)
    fake.embed_delay_s = 0.0
    # the tier still works: a save is embedded, and the next search is hybrid
    new = save(slow_store, "pets", "Our kitten is Miso")
    await embedder.on_saved(new)
    await embedder.drain()
    assert new.id in {i for i, _ in slow_store.memory_vectors(model=MODEL)}
    hits = await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
    assert [h.id for h in hits][:1] == [ids[0]]
    await embedder.stop()
    await embedder.transport.aclose()


async def test_vectors_another_server_wrote_are_reloaded_in_the_background(
    slow_store: SlowStore, fake: FakeProvider
) -> None:
    ids = embedded(slow_store)
    embedder = embedder_for(slow_store, Tiers(tier_of(fake)), pgvector=False, reload_every_s=0.2)
    rank = hybrid_rank(embedder, "")
    embedder.kick()
    await embedder.drain()
    assert slow_store.reads == 1
    await asyncio.sleep(0.25)
    await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
    await embedder.drain()
    assert (slow_store.stamps, slow_store.reads) == (2, 1)  # checked: unchanged, not read
    # another server embeds a fact
    other = save(slow_store, "pets", "Her puppy is called Pixel")
    assert slow_store.put_vector(other.id, MODEL, vec(other.text))
    hits = await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
    assert other.id not in {h.id for h in hits}  # within reload_every_s: not checked
    await asyncio.sleep(0.25)
    slow_store.delay_s = 1.0  # the reload is slow: searches meanwhile use the old snapshot
    hits = await begin_search(slow_store, intent(QUERY), rank=rank, timeout_s=DEADLINE_S, owner="")
    assert [h.id for h in hits][:1] == [ids[0]]
    await embedder.drain()
    assert slow_store.reads == 2
    assert other.id in set(await embedder.index("", MODEL).cosines(vec(QUERY)))
    await embedder.transport.aclose()
