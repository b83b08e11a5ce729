"""Live cell output: what the panel sees of a cell while it runs (``cell_output`` events).

Two pure parts and a thin asyncio wrapper:

- :class:`OutputCollector` keeps a running cell's outputs in nbformat's shapes, bounded
  like a recorded cell result (:data:`COLLECT_MAX_OUTPUTS` outputs,
  :data:`COLLECT_TEXT_CAP` characters; consecutive stream text of one name merged). It is
  what a cell stopped by a hard break or a kernel restart still has to show.
- :class:`LiveThrottle` decides which outputs become events, and when. Stream text is
  coalesced (consecutive text of one stream name becomes one output); events go out at
  most once per interval (the first at once, the rest at the end of the interval: a
  leading and trailing edge); the interval doubles every :attr:`backoff_every` events up to
  :attr:`max_interval_s`, so a cell that prints for an hour stays live with a bounded
  number of events. A ``clear_output`` drops what is pending before it (an animation sends
  only its latest frame). Past :attr:`max_chars` characters or :attr:`max_events` events,
  one visible truncation marker (a stderr stream output) is the cell's last live event.
- :class:`LiveCell` glues a throttle to a publish callback and an event loop timer.

The kernel handle feeds an :class:`OutputCollector` from the kernel's iopub messages
(:func:`output_from_iopub`) and hands each output to the driver's :class:`LiveCell`.

Clock values are ``time.monotonic()`` seconds given by the caller, so the pure parts are
tested without waiting. Sizes count the characters of the output's strings (text and
mime data), a cheap stand-in for bytes on the wire.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "COLLECT_MAX_OUTPUTS",
    "COLLECT_TEXT_CAP",
    "LIVE_OUTPUT_TYPES",
    "LiveCell",
    "LiveThrottle",
    "OutputCollector",
    "output_from_iopub",
    "output_size",
    "truncation_marker",
]

# The same bounds as the kernel's capture (kernel/capture.py: OUTPUTS_MAX, OUTPUTS_TEXT_CAP).
COLLECT_MAX_OUTPUTS = 200
COLLECT_TEXT_CAP = 100_000

#: iopub message types that carry a cell output (``update_display_data`` and
#: ``clear_output`` are passed on as they are: the panel's output area knows them).
LIVE_OUTPUT_TYPES = frozenset(
    {"stream", "display_data", "execute_result", "error", "update_display_data", "clear_output"}
)


def output_from_iopub(msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
    """The nbformat output of one iopub message, or None when it is not an output."""
    if msg_type == "stream":
        return {
            "output_type": "stream",
            "name": str(content.get("name") or "stdout"),
            "text": str(content.get("text") or ""),
        }
    if msg_type in ("display_data", "update_display_data"):
        out: dict[str, Any] = {
            "output_type": msg_type,
            "data": dict(content.get("data") or {}),
            "metadata": dict(content.get("metadata") or {}),
        }
        transient = content.get("transient")
        if isinstance(transient, dict) and transient:
            out["transient"] = dict(transient)
        return out
    if msg_type == "execute_result":
        return {
            "output_type": "execute_result",
            "data": dict(content.get("data") or {}),
            "metadata": dict(content.get("metadata") or {}),
            "execution_count": content.get("execution_count"),
        }
    if msg_type == "error":
        return {
            "output_type": "error",
            "ename": str(content.get("ename") or ""),
            "evalue": str(content.get("evalue") or ""),
            "traceback": [str(line) for line in content.get("traceback") or ()],
        }
    if msg_type == "clear_output":
        return {"output_type": "clear_output", "wait": bool(content.get("wait"))}
    return None


def output_size(output: dict[str, Any]) -> int:
    """The characters of an output's strings (text, mime values, traceback lines)."""
    kind = output.get("output_type")
    if kind == "stream":
        return len(str(output.get("text") or ""))
    if kind == "error":
        lines = output.get("traceback") or []
        return len(str(output.get("evalue") or "")) + sum(len(str(x)) for x in lines)
    data = output.get("data")
    if isinstance(data, dict):
        return sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values())
    return 0


def truncation_marker(max_chars: int) -> dict[str, Any]:
    """The last live output of a cell whose live output was cut."""
    size = f"{max_chars // 1000} k characters" if max_chars >= 1000 else f"{max_chars} characters"
    return {
        "output_type": "stream",
        "name": "stderr",
        "text": (
            f"\n[live output cut after {size}: the cell's recorded output shows when it ends]\n"
        ),
    }


class OutputCollector:
    """A running cell's outputs, bounded like a recorded result (see the module docstring)."""

    def __init__(
        self, *, max_outputs: int = COLLECT_MAX_OUTPUTS, text_cap: int = COLLECT_TEXT_CAP
    ) -> None:
        self._max_outputs = max_outputs
        self._cap = text_cap
        self._outputs: list[dict[str, Any]] = []
        self._chars = 0
        self.truncated = False
        """True once an output (or part of a stream's text) did not fit."""

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The outputs so far (copies: the caller may keep them)."""
        return [dict(o) for o in self._outputs]

    def add(self, output: dict[str, Any]) -> None:
        """Keep one output; ``clear_output`` empties the list (as in a notebook)."""
        kind = output.get("output_type")
        if kind == "clear_output":
            self._outputs.clear()
            self._chars = 0
            return
        if kind == "update_display_data":
            return  # updates a display in place: the kept display stays as first shown
        if kind == "stream":
            self._add_stream(str(output.get("name") or "stdout"), str(output.get("text") or ""))
            return
        size = output_size(output)
        if len(self._outputs) >= self._max_outputs or self._chars + size > self._cap:
            self.truncated = True
            return
        kept = {k: v for k, v in output.items() if k != "transient"}
        self._outputs.append(kept)
        self._chars += size

    def _add_stream(self, name: str, text: str) -> None:
        if not text:
            return
        room = self._cap - self._chars
        piece = text[: max(room, 0)]
        if len(piece) < len(text):
            self.truncated = True
        if not piece:
            return
        last = self._outputs[-1] if self._outputs else None
        if last is not None and last.get("output_type") == "stream" and last.get("name") == name:
            last["text"] = str(last["text"]) + piece
        elif len(self._outputs) < self._max_outputs:
            self._outputs.append({"output_type": "stream", "name": name, "text": piece})
        else:
            self.truncated = True
            return
        self._chars += len(piece)

    def stream_text(self, name: str) -> str:
        """All kept text of one stream (``stdout`` or ``stderr``), in order."""
        return "".join(
            str(o["text"])
            for o in self._outputs
            if o.get("output_type") == "stream" and o.get("name") == name
        )


class LiveThrottle:
    """Which outputs become ``cell_output`` events, and when (see the module docstring).

    :meth:`add` and :meth:`flush` return the outputs to publish now; :meth:`due` says when
    :meth:`flush` should be called next (None: nothing pending). Pure: the clock is given.
    """

    def __init__(
        self,
        *,
        min_interval_s: float = 0.05,
        max_interval_s: float = 10.0,
        backoff_every: int = 100,
        max_chars: int = 1_000_000,
        max_events: int = 1000,
    ) -> None:
        self.min_interval_s = min_interval_s
        self.max_interval_s = max_interval_s
        self.backoff_every = backoff_every
        self.max_chars = max_chars
        self.max_events = max_events
        self.events = 0
        """Events released so far (the truncation marker included)."""
        self.chars = 0
        """Characters released so far."""
        self.truncated = False
        """True once the marker was released: nothing more goes out."""
        self._pending: list[dict[str, Any]] = []
        self._pending_chars = 0  # the size of what is pending
        self._pending_full = False  # something was dropped for want of budget
        self._last_emit: float | None = None

    def interval(self) -> float:
        """The current minimum time between two releases."""
        doublings = self.events // max(self.backoff_every, 1)
        factor = float(2 ** min(doublings, 30))
        return min(self.min_interval_s * factor, self.max_interval_s)

    def add(self, output: dict[str, Any], now: float) -> list[dict[str, Any]]:
        """Take one output; what to publish now (often nothing: it waits for its slot)."""
        if self.truncated:
            return []
        self._queue(output)
        if self._last_emit is None or now - self._last_emit >= self.interval():
            return self.flush(now)
        return []

    def due(self) -> float | None:
        """When pending outputs may go out (a monotonic time), or None."""
        if (not self._pending and not self._pending_full) or self.truncated:
            return None
        if self._last_emit is None:
            return 0.0
        return self._last_emit + self.interval()

    def flush(self, now: float) -> list[dict[str, Any]]:
        """Release everything pending (bounded); the caller publishes the result."""
        if (not self._pending and not self._pending_full) or self.truncated:
            self._pending.clear()
            self._pending_chars = 0
            return []
        out: list[dict[str, Any]] = []
        for output in self._pending:
            size = output_size(output)
            # One event is always kept free for the truncation marker.
            room_for_event = self.events + 2 <= self.max_events
            if room_for_event and self.chars + size <= self.max_chars:
                out.append(output)
                self.chars += size
                self.events += 1
                continue
            room = self.max_chars - self.chars
            if room_for_event and room > 0 and output.get("output_type") == "stream":
                out.append({**output, "text": str(output["text"])[:room]})
                self.chars += room
                self.events += 1
            out.append(truncation_marker(self.max_chars))
            self.events += 1
            self.truncated = True
            break
        else:
            if self._pending_full:  # more came than the budget holds: say so, once
                out.append(truncation_marker(self.max_chars))
                self.events += 1
                self.truncated = True
        self._pending.clear()
        self._pending_chars = 0
        self._pending_full = False
        self._last_emit = now
        return out

    def _queue(self, output: dict[str, Any]) -> None:
        # What is pending is bounded like what goes out: past the budget left, nothing more
        # can be shown anyway, so a tight print loop cannot pile up memory between flushes.
        if (
            len(self._pending) + self.events + 2 > self.max_events
            or self._pending_chars + self.chars > self.max_chars
        ) and output.get("output_type") != "clear_output":
            self._pending_full = True
            return
        self._pending_chars += output_size(output)
        kind = output.get("output_type")
        if kind == "clear_output":
            # What is pending would be cleared as soon as it is shown: only the clear goes.
            self._pending = [dict(output)]
            self._pending_chars = output_size(output)
            return
        last = self._pending[-1] if self._pending else None
        if (
            kind == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            last["text"] = str(last["text"]) + str(output.get("text") or "")
            return
        self._pending.append(dict(output))


class LiveCell:
    """One running cell's live output: throttled ``publish`` calls, driven by a loop timer.

    ``publish(output)`` is called for each released output (on the event loop's thread).
    Call :meth:`add` for each output as it arrives and :meth:`close` when the cell ended:
    what is still pending then is dropped, since the ``cell_end`` event carries the final
    outputs.
    """

    def __init__(
        self,
        publish: Callable[[dict[str, Any]], None],
        *,
        throttle: LiveThrottle | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._publish = publish
        self.throttle = throttle if throttle is not None else LiveThrottle()
        self._clock = clock
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self.started = clock()

    def add(self, output: dict[str, Any]) -> None:
        """One output of the cell, as the kernel sent it."""
        if self._closed:
            return
        self._release(self.throttle.add(output, self._clock()))
        self._arm()

    def close(self) -> None:
        """The cell ended: no more events (pending text is dropped)."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    @property
    def elapsed_s(self) -> float:
        """Seconds since the cell started (for a stopped cell's duration)."""
        return self._clock() - self.started

    def _release(self, outputs: list[dict[str, Any]]) -> None:
        for output in outputs:
            self._publish(output)

    def _arm(self) -> None:
        if self._timer is not None or self._closed:
            return
        due = self.throttle.due()
        if due is None:
            return
        delay = max(due - self._clock(), 0.0)
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed:
            return
        self._release(self.throttle.flush(self._clock()))
        self._arm()
