"""Approvals and notices through the run manager (``toolcaller@v5`` and later): a real agent kernel,
the scripted fake model, the real driver and its ``approval.wait`` performer.

A wait publishes ``approval`` and nothing runs until the person answers (here through the
registry's :meth:`decide`, as the REST handler does); ``approval_end`` closes it. Breaks
end a wait (hard: cancelled, the run ends ``break_hard``; soft: answered at once, the
run ends at its next drain), and a wait counts against ``max_wall_s``. Every run replays
identically from its log (the decisions are in it). Notices reach the next v5 drain (or
the next run's opening one), never start a run, and a v4 run leaves them queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.loop.approval import REFUSAL
from jupyter_agent.exceptions import ApprovalDecided, NotFound
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.ceilings = {"approval": "every_cell"}
    harness.recall = {"enabled": False, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    yield harness
    await close_harness(harness)


def types(agent: Harness, chat_id: str) -> list[str]:
    return [e["type"] for e in agent.events.since(chat_id, 0)]


def events(agent: Harness, chat_id: str, type_: str) -> list[dict[str, Any]]:
    return [e for e in agent.events.since(chat_id, 0) if e["type"] == type_]


async def start(agent: Harness, text: str) -> tuple[str, str, dict[str, Any]]:
    """Send ``text`` in a new chat; wait for the run's first approval event."""
    chat = agent.new_chat()
    answer = await agent.manager.send(chat, text=text)
    return chat, answer["run_id"], await agent.wait_event(chat, "approval")


def replays(agent: Harness, run_id: str) -> None:
    outcome = verify_run(agent.manager.log_path(run_id))
    assert outcome.identical, outcome.message


def decide(agent: Harness, run_id: str, approval: dict[str, Any], **kw: Any) -> None:
    agent.manager.services.approvals.decide(run_id, approval["approval_id"], **kw)


async def test_every_cell_waits_and_runs_only_after_approval(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["print(6 * 7)"]},
            {"expect": {"last_user_contains": "42"}, "text": "It is 42."},
        ]
    )
    chat, run_id, approval = await start(agent, "what is 6 * 7?")
    assert approval["kind"] == "cell"
    assert approval["code"] == "print(6 * 7)"
    assert approval["summary"] == "Run the cell: print(6 * 7)"
    await asyncio.sleep(0.2)
    assert "cell_start" not in types(agent, chat)  # nothing runs while it waits
    assert agent.manager.services.approvals.pending(run_id) == [approval["approval_id"]]
    decide(agent, run_id, approval, approve=True)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "It is 42."
    assert turn.llm.cells == 1
    seen = types(agent, chat)
    assert seen.index("approval") < seen.index("approval_end") < seen.index("cell_start")
    assert events(agent, chat, "approval_end")[0]["approve"] is True
    wait = [ln for ln in agent.trace(run_id).lines if ln.name == "approval.wait"]
    assert [ln.phase for ln in wait] == ["intent", "result"]
    assert wait[0].data["timeout_s"] > 800
    assert wait[1].data == {"approve": True, "rest": False, "by": "person"}
    with pytest.raises(ApprovalDecided):
        decide(agent, run_id, approval, approve=False)
    with pytest.raises(NotFound):
        agent.manager.services.approvals.decide(run_id, "appr_nope", approve=True)
    replays(agent, run_id)


async def test_a_denied_cell_reaches_the_model_as_a_refusal(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["import shutil; shutil.rmtree('data')"]},
            {"expect": {"last_user_contains": REFUSAL}, "text": "Understood, I left it."},
        ]
    )
    chat, run_id, approval = await start(agent, "clean up")
    decide(agent, run_id, approval, approve=False)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "Understood, I left it."
    assert turn.llm.cells == 0
    assert "cell_start" not in types(agent, chat)
    assert events(agent, chat, "approval_end")[0]["approve"] is False
    replays(agent, run_id)


async def test_approve_the_rest_skips_the_later_waits(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["x = 20"]},
            {"cells": ["print(x + 1)"], "bash": ["echo ok"]},
            {"expect": {"last_user_contains": "ok"}, "text": "Done."},
        ]
    )
    chat, run_id, approval = await start(agent, "go")
    decide(agent, run_id, approval, approve=True, rest=True)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "Done."
    assert turn.llm.cells == 3
    assert len(events(agent, chat, "approval")) == 1
    replays(agent, run_id)


async def test_the_writes_policy_waits_only_for_writing_cells(agent: Harness) -> None:
    agent.ceilings = {"approval": "writes"}
    agent.fake.load(
        [
            {"cells": ["n = 3"]},
            {"cells": ["open('out.txt', 'w').write(str(n))"], "writes": True},
            {"text": "Written."},
        ]
    )
    chat, run_id, approval = await start(agent, "write it")
    assert approval["code"] == "open('out.txt', 'w').write(str(n))"
    assert len(events(agent, chat, "cell_start")) == 1  # the first cell did not wait
    decide(agent, run_id, approval, approve=True)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "Written."
    assert (agent.root / "out.txt").read_text() == "3"
    replays(agent, run_id)


async def test_a_hard_break_during_a_wait_ends_the_run_break_hard(agent: Harness) -> None:
    agent.fake.load([{"cells": ["print(1)"]}, {"text": "never"}])
    chat, run_id, approval = await start(agent, "go")
    assert await agent.manager.break_run(run_id, hard=True) == "breaking"
    turn = await agent.finish(run_id)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("break_hard", "break_hard")
    assert turn.llm.cells == 0
    assert events(agent, chat, "approval_end")[0]["approve"] is False
    assert agent.manager.services.approvals.pending(run_id) == []
    with pytest.raises(ApprovalDecided):  # the wait ended: a late answer is refused
        decide(agent, run_id, approval, approve=True)
    replays(agent, run_id)


async def test_a_soft_break_answers_the_wait_and_the_run_ends(agent: Harness) -> None:
    agent.fake.load([{"cells": ["print(1)"]}, {"text": "Stopped as asked."}])
    _chat, run_id, _approval = await start(agent, "go")
    await agent.manager.break_run(run_id, hard=False)
    turn = await agent.finish(run_id, timeout_s=20)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "break_soft")
    assert final_text(turn) == "Stopped as asked."
    assert turn.llm.cells == 0
    result = [ln for ln in agent.trace(run_id).lines if ln.name == "approval.wait"][-1]
    assert result.data == {"approve": False, "rest": False, "by": "break"}
    replays(agent, run_id)


async def test_a_wait_counts_against_the_wall_time(agent: Harness) -> None:
    agent.ceilings = {"approval": "every_cell", "max_wall_s": 1.5}
    agent.fake.load([{"cells": ["print(1)"]}, {"text": "Out of time; nothing ran."}])
    _chat, run_id, _approval = await start(agent, "go")
    assert (
        0
        < next(ln for ln in agent.trace(run_id).lines if ln.name == "approval.wait").data[
            "timeout_s"
        ]
        <= 1.5
    )
    turn = await agent.finish(run_id, timeout_s=20)  # nobody answers
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "ceiling:wall_s")
    assert final_text(turn) == "Out of time; nothing ran."
    assert turn.llm.cells == 0
    result = [ln for ln in agent.trace(run_id).lines if ln.name == "approval.wait"][-1]
    assert result.data["by"] == "timeout"
    replays(agent, run_id)


# --- notices ------------------------------------------------------------------------------


async def test_a_notice_reaches_the_running_turn_at_its_next_drain(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["print(1)"]},
            {"expect": {"last_user_contains": "[notice] Proposal p1 was applied."}, "text": "Ok."},
        ]
    )
    chat, run_id, approval = await start(agent, "go")
    await agent.manager.notify(chat, "Proposal p1 was applied.")
    queued = [i["kind"] for i in agent.store.queued_mail(chat)]
    assert queued == ["message", "notice"]  # durable before it is delivered
    decide(agent, run_id, approval, approve=True)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "Ok."
    assert [s.text for s in turn.steering] == ["[notice] Proposal p1 was applied."]
    assert agent.store.queued_mail(chat) == []  # the turn holds it: never again
    replays(agent, run_id)


async def test_a_notice_after_a_run_waits_for_the_next_one_and_starts_none(
    agent: Harness,
) -> None:
    agent.ceilings = {}
    agent.fake.load([{"text": "First."}, {"text": "Second."}])
    chat = agent.new_chat()
    first = await agent.ask(chat, "one")
    assert final_text(first) == "First."
    await agent.manager.notify(chat, "Proposal p2 was discarded.")
    await asyncio.sleep(0.3)
    assert agent.manager.active_run_id(chat) is None  # a notice starts no run
    assert len(agent.fake.requests) == 1
    second = await agent.ask(chat, "two")
    assert final_text(second) == "Second."
    assert "[notice] Proposal p2 was discarded." in str(agent.fake.requests[-1])
    assert [s.text for s in second.steering] == ["[notice] Proposal p2 was discarded."]
    assert second.user_text == "two"
    assert agent.store.queued_mail(chat) == []
    replays(agent, second.run_id)


class V4Only:
    """A registry whose toolcaller is ``toolcaller@v4`` (a layer pinned to it)."""

    def resolve(self, agent: str, family: str) -> RunProgram:
        return RunProgram.of_builtin("toolcaller@v4" if family == "toolcaller" else family)

    def load(self, ref: Any) -> RunProgram:
        return RunProgram.of_builtin(ref.key)


async def test_a_v4_run_leaves_notices_queued_for_a_v5_run(agent: Harness) -> None:
    agent.ceilings = {}
    agent.fake.load([{"text": "Old."}, {"text": "New."}])
    chat = agent.new_chat()
    await agent.manager.notify(chat, "Proposal p3 was applied.")
    agent.manager.services.programs = V4Only()
    old = await agent.ask(chat, "one")
    assert final_text(old) == "Old."
    assert "[notice]" not in str(agent.fake.requests[-1])
    assert old.steering == ()
    assert [i["kind"] for i in agent.store.queued_mail(chat)] == ["notice"]  # not lost
    drains = [ln for ln in agent.trace(old.run_id).lines if ln.name == "mailbox.drain"]
    assert all(ln.data == {} for ln in drains if ln.phase == "intent")
    agent.manager.services.programs = None  # the default again: v5
    new = await agent.ask(chat, "two")
    assert final_text(new) == "New."
    assert [s.text for s in new.steering] == ["[notice] Proposal p3 was applied."]
    assert agent.store.queued_mail(chat) == []
    replays(agent, old.run_id)
    replays(agent, new.run_id)


async def test_a_soft_break_while_the_model_thinks_asks_nobody(agent: Harness) -> None:
    # The break lands before the wait opens (the model is still answering): the person asked
    # the run to stop, so the wait must not block for them; it is answered by the break.
    agent.fake.load([{"cells": ["print(1)"], "delay_s": 1.0}, {"text": "Stopped as asked."}])
    chat = agent.new_chat()
    run_id = (await agent.manager.send(chat, text="go"))["run_id"]
    await asyncio.sleep(0.5)
    assert await agent.manager.break_run(run_id, hard=False) == "breaking"
    turn = await agent.finish(run_id, timeout_s=10)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "break_soft")
    assert turn.llm.cells == 0
    assert events(agent, chat, "approval") == []  # never asked
    result = [ln for ln in agent.trace(run_id).lines if ln.name == "approval.wait"][-1]
    assert result.data == {"approve": False, "rest": False, "by": "break"}
    replays(agent, run_id)


async def test_an_approval_decided_as_a_hard_break_lands_runs_nothing(agent: Harness) -> None:
    agent.fake.load([{"cells": ["print('ran')"]}, {"text": "never"}])
    chat, run_id, approval = await start(agent, "go")
    decide(agent, run_id, approval, approve=True)  # same tick: no await in between
    assert await agent.manager.break_run(run_id, hard=True) == "breaking"
    turn = await agent.finish(run_id)
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("break_hard", "break_hard")
    # Whichever won, nothing ran: the wait was cut, or its approval is followed by a
    # cell.run the break answers as cancelled without performing it.
    runs = [ln for ln in agent.trace(run_id).lines if ln.name == "cell.run"]
    assert all(ln.data == {"cancelled": "break_hard"} for ln in runs if ln.phase == "result")
    assert "cell_start" not in types(agent, chat)
    assert len(events(agent, chat, "approval_end")) == 1
    replays(agent, run_id)
