"""The provider-neutral message model the loop speaks, and its exact JSON codec.

Contract:

- ``Message = {role: "user" | "assistant", parts: [Part]}``.
- ``Part`` is one of :class:`Text`, :class:`ToolCall`, :class:`ToolResult`,
  :class:`Thinking`, :class:`File`.
- ``LLMReply = {parts, stop: "done" | "tool" | "length", usage}``.
- :class:`Usage` counts tokens with DESIGN's semantics: ``input_tokens`` excludes cached
  input, ``output_tokens`` includes reasoning.

All types are frozen, keyword-only dataclasses; their JSON comes from the types through
:mod:`jupyter_agent.codec`. A part's ``type`` field is its JSON tag (set by the class, not
passed). ``to_json``/``from_json`` round-trip exactly: ``from_json(to_json(x)) == x`` for
every value, and ``Thinking.provider_state`` (Anthropic signatures, redacted thinking,
OpenAI reasoning items with encrypted_content) comes back with the same keys, order and
string bytes, because it is carried as an opaque JSON value the codec never rewrites.
``File.data`` is bytes in Python and base64 in JSON. Bad JSON raises ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from jupyter_agent.codec import OMIT_NONE, Base64Bytes, dump_dict, load, tagged, wire

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

    type: Literal["text"] = field(default="text", init=False, repr=False)
    text: str


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """The model asks for a tool: ``name`` is ``run_cell`` or ``bash``; ``args`` its input."""

    type: Literal["tool_call"] = field(default="tool_call", init=False, repr=False)
    id: str
    name: str
    args: dict[str, JsonValue]


@dataclass(frozen=True, kw_only=True)
class File:
    """An image, PDF or text document carried in a turn. ``data`` holds the raw bytes."""

    type: Literal["file"] = field(default="file", init=False, repr=False)
    media_type: str
    data: Base64Bytes
    name: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """The result of one ToolCall; ``content`` is Text and File parts (the digest first)."""

    type: Literal["tool_result"] = field(default="tool_result", init=False, repr=False)
    call_id: str
    content: tuple[Annotated[Text | File, tagged()], ...]
    is_error: bool = False


@dataclass(frozen=True, kw_only=True)
class Thinking:
    """Model reasoning. ``provider_state`` is opaque and must be sent back unchanged."""

    type: Literal["thinking"] = field(default="thinking", init=False, repr=False)
    text: str | None = field(default=None, metadata=OMIT_NONE)
    provider_state: JsonValue = field(default=None, metadata=OMIT_NONE)


Part = Text | ToolCall | ToolResult | Thinking | File
#: ``Part`` as the codec reads it: by its ``type`` tag.
TaggedPart = Annotated[Part, tagged()]


@dataclass(frozen=True, kw_only=True)
class Message:
    """One conversation message in the loop's provider-neutral shape."""

    role: Role
    parts: tuple[TaggedPart, ...]

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

    input_tokens: int = field(default=0, metadata=wire("in"))
    output_tokens: int = field(default=0, metadata=wire("out"))
    cache_read_tokens: int = field(default=0, metadata=wire("cacheRead"))
    cache_write_tokens: int = field(default=0, metadata=wire("cacheWrite"))
    reasoning_tokens: int = field(default=0, metadata=wire("reasoning"))

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

    parts: tuple[TaggedPart, ...]
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


# --- codec: thin names over jupyter_agent.codec (the wire follows from the types above) -----


def usage_to_json(usage: Usage) -> dict[str, int]:
    """Usage with the seed's JSON keys: in, out, cacheRead, cacheWrite, reasoning."""
    return dump_dict(usage)


def usage_from_json(data: dict[str, Any]) -> Usage:
    """Inverse of :func:`usage_to_json`; missing keys count as 0."""
    return load(Usage, data)


def part_to_json(part: Part) -> dict[str, Any]:
    """One part as a JSON object tagged by ``type``."""
    if not isinstance(part, (Text, ToolCall, ToolResult, Thinking, File)):
        raise TypeError(f"not a message part: {type(part).__name__}")
    return dump_dict(part)


def part_from_json(data: dict[str, Any]) -> Part:
    """Inverse of :func:`part_to_json`; raises ValueError on an unknown ``type``."""
    part: Part = load(TaggedPart, data)
    return part


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as ``{role, parts}``."""
    return dump_dict(message)


def message_from_json(data: dict[str, Any]) -> Message:
    """Inverse of :func:`message_to_json`."""
    return load(Message, data)


def reply_to_json(reply: LLMReply) -> dict[str, Any]:
    """A reply as ``{parts, stop, usage, stop_detail, model}``."""
    return dump_dict(reply)


def reply_from_json(data: dict[str, Any]) -> LLMReply:
    """Inverse of :func:`reply_to_json`."""
    return load(LLMReply, data)


def to_json(value: Message | LLMReply | Usage | Part) -> dict[str, Any]:
    """Encode any value of the message model."""
    if isinstance(value, Part):
        return part_to_json(value)
    return dump_dict(value)


def from_json(data: dict[str, Any]) -> Message | LLMReply | Part:
    """Decode a message, a reply or a part (told apart by their keys)."""
    if "role" in data:
        return message_from_json(data)
    if "stop" in data:
        return reply_from_json(data)
    return part_from_json(data)
