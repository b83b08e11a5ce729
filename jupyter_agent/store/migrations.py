"""Versioned schema migrations of the agent database, the same on SQLite and PostgreSQL.

:data:`MIGRATIONS` is an ordered list; a step's ``apply`` runs inside one write
transaction together with the ``schema_version`` row that records it, so a step is either
wholly applied and recorded or not at all. The schema's version is
``MAX(schema_version.version)`` (0 for an empty database). Concurrent openers are
serialised: SQLite by ``BEGIN IMMEDIATE`` (the engine's write transactions), PostgreSQL by
a session advisory lock held around the whole check-and-migrate (:func:`migrate`); each
step re-reads the version under that lock.

A database newer than :data:`LATEST_VERSION` is refused (StoreError) rather than touched.

Opening an up-to-date database costs one query (:func:`is_current`: the recorded version,
read without a transaction of its own, no lock); the check-and-migrate above runs only
when that version differs from :data:`LATEST_VERSION` or cannot be read (no table yet).

The steps themselves, and the schema's history version by version, are in
:mod:`jupyter_agent.store.migration_steps`.

Steps are written in portable SQL (TEXT, INTEGER, BIGINT, BOOLEAN, DOUBLE PRECISION),
never derived from the current table models, so an old step keeps building the old schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Final

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from jupyter_agent.exceptions import StoreError
from jupyter_agent.store import migration_steps as steps
from jupyter_agent.store.engine import NO_BEGIN_OPTION

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "current_version",
    "is_current",
    "migrate",
]

# Any constant works; it only has to be the same in every process using the database.
_PG_LOCK_KEY: Final = 0x6A61_6773  # "jags"


@dataclass(frozen=True)
class Migration:
    """One schema step: ``version`` it brings the database to, and how."""

    version: int
    description: str
    apply: Callable[[Connection], None]


MIGRATIONS: Final[tuple[Migration, ...]] = (
    Migration(1, "chats, agent_turns, agent_runs, schema_version", steps.v1),
    Migration(2, "end_cause on turns and runs (backfilled); index on run status", steps.v2),
    Migration(3, "agent_mail: the durable mailbox", steps.v3),
    Migration(4, "agent_chunks: summaries of chunks of a chat's turns", steps.v4),
    Migration(5, "memories, the recall index (full-text), document frequencies, vectors", steps.v5),
    Migration(6, "deployed programs, their activations; the agent of chats and runs", steps.v6),
    Migration(7, "agent_proposals: notebook edits the agent proposed", steps.v7),
    Migration(8, "deployed versions the built-in toolcaller@v6 shadows, renumbered", steps.v8),
    Migration(9, "owner on chats and runs (indexed); agent_settings: tiers per owner", steps.v9),
    Migration(10, "deployed versions the built-in toolcaller@v7 shadows, renumbered", steps.v10),
    Migration(11, "the recall docs of turns the demo model answered, removed", steps.v11),
    Migration(12, "deployed versions the built-in toolcaller@v8 shadows, renumbered", steps.v12),
    Migration(13, "forked_from on chats: the chat and turn a fork started from", steps.v13),
    Migration(14, "model on chats: the model a chat answers with, over its agent's", steps.v14),
    Migration(15, "rerun_of on agent_runs: the run a rerun re-ran", steps.v15),
    Migration(16, "agent_recall_pending: stored turns waiting for their recall doc", steps.v16),
)
LATEST_VERSION: Final = MIGRATIONS[-1].version

_CREATE_VERSION_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied TEXT NOT NULL)"
)


def current_version(conn: Connection) -> int:
    """The schema version recorded in ``schema_version`` (0 when there is none yet).

    On PostgreSQL the table is created only when missing: a per-user role (row-level
    security, docs/jupyterhub.md) may not create tables, even ``IF NOT EXISTS``.
    """
    pg = conn.dialect.name == "postgresql"
    if not pg or conn.execute(text("SELECT to_regclass('schema_version')")).scalar() is None:
        conn.execute(text(_CREATE_VERSION_TABLE))
    found = conn.execute(text("SELECT MAX(version) FROM schema_version")).scalar()
    return int(found or 0)


def is_current(engine: Engine) -> bool:
    """Whether the database is at :data:`LATEST_VERSION`: one ``SELECT`` of the recorded
    version (the whole cost of opening an up-to-date database). False when it is older,
    newer (:func:`migrate` refuses that) or has no ``schema_version`` table yet."""
    try:
        with engine.connect().execution_options(**{NO_BEGIN_OPTION: True}) as conn:
            found = conn.execute(text("SELECT MAX(version) FROM schema_version")).scalar()
    except SQLAlchemyError:  # no table yet (a new database), or not readable: migrate says
        return False
    return found == LATEST_VERSION


def migrate(engine: Engine, *, now: Callable[[], str] | None = None) -> int:
    """Bring the database to :data:`LATEST_VERSION`; return the version it started at.

    ``engine`` must be the write view (``BEGIN IMMEDIATE`` on SQLite). Raises StoreError
    when the database's version is newer than this code knows.

    Several processes opening one database at once migrate it exactly once. On PostgreSQL
    the whole check-and-migrate holds a session advisory lock (:data:`_PG_LOCK_KEY`), so a
    second opener waits until the first has applied every step, then finds nothing to do;
    each step is still its own transaction (a failed step leaves the earlier ones
    recorded). On SQLite each step's ``BEGIN IMMEDIATE`` takes the write lock before the
    version is read, which serialises the openers step by step (the version is re-read
    under that lock, so a step another process applied meanwhile is skipped).
    """
    clock = now or _utc_now
    with engine.connect() as conn:
        if conn.dialect.name != "postgresql":
            return _migrate_steps(conn, clock)
        # Session-level (not per transaction): held across every step's commit.
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_LOCK_KEY})
        conn.commit()
        try:
            return _migrate_steps(conn, clock)
        finally:
            if not conn.invalidated:
                if conn.in_transaction():
                    conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_LOCK_KEY})
                conn.commit()


def _migrate_steps(conn: Connection, clock: Callable[[], str]) -> int:
    started_at: int | None = None
    for step in MIGRATIONS:
        with conn.begin():
            version = current_version(conn)
            if started_at is None:
                started_at = version
                if version > LATEST_VERSION:
                    raise StoreError(
                        f"the database's schema version {version} is newer than this "
                        f"jupyter-agent supports ({LATEST_VERSION}): upgrade jupyter-agent"
                    )
            if step.version <= version:
                continue
            step.apply(conn)
            conn.execute(
                text("INSERT INTO schema_version (version, applied) VALUES (:v, :t)"),
                {"v": step.version, "t": clock()},
            )
    return started_at or 0


def _utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
