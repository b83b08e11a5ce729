"""The events of a cell or bash command the driver runs, and what a stopped one keeps.

``cell_start`` ``{cell_id, kind, code}``, then ``cell_output`` ``{cell_id, output}`` while
it runs (live, throttled: :mod:`jupyter_agent.runtime.kernels.live_output`), then ``cell_end``
(:class:`~jupyter_agent.core.events.types.CellEnd`): a python cell's with ``outputs`` and
``execution_count``, a bash command's with ``stdout``, ``stderr`` and ``returncode``;
with ``status`` one of :data:`~jupyter_agent.core.digest.cell_status.CELL_STATUSES` and
``error`` true unless it is ``ok``. ``digest`` is the text the model read (None for a
cancelled cell: the model read nothing).

A cell cut by a hard break keeps, in its cancelled result, what the kernel had sent of
its output (:meth:`RunningCell.partial`): stream text, displays and errors in nbformat's
shapes, bounded like a finished cell's result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from jupyter_agent.core.digest.cell_status import PARTIAL_BASH, PARTIAL_CELL, CellStatus
from jupyter_agent.core.digest.cells import BashResult, CellResult, Value
from jupyter_agent.core.digest.render import Digest
from jupyter_agent.core.events.types import CellEnd, CellKind
from jupyter_agent.runtime.kernels.live_output import LiveCell, OutputCollector

__all__ = [
    "VALUE_CAP",
    "RunningCell",
    "bash_end",
    "cell_end",
    "digest_or_none",
    "with_model_calls",
]

log = logging.getLogger(__name__)

# The same bound as the kernel's for one printed value (kernel/capture.py VALUE_CAP).
VALUE_CAP = 20_000


def _value(text: str) -> Value:
    return Value(text=text[:VALUE_CAP], chars=len(text))


def cell_end(cell: CellResult, status: CellStatus, digest: str | None) -> CellEnd:
    """The ``cell_end`` event of a python cell."""
    return CellEnd(
        cell_id=cell.cell_id,
        kind="python",
        status=status,
        error=status != "ok",
        digest=digest,
        duration_s=cell.duration_s,
        outputs=tuple(cell.outputs),
        execution_count=cell.execution_count,
    )


def bash_end(cell_id: str, result: BashResult, status: CellStatus, digest: str | None) -> CellEnd:
    """The ``cell_end`` event of a bash command."""
    return CellEnd(
        cell_id=cell_id,
        kind="bash",
        status=status,
        error=status != "ok",
        digest=digest,
        duration_s=result.duration_s,
        stdout=result.stdout.text,
        stderr=result.stderr.text,
        returncode=result.returncode,
    )


@dataclass(kw_only=True)
class RunningCell:
    """The cell or command in flight: its live output, and what a hard break needs."""

    seq: int
    cell_id: str
    kind: CellKind
    code: str
    live: LiveCell
    handle: Any = None
    """The kernel handle, once the kernel is there (the cell then really started)."""

    def collected(self) -> OutputCollector:
        """What the kernel sent of this cell's output so far."""
        found = getattr(self.handle, "collected", None) if self.handle is not None else None
        return found if isinstance(found, OutputCollector) else OutputCollector()

    def partial(self, status: CellStatus = "cancelled") -> tuple[str, dict[str, Any], CellEnd]:
        """For a stopped cell: (result key, partial result JSON, its ``cell_end`` event)."""
        self.live.close()
        collected = self.collected()
        duration = round(self.live.elapsed_s, 6)
        stdout, stderr = collected.stream_text("stdout"), collected.stream_text("stderr")
        if self.kind == "python":
            cell = CellResult(
                cell_id=self.cell_id,
                stderr=_value(stderr) if stderr else None,
                outputs=tuple(collected.outputs),
                outputs_truncated=collected.truncated,
                duration_s=duration,
            )
            return PARTIAL_CELL, cell.to_json(), cell_end(cell, status, None)
        bash = BashResult(
            command=self.code,
            stdout=_value(stdout),
            stderr=_value(stderr),
            returncode=None,
            duration_s=duration,
        )
        return PARTIAL_BASH, bash.to_json(), bash_end(self.cell_id, bash, status, None)


def with_model_calls(cell: CellResult, calls: list[dict[str, Any]]) -> CellResult:
    """The cell's result with the model calls its in-cell apps made."""
    return replace(cell, model_calls=tuple(cell.model_calls) + tuple(calls))


def digest_or_none(render: Callable[[], Digest]) -> Digest | None:
    """The digest, or None when a strange result defeats it (the loop then digests itself,
    and reports what it finds)."""
    try:
        return render()
    except Exception:
        log.warning("digesting a cell result failed", exc_info=True)
        return None
