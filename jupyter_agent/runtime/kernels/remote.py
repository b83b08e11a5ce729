"""What the runtime needs of kernels that run elsewhere (a Kernel or Enterprise Gateway).

The runtime never imports jupyter_server: the server extension hands the pool a
:class:`RemoteKernels` when its kernel manager is a gateway's
(:func:`jupyter_agent.server.gateway_channels.gateway_kernels`), and ``None`` otherwise.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["RemoteKernels"]


class RemoteKernels(Protocol):
    """Kernels started by a gateway: its URL, the environment it passes on, and a client.

    ``url`` names the gateway in log lines and errors (a base URL: no credentials).
    ``passes_env(name)`` says whether the gateway's manager sends that variable on to the
    kernel (the rest would only reach the server's log). ``channels(kernel_id)`` is a
    kernel client (jupyter_client's async client interface: ``start_channels``,
    ``wait_for_ready``, the channels, ``input``, ``stop_channels``) for that kernel.
    """

    url: str

    def passes_env(self, name: str) -> bool: ...

    def channels(self, kernel_id: str) -> Any: ...
