"""Picking the chunk summaries of a boot window.

Pure; see :mod:`jupyter_agent.core.history.window`.

:func:`pick_summaries` walks back from a position choosing, for each position, the level-1
summary covering it while those fit, then level-2 ones (each replacing the level-1 ones it
spans); positions no summary covers are counted and skipped. :func:`summary_text` and
:func:`omission` are the lines the window shows.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jupyter_agent.core.tokens import count_tokens

__all__ = ["ChunkSummary", "omission", "pick_summaries", "summary_cost", "summary_text"]


@dataclass(frozen=True)
class ChunkSummary:
    """A summary of turns ``first_turn``..``last_turn`` (1-based positions, inclusive)."""

    level: Literal[1, 2]
    first_turn: int
    last_turn: int
    text: str


def pick_summaries(
    chunks: Sequence[ChunkSummary], position: int, budget: int
) -> tuple[list[ChunkSummary], int, int]:
    """Summaries covering positions ``position`` and older, newest first, within ``budget``.

    Level-1 first; once a level-1 summary no longer fits (or none covers a position), a
    level-2 one, which replaces the level-1 summaries it spans, and only level-2 from then
    on. A position no summary covers is skipped (counted) and the walk goes on with the
    newest summary before it; it stops when the budget is full.

    Returns (summaries oldest first, tokens used, how many of positions 1..``position``
    none of them covers).
    """
    picked: list[ChunkSummary] = []
    level = 1
    uncovered = 0
    index = _index(tuple(chunks))
    costs: dict[ChunkSummary, int] = {}  # each summary's cost, counted once per call

    def cost(chunk: ChunkSummary) -> int:
        found = costs.get(chunk)
        if found is None:
            found = costs[chunk] = count_tokens(summary_text(chunk))
        return found

    total = 0  # summary_cost(picked), kept up to date rather than recounted per step
    while position >= 1:
        choice: ChunkSummary | None = None
        covered = False
        for want in (1, 2) if level == 1 else (2,):
            candidate = index.covering(want, position)
            if candidate is None:
                continue
            covered = True
            # A level-2 summary supersedes the level-1 summaries it spans. picked runs
            # newest first, so those can only be at its end (the oldest picked so far).
            inside = 0
            for c in reversed(picked):
                if c.first_turn > candidate.last_turn or not _inside(c, candidate):
                    break
                inside += 1
            kept_cost = total - sum(cost(c) for c in picked[len(picked) - inside :])
            if kept_cost + cost(candidate) <= budget:
                kept = picked[: len(picked) - inside]
                choice, picked, level, total = candidate, kept, want, kept_cost
                break
        if choice is None:
            if covered:  # the budget is full
                break
            # A gap (a summary not made yet): skip to the newest summary before it.
            nxt = index.last_before(level, position)
            uncovered += position - nxt
            position = nxt
            continue
        picked.append(choice)
        total += cost(choice)
        position = choice.first_turn - 1
    uncovered += max(0, position)  # what the full budget left uncovered
    picked.reverse()
    return picked, total, uncovered


class _Index:
    """The summaries of one call sorted for O(log n) lookups (the window asks for the same
    ones at every chunk boundary it tries: a linear scan made a 10,000-turn chat's prompt
    take seconds)."""

    def __init__(self, chunks: tuple[ChunkSummary, ...]) -> None:
        self._by_level: dict[int, tuple[list[int], list[int], list[ChunkSummary]]] = {}
        for level in (1, 2):
            # Reaching furthest back first: (first_turn, -last_turn), the tie-break of
            # covering(); spans of one level may overlap (a changed chunk_turns).
            mine = sorted(
                (c for c in chunks if c.level == level), key=lambda c: (c.first_turn, -c.last_turn)
            )
            reach: list[int] = []  # running max of last_turn: monotone, so bisectable
            for c in mine:
                reach.append(max(c.last_turn, reach[-1] if reach else 0))
            self._by_level[level] = ([c.first_turn for c in mine], reach, mine)
        # last_turn of every summary of level >= L, sorted: for skipping gaps.
        self._ends = {
            level: sorted(c.last_turn for c in chunks if c.level >= level) for level in (1, 2)
        }

    def covering(self, level: int, position: int) -> ChunkSummary | None:
        """The ``level`` summary covering ``position`` reaching furthest back."""
        firsts, reach, mine = self._by_level.get(level, ([], [], []))
        # The first (by first_turn) whose last_turn reaches position, if it starts by then.
        i = bisect.bisect_left(reach, position)
        if i < len(mine) and firsts[i] <= position:
            return mine[i]
        return None

    def last_before(self, level: int, position: int) -> int:
        """The newest last_turn before ``position`` of a summary of ``level`` or above."""
        ends = self._ends.get(level, [])
        i = bisect.bisect_left(ends, position)
        return ends[i - 1] if i else 0


@functools.lru_cache(maxsize=8)
def _index(chunks: tuple[ChunkSummary, ...]) -> _Index:
    return _Index(chunks)


def _inside(inner: ChunkSummary, outer: ChunkSummary) -> bool:
    return outer.first_turn <= inner.first_turn and inner.last_turn <= outer.last_turn


def summary_cost(summaries: Sequence[ChunkSummary]) -> int:
    return sum(count_tokens(summary_text(c)) for c in summaries)


def summary_text(chunk: ChunkSummary) -> str:
    span = (
        f"turn {chunk.first_turn}"
        if chunk.first_turn == chunk.last_turn
        else f"turns {chunk.first_turn}-{chunk.last_turn}"
    )
    return f"[summary of {span}] {chunk.text.strip()}"


def omission(count: int) -> str:
    noun = "turn" if count == 1 else "turns"
    return f"[{count} earlier {noun} of this chat are not shown]"
