"""Re-run a turn on another model or program (issue 31, item 3), through a real Jupyter
Server, the fake provider and a real agent kernel: ``POST agent/runs/{id}/rerun``.

A chat's turn runs a cell and replies; its rerun on the ``classify`` tier's model asks the
fake the very prompt the original asked (its recorded inputs: the message, the history
window, the set-up) with the other model, runs the cell again in a fresh kernel, and is
stored as a run of its own (``rerun_of``), not a turn of the chat. A rerun names another
program; bad input and a run still going are refused with nothing started.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call, new_chat, refused, run_cli, wait_turn

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("server_kernelspec")]

CELL = "x = 40 + 2\nprint('x is', x)"


SLOW = "import time\ntime.sleep(60)\nprint('slept')"


@pytest.fixture
def fake(fake_provider: Any, request: pytest.FixtureRequest) -> Any:
    cell = SLOW if "going" in request.node.name else CELL
    return fake_provider(
        {"steps": [{"cells": [cell]}, {"text": "The answer is 42."}], "per_turn": True}
    )


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    def tier(model: str) -> dict[str, Any]:
        return {"provider": "fake", "model": model, "base_url": fake.base_url}

    return {
        "pool_size": 0,
        "tiers": {"codegen": tier("claude-sonnet-4-5"), "classify": tier("claude-haiku-4-5")},
    }


def _lines(agent_service: Any, run_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    [log] = Path(agent_service.manager.runs_dir).rglob(f"{run_id}.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return lines[0], lines[1:]


def _first_request(lines: list[dict[str, Any]]) -> dict[str, Any]:
    [first, *_] = [x["data"] for x in lines if x["name"] == "http.post" and x["phase"] == "intent"]
    return dict(first)


def _ended(fetch: Any, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while True:
        _, run = call(fetch, "agent", "runs", run_id)
        if run["summary"]["status"] != "running":
            return dict(run)
        assert time.monotonic() < deadline, "the rerun never ended"
        time.sleep(0.2)


def _turn(fetch: Any, spin: Any, chat_id: str, text: str) -> str:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    return str(answer["run_id"])


def test_a_rerun_on_another_model_asks_the_same_prompt(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    chat_id = new_chat(fetch, "sums")
    _turn(fetch, spin, chat_id, "remember the number seven")
    original = _turn(fetch, spin, chat_id, "what is 40 + 2?")
    asked = len(fake.requests)
    code, answer = call(
        fetch, "agent", "runs", original, "rerun", method="POST", body={"model": "classify"}
    )
    assert code == 202
    assert answer["rerun_of"] == original
    assert (answer["program"], answer["model"]) == ("toolcaller@v8", "claude-haiku-4-5")
    rerun = answer["run_id"]
    detail = _ended(fetch, rerun)
    summary = detail["summary"]
    assert (summary["status"], summary["rerun_of"], summary["model"]) == (
        "done", original, "claude-haiku-4-5",
    )  # fmt: skip
    assert summary["chat_id"] == chat_id
    # The model saw the original's prompt, the history window with the first turn included.
    header, lines = _lines(agent_service, rerun)
    assert header["rerun_of"] == original
    _, before = _lines(agent_service, original)
    first, again = _first_request(before), _first_request(lines)
    assert again["json"]["model"] == "claude-haiku-4-5"
    assert first["json"]["model"] == "claude-sonnet-4-5"
    for key in ("system", "messages"):
        assert again["json"][key] == first["json"][key]
    assert "remember the number seven" in json.dumps(again["json"]["messages"])
    assert {r.json["model"] for r in fake.requests[asked:]} == {"claude-haiku-4-5"}
    # The cell ran again, live, in a fresh kernel.
    results = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    assert "x is 42" in json.dumps(results)
    # Not a turn of the chat: its turns and runs are as they were.
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert [t["run_id"] for t in chat["turns"]][-1] == original
    assert len(chat["turns"]) == 2
    # Its own turn (from its log), with the reply the other model gave.
    assert detail["turn"]["run_id"] == rerun
    assert detail["turn"]["replies"][-1]["text"] == "The answer is 42."


def test_a_rerun_names_another_program_and_bad_input_starts_nothing(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    chat_id = new_chat(fetch, "sums")
    original = _turn(fetch, spin, chat_id, "what is 40 + 2?")
    code, answer = call(
        fetch, "agent", "runs", original, "rerun", method="POST",
        body={"program": "toolcaller@v7"},
    )  # fmt: skip
    assert code == 202
    assert answer["program"] == "toolcaller@v7"
    summary = _ended(fetch, answer["run_id"])["summary"]
    assert (summary["status"], summary["program"]) == ("done", "toolcaller@v7")
    runs = len(list(Path(agent_service.manager.runs_dir).rglob("*.jsonl")))
    for body, status, reason in (
        ({"model": "two words"}, 400, "bad_model"),
        ({"program": "history@v1"}, 400, "bad_program"),
        ({"program": "toolcaller@v99"}, 400, "bad_program"),
        ({"other": 1}, 400, "unknown_field"),
    ):
        error = refused(
            fetch, "agent", "runs", original, "rerun", method="POST", body=body, status=status
        )
        assert error["reason"] == reason, error
    refused(
        fetch, "agent", "runs", "run_01NOSUCHRUN00000000000000", "rerun", method="POST",
        body={}, status=404,
    )  # fmt: skip
    assert len(list(Path(agent_service.manager.runs_dir).rglob("*.jsonl"))) == runs


def _cell_started(fetch: Any, run_id: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        _, run = call(fetch, "agent", "runs", run_id)
        if "time.sleep(60)" in json.dumps(run):
            return
        assert time.monotonic() < deadline, "the cell never started"
        time.sleep(0.2)


def test_a_run_still_going_is_refused_and_a_going_rerun_breaks(
    fetch: Any, spin: Any, fake: Any
) -> None:
    chat_id = new_chat(fetch, "slow")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "sleep"}
    )
    assert code == 202
    original = answer["run_id"]
    _cell_started(fetch, original)
    error = refused(fetch, "agent", "runs", original, "rerun", method="POST", body={}, status=409)
    assert error["reason"] == "running"
    call(fetch, "agent", "break", original, method="POST", body={"hard": True})
    wait_turn(fetch, spin, chat_id, original)
    code, answer = call(fetch, "agent", "runs", original, "rerun", method="POST", body={})
    assert code == 202
    rerun = answer["run_id"]
    _cell_started(fetch, rerun)
    started = time.monotonic()
    code, broke = call(fetch, "agent", "break", rerun, method="POST", body={})
    assert (code, broke["state"]) == (202, "breaking")
    summary = _ended(fetch, rerun)["summary"]
    assert time.monotonic() - started < 20
    assert summary["endCause"] == "break_hard"
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert [t["run_id"] for t in chat["turns"]] == [original]


def test_the_cli_reruns_and_waits(
    fetch: Any, spin: Any, fake: Any, jp_http_port: int, jp_base_url: str, jp_serverapp: Any,
    capsys: Any,
) -> None:  # fmt: skip
    chat_id = new_chat(fetch, "sums")
    original = _turn(fetch, spin, chat_id, "what is 40 + 2?")
    addr = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    server = ["--addr", addr, "--token", jp_serverapp.identity_provider.token]
    code = run_cli(spin, ["rerun", original, "--model", "claude-opus-4-1", "--wait", *server])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert rows["model"].split() == ["claude-sonnet-4-5", "claude-opus-4-1"]
    assert rows["status"].split() == ["done", "done"]
    assert rows["reply"].count("The answer is 42.") == 2
    assert run_cli(spin, ["rerun", original, "--model", "two words", *server]) == 2
    assert "no spaces" in capsys.readouterr().err


def test_a_rerun_keeps_the_chats_own_model_unless_told(fetch: Any, spin: Any, fake: Any) -> None:
    """With no model given, a rerun runs on the tiers its original recorded (the chat's
    own model included), not on the agent's tiers of today."""
    chat_id = new_chat(fetch, "own model")
    code, _ = call(fetch, "agent", "chats", chat_id, method="PATCH", body={"model": "classify"})
    assert code == 200
    original = _turn(fetch, spin, chat_id, "what is 40 + 2?")
    code, answer = call(fetch, "agent", "runs", original, "rerun", method="POST", body={})
    assert code == 202
    assert answer["model"] == "claude-haiku-4-5"
    assert _ended(fetch, answer["run_id"])["summary"]["model"] == "claude-haiku-4-5"


def test_going_reruns_are_capped_and_stop_with_their_chat(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    """At most MAX_RERUNS reruns of one owner go at once (429 past it, nothing started);
    deleting the chat stops its reruns at once."""
    from jupyter_agent.runtime.loop.fed_runs import MAX_RERUNS

    chat_id = new_chat(fetch, "slow")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "sleep"}
    )
    original = answer["run_id"]
    _cell_started(fetch, original)
    call(fetch, "agent", "break", original, method="POST", body={"hard": True})
    wait_turn(fetch, spin, chat_id, original)
    reruns = []
    for _ in range(MAX_RERUNS):
        code, answer = call(fetch, "agent", "runs", original, "rerun", method="POST", body={})
        assert code == 202
        reruns.append(answer["run_id"])
    runs_before, _ = agent_service.store.list_runs(limit=100)
    error = refused(fetch, "agent", "runs", original, "rerun", method="POST", body={}, status=429)
    assert error["reason"] == "too_many_reruns"
    assert len(agent_service.store.list_runs(limit=100)[0]) == len(runs_before)
    started = time.monotonic()
    code, _ = call(fetch, "agent", "chats", chat_id, method="DELETE")
    assert code == 204
    for rerun in reruns:
        summary = _ended(fetch, rerun)["summary"]
        assert summary["endCause"] == "break_hard", summary
    assert time.monotonic() - started < 30
