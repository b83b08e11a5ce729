"""Faults of the SQLite files are errors, never a signal: an immutable database, journal
or (left by an older version in WAL mode) ``-shm`` file gives a clear StoreUnavailable,
and the store works again once the file is writable.

Each scenario runs in a child process, so a SIGBUS (what WAL's memory-mapped ``-shm``
gave) fails the test instead of killing pytest.
"""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SCENARIO = """
import subprocess, sys
from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.store import Store
path, target = sys.argv[1], sys.argv[2]
store = Store("sqlite:///" + path)
store.create_chat(chat_id="chat_1", title="t", now="2024-01-01T00:00:00.000Z")
subprocess.run(["chattr", "+i", target], check=True)
try:
    try:
        store.create_chat(chat_id="chat_2", title="t", now="2024-01-01T00:00:01.000Z")
        print("WROTE")
    except StoreUnavailable as err:
        print("REFUSED", err)
finally:
    subprocess.run(["chattr", "-i", target], check=True)
store.create_chat(chat_id="chat_3", title="t", now="2024-01-01T00:00:02.000Z")
print("CHATS", len(store.list_chats()))
store.close()
"""


def _chattr_works(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_text("x")
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", "+i", str(probe)], capture_output=True)
    if done.returncode != 0:
        return False
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    return True


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    if not _chattr_works(tmp_path):
        pytest.skip("chattr +i needs root and a filesystem with immutable files (ext4, xfs)")
    return tmp_path


@pytest.mark.parametrize("suffix", ["", "-journal"])
def test_an_immutable_file_is_an_error_not_a_signal(folder: Path, suffix: str) -> None:
    path = folder / "agent.sqlite"
    target = f"{path}{suffix}"
    done = subprocess.run(
        [sys.executable, "-c", _SCENARIO, str(path), target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != -signal.SIGBUS, done.stderr
    assert done.returncode == 0, done.stderr
    assert "REFUSED" in done.stdout, done.stdout
    assert "disk I/O error" in done.stdout
    assert "CHATS 2" in done.stdout  # chat_2 was refused, chat_3 is in


def test_a_wal_database_with_an_immutable_shm_opens_with_a_clear_error(folder: Path) -> None:
    path = folder / "agent.sqlite"
    old = sqlite3.connect(path)  # an older version's server, still holding it in WAL mode
    try:
        old.execute("PRAGMA journal_mode=WAL")
        old.execute("CREATE TABLE t (x)")
        old.commit()
        for each in folder.glob("agent.sqlite*"):
            each.chmod(0o600)
        shm = Path(f"{path}-shm")
        assert shm.exists()
        subprocess.run(["chattr", "+i", str(shm)], check=True)
        try:
            code = (
                "import sys\nfrom jupyter_agent.exceptions import StoreError\n"
                "from jupyter_agent.store import Store\n"
                "try:\n    Store('sqlite:///' + sys.argv[1])\n    print('OPENED')\n"
                "except StoreError as err:\n    print('REFUSED', err)\n"
            )
            done = subprocess.run(
                [sys.executable, "-c", code, str(path)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:
            subprocess.run(["chattr", "-i", str(shm)], check=True)
    finally:
        old.close()
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "REFUSED" in done.stdout or "OPENED" in done.stdout, done.stdout
