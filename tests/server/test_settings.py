"""GET/PUT agent/settings: effective settings, the allow-lists, per-user storage."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.server.helpers import call, refused

ADMIN = {
    "pool_size": 0,
    "tiers": {"codegen": {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}},
    "allowed_key_refs": ["env:ANTHROPIC_API_KEY"],
    "allowed_base_urls": ["https://api.anthropic.com", "http://127.0.0.1:11434/v1/"],
    "max_cells": 7,
}
GOOD = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "api_key_ref": "env:ANTHROPIC_API_KEY",
}


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_get_settings_shape(fetch: Any) -> None:
    code, settings = call(fetch, "agent", "settings")
    assert code == 200
    assert set(settings) == {
        "tiers",
        "overridden",
        "allowed_key_refs",
        "allowed_base_urls",
        "key_bindings",
        "allow_loopback_base_urls",
        "allowed_models",
        "readiness",
        "demo",
        "ceilings",
    }
    assert settings["tiers"] == ADMIN["tiers"]  # the admin's tier, trusted as given
    assert settings["overridden"] == []
    assert settings["allowed_key_refs"] == ["env:ANTHROPIC_API_KEY"]
    # The legacy list keeps the default binding of the reference it names.
    assert settings["key_bindings"] == {"env:ANTHROPIC_API_KEY": ["https://api.anthropic.com"]}
    assert settings["allowed_base_urls"] == [
        "https://api.anthropic.com",
        "http://127.0.0.1:11434/v1",
    ]
    assert settings["allow_loopback_base_urls"] is True
    assert settings["readiness"]["codegen"] == {
        "ready": True,
        "key_set": False,
        "reason": None,
        # "m" is no model anybody described: what runs assume of it, said so.
        "profile": {
            "context_window": 8192,
            "max_output": 2048,
            "tool_mode": "fenced",
            "assumed": True,
        },
    }
    assert settings["ceilings"]["max_cells"] == 7
    assert settings["demo"] is False


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_put_settings_overrides_and_reverts(
    fetch: Any, agent_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": GOOD}}
    )
    assert code == 200
    assert settings["tiers"]["codegen"] == GOOD
    assert settings["overridden"] == ["codegen"]
    assert settings["demo"] is True  # the key is not set: the demo model runs
    # Stored as the server's one user's (owner ""), in the database.
    assert agent_service.store.owner_tiers("") == {"codegen": GOOD}
    _, status = call(fetch, "agent", "status")
    assert status["tiers"]["codegen"]["model"] == "claude-sonnet-4-5"
    assert status["demo"] is True
    # A local server, keyless; the trailing slash does not matter.
    local = {
        "provider": "openai-compatible",
        "model": "qwen",
        "base_url": "http://127.0.0.1:11434/v1",
    }
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"classify": local}}
    )
    assert settings["tiers"]["classify"] == local
    assert settings["tiers"]["codegen"] == GOOD
    assert settings["overridden"] == ["classify", "codegen"]
    code, settings = call(
        fetch,
        "agent",
        "settings",
        method="PUT",
        body={"tiers": {"codegen": None, "classify": None}},
    )
    assert settings["tiers"] == ADMIN["tiers"]
    assert settings["overridden"] == []
    assert agent_service.run_config(owner="").tiers["codegen"]["model"] == "m"


def bad_settings() -> list[tuple[Any, str]]:
    canary = "canary-" + secrets.token_hex(8)
    return [
        ({"tiers": {"codegen": {**GOOD, "api_key": canary}}}, "api_key_ref"),
        (
            {"tiers": {"codegen": {**GOOD, "api_key_ref": "env:OTHER_KEY"}}},
            "key reference not allowed: env:OTHER_KEY",
        ),
        ({"tiers": {"codegen": {**GOOD, "api_key_ref": None}}}, "api_key_ref"),
        (
            {"tiers": {"codegen": {**GOOD, "base_url": "https://evil.example"}}},
            "env:ANTHROPIC_API_KEY is bound to https://api.anthropic.com "
            "and is never sent to https://evil.example",
        ),
        (
            {
                "tiers": {
                    "codegen": {
                        "provider": "openai",
                        "model": "gpt",
                        "api_key_ref": "env:ANTHROPIC_API_KEY",
                    }
                }
            },
            "never sent to https://api.openai.com/v1",
        ),
        ({"tiers": {"codegen": {**GOOD, "provider": "skynet"}}}, "provider"),
        ({"tiers": {"codegen": {**GOOD, "model": ""}}}, "model"),
        ({"tiers": {"codegen": {**GOOD, "api": "responses"}}}, "responses"),
        ({"tiers": {"codegen": {**GOOD, "base_url": 7}}}, "base_url"),
        ({"tiers": {"codegen": {**GOOD, "profile": {"tool_mode": "json"}}}}, "tool_mode"),
        ({"tiers": {"codegen": {**GOOD, "profile": {"context_window": 5}}}}, "1024"),
        ({"tiers": {"codegen": {**GOOD, "profile": {"max_output": True}}}}, "max_output"),
        ({"tiers": {"codegen": {**GOOD, "profile": {"price_in": 1}}}}, "unknown field"),
        ({"tiers": {"codegen": {**GOOD, "profile": "big"}}}, "profile must be an object"),
        ({"tiers": {"codegen": "anthropic"}}, "object"),
        ({"tiers": {"planner": GOOD}}, "unknown tier"),
        ({"tiers": []}, "tiers"),
        ({"pool_size": 9}, "only 'tiers'"),
    ]


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_put_settings_refusals_store_nothing(fetch: Any, agent_service: Any) -> None:
    for body, words in bad_settings():
        error = refused(fetch, "agent", "settings", method="PUT", body=body, status=400)
        assert words in error["message"], (body, error)
        assert "canary-" not in error["message"]
        assert error["reason"] == "bad_settings"
    refused(fetch, "agent", "settings", method="PUT", body=b"{nope", status=400)
    refused(fetch, "agent", "settings", method="PUT", body=b"[]", status=400)
    assert agent_service.store.owner_tiers("") is None
    _, settings = call(fetch, "agent", "settings")
    assert settings["overridden"] == []


def test_api_key_message_says_why(fetch: Any) -> None:
    body = {"tiers": {"codegen": {"provider": "anthropic", "model": "x", "api_key": "k"}}}
    error = refused(fetch, "agent", "settings", method="PUT", body=body, status=400)
    assert "never accepted" in error["message"]
    assert "env:" in error["message"]
