"""A run's inbox: the mail it takes, the final reply that waits for mail, its closing.

The run *closes* (takes no more mail) at one atomic point: when the final reply
(``chat.post`` done true) is performed with no message in the mailbox, or at a hard break.
A final reply asked while messages wait is not posted: :meth:`RunInbox.post` drains them
into its answer ``{"deferred": [items]}`` and the loop takes them into this turn. A hard
break (:meth:`RunInbox.break_hard`) drains the mailbox at once; the driver hands those
items to the loop with the first cancelled result (``deferred``). So every message the
run manager routed to this run while it was open is in its turn, and
:meth:`RunInbox.held_by` tells which of them the stored turn holds.

Notices are handed only to a run whose drains ask for them (``mailbox.drain {notices:
true}``): from its first such drain on, its deferrals and its hard break take them too;
another run leaves them queued for the next run, and they never defer a final reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_agent.core.events.types import BubbleEvent, Event, ReplyEvent, SteeringEvent
from jupyter_agent.core.loop.inbox import NOTICE_PREFIX
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.phase import RunLifecycle, RunPhase
from jupyter_agent.runtime.runs.mailbox import (
    BreakItem,
    Mailbox,
    MailItem,
    item_from_json,
    items_json,
)
from jupyter_agent.runtime.secrets import Scrubber

__all__ = ["RunInbox"]


class RunInbox:
    """The mail one run takes (see the module docstring)."""

    def __init__(
        self,
        *,
        chat_id: str,
        mailbox: Mailbox,
        lifecycle: RunLifecycle,
        scrubber: Callable[[], Scrubber],
        publish: Callable[[Event], None],
    ) -> None:
        self.chat_id = chat_id
        self.mailbox = mailbox
        self.lifecycle = lifecycle
        self._scrubber = scrubber
        self._publish = publish
        #: The view of the newest message taken that has one (``notebook.read()``'s default).
        self.view: dict[str, Any] | None = None
        self._opened = False  # the first message taken is the run's opening one
        self._notices = False  # the program's drains take notices
        self._taken: list[dict[str, Any]] = []  # the messages (and notices) taken, as read
        self._deferred: list[dict[str, Any]] = []  # mail taken at a hard break

    # --- taking mail -------------------------------------------------------------------

    def _drain(self) -> list[dict[str, Any]]:
        """Take the chat's mailbox (its notices only for a run that takes them), as the
        loop reads it: scrubbed, so the turn holds it as recorded."""
        items = self.mailbox.drain(self.chat_id, notices=self._notices)
        cleaned: list[dict[str, Any]] = self._scrubber().clean_json(items_json(items))
        return cleaned

    def _take(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Items just taken from the mailbox: each message after the opening one is steering
        (published as it joins the turn)."""
        for item in items:
            if item.get("kind") == "notice" and isinstance(item.get("id"), str):
                self._taken.append(item)  # held by the turn's steering (v5), then forgotten
            if item.get("kind") != "message":
                continue
            if isinstance(item.get("view"), dict):
                self.view = item["view"]
            if isinstance(item.get("id"), str):
                self._taken.append(item)
            if not self._opened:
                self._opened = True
                continue
            message_id = item.get("id")
            self._publish(
                SteeringEvent(
                    message_id=message_id if isinstance(message_id, str) else None,
                    text=str(item.get("text") or ""),
                    at=str(item.get("at") or ""),
                )
            )
        return items

    def drain(self, *, notices: bool) -> list[dict[str, Any]]:
        """``mailbox.drain``: what a hard break took first, then the mailbox; a run broken
        between effects gets a hard break item last (the loop ends here, holding the mail)."""
        self._notices = self._notices or notices
        items = self._deferred + self._take(self._drain())
        self._deferred = []
        if self.lifecycle.breaking:
            items.append(BreakItem(hard=True, at=now_iso()).to_json())
        return items

    # --- closing -----------------------------------------------------------------------

    def post(self, data: dict[str, Any]) -> Any:
        """``chat.post``: a bubble, or the final reply (which closes the run, or waits for
        the mail queued since the last drain: ``{"deferred": items}``); the message id."""
        done = bool(data.get("done"))
        if done and self.lifecycle.takes_mail:
            if self.mailbox.first_message(self.chat_id) is not None:
                # Routed here after the last drain: the turn must hold them, so the final
                # reply waits and the loop reads them (no await between check and drain).
                return {"deferred": self._take(self._drain())}
            self.lifecycle.move("close")
        message_id = new_id("msg")
        text = str(data.get("text", ""))
        kind = ReplyEvent if done else BubbleEvent
        self._publish(kind(text=text, done=done, message_id=message_id))
        return message_id

    def break_hard(self) -> None:
        """The run is hard-broken, and closed if it was open: atomically with the break (no
        await), what waits in the mailbox was routed to this run, so it joins this turn;
        later mail starts the next run."""
        before = self.lifecycle.move("hard_break")
        if before in (RunPhase.OPEN, RunPhase.WRAPPING):
            self._deferred = self._take(self._drain())

    def close(self) -> None:
        """The run takes no more mail (its loop is over, or its program failed)."""
        self.lifecycle.move("close")

    # --- what the turn holds -------------------------------------------------------------

    def pop_deferred(self) -> list[dict[str, Any]]:
        """Mail a hard break took that the loop has not read yet; emptied."""
        items, self._deferred = self._deferred, []
        return items

    def held_by(self, turn: TurnRecord) -> tuple[list[str], list[MailItem]]:
        """The messages this run took, split by what ``turn`` holds: (ids of those it holds
        as its text or steering, the items it does not hold, oldest first).

        Matched by text, one turn entry per message, so a path that kept only some of them
        (a run that failed, a bad tier, mail a hard break took after the loop's last read)
        never has the durable mailbox forget a message no turn holds.
        """
        texts: list[str] = [turn.user_text, *(s.text for s in turn.steering)]
        held: list[str] = []
        left: list[MailItem] = []
        for item in self._taken:
            text = str(item.get("text") or "")
            if item.get("kind") == "notice":
                text = NOTICE_PREFIX + text
            if text in texts:
                texts.remove(text)
                held.append(str(item["id"]))
            elif (typed := item_from_json(item)) is not None:
                left.append(typed)
        return held, left
