"""The boot window: budget, newest first at full resolution, summaries, markers."""

from __future__ import annotations

from jupyter_agent.core.history.window import ChunkSummary, boot_window, render_turn
from jupyter_agent.core.tokens import count_tokens
from jupyter_agent.core.turns import Reply, Steering, TurnLLM, TurnRecord


def turn(n: int, *, size: int = 40, interrupted: bool = False, replies: int = 1) -> TurnRecord:
    return TurnRecord(
        id=f"turn_{n}",
        chat_id="chat_X",
        run_id=f"run_{n}",
        user_text=f"question {n} " + "q" * size,
        created=f"2025-01-{n:02d}T00:00:00.000Z",
        llm=TurnLLM(
            stop_reason="break_hard" if interrupted else "done",
            end_cause="break_hard" if interrupted else "done",
        ),
        replies=tuple(
            Reply(text=f"answer {n}.{i} " + "a" * size, done=i == replies - 1)
            for i in range(replies)
        ),
        interrupted=interrupted,
    )


def turn_tokens(t: TurnRecord) -> int:
    user, assistant = render_turn(t)
    return count_tokens(user) + count_tokens(assistant)


def roles(window):
    return [m.role for m in window.messages]


def test_empty():
    w = boot_window([], budget_tokens=1000)
    assert w.messages == []
    assert (w.turns_included, w.tokens) == (0, 0)


def test_everything_fits_in_order():
    turns = [turn(n) for n in range(1, 4)]
    w = boot_window(turns, budget_tokens=10_000)
    assert w.turns_included == 3
    assert roles(w) == ["user", "assistant"] * 3
    assert "question 1" in w.messages[0].text
    assert "answer 3.0" in w.messages[-1].text
    assert w.tokens == sum(turn_tokens(t) for t in turns)
    assert "not shown" not in w.messages[0].text


def test_budget_keeps_newest_and_names_the_omitted():
    turns = [turn(n, size=200) for n in range(1, 11)]
    per_turn = turn_tokens(turns[-1])
    budget = per_turn * 3 + 30
    w = boot_window(turns, budget_tokens=budget)
    assert w.tokens <= budget
    assert w.turns_included == 3
    assert roles(w) == ["user", "assistant"] * 3
    assert w.messages[0].text.startswith("[7 earlier turns of this chat are not shown]")
    assert "question 8" in w.messages[0].text
    assert "answer 10.0" in w.messages[-1].text
    assert "question 7 " not in "".join(m.text for m in w.messages)


def test_summaries_level1_then_level2():
    turns = [turn(n, size=200) for n in range(1, 13)]
    budget = turn_tokens(turns[-1]) * 2 + 60
    chunks = [
        ChunkSummary(level=1, first_turn=1, last_turn=4, text="L1 one-to-four"),
        ChunkSummary(level=1, first_turn=5, last_turn=8, text="L1 five-to-eight"),
        ChunkSummary(level=1, first_turn=9, last_turn=10, text="L1 nine-ten " + "x" * 40),
        ChunkSummary(level=2, first_turn=1, last_turn=8, text="L2 one-to-eight"),
    ]
    w = boot_window(turns, budget_tokens=budget, chunks=chunks)
    assert w.turns_included == 2
    assert w.tokens <= budget
    lead = w.messages[0].text
    # newest older turns get level 1; once a level-1 does not fit, level 2 covers the rest
    assert "[summary of turns 9-10] L1 nine-ten" in lead
    assert "L2 one-to-eight" in lead
    assert "L1 five-to-eight" not in lead
    assert lead.index("L2 one-to-eight") < lead.index("L1 nine-ten")  # oldest first
    assert "not shown" not in lead
    assert lead.rstrip().endswith("q" * 200)  # the oldest full turn follows the summaries
    assert roles(w) == ["user", "assistant"] * 2


def test_summaries_with_a_gap_omit_the_rest():
    turns = [turn(n, size=200) for n in range(1, 7)]
    budget = turn_tokens(turns[-1]) + 80
    chunks = [ChunkSummary(level=1, first_turn=3, last_turn=5, text="three to five")]
    w = boot_window(turns, budget_tokens=budget, chunks=chunks)
    lead = w.messages[0].text
    assert lead.startswith("[2 earlier turns of this chat are not shown]")
    assert "[summary of turns 3-5] three to five" in lead
    assert w.tokens <= budget


def test_interrupted_marker_and_steering():
    t = TurnRecord(
        id="turn_1",
        chat_id="chat_X",
        run_id="run_1",
        user_text="count rows",
        created="2025-01-01T00:00:00.000Z",
        steering=(Steering(text="only 2024", at="2025-01-01T00:00:09.000Z"),),
        replies=(Reply(text="Loading the file...", done=False),),
        interrupted=True,
        llm=TurnLLM(stop_reason="break_hard", end_cause="break_hard"),
    )
    silent = TurnRecord(
        id="turn_2",
        chat_id="chat_X",
        run_id="run_2",
        user_text="and now?",
        created="2025-01-01T00:01:00.000Z",
        interrupted=True,
        llm=TurnLLM(stop_reason="error", end_cause="restart"),
    )
    w = boot_window([t, silent], budget_tokens=10_000)
    user, assistant = w.messages[0].text, w.messages[1].text
    assert "count rows" in user
    assert "only 2024" in user
    assert "Loading the file..." in assistant
    assert "interrupted (break_hard)" in assistant
    assert w.messages[3].text == "[this turn was interrupted (restart) before it finished]"


def test_no_reply_marker():
    t = turn(1, replies=0)
    _, assistant = render_turn(t)
    assert assistant == "[no reply was sent in this turn]"


def test_newest_turn_too_big_is_clipped():
    big = turn(2, size=20_000)
    w = boot_window([turn(1), big], budget_tokens=500)
    assert w.turns_included == 1
    assert w.tokens <= 500
    assert "question 2" in w.messages[0].text
    assert "cut to fit" in w.messages[1].text
    assert roles(w) == ["user", "assistant"]
    assert w.messages[0].text.startswith("[1 earlier turn of this chat are not shown]")


def test_first_position_offsets_chunks():
    turns = [turn(n, size=200) for n in range(11, 14)]  # the tail of a 13-turn chat
    budget = turn_tokens(turns[-1]) + 60
    chunks = [ChunkSummary(level=2, first_turn=1, last_turn=12, text="all before")]
    w = boot_window(turns, budget_tokens=budget, chunks=chunks, first_position=11)
    assert "[summary of turns 1-12] all before" in w.messages[0].text
    assert "not shown" not in w.messages[0].text
