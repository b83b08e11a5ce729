"""The tools and resources of the agent's MCP endpoint (``{base_url}agent/mcp``).

:func:`build_server` answers a low-level MCP ``Server`` whose handlers translate MCP
requests into calls of the agent's services (:class:`~jupyter_agent.runtime.services.Services`:
typed arguments; the services' refusals become tool errors) -- nothing here decides
anything:

======================  ==========  ======================================================
tool                    needs       calls
======================  ==========  ======================================================
``chat``                execute     ``chats.create`` (no ``chat_id``), then
                                    :func:`~jupyter_agent.runtime.runs.chat_wait.send_and_wait`
                                    (``wait``) or ``chats.send``
``break_run``           execute     ``runs.break_run``
``list_runs``           read        ``runs.list``, or ``runs.of_chat`` with ``chat_id``
``show_run``            read        ``runs.detail``
``export_notebook``     read        ``runs.notebook`` / ``chats.notebook``; with ``write``
                        (execute)   (needs execute) ``runs.write_notebook`` /
                                    ``chats.write_notebook``
``run_cell``            execute     ``cells.run``
                                    (:class:`~jupyter_agent.runtime.kernels.cell_service.CellService`)
``fork_chat``           execute     ``chats.fork`` (these five: :mod:`.time_tools`)
``diff_runs``           read        ``runs.diff``
``rerun``               execute     ``runs.rerun``
``run_eval``            execute     ``evals.start`` (``wait``: then ``evals.get`` until done)
``eval_status``         read        ``evals.get``
======================  ==========  ======================================================

Permissions are the Jupyter authorizer's answers for the request that carried the call
(:class:`Caller`, put in the ASGI scope by :mod:`.endpoint` under :data:`CALLER_KEY`),
never the session's: ``tools/list`` leaves out what the caller may not call, and a call of
one is a tool error naming the permission. Every call and resource is scoped to the
caller's owner (another owner's chat or run is "not found", as over REST; an
admin reads any run). Resources (``agent://chats/{chat_id}``: the chat
with its turns; ``agent://runs/{run_id}``: the run detail) need ``read``; the newest 50
chats and 50 runs are listed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from jupyter_agent.exceptions import AgentError, BadRequest, NotFound, RequestError
from jupyter_agent.runtime.runs.chat_wait import send_and_wait
from jupyter_agent.runtime.services import Services
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT
from jupyter_agent.server.mcp.schemas import TOOL_SCHEMAS, Args, tool_list
from jupyter_agent.server.mcp.time_tools import TIME_TOOLS, Call, TimeTools

__all__ = ["CALLER_KEY", "Caller", "build_server"]

log = logging.getLogger(__name__)

#: Where :mod:`.endpoint` puts the request's :class:`Caller` in the ASGI scope.
CALLER_KEY: Final = "jupyter_agent.mcp.caller"
#: JSON-RPC error code of an unknown resource (the MCP spec's).
RESOURCE_NOT_FOUND: Final = -32002
_LISTED = 50


@dataclass(frozen=True)
class Caller:
    """What the user of one request may do on resource ``agent`` (asked of the authorizer
    at request time and awaited, :mod:`~jupyter_agent.server.auth.authz`: a sync and an
    async authorizer alike)."""

    user: str
    read: bool
    execute: bool
    #: Whose chats and runs the calls see (:func:`~jupyter_agent.server.auth.owners.request_owner`).
    owner: str = ""
    #: An admin reads any run (``show_run``, ``agent://runs/...``), nothing more.
    admin: bool = False

    def may(self, permission: str) -> bool:
        """True when the caller holds ``permission`` (``read`` or ``execute``)."""
        return self.execute if permission == "execute" else self.read


_NOBODY = Caller(user="", read=False, execute=False)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The request's caller (nobody when the request did not come through the endpoint)."""
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER_KEY) if isinstance(scope, Mapping) else None
    return caller if isinstance(caller, Caller) else _NOBODY


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)


def _json_result(value: dict[str, Any], text: str | None = None) -> types.CallToolResult:
    body = text if text is not None else json.dumps(value, indent=1, ensure_ascii=False)
    return types.CallToolResult(content=[_text(body)], structured_content=value)


#: The endpoint's services, started on first use.
ServicesGetter = Callable[[], Awaitable[Services]]


class _Tools:
    """The tool calls, over the services the endpoint gives."""

    def __init__(self, services: ServicesGetter) -> None:
        self._services = services
        self._time = TimeTools(services)

    async def call(
        self, ctx: ServerRequestContext[Any, Any], name: str, raw: Mapping[str, Any] | None
    ) -> types.CallToolResult:
        caller = caller_of(ctx)
        schema = TOOL_SCHEMAS.get(name)
        if schema is None:
            return _error(f"unknown tool {name[:80]!r}; tools: {', '.join(TOOL_SCHEMAS)}")
        try:
            args = Args(name, raw or {})
            needed = schema.permission(args)
            if not caller.may(needed):
                return _error(
                    f"{name}: permission denied: this needs '{needed}' on resource 'agent', "
                    f"which the server's authorizer does not give {caller.user or 'this user'}"
                )
            if name in TIME_TOOLS:
                return await self._time_tool(ctx, name, caller, args)
            method: Callable[..., Awaitable[types.CallToolResult]] = getattr(self, f"_{name}")
            return await method(ctx, args)
        except RequestError as exc:
            return _error(f"{name}: {exc.message}")
        except AgentError as exc:
            log.warning("MCP tool %s failed: %s", name, exc)
            return _error(f"{name}: {exc}")

    async def _time_tool(
        self, ctx: ServerRequestContext[Any, Any], name: str, caller: Caller, args: Args
    ) -> types.CallToolResult:
        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.session.report_progress(done, total, message)

        call = Call(owner=caller.owner, admin=caller.admin, args=args, progress=progress)
        value, text = await getattr(self._time, name)(call)
        return _json_result(value, text)

    async def _chat(self, ctx: ServerRequestContext[Any, Any], args: Args) -> types.CallToolResult:
        text = args.string("text")
        chat_id = args.optional_string("chat_id")
        agent = args.optional_string("agent")
        wait = args.flag("wait", default=True)
        timeout_s = args.number("timeout_s", default=600.0, low=1.0, high=3600.0)
        services = await self._services()
        chats, owner = services.chats, caller_of(ctx).owner
        if chat_id is None:
            made = await chats.create(owner=owner, agent=agent or DEFAULT_AGENT)
            chat_id = str(made["id"])
        elif agent is not None:
            chat = await chats.get(chat_id, owner=owner)
            if chat.get("agent", DEFAULT_AGENT) != agent:
                raise BadRequest(
                    f"chat {chat_id} talks to agent {chat.get('agent')!r}, not {agent!r}",
                    reason="unknown_agent",
                )
        if not wait:
            answer = await chats.send(chat_id, owner=owner, text=text)
            return _json_result({"chat_id": chat_id, **answer})
        count = 0

        async def progress(message: str) -> None:
            nonlocal count
            count += 1
            await ctx.session.report_progress(count, None, message)

        outcome = await send_and_wait(
            chats,
            services.runs,
            chat_id,
            owner=owner,
            text=text,
            timeout_s=timeout_s,
            on_progress=progress,
        )
        value = outcome.to_json()
        if not outcome.ended:
            note = (
                f"Run {outcome.run_id} is still going after {timeout_s:g} s; its turn will "
                f"be in show_run(run_id={outcome.run_id!r}) once it ends."
            )
            return _json_result(value, note)
        return _json_result(value, outcome.reply or "(no reply)")

    async def _break_run(self, ctx: Any, args: Args) -> types.CallToolResult:
        run_id, hard = args.string("run_id"), args.flag("hard", default=False)
        owner = caller_of(ctx).owner
        runs = (await self._services()).runs
        return _json_result(await runs.break_run(run_id, owner=owner, hard=hard))

    async def _list_runs(self, ctx: Any, args: Args) -> types.CallToolResult:
        chat_id, program = args.optional_string("chat_id"), args.optional_string("program")
        limit = args.integer("limit", default=20, low=1, high=1000)
        runs, owner = (await self._services()).runs, caller_of(ctx).owner
        if chat_id is not None:
            if program is not None:
                raise BadRequest("give 'chat_id' or 'program', not both", reason="bad_page")
            return _json_result(await runs.of_chat(chat_id, owner=owner, limit=limit))
        return _json_result(await runs.list(owner=owner, program=program, limit=limit))

    async def _show_run(self, ctx: Any, args: Args) -> types.CallToolResult:
        run_id, full = args.string("run_id"), args.flag("full", default=False)
        caller = caller_of(ctx)
        runs = (await self._services()).runs
        detail = await runs.detail(run_id, owner=caller.owner, admin=caller.admin, full=full)
        return _json_result(detail)

    async def _export_notebook(self, ctx: Any, args: Args) -> types.CallToolResult:
        run_id, chat_id = args.optional_string("run_id"), args.optional_string("chat_id")
        write = args.flag("write", default=False)
        if (run_id is None) == (chat_id is None):
            raise BadRequest("give exactly one of 'run_id' and 'chat_id'", reason="bad_target")
        services, owner = await self._services(), caller_of(ctx).owner
        runs, chats = services.runs, services.chats
        if write:
            if run_id is not None:
                return _json_result(await runs.write_notebook(run_id, owner=owner))
            return _json_result(await chats.write_notebook(str(chat_id), owner=owner))
        if run_id is not None:
            return _json_result(await runs.notebook(run_id, owner=owner))
        return _json_result(await chats.notebook(str(chat_id), owner=owner))

    async def _run_cell(self, ctx: Any, args: Args) -> types.CallToolResult:
        code = args.string("code", strip=False)
        timeout_s = args.number("timeout_s", default=60.0, low=0.001, high=3600.0)
        answer = await (await self._services()).cells.run(code, timeout_s=timeout_s)
        content: list[types.ContentBlock] = [_text(answer.text)]
        content.extend(
            types.ImageContent(type="image", data=data, mime_type=mime)
            for mime, data in answer.images
        )
        return types.CallToolResult(content=content, structured_content=answer.to_json())


class _Resources:
    """``agent://chats/{id}`` and ``agent://runs/{id}``."""

    def __init__(self, services: ServicesGetter) -> None:
        self._services = services

    async def listed(self, ctx: ServerRequestContext[Any, Any]) -> list[types.Resource]:
        caller = caller_of(ctx)
        if not caller.read:
            return []
        services = await self._services()
        chats = (await services.chats.list(owner=caller.owner))["chats"][:_LISTED]
        runs = (await services.runs.list(owner=caller.owner, limit=_LISTED))["runs"]
        listed = [
            types.Resource(
                name=f"chat {c['id']}",
                title=c.get("title") or c["id"],
                uri=f"agent://chats/{c['id']}",
                mime_type="application/json",
                description="The chat and its turns",
            )
            for c in chats
        ]
        listed.extend(
            types.Resource(
                name=f"run {r['run_id']}",
                uri=f"agent://runs/{r['run_id']}",
                mime_type="application/json",
                description=f"A run of chat {r.get('chat_id')} ({r.get('status')})",
            )
            for r in runs
        )
        return listed

    async def read(self, ctx: ServerRequestContext[Any, Any], uri: str) -> dict[str, Any]:
        caller = caller_of(ctx)
        if not caller.read:
            raise MCPError(types.INVALID_REQUEST, "reading agent resources needs 'read'")
        kind, _, ident = uri.removeprefix("agent://").partition("/")
        if not uri.startswith("agent://") or kind not in ("chats", "runs") or not ident:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri[:120]!r}")
        services = await self._services()
        try:
            if kind == "chats":
                return await services.chats.get(ident, owner=caller.owner)
            return await services.runs.detail(ident, owner=caller.owner, admin=caller.admin)
        except NotFound as exc:
            raise MCPError(RESOURCE_NOT_FOUND, exc.message) from None


TEMPLATES: Final = (
    types.ResourceTemplate(
        name="chat",
        uri_template="agent://chats/{chat_id}",
        mime_type="application/json",
        description="A chat of the agent with its turns (as GET agent/chats/{id})",
    ),
    types.ResourceTemplate(
        name="run",
        uri_template="agent://runs/{run_id}",
        mime_type="application/json",
        description="A run: its turn record and steps (as GET agent/runs/{id})",
    ),
)


def input_schema(name: str) -> dict[str, Any] | None:
    """The input schema of tool ``name`` (None: no such tool)."""
    schema = TOOL_SCHEMAS.get(name)
    return schema.input_schema if schema is not None else None


def build_server(services: ServicesGetter, *, version: str) -> Server[Any]:
    """The endpoint's MCP server over ``services`` (the agent's services, started); see
    the module docstring."""
    tools, resources = _Tools(services), _Resources(services)

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(caller_of(ctx).may))

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await tools.call(ctx, params.name, params.arguments)

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await resources.listed(ctx))

    async def on_list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(TEMPLATES))

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        value = await resources.read(ctx, uri)
        text = json.dumps(value, ensure_ascii=False)
        contents: list[types.TextResourceContents | types.BlobResourceContents] = [
            types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        ]
        return types.ReadResourceResult(contents=contents)

    return Server(
        "jupyter-agent",
        version=version,
        instructions=(
            "The jupyter-agent of this Jupyter server: chat with it (chat), watch and stop "
            "its runs (list_runs, show_run, break_run), export a turn or a chat as a "
            "notebook (export_notebook), run Python in a fresh agent kernel (run_cell)."
        ),
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_templates,
        on_read_resource=on_read_resource,
    )
