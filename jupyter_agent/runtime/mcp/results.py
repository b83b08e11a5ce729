"""An MCP tool result as the ``app.call`` reply's value: converted, bounded, scrubbed.

The value (recorded in the run's effect log, sent to the kernel)::

    {"structured": <structuredContent or null>,
     "content": [{"type": "text", "text": "..."},
                 {"type": "image", "data": "<base64>", "mime_type": "image/png"},
                 {"type": "resource", "uri": "...", "mime_type": "...", "text": "..."}]}

Audio and other blocks become ``{"type": "text", "text": "[audio: mime, N bytes]"}``; a
resource link becomes a ``resource`` without text; a binary resource one with the note
``[binary: N bytes]``. Bounds: a text over :data:`MAX_TEXT_CHARS` is cut with a note (a
structured result whose JSON is over it is dropped, with a note: the content stays); an
image over :data:`MAX_IMAGE_BYTES` is replaced by a text note; the blocks past
:data:`MAX_TOTAL_CHARS` of text and image data in all are left out, with a note saying how
many (one result never floods the log or the kernel). Every string goes through
the run's scrubber before anything logs or returns it (:func:`result_value`).
"""

from __future__ import annotations

import json
from typing import Any, Final

from jupyter_agent.runtime.secrets import Scrubber

__all__ = ["MAX_IMAGE_BYTES", "MAX_TEXT_CHARS", "MAX_TOTAL_CHARS", "error_text", "result_value"]

#: A text block (or a resource's text) longer than this is cut.
MAX_TEXT_CHARS: Final = 200_000
#: An image whose decoded size is over this is replaced by a note.
MAX_IMAGE_BYTES: Final = 2 * 1024 * 1024
#: The most characters of text and image data one result keeps in all (its log line and
#: the kernel's reply): the blocks past it are left out, with a note saying how many.
MAX_TOTAL_CHARS: Final = 4_000_000
#: How much of an isError result's text the error message keeps.
_ERROR_CHARS: Final = 2000


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n[cut: {len(text) - MAX_TEXT_CHARS} more characters]"


def _decoded_size(data: str) -> int:
    """The size of base64 ``data`` once decoded (without decoding it)."""
    return len(data) * 3 // 4 - data.count("=", max(0, len(data) - 2))


def _block(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": _cut(str(block.text))}
    if kind == "image":
        data = str(block.data)
        mime = str(block.mime_type)
        size = _decoded_size(data)
        if size > MAX_IMAGE_BYTES:
            return {"type": "text", "text": f"[image: {mime}, {size} bytes: too large to show]"}
        return {"type": "image", "data": data, "mime_type": mime}
    if kind == "resource":
        resource = block.resource
        out: dict[str, Any] = {
            "type": "resource",
            "uri": str(resource.uri),
            "mime_type": resource.mime_type,
        }
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            out["text"] = _cut(text)
        else:
            out["text"] = f"[binary: {_decoded_size(str(getattr(resource, 'blob', '')))} bytes]"
        return out
    if kind == "resource_link":
        return {"type": "resource", "uri": str(block.uri), "mime_type": block.mime_type}
    if kind == "audio":
        size = _decoded_size(str(block.data))
        return {"type": "text", "text": f"[audio: {block.mime_type}, {size} bytes]"}
    return {"type": "text", "text": f"[{kind or 'unknown'} content]"}


def result_value(result: Any, scrubber: Scrubber) -> dict[str, Any]:
    """The reply value of a ``CallToolResult`` (see the module docstring), scrubbed."""
    structured = result.structured_content
    content: list[dict[str, Any]] = []
    total = 0
    blocks = list(result.content or [])
    for n, raw in enumerate(blocks):
        block = _block(raw)
        total += len(str(block.get("text") or "")) + len(str(block.get("data") or ""))
        if total > MAX_TOTAL_CHARS:
            left = len(blocks) - n
            content.append(
                {
                    "type": "text",
                    "text": f"[{left} more blocks left out: the result is over "
                    f"{MAX_TOTAL_CHARS:,} characters]",
                }
            )
            break
        content.append(block)
    if structured is not None:
        size = len(json.dumps(structured, default=str))
        if size > MAX_TEXT_CHARS:  # the content (cut) stands in for it
            structured = None
            content.append(
                {"type": "text", "text": f"[structured result of {size} characters: too large]"}
            )
    return scrubber.clean_json({"structured": structured, "content": content})


def error_text(result: Any, scrubber: Scrubber) -> str:
    """The text of an ``isError`` result (its text blocks joined), cut and scrubbed."""
    texts = [str(b.text) for b in (result.content or []) if getattr(b, "type", None) == "text"]
    text = " ".join(" ".join(texts).split()) or "the tool reported an error"
    if len(text) > _ERROR_CHARS:
        text = text[: _ERROR_CHARS - 3] + "..."
    return scrubber.clean(text)
