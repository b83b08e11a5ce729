"""The proposal service: store the agent's notebook edits, apply or discard them, undo.

:class:`ProposalService` is what the notebook app (``notebook.propose``) and the REST
routes call. Contracts:

- :meth:`ProposalService.create` checks the path (:func:`~.safe_paths.notebook_path`:
  ``PathRefused``) and the edits (:func:`~jupyter_agent.core.notebook.edits.normalize_edits`
  against the cells the model read: ``BadRequest`` ``bad_edits``), stores the proposal
  (``pending``) and publishes ``proposal`` on its chat. Nothing in the notebook changes.
- :meth:`ProposalService.decide` applies all the edits, some (``cells``: their cell ids;
  an id no edit has is ``bad_cells``) or none (discard), once: a decided proposal is
  ``ProposalDecided``, another owner's or a missing one ``NotFound``. Apply re-reads the
  notebook *now*: the live document when its room is open (:mod:`.live_docs`), else the
  file through the contents manager. It checks the edits' bases against it (a changed or
  gone cell: ``ProposalConflict`` naming the cells, the proposal ends ``conflict``, nothing
  is written), applies them, checks that every cell is still there but the deleted ones
  and validates the result with nbformat, then writes: the live document in one
  transaction (its room saves the file), or the file, refused as a conflict if its
  ``last_modified`` changed since the read. The outcome (``applied``, ``partly``,
  ``discarded``, ``conflict``) is stored with the applied cell ids and the inverse edits,
  published as ``proposal_end`` and told to the model through ``notify(chat_id, text)``
  (a notice its next drain reads).
- :meth:`ProposalService.undo` applies the stored inverse edits with the same checks (the
  cells as apply left them: a later change is a conflict, nothing written, the proposal
  stays applied); outcome ``undone``.
- Apply and undo resolve the stored path again (``PathRefused``, the proposal unchanged):
  the agent's kernel shares the file system, and a notebook swapped for a symlink out of
  the root since the proposal is never written through. The file is read and written at
  the resolved target, confirmed unchanged right before each (:mod:`.safe_paths`).
- One apply at a time per path (an asyncio lock): two decisions on one notebook never
  interleave their read and write.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import inspect
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import nbformat
from jupyter_core.utils import ensure_async

from jupyter_agent.core.events.types import ProposalEnd, ProposalEvent, ProposalOutcome
from jupyter_agent.core.notebook.edits import normalize_edits
from jupyter_agent.core.notebook.proposals import (
    Edit,
    apply_edits,
    edits_from_json,
    edits_json,
    seeded_ids,
    select_edits,
    with_cell_ids,
)
from jupyter_agent.exceptions import (
    AgentError,
    BadRequest,
    NotFound,
    ProposalConflict,
    ProposalDecided,
)
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.ids import now_iso, ulid
from jupyter_agent.runtime.notebook.contents import Contents, shown
from jupyter_agent.runtime.notebook.live_docs import LiveDocs, LiveNotebook
from jupyter_agent.runtime.notebook.safe_paths import SafePath, notebook_path
from jupyter_agent.store.proposal_store import ProposalRow
from jupyter_agent.store.repo import Store

__all__ = ["Notify", "ProposalService"]

log = logging.getLogger(__name__)

#: How the model is told an outcome: ``notify(chat_id, text)`` (sync or async; its answer is
#: ignored): the run manager's, which queues a durable notice.
Notify = Callable[[str, str], Any]
_ATTEMPTS: Final = 3


def _plain(value: Any) -> Any:
    """A NotebookNode (or any JSON-like value) as plain dicts and lists."""
    return json.loads(json.dumps(value))


class _Read:
    """A notebook as read for an apply: its dict, and where it came from."""

    def __init__(
        self, nb: dict[str, Any], *, live: LiveNotebook | None, last_modified: Any
    ) -> None:
        self.nb = nb
        self.live = live
        self.last_modified = last_modified
        #: The live document's state vector when it was read (b"" for a file).
        self.state = live.state() if live is not None else b""


def _checked(nb: Mapping[str, Any], chosen: Sequence[Edit], edits: Sequence[Edit]) -> Any:
    """The notebook with the edits applied, its inverse edits; every cell kept but the
    deleted ones (else AgentError: a bug, never a truncated save); valid nbformat (else
    BadRequest ``invalid_notebook``). Pure CPU: run it in a thread."""
    cells = list(nb.get("cells") or [])
    new_cells, inverse = apply_edits(cells, chosen, all_edits=edits)
    expect = Counter(str(c.get("id")) for c in cells)
    for edit in chosen:
        if edit.op == "delete":
            expect[edit.cell_id] -= 1
        elif edit.op == "insert":
            expect[edit.cell_id] += 1
    if Counter(str(c.get("id")) for c in new_cells) != +expect:
        raise AgentError("refusing to save: the edited notebook lost cells it should keep")
    new_nb = {**copy.deepcopy(dict(nb)), "cells": new_cells}
    try:
        nbformat.validate(nbformat.from_dict(new_nb))  # type: ignore[no-untyped-call]
    except nbformat.ValidationError as exc:
        first = str(exc).strip().splitlines()[0][:300]
        raise BadRequest(
            f"the edited notebook would not be valid nbformat ({first}): nothing was written",
            reason="invalid_notebook",
        ) from None
    return new_nb, inverse


class ProposalService:
    """Proposals over the store, the contents manager and the live documents (see the
    module docstring). ``notify`` may be set after construction (the run manager's)."""

    def __init__(
        self,
        *,
        store: Store,
        contents: Contents,
        events: EventBus,
        live: LiveDocs,
        root_dir: str,
        notify: Notify | None = None,
    ) -> None:
        self.store = store
        self.contents = contents
        self.events = events
        self.live = live
        self.root_dir = root_dir
        self.notify = notify
        self._locks: dict[str, asyncio.Lock] = {}

    # --- reading -------------------------------------------------------------------------

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """The notebook at ``path`` as an nbformat dict whose cells all carry ids: the live
        document when its room is open, else the file. ``PathRefused``; ``NotFound`` when
        there is no such notebook."""
        return (await self._read(notebook_path(path, self.root_dir))).nb

    async def _read(self, safe: SafePath) -> _Read:
        path = safe.path
        live = await self.live.get(path)
        if live is not None:
            return _Read(live.notebook(), live=live, last_modified=None)
        manager = self.contents.writer()
        try:
            model = await ensure_async(manager.get(safe.confirm(), content=True, type="notebook"))
            safe.confirm()  # read from where the path led: else the content is dropped
        except Exception as exc:  # the contents manager's 404/400 (tornado HTTPError)
            status = getattr(exc, "status_code", None)
            if status == 404:
                raise NotFound(f"no notebook {shown(path)}") from None
            if isinstance(status, int) and 400 <= status < 500:
                raise BadRequest(
                    f"cannot read {shown(path)}: {getattr(exc, 'log_message', '') or exc}",
                    reason="bad_path",
                ) from None
            raise
        nb = await asyncio.to_thread(lambda: with_cell_ids(_plain(model["content"])))
        return _Read(nb, live=None, last_modified=model.get("last_modified"))

    # --- the life of a proposal ----------------------------------------------------------

    async def create(
        self,
        *,
        owner: str,
        chat_id: str,
        run_id: str,
        cell_id: str,
        path: str,
        edits: Any,
        cells_at_read: Sequence[Mapping[str, Any]],
        id_seed: str | None = None,
    ) -> ProposalRow:
        """Store the model's ``edits`` of ``path`` as a pending proposal and publish it
        (see the module docstring); the stored row."""
        clean = notebook_path(path, self.root_dir).path
        proposal_id = "p" + ulid().lower()
        new_id = seeded_ids(id_seed or proposal_id)
        # Off the event loop: the checks diff whole cell sources (difflib), however big.
        normalized = await asyncio.to_thread(
            lambda: normalize_edits(cells_at_read, edits, new_id=new_id)
        )
        now = now_iso()
        row = ProposalRow(
            id=proposal_id,
            owner=owner,
            chat_id=chat_id,
            run_id=run_id,
            cell_id=cell_id,
            path=clean,
            edits=edits_json(normalized),
            created=now,
            updated=now,
        )
        stored = await asyncio.to_thread(self.store.add_proposal, row)
        event = ProposalEvent(proposal_id=proposal_id, path=clean, edits=tuple(stored.edits))
        self.events.publish(chat_id, run_id, event)
        return stored

    async def get(self, proposal_id: str, *, owner: str) -> ProposalRow:
        """The owner's proposal; ``NotFound`` otherwise."""
        row = await asyncio.to_thread(lambda: self.store.get_proposal(proposal_id, owner=owner))
        if row is None:
            raise NotFound(f"no proposal {proposal_id!r}")
        return row

    async def list(self, *, owner: str, chat_id: str | None = None) -> builtins.list[ProposalRow]:
        """The owner's proposals (of one chat), oldest first."""
        return await asyncio.to_thread(
            lambda: self.store.list_proposals(owner=owner, chat_id=chat_id)
        )

    async def decide(
        self,
        proposal_id: str,
        *,
        owner: str,
        apply: bool,
        cells: Sequence[str] | None = None,
        run_id: str | None = None,
        by: str = "the person",
    ) -> ProposalOutcome:
        """Apply the proposal (all of it, or the edits of ``cells``) or discard it; the
        outcome (see the module docstring). ``run_id``: the run the route names (another
        run's proposal is ``NotFound``). ``by``: who decided, as the model's notice says it
        (the agent itself under the ``none`` approval policy)."""
        row = await self.get(proposal_id, owner=owner)
        if run_id is not None and row.run_id != run_id:
            raise NotFound(f"no proposal {proposal_id!r} in run {run_id!r}")
        edits = edits_from_json(row.edits)
        chosen = select_edits(edits, cells) if apply else []
        if apply and not chosen:
            raise BadRequest("name at least one cell to apply, or discard", reason="bad_cells")
        async with self._lock(row.path):
            row = await self.get(proposal_id, owner=owner)
            if row.status != "pending":
                raise ProposalDecided(f"proposal {proposal_id!r} is {row.status} already")
            if not apply:
                await self._finish(row, "discarded", by=by)
                return "discarded"
            safe = notebook_path(row.path, self.root_dir)  # again: a symlink may have come
            try:
                inverse, via = await self._apply(safe, chosen, edits)
            except ProposalConflict as exc:
                await self._finish(row, "conflict", detail=exc.message, by=by)
                raise
            outcome: ProposalOutcome = "applied" if len(chosen) == len(edits) else "partly"
            applied = list(dict.fromkeys(e.cell_id for e in chosen))
            await self._finish(
                row,
                outcome,
                applied=applied,
                undo=edits_json(inverse),
                via=via,
                count=len(chosen),
                by=by,
            )
            return outcome

    async def undo(self, proposal_id: str, *, owner: str) -> ProposalOutcome:
        """Undo an applied (or partly applied) proposal: ``undone``; ``ProposalDecided``
        when it is not applied, ``ProposalConflict`` when the notebook changed since."""
        row = await self.get(proposal_id, owner=owner)
        async with self._lock(row.path):
            row = await self.get(proposal_id, owner=owner)
            if row.status not in ("applied", "partly"):
                raise ProposalDecided(
                    f"proposal {proposal_id!r} is {row.status}: only an applied one can be undone"
                )
            inverse = edits_from_json(row.undo)
            safe = notebook_path(row.path, self.root_dir)  # again: a symlink may have come
            try:
                await self._apply(safe, inverse, inverse)
            except ProposalConflict as exc:
                raise ProposalConflict(
                    exc.message.replace("since the proposal", "since the proposal was applied")
                ) from None
            await self._finish(row, "undone", undo=[], expect=("applied", "partly"))
            return "undone"

    # --- applying ------------------------------------------------------------------------

    def _lock(self, path: str) -> asyncio.Lock:
        lock = self._locks.get(path)
        if lock is None:
            lock = self._locks[path] = asyncio.Lock()
        return lock

    async def _apply(
        self, safe: SafePath, chosen: Sequence[Edit], edits: Sequence[Edit]
    ) -> tuple[builtins.list[Edit], str]:
        """Apply ``chosen`` to the notebook as it is now; ``(inverse, via)``."""
        path = safe.path
        for _attempt in range(_ATTEMPTS):
            read = await self._read(safe)
            new_nb, inverse = await asyncio.to_thread(_checked, read.nb, chosen, edits)
            if read.live is not None:
                if read.live.state() != read.state:
                    continue  # a collaborator typed meanwhile: check again on the fresh doc
                read.live.write(new_nb["cells"])
                return inverse, "live"
            manager = self.contents.writer()
            now = await ensure_async(manager.get(safe.confirm(), content=False))
            if now.get("last_modified") != read.last_modified:
                raise ProposalConflict(
                    f"the notebook {shown(path)} changed while the edits were applied: "
                    "nothing was written"
                )
            model = {"type": "notebook", "format": "json", "content": new_nb}
            await ensure_async(manager.save(model, safe.confirm()))
            return inverse, "contents"
        raise ProposalConflict(
            f"the notebook {shown(path)} kept changing while the edits were applied: "
            "nothing was written; try again"
        )

    async def _finish(
        self,
        row: ProposalRow,
        outcome: ProposalOutcome,
        *,
        applied: Sequence[str] | None = None,
        undo: Sequence[Any] | None = None,
        via: str | None = None,
        count: int = 0,
        detail: str = "",
        expect: Sequence[str] = ("pending",),
        by: str = "the person",
    ) -> None:
        now = now_iso()
        done = await asyncio.to_thread(
            lambda: self.store.finish_proposal(
                row.id,
                owner=row.owner,
                expect=expect,
                status=outcome,
                now=now,
                applied=applied,
                undo=undo,
                via=via,
            )
        )
        if not done:  # only this service moves a status, under the path's lock
            log.warning("jupyter-agent: proposal %s changed status meanwhile", row.id)
        self.events.publish(
            row.chat_id, row.run_id, ProposalEnd(proposal_id=row.id, outcome=outcome)
        )
        text = _notice(row, outcome, count=count, applied=applied or (), detail=detail, by=by)
        if self.notify is None:
            return
        try:
            result = self.notify(row.chat_id, text)
            if inspect.isawaitable(result):
                await result
        except Exception:  # the outcome is stored and published; the notice is a courtesy
            log.exception("jupyter-agent: could not queue the notice of proposal %s", row.id)


def _notice(
    row: ProposalRow,
    outcome: str,
    *,
    count: int,
    applied: Sequence[str],
    detail: str,
    by: str = "the person",
) -> str:
    """The line the model reads at its next drain (``by``: who decided)."""
    total = len(row.edits)
    head = f"Proposal {row.id} ({row.path})"
    if outcome == "applied":
        return f"{head} was applied by {by}: all {total} edit(s)."
    if outcome == "partly":
        cells = ", ".join(applied)
        return f"{head} was partly applied by {by}: {count} of {total} edit(s), cells {cells}."
    if outcome == "discarded":
        return f"{head} was discarded by {by}: nothing changed."
    if outcome == "conflict":
        return f"{head} could not be applied: {detail}"
    return f"{head} was undone by the person: the notebook is as before it."
