"""Turns: append, list oldest first, exact JSON round trip, idempotence, chat bump."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.turns import TurnLLM, TurnRecord
from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Store
from tests.store.factories import iso, make_run, make_turn


@pytest.fixture
def chat(store: Store) -> str:
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    return "chat_01A"


def test_list_is_oldest_first_and_round_trips(store: Store, chat: str) -> None:
    turns = [make_turn(n, chat_id=chat) for n in (5, 1, 3, 2, 4)]
    for turn in turns:
        assert store.append_turn(turn) is True
    listed = store.list_turns(chat)
    assert [t.id for t in listed] == [f"turn_{n:06d}" for n in (1, 2, 3, 4, 5)]
    by_id = {t.id: t for t in turns}
    for got in listed:
        assert got == by_id[got.id]
        assert got.to_json() == by_id[got.id].to_json()
    assert store.list_turns("chat_other") == []


def test_ties_in_created_are_ordered_by_id(store: Store, chat: str) -> None:
    for n in (3, 1, 2):
        store.append_turn(make_turn(n, chat_id=chat, created=iso(50)))
    assert [t.id for t in store.list_turns(chat)] == ["turn_000001", "turn_000002", "turn_000003"]


def test_minimal_turn_round_trips(store: Store, chat: str) -> None:
    minimal = TurnRecord(
        id="turn_min",
        chat_id=chat,
        run_id="run_min",
        user_text="",
        created=iso(1),
        llm=TurnLLM(stop_reason="error", end_cause="restart"),
        interrupted=True,
    )
    store.append_turn(minimal)
    assert store.get_turn_by_run("run_min") == minimal
    assert store.list_turns(chat)[0].to_json() == minimal.to_json()


def test_append_is_idempotent(store: Store, chat: str) -> None:
    turn = make_turn(1, chat_id=chat)
    assert store.append_turn(turn) is True
    assert store.append_turn(turn) is False
    # A recovered write for the same run under a new id does not add a second turn.
    other = make_turn(2, chat_id=chat, run_id=turn.run_id, end_cause="restart")
    assert store.append_turn(other) is False
    assert store.list_turns(chat) == [turn]
    assert store.get_turn_by_run(turn.run_id) == turn


def test_append_bumps_chat_updated_never_back(store: Store, chat: str) -> None:
    store.append_turn(make_turn(10, chat_id=chat))
    assert store.get_chat(chat).updated == iso(10)  # type: ignore[union-attr]
    store.append_turn(make_turn(4, chat_id=chat))  # an older turn arriving late
    assert store.get_chat(chat).updated == iso(10)  # type: ignore[union-attr]


def test_get_turn_by_run(store: Store, chat: str) -> None:
    turn = make_turn(7, chat_id=chat)
    store.append_turn(turn)
    assert store.get_turn_by_run("run_000007") == turn
    assert store.get_turn_by_run("run_missing") is None


def test_turn_for_unknown_chat_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="cannot append the turn"):
        store.append_turn(make_turn(1, chat_id="chat_missing"))
    assert store.get_turn_by_run("run_000001") is None


def test_queryable_columns_mirror_the_record(store: Store, db_url: str, chat: str) -> None:
    store.append_turn(make_turn(3, chat_id=chat, end_cause="ceiling:cells"))
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            row = conn.execute(
                text(
                    "SELECT run_id, interrupted, stop_reason, end_cause, model_calls, usage_in,"
                    " usage_cache_read, cost, fingerprint_system, fingerprint_identity"
                    " FROM agent_turns"
                )
            ).one()
    finally:
        engine.dispose()
    assert tuple(row) == (
        "run_000003",
        True,
        "wrapup",
        "ceiling:cells",
        6,
        1003,
        5000,
        0.0125,
        "sys3",
        "id1",
    )


def test_a_turn_with_its_runs_end_is_one_write(store: Store, chat: str) -> None:
    running = make_run(7, chat_id=chat, status="running", run_id="run_000007")
    assert store.open_run(running)
    turn = replace(make_turn(7, chat_id=chat), run_id="run_000007")
    ended = make_run(7, chat_id=chat, run_id="run_000007")
    assert store.append_turn(turn, ended=ended) is True
    assert store.get_run("run_000007") == ended
    stored = store.get_chat(chat)
    assert stored is not None
    assert stored.active_run_id is None
    assert stored.updated == max(turn.created, str(ended.ended))


def test_a_runs_end_leaves_another_active_run_alone(store: Store, chat: str) -> None:
    assert store.open_run(make_run(8, chat_id=chat, status="running", run_id="run_000008"))
    turn = replace(make_turn(7, chat_id=chat), run_id="run_000007")
    assert store.append_turn(turn, ended=make_run(7, chat_id=chat, run_id="run_000007"))
    stored = store.get_chat(chat)
    assert stored is not None
    assert stored.active_run_id == "run_000008"


def test_a_recovered_end_clears_the_run_without_moving_the_chat(store: Store, chat: str) -> None:
    # Recovery (bump_to_end=False): the chat's time is its turn's, not the restart's end.
    started = make_run(7, chat_id=chat, status="running", run_id="run_000007", started=iso(3))
    assert store.open_run(started)  # the chat's time: iso(3), before the turn's
    turn = replace(make_turn(7, chat_id=chat), run_id="run_000007")
    ended = make_run(7, chat_id=chat, run_id="run_000007")
    assert store.append_turn(turn, ended=ended, bump_to_end=False) is True
    stored = store.get_chat(chat)
    assert stored is not None
    assert (stored.active_run_id, stored.updated) == (None, turn.created)
    assert str(ended.ended) > turn.created


def test_a_turn_stored_again_still_ends_its_run(store: Store, chat: str) -> None:
    # The turn is there already (a replayed write): not stored again, but the run's end
    # is, and the chat's time moves to it, never back.
    turn = replace(make_turn(7, chat_id=chat), run_id="run_000007")
    assert store.append_turn(turn) is True
    assert store.open_run(make_run(7, chat_id=chat, status="running", run_id="run_000007"))
    ended = make_run(7, chat_id=chat, run_id="run_000007")
    assert store.append_turn(turn, ended=ended) is False
    stored = store.get_chat(chat)
    assert stored is not None
    assert (stored.active_run_id, stored.updated) == (None, ended.ended)
    assert store.get_run("run_000007") == ended
    # Stored once more, ended again, with the chat touched later meanwhile: never back.
    store.touch_chat(chat, now=iso(100), active_run_id="run_000007")
    assert store.append_turn(turn, ended=ended) is False
    stored = store.get_chat(chat)
    assert stored is not None
    assert (stored.active_run_id, stored.updated) == (None, iso(100))


def test_a_turn_with_another_runs_end_is_refused(store: Store, chat: str) -> None:
    turn = replace(make_turn(7, chat_id=chat), run_id="run_000007")
    with pytest.raises(ValueError, match="is not the run of turn"):
        store.append_turn(turn, ended=make_run(8, chat_id=chat, run_id="run_000008"))
    assert store.list_turns(chat) == []
