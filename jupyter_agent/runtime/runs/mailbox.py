"""Per-chat mailboxes: what reaches a chat while one of its runs is going.

Messages that arrive for a chat whose run is going are queued here and drained by that
run between model calls (a recorded ``mailbox.drain`` effect). At a run's end the driver
drains once more; what is left starts the next run, so nothing is dropped. Items are
:data:`~jupyter_agent.runtime.runs.items.MailItem` (their JSON is documented in
:mod:`jupyter_agent.core.loop.inbox`). A notice never starts a run: it waits here for the
next drain that takes notices.
"""

from __future__ import annotations

from collections import defaultdict

from jupyter_agent.runtime.runs.items import BreakItem, MailItem, MessageItem, NoticeItem

__all__ = ["Mailbox"]


class Mailbox:
    """FIFO queues of mailbox items, one per chat. Safe within one event loop."""

    def __init__(self) -> None:
        self._items: dict[str, list[MailItem]] = defaultdict(list)

    def put(self, chat_id: str, item: MailItem) -> None:
        """Queue ``item`` for the chat's current (or next) run."""
        self._items[chat_id].append(item)

    def drain(self, chat_id: str, *, notices: bool = True) -> list[MailItem]:
        """Take every queued item of the chat, oldest first; without ``notices``, the
        chat's notices stay queued (for a run that takes them)."""
        items = self._items.pop(chat_id, [])
        if notices:
            return items
        kept: list[MailItem] = [i for i in items if isinstance(i, NoticeItem)]
        if kept:
            self._items[chat_id] = kept
        return [i for i in items if not isinstance(i, NoticeItem)]

    def pending(self, chat_id: str) -> int:
        """How many items wait for the chat."""
        return len(self._items.get(chat_id, ()))

    def first_message(self, chat_id: str) -> MessageItem | None:
        """The oldest queued user message of the chat (left in place), if any."""
        for item in self._items.get(chat_id, ()):
            if isinstance(item, MessageItem):
                return item
        return None

    def drop_breaks(self, chat_id: str) -> None:
        """Forget breaks left over from a run that already ended (they target no run)."""
        items: list[MailItem] = [
            i for i in self._items.get(chat_id, ()) if not isinstance(i, BreakItem)
        ]
        if items:
            self._items[chat_id] = items
        else:
            self._items.pop(chat_id, None)
