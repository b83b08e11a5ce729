"""One top-level effect of a run's log read as its step: :func:`effect_status` (how an effect
ended), the step of a ``cell.run`` (:func:`cell_step`), a ``bash.run`` (:func:`bash_step`), a
model call (:func:`model_call_step`), a ``recall.search`` (:func:`recall_step`) and a
``chat.post`` (:func:`post_step`). :func:`~jupyter_agent.trace.cells_view.build_view` puts
them in order; its module docstring is the contract of each step's fields.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jupyter_agent.core.digest.cell_status import (
    bash_status,
    cell_status,
    partial_bash,
    partial_cell,
)
from jupyter_agent.core.digest.cells import BashResult, CellResult
from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.digest.record import recorded
from jupyter_agent.core.digest.render import Digest, digest_bash, digest_cell
from jupyter_agent.core.events.steps import (
    BashStep,
    BubbleStep,
    CellStep,
    ModelCallStep,
    RecallStep,
    ReplyStep,
    StepStatus,
)
from jupyter_agent.core.events.types import CellStatus
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM, recalled
from jupyter_agent.effects import APP_CALL
from jupyter_agent.trace.log import LoggedEffect

__all__ = [
    "bash_step",
    "cell_step",
    "effect_status",
    "model_call_step",
    "post_step",
    "recall_step",
    "str_or_none",
]

# A python cell that names the in-kernel ``sh`` depends on the host's shell, like bash.
_USES_SH = re.compile(r"\bsh\s*[.(]")


def effect_status(effect: LoggedEffect) -> StepStatus:
    """How an effect ended: ok, failed, cancelled or unfinished (never ``unreadable``)."""
    if effect.result is None:
        return "unfinished"
    if effect.result.error is not None:
        return "failed"
    data = effect.result.data
    if isinstance(data, dict) and data.get("cancelled") == "break_hard":
        return "cancelled"
    return "ok"


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _digest(data: Any, render: Callable[[], Digest]) -> tuple[str | None, bool]:
    """(text, is_error) of the digest the model read: the recorded one, else rebuilt."""
    found = recorded(data)
    if found is not None:
        return found
    try:
        digest = render()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None, False
    return digest.text, digest.is_error


def _end_status(status: StepStatus, finished: CellStatus | None) -> CellStatus | None:
    """What the cell's ``cell_end`` said, from the effect's status and the result's own."""
    if status == "cancelled":
        return "cancelled"
    if status == "failed":
        return "error"
    return finished


def _agreeing(status: StepStatus, end: CellStatus | None) -> StepStatus:
    """The step's status as its ``end_status`` says it: a cell that ran to its end but
    raised, or whose kernel died, or a command that exited non-zero, is ``failed`` (its
    ``end_status`` is ``error``), not ``ok``."""
    return "failed" if status == "ok" and end == "error" else status


def cell_step(
    effect: LoggedEffect, nested: tuple[LoggedEffect, ...], options: DigestOptions
) -> CellStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: StepStatus = effect_status(effect)
    raw = effect.result.data if effect.result is not None else None
    result: CellResult | None = None
    if status == "ok":
        try:
            result = CellResult.from_json(raw)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and cell_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled":
        result = partial_cell(raw)
    read = result if status in ("ok", "timed_out") else None  # what the model read, if any
    digest = _digest(raw, lambda: digest_cell(read, options)) if read else (None, False)
    code = str(data.get("code") or "")
    logged_calls = sum(1 for e in nested if e.name == APP_CALL)
    app_calls = max(logged_calls, len(result.app_calls) if result is not None else 0)
    bubbles = raw.get("bubbles") if isinstance(raw, dict) else None
    end_status = _end_status(status, cell_status(read) if read is not None else None)
    return CellStep(
        seq=effect.seq,
        seqs=(effect.seq, *(e.seq for e in nested)),
        cell_id=str(data.get("cell_id") or ""),
        code=code,
        status=_agreeing(status, end_status),
        t=effect.intent.t,
        execution_count=result.execution_count if result is not None else None,
        duration_s=result.duration_s if result is not None else None,
        failed=result.error is not None if result is not None else None,
        app_calls=app_calls,
        digest=digest[0],
        outputs=tuple(result.outputs) if result is not None else (),
        error=effect.result.error if effect.result is not None else None,
        timeout_s=_num(data.get("timeout_s")),
        deterministic=(
            status == "ok" and result is not None and app_calls == 0 and not _USES_SH.search(code)
        ),
        outputs_truncated=result.outputs_truncated if result is not None else False,
        end_status=end_status,
        bubbles=tuple(str(b) for b in bubbles) if isinstance(bubbles, list) else (),
        copies=tuple(line for e in nested if (line := copy_line(e)) is not None),
    )


def copy_line(effect: LoggedEffect) -> str | None:
    """What a ``notebook.fetch`` app call copied, as one line (None: another effect, or a
    fetch that failed): ``copied df (DataFrame, 1,234 bytes) from the kernel of a.ipynb:
    blobs/<sha256>.pickle``."""
    data = effect.data if isinstance(effect.data, dict) else {}
    if effect.name != APP_CALL or (data.get("app"), data.get("method")) != ("notebook", "fetch"):
        return None
    answer = effect.result.data if effect.result is not None else None
    value = answer.get("value") if isinstance(answer, dict) and answer.get("ok") else None
    if not isinstance(value, dict):
        return None
    size = value.get("bytes")
    size_text = f"{size:,} bytes" if isinstance(size, int) else "size unknown"
    return (
        f"copied {value.get('name')} ({value.get('type')}, {size_text}) from the kernel of "
        f"{value.get('path')}: {value.get('blob')}"
    )


def bash_step(effect: LoggedEffect, cell_id: str, options: DigestOptions) -> BashStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: StepStatus = effect_status(effect)
    raw = effect.result.data if effect.result is not None else None
    result: BashResult | None = None
    if status == "ok":
        try:
            result = BashResult.from_json(raw)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and bash_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled":
        result = partial_bash(raw)
    read = result if status in ("ok", "timed_out") else None
    text, is_error = _digest(raw, lambda: digest_bash(read, options)) if read else (None, False)
    finished: CellStatus | None = None
    if read is not None:
        finished = bash_status(read)
        finished = "error" if finished == "ok" and is_error else finished
    end_status = _end_status(status, finished)
    return BashStep(
        seq=effect.seq,
        cell_id=cell_id,
        command=str(data.get("command") or ""),
        status=_agreeing(status, end_status),
        t=effect.intent.t,
        returncode=result.returncode if result is not None else None,
        stdout=result.stdout.text if result is not None else None,
        stderr=result.stderr.text if result is not None else None,
        digest=text,
        error=effect.result.error if effect.result is not None else None,
        timeout_s=_num(data.get("timeout_s")),
        timed_out=result.timed_out if result is not None else False,
        duration_s=result.duration_s if result is not None else None,
        outputs_truncated=(
            result.stdout.truncated or result.stderr.truncated if result is not None else False
        ),
        end_status=end_status,
    )


def model_call_step(effect: LoggedEffect) -> ModelCallStep:
    data = effect.result.data if effect.result is not None else None
    data = data if isinstance(data, dict) else {}
    status, attempts = data.get("status"), data.get("attempts")
    return ModelCallStep(
        seq=effect.seq,
        status=effect_status(effect),
        t=effect.intent.t,
        http_status=status if isinstance(status, int) else None,
        attempts=attempts if isinstance(attempts, int) else None,
    )


def recall_step(effect: LoggedEffect) -> RecallStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status = effect_status(effect)
    shown = recalled(data, effect.result.data) if effect.result and status == "ok" else None
    return RecallStep(
        seq=effect.seq,
        status=status,
        t=effect.intent.t,
        program=AUTORECALL_PROGRAM,
        query=str(data.get("query") or ""),
        code=shown.code if shown else "",
        text=shown.text if shown else "",
        hits=tuple(h.to_json() for h in shown.hits) if shown else (),
        tokens=shown.record().tokens if shown else 0,
        error=effect.result.error if effect.result is not None else None,
    )


def post_step(effect: LoggedEffect) -> BubbleStep | ReplyStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    cls = ReplyStep if data.get("done") else BubbleStep
    answer = effect.result.data if effect.result is not None else None
    return cls(
        seq=effect.seq,
        text=str(data.get("text") or ""),
        t=effect.intent.t,
        status=effect_status(effect),
        message_id=str_or_none(answer),
    )
