"""The Anthropic Messages API adapter (also the wire of the ``fake`` provider). Pure.

:func:`build_request` -> ``POST {base_url}/v1/messages`` with ``anthropic-version:
2023-06-01``; the transport adds ``x-api-key`` (no prefix) from the tier's credential ref.

- Parts: Text -> text; ToolCall -> tool_use; ToolResult -> tool_result (its images and PDFs
  as image / document blocks inside the result's content; ``is_error`` kept); Thinking ->
  its ``provider_state`` (the ``thinking`` / ``redacted_thinking`` block exactly as
  received, signature included), in the same assistant turn; a Thinking without such state
  (from another provider) is dropped. File: ``image/*`` -> image block (base64),
  ``application/pdf`` -> document block, ``text/*`` -> document with a text source; other
  types, and images for a model without vision, become a short text note.
- Consecutive messages of one role are merged (the API wants alternation), tool_result
  blocks first in a user turn; empty text is dropped (the API refuses it).
- Prompt caching: ``cache_control`` on the system block, on the last block of the chat's
  earlier turns (``params.history``: the prefix that stays the same from turn to turn) and
  on the last block of the two newest user turns (at most 4 breakpoints, the
  API's limit). Tools precede the system block in the cache prefix, so they are cached
  with it.
- Thinking per profile: ``off``; ``budget`` -> ``{"type": "enabled", "budget_tokens"}``
  (at least 1024 and below ``max_tokens``; skipped when ``max_tokens`` leaves no room);
  ``adaptive`` -> ``{"type": "adaptive"}``.
- Wrap-up calls: ``tool_choice_none`` keeps the tools (a history holding tool_use blocks
  must define them) and sends ``tool_choice: {"type": "none"}``.
- Text tool modes with ``supports_stop``: ``stop_sequences`` from :mod:`.fenced`.

:func:`parse_reply` maps ``stop_reason``: ``end_turn``/``stop_sequence`` -> done;
``tool_use`` -> tool; ``max_tokens``/``model_context_window_exceeded`` -> length;
``pause_turn`` -> done with ``stop_detail="pause_turn"`` (it only follows server-side tools,
which this agent never offers, so there is no call to run: ending the step is the safe
reading); ``refusal`` -> done with ``stop_detail="refusal"``; anything unknown -> done with
the raw reason. Usage: Anthropic's ``input_tokens`` already exclude cache reads and writes.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm.fenced import stop_sequences
from jupyter_agent.llm.spec import IMAGE_TYPES, RequestParams, RequestSpec
from jupyter_agent.messages import (
    File,
    LLMReply,
    Message,
    Part,
    Stop,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    from jupyter_agent.llm.profiles import Profile

__all__ = ["API_VERSION", "build_request", "parse_reply"]

API_VERSION = "2023-06-01"
_CACHE = {"type": "ephemeral"}
_STOPS: dict[str, Stop] = {
    "end_turn": "done",
    "stop_sequence": "done",
    "tool_use": "tool",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "pause_turn": "done",
    "refusal": "done",
}
_MIN_BUDGET = 1024


def build_request(params: RequestParams) -> RequestSpec:
    """The Messages API request for ``params`` (see the module doc for every rule)."""
    tier, stream = params.tier, params.stream
    profile = tier.profile
    limit = params.max_tokens or profile.max_output
    body: dict[str, Any] = {"model": tier.model, "max_tokens": limit}
    if params.system:
        body["system"] = [{"type": "text", "text": params.system, "cache_control": dict(_CACHE)}]
    body["messages"] = _wire_messages(params.messages, profile, history=params.history)
    if params.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in params.tools
        ]
        if params.tool_choice_none:
            body["tool_choice"] = {"type": "none"}
    thinking = _thinking(profile, limit)
    if thinking is not None:
        body["thinking"] = thinking
    if profile.tool_mode != "native" and profile.supports_stop:
        body["stop_sequences"] = stop_sequences(profile.tool_mode)
    if stream:
        body["stream"] = True
    return RequestSpec(
        url=f"{tier.base_url}/v1/messages",
        json=body,
        wire="anthropic",
        headers={"anthropic-version": API_VERSION},
        credential_ref=tier.api_key_ref,
        credential_header="x-api-key",
        credential_prefix="",
        stream=stream,
    )


def _thinking(profile: Profile, limit: int) -> dict[str, Any] | None:
    if profile.thinking == "adaptive":
        return {"type": "adaptive"}
    if profile.thinking == "budget":
        budget = min(max(profile.thinking_budget, _MIN_BUDGET), limit - 1)
        if budget >= _MIN_BUDGET:
            return {"type": "enabled", "budget_tokens": budget}
    return None


def file_block(part: File, profile: Profile) -> dict[str, Any]:
    """One File part as an Anthropic content block (image, document, or a text note)."""
    label = part.name or part.media_type
    if part.media_type in IMAGE_TYPES:
        if not profile.vision:
            return {"type": "text", "text": f"[image {label} omitted: this model has no vision]"}
        data = base64.b64encode(part.data).decode("ascii")
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": part.media_type, "data": data},
        }
    block: dict[str, Any]
    if part.media_type == "application/pdf":
        data = base64.b64encode(part.data).decode("ascii")
        block = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        }
    elif part.media_type.startswith("text/"):
        text = part.data.decode("utf-8", errors="replace")
        block = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    else:
        return {"type": "text", "text": f"[file {label} ({part.media_type}) not sent: unsupported]"}
    if part.name:
        block["title"] = part.name
    return block


def _blocks(msg: Message, profile: Profile) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in msg.parts:
        if isinstance(part, Text):
            if part.text.strip():
                out.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            out.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.args})
        elif isinstance(part, ToolResult):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
            content = [
                {"type": "text", "text": p.text} if isinstance(p, Text) else file_block(p, profile)
                for p in part.content
                if not isinstance(p, Text) or p.text.strip()
            ]
            if content:
                block["content"] = content
            if part.is_error:
                block["is_error"] = True
            out.append(block)
        elif isinstance(part, Thinking):
            state = part.provider_state
            if (
                msg.role == "assistant"
                and isinstance(state, dict)
                and state.get("type") in ("thinking", "redacted_thinking")
            ):
                out.append(dict(state))  # the block as received: signature untouched
        else:
            out.append(file_block(part, profile))
    return out


def _wire_messages(
    messages: Sequence[Message], profile: Profile, *, history: int = 0
) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    history_end: tuple[int, int] | None = None  # (wire item, block) of the history's end
    for i, msg in enumerate(messages):
        blocks = _blocks(msg, profile)
        if blocks:
            if wire and wire[-1]["role"] == msg.role:
                wire[-1]["content"].extend(blocks)
            else:
                wire.append({"role": msg.role, "content": blocks})
        if i == history - 1 and wire:
            history_end = (len(wire) - 1, len(wire[-1]["content"]) - 1)
    for item in wire:
        if item["role"] == "user":  # tool results must open the user turn that answers
            item["content"].sort(key=lambda b: b["type"] != "tool_result")
    if history_end is not None:
        _mark(wire[history_end[0]]["content"], history_end[1])
    _mark_cache(wire)
    return wire


def _mark(content: list[dict[str, Any]], index: int) -> None:
    content[index] = {**content[index], "cache_control": dict(_CACHE)}


def _mark_cache(wire: list[dict[str, Any]]) -> None:
    marked = 0
    for item in reversed(wire):
        if marked == 2:
            break
        if item["role"] != "user":
            continue
        _mark(item["content"], -1)
        marked += 1


def parse_reply(body: dict[str, Any]) -> LLMReply:
    """An LLMReply from a Messages API response body (streamed replies are assembled first)."""
    if not isinstance(body, dict) or body.get("type") == "error":
        raise ProviderProtocolError("the provider returned an error body", body=body)
    try:
        blocks = body["content"]
        reason = body.get("stop_reason")
        raw_usage = body.get("usage") or {}
    except (KeyError, TypeError):
        raise ProviderProtocolError("not an Anthropic message body") from None
    parts: list[Part] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                parts.append(Text(text=block["text"]))
        elif kind == "thinking":
            parts.append(Thinking(text=block.get("thinking"), provider_state=block))
        elif kind == "redacted_thinking":
            parts.append(Thinking(text=None, provider_state=block))
        elif kind == "tool_use":
            args = block.get("input")
            parts.append(
                ToolCall(
                    id=block["id"], name=block["name"], args=args if isinstance(args, dict) else {}
                )
            )
    stop: Stop = _STOPS.get(str(reason), "done")
    calls = any(isinstance(p, ToolCall) for p in parts)
    if stop == "tool" and not calls:
        stop = "done"
    elif stop == "done" and calls:
        stop = "tool"
    usage = Usage(
        input_tokens=int(raw_usage.get("input_tokens") or 0),
        output_tokens=int(raw_usage.get("output_tokens") or 0),
        cache_read_tokens=int(raw_usage.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw_usage.get("cache_creation_input_tokens") or 0),
    )
    return LLMReply(
        parts=tuple(parts),
        stop=stop,
        usage=usage,
        stop_detail=None if reason is None else str(reason),
        model=body.get("model"),
    )
