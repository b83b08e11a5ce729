"""The Store's program methods: deployed versions and which one each layer runs.

A mixin of :class:`~jupyter_agent.store.repo.Store`, like
:class:`~jupyter_agent.store.memory.store.MemoryMethods`.

- A deployed version (:class:`ProgramRow`) is immutable: :meth:`ProgramMethods.add_program`
  inserts it with the family's next version number (after every stored one and every
  built-in one), or answers the stored row whose files hash the same. Two deploys of one
  family at once (two servers on one PostgreSQL) never get the same number: the insert runs
  in a transaction and is retried when it meets the unique constraint (the other one won).
  A package upgrade that makes a deployed number built in moves that row to a free number
  (migration v7, :mod:`~jupyter_agent.store.program_renumber`);
  :meth:`ProgramMethods.program_by_hash` finds it under its recorded hash.
- An activation (:class:`Activation`) says which version a layer runs: ``agent`` "" is the
  server-wide layer, any other name that agent's override; ``version`` None clears the
  layer's override. The newest row (by ``id``) of a layer and family wins; rows are never
  updated, so ``MAX(id)`` (:meth:`ProgramMethods.activation_mark`) changes exactly when an
  activation was written: the registry's cheap "did anything change".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import delete, func
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError

from jupyter_agent.exceptions import NotFound, StoreError
from jupyter_agent.store.chat_store import read_chat
from jupyter_agent.store.rows import Chat
from jupyter_agent.store.tables import CHATS, PROGRAM_ACTIVATIONS, PROGRAMS, RUNS

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["Activation", "ProgramMethods", "ProgramRow"]

#: How many times a deploy retries after losing the race for a version number.
_ATTEMPTS: Final = 8
#: The newest activation's id (:meth:`ProgramMethods.activation_mark`).
_MARK: Final = core_select(func.max(PROGRAM_ACTIVATIONS.c.id))


def _mark(conn: Connection) -> int:
    return int(conn.execute(_MARK).scalar() or 0)


@dataclass(frozen=True, kw_only=True)
class ProgramRow:
    """One deployed version: ``name`` (the family), ``version`` (0 in a row not stored
    yet: :meth:`ProgramMethods.add_program` assigns it), ``hash`` (the full sha256 hex of
    its files), ``files`` (``{path: text}``; empty when listed without them), ``entry``
    (the entry module), ``uses`` (``name@vN`` of the sub-programs), ``description``,
    ``created`` (ISO time), ``created_by`` (who deployed it)."""

    name: str
    version: int = 0
    hash: str
    files: Mapping[str, str] = field(default_factory=dict)
    entry: str = "program"
    uses: tuple[str, ...] = ()
    description: str = ""
    created: str = ""
    created_by: str = ""


@dataclass(frozen=True, kw_only=True)
class Activation:
    """One activation row: ``agent`` ("" = server-wide), ``name``, ``version`` (None: the
    layer's override cleared), ``at``, ``by``; ``id`` orders them (newest wins)."""

    id: int
    agent: str
    name: str
    version: int | None
    at: str
    by: str


def _row(values: Any, *, files: bool = True) -> ProgramRow:
    return ProgramRow(
        name=values["name"],
        version=int(values["version"]),
        hash=values["hash"],
        files=json.loads(values["files"]) if files else {},
        entry=values["entry"],
        uses=tuple(json.loads(values["uses"])),
        description=values["description"],
        created=values["created"],
        created_by=values["created_by"],
    )


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ProgramMethods:
    """Deployed programs and activations; the Store provides its connections."""

    if TYPE_CHECKING:

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    # --- versions ------------------------------------------------------------------------

    def add_program(self, row: ProgramRow, *, after: int | None = None) -> ProgramRow:
        """Store a new version of ``row.name`` and return it as stored: its version is one
        more than the highest stored one and than ``after`` (default: the family's highest
        built-in version), its ``created`` now when empty. When a stored version of the
        family has the same ``hash``, nothing is written and that row is returned.
        Race-safe (retried on a unique violation); StoreError when it keeps losing."""
        if after is None:
            from jupyter_agent.programs.builtin import latest_builtin  # no import cycle

            after = latest_builtin(row.name)
        for _attempt in range(_ATTEMPTS):
            try:
                return self._insert_program(row, after)
            except StoreError as exc:
                if not isinstance(exc.__cause__, IntegrityError):
                    raise
        raise StoreError(f"cannot store {row.name}: the version number stayed taken")

    def _insert_program(self, row: ProgramRow, after: int) -> ProgramRow:
        with self._write("cannot store the program") as conn:
            same = conn.execute(
                core_select(PROGRAMS).where(
                    PROGRAMS.c.name == row.name, PROGRAMS.c.hash == row.hash
                )
            ).first()
            if same is not None:
                return _row(same._mapping)
            top = conn.execute(
                core_select(func.max(PROGRAMS.c.version)).where(PROGRAMS.c.name == row.name)
            ).scalar()
            # A number an activation names stays taken, even after its row was pruned.
            activated = PROGRAM_ACTIVATIONS.c
            named = conn.execute(
                core_select(func.max(activated.version)).where(activated.name == row.name)
            ).scalar()
            version = max(int(top or 0), int(named or 0), after) + 1
            stored = ProgramRow(
                name=row.name,
                version=version,
                hash=row.hash,
                files=dict(row.files),
                entry=row.entry,
                uses=tuple(row.uses),
                description=row.description,
                created=row.created or _now(),
                created_by=row.created_by,
            )
            conn.execute(
                PROGRAMS.insert(),
                {
                    "name": stored.name,
                    "version": stored.version,
                    "hash": stored.hash,
                    "files": json.dumps(dict(stored.files), ensure_ascii=False, sort_keys=True),
                    "entry": stored.entry,
                    "uses": json.dumps(list(stored.uses)),
                    "description": stored.description,
                    "created": stored.created,
                    "created_by": stored.created_by,
                },
            )
            return stored

    def program(self, name: str, version: int) -> ProgramRow | None:
        """The stored version (with its files), or None."""
        query = core_select(PROGRAMS).where(PROGRAMS.c.name == name, PROGRAMS.c.version == version)
        with self._read("cannot read the program") as conn:
            found = conn.execute(query).first()
        return _row(found._mapping) if found is not None else None

    def program_by_hash(self, name: str, hash_prefix: str) -> ProgramRow | None:
        """The stored version of ``name`` whose full hash starts with ``hash_prefix`` (a
        recorded ref's hex, at least 6 digits), with its files; None when none or more
        than one matches."""
        if len(hash_prefix) < 6 or any(c not in "0123456789abcdef" for c in hash_prefix):
            return None
        query = core_select(PROGRAMS).where(
            PROGRAMS.c.name == name, PROGRAMS.c.hash.startswith(hash_prefix)
        )
        with self._read("cannot read the program") as conn:
            found = conn.execute(query.limit(2)).all()
        return _row(found[0]._mapping) if len(found) == 1 else None

    def programs(self, name: str | None = None, *, files: bool = False) -> list[ProgramRow]:
        """Every stored version (of ``name``), by name then version; ``files`` empty
        unless asked for."""
        columns = [c for c in PROGRAMS.c if files or c.name != "files"]
        query = core_select(*columns).order_by(PROGRAMS.c.name, PROGRAMS.c.version)
        if name is not None:
            query = query.where(PROGRAMS.c.name == name)
        with self._read("cannot list programs") as conn:
            rows = conn.execute(query).all()
        return [_row(r._mapping, files=files) for r in rows]

    def delete_program(self, name: str, version: int) -> bool:
        """Delete a stored version (``trace prune``: no run names it, no layer runs it;
        the caller checks). False when there was none."""
        statement = delete(PROGRAMS).where(PROGRAMS.c.name == name, PROGRAMS.c.version == version)
        with self._write("cannot delete the program") as conn:
            return bool(conn.execute(statement).rowcount)

    # --- activations ---------------------------------------------------------------------

    def activate(
        self, agent: str, name: str, version: int | None, by: str = "", *, now: str = ""
    ) -> None:
        """Record that layer ``agent`` ("" = server-wide) runs ``name@v{version}`` from now
        on (None: clear the layer's override). The caller checks that the version exists."""
        values = {"agent": agent, "name": name, "version": version, "at": now or _now()}
        with self._write("cannot activate the program") as conn:
            conn.execute(PROGRAM_ACTIVATIONS.insert(), {**values, "by": by})

    def activations(self, agent: str | None = None, name: str | None = None) -> list[Activation]:
        """The activation rows (of layer ``agent``, of family ``name``), oldest first."""
        query = core_select(PROGRAM_ACTIVATIONS).order_by(PROGRAM_ACTIVATIONS.c.id)
        if agent is not None:
            query = query.where(PROGRAM_ACTIVATIONS.c.agent == agent)
        if name is not None:
            query = query.where(PROGRAM_ACTIVATIONS.c.name == name)
        with self._read("cannot read the activations") as conn:
            rows = conn.execute(query).all()
        return [
            Activation(
                id=int(r.id), agent=r.agent, name=r.name, version=r.version, at=r.at, by=r.by
            )
            for r in rows
        ]

    def activation_mark(self) -> int:
        """The newest activation's id (0 when none): changes exactly when one is written."""
        with self._read("cannot read the activations") as conn:
            return _mark(conn)

    def chat_marked(self, chat_id: str) -> tuple[Chat | None, int]:
        """The chat (None: no such chat) and :meth:`activation_mark`, in one read: what a
        message's send reads before its write (the run it starts resolves its program with
        the mark, reading nothing more when its registry is current)."""
        with self._read("cannot read the chat") as conn:
            return read_chat(conn, chat_id), _mark(conn)

    # --- what runs and chats name --------------------------------------------------------

    def chat_agent(self, chat_id: str) -> str:
        """The agent the chat talks to; NotFound when there is no such chat."""
        query = core_select(CHATS.c.agent).where(CHATS.c.id == chat_id)
        with self._read("cannot read the chat") as conn:
            found = conn.execute(query).scalar()
        if found is None:
            raise NotFound(f"no chat {chat_id}")
        return str(found)

    def named_programs(self) -> set[str]:
        """Every program reference any stored run names (its ``program`` and each of its
        ``programs``): what ``trace prune`` must keep."""
        query = core_select(RUNS.c.program, RUNS.c.programs).distinct()
        names: set[str] = set()
        with self._read("cannot list the runs' programs") as conn:
            for program, programs in conn.execute(query):
                names.add(program)
                try:
                    listed = json.loads(programs or "[]")
                except ValueError:
                    continue
                if isinstance(listed, list):
                    names.update(p for p in listed if isinstance(p, str))
        return names
