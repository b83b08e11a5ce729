"""A store fault through the REST API: a locked or unwritable database refuses a message
with 503 ``Retry-After`` and leaves nothing behind, and the server keeps answering."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from tornado.httpclient import HTTPClientError

from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat

# SQLite's own faults: a second connection holding the file's write lock, chattr +i on the
# file. PostgreSQL's connection loss is tests/deploy/test_postgres.py.
pytestmark = pytest.mark.sqlite_only("faults of the SQLite file (its lock, chattr +i)")


@pytest.fixture
def jp_base_url() -> str:
    return "/"


def _database(jp_serverapp: Any, fetch: Any) -> Path:
    app = agent_app(jp_serverapp)
    call(fetch, "agent", "chats")  # the service is started and its database made
    database = make_url(app.effective_db_url).database
    assert database
    return Path(database)


def _no_trace_of(app: Any, chat_id: str) -> None:
    service = app.parts
    assert service.manager.active_run_id(chat_id) is None
    assert list(service.manager.runs_dir.glob("*.jsonl")) == []
    assert service.store.list_runs()[0] == []
    assert service.store.queued_mail() == []


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_a_locked_database_refuses_a_message_and_status_stays_fast(
    fetch: Any, jp_fetch: Any, jp_asyncio_loop: Any, jp_serverapp: Any
) -> None:
    database = _database(jp_serverapp, fetch)
    chat_id = new_chat(fetch)
    holder = sqlite3.connect(database, isolation_level=None, timeout=1)
    holder.execute("BEGIN IMMEDIATE")

    async def both() -> tuple[Any, list[float]]:
        post = asyncio.ensure_future(
            jp_fetch("agent", "chats", chat_id, "messages", method="POST", body=b'{"text": "hi"}')
        )
        latencies = []
        while not post.done():  # status answers while the message waits on the lock
            t0 = time.monotonic()
            await jp_fetch("agent", "status")
            latencies.append(time.monotonic() - t0)
            await asyncio.sleep(0.1)
        try:
            return await post, latencies
        except HTTPClientError as err:
            return err, latencies

    try:
        outcome, latencies = jp_asyncio_loop.run_until_complete(both())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(outcome, HTTPClientError), outcome
    assert outcome.code == 503
    assert outcome.response is not None
    assert outcome.response.headers["Retry-After"] == "5"
    assert b'"reason": "unavailable"' in outcome.response.body
    assert len(latencies) > 10
    assert max(latencies) < 2.0, latencies
    _no_trace_of(agent_app(jp_serverapp), chat_id)
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hi"}
    )
    assert code == 202
    assert answer["routed"] == "run"


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_an_immutable_database_is_503_and_the_server_lives(
    fetch: Any, jp_serverapp: Any, tmp_path: Path
) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    database = _database(jp_serverapp, fetch)
    chat_id = new_chat(fetch)
    targets = [p for p in (database, Path(f"{database}-journal")) if p.exists()]
    done = subprocess.run(["chattr", "+i", *map(str, targets)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("chattr +i needs root and a filesystem with immutable files")
    try:
        with pytest.raises(HTTPClientError) as info:
            fetch("agent", "chats", chat_id, "messages", method="POST", body=b'{"text": "hi"}')
        assert info.value.code == 503
        assert info.value.response is not None
        assert b"disk I/O error" in info.value.response.body
        assert call(fetch, "agent", "status")[0] == 200  # no signal took the server down
    finally:
        subprocess.run(["chattr", "-i", *map(str, targets)], check=True)
    _no_trace_of(agent_app(jp_serverapp), chat_id)
    code, _ = call(fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "x"})
    assert code == 202
