"""Model profiles as data: the traits the loop budgets from and the adapters obey.

A :class:`Profile` says how big a model's context is, how much it may write, how tool calls
travel (``native`` tool use, or the ``fenced`` / ``xml`` text modes of :mod:`.fenced` for
tool-weak models), how it thinks, whether it takes stop sequences and images, and what it
costs (USD per million tokens; ``None`` when unknown).

:func:`get_profile` matches a model name against :data:`PROFILES` (first match wins; glob
patterns over the lower-cased name after any ``vendor/`` prefix, so OpenRouter's
``anthropic/claude-sonnet-4`` and Ollama's ``qwen2.5-coder:7b`` match too), then applies
config overrides (``llm.profile.<model>``), which may set any field. A model matching no
pattern gets :data:`CONSERVATIVE` (small context, fenced tool mode) and a warning, unless
the overrides describe it.

:func:`cost_usd` prices a :class:`~jupyter_agent.messages.Usage` whose ``input_tokens``
already exclude cached input (each adapter normalises that), so every token is billed once.
Prices were taken from the providers' public price lists; config can correct them.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jupyter_agent.exceptions import ConfigError
from jupyter_agent.messages import Usage

__all__ = [
    "CONSERVATIVE",
    "PROFILES",
    "Profile",
    "ThinkingMode",
    "ToolMode",
    "cost_usd",
    "get_profile",
]

ToolMode = Literal["native", "fenced", "xml"]
ThinkingMode = Literal["off", "budget", "adaptive"]
TOOL_MODES = frozenset({"native", "fenced", "xml"})
THINKING_MODES = frozenset({"off", "budget", "adaptive"})


@dataclass(frozen=True, kw_only=True)
class Profile:
    """What the loop and the adapters need to know about one model.

    - ``context_window`` / ``max_output``: tokens; ``max_output`` is the default output cap.
    - ``prompt_style``: ``"xml"`` (sections in tags, Claude) or ``"markdown"``.
    - ``tool_mode``: ``native`` tool use, or the text modes ``fenced`` / ``xml``.
    - ``thinking``: ``off``; ``budget`` (Anthropic ``budget_tokens`` = ``thinking_budget``);
      ``adaptive`` (Anthropic ``{"type": "adaptive"}``; for OpenAI reasoning models: reason,
      with ``reasoning_effort`` when set, and round-trip the reasoning items).
    - ``supports_stop``: the API accepts stop sequences (OpenAI reasoning models do not).
    - ``vision``: images may be sent; otherwise an image becomes a short text note.
    - ``system_role``: the Chat Completions role of the system prompt.
    - ``num_ctx_param``: dotted body path where an OpenAI-compatible server takes the
      context window (``options.num_ctx`` for Ollama); None: not sent (see the adapter).
    - prices: USD per million tokens; ``None`` when unknown.
    """

    name: str = "unknown"
    context_window: int = 8192
    max_output: int = 2048
    prompt_style: str = "markdown"
    tool_mode: ToolMode = "fenced"
    thinking: ThinkingMode = "off"
    thinking_budget: int = 0
    reasoning_effort: str | None = None
    supports_stop: bool = True
    vision: bool = False
    system_role: Literal["system", "developer"] = "system"
    num_ctx_param: str | None = None
    price_in: float | None = None
    price_out: float | None = None
    price_cache_read: float | None = None
    price_cache_write: float | None = None

    def __post_init__(self) -> None:
        if self.tool_mode not in TOOL_MODES:
            raise ConfigError(
                f"profile {self.name!r}: tool_mode must be one of {_names(TOOL_MODES)}"
            )
        if self.thinking not in THINKING_MODES:
            raise ConfigError(
                f"profile {self.name!r}: thinking must be one of {_names(THINKING_MODES)}"
            )
        if self.system_role not in ("system", "developer"):
            raise ConfigError(f"profile {self.name!r}: system_role must be system or developer")
        if self.context_window <= 0 or self.max_output <= 0:
            raise ConfigError(f"profile {self.name!r}: context_window and max_output must be > 0")


def _names(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))


CONSERVATIVE = Profile()
"""The profile of a model nobody described: 8k context, fenced tools, no vision, no prices."""


def _claude(name: str, **kw: Any) -> Profile:
    base: dict[str, Any] = {
        "context_window": 200_000,
        "max_output": 64_000,
        "prompt_style": "xml",
        "tool_mode": "native",
        "vision": True,
    }
    base.update(kw)
    return Profile(name=name, **base)


def _price(
    i: float, o: float, *, read: float | None = None, write: float | None = None
) -> dict[str, Any]:
    # Anthropic: cache reads cost 0.1x input, 5-minute cache writes 1.25x input.
    return {
        "price_in": i,
        "price_out": o,
        "price_cache_read": round(i * 0.1, 6) if read is None else read,
        "price_cache_write": round(i * 1.25, 6) if write is None else write,
    }


def _openai(name: str, ctx: int, out: int, i: float, o: float, read: float, **kw: Any) -> Profile:
    base: dict[str, Any] = {
        "context_window": ctx,
        "max_output": out,
        "tool_mode": "native",
        "vision": True,
        "price_in": i,
        "price_out": o,
        "price_cache_read": read,
        "price_cache_write": 0.0,  # OpenAI caches automatically, writes are not billed
    }
    base.update(kw)
    return Profile(name=name, **base)


# OpenAI reasoning models: developer role, no stop sequences, reasoning round-tripped.
_REASONING: dict[str, Any] = {
    "system_role": "developer",
    "supports_stop": False,
    "thinking": "adaptive",
}
_OPEN: dict[str, Any] = {"prompt_style": "markdown"}

PROFILES: tuple[tuple[str, Profile], ...] = (
    # Claude: adaptive thinking on Opus 4.6+/Sonnet 4.6 (4.7 accepts nothing else).
    (
        "claude-opus-4-7*",
        _claude("claude-opus-4-7", max_output=128_000, thinking="adaptive", **_price(5, 25)),
    ),
    (
        "claude-opus-4-6*",
        _claude("claude-opus-4-6", max_output=128_000, thinking="adaptive", **_price(5, 25)),
    ),
    (
        "claude-opus-4-5*",
        _claude("claude-opus-4-5", thinking="budget", thinking_budget=8192, **_price(5, 25)),
    ),
    (
        "claude-opus-4*",
        _claude(
            "claude-opus-4",
            max_output=32_000,
            thinking="budget",
            thinking_budget=8192,
            **_price(15, 75),
        ),
    ),
    ("claude-sonnet-4-6*", _claude("claude-sonnet-4-6", thinking="adaptive", **_price(3, 15))),
    (
        "claude-sonnet-4*",
        _claude("claude-sonnet-4", thinking="budget", thinking_budget=8192, **_price(3, 15)),
    ),
    ("claude-haiku-4*", _claude("claude-haiku-4", **_price(1, 5))),
    ("claude-3-7-sonnet*", _claude("claude-3-7-sonnet", **_price(3, 15))),
    ("claude-3-5-sonnet*", _claude("claude-3-5-sonnet", max_output=8192, **_price(3, 15))),
    (
        "claude-3-5-haiku*",
        _claude("claude-3-5-haiku", max_output=8192, vision=False, **_price(0.8, 4)),
    ),
    ("claude-*", _claude("claude", max_output=8192)),
    # GPT-5 family (reasoning models), most specific first.
    ("gpt-5*-nano*", _openai("gpt-5-nano", 400_000, 128_000, 0.05, 0.40, 0.005, **_REASONING)),
    ("gpt-5*-mini*", _openai("gpt-5-mini", 400_000, 128_000, 0.25, 2.00, 0.025, **_REASONING)),
    ("gpt-5.2*", _openai("gpt-5.2", 400_000, 128_000, 1.75, 14.00, 0.175, **_REASONING)),
    ("gpt-5*", _openai("gpt-5", 400_000, 128_000, 1.25, 10.00, 0.125, **_REASONING)),
    ("gpt-4.1-nano*", _openai("gpt-4.1-nano", 1_047_576, 32_768, 0.10, 0.40, 0.025)),
    ("gpt-4.1-mini*", _openai("gpt-4.1-mini", 1_047_576, 32_768, 0.40, 1.60, 0.10)),
    ("gpt-4.1*", _openai("gpt-4.1", 1_047_576, 32_768, 2.00, 8.00, 0.50)),
    ("gpt-4o-mini*", _openai("gpt-4o-mini", 128_000, 16_384, 0.15, 0.60, 0.075)),
    ("gpt-4o*", _openai("gpt-4o", 128_000, 16_384, 2.50, 10.00, 1.25)),
    ("o4-mini*", _openai("o4-mini", 200_000, 100_000, 1.10, 4.40, 0.275, **_REASONING)),
    (
        "o3-mini*",
        _openai("o3-mini", 200_000, 100_000, 1.10, 4.40, 0.55, vision=False, **_REASONING),
    ),
    ("o3*", _openai("o3", 200_000, 100_000, 2.00, 8.00, 0.50, **_REASONING)),
    ("gpt-*", Profile(name="gpt", context_window=128_000, max_output=16_384, tool_mode="native")),
    # Open models, usually served by Ollama / vLLM / llama.cpp: text tool modes, no prices.
    ("llama3.[123]*", Profile(name="llama3.x", context_window=131_072, max_output=4096, **_OPEN)),
    ("llama3*", Profile(name="llama3", context_window=8192, max_output=2048, **_OPEN)),
    (
        "qwen2.5-coder*",
        Profile(name="qwen2.5-coder", context_window=32_768, max_output=8192, **_OPEN),
    ),
    (
        "deepseek-r1*",
        Profile(
            name="deepseek-r1",
            context_window=131_072,
            max_output=8192,
            thinking="adaptive",
            **_OPEN,
        ),
    ),
    (
        "mistral*",
        Profile(name="mistral", context_window=32_768, max_output=4096, tool_mode="xml", **_OPEN),
    ),
)
"""(glob pattern, profile) pairs; the first pattern matching the model name wins."""

_FIELDS = frozenset(f.name for f in dataclasses.fields(Profile))


def _match(model: str) -> Profile | None:
    key = model.lower().rsplit("/", 1)[-1]
    for pattern, profile in PROFILES:
        if fnmatch.fnmatchcase(key, pattern):
            return profile
    return None


def get_profile(model: str, overrides: Mapping[str, Any] | None = None) -> Profile:
    """The profile of ``model``, with config ``overrides`` applied (any field may be set).

    An unknown model gets :data:`CONSERVATIVE` and a ``UserWarning`` (not an error) unless
    ``overrides`` are given; an unknown override field or a bad value is a ConfigError.
    """
    found = _match(model)
    if found is None:
        found = dataclasses.replace(CONSERVATIVE, name=model)
        if not overrides:
            warnings.warn(
                f"no profile for model {model!r}: using a conservative one (8k context, fenced "
                f"tool mode); set llm.profile.{model} in the config to describe it",
                UserWarning,
                stacklevel=2,
            )
    if not overrides:
        return found
    unknown = sorted(set(overrides) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"llm.profile.{model}: unknown field(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(_FIELDS))}"
        )
    try:
        return dataclasses.replace(found, **dict(overrides))
    except TypeError as exc:  # pragma: no cover - replace only raises for unknown names
        raise ConfigError(f"llm.profile.{model}: {exc}") from None


def known_model(model: str) -> bool:
    """True when ``model`` matches a built-in profile (else :data:`CONSERVATIVE` is assumed
    for it unless the config describes it)."""
    return _match(model) is not None


def cost_usd(profile: Profile, usage: Usage) -> float | None:
    """USD for ``usage`` at ``profile``'s prices; None when a needed price is unknown.

    ``usage.input_tokens`` excludes cached input, so cache reads and writes are billed at
    their own prices and nothing twice. A cache price may be unknown when its count is 0.
    """
    terms = (
        (usage.input_tokens, profile.price_in),
        (usage.output_tokens, profile.price_out),
        (usage.cache_read_tokens, profile.price_cache_read),
        (usage.cache_write_tokens, profile.price_cache_write),
    )
    if profile.price_in is None or profile.price_out is None:
        return None
    total = 0.0
    for tokens, price in terms:
        if tokens == 0:
            continue
        if price is None:
            return None
        total += tokens * price
    return total / 1_000_000
