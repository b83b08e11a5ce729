"""Malformed input on every route (issue 25): the route table of the running extension,
each method sent each bad body, with valid ids so the body reaches the parsing.

The bodies: an integer of 5,000 digits (over Python's 4300-digit limit of ``json.loads``),
a NUL character in a string, a field no route takes, a body over ``max_body_bytes``, and
JSON that is not an object. Every answer is a clear 4xx ``{message, reason}`` (never a
500), and nothing is written: the chats, runs, memories, settings, programs, proposals and
the contents root read the same after the whole matrix as before it. A route added later is
in the matrix without a change here (a new path parameter needs its id in ``ids``).
Query arguments and path segments are checked too: a NUL, an integer out of range.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_agent.server.parse import INT_MAX
from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat, refused, wait_turn

LIMIT = 64 * 1024
METHODS = ("get", "post", "put", "patch", "delete")
MCP = "agent/mcp"
EVENTS = "agent/chats/{chat_id}/events"

#: (name, body, status, reason or None: any, what the message must hold)
BODIES: list[tuple[str, bytes, int, str | None, str]] = [
    ("huge integer", b'{"title": "t", "n": ' + b"7" * 5000 + b"}", 400, "bad_json", "4300 digits"),
    ("NUL", b'{"title": "a\\u0000b"}', 400, "bad_unicode", "'title' holds a NUL"),
    ("NUL in a key", b'{"ti\\u0000tle": "a"}', 400, "bad_unicode", "'ti\\u0000tle'"),
    ("unknown field", b'{"no_such_field": 1}', 400, None, "no_such_field"),
    (
        "too large",
        b'{"text": "' + b"x" * (LIMIT + 10) + b'"}',
        413,
        "body_too_large",
        f"limit of {LIMIT} bytes",
    ),
    ("a list", b"[1, 2]", 400, "bad_json", "must be an object"),
    ("a string", b'"text"', 400, "bad_json", "must be an object"),
    ("NaN", b'{"n": NaN}', 400, "bad_json", "NaN"),
    ("2**63", b'{"n": 9223372036854775808}', 400, "bad_json", "'n' is out of range"),
]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "max_body_bytes": LIMIT}


def route_table(jp_serverapp: Any) -> list[tuple[str, str]]:
    """``(METHOD, path template)`` of every method the running extension's handlers
    define, e.g. ``("PATCH", "agent/chats/{chat_id}")``."""
    routes = []
    for pattern, handler in agent_app(jp_serverapp).handlers:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern).lstrip("/")
        for name in METHODS:
            method = getattr(handler, name, None)
            if method is not None and method.__module__.startswith("jupyter_agent."):
                routes.append((name.upper(), path))
    return sorted(routes)


def snapshot(fetch: Any, root: Path) -> dict[str, Any]:
    """What a refused request must not change."""
    state: dict[str, Any] = {}
    for name, parts in {
        "chats": ("agent", "chats"),
        "runs": ("agent", "runs"),
        "memories": ("agent", "memories"),
        "settings": ("agent", "settings"),
        "programs": ("agent", "programs"),
        "proposals": ("agent", "proposals"),
    }.items():
        code, body = call(fetch, *parts)
        assert code == 200
        state[name] = body
    for chat in state["chats"]["chats"]:
        state[chat["id"]] = call(fetch, "agent", "chats", chat["id"])[1]
    state["root"] = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    return state


def send(fetch: Any, method: str, url: str, body: bytes) -> tuple[int, Any]:
    """The answer's status and body (JSON decoded when it is JSON; a 2xx is returned,
    not raised)."""
    try:
        response = fetch(*url.split("/"), method=method, body=body, allow_nonstandard_methods=True)
    except HTTPClientError as error:
        if error.response is None:  # no answer at all (a timeout): not a refusal
            raise
        response = error.response
    try:
        return response.code, json.loads(response.body)
    except ValueError:
        return response.code, response.body[:200]


def test_every_route_refuses_every_malformed_body_clearly_and_writes_nothing(
    fetch: Any, spin: Any, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    chat_id = new_chat(fetch, "matrix")
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hello"}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    code, memory = call(fetch, "agent", "memories", method="POST", body={"text": "likes tea"})
    assert code == 201
    ids = {
        "chat_id": chat_id,
        "run_id": sent["run_id"],
        "other": sent["run_id"],
        "memory_id": memory["id"],
        "approval_id": "appr_01MATRIX",
        "proposal_id": "prop_01MATRIX",
        "eval_id": "eval_01MATRIX",
        "name": "toolcaller",
    }
    routes = route_table(jp_serverapp)
    assert len(routes) >= 30, routes
    before = snapshot(fetch, jp_root_dir)
    tried = 0
    for method, template in routes:
        url = template.format(**ids)
        for what, body, status, reason, said in BODIES:
            code, answer = send(fetch, method, url, body)
            where = f"{method} {template} with {what}: {code} {answer}"
            assert code != 500, where
            tried += 1
            if template == MCP and method == "POST":
                # MCP's own protocol answers it (a JSON-RPC error); never a 500 or a 2xx.
                assert 400 <= code < 500, where
                continue
            if template == EVENTS:
                # The WebSocket route refuses a request that is no upgrade, whatever its
                # body (tornado's plain 400 "Can \"Upgrade\" only to \"WebSocket\"").
                assert 400 <= code < 500, where
                continue
            assert code == status, where
            assert set(answer) == {"message", "reason"}, where
            assert reason is None or answer["reason"] == reason, where
            assert answer["reason"], where
            assert said in answer["message"], where
            assert len(answer["message"]) < 400, where
    assert tried == len(routes) * len(BODIES)
    assert snapshot(fetch, jp_root_dir) == before


def test_an_empty_body_or_an_empty_object_is_still_fine_where_no_body_is_taken(
    fetch: Any,
) -> None:
    chat_id = new_chat(fetch, "empty")
    for body in (b"", b"{}", b" {} "):
        code, chat = call(
            fetch, "agent", "chats", chat_id, body=body, allow_nonstandard_methods=True
        )
        assert code == 200
        assert chat["title"] == "empty"
    error = refused(
        fetch,
        "agent",
        "chats",
        chat_id,
        status=400,
        method="DELETE",
        body=b'{"force": true}',
        allow_nonstandard_methods=True,
    )
    assert error == {
        "message": "unknown field(s) force: nothing can be sent here",
        "reason": "unknown_field",
    }
    assert call(fetch, "agent", "chats", chat_id)[0] == 200


def test_unknown_fields_are_named_on_the_chat_routes(fetch: Any, agent_service: Any) -> None:
    chat_id = new_chat(fetch, "named")
    cases: list[tuple[str, tuple[str, ...], dict[str, Any], str]] = [
        ("POST", ("agent", "chats"), {"title": "x", "titel": "y"}, "'agent', 'title'"),
        ("PATCH", ("agent", "chats", chat_id), {"title": "x", "owner": "bob"}, "'model', 'title'"),
        (
            "POST",
            ("agent", "chats", chat_id, "messages"),
            {"text": "hi", "model": "gpt"},
            "'attachments', 'control', 'text', 'view'",
        ),
    ]
    for method, parts, body, allowed in cases:
        error = refused(fetch, *parts, status=400, method=method, body=body)
        extra = next(k for k in body if k not in ("title", "text"))
        assert error == {
            "message": f"unknown field(s) {extra}: only {allowed} can be sent",
            "reason": "unknown_field",
        }
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert (chat["title"], chat["turns"]) == ("named", [])
    assert len(agent_service.store.list_chats()) == 1


def test_integers_are_range_checked(fetch: Any) -> None:
    rollback = ("agent", "programs", "toolcaller", "rollback")
    _, programs = call(fetch, "agent", "programs")
    too_big = b'{"to": 9223372036854775808}'  # 2**63
    error = refused(fetch, *rollback, status=400, method="POST", body=too_big)
    assert error["reason"] == "bad_json"
    assert error["message"].startswith("'to' is out of range")
    for to in (0, -1, 2**62, INT_MAX, True, "3"):
        error = refused(fetch, *rollback, status=400, method="POST", body={"to": to})
        assert error == {
            "message": "'to' must be an integer from 1 to 999999",
            "reason": "bad_request",
        }
    assert call(fetch, "agent", "programs")[1] == programs  # nothing rolled back
    for parts, params, reason in (
        (("agent", "runs"), {"limit": "9" * 25}, "bad_limit"),
        (("agent", "runs"), {"limit": "9" * 5000}, "bad_limit"),
        (("agent", "memories"), {"limit": str(2**63)}, "bad_memory"),
    ):
        error = refused(fetch, *parts, status=400, params=params)
        assert error["reason"] == reason
        assert len(error["message"]) < 300


def test_a_nul_in_a_query_or_a_path_segment_is_bad_unicode(fetch: Any) -> None:
    chat_id = new_chat(fetch, "nul")
    error = refused(fetch, "agent", "chats", "chat\x00x", status=400)
    assert error == {
        "message": "'chat_id' holds a NUL character (\\u0000): send text without it",
        "reason": "bad_unicode",
    }
    for parts, params in (
        (("agent", "runs"), {"before": "a\x00b"}),
        (("agent", "runs"), {"program": "\x00"}),
        (("agent", "memories"), {"q": "tea\x00"}),
        (("agent", "proposals"), {"chat_id": chat_id + "\x00"}),
    ):
        error = refused(fetch, *parts, status=400, params=params)
        name = next(iter(params))
        assert error == {
            "message": f"'{name}' holds a NUL character (\\u0000): send text without it",
            "reason": "bad_unicode",
        }
