"""``plan_first``: a ``toolcaller`` that plans before it acts (an example deploy, issue 16).

The entry point :func:`program` runs one turn like ``toolcaller@v4``, with one more step
between the setup and the tool loop:

1. :func:`jupyter_agent.core.loop.machine.setup` (version 4): ceilings, spaces, the tier, the
   chat's window, the opening drain, memory and autorecall, the system prompt;
2. :func:`.plan.plan`: a text-only model call for a short numbered plan, posted as a
   ``done: false`` bubble and kept in the conversation;
3. :func:`jupyter_agent.core.loop.machine.step` until it gives a cause (each step drains the
   mailbox first, so a message sent while the plan was written steers the first tool
   call), then :func:`jupyter_agent.core.loop.machine.end` (the final reply, or the wrap-up of a
   ceiling, a soft break or a cut reply) and the turn record.

Hard breaks end with a minimal ``break_hard`` turn and a failed model call with the
failure reply, exactly as ``toolcaller@v4`` does. The program is pure: it only yields
effects (through the loop's steps) and never does I/O.

The turn record's ``programs`` is left to the host: a deployed program does not know its
own version number or hash (the deploy assigns them), and the driver stores the list its
log header names (``toolcaller@v5#...``, ``llm@v1#...``, ...).
"""

from __future__ import annotations

from jupyter_agent.core.loop.machine import Turn, end, setup, step
from jupyter_agent.core.loop.steps import post_final, provider_failure_text, take_cancel_detail
from jupyter_agent.core.turns import EndCause, TurnRecord
from jupyter_agent.effects import EffectGen
from jupyter_agent.exceptions import ProviderError, RunCancelled

from .plan import plan

__all__ = ["program"]

#: The built-in loop version whose steps this program is made of.
LOOP_VERSION = 4


def program(run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """Run one turn of chat ``chat_id`` as run ``run_id``, planning first; return the
    turn record (see the module docstring)."""
    turn = yield from setup(run_id, chat_id, version=LOOP_VERSION)
    if isinstance(turn, TurnRecord):  # it ended before the first model call
        return turn
    turn.state.programs = None  # the host's to say (see the module docstring)
    try:
        cause = yield from _run(turn)
        return (yield from end(turn, cause))
    except RunCancelled as cancel:
        take_cancel_detail(turn.state, cancel)
        return (yield from turn.finish("break_hard", "break_hard"))
    except ProviderError as err:
        turn.state.model_calls += 1  # it was made; its usage (none billed) stays 0
        try:
            yield from post_final(turn.state, provider_failure_text(err, attempts=True))
        except RunCancelled as cancel:  # broken while saying so: the turn still gets written
            take_cancel_detail(turn.state, cancel)
            return (yield from turn.finish("break_hard", "break_hard"))
        return (yield from turn.finish("error", "error"))


def _run(turn: Turn) -> EffectGen[EndCause]:
    """The plan, then the tool loop's steps until one gives the cause to end with."""
    cause = yield from plan(turn)
    while cause is None:
        cause = yield from step(turn, drain_first=True)
    return cause
