"""A server under the default ``run`` log sync, SIGKILLed mid-run, loses no intent line.

The run: a model call (``http.post``) asks for a cell that sleeps; while it sleeps the
test SIGKILLs the server (no fault hook: the kill comes from outside, as the OOM killer or
a crash would). The background sync interval is set far beyond the test's length, so the
lines written after the syncer's first round are with the OS only, never fdatasynced: what
the log holds is what ``run`` promises a killed server keeps. After a restart the run is
recovered as ``restart`` and its cell is not run again.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.trace.log import pair_effects, read_log
from tests.faults.server import FaultServer, wait_for

pytestmark = pytest.mark.timeout(300)

OPENING = "Please run the slow cell."


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


@pytest.fixture
def server(tmp_path: Path, fake: FakeProvider) -> Iterator[FaultServer]:
    # log_sync is left at its default (run); only the interval is stretched.
    srv = FaultServer(
        tmp_path / "srv", fake, config={"RunManager": {"log_sync_interval_ms": 600_000}}
    )
    yield srv
    srv.stop()


def _slow_cell(ran: Path, go: Path) -> str:
    return (
        "import os, time\n"
        f"open({str(ran)!r}, 'a').write('ran\\n')\n"
        "for _ in range(1200):\n"
        f"    if os.path.exists({str(go)!r}):\n"
        "        break\n"
        "    time.sleep(0.05)\n"
    )


def _recovered(server: FaultServer, run_id: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        with server.client() as client:
            detail = client.run(run_id)
        summary = detail.get("summary") or {}
        return detail if summary.get("status") != "running" and detail.get("turn") else None

    return wait_for(f"run {run_id} to be recovered", probe)


def test_a_sigkill_mid_run_loses_no_intent_line_and_the_run_is_recovered(
    server: FaultServer, fake: FakeProvider
) -> None:
    ran, go = server.root / "ran.txt", server.root / "go"
    code = _slow_cell(ran, go)
    fake.load([{"text": "Running it.", "cells": [code]}, {"text": "(never asked)"}])
    server.start()
    requests_before = len(fake.requests)
    with server.client() as client:
        chat_id = client.create_chat("sigkill")["id"]
        sent = client.send(chat_id, OPENING)
    run_id = sent["run_id"]
    wait_for("the cell to start", ran.exists)
    assert server.proc is not None
    server.proc.send_signal(signal.SIGKILL)
    assert server.wait_dead() == -9, server.log_text
    go.touch()  # the orphaned kernel's cell may end now

    log_path = server.dirs["data"] / "jupyter_agent" / "runs" / f"{run_id}.jsonl"
    trace = read_log(log_path)
    assert not trace.truncated
    effects = {e.name: e for e in pair_effects(trace)}
    model_calls = [e for e in pair_effects(trace) if e.name == "http.post"]
    # Every model call the fake answered has its intent (and here its result) in the log.
    assert len(model_calls) == len(fake.requests) - requests_before == 1
    assert model_calls[0].result is not None
    # The cell that was running when the server died: its intent is there, no result.
    cell = effects["cell.run"]
    assert cell.data["code"] == code
    assert cell.result is None
    assert trace.lines[-1].phase == "intent"
    assert trace.lines[-1].name == "cell.run"
    assert "turn.append" not in effects

    fake.load({"steps": [{"text": "(no model call was expected here)"}], "repeat": True})
    server.start()
    detail = _recovered(server, run_id)
    turn = detail["turn"]
    assert turn["userText"] == OPENING
    assert turn["llm"]["endCause"] == "restart", turn
    assert turn["llm"]["stopReason"] == "error"
    assert turn["interrupted"] is True
    assert detail["summary"]["status"] == "interrupted"
    assert ran.read_text().splitlines() == ["ran"]  # never run again
