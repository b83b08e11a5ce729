"""The window in O(window): ``tail_size`` + ``boot_window(tail, older=N)`` build exactly
the window the whole chat gives (``toolcaller@v3`` reads only that tail)."""

from __future__ import annotations

import json
import random

import pytest

from jupyter_agent.core.history.window import (
    ChunkSummary,
    HistoryWindow,
    boot_window,
    render_turn,
    tail_size,
    turn_tokens,
)
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord


def turn(n: int, size: int) -> TurnRecord:
    return TurnRecord(
        id=f"turn_{n:04d}",
        chat_id="chat_X",
        run_id=f"run_{n}",
        user_text=f"question {n} " + "q" * size,
        created=f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
        llm=TurnLLM(stop_reason="done", end_cause="done"),
        replies=(Reply(text=f"answer {n} " + "a" * size, done=True),),
    )


def tail_window(turns: list[TurnRecord], budget: int, **kw: object) -> HistoryWindow:
    """What the store's read gives: ``tail_size`` over the costs, newest first."""
    costs = [turn_tokens(t) for t in reversed(turns)]
    keep = tail_size(costs, budget, complete=True)
    assert keep is not None
    kept = turns[len(turns) - keep :] if keep else []
    return HistoryWindow(turns=tuple(kept), omitted=len(turns) - keep)


def from_tail(window: HistoryWindow, budget: int, **kw: object):
    return boot_window(
        window.turns,
        budget_tokens=budget,
        older=window.omitted,
        first_position=window.omitted + 1,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_tail_builds_the_same_window_as_the_whole_chat(seed: int) -> None:
    rng = random.Random(seed)
    turns = [turn(n, rng.choice([5, 40, 300, 2000])) for n in range(1, rng.randint(1, 60))]
    budget = rng.choice([0, 10, 30, 60, 200, 1000, 5000, 100_000])
    window = tail_window(turns, budget)
    assert from_tail(window, budget) == boot_window(turns, budget_tokens=budget)
    # Never more than the budget's worth of turns (plus the one clipped newest turn).
    if len(window.turns) > 1:
        assert sum(turn_tokens(t) for t in window.turns) <= budget


def test_an_over_long_newest_turn_is_the_one_turn_kept_and_clipped_alike() -> None:
    turns = [turn(1, 10), turn(2, 10), turn(3, 5000)]
    window = tail_window(turns, 300)
    assert [t.id for t in window.turns] == ["turn_0003"]
    assert window.omitted == 2
    built = from_tail(window, 300)
    assert built == boot_window(turns, budget_tokens=300)
    assert "cut to fit" in built.messages[-1].text
    assert built.messages[0].text.startswith("[2 earlier turns of this chat are not shown]")


def test_everything_fitting_leaves_nothing_omitted() -> None:
    turns = [turn(n, 10) for n in range(1, 6)]
    window = tail_window(turns, 10_000)
    assert (len(window.turns), window.omitted) == (5, 0)
    assert "not shown" not in from_tail(window, 10_000).messages[0].text


def test_summaries_of_the_omitted_turns_use_their_chat_positions() -> None:
    turns = [turn(n, 200) for n in range(1, 21)]
    chunks = [ChunkSummary(level=1, first_turn=1, last_turn=18, text="earlier work")]
    window = tail_window(turns, 400)
    assert window.omitted > 0
    assert from_tail(window, 400, chunks=chunks) == boot_window(
        turns, budget_tokens=400, chunks=chunks
    )


def test_tail_size_asks_for_more_while_everything_read_fits() -> None:
    assert tail_size([10, 10], 100, complete=False) is None
    assert tail_size([10, 10], 100, complete=True) == 2
    assert tail_size([], 100, complete=False) is None
    assert tail_size([], 100, complete=True) == 0
    assert tail_size([10, 10], 0, complete=False) == 0
    # 10 + 95 > 100: decided; the reserve (24) leaves room for the newest only.
    assert tail_size([10, 95], 100, complete=False) == 1
    assert tail_size([500], 100, complete=False) == 1  # kept, to be clipped


def test_history_window_json_round_trips_and_ignores_later_keys() -> None:
    chunks = (ChunkSummary(2, 1, 50, "early: x = 42"), ChunkSummary(1, 51, 60, "then é→π"))
    window = HistoryWindow(turns=(turn(1, 3), turn(2, 3)), omitted=70, chunks=chunks)
    data = window.to_json()
    assert list(data) == ["turns", "omitted", "chunks"]
    first = {"level": 2, "first_turn": 1, "last_turn": 50, "text": "early: x = 42"}
    assert data["chunks"][0] == first
    back = HistoryWindow.from_json(json.loads(json.dumps(data)))
    assert (back.omitted, back.chunks) == (70, chunks)
    assert [render_turn(t) for t in back.turns] == [render_turn(t) for t in window.turns]
    # Window records: only what the window renders (no chat or run id, usage, cost...).
    assert set(data["turns"][0]) == {
        "id", "userText", "steering", "replies", "interrupted", "created", "llm",
    }  # fmt: skip
    assert set(data["turns"][0]["llm"]) == {"stopReason", "endCause"}
    window = back
    assert HistoryWindow.from_json({**data, "later": [1]}) == window
    # A result recorded before issue 14 (no chunks) replays as a window without summaries.
    old = {"turns": data["turns"], "omitted": 70}
    assert HistoryWindow.from_json(old) == HistoryWindow(turns=window.turns, omitted=70)
    # An item it cannot read is dropped, not fatal.
    mixed = {**data, "chunks": [{"level": 1}, "x", *data["chunks"]]}
    assert HistoryWindow.from_json(mixed) == window
    assert HistoryWindow.from_json(None) == HistoryWindow()
