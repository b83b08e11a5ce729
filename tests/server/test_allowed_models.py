"""``JupyterAgent.allowed_models``: a browser tier may name only the admin's models.

Through a real server: ``PUT agent/settings`` with another model is refused whatever the
body says (and nothing is stored); an allowed one is stored; an override stored before the
admin narrowed the list is reported not ready and left out of runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.helpers import call, refused

ADMIN: dict[str, Any] = {
    "pool_size": 0,
    "tiers": {"codegen": {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}},
    "allowed_models": ["anthropic:claude-sonnet-*", "qwen*"],
}
LOCAL = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:11434/v1"}


@pytest.mark.parametrize("agent_config", [ADMIN])
@pytest.mark.parametrize(
    "tier",
    [
        {**LOCAL, "model": "llama-3"},
        # The provider prefix binds: an allowed name from another provider is refused.
        {**LOCAL, "model": "claude-sonnet-4-5"},
        {
            "provider": "anthropic",
            "model": "claude-opus-4",
            "api_key_ref": "env:ANTHROPIC_API_KEY",
        },
    ],
)
def test_a_model_the_admin_did_not_allow_is_refused(fetch: Any, tier: dict[str, Any]) -> None:
    error = refused(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": tier}}, status=400
    )
    assert error["reason"] == "bad_settings"
    assert "model not allowed" in error["message"]
    assert tier["model"] in error["message"]
    assert "allowed_models" in error["message"]
    _, settings = call(fetch, "agent", "settings")
    assert settings["overridden"] == []  # nothing stored
    assert settings["tiers"]["codegen"]["model"] == "m"
    assert settings["allowed_models"] == ["anthropic:claude-sonnet-*", "qwen*"]


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_an_allowed_model_is_stored(fetch: Any) -> None:
    tier = {**LOCAL, "model": "qwen2.5-coder"}
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"classify": tier}}
    )
    assert code == 200
    assert settings["overridden"] == ["classify"]
    assert settings["tiers"]["classify"]["model"] == "qwen2.5-coder"
    # The embed tier is checked too.
    error = refused(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body={"tiers": {"embed": {**LOCAL, "model": "nomic-embed-text"}}},
        status=400,
    )
    assert "model not allowed" in error["message"]
