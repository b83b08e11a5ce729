"""Picking the chunk summaries of a boot window (pure; see :mod:`jupyter_agent.core.window`).

:func:`pick_summaries` walks back from a position choosing, for each position, the level-1
summary covering it while those fit, then level-2 ones (each replacing the level-1 ones it
spans); positions no summary covers are counted and skipped. :func:`summary_text` and
:func:`omission` are the lines the window shows.
"""

from __future__ import annotations

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
            candidate = _covering(chunks, want, position)
            if candidate is None:
                continue
            covered = True
            # A level-2 summary supersedes the level-1 summaries it spans.
            kept = [c for c in picked if not _inside(c, candidate)]
            kept_cost = total - sum(cost(c) for c in picked if _inside(c, candidate))
            if kept_cost + cost(candidate) <= budget:
                choice, picked, level, total = candidate, kept, want, kept_cost
                break
        if choice is None:
            if covered:  # the budget is full
                break
            # A gap (a summary not made yet): skip to the newest summary before it.
            before = [c.last_turn for c in chunks if c.level >= level and c.last_turn < position]
            nxt = max(before, default=0)
            uncovered += position - nxt
            position = nxt
            continue
        picked.append(choice)
        total += cost(choice)
        position = choice.first_turn - 1
    uncovered += max(0, position)  # what the full budget left uncovered
    picked.reverse()
    return picked, total, uncovered


def _covering(chunks: Sequence[ChunkSummary], level: int, position: int) -> ChunkSummary | None:
    """The ``level`` summary covering ``position`` reaching furthest back (the most with one)."""
    best: ChunkSummary | None = None
    for c in chunks:
        if not (c.level == level and c.first_turn <= position <= c.last_turn):
            continue
        if best is None or (c.first_turn, -c.last_turn) < (best.first_turn, -best.last_turn):
            best = c
    return best


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
