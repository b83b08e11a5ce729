"""The OpenAI Responses API half of the OpenAI adapter (see :mod:`.openai`). Pure.

Request body rules:

- ``instructions`` holds the system prompt; ``input`` holds the conversation as items:
  user messages (``input_text`` / ``input_image`` / ``input_file`` parts), assistant text
  (``{"role": "assistant", "content": text}``), ``function_call`` items (``call_id``,
  ``name``, JSON-string ``arguments``), ``function_call_output`` items (the result's text;
  ``is_error`` adds an ``[error]`` prefix; its images and PDFs move to one user message
  right after the outputs, as in Chat Completions), and ``reasoning`` items.
- Reasoning round trip: a Thinking whose ``provider_state`` is a ``reasoning`` item (as
  parsed from a reply) is sent back in place, with every key and string unchanged
  (``encrypted_content`` byte-exact) except ``id``, which is left out: with ``store:
  false`` nothing is kept server-side, and the API answers an item id it cannot find with
  "Item with id 'rs_...' not found"; the encrypted content is what carries the reasoning.
  For the same reason ``function_call`` items are sent without their ``fc_`` id.
- ``store: false`` always; for a thinking profile also ``include:
  ["reasoning.encrypted_content"]`` (and ``reasoning.effort`` when the profile sets one).
  No reasoning summary is requested (it needs a verified organisation).
- ``max_output_tokens``; ``tool_choice: "none"`` for wrap-up calls; the API has no stop
  sequences, so text tool modes rely on the prompt alone.

Replies: ``status`` ``completed`` -> done (tool when it holds function calls);
``incomplete`` with reason ``max_output_tokens`` -> length; any other incomplete reason
(``content_filter``) -> done with that reason in ``stop_detail``. Usage: ``input_tokens -
input_tokens_details.cached_tokens`` -> input; cached -> cache_read; ``output_tokens``
(reasoning included) -> output; ``output_tokens_details.reasoning_tokens`` -> reasoning.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm.spec import IMAGE_TYPES, RequestParams
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
from jupyter_agent.text import repair_json

if TYPE_CHECKING:
    from jupyter_agent.llm.profiles import Profile

__all__ = ["build_body", "input_items", "parse_reply"]


def build_body(params: RequestParams) -> dict[str, Any]:
    """The ``POST /responses`` body (see the module doc)."""
    messages, system, tools, tier = params.messages, params.system, params.tools, params.tier
    stream, max_tokens, tool_choice_none = params.stream, params.max_tokens, params.tool_choice_none
    profile = tier.profile
    body: dict[str, Any] = {"model": tier.model}
    if system:
        body["instructions"] = system
    body["input"] = input_items(messages, profile)
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            }
            for t in tools
        ]
        if tool_choice_none:
            body["tool_choice"] = "none"
    body["max_output_tokens"] = max_tokens or profile.max_output
    body["store"] = False
    if profile.thinking != "off":
        body["include"] = ["reasoning.encrypted_content"]
        if profile.reasoning_effort:
            body["reasoning"] = {"effort": profile.reasoning_effort}
    if stream:
        body["stream"] = True
    return body


def _data_uri(part: File) -> str:
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def _input_part(part: File, profile: Profile) -> dict[str, Any]:
    label = part.name or part.media_type
    if part.media_type in IMAGE_TYPES:
        if not profile.vision:
            return {
                "type": "input_text",
                "text": f"[image {label} omitted: this model has no vision]",
            }
        return {"type": "input_image", "image_url": _data_uri(part)}
    if part.media_type == "application/pdf":
        name = part.name or "document.pdf"
        return {"type": "input_file", "filename": name, "file_data": _data_uri(part)}
    if part.media_type.startswith("text/"):
        text = part.data.decode("utf-8", errors="replace")
        return {"type": "input_text", "text": f"[file {label}]\n{text}"}
    return {
        "type": "input_text",
        "text": f"[file {label} ({part.media_type}) not sent: unsupported]",
    }


def _output_text(result: ToolResult) -> str:
    text = "\n".join(p.text for p in result.content if isinstance(p, Text))
    return f"[error] {text}" if result.is_error else text


def _flush(items: list[dict[str, Any]], text: list[str]) -> None:
    if text:
        items.append({"role": "assistant", "content": "".join(text)})
        text.clear()


def input_items(messages: Sequence[Message], profile: Profile) -> list[dict[str, Any]]:
    """The conversation as Responses ``input`` items."""
    items: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            text: list[str] = []

            for part in msg.parts:
                if isinstance(part, Text):
                    text.append(part.text)
                elif isinstance(part, ToolCall):
                    _flush(items, text)
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": part.id,
                            "name": part.name,
                            "arguments": json.dumps(part.args),
                        }
                    )
                elif isinstance(part, Thinking):
                    state = part.provider_state
                    if isinstance(state, dict) and state.get("type") == "reasoning":
                        _flush(items, text)
                        items.append({k: v for k, v in state.items() if k != "id"})
            _flush(items, text)
            continue
        moved: list[dict[str, Any]] = []
        own: list[dict[str, Any]] = []
        for part in msg.parts:
            if isinstance(part, ToolResult):
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": part.call_id,
                        "output": _output_text(part),
                    }
                )
                files = [p for p in part.content if isinstance(p, File)]
                if files:
                    moved.append(
                        {"type": "input_text", "text": f"Files from tool call {part.call_id}:"}
                    )
                    moved += [_input_part(f, profile) for f in files]
            elif isinstance(part, Text):
                if part.text:
                    own.append({"type": "input_text", "text": part.text})
            elif isinstance(part, File):
                own.append(_input_part(part, profile))
        if moved or own:
            items.append({"role": "user", "content": moved + own})
    return items


def _usage(raw: dict[str, Any] | None) -> Usage:
    raw = raw or {}
    total_in = int(raw.get("input_tokens") or 0)
    cached = int((raw.get("input_tokens_details") or {}).get("cached_tokens") or 0)
    details = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=max(total_in - cached, 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=cached,
        reasoning_tokens=int(details.get("reasoning_tokens") or 0),
    )


def _args(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except (ValueError, RecursionError):
        return {"__invalid_json__": raw}
    # Arguments are JSON inside a JSON string: a "\\ud83d" escaped in them is decoded
    # only here, after the body itself was repaired.
    return repair_json(value) if isinstance(value, dict) else {"__invalid_json__": raw}


def parse_reply(body: dict[str, Any]) -> LLMReply:
    """An LLMReply from a Responses API body (a streamed reply is assembled first)."""
    try:
        output = body["output"]
        status = body.get("status")
    except (KeyError, TypeError):
        raise ProviderProtocolError("not a Responses API body") from None
    if status == "failed":
        raise ProviderProtocolError("the response failed", body=body.get("error"))
    parts: list[Part] = []
    detail: str | None = status
    for item in output:
        kind = item.get("type")
        if kind == "reasoning":
            summary = [s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict)]
            parts.append(Thinking(text="\n".join(summary) or None, provider_state=item))
        elif kind == "message":
            for content in item.get("content") or []:
                if content.get("type") == "output_text" and content.get("text"):
                    parts.append(Text(text=content["text"]))
                elif content.get("type") == "refusal":
                    parts.append(Text(text=str(content.get("refusal", ""))))
                    detail = "refusal"
        elif kind == "function_call":
            parts.append(
                ToolCall(id=item["call_id"], name=item["name"], args=_args(item.get("arguments")))
            )
    calls = any(isinstance(p, ToolCall) for p in parts)
    stop: Stop = "tool" if calls else "done"
    if status == "incomplete":
        reason = (body.get("incomplete_details") or {}).get("reason")
        detail = str(reason) if reason else "incomplete"
        if reason == "max_output_tokens":
            stop = "length"
    return LLMReply(
        parts=tuple(parts),
        stop=stop,
        usage=_usage(body.get("usage")),
        stop_detail=detail,
        model=body.get("model"),
    )
