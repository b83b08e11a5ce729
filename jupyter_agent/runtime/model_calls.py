"""A small performer for model calls: ``config.get`` and ``http.post``, logged. I/O allowed.

:func:`perform` performs one effect and returns ``(data, error)`` the way the driver
records it: ``config.get`` looks the key up in a plain mapping (a missing key is None);
``http.post`` rebuilds the :class:`~jupyter_agent.llm.spec.RequestSpec` from the intent and
posts it with the :class:`~jupyter_agent.llm.transport.Transport` (which adds the credential
only now, after the intent was recorded), answering ``HttpReply.to_json()``; a
ProviderError becomes ``(None, error dict)`` (its ``to_json()`` plus ``type``: status,
redacted body and attempts, never a secret). Any other effect is a ValueError: this is not
the driver.

:func:`run_gen` steps an effect generator (such as
:func:`~jupyter_agent.llm.chat.chat`) to its end, writing each effect's intent to the
:class:`~jupyter_agent.trace.log.EffectLog` before performing it and its result after. If
the awaiting task is cancelled mid-effect (a hard break), the result line reads
``{"cancelled": "break_hard"}``, the generator is closed and ``CancelledError`` propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.drive import drive_async
from ..core.effects import CONFIG_GET, HTTP_POST, Effect, EffectGen, Result
from ..exceptions import ProviderError
from ..llm.spec import RequestSpec

if TYPE_CHECKING:
    from ..llm.transport import RetryInfo, Transport
    from ..trace.log import EffectLog

__all__ = ["perform", "run_gen"]

T = TypeVar("T")
OnDelta = Callable[[str], None]
OnRetry = Callable[["RetryInfo"], None]


async def perform(
    effect: Effect,
    *,
    config: Mapping[str, Any],
    transport: Transport,
    on_delta: OnDelta | None = None,
    on_retry: OnRetry | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """Perform ``config.get`` or ``http.post``; returns ``(result data, error or None)``."""
    if effect.name == CONFIG_GET:
        return config.get(str(effect.data.get("key"))), None
    if effect.name == HTTP_POST:
        spec = RequestSpec.from_intent(effect.data)
        try:
            reply = await transport.post(spec, on_delta=on_delta, on_retry=on_retry)
        except ProviderError as err:
            return None, {"type": type(err).__name__, **err.to_json()}
        return reply.to_json(), None
    raise ValueError(f"model_calls.perform cannot perform {effect.name!r}")


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
