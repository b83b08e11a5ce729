"""``{base_url}agent/mcp``: the agent as an MCP server (streamable HTTP) inside Jupyter.

The ``mcp`` SDK is imported by this module only, and this module only when the endpoint
is first used (a request to ``agent/mcp``): the server starts without it. Two parts:

- :class:`McpEndpoint` owns the SDK's ``StreamableHTTPSessionManager`` over the server of
  :mod:`.tools`. The manager's ``run()`` is an anyio context (a task group) that must
  be entered and left in one task, so it lives in one background task, started with the
  extension (:meth:`McpEndpoint.start`, also at the first request) and stopped with it
  (:meth:`McpEndpoint.stop`: open sessions and their streams end).
- :class:`~.handler.McpHandler` (:mod:`.handler`, no SDK import), a Jupyter handler
  (:class:`~jupyter_agent.server.base.AgentHandler`):
  Jupyter's token authentication (``Authorization: token T`` or ``Bearer T``, as
  jupyter_server 2.x reads both), its authorizer on resource ``agent`` (the endpoint needs
  ``read``; each tool's own permission is asked at request time and put in the ASGI scope
  for the tools, :class:`~.tools.Caller`; every answer awaited through
  :mod:`~jupyter_agent.server.auth.authz`, so a sync and an async authorizer answer
  alike), origin checks. An unauthenticated or unauthorized
  request is refused as every agent route is (403 ``{message, reason}``), before any MCP.
  A session belongs to the identity that opened it (:func:`session_identity`): another
  identity's request carrying its ``mcp-session-id`` is answered as an unknown session's.

The bridge: each POST, GET or DELETE is one ASGI ``http`` call of the session manager.
``receive`` gives the (already read) body, then waits for the client to go away
(``http.disconnect``: how a 2026-07-28 client cancels); ``send`` sets the status and
headers and writes each body chunk, flushed at once (an SSE stream's events reach the
client as they come). A client that went away mid-stream ends the call quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from jupyter_agent.exceptions import Unavailable
from jupyter_agent.runtime.services import Services
from jupyter_agent.server.mcp.tools import build_server

__all__ = ["McpEndpoint", "session_identity"]

log = logging.getLogger(__name__)


def session_identity(owner: str) -> AuthenticatedUser:
    """The identity a session is bound to: the request's owner (the username with several
    owners; ``""`` for the one user of a single-user server, whose token requests each get
    a new anonymous name). The SDK's session manager records it when ``initialize`` opens
    a session and refuses a request of another identity for that session id exactly as an
    unknown one (404 "Session not found"), forgetting it when the session ends (DELETE,
    idle timeout, :meth:`McpEndpoint.stop`); it holds at most ``max_sessions`` of them."""
    return AuthenticatedUser(AccessToken(token="", client_id=f"owner:{owner}", scopes=[]))


class McpEndpoint:
    """The session manager of the endpoint and the background task that runs it, over the
    app's services (``services()``: None when they could not be built)."""

    def __init__(self, services: Callable[[], Services | None], *, version: str) -> None:
        self._get_services = services
        self.server = build_server(self._services, version=version)
        # Jupyter checks the Host and Origin headers itself (check_host, check_origin),
        # so the SDK's DNS-rebinding check (which knows no allowed host here) is off.
        self.manager = StreamableHTTPSessionManager(
            self.server,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._stopped = False

    async def _services(self) -> Services:
        """The agent's services, started (``Unavailable`` when they could not be built)."""
        services = self._get_services()
        if services is None:
            raise Unavailable("The agent service is not available", reason="unavailable")
        await services.start()
        return services

    async def start(self) -> None:
        """Start the session manager's task (idempotent); returns once it serves.

        ``Unavailable`` after :meth:`stop` (a manager runs once) or when it failed."""
        if self._stopped:
            raise Unavailable("the MCP endpoint has stopped", reason="unavailable")
        if self._task is None:
            self._ready, self._stop = asyncio.Event(), asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._serve())
        assert self._ready is not None
        waiter = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not self._ready.is_set():
            raise Unavailable("the MCP endpoint could not start", reason="unavailable")

    async def _serve(self) -> None:
        assert self._ready is not None
        assert self._stop is not None
        try:
            async with self.manager.run():
                self._ready.set()
                await self._stop.wait()
        except Exception:
            log.exception("the MCP endpoint's session manager failed")

    async def stop(self) -> None:
        """End every session and the manager's task (no task is left running)."""
        self._stopped = True
        task, self._task = self._task, None
        if task is None:
            return
        assert self._stop is not None
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """One ASGI ``http`` call of the session manager (started first if need be)."""
        await self.start()
        await self.manager.handle_request(scope, receive, send)
