"""Provider faults through a real run on a real server: each ends with a clear turn.

One ``jupyter server`` (module scope) whose codegen tier is the fake provider, with a key
(``api_key_ref: env:...``, checked by the fake) that must never show in a turn. For each
fault the run's turn has the right stop reason and end cause and, for a failure, a reply
naming the fault; the server stays up and the same chat then answers a new message.
(The transport's own retry, deadline and stream rules are tested in
``tests/llm/test_transport.py``; this is the whole path: driver, loop, turn, store.)
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.faults.server import FaultServer

pytestmark = pytest.mark.timeout(180)

KEY_ENV = "JUPYTER_AGENT_FAULTS_KEY"
KEY = "sk-ant-faults-" + secrets.token_hex(12)
DEADLINE_S = 4.0


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider([], expect_key=KEY) as provider:
        yield provider


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[FaultServer]:
    srv = FaultServer(
        Path(tmp_path_factory.mktemp("provider")),
        fake,
        {"model_deadline_s": DEADLINE_S},
        # Quick retries: the backoff is not what these tests are about.
        config={"Transport": {"backoff_base_s": 0.05, "backoff_max_s": 0.2}},
        env={KEY_ENV: KEY},
        tier={"api_key_ref": f"env:{KEY_ENV}"},
    )
    srv.start()
    yield srv
    srv.stop()


def _ask(server: FaultServer, fake: FakeProvider, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A new chat's first turn with ``steps`` scripted; then the chat must still answer."""
    fake.load([*steps, {"text": "Still here."}])
    with server.client() as client:
        chat_id = client.create_chat("provider fault")["id"]
    turn = server.send_and_wait(chat_id, "Hello?")
    assert KEY not in repr(turn)
    with server.client() as client:
        assert client.status()["tiers"]["codegen"]["ready"] is True
        log = client.run_log(turn["run_id"])
    assert KEY not in log
    again = server.send_and_wait(chat_id, "Are you still there?")
    assert again["llm"]["endCause"] == "done"
    assert again["replies"] == [{"text": "Still here.", "done": True}]
    return turn


def _reply(turn: dict[str, Any]) -> str:
    return "\n".join(r["text"] for r in turn["replies"])


def _failed(turn: dict[str, Any]) -> str:
    assert (turn["llm"]["stopReason"], turn["llm"]["endCause"]) == ("error", "error"), turn
    text = _reply(turn)
    assert text, turn
    return text


def test_a_429_then_success_is_retried_into_a_normal_turn(
    server: FaultServer, fake: FakeProvider
) -> None:
    turn = _ask(
        server, fake, [{"error": {"status": 429, "retry_after": 0.2}}, {"text": "Fine now."}]
    )
    assert (turn["llm"]["stopReason"], turn["llm"]["endCause"]) == ("done", "done")
    assert turn["replies"] == [{"text": "Fine now.", "done": True}]
    with server.client() as client:
        steps = client.run(turn["run_id"])["steps"]
    calls = [s for s in steps if s["type"] == "model_call"]
    assert [c["attempts"] for c in calls] == [2]


def test_5xx_until_the_attempts_run_out_ends_in_an_error_turn(
    server: FaultServer, fake: FakeProvider
) -> None:
    error = {"error": {"status": 500, "message": "injected server fault"}}
    text = _failed(_ask(server, fake, [error] * 5))
    assert "HTTP 500" in text
    assert "after 5 attempts" in text


def test_a_hanging_provider_ends_at_the_deadline(server: FaultServer, fake: FakeProvider) -> None:
    text = _failed(_ask(server, fake, [{"timeout": True}]))
    assert f"no complete reply within the {DEADLINE_S:g} s deadline" in text


def test_a_malformed_body_ends_in_an_error_turn(server: FaultServer, fake: FakeProvider) -> None:
    text = _failed(_ask(server, fake, [{"malformed": True}]))
    assert "not valid JSON" in text


def test_an_error_mid_stream_ends_in_an_error_turn(server: FaultServer, fake: FakeProvider) -> None:
    step = {"text": "one two three four", "stream_error_after": 2, "stream_error_type": "api_error"}
    text = _failed(_ask(server, fake, [step]))
    assert "stream error: api_error" in text
