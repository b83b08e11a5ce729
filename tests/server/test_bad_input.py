"""Bad input the probe of issue 12 found: deeply nested JSON and 5,000-character names.

Every route answers a clear 4xx ``{message, reason}``, never a 500, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call, new_chat, refused, wait_turn

LONG = 5000


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


def test_probe(fetch: Any, spin: Any, jp_root_dir: Path) -> None:
    chat_id, run_id = one_run(fetch, spin)
    cases = [
        ("POST", ("agent", "runs", run_id, "notebook"), {"path": "x" * (LONG - 6) + ".ipynb"}),
        ("POST", ("agent", "runs", run_id, "notebook"), {"path": "y" * 300 + ".ipynb"}),
        ("POST", ("agent", "runs", run_id, "notebook"), {"path": "/".join(["d" * 200] * 25) + "/n.ipynb"}),
        ("POST", ("agent", "chats", chat_id, "messages"), {"text": "hi", "attachments": ["a" * LONG]}),
        ("POST", ("agent", "chats", chat_id, "messages"), {"text": "hi", "view": {"path": "v" * LONG}}),
        ("POST", ("agent", "chats"), {"title": "t" * LONG}),
        ("PATCH", ("agent", "chats", chat_id), {"title": "t" * LONG}),
        ("GET", ("agent", "chats", "c" * LONG), None),
        ("PATCH", ("agent", "chats", "c" * LONG), {"title": "x"}),
        ("DELETE", ("agent", "chats", "c" * LONG), None),
        ("GET", ("agent", "chats", "c" * LONG, "notebook"), None),
        ("POST", ("agent", "chats", "c" * LONG, "notebook"), {}),
        ("POST", ("agent", "chats", "c" * LONG, "messages"), {"text": "x"}),
        ("GET", ("agent", "runs", "run_" + "r" * LONG), None),
        ("GET", ("agent", "runs", "run_" + "r" * LONG, "notebook"), None),
        ("POST", ("agent", "runs", "run_" + "r" * LONG, "notebook"), {}),
        ("GET", ("agent", "runs", "run_" + "r" * LONG, "stats"), None),
        ("POST", ("agent", "break", "run_" + "r" * LONG), {}),
    ]
    from tornado.httpclient import HTTPClientError
    for method, parts, body in cases:
        try:
            code, answer = call(fetch, *parts, method=method, body=body)
            print("OK", method, "/".join(p[:20] for p in parts), str(body)[:40], code, str(answer)[:150])
        except HTTPClientError as exc:
            print("ERR", method, "/".join(p[:20] for p in parts), str(body)[:40], exc.code, exc.response.body[:200] if exc.response else None)
    for q in ({"program": "p" * LONG}, {"before": "b" * LONG}, {"limit": "9" * LONG}):
        try:
            code, answer = call(fetch, "agent", "runs", params=q)
            print("OK runs", list(q), code)
        except HTTPClientError as exc:
            print("ERR runs", list(q), exc.code, exc.response.body[:200] if exc.response else None)
        except Exception as exc:
            print("EXC", exc)
