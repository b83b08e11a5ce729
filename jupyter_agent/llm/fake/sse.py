"""Rendering a fake script step as the SSE frames of each provider's real stream.

Pure code used by :mod:`jupyter_agent.llm.fake.server`. :func:`render_stream` starts from the
non-streamed body (:func:`jupyter_agent.llm.fake.wire.render_json`) and cuts it into the
events the real API sends (Anthropic Messages events; Chat Completions chunks ending in
``[DONE]``; Responses semantic events ending in ``response.completed`` or
``response.incomplete``), so both renderings assemble to the same body. Text is cut at word
boundaries, one delta per word; ``Frame.text_delta`` marks the frames a client forwards.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jupyter_agent.llm.fake.wire import Plan, Signer, render_json

__all__ = ["Frame", "render_stream", "stream_error_frame"]


@dataclass(frozen=True)
class Frame:
    """One SSE event to send: ``data`` is a JSON object or a raw string (``[DONE]``)."""

    event: str | None
    data: Any
    text_delta: bool = False

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data)
        head = f"event: {self.event}\n" if self.event else ""
        return f"{head}data: {data}\n\n".encode()


def _pieces(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _json_pieces(text: str) -> list[str]:
    size = max(1, len(text) // 3 + 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


def render_stream(wire: str, plan: Plan, request: dict[str, Any], signer: Signer) -> list[Frame]:
    """The SSE frames of ``wire`` that assemble to :func:`render_json`'s body."""
    body = render_json(wire, plan, request, signer)
    if wire == "anthropic":
        return _anthropic_frames(body)
    if wire == "openai-chat":
        include = bool((request.get("stream_options") or {}).get("include_usage"))
        return _chat_frames(body, include)
    return _responses_frames(body)


def _anthropic_frames(body: dict[str, Any]) -> list[Frame]:
    start = dict(body, content=[], stop_reason=None)
    start["usage"] = dict(body["usage"], output_tokens=1)
    frames = [Frame("message_start", {"type": "message_start", "message": start})]
    frames.append(Frame("ping", {"type": "ping"}))
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        first: dict[str, Any]
        if kind == "thinking":
            first = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "text":
            first = {"type": "text", "text": ""}
        else:
            first = dict(block, input={})
        head = {"type": "content_block_start", "index": index, "content_block": first}
        frames.append(Frame("content_block_start", head))

        def delta(d: dict[str, Any], text: bool = False, i: int = index) -> Frame:
            return Frame(
                "content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}, text
            )

        if kind == "text":
            frames += [
                delta({"type": "text_delta", "text": p}, True) for p in _pieces(block["text"])
            ]
        elif kind == "thinking":
            frames += [
                delta({"type": "thinking_delta", "thinking": p}) for p in _pieces(block["thinking"])
            ]
            frames.append(delta({"type": "signature_delta", "signature": block["signature"]}))
        else:
            raw = json.dumps(block["input"])
            frames += [
                delta({"type": "input_json_delta", "partial_json": p}) for p in _json_pieces(raw)
            ]
        frames.append(Frame("content_block_stop", {"type": "content_block_stop", "index": index}))
    end = {"stop_reason": body["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": body["usage"]["output_tokens"]}
    frames.append(Frame("message_delta", {"type": "message_delta", "delta": end, "usage": usage}))
    frames.append(Frame("message_stop", {"type": "message_stop"}))
    return frames


def _chat_frames(body: dict[str, Any], include_usage: bool) -> list[Frame]:
    head = {k: body[k] for k in ("id", "created", "model", "system_fingerprint")}
    message = body["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None, text: bool = False) -> Frame:
        data: dict[str, Any] = {"id": head["id"], "object": "chat.completion.chunk"}
        data.update(created=head["created"], model=head["model"])
        data["system_fingerprint"] = head["system_fingerprint"]
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        data["choices"] = [choice]
        if include_usage:
            data["usage"] = None
        return Frame(None, data, text)

    content = "" if message["content"] is not None else None
    frames = [chunk({"role": "assistant", "content": content, "refusal": None})]
    if "reasoning_content" in message:
        frames += [chunk({"reasoning_content": p}) for p in _pieces(message["reasoning_content"])]
    if message["content"] is not None:
        frames += [chunk({"content": p}, text=True) for p in _pieces(message["content"])]
    for i, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        first = {"index": i, "id": call["id"], "type": "function"}
        first["function"] = {"name": fn["name"], "arguments": ""}
        frames.append(chunk({"tool_calls": [first]}))
        for piece in _json_pieces(fn["arguments"]):
            frames.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    frames.append(chunk({}, body["choices"][0]["finish_reason"]))
    if include_usage:
        last = {"id": head["id"], "object": "chat.completion.chunk", "created": head["created"]}
        last.update(model=head["model"], system_fingerprint=head["system_fingerprint"])
        last.update(choices=[], usage=body["usage"])
        frames.append(Frame(None, last))
    frames.append(Frame(None, "[DONE]"))
    return frames


def _responses_frames(body: dict[str, Any]) -> list[Frame]:
    frames: list[Frame] = []

    def emit(kind: str, _delta: bool = False, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": len(frames), **fields}
        frames.append(Frame(kind, data, _delta))

    pending = dict(body, status="in_progress", output=[], usage=None, incomplete_details=None)
    emit("response.created", response=pending)
    emit("response.in_progress", response=pending)
    for n, item in enumerate(body["output"]):
        ids = {"item_id": item["id"], "output_index": n}
        if item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=n,
                item=dict(item, status="in_progress", content=[]),
            )
            part = item["content"][0]
            emit("response.content_part.added", **ids, content_index=0, part=dict(part, text=""))
            for piece in _pieces(part["text"]):
                emit(
                    "response.output_text.delta",
                    True,
                    **ids,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            emit(
                "response.output_text.done", **ids, content_index=0, text=part["text"], logprobs=[]
            )
            emit("response.content_part.done", **ids, content_index=0, part=part)
        elif item["type"] == "reasoning":
            emit(
                "response.output_item.added",
                output_index=n,
                item={"id": item["id"], "type": "reasoning", "summary": []},
            )
            text = item["summary"][0]["text"]
            part = {"type": "summary_text", "text": ""}
            emit("response.reasoning_summary_part.added", **ids, summary_index=0, part=part)
            for piece in _pieces(text):
                emit("response.reasoning_summary_text.delta", **ids, summary_index=0, delta=piece)
            emit("response.reasoning_summary_text.done", **ids, summary_index=0, text=text)
            emit(
                "response.reasoning_summary_part.done",
                **ids,
                summary_index=0,
                part=dict(part, text=text),
            )
        else:
            emit(
                "response.output_item.added",
                output_index=n,
                item=dict(item, status="in_progress", arguments=""),
            )
            for piece in _json_pieces(item["arguments"]):
                emit("response.function_call_arguments.delta", **ids, delta=piece)
            emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        emit("response.output_item.done", output_index=n, item=item)
    final = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    emit(final, response=body)
    return frames


def stream_error_frame(wire: str, kind: str, sequence: int) -> Frame:
    """The mid-stream error event of ``wire`` (error type ``kind``)."""
    message = f"fake provider: scripted stream error ({kind})"
    if wire == "anthropic":
        return Frame("error", {"type": "error", "error": {"type": kind, "message": message}})
    if wire == "openai-chat":
        return Frame(
            None, {"error": {"message": message, "type": kind, "param": None, "code": kind}}
        )
    data = {
        "type": "error",
        "sequence_number": sequence,
        "code": kind,
        "message": message,
        "param": None,
    }
    return Frame("error", data)
