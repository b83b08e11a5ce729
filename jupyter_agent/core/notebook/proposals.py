"""Notebook proposals as data: the edits the agent proposes, checked, applied and undone.

Pure (no I/O): cells are nbformat v4 cell dicts (``{id, cell_type, source, metadata,
outputs?, execution_count?, attachments?}``, ``source`` a str or a list of str).

The model writes (through ``notebook.propose(path, edits)``)::

    {"op": "insert",  "after": CELL_ID | None, "source": str, "reason": str,
     "cell_type"?: "code" | "markdown" | "raw"}        # default code
    {"op": "replace", "cell_id": CELL_ID, "source": str, "cell_type"?: ..., "reason": str}
    {"op": "delete",  "cell_id": CELL_ID, "reason": str}
    {"op": "move",    "cell_id": CELL_ID, "after": CELL_ID | None, "reason": str}

``after`` None is the top of the notebook.
:func:`~jupyter_agent.core.notebook.edits.normalize_edits` checks them against the notebook
as read at propose time (a clear :class:`BadRequest` ``bad_edits`` for the model:
an unknown or already deleted cell, a move after itself, a missing reason, a source that is
not a str, two replace/delete of one cell) and fills what the person reviews and what apply
checks: ``cell_id`` of an insert (a new nbformat-style id from the seeded ``new_id``, so a
replay makes the same ids), ``old_source`` (replace, delete), ``diff`` (a unified diff of
the old and new source, ``---``/``+++`` naming the cell) and ``base`` (a short hash of the
type and source of the cells the edit refers to: the cell itself and its ``after`` anchor).
Consecutive inserts after the same cell keep their order: the second one's ``after`` is
rewritten to the cell the first one inserts.

:func:`apply_edits` applies edits in order to the *current* cells and returns the new cells
and the inverse edits (undo = ``apply_edits(current, inverse)``, same checks). Before
anything changes it checks every edit's ``base`` against the current cells: a referenced
cell that changed or is gone, or an insert whose id exists already, is a
:class:`ProposalConflict` naming the cells (nothing applied). A replace keeps the cell's
id and metadata and clears the outputs and execution count of a code cell whose source
changed; a delete's inverse re-inserts the whole cell (outputs too) after its old
predecessor; a replace's inverse restores the whole old cell. An ``after`` naming a cell
this list inserts but that was skipped (apply some) falls back to that cell's own anchor.
No cell is ever lost: the result holds every current cell except the deleted ones.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from jupyter_agent.exceptions import BadRequest, ProposalConflict

__all__ = [
    "CELL_TYPES",
    "OPS",
    "Edit",
    "apply_edits",
    "cell_source",
    "edits_from_json",
    "edit_base",
    "edits_json",
    "seeded_ids",
    "select_edits",
    "with_cell_ids",
]

Op = Literal["insert", "replace", "delete", "move"]
#: The edit operations.
OPS: Final = ("insert", "replace", "delete", "move")
#: The cell types an edit may give.
CELL_TYPES: Final = ("code", "markdown", "raw")


@dataclass(frozen=True, kw_only=True)
class Edit:
    """One normalized edit (see the module docstring). ``cell`` is only in inverse edits:
    the whole cell an undo puts back (a deleted or replaced one)."""

    op: Op
    cell_id: str
    reason: str
    diff: str = ""
    base: str = ""
    after: str | None = None
    cell_type: str | None = None
    source: str | None = None
    old_source: str | None = None
    cell: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The edit JSON as stored and sent: ``{op, cell_id, after?, cell_type?, source?,
        old_source?, reason, diff, base}`` (``after`` for insert and move only; ``cell``
        when an inverse edit carries one)."""
        out: dict[str, Any] = {"op": self.op, "cell_id": self.cell_id}
        if self.op in ("insert", "move"):
            out["after"] = self.after
        if self.cell_type is not None:
            out["cell_type"] = self.cell_type
        if self.source is not None:
            out["source"] = self.source
        if self.old_source is not None:
            out["old_source"] = self.old_source
        out.update(reason=self.reason, diff=self.diff, base=self.base)
        if self.cell is not None:
            out["cell"] = copy.deepcopy(dict(self.cell))
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Edit:
        """The edit :meth:`to_json` wrote (a stored proposal's)."""
        cell = data.get("cell")
        return cls(
            op=cast("Op", data["op"]),
            cell_id=str(data["cell_id"]),
            reason=str(data.get("reason", "")),
            diff=str(data.get("diff", "")),
            base=str(data.get("base", "")),
            after=data.get("after"),
            cell_type=data.get("cell_type"),
            source=data.get("source"),
            old_source=data.get("old_source"),
            cell=copy.deepcopy(dict(cell)) if isinstance(cell, Mapping) else None,
        )


def edits_json(edits: Iterable[Edit]) -> list[dict[str, Any]]:
    """The edits as a JSON list."""
    return [e.to_json() for e in edits]


def edits_from_json(data: Iterable[Mapping[str, Any]]) -> list[Edit]:
    """Edits from their JSON list."""
    return [Edit.from_json(d) for d in data]


def seeded_ids(seed: str) -> Callable[[], str]:
    """A source of nbformat-style cell ids (8 hex digits) that depends only on ``seed``
    and the call count: the same seed gives the same ids (a replay makes the same ones)."""
    count = 0

    def new_id() -> str:
        nonlocal count
        count += 1
        return hashlib.sha256(f"{seed}\0{count}".encode()).hexdigest()[:8]

    return new_id


def cell_source(cell: Mapping[str, Any]) -> str:
    """A cell's source as one str (nbformat allows a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _cell_key(cell: Mapping[str, Any]) -> str:
    return f"{cell.get('cell_type', '')}\0{cell_source(cell)}"


def edit_base(cells: Sequence[Mapping[str, Any] | None]) -> str:
    text = "\1".join("\0gone" if c is None else _cell_key(c) for c in cells)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def select_edits(edits: Sequence[Edit], cells: Sequence[str] | None) -> list[Edit]:
    """The edits to apply: all (``cells`` None) or those whose ``cell_id`` is listed; a
    listed id no edit has is a ``BadRequest`` (``bad_cells``)."""
    if cells is None:
        return list(edits)
    ids = {e.cell_id for e in edits}
    unknown = sorted(set(cells) - ids)
    if unknown:
        raise BadRequest(
            f"no edit of this proposal is for cell {', '.join(map(repr, unknown))}",
            reason="bad_cells",
        )
    wanted = set(cells)
    return [e for e in edits if e.cell_id in wanted]


def _index(cells: Sequence[Mapping[str, Any]], cell_id: str) -> int:
    for i, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return i
    raise KeyError(cell_id)


def _refs(edit: Edit, created: Mapping[str, str | None]) -> list[str | None]:
    """The ids an edit's base covers: the cell (but an insert's), then the anchor resolved
    through the cells this list creates (None: the top, covered by nothing)."""
    refs: list[str | None] = [] if edit.op == "insert" else [edit.cell_id]
    if edit.op in ("insert", "move"):
        anchor, seen = edit.after, set()
        while anchor is not None and anchor in created and anchor not in seen:
            seen.add(anchor)
            anchor = created[anchor]
        if anchor is not None:
            refs.append(anchor)
    return refs


def _conflicts(
    cells: Sequence[Mapping[str, Any]], edits: Sequence[Edit], all_edits: Sequence[Edit]
) -> list[str]:
    by_id = {str(c.get("id")): c for c in cells if c.get("id") is not None}
    created = {e.cell_id: e.after for e in all_edits if e.op == "insert"}
    problems: list[str] = []
    for edit in edits:
        if edit.op == "insert" and edit.cell_id in by_id:
            problems.append(f"cell {edit.cell_id!r} exists already")
            continue
        refs = _refs(edit, created)
        if edit_base([by_id.get(r) if r else None for r in refs]) == edit.base:
            continue
        gone = [r for r in refs if r and r not in by_id]
        if gone:
            problems.extend(f"cell {r!r} is gone" for r in gone)
        else:
            problems.append(" or ".join(f"cell {r!r}" for r in refs) + " changed")
    return list(dict.fromkeys(problems))


def _new_cell(edit: Edit) -> dict[str, Any]:
    if edit.cell is not None:
        return copy.deepcopy(dict(edit.cell))
    cell_type = edit.cell_type or "code"
    cell: dict[str, Any] = {
        "id": edit.cell_id,
        "cell_type": cell_type,
        "metadata": {},
        "source": edit.source or "",
    }
    if cell_type == "code":
        cell.update(outputs=[], execution_count=None)
    return cell


def _replaced(old: Mapping[str, Any], edit: Edit) -> dict[str, Any]:
    if edit.cell is not None:
        return copy.deepcopy(dict(edit.cell))
    cell = copy.deepcopy(dict(old))
    cell_type = edit.cell_type or str(old.get("cell_type", "code"))
    source = edit.source if edit.source is not None else cell_source(old)
    changed = source != cell_source(old) or cell_type != old.get("cell_type")
    cell["source"], cell["cell_type"] = source, cell_type
    if cell_type == "code":
        if changed or "outputs" not in cell:
            cell.update(outputs=[], execution_count=None)
        cell.pop("attachments", None)
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    return cell


def _position(cells: Sequence[Mapping[str, Any]], after: str | None, fallback: Any) -> int:
    """Where a cell placed ``after`` goes: after it, or (a cell this list inserts that was
    skipped) after that cell's own anchor; 0 for the top."""
    seen: set[str] = set()
    while after is not None and after not in seen:
        seen.add(after)
        try:
            return _index(cells, after) + 1
        except KeyError:
            after = fallback.get(after)
    return 0


def apply_edits(
    cells: Sequence[Mapping[str, Any]],
    edits: Sequence[Edit],
    *,
    all_edits: Sequence[Edit] | None = None,
) -> tuple[list[dict[str, Any]], list[Edit]]:
    """``(new_cells, inverse_edits)``: ``edits`` applied in order to ``cells`` (left
    untouched); ``ProposalConflict`` naming the cells when a base does not match (see the
    module docstring). ``all_edits``: the whole proposal when ``edits`` is a part of it
    (the anchors of skipped inserts)."""
    everything = list(all_edits if all_edits is not None else edits)
    problems = _conflicts(cells, edits, everything)
    if problems:
        raise ProposalConflict(
            "the notebook changed since the proposal: "
            + "; ".join(problems)
            + ". Nothing was written: read it again and propose anew."
        )
    fallback = {e.cell_id: e.after for e in everything if e.op == "insert"}
    work: list[dict[str, Any]] = [copy.deepcopy(dict(c)) for c in cells]
    inverse: list[Edit] = []
    for edit in edits:
        if edit.op == "insert":
            work.insert(_position(work, edit.after, fallback), _new_cell(edit))
            inverse.append(Edit(op="delete", cell_id=edit.cell_id, reason=f"undo: {edit.reason}"))
            continue
        at = _index(work, edit.cell_id)
        before = str(work[at - 1]["id"]) if at > 0 else None
        if edit.op == "replace":
            old = work[at]
            work[at] = _replaced(old, edit)
            inverse.append(
                Edit(op="replace", cell_id=edit.cell_id, reason=f"undo: {edit.reason}", cell=old)
            )
        elif edit.op == "delete":
            old = work.pop(at)
            inverse.append(
                Edit(
                    op="insert",
                    cell_id=edit.cell_id,
                    after=before,
                    reason=f"undo: {edit.reason}",
                    cell=old,
                )
            )
        else:
            moved = work.pop(at)
            work.insert(_position(work, edit.after, fallback), moved)
            inverse.append(
                Edit(op="move", cell_id=edit.cell_id, after=before, reason=f"undo: {edit.reason}")
            )
    inverse.reverse()
    return work, _with_bases(work, inverse)


def _with_bases(cells: Sequence[Mapping[str, Any]], inverse: Sequence[Edit]) -> list[Edit]:
    """The inverse edits with their bases: the cells as apply left them."""
    by_id = {str(c.get("id")): c for c in cells if c.get("id") is not None}
    created = {e.cell_id: e.after for e in inverse if e.op == "insert"}
    out = []
    for edit in inverse:
        refs = _refs(edit, created)
        base = edit_base([by_id.get(r) if r else None for r in refs])
        out.append(
            Edit(
                op=edit.op,
                cell_id=edit.cell_id,
                after=edit.after,
                reason=edit.reason,
                base=base,
                cell=edit.cell,
            )
        )
    return out


def with_cell_ids(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` (changed in place and returned) with an id on every cell: a cell without
    one (a notebook before nbformat 4.5) gets ``cell-<index>`` (made unique), and the
    notebook's minor version becomes 5, so the ids are valid once saved."""
    cells = nb.get("cells") or []
    missing = [c for c in cells if not c.get("id")]
    if not missing:
        return nb
    taken = {str(c["id"]) for c in cells if c.get("id")}
    for index, cell in enumerate(cells):
        if cell.get("id"):
            continue
        candidate, n = f"cell-{index}", 0
        while candidate in taken:
            n += 1
            candidate = f"cell-{index}-{n}"
        cell["id"] = candidate
        taken.add(candidate)
    if int(nb.get("nbformat", 4)) == 4 and int(nb.get("nbformat_minor", 0)) < 5:
        nb["nbformat_minor"] = 5
    return nb
