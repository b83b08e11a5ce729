"""Replay a recorded run of a program and check it is identical.

:func:`replay_run` feeds the program its log's header names (any of
:data:`jupyter_agent.core.programs.PROGRAMS`: the toolcaller loop, the history program)
from the run's log (no model, no kernel): every effect the program asks for must match the
log one by one, and for the loop the turn record it produces must equal the recorded one
(the ``turn.append`` intent; a history run's summary is its ``chunk.store`` intent, compared
like every effect). Any difference raises
:class:`~jupyter_agent.exceptions.NondeterminismError` naming the seq.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.codec import dump_dict
from jupyter_agent.core.history_program import HistoryOutcome
from jupyter_agent.core.programs import PROGRAMS, make
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.exceptions import NondeterminismError, TraceError
from jupyter_agent.trace.log import TraceFile, read_log
from jupyter_agent.trace.replay import replay

__all__ = ["ReplayOutcome", "replay_run", "verify_run"]


@dataclass(frozen=True, kw_only=True)
class ReplayOutcome:
    """What a replay found: identical, or the diverging seq with both sides."""

    identical: bool
    run_id: str
    seq: int | None = None
    recorded: Any = None
    asked: Any = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


def _recorded_turn(trace: TraceFile) -> tuple[int, dict[str, Any]] | None:
    for line in trace.lines:
        if line.phase == "intent" and line.name == "turn.append" and line.parent is None:
            return line.seq, line.data
    return None


def replay_run(trace: TraceFile) -> TurnRecord | HistoryOutcome:
    """Replay the program of a recorded run; returns what it produced: the loop's turn, the
    history program's outcome (see the module docstring)."""
    name = trace.header.get("program")
    if name not in PROGRAMS:
        raise TraceError(f"cannot replay program {name!r}: this code has {', '.join(PROGRAMS)}")
    run_id, chat_id = trace.header.get("run_id"), trace.header.get("chat_id")
    if not isinstance(run_id, str) or not isinstance(chat_id, str):
        raise TraceError("the log header names no run_id / chat_id")
    produced: TurnRecord | HistoryOutcome = replay(make(str(name), run_id, chat_id), trace)
    if not isinstance(produced, TurnRecord):
        return produced
    recorded = _recorded_turn(trace)
    if recorded is not None and produced.to_json() != recorded[1]:
        raise NondeterminismError(recorded[0], recorded[1], produced.to_json())
    return produced


def verify_run(source: TraceFile | Path | str) -> ReplayOutcome:
    """Replay a run and report instead of raising on a divergence."""
    trace = source if isinstance(source, TraceFile) else read_log(source)
    run_id = str(trace.header.get("run_id", ""))
    try:
        replay_run(trace)
    except NondeterminismError as err:
        return ReplayOutcome(
            identical=False,
            run_id=run_id,
            seq=err.seq,
            recorded=err.recorded,
            asked=err.asked,
            message=str(err),
        )
    return ReplayOutcome(identical=True, run_id=run_id)
