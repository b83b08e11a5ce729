"""A clone used to run the app still passes the lint step of ``bash scripts/test``.

The server's root is a copy of this repository's tracked files (a clone, as a person runs
``jupyter lab`` in it); a real run writes its trace notebook and the chat's export through
the real routes into the default trace folder; then ``ruff check .`` and ``ruff format
--check .`` (as ``scripts/test`` runs them) must pass in the copy. The copy has no ``.git``,
so only the project's ruff config (not ``.gitignore``) keeps the notebooks out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call, new_chat, wait_turn

REPO = Path(__file__).resolve().parents[2]
# Model-written code as ruff would flag it: unformatted, and `sh` is the kernel's own name.
SCRIPT = [
    {"text": "Computing.", "cells": ["x=6*7\nprint( x )\nsh.last"]},
    {"text": "It is **42**."},
]


def _tracked_files() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    done = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [name for name in done.stdout.decode().split("\0") if name]


@pytest.fixture
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files as they are in the working tree (a clone of this checkout); one
    per test (the suite runs each test on SQLite and PostgreSQL: each writes its own)."""
    root = tmp_path_factory.mktemp("clone")
    for name in _tracked_files():
        source = REPO / name
        if source.is_file():  # tracked, deleted in the working tree: not in a clone either
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return root


@pytest.fixture
def jp_root_dir(clone: Path) -> Path:
    """The server serves the clone."""
    return clone


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def ruff(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


@pytest.mark.timeout(600)
@pytest.mark.usefixtures("server_kernelspec")
def test_lint_passes_in_a_clone_the_app_wrote_into(fetch: Any, spin: Any, clone: Path) -> None:
    tracked = set(clone.rglob("*.ipynb"))  # the project's own (examples/eval/cases.ipynb)
    chat_id = new_chat(fetch, "Lint me")
    code, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "6*7?"}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    code, trace = call(fetch, "agent", "runs", sent["run_id"], "notebook", method="POST", body={})
    assert code == 201
    code, export = call(fetch, "agent", "chats", chat_id, "notebook", method="POST", body={})
    assert code == 201
    written = sorted(p.relative_to(clone).as_posix() for p in set(clone.rglob("*.ipynb")) - tracked)
    # (and the contents manager's checkpoints, in a hidden folder ruff skips by default)
    written = [p for p in written if ".ipynb_checkpoints/" not in p]
    assert written == sorted([trace["path"], export["path"]])
    assert all(p.startswith("agent-traces/") for p in written)
    # Without the project's config ruff would object to them: the check below means something.
    assert ruff(clone, "format", "--check", "--isolated", "agent-traces").returncode == 1

    for step in (["check", "."], ["format", "--check", "."]):
        done = ruff(clone, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
