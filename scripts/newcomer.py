"""A new user's first half hour, timed, as a program (issue 30): ``bash scripts/newcomer``.

From a copy of this clone (what git tracks, plus new files it would track) into a fresh
venv: the README's first command (``pip install -e .``, then ``jupyter lab``), then the
panel in Debian chromium:

1. the first message, answered by the demo model (no API key anywhere);
2. a plot: the codegen tier set to the scripted fake provider on loopback in the settings
   (``PUT agent/settings``), a cell that plots with matplotlib, the figure in the chat;
3. stop: a slow cell, Stop (the panel says what it waits for), Stop now, "Stopped now";
4. reload: the chat and its turns come back;
5. the CLI without ``--addr``: ``jupyter agent trace ls`` finds the server by itself.

Each step prints its time. It fails (exit 1) on a step that does not complete, on any
error or traceback in the server's log, and on any error in the browser's console. Runs
in about 3-5 minutes (most of it the install). ``--keep`` keeps the temp folder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jupyter_agent.llm.fake.server import FakeProvider  # noqa: E402
from tests.plugins.fresh_venv import copy_work_tree, venv_env  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
PLOT = (
    "import numpy as np\nimport matplotlib.pyplot as plt\n"
    "x = np.linspace(0, 2 * np.pi, 200)\nplt.plot(x, np.sin(x))\n"
    "print(round(float(np.sin(x).max()), 3))"
)
SLOW = "import time\nfor i in range(300):\n    time.sleep(0.1)"
#: Server log lines that fail the run (a refused request is a warning, not one of these).
_BAD_LOG = re.compile(r"Traceback \(most recent call last\)|^\[E |\bERROR\b|Uncaught exception")


class Failed(Exception):
    """A step that did not do what a newcomer expects."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Steps:
    """Runs named steps, printing each one's time; the first failure ends the run."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        print(f"==> {name}", flush=True)
        started = time.perf_counter()
        yield
        took = time.perf_counter() - started
        self.times.append((name, took))
        print(f"    ok in {took:.1f} s", flush=True)


def wait_restored(page: Page) -> None:
    """JupyterLab as a person sees it (no ``window.jupyterapp``: a newcomer's lab does not
    expose it): the shell is there and the splash is gone."""
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=120000)
    page.wait_for_selector(".jp-LabShell", timeout=120000)


def run(base: Path, steps: Steps) -> None:
    clone, venv, home = base / "clone", base / "venv", base / "home"
    with steps.step("a fresh clone and venv"):
        copy_work_tree(clone)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = venv_env(venv, home)
    with steps.step("the README's first command: pip install -e ."):
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", "-e", "."],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise Failed(f"pip install -e . failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    port, token = _free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}/"
    headers = {"Authorization": f"token {token}"}
    log_path = base / "lab.log"
    cmd = [
        str(venv / "bin" / "jupyter"),
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={base}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    with log_path.open("wb") as log, FakeProvider([]) as fake:
        lab = subprocess.Popen(cmd, env=env, cwd=base, stdout=log, stderr=subprocess.STDOUT)
        try:
            with steps.step("jupyter lab answers"):
                _until(lambda: _status(url, headers) is not None, 120, "the server never answered")
                status = _status(url, headers) or {}
                if not status.get("demo"):
                    raise Failed(f"no key anywhere, yet not the demo model: {status}")
            _browser(steps, url, token, headers, fake)
            with steps.step("the CLI without --addr"):
                ls = subprocess.run(
                    [str(venv / "bin" / "jupyter"), "agent", "trace", "ls", "--json"],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                if ls.returncode != 0 or f"using the server at {url}" not in ls.stderr:
                    raise Failed(f"jupyter agent trace ls: {ls.returncode}\n{ls.stderr}")
                if len(json.loads(ls.stdout)["runs"]) < 3:
                    raise Failed(f"trace ls lists too few runs:\n{ls.stdout[:2000]}")
        finally:
            lab.terminate()
            try:
                lab.wait(15)
            except subprocess.TimeoutExpired:
                lab.kill()
    bad = [ln for ln in log_path.read_text(errors="replace").splitlines() if _BAD_LOG.search(ln)]
    if bad:
        raise Failed("errors in the server's log:\n" + "\n".join(bad[:20]))


def _status(url: str, headers: dict[str, str]) -> dict[str, Any] | None:
    try:
        r = httpx.get(url + "agent/status", headers=headers, timeout=5)
    except httpx.HTTPError:
        return None
    return r.json() if r.status_code == 200 else None


def _until(what: Callable[[], bool], timeout_s: float, why: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        if time.monotonic() > deadline:
            raise Failed(why)
        time.sleep(0.25)


def _browser(
    steps: Steps, url: str, token: str, headers: dict[str, str], fake: FakeProvider
) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        with steps.step("the panel opens"):
            page.goto(f"{url}lab?token={token}")
            wait_restored(page)
            # JupyterLab asks about its news in a toast over the bottom right (where the
            # chat's Stop button is): a person answers it; so does the newcomer.
            no = page.locator("#react-toastify-container button", has_text="No")
            with contextlib.suppress(PlaywrightTimeout):
                no.first.click(timeout=10000)
            # The Agent tab of the left sidebar, as a person finds it.
            page.locator(".jp-SideBar [data-id='jp-agent-sidebar']").click()
            page.locator(".jp-agent-new-chat").click()
            view = page.locator(".jp-agent-chat:visible").last
            view.locator(".jp-agent-connection[data-state='open']").wait_for(timeout=30000)
        with steps.step("the first message: the demo model answers"):
            _send(view, "Hello! What can you do?")
            expect(view.locator(".jp-agent-reply").last).to_contain_text(
                "demo model", timeout=120000
            )
        with steps.step("a plot (the fake provider as codegen tier, set in the settings)"):
            tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
            put = httpx.put(
                url + "agent/settings", json={"tiers": {"codegen": tier}}, headers=headers
            )
            if put.status_code != 200:
                raise Failed(f"PUT agent/settings: {put.status_code} {put.text}")
            fake.load([{"text": "Plotting.", "cells": [PLOT]}, {"text": "Its maximum is 1.0."}])
            _send(view, "Plot a sine wave and tell me its maximum")
            img = view.locator(".jp-agent-cell .jp-OutputArea-output img").last
            expect(img).to_be_visible(timeout=120000)
            expect(view.locator(".jp-agent-reply").last).to_contain_text(
                "maximum is 1.0", timeout=60000
            )
            cell = view.locator(".jp-agent-cell").last
            expect(cell).not_to_contain_text("ModuleNotFoundError")
        with steps.step("stop a slow cell"):
            fake.load([{"text": "This takes a while.", "cells": [SLOW]}, {"text": "never"}])
            _send(view, "Run something slow")
            expect(view.locator(".jp-agent-cell.jp-mod-running")).to_have_count(1, timeout=60000)
            stop = view.locator(".jp-agent-stop")
            stop.click()
            expect(view.locator(".jp-agent-stopping")).to_contain_text("Stop now")
            stop.click()
            expect(view.locator(".jp-agent-end").last).to_have_text(
                "Stopped now (hard stop)", timeout=30000
            )
        with steps.step("reload: the chat comes back"):
            page.reload()
            wait_restored(page)
            restored = page.locator(".jp-agent-chat:visible").last
            expect(restored.locator(".jp-agent-user")).to_have_count(3, timeout=60000)
        browser.close()
    ours = [e for e in errors if "favicon" not in e]
    if ours:
        raise Failed("errors in the browser's console:\n" + "\n".join(ours[:20]))


def _send(view: Any, text: str) -> None:
    box = view.locator(".jp-agent-input")
    box.click()
    box.fill(text)
    box.press("Enter")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"newcomer: needs Debian's chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    base = Path(tempfile.mkdtemp(prefix="jupyter-agent-newcomer-"))
    steps = Steps()
    started = time.perf_counter()
    try:
        run(base, steps)
    except Failed as exc:
        print(f"newcomer: FAILED: {exc}", file=sys.stderr)
        print(f"newcomer: the folder is kept: {base}", file=sys.stderr)
        return 1
    except Exception as exc:  # a step that broke: said as a failure, with the folder kept
        print(f"newcomer: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"newcomer: the folder is kept: {base}", file=sys.stderr)
        return 1
    print("\nnewcomer: every step passed")
    for name, took in steps.times:
        print(f"  {took:7.1f} s  {name}")
    print(f"  {time.perf_counter() - started:7.1f} s  in all")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
