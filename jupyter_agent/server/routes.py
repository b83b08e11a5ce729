"""REST routes of the agent API (thin: they translate HTTP, the services do the work).

Routes are listed in ``default_handlers`` (patterns relative to the server's base URL);
``JupyterAgent.initialize_handlers`` registers them. Handlers live by concern, each calling
its concern's service (:class:`~jupyter_agent.runtime.services.Services`): :mod:`.chats`
(chats, history, messages), :mod:`.runs` (runs, break), :mod:`.approvals`, :mod:`.memory`
(memories), :mod:`.proposals` (notebook proposals), :mod:`.programs`, :mod:`.events` (the
events socket), :mod:`.mcp` (the MCP endpoint); status, settings and the agents list (the
settings service) are here. See :mod:`.base` for authentication, authorization and errors,
:mod:`.parse` for turning bodies and queries into the services' typed arguments.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.server import parse
from jupyter_agent.server.approvals import ApprovalHandler
from jupyter_agent.server.base import AUTH_RESOURCE, AgentHandler, authorized_execute
from jupyter_agent.server.chats import (
    ChatForkHandler,
    ChatHandler,
    ChatHistoryHandler,
    ChatImportHandler,
    ChatNotebookHandler,
    ChatsHandler,
    MessagesHandler,
)
from jupyter_agent.server.events import EventsSocket
from jupyter_agent.server.mcp.handler import MCP_ROUTE, McpHandler
from jupyter_agent.server.memory import MemoriesHandler, MemoryHandler
from jupyter_agent.server.programs import (
    ProgramHandler,
    ProgramRollbackHandler,
    ProgramsHandler,
)
from jupyter_agent.server.proposals import (
    CompleteHandler,
    ProposalDecisionHandler,
    ProposalsHandler,
    ProposalUndoHandler,
    VariablesHandler,
)
from jupyter_agent.server.runs import (
    BreakHandler,
    EvalHandler,
    EvalsHandler,
    RerunHandler,
    RunDiffHandler,
    RunHandler,
    RunNotebookHandler,
    RunsHandler,
    RunStatsHandler,
)

__all__ = [
    "AUTH_RESOURCE",
    "AgentHandler",
    "AgentsHandler",
    "SettingsHandler",
    "StatusHandler",
    "default_handlers",
]


class StatusHandler(AgentHandler):
    """``GET agent/status``: ``{version, tiers: {name: {provider, model, ready, key_set,
    reason}}, demo}``."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer the server's version, the owner's tiers' readiness and whether they run
        the demo."""
        self.finish_json(await self.agent.status(owner=self.owner))


class SettingsHandler(AgentHandler):
    """``GET`` / ``PUT agent/settings``: the effective settings; PUT changes the user's tiers."""

    body_methods = frozenset({"PUT"})

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer ``{tiers, overridden, readiness, allowed_key_refs, allowed_base_urls,
        key_bindings, allow_loopback_base_urls, demo, ceilings}``."""
        settings = (await self.services()).settings
        self.finish_json(await settings.settings(owner=self.owner))

    @web.authenticated
    @authorized_execute
    async def put(self) -> None:
        """``{tiers: {name: tier or null}}``: store the user's tier overrides (checked by
        the service against the key policy); answer the effective settings."""
        body = self.json_body()
        parse.only_keys(
            body, ("tiers",), reason="bad_settings", what="setting", doing="changed here"
        )
        tiers = parse.mapping(body, "tiers", reason="bad_settings")
        settings = (await self.services()).settings
        self.finish_json(await settings.update(owner=self.owner, tiers=tiers))


class AgentsHandler(AgentHandler):
    """``GET agent/agents``: the agents this server hosts."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Answer ``{agents: [{name, description, soul_fingerprint, tiers: {tier: {provider,
        model}}, default}]}``, the default agent first."""
        settings = (await self.services()).settings
        self.finish_json(await settings.agents(owner=self.owner))


_ID = r"(?P<{}>[^/]+)"

#: Routes relative to the server's base URL (``JupyterAgent`` joins them with it).
default_handlers: list[tuple[str, type[web.RequestHandler]]] = [
    (r"/agent/status", StatusHandler),
    (r"/agent/settings", SettingsHandler),
    (r"/agent/agents", AgentsHandler),
    (r"/agent/chats", ChatsHandler),
    (r"/agent/chats/import", ChatImportHandler),  # before {chat_id}, which would match it
    (rf"/agent/chats/{_ID.format('chat_id')}", ChatHandler),
    (rf"/agent/chats/{_ID.format('chat_id')}/notebook", ChatNotebookHandler),
    (rf"/agent/chats/{_ID.format('chat_id')}/history", ChatHistoryHandler),
    (rf"/agent/chats/{_ID.format('chat_id')}/fork", ChatForkHandler),
    (rf"/agent/chats/{_ID.format('chat_id')}/messages", MessagesHandler),
    (rf"/agent/chats/{_ID.format('chat_id')}/events", EventsSocket),
    (r"/agent/runs", RunsHandler),
    (rf"/agent/runs/{_ID.format('run_id')}", RunHandler),
    (rf"/agent/runs/{_ID.format('run_id')}/stats", RunStatsHandler),
    (rf"/agent/runs/{_ID.format('run_id')}/notebook", RunNotebookHandler),
    (rf"/agent/runs/{_ID.format('run_id')}/rerun", RerunHandler),
    (rf"/agent/runs/{_ID.format('run_id')}/diff/{_ID.format('other')}", RunDiffHandler),
    (
        rf"/agent/runs/{_ID.format('run_id')}/approvals/{_ID.format('approval_id')}",
        ApprovalHandler,
    ),
    (rf"/agent/break/{_ID.format('run_id')}", BreakHandler),
    (
        rf"/agent/runs/{_ID.format('run_id')}/proposals/{_ID.format('proposal_id')}",
        ProposalDecisionHandler,
    ),
    (r"/agent/proposals", ProposalsHandler),
    (rf"/agent/proposals/{_ID.format('proposal_id')}/undo", ProposalUndoHandler),
    (r"/agent/variables", VariablesHandler),
    (r"/agent/complete", CompleteHandler),
    (r"/agent/evals", EvalsHandler),
    (rf"/agent/evals/{_ID.format('eval_id')}", EvalHandler),
    (r"/agent/memories", MemoriesHandler),
    (rf"/agent/memories/{_ID.format('memory_id')}", MemoryHandler),
    (r"/agent/programs", ProgramsHandler),
    (rf"/agent/programs/{_ID.format('name')}", ProgramHandler),
    (rf"/agent/programs/{_ID.format('name')}/rollback", ProgramRollbackHandler),
    (MCP_ROUTE, McpHandler),  # the agent as an MCP server
]
