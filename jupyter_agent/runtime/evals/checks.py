"""An eval case's checks: run in the kernel its agent used, once its turn ended ``done``.

:func:`run_checks` binds ``reply`` (the turn's final reply) and runs the checks as one
cell (its result, scrubbed like every cell's, decides the case: :mod:`.outcome`). A hard
break of the case's run (``POST agent/break/{id}``, the server's stop) interrupts the
checks at once: the case is then an ``error`` saying so.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from jupyter_agent.runtime.evals.outcome import CaseOutcome

__all__ = ["CHECK_TIMEOUT_S", "run_checks"]

#: The longest the checks of one case may run.
CHECK_TIMEOUT_S: Final = 120.0
_POLL_S: Final = 0.1


async def run_checks(driver: Any, checks: str, outcome: CaseOutcome) -> None:
    """Run ``checks`` in the kernel of ``driver`` (the case's ``RunDriver``, its turn
    stored); the cell's result goes to ``outcome.checked``, a failure to run them to
    ``outcome.message``. Nothing runs when the turn did not end ``done``."""
    stored = driver.stored
    if not checks or stored is None or stored.turn.llm.stop_reason != "done":
        return
    turn = stored.turn
    reply = turn.replies[-1].text if turn.replies else ""
    try:
        handle = await driver.kernel.handle()
        await handle.run_cell("eval_reply", f"reply = {reply!r}", timeout_s=30.0)
        cell = asyncio.ensure_future(
            handle.run_cell("eval_checks", checks, timeout_s=CHECK_TIMEOUT_S)
        )
        while not cell.done():
            await asyncio.wait({cell}, timeout=_POLL_S)
            if driver.breaking and not cell.done():  # stopped: the kernel is interrupted
                await handle.interrupt()
                cell.cancel()
                outcome.message = "the checks were stopped (a hard stop of the case's run)"
                return
        outcome.checked = cell.result()
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # the case is an error; the eval goes on
        outcome.message = f"the checks could not run: {exc}"
