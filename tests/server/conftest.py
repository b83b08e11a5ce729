"""Fixtures for tests of the server extension through a real Jupyter Server.

pytest-jupyter runs its server on its own event loop (``jp_asyncio_loop``), while this
project's ``asyncio_mode = "auto"`` would run an ``async def`` test on pytest-asyncio's
loop, where the server never answers (the request times out). So server tests are plain
``def`` tests that call ``fetch(...)``: it runs ``jp_fetch`` on the server's loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse


@pytest.fixture
def agent_config() -> dict[str, Any]:
    """Extra ``JupyterAgent`` config of one test: override it with
    ``@pytest.mark.parametrize("agent_config", [{...}])`` (the server starts before the
    test body runs)."""
    return {}


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    """Enable the extension the way the installed jupyter-config file does."""
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": agent_config,
    }


@pytest.fixture
def fetch(jp_fetch: Any, jp_asyncio_loop: Any) -> Callable[..., HTTPResponse]:
    """``jp_fetch`` run to completion on the server's loop (same arguments; raises
    ``tornado.httpclient.HTTPClientError`` for a non-2xx answer)."""

    def _fetch(*parts: str, **kwargs: Any) -> HTTPResponse:
        response: HTTPResponse = jp_asyncio_loop.run_until_complete(jp_fetch(*parts, **kwargs))
        return response

    return _fetch
