"""Profiles as data, their matching and overrides, cost; tiers and their validation."""

from __future__ import annotations

import pytest

from jupyter_agent.effects import Result
from jupyter_agent.exceptions import ConfigError
from jupyter_agent.llm.profiles import CONSERVATIVE, cost_usd, get_profile
from jupyter_agent.llm.tiers import Tier, resolve_tier, tier_from_config
from jupyter_agent.messages import Usage


@pytest.mark.parametrize(
    ("model", "name", "mode", "thinking"),
    [
        ("claude-opus-4-7", "claude-opus-4-7", "native", "adaptive"),
        ("claude-opus-4-1-20250805", "claude-opus-4", "native", "budget"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4", "native", "budget"),
        ("anthropic/claude-sonnet-4", "claude-sonnet-4", "native", "budget"),
        ("claude-haiku-4-5", "claude-haiku-4", "native", "off"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet", "native", "off"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini", "native", "adaptive"),
        ("gpt-4.1-nano", "gpt-4.1-nano", "native", "off"),
        ("gpt-4o-2024-08-06", "gpt-4o", "native", "off"),
        ("o4-mini", "o4-mini", "native", "adaptive"),
        ("o3", "o3", "native", "adaptive"),
        ("llama3.1:8b", "llama3.x", "fenced", "off"),
        ("llama3:latest", "llama3", "fenced", "off"),
        ("qwen2.5-coder:32b", "qwen2.5-coder", "fenced", "off"),
        ("deepseek-r1:14b", "deepseek-r1", "fenced", "adaptive"),
        ("mistral-small", "mistral", "xml", "off"),
    ],
)
def test_table_matches(model, name, mode, thinking):
    profile = get_profile(model)
    assert (profile.name, profile.tool_mode, profile.thinking) == (name, mode, thinking)


def test_unknown_model_warns_and_is_conservative():
    with pytest.warns(UserWarning, match="no profile for model 'phi-9'"):
        profile = get_profile("phi-9")
    assert profile.context_window == CONSERVATIVE.context_window
    assert profile.tool_mode == "fenced"
    # described by config: no warning, fields applied
    described = get_profile("phi-9", {"context_window": 65536, "tool_mode": "native"})
    assert (described.context_window, described.tool_mode) == (65536, "native")


def test_overrides_and_their_errors():
    profile = get_profile("gpt-4o", {"price_in": 1.0, "vision": False})
    assert (profile.price_in, profile.vision, profile.price_out) == (1.0, False, 10.0)
    with pytest.raises(ConfigError, match="unknown field"):
        get_profile("gpt-4o", {"contxt_window": 1})
    with pytest.raises(ConfigError, match="tool_mode"):
        get_profile("gpt-4o", {"tool_mode": "json"})


def test_cost_normalised_per_provider():
    usage = Usage(
        input_tokens=1000,
        output_tokens=500,
        cache_read_tokens=4000,
        cache_write_tokens=2000,
        reasoning_tokens=100,
    )
    sonnet = get_profile("claude-sonnet-4-5")
    assert cost_usd(sonnet, usage) == pytest.approx(
        (1000 * 3 + 500 * 15 + 4000 * 0.3 + 2000 * 3.75) / 1e6
    )
    gpt = get_profile("gpt-4.1")
    openai_usage = Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=4000)
    assert cost_usd(gpt, openai_usage) == pytest.approx((1000 * 2 + 500 * 8 + 4000 * 0.5) / 1e6)
    assert cost_usd(get_profile("llama3.1"), usage) is None
    partial = get_profile("gpt-4.1", {"price_cache_read": None})
    assert cost_usd(partial, openai_usage) is None
    assert cost_usd(partial, Usage(input_tokens=10, output_tokens=1)) == pytest.approx(28 / 1e6)


def test_tier_validation():
    tier = tier_from_config("codegen", {"provider": "openai", "model": "gpt-4.1"})
    assert tier.base_url == "https://api.openai.com/v1"
    assert tier.wire == "openai-chat"
    assert tier_from_config(
        "c", {"provider": "anthropic", "model": "claude-sonnet-4"}
    ).base_url == ("https://api.anthropic.com")
    cases = [
        (None, "not configured"),
        ({"provider": "gemini", "model": "x"}, "unknown provider 'gemini'"),
        ({"provider": "openai", "model": "gpt-4o", "api": "batch"}, "unknown api"),
        ({"provider": "anthropic", "model": "claude-sonnet-4", "api": "responses"}, "only"),
        ({"provider": "openai-compatible", "model": "llama3.1"}, "needs a 'base_url'"),
        ({"provider": "fake", "model": "claude-sonnet-4"}, "needs a 'base_url'"),
        ({"provider": "openai", "model": ""}, "model"),
        ({"provider": "openai", "model": "gpt-4o", "api_key": "sk-x"}, "unknown key"),
    ]
    for data, needle in cases:
        with pytest.raises(ConfigError, match=needle):
            tier_from_config("codegen", data)


def test_resolve_tier_yields_two_config_gets():
    gen = resolve_tier("vision")
    first = next(gen)
    assert (first.name, first.data) == ("config.get", {"key": "llm.tier.vision"})
    tier_data = {
        "provider": "openai",
        "model": "gpt-4o",
        "api": "responses",
        "api_key_ref": "env:OPENAI_API_KEY",
    }
    second = gen.send(Result(seq=1, name="config.get", data=tier_data))
    assert second.data == {"key": "llm.profile.gpt-4o"}
    with pytest.raises(StopIteration) as stop:
        gen.send(Result(seq=2, name="config.get", data={"max_output": 1000}))
    tier = stop.value.value
    assert isinstance(tier, Tier)
    assert (tier.name, tier.api, tier.profile.max_output) == ("vision", "responses", 1000)
    missing = resolve_tier("classify")
    next(missing)
    with pytest.raises(ConfigError, match=r"llm\.tier\.classify is not configured"):
        missing.send(Result(seq=1, name="config.get", data=None))
