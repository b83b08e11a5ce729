"""The steps of a run's waits for the person: ``approval.wait`` as an :class:`ApprovalStep`.

Used by :func:`~jupyter_agent.trace.cells_view.build_view` (see its module docstring for
where the steps go); :func:`approval_outcome` says how a wait ended, in the words ``trace
show`` and the notebook export use. An answer is read as the loop read it
(:class:`~jupyter_agent.core.loop.approval.Decision`): ``{approve, rest, by}``; a result whose
``by`` is not one of ``person``, ``timeout``, ``break`` is ``unreadable`` (not approved).

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Final

from jupyter_agent.core.events.steps import ApprovalBy, ApprovalStep, StepStatus
from jupyter_agent.core.events.types import ApprovalKind
from jupyter_agent.trace.log import LoggedEffect

__all__ = ["approval_outcome", "approval_step"]

_APPROVAL_KINDS: dict[Any, ApprovalKind] = {
    "cell": "cell",
    "bash": "bash",
    "proposal": "proposal",
    "mcp": "mcp",
    "kernel": "kernel",
}
_APPROVAL_BY: dict[Any, ApprovalBy] = {"person": "person", "timeout": "timeout", "break": "break"}


def approval_step(effect: LoggedEffect, status: StepStatus) -> ApprovalStep:
    """An ``approval.wait`` read as the loop read it (:class:`~jupyter_agent.core.loop.approval.
    Decision`: anything but an explicit ``approve: true`` denies); ``status`` is the
    effect's (:func:`~jupyter_agent.trace.effect_steps.effect_status`)."""
    data = effect.data if isinstance(effect.data, dict) else {}
    answer = effect.result.data if effect.result is not None else None
    approve: bool | None = None if status == "unfinished" else False
    rest, by = False, None
    if status == "ok":
        if isinstance(answer, dict) and answer.get("by") in _APPROVAL_BY:
            approve, rest = answer.get("approve") is True, answer.get("rest") is True
            by = _APPROVAL_BY[answer["by"]]
        else:
            status = "unreadable"
    return ApprovalStep(
        seq=effect.seq,
        approval_id=str(data.get("approval_id") or ""),
        kind=_APPROVAL_KINDS.get(data.get("kind"), "cell"),
        status=status,
        t=effect.intent.t,
        code=str(data.get("code") or ""),
        summary=str(data.get("summary") or ""),
        approve=approve,
        rest=rest and bool(approve),
        by=by,
        parent=effect.parent,
    )


#: How a wait ended when nobody decided (``by``) ...
_BY_WORDS: Final = {"timeout": "not answered in time", "break": "the person asked to stop"}
#: ... and when no answer was recorded (``status``).
_STATUS_WORDS: Final = {
    "cancelled": "cut by a hard stop",
    "unfinished": "no answer recorded (the run stopped while it waited)",
    "failed": "the person could not be asked (not run)",
    "unreadable": "the answer could not be read (not run)",
}


def approval_outcome(*, approve: Any, rest: Any, by: Any, status: Any) -> str:
    """``approved by the person`` (``... (and the rest of this turn)``), ``denied``, ``not
    answered in time``, ``the person asked to stop``, ``cut by a hard stop``, ...: the
    fields of an :class:`ApprovalStep` (or of its JSON) as words."""
    if by == "person":
        if approve is True:
            return "approved by the person" + (" (and the rest of this turn)" if rest else "")
        return "denied"
    words = _BY_WORDS.get(str(by)) or _STATUS_WORDS.get(str(status))
    return words or f"ended ({status})"
