"""The Store's proposal methods: the notebook edits the agent proposed.

A mixin of :class:`~jupyter_agent.store.repo.Store`, like
:class:`~jupyter_agent.store.program_store.ProgramMethods`; the table is
``agent_proposals`` (:data:`~jupyter_agent.store.tables.PROPOSALS`).

- Every read takes ``owner`` and never answers another owner's row: another owner's id
  answers None, as a missing one does.
- A proposal's ``status`` moves only forward, and only by a compare-and-set
  (:meth:`ProposalMethods.finish_proposal` names the status it expects): two decisions at
  once (two tabs, the REST call and an auto-apply) cannot both win; the loser gets False.
- ``edits``, ``applied`` and ``undo`` are JSON text in the table, decoded lists here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select as core_select
from sqlalchemy import update

from jupyter_agent.store.rows import valid
from jupyter_agent.store.tables import PROPOSALS

if TYPE_CHECKING:
    from sqlalchemy import Connection

__all__ = ["STATUSES", "ProposalMethods", "ProposalRow"]

#: A proposal's statuses: ``pending`` until decided, then one of the outcomes.
STATUSES: Final = ("pending", "applied", "partly", "discarded", "conflict", "undone")


@dataclass(frozen=True, kw_only=True)
class ProposalRow:
    """One proposal as stored: ``id`` (``p`` + a ULID, lower case), ``owner``, the chat,
    run and agent cell that proposed it, ``path`` (a contents path), ``edits`` (edit JSON,
    :mod:`jupyter_agent.core.notebook.proposals`), ``status`` (:data:`STATUSES`), ``applied`` (the
    cell ids of the edits applied), ``undo`` (the inverse edits' JSON, ``[]`` until
    applied), ``via`` (``""``, ``contents`` or ``live``), ``created``, ``updated``."""

    id: str
    owner: str = ""
    chat_id: str
    run_id: str
    cell_id: str = ""
    path: str
    edits: list[dict[str, Any]] = field(default_factory=list)
    status: str = "pending"
    applied: list[str] = field(default_factory=list)
    undo: list[dict[str, Any]] = field(default_factory=list)
    via: str = ""
    created: str = ""
    updated: str = ""

    def to_json(self) -> dict[str, Any]:
        """``GET agent/proposals``' row JSON (``owner`` and the inverse edits stay
        server-side; ``undoable`` says whether an undo may be asked)."""
        return {
            "proposal_id": self.id,
            "chat_id": self.chat_id,
            "run_id": self.run_id,
            "cell_id": self.cell_id,
            "path": self.path,
            "edits": self.edits,
            "status": self.status,
            "applied": self.applied,
            "via": self.via,
            "undoable": self.status in ("applied", "partly"),
            "created": self.created,
            "updated": self.updated,
        }

    def turn_json(self) -> dict[str, Any]:
        """What a turn record's ``proposals`` holds: ``{proposal_id, path, status,
        applied}``."""
        return {
            "proposal_id": self.id,
            "path": self.path,
            "status": self.status,
            "applied": self.applied,
        }


def _dump(value: Any) -> str:
    return valid(json.dumps(value, ensure_ascii=False), "a proposal")


def _row(values: Any) -> ProposalRow:
    return ProposalRow(
        id=values["id"],
        owner=values["owner"],
        chat_id=values["chat_id"],
        run_id=values["run_id"],
        cell_id=values["cell_id"],
        path=values["path"],
        edits=json.loads(values["edits"]),
        status=values["status"],
        applied=json.loads(values["applied"]),
        undo=json.loads(values["undo"]),
        via=values["via"],
        created=values["created"],
        updated=values["updated"],
    )


class ProposalMethods:
    """Proposals; the Store provides its connections."""

    if TYPE_CHECKING:

        def _read(self, what: str) -> AbstractContextManager[Connection]: ...
        def _write(self, what: str) -> AbstractContextManager[Connection]: ...

    def add_proposal(self, row: ProposalRow) -> ProposalRow:
        """Store a new proposal (its ``created``/``updated`` as given); a duplicate id is a
        StoreError."""
        values = {
            "id": row.id,
            "owner": row.owner,
            "chat_id": row.chat_id,
            "run_id": row.run_id,
            "cell_id": row.cell_id,
            "path": valid(row.path, "a proposal path"),
            "edits": _dump(row.edits),
            "status": row.status,
            "applied": _dump(row.applied),
            "undo": _dump(row.undo),
            "via": row.via,
            "created": row.created,
            "updated": row.updated or row.created,
        }
        with self._write("cannot store the proposal") as conn:
            conn.execute(PROPOSALS.insert(), values)
        return _row(values)

    def get_proposal(self, proposal_id: str, *, owner: str = "") -> ProposalRow | None:
        """The owner's proposal, or None (missing, or another owner's)."""
        query = core_select(PROPOSALS).where(
            PROPOSALS.c.id == proposal_id, PROPOSALS.c.owner == owner
        )
        with self._read("cannot read the proposal") as conn:
            found = conn.execute(query).first()
        return _row(found._mapping) if found is not None else None

    def list_proposals(
        self,
        *,
        owner: str = "",
        chat_id: str | None = None,
        run_ids: Sequence[str] | None = None,
    ) -> list[ProposalRow]:
        """The owner's proposals (of one chat, of these runs), oldest first."""
        query = core_select(PROPOSALS).where(PROPOSALS.c.owner == owner)
        if chat_id is not None:
            query = query.where(PROPOSALS.c.chat_id == chat_id)
        if run_ids is not None:
            if not run_ids:
                return []
            query = query.where(PROPOSALS.c.run_id.in_(list(run_ids)))
        query = query.order_by(PROPOSALS.c.created, PROPOSALS.c.id)
        with self._read("cannot list the proposals") as conn:
            rows = conn.execute(query).all()
        return [_row(r._mapping) for r in rows]

    def finish_proposal(
        self,
        proposal_id: str,
        *,
        owner: str = "",
        expect: Sequence[str],
        status: str,
        now: str,
        applied: Sequence[str] | None = None,
        undo: Sequence[Any] | None = None,
        via: str | None = None,
    ) -> bool:
        """Set the status (and ``applied``, ``undo``, ``via`` when given) of the owner's
        proposal if its status is one of ``expect``; False when it was not (decided
        meanwhile, missing, another owner's)."""
        if status not in STATUSES:
            raise ValueError(f"unknown proposal status {status!r}")
        values: dict[str, Any] = {"status": status, "updated": now}
        if applied is not None:
            values["applied"] = _dump(list(applied))
        if undo is not None:
            values["undo"] = _dump(list(undo))
        if via is not None:
            values["via"] = via
        statement = (
            update(PROPOSALS)
            .where(
                PROPOSALS.c.id == proposal_id,
                PROPOSALS.c.owner == owner,
                PROPOSALS.c.status.in_(list(expect)),
            )
            .values(**values)
        )
        with self._write("cannot update the proposal") as conn:
            return bool(conn.execute(statement).rowcount)
