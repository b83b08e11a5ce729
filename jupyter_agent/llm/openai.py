"""The OpenAI adapter: Chat Completions here, the Responses API in :mod:`.openai_responses`.

:func:`build_request` picks the API from ``tier.api``: ``chat`` ->
``POST {base_url}/chat/completions``, ``responses`` -> ``POST {base_url}/responses``. The
transport adds ``Authorization: Bearer <key>`` from the tier's credential ref.

Chat Completions rules:

- The system prompt is the first message, role ``system`` or ``developer`` (reasoning
  models) per profile. Tools are ``{"type": "function", "function": {...}}``;
  ``tool_choice_none`` keeps them and sends ``tool_choice: "none"``.
- Assistant ToolCalls become ``tool_calls`` with JSON-string arguments; Thinking is not
  sent (Chat Completions has no way to return reasoning). Each ToolResult becomes a
  ``tool`` message (text only: ``is_error`` adds an ``[error]`` prefix); tool messages
  cannot carry images, so a result's images and PDFs move to ONE user message right after
  the tool messages, labelled with the call they came from, followed by the turn's own
  user parts. Two assistant messages in a row become one (texts joined by a blank line,
  the second's tool calls kept).
- Files: images -> ``image_url`` data URIs (a note when the profile has no vision); PDFs
  -> ``file`` parts with ``file_data``; ``text/*`` -> inline text.
- ``max_completion_tokens`` (default: the profile's ``max_output``); ``reasoning_effort``
  when the profile sets one; ``stop`` only in a text tool mode and when the profile
  supports it; streaming sets ``stream`` and ``stream_options.include_usage``.

:func:`parse_reply` maps ``finish_reason`` ``stop`` -> done, ``tool_calls`` -> tool,
``length`` -> length, ``content_filter`` -> done (the reason kept in ``stop_detail``). A
reply holding tool calls is ``tool`` whatever the reason (some servers say ``stop``).
Arguments that are not a JSON object become ``{"__invalid_json__": raw}`` so the loop can
tell the model. Usage: ``input_tokens = prompt_tokens - cached_tokens``; cached ->
``cache_read_tokens``; ``completion_tokens`` (reasoning included) -> ``output_tokens``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm import openai_responses
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
from jupyter_agent.text import repair_json

if TYPE_CHECKING:
    from jupyter_agent.llm.profiles import Profile

__all__ = [
    "build_chat_body",
    "build_request",
    "chat_messages",
    "parse_chat_reply",
    "parse_reply",
]

_STOPS: dict[str, Stop] = {
    "stop": "done",
    "tool_calls": "tool",
    "function_call": "tool",
    "length": "length",
    "content_filter": "done",
}


def build_request(params: RequestParams) -> RequestSpec:
    """The Chat Completions or Responses request for ``params`` (see the module doc)."""
    tier, stream = params.tier, params.stream
    if tier.api == "responses":
        body = openai_responses.build_body(params)
        url, wire = f"{tier.base_url}/responses", "openai-responses"
    else:
        body = build_chat_body(params)
        url, wire = f"{tier.base_url}/chat/completions", "openai-chat"
    return RequestSpec(
        url=url,
        json=body,
        wire=wire,  # type: ignore[arg-type]
        credential_ref=tier.api_key_ref,
        credential_header="authorization",
        credential_prefix="Bearer ",
        stream=stream,
    )


def parse_reply(body: dict[str, Any]) -> LLMReply:
    """An LLMReply from a Chat Completions or a Responses body (told apart by ``object``)."""
    if isinstance(body, dict) and body.get("object") == "response":
        return openai_responses.parse_reply(body)
    return parse_chat_reply(body)


def build_chat_body(params: RequestParams, *, compatible: bool = False) -> dict[str, Any]:
    """The Chat Completions body. ``compatible`` (OpenAI-compatible servers): ``system``
    role, ``max_tokens`` instead of ``max_completion_tokens``, no PDF parts."""
    messages, system, tools, tier = params.messages, params.system, params.tools, params.tier
    stream, max_tokens, tool_choice_none = params.stream, params.max_tokens, params.tool_choice_none
    profile = tier.profile
    role = "system" if compatible else profile.system_role
    body: dict[str, Any] = {"model": tier.model}
    wire = [{"role": role, "content": system}] if system else []
    wire += chat_messages(messages, profile, pdf=not compatible)
    body["messages"] = wire
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in tools
        ]
        if tool_choice_none:
            body["tool_choice"] = "none"
    body["max_tokens" if compatible else "max_completion_tokens"] = max_tokens or profile.max_output
    if profile.reasoning_effort and not compatible:
        body["reasoning_effort"] = profile.reasoning_effort
    if profile.tool_mode != "native" and profile.supports_stop:
        body["stop"] = stop_sequences(profile.tool_mode)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def data_uri(part: File) -> str:
    """``data:<media type>;base64,<data>`` for a File."""
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def file_content(part: File, profile: Profile, *, pdf: bool = True) -> dict[str, Any]:
    """One File as a Chat Completions user content part (or a text note)."""
    label = part.name or part.media_type
    if part.media_type in IMAGE_TYPES:
        if not profile.vision:
            return {"type": "text", "text": f"[image {label} omitted: this model has no vision]"}
        return {"type": "image_url", "image_url": {"url": data_uri(part)}}
    if part.media_type == "application/pdf" and pdf:
        name = part.name or "document.pdf"
        return {"type": "file", "file": {"filename": name, "file_data": data_uri(part)}}
    if part.media_type.startswith("text/"):
        text = part.data.decode("utf-8", errors="replace")
        return {"type": "text", "text": f"[file {label}]\n{text}"}
    return {"type": "text", "text": f"[file {label} ({part.media_type}) not sent: unsupported]"}


def _tool_text(result: ToolResult) -> str:
    text = "\n".join(p.text for p in result.content if isinstance(p, Text))
    return f"[error] {text}" if result.is_error else text


def _user_content(items: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    if len(items) == 1 and items[0]["type"] == "text":
        return str(items[0]["text"])
    return items


def chat_messages(
    messages: Sequence[Message], profile: Profile, *, pdf: bool = True
) -> list[dict[str, Any]]:
    """The conversation as Chat Completions messages (system prompt not included)."""
    wire: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            text = "".join(p.text for p in msg.parts if isinstance(p, Text))
            item: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [p for p in msg.parts if isinstance(p, ToolCall)]
            if calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.args)},
                    }
                    for c in calls
                ]
            last = wire[-1] if wire and wire[-1]["role"] == "assistant" else None
            if (text or calls) and last is not None and "tool_calls" not in last:
                # Two assistant messages in a row (toolcaller@v4's recall call after the
                # window's last reply) are one turn, as Anthropic's wire merges them: some
                # OpenAI-compatible servers' chat templates refuse two in a row.
                last["content"] = "\n\n".join(t for t in (last["content"], text) if t) or None
                if calls:
                    last["tool_calls"] = item["tool_calls"]
            elif text or calls:
                wire.append(item)
            continue
        moved: list[dict[str, Any]] = []  # tool-result files, then the user's own parts
        own: list[dict[str, Any]] = []
        for part in msg.parts:
            if isinstance(part, ToolResult):
                wire.append(
                    {"role": "tool", "tool_call_id": part.call_id, "content": _tool_text(part)}
                )
                files = [p for p in part.content if isinstance(p, File)]
                if files:
                    moved.append({"type": "text", "text": f"Files from tool call {part.call_id}:"})
                    moved += [file_content(f, profile, pdf=pdf) for f in files]
            elif isinstance(part, Text):
                if part.text:
                    own.append({"type": "text", "text": part.text})
            elif isinstance(part, File):
                own.append(file_content(part, profile, pdf=pdf))
        if moved or own:
            wire.append({"role": "user", "content": _user_content(moved + own)})
    return wire


def usage_from_chat(raw: dict[str, Any] | None) -> Usage:
    """Normalised usage of a Chat Completions body (cached input taken out of ``input``)."""
    raw = raw or {}
    prompt = int(raw.get("prompt_tokens") or 0)
    cached = int((raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    details = raw.get("completion_tokens_details") or {}
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        reasoning_tokens=int(details.get("reasoning_tokens") or 0),
    )


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except (ValueError, RecursionError):
        return {"__invalid_json__": raw}
    # Arguments are JSON inside a JSON string: a "\\ud83d" escaped in them is decoded
    # only here, after the body itself was repaired.
    return repair_json(value) if isinstance(value, dict) else {"__invalid_json__": raw}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


def parse_chat_reply(body: dict[str, Any], *, thinking: Sequence[Thinking] = ()) -> LLMReply:
    """An LLMReply from a Chat Completions body; ``thinking`` parts (parsed by a compatible
    adapter) go first."""
    try:
        choice = body["choices"][0]
        msg = choice.get("message") or {}
    except (KeyError, IndexError, TypeError):
        raise ProviderProtocolError("not a chat completion body", body=_short(body)) from None
    parts: list[Part] = list(thinking)
    text = _content_text(msg.get("content"))
    if text:
        parts.append(Text(text=text))
    reason = choice.get("finish_reason")
    if msg.get("refusal"):
        parts.append(Text(text=str(msg["refusal"])))
        reason = "refusal"
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(
            ToolCall(id=call["id"], name=fn.get("name", ""), args=_args(fn.get("arguments")))
        )
    stop: Stop = _STOPS.get(str(reason), "done")
    calls = any(isinstance(p, ToolCall) for p in parts)
    if calls and stop == "done":
        stop = "tool"
    elif stop == "tool" and not calls:
        stop = "done"
    return LLMReply(
        parts=tuple(parts),
        stop=stop,
        usage=usage_from_chat(body.get("usage")),
        stop_detail=None if reason is None else str(reason),
        model=body.get("model"),
    )


def _short(body: Any) -> Any:
    return body if not isinstance(body, str) else body[:500]
