"""The ``live_server`` fixture (session): a real ``jupyter server`` subprocess with the
extension enabled and the fake provider as its codegen tier; ``live_server_run`` (session):
``(chat_id, run_id)`` of one finished run on it, made by the real run path.

It listens on a free loopback port with a random token and isolated Jupyter folders
(``data_dir`` is its data dir, not the tests'); ``pool_size`` 0. :func:`live_run` sends one
message in a new chat and waits for the run's turn.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.llm.fake.server import FakeProvider
from tests.plugins.jupyter_dirs import jupyter_dirs, jupyter_env
from tests.rest_stub import free_port

__all__ = ["LiveServer", "live_run", "live_server", "live_server_run"]

SCRIPT = [{"text": "Let me compute.", "cells": ["6 * 7"]}, {"text": "The answer is **42**."}]


@dataclass
class LiveServer:
    addr: str
    token: str
    fake: FakeProvider
    data_dir: Path
    #: Its Jupyter runtime dir (where its ``jpserver-PID.json`` is).
    runtime_dir: Path


@pytest.fixture(scope="session")
def live_server(tmp_path_factory) -> Iterator[LiveServer]:
    """``jupyter server`` as a subprocess: free loopback port, random token, isolated
    Jupyter folders, the extension enabled, the fake provider as the codegen tier."""
    base = tmp_path_factory.mktemp("live")
    fake = FakeProvider({"steps": SCRIPT, "repeat": True}).start()
    dirs = jupyter_dirs(base)
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {
            "pool_size": 0,
            "tiers": {
                "codegen": {
                    "provider": "fake",
                    "model": "claude-sonnet-4-5",
                    "base_url": fake.base_url,
                }
            },
        },
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = jupyter_env(dirs)
    env.pop("JUPYTER_TOKEN", None)
    port, token = free_port(), secrets.token_hex(16)
    argv = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={dirs['root']}",
        f"--IdentityProvider.token={token}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    log = (base / "server.log").open("wb")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    addr = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with AgentClient(addr, token, timeout=5) as client:
                    client.status()
                break
            except ClientError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "jupyter server did not start:\n" + (base / "server.log").read_text()
                    ) from None
                time.sleep(0.2)
        yield LiveServer(
            addr=addr, token=token, fake=fake, data_dir=dirs["data"], runtime_dir=dirs["runtime"]
        )
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
        fake.stop()


def live_run(
    server: LiveServer, text: str = "what is 6*7?", timeout_s: float = 120
) -> tuple[str, str]:
    """``(chat_id, run_id)`` of a new chat's first run, once its turn is stored."""
    with AgentClient(server.addr, server.token) as client:
        chat = client.create_chat("live")
        sent = client.send(chat["id"], text)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            detail = client.chat(chat["id"])
            if detail["active_run_id"] is None and any(
                t["run_id"] == sent["run_id"] for t in detail["turns"]
            ):
                return chat["id"], sent["run_id"]
            time.sleep(0.05)
    raise AssertionError(f"no turn for {sent['run_id']} within {timeout_s} s")


@pytest.fixture(scope="session")
def live_server_run(live_server: LiveServer) -> tuple[str, str]:
    """One finished run on the live server (for tests that only read it)."""
    return live_run(live_server)
