"""The anchored boot window (issue 14): decreasing resolution, coverage, and a prefix that
stays byte-identical from one turn to the next except when a chunk rolls over."""

from __future__ import annotations

import random

from jupyter_agent.core.history.chunks import l1_span, l2_span
from jupyter_agent.core.history.window import (
    ChunkSummary,
    Window,
    anchor,
    boot_window,
    tail_size,
    turn_tokens,
)
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord


def turn(n: int, size: int) -> TurnRecord:
    return TurnRecord(
        id=f"turn_{n:05d}",
        chat_id="chat_1",
        run_id=f"run_{n:05d}",
        user_text=f"question {n} " + "q" * size,
        created=f"2025-01-01T00:00:00.{n:05d}Z",
        llm=TurnLLM(stop_reason="done", end_cause="done"),
        replies=(Reply(text=f"answer {n} " + "a" * size, done=True),),
    )


def summaries(
    count: int, c: int, k: int, *, missing: frozenset[int] = frozenset()
) -> list[ChunkSummary]:
    """Level-1 summaries of the closed chunks (but ``missing``) and level-2 of full runs."""
    out: list[ChunkSummary] = []
    closed = count // c
    for n in range(closed):
        if n in missing:
            continue
        span = l1_span(n, c)
        out.append(ChunkSummary(1, span.first_turn, span.last_turn, f"l1 {n} " + "s" * 40))
    for m in range(closed // k):
        if all(n not in missing for n in range(m * k, (m + 1) * k)):
            span = l2_span(m, c, k)
            out.append(ChunkSummary(2, span.first_turn, span.last_turn, f"l2 {m} " + "t" * 40))
    return out


def window(turns: list[TurnRecord], budget: int, c: int, chunks: list[ChunkSummary]) -> Window:
    return boot_window(turns, budget_tokens=budget, chunks=chunks, chunk_turns=c)


def prefix(w: Window) -> list[object]:
    """What the next turn's window must start with: all but the newest turn's messages."""
    return w.messages[:-2]


def raw_start(turns: list[TurnRecord], budget: int, c: int, chunks: list[ChunkSummary]) -> int:
    costs = [turn_tokens(t) for t in reversed(turns)]
    start = anchor(len(turns), costs, budget, chunk_turns=c, chunks=chunks)
    assert start is not None
    return start


def test_raw_region_starts_at_a_chunk_boundary_and_grows_until_it_rolls() -> None:
    c, k, budget = 5, 3, 900
    chat = [turn(n, 60) for n in range(1, 121)]
    starts = []
    for n in range(1, len(chat) + 1):
        chunks = summaries(n, c, k)
        start = raw_start(chat[:n], budget, c, chunks)
        assert (start - 1) % c == 0
        w = window(chat[:n], budget, c, chunks)
        assert w.tokens <= budget
        assert w.turns_included == n - start + 1
        starts.append(start)
    assert starts == sorted(starts)  # the anchor never moves back
    assert len(set(starts)) > 3  # and it moves: whole chunks pass into their summaries


def test_the_prefix_is_byte_identical_except_when_the_anchor_moves() -> None:
    for seed in range(25):
        rng = random.Random(seed)
        c, k = rng.randint(2, 8), rng.randint(2, 4)
        budget = rng.randint(300, 3000)
        chat = [turn(n, rng.randint(5, 200)) for n in range(1, rng.randint(30, 150))]
        missing = frozenset(n for n in range(len(chat) // c) if rng.random() < 0.1)
        previous: Window | None = None
        previous_start = 0
        for n in range(1, len(chat) + 1):
            # The summaries are those of the whole chat: none appears between two turns.
            chunks = summaries(len(chat), c, k, missing=missing)
            chunks = [s for s in chunks if s.last_turn <= n]
            start = raw_start(chat[:n], budget, c, chunks)
            w = window(chat[:n], budget, c, chunks)
            closed_now = n % c == 0  # a chunk closed: its summary may appear in the lead
            steady = previous is not None and start == previous_start and start > 0
            if steady and not closed_now and previous is not None:
                got = w.messages[: len(previous.messages)]
                assert got == previous.messages, (seed, n)
            previous, previous_start = w, start


def test_decreasing_resolution_covers_turn_1_through_summaries() -> None:
    c, k = 4, 3
    chat = [turn(n, 80) for n in range(1, 101)]
    chunks = summaries(100, c, k)
    assert window(chat, 4000, c, chunks).l2 == 0  # room for every level-1 summary
    w = window(chat, 1200, c, chunks)
    lead = w.messages[0].parts[0].text
    assert "[summary of turns 1-12]" in lead  # level 2 at the far end
    assert w.l2 >= 1
    assert w.l1 >= 1
    assert "not shown" not in lead  # all of the chat is covered
    assert w.omitted == 0
    # Level 2 first (oldest), then level 1, then the raw turns: resolution rises to now.
    lines = lead.split("\n\n")
    spans = [int(line.split("turns ", 1)[1].split("-", 1)[0]) for line in lines]
    assert spans == sorted(spans)
    first_raw = int(w.messages[0].parts[1].text.split("question ", 1)[1].split(" ", 1)[0])
    assert (first_raw - 1) % c == 0


def test_only_what_no_summary_covers_is_omitted() -> None:
    c, k = 4, 100  # no level 2
    chat = [turn(n, 80) for n in range(1, 41)]
    chunks = summaries(40, c, k, missing=frozenset({1}))  # turns 5-8 have no summary yet
    w = window(chat, 1500, c, chunks)
    lead = w.messages[0].parts[0].text
    assert lead.startswith("[4 earlier turns of this chat are not shown]")
    assert "[summary of turns 1-4]" in lead  # older summaries still shown past the gap
    assert w.omitted == 4


def test_without_summaries_the_older_turns_are_named() -> None:
    chat = [turn(n, 80) for n in range(1, 41)]
    w = window(chat, 800, 4, [])
    start = raw_start(chat, 800, 4, [])
    assert w.omitted == start - 1 > 0


def test_the_stores_tail_builds_the_same_window() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        c, k, budget = rng.randint(2, 8), rng.randint(2, 4), rng.randint(200, 4000)
        chat = [turn(n, rng.randint(5, 300)) for n in range(1, rng.randint(2, 120))]
        chunks = summaries(len(chat), c, k)
        costs = [turn_tokens(t) for t in reversed(chat)]
        keep = tail_size(
            costs, budget, complete=True, turn_count=len(chat), chunk_turns=c, chunks=chunks
        )
        assert keep is not None
        omitted = len(chat) - keep
        tail = boot_window(
            chat[omitted:],
            budget_tokens=budget,
            chunks=chunks,
            first_position=omitted + 1,
            older=omitted,
            chunk_turns=c,
        )
        assert tail == window(chat, budget, c, chunks), seed


def test_a_turn_too_long_for_any_boundary_falls_back_to_sliding() -> None:
    chat = [turn(n, 40) for n in range(1, 10)] + [turn(10, 4000)]
    assert anchor(10, [turn_tokens(t) for t in reversed(chat)], 500, chunk_turns=5) == 0
    w = window(chat, 500, 5, [])
    assert w.turns_included == 1
    assert w.tokens <= 500 + 50
