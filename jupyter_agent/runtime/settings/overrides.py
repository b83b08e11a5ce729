"""Effective settings: the admin's tiers overlaid by the user's overrides, and their checks.

The admin configures ``JupyterAgent`` traits (trusted, never checked against the
allow-lists). A person may override tiers from the browser (``PUT agent/settings``); those
overrides are validated here and kept per owner in the database (:class:`OwnerSettings`,
table ``agent_settings``): one person's changes never change another's tiers, and they
follow the person to any server on the same database. A ``{agent_dir}/settings.json`` kept
before owners is imported once as the server's user's.

The tier changes of ``PUT agent/settings`` (its body is ``{"tiers": {...}}``; the handler
reads it)::

    {"codegen" | "classify" | "vision" | "embed":
     {"provider", "model", "base_url"?, "api_key_ref"?, "api"?, "profile"?} | null}

- A tier named in the changes replaces that tier's override; ``null`` removes the override
  (the admin's tier applies again); tiers not named keep their override.
- Keys other than those six are refused: a key *value* (``api_key``, ``key``, ...) is never
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
- ``profile`` (optional, not for ``embed``): what the person knows of the model that the
  built-in profiles may not: ``{context_window?, max_output?, tool_mode?}`` (whole numbers
  within :data:`PROFILE_FIELDS`' bounds; ``native``, ``fenced`` or ``xml``). Runs of the
  tier read the model's profile with these fields set (over the admin's
  ``JupyterAgent.profiles``).
- ``embed`` (optional: embeddings for recall, :mod:`jupyter_agent.llm.embeddings`) takes
  provider ``openai`` or ``openai-compatible`` and no ``api``; it never falls back to
  ``codegen`` and is never used for chat.

Violations raise :class:`~jupyter_agent.exceptions.SettingsError` (a ``BadRequest``, reason
``bad_settings``) with a message for a person.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import AgentError, SettingsError
from jupyter_agent.llm.embeddings import EMBED_TIER, embed_tier_problem
from jupyter_agent.llm.tiers import DEFAULT_BASE_URLS
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy, normalise_base_url

__all__ = [
    "KEYLESS_PROVIDERS",
    "PROVIDERS",
    "OwnerSettings",
    "TIER_KEYS",
    "TIER_NAMES",
    "SettingsError",
    "effective_tiers",
    "normalise_base_url",
    "policy_reason",
    "validate_tiers",
]

log = logging.getLogger(__name__)

#: Tiers a person may override.
TIER_NAMES = ("codegen", "classify", "vision", "complete", EMBED_TIER)
#: The keys of a tier.
TIER_KEYS = frozenset({"provider", "model", "base_url", "api_key_ref", "api", "profile"})
#: What a person may say of a tier's model (``profile``): the fields and their bounds.
PROFILE_FIELDS: dict[str, tuple[int, int]] = {
    "context_window": (1024, 10_000_000),
    "max_output": (256, 1_000_000),
}
#: The tool modes a person may choose for a tier's model.
PROFILE_TOOL_MODES = ("native", "fenced", "xml")
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
    profile = tier.get("profile")
    if profile is not None:
        if name == EMBED_TIER:
            raise SettingsError(f"{where}.profile: an embed tier has no chat profile")
        checked = _check_profile(f"{where}.profile", profile)
        if checked:
            clean["profile"] = checked
    return clean


def _check_profile(where: str, profile: Any) -> dict[str, Any]:
    """A tier's ``profile``: ``{context_window?, max_output?, tool_mode?}`` within bounds."""
    if not isinstance(profile, Mapping):
        raise SettingsError(f"{where} must be an object or null")
    known = {*PROFILE_FIELDS, "tool_mode"}
    unknown = sorted(set(profile) - known)
    if unknown:
        raise SettingsError(
            f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    clean: dict[str, Any] = {}
    for field, (low, high) in PROFILE_FIELDS.items():
        value = profile.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SettingsError(f"{where}.{field} must be a whole number from {low} to {high}")
        clean[field] = value
    mode = profile.get("tool_mode")
    if mode is not None:
        if mode not in PROFILE_TOOL_MODES:
            raise SettingsError(f"{where}.tool_mode must be one of {', '.join(PROFILE_TOOL_MODES)}")
        clean["tool_mode"] = mode
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


class OwnerSettings:
    """Each owner's tier overrides, kept in the store (``agent_settings``, one row per owner).

    ``store`` is the :class:`~jupyter_agent.store.repo.Store` (duck-typed: ``owner_tiers``,
    ``change_owner_tiers``, ``add_owner_tiers``). :meth:`tiers` is called on the event loop (at
    each run start) and in threads: it answers from a per-owner cache, refreshed from the
    store in the background once older than ``refresh_s`` (another server on one database
    may have changed them); a failed read keeps the last value read (or no overrides),
    logged. :meth:`update` writes the store: call it in a thread.

    ``legacy_path``: the ``settings.json`` of a server from before owners (its overrides
    are the server's user's, ``legacy_owner``). It is read once, the first time that owner's
    settings are read, and stored as that owner's row unless the owner already has one; the
    file itself is left as it was (a downgrade still finds it).
    """

    def __init__(
        self,
        store: Any,
        *,
        legacy_path: Path | None = None,
        legacy_owner: str = "",
        refresh_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], str] | None = None,
    ) -> None:
        self.store = store
        self.legacy_path = None if legacy_path is None else Path(legacy_path)
        self.legacy_owner = legacy_owner
        self.refresh_s = refresh_s
        self._clock = clock
        self._now = now or _utc_now
        self._cache: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}
        self._imported = self.legacy_path is None
        self._lock = threading.Lock()
        self._import_lock = threading.Lock()
        self._versions: dict[str, int] = {}  # owner -> updates made here (refresh guard)
        self._refreshing: set[str] = set()

    def tiers(self, owner: str) -> dict[str, dict[str, Any]]:
        """``owner``'s overrides (copies). Read from the store the first time (blocking);
        after that answered from the cache at once, a read older than ``refresh_s``
        refreshing it in a background thread (so a slow database never slows a status
        or a run start)."""
        cached = self._cache.get(owner)
        if cached is None:
            cached = self._load(owner)
        elif self._clock() - cached[0] >= self.refresh_s:
            self._refresh_later(owner)
        return {name: dict(tier) for name, tier in cached[1].items()}

    def cached(self, owner: str) -> bool:
        """True once ``owner``'s overrides were read (:meth:`tiers` then never blocks)."""
        return owner in self._cache

    def warm(self, owner: str) -> None:
        """Read ``owner``'s overrides into the cache unless they are there (blocking: call
        it in a thread), so a later :meth:`tiers` on the event loop never waits."""
        if owner not in self._cache:
            self._load(owner)

    def _load(self, owner: str) -> tuple[float, dict[str, dict[str, Any]]]:
        version = self._versions.get(owner, 0)
        cached = self._cache.get(owner)
        tiers = self._read(owner, cached)
        if tiers is None:  # failed: keep what was read before (a first read: not kept)
            if cached is None:
                return (self._clock(), {})
            with self._lock:  # tried again after refresh_s, not at every call
                if self._versions.get(owner, 0) == version:
                    self._cache[owner] = (self._clock(), cached[1])
                return self._cache[owner]
        read = (self._clock(), tiers)
        with self._lock:
            if self._versions.get(owner, 0) == version:  # no update meanwhile
                self._cache[owner] = read
            return self._cache.get(owner, read)

    def _refresh_later(self, owner: str) -> None:
        with self._lock:
            if owner in self._refreshing:
                return
            self._refreshing.add(owner)

        def refresh() -> None:
            try:
                self._load(owner)
            finally:
                with self._lock:
                    self._refreshing.discard(owner)

        threading.Thread(target=refresh, name="jupyter-agent-settings", daemon=True).start()

    def _read(
        self, owner: str, cached: tuple[float, dict[str, dict[str, Any]]] | None
    ) -> dict[str, dict[str, Any]] | None:
        """``owner``'s stored overrides, or None when the store failed (logged)."""
        try:
            if owner == self.legacy_owner:
                self._import_legacy()
            stored = self.store.owner_tiers(owner)
        except AgentError as exc:
            kept = "the last ones read" if cached is not None else "none"
            log.warning(
                "jupyter-agent: cannot read the settings of %r (%s): using %s", owner, exc, kept
            )
            return None
        return _known_tiers(stored or {})

    def _import_legacy(self) -> None:
        with self._import_lock:
            if self._imported or self.legacy_path is None:
                return
            tiers = _read_legacy(self.legacy_path)
            if tiers and self.store.add_owner_tiers(self.legacy_owner, tiers, now=self._now()):
                log.info(
                    "jupyter-agent: imported the tier overrides of %s into the database",
                    self.legacy_path,
                )
            self._imported = True

    def update(
        self, owner: str, changes: Mapping[str, dict[str, Any] | None]
    ) -> dict[str, dict[str, Any]]:
        """Apply validated changes (None removes an override) to ``owner``'s overrides as
        stored now, store them, return them. Blocking (the store): call it in a thread."""
        if owner == self.legacy_owner:
            self._import_legacy()

        def change(stored: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
            tiers = _known_tiers(stored)
            for name, tier in changes.items():
                if tier is None:
                    tiers.pop(name, None)
                else:
                    tiers[name] = dict(tier)
            return tiers

        tiers = self.store.change_owner_tiers(owner, change, now=self._now())
        with self._lock:
            self._versions[owner] = self._versions.get(owner, 0) + 1
            self._cache[owner] = (self._clock(), tiers)
        return self.tiers(owner)


def _known_tiers(data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(k): dict(v) for k, v in data.items() if k in TIER_NAMES and isinstance(v, Mapping)}


def _read_legacy(path: Path) -> dict[str, dict[str, Any]]:
    """The overrides of a ``settings.json`` from before owners (``{}``: none or unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("jupyter-agent: ignoring unreadable settings %s: %s", path, exc)
        return {}
    tiers = data.get("tiers") if isinstance(data, dict) else None
    return _known_tiers(tiers) if isinstance(tiers, dict) else {}


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat()
