"""Text is valid Unicode before it is stored or sent (issue 12, item 1).

Requests holding a lone surrogate (JSON's ``"\\ud800"``, sent as the raw escape, the way
the probe sent it) are refused with 400 ``bad_unicode`` naming the field, and nothing is
written; a provider reply holding one (half an emoji) is repaired to U+FFFD, and the run
ends ``done`` with its turn written, readable and exportable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.text import lone_surrogate
from tests.server.helpers import call, new_chat, refused, wait_turn

HALF = "\ud83d"  # the high half of U+1F600
FFFD = "\ufffd"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    script = [
        {"text": f"Let me look {HALF}", "cells": [f"print('cut {HALF}')"]},
        {"text": f"Done {HALF} here."},
    ]
    return fake_provider({"steps": script, "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def bad_unicode(fetch: Any, *parts: str, method: str, body: bytes, field: str) -> None:
    assert b"\\ud" in body.lower()  # the raw escape on the wire, not an encoded character
    error = refused(fetch, *parts, status=400, method=method, body=body)
    escape = json.loads(b'"' + body[body.lower().index(b"\\ud") :][:6] + b'"')
    assert error == {
        "message": f"'{field}' holds a lone surrogate (\\u{ord(escape):04x}): send valid Unicode",
        "reason": "bad_unicode",
    }


def test_a_message_with_a_lone_surrogate_is_refused(fetch: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch)
    messages = ("agent", "chats", chat_id, "messages")
    bad_unicode(fetch, *messages, method="POST", body=b'{"text": "a\\ud800b"}', field="text")
    bad_unicode(fetch, *messages, method="POST", body=b'{"text": "a\\uDC00"}', field="text")
    bad_unicode(
        fetch,
        *messages,
        method="POST",
        body=b'{"text": "hi", "view": {"path": "x\\udfff.ipynb"}}',
        field="view.path",
    )
    bad_unicode(
        fetch,
        *messages,
        method="POST",
        body=b'{"text": "hi", "attachments": ["ok.txt", "\\ud83d.txt"]}',
        field="attachments[1]",
    )
    bad_unicode(fetch, *messages, method="POST", body=b'{"te\\ud800xt": "hi"}', field="te\\ud800xt")
    # Nothing was started or written: no run, no turn, the title still unset.
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["turns"] == []
    assert chat["title"] == ""
    assert chat["active_run_id"] is None
    _, page = call(fetch, "agent", "runs")
    assert page["runs"] == []


def test_a_title_with_a_lone_surrogate_is_refused(fetch: Any) -> None:
    bad_unicode(fetch, "agent", "chats", method="POST", body=b'{"title": "\\ud83d"}', field="title")
    chat_id = new_chat(fetch, "kept")
    bad_unicode(
        fetch,
        "agent",
        "chats",
        chat_id,
        method="PATCH",
        body=b'{"title": "x\\ud800"}',
        field="title",
    )
    _, chats = call(fetch, "agent", "chats")
    assert [c["title"] for c in chats["chats"]] == ["kept"]
    # A pair written as two escapes is the character it encodes: accepted.
    code, chat = call(
        fetch, "agent", "chats", chat_id, method="PATCH", body=b'{"title": "\\ud83d\\ude00 ok"}'
    )
    assert (code, chat["title"]) == (200, "\U0001f600 ok")
    _, again = call(fetch, "agent", "chats", chat_id)
    assert again["title"] == "\U0001f600 ok"


def test_settings_with_a_lone_surrogate_are_refused(fetch: Any) -> None:
    _, before = call(fetch, "agent", "settings")
    bad_unicode(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body=b'{"tiers": {"codegen": {"provider": "fake", "model": "m\\udc00"}}}',
        field="tiers.codegen.model",
    )
    bad_unicode(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body=b'{"tiers": {"code\\ud800gen": null}}',
        field="tiers.code\\ud800gen",
    )
    _, after = call(fetch, "agent", "settings")
    assert after == before


def test_query_and_path_cannot_carry_a_surrogate(
    jp_asyncio_loop: Any, http_server_client: Any, jp_base_url: str, jp_auth_header: Any
) -> None:
    # A surrogate can only be percent-encoded as its (invalid) UTF-8 bytes: tornado decodes
    # arguments and path segments strictly and refuses them before the route runs.
    for path, name, raw in (
        ("agent/runs?program=%ED%A0%80", "program", b"\xed\xa0\x80"),
        ("agent/chats/chat_%ED%A0%80", "chat_id", b"chat_\xed\xa0\x80"),
        ("agent/runs/run_%ED%A0%80?log=raw", "run_id", b"run_\xed\xa0\x80"),
    ):
        response = jp_asyncio_loop.run_until_complete(
            http_server_client.fetch(jp_base_url + path, headers=jp_auth_header, raise_error=False)
        )
        assert response.code == 400, (path, response.code)
        assert json.loads(response.body) == {
            "message": f"'{name}' is not valid UTF-8 ({raw!r}): send valid Unicode",
            "reason": "bad_unicode",
        }


@pytest.mark.usefixtures("server_kernelspec")
def test_a_reply_with_half_an_emoji_is_repaired_and_the_turn_kept(
    fetch: Any, spin: Any, agent_service: Any, jp_root_dir: Path
) -> None:
    chat_id = new_chat(fetch, "emoji")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "go"}
    )
    assert code == 202
    run_id = answer["run_id"]
    turn = wait_turn(fetch, spin, chat_id, run_id)
    assert turn["replies"][-1] == {"text": f"Done {FFFD} here.", "done": True}
    assert turn["llm"]["stopReason"] == "done"
    assert lone_surrogate(turn) is None
    # The run is done and its turn is in the database (read back, not from memory).
    _, page = call(fetch, "agent", "runs")
    assert [(r["run_id"], r["status"]) for r in page["runs"]] == [(run_id, "done")]
    stored = agent_service.store.get_turn_by_run(run_id)
    assert stored is not None
    assert stored.to_json()["replies"][-1]["text"] == f"Done {FFFD} here."
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert [t["run_id"] for t in chat["turns"]] == [run_id]
    # The cell ran the repaired code; the log and the next request hold valid text.
    _, detail = call(fetch, "agent", "runs", run_id)
    cell = next(s for s in detail["steps"] if s["type"] == "cell")
    assert cell["code"] == f"print('cut {FFFD}')"
    raw = fetch("agent", "runs", run_id, params={"log": "raw"}).body.decode("utf-8")
    for line in raw.splitlines():
        assert lone_surrogate(json.loads(line)) is None
    # The trace notebook exports and reads back.
    code, written = call(fetch, "agent", "runs", run_id, "notebook", method="POST", body={})
    assert code == 201
    nb = nbformat.read(jp_root_dir / written["path"], as_version=4)
    nbformat.validate(nb)
    assert FFFD in json.dumps(nb, ensure_ascii=False)
    code, exported = call(fetch, "agent", "chats", chat_id, "notebook", method="POST", body={})
    assert code == 201
    nbformat.validate(nbformat.read(jp_root_dir / exported["path"], as_version=4))
