"""Four processes opening one fresh SQLite file at once migrate it once.

SQLite needs no lock of its own for this: each migration step's ``BEGIN IMMEDIATE`` takes
the write lock before the version is read. The test holds that lock while the four
processes start, so they all wait on it and then race for it (PostgreSQL's advisory lock
is tested with four real servers in ``tests/deploy/test_postgres.py``).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from jupyter_agent.store.migrations import _CREATE_VERSION_TABLE, LATEST_VERSION

OPENERS = 4


def test_four_processes_opening_one_sqlite_file_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute(_CREATE_VERSION_TABLE)
    holder.execute("BEGIN IMMEDIATE")  # every opener waits on this write lock
    code = f"from jupyter_agent.store.repo import Store; Store({f'sqlite:///{path}'!r}).close()"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
        for _ in range(OPENERS)
    ]
    try:
        time.sleep(1.5)  # within the openers' 5 s busy timeout: they start and wait
        holder.execute("ROLLBACK")
        results = [(p.wait(60), p.stderr.read().decode() if p.stderr else "") for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert all(rc == 0 for rc, _ in results), results
    rows = holder.execute(
        "SELECT version, COUNT(*) FROM schema_version GROUP BY version ORDER BY version"
    ).fetchall()
    holder.close()
    assert rows == [(v, 1) for v in range(1, LATEST_VERSION + 1)]
