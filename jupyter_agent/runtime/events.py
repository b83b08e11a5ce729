"""The in-process event bus: what the panel sees live, per chat, with catch-up.

Events are ``{type, chat_id, run_id, seq, ...}`` with type ``run_start``, ``delta``
(streamed text), ``bubble`` (done false), ``cell_start`` / ``cell_output`` (a running
cell's output, live) / ``cell_end`` (with ``kind`` ``python`` or ``bash`` and a
``status``: see :mod:`jupyter_agent.runtime.cell_events`), ``retry``,
``reply`` (done true), ``run_end``. ``seq`` counts per chat. Every event is delivered to
every subscriber of its chat; all but ``delta`` and ``retry`` (live only) are kept in a
bounded history so a client reconnecting with ``since=SEQ`` catches up with what it
missed.

``cell_output`` events are kept only while their cell runs: its ``cell_end`` carries the
final outputs, so publishing it drops them from the history (a client catching up later
gets the ``cell_end`` alone). What a running cell keeps is bounded by its live output's
own limits (:mod:`jupyter_agent.runtime.live_output`).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["EventBus", "LIVE_ONLY"]

LIVE_ONLY = frozenset({"delta", "retry"})


class EventBus:
    """Publish/subscribe of chat events within one event loop."""

    def __init__(self, *, history: int = 2000) -> None:
        self._seq: dict[str, int] = defaultdict(int)
        self._history: dict[str, deque[dict[str, Any]]] = defaultdict(lambda: deque(maxlen=history))
        self._subscribers: dict[str, set[asyncio.Queue[dict[str, Any]]]] = defaultdict(set)

    def publish(self, chat_id: str, run_id: str, type_: str, **fields: Any) -> dict[str, Any]:
        """Stamp the event with the chat's next seq, keep it (unless live only), deliver it."""
        self._seq[chat_id] += 1
        event = {"type": type_, "chat_id": chat_id, "run_id": run_id, "seq": self._seq[chat_id]}
        event.update(fields)
        if type_ == "cell_end":
            self._drop_cell_outputs(chat_id, run_id, fields.get("cell_id"))
        if type_ not in LIVE_ONLY:
            self._history[chat_id].append(event)
        for queue in list(self._subscribers.get(chat_id, ())):
            queue.put_nowait(event)
        return event

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
