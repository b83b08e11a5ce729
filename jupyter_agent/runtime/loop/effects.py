"""Running one effect: intent line, performer, result line; and a hard break's cut.

:class:`EffectRunner` writes each effect's intent to the run's log (synced first when the
log's policy wants it, in a worker thread), performs it through the performer the table
names, scrubs what it answers (what is recorded and what the loop reads hold no known
secret) and writes the result line. Effects that reach outside (:data:`CANCELLABLE`) run
as a task the run's hard break can cut (:meth:`EffectRunner.cut`); once the run is broken
they are answered ``{"cancelled": "break_hard"}`` (plus what the driver adds: see
``cancelled`` below) without being performed. Nested effects (an in-cell app call and the
model calls it makes) are logged and performed the same way, but never tracked as the
effect in flight: cutting the cell cuts them with it.

A performer answers an :data:`Outcome`: ``(data, EffectError or None)``; an exception it
raises is the effect's error (:class:`EffectError`), never a crash of the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.effects import (
    APP_CALL,
    APPROVAL_WAIT,
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    HTTP_POST,
    Effect,
    Result,
)
from jupyter_agent.exceptions import ProviderError
from jupyter_agent.runtime.loop.phase import RunLifecycle
from jupyter_agent.runtime.secrets import Scrubber
from jupyter_agent.trace.log import EffectLog

__all__ = ["CANCELLABLE", "EffectError", "EffectRunner", "Outcome", "Performer"]

log = logging.getLogger("jupyter_agent.runtime.loop.driver")

#: Effects a hard break cancels in flight, and answers as cancelled without performing after.
CANCELLABLE = frozenset({HTTP_POST, CELL_RUN, BASH_RUN, APP_CALL, CHAT_POST, APPROVAL_WAIT})


@dataclass(frozen=True)
class EffectError:
    """A failed effect, as its result line records it: ``{"type", "message"}``, or for a
    provider's failure its recorded fields (``type`` first when the performer named it)."""

    type: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, type_: str, message: str) -> EffectError:
        """An error of ``type_`` saying ``message``."""
        return cls(type_, {"message": message})

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EffectError:
        """An error as a performer recorded it (``type`` first, when there is one)."""
        rest = {k: v for k, v in data.items() if k != "type"}
        return cls(str(data["type"]) if "type" in data else None, rest)

    @property
    def message(self) -> str:
        """What it says."""
        return str(self.fields.get("message", ""))

    def to_json(self) -> dict[str, Any]:
        """The ``error`` of the effect's result line."""
        head = {} if self.type is None else {"type": self.type}
        return {**head, **self.fields}


Outcome = tuple[Any, EffectError | None]
"""What a performer answers: the result data, and an error or None."""

Performer = Callable[[Effect, int], Awaitable[Outcome]]
"""Performs one effect (with its seq in the run's log)."""

Cancelled = Callable[[str, int], dict[str, Any]]
"""The result of effect ``(name, seq)`` cut by a hard break (``{"cancelled": ...}``)."""


class EffectRunner:
    """Logs and performs the effects of one run (see the module docstring)."""

    def __init__(
        self,
        log_: EffectLog,
        performers: Mapping[str, Performer],
        *,
        lifecycle: RunLifecycle,
        scrubber: Callable[[], Scrubber],
        cancelled: Cancelled,
    ) -> None:
        """``scrubber`` gives the run's scrubber at each effect (the services' may be
        replaced while a run goes on); ``cancelled`` builds a cut effect's result."""
        self.log = log_
        self.performers = performers
        self.lifecycle = lifecycle
        self._scrubber = scrubber
        self._cancelled = cancelled
        self._inflight: asyncio.Task[tuple[Any, dict[str, Any] | None]] | None = None
        self._inflight_name: str | None = None

    async def log_intent(self, effect: Effect) -> int:
        """Write the intent (the OS has it before the effect starts); when the log's sync
        policy wants it on disk first (an outside effect under ``effect``, the turn's
        store under both), fdatasync in a worker thread, never on the event loop."""
        seq = self.log.intent(effect, durable=False)
        if self.log.sync_before(effect.name):
            await asyncio.to_thread(self.log.sync)
        return seq

    async def perform(self, effect: Effect) -> Result:
        """Log and perform one effect of the loop; returns its recorded result."""
        seq = await self.log_intent(effect)
        if self.lifecycle.breaking and effect.name in CANCELLABLE:
            return self.log.result(seq, effect.name, self._cancelled(effect.name, seq))
        if effect.name not in CANCELLABLE:
            # In-process effects (config, clock, ids, mailbox, the store): nothing to cancel,
            # so no task and no trip through the event loop.
            data, error = await self.do(effect, seq)
            return self.log.result(seq, effect.name, data, error=error)
        task = asyncio.ensure_future(self.do(effect, seq))
        self._inflight, self._inflight_name = task, effect.name
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._inflight = self._inflight_name = None
        if task.cancelled():
            return self.log.result(seq, effect.name, self._cancelled(effect.name, seq))
        data, error = task.result()
        return self.log.result(seq, effect.name, data, error=error)

    async def perform_nested(self, effect: Effect) -> Result:
        """Log and perform an effect made on behalf of a cell (its ``parent`` is set)."""
        seq = await self.log_intent(effect)
        if self.lifecycle.breaking:
            return self.log.result(seq, effect.name, {"cancelled": "break_hard"})
        data, error = await self.do(effect, seq)
        return self.log.result(seq, effect.name, data, error=error)

    async def do(self, effect: Effect, seq: int) -> tuple[Any, dict[str, Any] | None]:
        """Perform one effect through its performer; returns (result data, error JSON or
        None), scrubbed."""
        performer = self.performers.get(effect.name)
        if performer is None:
            error = EffectError.of("UnknownEffect", f"no performer for {effect.name}")
            return None, error.to_json()
        try:
            outcome = await performer(effect, seq)
        except ProviderError as err:
            outcome = None, EffectError(None, err.to_json())
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:  # reported to the loop as a failed effect, never a crash
            log.warning("effect %s (seq %d) failed: %s", effect.name, seq, type(err).__name__)
            outcome = None, EffectError.of(type(err).__name__, str(err))
        data, failed = outcome
        cleaned: tuple[Any, dict[str, Any] | None] = self._scrubber().clean_json(
            (data, failed.to_json() if failed is not None else None)
        )
        return cleaned

    def cut(self) -> str | None:
        """Cancel the effect in flight, if any; returns its name (None: nothing was)."""
        task, name = self._inflight, self._inflight_name
        if task is None or task.done():
            return None
        task.cancel()
        return name
