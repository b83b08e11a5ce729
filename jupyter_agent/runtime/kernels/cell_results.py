"""A cell's structured result from the kernel's execute_reply, and the result of a cell
that ran past its timeout.

An agent kernel's reply content carries ``CellResult.to_json()`` under
``"jupyter_agent"``; any other reply (not an agent kernel, an aborted request) becomes the
result it tells (:func:`from_reply`). A cell past its timeout keeps what the kernel
recorded when it stopped on the interrupt, or, when the kernel had to be restarted (its
record lost), the outputs collected over iopub before the restart; either way its error is
``CellTimeout`` and its evalue says whether the run's namespace was kept
(:func:`timeout_result`).
"""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.digest.cell_status import CELL_TIMEOUT
from jupyter_agent.core.digest.cells import CellError, CellResult, Value
from jupyter_agent.runtime.kernels.live_output import OutputCollector

__all__ = ["from_reply", "timeout_result"]

# One printed value's bound, as the kernel's capture has it (kernel/capture.py VALUE_CAP).
_VALUE_CAP = 20_000


def from_reply(cell_id: str, content: dict[str, Any], duration: float) -> CellResult:
    """The cell's result from its (scrubbed) execute_reply ``content``."""
    data = content.get("jupyter_agent")
    if isinstance(data, dict):
        return CellResult.from_json(data)
    # not an agent kernel (or an aborted request): build what the reply tells
    error = None
    if content.get("status") != "ok":
        error = CellError(
            ename=str(content.get("ename", "Error")),
            evalue=str(content.get("evalue", content.get("status", ""))),
            traceback=tuple(content.get("traceback") or ()),
        )
    return CellResult(
        cell_id=cell_id,
        error=error,
        execution_count=content.get("execution_count"),
        duration_s=duration,
    )


def timeout_result(
    cell_id: str,
    base: CellResult | None,
    collector: OutputCollector,
    *,
    timeout_s: float,
    restarted: bool,
    duration: float,
) -> CellResult:
    """The result of a cell past its ``timeout_s``: ``base`` (the kernel's, after the
    interrupt) with a ``CellTimeout`` error and output; None: the kernel was restarted
    and the result is built from what ``collector`` kept."""
    if restarted:
        evalue = (
            f"the cell ran past its {timeout_s:g} s timeout and did not stop on an "
            "interrupt: the kernel was restarted and the run's namespace is lost "
            "(variables and imports must be recreated)"
        )
    else:
        evalue = (
            f"the cell ran past its {timeout_s:g} s timeout and was interrupted; "
            "the namespace is kept"
        )
    error = CellError(ename=CELL_TIMEOUT, evalue=evalue)
    timeout_output = {
        "output_type": "error",
        "ename": CELL_TIMEOUT,
        "evalue": evalue,
        "traceback": [],
    }
    if base is None:
        # The restart lost the kernel's own record: keep what came over iopub (its
        # stdout as one value, so the digest shows what the cell printed).
        stdout = collector.stream_text("stdout").removesuffix("\n")
        stderr = collector.stream_text("stderr")
        return CellResult(
            cell_id=cell_id,
            prints=(Value(text=stdout[:_VALUE_CAP], chars=len(stdout)),) if stdout else (),
            stderr=Value(text=stderr[:_VALUE_CAP], chars=len(stderr)) if stderr else None,
            error=error,
            outputs=(*collector.outputs, timeout_output),
            outputs_truncated=collector.truncated,
            duration_s=duration,
        )
    return CellResult(
        cell_id=cell_id,
        prints=base.prints,
        prints_omitted=base.prints_omitted,
        stderr=base.stderr,
        displays=base.displays,
        error=error,
        outputs=(*base.outputs, timeout_output),
        outputs_truncated=base.outputs_truncated,
        execution_count=base.execution_count,
        app_calls=base.app_calls,
        duration_s=duration,
    )
