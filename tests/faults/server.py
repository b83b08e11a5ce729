"""A real ``jupyter server`` the fault tests can kill and start again.

:class:`FaultServer` is one server's folders (config, data, runtime, root), port and token;
:meth:`FaultServer.start` starts a ``jupyter server`` subprocess on them (with the
``JUPYTER_AGENT_FAULT`` hook when ``fault`` is given), :meth:`FaultServer.wait_dead` waits
for the hook's SIGKILL, :meth:`FaultServer.stop` ends it. Starting again reuses the same
data dir, root dir and port: it is the same server after a crash. The codegen tier is the
scripted fake provider (in this process, on loopback); ``pool_size`` is 0.

Helpers wait on conditions (never fixed sleeps) with generous deadlines: the machine may be
loaded.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.trace.log import FAULT_ENV
from tests.plugins.jupyter_dirs import jupyter_dirs, jupyter_env
from tests.rest_stub import free_port

__all__ = ["FaultServer", "wait_for"]

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 90.0) -> T:
    """``probe()``'s first truthy answer; AssertionError naming ``what`` after the deadline.

    A :class:`ClientError` from the probe counts as "not yet" (a server starting up).
    """
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except ClientError as exc:
            last, value = exc, None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


class FaultServer:
    """One server's folders and address, started and killed at will (module docstring)."""

    def __init__(
        self,
        base: Path,
        fake: FakeProvider,
        agent_config: dict[str, Any] | None = None,
        *,
        config: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        tier: dict[str, Any] | None = None,
    ) -> None:
        """``agent_config``: more ``JupyterAgent`` traits; ``config``: more config sections
        (``Transport``, ...); ``env``: more environment; ``tier``: more codegen tier keys."""
        self.base = base
        self.fake = fake
        self.env = dict(env or {})
        self.dirs = jupyter_dirs(base)
        config = {
            # Only this extension: the others only cost start time here.
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_agent": True,
                    "jupyterlab": False,
                    "jupyter_lsp": False,
                    "jupyter_server_terminals": False,
                    "notebook_shim": False,
                }
            },
            "JupyterAgent": {
                "pool_size": 0,
                "tiers": {
                    "codegen": {
                        "provider": "fake",
                        "model": "claude-sonnet-4-5",
                        "base_url": fake.base_url,
                        **(tier or {}),
                    }
                },
                **(agent_config or {}),
            },
            **(config or {}),
        }
        (self.dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.addr = f"http://127.0.0.1:{self.port}/"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def root(self) -> Path:
        """The server's contents root (the kernels' working folder)."""
        return self.dirs["root"]

    @property
    def log_text(self) -> str:
        """Every start's server log, for failure messages."""
        return "".join(
            p.read_text(errors="replace") for p in sorted(self.base.glob("server-*.log"))
        )

    def client(self, timeout: float = 30) -> AgentClient:
        return AgentClient(self.addr, self.token, timeout=timeout)

    def start(self, fault: str | None = None, timeout_s: float = 90) -> None:
        """Start the server (the hook set to ``fault``, if any) and wait until it answers."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        env = {**jupyter_env(self.dirs), **self.env}
        env.pop("JUPYTER_TOKEN", None)
        env.pop(FAULT_ENV, None)
        if fault is not None:
            env[FAULT_ENV] = fault
        argv = [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={self.token}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            argv.append("--allow-root")
        self.starts += 1
        with (self.base / f"server-{self.starts}.log").open("wb") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        proc = self.proc

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited at start:\n{self.log_text}")
            with self.client(timeout=5) as client:
                client.status()
            return True

        wait_for("the server to answer", ready, timeout_s)

    def wait_dead(self, timeout_s: float = 120) -> int:
        """Wait until the server process ended (the hook's SIGKILL); its return code."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the server was not killed within {timeout_s} s:\n{self.log_text}"
            ) from None

    def stop(self) -> None:
        """End the server if it runs (SIGTERM, then SIGKILL)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    # -- chat helpers ------------------------------------------------------------------------
    def turn_of(self, chat_id: str, run_id: str) -> dict[str, Any] | None:
        """The chat's turn of ``run_id`` once stored and no run is active, else None."""
        with self.client() as client:
            detail = client.chat(chat_id)
        if detail["active_run_id"] is not None:
            return None
        return next((t for t in detail["turns"] if t["run_id"] == run_id), None)

    def send_and_wait(self, chat_id: str, text: str, timeout_s: float = 120) -> dict[str, Any]:
        """Send ``text`` to the chat and return its run's turn once written."""
        with self.client() as client:
            sent = client.send(chat_id, text)
        assert sent["routed"] == "run", sent
        return wait_for(
            f"the turn of {sent['run_id']}",
            lambda: self.turn_of(chat_id, sent["run_id"]),
            timeout_s,
        )
