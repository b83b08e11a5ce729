"""``Store.read_window`` with stored chunk summaries: the raw tail, then the level-1 and
level-2 summaries before it the budget can use, read in O(window) rows (issue 14)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import pytest

from jupyter_agent.core.chunks import StoredChunk, l1_span, l2_span
from jupyter_agent.core.window import ChunkSummary, HistoryWindow, Window, boot_window
from jupyter_agent.store import Store, chunk_queries
from tests.store.factories import iso, make_turn

CHAT = "chat_01A"
SHOWN = re.compile(r"\[summary of turns (\d+)-(\d+)\]")
C, K = 10, 5


def summary_text(level: int, first: int, words: int = 0) -> str:
    text = f"level {level} from turn {first}: the user set x = {first * 7}, file data_{first}.csv"
    return text + " and" * words


def fill(
    store: Store, turns: int, *, missing: tuple[int, ...] = (), padding: int = 0, words: int = 0
) -> None:
    """``turns`` turns (their text longer by ``padding`` words), and the summaries of every
    closed chunk (but the level-1 chunks numbered in ``missing``; a level-2 is made only
    once its level-1 summaries exist)."""
    add_turns(store, range(1, turns + 1), padding)
    closed = turns // C
    for n in range(closed):
        if n not in missing:
            store.add_chunk(stored(1, l1_span(n, C).first_turn, l1_span(n, C).last_turn, words))
    for m in range(closed // K):
        if not any(m * K <= n < (m + 1) * K for n in missing):
            span = l2_span(m, C, K)
            store.add_chunk(stored(2, span.first_turn, span.last_turn, words))


def add_turns(store: Store, positions: range, padding: int) -> None:
    for n in positions:
        turn = make_turn(n, chat_id=CHAT)
        store.append_turn(dataclasses.replace(turn, user_text=turn.user_text + " more" * padding))


def stored(level: int, first: int, last: int, words: int = 0) -> StoredChunk:
    return StoredChunk(
        chat_id=CHAT,
        level=level,  # type: ignore[arg-type]
        first_turn=first,
        last_turn=last,
        text=summary_text(level, first, words),
        run_id=f"run_h{level}_{first}",
        model="m",
        created=iso(5000 + first),
    )


def summaries(store: Store) -> list[ChunkSummary]:
    return [
        ChunkSummary(c.level, c.first_turn, c.last_turn, c.text) for c in store.list_chunks(CHAT)
    ]


def from_store(window: HistoryWindow, budget: int) -> Window:
    return boot_window(
        window.turns,
        budget_tokens=budget,
        chunks=window.chunks,
        older=window.omitted,
        first_position=window.omitted + 1,
    )


@pytest.fixture
def chat(store: Store) -> str:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    return CHAT


@pytest.mark.parametrize("missing", [(), (7,)])
def test_the_window_from_the_store_is_the_window_of_the_whole_chat(
    store: Store, chat: str, missing: tuple[int, ...]
) -> None:
    fill(store, 115, missing=missing)
    everything = store.list_turns(chat)
    every_summary = summaries(store)
    kinds: set[tuple[int, int]] = set()
    for budget in (*range(0, 3000, 23), 10**6):
        window = store.read_window(chat, budget_tokens=budget)
        expected = boot_window(everything, budget_tokens=budget, chunks=every_summary)
        assert from_store(window, budget) == expected, budget
        # Only summaries of positions before the raw tail, oldest first.
        assert all(c.first_turn <= window.omitted for c in window.chunks)
        assert list(window.chunks) == sorted(window.chunks, key=lambda c: (c.first_turn, c.level))
        lead = expected.messages[0].text if expected.messages else ""
        spans = [int(b) - int(a) + 1 for a, b in SHOWN.findall(lead)]
        kinds.add((spans.count(C), spans.count(C * K)))
    # The budgets above give windows with no summaries, level-1 only and level-1 + level-2.
    assert (0, 0) in kinds
    assert any(l1 > 0 and l2 == 0 for l1, l2 in kinds), kinds
    assert any(l1 > 0 and l2 > 0 for l1, l2 in kinds), kinds


def test_a_full_history_reaches_turn_1_through_summaries(store: Store, chat: str) -> None:
    # Long turns: the room the raw tail leaves (less than one turn) holds the summaries.
    fill(store, 103, padding=300)
    budget = 1500
    window = store.read_window(chat, budget_tokens=budget)
    built = from_store(window, budget)
    lead = built.messages[0].text
    assert window.chunks[0].first_turn == 1
    assert SHOWN.findall(lead)[0][0] == "1"
    assert "x = 7," in lead  # turn 1's fact, through its summary
    assert "earlier turn" not in lead  # nothing left unnamed
    assert built.tokens <= budget


def test_a_missing_summary_stops_the_summaries_there(store: Store, chat: str) -> None:
    # Level-1 chunk 8 (turns 81-90) is not summarised yet, so neither is level-2 chunk 1
    # (51-100): the window's summaries stop at turn 91; the older ones are not read.
    fill(store, 110, missing=(8,), padding=300)
    budget = 1500
    window = store.read_window(chat, budget_tokens=budget)
    assert 100 < window.omitted < 110
    assert [(c.level, c.first_turn) for c in window.chunks] == [(1, 91), (1, 101)]
    lead = from_store(window, budget).messages[0].text
    assert lead.startswith("[90 earlier turns of this chat are not shown]")


def test_summary_rows_read_do_not_grow_with_the_chat(
    store: Store, chat: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    real: Callable[..., list[StoredChunk]] = chunk_queries.covering

    def counting(*args: Any) -> list[StoredChunk]:
        rows = real(*args)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(chunk_queries, "covering", counting)
    budget = 1500
    rows_at: dict[int, int] = {}
    # Long summaries: the budget is full long before turn 1 at either length.
    fill(store, 200, padding=300, words=40)
    for total in (200, 400):
        if total == 400:
            add_turns(store, range(201, 401), 300)
            for n in range(20, 40):
                store.add_chunk(stored(1, l1_span(n, C).first_turn, l1_span(n, C).last_turn, 40))
            for m in range(4, 8):
                span = l2_span(m, C, K)
                store.add_chunk(stored(2, span.first_turn, span.last_turn, 40))
        read.clear()
        window = store.read_window(chat, budget_tokens=budget)
        assert window.chunks
        assert window.chunks[0].first_turn > 1  # the budget is full
        rows_at[total] = sum(read)
        # What the window uses, plus at most one first batch per level read past it.
        assert sum(read) <= len(window.chunks) + 2 * chunk_queries.SUMMARY_BATCH, read
    assert len(store.list_chunks(chat)) == 48
    assert rows_at[400] <= rows_at[200] + chunk_queries.SUMMARY_BATCH, rows_at
