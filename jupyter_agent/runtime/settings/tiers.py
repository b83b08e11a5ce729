"""The tiers a server runs with: the admin's, the user's overrides, their readiness.

:class:`TierSettings` answers ``GET agent/status`` and ``GET``/``PUT agent/settings`` for
the settings service (:mod:`.service`); validation lives in :mod:`.overrides`,
the key policy in :mod:`.keypolicy`, readiness in :mod:`.readiness`. Nothing here holds a key value.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_agent.exceptions import AgentError
from jupyter_agent.llm.embeddings import EMBED_TIER
from jupyter_agent.llm.profiles import get_profile, known_model
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy
from jupyter_agent.runtime.settings.overrides import (
    OwnerSettings,
    effective_tiers,
    policy_reason,
    validate_tiers,
)
from jupyter_agent.runtime.settings.readiness import build_status, readiness_line

__all__ = ["TierSettings", "model_profile"]

_READINESS_KEYS = ("ready", "key_set", "reason")


class TierSettings:
    """The effective tiers of one server and what the browser may change.

    ``admin_tiers`` and ``policy`` come from the admin (trusted); ``user`` holds each
    owner's overrides (every method answers for one ``owner``: ``""`` is the server's one
    user in single-user mode); ``environ`` gives the environment key references resolve in.
    """

    def __init__(
        self,
        *,
        admin_tiers: Mapping[str, Mapping[str, Any]],
        policy: KeyPolicy,
        user: OwnerSettings,
        environ: Callable[[], Mapping[str, str]],
        version: str,
        profiles: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        """``profiles``: the admin's per-model profile fields (``JupyterAgent.profiles``)."""
        self.admin_tiers = {name: dict(tier) for name, tier in admin_tiers.items()}
        self.profiles = {model: dict(f) for model, f in (profiles or {}).items()}
        self.policy = policy
        self.user = user
        self._environ = environ
        self.version = version

    def effective(self, owner: str) -> dict[str, dict[str, Any]]:
        """The admin's tiers overlaid by ``owner``'s overrides (copies)."""
        return effective_tiers(self.admin_tiers, self.user.tiers(owner))

    def refused_overrides(self, owner: str) -> dict[str, str]:
        """The user's stored tiers the key policy does not allow (any more), with why.

        Such a tier (stored before the admin changed ``key_bindings``) is reported not
        ready and left out of runs, so its key never goes to a URL it is not bound to.
        """
        refused: dict[str, str] = {}
        for name, tier in self.user.tiers(owner).items():
            reason = policy_reason(tier, self.policy)
            if reason is not None:
                refused[name] = reason
        return refused

    def status(self, owner: str) -> dict[str, Any]:
        """``GET agent/status``: ``{version, tiers: {name: {provider, model, ready,
        key_set, reason}}, demo}`` of ``owner``'s effective tiers."""
        return build_status(
            self.effective(owner),
            self._environ(),
            self.version,
            refused=self.refused_overrides(owner),
        )

    def readiness_line(self, owner: str) -> str:
        """The one log line saying which tiers are ready and whether the demo runs."""
        return readiness_line(self.status(owner))

    def settings(self, owner: str, ceilings: Mapping[str, Any]) -> dict[str, Any]:
        """``GET agent/settings`` (references and URLs, never key values).

        ``{tiers, overridden, readiness: {name: {ready, key_set, reason, profile?}}, demo,
        ceilings}`` and the key policy (:meth:`KeyPolicy.to_json`): ``allowed_key_refs``,
        ``allowed_base_urls``, ``key_bindings``, ``allow_loopback_base_urls``.
        """
        status = self.status(owner)
        effective = self.effective(owner)
        readiness = {
            name: {key: tier[key] for key in _READINESS_KEYS}
            for name, tier in status["tiers"].items()
        }
        for name, ready in readiness.items():
            tier = effective.get(name)
            if tier and name != EMBED_TIER and tier.get("model"):
                ready["profile"] = model_profile(
                    str(tier["model"]), self.profiles.get(str(tier["model"])), tier.get("profile")
                )
        return {
            "tiers": effective,
            "overridden": sorted(self.user.tiers(owner)),
            **self.policy.to_json(),
            "readiness": readiness,
            "demo": bool(status["demo"]),
            "ceilings": dict(ceilings),
        }

    def validate(self, tiers: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
        """Check tier changes ``{name: tier or None}`` against the policy (raises
        :class:`~jupyter_agent.exceptions.SettingsError`)."""
        return validate_tiers(tiers, policy=self.policy)

    def ready_tiers(self, owner: str) -> tuple[dict[str, dict[str, Any]], bool]:
        """``owner``'s effective tiers that are ready, and whether codegen is not (the demo
        runs)."""
        status = self.status(owner)
        tiers = {
            name: tier
            for name, tier in self.effective(owner).items()
            if status["tiers"].get(name, {}).get("ready")
        }
        return tiers, bool(status["demo"])


def model_profile(
    model: str,
    admin: Mapping[str, Any] | None,
    person: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What runs of a tier assume of its ``model``: ``{context_window, max_output,
    tool_mode, assumed}``, the built-in profile with the admin's fields then the person's
    (``assumed``: no built-in profile matches the model and nobody described it, so a
    conservative one is used: say so, the person may set it)."""
    fields = {**(admin or {}), **(person or {})}
    with warnings.catch_warnings():  # "no profile for model": said here as ``assumed``
        warnings.simplefilter("ignore", UserWarning)
        try:
            profile = get_profile(model, fields or None)
        except AgentError:  # an admin's bad field: the profile without the fields
            profile = get_profile(model)
    return {
        "context_window": profile.context_window,
        "max_output": profile.max_output,
        "tool_mode": profile.tool_mode,
        "assumed": not known_model(model) and not fields,
    }
