"""The memory service over a real store: save, edit, list, search, forget; what it refuses
(bad input, credentials) writes nothing and never echoes a secret; owners stay apart."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.memory.records import Memory, RecallHit
from jupyter_agent.exceptions import BadRequest, NotFound
from jupyter_agent.runtime.memory.search import begin_search
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.secrets import Scrubber
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES
from jupyter_agent.store.repo import Store

KEY = "known-provider-key-" + secrets.token_hex(8)
SHAPED = "sk-ant-api03-" + secrets.token_hex(16)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    yield store
    store.close()


@pytest.fixture
def service(store: Store) -> MemoryService:
    return MemoryService(store, Scrubber({KEY: "ANTHROPIC_API_KEY"}))


async def test_save_edit_list_search_forget(service: MemoryService, store: Store) -> None:
    saved = await service.save(
        "  The person prefers seaborn plots with a white grid.  ",
        category=" Preferences ",
        author="person",
        owner="",
    )
    assert saved.id.startswith("mem_")
    assert saved.text == "The person prefers seaborn plots with a white grid."
    assert saved.category == "preferences"
    assert saved.author == "person"
    assert saved.created == saved.updated
    other = await service.save(
        "Sales data lives in data/sales_2024.parquet",
        author="agent",
        chat_id="chat_1",
        run_id="run_1",
        owner="",
    )
    assert other.category == "general"
    assert (other.chat_id, other.run_id) == ("chat_1", "run_1")
    assert await service.get(saved.id, owner="") == saved
    assert [m.id for m in await service.list(owner="")] == [other.id, saved.id]  # newest first
    assert [m.id for m in await service.list("PREFERENCES", owner="")] == [saved.id]
    assert await service.categories(owner="") == [("general", 1), ("preferences", 1)]

    hits = await service.search("which plot style does the person prefer?", owner="")
    assert [h.id for h in hits] == [saved.id]
    assert hits[0].kind == "memory"
    assert 0 < hits[0].score <= 1
    assert await service.search("   ", owner="") == []  # no searchable word
    ranked = await service.search_memories("sales parquet", owner="")
    assert [(m.id, m.author) for m, _ in ranked] == [(other.id, "agent")]

    changed = await service.update(
        saved.id, text="The person prefers matplotlib defaults.", owner=""
    )
    assert changed.text == "The person prefers matplotlib defaults."
    assert changed.category == "preferences"
    assert changed.updated >= saved.updated
    moved = await service.update(saved.id, category="style", owner="")
    assert moved.category == "style"
    assert [h.id for h in await service.search("matplotlib", owner="")] == [saved.id]
    assert await service.search("seaborn", owner="") == []  # the old text is out of the index

    await service.delete(saved.id, owner="")
    with pytest.raises(NotFound):
        await service.get(saved.id, owner="")
    with pytest.raises(NotFound):
        await service.delete(saved.id, owner="")
    assert [m.id for m in await service.list(owner="")] == [other.id]
    assert await service.search("matplotlib", owner="") == []


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"text": ""}, "empty"),
        ({"text": "   \n "}, "empty"),
        ({"text": "x" * 2001}, "2001 characters"),
        ({"text": "bad \ud800 surrogate"}, "valid Unicode"),
        ({"text": "a NUL \x00 byte"}, "valid Unicode"),
        ({"text": 42}, "must be a string"),
        ({"text": "ok", "category": ""}, "category"),
        ({"text": "ok", "category": "x" * 41}, "category"),
        ({"text": "ok", "category": "no/slashes"}, "category"),
        ({"text": "ok", "category": "émoji"}, "category"),
        ({"text": "ok", "category": None}, "category"),
    ],
)
async def test_bad_input_is_refused_and_nothing_is_written(
    service: MemoryService, store: Store, kwargs: dict[str, object], says: str
) -> None:
    text = kwargs.pop("text")
    with pytest.raises(BadRequest) as info:
        await service.save(text, author="person", owner="", **kwargs)  # type: ignore[arg-type]
    assert info.value.reason == "bad_memory"
    assert says in info.value.message
    assert store.list_memories() == []


async def test_a_fact_of_exactly_the_limit_is_kept(service: MemoryService) -> None:
    saved = await service.save("y" * 2000, category="a" * 40, author="person", owner="")
    assert len(saved.text) == 2000


@pytest.mark.parametrize(
    "text",
    [
        f"the key is {KEY}",  # a value the scrubber knows
        f"my key: {SHAPED}",  # the shape of one
        "saved [redacted: ANTHROPIC_API_KEY] from a cell",  # a kernel's text, already scrubbed
        "db is postgres://admin:hunter2secret@db.internal/prod",
        "the password = Tr0ub4dor&3",
    ],
)
async def test_credentials_are_refused_without_echoing_them(
    service: MemoryService, store: Store, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(BadRequest) as info:
        await service.save(text, author="agent", owner="")
    err = info.value
    assert err.reason == "credential"
    assert err.message.startswith("Not saved: the text ")
    for secret in (KEY, SHAPED, "hunter2secret", "Tr0ub4dor"):
        assert secret not in err.message
        assert secret not in repr(err)
        assert secret not in caplog.text
    assert store.list_memories() == []
    # An edit may not smuggle one in either; the fact stays as it was.
    fact = await service.save("harmless fact", author="person", owner="")
    with pytest.raises(BadRequest) as info:
        await service.update(fact.id, text=text, owner="")
    assert info.value.reason == "credential"
    assert (await service.get(fact.id, owner="")).text == "harmless fact"


async def test_update_needs_something_and_an_existing_fact(service: MemoryService) -> None:
    fact = await service.save("a fact", author="person", owner="")
    with pytest.raises(BadRequest) as info:
        await service.update(fact.id, owner="")
    assert info.value.reason == "bad_memory"
    with pytest.raises(NotFound) as missing:
        await service.update("mem_nope", text="new", owner="")
    assert missing.value.reason == "not_found"
    with pytest.raises(BadRequest):
        await service.update(fact.id, category="bad/one", owner="")
    assert (await service.get(fact.id, owner="")).category == "general"


async def test_search_checks_k_and_the_query(service: MemoryService) -> None:
    for k in (0, 51, True, "3"):
        with pytest.raises(BadRequest) as info:
            await service.search("anything", k, owner="")  # type: ignore[arg-type]
        assert info.value.reason == "bad_memory"
    with pytest.raises(BadRequest):
        await service.search(123, owner="")  # type: ignore[arg-type]
    with pytest.raises(BadRequest):
        await service.search("q" * 2001, owner="")
    with pytest.raises(BadRequest):
        await service.list(limit=0, owner="")


async def test_owners_never_see_each_others_facts(service: MemoryService) -> None:
    mine = await service.save("alice likes tea", author="person", owner="alice")
    theirs = await service.save("bob likes coffee", author="person", owner="bob")
    assert [m.id for m in await service.list(owner="alice")] == [mine.id]
    assert [h.id for h in await service.search("likes", owner="bob")] == [theirs.id]
    with pytest.raises(NotFound):
        await service.get(mine.id, owner="bob")
    with pytest.raises(NotFound):
        await service.update(mine.id, text="changed", owner="bob")
    with pytest.raises(NotFound):
        await service.delete(mine.id, owner="bob")
    assert (await service.get(mine.id, owner="alice")).text == "alice likes tea"
    assert await service.list(owner="") == []  # the server's user ("") has none


async def test_search_with_history_reaches_turns_of_earlier_chats(
    service: MemoryService, store: Store
) -> None:
    from tests.store.factories import make_turn

    store.create_chat(chat_id="chat_01A", title="earlier", now="2026-01-01T00:00:00.000Z")
    turn = make_turn(1)
    store.append_turn(turn)
    words = turn.user_text.split()[:3]
    query = " ".join(words)
    assert [h.kind for h in await service.search(query, owner="")] == []  # facts only
    hits = await service.search(query, history=True, owner="")
    assert [h.kind for h in hits] == ["turn"]


async def test_the_embedder_hook_is_called_and_its_failure_is_not_the_callers(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Memory] = []

    async def embed(memory: Memory) -> None:
        seen.append(memory)
        if "fail" in memory.text:
            raise RuntimeError("embedding endpoint down")

    service = MemoryService(store, embedder=embed)
    fact = await service.save("a fact to embed", author="person", owner="")
    await service.update(fact.id, category="moved", owner="")  # no new text: no new vector
    await service.update(fact.id, text="now this will fail to embed", owner="")
    assert [m.text for m in seen] == ["a fact to embed", "now this will fail to embed"]
    assert "could not embed memory" in caplog.text
    assert (await service.get(fact.id, owner="")).text == "now this will fail to embed"


async def test_search_never_shows_a_hit_holding_a_credential(
    service: MemoryService, store: Store
) -> None:
    from dataclasses import replace

    from tests.store.factories import make_turn

    store.create_chat(chat_id="chat_01A", title="earlier", now="2026-01-01T00:00:00.000Z")
    base = make_turn(1)
    pasted = replace(base, user_text=f"The billing export job uses token {SHAPED}")
    store.append_turn(pasted)
    sibling = replace(make_turn(2), user_text="The billing export job runs at midnight")
    store.append_turn(sibling)
    # Facts saved before the server knew the value (saving checks; the store does not).
    fact = await service.save("The billing export job writes CSV files", author="person", owner="")
    store.add_memory(replace(fact, id="mem_known", text=f"The billing export job key {KEY}"))
    query = "billing export job"
    hits = await service.search(query, k=10, history=True, owner="")
    assert {h.id for h in hits} == {sibling.id, fact.id}
    assert [m.id for m, _ in await service.search_memories(query, owner="")] == [fact.id]
    for hit in hits:
        assert SHAPED not in hit.text
        assert KEY not in hit.text


class CountingStore(Store):
    """A store that notes the candidates each recall reads."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.candidates: list[int] = []

    def recall(self, query: str, **kw: Any) -> list[RecallHit]:
        self.candidates.append(kw["candidates"])
        return super().recall(query, **kw)


async def test_every_recall_path_reads_the_stores_candidate_count(tmp_path: Path) -> None:
    # memory.search, GET agent/memories?q= (search_memories) and autorecall's recall.search
    # read as many candidates as the store's own default.
    store = CountingStore(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    try:
        service = MemoryService(store, Scrubber())
        await service.save("Charts use the teal palette.", author="person", owner="")
        await service.search("teal charts", history=True, owner="")
        await service.search_memories("teal charts", owner="")
        data = {"query": "teal charts", "k": 5, "threshold": 0.0, "budget_tokens": 800}
        await begin_search(store, data, timeout_s=10, owner="")
        assert store.candidates == [DEFAULT_CANDIDATES] * 3
    finally:
        store.close()
