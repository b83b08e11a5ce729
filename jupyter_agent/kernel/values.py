"""``values``: every named cell's printed values and last value, kept whole in the kernel.

The digest the model reads cuts big values to a stub naming the call that returns them:
``values.get("c3", 2)`` is the second printed value of cell ``c3`` (the full string, as
printed, minus one trailing newline), ``values.get("c3", "last")`` the last expression
value OBJECT itself (not its repr). Indexes are numbered from 1, as in the digest. An
unknown cell or index raises :class:`ValueNotFound` (a ``LookupError``) saying what exists.
The store lives as long as the kernel: one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ValueNotFound", "Values"]

_MISSING = object()


class ValueNotFound(LookupError):
    """``values.get`` was asked for a cell or an index that does not exist."""


@dataclass
class _CellValues:
    prints: list[str] = field(default_factory=list)
    last: Any = _MISSING


class Values:
    """The kept values of the run's named cells (bound as ``values`` in the namespace)."""

    def __init__(self) -> None:
        self._cells: dict[str, _CellValues] = {}

    def store(
        self, cell_id: str, prints: list[str], *, last: Any = None, has_last: bool = False
    ) -> None:
        """Keep a finished cell's values (the kernel calls this; a re-used id replaces)."""
        self._cells[cell_id] = _CellValues(prints=list(prints), last=last if has_last else _MISSING)

    def forget(self, cell_id: str) -> None:
        """Drop a cell's values (the kernel's own warm-up cell leaves none)."""
        self._cells.pop(cell_id, None)

    def get(self, cell_id: str, index: int | str = "last") -> Any:
        """Printed value ``index`` (1-based) of ``cell_id``, or its last value for ``"last"``."""
        cell = self._cells.get(cell_id)
        if cell is None:
            known = ", ".join(self._cells) or "none yet"
            raise ValueNotFound(f"no cell {cell_id!r} in this run (cells: {known})")
        if index == "last":
            if cell.last is _MISSING:
                raise ValueNotFound(f"cell {cell_id!r} has no last value")
            return cell.last
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueNotFound(
                f"index must be a printed value number (1, 2, ...) or 'last', not {index!r}"
            )
        if not 1 <= index <= len(cell.prints):
            raise ValueNotFound(
                f"cell {cell_id!r} printed {len(cell.prints)} value(s); "
                f"index {index} is out of range (numbered from 1)"
            )
        return cell.prints[index - 1]

    def cells(self) -> list[str]:
        """The named cells kept so far, in order."""
        return list(self._cells)

    def __repr__(self) -> str:
        parts = []
        for cid, cell in self._cells.items():
            last = ", last" if cell.last is not _MISSING else ""
            parts.append(f"{cid}: {len(cell.prints)} printed{last}")
        return "<values: " + ("; ".join(parts) or "empty") + '> (values.get("c1", 1))'
