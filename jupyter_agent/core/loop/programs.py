"""Every program this code runs and replays, by its recorded name (pure).

:data:`PROGRAMS` maps a recorded ``name@vN`` to what it is: the chat loop's versions
(``toolcaller@v1..v7``, from :data:`jupyter_agent.core.loop.machine.PROGRAMS`) and the history
program ``history@v1`` (:mod:`jupyter_agent.core.history.program`) and the naming program
``title@v1`` (:mod:`jupyter_agent.core.history.naming`). :data:`SUB_PROGRAMS`
are the programs that run inside another, never as a run of their own: ``autorecall@v1``
(:mod:`jupyter_agent.core.memory.program`, a step of ``toolcaller@v4`` and later), named by a turn
record's and a log header's ``programs``. :func:`make` builds
the generator of one; a log header's ``program`` is looked up here by the driver and by
replay, so a new program is replayable the moment it is registered.

What a program's generator returns differs: a toolcaller returns the turn record, the
history program a :class:`~jupyter_agent.core.history.program.HistoryOutcome`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jupyter_agent.core.history.naming import TITLE_PROGRAM, title
from jupyter_agent.core.history.program import HISTORY_PROGRAM, history
from jupyter_agent.core.loop import machine as loop
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM
from jupyter_agent.effects import EffectGen

__all__ = ["PROGRAMS", "SUB_PROGRAMS", "family", "make"]

Factory = Callable[[str, str], EffectGen[Any]]
"""``(run_id, chat_id) -> the program's generator``."""


def _toolcaller(name: str) -> Factory:
    def factory(run_id: str, chat_id: str) -> EffectGen[Any]:
        return loop.program(name, run_id, chat_id)

    return factory


PROGRAMS: Final[dict[str, Factory]] = {
    **{name: _toolcaller(name) for name in loop.PROGRAMS},
    HISTORY_PROGRAM: history,
    TITLE_PROGRAM: title,
}


#: Programs run as a part of another (see the module docstring): sub-program -> its host.
SUB_PROGRAMS: Final[dict[str, str]] = {AUTORECALL_PROGRAM: "toolcaller@v8"}


def family(name: str) -> str:
    """The program's name without its version: ``history@v1`` -> ``history``."""
    return name.split("@", 1)[0]


def make(name: str, run_id: str, chat_id: str) -> EffectGen[Any]:
    """The generator of the recorded program ``name``; ValueError for one this code does not
    have."""
    factory = PROGRAMS.get(name)
    if name in SUB_PROGRAMS:
        raise ValueError(f"{name!r} runs inside {SUB_PROGRAMS[name]}, not as a run of its own")
    if factory is None:
        raise ValueError(f"unknown program {name!r}: this code has {', '.join(PROGRAMS)}")
    return factory(run_id, chat_id)
