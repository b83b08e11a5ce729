"""Kernel faults through a real run on a real server: each cell ends clearly, the run goes on.

One ``jupyter server`` (module scope) with a short ``cell_timeout_s``. The model runs one
faulty cell and then replies; the run must end ``done`` with the cell's recorded result
saying what happened (its ``cell.run`` result in the effect log, and the digest the model
read), within the timeout plus the interrupt grace (and a kernel restart where needed),
and the chat must answer the next message.
(The kernel handle's own rules are tested in ``tests/runtime/test_kernels.py`` and
``tests/runtime/test_live_kernel.py``; this is the whole path: driver, loop, log, turn.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.kernel.capture import PRINTS_HEAD, PRINTS_TAIL
from jupyter_agent.llm.fake.server import FakeProvider
from tests.faults.server import FaultServer

pytestmark = pytest.mark.timeout(240)

CELL_TIMEOUT_S = 3.0
# The handle's interrupt grace (5 s) plus room for a loaded machine; a kernel restart gets
# its own allowance below.
GRACE_S = 10.0
RESTART_S = 60.0


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[FaultServer]:
    srv = FaultServer(
        Path(tmp_path_factory.mktemp("kernel")), fake, {"cell_timeout_s": CELL_TIMEOUT_S}
    )
    srv.start()
    yield srv
    srv.stop()


def _run_cell(
    server: FaultServer, fake: FakeProvider, code: str
) -> tuple[dict[str, Any], dict[str, Any], str, float]:
    """One run: the model runs ``code``, then replies. (turn, cell.run result, digest, s)."""
    fake.load([{"cells": [code]}, {"text": "Noted."}, {"text": "Still here."}])
    with server.client() as client:
        chat_id = client.create_chat("kernel fault")["id"]
    turn = server.send_and_wait(chat_id, "Run this.", timeout_s=180)
    assert (turn["llm"]["stopReason"], turn["llm"]["endCause"]) == ("done", "done"), turn
    assert turn["replies"][-1] == {"text": "Noted.", "done": True}
    with server.client() as client:
        detail = client.run(turn["run_id"], full=True)
    (effect,) = [e for e in detail["effects"] if e["name"] == "cell.run"]
    (step,) = [s for s in detail["steps"] if s["type"] == "cell"]
    # The model read the same digest the run shows.
    request = [r for r in fake.requests if r.step == 1][-1]
    assert json.dumps(step["digest"])[1:-1] in json.dumps(request.json)
    again = server.send_and_wait(chat_id, "Are you still there?")
    assert again["replies"] == [{"text": "Still here.", "done": True}]
    took = _seconds(effect["t_intent"], effect["t_result"])
    return turn, effect["result"], step["digest"], took


def _seconds(start: str, end: str) -> float:
    def parse(t: str) -> float:
        return time.mktime(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + float(t[19:-1] or 0)

    return parse(end) - parse(start)


def test_a_kernel_killed_mid_cell_is_reported_and_replaced(
    server: FaultServer, fake: FakeProvider
) -> None:
    code = (
        "print('about to die', flush=True)\n"
        "import os, time\ntime.sleep(0.5)\nos.kill(os.getpid(), 9)"
    )
    turn, result, digest, _ = _run_cell(server, fake, code)
    assert result["error"]["ename"] == "KernelDied"
    assert "about to die" in json.dumps(result)  # what it printed before dying is kept
    assert "A new kernel was started" in result["error"]["evalue"]
    assert "KernelDied" in digest
    assert turn["llm"]["cells"] == 1
    # The run detail says it one way: the step failed, as its cell_end said (issue 25).
    with server.client() as client:
        detail = client.run(turn["run_id"], full=True)
    (step,) = [s for s in detail["steps"] if s["type"] == "cell"]
    assert (step["status"], step["failed"], step["end_status"]) == ("failed", True, "error")
    assert step["error"] is None  # the cell ran (and its kernel died): no effect error


def test_a_hanging_cell_is_interrupted_at_the_timeout(
    server: FaultServer, fake: FakeProvider
) -> None:
    code = "import time\nprint('going to sleep')\ntime.sleep(600)"
    _, result, digest, took = _run_cell(server, fake, code)
    assert result["error"]["ename"] == "CellTimeout"
    assert "interrupted; the namespace is kept" in result["error"]["evalue"]
    assert CELL_TIMEOUT_S <= took < CELL_TIMEOUT_S + GRACE_S
    assert result["prints"][0]["text"] == "going to sleep"
    assert "[1] going to sleep" in digest
    assert "CellTimeout" in digest


def test_a_cell_ignoring_sigint_is_restarted_and_reported_timed_out(
    server: FaultServer, fake: FakeProvider
) -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('ignoring interrupts')\n"
        "time.sleep(600)"
    )
    _, result, digest, took = _run_cell(server, fake, code)
    assert result["error"]["ename"] == "CellTimeout"
    assert "the kernel was restarted" in result["error"]["evalue"]
    assert took < CELL_TIMEOUT_S + GRACE_S + RESTART_S
    # What it printed came over iopub before the restart: kept, and shown to the model.
    assert result["prints"][0]["text"] == "ignoring interrupts"
    assert "ignoring interrupts" in digest
    assert "CellTimeout" in digest


def test_a_flood_of_prints_is_interrupted_in_the_grace_and_keeps_its_output(
    server: FaultServer, fake: FakeProvider
) -> None:
    # Far more than fits in the cell's timeout on any machine (a million printed in under
    # 3 s on a quiet one, and the cell then ended before its timeout).
    code = "for i in range(100_000_000): print(i)"
    _, result, digest, took = _run_cell(server, fake, code)
    assert result["error"]["ename"] == "CellTimeout"
    # Interrupted, not restarted: the reply came within the grace.
    assert "interrupted; the namespace is kept" in result["error"]["evalue"]
    assert took < CELL_TIMEOUT_S + GRACE_S
    # Bounded: the first and the last values, the rest named, outputs cut with the marker.
    prints = result["prints"]
    assert len(prints) == PRINTS_HEAD + PRINTS_TAIL
    assert [p["text"] for p in prints[:3]] == ["0", "1", "2"]
    omitted = result["prints_omitted"]
    assert omitted["first"] == PRINTS_HEAD + 1
    assert omitted["count"] > 0
    last_number = int(prints[-1]["text"]) + 1
    assert last_number == PRINTS_HEAD + omitted["count"] + PRINTS_TAIL
    assert result["outputs_truncated"] is True
    assert result["outputs"][0]["text"].startswith("0\n1\n2\n")
    assert "[1] 0" in digest
    assert "more values" in digest
    assert f"[{last_number}] {last_number - 1}" in digest
    assert "Note: the kernel cut this cell's outputs" in digest
