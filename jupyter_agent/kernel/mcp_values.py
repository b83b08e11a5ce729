"""What an MCP tool's reply becomes in a cell.

The host answers an ``app.call`` of app ``mcp`` with the tool's result as JSON
(:mod:`jupyter_agent.runtime.mcp.results`)::

    {"structured": <the tool's structuredContent, or null>,
     "content": [{"type": "text", "text": "..."},
                 {"type": "image", "data": "<base64>", "mime_type": "image/png"},
                 {"type": "resource", "uri": "...", "mime_type": "...", "text": "..."}]}

:func:`mcp_value` turns it into what the call returns:

- ``structured`` not null: that object (dicts, lists, numbers, strings as JSON gives them);
- else, when every content block is text: the texts joined by ``"\\n"`` (``""`` for none);
- else, for one block: that block as an object, :class:`McpImage` for an image (so a cell
  ending with ``mcp.s.chart()`` shows the image), :class:`McpResource` for a resource;
- else a list, one item per block in order: ``str`` for text, :class:`McpImage`,
  :class:`McpResource` (``display(item)`` shows an image of it).

An :class:`McpImage` displays as an image: ending a cell with it, or ``display(img)``,
makes an image output (its mime bundle carries the base64 data), which the digest attaches
for a model that sees images. A reply that is not such a dict is returned as it is.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

__all__ = ["McpImage", "McpResource", "mcp_value"]

_HEAD = 200  # characters of a resource's text its repr shows


class McpImage:
    """An image an MCP tool returned: ``data`` (base64, as the host sent it) and
    ``mime_type``; ``raw`` is the decoded bytes (``b""`` when the data is not base64)."""

    def __init__(self, data: str, mime_type: str) -> None:
        self.data = data
        self.mime_type = mime_type

    @property
    def raw(self) -> bytes:
        """The image's bytes."""
        try:
            return base64.b64decode(self.data, validate=True)
        except (binascii.Error, ValueError):
            return b""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The base64 text is what an image output holds (nbformat's shape), any image type.
        return {self.mime_type: self.data, "text/plain": repr(self)}

    def _repr_png_(self) -> bytes | None:
        return self.raw if self.mime_type == "image/png" else None

    def _repr_jpeg_(self) -> bytes | None:
        return self.raw if self.mime_type == "image/jpeg" else None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, McpImage):
            return NotImplemented
        return (self.data, self.mime_type) == (other.data, other.mime_type)

    def __hash__(self) -> int:
        return hash((self.data, self.mime_type))

    def __repr__(self) -> str:
        size = len(self.data) * 3 // 4  # about: base64 is 4 characters per 3 bytes
        return f"<McpImage {self.mime_type}, about {size} bytes>"


class McpResource:
    """A resource an MCP tool returned: its ``uri``, ``mime_type`` and ``text`` (the host
    sends a text resource's text; a binary one's is empty)."""

    def __init__(self, uri: str, mime_type: str = "", text: str = "") -> None:
        self.uri = uri
        self.mime_type = mime_type
        self.text = text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, McpResource):
            return NotImplemented
        return (self.uri, self.mime_type, self.text) == (other.uri, other.mime_type, other.text)

    def __hash__(self) -> int:
        return hash((self.uri, self.mime_type, self.text))

    def __repr__(self) -> str:
        kind = f" ({self.mime_type})" if self.mime_type else ""
        head = self.text[:_HEAD] + ("..." if len(self.text) > _HEAD else "")
        return f"<McpResource {self.uri}{kind}: {head!r}>"


def _block(block: Any) -> str | McpImage | McpResource:
    if not isinstance(block, Mapping):
        return str(block)
    kind = block.get("type")
    if kind == "image":
        return McpImage(str(block.get("data") or ""), str(block.get("mime_type") or ""))
    if kind == "resource":
        return McpResource(
            str(block.get("uri") or ""),
            str(block.get("mime_type") or ""),
            str(block.get("text") or ""),
        )
    return str(block.get("text") or "")


def mcp_value(value: Any) -> Any:
    """What a cell's ``mcp.<server>.<tool>(...)`` returns for the host's reply ``value``
    (module docstring)."""
    if not isinstance(value, Mapping):
        return value
    structured = value.get("structured")
    if structured is not None:
        return structured
    content = value.get("content")
    blocks = [_block(b) for b in (content if isinstance(content, list) else [])]
    if all(isinstance(b, str) for b in blocks):
        return "\n".join(str(b) for b in blocks)
    if len(blocks) == 1:
        return blocks[0]
    return blocks
