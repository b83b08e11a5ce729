"""The model-call transport's connections: one long-lived client per provider origin.

:class:`ClientPools` gives the client (the transport's ``httpx.AsyncClient``, with its
connection pool; this module builds none itself, so httpx stays the transport's) that serves
a request URL: one per origin (``scheme://host:port``), built at the first call to it and
kept until :meth:`~ClientPools.aclose`, so every run's calls to one provider reuse its
kept-alive connections, and two providers (or a provider and a local model server) never
share or starve one pool. An AsyncClient belongs to the event loop it was first used on:
the pools are kept per running loop, and a loop's are dropped with it.

Proxies: provider calls honour the usual ``HTTP(S)_PROXY``/``NO_PROXY`` environment
(``trust_env``); the factory is told when an origin is loopback (a local model server, the
fake provider) so that its client ignores the proxy environment. Every client verifies
with the one TLS context of :func:`tls_context`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import ssl

__all__ = [
    "tls_context",
    "POOL_KEEPALIVE",
    "POOL_KEEPALIVE_S",
    "POOL_MAX_CONNECTIONS",
    "Client",
    "ClientPools",
    "origin",
]

# Per provider origin: room for more concurrent calls than a server runs at once; idle
# connections kept a minute (providers' front ends drop idle ones after a few minutes).
POOL_MAX_CONNECTIONS = 100
POOL_KEEPALIVE = 20
POOL_KEEPALIVE_S = 60.0


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)
def origin(url: str) -> tuple[str, bool]:
    """``(scheme://host:port, is loopback)`` of a request URL: which pool serves it.
    Cached: a server calls a handful of URLs, each thousands of times."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}", _is_loopback(url)


class Client(Protocol):
    """What the pools need of a client."""

    @property
    def is_closed(self) -> bool: ...

    async def aclose(self) -> None: ...


C = TypeVar("C", bound=Client)


class ClientPools(Generic[C]):
    """The clients of one transport, per running loop and origin (see the module);
    ``make(loopback)`` builds one."""

    def __init__(self, make: Callable[[bool], C]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, C]] = (
            weakref.WeakKeyDictionary()
        )

    def client(self, url: str) -> C:
        """The client that serves ``url`` on the running loop (built at its first use)."""
        loop = asyncio.get_running_loop()
        clients = self._clients.get(loop)
        if clients is None:
            clients = self._clients[loop] = {}
        key, loopback = origin(url)
        client = clients.get(key)
        if client is None or client.is_closed:
            client = clients[key] = self._make(loopback)
        return client

    def origins(self) -> tuple[str, ...]:
        """The origins the running loop holds an open client for (none outside a loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return ()
        return tuple(o for o, c in self._clients.get(loop, {}).items() if not c.is_closed)

    async def aclose(self) -> None:
        """Close the running loop's clients (and their connections)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for client in self._clients.pop(loop, {}).values():
            await client.aclose()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context every client verifies with, as httpx makes its default one
    (``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle): reading the bundle
    takes about 30 ms, which each client paid at its creation, on the event loop."""
    import ssl

    import certifi

    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    return ssl.create_default_context(cafile=certifi.where())
