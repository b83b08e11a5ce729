"""The server is SIGKILLed at each effect boundary of a run, then started again.

A run of the opening message: ``http.post`` (the model asks for a cell), ``cell.run`` (the
cell appends a line to ``ran.txt``: a re-run would show), ``http.post`` (the model
replies), ``chat.post`` (the reply), ``turn.append`` (the turn). The hook
(``JUPYTER_AGENT_FAULT``, docs/fault-injection.md) kills the server at one boundary; the
server is started again without it, on the same folders, and must give:

- the crashed run recovered, exactly as the table says (``restart``: stopReason ``error``,
  interrupted; ``done``: its turn was written before the kill);
- the acknowledged opening message in the chat's turns;
- the cell run at most once, and exactly once when the kill came after it (never re-run);
- the chat usable: a new message gets a ``done`` turn.

A steering message acknowledged ``202 routed: "mailbox"`` just before the kill must be in
a turn, or start a run, after the restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.faults.server import FaultServer, wait_for

pytestmark = pytest.mark.timeout(300)

OPENING = "Please run the cell."
REPLY = "All done."


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([]) as provider:
        yield provider


@pytest.fixture
def server(tmp_path: Path, fake: FakeProvider) -> Iterator[FaultServer]:
    srv = FaultServer(tmp_path / "srv", fake)
    yield srv
    srv.stop()


def _cell(ran: Path, wait_for_file: Path | None = None) -> str:
    code = f"open({str(ran)!r}, 'a').write('ran\\n')\nprint('the cell ran')\n"
    if wait_for_file is not None:
        code += (
            "import os, time\n"
            "for _ in range(1200):\n"
            f"    if os.path.exists({str(wait_for_file)!r}):\n"
            "        break\n"
            "    time.sleep(0.05)\n"
        )
    return code


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _recovered(server: FaultServer, run_id: str) -> dict[str, Any]:
    """The run's detail once the restarted server no longer has it running."""

    def probe() -> dict[str, Any] | None:
        with server.client() as client:
            detail = client.run(run_id)
        summary = detail.get("summary") or {}
        return detail if summary.get("status") != "running" and detail.get("turn") else None

    return wait_for(f"run {run_id} to be recovered", probe)


def _all_texts(server: FaultServer, chat_id: str) -> list[str]:
    """Every user text of the chat's turns: opening messages and steering."""
    with server.client() as client:
        turns = client.chat(chat_id)["turns"]
    texts = [t["userText"] for t in turns]
    texts += [s["text"] for t in turns for s in t.get("steering") or []]
    return texts


def _assert_usable(server: FaultServer, fake: FakeProvider, chat_id: str) -> None:
    fake.load([{"text": "Still here."}])
    turn = server.send_and_wait(chat_id, "Are you still there?")
    assert turn["llm"]["endCause"] == "done"
    assert turn["replies"] == [{"text": "Still here.", "done": True}]


# (fault, the crashed run's end cause after the restart, times the cell ran)
BOUNDARIES = [
    pytest.param("kill:before:http.post", "restart", 0, id="before-model-call"),
    pytest.param("kill:after:http.post", "restart", 0, id="after-model-call"),
    pytest.param("kill:before:cell.run", "restart", 0, id="before-cell"),
    pytest.param("kill:after:cell.run", "restart", 1, id="after-cell"),
    pytest.param("kill:after:chat.post", "restart", 1, id="after-reply"),
    # The turn record is in the log (the intent) when the kill comes: it must be written at
    # restart as it was, not replaced by a minimal one.
    pytest.param(
        "kill:before:turn.append",
        "done",
        1,
        id="before-turn-write",
    ),
    pytest.param("kill:after:turn.append", "done", 1, id="after-turn-write"),
]


@pytest.mark.parametrize(("fault", "end_cause", "cell_runs"), BOUNDARIES)
def test_a_crash_at_a_boundary_loses_nothing_and_repeats_nothing(
    server: FaultServer, fake: FakeProvider, fault: str, end_cause: str, cell_runs: int
) -> None:
    ran = server.root / "ran.txt"
    fake.load([{"cells": [_cell(ran)]}, {"text": REPLY}])
    server.start(fault=fault)
    with server.client() as client:
        chat_id = client.create_chat("crash")["id"]
        sent = client.send(chat_id, OPENING)
    assert sent["routed"] == "run"
    assert server.wait_dead() == -9, server.log_text

    fake.load({"steps": [{"text": "(no model call was expected here)"}], "repeat": True})
    server.start()
    detail = _recovered(server, sent["run_id"])
    turn = detail["turn"]
    assert turn["userText"] == OPENING
    assert turn["llm"]["endCause"] == end_cause, turn
    if end_cause == "restart":
        assert turn["interrupted"] is True
        assert turn["llm"]["stopReason"] == "error"
        assert detail["summary"]["status"] == "interrupted"
    else:
        assert turn["interrupted"] is False
        assert turn["llm"]["stopReason"] == "done"
        assert turn["replies"] == [{"text": REPLY, "done": True}]
    assert OPENING in _all_texts(server, chat_id)
    assert _lines(ran) == cell_runs
    _assert_usable(server, fake, chat_id)
    assert _lines(ran) == cell_runs  # nothing re-ran it later either


def test_a_steering_message_acknowledged_before_a_crash_is_delivered(
    server: FaultServer, fake: FakeProvider
) -> None:
    ran, go = server.root / "ran.txt", server.root / "go"
    fake.load([{"cells": [_cell(ran, wait_for_file=go)]}, {"text": REPLY}])
    server.start(fault="kill:after:cell.run")
    with server.client() as client:
        chat_id = client.create_chat("steer")["id"]
        sent = client.send(chat_id, OPENING)
        wait_for("the cell to run", lambda: ran.exists())
        steer = client.send(chat_id, "Also mention the weather.")
    assert (steer["run_id"], steer["routed"]) == (sent["run_id"], "mailbox")
    go.touch()  # the cell ends; the hook kills the server right after its result
    assert server.wait_dead() == -9, server.log_text

    # After the restart the queued message may start a run of its own: both get a reply.
    fake.load({"steps": [{"text": "Noted."}], "repeat": True})
    server.start()
    _recovered(server, sent["run_id"])
    with server.client() as client:
        later = client.send(chat_id, "Are you still there?")

    def settled() -> list[str] | None:
        texts = _all_texts(server, chat_id)
        with server.client() as client:
            idle = client.chat(chat_id)["active_run_id"] is None
        return texts if idle and "Are you still there?" in texts else None

    texts = wait_for(f"the turn of {later['run_id']}", settled)
    assert OPENING in texts
    assert _lines(ran) == 1
    assert "Also mention the weather." in texts


def test_a_run_whose_turn_was_written_is_not_listed_as_interrupted(
    server: FaultServer, fake: FakeProvider
) -> None:
    fake.load([{"text": REPLY}])
    server.start(fault="kill:after:turn.append")
    with server.client() as client:
        chat_id = client.create_chat("summary")["id"]
        sent = client.send(chat_id, OPENING)
    assert server.wait_dead() == -9, server.log_text
    server.start()
    detail = _recovered(server, sent["run_id"])
    assert detail["turn"]["llm"]["endCause"] == "done"
    # The run list and GET runs/{id} must agree with the turn the run wrote.
    assert detail["summary"]["status"] == "done"
