"""The kernel client of an agent kernel on a gateway (Kernel Gateway / Enterprise Gateway).

With ``--gateway-url``, the server's kernel manager is jupyter_server's
``GatewayMappingKernelManager`` and ``km.client()`` a ``GatewayKernelClient``. That client
does not fit a run: its websocket handshake carries no ``Authorization`` header (a gateway
with a token answers 401), its reads spin on ``asyncio.sleep(0)`` (a waiting cell holds a
core of the server), a read without a timeout gives up after one second, and an
``input_reply`` goes out without its ``channel`` (the gateway takes it for shell, so an
in-cell app call never gets its answer).

:class:`GatewayChannels` is what :class:`~jupyter_agent.runtime.kernels.handle.AgentKernelHandle`
uses instead: one tornado websocket to ``{ws_url}/api/kernels/{id}/channels`` opened with
the gateway client's connection arguments (its auth header, timeouts, certificates), read
by one task that routes each JSON message to its channel's queue. Reads wait on an event
(no polling) and raise :class:`queue.Empty` at their timeout, as jupyter_client's do; once
the socket closed, or the gateway reported the kernel ``restarting`` or ``dead`` on iopub
(its auto-restart: the run's namespace is gone), reads raise
:class:`~jupyter_agent.exceptions.KernelDied` and :attr:`GatewayChannels.dead` is True.
Every message sent names its channel.

:func:`gateway_kernels` gives the pool its
:class:`~jupyter_agent.runtime.kernels.remote.RemoteKernels` when the server's kernel manager
is a gateway's (the runtime never imports jupyter_server).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from typing import Any
from urllib.parse import quote

from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

from jupyter_agent.exceptions import KernelDied

__all__ = ["GatewayChannels", "GatewayKernels", "gateway_kernels"]

log = logging.getLogger(__name__)

# A cell's reply or output can be large (an image, a long stdout): tornado's default is 10 MB.
_MAX_MESSAGE = 256 * 1024 * 1024
_CHANNELS = ("shell", "iopub", "stdin", "control")


class GatewayKernels:
    """The gateway jupyter_server's ``GatewayClient`` is configured for (``--gateway-url``),
    as the runtime's :class:`~jupyter_agent.runtime.kernels.remote.RemoteKernels`."""

    def __init__(self) -> None:
        from jupyter_server.gateway.gateway_client import GatewayClient

        client = GatewayClient.instance()
        self.url = str(client.url or "")
        self._allowed = frozenset(str(client.allowed_envs or "").split(",")) - {""}

    def passes_env(self, name: str) -> bool:
        """``KERNEL_*`` and ``GatewayClient.allowed_envs`` reach the kernel."""
        return name.startswith("KERNEL_") or name in self._allowed

    def channels(self, kernel_id: str) -> GatewayChannels:
        """A websocket client of the gateway kernel ``kernel_id``."""
        return GatewayChannels(kernel_id)


def gateway_kernels(kernel_manager: Any) -> GatewayKernels | None:
    """The gateway when ``kernel_manager`` is jupyter_server's gateway mapping kernel
    manager, else None (kernels start on this machine)."""
    from jupyter_server.gateway.managers import GatewayMappingKernelManager

    if not isinstance(kernel_manager, GatewayMappingKernelManager):
        return None
    return GatewayKernels()


class _Channel:
    """One channel's received messages, and sending on it."""

    def __init__(self, owner: GatewayChannels, name: str) -> None:
        self._owner = owner
        self.name = name
        self._items: deque[dict[str, Any]] = deque()
        self._arrived = asyncio.Event()

    def put(self, msg: dict[str, Any]) -> None:
        self._items.append(msg)
        self._arrived.set()

    def wake(self) -> None:
        self._arrived.set()

    async def get(self, timeout: float | None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._items:
            if self._owner.dead:
                raise KernelDied(self._owner.why)
            self._arrived.clear()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise _empty()
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except asyncio.TimeoutError:
                if not self._items:
                    raise _empty() from None
        return self._items.popleft()

    def send(self, msg: dict[str, Any]) -> None:
        self._owner.write({**msg, "channel": self.name})


def _empty() -> Exception:
    from queue import Empty

    return Empty()


class GatewayChannels:
    """An async kernel client over the gateway's kernel websocket (module docstring)."""

    def __init__(self, kernel_id: str) -> None:
        self.kernel_id = kernel_id
        self.session = Session(key=b"", username="jupyter-agent")
        self._ws: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._channels = {name: _Channel(self, name) for name in _CHANNELS}
        self.dead = False
        """True once the socket closed or the gateway reported the kernel restarting/dead."""
        self.why = f"kernel {kernel_id} on the gateway is gone"

    @property
    def shell_channel(self) -> _Channel:
        return self._channels["shell"]

    @property
    def stdin_channel(self) -> _Channel:
        return self._channels["stdin"]

    async def start_channels(self, **_: Any) -> None:
        """Open the websocket (every channel comes over it) and start reading it."""
        from jupyter_server.gateway.gateway_client import GatewayClient
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        client = GatewayClient.instance()
        url = "/".join(
            part.strip("/")
            for part in (
                client.ws_url or "",
                client.kernels_endpoint,
                quote(self.kernel_id, safe=""),
                "channels",
            )
        )
        args: dict[str, Any] = client.load_connection_args()  # type: ignore[no-untyped-call]
        request = HTTPRequest(url, **args)
        self._ws = await websocket_connect(request, max_message_size=_MAX_MESSAGE)
        # Small messages each way (a request, an input_reply): no Nagle wait on our side.
        with contextlib.suppress(Exception):
            self._ws.protocol.set_nodelay(True)
        self._reader = asyncio.create_task(self._read())

    def stop_channels(self) -> None:
        """Close the websocket; pending reads raise KernelDied."""
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close()
        if self._reader is not None:
            self._reader.cancel()
        self._gone("the kernel's connection was closed")

    def write(self, msg: dict[str, Any]) -> None:
        if self._ws is None or self.dead:
            raise KernelDied(self.why)
        self._ws.write_message(json.dumps(msg, default=json_default))

    async def _read(self) -> None:
        ws = self._ws
        try:
            while ws is not None:
                raw = await ws.read_message()
                if raw is None:
                    self._gone(f"the gateway closed the connection of kernel {self.kernel_id}")
                    return
                if isinstance(raw, bytes):
                    log.debug("kernel %s: a binary message skipped", self.kernel_id)
                    continue
                msg = json.loads(raw)
                channel = self._channels.get(str(msg.get("channel")))
                if channel is None:
                    continue
                if channel.name == "iopub" and msg.get("msg_type") == "status":
                    state = (msg.get("content") or {}).get("execution_state")
                    if state in ("restarting", "dead"):
                        self._gone(f"kernel {self.kernel_id} on the gateway is {state}")
                        return
                channel.put(msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._gone(f"the connection of kernel {self.kernel_id} failed: {type(exc).__name__}")

    def _gone(self, why: str) -> None:
        if not self.dead:
            self.dead, self.why = True, why
        for channel in self._channels.values():
            channel.wake()

    # -- what AgentKernelHandle calls (jupyter_client's AsyncKernelClient names) ----------------
    def kernel_info(self) -> str:
        msg = self.session.msg("kernel_info_request")
        self.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def input(self, value: str) -> None:
        self.stdin_channel.send(self.session.msg("input_reply", {"value": value}))

    async def get_shell_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._channels["shell"].get(timeout)

    async def get_iopub_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._channels["iopub"].get(timeout)

    async def get_stdin_msg(self, timeout: float | None = None) -> dict[str, Any]:
        return await self._channels["stdin"].get(timeout)
