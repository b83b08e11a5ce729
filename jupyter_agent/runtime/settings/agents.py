"""The agents one server hosts: each a space with its own ``_soul``, skills and
tiers, and (through :mod:`jupyter_agent.programs`) its own program versions.

Where agents come from, read once when the server starts (:meth:`AgentRegistry.build`):

- the ``JupyterAgent.agents`` trait, ``{name: {"space"?: path, "tiers"?: {tier: {...}},
  "description"?: str}}`` (the admin's: trusted like the ``tiers`` trait); a relative
  ``space`` is relative to the agent data dir, ``~`` is expanded;
- the folders ``{data_dir}/agents/<name>/`` (``data_dir`` is ``{jupyter_data_dir}/
  jupyter_agent``): the folder is the agent's space; an optional ``agent.json`` in it,
  ``{"tiers"?: {...}, "description"?: str}``, gives the rest. The folder lives in the
  person's data dir, so its tiers are checked by the admin's key policy like the person's
  own settings (a tier the policy refuses is dropped with a warning).

The trait wins on a clash, field by field (a trait entry without ``space`` takes the
folder of the same name as its space). The default agent, :data:`DEFAULT_AGENT`
(``agent``, the name turns already record in ``fromAgent``), always exists: with no entry
it has no space of its own (the package's ``_soul``). Names must match :data:`NAME_RULE`;
an entry with a bad name, a bad field or an unreadable ``agent.json`` is skipped, with a
warning in :attr:`AgentRegistry.warnings` (logged at start); a trait ``space`` that is not
a folder is kept (it may be made later) with a warning.

An agent's tiers override the person's settings for the tiers it names (the assembly does
the overlay: :meth:`Parts.run_config <jupyter_agent.runtime.assembly.Parts.run_config>`).
Nothing here reads a key value: tiers hold references (``api_key_ref``) only.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_agent.core.loop.prompt import RuntimeContext, build_system
from jupyter_agent.exceptions import BadRequest
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy
from jupyter_agent.runtime.settings.overrides import PROVIDERS, TIER_KEYS, TIER_NAMES, policy_reason

__all__ = [
    "AGENTS_FOLDER",
    "AGENT_FILE",
    "DEFAULT_AGENT",
    "NAME_RULE",
    "Agent",
    "AgentRegistry",
    "agent_json",
    "check_agent_name",
    "soul_fingerprint",
    "unknown_agent",
]

log = logging.getLogger(__name__)

#: The agent every server has; chats made before agents existed belong to it.
DEFAULT_AGENT = "agent"
#: What an agent's name may be.
NAME_RULE = re.compile(r"[a-z][a-z0-9_-]{0,39}\Z")
#: The folder under the agent data dir whose subfolders are agents.
AGENTS_FOLDER = "agents"
#: The optional file in an agent's folder.
AGENT_FILE = "agent.json"

_ENTRY_KEYS = frozenset({"space", "tiers", "description"})
_FILE_KEYS = frozenset({"tiers", "description"})
_MAX_DESCRIPTION = 500
_MAX_FILE_BYTES = 64 * 1024


def unknown_agent(message: str) -> BadRequest:
    """The refusal of a request naming an agent this server does not host: a
    ``BadRequest`` with reason ``unknown_agent`` (400)."""
    return BadRequest(message, reason="unknown_agent")


def check_agent_name(name: object) -> str:
    """``name`` when it is a string matching :data:`NAME_RULE`, else the
    :func:`unknown_agent` refusal (a name that cannot be an agent's is no agent here)."""
    if not isinstance(name, str) or not NAME_RULE.match(name):
        raise unknown_agent(
            f"{name!r} is not an agent name (a lowercase letter, then up to 39 of a-z 0-9 _ -)"
        )
    return name


@dataclass(frozen=True)
class Agent:
    """One agent: its name, its space folder (None: none of its own), the tiers it sets
    (``{tier: {provider, model, base_url?, api_key_ref?, api?}}``), a description for
    people and where it was configured (``default``, ``trait``, ``folder``,
    ``trait+folder``)."""

    name: str
    space: Path | None = None
    tiers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    description: str = ""
    source: str = "default"

    @property
    def is_default(self) -> bool:
        """True for :data:`DEFAULT_AGENT`."""
        return self.name == DEFAULT_AGENT


class _Skip(ValueError):
    """An entry that cannot be an agent: the message says why (a warning)."""


def _check_tiers(tiers: object, where: str, policy: KeyPolicy | None) -> dict[str, dict[str, Any]]:
    """The tiers of an entry, shaped like the ``tiers`` trait's; ``policy`` (folders):
    also checked by the key policy, a refused tier dropped with a warning (logged)."""
    if not isinstance(tiers, Mapping):
        raise _Skip(f"{where}.tiers must be a dict of tiers")
    clean: dict[str, dict[str, Any]] = {}
    for name, tier in tiers.items():
        at = f"{where}.tiers[{name!r}]"
        if name not in TIER_NAMES:
            raise _Skip(f"{at}: unknown tier (known: {', '.join(TIER_NAMES)})")
        if not isinstance(tier, Mapping):
            raise _Skip(f"{at} must be a dict")
        unknown = sorted(set(tier) - TIER_KEYS)
        if unknown:  # named, never echoed: a stray "api_key" would hold a secret
            raise _Skip(f"{at} has unknown key(s) {', '.join(unknown)}")
        if tier.get("provider") not in PROVIDERS:
            raise _Skip(f"{at}.provider must be one of {', '.join(sorted(PROVIDERS))}")
        for key in ("model", "base_url", "api_key_ref", "api"):
            value = tier.get(key)
            if (key == "model" or value is not None) and not isinstance(value, str):
                raise _Skip(f"{at}.{key} must be a string")
        if policy is not None:
            reason = policy_reason(tier, policy)
            if reason is not None:
                log.warning("jupyter-agent: %s is refused by the key policy: %s", at, reason)
                continue
        clean[str(name)] = dict(tier)
    return clean


def _description(value: object, where: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_DESCRIPTION:
        raise _Skip(f"{where}.description must be a string of at most {_MAX_DESCRIPTION} chars")
    return value.strip()


def _read_agent_file(folder: Path) -> dict[str, Any]:
    """The ``agent.json`` of an agent folder ({} when there is none)."""
    path = folder / AGENT_FILE
    if not path.is_file():
        return {}
    try:
        data = path.read_bytes()
        if len(data) > _MAX_FILE_BYTES:
            raise _Skip(f"{path}: {len(data)} bytes (limit {_MAX_FILE_BYTES})")
        value = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise _Skip(f"{path}: unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise _Skip(f"{path}: expected an object")
    unknown = sorted(set(value) - _FILE_KEYS)
    if unknown:
        raise _Skip(f"{path}: unknown key(s) {', '.join(unknown)}")
    return value


class AgentRegistry:
    """The agents of one server (see the module docstring); build with :meth:`build`.

    Immutable once built: changing the ``agents`` trait or the folders takes a server
    restart (an agent's *space files* are read at each run start, as every space is).
    """

    def __init__(self, agents: Mapping[str, Agent], warnings: tuple[str, ...] = ()) -> None:
        self._agents = dict(agents)
        if DEFAULT_AGENT not in self._agents:
            self._agents[DEFAULT_AGENT] = Agent(DEFAULT_AGENT)
        #: What to warn the admin about at start (skipped entries, missing folders).
        self.warnings = warnings

    @classmethod
    def build(
        cls,
        configured: Mapping[str, Any],
        *,
        data_dir: Path,
        policy: KeyPolicy | None = None,
    ) -> AgentRegistry:
        """The agents of the ``agents`` trait (``configured``) and of the folders under
        ``{data_dir}/agents/``; ``policy`` checks the folders' tiers (None: the admin's
        default policy, which allows no key reference). Never raises for a bad entry."""
        policy = policy or KeyPolicy()
        warnings: list[str] = []
        folders = cls._folder_entries(Path(data_dir) / AGENTS_FOLDER, policy, warnings)
        agents: dict[str, Agent] = {}
        for name, entry in configured.items():
            where = f"JupyterAgent.agents[{name!r}]"
            try:
                if not isinstance(name, str) or not NAME_RULE.match(name):
                    raise _Skip(f"{where}: not an agent name ({NAME_RULE.pattern})")
                agents[name] = cls._trait_entry(name, entry, where, data_dir, folders.get(name))
            except _Skip as skip:
                warnings.append(f"agent skipped: {skip}")
                continue
            space = agents[name].space
            if space is not None and not space.is_dir():
                warnings.append(f"{where}: space {space} is not a folder (no agent layer yet)")
        for name, agent in folders.items():
            agents.setdefault(name, agent)
        return cls(agents, tuple(warnings))

    @staticmethod
    def _folder_entries(root: Path, policy: KeyPolicy, warnings: list[str]) -> dict[str, Agent]:
        found: dict[str, Agent] = {}
        try:
            children = sorted(root.iterdir()) if root.is_dir() else []
        except OSError as exc:
            warnings.append(f"cannot list the agent folders in {root}: {exc}")
            return found
        for child in children:
            if child.name.startswith(".") or not child.is_dir():
                continue
            try:
                if not NAME_RULE.match(child.name):
                    raise _Skip(f"{child}: not an agent name ({NAME_RULE.pattern})")
                meta = _read_agent_file(child)
                where = str(child / AGENT_FILE)
                tiers = _check_tiers(meta["tiers"], where, policy) if "tiers" in meta else {}
                description = _description(meta.get("description", ""), where)
            except _Skip as skip:
                warnings.append(f"agent skipped: {skip}")
                continue
            found[child.name] = Agent(child.name, child, tiers, description, "folder")
        return found

    @staticmethod
    def _trait_entry(
        name: str, entry: object, where: str, data_dir: Path, folder: Agent | None
    ) -> Agent:
        if not isinstance(entry, Mapping):
            raise _Skip(f"{where} must be a dict")
        unknown = sorted(set(entry) - _ENTRY_KEYS)
        if unknown:
            raise _Skip(f"{where} has unknown key(s) {', '.join(unknown)}")
        space: Path | None = folder.space if folder else None
        if "space" in entry:
            if not isinstance(entry["space"], str) or not entry["space"].strip():
                raise _Skip(f"{where}.space must be a folder path")
            space = Path(data_dir) / Path(entry["space"]).expanduser()
        # Trusted (the admin's), like the tiers trait: no key policy check.
        tiers = _check_tiers(entry["tiers"], where, None) if "tiers" in entry else {}
        if folder is not None:
            tiers = {**{n: dict(t) for n, t in folder.tiers.items()}, **tiers}
        description = folder.description if folder else ""
        if "description" in entry:
            description = _description(entry["description"], where)
        source = "trait+folder" if folder else "trait"
        return Agent(name, space, tiers, description, source)

    # --- queries ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every agent's name: the default agent first, then by name."""
        return [DEFAULT_AGENT, *sorted(n for n in self._agents if n != DEFAULT_AGENT)]

    def agents(self) -> list[Agent]:
        """Every agent, in :meth:`names` order."""
        return [self._agents[name] for name in self.names()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._agents

    def __len__(self) -> int:
        return len(self._agents)

    def get(self, name: str) -> Agent:
        """The agent named ``name``; the :func:`unknown_agent` refusal (400) when this
        server does not host it."""
        agent = self._agents.get(check_agent_name(name))
        if agent is None:
            raise unknown_agent(
                f"this server hosts no agent {name!r} (agents: {', '.join(self.names())})"
            )
        return agent

    def for_run(self, name: str) -> Agent:
        """The agent a run of a chat made for ``name`` uses: that agent, or the default
        one when it was removed from the config since the chat was made (logged)."""
        agent = self._agents.get(name)
        if agent is None:
            log.warning(
                "jupyter-agent: the chat's agent %r is no longer configured: the default "
                "agent %r answers",
                name,
                DEFAULT_AGENT,
            )
            return self._agents[DEFAULT_AGENT]
        return agent

    def tier_refs(self) -> list[str]:
        """Every credential reference the agents' tiers name (for the scrubber)."""
        return sorted(
            {
                str(tier["api_key_ref"])
                for agent in self._agents.values()
                for tier in agent.tiers.values()
                if tier.get("api_key_ref")
            }
        )


def soul_fingerprint(spaces: Mapping[str, Any]) -> str:
    """The identity fingerprint the prompt computes for a spaces snapshot (the sha256 of
    its ``_soul``: :attr:`SystemPrompt.fingerprint_identity
    <jupyter_agent.core.loop.prompt.SystemPrompt.fingerprint_identity>`, the one turns record),
    computed by the prompt itself so the two never drift apart."""
    context = RuntimeContext(agent_space="", chat_id="", agent_name="", installed_apps=())
    return build_system(spaces, tools=(), apps=(), context=context).fingerprint_identity


def agent_json(
    agent: Agent, *, spaces: Mapping[str, Any], tiers: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """One entry of ``GET agent/agents``: ``{name, description, soul_fingerprint, tiers:
    {tier: {provider, model}}, default}``; ``spaces`` is the agent's snapshot, ``tiers``
    the tiers it runs with (no URL, no key reference)."""
    return {
        "name": agent.name,
        "description": agent.description,
        "soul_fingerprint": soul_fingerprint(spaces),
        "tiers": {
            name: {"provider": tier.get("provider"), "model": tier.get("model")}
            for name, tier in sorted(tiers.items())
        },
        "default": agent.is_default,
    }
