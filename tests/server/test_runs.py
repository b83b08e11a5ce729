"""A message through the server to the fake model and a real agent kernel, then the run
routes (list, detail, raw log, stats, notebooks, break) and their refusals."""

from __future__ import annotations

import json
import time
from typing import Any

import nbformat
import pytest

from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.runtime.events import COMMON_FIELDS, EVENT_FIELDS
from tests.server.helpers import call, new_chat, refused, wait_turn

PROGRAM_FILTERS = [
    ("toolcaller", True),
    (PROGRAM, True),
    ("", True),  # an empty field filters nothing
    ("toolcall", False),
    ("toolcaller@v1", False),  # an older version than the runs here
    ("toolcaller@v", False),
    ("Toolcaller", False),
    ("toolcaller@v_", False),
    ("toolcalle_", False),
    ("tool%", False),
    ("%", False),
]

SCRIPT = [
    {"text": "Let me compute.", "cells": ["print(6 * 7)"]},
    {"text": "The answer is **42**."},
]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def send(fetch: Any, chat_id: str, body: dict[str, Any]) -> dict[str, Any]:
    code, answer = call(fetch, "agent", "chats", chat_id, "messages", method="POST", body=body)
    assert code == 202
    return dict(answer)


@pytest.mark.usefixtures("server_kernelspec")
def test_message_to_reply_and_run_routes(
    fetch: Any, spin: Any, agent_service: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "notes.txt").write_text("attached notes")
    chat_id = new_chat(fetch)
    answer = send(
        fetch,
        chat_id,
        {
            "text": "what is six times seven, please tell me",
            "attachments": ["notes.txt"],
            "view": {"path": "notes.txt"},
        },
    )
    assert answer["routed"] == "run"
    assert answer["run_id"].startswith("run_")
    run_id = answer["run_id"]
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["llm"]["stopReason"] == "done"
    assert turn["replies"][-1] == {"text": "The answer is **42**.", "done": True}
    assert turn["userText"] == "what is six times seven, please tell me"
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["title"] == "what is six times seven, please tell me"  # whole, not cut
    assert chat["active_run_id"] is None

    # The stored program is "toolcaller@v6" (core.loop.PROGRAM): a name matches every
    # version, name@vN that version; a part of a name, another version or LIKE's wildcards
    # match nothing.
    for program, found in PROGRAM_FILTERS:
        code, page = call(fetch, "agent", "runs", params={"program": program, "limit": "5"})
        assert code == 200
        assert [r["run_id"] for r in page["runs"]] == ([run_id] if found else []), program
        assert all(r["program"] == PROGRAM for r in page["runs"])
    # Every event the run sent is a documented type with documented fields.
    for event in agent_service.events.since(chat_id, 0):
        assert event["type"] in EVENT_FIELDS, event
        assert set(event) <= {*COMMON_FIELDS, *EVENT_FIELDS[event["type"]]}, event
    code, page = call(fetch, "agent", "runs")
    assert [r["run_id"] for r in page["runs"]] == [run_id]
    assert page["next"] is None
    assert page["runs"][0]["status"] == "done"

    code, detail = call(fetch, "agent", "runs", run_id)
    assert detail["run_id"] == run_id
    assert detail["turn"]["run_id"] == run_id
    assert any(s["type"] == "cell" and "6 * 7" in s["code"] for s in detail["steps"])
    user = next(s for s in detail["steps"] if s["type"] == "user")
    assert "notes.txt" in json.dumps(user)
    response = fetch("agent", "runs", run_id, params={"log": "raw"})
    assert response.headers["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.body.decode().splitlines()]
    assert lines[0]["run_id"] == run_id
    # The attachment reached the model as a File part (its base64 is in the drain).
    drain = next(x for x in lines[1:] if x["name"] == "mailbox.drain" and x["phase"] == "result")
    assert drain["data"][0]["attachments"][0]["name"] == "notes.txt"

    code, stats = call(fetch, "agent", "runs", run_id, "stats")
    assert stats["totals"]["calls"] == 2

    code, nb_json = call(fetch, "agent", "runs", run_id, "notebook")
    nb = nbformat.from_dict(nb_json)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "jupyter-agent"
    code, written = call(fetch, "agent", "runs", run_id, "notebook", method="POST", body={})
    assert code == 201
    # Into the trace folder, named from the chat's title and the turn's number.
    assert written == {
        "path": "agent-traces/what is six times seven, please tell me - turn 1.ipynb",
        "created": True,
    }
    on_disk = nbformat.read(jp_root_dir / written["path"], as_version=4)
    assert [c.source for c in on_disk.cells] == [c.source for c in nb.cells]
    code, written = call(
        fetch, "agent", "runs", run_id, "notebook", method="POST", body={"path": "/a/b/t.ipynb"}
    )
    assert written == {"path": "a/b/t.ipynb", "created": True}
    assert (jp_root_dir / "a" / "b" / "t.ipynb").exists()
    for path in ("../escape.ipynb", "x/../../y.ipynb", "trace.txt", "", 5):
        refused(
            fetch,
            "agent",
            "runs",
            run_id,
            "notebook",
            method="POST",
            body={"path": path},
            status=400,
        )
    assert not (jp_root_dir.parent / "escape.ipynb").exists()
    # a person's file is never replaced silently; a hidden folder is never created
    before = (jp_root_dir / "a" / "b" / "t.ipynb").read_bytes()
    refused(
        fetch,
        "agent",
        "runs",
        run_id,
        "notebook",
        method="POST",
        body={"path": "a/b/t.ipynb"},
        status=409,
    )
    assert (jp_root_dir / "a" / "b" / "t.ipynb").read_bytes() == before
    code, _ = call(
        fetch,
        "agent",
        "runs",
        run_id,
        "notebook",
        method="POST",
        body={"path": "a/b/t.ipynb", "overwrite": True},
    )
    assert code == 201
    refused(
        fetch,
        "agent",
        "runs",
        run_id,
        "notebook",
        method="POST",
        body={"path": "newdir/.hidden/t.ipynb"},
        status=400,
    )
    assert not (jp_root_dir / "newdir").exists()

    code, chat_nb = call(fetch, "agent", "chats", chat_id, "notebook")
    nbformat.validate(nbformat.from_dict(chat_nb))
    assert any(c["id"].startswith("t1-") for c in chat_nb["cells"])

    code, broke = call(fetch, "agent", "break", run_id, method="POST", body={"hard": True})
    assert code == 202
    assert broke == {"run_id": run_id, "state": "ended"}


UNKNOWN_RUN_CALLS: list[tuple[tuple[str, ...], str, Any]] = [
    (("runs", "{}"), "GET", None),
    (("runs", "{}", "stats"), "GET", None),
    (("runs", "{}", "notebook"), "GET", None),
    (("runs", "{}", "notebook"), "POST", {}),
    (("break", "{}"), "POST", {"hard": True}),
]


def test_unknown_runs_and_bad_pages(fetch: Any, agent_service: Any, jp_serverapp: Any) -> None:
    for run_id in ("run_01NOPE", "nope", "run_..", "run_%2e%2e"):
        for parts, method, body in UNKNOWN_RUN_CALLS:
            path = [p.format(run_id) for p in parts]
            refused(fetch, "agent", *path, method=method, body=body, status=404)
        refused(fetch, "agent", "runs", run_id, params={"log": "raw"}, status=404)
    refused(fetch, "agent", "break", "run_X", method="POST", body={"hard": "yes"}, status=400)
    refused(fetch, "agent", "break", "run_X", method="POST", body=b"{", status=400)
    for params in ({"limit": "ten"}, {"limit": "0"}, {"limit": "100000"}, {"before": "%%bad"}):
        refused(fetch, "agent", "runs", params=params, status=400)
    _code, page = call(fetch, "agent", "runs")
    assert page == {"runs": [], "next": None}
    assert agent_service.pool.counts() == {"warm": 0, "starting": 0, "in_use": 0}


SLOW = [{"text": "Thinking slowly.", "delay_s": 30}]


def active_after(fetch: Any, spin: Any, chat_id: str, ended: str) -> str:
    """The chat's run that started after ``ended`` (its hand-over starts it: wait)."""
    deadline = time.monotonic() + 20
    while True:
        _, chat = call(fetch, "agent", "chats", chat_id)
        if chat["active_run_id"] not in (None, ended):
            return str(chat["active_run_id"])
        assert time.monotonic() < deadline, "no run started after the stopped one"
        spin(0.05)


@pytest.mark.usefixtures("server_kernelspec")
def test_mailbox_routing_and_hard_break(
    fetch: Any, spin: Any, fake: Any, agent_service: Any
) -> None:
    fake.load({"steps": SLOW, "repeat": True})
    chat_id = new_chat(fetch)
    first = send(fetch, chat_id, {"text": "start something slow"})
    assert first["routed"] == "run"
    deadline = time.monotonic() + 20
    while not fake.requests:  # the model call is in flight: the opening drain is done
        assert time.monotonic() < deadline, "the run made no model call"
        spin(0.02)
    second = send(fetch, chat_id, {"text": "and also this"})
    assert second == {
        "run_id": first["run_id"],
        "routed": "mailbox",
        "message_id": second["message_id"],
    }
    assert second["message_id"].startswith("msg_")  # its identity in the events and steps
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["active_run_id"] == first["run_id"]
    broke = send(fetch, chat_id, {"control": {"kind": "break", "hard": True}})
    assert broke == {"run_id": first["run_id"], "routed": "break", "state": "breaking"}
    turn = wait_turn(fetch, spin, chat_id, first["run_id"], timeout_s=20)
    assert turn["llm"]["stopReason"] == "break_hard"
    # The queued message was not dropped, nor kept unanswered in the broken turn
    # (toolcaller@v7): no model call read it, so it opens the next run.
    assert turn["steering"] == []
    next_run = active_after(fetch, spin, chat_id, first["run_id"])
    # A message now steers that run, whose id its answer names; break it too.
    after = send(fetch, chat_id, {"text": "after the stop"})
    assert after == {"run_id": next_run, "routed": "mailbox", "message_id": after["message_id"]}
    code, answer = call(fetch, "agent", "break", next_run, method="POST", body={"hard": True})
    assert code == 202
    assert answer == {"run_id": next_run, "state": "breaking"}
    turn = wait_turn(fetch, spin, chat_id, next_run, timeout_s=20)
    assert turn["llm"]["stopReason"] == "break_hard"
    assert turn["userText"] == "and also this"
    # Its steering was read by no call either: it opens the run after, stopped too.
    last = active_after(fetch, spin, chat_id, next_run)
    call(fetch, "agent", "break", last, method="POST", body={"hard": True})
    assert wait_turn(fetch, spin, chat_id, last, timeout_s=20)["userText"] == "after the stop"


@pytest.mark.usefixtures("server_kernelspec")
def test_in_cell_bubbles_are_in_the_turns_replies(fetch: Any, spin: Any, fake: Any) -> None:
    fake.load(
        [
            {"text": "On it.", "cells": ["chat.post('loading the data')\nprint(1)"]},
            {"text": "Done."},
        ]
    )
    chat_id = new_chat(fetch)
    run_id = send(fetch, chat_id, {"text": "go"})["run_id"]
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["replies"] == [
        {"text": "On it.", "done": False},
        {"text": "loading the data", "done": False},
        {"text": "Done.", "done": True},
    ]
    # The chat's record (what the next boot window and the export read) has them too.
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["turns"][-1]["replies"] == turn["replies"]
    code, notebook = call(fetch, "agent", "chats", chat_id, "notebook")
    assert code == 200
    assert "loading the data" in json.dumps(notebook)
