"""Server-sent events off the wire: bytes in, events out, and a streamed reply read whole.

Pure code (no I/O): the transport feeds it the raw bytes of a response as they arrive.

- :class:`SSEParser`: an incremental parser of the SSE format (``event``, ``data``
  (multi-line), ``id`` fields; ``:`` comment lines; a blank line ends an event; the last
  event id persists), fed lines (:meth:`~SSEParser.feed`) or raw bytes
  (:meth:`~SSEParser.feed_bytes`). The ``[DONE]`` sentinel of OpenAI's Chat Completions
  arrives as an event whose ``data`` is the string ``"[DONE]"``.
- :class:`StreamReader`: one streamed model reply: the bytes of the response in, each text
  delta to ``on_delta`` as soon as its event is read (in order), and at the end the body
  the provider returns without streaming (:func:`~jupyter_agent.llm.streams.make_assembler`).
  An event that is not a JSON object is a
  :class:`~jupyter_agent.exceptions.ProviderProtocolError` (its text passed through
  ``redact``); an error event raises
  :class:`~jupyter_agent.llm.streams.StreamErrorEvent`; a stream that ends before its
  terminal event is a ProviderProtocolError, never a half reply.

Linear in the stream's size whatever its chunking, and the same result for every chunking.
"""

from __future__ import annotations

import json
import json.scanner
from collections.abc import Callable
from typing import Any, NamedTuple

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm.streams import make_assembler

__all__ = ["EVENT_TEXT_CAP", "SSEEvent", "SSEParser", "StreamReader"]

#: How much of a bad event's text a protocol error carries.
EVENT_TEXT_CAP = 4096

_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # json.loads scanner


def _loads(text: str) -> Any:
    """``json.loads(text)``, without its wrappers on the common path (an event's data is
    one JSON value, nothing around it); anything else goes to json.loads itself, which
    decodes it or raises its own error."""
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


class SSEEvent(NamedTuple):
    """One server-sent event: ``event`` is None when the stream named no event type.
    (A named tuple: one is made per event, and a frozen dataclass costs several times more.)"""

    event: str | None
    data: str
    id: str | None = None


class SSEParser:
    """Incremental SSE parser: feed it lines (without their line ending), get events; or
    feed it the raw bytes as they arrive (:meth:`feed_bytes`, then :meth:`close`).

    Byte feeding is linear in the stream's size whatever the chunking: a chunk is split
    once at its line ends (CRLF, LF or a lone CR, as the SSE spec says, a CRLF split over
    two chunks included), and an unfinished line is kept as a list of pieces joined once
    when its end arrives, never re-joined or re-split as it grows. Each whole line is
    decoded as UTF-8 (invalid bytes become U+FFFD); a line end is an ASCII byte, so no
    character is ever cut in two and the result is the same as decoding the whole stream
    first, for every way of chunking it.
    """

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None
        self._has_field = False
        self._partial: list[bytes] = []  # the unfinished line's pieces
        self._after_cr = False  # the last chunk ended in CR: a leading LF ends no line

    def feed_bytes(self, chunk: bytes) -> list[SSEEvent]:
        """Take the next bytes of the stream; return the events they complete."""
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._after_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n" not in chunk:
            if chunk:
                self._partial.append(chunk)
            return []
        lines = chunk.split(b"\n")
        if self._partial:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
        tail = lines.pop()
        if tail:
            self._partial.append(tail)
        out: list[SSEEvent] = []
        for raw in lines:
            if raw:
                self._line(raw.decode("utf-8", "replace"))
            else:
                event = self._dispatch()
                if event is not None:
                    out.append(event)
        return out

    def close(self) -> list[SSEEvent]:
        """End of the byte stream: its unfinished line, then :meth:`flush`."""
        if self._partial:
            raw, self._partial = b"".join(self._partial), []
            self._line(raw.decode("utf-8", "replace"))
        last = self.flush()
        return [] if last is None else [last]

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line; return the event a blank line completes, else None."""
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        self._line(line)
        return None

    def _line(self, line: str) -> None:
        """One non-empty line: a field of the event being read, or a comment."""
        if line[0] == ":":
            return  # a comment (keep-alive)
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        else:
            return  # "retry" and unknown fields are ignored, as the spec says
        self._has_field = True

    def flush(self) -> SSEEvent | None:
        """End of stream: an event not closed by a blank line is still delivered."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        data = self._data
        if not data:  # a data line sets _has_field: nothing else to reset
            self._event, self._has_field = None, False
            return None
        event = SSEEvent(
            event=self._event, data=data[0] if len(data) == 1 else "\n".join(data), id=self._id
        )
        self._event, self._data, self._has_field = None, [], False
        return event


class StreamReader:
    """One streamed reply of ``wire`` (see the module docstring)."""

    def __init__(
        self,
        wire: str,
        *,
        on_delta: Callable[[str], None] | None = None,
        redact: Callable[[str], str] = str,
    ) -> None:
        self._assembler = make_assembler(wire)
        self._parser = SSEParser()
        self._on_delta = on_delta
        self._redact = redact
        #: Whether a text delta was given out (after one, a failure must not be retried).
        self.forwarded = False

    def feed(self, chunk: bytes) -> None:
        """The next bytes of the response."""
        events = self._parser.feed_bytes(chunk)
        if events:
            self._handle(events)

    def close(self) -> dict[str, Any]:
        """End of the response: the assembled body (ProviderProtocolError if truncated)."""
        self._handle(self._parser.close())
        if not self._assembler.done:
            raise ProviderProtocolError("stream ended before the reply was complete")
        return self._assembler.result()

    def _handle(self, events: list[SSEEvent]) -> None:
        assembler, on_delta = self._assembler, self._on_delta
        for sse in events:
            data = sse.data
            if data == "[DONE]":
                assembler.mark_done()
                continue
            try:
                decoded = _loads(data)
            except (json.JSONDecodeError, RecursionError):
                raise ProviderProtocolError(
                    "stream event is not valid JSON",
                    body=self._redact(data[:EVENT_TEXT_CAP]),
                ) from None
            if not isinstance(decoded, dict):
                raise ProviderProtocolError("stream event is not a JSON object")
            deltas = assembler.feed(sse.event, decoded)
            if deltas:
                self.forwarded = True
                if on_delta is not None:
                    for delta in deltas:
                        on_delta(delta)
