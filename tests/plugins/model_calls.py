"""Run an effect generator with the model-call performer, logging every effect (tests).

:func:`run_gen` steps an effect generator (such as :func:`~jupyter_agent.llm.chat.chat`)
to its end with :func:`~jupyter_agent.runtime.loop.model_calls.perform`, writing each effect's
intent to the :class:`~jupyter_agent.trace.log.EffectLog` before performing it and its
result after. If the awaiting task is cancelled mid-effect (a hard break), the result line
reads ``{"cancelled": "break_hard"}``, the generator is closed and ``CancelledError``
propagates. (The server's driver does this for real runs; this is the tests' small one.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, TypeVar

from jupyter_agent.core.loop.drive import drive_async
from jupyter_agent.effects import Effect, EffectGen, Result
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.loop.model_calls import OnDelta, OnRetry, perform
from jupyter_agent.trace.log import EffectLog

__all__ = ["run_gen"]

T = TypeVar("T")


async def run_gen(
    gen: EffectGen[T],
    *,
    log: EffectLog,
    config: Mapping[str, Any],
    transport: Transport,
    on_delta: OnDelta | None = None,
    on_retry: OnRetry | None = None,
) -> T:
    """Run ``gen`` to its return value, logging every effect's intent and result."""

    async def logged(effect: Effect) -> Result:
        seq = log.intent(effect)
        try:
            data, error = await perform(
                effect, config=config, transport=transport, on_delta=on_delta, on_retry=on_retry
            )
        except asyncio.CancelledError:
            log.result(seq, effect.name, {"cancelled": "break_hard"})
            raise
        return log.result(seq, effect.name, data, error=error)

    return await drive_async(gen, logged)
