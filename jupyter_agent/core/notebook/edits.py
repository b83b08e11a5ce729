"""Checking the edits the model proposes (pure): :func:`normalize_edits`.

The edit model, and applying edits, are :mod:`jupyter_agent.core.notebook.proposals`' (its module
docstring states the edit JSON and what this check refuses and fills).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from jupyter_agent.core.notebook.proposals import (
    CELL_TYPES,
    OPS,
    Edit,
    cell_source,
    edit_base,
)
from jupyter_agent.exceptions import BadRequest

__all__ = ["normalize_edits"]

_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "insert": frozenset({"op", "after", "source", "cell_type", "reason"}),
    "replace": frozenset({"op", "cell_id", "source", "cell_type", "reason"}),
    "delete": frozenset({"op", "cell_id", "reason"}),
    "move": frozenset({"op", "cell_id", "after", "reason"}),
}
_MAX_REASON: Final = 2000


def _diff(cell_id: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"cell {cell_id}",
        tofile=f"cell {cell_id}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _refused(index: int, why: str) -> BadRequest:
    return BadRequest(f"edit {index}: {why}", reason="bad_edits")


def _text(raw: Mapping[str, Any], key: str, index: int, *, required: bool = True) -> str | None:
    value = raw.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise _refused(index, f"'{key}' must be a string")
    return value


def normalize_edits(
    cells: Sequence[Mapping[str, Any]],
    edits: Any,
    *,
    new_id: Callable[[], str],
) -> list[Edit]:
    """The model's ``edits`` checked against ``cells`` (the notebook as read at propose
    time) and filled in (see the module docstring); ``BadRequest`` (``bad_edits``)
    naming the edit by its index for anything wrong."""
    if not isinstance(edits, (list, tuple)) or not edits:
        raise BadRequest("edits must be a non-empty list of edit objects", reason="bad_edits")
    by_id = {str(c.get("id")): c for c in cells if c.get("id") is not None}
    present = set(by_id)
    touched: set[str] = set()
    anchors: dict[str | None, str] = {}  # model's anchor -> the last cell inserted after it
    inserted: dict[str, str | None] = {}  # inserted id -> the pre-existing anchor
    out: list[Edit] = []
    for index, raw in enumerate(edits):
        if not isinstance(raw, Mapping):
            raise _refused(index, "an edit is an object {op, ..., reason}")
        op = raw.get("op")
        if op not in OPS:
            raise _refused(index, f"'op' must be one of {', '.join(OPS)}")
        extra = sorted(set(map(str, raw)) - _KEYS[op])
        if extra:
            raise _refused(index, f"{op} takes no {', '.join(repr(k) for k in extra)}")
        reason = _text(raw, "reason", index)
        assert reason is not None
        if not reason.strip() or len(reason) > _MAX_REASON:
            raise _refused(index, f"'reason' must say in one line why (1 to {_MAX_REASON} chars)")
        cell_type = _text(raw, "cell_type", index, required=False)
        if cell_type is not None and cell_type not in CELL_TYPES:
            raise _refused(index, f"'cell_type' must be one of {', '.join(CELL_TYPES)}")

        def known(key: str, value: Any, *, top: bool = False, index: int = index) -> str | None:
            if value is None and top:
                return None
            if not isinstance(value, str) or value not in present:
                gone = isinstance(value, str) and value in by_id
                what = "was deleted by an earlier edit" if gone else "is not a cell of it"
                raise _refused(index, f"'{key}' {value!r} {what}")
            return value

        if op == "insert":
            source = _text(raw, "source", index)
            assert source is not None
            anchor = known("after", raw.get("after"), top=True)
            if anchor in inserted:
                raise _refused(index, f"'after' {anchor!r} is not a cell of it")
            cell_id = new_id()
            after = anchors.get(anchor, anchor)
            anchors[anchor] = cell_id
            inserted[cell_id] = anchor
            present.add(cell_id)
            base = edit_base([by_id[anchor]] if anchor is not None else [])
            out.append(
                Edit(
                    op="insert",
                    cell_id=cell_id,
                    after=after,
                    cell_type=cell_type or "code",
                    source=source,
                    reason=reason,
                    diff=_diff(cell_id, "", source),
                    base=base,
                )
            )
            continue
        target = known("cell_id", raw.get("cell_id"))
        assert target is not None
        cell_id = target
        if cell_id in inserted:
            raise _refused(index, f"'cell_id' {cell_id!r} is not a cell of it")
        old = cell_source(by_id[cell_id])
        if op in ("replace", "delete"):
            if cell_id in touched:
                raise _refused(index, f"cell {cell_id!r} has an edit already: make it one")
            touched.add(cell_id)
        anchors.clear()  # an order change breaks an insert chain
        if op == "replace":
            source = _text(raw, "source", index)
            assert source is not None
            out.append(
                Edit(
                    op="replace",
                    cell_id=cell_id,
                    cell_type=cell_type,
                    source=source,
                    old_source=old,
                    reason=reason,
                    diff=_diff(cell_id, old, source),
                    base=edit_base([by_id[cell_id]]),
                )
            )
        elif op == "delete":
            present.discard(cell_id)
            out.append(
                Edit(
                    op="delete",
                    cell_id=cell_id,
                    old_source=old,
                    reason=reason,
                    diff=_diff(cell_id, old, ""),
                    base=edit_base([by_id[cell_id]]),
                )
            )
        else:
            after = known("after", raw.get("after"), top=True)
            if after == cell_id:
                raise _refused(index, f"cell {cell_id!r} cannot move after itself")
            if after in inserted:
                raise _refused(index, f"'after' {after!r} is not a cell of it")
            refs = [by_id[cell_id]] + ([by_id[after]] if after is not None else [])
            out.append(
                Edit(
                    op="move",
                    cell_id=cell_id,
                    after=after,
                    reason=reason,
                    diff="",
                    base=edit_base(refs),
                )
            )
    return out
