"""What the loop keeps while a run goes on: counters, usage, cost, replies, steering, and
whether a ceiling (:class:`~jupyter_agent.core.ceilings.Ceilings`, also importable from here)
is reached.

Pure bookkeeping, separate from :mod:`jupyter_agent.core.loop.machine` so the loop reads as the
seed's cycle and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.loop.inbox import NOTICE_PREFIX as NOTICE
from jupyter_agent.core.turns import EndCause, Reply, Steering, TurnRecall, TurnWindow
from jupyter_agent.messages import Usage

__all__ = ["Ceilings", "RunState", "parse_time", "seconds_between"]


def parse_time(iso: str) -> datetime:
    """Parse the ISO-8601 ``...Z`` times the clock effect returns."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def seconds_between(start: str, end: str) -> float:
    """Seconds from ``start`` to ``end`` (ISO times)."""
    return (parse_time(end) - parse_time(start)).total_seconds()


@dataclass(kw_only=True)
class RunState:
    """Mutable counters of one run (the loop owns the only instance)."""

    started: str
    model_calls: int = 0
    cells: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    replies: list[Reply] = field(default_factory=list)
    steering: list[Steering] = field(default_factory=list)
    model: str | None = None
    soft_break: bool = False
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: What the boot window held (``toolcaller@v3``; None before it is built, and in v1/v2).
    window: TurnWindow | None = None
    #: What autorecall showed the model (``toolcaller@v4``; None when nothing was recalled).
    recall: TurnRecall | None = None
    #: The programs the turn runs (``toolcaller@v4`` on; None in older versions' records).
    programs: tuple[str, ...] | None = None
    #: ``toolcaller@v7``: how many of :attr:`steering` a model call has read (None: the
    #: version does not count; every message taken is the turn's).
    steering_read: int | None = None
    #: ``toolcaller@v7``: each failing cell or command (its code and its error) and how
    #: many times it failed the same way (None: the version does not count).
    failures: dict[tuple[str, str], int] | None = None
    #: The last failure :func:`run_tool` saw (its code and error), for :attr:`failures`.
    last_failure: tuple[str, str] | None = None

    def add_call(self, usage: Usage, cost: float | None, model: str | None) -> None:
        """Count one model call; cost becomes unknown (None) once any call's price is."""
        self.model_calls += 1
        self.usage = self.usage + usage
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        if model:
            self.model = model

    def read_steering(self) -> None:
        """A model call is about to read the messages taken so far (v7 counts them)."""
        if self.steering_read is not None:
            self.steering_read = len(self.steering)

    def read_part(self) -> tuple[Steering, ...]:
        """The steering the turn holds: in v7 only the messages a model call read, and the
        host's notices (a message taken after the last call is left for the next turn)."""
        if self.steering_read is None:
            return tuple(self.steering)
        read = self.steering[: self.steering_read]
        late = [s for s in self.steering[self.steering_read :] if s.text.startswith(NOTICE)]
        return (*read, *late)

    def count_failure(self) -> int:
        """Count :attr:`last_failure` (v7); how many times it has happened (0: none)."""
        failure, self.last_failure = self.last_failure, None
        if self.failures is None or failure is None:
            return 0
        self.failures[failure] = self.failures.get(failure, 0) + 1
        return self.failures[failure]

    def ceiling_hit(self, ceilings: Ceilings, now: str) -> EndCause | None:
        """The first ceiling the run has reached, if any (checked before each model call)."""
        if self.model_calls >= ceilings.max_model_calls:
            return "ceiling:model_calls"
        if self.cells >= ceilings.max_cells:
            return "ceiling:cells"
        if seconds_between(self.started, now) >= ceilings.max_wall_s:
            return "ceiling:wall_s"
        if self.cost is not None and self.cost >= ceilings.max_cost_usd:
            return "ceiling:cost_usd"
        return None
