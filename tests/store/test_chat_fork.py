"""``Store.fork_chat`` (issue 31, item 1), on SQLite and PostgreSQL: the fork holds copies of
the source's turns 1..N and of the summaries within them, records its origin, and each chat
outlives the other."""

from __future__ import annotations

import pytest

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.store import Store
from tests.store.factories import iso, make_turn

_N = iter(range(1, 10_000))


def _ids(kind: str) -> str:
    return f"{kind}_F{next(_N):06d}"


def _chunk(first: int, last: int, level: int = 1) -> StoredChunk:
    return StoredChunk(
        chat_id="chat_01A", level=level, first_turn=first, last_turn=last,  # type: ignore[arg-type]
        text=f"summary of turns {first}-{last}", run_id="run_h", model="m", created=iso(90),
    )  # fmt: skip


@pytest.fixture
def source(store: Store) -> Store:
    store.create_chat(chat_id="chat_01A", title="analysis", now=iso(0), owner="ann")
    for n in range(1, 5):
        assert store.append_turn(make_turn(n, created=iso(n)))
    assert store.add_chunk(_chunk(1, 2))
    assert store.add_chunk(_chunk(3, 4))
    return store


def test_a_fork_copies_turns_and_the_summaries_within_them(source: Store) -> None:
    fork = source.fork_chat(
        "chat_01A", upto=3, chat_id="chat_01F", title="what if", now=iso(50), make_id=_ids
    )
    assert fork is not None
    assert fork.forked_from == {"chat_id": "chat_01A", "turn": 3}
    assert (fork.owner, fork.title, fork.agent) == ("ann", "what if", "agent")
    turns = source.list_turns("chat_01F")
    assert [t.user_text for t in turns] == [t.user_text for t in source.list_turns("chat_01A")[:3]]
    assert all(t.chat_id == "chat_01F" for t in turns)
    assert [t.run_id for t in turns] == [t.run_id for t in source.list_turns("chat_01A")[:3]]
    assert {t.id for t in turns}.isdisjoint(t.id for t in source.list_turns("chat_01A"))
    # A lookup by run finds the turn the run wrote, not its copy.
    first = source.get_turn_by_run(turns[0].run_id)
    assert first is not None
    assert first.chat_id == "chat_01A"
    # The summary of 1-2 is the fork's history; 3-4 reaches past turn 3.
    assert [(c.first_turn, c.last_turn) for c in source.list_chunks("chat_01F")] == [(1, 2)]
    assert source.turn_count("chat_01F") == 3
    got = source.get_chat("chat_01F")
    assert got is not None
    assert got.forked_from == {"chat_id": "chat_01A", "turn": 3}


def test_each_chat_outlives_the_other_and_a_fork_forks(source: Store) -> None:
    source.fork_chat("chat_01A", upto=2, chat_id="chat_01F", title="f", now=iso(50), make_id=_ids)
    again = source.fork_chat(
        "chat_01F", upto=1, chat_id="chat_01G", title="g", now=iso(60), make_id=_ids
    )
    assert again is not None
    assert again.forked_from == {"chat_id": "chat_01F", "turn": 1}
    assert source.delete_chat("chat_01A")
    assert len(source.list_turns("chat_01F")) == 2
    assert len(source.list_chunks("chat_01F")) == 1
    assert source.delete_chat("chat_01F")
    assert len(source.list_turns("chat_01G")) == 1


def test_a_fork_at_zero_is_an_empty_chat_and_a_turn_past_the_end_is_refused(
    source: Store,
) -> None:
    empty = source.fork_chat(
        "chat_01A", upto=0, chat_id="chat_01E", title="e", now=iso(50), make_id=_ids
    )
    assert empty is not None
    assert source.list_turns("chat_01E") == []
    with pytest.raises(ValueError, match="the chat has 4 turns: fork at a turn from 0 to 4"):
        source.fork_chat(
            "chat_01A", upto=5, chat_id="chat_01X", title="x", now=iso(50), make_id=_ids
        )
    assert source.get_chat("chat_01X") is None  # nothing written
    assert (
        source.fork_chat(
            "chat_nope", upto=0, chat_id="chat_01Y", title="y", now=iso(50), make_id=_ids
        )
        is None
    )
