"""Nothing acknowledged is lost: the durable mailbox, turn writes through a locked store,
recovery of a run's turn from its log, and queued mail starting runs after a restart.

A "restart" here is a second run manager on the same database and runs folder, the first
one abandoned mid-run (as a killed server leaves them); tests/faults does the same with a
real server and SIGKILL.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.runs.parts import RunServices
from jupyter_agent.trace.log import EffectLog
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


def restarted(agent: Harness) -> RunManager:
    """A second manager on the same store and runs folder, with a fresh (empty) mailbox."""
    old = agent.manager.services
    services = RunServices(
        transport=old.transport,
        pool=old.pool,
        store=old.store,
        mailbox=Mailbox(),
        events=old.events,
        root_dir=old.root_dir,
    )
    return RunManager(services=services, run_config=agent.config, runs_dir=agent.root / "runs")


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another process's write transaction on the database (until ``rollback``)."""
    holder = sqlite3.connect(path, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")
    return holder


async def test_a_message_is_stored_before_it_is_acknowledged(agent: Harness) -> None:
    agent.fake.load([{"text": "ok", "delay_s": 1.5}, {"text": "second"}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="one")
    # The opening message is in the durable mailbox from the acknowledgement on.
    assert [m["id"] for m in agent.store.queued_mail(chat)] == [first["message_id"]]
    steer = await agent.manager.send(chat, text="two")
    assert steer["routed"] == "mailbox"
    queued = [m["id"] for m in agent.store.queued_mail(chat)]
    assert queued == [first["message_id"], steer["message_id"]]
    turn = await agent.finish(first["run_id"])
    # The turn holds both, and the mailbox forgot them with it.
    assert turn.user_text == "one"
    assert [s.text for s in turn.steering] == ["two"]
    assert agent.store.queued_mail(chat) == []


async def test_a_locked_store_refuses_a_message_and_leaves_nothing(agent: Harness) -> None:
    chat = agent.new_chat()
    holder = hold_write_lock(agent.root / "agent.sqlite")
    try:
        with pytest.raises(StoreUnavailable, match="locked"):
            await agent.manager.send(chat, text="hello")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert agent.manager.active_run_id(chat) is None
    assert list((agent.root / "runs").glob("*.jsonl")) == []
    assert agent.store.list_runs()[0] == []
    assert agent.store.queued_mail() == []
    agent.fake.load([{"text": "back"}])
    turn = await agent.ask(chat, "hello again")
    assert final_text(turn) == "back"


async def test_a_lock_spanning_a_runs_end_delays_its_turn_but_never_loses_it(
    agent: Harness,
) -> None:
    agent.fake.load([{"text": "reply", "delay_s": 0.5}, {"text": "next"}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="write me")
    holder = hold_write_lock(agent.root / "agent.sqlite")
    try:
        await agent.wait_event(chat, "reply")
        # Longer than the 5 s busy timeout: the turn write fails, then is retried.
        await asyncio.sleep(7)
        assert agent.manager.active_run_id(chat) == run["run_id"]  # not ended without it
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    turn = await agent.finish(run["run_id"])
    assert final_text(turn) == "reply"
    summary = agent.store.get_run(run["run_id"])
    assert summary is not None
    assert summary.status == "done"
    assert agent.store.queued_mail() == []
    assert final_text(await agent.ask(chat, "and now")) == "next"


async def test_store_calls_do_not_block_the_event_loop(agent: Harness) -> None:
    chat = agent.new_chat()
    holder = hold_write_lock(agent.root / "agent.sqlite")
    ticks: list[float] = []

    async def tick() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.05)

    ticker = asyncio.ensure_future(tick())
    try:
        with pytest.raises(StoreUnavailable):
            await agent.manager.send(chat, text="blocked")  # waits ~5 s on the lock
    finally:
        ticker.cancel()
        holder.execute("ROLLBACK")
        holder.close()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(ticks) > 20
    assert max(gaps) < 2.0, max(gaps)


async def test_queued_mail_starts_a_run_after_a_restart(agent: Harness) -> None:
    """A message acknowledged into a run's mailbox, the server dead before the run took
    it: after the restart the crashed run is recovered and the message gets its own run."""
    agent.fake.load([{"cells": ["import time; time.sleep(30)"]}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="slow one")
    await agent.wait_event(chat, "cell_start")
    steer = await agent.manager.send(chat, text="do not lose me")
    assert steer["routed"] == "mailbox"
    # The server "dies" here: this manager is abandoned, its run never ends.
    second = restarted(agent)
    agent.fake.load([{"text": "got it"}])
    recovered = await second.recover()
    assert recovered == [first["run_id"]]
    crashed = agent.store.get_run(first["run_id"])
    assert crashed is not None
    assert (crashed.status, crashed.stop_reason, crashed.end_cause) == (
        "interrupted",
        "error",
        "restart",
    )
    crashed_turn = agent.store.get_turn_by_run(first["run_id"])
    assert crashed_turn is not None
    assert crashed_turn.user_text == "slow one"
    new_run = second.active_run_id(chat)
    assert new_run is not None
    assert new_run != first["run_id"]
    await asyncio.wait_for(second.wait(new_run), 60)
    turn = agent.store.get_turn_by_run(new_run)
    assert turn is not None
    assert turn.user_text == "do not lose me"
    assert final_text(turn) == "got it"
    assert agent.store.queued_mail() == []
    await agent.manager.shutdown()  # the abandoned run: stop its kernel cell


async def test_steering_a_crashed_run_took_is_in_its_recovered_turn(agent: Harness) -> None:
    agent.fake.load(
        [{"cells": ["import time; time.sleep(1)"]}, {"cells": ["import time; time.sleep(30)"]}]
    )
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="start")
    await agent.wait_event(chat, "cell_start")
    await agent.manager.send(chat, text="steer while the first cell runs")
    await agent.wait_requests(2)  # the second model call read the steering message
    second = restarted(agent)
    await second.recover()
    turn = agent.store.get_turn_by_run(first["run_id"])
    assert turn is not None
    assert turn.user_text == "start"
    assert [s.text for s in turn.steering] == ["steer while the first cell runs"]
    assert agent.store.queued_mail() == []  # held by the recovered turn: no new run
    assert second.active_run_id(chat) is None
    await agent.manager.shutdown()


async def test_recovery_writes_the_turn_the_log_holds(agent: Harness) -> None:
    """A run that finished while the store refused its turn (and the server then stopped):
    the next start writes the loop's own turn from the log, not a minimal one."""
    agent.fake.load([{"text": "the real answer"}])
    chat = agent.new_chat()
    original = agent.store.append_turn

    def refuse(*args: Any, **kw: Any) -> Any:
        raise StoreUnavailable("database is locked (test)")

    agent.store.append_turn = refuse  # type: ignore[method-assign]
    run = await agent.manager.send(chat, text="question")
    await agent.wait_event(chat, "reply")
    await asyncio.sleep(0.5)
    await agent.manager.shutdown()  # the write retries stop; the log keeps the turn
    agent.store.append_turn = original  # type: ignore[method-assign]
    assert agent.store.get_turn_by_run(run["run_id"]) is None
    recovered = await restarted(agent).recover()
    assert run["run_id"] in recovered
    turn = agent.store.get_turn_by_run(run["run_id"])
    assert turn is not None
    assert final_text(turn) == "the real answer"
    assert turn.llm.stop_reason == "done"
    assert not turn.interrupted
    summary = agent.store.get_run(run["run_id"])
    assert summary is not None
    assert summary.status == "done"
    assert agent.store.queued_mail() == []


async def test_a_message_stored_with_a_run_that_never_logged_is_not_lost(agent: Harness) -> None:
    """The server died between storing a run's opening message and its first drain."""
    chat = agent.new_chat()
    run_id, started = new_id("run"), now_iso()
    item = {"kind": "message", "text": "early", "at": started, "id": new_id("msg")}
    summary = RunSummary(
        run_id=run_id, chat_id=chat, program="toolcaller@v1", status="running", started=started
    )
    agent.store.open_run(summary, message=item)
    EffectLog.create(agent.manager.log_path(run_id), {"run_id": run_id, "chat_id": chat}).close()
    agent.fake.load([{"text": "answered"}])
    second = restarted(agent)
    assert await second.recover() == [run_id]
    new_run = second.active_run_id(chat)
    assert new_run is not None
    await asyncio.wait_for(second.wait(new_run), 60)
    turn = agent.store.get_turn_by_run(new_run)
    assert turn is not None
    assert turn.user_text == "early"
    assert final_text(turn) == "answered"
    assert agent.store.queued_mail() == []
    await second.shutdown()


async def test_mail_a_hard_break_takes_is_kept_until_a_turn_holds_it(agent: Harness) -> None:
    agent.fake.load([{"text": "one", "delay_s": 1.0}, {"text": "two"}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="first")
    await agent.wait_requests(1)
    second = await agent.manager.send(chat, text="second")
    assert second["routed"] == "mailbox"
    await agent.manager.break_run(first["run_id"], hard=True)
    await agent.finish(first["run_id"])
    deadline = time.monotonic() + 60
    while agent.manager.active_run_id(chat) is not None or agent.store.queued_mail():
        assert time.monotonic() < deadline, agent.store.queued_mail()
        await asyncio.sleep(0.05)
    turns = agent.store.list_turns(chat)
    held = [t.user_text for t in turns] + [s.text for t in turns for s in t.steering]
    assert sorted(held) == ["first", "second"]


async def test_a_message_to_a_deleted_chat_is_refused_and_not_kept(agent: Harness) -> None:
    from jupyter_agent.exceptions import NotFound

    chat = agent.new_chat()
    agent.store.delete_chat(chat)
    with pytest.raises(NotFound, match="no chat"):
        await agent.manager.send(chat, text="anyone?")
    assert agent.store.queued_mail() == []
    assert agent.store.list_runs()[0] == []


async def test_recovery_goes_on_past_a_run_of_a_deleted_chat(agent: Harness) -> None:
    gone, kept = agent.new_chat(), agent.new_chat()
    for run_id, chat in (("run_A", gone), ("run_B", kept)):
        agent.store.upsert_run(
            RunSummary(
                run_id=run_id,
                chat_id=chat,
                program="toolcaller@v2",
                status="running",
                started=now_iso(),
            )
        )
    agent.store.delete_chat(gone)
    assert sorted(await restarted(agent).recover()) == ["run_A", "run_B"]
    for run_id in ("run_A", "run_B"):
        summary = agent.store.get_run(run_id)
        assert summary is not None
        assert summary.status == "interrupted"
    assert agent.store.get_turn_by_run("run_B") is not None
