"""Mailbox items as the loop reads them.

The ``mailbox.drain`` result is a list of JSON items, queued by the host:

- ``{"kind": "message", "text", "at", "view"?: {path?, cell?, selection?},
  "attachments"?: [{"name", "media_type", "data" (base64)}]}``: a user message. The first
  drain of a run holds the message that started it; later ones are steering.
- ``{"kind": "break", "hard": bool, "at"}``: a break. A soft one ends the run at this drain
  through the wrap-up; a hard one (normally acted on by the host at once) ends it now.
- ``{"kind": "notice", "text", "at"}``: something the host tells the agent (a proposal's
  outcome, ...): queued by ``RunManager.notify``, handed only to a drain that asks for
  notices (``toolcaller@v5``: ``mailbox.drain {notices: true}``), which gives it to the
  model as a ``[notice] ...`` line and keeps it in the turn's steering (so the turn holds
  it, and the durable mailbox forgets it). A notice never starts a run.

Unknown kinds are ignored, so an older loop replays logs of a newer host.
"""

from __future__ import annotations

import base64
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.turns import Steering
from jupyter_agent.messages import File

__all__ = ["NOTICE_PREFIX", "Inbox", "InboxMessage", "InboxNotice", "read_items"]

#: How a notice reads to the model and in the turn's steering.
NOTICE_PREFIX = "[notice] "


@dataclass(frozen=True, kw_only=True)
class InboxMessage:
    """A user message taken from the mailbox."""

    text: str
    at: str
    view: dict[str, Any] | None = None
    files: tuple[File, ...] = ()

    @property
    def cwd(self) -> str | None:
        """The folder (relative to the server root) of the document the person had open."""
        path = (self.view or {}).get("path")
        if not isinstance(path, str) or not path:
            return None
        return posixpath.dirname(path) or "."

    def steering(self) -> Steering:
        """This message as a steering entry of the turn record."""
        return Steering(text=self.text, at=self.at)


@dataclass(frozen=True, kw_only=True)
class InboxNotice:
    """A notice taken from the mailbox (see the module docstring)."""

    text: str
    at: str

    @property
    def line(self) -> str:
        """The notice as the model reads it: ``[notice] <text>``."""
        return NOTICE_PREFIX + self.text

    def steering(self) -> Steering:
        """This notice as a steering entry of the turn record."""
        return Steering(text=self.line, at=self.at)


@dataclass(kw_only=True)
class Inbox:
    """One drain's content: the messages and notices in order, and whether a break came."""

    messages: list[InboxMessage] = field(default_factory=list)
    notices: list[InboxNotice] = field(default_factory=list)
    soft_break: bool = False
    hard_break: bool = False


def _files(raw: Any) -> tuple[File, ...]:
    out = []
    for item in raw or ():
        if isinstance(item, dict) and isinstance(item.get("data"), str):
            out.append(
                File(
                    media_type=str(item.get("media_type") or "application/octet-stream"),
                    data=base64.b64decode(item["data"]),
                    name=item.get("name"),
                )
            )
    return tuple(out)


def read_items(items: Sequence[Any]) -> Inbox:
    """Sort a drain's items into messages and breaks (see the module docstring)."""
    inbox = Inbox()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        if kind == "message":
            view = item.get("view")
            inbox.messages.append(
                InboxMessage(
                    text=str(item.get("text") or ""),
                    at=str(item.get("at") or ""),
                    view=view if isinstance(view, dict) else None,
                    files=_files(item.get("attachments")),
                )
            )
        elif kind == "notice":
            inbox.notices.append(
                InboxNotice(text=str(item.get("text") or ""), at=str(item.get("at") or ""))
            )
        elif kind == "break":
            if item.get("hard"):
                inbox.hard_break = True
            else:
                inbox.soft_break = True
    return inbox
