"""A real run's waits and notices as steps (issue 18): ``toolcaller@v5`` under the
``writes`` approval policy through the run manager (a real agent kernel, the scripted fake
model, the real driver), read back from its effect log as ``GET agent/runs/{id}`` does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.cli.render import render_show
from jupyter_agent.core.events.steps import ApprovalStep, CellStep, NoticeStep
from jupyter_agent.trace.cells_view import build_view
from jupyter_agent.trace.notebook import run_notebook
from jupyter_agent.trace.show import show_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness
from tests.trace.logs_support import without_setup

pytestmark = pytest.mark.timeout(120)

WRITE = "open('out.txt', 'w').write(str(n))"
NOTICE = "Proposal p1 was applied."


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    harness.ceilings = {"approval": "writes"}
    harness.recall = {"enabled": False, "k": 5, "budget_tokens": 800, "threshold": 0.3}
    yield harness
    await close_harness(harness)


async def test_a_run_under_writes_has_its_wait_and_notice_as_steps(
    agent: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    agent.fake.load(
        [
            {"cells": ["n = 3"]},
            {"cells": [WRITE], "writes": True},
            {"expect": {"last_user_contains": f"[notice] {NOTICE}"}, "text": "Written."},
        ]
    )
    chat = agent.new_chat()
    run_id = (await agent.manager.send(chat, text="write it"))["run_id"]
    approval = await agent.wait_event(chat, "approval")
    await agent.manager.notify(chat, NOTICE)
    agent.manager.services.approvals.decide(run_id, approval["approval_id"], approve=True)
    turn = await agent.finish(run_id)
    assert final_text(turn) == "Written."

    view = build_view(agent.trace(run_id))
    shown = [s for s in view.steps if s.type not in ("model_call",)]
    assert [s.type for s in shown] == ["user", "cell", "approval", "cell", "notice", "reply"]
    wait = shown[2]
    assert isinstance(wait, ApprovalStep)
    assert (wait.approval_id, wait.kind, wait.code) == (approval["approval_id"], "cell", WRITE)
    assert wait.summary == approval["summary"]
    assert (wait.status, wait.approve, wait.rest, wait.by, wait.parent) == (
        "ok",
        True,
        False,
        "person",
        None,
    )
    cell = shown[3]
    assert isinstance(cell, CellStep)
    assert (cell.cell_id, cell.code) == ("c2", WRITE)
    notice = shown[4]
    assert isinstance(notice, NoticeStep)
    assert notice.text == NOTICE
    assert notice.at

    body = show_run(agent.trace(run_id))  # the steps of GET agent/runs/{id}
    assert [s["type"] for s in body["steps"] if s["type"] != "model_call"] == [
        s.type for s in shown
    ]
    render_show(body)
    out = capsys.readouterr().out.splitlines()
    assert f"#{wait.seq} approval (cell c2): approved by the person" in out
    assert f"    {NOTICE}" in out

    nb = without_setup(run_notebook(agent.trace(run_id)))
    nbformat.validate(nb)
    kinds = [c.metadata["jupyter_agent"]["kind"] for c in nb.cells]
    assert kinds == ["user", "python", "approval", "python", "notice", "reply"]
    assert nb.cells[2].id == "c1-md1"
    assert nb.cells[2].source.endswith("Outcome: approved by the person.")
