"""One connection to one MCP server, owned by one task (see :mod:`.hub`).

The SDK's anyio context managers (the stdio child or the HTTP client, then the
``Client``) must be entered and exited in one task: :class:`McpConnection`'s owner task
enters them and holds them until :meth:`McpConnection.stop` (or until the connection
ends). A request runs in its caller's task on the open ``Client`` (the SDK routes the
answer through its own streams): no hop through the owner, which a tool call from a cell
would pay twice (the MCP bench). Its deadline is an anyio cancel scope in the caller.
A request the connection ends under fails with :class:`Lost` (``sent`` says whether it
had gone out).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Final

import anyio

from jupyter_agent.exceptions import McpError
from jupyter_agent.runtime.mcp.config import McpServerConfig
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber

__all__ = ["Lost", "McpConnection", "short_reason"]

_ERROR_MAX: Final = 200  # the length of a server's error in the catalogue
_STOP_S: Final = 10.0  # how long an owner task gets to leave its contexts at stop


class Lost(Exception):
    """The connection ended under a request; ``sent``: whether the request had gone out."""

    def __init__(self, reason: str, *, sent: bool) -> None:
        super().__init__(reason)
        self.sent = sent


def short_reason(err: BaseException, scrubber: Scrubber) -> str:
    """A one-line reason for an error, cut and scrubbed (never a header or a URL's secret)."""
    inner = getattr(err, "exceptions", None)  # an exception group (anyio's task groups)
    if isinstance(inner, (list, tuple)) and inner and isinstance(inner[0], BaseException):
        return short_reason(inner[0], scrubber)
    text = " ".join(str(err).split()) or type(err).__name__
    if not isinstance(err, McpError):
        text = f"{type(err).__name__}: {text}"
    if len(text) > _ERROR_MAX:
        text = text[: _ERROR_MAX - 3] + "..."
    return scrubber.scrub(text)


class McpConnection:
    """One live connection to one server, owned by one task (see the module docstring)."""

    def __init__(
        self, config: McpServerConfig, environ: Mapping[str, str], on_change: Callable[[], None]
    ) -> None:
        self.config = config
        self._environ = environ
        self._on_change = on_change
        self._leave: asyncio.Event = asyncio.Event()  # set: the owner leaves its contexts
        self._client: Any = None  # the open Client while the owner holds it
        self._calls: set[asyncio.Task[Any]] = set()  # the callers' tasks in a request
        self._cut: set[asyncio.Task[Any]] = set()  # ... the owner cancelled as it ended
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self.ended: str | None = None  # why the connection ended (None: alive or starting)

    @property
    def alive(self) -> bool:
        return self.ended is None and self._task is not None and not self._task.done()

    async def start(self, timeout_s: float) -> None:
        """Connect (raises McpError with a short reason, or TimeoutError)."""
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout_s)
        except BaseException:
            await self.stop()
            raise

    async def _transport(self, stack: AsyncExitStack) -> Any:
        from mcp.client.stdio import StdioServerParameters
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if self.config.transport == "http":
            headers = self.config.resolve_headers(self._environ)
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            return streamable_http_client(self.config.url, http_client=http)
        command, *args = self.config.command
        return StdioServerParameters(
            command=command,
            args=list(args),
            env=self.config.resolve_env(self._environ) or None,
            cwd=self.config.cwd,
        )

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._on_change()

    async def _own(self) -> None:
        from mcp import Client

        reason = "the connection closed"
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                if self.config.transport == "stdio":
                    # The child's stderr is its own log, not ours (it may print anything).
                    devnull = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115
                    transport = _stdio(transport, devnull)
                client = Client(transport, cache=None, message_handler=self._on_message)
                await stack.enter_async_context(client)
                self._client = client
                self._ready.set_result(None)
                await self._leave.wait()
            reason = "the connection was closed"
        except (asyncio.CancelledError, KeyboardInterrupt):
            reason = "the connection was stopped"
            raise
        except BaseException as err:
            reason = short_reason(err, NO_SECRETS)
            if not self._ready.done():
                self._ready.set_exception(McpError(reason))
        finally:
            self.ended = self.ended or reason
            self._client = None
            if not self._ready.done():
                self._ready.set_exception(McpError(reason))
            for task in list(self._calls):  # a request the contexts' exit did not end
                self._cut.add(task)
                task.cancel()

    async def request(
        self, op: Callable[[Any], Awaitable[Any]], timeout_s: float, *, ping_first: bool = False
    ) -> Any:
        """Run ``op(client)`` in the caller's task; TimeoutError past ``timeout_s``, Lost when
        the connection ends under it. ``ping_first``: probe the server first (a
        ``tools/list``: ``ping`` is gone in 2026-07-28), so a connection found dead then is
        "not sent" and a restart and one more try are safe even for a mutating tool."""
        client = self._client
        if not self.alive or client is None:
            raise Lost(self.ended or "not connected", sent=False)
        task = asyncio.current_task()
        assert task is not None
        sent = False
        self._calls.add(task)
        try:
            with anyio.fail_after(timeout_s):
                if ping_first:
                    await client.list_tools()
                sent = True
                return await op(client)
        except asyncio.CancelledError:
            if task not in self._cut:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python 3.11+: the cut is handled
            if uncancel is not None:
                uncancel()
            raise Lost(self.ended or "the connection closed", sent=sent) from None
        except Exception as err:
            if not _closed(err):
                raise
            # the process exited, the session is gone: the owner leaves, the hub reconnects
            self.ended = self.ended or "the connection closed"
            self._leave.set()
            raise Lost(self.ended, sent=sent) from err
        finally:
            self._calls.discard(task)
            self._cut.discard(task)

    async def stop(self) -> None:
        """Leave the contexts (the stdio child is ended by the SDK); idempotent. A
        connection still connecting is cancelled at once (its owner would only see the
        leave signal once connected: a server that never answers would hold the stop)."""
        task = self._task
        if task is None or task.done():
            return
        self._leave.set()
        if not self._ready.done():
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=_STOP_S)
        if not done:
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=_STOP_S)


def _closed(err: BaseException) -> bool:
    """Whether ``err`` says the connection is gone (not that the request failed)."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    code = getattr(err, "code", None) if isinstance(err, MCPError) else None
    gone = (anyio.ClosedResourceError, anyio.BrokenResourceError)
    return code == CONNECTION_CLOSED or isinstance(err, gone)


def _stdio(params: Any, errlog: Any) -> Any:
    from mcp.client.stdio import stdio_client

    return stdio_client(params, errlog=errlog)
