"""The effect log's fault hook, for tests only (``docs/fault-injection.md``).

The environment variable :data:`FAULT_ENV` (read once, at import) set to
``kill:before:NAME[:N]`` or ``kill:after:NAME[:N]`` makes the process SIGKILL itself at
the Nth (default 1st) effect called NAME of any log in this process: ``before`` right after
its intent line is on disk, ``after`` right after its result line is
(:func:`fault_point`, called by :class:`~jupyter_agent.trace.log.EffectLog`). Unset, it
costs one ``is None`` test.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from typing import Final, Literal

from jupyter_agent.effects import EFFECT_NAMES

__all__ = ["FAULT", "FAULT_ENV", "Fault", "fault_point", "parse_fault"]

FAULT_ENV: Final = "JUPYTER_AGENT_FAULT"


@dataclass(frozen=True)
class Fault:
    """Where the fault hook kills the process: the ``nth`` ``name`` effect's ``when`` line."""

    when: Literal["before", "after"]
    name: str
    nth: int = 1


def parse_fault(spec: str | None) -> Fault | None:
    """The fault :data:`FAULT_ENV` asks for (None when unset or empty); ValueError if bad."""
    if not spec:
        return None
    parts = spec.strip().split(":")
    nth = 1
    if len(parts) == 4:
        try:
            nth = int(parts[3])
        except ValueError:
            nth = 0
        parts = parts[:3]
    if len(parts) != 3 or parts[0] != "kill" or parts[1] not in ("before", "after") or nth < 1:
        raise ValueError(
            f"{FAULT_ENV}={spec!r}: expected kill:before:NAME[:N] or kill:after:NAME[:N]"
        )
    if parts[2] not in EFFECT_NAMES:
        raise ValueError(
            f"{FAULT_ENV}={spec!r}: unknown effect {parts[2]!r} (one of {sorted(EFFECT_NAMES)})"
        )
    when: Literal["before", "after"] = "before" if parts[1] == "before" else "after"
    return Fault(when=when, name=parts[2], nth=nth)


FAULT: Final = parse_fault(os.environ.get(FAULT_ENV))
_fault_seen = 0  # effects matching FAULT so far, in this process


def fault_point(when: str, name: str, fd: int) -> None:
    """Kill the process here if the fault hook names this line (see :mod:`jupyter_agent.trace.log`).

    Called with the log's lock held, right after the line was written: the line is made
    durable first, so what a test finds on disk is exactly what a real crash leaves.
    """
    global _fault_seen
    fault = FAULT
    if fault is None or fault.when != when or fault.name != name:
        return
    _fault_seen += 1
    if _fault_seen == fault.nth:
        getattr(os, "fdatasync", os.fsync)(fd)  # the line on disk, as a crash leaves it
        os.kill(os.getpid(), signal.SIGKILL)
