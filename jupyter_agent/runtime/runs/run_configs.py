"""The snapshot a run starts with: tiers, ceilings, spaces, profiles, recall, its agent.

:class:`RunConfigs` builds a :class:`~jupyter_agent.runtime.runs.parts.RunConfig` for a
run of an agent and an owner: that agent's ready tiers for the owner (or the demo model),
the run manager's ceilings and layouts (:class:`RunLimits`), the agent's spaces and the
admin's model profiles. The run manager calls :meth:`RunConfigs.run_config` at each run
start (on the event loop), the history scheduler :meth:`RunConfigs.history_config` for
summary runs, the MCP endpoint's fresh-kernel cells for their digest options.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from jupyter_agent.runtime.runs.ceilings import RunCeilings
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.settings.agent_settings import AgentSettings
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT
from jupyter_agent.runtime.settings.demo import DemoModel
from jupyter_agent.runtime.settings.overrides import TIER_NAMES

__all__ = ["RunConfigs", "RunLimits", "chat_codegen"]

#: A chat's model: a tier name or a model id (``claude-sonnet-4-5``, ``llama3.1:8b``,
#: ``accounts/x/models/y``), never whitespace or control characters.
_MODEL_NAME: Final = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")


def chat_codegen(tiers: Mapping[str, Mapping[str, Any]], model: str) -> dict[str, Any]:
    """The codegen tier of a chat whose model is ``model``: the ready tier of that name
    (a copy), else codegen with ``model`` as its model (``tiers`` holds a ready codegen)."""
    if model in tiers:
        return dict(tiers[model])
    if model in TIER_NAMES:  # a tier that is not ready now: passed over
        return dict(tiers["codegen"])
    return {**tiers["codegen"], "model": model}


class RunLimits(Protocol):
    """What a new run reads from the run manager's traits."""

    @property
    def ceilings(self) -> dict[str, Any]: ...

    @property
    def recall_settings(self) -> dict[str, Any]: ...

    @property
    def chunk_turns(self) -> int: ...

    @property
    def l2_chunks(self) -> int: ...

    @property
    def recall_timeout_ms(self) -> float: ...


class RunConfigs:
    """Runs' config snapshots (see the module docstring). ``limits`` gives the run
    manager (built after this: the manager calls :meth:`run_config`); ``profiles`` are the
    admin's per-model overrides; ``approval`` the admin's approval policy (new runs read it
    as ``ceilings.approval``)."""

    def __init__(
        self,
        *,
        agents: AgentSettings,
        demo: DemoModel,
        limits: Callable[[], RunLimits],
        profiles: Mapping[str, Mapping[str, Any]],
        approval: str,
    ) -> None:
        self._agents = agents
        self._demo = demo
        self._limits = limits
        self._profiles = profiles
        self._approval = approval

    def run_config(
        self, agent: str = DEFAULT_AGENT, *, owner: str, model: str | None = None
    ) -> RunConfig:
        """The snapshot a run of ``agent`` for ``owner`` (its chat's) starts with: the
        owner's effective tiers (or the demo), ceilings, that agent's spaces. A tier's
        ``profile`` (the person's settings) becomes its model's profile fields. ``model``
        (the chat's, see :meth:`model_problem`) replaces the codegen tier when it still
        applies; one that no longer does (its tier is not ready now) is passed over.

        An agent this server no longer hosts answers as the default agent (logged). The
        agent's tiers replace the user's for the tiers it names. Tiers that are not ready
        are left out (they fall back to codegen); when codegen is not ready, the demo
        model takes its place. Called on the event loop at each run start: the spaces
        come from the spaces cache (a ``stat`` walk unless a layer changed).
        """
        return self._snapshot(agent, owner, model, with_demo=True)

    def _snapshot(self, agent: str, owner: str, model: str | None, *, with_demo: bool) -> RunConfig:
        chosen = self._agents.agents.for_run(agent)
        tiers, demo = self._agents.ready_tiers(chosen, owner)
        profiles = {model: dict(fields) for model, fields in self._profiles.items()}
        for name, tier in list(tiers.items()):
            if "profile" in tier:  # the person's word on the model, over the admin's
                tier = dict(tier)
                said = tier.pop("profile") or {}
                of = str(tier.get("model"))  # not ``model``: the chat's, used below
                profiles[of] = {**profiles.get(of, {}), **said}
                tiers[name] = tier
        if demo:
            if with_demo:  # else no codegen: nothing to run with (a summary waits)
                tiers["codegen"] = self._demo.tier()
                profiles.update(self._demo.profiles())
        elif model:
            tiers["codegen"] = chat_codegen(tiers, model)
        limits = self._limits()
        layout = {"chunk_turns": limits.chunk_turns, "l2_chunks": limits.l2_chunks}
        return RunConfig(
            tiers=tiers,
            ceilings=RunCeilings({**limits.ceilings, "approval": self._approval}),
            spaces=self._agents.spaces(chosen),
            profiles=profiles,
            history_layout=layout,
            recall=limits.recall_settings,
            recall_timeout_ms=int(limits.recall_timeout_ms),
            agent=chosen.name,
        )

    def model_problem(self, model: str, *, agent: str, owner: str) -> str | None:
        """Why a chat of ``agent`` for ``owner`` may not answer with ``model``, or None.

        ``model`` is one of ``owner``'s ready tiers by name (``classify``: that tier's
        provider, model and key answer in codegen's place) or a model name of the codegen
        tier's provider (its URL and key, another model), which the admin's
        ``allowed_models`` must allow. Nothing is possible while the demo model answers.
        Blocking (reads the settings): call it in a thread.
        """
        if not _MODEL_NAME.fullmatch(model):
            return (
                "a model is a tier name or a model name: 1 to 200 characters, no spaces or "
                f"control characters (got {model[:40]!r})"
            )
        chosen = self._agents.agents.for_run(agent)
        tiers, demo = self._agents.ready_tiers(chosen, owner)
        if demo:
            return (
                "no model is configured: the demo model answers every chat; set one in "
                "Agent settings first"
            )
        if model in ("embed", "complete"):
            return f"the {model} tier is not a chat model: use codegen, classify or vision"
        if model in tiers:
            return None
        if model in self._agents.effective_tiers(chosen, owner):
            return f"the tier {model} is not ready (Agent settings says why)"
        codegen = tiers["codegen"]
        return self._agents.model_problem(str(codegen.get("provider", "")), model)

    def history_config(self, agent: str = DEFAULT_AGENT, *, owner: str) -> RunConfig:
        """The snapshot a summary run of ``agent``'s chat starts with: :meth:`run_config`'s,
        but never the demo model (a canned summary would be stored for good): with no
        ready codegen tier there is no tier to summarise with, and the scheduler retries
        later. The demo provider is not started for it (a server's start reads this)."""
        return self._snapshot(agent, owner, None, with_demo=False)
