"""Bad input found by the probe of issue 12: deeply nested JSON and 5,000-character names.

Every route answers a clear 4xx ``{message, reason}`` (never a 500) and writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call, new_chat, refused, wait_turn

LONG = 5000
DEEP = b"[" * 100_000


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Noted."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def one_run(fetch: Any, spin: Any) -> tuple[str, str]:
    chat_id = new_chat(fetch, "probe")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hello"}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    return chat_id, str(answer["run_id"])


def test_deeply_nested_json_is_bad_json_on_every_route_with_a_body(
    fetch: Any, agent_service: Any
) -> None:
    chat_id = new_chat(fetch, "deep")
    routes: list[tuple[str, tuple[str, ...]]] = [
        ("POST", ("agent", "chats", chat_id, "messages")),
        ("PUT", ("agent", "settings")),
        ("POST", ("agent", "chats")),
        ("PATCH", ("agent", "chats", chat_id)),
        ("POST", ("agent", "runs", "run_0123", "notebook")),
        ("POST", ("agent", "break", "run_0123")),
    ]
    for method, parts in routes:
        for body in (DEEP, b'{"a":' * 100_000):
            error = refused(fetch, *parts, status=400, method=method, body=body)
            assert error == {
                "message": "Invalid JSON body: nested too deeply",
                "reason": "bad_json",
            }
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["title"] == "deep"
    assert chat["turns"] == []
    assert len(agent_service.store.list_chats()) == 1


def test_five_thousand_character_names_are_clear_refusals(
    fetch: Any, spin: Any, jp_root_dir: Path
) -> None:
    chat_id, run_id = one_run(fetch, spin)
    before = sorted(p.name for p in jp_root_dir.iterdir())
    long_run = "run_" + "r" * LONG
    long_chat = "c" * LONG
    cases: list[tuple[str, tuple[str, ...], Any, int, str]] = [
        # a notebook path: one name over 255 bytes, or over 4096 bytes in all
        (
            "POST",
            ("agent", "runs", run_id, "notebook"),
            {"path": "x" * LONG + ".ipynb"},
            400,
            "bad_path",
        ),
        (
            "POST",
            ("agent", "runs", run_id, "notebook"),
            {"path": "y" * 300 + ".ipynb"},
            400,
            "bad_path",
        ),
        (
            "POST",
            ("agent", "runs", run_id, "notebook"),
            {"path": "/".join(["d" * 200] * 25) + "/n.ipynb"},
            400,
            "bad_path",
        ),
        (
            "POST",
            ("agent", "chats", chat_id, "messages"),
            {"text": "hi", "view": {"path": "v" * LONG}},
            400,
            "bad_path",
        ),
        (
            "POST",
            ("agent", "chats", chat_id, "messages"),
            {"text": "hi", "attachments": ["a" * LONG]},
            400,
            "bad_path",
        ),
        ("POST", ("agent", "chats"), {"title": "t" * LONG}, 400, "bad_title"),
        ("PATCH", ("agent", "chats", chat_id), {"title": "t" * LONG}, 400, "bad_title"),
        ("GET", ("agent", "chats", long_chat), None, 404, "not_found"),
        ("PATCH", ("agent", "chats", long_chat), {"title": "x"}, 404, "not_found"),
        ("DELETE", ("agent", "chats", long_chat), None, 404, "not_found"),
        ("GET", ("agent", "chats", long_chat, "notebook"), None, 404, "not_found"),
        ("POST", ("agent", "chats", long_chat, "notebook"), {}, 404, "not_found"),
        ("POST", ("agent", "chats", long_chat, "messages"), {"text": "x"}, 404, "not_found"),
        ("GET", ("agent", "runs", long_run), None, 404, "not_found"),
        ("GET", ("agent", "runs", long_run, "notebook"), None, 404, "not_found"),
        ("POST", ("agent", "runs", long_run, "notebook"), {}, 404, "not_found"),
        ("GET", ("agent", "runs", long_run, "stats"), None, 404, "not_found"),
        ("POST", ("agent", "break", long_run), {}, 404, "not_found"),
    ]
    for method, parts, body, status, reason in cases:
        error = refused(fetch, *parts, status=status, method=method, body=body)
        assert error["reason"] == reason, (parts, error)
        assert len(error["message"]) < 300, error["message"]  # the name is cut, not echoed
    for query, reason in (
        ({"before": "b" * LONG}, "bad_page"),
        ({"limit": "9" * LONG}, "bad_limit"),
    ):
        error = refused(fetch, "agent", "runs", status=400, params=query)
        assert error["reason"] == reason
        assert len(error["message"]) < 300
    assert not (jp_root_dir / ("e" * 250)).exists()  # the folders made on the way are gone
    code, page = call(fetch, "agent", "runs", params={"program": "p" * LONG})
    assert (code, page["runs"]) == (200, [])
    assert sorted(p.name for p in jp_root_dir.iterdir()) == before
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert [t["run_id"] for t in chat["turns"]] == [run_id]
    assert chat["title"] == "probe"


def test_a_path_the_file_system_finds_too_long_is_bad_path(
    fetch: Any, spin: Any, jp_root_dir: Path
) -> None:
    # Within the API's limits (names under 255 bytes, under 4096 in all), but the server's
    # root makes the whole path longer than the OS allows: ENAMETOOLONG, answered 400.
    _, run_id = one_run(fetch, spin)
    path = "/".join(["e" * 250] * 16) + "/" + "n" * 60 + ".ipynb"
    assert len(str(jp_root_dir / path).encode()) > 4096 >= len(path.encode())
    error = refused(
        fetch, "agent", "runs", run_id, "notebook", status=400, method="POST", body={"path": path}
    )
    assert error["reason"] == "bad_path"
    assert "too long for the server's file system" in error["message"]
    assert len(error["message"]) < 300
    assert not (jp_root_dir / ("e" * 250)).exists()  # the folders made on the way are gone
