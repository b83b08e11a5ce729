"""Inline completion (issue 29, item 1): ``POST agent/complete`` through a real Jupyter
Server and the fake provider in each wire (Anthropic, OpenAI chat, OpenAI-compatible).

Checked: the streamed NDJSON lines and the final text (code fences taken off); the
prompt holds the notebook's cells above and below and the cursor between prefix and
suffix; usage counts in ``GET agent/status`` ``usage.complete``; bad input (an oversized
prefix, an unknown notebook, a bad language), no token (403), the demo model (409
``no_completion_tier``), the per-owner rate (429 with Retry-After); a request the client
abandons closes the model's stream (the fake sees its client gone).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import nbformat
import pytest

from tests.server.helpers import refused

pytestmark = pytest.mark.timeout(120)

WIRES = {
    "anthropic": {"provider": "fake", "model": "claude-haiku-4-5"},
    "openai-chat": {"provider": "openai", "model": "gpt-4o-mini", "suffix": "/v1"},
    "openai-compatible": {
        "provider": "openai-compatible",
        "model": "qwen2.5-coder",
        "suffix": "/v1",
    },
}


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "```python\nsum(values)\n```"}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any, request: pytest.FixtureRequest) -> dict[str, Any]:
    name = (
        request.node.callspec.params.get("wire", "anthropic")
        if hasattr(request.node, "callspec")
        else "anthropic"
    )
    spec = dict(WIRES[name])
    base = fake.base_url + spec.pop("suffix", "")
    tier = {**spec, "base_url": base}
    if spec["provider"] == "openai":
        tier["api_key_ref"] = "env:FAKE_OPENAI_KEY"
    codegen = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": codegen, "complete": tier}, "complete_rate": 5}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-fake-not-a-secret-0000")


def _notebook(root: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("values = [1, 2, 3]", id="above"),
        nbformat.v4.new_code_cell("total = ", id="here"),
        nbformat.v4.new_code_cell("print(total)", id="below"),
    ]
    nbformat.write(nb, root / "sums.ipynb")
    return "sums.ipynb"


def _complete(fetch: Any, **body: Any) -> tuple[list[dict[str, Any]], Any]:
    response = fetch("agent", "complete", method="POST", body=json.dumps(body))
    lines = [json.loads(line) for line in response.body.decode().splitlines() if line]
    return lines, response


def test_a_completion_in_each_wire(fetch: Any, fake: Any, wire: str, jp_root_dir: Path) -> None:
    path = _notebook(jp_root_dir)
    lines, response = _complete(
        fetch, path=path, cell_id="here", prefix="total = ", suffix="\n", language="python"
    )
    assert response.headers["Content-Type"].startswith("application/x-ndjson")
    final = lines[-1]
    assert final["text"] == "sum(values)"
    assert final["model"] == WIRES[wire]["model"]
    assert "".join(line.get("delta", "") for line in lines[:-1]).startswith("```python")
    sent = json.dumps(fake.requests[-1].json)
    assert "values = [1, 2, 3]" in sent and "print(total)" in sent  # noqa: PT018
    assert "total = <CURSOR>" in sent
    assert fake.requests[-1].wire == ("anthropic" if wire == "anthropic" else "openai-chat")
    status = json.loads(fetch("agent", "status").body)
    assert status["usage"]["complete"]["requests"] == 1
    assert status["usage"]["complete"]["input_tokens"] > 0


def test_bad_input_is_refused(fetch: Any, jp_root_dir: Path) -> None:
    path = _notebook(jp_root_dir)
    error = refused(fetch, "agent", "complete", method="POST", status=400,
                    body={"path": path, "prefix": "x" * 20_001, "language": "python"})  # fmt: skip
    assert error["reason"] == "too_large" and "20,000" in error["message"]  # noqa: PT018
    error = refused(fetch, "agent", "complete", method="POST", status=404,
                    body={"path": "nope.ipynb", "prefix": "x", "language": "python"})  # fmt: skip
    assert "nope.ipynb" in error["message"]
    refused(fetch, "agent", "complete", method="POST", status=400,
            body={"path": path, "prefix": "x", "language": "py thon"})  # fmt: skip
    refused(fetch, "agent", "complete", method="POST", status=400,
            body={"path": "../out.ipynb", "prefix": "x", "language": "python"})  # fmt: skip


def test_no_token_is_refused(fetch: Any) -> None:
    error = refused(fetch, "agent", "complete", method="POST", status=403,
                    headers={"Authorization": "token wrong"},
                    body={"prefix": "x = ", "language": "python"})  # fmt: skip
    assert error["reason"] == "auth"


def test_a_model_that_fails_after_the_stream_began_is_said_last(fetch: Any, fake: Any) -> None:
    fake.load({"steps": [{"error": {"status": 400}, "delay_s": 0.6}], "repeat": True})
    lines, response = _complete(fetch, prefix="x = ", language="python")
    assert response.code == 200  # the keep-alive lines had begun the answer
    assert lines[-1]["error"]["reason"] == "provider"
    assert "text" not in lines[-1]


def test_the_rate_per_owner(fetch: Any) -> None:
    for _ in range(5):
        _complete(fetch, prefix="x = ", language="python")
    error = refused(fetch, "agent", "complete", method="POST", status=429,
                    body={"prefix": "x = ", "language": "python"})  # fmt: skip
    assert error["reason"] == "rate_limited"


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_the_demo_model_never_completes(fetch: Any) -> None:
    error = refused(fetch, "agent", "complete", method="POST", status=409,
                    body={"prefix": "x = ", "language": "python"})  # fmt: skip
    assert error["reason"] == "no_completion_tier"


def test_an_abandoned_request_closes_the_model_stream(
    fetch: Any, fake: Any, spin: Any, jp_http_port: int, jp_base_url: str, jp_serverapp: Any
) -> None:
    """(``fetch``: the server listens only once its HTTP fixture is up.)"""
    fake.load({"steps": [{"text": "slow", "delay_s": 8}], "repeat": True})
    before = len(fake.requests)
    token = jp_serverapp.identity_provider.token
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}agent/complete"
    failures: list[int] = []

    def ask() -> None:  # the browser: it aborts the request (the person typed on)
        with httpx.Client(timeout=10) as client, client.stream(
            "POST", url, headers={"Authorization": f"token {token}"},
            json={"prefix": "x = ", "language": "python"},
        ) as response:  # fmt: skip
            failures.append(response.status_code)  # type: ignore[arg-type]
            # Abandoned once the model call is under way (on a slow machine the server may
            # reach the model after half a second: only a call begun can be closed).
            deadline = time.monotonic() + 20
            while len(fake.requests) == before and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)
        # leaving the blocks closed the connection before the answer came

    thread = threading.Thread(target=ask)
    thread.start()
    while thread.is_alive():
        spin(0.02)
    assert failures == [200]
    deadline = time.monotonic() + 10
    while fake.went_away == 0:  # the fake's slow step sees its client gone
        assert time.monotonic() < deadline, "the model's stream stayed open"
        spin(0.05)
    assert time.monotonic() < deadline - 3  # closed well before the model's 8 s answer
    assert len(fake.requests) == before + 1


@pytest.mark.parametrize("wire", ["openai-chat"])
def test_a_provider_error_never_shows_the_key(fetch: Any, fake: Any, wire: str) -> None:
    """A provider that echoes the key it got in its error: the answer says the error
    without the key (the provider's text is scrubbed too, should it ever be passed on)."""
    fake.load(
        {
            "steps": [{"error": {"status": 401, "message": "bad key sk-fake-not-a-secret-0000"}}],
            "repeat": True,
        }
    )
    lines, _ = _complete(fetch, prefix="x = ", language="python")
    said = json.dumps(lines)
    assert lines[-1]["error"]["reason"] == "provider", said
    assert "sk-fake-not-a-secret-0000" not in said
    assert "HTTP 401" in said
