"""URLs, secrets in URLs, SQLite settings, and concurrent writers (threads and processes)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import traceback
import uuid
from pathlib import Path

import pytest

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import Store
from tests.plugins.postgres import _free_port
from tests.store.factories import iso, make_run, make_turn


def _canary() -> str:
    return f"pw-{uuid.uuid4().hex}"


def _all_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


@pytest.mark.parametrize(
    "url",
    [
        "mysql://root:{pw}@127.0.0.1/agent",
        "not a url at all {pw}",
        "oracle+cx://u:{pw}@h:1/x",
        "://u:{pw}@",
    ],
)
def test_bad_url_is_a_clear_store_error(url: str) -> None:
    secret = _canary()
    with pytest.raises(StoreError) as info:
        Store(url.format(pw=secret))
    message = str(info.value)
    assert "URL" in message
    assert secret not in _all_text(info.value)


def test_in_memory_sqlite_is_refused() -> None:
    for url in ("sqlite://", "sqlite:///:memory:"):
        with pytest.raises(StoreError, match="SQLite needs a file path"):
            Store(url)


def test_unreachable_postgres_masks_the_password() -> None:
    secret = _canary()
    url = f"postgresql://agent:{secret}@127.0.0.1:{_free_port()}/agent"
    with pytest.raises(StoreError, match="cannot open the database") as info:
        Store(url)
    assert secret not in _all_text(info.value)
    assert "agent:***@127.0.0.1" in str(info.value)


@pytest.mark.postgres
def test_password_never_shown(pg_db_url: str) -> None:
    # The throwaway cluster trusts every login, so any password opens it.
    secret = _canary()
    url = pg_db_url.replace("postgres@", f"postgres:{secret}@", 1)
    assert secret in url
    store = Store(url.replace("postgresql://", "postgres://", 1))
    try:
        assert secret not in repr(store)
        assert secret not in store.url
        assert store.url.startswith("postgresql+psycopg://postgres:***@")
        store.create_chat(chat_id="chat_1", title="t", now=iso(1))
        with pytest.raises(StoreError) as info:
            store.create_chat(chat_id="chat_1", title="t", now=iso(1))
        assert secret not in _all_text(info.value)
        assert "***" in str(info.value)
    finally:
        store.close()


def test_sqlite_file_folder_is_created_with_a_rollback_journal(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "agent.sqlite"
    store = Store(f"sqlite:///{path}")
    try:
        assert path.exists()
        assert store.url == f"sqlite:///{path}"
        with store._engine.connect() as conn:  # what the store's own connections use
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "truncate"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        # Not WAL (the one persistent mode): its memory-mapped -shm turns an I/O fault
        # into a SIGBUS (see engine.py).
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal"


def test_relative_sqlite_path_is_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = Store("sqlite:///rel/agent.sqlite")
    store.close()
    assert store.url == f"sqlite:///{tmp_path}/rel/agent.sqlite"
    assert (tmp_path / "rel" / "agent.sqlite").exists()


def test_sqlite_folder_that_cannot_exist(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot create the folder"):
        Store(f"sqlite:///{tmp_path}/file/sub/agent.sqlite")


def test_concurrent_thread_writers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.sqlite"
    stores = [Store(url), Store(url)]  # two Stores on one file share the write lock
    stores[0].create_chat(chat_id="chat_01A", title="t", now=iso(0))
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(k: int) -> None:
        store = stores[k % 2]
        start.wait()
        try:
            for i in range(50):
                n = k * 1000 + i
                store.append_turn(make_turn(n))
                store.upsert_run(make_run(n))
                store.list_runs(limit=5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert len(stores[1].list_turns("chat_01A")) == 200
        assert len(stores[0].list_runs(limit=1000)[0]) == 200
    finally:
        for store in stores:
            store.close()


# Each write is retried on StoreUnavailable as the server's run path does (durable_call):
# on a loaded machine a writer can wait past the 5 s busy timeout; what must never happen
# is another error, a lost write or a corrupt file.
_WRITER = """
import sys, time
from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.store import Store
from tests.store.factories import make_run, make_turn
store = Store(sys.argv[1])
k = int(sys.argv[2])

def retried(fn, *args, **kw):
    for attempt in range(10):
        try:
            return fn(*args, **kw)
        except StoreUnavailable:
            time.sleep(0.1 * attempt)
    return fn(*args, **kw)

for i in range(60):
    retried(store.append_turn, make_turn(k * 1000 + i))
    retried(store.upsert_run, make_run(k * 1000 + i))
    retried(store.rename_chat, "chat_01A", f"writer {k}", now="2024-01-01T00:00:00.000Z")
    retried(store.prune_runs, older_than="2000-01-01T00:00:00.000Z")
store.close()
"""


def test_concurrent_process_writers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.sqlite"
    store = Store(url)
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0))
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, str(k)],
            cwd=root,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(3)
    ]
    try:
        outcomes = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
        assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
        assert len(store.list_turns("chat_01A")) == 180
        assert len(store.list_runs(limit=1000)[0]) == 180
    finally:
        store.close()


def test_the_sqlite_file_and_its_journal_are_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    store = Store(f"sqlite:///{path}")
    try:
        store.create_chat(chat_id="chat_1", title="t", now=iso(0))
        journal = path.with_name(path.name + "-journal")
        assert (path.stat().st_mode & 0o777) == 0o600
        assert journal.exists()  # TRUNCATE mode keeps it between transactions
        assert (journal.stat().st_mode & 0o777) == 0o600
    finally:
        store.close()


def test_an_existing_world_readable_database_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "agent.sqlite"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    Store(f"sqlite:///{path}").close()
    assert (path.stat().st_mode & 0o777) == 0o600
