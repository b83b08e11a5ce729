"""Tiers: which provider, model and endpoint a role (codegen, classify, vision) uses.

A tier comes from the ``config.get`` effect (key ``llm.tier.<name>``, value
``{provider, model, base_url?, api_key_ref?, api?}``), and its model's profile overrides
from ``llm.profile.<model>``; :func:`resolve_tier` yields both effects, so a replay never
reads today's config. Falling back from ``classify``/``vision`` to ``codegen`` is the
driver's job when it answers ``config.get``, not this module's.

Providers: ``anthropic``, ``openai`` (``api`` ``chat`` or ``responses``),
``openai-compatible`` (vLLM, Ollama, llama.cpp, OpenRouter; chat wire; ``base_url``
required, key optional) and ``fake`` (the scripted provider of ``llm/fake/server.py``, spoken to
through the Anthropic adapter; ``base_url`` required). ``base_url`` means what it means in
the official SDKs: ``https://api.anthropic.com`` and ``https://api.openai.com/v1`` by
default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_agent.effects import CONFIG_GET, Effect, EffectGen
from jupyter_agent.exceptions import ConfigError
from jupyter_agent.llm.profiles import Profile, get_profile

__all__ = [
    "API_KINDS",
    "DEFAULT_BASE_URLS",
    "PROVIDERS",
    "TIER_KEYS",
    "Tier",
    "resolve_tier",
    "tier_from_config",
]

Provider = Literal["anthropic", "openai", "openai-compatible", "fake"]
Api = Literal["chat", "responses"]
PROVIDERS: frozenset[str] = frozenset({"anthropic", "openai", "openai-compatible", "fake"})
API_KINDS: frozenset[str] = frozenset({"chat", "responses"})
DEFAULT_BASE_URLS: dict[str, str] = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
}
#: The keys a tier's config may hold.
TIER_KEYS: frozenset[str] = frozenset({"provider", "model", "base_url", "api_key_ref", "api"})
_KEYS = TIER_KEYS


@dataclass(frozen=True, kw_only=True)
class Tier:
    """One resolved tier. Holds a credential *reference* (``env:NAME``), never a key.

    Construction validates: an unknown provider or api, a missing model or base_url, or
    ``api="responses"`` on a provider other than ``openai`` raise ConfigError.
    """

    name: str
    provider: Provider
    model: str
    base_url: str
    api_key_ref: str | None = None
    api: Api = "chat"
    profile: Profile = field(default_factory=Profile)

    def __post_init__(self) -> None:
        where = f"llm.tier.{self.name}"
        if self.provider not in PROVIDERS:
            raise ConfigError(
                f"{where}: unknown provider {self.provider!r}; "
                f"use one of {', '.join(sorted(PROVIDERS))}"
            )
        if self.api not in API_KINDS:
            raise ConfigError(f"{where}: unknown api {self.api!r}; use 'chat' or 'responses'")
        if self.api == "responses" and self.provider != "openai":
            raise ConfigError(f"{where}: api 'responses' is only spoken by provider 'openai'")
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"{where}: 'model' must be a non-empty string")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise ConfigError(f"{where}: 'base_url' must be an http(s) URL")
        if self.api_key_ref is not None and not isinstance(self.api_key_ref, str):
            raise ConfigError(f"{where}: 'api_key_ref' must be a reference like env:NAME")

    @property
    def wire(self) -> str:
        """The reply format on the wire: ``anthropic``, ``openai-chat``, ``openai-responses``."""
        if self.provider in ("anthropic", "fake"):
            return "anthropic"
        return "openai-responses" if self.api == "responses" else "openai-chat"


def tier_from_config(
    name: str, data: Mapping[str, Any] | None, overrides: Mapping[str, Any] | None = None
) -> Tier:
    """Build a :class:`Tier` from its config value; ``None`` (not configured) is a ConfigError.

    Unknown keys are refused (a stray ``api_key`` would put a secret in the config record).
    """
    where = f"llm.tier.{name}"
    if data is None:
        raise ConfigError(f"{where} is not configured")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be an object, got {type(data).__name__}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    provider = data.get("provider")
    model = data.get("model")
    if provider not in PROVIDERS:
        raise ConfigError(
            f"{where}: unknown provider {provider!r}; use one of {', '.join(sorted(PROVIDERS))}"
        )
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}: 'model' must be a non-empty string")
    base_url = data.get("base_url") or DEFAULT_BASE_URLS.get(provider)
    if base_url is None:
        raise ConfigError(f"{where}: provider {provider!r} needs a 'base_url'")
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ConfigError(f"llm.profile.{model} must be an object")
    return Tier(
        name=name,
        provider=provider,
        model=model,
        base_url=str(base_url).rstrip("/"),
        api_key_ref=data.get("api_key_ref"),
        api=data.get("api") or "chat",
        profile=get_profile(model, overrides),
    )


def resolve_tier(name: str) -> EffectGen[Tier]:
    """Resolve tier ``name`` through two ``config.get`` effects (tier, then profile overrides)."""
    data = (yield Effect(name=CONFIG_GET, data={"key": f"llm.tier.{name}"})).data
    if data is None or not isinstance(data, Mapping):
        tier_from_config(name, data)  # raises the ConfigError that explains it
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError(f"llm.tier.{name}: 'model' must be a non-empty string")
    overrides = (yield Effect(name=CONFIG_GET, data={"key": f"llm.profile.{model}"})).data
    return tier_from_config(name, data, overrides)
