"""A recalled run after the fact: its ``recall`` step (``GET agent/runs/{id}``, ``trace
show``) and the notebook export's synthetic block, from a real effect log of toolcaller@v4."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.cli.render import render_show
from jupyter_agent.core.loop.drive import drive
from jupyter_agent.core.loop.machine import program
from jupyter_agent.core.memory.recall import HEADER, recall_code
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import EffectLog, read_log
from jupyter_agent.trace.notebook import run_notebook
from jupyter_agent.trace.notebook_marks import TITLE
from jupyter_agent.trace.show import show_run
from tests.core.test_loop_recall import QUESTION, fact, record, world
from tests.core.test_loop_step import NOW
from tests.trace.logs_support import without_setup

PROGRAM = "toolcaller@v6"  # the recall steps of these logs (v7: tests/core/test_loop_start.py)


def recorded(folder: Path, hits: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run_1.jsonl"
    record(path, world(hits))
    return path


def test_the_recall_step_shows_what_the_model_was_shown(tmp_path: Path) -> None:
    body = show_run(read_log(recorded(tmp_path, [fact()])))
    steps = [s["type"] for s in body["steps"]]
    assert steps == ["user", "recall", "model_call", "reply"]
    step = body["steps"][1]
    assert step["program"] == "autorecall@v1"
    assert step["status"] == "ok"
    assert step["query"] == QUESTION
    assert step["code"] == recall_code(QUESTION, 5)
    assert step["text"].startswith(HEADER)
    assert [h["id"] for h in step["hits"]] == ["mem_1"]
    assert step["tokens"] == body["turn"]["recall"]["tokens"] > 0


def test_a_recall_without_hits_is_an_empty_step(tmp_path: Path) -> None:
    body = show_run(read_log(recorded(tmp_path, [])))
    step = body["steps"][1]
    assert (step["type"], step["code"], step["text"], step["hits"]) == ("recall", "", "", [])


def test_the_export_has_the_synthetic_cell_before_the_first_real_one(tmp_path: Path) -> None:
    nb = run_notebook(read_log(recorded(tmp_path, [fact()])))
    nbformat.validate(nb)
    without_setup(nb)
    kinds = [c.metadata["jupyter_agent"]["kind"] for c in nb.cells]
    assert kinds == ["user", "recall", "recall", "reply"]
    title, code = nb.cells[1], nb.cells[2]
    assert title.cell_type == "markdown"
    assert TITLE in title.source
    assert code.cell_type == "code"
    assert code.source == recall_code(QUESTION, 5)
    meta = code.metadata["jupyter_agent"]
    assert meta["synthetic"] is True
    assert meta["program"] == "autorecall@v1"
    assert code.execution_count is None
    assert code.metadata["tags"] == ["skip-execution"]  # never run: nbclient leaves it
    assert [o.output_type for o in code.outputs] == ["stream"]
    assert code.outputs[0].text.startswith(HEADER)
    assert "The person likes teal charts." in code.outputs[0].text


def test_no_hits_no_synthetic_cell_and_a_failed_search_is_a_note(tmp_path: Path) -> None:
    nb = run_notebook(read_log(recorded(tmp_path, [])))
    assert all(not c.metadata["jupyter_agent"].get("synthetic") for c in nb.cells)
    assert "recall" not in [c.metadata["jupyter_agent"]["kind"] for c in nb.cells]
    path = tmp_path / "failed.jsonl"
    answer = world([])
    header = {"run_id": "run_1", "chat_id": "chat_b", "program": PROGRAM, "created": NOW}
    with EffectLog.create(path, header) as log:

        def perform(effect: Effect) -> Any:
            seq = log.intent(effect)
            if effect.name == "recall.search":
                error = {"type": "StoreUnavailable", "message": "database is locked"}
                return log.result(seq, effect.name, None, error=error)
            return log.result(seq, effect.name, answer(effect))

        drive(program(PROGRAM, "run_1", "chat_b"), perform)
    nb = run_notebook(read_log(path))
    notes = [c.source for c in nb.cells if c.metadata["jupyter_agent"]["kind"] == "note"]
    assert any("recall search did not answer" in n and "database is locked" in n for n in notes)


def test_trace_show_marks_the_recall_synthetic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    render_show(show_run(read_log(recorded(tmp_path, [fact()]))))
    out = capsys.readouterr().out
    assert "recall (synthetic: not run) autorecall@v1: 1 hit" in out
    assert "> " + recall_code(QUESTION, 5) in out
    assert "The person likes teal charts." in out
    render_show(show_run(read_log(recorded(tmp_path / "x", []))))
    assert "nothing recalled" in capsys.readouterr().out
