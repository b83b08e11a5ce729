"""The ``agent/mcp`` handler: Jupyter's authentication and authorizer, then one ASGI call of
the endpoint's session manager (:mod:`.endpoint`, see its docstring for the bridge).

It imports no part of the ``mcp`` SDK: the tools' caller record and the endpoint come from
the app when a request comes (:meth:`~jupyter_agent.server.app.JupyterAgent.mcp_endpoint`
builds the endpoint, importing the SDK, on first use), so a server that is never asked for
MCP never loads it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_agent.exceptions import Unavailable
from jupyter_agent.server.auth import authz
from jupyter_agent.server.base import AUTH_RESOURCE, AgentHandler

if TYPE_CHECKING:
    from jupyter_agent.server.mcp.endpoint import McpEndpoint
    from jupyter_agent.server.mcp.tools import Caller

__all__ = ["MCP_ROUTE", "McpHandler"]

#: The route, under ``{base_url}``.
MCP_ROUTE = r"/agent/mcp"


class McpHandler(AgentHandler):
    """``POST``, ``GET`` and ``DELETE agent/mcp``: MCP streamable HTTP (see the module)."""

    body_methods = frozenset({"POST"})  # a JSON-RPC message, read by the MCP SDK

    _disconnected: asyncio.Event
    _content_type: str | None = None
    _gone = False

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        """A fresh disconnect signal per request."""
        super().initialize(*args, **kwargs)
        self._disconnected = asyncio.Event()

    def on_connection_close(self) -> None:
        """The client went away: ``receive`` answers ``http.disconnect``."""
        self._disconnected.set()
        super().on_connection_close()

    async def _caller(self) -> Caller:
        from jupyter_agent.server.mcp.tools import Caller

        """What this request's user may do, each permission asked of the authorizer and
        awaited (:mod:`~jupyter_agent.server.auth.authz`: an async authorizer's coroutine is
        not a yes)."""
        user = self.current_user
        name = str(getattr(user, "username", "") or "")
        read = await authz.is_authorized(self, "read", AUTH_RESOURCE)
        execute = await authz.is_authorized(self, "execute", AUTH_RESOURCE)
        # The same owner as the REST routes': one request, one owner.
        return Caller(
            user=name,
            read=read,
            execute=execute,
            owner=self.owner,
            admin=await self.is_admin(),
        )

    def _scope(self, caller: Caller) -> dict[str, Any]:
        from jupyter_agent.server.mcp.endpoint import session_identity
        from jupyter_agent.server.mcp.tools import CALLER_KEY

        request = self.request
        host, _, port = (request.host or "").rpartition(":")
        headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.get_all()
        ]
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.version.removeprefix("HTTP/") or "1.1",
            "method": request.method,
            "scheme": request.protocol,
            "path": request.path,
            "raw_path": request.path.encode("latin-1", "replace"),
            "root_path": "",
            "query_string": (request.query or "").encode("latin-1", "replace"),
            "headers": headers,
            "client": (request.remote_ip, 0),
            "server": (host or request.host, int(port) if port.isdigit() else None),
            "state": {},
            # The session manager binds a session to the identity that opened it and
            # answers another identity's request for it as for an unknown session.
            "user": session_identity(caller.owner),
            CALLER_KEY: caller,
        }

    async def _bridge(self) -> None:
        caller = await self._caller()
        if not caller.read:
            raise web.HTTPError(403, "the MCP endpoint needs 'read' on resource 'agent'")
        endpoint: McpEndpoint | None = getattr(self.agent, "mcp_endpoint", None)
        if endpoint is None:
            raise Unavailable("the MCP endpoint is not available", reason="unavailable")
        body = self.request.body or b""
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": body, "more_body": False}
            await self._disconnected.wait()
            return {"type": "http.disconnect"}

        await endpoint.handle(self._scope(caller), receive, self._send)
        if not self._gone and not self._finished:
            self.finish(set_content_type=self._content_type or "application/json")

    async def _send(self, message: dict[str, Any]) -> None:
        if self._gone:
            return
        kind = message.get("type")
        if kind == "http.response.start":
            self.set_status(int(message["status"]))
            self.clear_header("Content-Type")
            for name, value in message.get("headers") or ():
                key, text = name.decode("latin-1"), value.decode("latin-1")
                if key.lower() == "content-type":
                    self._content_type = text
                self.add_header(key, text)
        elif kind == "http.response.body":
            chunk = message.get("body") or b""
            try:
                if chunk:
                    self.write(chunk)
                    await self.flush()
                if not message.get("more_body", False):
                    # awaited: a client gone by now fails it here, not in a future nobody reads
                    await self.finish(set_content_type=self._content_type or "application/json")
            except StreamClosedError:
                self._gone = True
                self._disconnected.set()

    @web.authenticated
    async def post(self) -> None:
        """A JSON-RPC message (answered as JSON or an SSE stream)."""
        await self._bridge()

    @web.authenticated
    async def get(self) -> None:
        """The session's standalone SSE stream (legacy protocol versions)."""
        await self._bridge()

    @web.authenticated
    async def delete(self) -> None:
        """End the session."""
        await self._bridge()
