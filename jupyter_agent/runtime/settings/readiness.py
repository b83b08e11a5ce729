"""Tier readiness and the answer of ``GET agent/status`` (no tornado, no I/O).

A tier is the ``{provider, model, base_url, api_key_ref, api}`` mapping that the
``JupyterAgent.tiers`` trait holds under a name (``codegen``, ``classify``, ``vision``).
Tiers that are not configured fall back to ``codegen``; the optional ``embed`` tier
(embeddings for recall) never does: it is listed only when configured, and is ready only
with provider ``openai`` or ``openai-compatible``.

A tier is *ready* when its provider is known, it names a model (and a base URL where the
provider has no default) and its credential reference resolves in the server's
environment:

- ``env:NAME`` resolves when the variable ``NAME`` is set and not empty;
- ``openai-compatible`` may have no reference at all (local servers such as Ollama);
- ``fake`` (the scripted in-process provider) needs no key.

:func:`tier_reason` says why a tier is not ready, in words for a person (``"env:NAME is
not set on the server"``, ``"no model configured"``, ...); the caller may add a reason of
its own (a user's stored tier the admin's key bindings no longer allow: ``"base URL not
allowed: ..."``). The server runs the demo model when ``codegen`` is not ready. Only the
*presence* of a key is checked here: no key value is ever returned, logged or stored by
this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_agent.llm.embeddings import EMBED_TIER, embed_tier_problem

__all__ = [
    "DEFAULT_TIER",
    "FALLBACK_TIERS",
    "KNOWN_PROVIDERS",
    "build_status",
    "key_ref_resolves",
    "readiness_line",
    "resolve_tier",
    "tier_reason",
]

#: Providers that have an adapter (DESIGN section 3).
KNOWN_PROVIDERS = frozenset({"anthropic", "openai", "openai-compatible", "fake"})

#: The tier every other tier falls back to.
DEFAULT_TIER = "codegen"

#: Tiers the loop may ask for; those not configured resolve to ``DEFAULT_TIER``.
FALLBACK_TIERS = ("codegen", "classify", "vision")

_KEYLESS_PROVIDERS = frozenset({"openai-compatible", "fake"})
#: Providers whose base URL has a default (the official SDKs'); others need one.
_DEFAULT_URL_PROVIDERS = frozenset({"anthropic", "openai"})


def key_ref_resolves(ref: object, environ: Mapping[str, str]) -> bool:
    """Tell whether a credential reference names a non-empty value in ``environ``.

    Only the ``env:NAME`` scheme is known; any other value (including no reference)
    does not resolve.
    """
    if not isinstance(ref, str) or not ref.startswith("env:"):
        return False
    name = ref[len("env:") :]
    return bool(name) and bool(environ.get(name))


def tier_reason(tier: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """Why a tier cannot run, or None when it is ready (never a key value).

    ``fake`` needs no key; ``openai-compatible`` runs without a reference, but a reference
    it names must resolve; every other provider needs its reference to resolve.
    """
    provider = tier.get("provider")
    if not provider:
        return "no provider configured"
    if provider not in KNOWN_PROVIDERS:
        return f"unknown provider {provider!r}"
    model = tier.get("model")
    if not isinstance(model, str) or not model.strip():
        return "no model configured"
    if provider not in _DEFAULT_URL_PROVIDERS and not tier.get("base_url"):
        return "no base URL configured"
    if provider == "fake":
        return None
    ref = tier.get("api_key_ref")
    if not ref:
        return None if provider in _KEYLESS_PROVIDERS else "no key reference configured"
    if not isinstance(ref, str) or not ref.startswith("env:") or ref == "env:":
        # Never echoed: a key pasted where its reference belongs would show here.
        return "the key reference is not of the form env:NAME"
    if not key_ref_resolves(ref, environ):
        return f"{ref} is not set on the server"
    return None


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
    tiers: Mapping[str, Mapping[str, Any]],
    environ: Mapping[str, str],
    version: str,
    *,
    refused: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Build the JSON answer of ``GET agent/status``.

    ``{version, tiers: {name: {provider, model, ready, key_set, reason}}, demo}``: every
    configured tier plus the fallback tiers (``classify``, ``vision``) as they resolve.
    ``key_set`` tells whether the tier's key reference resolves on the server (false for a
    keyless tier); ``reason`` says why a tier is not ready (null when ready); ``refused``
    gives a reason of the caller's for a configured tier name (a fallback tier inherits
    codegen's). ``demo`` is true when ``codegen`` is missing or not ready. Holds no key
    value and no base URL; a credential reference's name appears only in the reason of a
    tier whose key is not set.
    """
    refused = refused or {}
    names = list(tiers)
    names += [name for name in FALLBACK_TIERS if name not in tiers]
    report: dict[str, dict[str, Any]] = {}
    for name in names:
        tier = resolve_tier(tiers, name)
        if tier is None:
            continue
        source = name if name in tiers else DEFAULT_TIER
        reason = refused.get(source) or tier_reason(tier, environ)
        if reason is None and name == EMBED_TIER:
            reason = embed_tier_problem(tier)
        report[name] = {
            "provider": str(tier.get("provider", "")),
            "model": str(tier.get("model", "")),
            "ready": reason is None,
            "key_set": key_ref_resolves(tier.get("api_key_ref"), environ),
            "reason": reason,
        }
    codegen = report.get(DEFAULT_TIER)
    demo = codegen is None or not codegen["ready"]
    return {"version": version, "tiers": report, "demo": demo}


def readiness_line(status: Mapping[str, Any]) -> str:
    """One log line from a :func:`build_status` answer: which tiers are ready, why the
    others are not, and whether the demo model is in use (never a key value)."""
    ready: list[str] = []
    unready: list[str] = []
    for name, tier in status.get("tiers", {}).items():
        what = f"{name} ({tier['provider']} {tier['model']})"
        if tier["ready"]:
            ready.append(what)
        else:
            unready.append(f"{what}: {tier['reason']}")
    demo = "in use (codegen is not ready)" if status.get("demo") else "not in use"
    return (
        f"jupyter-agent: tiers ready: {', '.join(ready) or 'none'}; "
        f"not ready: {'; '.join(unready) or 'none'}; demo model {demo}"
    )
