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


@pytest.fixture(params=["/", "/user/someone/"])
def jp_base_url(request: pytest.FixtureRequest) -> str:
    """Serve under the root and under a JupyterHub-style user prefix (every server test)."""
    return str(request.param)


@pytest.fixture
def server_kernelspec(jp_environ: Any) -> str:
    """The ``jupyter-agent`` kernelspec in the test server's (isolated) data dir."""
    from jupyter_agent.cli import install_kernelspec

    return install_kernelspec(user=True)


def agent_app(serverapp: Any) -> Any:
    """The running ``JupyterAgent`` extension app of a ServerApp."""
    from jupyter_agent.server.app import JupyterAgent

    for ext in serverapp.extension_manager.extensions.values():
        for point in ext.extension_points.values():
            if isinstance(point.app, JupyterAgent):
                return point.app
    raise AssertionError("the jupyter_agent extension is not loaded")


@pytest.fixture
def agent_service(jp_serverapp: Any) -> Any:
    """The agent service of the test server (its store, manager, events)."""
    service = agent_app(jp_serverapp).service
    assert service is not None
    return service


@pytest.fixture
def spin(jp_asyncio_loop: Any) -> Callable[[float], None]:
    """``spin(seconds)``: let the server's loop run (runs progress only while it does)."""

    def _spin(seconds: float = 0.05) -> None:
        import asyncio

        jp_asyncio_loop.run_until_complete(asyncio.sleep(seconds))

    return _spin
