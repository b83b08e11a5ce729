"""Effective settings: the admin's tiers overlaid by the user's overrides, and their checks.

The admin configures ``JupyterAgent`` traits (trusted, never checked against the
allow-lists). A person may override tiers from the browser (``PUT agent/settings``); those
overrides are validated here and kept in ``{agent_dir}/settings.json`` (written atomically).
The Jupyter data dir is per OS user (JupyterHub runs one server per user), so that file is
the user's.

The tier changes of ``PUT agent/settings`` (its body is ``{"tiers": {...}}``; the handler
reads it)::

    {"codegen" | "classify" | "vision" | "embed":
     {"provider", "model", "base_url"?, "api_key_ref"?, "api"?} | null}

- A tier named in the changes replaces that tier's override; ``null`` removes the override
  (the admin's tier applies again); tiers not named keep their override.
- Keys other than those five are refused: a key *value* (``api_key``, ``key``, ...) is never
  accepted; a credential is named by reference (``api_key_ref: "env:NAME"``).
- ``api_key_ref`` must be one of the references of the admin's :class:`KeyPolicy`
  (``key_bindings``); it may be null (or absent) only for keyless providers
  (``openai-compatible``, ``fake``).
- ``base_url`` (trailing slashes ignored; when absent, the provider's default: Anthropic,
  OpenAI; ``openai-compatible`` and ``fake`` need one) must be one the key reference is
  bound to; a keyless tier may use any allowed URL, loopback included when the admin
  allows it (:meth:`KeyPolicy.check`). A refusal names the reference and the URL.
- ``model`` must be one the admin's ``allowed_models`` globs allow (when it lists any:
  :meth:`KeyPolicy.model_problem`), whatever the browser sends.
- ``provider`` must be known; ``api`` is ``chat`` or ``responses`` (``openai`` only).
- ``embed`` (optional: embeddings for recall, :mod:`jupyter_agent.llm.embeddings`) takes
  provider ``openai`` or ``openai-compatible`` and no ``api``; it never falls back to
  ``codegen`` and is never used for chat.

Violations raise :class:`~jupyter_agent.exceptions.SettingsError` (a ``BadRequest``, reason
``bad_settings``) with a message for a person.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import SettingsError
from jupyter_agent.llm.embeddings import EMBED_TIER, embed_tier_problem
from jupyter_agent.llm.tiers import DEFAULT_BASE_URLS
from jupyter_agent.runtime.keypolicy import KeyPolicy, normalise_base_url

__all__ = [
    "KEYLESS_PROVIDERS",
    "PROVIDERS",
    "TIER_KEYS",
    "TIER_NAMES",
    "SettingsError",
    "UserSettings",
    "effective_tiers",
    "normalise_base_url",
    "policy_reason",
    "validate_tiers",
]

log = logging.getLogger(__name__)

#: Tiers a person may override.
TIER_NAMES = ("codegen", "classify", "vision", EMBED_TIER)
#: The keys of a tier.
TIER_KEYS = frozenset({"provider", "model", "base_url", "api_key_ref", "api"})
#: Providers with an adapter.
PROVIDERS = frozenset({"anthropic", "openai", "openai-compatible", "fake"})
#: Providers that may run without a credential.
KEYLESS_PROVIDERS = frozenset({"openai-compatible", "fake"})

_MAX_MODEL_CHARS = 200


def policy_reason(tier: Mapping[str, Any], policy: KeyPolicy) -> str | None:
    """Why the admin's policy refuses this (well-formed) user tier, or None.

    Used on a PUT and on overrides stored before the policy changed: such a tier is
    reported not ready and left out of runs, so its key never goes to an unbound URL.
    """
    model = tier.get("model")
    if isinstance(model, str):
        problem = policy.model_problem(str(tier.get("provider")), model)
        if problem is not None:
            return problem
    ref = tier.get("api_key_ref") or None
    base_url = tier.get("base_url") or DEFAULT_BASE_URLS.get(str(tier.get("provider")))
    if not isinstance(base_url, str):
        return "no base URL configured"
    return policy.check(None if ref is None else str(ref), base_url)


def _check_tier(name: str, tier: Any, *, policy: KeyPolicy) -> dict[str, Any]:
    where = f"tiers.{name}"
    if not isinstance(tier, Mapping):
        raise SettingsError(f"{where} must be an object or null")
    unknown = sorted(set(tier) - TIER_KEYS)
    if unknown:
        raise SettingsError(
            f"{where}: unknown key(s) {', '.join(unknown)}. Key values are never accepted: "
            'name the credential by reference with api_key_ref, e.g. "env:ANTHROPIC_API_KEY" '
            f"(known keys: {', '.join(sorted(TIER_KEYS))})"
        )
    provider = tier.get("provider")
    if provider not in PROVIDERS:
        raise SettingsError(
            f"{where}.provider must be one of {', '.join(sorted(PROVIDERS))}, not {provider!r}"
        )
    model = tier.get("model")
    if not isinstance(model, str) or not model.strip() or len(model) > _MAX_MODEL_CHARS:
        raise SettingsError(f"{where}.model must be a non-empty string")
    api = tier.get("api")
    if api is not None and api not in ("chat", "responses"):
        raise SettingsError(f"{where}.api must be 'chat' or 'responses'")
    if api == "responses" and provider != "openai":
        raise SettingsError(f"{where}.api 'responses' is only spoken by provider 'openai'")
    if name == EMBED_TIER:
        problem = embed_tier_problem(tier)
        if problem is not None:
            raise SettingsError(f"{where}: {problem}")
    ref = tier.get("api_key_ref")
    if ref is not None and not isinstance(ref, str):
        raise SettingsError(f"{where}.api_key_ref must be a string such as 'env:NAME' or null")
    ref = ref or None  # "" is no reference
    if ref is None and provider not in KEYLESS_PROVIDERS:
        raise SettingsError(
            f"{where}.api_key_ref is needed for provider {provider!r}; "
            f"allowed: {', '.join(policy.refs()) or '(none)'}"
        )
    base_url = tier.get("base_url")
    if base_url is not None and not isinstance(base_url, str):
        raise SettingsError(f"{where}.base_url must be a string")
    if not (base_url or DEFAULT_BASE_URLS.get(str(provider))):
        raise SettingsError(f"{where}.base_url is needed for provider {provider!r}")
    reason = policy_reason(
        {"provider": provider, "model": model.strip(), "base_url": base_url, "api_key_ref": ref},
        policy,
    )
    if reason is not None:
        raise SettingsError(f"{where}: {reason}")
    clean: dict[str, Any] = {"provider": provider, "model": model.strip()}
    if base_url:
        clean["base_url"] = normalise_base_url(base_url)
    if ref is not None:
        clean["api_key_ref"] = ref
    if api is not None:
        clean["api"] = api
    return clean


def validate_tiers(
    tiers: Mapping[str, Any], *, policy: KeyPolicy
) -> dict[str, dict[str, Any] | None]:
    """Check tier changes ``{name: tier or None}``; returns ``{name: clean tier or None}``.

    Raises :class:`SettingsError` for anything outside the contract (module docstring).
    """
    if not isinstance(tiers, Mapping):
        raise SettingsError("'tiers' must be an object")
    out: dict[str, dict[str, Any] | None] = {}
    for name, tier in tiers.items():
        if name not in TIER_NAMES:
            raise SettingsError(f"unknown tier {name!r}: use one of {', '.join(TIER_NAMES)}")
        out[name] = None if tier is None else _check_tier(name, tier, policy=policy)
    return out


def effective_tiers(
    admin: Mapping[str, Mapping[str, Any]], user: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The admin's tiers with the user's overrides replacing whole tiers (copies)."""
    tiers = {name: dict(tier) for name, tier in admin.items()}
    tiers.update({name: dict(tier) for name, tier in user.items()})
    return tiers


class UserSettings:
    """The user's tier overrides, kept as JSON in ``path`` (``{"tiers": {...}}``).

    Reading a missing or unreadable file gives no overrides (logged); writes are atomic
    (temp file, fsync, rename), so a crash never leaves half a file.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._tiers: dict[str, dict[str, Any]] | None = None

    def tiers(self) -> dict[str, dict[str, Any]]:
        """The stored overrides (a copy), read once then cached."""
        if self._tiers is None:
            self._tiers = self._load()
        return {name: dict(tier) for name, tier in self._tiers.items()}

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("jupyter-agent: ignoring unreadable settings %s: %s", self.path, exc)
            return {}
        tiers = data.get("tiers") if isinstance(data, dict) else None
        if not isinstance(tiers, dict):
            return {}
        return {
            str(k): dict(v) for k, v in tiers.items() if k in TIER_NAMES and isinstance(v, dict)
        }

    def update(self, changes: Mapping[str, dict[str, Any] | None]) -> dict[str, dict[str, Any]]:
        """Apply validated changes (None removes an override), store them, return them."""
        tiers = self.tiers()
        for name, tier in changes.items():
            if tier is None:
                tiers.pop(name, None)
            else:
                tiers[name] = dict(tier)
        self._write({"tiers": tiers})
        self._tiers = tiers
        return self.tiers()

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
