"""A chat's event WebSocket, read for :meth:`jupyter_agent.client.AgentClient.events`.

It uses ``websocket-client`` (a dependency of jupyter_server, so always installed with it)
in a worker thread, because httpx has no WebSocket support and the client must not import
tornado. The token goes in the ``Authorization`` header only; a refused or unreachable
socket is the client's :class:`~jupyter_agent.exceptions.ClientError` (built by the
``refused`` and ``failure`` callables the client passes).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from jupyter_agent.exceptions import ClientError

__all__ = ["read_events"]


async def read_events(
    url: str,
    token: str | None,
    *,
    timeout: float,
    shown: str,
    refused: Callable[[], ClientError],
    failure: Callable[..., ClientError],
) -> AsyncGenerator[dict[str, Any], None]:
    """The events the socket at ``url`` sends, as dicts, until the server closes it.

    Stopping the iteration (``break``, cancellation) closes the socket. ``shown``: the
    server's address as an error names it.
    """
    # Imported here: only this function needs it (see the module docstring).
    import websocket

    header = [f"Authorization: token {token}"] if token else []

    def connect() -> websocket.WebSocket:
        try:
            return websocket.create_connection(
                url, header=header, timeout=timeout, suppress_origin=True
            )
        except websocket.WebSocketBadStatusException as exc:
            status = int(exc.status_code)
            if status == 403:
                raise refused() from None
            raise failure(status, f"the events socket was refused (HTTP {status})") from None
        except (OSError, websocket.WebSocketException) as exc:
            raise failure(
                None,
                f"cannot reach the agent server at {shown} ({type(exc).__name__})",
                "unreachable",
            ) from None

    ws = await asyncio.to_thread(connect)
    ws.settimeout(None)  # an event stream may be quiet for long; the caller bounds it
    try:
        while True:
            try:
                frame = await asyncio.to_thread(ws.recv)
            except (websocket.WebSocketConnectionClosedException, OSError):
                return
            if not frame:
                return
            text = frame.decode() if isinstance(frame, bytes) else frame
            try:
                event = json.loads(text)
            except ValueError:
                continue  # not an event: nothing a caller could act on
            if isinstance(event, dict):
                yield event
    finally:
        ws.close()
