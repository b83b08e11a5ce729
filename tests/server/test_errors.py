"""The one error writer (server/base.py): every class of the error tree has a status, bad
bodies and queries answer the documented 400 naming the field, and a locked database is
503 with ``Retry-After``, all as ``{message, reason}`` JSON."""

from __future__ import annotations

import importlib
import pkgutil
import sqlite3
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from tornado.httpclient import HTTPClientError

import jupyter_agent
from jupyter_agent.exceptions import (
    AgentError,
    ApprovalDecided,
    BadRequest,
    ClientError,
    Conflict,
    Forbidden,
    NotFound,
    NotSupported,
    PathRefused,
    PayloadTooLarge,
    ProgramRefused,
    ProposalConflict,
    ProposalDecided,
    RequestError,
    SettingsError,
    StoreUnavailable,
    TooManyRequests,
    Unavailable,
)
from jupyter_agent.server.base import ERROR_STATUS, error_status
from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat, refused

#: Every request error and the status it answers: a new class needs its line here.
EXPECTED = {
    RequestError: 400,
    BadRequest: 400,
    SettingsError: 400,
    ProgramRefused: 400,
    PathRefused: 400,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    ProposalConflict: 409,
    ProposalDecided: 409,
    ApprovalDecided: 409,
    PayloadTooLarge: 413,
    TooManyRequests: 429,
    NotSupported: 501,
    Unavailable: 503,
    StoreUnavailable: 503,
}


@pytest.fixture
def jp_base_url() -> str:
    return "/"  # the error writer does not depend on the base URL (tested elsewhere)


def _every_error_class() -> list[type[BaseException]]:
    for module in pkgutil.walk_packages(jupyter_agent.__path__, "jupyter_agent."):
        if module.name.startswith(("jupyter_agent.kernel", "jupyter_agent.labextension")):
            continue
        importlib.import_module(module.name)
    found: list[type[BaseException]] = [AgentError]
    for cls in found:
        found.extend(sub for sub in cls.__subclasses__() if sub not in found)
    return found


def test_every_class_in_the_tree_has_a_status() -> None:
    classes = _every_error_class()
    for cls in classes:
        status = error_status(cls)
        assert 400 <= status <= 599, cls
        if issubclass(cls, RequestError) and cls.__module__.startswith("jupyter_agent."):
            assert cls in EXPECTED, f"{cls.__name__} has no expected status in this test"
            assert status == EXPECTED[cls], cls
        elif not issubclass(cls, RequestError):
            assert status == 500, cls  # internal: details stay in the server's log
    assert error_status(ClientError) == 500
    assert error_status(ValueError) == 500
    # The table lists classes of the tree only, each once, by its nearest base.
    assert set(ERROR_STATUS) <= set(classes)


def test_bad_bodies_and_queries_name_the_field(fetch: Any) -> None:
    chat_id = new_chat(fetch)
    cases: list[tuple[str, list[str], Any, dict[str, Any], str, str]] = [
        ("POST", ["chats"], {"title": 5}, {}, "bad_title", "'title'"),
        ("POST", ["chats"], {"title": "x" * 201}, {}, "bad_title", "'title'"),
        ("PATCH", ["chats", chat_id], {}, {}, "bad_title", "'title'"),
        ("POST", ["chats", chat_id, "messages"], {"text": 1}, {}, "bad_text", "'text'"),
        (
            "POST",
            ["chats", chat_id, "messages"],
            {"text": "hi", "attachments": "a.txt"},
            {},
            "bad_attachments",
            "'attachments'",
        ),
        (
            "POST",
            ["chats", chat_id, "messages"],
            {"control": {"kind": "break", "hard": 1}},
            {},
            "bad_control",
            "'control.hard'",
        ),
        (
            "POST",
            ["chats", chat_id, "messages"],
            {"text": "hi", "view": {"cell": True}},
            {},
            "bad_view",
            "'view.cell'",
        ),
        ("PUT", ["settings"], {"tiers": []}, {}, "bad_settings", "'tiers'"),
        ("PUT", ["settings"], {"pool_size": 1}, {}, "bad_settings", "pool_size"),
        ("GET", ["runs"], None, {"limit": "ten"}, "bad_limit", "'limit'"),
        ("GET", ["runs"], None, {"limit": "0"}, "bad_page", "limit"),
        ("GET", ["runs"], None, {"before": "garbage"}, "bad_page", ""),
        ("POST", ["break", "run_01X"], {"hard": "yes"}, {}, "bad_hard", "'hard'"),
        (
            "POST",
            ["runs", "run_01X", "notebook"],
            {"overwrite": "yes"},
            {},
            "bad_overwrite",
            "'overwrite'",
        ),
        ("POST", ["runs", "run_01X", "notebook"], {"path": 3}, {}, "bad_path", "'path'"),
        ("POST", ["runs", "run_01X", "notebook"], {"path": "a.txt"}, {}, "bad_path", "'path'"),
        ("GET", ["chats", chat_id, "events"], None, {"since": "x"}, "bad_since", "'since'"),
    ]
    for method, parts, body, params, reason, field in cases:
        error = refused(fetch, "agent", *parts, method=method, body=body, params=params, status=400)
        assert error["reason"] == reason, (method, parts, body, params, error)
        assert field in error["message"], (method, parts, body, params, error)
    # Nothing was written by any of them.
    _, chats = call(fetch, "agent", "chats")
    assert [c["title"] for c in chats["chats"]] == [""]


def test_not_found_is_json_on_every_kind_of_route(fetch: Any) -> None:
    for method, parts, body in (
        ("GET", ["chats", "chat_nope"], None),
        ("POST", ["chats", "chat_nope", "messages"], {"text": "hi"}),
        ("GET", ["chats", "chat_nope", "events"], None),  # the events socket, before upgrade
        ("POST", ["break", "run_01NOPE"], {}),
        ("GET", ["runs", "run_01NOPE", "stats"], None),
    ):
        error = refused(fetch, "agent", *parts, method=method, body=body, status=404)
        assert error["reason"] == "not_found", (parts, error)
        assert "nope" in error["message"].lower(), (parts, error)


@pytest.mark.sqlite_only("holds SQLite's write lock from another connection of the file")
@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_a_locked_database_is_503_with_retry_after(fetch: Any, jp_serverapp: Any) -> None:
    app = agent_app(jp_serverapp)
    call(fetch, "agent", "chats")  # the service is started and its database made
    database = make_url(app.effective_db_url).database
    assert database
    holder = sqlite3.connect(database, isolation_level=None, timeout=1)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        with pytest.raises(HTTPClientError) as info:
            fetch("agent", "chats", method="POST", body=b"{}")
        assert info.value.code == 503
        response = info.value.response
        assert response is not None
        assert response.headers["Retry-After"] == "5"
        body = response.body.decode()
        assert '"reason": "unavailable"' in body
        assert "locked" in body
        code, _ = call(fetch, "agent", "chats")  # reads go on beside a writer's reserved lock
        assert code == 200
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert call(fetch, "agent", "chats", method="POST", body={})[0] == 201


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_no_service_is_503_without_retry_after(fetch: Any, jp_serverapp: Any) -> None:
    app = agent_app(jp_serverapp)
    services, app.services = app.services, None
    try:
        with pytest.raises(HTTPClientError) as info:
            fetch("agent", "settings", method="GET")
    finally:
        app.services = services
    assert info.value.code == 503
    assert info.value.response is not None
    assert "Retry-After" not in info.value.response.headers
    assert b'"reason": "unavailable"' in info.value.response.body
