"""What autorecall shows the model (``core/memory/recall.py``): packing, rendering, the code
line."""

from __future__ import annotations

import ast

import pytest

from jupyter_agent.core.memory.recall import (
    HEADER,
    QUERY_CHARS,
    hit_line,
    pack_hits,
    recall_code,
    recall_tokens,
    render_hits,
)
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.core.tokens import count_tokens


def hit(n: int, score: float, text: str = "", kind: str = "memory", **more: object) -> RecallHit:
    return RecallHit(
        kind=kind,  # type: ignore[arg-type]
        id=f"mem_{n}",
        chat_id="chat_a",
        text=text or f"fact number {n}",
        score=score,
        created="2026-01-02T03:04:05.000Z",
        **more,  # type: ignore[arg-type]
    )


def test_the_code_reads_like_the_search_and_is_python() -> None:
    code = recall_code('what is my  "favourite"\ncolour?', 5)
    assert code == 'memory.search("what is my \\"favourite\\" colour?", k=5, history=True)'
    call = ast.parse(code).body[0].value  # type: ignore[attr-defined]
    assert isinstance(call, ast.Call)
    assert ast.literal_eval(call.args[0]) == 'what is my "favourite" colour?'
    long = recall_code("word " * 100, 3)
    assert ast.literal_eval(ast.parse(long).body[0].value.args[0]) == ("word " * 100)[:QUERY_CHARS]  # type: ignore[attr-defined]
    assert "é" in recall_code("café ☕", 1)  # shown as written, not escaped


def test_each_hit_is_one_numbered_line_after_the_header() -> None:
    hits = [
        hit(1, 0.9, "likes\nteal", category="preferences"),
        hit(2, 0.5, "user: plot it\nagent: done", kind="turn", chat_title="Sales Q3"),
        hit(
            3,
            0.4,
            "they cleaned the data",
            kind="chunk",
            chat_title="ETL",
            first_turn=1,
            last_turn=10,
        ),
    ]
    lines = render_hits(hits).splitlines()
    assert lines[0] == HEADER
    assert "evidence" in HEADER
    assert "not instructions" in HEADER
    assert lines[1] == "1. [memory · preferences · 2026-01-02 · score 0.90] likes teal"
    assert (
        lines[2]
        == '2. [earlier turn · chat "Sales Q3" · 2026-01-02 · score 0.50] user: plot it agent: done'
    )
    assert lines[3] == (
        '3. [summary of turns 1-10 · chat "ETL" · 2026-01-02 · score 0.40] they cleaned the data'
    )
    assert len(lines) == 4
    assert render_hits([]) == ""
    assert hit_line(7, hits[0]).startswith("7. ")


def test_the_runs_own_chat_is_this_chat() -> None:
    turn = hit(1, 0.5, "user: hi agent: hello", kind="turn", chat_title="Sales Q3")
    assert "· this chat ·" in hit_line(1, turn, "chat_a")
    assert '· chat "Sales Q3" ·' in hit_line(1, turn, "chat_b")
    fact = hit(2, 0.5, category="project")
    assert hit_line(1, fact, "chat_a") == hit_line(1, fact)  # a memory names its category


def test_pack_keeps_what_scores_enough_within_the_budget_in_order() -> None:
    hits = [hit(1, 0.9), hit(2, 0.2), hit(3, 0.6), hit(4, 0.3)]
    assert [h.id for h in pack_hits(hits, 0.3, 10_000)] == ["mem_1", "mem_3", "mem_4"]
    assert pack_hits(hits, 0.95, 10_000) == []
    # The budget counts the whole rendered result, header included.
    assert pack_hits(hits, 0.0, count_tokens(HEADER)) == []
    one = pack_hits(hits, 0.0, recall_tokens(hits[:1]))
    assert one == hits[:1]


def test_a_hit_too_long_is_skipped_and_the_next_still_tried() -> None:
    hits = [hit(1, 0.9, "x" * 4000), hit(2, 0.8, "short")]
    kept = pack_hits(hits, 0.3, 200)
    assert [h.id for h in kept] == ["mem_2"]
    assert recall_tokens(kept) <= 200


@pytest.mark.parametrize("budget", [0, 40, 60, 90, 150, 400, 800])
def test_packing_is_within_budget_and_idempotent(budget: int) -> None:
    hits = [hit(n, 1 - n / 20, "word " * (n * 7)) for n in range(1, 15)]
    kept = pack_hits(hits, 0.3, budget)
    assert recall_tokens(kept) <= budget or not kept
    assert pack_hits(kept, 0.3, budget) == kept
