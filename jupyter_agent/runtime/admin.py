"""What the admin configured for one server's agent: :class:`AdminConfig`, the
``JupyterAgent`` traits as one value, trusted as given (the app builds it; the assembly,
:mod:`jupyter_agent.runtime.assembly`, reads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.runtime.notebook.exports import DEFAULT_FOLDER
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy

__all__ = ["AdminConfig"]


@dataclass(frozen=True, kw_only=True)
class AdminConfig:
    """What the admin configured (the ``JupyterAgent`` traits): trusted as given."""

    tiers: dict[str, dict[str, Any]]
    key_policy: KeyPolicy = field(default_factory=KeyPolicy)
    #: What to warn the admin about once at start (legacy traits; never a key value).
    policy_warnings: tuple[str, ...] = ()
    max_attachment_bytes: int = 10 * 1024 * 1024
    #: The ``complete_rate`` trait: an owner's inline completions per minute, at most.
    complete_rate: int = 60
    version: str = ""
    trace_dir: str = DEFAULT_FOLDER
    #: SQLAlchemy URL of the agent database ("": the default SQLite file).
    db_url: str = ""
    #: For :func:`assemble` without a pool or transport given (the server passes its
    #: configurable parts, which read ``c.KernelPool.*`` / ``c.Transport.*``).
    pool_size: int = 2
    kernel_env_keep: tuple[str, ...] = ()
    retry_after_cap_s: float = 60.0
    #: Per-model profile overrides, as profile fields (:mod:`.settings.profiles`).
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``agents`` trait: ``{name: {space?, tiers?, description?}}`` (:mod:`.settings.agents`).
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The ``approval`` trait: which cells wait for the person; new runs read it
    #: as ``ceilings.approval`` (``none``, ``writes``, ``every_cell``).
    approval: str = "writes"
    #: The ``mcp_servers`` trait: ``{name: server config}`` as the admin wrote
    #: it (:mod:`.mcp.config` validates it; a bad entry is logged and shown, not fatal).
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    #: The owner of the server's own user: ``""`` in single-user mode, the Hub
    #: user's name under JupyterHub. Its settings get the old ``settings.json``; the
    #: start-up readiness line is about its tiers.
    server_owner: str = ""
    #: ``program_check_timeout_s``: the deadline of a deploy's check process.
    program_check_timeout_s: float = 20.0
    name_chats: bool = True  #: name chats after their first turn (``title@v1``)
