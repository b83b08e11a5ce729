"""A deploy's code checks run in a check process, never in the server (issue 25), through
``POST agent/programs/{name}`` on a real Jupyter server, unsandboxed and under ``bwrap``.

A refused deploy leaves no trace: its import's writes never land in the server's cwd or
root (nor, under bwrap, outside the check's temp dir), the server never imported it, no
version is stored or materialised, no temp dir or process is left, the active version is
unchanged. A check past ``program_check_timeout_s`` is killed (with what it started) and
refused while the server keeps answering. The check sees the agent kernels' filtered
environment, a temp HOME and cwd. A good version still deploys, and rollback works.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.programs.builtin import builtin_ref
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.loader import PARENT
from jupyter_agent.programs.refs import HASH_CHARS
from jupyter_agent.runtime.kernels.reaper import instance_id, tagged_processes
from tests.server.helpers import call, refused

GOOD = """from jupyter_agent.core import loop


def program(run_id, chat_id):
    return (yield from loop.program("toolcaller@v8", run_id, chat_id))
"""
# Writes a relative and an absolute file at import, leaves a daemon holding the check
# process's pipes, then fails its checks (not a generator).
WRITER = """import os
import subprocess
import sys

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
open({relative!r}, "w").write(str(os.getpid()))
os.makedirs(os.path.dirname({absolute!r}), exist_ok=True)
open({absolute!r}, "w").write(str(os.getpid()))


def program(run_id, chat_id):
    return 1
"""
# Starts a daemon of its own, then hangs at import.
SLEEPER = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
    " start_new_session=True)\n"
    "time.sleep(30)\n" + GOOD
)
# Says at import what it can see of the server's secrets, then fails.
PEEKER = """import os

names = ("JA_TEST_API_KEY", "JA_TEST_DB_URL", "JUPYTER_TOKEN")
seen = [name for name in names if name in os.environ]
raise RuntimeError(
    "seen=" + ",".join(seen)
    + " plain=" + os.environ.get("JA_TEST_PLAIN", "-")
    + " home=" + os.environ.get("HOME", "-")
    + " cwd=" + os.getcwd()
    + " db=" + str(os.path.exists({db!r}))
)
"""
CHECK_S = 2.0


@pytest.fixture
def kernel_sandbox() -> str:
    """The server's ``KernelPool.kernel_sandbox`` (parametrized per test)."""
    return "none"


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any], kernel_sandbox: str) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": {"pool_size": 0, "program_check_timeout_s": CHECK_S, **agent_config},
        "KernelPool": {"kernel_sandbox": kernel_sandbox},
    }


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp dir the server's check dirs go to, this test's own."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def deploy_body(files: dict[str, str]) -> dict[str, Any]:
    return {"files": files}


def no_trace(agent_service: Any, temp_dir: Path, files: dict[str, str]) -> None:
    """Nothing of a refused deploy of ``files`` is left: no version, no cache, no temp
    dir, no module, no check process; the built-in still runs."""
    parts = agent_service
    assert parts.store.programs() == []
    cache = parts.data_dir / "programs"
    assert not cache.exists() or list(cache.iterdir()) == []
    assert list(temp_dir.iterdir()) == []
    digest = content_hash("toolcaller", files)[:HASH_CHARS]
    assert not [m for m in sys.modules if m.startswith(PARENT + ".check_") or digest in m]
    mine = f"/{instance_id()}/check-"
    assert tagged_processes(lambda tag: mine in tag) == {}
    resolved = parts.programs.resolve("agent", "toolcaller")
    assert resolved.ref.text == builtin_ref("toolcaller@v8").text


@pytest.mark.parametrize("kernel_sandbox", ["none", "bwrap"])
def test_a_refused_import_runs_only_in_the_check_process(
    fetch: Any,
    agent_service: Any,
    jp_root_dir: Path,
    temp_dir: Path,
    tmp_path: Path,
    kernel_sandbox: str,
) -> None:
    relative = f"ja-check-{uuid.uuid4().hex}.txt"
    absolute = str(tmp_path / "outside" / "written.txt")
    files = {"program.py": WRITER.format(relative=relative, absolute=absolute)}
    started = time.monotonic()
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=deploy_body(files),
        status=400,
    )
    assert error["reason"] == "program_refused"
    assert "not a generator function" in error["message"]
    assert time.monotonic() - started < CHECK_S  # its daemon did not hold the answer
    # The import ran (it got as far as the entry check), but not here.
    for folder in (Path.cwd(), jp_root_dir, agent_service.data_dir):
        assert not (folder / relative).exists()
    if kernel_sandbox == "bwrap":
        assert not Path(absolute).exists()  # /tmp is the sandbox's own
    else:
        assert int(Path(absolute).read_text()) != os.getpid()
    no_trace(agent_service, temp_dir, files)


def test_a_hanging_import_is_stopped_at_the_deadline_and_the_server_answers(
    fetch: Any, jp_fetch: Any, jp_asyncio_loop: Any, agent_service: Any, temp_dir: Path
) -> None:
    files = {"program.py": SLEEPER}
    body = json.dumps(deploy_body(files))
    started = time.monotonic()
    deploy = asyncio.ensure_future(
        jp_fetch("agent", "programs", "toolcaller", method="POST", body=body, raise_error=False),
        loop=jp_asyncio_loop,
    )
    jp_asyncio_loop.run_until_complete(asyncio.sleep(0.5))  # the check process runs
    slowest = 0.0
    while not deploy.done():
        asked = time.monotonic()
        assert fetch("agent", "status").code == 200
        slowest = max(slowest, time.monotonic() - asked)
        jp_asyncio_loop.run_until_complete(asyncio.sleep(0.1))
    response = jp_asyncio_loop.run_until_complete(deploy)
    took = time.monotonic() - started
    assert response.code == 400
    error = json.loads(response.body)
    assert error["reason"] == "program_check_timeout"
    assert f"{CHECK_S:g} s" in error["message"]
    assert "JupyterAgent.program_check_timeout_s" in error["message"]
    assert CHECK_S <= took < CHECK_S + 5
    assert slowest < 1.0, slowest
    no_trace(agent_service, temp_dir, files)  # the import's daemon too


@pytest.mark.parametrize("kernel_sandbox", ["none", "bwrap"])
def test_the_check_sees_no_secret(
    fetch: Any,
    agent_service: Any,
    temp_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    kernel_sandbox: str,
) -> None:
    monkeypatch.setenv("JA_TEST_API_KEY", "sk-ant-fake-0123456789")
    monkeypatch.setenv("JA_TEST_DB_URL", "postgresql://agent:hunter2@db.example/agent")
    monkeypatch.setenv("JA_TEST_PLAIN", "plain")
    db = str(agent_service.data_dir / "agent.sqlite")
    files = {"program.py": PEEKER.format(db=db)}
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=deploy_body(files),
        status=400,
    )
    message = error["message"]
    assert "seen= " in message, message
    assert "plain=plain" in message  # filtered, not emptied
    home = message.partition(" home=")[2].partition(" ")[0]
    cwd = message.partition(" cwd=")[2].partition(" ")[0]
    assert home == cwd
    assert home.startswith(str(temp_dir))
    assert home != os.environ.get("HOME")
    if kernel_sandbox == "bwrap":  # the agent's data dir is hidden
        assert "db=False" in message
    assert "hunter2" not in message
    assert "sk-ant" not in message
    no_trace(agent_service, temp_dir, files)


def test_a_good_version_still_deploys_and_rolls_back(
    fetch: Any, agent_service: Any, temp_dir: Path
) -> None:
    refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=deploy_body({"program.py": "import time\ntime.sleep(30)\n" + GOOD}),
        status=400,
    )
    code, answer = call(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=deploy_body({"program.py": GOOD}),
    )
    assert code == 201
    assert answer["program"]["version"] == 9  # the refusal took no number
    resolved = agent_service.programs.resolve("agent", "toolcaller")
    assert resolved.ref.text == answer["active"]
    # Imported by the server now that it runs it: under its version's own name.
    assert [m for m in sys.modules if m.startswith(PARENT + ".toolcaller_v9_")]
    assert list(temp_dir.iterdir()) == []
    code, rolled = call(
        fetch, "agent", "programs", "toolcaller", "rollback", method="POST", body={}
    )
    assert (code, rolled["active"]) == (200, builtin_ref("toolcaller@v8").text)


def test_a_check_process_ended_by_the_program_is_a_refusal(
    fetch: Any, agent_service: Any, temp_dir: Path
) -> None:
    files = {"program.py": "import os\nos._exit(3)\n" + GOOD}
    error = refused(
        fetch,
        "agent",
        "programs",
        "toolcaller",
        method="POST",
        body=deploy_body(files),
        status=400,
    )
    assert error["reason"] == "program_refused"
    assert "ended without a verdict (exit 3" in error["message"]
    no_trace(agent_service, temp_dir, files)
