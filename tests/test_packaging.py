"""Packaging end to end: Binder's postBuild in a fresh venv from a copy of this clone.

Marked ``packaging`` (``pytest -m packaging`` runs only this; ``-m "not packaging"``
skips it). It takes about a minute or two: a truly fresh ``python -m venv`` (pip's cache is
reused), ``bash binder/postBuild`` run in a copy of the work tree (the files git tracks or
would track, so no ``node_modules`` and no built bundle), then checks that Jupyter sees both
extensions and that a real ``jupyter server`` from that venv answers ``GET agent/status``
with ``demo: true`` when no key is set.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.plugins.fresh_venv import copy_work_tree, venv_env

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(600)]


def plain(text: str) -> str:
    """``text`` without the terminal colour codes Jupyter's listings use."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def get_status(url: str, token: str, deadline_s: float) -> dict[str, object]:
    """Poll ``url`` until the server answers 200, then return its JSON."""
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                body: dict[str, object] = json.loads(response.read())
                return body
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_binder_postbuild_in_a_fresh_venv(tmp_path: Path) -> None:
    if shutil.which("git") is None or shutil.which("node") is None:
        pytest.fail("this test needs git and node on PATH")
    clone = tmp_path / "clone"
    copy_work_tree(clone)
    assert not (clone / "jupyter_agent" / "labextension").exists()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = venv_env(venv, tmp_path / "home")

    build = subprocess.run(
        ["bash", "binder/postBuild"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=480,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]

    jupyter = str(venv / "bin" / "jupyter")
    server_list = subprocess.run(
        [jupyter, "server", "extension", "list"], env=env, capture_output=True, text=True
    )
    listing = plain(server_list.stdout + server_list.stderr)
    assert re.search(r"^\s*jupyter_agent enabled$", listing, re.M), listing
    # Validated: the extension imports and names its version.
    assert re.search(r"^\s*jupyter_agent \d+\.\d+\.\d+\S* OK$", listing, re.M), listing

    lab_list = subprocess.run(
        [jupyter, "labextension", "list"], env=env, capture_output=True, text=True
    )
    listing = plain(lab_list.stdout + lab_list.stderr)
    assert re.search(r"^\s*jupyter-agent v\S+ enabled OK", listing, re.M), listing
    assert str(venv) in listing  # installed into the venv, not found elsewhere

    kernels = subprocess.run(
        [jupyter, "kernelspec", "list", "--json"], env=env, capture_output=True, text=True
    )
    assert "jupyter-agent" in json.loads(kernels.stdout)["kernelspecs"]

    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [
            jupyter,
            "server",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={tmp_path}",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        status = get_status(f"http://127.0.0.1:{port}/agent/status", token, deadline_s=60)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert status["demo"] is True
    assert status["version"]
