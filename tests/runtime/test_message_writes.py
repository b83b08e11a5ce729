"""The writes a message makes before its acknowledgement: committed in groups across chats
(each sender its own answer), a chat's messages in order, and a run whose effect log is
created after the acknowledgement: recovered when the server died before it existed,
ended ``error`` (holding its messages) when it cannot be created.

Real parts: a SQLite store, the run manager, the fake provider over loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.exceptions import NotFound, StoreError, StoreUnavailable
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.runs.mailbox import MessageItem
from jupyter_agent.runtime.runs.opening import MessageWrites, open_run
from jupyter_agent.store.repo import MessageWrite
from jupyter_agent.trace.log import EffectLog
from tests.runtime.harness import Harness, close_harness, final_text, make_harness
from tests.runtime.test_durability import hold_write_lock, restarted

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


def _item(text: str, msg_id: str | None = None) -> dict[str, Any]:
    return {"kind": "message", "text": text, "at": now_iso(), "id": msg_id or new_id("msg")}


async def test_a_failing_write_fails_only_its_own_sender(agent: Harness) -> None:
    chats = [agent.new_chat() for _ in range(4)]
    taken = _item("first")
    assert agent.store.accept_message(chats[0], taken)
    writes = MessageWrites(agent.store)
    group = [
        MessageWrite(chat_id=chats[0], item=_item("a")),
        MessageWrite(chat_id=chats[1], item=taken),  # a duplicate id: the database refuses it
        MessageWrite(chat_id=chats[2], item=_item("c")),
        MessageWrite(chat_id="chat_gone", item=_item("d")),
    ]
    answers = await asyncio.gather(*(writes.write(w) for w in group), return_exceptions=True)
    assert answers[0] is True
    assert answers[2] is True
    assert isinstance(answers[1], StoreError)
    assert answers[3] is False  # no such chat: nothing of it stored
    # One group transaction (refused), then one each.
    assert writes.commits == 1 + 4
    queued = {m["text"]: m["chat_id"] for m in agent.store.queued_mail()}
    assert queued == {"first": chats[0], "a": chats[0], "c": chats[2]}


async def test_one_commit_for_messages_of_several_chats_each_answered(agent: Harness) -> None:
    agent.fake.load({"steps": [{"text": "ok"}], "repeat": True})
    chats = [agent.new_chat() for _ in range(8)]
    gone = chats[5]
    agent.store.delete_chat(gone)  # deleted meanwhile: its sender alone gets NotFound
    before = agent.manager.writes.commits
    answers = await asyncio.gather(
        *(agent.manager.send(c, text=f"hello {i}") for i, c in enumerate(chats)),
        return_exceptions=True,
    )
    assert isinstance(answers[5], NotFound)
    assert agent.manager.writes.commits - before < 7
    for i, (chat, answer) in enumerate(zip(chats, answers, strict=True)):
        if chat == gone:
            continue
        assert isinstance(answer, dict)
        assert answer["routed"] == "run"
        turn = await agent.finish(answer["run_id"])
        assert turn.user_text == f"hello {i}"
        assert final_text(turn) == "ok"
    assert agent.store.queued_mail() == []
    assert [r.chat_id for r in agent.store.list_runs()[0]].count(gone) == 0
    assert agent.manager.active_run_id(gone) is None


async def test_a_chats_messages_sent_at_once_keep_their_order(agent: Harness) -> None:
    chat, other = agent.new_chat(), agent.new_chat()
    agent.fake.load({"steps": [{"text": "done", "delay_s": 0.5}], "repeat": True})
    sends = [agent.manager.send(chat, text=t) for t in ("one", "two", "three")]
    answers = await asyncio.gather(*sends, agent.manager.send(other, text="elsewhere"))
    assert [a["routed"] for a in answers[:3]] == ["run", "mailbox", "mailbox"]
    turn = await agent.finish(answers[0]["run_id"])
    assert turn.user_text == "one"
    assert [s.text for s in turn.steering] == ["two", "three"]
    await agent.finish(answers[3]["run_id"])


async def test_a_run_acknowledged_but_never_logged_is_recovered(agent: Harness) -> None:
    """The server died after the 202, before the run created its log: what the store
    holds then is exactly what the message's write stored."""
    chat = agent.new_chat()
    item = MessageItem(text="early", at=now_iso(), id=new_id("msg"))
    manager = agent.manager
    opening = await open_run(
        manager.services,
        agent.config(),
        manager.log_path,
        chat,
        [item],
        writes=manager.writes,
        new=item,
    )
    run_id = opening.summary.run_id
    assert not manager.log_path(run_id).exists()
    assert agent.store.get_chat(chat).active_run_id == run_id  # type: ignore[union-attr]
    agent.fake.load([{"text": "answered"}])
    second = restarted(agent)
    assert await second.recover() == [run_id]
    summary = agent.store.get_run(run_id)
    assert summary is not None
    assert (summary.status, summary.stop_reason) == ("interrupted", "error")
    new_run = second.active_run_id(chat)
    assert new_run is not None
    assert new_run != run_id
    await asyncio.wait_for(second.wait(new_run), 60)
    turn = agent.store.get_turn_by_run(new_run)
    assert turn is not None
    assert (turn.user_text, final_text(turn)) == ("early", "answered")
    assert agent.store.queued_mail() == []
    await second.shutdown()


async def test_a_log_that_cannot_be_created_ends_its_run_holding_its_messages(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = EffectLog.open
    failing = {"left": 1}

    def open_(log: EffectLog) -> None:
        if failing["left"]:
            failing["left"] -= 1
            raise OSError(28, "No space left on device")
        real(log)

    monkeypatch.setattr(EffectLog, "open", open_)
    chat = agent.new_chat()
    answer = await agent.manager.send(chat, text="into the void")
    assert answer["routed"] == "run"  # acknowledged: the message is durable
    turn = await agent.finish(answer["run_id"])
    assert turn.user_text == "into the void"
    assert turn.interrupted
    summary = agent.store.get_run(answer["run_id"])
    assert summary is not None
    assert summary.status == "error"
    assert agent.manager.active_run_id(chat) is None  # no run after a failing run
    assert agent.store.queued_mail() == []
    assert not agent.manager.log_path(answer["run_id"]).exists()
    agent.fake.load([{"text": "back"}])
    assert final_text(await agent.ask(chat, "and now")) == "back"


async def test_a_locked_store_fails_a_group_at_once(agent: Harness) -> None:
    """Unavailable is no one write's fault: every sender gets it after one try, not one
    busy timeout each."""
    chats = [agent.new_chat() for _ in range(3)]
    writes = MessageWrites(agent.store)
    holder = hold_write_lock(agent.root / "agent.sqlite")
    try:
        group = [MessageWrite(chat_id=c, item=_item("locked out")) for c in chats]
        answers = await asyncio.gather(*(writes.write(w) for w in group), return_exceptions=True)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert all(isinstance(a, StoreUnavailable) for a in answers), answers
    assert writes.commits == 1
    assert agent.store.queued_mail() == []
