"""Trace notebooks and chat exports through the real routes: they land in the trace folder
(``JupyterAgent.trace_dir``) under safe, unique names and never replace a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, wait_turn

SCRIPT = [{"text": "Computing.", "cells": ["print(6 * 7)"]}, {"text": "It is **42**."}]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def export_chat(fetch: Any, chat_id: str) -> tuple[int, dict[str, Any]]:
    code, answer = call(fetch, "agent", "chats", chat_id, "notebook", method="POST", body={})
    return code, dict(answer)


def open_trace(fetch: Any, run_id: str) -> tuple[int, dict[str, Any]]:
    code, answer = call(fetch, "agent", "runs", run_id, "notebook", method="POST", body={})
    return code, dict(answer)


def check_written(root: Path, path: str, folder: str = "agent-traces") -> Any:
    assert path.startswith(f"{folder}/")
    assert path.endswith(".ipynb")
    name = path.removeprefix(f"{folder}/")
    assert "/" not in name
    assert not name.startswith(".")
    file = root / path
    assert file.resolve().parent == (root / folder).resolve()
    nb = nbformat.read(file, as_version=4)
    nbformat.validate(nb)
    return nb


TITLES = [
    ("../../outside", "outside.ipynb"),
    ("a/b/c", "a-b-c.ipynb"),
    (".hidden", "hidden.ipynb"),
    ("🎉 party plan", "🎉 party plan.ipynb"),
    ("", "{chat_id}.ipynb"),
    ("x" * 500, "x" * 80 + ".ipynb"),
]


def test_chat_exports_have_safe_unique_names(
    fetch: Any, agent_service: Any, jp_root_dir: Path
) -> None:
    for title, expected in TITLES:
        chat_id = new_chat(fetch)
        # Set through the store: the API caps titles at 200 characters, stored ones may be
        # longer (older versions, other clients).
        agent_service.store.rename_chat(chat_id, title, now="2025-01-01T00:00:00.000Z")
        code, answer = export_chat(fetch, chat_id)
        assert code == 201
        assert answer == {
            "path": "agent-traces/" + expected.format(chat_id=chat_id),
            "created": True,
        }
        nb = check_written(jp_root_dir, answer["path"])
        assert nb.metadata.jupyter_agent.title == (title or None)
    assert not (jp_root_dir.parent / "outside.ipynb").exists()
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["agent-traces"]

    # A person's file with the name: kept; the export takes the next free name.
    chat_id = new_chat(fetch, "Report")
    mine = jp_root_dir / "agent-traces" / "Report.ipynb"
    mine.write_text("my own notes")
    assert export_chat(fetch, chat_id) == (
        201,
        {"path": "agent-traces/Report-2.ipynb", "created": True},
    )
    assert mine.read_text() == "my own notes"
    # The same export again: the file that holds exactly it is answered, nothing rewritten.
    written = jp_root_dir / "agent-traces" / "Report-2.ipynb"
    before = written.read_bytes()
    assert export_chat(fetch, chat_id) == (
        200,
        {"path": "agent-traces/Report-2.ipynb", "created": False},
    )
    # Once changed (by a person, or the chat moved on), a second export is a new file.
    edited = json.loads(before)
    edited["cells"][0]["source"] = "# Report, annotated"
    written.write_text(json.dumps(edited))
    assert export_chat(fetch, chat_id) == (
        201,
        {"path": "agent-traces/Report-3.ipynb", "created": True},
    )
    assert json.loads(written.read_text())["cells"][0]["source"] == "# Report, annotated"
    assert mine.read_text() == "my own notes"


@pytest.mark.usefixtures("server_kernelspec")
def test_trace_notebooks_in_order_never_over_a_file(
    fetch: Any, spin: Any, agent_service: Any, jp_root_dir: Path
) -> None:
    chat_id = new_chat(fetch, "Squares / cubes")
    runs = []
    for text in ("six times seven?", "and again?"):
        body = {"text": text}
        code, sent = call(fetch, "agent", "chats", chat_id, "messages", method="POST", body=body)
        assert code == 202
        wait_turn(fetch, spin, chat_id, sent["run_id"])
        runs.append(sent["run_id"])
    folder = jp_root_dir / "agent-traces"
    folder.mkdir()
    (folder / "Squares - cubes - turn 2.ipynb").write_text("somebody's file")

    code, first = open_trace(fetch, runs[0])
    assert code == 201
    assert first == {"path": "agent-traces/Squares - cubes - turn 1.ipynb", "created": True}
    nb = check_written(jp_root_dir, first["path"])
    assert nb.metadata.jupyter_agent.run_id == runs[0]
    code, second = open_trace(fetch, runs[1])
    assert (code, second["path"]) == (201, "agent-traces/Squares - cubes - turn 2-2.ipynb")
    assert (folder / "Squares - cubes - turn 2.ipynb").read_text() == "somebody's file"
    # Opening a trace again opens the same file: nothing rewritten, no copy.
    before = (jp_root_dir / first["path"]).stat().st_mtime_ns
    assert open_trace(fetch, runs[0]) == (200, {**first, "created": False})
    assert (jp_root_dir / first["path"]).stat().st_mtime_ns == before

    # A load/save round trip through the server's contents manager changes nothing.
    on_disk = (jp_root_dir / first["path"]).read_bytes()
    code, model = call(fetch, "api", "contents", first["path"])
    assert model["type"] == "notebook"
    body = {"type": "notebook", "format": "json", "content": model["content"]}
    code, _ = call(fetch, "api", "contents", first["path"], method="PUT", body=body)
    assert code == 200
    assert (jp_root_dir / first["path"]).read_bytes() == on_disk


@pytest.mark.parametrize("agent_config", [{"pool_size": 0, "trace_dir": "/work/exports/"}])
def test_trace_dir_is_configurable(fetch: Any, jp_root_dir: Path) -> None:
    chat_id = new_chat(fetch, "Elsewhere")
    code, answer = export_chat(fetch, chat_id)
    assert (code, answer["path"]) == (201, "work/exports/Elsewhere.ipynb")
    check_written(jp_root_dir, answer["path"], folder="work/exports")
    assert not (jp_root_dir / "agent-traces").exists()
