"""Live output and stopped cells end to end: run manager, driver, real kernel, fake model.

A cell's output reaches the event bus while it runs (``cell_output``), catch-up gets it,
and the recorded log is what it was without live output (replay identical). A cell cut by
a hard break or a timeout says so in its ``cell_end``, its result, the run detail, the
trace notebook and ``jupyter agent trace show``, with what it printed before the stop.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.core.digest.cells import CellResult
from jupyter_agent.trace.notebook import run_notebook
from jupyter_agent.trace.show import show_run
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness
from tests.trace.logs_support import without_setup

pytestmark = pytest.mark.timeout(120)

TICKS = "import time\nfor i in range(5):\n    print('tick', i)\n    time.sleep(0.3)\n"
BEFORE_BREAK = (
    "import time\nprint('printed-before-the-break')\nfor _ in range(600):\n    time.sleep(0.1)"
)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    fake = fake_provider([])
    harness = await make_harness(tmp_path, fake, kernel_manager)
    yield harness
    await close_harness(harness)


def results(agent: Harness, run_id: str, name: str) -> list[Any]:
    trace = agent.trace(run_id)
    return [line.data for line in trace.lines if line.phase == "result" and line.name == name]


def assert_replays(agent: Harness, run_id: str) -> None:
    outcome = verify_run(agent.manager.log_path(run_id))
    assert outcome.identical, outcome.message


async def wait_for(
    agent: Harness, chat_id: str, check: Any, timeout_s: float = 30
) -> dict[str, Any]:
    """The first kept event of the chat for which ``check(event)`` holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for event in agent.events.since(chat_id, 0):
            if check(event):
                return event
        await asyncio.sleep(0.02)
    raise AssertionError("no such event")


def live_text(event: dict[str, Any]) -> str:
    output = event.get("output") or {}
    return str(output.get("text", "")) if event["type"] == "cell_output" else ""


def trace_show_text(agent: Harness, run_id: str, capsys: Any) -> str:
    capsys.readouterr()
    assert main(["trace", "show", str(agent.manager.log_path(run_id))]) == 0
    return str(capsys.readouterr().out)


async def test_a_running_cell_streams_its_output_and_the_log_is_unchanged(agent: Harness) -> None:
    agent.fake.load(
        [{"cells": [TICKS]}, {"expect": {"last_user_contains": "tick 4"}, "text": "ok"}]
    )
    chat = agent.new_chat()
    received: list[dict[str, Any]] = []
    caught_up = False
    with agent.events.subscribe(chat) as queue:
        answer = await agent.manager.send(chat, text="count")
        while True:
            event = await asyncio.wait_for(queue.get(), 60)
            received.append(event)
            if event["type"] == "cell_output" and "tick 1" in live_text(event):
                # A client connecting now with since=<its cell_start> gets what it missed.
                start = next(e for e in received if e["type"] == "cell_start")
                missed = agent.events.since(chat, start["seq"])
                assert [e["seq"] for e in missed] == [
                    e["seq"] for e in received if e["seq"] > start["seq"]
                ]
                assert "tick 0" in "".join(live_text(e) for e in missed)
                caught_up = True
            if event["type"] == "run_end":
                break
    turn = await agent.finish(answer["run_id"])
    assert final_text(turn) == "ok"
    assert caught_up
    types = [e["type"] for e in received]
    end = types.index("cell_end")
    outputs = [e for e in received[:end] if e["type"] == "cell_output"]
    assert len(outputs) >= 3  # one per tick, not one at the end
    assert {e["cell_id"] for e in outputs} == {"c1"}
    assert "".join(live_text(e) for e in outputs) == "".join(f"tick {i}\n" for i in range(5))
    cell_end = received[end]
    assert cell_end["status"] == "ok"
    assert cell_end["outputs"] == [
        {
            "output_type": "stream",
            "name": "stdout",
            "text": "".join(f"tick {i}\n" for i in range(5)),
        }
    ]
    # The recorded result is the kernel's structured result, plus the one digest of the
    # cell: the text cell_end showed is the text the model read.
    [recorded] = results(agent, turn.run_id, "cell.run")
    assert set(recorded) == {*CellResult(cell_id="c1").to_json(), "digest"}
    assert recorded.pop("digest") == {"text": cell_end["digest"], "is_error": False}
    assert CellResult.from_json(recorded).to_json() == recorded
    assert [p["text"] for p in recorded["prints"]] == [f"tick {i}" for i in range(5)]
    assert_replays(agent, turn.run_id)
    # Once the cell ended, its live events left the history: cell_end has it all.
    assert "cell_output" not in [e["type"] for e in agent.events.since(chat, 0)]


async def test_a_hard_broken_cell_shows_cancelled_with_its_output(
    agent: Harness, capsys: Any
) -> None:
    agent.fake.load([{"text": "Looping.", "cells": [BEFORE_BREAK]}, {"text": "never"}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="loop")
    await wait_for(agent, chat, lambda e: "printed-before-the-break" in live_text(e))
    await agent.manager.break_run(run["run_id"], hard=True)
    turn = await agent.finish(run["run_id"], timeout_s=30)
    assert turn.llm.stop_reason == "break_hard"
    run_id = turn.run_id

    [recorded] = results(agent, run_id, "cell.run")
    assert recorded["cancelled"] == "break_hard"
    partial = CellResult.from_json(recorded["cell"])
    assert partial.cell_id == "c1"
    assert partial.outputs == (
        {"output_type": "stream", "name": "stdout", "text": "printed-before-the-break\n"},
    )
    assert partial.duration_s > 0

    end = await wait_for(agent, chat, lambda e: e["type"] == "cell_end")
    assert end["status"] == "cancelled"
    assert end["error"] is True
    assert end["digest"] is None
    assert end["outputs"] == list(partial.outputs)

    detail = show_run(agent.trace(run_id))
    [step] = [s for s in detail["steps"] if s["type"] == "cell"]
    assert step["status"] == "cancelled"
    assert step["outputs"][0]["text"] == "printed-before-the-break\n"
    assert step["digest"] is None  # the model read nothing

    nb = without_setup(run_notebook(agent.trace(run_id)))
    [code] = [c for c in nb.cells if c.cell_type == "code"]
    assert code.metadata["jupyter_agent"]["status"] == "cancelled"
    assert code.metadata["tags"] == ["skip-execution"]  # a re-run leaves it
    assert code.outputs[0]["text"] == "printed-before-the-break\n"
    notes = [
        c.source for c in nb.cells if c.metadata.get("jupyter_agent", {}).get("kind") == "note"
    ]
    assert any("hard stop cancelled this cell" in n for n in notes)

    text = trace_show_text(agent, run_id, capsys)
    assert "cell c1" in text
    assert "cancelled" in text.split("cell c1", 1)[1].splitlines()[0]
    assert "printed-before-the-break" in text.split("cell c1", 1)[1]  # what it printed
    assert_replays(agent, run_id)


async def test_a_timed_out_cell_says_timed_out_with_its_output(agent: Harness, capsys: Any) -> None:
    agent.ceilings = {"cell_timeout_s": 1}
    agent.fake.load(
        [
            {"cells": ["import time\nprint('printed-before-the-timeout')\ntime.sleep(30)"]},
            {"expect": {"last_user_contains": "CellTimeout"}, "text": "It timed out."},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "sleep long")
    assert final_text(turn) == "It timed out."
    run_id = turn.run_id
    [recorded] = results(agent, run_id, "cell.run")
    assert recorded["error"]["ename"] == "CellTimeout"
    assert recorded["outputs"][0]["text"] == "printed-before-the-timeout\n"

    end = await wait_for(agent, chat, lambda e: e["type"] == "cell_end")
    assert end["status"] == "timed_out"
    assert end["outputs"][0]["text"] == "printed-before-the-timeout\n"

    [step] = [s for s in show_run(agent.trace(run_id))["steps"] if s["type"] == "cell"]
    assert step["status"] == "timed_out"
    assert step["outputs"][0]["text"] == "printed-before-the-timeout\n"
    assert "timeout" in step["digest"]

    nb = without_setup(run_notebook(agent.trace(run_id)))
    [code] = [c for c in nb.cells if c.cell_type == "code"]
    assert code.metadata["jupyter_agent"]["status"] == "timed_out"
    assert code.metadata["tags"] == ["skip-execution"]  # a re-run leaves it
    assert not code.metadata["jupyter_agent"]["deterministic"]
    notes = [
        c.source for c in nb.cells if c.metadata.get("jupyter_agent", {}).get("kind") == "note"
    ]
    assert any("timed out" in n and "1 s timeout" in n for n in notes)

    text = trace_show_text(agent, run_id, capsys)
    assert "timed out" in text.split("cell c1", 1)[1].splitlines()[0]
    assert_replays(agent, run_id)


async def test_bash_output_is_live_and_a_broken_command_keeps_it(agent: Harness) -> None:
    agent.fake.load([{"bash": ["echo first-line; sleep 30; echo never"]}, {"text": "never"}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="shell")
    live = await wait_for(agent, chat, lambda e: "first-line" in live_text(e))
    assert live["cell_id"] == "c1"  # the run's counter: its step's and notebook cell's id
    assert live["output"]["name"] == "stdout"
    await agent.manager.break_run(run["run_id"], hard=True)
    turn = await agent.finish(run["run_id"], timeout_s=30)
    [recorded] = results(agent, turn.run_id, "bash.run")
    assert recorded["cancelled"] == "break_hard"
    assert recorded["bash"]["stdout"]["text"] == "first-line\n"
    assert recorded["bash"]["returncode"] is None
    end = await wait_for(agent, chat, lambda e: e["type"] == "cell_end")
    assert (end["kind"], end["status"], end["stdout"]) == ("bash", "cancelled", "first-line\n")
    [step] = [s for s in show_run(agent.trace(turn.run_id))["steps"] if s["type"] == "bash"]
    assert (step["status"], step["stdout"], step["digest"]) == ("cancelled", "first-line\n", None)
    nb = without_setup(run_notebook(agent.trace(turn.run_id)))
    [code] = [c for c in nb.cells if c.cell_type == "code"]
    assert code.metadata["jupyter_agent"]["status"] == "cancelled"
    assert code.metadata["tags"] == ["skip-execution"]  # a re-run leaves it
    assert json.dumps(code.outputs).count("first-line") == 1
    assert_replays(agent, turn.run_id)


async def test_a_finished_bash_command_streams_then_ends_ok(agent: Harness) -> None:
    agent.fake.load(
        [
            {"bash": ["echo one; sleep 0.6; echo two"]},
            {"expect": {"last_user_contains": "two"}, "text": "done"},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "shell")
    assert final_text(turn) == "done"
    events = agent.events.since(chat, 0)
    end = next(e for e in events if e["type"] == "cell_end")
    assert (end["status"], end["stdout"], end["error"]) == ("ok", "one\ntwo\n", False)
    [recorded] = results(agent, turn.run_id, "bash.run")
    assert set(recorded) == {
        *("command", "stdout", "stderr", "returncode", "timed_out", "duration_s"),
        "digest",  # the one digest: what cell_end showed and the model read
    }
    assert recorded["digest"]["text"] == end["digest"]
    assert_replays(agent, turn.run_id)
