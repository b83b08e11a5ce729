"""Tier readiness and the answer of ``GET agent/status`` (no tornado, no I/O).

A tier is the ``{provider, model, base_url, api_key_ref, api}`` mapping that the
``JupyterAgent.tiers`` trait holds under a name (``codegen``, ``classify``, ``vision``).
Tiers that are not configured fall back to ``codegen``.

A tier is *ready* when its provider is known and its credential reference resolves in
the server's environment:

- ``env:NAME`` resolves when the variable ``NAME`` is set and not empty;
- ``openai-compatible`` may have no reference at all (local servers such as Ollama);
- ``fake`` (the scripted in-process provider) is always ready.

The server runs the demo model when ``codegen`` is not ready. Only the *presence* of a
key is checked here: no key value is ever returned, logged or stored by this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_TIER",
    "FALLBACK_TIERS",
    "KNOWN_PROVIDERS",
    "build_status",
    "key_ref_resolves",
    "resolve_tier",
    "tier_ready",
]

#: Providers that have an adapter (DESIGN section 3).
KNOWN_PROVIDERS = frozenset({"anthropic", "openai", "openai-compatible", "fake"})

#: The tier every other tier falls back to.
DEFAULT_TIER = "codegen"

#: Tiers the loop may ask for; those not configured resolve to ``DEFAULT_TIER``.
FALLBACK_TIERS = ("codegen", "classify", "vision")

_KEYLESS_PROVIDERS = frozenset({"openai-compatible", "fake"})


def key_ref_resolves(ref: object, environ: Mapping[str, str]) -> bool:
    """Tell whether a credential reference names a non-empty value in ``environ``.

    Only the ``env:NAME`` scheme is known; any other value (including no reference)
    does not resolve.
    """
    if not isinstance(ref, str) or not ref.startswith("env:"):
        return False
    name = ref[len("env:") :]
    return bool(name) and bool(environ.get(name))


def tier_ready(tier: Mapping[str, Any], environ: Mapping[str, str]) -> bool:
    """Tell whether a tier can run: a known provider and a usable credential.

    ``fake`` is always ready; ``openai-compatible`` is ready without a reference, but a
    reference it names must resolve; every other provider needs its reference to resolve.
    """
    provider = tier.get("provider")
    if provider not in KNOWN_PROVIDERS:
        return False
    if provider == "fake":
        return True
    ref = tier.get("api_key_ref")
    if provider in _KEYLESS_PROVIDERS and not ref:
        return True
    return key_ref_resolves(ref, environ)


def resolve_tier(tiers: Mapping[str, Mapping[str, Any]], name: str) -> dict[str, Any] | None:
    """Return the configuration of tier ``name``, falling back to ``codegen``.

    Returns a copy (callers may change it), or ``None`` when neither ``name`` nor
    ``codegen`` is configured.
    """
    tier = tiers.get(name)
    if tier is None:
        tier = tiers.get(DEFAULT_TIER)
    return None if tier is None else dict(tier)


def build_status(
    tiers: Mapping[str, Mapping[str, Any]], environ: Mapping[str, str], version: str
) -> dict[str, Any]:
    """Build the JSON answer of ``GET agent/status``.

    ``{version, tiers: {name: {provider, model, ready}}, demo}``: every configured tier
    plus the fallback tiers (``classify``, ``vision``) as they resolve; ``demo`` is true
    when ``codegen`` is missing or not ready. Never holds a key value, a base URL or a
    credential reference.
    """
    names = list(tiers)
    names += [name for name in FALLBACK_TIERS if name not in tiers]
    report: dict[str, dict[str, Any]] = {}
    for name in names:
        tier = resolve_tier(tiers, name)
        if tier is None:
            continue
        report[name] = {
            "provider": str(tier.get("provider", "")),
            "model": str(tier.get("model", "")),
            "ready": tier_ready(tier, environ),
        }
    codegen = report.get(DEFAULT_TIER)
    demo = codegen is None or not codegen["ready"]
    return {"version": version, "tiers": report, "demo": demo}
