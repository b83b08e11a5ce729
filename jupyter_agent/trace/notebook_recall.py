"""The synthetic recall block of an exported notebook (``autorecall@v1``).

A run whose recall found something shows, before its first real cell, a markdown cell
:data:`TITLE` and a code cell holding the synthetic ``run_cell`` call the model was shown
(``memory.search("...", k=K, history=True)``), with the result the model read as its
stream output. The code cell is never run by the agent: its metadata says so
(:func:`synthetic_meta`: ``synthetic: true`` and the program), it has no execution count,
and re-running it in an agent kernel would search today's memory, not the run's.
"""

from __future__ import annotations

from typing import Any, Final

from jupyter_agent.core.events.steps import RecallStep

__all__ = ["CELL_ID", "TITLE", "synthetic_meta", "title_source"]

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
