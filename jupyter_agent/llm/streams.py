"""Server-sent events, and assembling a streamed model reply into its non-streamed body.

Pure code (no I/O): the transport feeds it the events read from the wire.

- The SSE format itself is parsed by :mod:`jupyter_agent.llm.sse`, whose
  :class:`~jupyter_agent.llm.sse.StreamReader` feeds the events to these assemblers.
- :func:`make_assembler` gives one :class:`StreamAssembler` per wire. ``feed(event, data)``
  takes one decoded event and returns the text deltas to forward to the person;
  ``result()`` returns the assembled body in the exact shape the provider answers without
  streaming (Anthropic message object, OpenAI ``chat.completion``, Responses ``response``).
  ``done`` says whether the stream's terminal event arrived (a stream that ends before it
  is truncated, and the transport treats it as an error, never as a half reply).
- Text is valid Unicode (the rule of :mod:`jupyter_agent.text`): ``result()`` is the
  assembled body with every lone surrogate replaced by U+FFFD (a character whose two
  halves came in two deltas is joined), and the deltas ``feed`` returns are repaired the
  same way (a high surrogate ending a delta is held until the next one). Valid text is
  untouched, so a body holding none is returned exactly as assembled.
- An error event in the stream (Anthropic ``event: error``, a Chat Completions chunk with
  ``error``, a Responses ``error`` or ``response.failed`` event) raises
  :class:`StreamErrorEvent`, carrying the provider's error ``type`` so the transport can
  decide whether a retry is safe.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Protocol

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.text import StreamRepair, repair_json

__all__ = [
    "StreamAssembler",
    "StreamErrorEvent",
    "RepairingAssembler",
    "make_assembler",
]


class StreamErrorEvent(ProviderProtocolError):
    """The provider sent an error event mid-stream. ``error_type`` is its error type/code."""

    def __init__(self, message: str, *, error_type: str | None, body: Any) -> None:
        super().__init__(message, body=body)
        self.error_type = error_type


class StreamAssembler(Protocol):
    """Rebuilds one streamed reply; see the module docstring."""

    @property
    def done(self) -> bool: ...

    def feed(self, event: str | None, data: dict[str, Any]) -> list[str]: ...

    def mark_done(self) -> None:
        """The ``data: [DONE]`` sentinel arrived (Chat Completions' end of stream)."""

    def result(self) -> dict[str, Any]: ...


def make_assembler(wire: str) -> StreamAssembler:
    """The assembler for ``wire`` (``anthropic``, ``openai-chat``, ``openai-responses``),
    giving valid Unicode (see the module docstring)."""
    inner: StreamAssembler
    if wire == "anthropic":
        inner = AnthropicAssembler()
    elif wire == "openai-chat":
        inner = ChatAssembler()
    elif wire == "openai-responses":
        inner = ResponsesAssembler()
    else:
        raise ValueError(f"unknown wire: {wire!r}")
    return RepairingAssembler(inner)


class RepairingAssembler:
    """Another assembler whose deltas and result are valid Unicode (U+FFFD for a lone
    surrogate); what it gives for valid text is exactly what the inner one gives."""

    def __init__(self, inner: StreamAssembler) -> None:
        self.inner = inner
        self._deltas = StreamRepair()
        self._held = False  # whether _deltas may hold a high surrogate

    @property
    def done(self) -> bool:
        return self.inner.done

    def feed(self, event: str | None, data: dict[str, Any]) -> list[str]:
        pieces = self.inner.feed(event, data)
        if not self._held and (not pieces or all(p.isascii() for p in pieces)):
            # The common path: ASCII holds no surrogate and nothing is held back, so
            # repairing would give the pieces themselves.
            return [p for p in pieces if p] if "" in pieces else pieces
        out = []
        for piece in pieces:
            out.append(self._deltas.feed(piece))
            if piece:
                self._held = "\ud800" <= piece[-1] <= "\udbff"
        if self.inner.done:  # the last delta: nothing is left to complete a held half
            out.append(self._deltas.flush())
            self._held = False
        return [piece for piece in out if piece]

    def mark_done(self) -> None:
        self.inner.mark_done()

    def result(self) -> dict[str, Any]:
        return repair_json(self.inner.result())


def _error_event(wire: str, error: Any, body: Any) -> StreamErrorEvent:
    kind: str | None = None
    message = "error event in stream"
    if isinstance(error, dict):
        raw_kind = error.get("code") or error.get("type")
        kind = str(raw_kind) if raw_kind else None
        message = str(error.get("message") or message)
    return StreamErrorEvent(
        f"{wire} stream error ({kind or 'unknown'}): {message}"[:500], error_type=kind, body=body
    )


class AnthropicAssembler:
    """Messages API: message_start, content_block_*, message_delta, message_stop."""

    def __init__(self) -> None:
        self._message: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        # A block's text, thinking and signature as the pieces received, joined once at
        # its content_block_stop (or the result): never a growing string re-copied.
        self._parts: dict[tuple[int, str], list[str]] = {}
        self.done = False

    def feed(self, event: str | None, data: dict[str, Any]) -> list[str]:
        kind = data.get("type", event)
        if kind == "error":
            raise _error_event("anthropic", data.get("error"), data)
        if kind == "message_start":
            self._message = copy.deepcopy(data["message"])
            self._message["content"] = []
        elif kind == "content_block_start":
            self._blocks[int(data["index"])] = copy.deepcopy(data["content_block"])
        elif kind == "content_block_delta":
            return self._delta(int(data["index"]), data["delta"])
        elif kind == "content_block_stop":
            index = int(data["index"])
            self._join(index)
            if index in self._json:
                raw = "".join(self._json.pop(index))
                try:
                    self._blocks[index]["input"] = json.loads(raw) if raw else {}
                except json.JSONDecodeError as exc:
                    raise ProviderProtocolError("tool input is not valid JSON") from exc
        elif kind == "message_delta":
            message = self._require_message()
            message.update(data.get("delta") or {})
            usage = data.get("usage") or {}
            message.setdefault("usage", {}).update({k: v for k, v in usage.items()})
        elif kind == "message_stop":
            self.done = True
        return []  # ping and unknown events carry nothing to assemble

    def _delta(self, index: int, delta: dict[str, Any]) -> list[str]:
        block = self._blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta["text"]
            self._append(block, index, "text", text)
            return [text] if text else []
        if kind == "input_json_delta":
            self._json.setdefault(index, []).append(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            self._append(block, index, "thinking", delta["thinking"])
        elif kind == "signature_delta":
            self._append(block, index, "signature", delta["signature"])
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta["citation"])
        return []

    def _append(self, block: dict[str, Any], index: int, field: str, piece: str) -> None:
        if not isinstance(piece, str):
            raise TypeError(f"{field} delta is not a string")
        parts = self._parts.get((index, field))
        if parts is None:
            # The field keeps its place among the block's keys (set at its first delta).
            parts = self._parts[index, field] = [block.setdefault(field, "")]
        parts.append(piece)

    def _join(self, index: int | None = None) -> None:
        for key in [k for k in self._parts if index is None or k[0] == index]:
            self._blocks[key[0]][key[1]] = "".join(self._parts.pop(key))

    def mark_done(self) -> None:
        """Not part of this wire; the end is ``message_stop``."""

    def _require_message(self) -> dict[str, Any]:
        if self._message is None:
            raise ProviderProtocolError("anthropic stream without message_start")
        return self._message

    def result(self) -> dict[str, Any]:
        self._join()
        message = copy.deepcopy(self._require_message())
        message["content"] = [self._blocks[i] for i in sorted(self._blocks)]
        return message


class ChatAssembler:
    """Chat Completions: ``chat.completion.chunk`` objects, then ``[DONE]``."""

    def __init__(self) -> None:
        self._head: dict[str, Any] | None = None
        self._choices: dict[int, dict[str, Any]] = {}
        self._usage: Any = None
        self.done = False

    def feed(self, event: str | None, data: dict[str, Any]) -> list[str]:
        if data.get("error"):
            raise _error_event("openai-chat", data["error"], data)
        if self._head is None:
            self._head = {
                "id": data.get("id"),
                "object": "chat.completion",
                "created": data.get("created"),
                "model": data.get("model"),
            }
        if data.get("system_fingerprint") is not None:
            self._head["system_fingerprint"] = data["system_fingerprint"]
        if data.get("usage"):
            self._usage = data["usage"]
        deltas: list[str] = []
        for choice in data.get("choices") or []:
            deltas += self._choice(choice)
        return deltas

    def _choice(self, chunk: dict[str, Any]) -> list[str]:
        index = int(chunk.get("index", 0))
        state = self._choices.get(index)
        if state is None:
            state = self._choices[index] = {
                "content": None,
                "reasoning": None,
                "refusal": None,
                "tools": {},
                "finish": None,
            }
        delta = chunk.get("delta") or {}
        out: list[str] = []
        # Text fields and tool-call pieces are lists of what arrived, joined by result():
        # never a growing string re-copied at each delta.
        content = delta.get("content")
        if content is not None:
            _add(state, "content", content)
            if content:
                out.append(content)
        for key, name in (("reasoning", "reasoning_content"), ("refusal", "refusal")):
            if delta.get(name) is not None:
                _add(state, key, delta[name])
        for call in delta.get("tool_calls") or []:
            slot = state["tools"].setdefault(
                int(call.get("index", 0)), {"id": None, "name": [], "arguments": []}
            )
            if call.get("id"):
                slot["id"] = call["id"]
            function = call.get("function") or {}
            _add(slot, "name", function.get("name") or "")
            _add(slot, "arguments", function.get("arguments") or "")
        if chunk.get("finish_reason"):
            state["finish"] = chunk["finish_reason"]
            self.done = True
        return out

    def mark_done(self) -> None:
        """The ``[DONE]`` sentinel arrived."""
        self.done = True

    def result(self) -> dict[str, Any]:
        if self._head is None:
            raise ProviderProtocolError("openai-chat stream without a chunk")
        choices = []
        for index in sorted(self._choices):
            state = self._choices[index]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": _joined(state["content"]),
                "refusal": _joined(state["refusal"]),
            }
            if state["reasoning"] is not None:
                message["reasoning_content"] = _joined(state["reasoning"])
            if state["tools"]:
                message["tool_calls"] = [
                    {
                        "id": slot["id"],
                        "type": "function",
                        "function": {
                            "name": "".join(slot["name"]),
                            "arguments": "".join(slot["arguments"]),
                        },
                    }
                    for slot in (state["tools"][i] for i in sorted(state["tools"]))
                ]
            choices.append(
                {
                    "index": index,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": state["finish"],
                }
            )
        body = dict(self._head)
        body["choices"] = choices
        body["usage"] = self._usage
        return body


def _add(state: dict[str, Any], key: str, piece: str) -> None:
    if not isinstance(piece, str):
        raise TypeError(f"{key} delta is not a string")
    parts = state[key]
    if parts is None:
        state[key] = [piece]
    else:
        parts.append(piece)


def _joined(parts: list[str] | None) -> str | None:
    return None if parts is None else "".join(parts)


class ResponsesAssembler:
    """Responses API: semantic events ending in ``response.completed``/``.incomplete``."""

    _TERMINAL = ("response.completed", "response.incomplete")

    def __init__(self) -> None:
        self._response: dict[str, Any] | None = None
        self._items: dict[int, dict[str, Any]] = {}
        self.done = False

    def feed(self, event: str | None, data: dict[str, Any]) -> list[str]:
        kind = data.get("type", event)
        if kind == "error":
            raise _error_event("openai-responses", data, data)
        if kind == "response.failed":
            response = data.get("response") or {}
            raise _error_event("openai-responses", response.get("error"), data)
        if kind == "response.output_text.delta":
            text = str(data.get("delta", ""))
            return [text] if text else []
        if kind == "response.output_item.done":
            self._items[int(data.get("output_index", len(self._items)))] = data["item"]
        elif kind in ("response.created", "response.in_progress"):
            self._response = data.get("response")
        elif kind in self._TERMINAL:
            self._response = data.get("response")
            self.done = True
        return []

    def mark_done(self) -> None:
        """Not part of this wire; the end is ``response.completed``."""

    def result(self) -> dict[str, Any]:
        if self._response is None or not self.done:
            raise ProviderProtocolError("openai-responses stream without a final response")
        response = copy.deepcopy(self._response)
        if not response.get("output") and self._items:
            # some compatible servers send the final response without its output items
            response["output"] = [self._items[i] for i in sorted(self._items)]
        return response
