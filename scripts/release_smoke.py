"""The smoke test of an installed wheel (``scripts/release``, tests/release): what a person
who ran ``pip install jupyter-agent-runtime`` on a machine without Node gets.

From the fresh venv, with the env :func:`release.install` made (Node off PATH, Jupyter's
folders in a temporary home, no provider key): ``jupyter_agent`` imports from the venv's
own site-packages; ``jupyter labextension list`` shows ``jupyter-agent`` enabled OK from
the venv; the server extension is enabled and validates; the kernelspec is listed;
``jupyter lab`` gets ready and its page names the extension; ``GET agent/status`` answers
this version and the demo; one message gets the demo model's whole turn.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["NODE_TOOLS", "Failed", "node_free_path", "smoke"]

#: The commands that would let a build use Node: none may be on the smoke test's PATH.
NODE_TOOLS = frozenset({"node", "nodejs", "npm", "npx", "yarn", "jlpm", "corepack"})


class Failed(Exception):
    """A release step that did not do what it must."""


def node_free_path(path: str, shadows: Path) -> str:
    """``path`` with every folder holding one of :data:`NODE_TOOLS` replaced by a folder of
    links to its other entries (so ``bash``, ``git`` and the rest of ``/usr/bin`` stay)."""
    kept: list[str] = []
    for index, folder in enumerate(filter(None, path.split(os.pathsep))):
        here = Path(folder)
        if not here.is_dir() or not any((here / tool).exists() for tool in NODE_TOOLS):
            kept.append(folder)
            continue
        shadow = shadows / str(index)
        shadow.mkdir(parents=True, exist_ok=True)
        for entry in here.iterdir():
            if entry.name not in NODE_TOOLS and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
        kept.append(str(shadow))
    cleaned = os.pathsep.join(kept)
    for tool in ("node", "npm"):
        if shutil.which(tool, path=cleaned):
            raise Failed(f"{tool} is still on the smoke test's PATH")
    return cleaned


def _plain(text: str) -> str:
    """``text`` without the terminal colour codes Jupyter's listings use."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def _output(cmd: list[str], env: dict[str, str]) -> str:
    # (from the venv's folder: `python -c` in the clone would import the clone's package)
    cwd = Path(env["VIRTUAL_ENV"])
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise Failed(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}")
    return _plain(done.stdout + done.stderr)


def listings(venv: Path, env: dict[str, str]) -> None:
    """The import, the two extension listings and the kernelspec, from the venv."""
    bin_ = venv / "bin"
    where = _output(
        [str(bin_ / "python"), "-c", "import jupyter_agent;print(jupyter_agent.__file__)"], env
    )
    if not Path(where.strip()).resolve().is_relative_to(venv.resolve()):
        raise Failed(f"jupyter_agent imports from {where.strip()}, not from the fresh venv")
    lab = _output([str(bin_ / "jupyter"), "labextension", "list"], env)
    if not re.search(r"^\s*jupyter-agent v\S+ enabled OK", lab, re.M) or str(venv) not in lab:
        raise Failed(f"jupyter-agent is not listed enabled OK from the venv:\n{lab}")
    server = _output([str(bin_ / "jupyter"), "server", "extension", "list"], env)
    if not re.search(r"^\s*jupyter_agent enabled$", server, re.M) or not re.search(
        r"^\s*jupyter_agent \S+ OK$", server, re.M
    ):
        raise Failed(f"jupyter_agent is not an enabled, valid server extension:\n{server}")
    specs = json.loads(_output([str(bin_ / "jupyter"), "kernelspec", "list", "--json"], env))
    spec = specs["kernelspecs"].get("jupyter-agent")
    if spec is None or not Path(spec["resource_dir"]).resolve().is_relative_to(venv.resolve()):
        raise Failed(f"no jupyter-agent kernelspec in the venv: {specs}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _until(client: httpx.Client, path: str, deadline_s: float) -> Any:
    """GET ``path`` until it answers 200; its JSON."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            answer = client.get(path)
            if answer.status_code == 200:
                return answer.json()
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise Failed(f"GET {path} did not answer 200 within {deadline_s:.0f} s")
        time.sleep(0.25)


def demo_turn(client: httpx.Client) -> float:
    """One message in a new chat, answered by the demo model; the turn's time in seconds."""
    chat = client.post("agent/chats", json={"title": "release smoke"})
    if chat.status_code != 201:
        raise Failed(f"POST agent/chats: {chat.status_code} {chat.text}")
    chat_id = chat.json()["id"]
    started = time.perf_counter()
    sent = client.post(f"agent/chats/{chat_id}/messages", json={"text": "what is in my data?"})
    if sent.status_code != 202:
        raise Failed(f"POST messages: {sent.status_code} {sent.text}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = client.get(f"agent/chats/{chat_id}").json()
        if found["turns"] and found["active_run_id"] is None:
            turn = found["turns"][-1]
            if (turn["model"], turn["llm"]["stopReason"]) != ("jupyter-agent-demo", "done"):
                raise Failed(f"the demo turn did not end done: {turn}")
            if not turn["llm"]["cells"] or not turn["replies"]:
                raise Failed(f"the demo turn ran no cell or said nothing: {turn}")
            return time.perf_counter() - started
        time.sleep(0.25)
    raise Failed("the demo turn did not end within 120 s")


def smoke(venv: Path, env: dict[str, str], base: Path, version: str) -> dict[str, Any]:
    """Every check of this module; figures: the server's ready time and the turn's."""
    listings(venv, env)
    port, token = _free_port(), secrets.token_hex(16)
    root = base / "root"
    root.mkdir(exist_ok=True)
    cmd = [str(venv / "bin" / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1"]
    cmd += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    cmd += [f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = base / "lab.log"
    started = time.perf_counter()
    with log_path.open("wb") as log:
        lab = subprocess.Popen(cmd, env=env, cwd=root, stdout=log, stderr=subprocess.STDOUT)
        headers = {"Authorization": f"token {token}"}
        url = f"http://127.0.0.1:{port}/"
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
                status = _until(client, "agent/status", 90)
                ready_s = time.perf_counter() - started
                if status.get("version") != version or status.get("demo") is not True:
                    raise Failed(f"agent/status: {status} (expected version {version}, the demo)")
                page = client.get("lab")
                if page.status_code != 200 or '"jupyter-agent"' not in page.text:
                    raise Failed(f"GET lab ({page.status_code}) does not load jupyter-agent")
                turn_s = demo_turn(client)
        except Failed as failed:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise Failed(f"{failed}\n--- jupyter lab's log ---\n{tail}") from None
        finally:
            lab.terminate()
            try:
                lab.wait(timeout=30)
            except subprocess.TimeoutExpired:
                lab.kill()
                lab.wait()
    return {"server_ready_s": ready_s, "demo_turn_s": turn_s}
