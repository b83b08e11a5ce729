"""The MCP servers one Jupyter server's agent calls: connections and catalogue.

:class:`McpHub` (one per server process, in ``RunServices.mcp``) holds one
:class:`McpConnection` per configured server (:mod:`.config`):

- nothing starts before the first :meth:`McpHub.catalogue` (or call): then every server is
  connected concurrently, each bounded by ``connect_timeout_s``; its tools are listed (every
  page), the allowed ones kept in the server's order. A server that fails is shown with a
  short ``error`` (no secret) and tried again after ``retry_after_s``. A
  ``tools/list_changed`` notification or a reconnect lists again.
- :meth:`McpHub.call` sends one ``tools/call`` with a deadline and answers the reply value
  (:func:`~.results.result_value`), or raises
  :class:`~jupyter_agent.exceptions.McpCallError` whose message starts with
  ``mcp.<server>.<tool>:``.
- A dead connection (the stdio process exited, the HTTP session gone) is restarted at most
  once per call: when the call had not been sent yet, or the tool is read-only; a mutating
  call the connection lost under it fails with "it may or may not have run".
- :meth:`McpHub.aclose` stops every connection (a stdio child gets its stdin closed, then
  SIGTERM, then SIGKILL: the SDK's ``stdio_client`` does that on exit).

The SDK's anyio context managers must be entered and exited in one task, so each
connection (:class:`~.connection.McpConnection`) has one long-lived owner task that
enters the transport and the ``Client`` and holds them; a request runs in its caller's
task on the open ``Client`` (a hard break cancels it there; the SDK tells the server).
Nothing blocks the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.mcp.catalogue import McpCatalogue, McpServerTools, McpTool, python_name
from jupyter_agent.exceptions import McpCallError, McpError
from jupyter_agent.runtime.mcp.config import McpServerConfig
from jupyter_agent.runtime.mcp.connection import Lost, McpConnection, short_reason
from jupyter_agent.runtime.mcp.results import error_text, result_value
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber

__all__ = ["McpHub"]

log = logging.getLogger(__name__)

_PAGES_MAX: Final = 50  # tools/list pages read at most (a server that pages forever)


@dataclass(eq=False)
class _Server:
    config: McpServerConfig
    conn: McpConnection | None = None
    tools: tuple[McpTool, ...] | None = None
    error: str | None = None
    failed_at: float = 0.0
    stale: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def entry(self) -> McpServerTools:
        return McpServerTools(name=self.config.name, tools=self.tools or (), error=self.error)


class McpHub:
    """The configured MCP servers (see the module docstring)."""

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        problems: Mapping[str, str] | None = None,
        environ: Mapping[str, str] | None = None,
        scrubber: Scrubber = NO_SECRETS,
        connect_timeout_s: float = 15.0,
        retry_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``servers``: the good entries; ``problems``: the bad ones' errors by name (shown
        in the catalogue, never connected). ``environ``: where references resolve
        (default: the server's environment, read at each connect)."""
        self._servers = [_Server(config=c) for c in servers]
        self._problems = dict(problems or {})
        self._environ = environ
        self.scrubber = scrubber
        self.connect_timeout_s = connect_timeout_s
        self.retry_after_s = retry_after_s
        self._clock = clock
        self._closed = False
        self._refresh: asyncio.Future[McpCatalogue] | None = None  # current()'s re-list

    def __bool__(self) -> bool:
        return bool(self._servers or self._problems)

    @property
    def names(self) -> list[str]:
        """The configured servers' names (good ones, in config order)."""
        return [s.config.name for s in self._servers]

    # --- catalogue -------------------------------------------------------------------------

    @property
    def cached(self) -> McpCatalogue:
        """The catalogue as listed so far (connects nothing)."""
        entries = [s.entry() for s in self._servers]
        entries += [McpServerTools(name=n, error=e) for n, e in self._problems.items()]
        return McpCatalogue(servers=tuple(entries))

    async def catalogue(self) -> McpCatalogue:
        """Every configured server's allowed tools (connecting the ones not connected)."""
        if not self:
            return McpCatalogue()
        await asyncio.gather(*(self._ensure(s) for s in self._servers))
        return self.cached

    async def current(self) -> McpCatalogue:
        """The catalogue a turn's start reads, without re-listing on its path: the first
        time (a server never listed nor failed) it waits for :meth:`catalogue`; after that
        it answers the cached one at once, and a server due again (its tools changed, its
        connection died, or its failure is older than ``retry_after_s``) is listed again
        in the background, for the next turns."""
        if not self:
            return McpCatalogue()
        if any(s.tools is None and s.error is None for s in self._servers):
            return await self.catalogue()
        if self._refresh is None and any(self._due(s) for s in self._servers):
            self._refresh = asyncio.ensure_future(self.catalogue())
            self._refresh.add_done_callback(self._refreshed)
        return self.cached

    def _due(self, server: _Server) -> bool:
        conn = server.conn
        if server.error is not None:
            return self._clock() - server.failed_at >= self.retry_after_s
        return server.stale or conn is None or not conn.alive

    def _refreshed(self, task: asyncio.Future[McpCatalogue]) -> None:
        self._refresh = None
        if not task.cancelled():
            task.exception()  # catalogue() never raises; retrieved all the same

    async def _ensure(self, server: _Server) -> None:
        """Connect and list ``server`` unless it is connected and listed (or failed less than
        ``retry_after_s`` ago). Never raises: a failure is the server's ``error``."""
        async with server.lock:
            conn = server.conn
            if conn is not None and conn.alive and server.tools is not None and not server.stale:
                return
            if server.error is not None and self._clock() - server.failed_at < self.retry_after_s:
                return
            if self._closed:
                server.error = "the agent is stopping"
                return
            try:
                if conn is None or not conn.alive:
                    if conn is not None:
                        await conn.stop()
                    server.conn = conn = McpConnection(
                        server.config, self._env(), lambda: setattr(server, "stale", True)
                    )
                    await conn.start(self.connect_timeout_s)
                server.stale = False
                server.tools = await self._list(conn)
                server.error = None
            except Exception as err:  # any failure to connect is the server's error
                reason = (
                    f"no answer within {self.connect_timeout_s:g} s"
                    if isinstance(err, (asyncio.TimeoutError, TimeoutError))
                    else short_reason(err, self.scrubber)
                )
                server.tools, server.error, server.failed_at = None, reason, self._clock()
                log.warning("jupyter-agent: MCP server %s: %s", server.config.name, reason)
                if server.conn is not None:
                    await server.conn.stop()

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    async def _list(self, conn: McpConnection) -> tuple[McpTool, ...]:
        config = conn.config

        async def pages(client: Any) -> list[Any]:
            found: list[Any] = []
            cursor: str | None = None
            for _ in range(_PAGES_MAX):
                page = await client.list_tools(cursor=cursor)
                found.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            return found

        listed = await conn.request(pages, self.connect_timeout_s)
        tools: list[McpTool] = []
        for tool in listed:
            if not config.allows(tool.name):
                continue
            hint = getattr(tool.annotations, "read_only_hint", None)
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
            tools.append(
                McpTool(
                    name=tool.name,
                    description=self.scrubber.scrub(tool.description or ""),
                    input_schema=self.scrubber.clean_json(dict(schema)),
                    mutating=config.is_mutating(tool.name, read_only_hint=hint),
                )
            )
        return tuple(tools)

    # --- calls -----------------------------------------------------------------------------

    def _server(self, server_py: str, method: str) -> _Server:
        for server in self._servers:
            if server.config.python_name == server_py:
                return server
        problem = next((e for n, e in self._problems.items() if python_name(n) == server_py), None)
        if problem is not None:
            raise McpCallError(f"{method}: the server is misconfigured: {problem}")
        names = ", ".join(python_name(n) for n in [*self.names, *self._problems]) or "none"
        raise McpCallError(f"{method}: unknown MCP server {server_py!r}; configured: {names}")

    async def call(
        self,
        server_py: str,
        tool_py: str,
        args: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
        may_mutate: bool = True,
    ) -> dict[str, Any]:
        """Call one tool (both named by their Python names); the reply value, or
        McpCallError (see the module docstring). ``may_mutate=False``: a tool the server
        (now) marks as mutating is refused, not called (its caller did not ask the person)."""
        method = f"mcp.{server_py}.{tool_py}"
        server = self._server(server_py, method)
        await self._ensure(server)
        if server.error is not None:
            raise McpCallError(f"{method}: {server.config.name} is unavailable: {server.error}")
        tool = next((t for t in server.tools or () if t.python_name == tool_py), None)
        if tool is None:
            have = ", ".join(t.python_name for t in server.tools or ()) or "no tools"
            raise McpCallError(f"{method}: unknown tool; {server_py} has {have}")
        if tool.mutating and not may_mutate:
            raise McpCallError(
                f"{method}: not run: {server.config.name} now lists it as mutating, so it"
                " needs the person's approval; call it again to ask"
            )
        deadline = float(timeout_s if timeout_s is not None else server.config.timeout_s)

        async def send(client: Any) -> Any:
            return await client.call_tool(tool.name, dict(args))

        for attempt in (1, 2):
            conn = server.conn
            try:
                if conn is None:
                    raise Lost("not connected", sent=False)
                result = await conn.request(send, deadline, ping_first=tool.mutating)
                break
            except (asyncio.TimeoutError, TimeoutError):  # anyio's is the builtin one
                raise McpCallError(f"{method}: timed out after {deadline:g} s") from None
            except Lost as lost:
                retry = not lost.sent or not tool.mutating
                if attempt == 2 or not retry:
                    server.tools = None  # reconnect (and list again) at the next use
                    more = "" if retry else " during the call: it may or may not have run"
                    raise McpCallError(
                        f"{method}: the server exited{more} ({self.scrubber.scrub(str(lost))});"
                        " restarting"
                    ) from None
                server.tools = None
                await self._ensure(server)
                if server.error is not None:
                    raise McpCallError(
                        f"{method}: the server exited and could not restart: {server.error}"
                    ) from None
            except McpError as err:
                raise McpCallError(f"{method}: {short_reason(err, self.scrubber)}") from None
            except Exception as err:  # the SDK's error (a protocol error, a bad argument)
                raise McpCallError(f"{method}: {short_reason(err, self.scrubber)}") from None
        if result.is_error:
            raise McpCallError(f"{method}: {error_text(result, self.scrubber)}")
        return result_value(result, self.scrubber)

    # --- life cycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every connection (no server process is left); later calls fail clearly."""
        self._closed = True
        if self._refresh is not None:
            self._refresh.cancel()
        conns = [s.conn for s in self._servers if s.conn is not None]
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)
        for server in self._servers:
            server.conn, server.tools = None, None
