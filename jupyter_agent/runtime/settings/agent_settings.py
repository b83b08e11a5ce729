"""An agent's effective settings for an owner: its spaces, its tiers, which are ready.

:class:`AgentSettings` overlays the tiers (the admin's, then the owner's overrides, then
the agent's own) and reads each agent's spaces snapshot (package < its space < user <
project, cached by :class:`~.spaces.SpacesCache`). The run configs (a run's snapshot,
:mod:`jupyter_agent.runtime.runs.run_configs`) and ``GET agent/agents`` read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_agent.runtime.settings.agents import Agent, AgentRegistry, agent_json
from jupyter_agent.runtime.settings.readiness import build_status
from jupyter_agent.runtime.settings.spaces import SpacesCache
from jupyter_agent.runtime.settings.tiers import TierSettings

__all__ = ["AgentSettings"]


class AgentSettings:
    """The agents of one server as each owner gets them (see the module docstring).

    ``environ`` gives the environment key references resolve in (read at each use);
    ``version`` is the server's (in the readiness status).
    """

    def __init__(
        self,
        *,
        agents: AgentRegistry,
        tiers: TierSettings,
        data_dir: Path,
        root_dir: str,
        environ: Callable[[], Mapping[str, str]],
        version: str,
    ) -> None:
        self.agents = agents
        self._tiers = tiers
        self._data_dir = data_dir
        self._root_dir = root_dir
        self._environ = environ
        self._version = version
        self._spaces = SpacesCache()

    def spaces(self, agent: Agent) -> dict[str, Any]:
        """``agent``'s spaces snapshot (package < its space < user < project), cached."""
        return self._spaces.snapshot(
            data_dir=self._data_dir,
            root_dir=Path(self._root_dir),
            agent_name=agent.name,
            agent_space=agent.space,
        )

    def effective_tiers(self, agent: Agent, owner: str) -> dict[str, dict[str, Any]]:
        """The admin's tiers, overlaid by ``owner``'s, overlaid by ``agent``'s (copies)."""
        tiers = self._tiers.effective(owner)
        tiers.update({name: dict(tier) for name, tier in agent.tiers.items()})
        return tiers

    def model_problem(self, provider: str, model: str) -> str | None:
        """Why a tier of ``provider`` set from the browser may not name ``model`` (the
        admin's ``allowed_models``), or None."""
        return self._tiers.policy.model_problem(provider, model)

    def ready_tiers(self, agent: Agent, owner: str) -> tuple[dict[str, dict[str, Any]], bool]:
        """``agent``'s effective tiers that are ready, and whether codegen is not (the demo
        runs). The agent's own tiers are the admin's (trusted, or checked by the key policy
        when its folder set them); a user tier the policy refuses stays refused unless the
        agent replaces it."""
        if not agent.tiers:
            return self._tiers.ready_tiers(owner)
        tiers = self.effective_tiers(agent, owner)
        refused = {
            name: reason
            for name, reason in self._tiers.refused_overrides(owner).items()
            if name not in agent.tiers
        }
        status = build_status(tiers, self._environ(), self._version, refused=refused)
        ready = {n: t for n, t in tiers.items() if status["tiers"].get(n, {}).get("ready")}
        return ready, bool(status["demo"])

    def describe(self, owner: str) -> list[dict[str, Any]]:
        """``GET agent/agents``' entries (:func:`~.agents.agent_json`; ``owner``'s tiers
        under each agent's), the default agent first. Reads the spaces (a ``stat`` walk at
        least): call it in a thread."""
        return [
            agent_json(a, spaces=self.spaces(a), tiers=self.effective_tiers(a, owner))
            for a in self.agents.agents()
        ]
