"""A recall begun ahead of its intent (``toolcaller@v7``'s start answer, issue 27): its store
read runs in a worker thread from the moment it is begun, not from the loop's next step,
so it overlaps what the driver does without yielding (logging the start answer, draining
the mailbox, building the prompt). That a run's ``recall.search`` is answered by that one
search: ``tests/runtime/test_start_runs.py``."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.runtime.memory.search import Prefetch, RecallTimeout, begin_search

pytestmark = pytest.mark.timeout(120)

INTENT = {"query": "quarterly sales", "k": 5, "threshold": 0.0, "budget_tokens": 800}


class GatedStore:
    """A store whose ``recall`` says when it starts, then waits to be let go."""

    def __init__(self, hits: list[RecallHit] | None = None, error: Exception | None = None):
        self.started = threading.Event()
        self.go = threading.Event()
        self.ended = threading.Event()
        self.hits = hits or []
        self.error = error
        self.calls = 0

    def recall(self, query: str, **kwargs: Any) -> list[RecallHit]:
        self.calls += 1
        self.started.set()
        try:
            self.go.wait(10)
            if self.error is not None:
                raise self.error
            return self.hits
        finally:
            self.ended.set()


def hit(text: str = "Quarterly sales live in data/q.parquet.") -> RecallHit:
    return RecallHit(
        kind="memory", id="mem_1", text=text, score=0.9, created="2026-12-06T12:00:00.000Z"
    )


async def test_the_store_read_is_under_way_before_begin_search_returns() -> None:
    store = GatedStore([hit()])
    search = begin_search(store, INTENT, owner="")
    # No await since: the loop has not run a step. A blocking wait here only lets the
    # worker thread run; a read started at the search's first step would never start.
    assert store.started.wait(5), "the read waits for the loop's next step"
    store.go.set()
    hits = await search
    assert [h.id for h in hits] == ["mem_1"]
    assert store.calls == 1


async def test_a_bad_intent_is_refused_at_once_and_nothing_is_read() -> None:
    store = GatedStore()
    with pytest.raises(ValueError, match="query and k"):
        begin_search(store, {"query": "x"}, owner="")
    assert store.calls == 0


async def test_no_budget_answers_nothing_without_reading() -> None:
    store = GatedStore()
    assert await begin_search(store, {**INTENT, "budget_tokens": 0}, owner="") == []
    assert store.calls == 0


async def test_a_prefetch_not_taken_is_cancelled_and_its_failure_never_reported() -> None:
    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        store = GatedStore(error=RuntimeError("database gone"))
        prefetch = Prefetch(data=INTENT, task=begin_search(store, INTENT, owner=""))
        assert store.started.wait(5)
        assert prefetch.take({**INTENT, "query": "something else"}) is None
        store.go.set()
        with pytest.raises(asyncio.CancelledError):
            await prefetch.task
        assert await asyncio.to_thread(store.ended.wait, 5)  # the read ended with its error
        await asyncio.sleep(0.05)  # its result reaches the loop (call_soon_threadsafe)
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert unretrieved == []


async def test_a_search_past_its_deadline_times_out_and_drops_the_late_answer() -> None:
    store = GatedStore([hit()])
    search = begin_search(store, INTENT, owner="", timeout_s=0.05)
    with pytest.raises(RecallTimeout, match="longer than 50 ms"):
        await search
    store.go.set()
