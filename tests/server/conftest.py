"""Fixtures for tests of the server extension through a real Jupyter Server.

pytest-jupyter runs its server on its own event loop (``jp_asyncio_loop``), while this
project's ``asyncio_mode = "auto"`` would run an ``async def`` test on pytest-asyncio's
loop, where the server never answers (the request times out). So server tests are plain
``def`` tests that call ``fetch(...)``: it runs ``jp_fetch`` on the server's loop.

Every server test runs twice (:data:`PAIRINGS`): on SQLite with the server at the root, and
on PostgreSQL (a fresh database of ``tests/plugins/postgres.py``) under a JupyterHub-style
user prefix: both stores and both URL layouts for the price of two runs. A test about
SQLite itself (its file, its lock, chattr faults on the file) is marked
``@pytest.mark.sqlite_only("why")``: its PostgreSQL run is deselected.
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


#: ``(jp_base_url, store_backend)`` of the two runs of every server test.
PAIRINGS: tuple[tuple[str, str], ...] = (("/", "sqlite"), ("/user/someone/", "postgresql"))
SQLITE_ONLY = "sqlite_only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SQLITE_ONLY}(reason): a server test about SQLite itself; its PostgreSQL run is"
        " deselected",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the PostgreSQL run of every ``sqlite_only`` test (a mark needs a reason)."""
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        mark = item.get_closest_marker(SQLITE_ONLY)
        callspec = getattr(item, "callspec", None)
        if mark is not None and not (mark.args or mark.kwargs.get("reason")):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.sqlite_only needs a reason")
        backend = callspec.params.get("store_backend") if callspec is not None else None
        (dropped if mark is not None and backend == "postgresql" else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(
    params=[
        pytest.param(backend, id=backend, marks=[pytest.mark.postgres] if i else [])
        for i, (_base, backend) in enumerate(PAIRINGS)
    ]
)
def store_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the store of this run of the test (see PAIRINGS)."""
    return str(request.param)


@pytest.fixture
def jp_base_url(store_backend: str) -> str:
    """The root on SQLite, a JupyterHub-style user prefix on PostgreSQL."""
    return dict((backend, base) for base, backend in PAIRINGS)[store_backend]


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    """Enable the extension the way the installed jupyter-config file does."""
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": agent_config,
    }


@pytest.fixture
def jp_configurable_serverapp(
    jp_configurable_serverapp: Callable[..., Any],
    jp_server_config: Any,
    store_backend: str,
    request: pytest.FixtureRequest,
) -> Callable[..., Any]:
    """pytest-jupyter's server factory; on PostgreSQL the store is a fresh database unless
    the test's config names one (here, not in ``jp_server_config``: many tests override it)."""
    from traitlets.config import Config

    def _start(config: Any = None, **kwargs: Any) -> Any:
        merged = Config(jp_server_config if config is None else config)
        if store_backend == "postgresql" and "db_url" not in merged.JupyterAgent:
            # Dropped later, not after the test: pytest-jupyter stops the server after
            # every fixture of the test is torn down, and its shutdown still writes.
            merged.JupyterAgent.db_url = str(request.getfixturevalue("pg_deferred_db_url"))
        return jp_configurable_serverapp(config=merged, **kwargs)

    return _start


@pytest.fixture
def fetch(jp_fetch: Any, jp_asyncio_loop: Any) -> Callable[..., HTTPResponse]:
    """``jp_fetch`` run to completion on the server's loop (same arguments; raises
    ``tornado.httpclient.HTTPClientError`` for a non-2xx answer)."""

    def _fetch(*parts: str, **kwargs: Any) -> HTTPResponse:
        response: HTTPResponse = jp_asyncio_loop.run_until_complete(jp_fetch(*parts, **kwargs))
        return response

    return _fetch


@pytest.fixture
def server_kernelspec(jp_environ: Any) -> str:
    """The ``jupyter-agent`` kernelspec in the test server's (isolated) data dir."""
    from jupyter_agent.cli.main import install_kernelspec

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
    """The agent's parts of the test server (its store, manager, events; `.services`)."""
    service = agent_app(jp_serverapp).parts
    assert service is not None
    return service


@pytest.fixture
def spin(jp_asyncio_loop: Any) -> Callable[[float], None]:
    """``spin(seconds)``: let the server's loop run (runs progress only while it does)."""

    def _spin(seconds: float = 0.05) -> None:
        import asyncio

        jp_asyncio_loop.run_until_complete(asyncio.sleep(seconds))

    return _spin
