"""The Store's run methods: run summaries stored, read, listed a page at a time, pruned.

A mixin of :class:`~jupyter_agent.store.repo.Store`, which provides its connections and its
prepared run upsert. ``list_runs`` pages newest first by ``(started, run_id)``; the cursor
is opaque text. Its ``program`` filter is a name (every version: ``toolcaller`` matches
``toolcaller@v1`` and ``toolcaller@v2``, not ``toolcaller2@v1``) or ``name@vN`` (that
version only), matched case-sensitively on both backends
(:func:`~jupyter_agent.store.filters.program_filter`). ``prune_runs`` never deletes a run
whose status is still ``running``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Final

from sqlalchemy import and_, delete, or_
from sqlalchemy import select as core_select

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.store.filters import program_filter
from jupyter_agent.store.rows import RUN_COLUMNS, decode_cursor, encode_cursor, run_values, summary
from jupyter_agent.store.tables import RUNS

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.sql.dml import Insert

__all__ = ["MAX_PAGE", "RunMethods"]

#: The largest ``limit`` :meth:`RunMethods.list_runs` accepts.
MAX_PAGE: Final = 1000


class RunMethods:
    """Run summaries (see the module docstring)."""

    if TYPE_CHECKING:
        _upsert_run_sql: Insert

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    def upsert_run(self, summary: RunSummary) -> None:
        """Insert the run's summary, or replace every field of the stored one."""
        with self._write("cannot store the run") as conn:
            conn.execute(self._upsert_run_sql, run_values(summary))

    def get_run(self, run_id: str) -> RunSummary | None:
        """The run's summary, or None."""
        query = core_select(*RUN_COLUMNS).where(RUNS.c.run_id == run_id)
        with self._read("cannot read the run") as conn:
            row = conn.execute(query).first()
        return summary(row) if row is not None else None

    def list_runs(
        self,
        *,
        program: str | None = None,
        limit: int = 50,
        before: str | None = None,
        owner: str | None = None,
    ) -> tuple[list[RunSummary], str | None]:
        """One page of runs, newest first (by ``started``, then ``run_id``).

        ``owner``: only that owner's runs (None: every owner's). ``program``: a name
        (every version) or ``name@vN`` (one version), see
        :func:`~jupyter_agent.store.filters.program_filter`. ``before`` is the ``next``
        cursor of the previous page; ``next`` is None on the last page. Raises ValueError
        for a ``limit`` outside 1..MAX_PAGE or a malformed cursor.
        """
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        started, run_id = RUNS.c.started, RUNS.c.run_id
        query = core_select(*RUN_COLUMNS)
        if owner is not None:
            query = query.where(RUNS.c.owner == owner)
        if program is not None:
            query = query.where(program_filter(RUNS.c.program, program))
        if before is not None:
            at, last = decode_cursor(before)
            # started <= at first, so the index range scan starts at the cursor.
            query = query.where(
                started <= at, or_(started < at, and_(started == at, run_id < last))
            )
        query = query.order_by(started.desc(), run_id.desc()).limit(limit + 1)
        with self._read("cannot list runs") as conn:
            rows = [summary(row) for row in conn.execute(query)]
        if len(rows) <= limit:
            return rows, None
        page = rows[:limit]
        return page, encode_cursor(page[-1].started, page[-1].run_id)

    def runs_with_status(self, status: str) -> list[RunSummary]:
        """Every run with this status, oldest first (recovery asks for ``running``)."""
        query = (
            core_select(*RUN_COLUMNS)
            .where(RUNS.c.status == status)
            .order_by(RUNS.c.started, RUNS.c.run_id)
        )
        with self._read("cannot list runs") as conn:
            return [summary(row) for row in conn.execute(query)]

    def prune_runs(self, *, older_than: str) -> list[str]:
        """Delete the summaries of runs started before ``older_than`` (not ``running`` ones).

        Returns the deleted run ids, so the caller can delete their trace files.
        """
        condition = and_(RUNS.c.started < older_than, RUNS.c.status != "running")
        with self._write("cannot prune runs") as conn:
            ids = list(conn.execute(core_select(RUNS.c.run_id).where(condition)).scalars())
            if ids:
                conn.execute(delete(RUNS).where(RUNS.c.run_id.in_(ids)))
            return ids
