"""Import an exported chat notebook as a chat (issue 31, item 5), through a real Jupyter
Server with the fake provider: ``POST agent/chats/import``.

A chat of two turns (one ran a cell) is exported and imported: the new chat's turns are
the export's messages and replies, and the next message's prompt holds them as history.
A notebook that is no exported chat is refused with nothing made; ``jupyter agent import``
does the same from a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, refused, run_cli, wait_turn

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider(
        [
            {"text": "Working on it.", "cells": ["print('alpha' * 2)"]},
            {"text": "Noted alpha."},
            {"text": "Noted bravo."},
            {"text": "You said alpha and bravo."},
        ]
    )


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def _say(fetch: Any, spin: Any, chat_id: str, text: str) -> dict[str, Any]:
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    return wait_turn(fetch, spin, chat_id, answer["run_id"])


def _chat_count(fetch: Any) -> int:
    return len(call(fetch, "agent", "chats")[1]["chats"])


@pytest.mark.usefixtures("server_kernelspec")
def test_an_exported_chat_is_imported_and_goes_on(fetch: Any, spin: Any, fake: Any) -> None:
    chat_id = new_chat(fetch, "plans")
    _say(fetch, spin, chat_id, "remember alpha")
    _say(fetch, spin, chat_id, "remember bravo")
    _, exported = call(fetch, "agent", "chats", chat_id, "notebook")

    code, imported = call(
        fetch, "agent", "chats", "import", method="POST", body={"notebook": exported}
    )
    assert code == 201
    assert imported["id"] != chat_id
    assert imported["title"] == "Imported: plans"
    assert imported["active_run_id"] is None
    _, original = call(fetch, "agent", "chats", chat_id)
    _, chat = call(fetch, "agent", "chats", imported["id"])
    assert set(chat) == set(original)  # the same shape as any chat answer
    turns = chat["turns"]
    assert [t["userText"] for t in turns] == ["remember alpha", "remember bravo"]
    assert [t["replies"] for t in turns] == [t["replies"] for t in original["turns"]]
    assert [r["text"] for r in turns[0]["replies"]] == ["Working on it.", "Noted alpha."]
    assert [t["llm"]["stopReason"] for t in turns] == ["done", "done"]
    assert [t["model"] for t in turns] == [t["model"] for t in original["turns"]]
    old_runs = {t["run_id"] for t in original["turns"]}
    assert not old_runs & {t["run_id"] for t in turns}  # new run ids: no trace of another's

    # Someone else goes on: the next prompt holds the imported turns as history.
    turn = _say(fetch, spin, imported["id"], "what did I say?")
    assert turn["llm"]["stopReason"] == "done"
    prompt = json.dumps(fake.requests[-1].json["messages"])
    for text in ("remember alpha", "Noted alpha.", "remember bravo", "Noted bravo."):
        assert text in prompt, text
    _, chat = call(fetch, "agent", "chats", imported["id"])
    assert [t["userText"] for t in chat["turns"]][-1] == "what did I say?"

    # A turn's own export imports too, under the title given.
    code, single = call(
        fetch, "agent", "runs", original["turns"][1]["run_id"], "notebook", method="GET"
    )
    code, again = call(
        fetch, "agent", "chats", "import", method="POST",
        body={"notebook": single, "title": "just bravo"},
    )  # fmt: skip
    assert (code, again["title"]) == (201, "just bravo")
    _, chat = call(fetch, "agent", "chats", again["id"])
    assert [t["userText"] for t in chat["turns"]] == ["remember bravo"]


def test_other_notebooks_are_refused_with_nothing_made(fetch: Any) -> None:
    before = _chat_count(fetch)
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    error = refused(
        fetch, "agent", "chats", "import", method="POST", body={"notebook": plain}, status=400
    )
    assert error["reason"] == "not_an_export"
    assert "not an exported chat notebook" in error["message"]
    # an exported chat with no turn has nothing to import
    empty = nbformat.v4.new_notebook(metadata={"jupyter_agent": {"runs": []}})
    error = refused(
        fetch, "agent", "chats", "import", method="POST", body={"notebook": empty}, status=400
    )
    assert error["reason"] == "not_an_export"
    for body, reason in (
        ({}, "bad_notebook"),
        ({"notebook": "x.ipynb"}, "bad_notebook"),
        ({"notebook": {}, "owner": "bob"}, "unknown_field"),
        ({"notebook": {"nbformat": 3, "cells": []}}, "not_an_export"),
    ):
        error = refused(fetch, "agent", "chats", "import", method="POST", body=body, status=400)
        assert error["reason"] == reason, body
    assert _chat_count(fetch) == before


def test_the_cli_imports_a_notebook_file(
    fetch: Any, spin: Any, fake: Any, jp_http_port: int, jp_base_url: str, jp_serverapp: Any,
    capsys: Any, tmp_path: Path,
) -> None:  # fmt: skip
    chat_id = new_chat(fetch, "plans")
    _say(fetch, spin, chat_id, "remember alpha")
    _, exported = call(fetch, "agent", "chats", chat_id, "notebook")
    path = tmp_path / "plans.ipynb"
    nbformat.write(nbformat.from_dict(exported), path)
    addr = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    server = ["--addr", addr, "--token", jp_serverapp.identity_provider.token]
    assert run_cli(spin, ["import", str(path), "--title", "shared plans", *server]) == 0
    new_id = capsys.readouterr().out.strip()
    _, chat = call(fetch, "agent", "chats", new_id)
    assert chat["title"] == "shared plans"
    assert [t["userText"] for t in chat["turns"]] == ["remember alpha"]
    # a plain notebook, a missing file: one line on stderr, exit status 2, nothing made
    before = _chat_count(fetch)
    plain = tmp_path / "plain.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), plain)
    assert run_cli(spin, ["import", str(plain), *server]) == 2
    assert "not an exported chat notebook" in capsys.readouterr().err
    assert run_cli(spin, ["import", str(tmp_path / "missing.ipynb"), *server]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert run_cli(spin, ["import", str(tmp_path), *server]) == 2
    assert _chat_count(fetch) == before
