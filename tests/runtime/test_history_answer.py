"""The anchored history answer holds only the summaries its window shows, and the window a
run builds from it is the one all of the chat's summaries give (a real SQLite store)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from jupyter_agent.core.history.chunks import StoredChunk, closed_spans
from jupyter_agent.core.history.window import ChunkSummary, HistoryWindow, boot_window
from jupyter_agent.runtime.runs.parts import read_anchored
from jupyter_agent.store import Store
from tests.store.factories import iso, make_turn

CHAT = "chat_01HIST"


def _chat(store: Store, rng: random.Random, turns: int, chunk_turns: int, l2: int) -> None:
    store.create_chat(chat_id=CHAT, title="t", now=iso(0))
    for n in range(1, turns + 1):
        turn = make_turn(n, chat_id=CHAT, created=iso(n), run_id=f"run_{n:06d}")
        words = " ".join(f"w{n}" for _ in range(rng.randint(3, 60)))
        store.append_turn(replace(turn, user_text=f"question {n}: {words}"))
    have: set[tuple[int, int]] = set()
    while True:
        due = closed_spans(turns, chunk_turns, l2, have)
        if not due:
            break
        for span in due:
            have.add((span.level, span.first_turn))
            if rng.random() < 0.15:
                continue  # a summary not made yet (a gap the window skips)
            text = " ".join(f"s{span.first_turn}" for _ in range(rng.randint(5, 80)))
            store.add_chunk(
                StoredChunk(
                    chat_id=CHAT, level=span.level, first_turn=span.first_turn,
                    last_turn=span.last_turn, text=text, run_id="run_h", model="m",
                    created=iso(turns + 1),
                )
            )  # fmt: skip


def test_the_answer_holds_only_what_the_window_shows(tmp_path: Path) -> None:
    rng = random.Random(7)
    for case in range(12):
        store = Store(f"sqlite:///{tmp_path / f'c{case}.sqlite'}")
        try:
            turns, chunk_turns, l2 = rng.randint(20, 160), rng.choice([3, 5, 10]), 2
            _chat(store, rng, turns, chunk_turns, l2)
            layout = {"chunk_turns": chunk_turns, "l2_chunks": l2}
            budget = rng.choice([300, 800, 2000, 6000])
            answer = read_anchored(store, CHAT, budget, layout)
            # What the run reads back from its log...
            recorded = HistoryWindow.from_json(answer.to_json())
            shown = boot_window(
                recorded.turns, budget_tokens=budget, chunks=recorded.chunks,
                first_position=recorded.omitted + 1, older=recorded.omitted,
                chunk_turns=chunk_turns, anchor_at=recorded.anchor,
            )  # fmt: skip
            # ... (as core/loop/machine.py builds it, with the recorded anchor) is the window of the
            # whole chat with every summary it has.
            every = _all_summaries(store)
            whole = boot_window(
                store.list_turns(CHAT), budget_tokens=budget, chunks=every,
                chunk_turns=chunk_turns,
            )  # fmt: skip
            assert shown.messages == whole.messages, (case, turns, chunk_turns, budget)
            assert (shown.l1, shown.l2, shown.omitted) == (whole.l1, whole.l2, whole.omitted)
            # Only what is shown is recorded: not every summary of the chat.
            assert set(recorded.chunks) == set(whole.summaries)
            assert len(recorded.chunks) <= len(every)
        finally:
            store.close()


def _all_summaries(store: Store) -> tuple[ChunkSummary, ...]:
    return tuple(
        ChunkSummary(level=c.level, first_turn=c.first_turn, last_turn=c.last_turn, text=c.text)
        for c in store.list_chunks(CHAT)
    )


def test_a_long_chats_answer_does_not_grow_with_its_summaries(tmp_path: Path) -> None:
    rng = random.Random(3)
    store = Store(f"sqlite:///{tmp_path / 'long.sqlite'}")
    try:
        _chat(store, rng, 400, 5, 2)
        layout = {"chunk_turns": 5, "l2_chunks": 2}
        answer = read_anchored(store, CHAT, 2000, layout)
        assert len(store.list_chunks(CHAT)) > 80
        assert 0 < len(answer.chunks) < 20
    finally:
        store.close()
