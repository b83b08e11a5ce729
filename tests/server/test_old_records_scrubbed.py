"""Records written before secrets were scrubbed in every form are scrubbed when read.

A run stored by an older version may hold a key its model decoded (the reply text of the
effect log and of the stored turn). What a client reads of it -- the run's detail, the
chat with its turns, the run's and the chat's notebooks -- goes through the scrubber
again, so the key never leaves the server. The raw effect log (``log=raw``) is served as
written: it is what a replay reads.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.server.test_e2e import Server, new_chat, send, start_server, stop_server, wait_turn

pytestmark = pytest.mark.timeout(300)

KEY = "sk-ant-old-" + secrets.token_hex(20)
MARKER = "[redacted: ANTHROPIC_API_KEY]"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    fake = FakeProvider([]).start()
    tier = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": fake.base_url,
        "api_key_ref": "env:ANTHROPIC_API_KEY",
    }
    started = start_server(
        tmp_path_factory.mktemp("old-records"),
        {"pool_size": 0, "tiers": {"codegen": tier}},
        fake,
        extra_env={"ANTHROPIC_API_KEY": KEY},
    )
    try:
        yield started
    finally:
        stop_server(started)
        fake.stop()


def _as_an_old_version_wrote_it(server: Server, run_id: str) -> None:
    """Put the key into the stored reply, in the log and in the database."""
    data = server.root.parent / "data" / "jupyter_agent"
    log = data / "runs" / f"{run_id}.jsonl"
    text = log.read_text(encoding="utf-8")
    assert "Old reply." in text
    log.write_text(text.replace("Old reply.", f"Old reply {KEY}"), encoding="utf-8")
    with sqlite3.connect(data / "agent.sqlite") as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(agent_turns)")]
        for column in columns:
            db.execute(
                f"UPDATE agent_turns SET {column} = replace({column}, 'Old reply.', ?)"
                f" WHERE typeof({column}) = 'text' AND run_id = ?",
                (f"Old reply {KEY}", run_id),
            )


def test_an_old_run_holding_a_key_is_read_scrubbed(server: Server) -> None:
    server.fake.load([{"text": "Old reply."}])
    with server.http() as client:
        chat_id = new_chat(client)
        run_id = send(client, chat_id, "hello")["run_id"]
        wait_turn(client, chat_id, run_id)
        _as_an_old_version_wrote_it(server, run_id)
        assert KEY in client.get(f"agent/runs/{run_id}", params={"log": "raw"}).text
        for path in (
            f"agent/runs/{run_id}",
            f"agent/runs/{run_id}/notebook",
            f"agent/chats/{chat_id}",
            f"agent/chats/{chat_id}/notebook",
        ):
            response = client.get(path)
            assert response.status_code == 200, (path, response.text)
            assert KEY not in response.text, path
            assert MARKER in response.text, path
