"""A run's lifecycle: one phase, its transitions guarded in one place.

=============  =============================================================================
``RESERVED``   its id is given out (a message sent while the chat's run was closed); it
               starts when that run has ended
``BREAK_ASKED`` reserved, and broken before it started: it starts, then breaks at once (so
               its turn still holds its messages)
``OPEN``       going, and takes the chat's mail (the run manager routes messages to it)
``WRAPPING``   a soft break was asked: new mail goes to the next run, but this one still
               drains what was routed to it and wraps up at its next drain
``CLOSED``     takes no more mail: its final reply is posted with the mailbox empty, or its
               loop is over
``BROKEN``     a hard break: takes no more mail, and effects that reach outside are cut
               or answered ``{"cancelled": "break_hard"}``
``STORED``     its turn is stored, with its end summary (one write: ``turn.append``)
``ENDED``      the run manager has handed the chat over to the next run
=============  =============================================================================

Every change goes through :meth:`RunLifecycle.move`; a move the table does not allow is a
bug of the host and raises :class:`IllegalTransition` (an internal error, never a user's).
Moves that change nothing (a second soft break, a hard break of a stored or ended run,
closing a broken run) are allowed and keep the phase.
"""

from __future__ import annotations

import enum
from typing import Final, Literal

__all__ = ["IllegalTransition", "Move", "RunLifecycle", "RunPhase"]


class RunPhase(enum.Enum):
    """Where a run is in its life (see the module docstring)."""

    RESERVED = "reserved"
    BREAK_ASKED = "break_asked"
    OPEN = "open"
    WRAPPING = "wrapping"
    CLOSED = "closed"
    BROKEN = "broken"
    STORED = "stored"
    ENDED = "ended"


Move = Literal["start", "soft_break", "hard_break", "close", "store", "end"]
"""What happens to a run: each a row of :data:`_MOVES`."""

_P = RunPhase
#: move -> {from: to}; a phase missing from a move's row cannot make that move.
_MOVES: Final[dict[Move, dict[RunPhase, RunPhase]]] = {
    "start": {_P.RESERVED: _P.OPEN, _P.BREAK_ASKED: _P.OPEN},
    "soft_break": {
        _P.RESERVED: _P.BREAK_ASKED,  # nothing to wrap up before its first model call
        _P.BREAK_ASKED: _P.BREAK_ASKED,
        _P.OPEN: _P.WRAPPING,
        _P.WRAPPING: _P.WRAPPING,
        _P.CLOSED: _P.CLOSED,
        _P.BROKEN: _P.BROKEN,
        _P.STORED: _P.STORED,
    },
    "hard_break": {
        _P.RESERVED: _P.BREAK_ASKED,
        _P.BREAK_ASKED: _P.BREAK_ASKED,
        _P.OPEN: _P.BROKEN,
        _P.WRAPPING: _P.BROKEN,
        _P.CLOSED: _P.BROKEN,
        _P.BROKEN: _P.BROKEN,
        _P.STORED: _P.STORED,
        _P.ENDED: _P.ENDED,  # a shutdown breaking every run may reach one just ended
    },
    "close": {
        _P.OPEN: _P.CLOSED,
        _P.WRAPPING: _P.CLOSED,
        _P.CLOSED: _P.CLOSED,
        _P.BROKEN: _P.BROKEN,
        _P.STORED: _P.STORED,
    },
    "store": {
        _P.OPEN: _P.STORED,
        _P.WRAPPING: _P.STORED,
        _P.CLOSED: _P.STORED,
        _P.BROKEN: _P.STORED,
    },
    "end": {
        _P.OPEN: _P.ENDED,
        _P.WRAPPING: _P.ENDED,
        _P.CLOSED: _P.ENDED,
        _P.BROKEN: _P.ENDED,
        _P.STORED: _P.ENDED,
    },
}

#: The phases in which a run takes the chat's mail (the driver's drains take it).
_TAKES_MAIL: Final = frozenset({_P.OPEN, _P.WRAPPING})


class IllegalTransition(RuntimeError):
    """A run was asked to make a move its phase does not allow: a bug of the host."""

    def __init__(self, run_id: str, phase: RunPhase, move: Move) -> None:
        super().__init__(f"run {run_id}: cannot {move} a run that is {phase.value}")
        self.run_id = run_id
        self.phase = phase
        self.move = move


class RunLifecycle:
    """The phase of one run (see the module docstring); shared by the run manager (which
    reserves, soft-breaks and ends it) and the run's driver (which opens, closes, breaks
    and stores it)."""

    def __init__(self, run_id: str, phase: RunPhase = RunPhase.OPEN) -> None:
        self.run_id = run_id
        self._phase = phase

    @property
    def phase(self) -> RunPhase:
        """The run's phase now."""
        return self._phase

    def move(self, move: Move) -> RunPhase:
        """Make ``move``; returns the phase it left. IllegalTransition when not allowed."""
        before = self._phase
        after = _MOVES[move].get(before)
        if after is None:
            raise IllegalTransition(self.run_id, before, move)
        self._phase = after
        return before

    @property
    def routed_here(self) -> bool:
        """True while the run manager routes the chat's messages to this run's mailbox."""
        return self._phase is RunPhase.OPEN

    @property
    def takes_mail(self) -> bool:
        """True while the run's drains (and a hard break) take the chat's mailbox."""
        return self._phase in _TAKES_MAIL

    @property
    def breaking(self) -> bool:
        """True once a hard break was asked for (effects reaching outside are cut)."""
        return self._phase in (RunPhase.BROKEN, RunPhase.BREAK_ASKED)

    @property
    def reserved(self) -> bool:
        """True while the run is reserved and has not started."""
        return self._phase in (RunPhase.RESERVED, RunPhase.BREAK_ASKED)

    def __repr__(self) -> str:
        return f"RunLifecycle({self.run_id!r}, {self._phase.name})"
