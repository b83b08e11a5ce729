"""The Store's settings methods: each owner's tier overrides.

A mixin of :class:`~jupyter_agent.store.repo.Store`, like
:class:`~jupyter_agent.store.program_store.ProgramMethods`.

One ``agent_settings`` row per owner (migration v9): ``tiers`` is the JSON object
``{tier name: tier}`` the person set from the browser (validated by
:mod:`jupyter_agent.runtime.settings.overrides` before it is stored; references, never key values),
``updated`` the ISO time of the last change. No row: the owner overrides nothing.
:meth:`SettingsMethods.change_owner_tiers` reads, changes and writes the object in one
transaction holding the row, so two servers changing one owner's settings at once lose
neither change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy import select as core_select
from sqlalchemy import update

from jupyter_agent.store.engine import dialect_module
from jupyter_agent.store.tables import SETTINGS

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["SettingsMethods"]


class SettingsMethods:
    """Each owner's tier overrides (see the module docstring)."""

    if TYPE_CHECKING:
        _sqlite: bool

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    def owner_tiers(self, owner: str) -> dict[str, dict[str, Any]] | None:
        """``owner``'s stored overrides ``{tier: tier}``, or None when it has no row.

        A row whose JSON is not an object of objects reads as no overrides (``{}``): the
        admin's tiers apply, and the next change from the browser replaces it.
        """
        query = core_select(SETTINGS.c.tiers).where(SETTINGS.c.owner == owner)
        with self._read("cannot read the settings") as conn:
            found = conn.execute(query).scalar()
        return None if found is None else _parse(found)

    def change_owner_tiers(
        self,
        owner: str,
        change: Callable[[dict[str, dict[str, Any]]], dict[str, dict[str, Any]]],
        *,
        now: str,
    ) -> dict[str, dict[str, Any]]:
        """Read ``owner``'s overrides, store ``change(them)``, return what was stored: one
        transaction holding the row (SQLite's write lock; PostgreSQL's row lock after an
        insert-if-missing), so two changes at once (two servers) each see the other's and
        none is lost."""
        empty = {"owner": owner, "tiers": "{}", "updated": now}
        dialect = dialect_module("sqlite" if self._sqlite else "postgresql")
        ensure = dialect.insert(SETTINGS).values(**empty).on_conflict_do_nothing()
        read = core_select(SETTINGS.c.tiers).where(SETTINGS.c.owner == owner)
        if not self._sqlite:
            read = read.with_for_update()
        with self._write("cannot store the settings") as conn:
            conn.execute(ensure)
            tiers = change(_parse(conn.execute(read).scalar()))
            conn.execute(
                update(SETTINGS)
                .where(SETTINGS.c.owner == owner)
                .values(tiers=json.dumps(tiers, sort_keys=True), updated=now)
            )
        return tiers

    def add_owner_tiers(self, owner: str, tiers: dict[str, dict[str, Any]], *, now: str) -> bool:
        """Store ``tiers`` for ``owner`` only if it has no row yet; True when stored.

        The one-time import of a settings file kept before owners: a row written since
        (by this or another server) is never overwritten by the file.
        """
        values = {"owner": owner, "tiers": json.dumps(tiers, sort_keys=True), "updated": now}
        dialect = dialect_module("sqlite" if self._sqlite else "postgresql")
        statement = dialect.insert(SETTINGS).values(**values).on_conflict_do_nothing()
        with self._write("cannot store the settings") as conn:
            result = conn.execute(statement)
        return bool(result.rowcount)


def _parse(found: Any) -> dict[str, dict[str, Any]]:
    """A row's ``tiers`` JSON as ``{tier: tier}`` (``{}`` for none or a malformed one)."""
    try:
        data = json.loads(found) if isinstance(found, str) else None
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}
