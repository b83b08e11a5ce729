"""GET agent/status through a real Jupyter Server (pytest-jupyter's jp_fetch; see conftest).

The server is configured with the extension enabled and, per test, a different
environment (keys present or not) or authorizer; the base URL is both the root and a
JupyterHub-style user prefix.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from tornado.httpclient import HTTPClientError

import jupyter_agent
from jupyter_agent.server.app import JupyterAgent

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


class DenyAllAuthorizer(Authorizer):  # type: ignore[misc]
    """An authorizer that refuses every action on every resource."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return False


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every provider key from the server's environment."""
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def get_status(fetch: Any, **kwargs: Any) -> dict[str, Any]:
    response = fetch("agent", "status", method="GET", **kwargs)
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    body: dict[str, Any] = json.loads(response.body)
    return body


@pytest.mark.usefixtures("no_keys")
def test_status_shape_and_demo_without_key(fetch: Any, jp_serverapp: Any) -> None:
    status = get_status(fetch)
    assert set(status) == {"version", "tiers", "demo", "history", "kernels", "usage"}
    # The agent's kernels (in no Jupyter listing): this server's pool is empty.
    assert status["kernels"] == {"warm": 0, "starting": 0, "in_use": 0}
    # The chunk summaries: nothing due, nothing failing (issue 14).
    assert status["history"] == {"pending": 0, "failing": 0, "last_error": None}
    assert status["version"] == jupyter_agent.__version__
    assert status["demo"] is True
    # codegen is the configured default; classify and vision fall back to it.
    assert set(status["tiers"]) == {"codegen", "classify", "vision"}
    for tier in status["tiers"].values():
        assert tier == {
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "ready": False,
            "key_set": False,
            "reason": "env:ANTHROPIC_API_KEY is not set on the server",
        }


def test_status_ready_with_key_never_shows_it(fetch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "canary-" + secrets.token_hex(16)
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    response = fetch("agent", "status", method="GET")
    raw = response.body.decode()
    assert canary not in raw
    assert "ANTHROPIC_API_KEY" not in raw  # not even the reference's name
    status = json.loads(raw)
    assert status["demo"] is False
    assert status["tiers"]["codegen"]["ready"] is True


CUSTOM_TIERS = {
    "codegen": {"provider": "openai-compatible", "model": "local", "base_url": "http://x"},
    "vision": {"provider": "openai", "model": "v", "api_key_ref": "env:OPENAI_API_KEY"},
    "odd": {"provider": "no-such-provider", "model": "m"},
}


@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize("agent_config", [{"tiers": CUSTOM_TIERS}])
def test_status_follows_configured_tiers(fetch: Any) -> None:
    status = get_status(fetch)
    assert status["demo"] is False
    assert status["tiers"]["codegen"] == {
        "provider": "openai-compatible",
        "model": "local",
        "ready": True,
        "key_set": False,  # keyless
        "reason": None,
    }
    assert status["tiers"]["classify"]["model"] == "local"
    assert status["tiers"]["vision"]["ready"] is False
    assert status["tiers"]["vision"]["reason"] == "env:OPENAI_API_KEY is not set on the server"
    assert status["tiers"]["odd"]["ready"] is False
    assert status["tiers"]["odd"]["reason"] == "unknown provider 'no-such-provider'"


def test_status_needs_a_token(fetch: Any) -> None:
    wrong = "token wrong-" + secrets.token_hex(8)
    for headers in ({"Authorization": ""}, {"Authorization": wrong}):
        with pytest.raises(HTTPClientError) as info:
            fetch("agent", "status", method="GET", headers=headers)
        assert info.value.code == 403
        # A JSON error, not a redirect to the login page.
        assert info.value.response is not None
        body = json.loads(info.value.response.body)
        assert set(body) >= {"message"}


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": DenyAllAuthorizer,
            }
        }
    ],
)
def test_denying_authorizer_gives_403(fetch: Any) -> None:
    with pytest.raises(HTTPClientError) as info:
        fetch("agent", "status", method="GET")
    assert info.value.code == 403
    assert info.value.response is not None
    body = json.loads(info.value.response.body)
    assert set(body) == {"message", "reason"}


def test_unknown_agent_route_is_404(fetch: Any) -> None:
    with pytest.raises(HTTPClientError) as info:
        fetch("agent", "no-such-route", method="GET")
    assert info.value.code == 404


@pytest.mark.sqlite_only("checks the default db_url: the SQLite file in the data dir")
def test_extension_app_is_loaded_with_defaults(jp_serverapp: Any) -> None:
    apps = [
        app
        for ext in jp_serverapp.extension_manager.extensions.values()
        for point in ext.extension_points.values()
        if isinstance(app := point.app, JupyterAgent)
    ]
    assert len(apps) == 1
    agent = apps[0]
    assert agent.pool_size == 2
    assert agent.max_body_bytes == 10 * 1024 * 1024
    assert agent.effective_db_url.endswith("/jupyter_agent/agent.sqlite")
