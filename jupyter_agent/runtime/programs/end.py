"""The end of a run whose program failed (see
:mod:`jupyter_agent.runtime.programs.guard` for what a failure is).

:func:`failed_turn` is what the driver does then, before the run's log closes:

- the server log gets the failure with its traceback (the program's own, as the cause);
- the effect log gets its final ``program_error`` line (after the last effect written);
- the person gets a reply (a ``reply`` event, done true) naming the program and the error,
  "The program toolcaller@v5#abc failed: ValueError: boom (the run ended; the server is
  fine)"; the driver has closed the run first (later messages start the next run);
- the turn: the messages the run took and what it posted (read back from its log), that
  reply last, stop reason and cause ``error``, ``programs`` and ``fromAgent`` the run's.
  The run manager stores it with the run's end like any turn the loop did not write.

A program that failed after its turn was stored (after ``turn.append``) keeps that turn:
only the log line and the server log record the failure.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from jupyter_agent.core.events.types import Event, ReplyEvent
from jupyter_agent.core.turns import Reply, RunSummary, TurnRecord
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.programs.guard import ProgramFailed
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.records import log_facts, minimal_turn
from jupyter_agent.trace.log import EffectLog

__all__ = ["failed_turn"]

log = logging.getLogger("jupyter_agent.runtime.runs.manager")


async def failed_turn(
    failed: ProgramFailed,
    *,
    run_id: str,
    chat_id: str,
    agent: str,
    program: RunProgram,
    summary: RunSummary | None,
    log_: EffectLog,
    publish: Callable[[Event], None],
    stored: TurnRecord | None,
    clean: Callable[[Any], Any] = lambda value: value,
) -> TurnRecord:
    """Record ``failed`` and return the run's turn (see the module docstring): ``stored``
    when the run's turn was already stored, else the one built here. ``summary``: the
    run's (None: one is made up from the other arguments). ``clean`` takes known secrets
    out of what the failure says (a deployed program's exception can quote one) before the
    server's log, the effect log and the turn."""
    trace = "".join(traceback.format_exception(failed))
    log.error(
        "run %s of chat %s: the program %s failed: %s",
        run_id,
        chat_id,
        failed.program,
        clean(trace),
    )
    log_.program_error(failed.program, clean(failed.error))
    if stored is not None:
        return stored
    text = clean(failed.reply)
    publish(ReplyEvent(text=text, done=True, message_id=new_id("msg")))
    facts = await asyncio.to_thread(log_facts, log_.path)
    summary = summary or RunSummary(
        run_id=run_id,
        chat_id=chat_id,
        program=program.ref.key,
        status="running",
        started=now_iso(),
        programs=program.programs,
        agent=agent,
    )
    turn = minimal_turn(summary, "error", "error", facts)
    return replace(
        turn,
        replies=(*turn.replies, Reply(text=text, done=True)),
        programs=program.programs,
        from_agent=agent,
    )
