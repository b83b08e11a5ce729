"""The services of one server's agent, one per concern, as one typed record.

:class:`Services` is what the server's handlers and its MCP endpoint call: each field is
the service of one concern (chats and messages, runs and traces, memory, proposals,
programs, settings, fresh-kernel cells, the person's kernel variables, completions), each
a small class with typed arguments that raises the one error tree
(:mod:`jupyter_agent.exceptions`). The assembly
(:mod:`.assembly`) builds each once; ``start`` is the parts' idempotent start (the pool,
runs left running recovered), awaited before a service is used.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from jupyter_agent.runtime.complete.service import CompletionService
from jupyter_agent.runtime.kernels.cell_service import CellService
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.notebook.person_variables import PersonVariables
from jupyter_agent.runtime.notebook.proposals import ProposalService
from jupyter_agent.runtime.runs.chat_service import ChatService
from jupyter_agent.runtime.runs.run_service import RunService
from jupyter_agent.runtime.settings.service import SettingsService

if TYPE_CHECKING:
    from jupyter_agent.programs.service import ProgramService
    from jupyter_agent.runtime.evals.service import EvalService

__all__ = ["Services"]


@dataclass(frozen=True, kw_only=True)
class Services:
    """One server's services (see the module docstring)."""

    #: ``agent/chats``: chats, their history and notebooks, messages (and the event bus).
    chats: ChatService
    #: ``agent/runs``, ``agent/break``: runs, their traces, breaks and approvals.
    runs: RunService
    #: ``agent/memories``: facts that outlive a chat.
    memory: MemoryService
    #: ``agent/proposals``: the agent's notebook edits, decided and undone by the person.
    proposals: ProposalService
    #: ``agent/status``, ``agent/settings``, ``agent/agents``: each owner's settings.
    settings: SettingsService
    #: The MCP endpoint's ``run_cell``: single cells in fresh kernels.
    cells: CellService
    #: ``agent/variables``: the person's kernel variables by notebook (``@`` mentions).
    variables: PersonVariables
    #: ``agent/complete``: inline completions (not runs), their usage per owner.
    complete: CompletionService
    #: Builds the deploys' service (:attr:`programs`) at its first use.
    make_programs: Callable[[], ProgramService]
    #: Builds the evals service (:attr:`evals`) at its first use.
    make_evals: Callable[[], EvalService]
    #: Start the parts (idempotent; shielded from a cancelled caller).
    start: Callable[[], Awaitable[None]]

    @cached_property
    def programs(self) -> ProgramService:
        """``agent/programs``: deploys, listings, rollbacks. Built at its first use: the
        deploy checks and their check process are not on the server's start path (runs
        resolve their program through the registry)."""
        return self.make_programs()

    @cached_property
    def evals(self) -> EvalService:
        """``agent/evals``: suites of cases run, checked and reported. Built at its first
        use: what it imports (reruns, reports, the cells view) is not on the server's
        start path, and most servers never run an eval."""
        return self.make_evals()

    def evals_built(self) -> EvalService | None:
        """The evals service if something used it (what a stop must stop), else None."""
        built: EvalService | None = self.__dict__.get("evals")
        return built
