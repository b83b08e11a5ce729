"""Waits for the person and notices as steps (issue 18): ``approval.wait`` (top level and
nested under an MCP ``app.call``) and mailbox ``notice`` items, from hand-written logs,
through ``build_view``, ``show_run``, ``trace show`` and the notebook export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.cli.render import render_show
from jupyter_agent.codec import dump_dict, load
from jupyter_agent.core.events.steps import ApprovalStep, NoticeStep, Step
from jupyter_agent.effects import Effect
from jupyter_agent.trace.cells_view import build_view
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.notebook import run_notebook
from jupyter_agent.trace.show import show_run
from tests.trace.logs_support import (
    LogWriter,
    anthropic_request,
    fixture,
    reply,
    simple_cell,
    without_setup,
)

AT = "2025-03-01T10:00:05.000Z"


def wait_data(approval_id: str, kind: str, code: str) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "kind": kind,
        "code": code,
        "summary": f"Run the {kind}: {code}",
        "timeout_s": 100.0,
    }


def answer(approve: bool, by: str = "person", rest: bool = False) -> dict[str, Any]:
    return {"approve": approve, "rest": rest, "by": by}


def write_waits(path: Path) -> dict[str, int]:
    """A run whose cell waits and is approved, whose next cell is denied, whose command
    times out, whose approved cell makes an MCP call that waits (nested), with a notice in
    a drain and another in a held reply's deferred items."""
    w = LogWriter(path)
    w.opening()
    seqs: dict[str, int] = {}
    w.effect("http.post", anthropic_request(), reply(fixture("anthropic_tool_use.json")))
    seqs["a1"] = w.effect("approval.wait", wait_data("apr_1", "cell", "x = 1"), answer(True))
    seqs["c1"] = w.cell("c1", "x = 1", simple_cell("c1"))
    seqs["a2"] = w.effect("approval.wait", wait_data("apr_2", "cell", "rm -rf x"), answer(False))
    seqs["a3"] = w.effect(
        "approval.wait", wait_data("apr_3", "bash", "ls"), answer(False, by="timeout")
    )
    notice = {"kind": "notice", "text": "The proposal was applied.", "at": AT}
    seqs["drain"] = w.effect("mailbox.drain", {"notices": True}, [notice])
    seqs["a4"] = w.effect(
        "approval.wait", wait_data("apr_4", "cell", "mcp.fs.write()"), answer(True, rest=True)
    )
    cell = w.log.intent(
        Effect(name="cell.run", data={"cell_id": "c2", "code": "mcp.fs.write()", "timeout_s": 9})
    )
    app = w.log.intent(
        Effect(name="app.call", data={"app": "mcp", "method": "fs.write", "args": {}}, parent=cell)
    )
    code = 'fs.write(path="a.txt")'
    seqs["nested"] = w.effect(
        "approval.wait", wait_data("apr_5", "mcp", code), answer(False, by="break"), parent=app
    )
    w.log.result(app, "app.call", {"value": None})
    w.log.result(cell, "cell.run", simple_cell("c2").to_json())
    seqs["c2"], seqs["app"] = cell, app
    late = {"kind": "notice", "text": "Late news.", "at": AT}
    seqs["held"] = w.effect("chat.post", {"text": "Done", "done": True}, {"deferred": [late]})
    seqs["cut"] = w.log.intent(Effect(name="approval.wait", data=wait_data("apr_6", "cell", "y")))
    w.log.result(seqs["cut"], "approval.wait", {"cancelled": "break_hard"})
    seqs["open"] = w.log.intent(Effect(name="approval.wait", data=wait_data("apr_7", "bash", "z")))
    w.close()
    return seqs


def test_waits_and_notices_are_steps_in_seq_order(tmp_path: Path) -> None:
    seqs = write_waits(tmp_path / "run.jsonl")
    view = build_view(read_log(tmp_path / "run.jsonl"))
    kinds = [(s.type, s.seq) for s in view.steps if s.type != "model_call"]
    assert kinds == [
        ("user", kinds[0][1]),
        ("approval", seqs["a1"]),
        ("cell", seqs["c1"]),
        ("approval", seqs["a2"]),
        ("approval", seqs["a3"]),
        ("notice", seqs["drain"]),
        ("approval", seqs["a4"]),
        ("cell", seqs["c2"]),
        ("approval", seqs["nested"]),  # nested: after the cell whose MCP call waited
        ("notice", seqs["held"]),  # a held reply is no reply: its deferred notice instead
        ("approval", seqs["cut"]),
        ("approval", seqs["open"]),
    ]
    waits = {s.approval_id: s for s in view.steps if isinstance(s, ApprovalStep)}
    first = waits["apr_1"]
    assert (first.kind, first.code, first.summary) == ("cell", "x = 1", "Run the cell: x = 1")
    assert (first.status, first.approve, first.rest, first.by, first.parent) == (
        "ok",
        True,
        False,
        "person",
        None,
    )
    assert (waits["apr_2"].approve, waits["apr_2"].by) == (False, "person")
    assert (waits["apr_3"].kind, waits["apr_3"].approve, waits["apr_3"].by) == (
        "bash",
        False,
        "timeout",
    )
    assert (waits["apr_4"].approve, waits["apr_4"].rest) == (True, True)
    nested = waits["apr_5"]
    assert (nested.kind, nested.by, nested.parent) == ("mcp", "break", seqs["app"])
    assert nested.seq in next(s for s in view.steps if s.seq == seqs["c2"]).seqs  # type: ignore[union-attr]
    assert (waits["apr_6"].status, waits["apr_6"].approve, waits["apr_6"].by) == (
        "cancelled",
        False,
        None,
    )
    assert (waits["apr_7"].status, waits["apr_7"].approve, waits["apr_7"].by) == (
        "unfinished",
        None,
        None,
    )
    notices = [s for s in view.steps if isinstance(s, NoticeStep)]
    assert [(n.text, n.at) for n in notices] == [
        ("The proposal was applied.", AT),
        ("Late news.", AT),
    ]
    assert not [s for s in view.steps if s.type == "reply"]


def test_the_steps_round_trip_through_the_codec(tmp_path: Path) -> None:
    write_waits(tmp_path / "run.jsonl")
    for step in build_view(read_log(tmp_path / "run.jsonl")).steps:
        assert load(Step, dump_dict(step)) == step  # type: ignore[arg-type]
    body = show_run(read_log(tmp_path / "run.jsonl"))
    wait = next(s for s in body["steps"] if s["type"] == "approval")
    assert wait == {
        "type": "approval",
        "seq": wait["seq"],
        "approval_id": "apr_1",
        "kind": "cell",
        "code": "x = 1",
        "summary": "Run the cell: x = 1",
        "status": "ok",
        "t": wait["t"],
        "approve": True,
        "rest": False,
        "by": "person",
        "parent": None,
    }
    notice = next(s for s in body["steps"] if s["type"] == "notice")
    assert notice == {
        "type": "notice",
        "seq": notice["seq"],
        "text": "The proposal was applied.",
        "at": AT,
    }


@pytest.mark.parametrize(
    ("result", "status"),
    [({"approve": True}, "unreadable"), ("yes", "unreadable"), (None, "failed")],
)
def test_an_answer_the_loop_could_not_read_approves_nothing(
    tmp_path: Path, result: Any, status: str
) -> None:
    w = LogWriter(tmp_path / "run.jsonl")
    w.opening()
    error = {"type": "BadRequest", "message": "no"} if result is None else None
    w.effect("approval.wait", wait_data("apr_1", "cell", "x"), result, error=error)
    w.close()
    (wait,) = [
        s for s in build_view(read_log(tmp_path / "run.jsonl")).steps if s.type == "approval"
    ]
    assert (wait.status, wait.approve, wait.by) == (status, False, None)  # type: ignore[union-attr]


def test_a_notice_in_the_first_drain_does_not_open_the_run(tmp_path: Path) -> None:
    w = LogWriter(tmp_path / "run.jsonl")
    w.effect("clock.now", {}, AT)
    items = [
        {"kind": "notice", "text": "News.", "at": AT},
        {"kind": "message", "text": "Hello", "at": AT},
    ]
    w.effect("mailbox.drain", {"notices": True}, items)
    w.close()
    steps = build_view(read_log(tmp_path / "run.jsonl")).steps
    assert [s.type for s in steps] == ["notice", "user"]


def test_trace_show_says_how_each_wait_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seqs = write_waits(tmp_path / "run.jsonl")
    render_show(show_run(read_log(tmp_path / "run.jsonl")))
    lines = capsys.readouterr().out.splitlines()
    assert f"#{seqs['a1']} approval (cell c1): approved by the person" in lines
    assert f"#{seqs['a2']} approval (cell): denied" in lines
    assert f"#{seqs['a3']} approval (bash): not answered in time" in lines
    assert (
        f"#{seqs['a4']} approval (cell c2): approved by the person (and the rest of this turn)"
        in lines
    )
    assert f"#{seqs['nested']} approval (mcp call in cell c2): the person asked to stop" in lines
    assert f"#{seqs['cut']} approval (cell): cut by a hard stop" in lines
    assert any(
        line.startswith(f"#{seqs['open']} approval (bash): no answer recorded") for line in lines
    )
    assert '  > fs.write(path="a.txt")' in lines  # an MCP call's code (a cell's is its own)
    at = lines.index(f"#{seqs['drain']} notice · {AT}")
    assert lines[at + 1] == "    The proposal was applied."


def test_the_export_has_a_markdown_cell_per_wait_and_notice(tmp_path: Path) -> None:
    seqs = write_waits(tmp_path / "run.jsonl")
    nb = without_setup(run_notebook(read_log(tmp_path / "run.jsonl")))
    nbformat.validate(nb)
    cells = {c.metadata["jupyter_agent"]["seq"]: c for c in nb.cells}
    first = cells[seqs["a1"]]
    assert first.cell_type == "markdown"
    assert first.id == "md2"  # before the first code cell (md1 is the user's message)
    assert first.source.startswith("**Approval** (cell)")
    assert "Run the cell: x = 1" in first.source
    assert first.source.endswith("Outcome: approved by the person.")
    meta = first.metadata["jupyter_agent"]
    assert (meta["kind"], meta["approval_id"], meta["approve"], meta["by"]) == (
        "approval",
        "apr_1",
        True,
        "person",
    )
    assert cells[seqs["c1"]].id == "c1"
    denied = cells[seqs["a2"]]
    assert denied.id == "c1-md1"
    assert "```python" not in denied.source  # a cell's code is not repeated in its wait
    assert "Outcome: denied." in denied.source
    nested = cells[seqs["nested"]]
    assert nested.id == "c2-md1"
    assert '```python\nfs.write(path="a.txt")\n```' in nested.source
    assert "Outcome: the person asked to stop." in nested.source
    assert nested.metadata["jupyter_agent"]["parent"] == seqs["app"]
    notice = cells[seqs["drain"]]
    assert notice.source == f"**Notice** · {AT}\n\nThe proposal was applied."
    assert notice.metadata["jupyter_agent"]["kind"] == "notice"
    assert len({c.id for c in nb.cells}) == len(nb.cells)


def test_an_mcp_call_whose_code_holds_backticks_keeps_its_fence(tmp_path: Path) -> None:
    w = LogWriter(tmp_path / "run.jsonl")
    w.opening()
    code = 'fs.write(text="```")'
    w.effect("approval.wait", wait_data("apr_1", "mcp", code), answer(True), parent=None)
    w.close()
    nb = run_notebook(read_log(tmp_path / "run.jsonl"))
    nbformat.validate(nb)
    (cell,) = [c for c in nb.cells if c.metadata["jupyter_agent"]["kind"] == "approval"]
    assert f"````python\n{code}\n````" in cell.source
