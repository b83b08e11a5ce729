"""The hybrid ranking of recall (core/memory/hybrid.py): pure, by hand."""

from __future__ import annotations

import random

from jupyter_agent.core.memory.hybrid import (
    hybrid_score,
    memory_hit,
    merge_hybrid,
    sort_hits,
    top_neighbours,
)
from jupyter_agent.core.memory.records import Memory, RecallHit


def hit(kind: str, id: str, score: float, created: str = "2026-01-01T00:00:00Z") -> RecallHit:
    return RecallHit(kind=kind, id=id, text=f"text of {id}", score=score, created=created)  # type: ignore[arg-type]


def test_hybrid_score_is_half_lexical_half_positive_cosine() -> None:
    assert hybrid_score(1.0, 1.0) == 1.0
    assert hybrid_score(0.6, 0.2) == 0.4
    assert hybrid_score(0.6, -0.9) == 0.3  # a negative cosine adds nothing, takes nothing
    assert hybrid_score(0.0, 0.7) == 0.35
    assert hybrid_score(0.12345, 0.0) == 0.0617  # rounded to 4 places like the store
    assert hybrid_score(0.5, 1.0000001) == 0.75  # float noise above 1 is clipped


def test_top_neighbours_orders_by_cosine_then_id_and_drops_non_positive() -> None:
    cosines = {"b": 0.5, "a": 0.5, "c": 0.9, "d": 0.0, "e": -0.2}
    assert top_neighbours(cosines, 10) == [("c", 0.9), ("a", 0.5), ("b", 0.5)]
    assert top_neighbours(cosines, 2) == [("c", 0.9), ("a", 0.5)]
    assert top_neighbours(cosines, 0) == []


def test_merge_rescores_memories_with_vectors_only() -> None:
    lexical = [
        hit("memory", "m1", 0.8),
        hit("turn", "t1", 0.7),
        hit("chunk", "c1", 0.6),
        hit("memory", "m2", 0.5),  # no vector yet: keeps its lexical score
    ]
    cosines = {"m1": 0.2, "m9": 0.9, "t1": 1.0}  # a turn id in cosines is no memory
    vector_only = [hit("memory", "m9", 0.99)]  # its own score is ignored: lexical 0
    merged = merge_hybrid(lexical, cosines, vector_only, k=10)
    assert [(h.kind, h.id, h.score) for h in merged] == [
        ("turn", "t1", 0.7),
        ("chunk", "c1", 0.6),
        ("memory", "m1", 0.5),
        ("memory", "m2", 0.5),
        ("memory", "m9", 0.45),
    ]
    assert merge_hybrid(lexical, cosines, vector_only, k=2) == merged[:2]


def test_a_fact_found_both_ways_counts_once_with_its_lexical_score() -> None:
    lexical = [hit("memory", "m1", 0.4)]
    merged = merge_hybrid(lexical, {"m1": 0.8}, [hit("memory", "m1", 0.0)], k=5)
    assert [(h.id, h.score) for h in merged] == [("m1", 0.6)]


def test_the_order_is_deterministic() -> None:
    hits = [
        hit("turn", "t1", 0.5, "2026-01-03T00:00:00Z"),
        hit("memory", "m2", 0.5, "2026-01-01T00:00:00Z"),
        hit("memory", "m1", 0.5, "2026-01-01T00:00:00Z"),
        hit("memory", "m3", 0.5, "2026-01-02T00:00:00Z"),
        hit("chunk", "c1", 0.5, "2026-01-09T00:00:00Z"),
        hit("memory", "m0", 0.6, "2025-01-01T00:00:00Z"),
    ]
    expected = ["m0", "m3", "m1", "m2", "c1", "t1"]
    for seed in range(5):
        shuffled = hits[:]
        random.Random(seed).shuffle(shuffled)
        assert [h.id for h in sort_hits(shuffled)] == expected
        assert [h.id for h in merge_hybrid(shuffled, {}, k=6)] == expected


def test_memory_hit_is_the_stores_shape() -> None:
    memory = Memory(
        id="mem_1",
        text="word " * 180,
        category="project",
        chat_id="chat_1",
        author="agent",
        created="2026-01-01T00:00:00Z",
        updated="2026-01-02T00:00:00Z",
    )
    found = memory_hit(memory, chat_title="Planning")
    assert found.to_json() == {
        "kind": "memory",
        "id": "mem_1",
        "chat_id": "chat_1",
        "text": "word " * 119 + "word…",  # 600 chars, cut at whitespace
        "score": 0.0,
        "created": "2026-01-01T00:00:00Z",
        "category": "project",
        "chat_title": "Planning",
    }


def test_a_token_straddling_the_clip_is_dropped_whole() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    text = "x " * 295 + token + " tail"  # the token spans chars 590..617
    memory = Memory(
        id="mem_1",
        text=text,
        category="project",
        chat_id=None,
        author="agent",
        created="2026-01-01T00:00:00Z",
        updated="2026-01-01T00:00:00Z",
    )
    clipped = memory_hit(memory).text
    assert len(clipped) <= 600
    assert "ghp_" not in clipped
    assert clipped.endswith("x…")
