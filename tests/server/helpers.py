"""Helpers of the server tests: JSON calls, error checks, waiting for a run's turn."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError


def active_runs(manager: Any) -> list[str]:
    """The ids of every run in progress of a ``RunManager`` (tests only)."""
    return manager.running_ids()


def call(fetch: Any, *parts: str, method: str = "GET", body: Any = None, **kw: Any) -> Any:
    """A JSON call; answers ``(status, decoded body or None)``."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if method in ("POST", "PUT", "PATCH") and body is None:
        body = b""
    response = fetch(*parts, method=method, body=body, **kw)
    data = json.loads(response.body) if response.body else None
    return response.code, data


def refused(
    fetch: Any, *parts: str, status: int, method: str = "GET", body: Any = None, **kw: Any
) -> dict[str, Any]:
    """Call and expect an error ``status`` with a ``{message, reason}`` JSON body."""
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if method in ("POST", "PUT", "PATCH") and body is None:
        body = b""
    with pytest.raises(HTTPClientError) as info:
        fetch(*parts, method=method, body=body, **kw)
    assert info.value.code == status, (info.value.code, info.value.response)
    assert info.value.response is not None
    data: dict[str, Any] = json.loads(info.value.response.body)
    assert set(data) == {"message", "reason"}
    assert isinstance(data["message"], str)
    assert data["message"]
    return data


def new_chat(fetch: Any, title: str | None = None) -> str:
    code, chat = call(
        fetch, "agent", "chats", method="POST", body={"title": title} if title else {}
    )
    assert code == 201
    return str(chat["id"])


def wait_turn(
    fetch: Any, spin: Callable[[float], None], chat_id: str, run_id: str, timeout_s: float = 60
) -> dict[str, Any]:
    """Poll ``GET agent/chats/{id}`` until the run's turn is there (and the run ended)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _, chat = call(fetch, "agent", "chats", chat_id)
        for turn in chat["turns"]:
            if turn["run_id"] == run_id and chat["active_run_id"] != run_id:
                return dict(turn)
        spin(0.05)
    raise AssertionError(f"no turn for {run_id} within {timeout_s} s")


def run_cli(spin: Any, argv: list[str]) -> int:
    """``jupyter agent ARGV`` (the CLI's ``main``) in a thread, the server's loop spinning
    meanwhile (the test's server runs on this thread's loop); its exit code."""
    from jupyter_agent.cli.main import main

    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(main(argv)))
    thread.start()
    while thread.is_alive():
        spin(0.02)
    thread.join()
    return code[0]
