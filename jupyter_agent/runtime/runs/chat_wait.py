"""Send a message and wait for the turn that holds it (the MCP ``chat`` tool).

:func:`send_and_wait` sends through :meth:`ChatService.send
<jupyter_agent.runtime.runs.chat_service.ChatService.send>` (the same validation and routing
as ``POST agent/chats/{id}/messages``) and waits for the run whose turn holds the message,
then answers that turn exactly as ``GET agent/chats/{id}`` lists it.

Which run holds the message. The send answers the run that will hold it (a new run, the
running run's mailbox, or the run reserved after a closing one: :mod:`.manager`). One path
moves it on: mail a hard break took after the loop's last read goes to the next run. So
the chat's events are watched from before the send: the run whose ``run_start`` or
``steering`` event carries the message's id holds it. When the awaited run ends without
holding it (no such event, and its turn's text and steering do not hold the text), the
wait moves to the run that does (or the chat's next run) -- never answering an ended run
that does not hold the message.

While waiting, ``on_progress(message)`` is called for the held run's events (a cell started
or ended, the reply being written -- deltas batched to one call per
:data:`DELTA_INTERVAL_S` --, a reply, an approval asked, ...). A cancelled wait breaks the
run softly (at its next drain) before the cancellation goes on; a wait that times out
leaves the run going and answers ``ended: false``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.runtime.runs.chat_service import ChatService
from jupyter_agent.runtime.runs.run_service import RunService

__all__ = ["DELTA_INTERVAL_S", "ChatOutcome", "event_message", "send_and_wait"]

log = logging.getLogger(__name__)

#: Reply deltas are reported at most this often (seconds).
DELTA_INTERVAL_S: Final = 0.5
#: How long to look for the run a moved message went to, once its run ended (seconds).
_FOLLOW_S: Final = 5.0
#: The most runs one wait follows (a message moves once; this only bounds a bug).
_MAX_HOPS: Final = 4

Progress = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class ChatOutcome:
    """The answer of :func:`send_and_wait`: the ``run_id`` holding the message, its
    ``turn`` (REST JSON; None while it runs or when its turn was not stored), the
    ``reply`` (the turn's replies' texts, joined), ``ended`` (false: timed out)."""

    chat_id: str
    run_id: str | None
    routed: str
    ended: bool
    turn: dict[str, Any] | None

    @property
    def reply(self) -> str | None:
        """The text the person would read: every reply of the turn, in order."""
        if self.turn is None:
            return None
        texts = [str(r.get("text") or "") for r in self.turn.get("replies") or ()]
        return "\n\n".join(t for t in texts if t)

    def to_json(self) -> dict[str, Any]:
        """``{chat_id, run_id, routed, ended, reply, turn}``."""
        return {
            "chat_id": self.chat_id,
            "run_id": self.run_id,
            "routed": self.routed,
            "ended": self.ended,
            "reply": self.reply,
            "turn": self.turn,
        }


def _head(text: Any, limit: int = 160) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def event_message(event: dict[str, Any]) -> str | None:
    """A one-line progress message for a bus event (None: not worth one)."""
    kind = event.get("type")
    if kind == "run_start":
        return f"run {event.get('run_id')} started"
    if kind == "cell_start":
        code = _head(event.get("code"), 80)
        return f"cell {event.get('cell_id')} ({event.get('kind')}) started: {code}"
    if kind == "cell_end":
        duration = float(event.get("duration_s") or 0.0)
        return f"cell {event.get('cell_id')} ended: {event.get('status')} ({duration:.1f} s)"
    if kind in ("reply", "bubble"):
        return f"{'reply' if event.get('done', True) else 'says'}: {_head(event.get('text'))}"
    if kind == "approval":
        return (
            f"waiting for the person to approve ({event.get('kind')}): "
            f"{_head(event.get('summary') or event.get('code'))} -- answer it in JupyterLab"
        )
    if kind == "approval_end":
        return "approved" if event.get("approve") else "not approved"
    if kind == "steering":
        return f"took a message: {_head(event.get('text'), 80)}"
    if kind == "retry":
        return f"model call retry {event.get('attempt')} in {event.get('wait_s')} s"
    if kind == "proposal":
        return f"proposed an edit of {event.get('path')}"
    if kind == "run_end":
        return f"run ended: {event.get('stop_reason')}"
    return None


class _Watch:
    """The chat's events as the wait reads them: who holds the message, and progress."""

    def __init__(self, message_id: str, on_progress: Progress | None) -> None:
        self.message_id = message_id
        self.holder: str | None = None
        self._on_progress = on_progress
        self._deltas = ""
        self._last_delta = 0.0

    async def take(self, event: dict[str, Any], target: str) -> None:
        kind = event.get("type")
        if kind in ("run_start", "steering") and event.get("message_id") == self.message_id:
            self.holder = str(event.get("run_id"))
        if self._on_progress is None or event.get("run_id") not in (target, self.holder):
            return
        if kind == "delta":
            self._deltas += str(event.get("text") or "")
            now = asyncio.get_running_loop().time()
            if now - self._last_delta >= DELTA_INTERVAL_S:
                self._last_delta = now
                await self._on_progress(f"writing: …{_head(self._deltas[-200:], 120)}")
            return
        if kind == "reply":
            self._deltas = ""
        message = event_message(event)
        if message is not None:
            await self._on_progress(message)


async def _turn_of(
    chats: ChatService, chat_id: str, run_id: str, owner: str
) -> dict[str, Any] | None:
    chat = await chats.get(chat_id, owner=owner)
    return next((t for t in chat["turns"] if t.get("run_id") == run_id), None)


def _holds(turn: dict[str, Any] | None, text: str) -> bool:
    if turn is None:
        return False
    steering = [str(s.get("text")) for s in turn.get("steering") or ()]
    return turn.get("userText") == text or text in steering


async def send_and_wait(
    chats: ChatService,
    runs: RunService,
    chat_id: str,
    *,
    owner: str,
    text: str,
    timeout_s: float,
    on_progress: Progress | None = None,
) -> ChatOutcome:
    """Send ``text`` to ``owner``'s chat and wait (at most ``timeout_s``) for the turn
    holding it (see the module docstring). Refusals are the send's (``BadRequest``,
    ``NotFound`` also for another owner's chat, ``StoreUnavailable``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    await chats.check(chat_id, owner=owner)  # another owner's: not even subscribed
    with chats.events.subscribe(chat_id) as queue:
        answer = await chats.send(chat_id, owner=owner, text=text)
        target = answer.get("run_id")
        routed = str(answer.get("routed"))
        if target is None:
            return ChatOutcome(chat_id, None, routed, True, None)
        watch = _Watch(str(answer.get("message_id")), on_progress)
        try:
            for _ in range(_MAX_HOPS):
                ended = await _wait_run(runs, queue, watch, target, deadline)
                if not ended:
                    return ChatOutcome(chat_id, target, routed, False, None)
                turn = await _turn_of(chats, chat_id, target, owner)
                if watch.holder == target or (watch.holder is None and _holds(turn, text)):
                    return ChatOutcome(chat_id, target, routed, True, turn)
                follow = watch.holder or await _next_run(chats, queue, watch, chat_id, owner)
                if follow is None or follow == target:
                    log.warning("the run holding message %s was not found", watch.message_id)
                    return ChatOutcome(chat_id, target, routed, True, turn)
                target = follow
            turn = await _turn_of(chats, chat_id, target, owner)
            return ChatOutcome(chat_id, target, routed, True, turn)
        except asyncio.CancelledError:
            # The caller gave up (an MCP client's cancel): the run holding the message (the
            # one it moved to, when known) stops at its next drain.
            with contextlib.suppress(Exception):
                stop = runs.break_run(watch.holder or target, owner=owner, hard=False)
                await asyncio.shield(stop)
            raise


async def _wait_run(
    runs: RunService,
    queue: asyncio.Queue[dict[str, Any]],
    watch: _Watch,
    target: str,
    deadline: float,
) -> bool:
    """Read events until ``target`` has ended (True) or the deadline passed (False)."""
    loop = asyncio.get_running_loop()
    ended = asyncio.ensure_future(runs.wait(target))
    getter: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            left = deadline - loop.time()
            done, _ = await asyncio.wait(
                {ended, getter}, timeout=max(left, 0), return_when=asyncio.FIRST_COMPLETED
            )
            if getter in done:
                await watch.take(getter.result(), target)
            else:
                getter.cancel()
            if ended in done:
                while not queue.empty():  # what was published before the end
                    await watch.take(queue.get_nowait(), target)
                ended.result()
                return True
            if not done:
                return False
    finally:
        ended.cancel()
        if getter is not None:
            getter.cancel()


async def _next_run(
    chats: ChatService,
    queue: asyncio.Queue[dict[str, Any]],
    watch: _Watch,
    chat_id: str,
    owner: str,
) -> str | None:
    """The run a moved message went to: the one whose events name it, else the chat's
    running run, looked for during :data:`_FOLLOW_S`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _FOLLOW_S
    while watch.holder is None:
        left = deadline - loop.time()
        if left <= 0:
            return await chats.active_run_id(chat_id, owner=owner)
        try:
            event = await asyncio.wait_for(queue.get(), timeout=min(left, 0.2))
        except asyncio.TimeoutError:
            continue
        await watch.take(event, "")
    return watch.holder
