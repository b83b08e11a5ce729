"""Chunk spans: fixed boundaries, closed level-1 chunks, level-2 once its level-1s exist."""

from __future__ import annotations

import pytest

from jupyter_agent.core.history.chunks import ChunkSpan, StoredChunk, closed_spans, l1_span, l2_span


def test_spans_have_fixed_boundaries() -> None:
    assert l1_span(0, 10) == ChunkSpan(1, 1, 10)
    assert l1_span(3, 10) == ChunkSpan(1, 31, 40)
    assert l2_span(1, 10, 5) == ChunkSpan(2, 51, 100)


def test_only_closed_level1_chunks_are_due() -> None:
    assert closed_spans(9, 10, 5, ()) == []
    assert closed_spans(10, 10, 5, ()) == [ChunkSpan(1, 1, 10)]
    assert closed_spans(25, 10, 5, {(1, 1)}) == [ChunkSpan(1, 11, 20)]


def test_level2_waits_for_all_its_level1_summaries() -> None:
    have = {(1, 1), (1, 11), (1, 21), (1, 31)}
    assert closed_spans(50, 10, 5, have) == [ChunkSpan(1, 41, 50)]
    have.add((1, 41))
    assert closed_spans(60, 10, 5, have) == [ChunkSpan(1, 51, 60), ChunkSpan(2, 1, 50)]
    have.add((2, 1))
    assert closed_spans(60, 10, 5, have) == [ChunkSpan(1, 51, 60)]


def test_bad_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="chunk_turns"):
        closed_spans(10, 0, 5, ())


def test_stored_chunk_json() -> None:
    chunk = StoredChunk(
        chat_id="chat_1", level=1, first_turn=1, last_turn=10, text="t", run_id="run_1",
        model="m", created="2026-01-01T00:00:00.000Z",
    )  # fmt: skip
    assert chunk.span == ChunkSpan(1, 1, 10)
    assert chunk.to_json() == {
        "level": 1, "first_turn": 1, "last_turn": 10, "text": "t", "run_id": "run_1",
        "created": "2026-01-01T00:00:00.000Z",
    }  # fmt: skip
