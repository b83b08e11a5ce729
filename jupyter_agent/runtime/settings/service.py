"""The settings service: status, settings and agents of each owner, with typed arguments.

:class:`SettingsService` answers ``GET agent/status``, ``GET``/``PUT agent/settings`` and
``GET agent/agents``. Every method takes the request's ``owner``: an owner's overrides
change their own tiers only. A refused change is a
:class:`~jupyter_agent.exceptions.SettingsError` (``BadRequest``: the key policy's
reasons); a locked or unreachable database is ``StoreUnavailable``. The store is read in a
thread (the owner's settings are cached; :meth:`know_owner` warms them before a run starts
on the event loop). Answers are JSON-ready dicts; never a key value.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_agent.runtime.settings.agent_settings import AgentSettings
from jupyter_agent.runtime.settings.overrides import OwnerSettings
from jupyter_agent.runtime.settings.tiers import TierSettings

__all__ = ["SettingsService"]


class SettingsService:
    """Each owner's settings of one server's agent (see the module docstring).

    ``ceilings`` gives the run ceilings new runs get (shown in the settings);
    ``history_status`` the chunk summaries' ``{pending, failing, last_error}``;
    ``kernels`` the agent kernels' ``{warm, starting, in_use}`` (None: not reported).
    """

    def __init__(
        self,
        *,
        user: OwnerSettings,
        tiers: TierSettings,
        agents: AgentSettings,
        ceilings: Callable[[], Mapping[str, Any]],
        history_status: Callable[[], dict[str, Any]],
        kernels: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self._user = user
        self._tiers = tiers
        self._agents = agents
        self._ceilings = ceilings
        self._history_status = history_status
        self._kernels = kernels

    async def know_owner(self, owner: str) -> None:
        """Read ``owner``'s settings once, off the event loop (a no-op once they are
        cached): whatever their request starts on the loop then finds them there."""
        if not self._user.cached(owner):
            await asyncio.to_thread(self._user.warm, owner)

    async def status(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/status`` for ``owner``: ``{version, tiers, demo, history, kernels}``;
        each tier ``{provider, model, ready, key_set, reason}``; ``history``: ``{pending,
        failing, last_error}`` of the chunk summaries (:meth:`HistoryScheduler.status
        <jupyter_agent.runtime.history.jobs.HistoryScheduler.status>`); ``kernels``: the
        agent kernels' ``{warm, starting, in_use}`` (they are in no Jupyter listing).
        Answered on the event loop once the owner's settings are cached (their refresh from
        the store runs in a thread of its own): no worker thread is waited for, so a status
        answers at once while every one of them waits on a slow store. The owner's first
        read is made in a worker thread."""
        if self._user.cached(owner):
            tiers = self._tiers.status(owner)
        else:
            tiers = await asyncio.to_thread(self._tiers.status, owner)
        answer = {**tiers, "history": self._history_status()}
        if self._kernels is not None:
            answer["kernels"] = self._kernels()
        return answer

    def is_demo(self, *, owner: str) -> bool:
        """True when ``owner``'s codegen cannot run, so their runs use the demo model."""
        return bool(self._tiers.status(owner)["demo"])

    async def settings(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/settings`` of ``owner``: the effective settings, readiness and key
        policy (:meth:`TierSettings.settings`; references, never key values)."""
        return await asyncio.to_thread(self._tiers.settings, owner, self._ceilings())

    async def update(self, *, owner: str, tiers: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT agent/settings`` of ``owner``: check the tier changes ``{name: tier or
        None}`` against the key policy (``SettingsError``), store them as ``owner``'s (no
        other owner's tiers change), answer the effective settings."""
        changes = self._tiers.validate(tiers)
        await asyncio.to_thread(self._user.update, owner, changes)
        return await self.settings(owner=owner)

    async def agents(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/agents``: ``{agents: [{name, description, soul_fingerprint, tiers:
        {tier: {provider, model}}, default}]}`` (``owner``'s tiers under each agent's), the
        default agent first."""
        return {"agents": await asyncio.to_thread(self._agents.describe, owner)}
