"""What a start loads (issue 27, item 6): a real ``jupyter server`` with the agent, the
default config (no ``mcp_servers``, no embed tier, no model) and no other extension,
answers ``GET agent/status`` without having imported the ``mcp`` SDK, numpy, pandas,
matplotlib, SQLAlchemy's PostgreSQL dialect or its ORM, SQLModel, IPython (the agent's
kernelspec is read at the first kernel start), the evals and deploys' services or the
demo's fake provider (started at the first demo run, not for the summaries' start-up
read), and with no agent kernel
started yet (the warm pool fills ``KernelPool.start_delay_s`` after the start); the pool
then fills; the first request to ``agent/mcp`` loads the SDK (the endpoint is made then)
and is answered; the first to ``agent/evals`` builds the evals service, the first to
``agent/programs`` the deploys' service."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import httpx
import pytest

import jupyter_agent.server.app as agent_app
from jupyter_agent.cli.main import install_kernelspec
from tests.plugins.jupyter_dirs import jupyter_dirs, jupyter_env
from tests.rest_stub import free_port

pytestmark = pytest.mark.timeout(180)

REPO = Path(__file__).resolve().parents[2]
LAZY = (
    "mcp",
    "mcp_types",
    "numpy",
    "pandas",
    "matplotlib",
    "starlette",
    "uvicorn",
    "sse_starlette",
    "jupyter_agent.server.mcp.endpoint",
    "jupyter_agent.server.mcp.tools",
    "sqlalchemy.dialects.postgresql",  # the default database is SQLite
    # the store is SQLAlchemy Core: neither its ORM nor SQLModel, ever (0.13 s of imports)
    "sqlalchemy.orm",
    "sqlmodel",
    # the evals service is built at its first use (reruns, reports, the cells view)
    "jupyter_agent.runtime.evals.service",
    "jupyter_agent.trace.cells_view",
    # the deploys' service, its checks and their process: at the first agent/programs
    "jupyter_agent.programs.service",
    "jupyter_agent.programs.check_process",
    # the demo's fake provider: at the first demo run (this server's tiers are not ready)
    "jupyter_agent.llm.fake.server",
    # reading the agent's kernelspec imports it: at the first kernel start, not at start
    "IPython",
)
#: Not loaded while the extension loads; in a thread once the server listens (what the
#: first turn needs: httpx imports click, rich and pygments; snowballstemmer every language).
AFTER_LISTEN = ("httpx", "click", "rich", "pygments", "snowballstemmer")
NO_KERNELS = {"warm": 0, "starting": 0, "in_use": 0}

# Only the extensions the test enables: the machine's other installed ones (and what they
# import: notebook_shim imports IPython) are left out by emptying the system and
# environment config paths.
LAUNCHER = """
import sys
import jupyter_core.paths as paths
paths.SYSTEM_CONFIG_PATH[:] = []
paths.ENV_CONFIG_PATH[:] = []
from jupyter_server.serverapp import main
sys.exit(main())
"""


@contextlib.contextmanager
def _server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: Mapping[str, object] | None = None
) -> Iterator[tuple[str, dict[str, str], Callable[[], str]]]:
    """A real ``jupyter server`` with the agent (``agent``: its ``JupyterAgent`` config)
    and the modules extension, answering ``GET agent/status``: (url, headers, its log)."""
    dirs = jupyter_dirs(tmp_path)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(dirs["data"]))
    install_kernelspec(user=True)  # the pool's kernels, in the server's data dir
    config = {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_agent": True, "tests.plugins.modules_ext": True}
        },
        # the default pool size (2); a delay no poll below can miss
        "KernelPool": {"start_delay_s": 3.0},
        "JupyterAgent": dict(agent or {}),
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = jupyter_env(dirs)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    port, token = free_port(), secrets.token_hex(16)
    argv = [
        sys.executable, "-c", LAUNCHER, "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={dirs['root']}", f"--IdentityProvider.token={token}",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url, headers = f"http://127.0.0.1:{port}/", {"Authorization": f"token {token}"}

    def read_log() -> str:
        return (tmp_path / "server.log").read_text()

    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(url + "agent/status", headers=headers).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, read_log()
            assert time.monotonic() < deadline, read_log()
            time.sleep(0.1)
        yield url, headers, read_log
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_a_start_loads_no_heavy_module_and_mcp_loads_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _server(tmp_path, monkeypatch) as (url, headers, read_log):
        status = httpx.get(url + "agent/status", headers=headers)
        deadline = time.monotonic() + 90
        loaded = set(httpx.get(url + "test/modules", headers=headers).json())
        assert sorted(m for m in LAZY if m in loaded) == []
        at_load = httpx.get(url + "test/modules", headers=headers, params={"at": "load"})
        assert "jupyter_agent.server.app" in at_load.json()  # loaded before this extension
        assert sorted(m for m in AFTER_LISTEN if m in at_load.json()) == []
        while not {"httpx", "snowballstemmer"} <= loaded:  # preloaded once it listens
            assert time.monotonic() < deadline, read_log()
            time.sleep(0.1)
            loaded = set(httpx.get(url + "test/modules", headers=headers).json())
        assert status.json()["kernels"] == NO_KERNELS  # the pool fills after the start
        while httpx.get(url + "agent/status", headers=headers).json()["kernels"]["warm"] < 2:
            assert time.monotonic() < deadline, read_log()
            time.sleep(0.2)
        assert "numpy" not in set(httpx.get(url + "test/modules", headers=headers).json())
        answer = httpx.post(
            url + "agent/mcp",
            headers={**headers, "Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers.get("mcp-session-id")
        loaded = set(httpx.get(url + "test/modules", headers=headers).json())
        assert "mcp" in loaded
        # The first evals request builds the service (an unknown eval: 404, and loaded).
        unknown = httpx.get(url + "agent/evals/eval_none", headers=headers)
        assert unknown.status_code == 404, unknown.text
        loaded = set(httpx.get(url + "test/modules", headers=headers).json())
        assert "jupyter_agent.runtime.evals.service" in loaded
        programs = httpx.get(url + "agent/programs", headers=headers)
        assert programs.status_code == 200, programs.text
        loaded = set(httpx.get(url + "test/modules", headers=headers).json())
        assert "jupyter_agent.programs.service" in loaded


def test_the_start_freezes_its_heap_once_and_the_admin_can_say_no(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``JupyterAgent.freeze_start_heap`` (default True): the server's start-up objects are
    out of the collector's reach once the agent has loaded; False leaves them in it."""
    with _server(tmp_path / "on", monkeypatch) as (url, headers, _):
        frozen = httpx.get(url + "test/gc", headers=headers).json()["frozen"]
        assert frozen > 100_000  # jupyter_server's modules, classes, config, and the agent's
    off = {"freeze_start_heap": False}
    with _server(tmp_path / "off", monkeypatch, off) as (url, headers, _):
        assert httpx.get(url + "test/gc", headers=headers).json() == {"frozen": 0}


def test_the_heap_is_frozen_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another server of the same process (tests, a hub's in-process spawner) freezes
    nothing more: its start would freeze what the first one left as garbage."""
    calls: list[str] = []
    monkeypatch.setattr(agent_app, "_FROZEN", False)
    monkeypatch.setattr(agent_app.gc, "freeze", lambda: calls.append("freeze"))
    assert agent_app.freeze_start_heap() is True
    assert agent_app.freeze_start_heap() is False
    assert calls == ["freeze"]
