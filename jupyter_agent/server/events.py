"""The events WebSocket: ``GET agent/chats/{id}/events?since=SEQ``.

Authenticated like every Jupyter WebSocket (token in the ``Authorization`` header, the
``token`` query argument or the login cookie; ``ws_authenticated``: 403 before the
upgrade) and authorized (``read`` on resource ``agent``). An unknown chat gets 404 and a
bad ``since`` 400 (``bad_since``), both before the upgrade, answered as every agent error
is (:class:`~jupyter_agent.server.base.AgentBase`: ``{message, reason}`` JSON).

On open the socket sends the chat's kept events with a seq above ``since`` (what a
reconnecting client missed), then every live event, one JSON text frame each. When kept
events above ``since`` were pruned (the bus keeps a bounded tail of ended runs: see
:mod:`jupyter_agent.runtime.events`), a ``gap`` frame comes first (not an event: no seq). Each
connected client gets every event. Messages from the client are ignored (sending goes
through ``POST agent/chats/{id}/messages``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.websocket import WebSocketMixin
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from jupyter_agent.server import parse
from jupyter_agent.server.auth import authz
from jupyter_agent.server.base import AUTH_RESOURCE, AgentBase

__all__ = ["EventsSocket"]


class EventsSocket(WebSocketMixin, WebSocketHandler, AgentBase):
    """One client's subscription to a chat's events (see the module docstring)."""

    def initialize(self, *args: Any, **kwargs: Any) -> None:
        super().initialize(*args, **kwargs)
        self._chat_id = ""
        self._since = 0
        self._pump: asyncio.Task[None] | None = None
        self._subscription: contextlib.ExitStack | None = None

    def set_default_headers(self) -> None:
        """No JupyterHandler default headers on a WebSocket."""

    @ws_authenticated
    async def get(self, chat_id: str) -> None:
        """Authorize, check the chat and ``since``, then upgrade."""
        await authz.require(self, "read", AUTH_RESOURCE)
        self._since = parse.query_int(self, "since", reason="bad_since", default=0)
        chats = (await self.services()).chats
        await chats.check(chat_id, owner=self.owner)
        self._chat_id = chat_id
        await super().get(chat_id)

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Subscribe first, then send the missed events, then pump live ones."""
        super().open()
        # Events are small frames sent in bursts (a reply, then run_end): with Nagle's
        # algorithm each waited for the client's delayed ACK of the one before (~40 ms).
        self.set_nodelay(True)
        services = self.agent.services
        assert services is not None
        events = services.chats.events
        stack = contextlib.ExitStack()
        queue = stack.enter_context(events.subscribe(self._chat_id))
        self._subscription = stack
        gap = events.gap(self._chat_id, self._since)
        missed = events.since(self._chat_id, self._since)
        catch_up = ([gap] if gap is not None else []) + list(missed)
        self._pump = asyncio.ensure_future(self._forward(queue, catch_up))

    async def _forward(
        self, queue: asyncio.Queue[dict[str, Any]], catch_up: list[dict[str, Any]]
    ) -> None:
        """Send the missed events, then the live ones; each write awaited, so a client
        that goes away (a reload) ends the pump, never an unretrieved task error."""
        last = self._since
        try:
            for event in catch_up:
                await self.write_message(json.dumps(event))
                last = max(last, int(event.get("seq") or last))
            while True:
                event = await queue.get()
                if event["seq"] <= last:  # already sent from the history
                    continue
                await self.write_message(json.dumps(event))
        except WebSocketClosedError:
            return

    def on_message(self, message: str | bytes) -> None:
        """Ignored: the socket only carries events to the client."""

    def on_close(self) -> None:
        """Stop forwarding, unsubscribe, and stop the keep-alive pings."""
        # jupyter_server's WebSocketMixin stops its ping timer only at the next ping (30 s
        # on): until then the timer holds this handler and its request, a few KB per closed
        # socket (bench/bench_memory.py: most of the server's growth per run).
        ping = getattr(self, "ping_callback", None)
        if ping is not None:
            ping.stop()
            self.ping_callback = None
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
