"""Chunks of a chat's history (pure): fixed spans of turns and the summaries made of them.

Turn positions are 1-based, in the chat's turn order (``created``, then id). With
``chunk_turns`` = C and ``l2_chunks`` = K:

- level-1 chunk n (n = 0, 1, ...) spans positions ``n*C+1 .. (n+1)*C`` and is *closed* once
  the chat has ``(n+1)*C`` turns: its content never changes after that, so its summary is
  made once;
- level-2 chunk m spans level-1 chunks ``m*K .. (m+1)*K-1`` (positions
  ``m*K*C+1 .. (m+1)*K*C``) and can be summarised once all K of their level-1 summaries exist:
  a level-2 summary is made from level-1 summary texts, not from raw turns.

:func:`closed_spans` names the spans that should have a summary and do not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ChunkSpan", "StoredChunk", "closed_spans", "l1_span", "l2_span"]

Level = Literal[1, 2]


@dataclass(frozen=True, order=True)
class ChunkSpan:
    """Turns ``first_turn``..``last_turn`` (inclusive) at ``level``."""

    level: Level
    first_turn: int
    last_turn: int


@dataclass(frozen=True, kw_only=True)
class StoredChunk:
    """A stored summary of a span: what the chunks table holds."""

    chat_id: str
    level: Level
    first_turn: int
    last_turn: int
    text: str
    run_id: str
    model: str | None
    created: str

    @property
    def span(self) -> ChunkSpan:
        return ChunkSpan(self.level, self.first_turn, self.last_turn)

    def to_json(self) -> dict[str, Any]:
        """The REST item of ``GET agent/chats/{id}/history``."""
        return {
            "level": self.level,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "text": self.text,
            "run_id": self.run_id,
            "created": self.created,
        }


def _check(chunk_turns: int, l2_chunks: int) -> None:
    if chunk_turns < 1 or l2_chunks < 1:
        raise ValueError(f"chunk_turns and l2_chunks must be >= 1, not {chunk_turns}, {l2_chunks}")


def l1_span(n: int, chunk_turns: int) -> ChunkSpan:
    """Level-1 chunk ``n`` (0-based)."""
    return ChunkSpan(1, n * chunk_turns + 1, (n + 1) * chunk_turns)


def l2_span(m: int, chunk_turns: int, l2_chunks: int) -> ChunkSpan:
    """Level-2 chunk ``m`` (0-based)."""
    width = chunk_turns * l2_chunks
    return ChunkSpan(2, m * width + 1, (m + 1) * width)


def closed_spans(
    turn_count: int, chunk_turns: int, l2_chunks: int, have: Iterable[tuple[int, int]]
) -> list[ChunkSpan]:
    """The spans that should have a summary and do not, oldest first, level 1 before 2.

    ``have``: ``(level, first_turn)`` of the summaries already stored. A level-2 span is
    listed only once all its level-1 summaries are in ``have``.
    """
    _check(chunk_turns, l2_chunks)
    stored = set(have)
    closed_l1 = max(0, turn_count) // chunk_turns
    missing = [
        span
        for span in (l1_span(n, chunk_turns) for n in range(closed_l1))
        if (1, span.first_turn) not in stored
    ]
    for m in range(closed_l1 // l2_chunks):
        span = l2_span(m, chunk_turns, l2_chunks)
        if (2, span.first_turn) in stored:
            continue
        parts = range(m * l2_chunks, (m + 1) * l2_chunks)
        if all((1, l1_span(n, chunk_turns).first_turn) in stored for n in parts):
            missing.append(span)
    return missing
