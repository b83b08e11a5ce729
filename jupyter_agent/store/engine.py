"""Engines per database URL: SQLite (WAL, immediate write transactions) or PostgreSQL.

- ``sqlite:///path.sqlite``: a file (a relative path is resolved against the current
  directory; the parent folder is created). Every connection sets
  ``journal_mode=TRUNCATE``, ``synchronous=FULL``, ``mmap_size=0``, ``busy_timeout=5000``
  and ``foreign_keys=ON``. Not WAL, on purpose: WAL maps its ``-shm`` index into memory,
  and a write to that map failing (an unwritable or immutable ``-shm``, a full disk)
  is a SIGBUS that kills the whole Jupyter server and every kernel with it; a rollback
  journal does plain file I/O only, so the same faults are errors (``disk I/O error``,
  ``attempt to write a readonly database``) the store reports. ``FULL``: a commit is
  on disk before the write returns (no acknowledged message lost). pysqlite's own
  transaction handling is switched off and SQLAlchemy's ``begin`` event emits ``BEGIN``
  for reads and ``BEGIN IMMEDIATE`` for writes (an engine view carrying
  :data:`WRITE_OPTION`), the recipe SQLAlchemy documents for pysqlite: a writer takes the
  write lock up front, so two writers wait on the busy timeout instead of failing with
  "database is locked" when a read lock cannot be upgraded. In-memory databases are refused
  (each pooled connection would see its own empty database). The file (and so its
  ``-wal`` / ``-shm`` files) is the owner's alone: mode 0600.
- ``postgresql://``, ``postgres://`` and ``postgresql+psycopg://``: psycopg 3, the same
  code; ``pool_pre_ping`` so a restarted server costs no failed call.

Anything else is a :class:`~jupyter_agent.exceptions.StoreError`. :func:`mask_url` is the
only form of a URL that may be shown or logged (the password becomes ``***``).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from jupyter_agent.exceptions import StoreError

__all__ = [
    "NO_BEGIN_OPTION",
    "dialect_module",
    "WRITE_OPTION",
    "create_store_engine",
    "mask_url",
    "normalise_url",
    "scrub",
]

#: Execution option marking a write transaction (``BEGIN IMMEDIATE`` on SQLite).
WRITE_OPTION = "jupyter_agent_write"
#: Execution option of a lone read that needs no ``BEGIN`` on SQLite (the schema check).
NO_BEGIN_OPTION = "jupyter_agent_no_begin"

_PG_NAMES = {"postgresql", "postgres", "postgresql+psycopg"}


def dialect_module(name: str) -> Any:
    """SQLAlchemy's dialect module ``sqlite`` or ``postgresql`` (whose ``insert`` has
    ``on_conflict_*``), imported at first use: a SQLite server never loads PostgreSQL's
    (about 25 ms of the server's start)."""
    return importlib.import_module(f"sqlalchemy.dialects.{name}")


def normalise_url(url: str) -> URL:
    """Parse and check a database URL; PostgreSQL URLs are pointed at psycopg 3.

    Raises StoreError (with the password masked) for a malformed or unsupported URL.
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        # An unparseable URL is never echoed: it may hold a password in an odd place.
        raise StoreError(
            "not a database URL (could not parse it): use sqlite:///path or postgresql://..."
        ) from None
    name = parsed.drivername
    if name in _PG_NAMES:
        return parsed.set(drivername="postgresql+psycopg")
    if name in {"sqlite", "sqlite+pysqlite"}:
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            raise StoreError(
                f"SQLite needs a file path (sqlite:///abs/path.sqlite), got {mask_url(parsed)!r}"
            )
        return parsed.set(drivername="sqlite", database=os.path.abspath(database))
    raise StoreError(
        f"unsupported database URL {mask_url(parsed)!r}: use sqlite:///path or postgresql://..."
    )


def mask_url(url: URL) -> str:
    """The URL as text with any password replaced by ``***``."""
    return url.render_as_string(hide_password=True)


def scrub(text: str, url: URL) -> str:
    """``text`` with the URL's password (raw or URL-quoted) replaced by ``***``."""
    password = url.password
    if password:
        for form in {str(password), quote(str(password), safe="")}:
            text = text.replace(form, "***")
    return text


def create_store_engine(url: URL) -> Engine:
    """One engine for the store's lifetime (pooled). ``url`` comes from :func:`normalise_url`."""
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    try:
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError as exc:  # pragma: no cover - psycopg is a test dependency
        raise StoreError(f"no driver for {mask_url(url)!r}: install psycopg ({exc})") from None


def _sqlite_engine(url: URL) -> Engine:
    path = Path(url.database or "")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder of {mask_url(url)!r}: {exc}") from None
    _private_file(path, url)
    engine = create_engine(url, connect_args={"timeout": 5.0, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # None = pysqlite emits no BEGIN of its own; the "begin" hook below does.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=TRUNCATE")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA mmap_size=0")
            cursor.execute("PRAGMA busy_timeout=5000")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        options = conn.get_execution_options()
        if options.get(NO_BEGIN_OPTION, False):
            return  # one autocommitted SELECT (the schema check): no transaction needed
        conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get(WRITE_OPTION, False) else "BEGIN")

    return engine


def _private_file(path: Path, url: URL) -> None:
    """The database file is the owner's alone (0600): it holds every chat.

    Created so before SQLite opens it (SQLite gives its ``-journal`` file, and the
    ``-wal`` / ``-shm`` files of a database an older version left in WAL mode, the main
    file's mode); an existing file readable by others is tightened.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for each in [path] + [path.with_name(path.name + x) for x in ("-journal", "-wal", "-shm")]:
            try:
                mode = each.stat().st_mode & 0o777
                if mode & 0o077:
                    os.chmod(each, mode & 0o700)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot make {mask_url(url)!r} private: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot create {mask_url(url)!r}: {exc}") from None
    else:
        os.close(fd)
