"""What one run's parts share: its ids, config, services, program, phase and results.

:class:`RunContext` is built by the driver at a run's start and handed to the parts that
perform its effects (:mod:`.performers`); :class:`StoredTurn` is the run's turn once
stored with its end summary (one write: ``turn.append``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jupyter_agent.core.events.types import Event
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.runtime.loop.phase import RunLifecycle
from jupyter_agent.runtime.mcp.app import McpRunState
from jupyter_agent.runtime.memory.search import Prefetch
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices

__all__ = ["RunContext", "StoredTurn"]


@dataclass(frozen=True)
class StoredTurn:
    """A run's turn as stored, with the end summary stored with it (None: the run had no
    summary to end, a test's driver)."""

    turn: TurnRecord
    ended: RunSummary | None


@dataclass(kw_only=True)
class RunContext:
    """One run's shared parts (see the module docstring)."""

    run_id: str
    chat_id: str
    #: The agent the run answers as: the stored turn's ``fromAgent``.
    agent: str
    #: Whose run it is (its chat's owner): its memories, recall and proposals are theirs.
    owner: str
    config: RunConfig
    services: RunServices
    program: RunProgram
    #: The run's summary as opened (None: a test's driver).
    summary: RunSummary | None
    lifecycle: RunLifecycle
    #: The run's MCP catalogue (its config.get mcp answer) and the person's approvals.
    mcp: McpRunState = field(default_factory=McpRunState)
    #: The recall search started at the run's start (``toolcaller@v7``), until taken.
    prefetch: Prefetch | None = None
    #: The run's turn, once stored.
    stored: StoredTurn | None = None
    #: Where its events go (None: its chat's; a rerun's go on a channel of their own).
    channel: str | None = None

    def publish(self, event: Event) -> None:
        """Publish one of the run's events."""
        self.services.events.publish(self.channel or self.chat_id, self.run_id, event)
