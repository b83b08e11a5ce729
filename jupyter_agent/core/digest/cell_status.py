"""How a cell (or a bash command) ended, as the panel, the run detail and the exports say it.

One of :data:`CELL_STATUSES`:

- ``ok``: it finished without an error;
- ``error``: it raised (python), exited non-zero or could not start (bash), or its kernel
  died;
- ``timed_out``: it ran past its timeout and was stopped (python: its error's ``ename`` is
  :data:`CELL_TIMEOUT`; bash: ``timed_out``);
- ``cancelled``: a hard break cut it; its ``cell.run`` / ``bash.run`` result reads
  ``{"cancelled": "break_hard", ...}``, with what it printed until then under
  :data:`PARTIAL_CELL` (a :class:`~jupyter_agent.core.digest.cells.CellResult`) or
  :data:`PARTIAL_BASH` (a :class:`~jupyter_agent.core.digest.cells.BashResult`).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from jupyter_agent.core.digest.cells import BashResult, CellResult

__all__ = [
    "CELL_STATUSES",
    "CELL_TIMEOUT",
    "PARTIAL_BASH",
    "PARTIAL_CELL",
    "CellStatus",
    "bash_status",
    "cell_status",
    "partial_bash",
    "partial_cell",
]

CellStatus = Literal["ok", "error", "timed_out", "cancelled"]
CELL_STATUSES: Final = ("ok", "error", "timed_out", "cancelled")

#: The ``ename`` of the error result of a python cell that ran past its timeout.
CELL_TIMEOUT: Final = "CellTimeout"
#: The key of a cancelled ``cell.run`` result holding the partial cell result.
PARTIAL_CELL: Final = "cell"
#: The key of a cancelled ``bash.run`` result holding the partial bash result.
PARTIAL_BASH: Final = "bash"


def cell_status(cell: CellResult) -> CellStatus:
    """``ok``, ``error`` or ``timed_out`` for a finished python cell."""
    if cell.error is None:
        return "ok"
    return "timed_out" if cell.error.ename == CELL_TIMEOUT else "error"


def bash_status(result: BashResult) -> CellStatus:
    """``ok``, ``error`` or ``timed_out`` for a finished bash command."""
    if result.timed_out:
        return "timed_out"
    return "ok" if result.returncode == 0 else "error"


def _parse(data: Any, key: str) -> dict[str, Any] | None:
    if isinstance(data, dict) and data.get("cancelled") == "break_hard":
        partial = data.get(key)
        return partial if isinstance(partial, dict) else None
    return None


def partial_cell(data: Any) -> CellResult | None:
    """The partial cell result of a cancelled ``cell.run`` result, if it has one."""
    raw = _parse(data, PARTIAL_CELL)
    if raw is None:
        return None
    try:
        return CellResult.from_json(raw)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def partial_bash(data: Any) -> BashResult | None:
    """The partial bash result of a cancelled ``bash.run`` result, if it has one."""
    raw = _parse(data, PARTIAL_BASH)
    if raw is None:
        return None
    try:
        return BashResult.from_json(raw)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
