"""Readiness detail per tier, key references bound to base URLs, loopback, the start log.

Through a real Jupyter Server (``fetch``, see conftest). The server resolves key
references in its own environment (``os.environ``), which ``monkeypatch`` sets per test.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call, refused

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")

TIERS = {
    "codegen": {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "api_key_ref": "env:ANTHROPIC_API_KEY",
    },
    "classify": {"provider": "openai", "model": "gpt-x", "api_key_ref": "env:OPENAI_API_KEY"},
    "vision": {"provider": "openai-compatible", "model": "", "base_url": "http://127.0.0.1:9/v1"},
}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> str:
    """ANTHROPIC_API_KEY set to a canary value, OPENAI_API_KEY not set."""
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    canary = "sk-canary-" + secrets.token_hex(12)
    monkeypatch.setenv("ANTHROPIC_API_KEY", canary)
    return canary


def put_tier(fetch: Any, name: str, tier: dict[str, Any] | None) -> tuple[int, Any]:
    return call(fetch, "agent", "settings", method="PUT", body={"tiers": {name: tier}})  # type: ignore[no-any-return]


@pytest.mark.parametrize("agent_config", [{"tiers": TIERS, "pool_size": 0}])
def test_readiness_detail_per_tier(fetch: Any, keys: str) -> None:
    response = fetch("agent", "status")
    assert keys not in response.body.decode()
    status = json.loads(response.body)
    assert status["demo"] is False
    assert status["tiers"]["codegen"] == {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "ready": True,
        "key_set": True,
        "reason": None,
    }
    assert status["tiers"]["classify"]["ready"] is False
    assert status["tiers"]["classify"]["key_set"] is False
    assert status["tiers"]["classify"]["reason"] == "env:OPENAI_API_KEY is not set on the server"
    assert status["tiers"]["vision"]["reason"] == "no model configured"
    response = fetch("agent", "settings")
    assert keys not in response.body.decode()
    readiness = json.loads(response.body)["readiness"]
    profiles = {name: tier.pop("profile", None) for name, tier in readiness.items()}
    # What runs assume of each configured tier's model (none for a tier with no model).
    assert profiles["codegen"]["assumed"] is False
    assert profiles["vision"] is None
    assert readiness == {
        "codegen": {"ready": True, "key_set": True, "reason": None},
        "classify": {
            "ready": False,
            "key_set": False,
            "reason": "env:OPENAI_API_KEY is not set on the server",
        },
        "vision": {"ready": False, "key_set": False, "reason": "no model configured"},
    }


@pytest.mark.parametrize("agent_config", [{"tiers": TIERS, "pool_size": 0}])
def test_tiers_that_are_not_ready_are_left_out_of_runs(
    fetch: Any, keys: str, agent_service: Any
) -> None:
    tiers = agent_service.run_config(owner="").tiers
    assert set(tiers) == {"codegen"}  # classify and vision fall back to codegen


LOOPBACK = ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://[::1]:8080/v1"]


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_loopback_openai_compatible_url_accepted_by_default(fetch: Any) -> None:
    for url in LOOPBACK:
        tier = {"provider": "openai-compatible", "model": "qwen", "base_url": url + "/"}
        code, settings = put_tier(fetch, "classify", tier)
        assert code == 200
        assert settings["tiers"]["classify"]["base_url"] == url
        assert settings["readiness"]["classify"] == {
            "ready": True,
            "key_set": False,
            "reason": None,
            # "qwen" matches no built-in profile: runs assume a conservative one.
            "profile": {
                "context_window": 8192,
                "max_output": 2048,
                "tool_mode": "fenced",
                "assumed": True,
            },
        }
    # Not loopback: refused, nothing stored.
    for url in ("http://127.0.0.1@evil.example/v1", "http://10.1.2.3:8000/v1"):
        tier = {"provider": "openai-compatible", "model": "qwen", "base_url": url}
        error = refused(
            fetch, "agent", "settings", method="PUT", body={"tiers": {"vision": tier}}, status=400
        )
        assert "base URL not allowed" in error["message"]


@pytest.mark.parametrize("agent_config", [{"pool_size": 0, "allow_loopback_base_urls": False}])
def test_loopback_url_refused_when_the_trait_is_off(fetch: Any, agent_service: Any) -> None:
    tier = {"provider": "openai-compatible", "model": "qwen", "base_url": LOOPBACK[0]}
    error = refused(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"classify": tier}}, status=400
    )
    assert error["reason"] == "bad_settings"
    assert "http://127.0.0.1:8000/v1" in error["message"]
    assert "allow_loopback_base_urls" in error["message"]
    assert agent_service.store.owner_tiers("") is None
    _, settings = call(fetch, "agent", "settings")
    assert settings["allow_loopback_base_urls"] is False


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_a_key_goes_only_to_its_bound_urls(fetch: Any, keys: str) -> None:
    crossed = [
        ("openai-compatible", "env:OPENAI_API_KEY", "https://api.anthropic.com"),
        ("anthropic", "env:ANTHROPIC_API_KEY", "https://api.openai.com/v1"),
        ("openai-compatible", "env:ANTHROPIC_API_KEY", "http://127.0.0.1:8000/v1"),
    ]
    for provider, ref, url in crossed:
        tier = {"provider": provider, "model": "m", "api_key_ref": ref, "base_url": url}
        error = refused(
            fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": tier}}, status=400
        )
        assert ref in error["message"], error
        assert url in error["message"], error
        assert keys not in error["message"]
    # No base URL: the provider's default, which OPENAI_API_KEY is not bound to.
    tier = {"provider": "anthropic", "model": "m", "api_key_ref": "env:OPENAI_API_KEY"}
    error = refused(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": tier}}, status=400
    )
    assert "https://api.anthropic.com" in error["message"]
    # The bound URL is accepted.
    tier = {
        "provider": "openai",
        "model": "gpt-x",
        "api_key_ref": "env:OPENAI_API_KEY",
        "base_url": "https://api.openai.com/v1/",
    }
    code, settings = put_tier(fetch, "classify", tier)
    assert code == 200
    assert settings["tiers"]["classify"]["base_url"] == "https://api.openai.com/v1"
    assert settings["readiness"]["classify"]["reason"] == (
        "env:OPENAI_API_KEY is not set on the server"
    )
    assert settings["key_bindings"]["env:OPENAI_API_KEY"] == ["https://api.openai.com/v1"]


LOCAL_KEY = {
    "pool_size": 0,
    "key_bindings": {"env:VLLM_API_KEY": ["http://127.0.0.1:8000/v1"]},
}


@pytest.mark.parametrize("agent_config", [LOCAL_KEY])
def test_a_key_bound_to_a_loopback_server(fetch: Any) -> None:
    tier = {
        "provider": "openai-compatible",
        "model": "qwen",
        "api_key_ref": "env:VLLM_API_KEY",
        "base_url": "http://127.0.0.1:8000/v1",
    }
    code, settings = put_tier(fetch, "classify", tier)
    assert code == 200
    assert settings["allowed_key_refs"] == ["env:VLLM_API_KEY"]
    # The default bindings are replaced: the Anthropic key is not offered any more.
    anthropic = {"provider": "anthropic", "model": "m", "api_key_ref": "env:ANTHROPIC_API_KEY"}
    error = refused(
        fetch, "agent", "settings", method="PUT", body={"tiers": {"codegen": anthropic}}, status=400
    )
    assert "key reference not allowed: env:ANTHROPIC_API_KEY" in error["message"]


@pytest.fixture
def stored_crossed_override(jp_environ: Any, jp_data_dir: Path) -> None:
    """A user tier stored before key bindings: the OpenAI key paired with another URL."""
    path = jp_data_dir / "jupyter_agent" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    crossed = {
        "provider": "openai-compatible",
        "model": "m",
        "api_key_ref": "env:OPENAI_API_KEY",
        "base_url": "https://api.anthropic.com",
    }
    path.write_text(json.dumps({"tiers": {"codegen": crossed}}))


@pytest.mark.parametrize("agent_config", [{"pool_size": 0}])
def test_a_stored_tier_the_bindings_refuse_is_not_ready(
    stored_crossed_override: None, fetch: Any, agent_service: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-" + secrets.token_hex(8))
    _, status = call(fetch, "agent", "status")
    codegen = status["tiers"]["codegen"]
    assert codegen["ready"] is False
    assert codegen["key_set"] is True
    assert codegen["reason"].startswith("base URL not allowed")
    assert "env:OPENAI_API_KEY" in codegen["reason"]
    assert status["demo"] is True
    # The run uses the demo, never the crossed tier.
    assert agent_service.run_config(owner="").tiers["codegen"]["provider"] == "fake"


CANARY = "sk-canary-start-" + secrets.token_hex(8)


@pytest.fixture
def canary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


VISION = {"provider": "openai", "model": "v", "api_key_ref": "env:OPENAI_API_KEY"}


@pytest.mark.parametrize(
    "agent_config", [{"pool_size": 0, "tiers": {"codegen": TIERS["codegen"], "vision": VISION}}]
)
def test_start_log_line(canary_key: None, fetch: Any, caplog: pytest.LogCaptureFixture) -> None:
    # The service starts with the server (or, under pytest-jupyter, at the first request
    # that needs it); it logs the line once.
    fetch("agent", "settings")
    fetch("agent", "chats")
    lines = [
        r.getMessage()
        for r in caplog.get_records("call")
        if "jupyter-agent: tiers ready" in r.getMessage()
    ]
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("jupyter-agent: tiers ready: codegen (anthropic claude-sonnet-4-5)")
    assert "vision (openai v): env:OPENAI_API_KEY is not set on the server" in line
    assert "demo model not in use" in line
    records = caplog.get_records("call")
    assert all(CANARY not in r.getMessage() for r in records)


@pytest.mark.parametrize(
    "agent_config",
    [
        {
            "pool_size": 0,
            "allowed_key_refs": ["env:ROUTER_KEY"],
            "allowed_base_urls": ["https://r.example/v1"],
        }
    ],
)
def test_legacy_allowed_key_refs_warn_once(fetch: Any, caplog: pytest.LogCaptureFixture) -> None:
    _, settings = call(fetch, "agent", "settings")
    call(fetch, "agent", "settings")
    assert settings["key_bindings"] == {"env:ROUTER_KEY": ["https://r.example/v1"]}
    warnings = [
        r.getMessage()
        for r in caplog.get_records("call")
        if "allowed_key_refs lists env:ROUTER_KEY" in r.getMessage()
    ]
    assert len(warnings) == 1
