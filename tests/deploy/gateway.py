"""A real ``jupyter kernelgateway`` on loopback, with its own Jupyter dirs and a marker.

:class:`Gateway` owns one gateway's folders (config, data, runtime), port, token and a
random marker variable only its environment has. :meth:`Gateway.start` installs the agent
kernelspec into the gateway's own data dir with the project's CLI (``jupyter-agent kernel
install --user --name NAME``: under a name no other Jupyter dir of this machine has, so a
kernel of that name can only come from this install), starts the gateway subprocess in its
own session and waits until ``GET /api/kernelspecs`` lists the spec; :meth:`Gateway.stop`
ends it (SIGTERM to its group, then SIGKILL) and checks that no process of its group is
left. :meth:`Gateway.kernels` is the gateway's ``GET /api/kernels``.

Waits are bounded and on conditions, never fixed sleeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.deploy.conftest import live_processes
from tests.faults.server import wait_for
from tests.plugins.jupyter_dirs import jupyter_dirs, jupyter_env
from tests.rest_stub import free_port

__all__ = ["MARKER_VAR", "Gateway", "group_alive"]

#: The variable only the gateway's environment (and so its kernels') carries.
MARKER_VAR = "JUPYTER_AGENT_TEST_GATEWAY_MARKER"


def group_alive(pgid: int) -> bool:
    """True while a process of group ``pgid`` exists (zombies excluded)."""
    return any(group == pgid for _parent, group in live_processes().values())


def _cli() -> list[str]:
    """The project's ``jupyter-agent`` command (this interpreter's entry point)."""
    script = Path(sys.executable).parent / "jupyter-agent"
    if script.is_file():
        return [str(script)]
    return [
        sys.executable,
        "-c",
        "import sys; from jupyter_agent.cli.main import main; sys.exit(main())",
    ]


class Gateway:
    """One kernel gateway's folders, address and marker (module docstring)."""

    def __init__(self, base: Path, *, kernel_name: str = "jupyter-agent-gw") -> None:
        self.base = base
        self.dirs = jupyter_dirs(base)
        self.kernel_name = kernel_name
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.marker = secrets.token_hex(8)
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = base / "gateway.log"

    @property
    def env(self) -> dict[str, str]:
        """The gateway's environment: its own Jupyter dirs, the marker, this tree first."""
        env = jupyter_env(self.dirs)
        env.pop("JUPYTER_TOKEN", None)
        env[MARKER_VAR] = self.marker
        # A kernel gateway gives its kernels PATH and only these of its own variables.
        env["KG_ENV_PROCESS_WHITELIST"] = ",".join(
            (MARKER_VAR, "PYTHONPATH", "HOME", "LANG", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR")
        )
        tree = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (tree, os.environ.get("PYTHONPATH", "")) if p
        )
        return env

    @property
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def install_kernelspec(self) -> Path:
        """The project's own install command, into the gateway's data dir; the spec dir."""
        subprocess.run(
            [
                *_cli(),
                "kernel",
                "install",
                "--user",
                "--name",
                self.kernel_name,
            ],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        spec = self.dirs["data"] / "kernels" / self.kernel_name
        assert (spec / "kernel.json").is_file(), f"no kernelspec in {spec}"
        return spec

    def start(self, timeout_s: float = 90) -> None:
        assert self.proc is None, "already started"
        self.install_kernelspec()
        argv = [
            sys.executable,
            "-m",
            "kernel_gateway",
            "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}",
            "--KernelGatewayApp.port_retries=0",
            f"--KernelGatewayApp.auth_token={self.token}",
            "--JupyterWebsocketPersonality.list_kernels=True",
        ]
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                argv,
                env=self.env,
                cwd=self.base,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = self.proc

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"the gateway exited at start:\n{self.log_text}")
            try:
                specs = self.get("/api/kernelspecs")
            except OSError:
                return False
            return self.kernel_name in specs["kernelspecs"]

        wait_for("the gateway to list the agent kernelspec", ready, timeout_s)

    def get(self, path: str) -> Any:
        """``GET`` a gateway route with the token; its JSON."""
        request = urllib.request.Request(
            self.url + path, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def kernels(self) -> list[dict[str, Any]]:
        """The gateway's running kernels (``GET /api/kernels``). A listing that races a
        kernel's removal can answer 500 on the gateway: asked again (a few times)."""
        for attempt in range(5):
            try:
                kernels: list[dict[str, Any]] = self.get("/api/kernels")
                return kernels
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == 4:
                    raise
                time.sleep(0.1)
        raise AssertionError("unreachable")

    def server_config(self) -> dict[str, Any]:
        """The ``jupyter server`` config section pointing a server at this gateway (what
        ``--gateway-url=URL --GatewayClient.auth_token=T`` set)."""
        return {
            "GatewayClient": {"url": self.url, "auth_token": self.token, "request_timeout": 60.0}
        }

    def stop(self) -> None:
        """End the gateway and every process of its group (its kernels); assert none left."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        pgid = proc.pid
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        deadline = time.monotonic() + 10
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_alive(pgid), "a process of the gateway's group was left running"
