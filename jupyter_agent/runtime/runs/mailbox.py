"""Per-chat mailboxes: what reaches a chat while one of its runs is going.

Messages that arrive for a chat whose run is going are queued here and drained by that
run between model calls (a recorded ``mailbox.drain`` effect). At a run's end the driver
drains once more; what is left starts the next run, so nothing is dropped. Items are the
JSON shapes documented in :mod:`jupyter_agent.core.loop.inbox`. A ``notice`` never starts a run:
it waits here for the next drain that takes notices.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

__all__ = ["Mailbox"]


class Mailbox:
    """FIFO queues of mailbox items, one per chat. Safe within one event loop."""

    def __init__(self) -> None:
        self._items: dict[str, list[dict[str, Any]]] = defaultdict(list)

    def put(self, chat_id: str, item: dict[str, Any]) -> None:
        """Queue ``item`` for the chat's current (or next) run."""
        self._items[chat_id].append(item)

    def drain(self, chat_id: str, *, notices: bool = True) -> list[dict[str, Any]]:
        """Take every queued item of the chat, oldest first; without ``notices``, the
        chat's notices stay queued (for a run that takes them)."""
        items = self._items.pop(chat_id, [])
        if notices:
            return items
        kept = [i for i in items if i.get("kind") == "notice"]
        if kept:
            self._items[chat_id] = kept
        return [i for i in items if i.get("kind") != "notice"]

    def pending(self, chat_id: str) -> int:
        """How many items wait for the chat."""
        return len(self._items.get(chat_id, ()))

    def first_message(self, chat_id: str) -> dict[str, Any] | None:
        """The oldest queued user message of the chat (left in place), if any."""
        for item in self._items.get(chat_id, ()):
            if item.get("kind") == "message":
                return item
        return None

    def drop_breaks(self, chat_id: str) -> None:
        """Forget breaks left over from a run that already ended (they target no run)."""
        items = [i for i in self._items.get(chat_id, ()) if i.get("kind") != "break"]
        if items:
            self._items[chat_id] = items
        else:
            self._items.pop(chat_id, None)
