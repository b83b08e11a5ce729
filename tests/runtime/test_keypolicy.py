"""The key policy (runtime/settings/keypolicy.py): keys bound to URLs, keyless and loopback URLs."""

from __future__ import annotations

import pytest

from jupyter_agent.runtime.settings.keypolicy import (
    DEFAULT_KEY_BINDINGS,
    KeyPolicy,
    is_loopback_url,
)
from jupyter_agent.runtime.settings.readiness import readiness_line, tier_reason


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost:11434/v1/",
        "http://[::1]:8080/v1",
        "https://127.0.0.1/v1",
        "http://127.1.2.3:9",
        "HTTP://LOCALHOST:1",
    ],
)
def test_loopback_urls(url: str) -> None:
    assert is_loopback_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1@evil.example/v1",  # user-info: the host is evil.example
        "http://user:pw@127.0.0.1:8000/v1",
        "http://localhost.evil.example/v1",
        "http://127.0.0.1.evil.example/v1",
        "http://10.0.0.1:8000/v1",
        "http://[::2]:80/v1",
        "ftp://127.0.0.1/v1",
        "http://127.0.0.1:8000/v1?x=https://evil.example",
        "http://127.0.0.1:8000/v1#frag",
        "127.0.0.1:8000",
    ],
)
def test_not_loopback_urls(url: str) -> None:
    assert not is_loopback_url(url)


def default_policy(*, loopback: bool = True) -> KeyPolicy:
    policy, warnings = KeyPolicy.from_traits(
        key_bindings=DEFAULT_KEY_BINDINGS,
        allowed_key_refs=None,
        allowed_base_urls=["https://api.anthropic.com", "https://api.openai.com/v1"],
        allow_loopback=loopback,
    )
    assert warnings == []
    return policy


def test_default_bindings_keep_each_key_with_its_provider() -> None:
    policy = default_policy()
    assert policy.refs() == ["env:ANTHROPIC_API_KEY", "env:OPENAI_API_KEY"]
    assert policy.check("env:ANTHROPIC_API_KEY", "https://api.anthropic.com/") is None
    assert policy.check("env:OPENAI_API_KEY", "https://api.openai.com/v1") is None
    crossed = policy.check("env:OPENAI_API_KEY", "https://api.anthropic.com")
    assert crossed is not None
    assert crossed.startswith("base URL not allowed")
    assert "env:OPENAI_API_KEY" in crossed
    assert "https://api.anthropic.com" in crossed
    # A key never goes to loopback unless bound there.
    assert policy.check("env:OPENAI_API_KEY", "http://127.0.0.1:8000/v1") is not None
    unknown = policy.check("env:OTHER", "https://api.openai.com/v1")
    assert unknown is not None
    assert unknown.startswith("key reference not allowed")
    assert list(policy.bindings.get("env:OPENAI_API_KEY", ())) == ["https://api.openai.com/v1"]
    assert list(policy.bindings.get("env:OTHER", ())) == []


def test_keyless_tiers_use_allowed_and_loopback_urls() -> None:
    policy = default_policy()
    assert policy.check(None, "https://api.openai.com/v1") is None
    assert policy.check(None, "http://localhost:11434/v1") is None
    assert policy.check(None, "https://evil.example/v1") is not None
    strict = default_policy(loopback=False)
    refused = strict.check(None, "http://127.0.0.1:8000/v1")
    assert refused is not None
    assert "allow_loopback_base_urls" in refused


def test_legacy_allowed_key_refs() -> None:
    policy, warnings = KeyPolicy.from_traits(
        key_bindings=DEFAULT_KEY_BINDINGS,
        allowed_key_refs=["env:ANTHROPIC_API_KEY", "env:ROUTER_KEY"],
        allowed_base_urls=["https://router.example/v1/"],
        allow_loopback=True,
    )
    # Only the listed references; a bound one keeps its binding, an unbound one gets the
    # allowed_base_urls (what the independent lists meant), with a warning.
    assert policy.refs() == ["env:ANTHROPIC_API_KEY", "env:ROUTER_KEY"]
    assert list(policy.bindings.get("env:ANTHROPIC_API_KEY", ())) == ["https://api.anthropic.com"]
    assert list(policy.bindings.get("env:ROUTER_KEY", ())) == ["https://router.example/v1"]
    assert policy.check("env:ANTHROPIC_API_KEY", "https://router.example/v1") is not None
    assert len(warnings) == 1
    assert "env:ROUTER_KEY" in warnings[0]
    assert "key_bindings" in warnings[0]
    assert policy.to_json() == {
        "allowed_key_refs": ["env:ANTHROPIC_API_KEY", "env:ROUTER_KEY"],
        "allowed_base_urls": ["https://router.example/v1", "https://api.anthropic.com"],
        "key_bindings": {
            "env:ANTHROPIC_API_KEY": ["https://api.anthropic.com"],
            "env:ROUTER_KEY": ["https://router.example/v1"],
        },
        "allow_loopback_base_urls": True,
        "allowed_models": [],
    }


@pytest.mark.parametrize(
    ("tier", "reason"),
    [
        ({"provider": "anthropic", "model": "m", "api_key_ref": "env:K"}, None),
        (
            {"provider": "openai", "model": "m", "api_key_ref": "env:MISSING"},
            "env:MISSING is not set on the server",
        ),
        ({"provider": "anthropic", "model": ""}, "no model configured"),
        ({"provider": "anthropic", "model": "m"}, "no key reference configured"),
        ({"provider": "openai-compatible", "model": "m"}, "no base URL configured"),
        ({"provider": "openai-compatible", "model": "m", "base_url": "http://x"}, None),
        (
            {"provider": "openai", "model": "m", "api_key_ref": "K"},
            "the key reference is not of the form env:NAME",
        ),
        ({"provider": "mystery", "model": "m"}, "unknown provider 'mystery'"),
        ({}, "no provider configured"),
    ],
)
def test_tier_reason(tier: dict[str, str], reason: str | None) -> None:
    assert tier_reason(tier, {"K": "secret-value"}) == reason


def test_readiness_line() -> None:
    status = {
        "tiers": {
            "codegen": {"provider": "fake", "model": "m", "ready": True, "reason": None},
            "vision": {
                "provider": "openai",
                "model": "v",
                "ready": False,
                "reason": "env:OPENAI_API_KEY is not set on the server",
            },
        },
        "demo": False,
    }
    assert readiness_line(status) == (
        "jupyter-agent: tiers ready: codegen (fake m); not ready: vision (openai v): "
        "env:OPENAI_API_KEY is not set on the server; demo model not in use"
    )


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:9000/v1", True),
        ("http://127.300.1.1/v1", False),  # no address: a resolver would look it up by name
        ("http://127.0.0.1@evil.example/v1", False),
        ("http://localhost.evil.example/v1", False),
    ],
)
def test_loopback_urls_are_literal_loopback_hosts(url: str, loopback: bool) -> None:
    from jupyter_agent.runtime.settings.keypolicy import is_loopback_url

    assert is_loopback_url(url) is loopback


def test_allowed_models_globs_with_and_without_a_provider() -> None:
    policy, _ = KeyPolicy.from_traits(
        key_bindings={},
        allowed_key_refs=None,
        allowed_base_urls=[],
        allow_loopback=True,
        allowed_models=["anthropic:claude-sonnet-*", "gpt-5*", " ", "gpt-5*"],
    )
    assert policy.allowed_models == ("anthropic:claude-sonnet-*", "gpt-5*")
    assert policy.model_problem("anthropic", "claude-sonnet-4-5") is None
    assert policy.model_problem("openai", "gpt-5-mini") is None
    assert policy.model_problem("openai-compatible", "gpt-5") is None  # a bare glob: any provider
    # The provider prefix binds: the same name from another provider is refused.
    problem = policy.model_problem("openai-compatible", "claude-sonnet-4-5")
    assert problem is not None
    assert problem.startswith("model not allowed")
    assert "openai-compatible:claude-sonnet-4-5" in problem
    assert "allowed_models" in problem
    assert policy.model_problem("anthropic", "Claude-Sonnet-4-5") is not None  # case matters
    assert policy.to_json()["allowed_models"] == ["anthropic:claude-sonnet-*", "gpt-5*"]


def test_no_allowed_models_allows_any_model() -> None:
    policy, _ = KeyPolicy.from_traits(
        key_bindings={}, allowed_key_refs=None, allowed_base_urls=[], allow_loopback=True
    )
    assert policy.model_problem("anthropic", "anything-at-all") is None
    assert policy.to_json()["allowed_models"] == []
