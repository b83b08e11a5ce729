"""Isolation that matches the deployment (issue 25): several owners need a sandbox.

- A server with several owners (``owners = identity``, or ``auto`` under a non-token
  identity provider) and unsandboxed agent kernels refuses to start, in process and as a
  real ``jupyter server`` (exit status, the message on stderr), unless
  ``allow_unsandboxed_owners`` is set: then it starts and warns.
- What model code can read then: ``test_isolation_reads.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.runtime.kernels.sandbox import SandboxUnavailable, check_sandbox, parse_sandbox
from tests.plugins.identities import identity_server_config
from tests.rest_stub import free_port
from tests.server.conftest import agent_app

pytestmark = pytest.mark.timeout(240)

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2"}
ALLOW = "JupyterAgent.allow_unsandboxed_owners"


def bwrap_reason() -> str | None:
    """Why bwrap cannot run here (None: it can)."""
    try:
        check_sandbox(parse_sandbox("bwrap"))
    except SandboxUnavailable as exc:
        return str(exc)
    return None


needs_bwrap = pytest.mark.skipif(bwrap_reason() is not None, reason=str(bwrap_reason()))


# -- the start rule, in process --------------------------------------------------------------


@pytest.mark.sqlite_only("refused before any store is opened")
def test_several_owners_without_a_sandbox_refuse_to_start(jp_configurable_serverapp: Any):
    config = identity_server_config({"pool_size": 0, "allow_unsandboxed_owners": False}, TOKENS)
    with pytest.raises(SystemExit) as info:
        jp_configurable_serverapp(config=config)
    message = str(info.value)
    assert (
        "JupyterAgent.owners = 'auto' (resolved to 'identity' for the identity provider "
        "TokenUsersIdentityProvider)" in message
    )
    assert "KernelPool.kernel_sandbox = 'none'" in message
    assert "KernelPool.kernel_sandbox = 'bwrap'" in message  # the fix
    assert f"{ALLOW} = True" in message


@pytest.mark.sqlite_only("a start-up warning, before any store")
def test_allowed_unsandboxed_owners_start_with_a_warning(
    jp_configurable_serverapp: Any, capsys: pytest.CaptureFixture[str]
):
    config = identity_server_config({"pool_size": 0, "allow_unsandboxed_owners": True}, TOKENS)
    jp_configurable_serverapp(config=config)
    # The server's log at start goes to its own handler (stderr), not to the root logger.
    warned = [line for line in capsys.readouterr().err.splitlines() if ALLOW in line]
    assert len(warned) == 1, warned
    assert f"started anyway because {ALLOW} = True" in warned[0]
    assert "KernelPool.kernel_sandbox = 'none'" in warned[0]


@pytest.mark.sqlite_only("a start-up check, before any store")
def test_one_owner_needs_no_sandbox(
    jp_configurable_serverapp: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
):
    config = identity_server_config({"pool_size": 0, "owners": "single"}, TOKENS)
    config["JupyterAgent"].pop("allow_unsandboxed_owners")
    serverapp = jp_configurable_serverapp(config=config)
    assert agent_app(serverapp).services is not None
    assert ALLOW not in capsys.readouterr().err + caplog.text


# -- the start rule, a real jupyter server ----------------------------------------------------


def _jupyter_server(tmp_path: Path, agent: dict[str, Any], pool: dict[str, Any]) -> Any:
    dirs = {name: tmp_path / name for name in ("config", "data", "runtime", "root")}
    for folder in dirs.values():
        folder.mkdir()
    config = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"owners": "identity", **agent},
        "KernelPool": {"size": 0, **pool},
    }
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
    }
    argv = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1"]
    argv += [f"--ServerApp.port={free_port()}", f"--ServerApp.root_dir={dirs['root']}"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = tmp_path / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, log


def _wait_started(proc: Any, log: Path) -> str:
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            text = log.read_text()
            if "is running at" in text or proc.poll() is not None:
                return text
            time.sleep(0.2)
        raise AssertionError("jupyter server did not start:\n" + log.read_text())
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.mark.sqlite_only("a real jupyter server of its own")
def test_jupyter_server_refuses_several_owners_without_a_sandbox(tmp_path: Path):
    proc, log = _jupyter_server(tmp_path, {}, {})
    assert proc.wait(120) != 0
    output = log.read_text()
    assert "JupyterAgent.owners = 'identity': several people own agent objects" in output
    assert "KernelPool.kernel_sandbox = 'none'" in output
    assert f"or, knowing that risk, {ALLOW} = True" in output
    assert "Traceback" not in output
    assert "is running at" not in output


@pytest.mark.sqlite_only("a real jupyter server of its own")
def test_jupyter_server_with_allow_unsandboxed_owners_starts_and_warns(tmp_path: Path):
    proc, log = _jupyter_server(tmp_path, {"allow_unsandboxed_owners": True}, {})
    output = _wait_started(proc, log)
    assert "is running at" in output, output
    assert f"started anyway because {ALLOW} = True" in output


@needs_bwrap
@pytest.mark.sqlite_only("a real jupyter server of its own")
def test_jupyter_server_with_several_owners_and_bwrap_starts_without_a_word(tmp_path: Path):
    proc, log = _jupyter_server(tmp_path, {}, {"kernel_sandbox": "bwrap"})
    output = _wait_started(proc, log)
    assert "is running at" in output, output
    assert ALLOW not in output
