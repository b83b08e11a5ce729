"""autorecall through the run manager and driver (real store, real kernel pool, the fake
model on loopback): the performers of ``config.get memory`` and ``recall.search``
(``runtime/memory/search.py``), the ``recall`` event, the settings, and what a failure
leaves (a run without recall, never a failed run)."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.memory.recall import HEADER
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.runtime.memory.search import RecallTimeout, begin_search, memory_answer
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.secrets import NO_SECRETS
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES
from jupyter_agent.store.repo import Store
from jupyter_agent.trace.log import pair_effects
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(120)

FACT = "Quarterly sales figures live in data/q_sales.parquet."


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


async def save(store: Store, text: str, category: str = "project") -> str:
    saved = await MemoryService(store, NO_SECRETS).save(
        text, category=category, author="person", owner=""
    )
    return saved.id


def drop(db: Path, table: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"DROP TABLE {table}")


def rename(db: Path, table: str, to: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(f"ALTER TABLE {table} RENAME TO {to}")


def effects(agent: Harness, run_id: str, name: str) -> list[Any]:
    return [e for e in pair_effects(agent.trace(run_id)) if e.name == name]


async def test_a_run_recalls_a_saved_fact_and_publishes_what_it_showed(agent: Harness) -> None:
    fact_id = await save(agent.store, FACT)
    await save(agent.store, "Charts use the teal palette.", category="preferences")
    agent.fake.load([{"text": "It is in data/q_sales.parquet."}])
    chat = agent.new_chat()
    turn = await agent.ask(chat, "Where are the quarterly sales figures?")
    [start] = [e for e in effects(agent, turn.run_id, "config.get") if e.data["key"] == "start"]
    assert start.result is not None  # v7: the memory part of its one start read
    assert start.result.data["memory"] == {
        "categories": [
            {"category": "preferences", "count": 1},
            {"category": "project", "count": 1},
        ],
        "recall": {"enabled": True, "k": 5, "budget_tokens": 800, "threshold": 0.3},
    }
    [searched] = effects(agent, turn.run_id, "recall.search")
    assert searched.data["query"] == "Where are the quarterly sales figures?"
    assert searched.data["chat_id"] == chat
    assert searched.result is not None
    hits = searched.result.data["hits"]
    assert [h["id"] for h in hits] == [fact_id]  # the palette fact scores nothing here
    event = await agent.wait_event(chat, "recall")
    assert event["run_id"] == turn.run_id
    assert event["hits"] == hits
    assert turn.recall is not None
    assert event["tokens"] == turn.recall.tokens
    request = agent.fake.requests[0].json
    assert "- preferences (1)\n- project (1)" in request["system"][0]["text"]
    result = request["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "recall_1"
    assert result["content"][0]["text"].startswith(HEADER)
    assert FACT in result["content"][0]["text"]
    assert verify_run(agent.manager.log_path(turn.run_id)).identical


async def test_the_chats_window_is_not_recalled_again(agent: Harness) -> None:
    agent.fake.load(
        {"steps": [{"text": "Noted: the pipeline runs nightly at 02:00."}], "repeat": True}
    )
    chat = agent.new_chat()
    first = await agent.ask(chat, "The ingest pipeline runs nightly at 02:00.")
    assert first.recall is None
    second = await agent.ask(chat, "When does the ingest pipeline run?")
    # v7: turn 1 is in the window and nothing else is findable: no search at all.
    assert effects(agent, second.run_id, "recall.search") == []
    assert second.recall is None
    # Another chat does recall it: an earlier turn of the user's chats.
    other = agent.new_chat()
    third = await agent.ask(other, "When does the ingest pipeline run?")
    assert third.recall is not None
    recalled = {(h.kind, h.chat_id, h.id) for h in third.recall.hits}
    assert recalled == {("turn", chat, first.id), ("turn", chat, second.id)}


async def test_recall_off_makes_no_search(agent: Harness) -> None:
    await save(agent.store, FACT)
    agent.recall = {"enabled": False, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    agent.fake.load([{"text": "No idea."}])
    turn = await agent.ask(agent.new_chat(), "Where are the quarterly sales figures?")
    assert effects(agent, turn.run_id, "recall.search") == []
    assert turn.recall is None
    assert "recall_1" not in json.dumps(agent.fake.requests[0].json)


async def test_a_failed_search_leaves_a_run_without_recall(
    agent: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    await save(agent.store, FACT)
    db = agent.root / "agent.sqlite"
    # The recall index unreadable for a moment (a damaged or busy database): the search
    # fails, the run does not; the table is back before the turn is stored.
    rename(db, "agent_recall_df", "agent_recall_df_away")
    agent.fake.load([{"text": "Let me look.", "delay_s": 0.5}])
    with caplog.at_level(logging.WARNING):
        answer = await agent.manager.send(
            agent.new_chat(), text="Where are the quarterly sales figures?"
        )
        await agent.wait_requests(1)
        rename(db, "agent_recall_df_away", "agent_recall_df")
        turn = await agent.finish(answer["run_id"])
    assert turn.llm.stop_reason == "done"
    assert turn.recall is None
    [searched] = effects(agent, turn.run_id, "recall.search")
    assert searched.result is not None
    assert searched.result.error is not None
    assert "recall_1" not in json.dumps(agent.fake.requests[0].json)
    assert "recall.search" in caplog.text
    assert verify_run(agent.manager.log_path(turn.run_id)).identical


class SlowStore(Store):
    """A store whose recall blocks until the test releases it (a slow search)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.release = threading.Event()
        self.entered = threading.Event()
        self.returned = threading.Event()

    def recall(self, query: str, **kw: Any) -> list[RecallHit]:
        self.entered.set()
        self.release.wait(30)
        try:
            return super().recall(query, **kw)
        finally:
            self.returned.set()


async def test_a_search_past_its_deadline_leaves_a_run_without_recall(
    tmp_path: Path, fake_provider: Any, kernel_manager: Any
) -> None:
    store = SlowStore(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    agent = await make_harness(tmp_path, fake_provider([]), kernel_manager, store=store)
    try:
        await save(store, FACT)
        agent.recall_timeout_ms = 100
        agent.fake.load([{"text": "Let me look."}])
        chat = agent.new_chat()
        turn = await agent.ask(chat, "Where are the quarterly sales figures?")
        # The run did not wait for the search: it ended while the search still hung.
        assert store.entered.is_set()
        assert not store.returned.is_set()
        assert turn.llm.stop_reason == "done"
        assert turn.recall is None
        [searched] = effects(agent, turn.run_id, "recall.search")
        assert searched.result is not None
        assert searched.result.data is None
        assert searched.result.error == {
            "type": "RecallTimeout",
            "message": "recall took longer than 100 ms: no recall this run",
        }
        assert "recall_1" not in json.dumps(agent.fake.requests[0].json)
        # The worker thread's late answer is dropped: no recall event, the log unchanged.
        logged = agent.manager.log_path(turn.run_id).read_bytes()
        store.release.set()
        assert await asyncio.to_thread(store.returned.wait, 30)
        await asyncio.sleep(0.1)  # a late answer would land here
        assert [e for e in agent.events.since(chat, 0) if e["type"] == "recall"] == []
        assert agent.manager.log_path(turn.run_id).read_bytes() == logged
        assert verify_run(agent.manager.log_path(turn.run_id)).identical
    finally:
        store.release.set()
        await close_harness(agent)


async def test_the_recall_deadline_is_the_run_configs(store: Store) -> None:
    await save(store, FACT)
    data = {"query": "quarterly sales figures", "k": 5, "threshold": 0.0, "budget_tokens": 800}

    async def slow(store: Any, query: str, **args: Any) -> list[RecallHit]:
        assert args["candidates"] == DEFAULT_CANDIDATES
        await asyncio.sleep(5)
        return []

    with pytest.raises(RecallTimeout, match="longer than 50 ms"):
        await begin_search(store, data, rank=slow, timeout_s=0.05, owner="")
    hits = await begin_search(store, data, timeout_s=10, owner="")
    assert [h.text for h in hits] == [FACT]
    assert RunConfig(tiers={}, ceilings={}, spaces={}).recall_timeout_ms == 250


# --- the performers over a real store ---------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    yield store
    store.close()


async def test_memory_answer_reads_the_categories_now(store: Store) -> None:
    settings = {"enabled": True, "k": 3, "budget_tokens": 100, "threshold": 0.5}
    assert await memory_answer(store, settings, owner="") == {"categories": [], "recall": settings}
    await save(store, FACT)
    await save(store, "Reports are due on Fridays.")
    answer = await memory_answer(store, settings, owner="")
    assert answer["categories"] == [{"category": "project", "count": 2}]


async def test_memory_answer_from_a_damaged_store_lists_none(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    drop(tmp_path / "agent.sqlite", "agent_memories")
    with caplog.at_level(logging.WARNING):
        answer = await memory_answer(store, {"enabled": True}, owner="")
    assert answer == {"categories": [], "recall": {"enabled": True}}
    assert "memory categories could not be read" in caplog.text


async def test_search_packs_by_threshold_k_and_budget(store: Store) -> None:
    ids = [await save(store, f"Sales report {n} lives in folder reports/{n}.") for n in range(6)]
    intent = {
        "query": "where does the quarterly sales report live",
        "k": 5,
        "threshold": 0.3,
        "budget_tokens": 800,
        "chat_id": "chat_x",
        "exclude_since": None,
        "exclude_chunks": [],
    }
    hits = await begin_search(store, intent, owner="")
    assert len(hits) == 5
    assert {h.id for h in hits} <= set(ids)
    assert await begin_search(store, {**intent, "budget_tokens": 60}, owner="") == hits[:1]
    assert await begin_search(store, {**intent, "threshold": 0.99}, owner="") == []
    assert await begin_search(store, {**intent, "k": 0}, owner="") == []
    with pytest.raises(ValueError, match="exclude_chunks"):
        await begin_search(store, {**intent, "exclude_chunks": [[1]]}, owner="")
    with pytest.raises(ValueError, match="query"):
        await begin_search(store, {**intent, "query": None}, owner="")


# --- credentials are never recalled -----------------------------------------------------

PASTED = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"  # a GitHub token's shape
KNOWN = "staging-passphrase-" + "q7w8e9r0t1y2"  # no shape: only the scrubber knows it


async def test_a_turn_holding_a_credential_is_never_recalled_into_another_chat(
    agent: Harness,
) -> None:
    from jupyter_agent.runtime.secrets import Scrubber

    agent.manager.services.scrubber = Scrubber({KNOWN: "STAGING_PASSPHRASE"})
    agent.fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    chat_a = agent.new_chat("deploys")
    pasted = await agent.ask(chat_a, f"The staging cluster deploy uses token {PASTED}.")
    known = await agent.ask(chat_a, f"The staging cluster deploy passphrase is {KNOWN}.")
    sibling = await agent.ask(chat_a, "The staging cluster deploy runs on Fridays.")
    # The store finds all three (the filter, not the ranking, keeps two out).
    found = agent.store.recall("When does the staging cluster deploy run?", kinds=("turn",))
    assert {h.id for h in found} >= {pasted.id, known.id, sibling.id}

    chat_b = agent.new_chat("other")
    turn = await agent.ask(chat_b, "When does the staging cluster deploy run?")
    assert turn.recall is not None
    assert [(h.kind, h.id) for h in turn.recall.hits] == [("turn", sibling.id)]
    event = await agent.wait_event(chat_b, "recall")
    assert [h["id"] for h in event["hits"]] == [sibling.id]
    [searched] = effects(agent, turn.run_id, "recall.search")
    assert searched.result is not None
    assert [h["id"] for h in searched.result.data["hits"]] == [sibling.id]
    request = json.dumps(agent.fake.requests[-1].json)
    assert "runs on Fridays" in request
    log = agent.manager.log_path(turn.run_id).read_text()
    for secret in (PASTED, KNOWN):
        assert secret not in request
        assert secret not in log
        assert secret not in json.dumps(event)


async def test_search_drops_credential_hits_before_packing(store: Store) -> None:
    from jupyter_agent.runtime.secrets import Scrubber

    safe = await save(store, "Nightly backups land in bucket s3://ops-backups/nightly.")
    leaked = await save(store, "Nightly backups land in bucket s3://ops-backups/raw.")
    # A value the server came to know after the fact was saved (a new key configured).
    intent = {"query": "where do nightly backups land", "k": 1, "threshold": 0.0}
    intent |= {"budget_tokens": 800, "chat_id": None}
    scrubber = Scrubber({"s3://ops-backups/raw": "BACKUP_URL"})
    assert [h.id for h in await begin_search(store, intent, owner="")] in ([safe], [leaked])
    hits = await begin_search(store, {**intent, "k": 2}, known=scrubber.spans, owner="")
    assert [h.id for h in hits] == [safe]


async def test_a_runs_turn_is_indexed_after_the_run_within_the_delay(agent: Harness) -> None:
    """The run stores its turn and ends; its recall doc is written after, by the store's
    indexer, within DELAY_S plus a write (issue 27 item 3), with no recall asking."""
    agent.fake.load([{"text": "The kayak trip on the fjord is booked for June."}])
    chat = agent.new_chat()
    turn = await agent.ask(chat, "When is the fjord kayak trip?")
    db = Path(str(agent.store._url.database))

    def doc_of_turn() -> list[tuple[str, str]]:
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT kind, ref_id FROM agent_recall_docs WHERE kind = 'turn'"
            ).fetchall()
        return [(str(k), str(r)) for k, r in rows]

    started = asyncio.get_running_loop().time()
    while doc_of_turn() != [("turn", turn.id)]:
        assert asyncio.get_running_loop().time() - started < 5.0, "not indexed within 5 s"
        await asyncio.sleep(0.02)
    assert await asyncio.to_thread(agent.store.pending_recall_turns) == 0
    # Another chat's run recalls it (its search asks the store, which holds nothing back).
    agent.fake.load([{"text": "In June."}])
    other = await agent.ask(agent.new_chat(), "fjord kayak trip month?")
    [searched] = effects(agent, other.run_id, "recall.search")
    assert searched.result is not None
    assert [h["id"] for h in searched.result.data["hits"]] == [turn.id]
