"""A small performer for model calls: ``config.get`` and ``http.post``, logged. I/O allowed.

:func:`perform` performs one effect and returns ``(data, error)`` the way the driver
records it: ``config.get`` looks the key up in a plain mapping (a missing key is None);
``http.post`` rebuilds the :class:`~jupyter_agent.llm.spec.RequestSpec` from the intent and
posts it with the :class:`~jupyter_agent.llm.transport.Transport` (which adds the credential
only now, after the intent was recorded), answering ``HttpReply.to_json()``; a
ProviderError becomes ``(None, error dict)`` (its ``to_json()`` plus ``type``: status,
redacted body and attempts, never a secret). Any other effect is a ValueError: this is not
the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jupyter_agent.effects import CONFIG_GET, HTTP_POST, Effect
from jupyter_agent.exceptions import ProviderError
from jupyter_agent.llm.spec import RequestSpec

if TYPE_CHECKING:
    from jupyter_agent.llm.transport import RetryInfo, Transport

__all__ = ["perform"]

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
