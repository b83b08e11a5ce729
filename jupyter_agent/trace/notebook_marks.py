"""The marks of an exported notebook that are not the run's cells or messages: the
recall block, waits and notices.

What autorecall showed the model (``autorecall@v1``): a run whose recall found something
shows, before its first real cell, a markdown cell :data:`TITLE` and a code cell holding
the synthetic ``run_cell`` call the model was shown (``memory.search("...", k=K,
history=True)``), with the result the model read as its stream output. The code cell is
never run by the agent: its metadata says so (:func:`synthetic_meta`: ``synthetic: true``
and the program), it has no execution count, and re-running it in an agent kernel would
search today's memory, not the run's (the exporter tags it ``skip-execution``).

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

from jupyter_agent.core.events.steps import ApprovalStep, NoticeStep, RecallStep
from jupyter_agent.trace.wait_steps import approval_outcome

__all__ = [
    "CELL_ID",
    "TITLE",
    "approval_meta",
    "approval_source",
    "fenced",
    "notice_source",
    "synthetic_meta",
    "title_source",
]

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


#: The markdown cell ahead of the synthetic cell.
TITLE: Final = "Recalled (synthetic: not run)"
#: The synthetic code cell's id in its run (the notebook's ids add the turn's prefix).
CELL_ID: Final = "recall"


def title_source(step: RecallStep) -> str:
    """The markdown cell's text: the title, then what was recalled, in a line."""
    count = len(step.hits)
    what = f"{count} hit{'' if count == 1 else 's'}, {step.tokens} tokens"
    return (
        f"**{TITLE}**\n\nBefore the message, `{step.program}` searched memory and earlier "
        f"chats and showed the model this call and its result ({what})."
    )


def synthetic_meta(step: RecallStep) -> dict[str, Any]:
    """The code cell's ``metadata.jupyter_agent`` fields beside kind, run id and seq."""
    return {
        "synthetic": True,
        "program": step.program,
        "cell_id": CELL_ID,
        "seqs": [step.seq],
        "deterministic": False,
        "status": step.status,
        "hits": [h.get("id") for h in step.hits],
        "tokens": step.tokens,
    }
