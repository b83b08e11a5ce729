"""A real ``jupyter lab`` for browser tests, and helpers to drive the agent panel in it.

:class:`LabServer` starts ``jupyter lab`` as a subprocess on a free loopback port with a
random token and every Jupyter folder under a temp dir (config, data with the
``jupyter-agent`` kernelspec, runtime, user settings with the news toast off,
workspaces). Its server config points the codegen tier at a given fake provider URL.

Page helpers wait for selectors, never for fixed times. The page-load race (BUILD-NOTES):
wait for ``window.jupyterapp``, then ``jupyterapp.restored``, then the splash to go.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page

from jupyter_agent.cli.main import install_kernelspec

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "LabServer",
    "browser_marks",
    "new_chat",
    "open_lab",
    "send_message",
]

CHROMIUM = "/usr/bin/chromium"


def browser_marks(*, timeout_s: int) -> list[pytest.MarkDecorator]:
    """A browser test module's marks: ``browser``, skipped without Debian's chromium
    (except in CI, where a missing browser is a failure), and its timeout."""
    return [
        pytest.mark.browser,
        pytest.mark.skipif(
            not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
            reason="needs Debian's chromium",
        ),
        pytest.mark.timeout(timeout_s),
    ]


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: Names never passed to the lab subprocess: the tests pick the model, never a real key.
_DROPPED_ENV = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "JUPYTER_TOKEN")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LabServer:
    """One ``jupyter lab`` subprocess (see the module docstring); ``stop()`` ends it."""

    def __init__(
        self, base: Path, *, codegen_base_url: str | None, classify_base_url: str | None = None
    ) -> None:
        self.base = base
        self.token = secrets.token_hex(16)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.root = base / "root"
        dirs = {n: base / n for n in ("config", "data", "runtime", "ipython", "settings", "ws")}
        for d in (self.root, *dirs.values()):
            d.mkdir(parents=True, exist_ok=True)
        self.dirs = dirs
        news = dirs["settings"] / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True, exist_ok=True)
        (news / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        agent: dict[str, Any] = {"pool_size": 1}
        if codegen_base_url is not None:
            agent["tiers"] = {
                "codegen": {
                    "provider": "fake",
                    "model": "claude-sonnet-4-5",
                    "base_url": codegen_base_url,
                }
            }
        if classify_base_url is not None:
            agent.setdefault("tiers", {})["classify"] = {
                "provider": "fake",
                "model": "claude-haiku-4-5",
                "base_url": classify_base_url,
            }
        (dirs["config"] / "jupyter_server_config.json").write_text(
            json.dumps({"JupyterAgent": agent})
        )
        self.env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        self.env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            IPYTHONDIR=str(dirs["ipython"]),
            JUPYTER_PLATFORM_DIRS="1",
            MPLBACKEND="Agg",
        )
        old = os.environ.get("JUPYTER_DATA_DIR")
        os.environ["JUPYTER_DATA_DIR"] = str(dirs["data"])
        try:
            install_kernelspec(user=True)
        finally:
            if old is None:
                os.environ.pop("JUPYTER_DATA_DIR", None)
            else:
                os.environ["JUPYTER_DATA_DIR"] = old
        self.log_path = base / "lab.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> LabServer:
        """Start the server and wait until the agent's status route answers."""
        # `-m jupyterlab`, not `-m jupyter lab`: the latter runs whichever `jupyter-lab` is
        # first on PATH, which may belong to another environment (and its jupyter_agent).
        cmd = [
            sys.executable,
            # This interpreter's JupyterLab: `-m jupyter lab` would run the first
            # `jupyter-lab` on PATH, maybe another environment's (and its extension).
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={self.dirs['settings']}",
            f"--LabApp.workspaces_dir={self.dirs['ws']}",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.root
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited:\n{self.log()}")
            try:
                if self.get("agent/status").status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"jupyter lab did not answer in {timeout_s} s:\n{self.log()}")

    def log(self) -> str:
        """The server's output so far (for failure messages)."""
        return self.log_path.read_text(errors="replace")[-8000:]

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, headers=self._headers(), timeout=10)

    def request(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(
            method, self.url + path, json=body, headers=self._headers(), timeout=10
        )

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.dirs["runtime"], ignore_errors=True)


#: Where the browser tests' screenshots go (printed as they are taken).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"


def shot(page: Page, name: str) -> None:
    """A screenshot of the page in :data:`ARTIFACTS`."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")


def open_lab(page: Page, lab: LabServer, path: str = "lab") -> None:
    """Open JupyterLab and wait until it is fully restored (no page-load race)."""
    page.goto(f"{lab.url}{path}?token={lab.token}")
    wait_restored(page)


def wait_restored(page: Page) -> None:
    """Wait for ``jupyterapp``, its ``restored`` promise, then the splash to go."""
    page.wait_for_function("() => !!window.jupyterapp", timeout=60000)
    page.evaluate("() => window.jupyterapp.restored")
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=60000)


def new_chat(page: Page) -> Locator:
    """Start a new chat from the sidebar's button; the chat view's locator."""
    page.evaluate("() => window.jupyterapp.commands.execute('jupyter-agent:open-panel')")
    before = page.eval_on_selector_all(".jp-agent-chat", "els => els.map(e => e.id)")
    page.locator(".jp-agent-new-chat").click()
    # The NEW chat's view, once shown (by its id: "the last visible chat" could be an
    # older one for a moment, a view the new tab then hides).
    found = page.wait_for_function(
        """ids => {
          const v = [...document.querySelectorAll('.jp-agent-chat')]
            .find(e => e.id && !ids.includes(e.id) && e.getClientRects().length > 0);
          return v ? v.id : null;
        }""",
        arg=before,
    )
    view = page.locator(f"#{found.json_value()}")
    view.locator(".jp-agent-connection[data-state='open']").wait_for()
    return view


def send_message(view: Locator, text: str) -> None:
    """Type a message in the chat's composer and press Enter."""
    box = view.locator(".jp-agent-input")
    box.click()
    box.fill(text)
    box.press("Enter")
