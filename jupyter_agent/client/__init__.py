"""Python client of the agent's REST API (DESIGN section 3), used by ``jupyter agent``.

:class:`AgentClient` speaks to one Jupyter server running the extension::

    client = AgentClient("http://127.0.0.1:8888/", token)
    chat = client.create_chat("analysis")
    sent = client.send(chat["id"], "plot the squares")
    async for event in client.events(chat["id"]):
        if event["type"] == "run_end":
            break

The package: :mod:`.http` (the address, the token, requests and their failures),
:mod:`.rest` (one method per route), :mod:`.events` (a chat's event WebSocket).
Imports httpx (:mod:`.http` only) and the error tree. Used by ``jupyter agent`` (cli/).
"""

from __future__ import annotations

from jupyter_agent.client.rest import AgentClient
from jupyter_agent.exceptions import ClientError

__all__ = ["AgentClient", "ClientError"]
