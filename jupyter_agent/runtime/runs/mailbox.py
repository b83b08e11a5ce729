"""Per-chat mailboxes, and the items they hold: what reaches a chat while one of its runs
is going.

Messages that arrive for a chat whose run is going are queued here and drained by that
run between model calls (a recorded ``mailbox.drain`` effect). At a run's end the driver
drains once more; what is left starts the next run, so nothing is dropped. A notice never
starts a run: it waits here for the next drain that takes notices.

Items are a tagged union, one class per ``kind``: :data:`MailItem` is ``MessageItem |
NoticeItem | BreakItem``. What the durable mailbox stores, what a run's ``mailbox.drain``
answers and what its log records is each item's ``to_json()`` (the JSON shapes of
:mod:`jupyter_agent.core.loop.inbox`, keys in the order the host has always written them:
``kind, text, at, id, view?, attachments?`` for a message, ``kind, text, at, id`` for a
notice, ``kind, hard, at`` for a break). :func:`item_from_json` reads one back (from the
store, or from a run's recorded mail); keys it does not know ride along in ``extra``,
after the known ones.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BreakItem",
    "MailItem",
    "Mailbox",
    "MessageItem",
    "NoticeItem",
    "item_from_json",
    "items_from_json",
    "items_json",
]


def _extra(data: Mapping[str, Any], known: Iterable[str]) -> dict[str, Any]:
    keys = set(known)
    return {k: v for k, v in data.items() if k not in keys}


@dataclass(frozen=True, kw_only=True)
class MessageItem:
    """A user message: it opens a run (its first) or steers it (later ones)."""

    kind: Literal["message"] = "message"
    text: str
    at: str
    id: str | None = None
    #: The person's view when they sent it (``{path?, cell?, cell_id?, selection?}``).
    view: dict[str, Any] | None = None
    attachments: tuple[dict[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The item as stored, drained and recorded."""
        out: dict[str, Any] = {"kind": "message", "text": self.text, "at": self.at}
        if self.id is not None:
            out["id"] = self.id
        if self.view:
            out["view"] = self.view
        if self.attachments:
            out["attachments"] = list(self.attachments)
        return {**out, **self.extra}


@dataclass(frozen=True, kw_only=True)
class NoticeItem:
    """Something the host tells the agent (a proposal's outcome, ...); never starts a run."""

    kind: Literal["notice"] = "notice"
    text: str
    at: str
    id: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The item as stored, drained and recorded."""
        out: dict[str, Any] = {"kind": "notice", "text": self.text, "at": self.at}
        if self.id is not None:
            out["id"] = self.id
        return {**out, **self.extra}


@dataclass(frozen=True, kw_only=True)
class BreakItem:
    """A break: a soft one ends the run at its next drain, a hard one at once."""

    kind: Literal["break"] = "break"
    hard: bool
    at: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The item as drained and recorded."""
        return {"kind": "break", "hard": self.hard, "at": self.at, **self.extra}


MailItem = MessageItem | NoticeItem | BreakItem
"""One mailbox item (see the module docstring)."""


def _id(data: Mapping[str, Any]) -> str | None:
    value = data.get("id")
    return value if isinstance(value, str) else None


def item_from_json(data: Mapping[str, Any]) -> MailItem | None:
    """Read one item back (None for a kind the host does not know: it is ignored, as the
    loop ignores it)."""
    kind = data.get("kind")
    if kind == "message":
        view = data.get("view")
        attachments = data.get("attachments")
        return MessageItem(
            text=str(data.get("text") or ""),
            at=str(data.get("at") or ""),
            id=_id(data),
            view=view if isinstance(view, dict) and view else None,
            attachments=tuple(attachments) if isinstance(attachments, list) else (),
            extra=_extra(data, ("kind", "text", "at", "id", "view", "attachments")),
        )
    if kind == "notice":
        return NoticeItem(
            text=str(data.get("text") or ""),
            at=str(data.get("at") or ""),
            id=_id(data),
            extra=_extra(data, ("kind", "text", "at", "id")),
        )
    if kind == "break":
        return BreakItem(
            hard=data.get("hard") is True,
            at=str(data.get("at") or ""),
            extra=_extra(data, ("kind", "hard", "at")),
        )
    return None


def items_from_json(data: Iterable[Mapping[str, Any]]) -> list[MailItem]:
    """Read items back, leaving out those of unknown kinds."""
    return [item for raw in data if (item := item_from_json(raw)) is not None]


def items_json(items: Iterable[MailItem]) -> list[dict[str, Any]]:
    """The items as a ``mailbox.drain`` answers them."""
    return [item.to_json() for item in items]


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
