"""``chat``: one model call as a pure effect generator (llm@v1's entry point).

:func:`chat` resolves the tier (two ``config.get`` effects) when given a name, builds the
request with the tier's adapter (:data:`ADAPTERS`), yields exactly ONE ``http.post``
effect whose data is the request's intent (no credential: the transport adds it after the
intent is recorded), and turns the recorded result into a :class:`ChatResult`:

- a cancelled result (hard break) raises :class:`~jupyter_agent.exceptions.RunCancelled`;
- a result with ``error`` raises the matching ProviderError subclass, rebuilt from the
  recorded error dict (status, redacted body, attempts; never a secret);
- otherwise the body is parsed by the adapter, its text valid Unicode (a lone surrogate
  becomes U+FFFD, also in tool-call arguments; :mod:`jupyter_agent.text`). In a text
  tool mode (profile ``fenced`` or ``xml``) the reply's text is parsed into ToolCalls by
  :mod:`.fenced`; a malformed call sets ``format_error`` (the loop shows it to the model)
  and the reply keeps its text.
  A reply that stopped for ``length`` is not parsed for calls (a truncated block is not
  an error the model can fix).

:func:`build_request` is the pure request half, shared by ``chat`` and the golden tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from jupyter_agent.codec import load
from jupyter_agent.effects import HTTP_POST, Effect, EffectGen
from jupyter_agent.exceptions import (
    CredentialError,
    ProviderError,
    ProviderFailure,
    ProviderProtocolError,
    ProviderStatusError,
    ProviderTimeout,
    RetryAfterTooLong,
    RunCancelled,
)
from jupyter_agent.llm import anthropic, openai, openai_compatible
from jupyter_agent.llm.fenced import parse_text_tool_calls, to_text_mode
from jupyter_agent.llm.profiles import cost_usd
from jupyter_agent.llm.spec import HttpReply, RequestParams, RequestSpec
from jupyter_agent.llm.tiers import Tier, resolve_tier
from jupyter_agent.messages import LLMReply, Message, Part, Text
from jupyter_agent.text import repair_json
from jupyter_agent.tools import BASH, RUN_CELL, ToolSpec

__all__ = [
    "ADAPTERS",
    "Adapter",
    "ChatResult",
    "build_request",
    "chat",
    "provider_error_from_json",
]


class Adapter(Protocol):
    """What every provider adapter module offers (both functions pure)."""

    def build_request(self, params: RequestParams) -> RequestSpec: ...

    def parse_reply(self, body: dict[str, Any]) -> LLMReply: ...


ADAPTERS: dict[str, Adapter] = {
    "anthropic": anthropic,
    "fake": anthropic,  # the fake provider speaks the Anthropic wire
    "openai": openai,
    "openai-compatible": openai_compatible,
}
"""provider name -> adapter module."""


@dataclass(frozen=True, kw_only=True)
class ChatResult:
    """One model call's outcome: the reply, the tier that answered, its cost, any text-mode
    format error (the loop shows it to the model and asks again)."""

    reply: LLMReply
    tier: Tier
    cost_usd: float | None
    format_error: str | None = None


_ERRORS: dict[str, type[ProviderError]] = {
    cls.__name__: cls
    for cls in (
        ProviderError,
        ProviderStatusError,
        ProviderTimeout,
        ProviderProtocolError,
        RetryAfterTooLong,
        CredentialError,
    )
}


def provider_error_from_json(error: dict[str, Any]) -> ProviderError:
    """The ProviderError a recorded error dict describes (``type`` or ``error`` names the class).

    The dict is a :class:`~jupyter_agent.exceptions.ProviderFailure`, with the ``type`` the
    driver adds; a dict that is not one (ValueError) fails like a malformed reply.
    """
    try:
        failure: ProviderFailure = load(ProviderFailure, error)
    except ValueError:
        raise ProviderProtocolError("the http.post error is not a provider failure") from None
    kind = str(error.get("type") or failure.error)
    cls = _ERRORS.get(kind, ProviderError)
    return cls(
        failure.message or kind,
        status=failure.status,
        body=failure.body,
        attempts=list(failure.attempts),
    )


def build_request(params: RequestParams) -> RequestSpec:
    """The request for one call, pure.

    - Text tool modes: the history is rewritten by :func:`.fenced.to_text_mode` and no tool
      schema is sent; ``system`` must already hold :func:`.fenced.render_tools_for_prompt`
      (the loop composes it so it is fingerprinted).
    - Native mode with ``tools=()`` over a history that holds tool calls (the wrap-up call):
      the tools named in the history are sent with ``tool_choice`` none, because Anthropic
      refuses tool_use blocks without tool definitions; the model cannot call them.
    """
    tier = params.tier
    mode = tier.profile.tool_mode
    if mode != "native":
        messages = to_text_mode(params.messages, mode)
        params = replace(params, messages=messages, tools=(), tool_choice_none=False)
    elif not params.tools:
        used = {c.name for m in params.messages for c in m.tool_calls}
        if used:
            tools = tuple(t for t in (RUN_CELL, BASH) if t.name in used)
            params = replace(params, tools=tools, tool_choice_none=True)
    return ADAPTERS[tier.provider].build_request(params)


def _apply_text_mode(
    reply: LLMReply, mode: str, tools: Sequence[ToolSpec]
) -> tuple[LLMReply, str | None]:
    if reply.stop == "length" or not tools:
        return reply, None
    text = "".join(p.text for p in reply.parts if isinstance(p, Text))
    parsed, error = parse_text_tool_calls(text, mode, tools)
    if error is not None:
        return reply, error
    kept: list[Part] = [p for p in reply.parts if not isinstance(p, Text)]
    parts = (*kept, *parsed)
    stop = "tool" if any(p for p in parsed if not isinstance(p, Text)) else reply.stop
    return replace(reply, parts=parts, stop=stop), None


def chat(
    messages: Sequence[Message],
    *,
    system: str,
    tier: str | Tier,
    tools: Sequence[ToolSpec],
    stream: bool = True,
    max_tokens: int | None = None,
    tool_choice_none: bool = False,
    history: int = 0,
) -> EffectGen[ChatResult]:
    """One model call: at most two ``config.get`` effects, then exactly one ``http.post``.

    ``history``: how many leading ``messages`` are the stable history prefix
    (:class:`~.spec.RequestParams`)."""
    if isinstance(tier, str):
        tier = yield from resolve_tier(tier)
    spec = build_request(
        RequestParams(
            messages=messages,
            system=system,
            tier=tier,
            tools=tools,
            stream=stream,
            max_tokens=max_tokens,
            tool_choice_none=tool_choice_none,
            history=history,
        )
    )
    result = yield Effect(name=HTTP_POST, data=spec.to_intent())
    if result.cancelled:
        raise RunCancelled(str(result.data.get("cancelled", "break_hard")), detail=result.data)
    if result.error is not None:
        raise provider_error_from_json(result.error)
    try:
        http = HttpReply.from_json(result.data)
    except (KeyError, TypeError, ValueError):
        raise ProviderProtocolError("the http.post result is not a reply") from None
    if http.status >= 400:
        raise ProviderStatusError(f"provider answered {http.status}", status=http.status)
    try:
        # Repaired again here for results recorded before the transport repaired them.
        reply = ADAPTERS[tier.provider].parse_reply(repair_json(http.json))
    except ProviderError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ProviderProtocolError(
            f"malformed {tier.wire} reply ({type(exc).__name__})", status=http.status
        ) from None
    format_error = None
    mode = tier.profile.tool_mode
    if mode != "native" and not tool_choice_none:
        reply, format_error = _apply_text_mode(reply, mode, tools)
    return ChatResult(
        reply=reply,
        tier=tier,
        cost_usd=cost_usd(tier.profile, reply.usage),
        format_error=format_error,
    )
