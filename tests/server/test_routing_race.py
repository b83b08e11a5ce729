"""The answer to a message names the run whose turn holds it, whatever the timing.

Messages are sent through the real route at the moments that used to go wrong: right
after the previous turn is stored (the run has not ended yet), right after the final
reply event, while the model is answering, and in bursts. Every answer's ``run_id`` must
be the run whose turn holds that message (as ``userText`` or in ``steering``), and every
message must be in exactly one turn.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.server.helpers import active_runs, call, new_chat

SENDS = 50


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    # A short delay keeps the model call in flight long enough for some sends to land in it.
    return fake_provider({"steps": [{"delay_s": 0.01, "text": "noted"}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def _send(fetch: Any, chat_id: str, text: str) -> dict[str, Any]:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    return dict(answer)


def _spin_until(spin: Callable[[float], None], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        spin(0.001)


def test_every_answer_names_the_run_that_holds_its_message(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    store, events = agent_service.store, agent_service.events
    chat_id = new_chat(fetch)
    answers: list[tuple[str, dict[str, Any]]] = []
    for i in range(SENDS):
        text = f"message {i}"
        answers.append((text, _send(fetch, chat_id, text)))
        mode = i % 4
        if mode == 0:  # the previous turn is stored: the run is between its turn and its end
            n = len(store.list_turns(chat_id))
            _spin_until(spin, lambda n=n: len(store.list_turns(chat_id)) > n, "a turn")
        elif mode == 1:  # the final reply is out: the run is closing
            # By seq, not by count: the bus lets ended runs' events go past its tail, so
            # the count of kept replies may stay the same as a new one comes.
            seen = max([0, *(e["seq"] for e in events.since(chat_id, 0) if e["type"] == "reply")])
            _spin_until(
                spin,
                lambda seen=seen: any(e["type"] == "reply" for e in events.since(chat_id, seen)),
                "a reply",
            )
        elif mode == 2:  # the model is answering
            asked = len(fake.requests)
            _spin_until(spin, lambda asked=asked: len(fake.requests) > asked, "a model call")
        # mode 3: the next message follows at once (a burst of two)

    _spin_until(
        spin,
        lambda: (
            agent_service.manager.active_run_id(chat_id) is None
            and not active_runs(agent_service.manager)
        ),
        "the last run to end",
    )
    turns = {t.run_id: t for t in store.list_turns(chat_id)}
    held: dict[str, int] = {}
    for turn in turns.values():
        for text in [turn.user_text, *(s.text for s in turn.steering)]:
            held[text] = held.get(text, 0) + 1
    for text, answer in answers:
        assert answer["routed"] in ("run", "mailbox"), answer
        turn = turns.get(answer["run_id"])
        assert turn is not None, f"{text!r} was answered with {answer} which has no turn"
        in_turn = [turn.user_text, *(s.text for s in turn.steering)]
        assert text in in_turn, f"{text!r} answered {answer} but that turn holds {in_turn}"
        assert held[text] == 1, f"{text!r} is in {held[text]} turns"
    # Every turn answered what it holds: its last reply is final.
    for turn in turns.values():
        assert turn.replies, turn
        assert turn.replies[-1].done, turn
    # The panel's view of it: each message shown once (userText or steering) over the chat.
    _, chat = call(fetch, "agent", "chats", chat_id)
    shown = [t["userText"] for t in chat["turns"]] + [
        s["text"] for t in chat["turns"] for s in t["steering"]
    ]
    assert sorted(shown) == sorted(text for text, _ in answers)
