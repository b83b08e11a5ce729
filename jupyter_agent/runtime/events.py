"""The in-process event bus: what the panel sees live, per chat, with catch-up.

Events are ``{type, chat_id, run_id, seq, ...}``; :data:`EVENT_FIELDS` lists every type
and the fields it carries beside those four, derived from the one definition, the tagged
dataclasses of :mod:`jupyter_agent.core.events.types` (``docs/api.md`` documents each type, and
a test keeps the page and this table in step); :meth:`EventBus.publish` takes one of
them. ``seq`` counts per chat, for the bus's lifetime: pruning never resets it, so a seq
is never given twice. Every event is delivered to every subscriber of its chat; all but
the :data:`LIVE_ONLY` types (``delta``, ``retry``) are kept so a client reconnecting with
``since=SEQ`` catches up with what it missed.

What is kept, per chat, bounded by bytes (the length of each event's JSON as the events
WebSocket sends it, measured once when it is published):

- every kept event of a run in progress (a reconnecting client rebuilds the running turn
  from them): a run is in progress from its first event until :meth:`EventBus.end_run`;
- of the runs that ended, the newest events up to :attr:`EventBus.tail_bytes`, trimmed
  when a run ends (a client that reloads gets ended runs from their turn records);
- over all chats, at most :attr:`EventBus.max_bytes`: past it, the ended runs' events of
  the chats published to least recently go first (a run in progress is never cut);
- nothing of a deleted chat (:meth:`EventBus.forget`).

Kept events are held as their encoded JSON (the frame the socket sends), decoded again for
a catch-up: several times smaller than the dicts, and most are never read again.

A client whose ``since`` is older than what was pruned is told so: :meth:`EventBus.gap`
(the WebSocket sends it before the kept events; see ``docs/api.md``).

``cell_output`` events (a running cell's output, live) are kept only while their cell
runs: its ``cell_end`` (with ``kind`` ``python`` or ``bash`` and a ``status``: see
:mod:`jupyter_agent.runtime.loop.cell_events`) carries the final outputs, so publishing it
drops them from the history (a client catching up later gets the ``cell_end`` alone; this
is not a gap). What a running cell keeps is bounded by its live output's own limits
(:mod:`jupyter_agent.runtime.kernels.live_output`).
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from traitlets import Int
from traitlets.config import LoggingConfigurable

from jupyter_agent.codec import dump_dict, wire_names
from jupyter_agent.core.events.types import EVENTS, LIVE_ONLY_TYPES, CellEnd, Event, event_type

__all__ = ["COMMON_FIELDS", "EVENT_FIELDS", "EVENT_TYPES", "GAP", "LIVE_ONLY", "EventBus"]

#: The fields of every event.
COMMON_FIELDS: Final = ("type", "chat_id", "run_id", "seq")

#: Every event type, in the order a run emits them, with its own fields (derived from the
#: dataclasses of :mod:`jupyter_agent.core.events.types`, the one definition).
EVENT_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    event_type(cls): tuple(wire_names(cls).values()) for cls in EVENTS
}

#: The event types, one tuple (what the panel mirrors and the API page documents).
EVENT_TYPES: Final = tuple(EVENT_FIELDS)

#: Types delivered live only, never kept for ``?since=`` catch-up.
LIVE_ONLY: Final = LIVE_ONLY_TYPES

#: The ``type`` of the frame :meth:`EventBus.gap` answers (not an event: it has no seq).
GAP: Final = "gap"


class _Kept:
    """One kept event: its encoded JSON (what a catch-up decodes) and the few fields the
    pruning reads. A kept event as text is several times smaller than as a dict, and most
    are never read again (bench/bench_memory.py)."""

    __slots__ = ("cell_id", "run_id", "seq", "size", "text", "type")

    def __init__(self, wire: dict[str, Any], text: str) -> None:
        self.seq: int = wire["seq"]
        self.run_id: str = wire["run_id"]
        self.type: str = wire["type"]
        self.cell_id: Any = wire.get("cell_id")
        self.text = text
        self.size = len(text)


class _ChatLog:
    """What the bus holds of one chat."""

    __slots__ = ("bytes", "deleted", "events", "open_runs", "pruned_through", "seq")

    def __init__(self) -> None:
        self.seq = 0
        #: Kept events, oldest first.
        self.events: deque[_Kept] = deque()
        self.bytes = 0
        #: Runs with events and no end yet (their events are never pruned).
        self.open_runs: set[str] = set()
        #: The highest seq of a kept event pruned (0: none).
        self.pruned_through = 0
        #: Deleted while a run was open: kept (seq only) until that run ends.
        self.deleted = False


class EventBus(LoggingConfigurable):
    """Publish/subscribe of chat events within one event loop, with bounded catch-up (see
    the module docstring). Configured as ``c.EventBus.tail_bytes`` / ``max_bytes``."""

    # A reconnecting client's catch-up needs a short tail: a reload reads ended runs from
    # their turn records, and the panel reads them again after a gap. 16 KiB holds about 7
    # chat-only runs (2.1 KB of events each) or 4 one-cell runs (3.7 KB); 64 KiB x 50 chats
    # was half the server's growth over 1,000 runs, 256 KiB most of it (bench_memory.py).
    tail_bytes = Int(
        16 * 1024,
        min=0,
        help="Bytes (encoded JSON) of ended runs' events kept per chat for ?since= catch-up;"
        " the events of a run in progress are all kept.",
    ).tag(config=True)
    max_bytes = Int(
        8 * 1024 * 1024,
        min=0,
        help="Bytes (encoded JSON) of events kept over all chats; past it, the ended runs'"
        " events of the least recently active chats go first.",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Least recently published first (the order the global bound evicts in).
        self._chats: OrderedDict[str, _ChatLog] = OrderedDict()
        self._bytes = 0
        self._subscribers: dict[str, set[asyncio.Queue[dict[str, Any]]]] = {}
        #: Applied to each event's wire JSON before it is kept or delivered: the server's
        #: ``Scrubber.clean_json`` (no known secret in any event); identity by default.
        self.clean: Callable[[dict[str, Any]], dict[str, Any]] = lambda wire: wire

    @property
    def kept_bytes(self) -> int:
        """Bytes (encoded JSON) of every kept event, all chats."""
        return self._bytes

    def chats(self) -> list[str]:
        """The chats the bus holds events of, least recently published first."""
        return [chat_id for chat_id, log in self._chats.items() if log.events]

    def chat_bytes(self, chat_id: str) -> int:
        """Bytes (encoded JSON) of the chat's kept events."""
        log = self._chats.get(chat_id)
        return log.bytes if log is not None else 0

    def publish(self, chat_id: str, run_id: str, event: Event) -> dict[str, Any]:
        """Stamp the event with the chat's next seq, keep it (unless live only), deliver it.

        Returns the wire JSON: ``{type, chat_id, run_id, seq, ...the event's fields}``.
        """
        fields = dump_dict(event)
        type_ = fields.pop("type")
        log = self._chats.get(chat_id)
        if log is None:
            log = self._chats[chat_id] = _ChatLog()
        else:
            self._chats.move_to_end(chat_id)
        log.seq += 1
        wire = {"type": type_, "chat_id": chat_id, "run_id": run_id, "seq": log.seq}
        wire.update(fields)
        wire = self.clean(wire)
        if isinstance(event, CellEnd):
            self._drop_cell_outputs(log, run_id, event.cell_id)
        if type_ not in LIVE_ONLY and not log.deleted:
            # The size of the frame the WebSocket sends (json.dumps: ASCII, so chars = bytes).
            kept = _Kept(wire, json.dumps(wire))
            log.events.append(kept)
            log.bytes += kept.size
            self._bytes += kept.size
            log.open_runs.add(run_id)
            if self._bytes > self.max_bytes:
                self._evict()
        for queue in list(self._subscribers.get(chat_id, ())):
            queue.put_nowait(wire)
        return wire

    def end_run(self, chat_id: str, run_id: str) -> None:
        """The run has ended (after its ``run_end``): its events join the chat's tail of
        ended runs, trimmed to :attr:`tail_bytes` (oldest first)."""
        log = self._chats.get(chat_id)
        if log is None:
            return
        log.open_runs.discard(run_id)
        if log.deleted and not log.open_runs:
            self._drop_chat(chat_id)
            return
        ended = sum(k.size for k in log.events if k.run_id not in log.open_runs)
        if ended > self.tail_bytes:
            self._prune(log, ended - self.tail_bytes)

    def forget(self, chat_id: str) -> None:
        """The chat is deleted: drop its events. A run of it still open (a delete that did
        not wait for it) keeps only the chat's seq until it ends, and nothing is kept."""
        log = self._chats.get(chat_id)
        if log is None:
            return
        if not log.open_runs:
            self._drop_chat(chat_id)
            return
        self._bytes -= log.bytes
        log.events.clear()
        log.bytes = 0
        log.deleted = True

    def since(self, chat_id: str, seq: int) -> list[dict[str, Any]]:
        """The kept events of the chat with a seq above ``seq``, oldest first."""
        log = self._chats.get(chat_id)
        if log is None:
            return []
        return [json.loads(k.text) for k in log.events if k.seq > seq]

    def gap(self, chat_id: str, since: int) -> dict[str, Any] | None:
        """``{type: "gap", chat_id, since, pruned_through}`` when kept events with a seq
        above ``since`` were pruned (those up to ``pruned_through`` may be missing), else
        None. Not an event: no ``run_id``, no ``seq``."""
        log = self._chats.get(chat_id)
        if log is None or since >= log.pruned_through:
            return None
        through = log.pruned_through
        return {"type": GAP, "chat_id": chat_id, "since": since, "pruned_through": through}

    @contextmanager
    def subscribe(self, chat_id: str) -> Iterator[asyncio.Queue[dict[str, Any]]]:
        """A queue receiving every event of the chat published while the context is open."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._subscribers.setdefault(chat_id, set()).add(queue)
        try:
            yield queue
        finally:
            queues = self._subscribers.get(chat_id)
            if queues is not None:
                queues.discard(queue)
                if not queues:
                    del self._subscribers[chat_id]

    # --- pruning ---------------------------------------------------------------------------

    def _drop_cell_outputs(self, log: _ChatLog, run_id: str, cell_id: Any) -> None:
        def keep(k: _Kept) -> bool:
            ended = k.type == "cell_output" and k.cell_id == cell_id
            return not (ended and k.run_id == run_id)

        self._keep(log, keep, count_as_pruned=False)

    def _prune(self, log: _ChatLog, excess: int) -> None:
        """Drop the oldest events of ended runs until ``excess`` bytes are gone."""
        left = excess

        def keep(k: _Kept) -> bool:
            nonlocal left
            if left <= 0 or k.run_id in log.open_runs:
                return True
            left -= k.size
            return False

        self._keep(log, keep, count_as_pruned=True)

    def _keep(self, log: _ChatLog, keep: Callable[[_Kept], bool], *, count_as_pruned: bool) -> None:
        """Keep the entries ``keep`` accepts; ``count_as_pruned``: the dropped ones are a gap."""
        kept: deque[_Kept] = deque()
        dropped = 0
        for entry in log.events:
            if keep(entry):
                kept.append(entry)
                continue
            dropped += entry.size
            if count_as_pruned:
                log.pruned_through = max(log.pruned_through, entry.seq)
        if dropped:
            log.events = kept
            log.bytes -= dropped
            self._bytes -= dropped

    def _evict(self) -> None:
        """Over :attr:`max_bytes`: the ended runs' events of the least recently published
        chats go, whole chats at a time, until the bus is under it."""
        for log in list(self._chats.values()):
            if self._bytes <= self.max_bytes:
                return
            if log.events:
                self._prune(log, log.bytes)

    def _drop_chat(self, chat_id: str) -> None:
        log = self._chats.pop(chat_id)
        self._bytes -= log.bytes
