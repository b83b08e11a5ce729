"""Bob's agent cell and alice's data (issue 25): two identities on one real server.

alice chats (her turn stored); bob's agent cell (a real run through the fake provider)
looks for her data everywhere the server keeps it (the SQLite file, the data dir, the
server's environment, runtime dir, config dir and home, every process it can see) and for
the database URL's password (PostgreSQL: the server suite's fresh database, its URL given
a password). With ``KernelPool.kernel_sandbox = 'bwrap'`` it reads none of it;
unsandboxed (the control, allowed by ``allow_unsandboxed_owners``) the same probe finds it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from jupyter_agent.runtime.paths import DB_FILENAME, agent_data_dir
from tests.plugins.identities import identity_server_config
from tests.server.helpers import call
from tests.server.test_isolation import bwrap_reason

pytestmark = pytest.mark.timeout(300)

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2"}

# -- bob's cell and alice's data ---------------------------------------------------------------

MARK = f"flamingo-{uuid.uuid4().hex}"  # in alice's message: her turn, her run's log
PASSWORD = f"pw-{uuid.uuid4().hex}"  # in the PostgreSQL URL (trust auth ignores it)

# Needles arrive hex-encoded, so the cell's own text (kept in the kernel's IPython history,
# the run's log) never holds them.
PROBE = """\
import json, os
needles = [bytes(b ^ 0x5A for b in bytes.fromhex(h)) for h in NEEDLES]
found, read = set(), set()
def look(label, data):
    read.add(label)
    if any(n in data for n in needles):
        found.add(label)
def read_file(label, path):
    try:
        with open(path, 'rb') as f:
            look(label, f.read(64 << 20))
    except OSError:
        pass
for label, path in FILES.items():
    read_file(label, path)
for label, top in FOLDERS.items():
    for dirpath, _, names in os.walk(top):
        for name in names:
            read_file(label, os.path.join(dirpath, name))
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    for part in ('environ', 'cmdline'):
        read_file('processes', '/proc/' + pid + '/' + part)
look('kernel env', '\\0'.join(k + '=' + v for k, v in os.environ.items()).encode())
print('PROBE ' + json.dumps({'found': sorted(found), 'read': sorted(read)}))
"""


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> str:
    if request.param == "bwrap" and bwrap_reason() is not None:
        pytest.skip(str(bwrap_reason()))
    return str(request.param)


@pytest.fixture
def db_url(store_backend: str, request: pytest.FixtureRequest, jp_environ: Any) -> str:
    """The server's database: the default SQLite file, or a fresh PostgreSQL database
    whose URL carries a password (what a deployment's URL holds)."""
    if store_backend == "sqlite":
        return f"sqlite:///{agent_data_dir() / DB_FILENAME}"
    url = make_url(str(request.getfixturevalue("pg_deferred_db_url")))
    return url.set(password=PASSWORD).render_as_string(hide_password=False)


@pytest.fixture
def jp_server_config(
    fake_provider: Any,
    server_kernelspec: str,
    sandbox: str,
    db_url: str,
    jp_environ: Any,
    jp_config_dir: Path,
    jp_runtime_dir: Path,
    jp_home_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    data = agent_data_dir()
    db_name = make_url(db_url).database or ""
    needles = [MARK, PASSWORD] + ([db_name] if db_url.startswith("postgresql") else [])
    files = {
        "database": str(data / DB_FILENAME),
        "database journal": str(data / f"{DB_FILENAME}-journal"),
        "server environ": f"/proc/{os.getpid()}/environ",
    }
    folders = {
        "data dir": str(data),
        "runtime dir": str(jp_runtime_dir),
        "config dir": str(jp_config_dir),
        "home": str(jp_home_dir),
    }
    cell = (
        # Masked: the model's reply (this code) holding the password in a known encoding
        # (hex, base64, ...) would be scrubbed before it reaches the kernel.
        PROBE.replace("NEEDLES", repr([bytes(b ^ 0x5A for b in n.encode()).hex() for n in needles]))
        .replace("FILES", repr(files))
        .replace("FOLDERS", repr(folders))
    )
    fake = fake_provider(
        {"steps": [{"text": "Looking.", "cells": [cell]}, {"text": "Done."}], "repeat": True}
    )
    # Where a deployment keeps the URL: the admin's config file and the server's environment.
    agent = {"db_url": db_url, "pool_size": 0, "cell_timeout_s": 120}
    (jp_config_dir / "jupyter_server_config.json").write_text(json.dumps({"JupyterAgent": agent}))
    monkeypatch.setenv("JUPYTER_AGENT_DB_URL", db_url)
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    config = identity_server_config(
        {**agent, "tiers": {"codegen": tier}, "allow_unsandboxed_owners": sandbox == "none"},
        TOKENS,
    )
    config["KernelPool"] = {"kernel_sandbox": sandbox}
    return config


def _as(name: str) -> dict[str, str]:
    return {"Authorization": f"token {TOKENS[name]}"}


def _turn(fetch: Any, spin: Any, who: str, text: str) -> str:
    code, chat = call(fetch, "agent", "chats", method="POST", body={}, headers=_as(who))
    assert code == 201
    code, sent = call(
        fetch,
        "agent",
        "chats",
        chat["id"],
        "messages",
        method="POST",
        body={"text": text},
        headers=_as(who),
    )
    assert code == 202
    for _ in range(2400):
        _, detail = call(fetch, "agent", "chats", chat["id"], headers=_as(who))
        turns = [t for t in detail["turns"] if t["run_id"] == sent["run_id"]]
        if turns and detail["active_run_id"] is None:
            return str(sent["run_id"])
        spin(0.05)
    raise AssertionError(f"no turn for {who}'s run {sent['run_id']}")


def _probe(fetch: Any, run_id: str) -> dict[str, list[str]]:
    response = fetch("agent", "runs", run_id, params={"log": "raw"}, headers=_as("bob"))
    lines = [json.loads(line) for line in response.body.decode().splitlines()[1:]]
    [cell] = [x["data"] for x in lines if x["name"] == "cell.run" and x["phase"] == "result"]
    assert cell.get("error") is None, cell["error"]
    [printed] = [p["text"] for p in cell["prints"] if p["text"].startswith("PROBE ")]
    result: dict[str, list[str]] = json.loads(printed.removeprefix("PROBE "))
    return result


def test_bobs_cell_reads_none_of_alices_data(
    fetch: Any, spin: Any, sandbox: str, store_backend: str, db_url: str
) -> None:
    _turn(fetch, spin, "alice", f"remember the {MARK} plan")
    probe = _probe(fetch, _turn(fetch, spin, "bob", "look around"))
    if sandbox == "bwrap":
        assert probe["found"] == [], probe
        # Nothing of the server is even readable: only the kernel's own processes and
        # environment, and (in the data dir) the kernel's own dirs bound back.
        assert set(probe["read"]) <= {"processes", "kernel env", "data dir"}, probe
        return
    # The control: unsandboxed, the same probe finds her data and the database URL.
    assert "server environ" in probe["read"], probe
    assert "data dir" in probe["found"], probe  # her run's log
    if store_backend == "sqlite":
        assert "database" in probe["found"], probe  # her turn, in the SQLite file
    else:
        assert "config dir" in probe["found"], probe  # the admin's config file: the URL
    assert "kernel env" not in probe["found"], probe  # the env filter holds either way
