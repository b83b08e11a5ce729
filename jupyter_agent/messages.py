"""The provider-neutral message model the loop speaks, and its exact JSON codec.

Contract:

- ``Message = {role: "user" | "assistant", parts: [Part]}``.
- ``Part`` is one of :class:`Text`, :class:`ToolCall`, :class:`ToolResult`,
  :class:`Thinking`, :class:`File`.
- ``LLMReply = {parts, stop: "done" | "tool" | "length", usage}``.
- :class:`Usage` counts tokens with DESIGN's semantics: ``input_tokens`` excludes cached
  input, ``output_tokens`` includes reasoning.

All types are frozen, keyword-only dataclasses. ``to_json``/``from_json`` round-trip
exactly: ``from_json(to_json(x)) == x`` for every value, and ``Thinking.provider_state``
(Anthropic signatures, redacted thinking, OpenAI reasoning items with encrypted_content)
comes back with the same keys, order and string bytes, because it is carried as an opaque
JSON value the codec never rewrites. ``File.data`` is bytes in Python and base64 in JSON.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "File",
    "JsonValue",
    "LLMReply",
    "Message",
    "Part",
    "Role",
    "Stop",
    "Text",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "Usage",
    "from_json",
    "message_from_json",
    "message_to_json",
    "part_from_json",
    "part_to_json",
    "reply_from_json",
    "reply_to_json",
    "to_json",
    "usage_from_json",
    "usage_to_json",
]

JsonValue = Any
Role = Literal["user", "assistant"]
Stop = Literal["done", "tool", "length"]


@dataclass(frozen=True, kw_only=True)
class Text:
    """Plain text written by the user or the model."""

    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """The model asks for a tool: ``name`` is ``run_cell`` or ``bash``; ``args`` its input."""

    id: str
    name: str
    args: dict[str, JsonValue]


@dataclass(frozen=True, kw_only=True)
class File:
    """An image, PDF or text document carried in a turn. ``data`` holds the raw bytes."""

    media_type: str
    data: bytes
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The result of one ToolCall; ``content`` is Text and File parts (the digest first)."""

    call_id: str
    content: tuple[Text | File, ...]
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class Thinking:
    """Model reasoning. ``provider_state`` is opaque and must be sent back unchanged."""

    text: str | None = None
    provider_state: JsonValue = None


Part = Text | ToolCall | ToolResult | Thinking | File


@dataclass(frozen=True, kw_only=True)
class Message:
    """One conversation message in the loop's provider-neutral shape."""

    role: Role
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The concatenated Text parts (what a person would read)."""
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The ToolCall parts, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Token counts of one or more model calls.

    ``input_tokens`` excludes cached input (read or written); ``output_tokens`` includes
    reasoning; ``reasoning_tokens`` is the part of the output spent reasoning.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True, kw_only=True)
class LLMReply:
    """One model call's answer.

    ``stop`` is what the loop acts on; ``stop_detail`` keeps the provider's own reason
    (``end_turn``, ``refusal``, ``pause_turn``, ``max_tokens``, ...) for the record.
    """

    parts: tuple[Part, ...]
    stop: Stop
    usage: Usage = field(default_factory=Usage)
    stop_detail: str | None = None
    model: str | None = None

    @property
    def text(self) -> str:
        """The concatenated Text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, Text))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The ToolCall parts, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    def as_message(self) -> Message:
        """The assistant message this reply adds to the conversation."""
        return Message(role="assistant", parts=self.parts)


# --- codec -----------------------------------------------------------------------------


def usage_to_json(usage: Usage) -> dict[str, int]:
    """Usage with the seed's JSON keys: in, out, cacheRead, cacheWrite, reasoning."""
    return {
        "in": usage.input_tokens,
        "out": usage.output_tokens,
        "cacheRead": usage.cache_read_tokens,
        "cacheWrite": usage.cache_write_tokens,
        "reasoning": usage.reasoning_tokens,
    }


def usage_from_json(data: dict[str, Any]) -> Usage:
    """Inverse of :func:`usage_to_json`; missing keys count as 0."""
    return Usage(
        input_tokens=int(data.get("in", 0)),
        output_tokens=int(data.get("out", 0)),
        cache_read_tokens=int(data.get("cacheRead", 0)),
        cache_write_tokens=int(data.get("cacheWrite", 0)),
        reasoning_tokens=int(data.get("reasoning", 0)),
    )


def part_to_json(part: Part) -> dict[str, Any]:
    """One part as a JSON object tagged by ``type``."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name, "args": part.args}
    if isinstance(part, ToolResult):
        return {
            "type": "tool_result",
            "call_id": part.call_id,
            "content": [part_to_json(p) for p in part.content],
            "is_error": part.is_error,
        }
    if isinstance(part, Thinking):
        out: dict[str, Any] = {"type": "thinking"}
        if part.text is not None:
            out["text"] = part.text
        if part.provider_state is not None:
            out["provider_state"] = part.provider_state
        return out
    if isinstance(part, File):
        out = {
            "type": "file",
            "media_type": part.media_type,
            "data": base64.b64encode(part.data).decode("ascii"),
        }
        if part.name is not None:
            out["name"] = part.name
        return out
    raise TypeError(f"not a message part: {type(part).__name__}")


def part_from_json(data: dict[str, Any]) -> Part:
    """Inverse of :func:`part_to_json`; raises ValueError on an unknown ``type``."""
    kind = data.get("type")
    if kind == "text":
        return Text(text=data["text"])
    if kind == "tool_call":
        return ToolCall(id=data["id"], name=data["name"], args=dict(data["args"]))
    if kind == "tool_result":
        content: list[Text | File] = []
        for item in data["content"]:
            part = part_from_json(item)
            if not isinstance(part, (Text, File)):
                raise ValueError("a tool result holds only text and file parts")
            content.append(part)
        return ToolResult(
            call_id=data["call_id"], content=tuple(content), is_error=bool(data["is_error"])
        )
    if kind == "thinking":
        return Thinking(text=data.get("text"), provider_state=data.get("provider_state"))
    if kind == "file":
        return File(
            media_type=data["media_type"],
            data=base64.b64decode(data["data"], validate=True),
            name=data.get("name"),
        )
    raise ValueError(f"unknown part type: {kind!r}")


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as ``{role, parts}``."""
    return {"role": message.role, "parts": [part_to_json(p) for p in message.parts]}


def message_from_json(data: dict[str, Any]) -> Message:
    """Inverse of :func:`message_to_json`."""
    role = data["role"]
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown role: {role!r}")
    return Message(role=role, parts=tuple(part_from_json(p) for p in data["parts"]))


def reply_to_json(reply: LLMReply) -> dict[str, Any]:
    """A reply as ``{parts, stop, usage, stop_detail, model}``."""
    return {
        "parts": [part_to_json(p) for p in reply.parts],
        "stop": reply.stop,
        "usage": usage_to_json(reply.usage),
        "stop_detail": reply.stop_detail,
        "model": reply.model,
    }


def reply_from_json(data: dict[str, Any]) -> LLMReply:
    """Inverse of :func:`reply_to_json`."""
    stop = data["stop"]
    if stop not in ("done", "tool", "length"):
        raise ValueError(f"unknown stop: {stop!r}")
    return LLMReply(
        parts=tuple(part_from_json(p) for p in data["parts"]),
        stop=stop,
        usage=usage_from_json(data.get("usage") or {}),
        stop_detail=data.get("stop_detail"),
        model=data.get("model"),
    )


def to_json(value: Message | LLMReply | Usage | Part) -> dict[str, Any]:
    """Encode any value of the message model."""
    if isinstance(value, Message):
        return message_to_json(value)
    if isinstance(value, LLMReply):
        return reply_to_json(value)
    if isinstance(value, Usage):
        return usage_to_json(value)
    return part_to_json(value)


def from_json(data: dict[str, Any]) -> Message | LLMReply | Part:
    """Decode a message, a reply or a part (told apart by their keys)."""
    if "role" in data:
        return message_from_json(data)
    if "stop" in data:
        return reply_from_json(data)
    return part_from_json(data)
