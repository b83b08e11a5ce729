"""The waits and notices of an exported notebook: markdown cells, never run.

An :class:`~jupyter_agent.core.events.steps.ApprovalStep` becomes a markdown cell where it
happened (before the cell or command it let run; after the cell whose MCP call waited):
**Approval** with what waited, its one-line summary and how it ended
(:func:`~jupyter_agent.trace.wait_steps.approval_outcome`); an MCP call's wait also shows
the call's code (a cell's or command's code is its own code cell). Its
``metadata.jupyter_agent`` (:func:`approval_meta`) holds the answer. A
:class:`~jupyter_agent.core.events.steps.NoticeStep` becomes a markdown cell **Notice** with its
time and text. Ids follow :mod:`jupyter_agent.trace.notebook`'s markdown rules.
"""

from __future__ import annotations

import re
from typing import Any, Final

from jupyter_agent.core.events.steps import ApprovalStep, NoticeStep
from jupyter_agent.trace.wait_steps import approval_outcome

__all__ = ["approval_meta", "approval_source", "fenced", "notice_source"]

_WHAT: Final = {
    "cell": "cell",
    "bash": "command",
    "proposal": "proposal",
    "mcp": "MCP call",
    "kernel": "code for the person's kernel",
}


def fenced(code: str, lang: str = "python") -> str:
    """``code`` as a fenced block whose fence no backtick run inside it can close."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{code.rstrip(chr(10))}\n{fence}"


def approval_source(step: ApprovalStep) -> str:
    """The markdown of a wait: what waited, its summary, how it ended (and the code of an
    MCP call or of the person's kernel)."""
    head = f"**Approval** ({_WHAT.get(step.kind, step.kind)})" + (f" · {step.t}" if step.t else "")
    outcome = approval_outcome(approve=step.approve, rest=step.rest, by=step.by, status=step.status)
    parts = [head]
    if step.summary:
        parts.append(step.summary)
    if step.kind in ("mcp", "kernel") and step.code:
        parts.append(fenced(step.code))
    parts.append(f"Outcome: {outcome}.")
    return "\n\n".join(parts)


def approval_meta(step: ApprovalStep) -> dict[str, Any]:
    """The cell's ``metadata.jupyter_agent`` fields beside kind, run id and seq."""
    return {
        "approval_id": step.approval_id,
        "approval_kind": step.kind,
        "status": step.status,
        "approve": step.approve,
        "rest": step.rest,
        "by": step.by,
        "parent": step.parent,
    }


def notice_source(step: NoticeStep) -> str:
    """The markdown of a notice the run took: its time and text."""
    return "**Notice**" + (f" · {step.at}" if step.at else "") + "\n\n" + step.text
