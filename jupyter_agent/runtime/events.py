"""The in-process event bus: what the panel sees live, per chat, with catch-up.

Events are ``{type, chat_id, run_id, seq, ...}``; :data:`EVENT_FIELDS` lists every type
and the fields it carries beside those four, derived from the one definition, the tagged
dataclasses of :mod:`jupyter_agent.core.events` (``docs/api.md`` documents each type, and
a test keeps the page and this table in step); :meth:`EventBus.publish` takes one of
them. ``seq`` counts per chat. Every event is delivered to every subscriber of its chat; all but the
:data:`LIVE_ONLY` types (``delta``, ``retry``) are kept in a bounded history so a client
reconnecting with ``since=SEQ`` catches up with what it missed.

``cell_output`` events (a running cell's output, live) are kept only while their cell
runs: its ``cell_end`` (with ``kind`` ``python`` or ``bash`` and a ``status``: see
:mod:`jupyter_agent.runtime.cell_events`) carries the final outputs, so publishing it
drops them from the history (a client catching up later gets the ``cell_end`` alone).
What a running cell keeps is bounded by its live output's own limits
(:mod:`jupyter_agent.runtime.live_output`).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from jupyter_agent.codec import dump_dict, wire_names
from jupyter_agent.core.events import EVENTS, LIVE_ONLY_TYPES, CellEnd, Event, event_type

__all__ = ["COMMON_FIELDS", "EVENT_FIELDS", "EVENT_TYPES", "LIVE_ONLY", "EventBus"]

#: The fields of every event.
COMMON_FIELDS: Final = ("type", "chat_id", "run_id", "seq")

#: Every event type, in the order a run emits them, with its own fields (derived from the
#: dataclasses of :mod:`jupyter_agent.core.events`, the one definition).
EVENT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    event_type(cls): tuple(wire_names(cls).values()) for cls in EVENTS
}

#: The event types, one tuple (what the panel mirrors and the API page documents).
EVENT_TYPES: Final = tuple(EVENT_FIELDS)

#: Types delivered live only, never kept for ``?since=`` catch-up.
LIVE_ONLY: Final = LIVE_ONLY_TYPES


class EventBus:
    """Publish/subscribe of chat events within one event loop."""

    def __init__(self, *, history: int = 2000) -> None:
        self._seq: dict[str, int] = defaultdict(int)
        self._history: dict[str, deque[dict[str, Any]]] = defaultdict(lambda: deque(maxlen=history))
        self._subscribers: dict[str, set[asyncio.Queue[dict[str, Any]]]] = defaultdict(set)

    def publish(self, chat_id: str, run_id: str, event: Event) -> dict[str, Any]:
        """Stamp the event with the chat's next seq, keep it (unless live only), deliver it.

        Returns the wire JSON: ``{type, chat_id, run_id, seq, ...the event's fields}``.
        """
        fields = dump_dict(event)
        type_ = fields.pop("type")
        self._seq[chat_id] += 1
        wire = {"type": type_, "chat_id": chat_id, "run_id": run_id, "seq": self._seq[chat_id]}
        wire.update(fields)
        if isinstance(event, CellEnd):
            self._drop_cell_outputs(chat_id, run_id, event.cell_id)
        if type_ not in LIVE_ONLY:
            self._history[chat_id].append(wire)
        for queue in list(self._subscribers.get(chat_id, ())):
            queue.put_nowait(wire)
        return wire

    def _drop_cell_outputs(self, chat_id: str, run_id: str, cell_id: Any) -> None:
        history = self._history.get(chat_id)
        if not history:
            return
        kept = [
            e
            for e in history
            if not (
                e["type"] == "cell_output" and e["run_id"] == run_id and e.get("cell_id") == cell_id
            )
        ]
        if len(kept) != len(history):
            history.clear()
            history.extend(kept)

    def since(self, chat_id: str, seq: int) -> list[dict[str, Any]]:
        """The kept events of the chat with a seq above ``seq``, oldest first."""
        return [e for e in self._history.get(chat_id, ()) if e["seq"] > seq]

    @contextmanager
    def subscribe(self, chat_id: str) -> Iterator[asyncio.Queue[dict[str, Any]]]:
        """A queue receiving every event of the chat published while the context is open."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._subscribers[chat_id].add(queue)
        try:
            yield queue
        finally:
            self._subscribers[chat_id].discard(queue)
