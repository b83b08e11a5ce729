"""A run's ceilings: what ``config.get {"key": "ceilings"}`` answers, typed.

:class:`RunCeilings` holds the value exactly as the run manager built it (the ceiling
traits, then the approval policy: :attr:`RunCeilings.recorded`), because that value is
recorded in the run's log and a deployed program's header, and an old log replays only
against the same bytes. The host reads it through typed properties (:attr:`limits`: the
loop's :class:`~jupyter_agent.core.loop.runstate.Ceilings`; :attr:`approval`,
:attr:`model_deadline_s`, :attr:`max_wall_s`); it is also a read-only mapping, for the
program guard and the history runs that count with the recorded value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.loop.runstate import Ceilings

__all__ = ["RunCeilings"]


@dataclass(frozen=True, eq=False)
class RunCeilings(Mapping[str, Any]):
    """One run's ceilings (see the module docstring). Keys the run was not given are
    absent from :attr:`recorded` (the loop then uses its defaults). Equal to a mapping
    with the same items."""

    recorded: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: RunCeilings | Mapping[str, Any] | None) -> RunCeilings:
        """``value`` as ceilings (a mapping is copied as given, in its order)."""
        if isinstance(value, RunCeilings):
            return value
        return cls(dict(value or {}))

    def to_json(self) -> dict[str, Any]:
        """The value as recorded (``config.get ceilings``, a deployed program's header)."""
        return dict(self.recorded)

    @property
    def limits(self) -> Ceilings:
        """The loop's view: every ceiling, the defaults filled in (ValueError on a value
        of the wrong type, as the loop would raise)."""
        return Ceilings.from_json(self.to_json())

    @property
    def approval(self) -> str:
        """Which cells wait for the person: ``none`` (the default), ``writes``, ``every_cell``."""
        return str(self.recorded.get("approval") or "none")

    @property
    def model_deadline_s(self) -> float:
        """The host's cap on one model call's deadline, in seconds (0: none)."""
        return float(self.recorded.get("model_deadline_s") or 0)

    @property
    def max_wall_s(self) -> float:
        """The run's wall-clock ceiling in seconds (0: none given)."""
        return float(self.recorded.get("max_wall_s") or 0)

    def __getitem__(self, key: str) -> Any:
        return self.recorded[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.recorded)

    def __len__(self) -> int:
        return len(self.recorded)
