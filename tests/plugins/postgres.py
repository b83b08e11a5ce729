"""PostgreSQL for tests (and benchmarks): a throwaway cluster, one fresh database per test.

Fixtures:

``pg_url`` (session)
    an admin URL of a PostgreSQL server: ``JUPYTER_AGENT_TEST_PG_URL`` when set, else a
    throwaway cluster started from Debian's binaries (``/usr/lib/postgresql/<v>/bin``) and
    stopped at the end of the session. Missing binaries skip the test, or fail it when
    ``CI=true``.
``pg_db_url`` (function)
    a URL of a database created for this test (``test_<hex>``) and dropped after it.
``pg_deferred_db_url`` (function)
    the same, dropped when the next test asks for one (or at the session's end): for a
    server that is stopped after the test's fixtures are torn down and still writes then.

The plain functions (:func:`start_cluster`, :func:`create_database`, :func:`drop_database`)
work outside pytest too; ``bench/bench_store.py`` uses them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = [
    "PgCluster",
    "create_database",
    "drop_database",
    "find_pg_bin",
    "pg_db_url",
    "pg_deferred_db_url",
    "pg_url",
    "start_cluster",
]

ENV_URL = "JUPYTER_AGENT_TEST_PG_URL"


def _has_tools(bin_dir: Path) -> bool:
    return (bin_dir / "initdb").exists() and (bin_dir / "pg_ctl").exists()


def find_pg_bin() -> Path | None:
    """A folder holding PostgreSQL's ``initdb`` and ``pg_ctl``, or None.

    The newest Debian ``/usr/lib/postgresql/<version>/bin``; else the one of the
    PostgreSQL on PATH (``pg_config --bindir``: Homebrew, a conda env, a source build),
    else a folder on PATH that holds both.
    """
    root = Path("/usr/lib/postgresql")
    candidates = []
    if root.is_dir():
        for child in root.iterdir():
            if _has_tools(child / "bin"):
                try:
                    candidates.append((float(child.name), child / "bin"))
                except ValueError:
                    continue
    if candidates:
        return max(candidates)[1]
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        try:
            done = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            done = None
        if done is not None and done.returncode == 0 and _has_tools(Path(done.stdout.strip())):
            return Path(done.stdout.strip())
    initdb = shutil.which("initdb")
    if initdb is not None and _has_tools(Path(initdb).parent):
        return Path(initdb).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgCluster:
    """A running throwaway cluster; :meth:`stop` stops it and removes its folder."""

    bin_dir: Path
    base: Path
    port: int
    as_postgres: bool

    @property
    def url(self) -> str:
        """The admin URL (user ``postgres``, database ``postgres``, trust auth)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run(self.as_postgres, *args)

    def restart(self) -> None:
        """Stop the server (fast: every connection is cut) and start it again on the
        same port and data (``pg_ctl restart`` reuses the options it was started with)."""
        done = self._run(
            *(str(self.bin_dir / "pg_ctl"), "-D", str(self.base / "data"), "-m", "fast"),
            *("-l", str(self.base / "log"), "-w", "restart"),
        )
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl restart failed: {done.stderr[-1000:]}")

    def stop(self) -> None:
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.base / "data"), "-m", "fast", "-w", "stop"
        )
        shutil.rmtree(self.base, ignore_errors=True)


def _run(as_postgres: bool, *args: str) -> subprocess.CompletedProcess[str]:
    # initdb and postgres refuse to run as root: drop to the postgres user then.
    argv = ["runuser", "-u", "postgres", "--", *args] if as_postgres else list(args)
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)


def start_cluster(*, durable: bool = False) -> PgCluster:
    """initdb + pg_ctl start on a free loopback port.

    ``durable`` False runs with ``fsync=off`` (tests: faster, nothing to keep); benchmarks
    pass True to measure real commits. Raises FileNotFoundError when no PostgreSQL binaries
    are installed, RuntimeError when the cluster does not start.
    """
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise FileNotFoundError(
            "no PostgreSQL binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin or on PATH"
        )
    as_postgres = os.geteuid() == 0
    base = Path(tempfile.mkdtemp(prefix="jupyter-agent-pg-"))
    if as_postgres:
        shutil.chown(base, user="postgres", group="postgres")
    data = base / "data"
    done = _run(
        as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"
    )
    if done.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr[-2000:]}")
    for _attempt in range(3):  # the free port may be taken between probe and bind
        port = _free_port()
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1"
        if not durable:
            options += " -c fsync=off"
        done = _run(
            as_postgres,
            *(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options),
            *("-l", str(base / "log"), "-w", "start"),
        )
        if done.returncode == 0:
            return PgCluster(bin_dir=bin_dir, base=base, port=port, as_postgres=as_postgres)
    log = (base / "log").read_text(errors="replace")[-2000:] if (base / "log").exists() else ""
    shutil.rmtree(base, ignore_errors=True)
    raise RuntimeError(f"pg_ctl start failed: {done.stderr[-1000:]} {log}")


def create_database(admin_url: str) -> str:
    """Create ``test_<hex>`` on the server of ``admin_url``; return its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    name = f"test_{uuid.uuid4().hex}"
    with psycopg.connect(_libpq(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def drop_database(admin_url: str, db_url: str) -> None:
    """Drop the database of ``db_url`` (closing its remaining connections)."""
    import psycopg
    from sqlalchemy.engine import make_url

    name = make_url(db_url).database
    with psycopg.connect(_libpq(admin_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _libpq(url: str) -> str:
    # psycopg takes libpq URLs: no "+driver" part.
    scheme, sep, rest = url.partition("://")
    return f"postgresql://{rest}" if sep and scheme.startswith("postgres") else url


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """An admin URL of a PostgreSQL server for this test session."""
    env = os.environ.get(ENV_URL)
    if env:
        yield env
        return
    try:
        cluster = start_cluster()
    except FileNotFoundError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"PostgreSQL is required on CI: {exc}")
        pytest.skip(str(exc))
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def pg_db_url(pg_url: str) -> Iterator[str]:
    """A fresh database for one test, dropped after it."""
    url = create_database(pg_url)
    try:
        yield url
    finally:
        drop_database(pg_url, url)


@pytest.fixture(scope="session")
def _pg_deferred_drops(pg_url: str) -> Iterator[list[str]]:
    """Databases of past tests waiting to be dropped (see ``pg_deferred_db_url``)."""
    pending: list[str] = []
    try:
        yield pending
    finally:
        while pending:
            drop_database(pg_url, pending.pop())


@pytest.fixture
def pg_deferred_db_url(pg_url: str, _pg_deferred_drops: list[str]) -> str:
    """A fresh database for one test, dropped when the next test asks for one."""
    while _pg_deferred_drops:
        drop_database(pg_url, _pg_deferred_drops.pop())
    url = create_database(pg_url)
    _pg_deferred_drops.append(url)
    return url
