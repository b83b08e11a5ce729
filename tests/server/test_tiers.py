"""Tier readiness (runtime/settings/readiness.py) and the JupyterAgent traits, without a server."""

from __future__ import annotations

import secrets

import pytest
from jupyter_server.extension.application import ExtensionApp
from traitlets import TraitError
from traitlets.config import Config

from jupyter_agent.runtime.settings.readiness import (
    build_status,
    key_ref_resolves,
    resolve_tier,
    tier_reason,
)
from jupyter_agent.server.app import DEFAULT_TIERS, JupyterAgent


def test_key_ref_resolves_only_non_empty_env_values() -> None:
    env = {"K": "v", "EMPTY": ""}
    assert key_ref_resolves("env:K", env)
    assert not key_ref_resolves("env:EMPTY", env)
    assert not key_ref_resolves("env:MISSING", env)
    assert not key_ref_resolves("env:", env)
    assert not key_ref_resolves("K", env)  # no scheme
    assert not key_ref_resolves("file:/K", env)  # unknown scheme
    assert not key_ref_resolves(None, env)


@pytest.mark.parametrize(
    ("tier", "env", "ready"),
    [
        ({"provider": "anthropic", "api_key_ref": "env:A"}, {"A": "x"}, True),
        ({"provider": "anthropic", "api_key_ref": "env:A"}, {}, False),
        ({"provider": "anthropic"}, {"A": "x"}, False),
        ({"provider": "openai", "api_key_ref": "env:A"}, {"A": "x"}, True),
        ({"provider": "openai-compatible"}, {}, True),
        ({"provider": "openai-compatible", "api_key_ref": ""}, {}, True),
        ({"provider": "openai-compatible", "api_key_ref": "env:A"}, {}, False),
        ({"provider": "fake"}, {}, True),
        ({"provider": "mystery", "api_key_ref": "env:A"}, {"A": "x"}, False),
        ({}, {}, False),
    ],
)
def test_tier_ready(tier: dict[str, str], env: dict[str, str], ready: bool) -> None:
    if tier:
        tier = {"model": "m", "base_url": "http://127.0.0.1:9", **tier}
    assert (tier_reason(tier, env) is None) is ready


def test_resolve_tier_falls_back_to_codegen_and_copies() -> None:
    tiers = {"codegen": {"provider": "fake", "model": "m"}}
    classify = resolve_tier(tiers, "classify")
    assert classify == {"provider": "fake", "model": "m"}
    assert classify is not None
    classify["model"] = "changed"
    assert tiers["codegen"]["model"] == "m"
    assert resolve_tier({}, "vision") is None


def test_build_status_without_tiers_is_demo() -> None:
    assert build_status({}, {}, "1.2.3") == {"version": "1.2.3", "tiers": {}, "demo": True}


def test_build_status_never_holds_key_or_ref() -> None:
    key = "sk-canary-" + secrets.token_hex(12)
    status = build_status(DEFAULT_TIERS, {"ANTHROPIC_API_KEY": key}, "0")
    text = repr(status)
    assert key not in text
    assert "env:" not in text
    assert "https://" not in text
    assert status["demo"] is False


def test_traits_defaults() -> None:
    app = JupyterAgent()
    assert app.name == "jupyter_agent"
    assert app.tiers == DEFAULT_TIERS
    assert (app.pool_size, app.max_model_calls, app.max_cells) == (2, 40, 60)
    assert (app.cell_timeout_s, app.max_wall_s, app.max_cost_usd) == (120.0, 900.0, 2.0)
    assert (app.model_deadline_s, app.retry_after_cap_s) == (300.0, 60.0)
    assert app.max_body_bytes == 10 * 1024 * 1024
    assert app.bash_enabled is True
    assert app.kernel_env_keep == []
    assert app.allowed_key_refs is None  # legacy: every key_bindings reference
    assert app.key_bindings == {
        "env:ANTHROPIC_API_KEY": ["https://api.anthropic.com"],
        "env:OPENAI_API_KEY": ["https://api.openai.com/v1"],
    }
    assert app.allow_loopback_base_urls is True
    assert "https://api.anthropic.com" in app.allowed_base_urls
    assert app.db_url == ""
    assert app.effective_db_url.startswith("sqlite:///")


def test_every_trait_has_help() -> None:
    # The app's own traits and its trait groups' (server/app_settings.py), not ExtensionApp's.
    own = set(JupyterAgent.class_traits(config=True)) - set(ExtensionApp.class_traits(config=True))
    assert {
        "tiers",
        "db_url",
        "pool_size",
        "cell_timeout_s",
        "max_model_calls",
        "max_cells",
        "max_wall_s",
        "max_cost_usd",
        "model_deadline_s",
        "retry_after_cap_s",
        "max_body_bytes",
        "bash_enabled",
        "kernel_env_keep",
        "allowed_key_refs",
        "allowed_base_urls",
        "key_bindings",
        "allow_loopback_base_urls",
    } <= own
    for name in own:
        assert JupyterAgent.class_traits()[name].help, name


def test_traits_from_config() -> None:
    config = Config()
    config.JupyterAgent.max_cells = 7
    config.JupyterAgent.db_url = "postgresql+psycopg://u@127.0.0.1/db"
    app = JupyterAgent(config=config)
    assert app.max_cells == 7
    assert app.effective_db_url == "postgresql+psycopg://u@127.0.0.1/db"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("tiers", {"codegen": "anthropic"}),
        ("tiers", {"codegen": {"provider": "anthropic"}}),
        ("tiers", {"codegen": {"provider": "fake", "model": "m", "api_key_ref": 3}}),
        ("pool_size", -1),
        ("max_body_bytes", -5),
        ("cell_timeout_s", 0.0),
        ("max_cost_usd", -1.0),
        ("key_bindings", {"OPENAI_API_KEY": ["https://api.openai.com/v1"]}),
        ("key_bindings", {"env:OPENAI_API_KEY": ["api.openai.com"]}),
    ],
)
def test_bad_trait_values_are_rejected(name: str, value: object) -> None:
    app = JupyterAgent()
    with pytest.raises(TraitError):
        setattr(app, name, value)


def test_an_admin_tier_with_a_key_in_it_is_refused_without_echoing_it() -> None:
    secret = "sk-ant-canary-admin-0451"
    tier = {"provider": "anthropic", "model": "claude-sonnet-4-5", "api_key": secret}
    with pytest.raises(TraitError) as info:
        JupyterAgent(tiers={"codegen": tier})
    assert "api_key" in str(info.value)
    assert secret not in str(info.value)
