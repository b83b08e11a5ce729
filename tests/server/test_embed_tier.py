"""The optional ``embed`` tier: traits, browser settings, readiness, no fallback to codegen."""

from __future__ import annotations

from typing import Any

import pytest
from traitlets import TraitError

from jupyter_agent.exceptions import SettingsError
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.settings.keypolicy import DEFAULT_KEY_BINDINGS, KeyPolicy
from jupyter_agent.runtime.settings.overrides import validate_tiers
from jupyter_agent.runtime.settings.readiness import build_status
from jupyter_agent.server.app import JupyterAgent
from tests.server.helpers import call, refused

CODEGEN = {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}
EMBED = {
    "provider": "openai-compatible",
    "model": "nomic-embed-text",
    "base_url": "http://127.0.0.1:11434/v1",
}
POLICY, _ = KeyPolicy.from_traits(
    key_bindings=DEFAULT_KEY_BINDINGS,
    allowed_key_refs=None,
    allowed_base_urls=[],
    allow_loopback=True,
)


def test_the_admin_may_configure_an_embed_tier() -> None:
    app = JupyterAgent(tiers={"codegen": CODEGEN, "embed": EMBED})
    assert app.tiers["embed"] == EMBED
    openai = {"provider": "openai", "model": "text-embedding-3-small", "api_key_ref": "env:K"}
    assert JupyterAgent(tiers={"codegen": CODEGEN, "embed": openai}).tiers["embed"] == openai


@pytest.mark.parametrize(
    "tier",
    [
        {"provider": "anthropic", "model": "claude-sonnet-4-5"},
        {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"},
        {**EMBED, "api": "responses"},
        {**EMBED, "api_key": "sk-canary-embed-77"},
    ],
)
def test_an_admin_embed_tier_that_cannot_embed_is_refused(tier: dict[str, Any]) -> None:
    with pytest.raises(TraitError) as info:
        JupyterAgent(tiers={"codegen": CODEGEN, "embed": tier})
    assert "embed" in str(info.value)
    assert "sk-canary-embed-77" not in str(info.value)


def test_status_lists_embed_only_when_configured_and_never_falls_back() -> None:
    without = build_status({"codegen": CODEGEN}, {}, "0")
    assert "embed" not in without["tiers"]
    assert set(without["tiers"]) == {"codegen", "classify", "vision"}
    keyed = {**EMBED, "api_key_ref": "env:EMBED_KEY"}
    status = build_status({"codegen": CODEGEN, "embed": keyed}, {}, "0")
    assert status["tiers"]["embed"] == {
        "provider": "openai-compatible",
        "model": "nomic-embed-text",
        "ready": False,
        "key_set": False,
        "reason": "env:EMBED_KEY is not set on the server",
    }
    ready = build_status({"codegen": CODEGEN, "embed": keyed}, {"EMBED_KEY": "k" * 20}, "0")
    assert ready["tiers"]["embed"]["ready"] is True
    assert "k" * 20 not in repr(ready)
    # a stored tier of the wrong provider (an old settings file) is reported, not run
    wrong = build_status({"codegen": CODEGEN, "embed": CODEGEN}, {}, "0")
    assert wrong["tiers"]["embed"]["ready"] is False
    assert "openai-compatible" in wrong["tiers"]["embed"]["reason"]


def test_a_run_sees_no_embed_tier_unless_configured() -> None:
    config = RunConfig(tiers={"codegen": CODEGEN}, ceilings={}, spaces={})
    assert config.get("llm.tier.embed") is None  # no fallback to codegen
    assert config.get("llm.tier.classify") == CODEGEN  # the others still fall back
    with_embed = RunConfig(tiers={"codegen": CODEGEN, "embed": EMBED}, ceilings={}, spaces={})
    assert with_embed.get("llm.tier.embed") == EMBED


def test_browser_settings_validate_the_embed_tier_like_the_others() -> None:
    assert validate_tiers(
        {"embed": {**EMBED, "base_url": EMBED["base_url"] + "/"}}, policy=POLICY
    ) == {"embed": EMBED}
    assert validate_tiers({"embed": None}, policy=POLICY) == {"embed": None}
    keyed = {
        "provider": "openai",
        "model": "text-embedding-3-small",
        "api_key_ref": "env:OPENAI_API_KEY",
    }
    assert validate_tiers({"embed": keyed}, policy=POLICY)["embed"] == keyed
    bad = [
        ({"provider": "anthropic", "model": "m", "api_key_ref": "env:ANTHROPIC_API_KEY"}, "openai"),
        ({**EMBED, "api": "responses"}, "responses"),
        ({**EMBED, "api_key": "sk-canary-embed-88"}, "unknown key"),
        # a key is sent only where it is bound: OpenAI's key never to a local server
        ({**EMBED, "api_key_ref": "env:OPENAI_API_KEY"}, "base URL not allowed"),
        ({**EMBED, "base_url": "https://embed.example.com/v1"}, "base URL not allowed"),
    ]
    for tier, needle in bad:
        with pytest.raises(SettingsError) as info:
            validate_tiers({"embed": tier}, policy=POLICY)
        assert needle in str(info.value)
        assert "sk-canary-embed-88" not in str(info.value)


ADMIN = {"pool_size": 0, "tiers": {"codegen": CODEGEN}}


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_the_person_sets_and_removes_an_embed_tier(fetch: Any, agent_service: Any) -> None:
    code, settings = call(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"embed": EMBED}}
    )
    assert code == 200
    assert settings["tiers"]["embed"] == EMBED
    assert settings["readiness"]["embed"] == {"ready": True, "key_set": False, "reason": None}
    assert agent_service.run_config(owner="").tiers["embed"] == EMBED
    error = refused(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"embed": CODEGEN}}, status=400
    )
    assert error["reason"] == "bad_settings"
    assert "openai-compatible" in error["message"]
    code, settings = call(fetch, "agent", "settings", method="PUT", body={"tiers": {"embed": None}})
    assert "embed" not in settings["tiers"]
    _, status = call(fetch, "agent", "status")
    assert "embed" not in status["tiers"]
    assert "embed" not in agent_service.run_config(owner="").tiers
