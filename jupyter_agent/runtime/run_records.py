"""The records the run manager writes for a run: its summary at the end, a minimal turn
(with the opening message read back from the run's log).

Also the store write a run's end makes: retried, and logged rather than raised (a failing
store must not wedge the chat).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import RunSummary, TurnLLM, TurnRecord
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.trace.log import read_log

__all__ = ["ended_summary", "minimal_turn", "opening_text", "store_call", "with_counts"]

# The run manager's logger: these lines are about its runs.
log = logging.getLogger("jupyter_agent.runtime.runs")


async def store_call(fn: Callable[..., Any], *args: Any, attempts: int = 1, **kw: Any) -> None:
    """A store write at a run's end: retried, and logged rather than raised on failure."""
    for attempt in range(1, attempts + 1):
        try:
            await asyncio.to_thread(fn, *args, **kw)
            return
        except Exception:
            if attempt == attempts:
                log.exception("store write %s failed", getattr(fn, "__name__", fn))
            else:
                await asyncio.sleep(0.2 * attempt)


def ended_summary(
    summary: RunSummary, now: str, *, status: str, stop: str, cause: str
) -> RunSummary:
    """The summary of a run that ended at ``now``, with its status, stop reason and cause."""
    return replace(
        summary,
        status=status,  # type: ignore[arg-type]
        ended=now,
        stop_reason=stop,  # type: ignore[arg-type]
        end_cause=cause,  # type: ignore[arg-type]
    )


def with_counts(summary: RunSummary, turn: TurnRecord) -> RunSummary:
    """The summary with the turn's model, counts, usage and cost."""
    return replace(
        summary,
        model=turn.model or summary.model,
        model_calls=turn.llm.model_calls,
        cells=turn.llm.cells,
        usage=turn.llm.usage,
        cost=turn.llm.cost,
    )


def minimal_turn(summary: RunSummary, stop: str, cause: str, log_path: Path) -> TurnRecord:
    """The turn the host writes for a run whose loop could not write one (its opening
    message read back from the run's log at ``log_path``)."""
    return TurnRecord(
        id=new_id("turn"),
        chat_id=summary.chat_id,
        run_id=summary.run_id,
        user_text=opening_text(log_path),
        created=summary.started,
        interrupted=True,
        model=summary.model,
        llm=TurnLLM(stop_reason=stop, end_cause=cause),  # type: ignore[arg-type]
    )


def opening_text(log_path: Path) -> str:
    """The opening message of a run, read back from its log (best effort: "" if unread)."""
    try:
        for line in read_log(log_path).lines:
            if line.name == "mailbox.drain" and line.phase == "result":
                for item in line.data or []:
                    if isinstance(item, dict) and item.get("kind") == "message":
                        return str(item.get("text", ""))
                break
    except Exception:
        log.debug("could not read the log %s", log_path, exc_info=True)
    return ""
