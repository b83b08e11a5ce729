"""Hybrid recall: lexical hits and vector neighbours merged into one ranking. Pure.

With an ``embed`` tier, a memory's score is ``0.5 * lexical + 0.5 * max(0, cosine)``
(:func:`hybrid_score`), where ``lexical`` is the store's score (idf-weighted coverage of
the query's terms, :mod:`jupyter_agent.core.memory.terms`) and ``cosine`` is between the
query's embedding and the fact's. The memory candidates are the lexical top C union the
vector top C (:func:`top_neighbours`), so a fact phrased in other words than the query
(no term in common: lexical 0) can still be recalled on its meaning alone.

What has no vector keeps its lexical score as it is: turns and chunks (never embedded),
and a fact not embedded yet (the backfill will get to it), so turning the embed tier on
never demotes them. Scores are rounded to 4 places like the store's; the order is the
store's, deterministic: ``(-score, kind memory < chunk < turn, newest created, id)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from jupyter_agent.core.memory.records import Memory, RecallHit
from jupyter_agent.core.memory.terms import clip_words

__all__ = [
    "HIT_TEXT_CHARS",
    "LEXICAL_WEIGHT",
    "VECTOR_WEIGHT",
    "hybrid_score",
    "memory_hit",
    "merge_hybrid",
    "sort_hits",
    "top_neighbours",
]

LEXICAL_WEIGHT: Final = 0.5
VECTOR_WEIGHT: Final = 0.5
#: A hit's text is clipped to this many characters (the store's rule).
HIT_TEXT_CHARS: Final = 600
_KIND_ORDER: Final = {"memory": 0, "chunk": 1, "turn": 2}


def hybrid_score(lexical: float, cosine: float) -> float:
    """``0.5 * lexical + 0.5 * max(0, cosine)``, rounded to 4 places (in [0, 1])."""
    score = LEXICAL_WEIGHT * lexical + VECTOR_WEIGHT * max(0.0, min(1.0, cosine))
    return round(score, 4)


def top_neighbours(cosines: Mapping[str, float], c: int) -> list[tuple[str, float]]:
    """The ``c`` ids of highest cosine (ties: id ascending); those <= 0 are no neighbours."""
    ranked = sorted(((i, s) for i, s in cosines.items() if s > 0.0), key=lambda p: (-p[1], p[0]))
    return ranked[: max(0, c)]


def memory_hit(memory: Memory, *, chat_title: str | None = None) -> RecallHit:
    """The hit of a fact found by its vector alone (lexical score 0, set by the merge)."""
    return RecallHit(
        kind="memory",
        id=memory.id,
        chat_id=memory.chat_id,
        text=clip_words(memory.text, HIT_TEXT_CHARS),
        score=0.0,
        created=memory.created,
        category=memory.category,
        chat_title=chat_title,
    )


def sort_hits(hits: Iterable[RecallHit]) -> list[RecallHit]:
    """``hits`` in the store's order: score down, memory < chunk < turn, newest, id."""
    ordered = sorted(hits, key=lambda h: h.id)
    ordered.sort(key=lambda h: h.created, reverse=True)  # stable: ids stay ascending
    ordered.sort(key=lambda h: (-h.score, _KIND_ORDER.get(h.kind, 3)))
    return ordered


def merge_hybrid(
    lexical: Sequence[RecallHit],
    cosines: Mapping[str, float],
    vector_hits: Sequence[RecallHit] = (),
    *,
    k: int,
) -> list[RecallHit]:
    """The top ``k`` of the lexical hits and the vector-only memory hits, hybrid-scored.

    ``cosines`` maps memory ids to the query's cosine with the fact (facts with a vector);
    ``vector_hits`` are memory hits found by vector alone (their lexical score is 0 and
    their own ``score`` is ignored); one found both ways counts once, with its lexical score.
    """
    seen: dict[tuple[str, str], RecallHit] = {}
    for hit in lexical:
        seen.setdefault((hit.kind, hit.id), _scored(hit, hit.score, cosines))
    for hit in vector_hits:
        if hit.kind == "memory":
            seen.setdefault((hit.kind, hit.id), _scored(hit, 0.0, cosines))
    return sort_hits(seen.values())[: max(0, k)]


def _scored(hit: RecallHit, lexical: float, cosines: Mapping[str, float]) -> RecallHit:
    if hit.kind != "memory" or hit.id not in cosines:
        return hit if hit.score == lexical else replace(hit, score=lexical)
    return replace(hit, score=hybrid_score(lexical, cosines[hit.id]))
