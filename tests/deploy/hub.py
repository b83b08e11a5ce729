"""A real JupyterHub for the deploy tests: started on loopback, stopped with nothing left.

:class:`Hub` writes a ``jupyterhub_config.py`` under its base folder and runs ``jupyterhub``
there as a subprocess: the dummy authenticator (every name is a user, ``allow_all``), the
simple local process spawner (no OS users: each user's home is ``{base}/home/{name}``), the
proxy ``configurable-http-proxy`` from npm (:func:`find_chp`), the Hub, its proxy API and
the proxy's public side on free loopback ports, and one service whose token may add users,
start their servers and issue their tokens.

The single-user servers are ``jupyterhub-singleuser --allow-root`` (root needs it here, see
BUILD-NOTES) and read the ``jupyter_server_config.json`` the test hands the Hub
(``server_config``) from a config folder all users share; each user's data, runtime and
IPython folders are in their home. So every server loads the agent with the config the test
chose (for instance one shared PostgreSQL ``db_url`` and the fake provider).

Every process the Hub starts (the proxy, the servers, their kernels) inherits a marker
variable unique to this Hub; :meth:`Hub.stop` ends the Hub (which stops the servers and the
proxy), then waits until no process carrying the marker is left, and kills and names any
that is (:meth:`Hub.leftovers`).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.deploy.conftest import deploy_required
from tests.rest_stub import free_port

__all__ = ["CHP_ENV", "Hub", "HubUser", "find_chp", "marked_pids", "need_chp"]

CHP_ENV = "JUPYTER_AGENT_CHP_DIR"
_CHP_DEFAULT = "/tmp/jupyter-agent-chp"
_MARK = "JUPYTER_AGENT_HUB_MARK"
# The service's role: add users, start and stop their servers, issue their tokens, and
# reach their servers through the proxy (BUILD-NOTES, plus ``tokens``).
SERVICE_SCOPES = ["admin:users", "admin:servers", "access:servers", "list:users", "tokens"]

_CONFIG = """\
# Written by tests/deploy/hub.py for one test Hub.
import os

c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {public_port!r}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port!r}
c.ConfigurableHTTPProxy.api_url = {proxy_api!r}
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.ConfigurableHTTPProxy.pid_file = {proxy_pid!r}
c.JupyterHub.db_url = {hub_db!r}
c.JupyterHub.cookie_secret_file = {cookie!r}
c.JupyterHub.pid_file = {hub_pid!r}
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {home!r} + "/{{username}}"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.env_keep = ["PATH", "PYTHONPATH", "LANG", "LC_ALL", "JUPYTERHUB_SINGLEUSER_APP"]


def _in_home(sub):
    return lambda spawner: os.path.join({home!r}, spawner.user.name, sub)


c.Spawner.environment = {{
    "JUPYTER_CONFIG_DIR": {server_config_dir!r},
    "JUPYTER_DATA_DIR": _in_home("data"),
    "JUPYTER_RUNTIME_DIR": _in_home("runtime"),
    "IPYTHONDIR": _in_home("ipython"),
    "JUPYTER_PLATFORM_DIRS": "1",
    {mark!r}: {mark_value!r},
}}
c.JupyterHub.services = [{{"name": "agent-tests", "api_token": {service_token!r}}}]
c.JupyterHub.load_roles = [
    {{"name": "agent-tests", "scopes": {scopes!r}, "services": ["agent-tests"]}}
]
"""


def find_chp() -> Path | None:
    """``configurable-http-proxy`` under ``$JUPYTER_AGENT_CHP_DIR/node_modules/.bin``."""
    chp = Path(os.environ.get(CHP_ENV) or _CHP_DEFAULT) / "node_modules/.bin"
    path = chp / "configurable-http-proxy"
    return path if os.access(path, os.X_OK) else None


def need_chp() -> Path:
    """The proxy's path; skip the test without it, or fail it under ``CI=true``."""
    chp = find_chp()
    if chp is not None:
        return chp
    why = (
        f"configurable-http-proxy is not installed under ${CHP_ENV} (scripts/test installs "
        "it with npm)"
    )
    deploy_required(why)


def marked_pids(mark: str) -> list[int]:
    """The processes whose environment holds ``_MARK=mark`` (this Hub's descendants)."""
    needle = f"{_MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@dataclass(frozen=True)
class HubUser:
    """A Hub user with a running server: ``url`` is its server through the proxy."""

    name: str
    token: str
    url: str


class Hub:
    """One JupyterHub under ``base`` (module docstring); :meth:`start`, then :meth:`stop`."""

    def __init__(self, base: Path, chp: Path, server_config: dict[str, Any]) -> None:
        """``server_config``: the single-user servers' ``jupyter_server_config.json``."""
        self.base = base
        self.home = base / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        server_config_dir = base / "server-config"
        server_config_dir.mkdir(exist_ok=True)
        (server_config_dir / "jupyter_server_config.json").write_text(json.dumps(server_config))
        self.mark = secrets.token_hex(8)
        self.service_token = secrets.token_hex(24)
        self.public_port, self.hub_port, proxy_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.public_port}/"
        (base / "jupyterhub_config.py").write_text(
            _CONFIG.format(
                public_port=self.public_port,
                hub_port=self.hub_port,
                proxy_api=f"http://127.0.0.1:{proxy_port}",
                chp=str(chp),
                proxy_pid=str(base / "proxy.pid"),
                hub_db=f"sqlite:///{base / 'hub.sqlite'}",
                cookie=str(base / "cookie_secret"),
                hub_pid=str(base / "hub.pid"),
                home=str(self.home),
                python=sys.executable,
                server_config_dir=str(server_config_dir),
                mark=_MARK,
                mark_value=self.mark,
                service_token=self.service_token,
                scopes=SERVICE_SCOPES,
            )
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_path = base / "hub.log"

    @property
    def log_text(self) -> str:
        """The Hub's log (the servers log there too), for failure messages."""
        return self._log_path.read_text(errors="replace") if self._log_path.exists() else ""

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """A Hub REST call with the service token; its JSON, or None for an empty body.

        Raises AssertionError (naming the call, never the token) on a status not 2xx.
        """
        with httpx.Client(timeout=60) as http:
            response = http.request(
                method,
                f"{self.url}hub/api/{path}",
                json=body,
                headers={"Authorization": f"token {self.service_token}"},
            )
        if not response.is_success:
            raise AssertionError(
                f"hub API {method} {path}: HTTP {response.status_code} {response.text[:300]}"
            )
        return response.json() if response.content else None

    def start(self, timeout_s: float = 90) -> None:
        """Start the Hub and wait until its API answers through the proxy."""
        env = {**os.environ, _MARK: self.mark}
        with self._log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(self.base / "jupyterhub_config.py")],
                cwd=self.base,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"jupyterhub exited at start:\n{self.log_text[-4000:]}")
            try:
                if httpx.get(f"{self.url}hub/api/", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"jupyterhub did not answer:\n{self.log_text[-4000:]}")
            time.sleep(0.2)

    def add_users(self, *names: str, timeout_s: float = 150) -> list[HubUser]:
        """Create each user and start their servers together; once every one is ready,
        issue each user a token of their own (through the Hub API)."""
        for name in names:
            self.api("POST", f"users/{name}")
            self.api("POST", f"users/{name}/server")
        deadline = time.monotonic() + timeout_s
        waiting = list(names)
        while waiting:
            model = self.api("GET", f"users/{waiting[0]}")
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                waiting.pop(0)
                continue
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{waiting[0]}'s server was not ready in {timeout_s} s:\n"
                    f"{self.log_text[-4000:]}"
                )
            time.sleep(0.3)
        users = []
        for name in names:
            issued = self.api("POST", f"users/{name}/tokens", {"note": "agent tests"})
            users.append(
                HubUser(name=name, token=str(issued["token"]), url=f"{self.url}user/{name}/")
            )
        return users

    def stop(self, timeout_s: float = 60) -> None:
        """End the Hub (it stops the servers and the proxy), then every marked process."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        deadline = time.monotonic() + 20
        while marked_pids(self.mark) and time.monotonic() < deadline:
            time.sleep(0.2)

    def leftovers(self) -> list[str]:
        """After :meth:`stop`: the marked processes still there (killed now), as
        ``pid command`` lines; empty when the Hub left nothing behind."""
        left = []
        for pid in marked_pids(self.mark):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            left.append(f"{pid} {cmd.decode(errors='replace')[:200]}")
        return left
