"""Replay: feed a pure effect generator from a recorded effect log instead of the world.

The loop is a generator of effects (:data:`EffectGen`). Recording runs it with a driver
that performs each effect; replay runs it with a :class:`Replayer` that serves the recorded
results. The loop must ask for exactly the recorded top-level effects, in order:

- the asked intent (name, data, parent) is compared with the recorded one after a JSON
  round trip of the asked side (tuples become lists in the log), as canonical JSON, so key
  order and NaN never make a false mismatch;
- lines with a ``parent`` (app calls the host performed while a cell ran) are not the
  loop's to ask and are skipped;
- any difference, an extra effect, or a recorded effect left unasked raises
  :class:`NondeterminismError` naming the seq, with both intents (``{name, data}``).

A recorded effect with no result line (the run stopped there: a crash, or a hard break
whose result was never written) raises :class:`RunStopped` (a TraceError) once the loop
asks for it; a result ``{"cancelled": "break_hard"}`` is served like any other.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from jupyter_agent.core.loop.drive import drive
from jupyter_agent.effects import Effect, EffectGen, Result
from jupyter_agent.exceptions import NondeterminismError, TraceError
from jupyter_agent.trace.log import LoggedEffect, TraceFile, pair_effects

__all__ = ["Replayer", "RunStopped", "replay"]

T = TypeVar("T")


class RunStopped(TraceError):
    """The recorded run stopped at ``seq`` (intent written, no result): nothing to serve."""

    def __init__(self, seq: int, name: str) -> None:
        super().__init__(f"run stopped at seq {seq} ({name}): the log has no result for it")
        self.seq = seq
        self.name = name


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _roundtrip(value: Any) -> Any:
    """``value`` as the log would hold it (tuples as lists, keys as strings)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        # Not loggable at all: keep it as is; the comparison will report the difference.
        return value


def _shown(name: str, data: Any) -> dict[str, Any]:
    return {"name": name, "data": data}


class Replayer:
    """Serves recorded results to a loop asking for effects, checking each ask."""

    def __init__(self, trace: TraceFile) -> None:
        self._trace = trace
        effects = pair_effects(trace)
        self._effects: list[LoggedEffect] = [e for e in effects if e.parent is None]
        self._next_seq_after_log = (effects[-1].seq if effects else 0) + 1
        self._index = 0

    @property
    def position(self) -> int:
        """How many top-level effects were served so far."""
        return self._index

    @property
    def remaining(self) -> int:
        """How many recorded top-level effects are still unasked."""
        return len(self._effects) - self._index

    @property
    def next_seq(self) -> int:
        """The seq of the next recorded top-level effect (past the log's last when none)."""
        if self._index < len(self._effects):
            return self._effects[self._index].seq
        return self._next_seq_after_log

    @property
    def next_t(self) -> str | None:
        """The time of the next recorded top-level intent (None past the last)."""
        if self._index < len(self._effects):
            return self._effects[self._index].intent.t
        return None

    @property
    def trace(self) -> TraceFile:
        return self._trace

    def answer(self, effect: Effect) -> Result:
        """The recorded result of the next top-level effect, which must equal ``effect``.

        Raises NondeterminismError on a different intent or when the log has no more
        effects (``recorded`` None), and RunStopped when the recorded effect has no result.
        """
        intent = effect.intent()
        if self._index >= len(self._effects):
            asked = _roundtrip(intent)
            raise NondeterminismError(
                self._next_seq_after_log, None, _shown(effect.name, asked.get("data"))
            )
        logged = self._effects[self._index]
        recorded: dict[str, Any] = {"name": logged.name, "data": logged.data}
        if logged.parent is not None:  # pragma: no cover - filtered above
            recorded["parent"] = logged.parent
        # Plain equality first (C speed, key order ignored); only when that fails does the
        # log's own view decide: a JSON round trip (tuples become lists) compared as
        # canonical text (NaN is never equal to itself).
        asked = intent
        if recorded != intent:
            asked = _roundtrip(intent)
        if recorded != asked and _canonical(recorded) != _canonical(asked):
            raise NondeterminismError(
                logged.seq,
                _shown(logged.name, logged.data),
                _shown(effect.name, asked.get("data")),
            )
        if logged.result is None:
            raise RunStopped(logged.seq, logged.name)
        self._index += 1
        return logged.result.to_result()

    def finish(self) -> None:
        """The loop returned: raise NondeterminismError if a recorded effect is left unasked."""
        if self._index < len(self._effects):
            logged = self._effects[self._index]
            raise NondeterminismError(logged.seq, _shown(logged.name, logged.data), None)


def replay(gen: EffectGen[T], trace: TraceFile) -> T:
    """Drive the pure generator ``gen`` from ``trace`` and return what it returns.

    Raises NondeterminismError at the first difference (the generator is closed), RunStopped
    when it reaches the effect where the recorded run stopped, and whatever the generator
    itself raises.
    """
    replayer = Replayer(trace)
    value = drive(gen, replayer.answer)
    replayer.finish()
    return value
