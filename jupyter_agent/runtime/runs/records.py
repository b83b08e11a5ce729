"""The records the run manager writes for a run: its summary at the end, a minimal turn
(with the messages it took read back from the run's log), the turn its log holds.

Also the store writes a run's end makes: :func:`store_call` (retried a few times, logged
rather than raised: a failing store must not wedge the chat) and :func:`durable_call`
(retried with backoff until it succeeds or the server stops: a turn is never dropped).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import Reply, RunSummary, Steering, TurnLLM, TurnRecord
from jupyter_agent.exceptions import StoreError, StoreUnavailable
from jupyter_agent.runtime.ids import new_id
from jupyter_agent.trace.log import read_log

__all__ = [
    "LogFacts",
    "durable_call",
    "ended_by",
    "ended_summary",
    "log_facts",
    "minimal_turn",
    "status_of",
    "store_call",
    "with_counts",
]

# The run manager's logger: these lines are about its runs.
log = logging.getLogger("jupyter_agent.runtime.runs.manager")


async def store_call(fn: Callable[..., Any], *args: Any, attempts: int = 1, **kw: Any) -> None:
    """A store write at a run's end: retried, and logged rather than raised on failure."""
    for attempt in range(1, attempts + 1):
        try:
            await asyncio.to_thread(fn, *args, **kw)
            return
        except Exception:
            if attempt == attempts:
                log.exception("store write %s failed", getattr(fn, "__name__", fn))
            else:
                await asyncio.sleep(0.2 * attempt)


async def durable_call(
    fn: Callable[..., Any],
    *args: Any,
    stopping: Callable[[], bool],
    first_wait_s: float = 0.2,
    max_wait_s: float = 5.0,
    **kw: Any,
) -> bool:
    """A store write that must not be lost: retried with backoff (``first_wait_s``
    doubling to ``max_wait_s``) until it succeeds (True) or ``stopping()`` (False: the
    caller relies on recovery from the run's log at the next start).

    A StoreUnavailable (locked, busy, unreachable) is retried for as long as it lasts;
    another StoreError (the database refuses the write: a deleted chat, an unwritable
    file) three times, then False is returned too. Any other exception propagates.
    """
    wait = first_wait_s
    attempt = 0
    while True:
        attempt += 1
        try:
            await asyncio.to_thread(fn, *args, **kw)
            return True
        except StoreError as err:
            if stopping() or (not isinstance(err, StoreUnavailable) and attempt >= 3):
                log.warning("store write %s left to recovery: %s", _name(fn), err)
                return False
            if attempt == 1 or attempt % 10 == 0:
                log.warning(
                    "store write %s failed (attempt %d), retrying in %.1f s: %s",
                    _name(fn),
                    attempt,
                    wait,
                    err,
                )
        await asyncio.sleep(wait)
        wait = min(max_wait_s, wait * 2)


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", fn))


def ended_summary(
    summary: RunSummary, now: str, *, status: str, stop: str, cause: str
) -> RunSummary:
    """The summary of a run that ended at ``now``, with its status, stop reason and cause."""
    return replace(
        summary,
        status=status,  # type: ignore[arg-type]
        ended=now,
        stop_reason=stop,  # type: ignore[arg-type]
        end_cause=cause,  # type: ignore[arg-type]
    )


def status_of(turn: TurnRecord) -> str:
    """The run status a turn's stop reason means."""
    return {"done": "done", "wrapup": "done", "break_hard": "interrupted"}.get(
        turn.llm.stop_reason, "error"
    )


def ended_by(summary: RunSummary, turn: TurnRecord, now: str) -> RunSummary:
    """The summary of a run that ended at ``now`` as its ``turn`` says (status, stop
    reason, cause, model, counts, usage, cost)."""
    ended = ended_summary(
        summary, now, status=status_of(turn), stop=turn.llm.stop_reason, cause=turn.llm.end_cause
    )
    return with_counts(ended, turn)


def with_counts(summary: RunSummary, turn: TurnRecord) -> RunSummary:
    """The summary with the turn's model, counts, usage and cost."""
    return replace(
        summary,
        model=turn.model or summary.model,
        model_calls=turn.llm.model_calls,
        cells=turn.llm.cells,
        usage=turn.llm.usage,
        cost=turn.llm.cost,
    )


@dataclass(frozen=True)
class LogFacts:
    """What a run's effect log tells after a crash: the user messages the run took (in
    order: the opening one first), and the turn it was writing, if it got that far."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: dict[str, Any] | None = None
    replies: list[Reply] = field(default_factory=list)
    """What the person saw posted (``chat.post`` results that were not deferred)."""

    @property
    def message_ids(self) -> list[str]:
        """The ids of the messages taken (they are in the run's turn)."""
        return [str(m["id"]) for m in self.messages if isinstance(m.get("id"), str)]


def log_facts(log_path: Path) -> LogFacts:
    """Read :class:`LogFacts` from a run's log (best effort: empty when unreadable).

    Messages come from ``mailbox.drain`` results and the ``deferred`` mail of
    ``chat.post`` results and of cancelled effects (each the loop read into its turn).
    """
    messages: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None
    posts: dict[int, dict[str, Any]] = {}
    replies: list[Reply] = []
    try:
        lines = read_log(log_path).lines
    except Exception:
        log.debug("could not read the log %s", log_path, exc_info=True)
        return LogFacts()
    for line in lines:
        if line.phase == "intent":
            if line.name == "turn.append" and isinstance(line.data, dict):
                turn = line.data
            elif line.name == "chat.post" and isinstance(line.data, dict):
                posts[line.seq] = line.data
            continue
        if line.name == "chat.post" and isinstance(line.data, str) and line.seq in posts:
            post = posts[line.seq]  # posted (a deferred one answers a dict)
            replies.append(Reply(text=str(post.get("text", "")), done=bool(post.get("done"))))
        items: Any = line.data if line.name == "mailbox.drain" else None
        if isinstance(line.data, dict):
            items = line.data.get("deferred", items)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("kind") == "message":
                messages.append(item)
    return LogFacts(messages=messages, turn=turn, replies=replies)


def minimal_turn(summary: RunSummary, stop: str, cause: str, facts: LogFacts | Path) -> TurnRecord:
    """The turn the host writes for a run whose loop could not write one: the messages it
    took (``facts``, or read back from the log at that path) as its text and steering, and
    the replies it posted; its ``programs`` and ``fromAgent`` are the summary's."""
    if isinstance(facts, Path):
        facts = log_facts(facts)
    first, *rest = facts.messages or [{}]
    return TurnRecord(
        id=new_id("turn"),
        chat_id=summary.chat_id,
        run_id=summary.run_id,
        user_text=str(first.get("text", "")),
        steering=tuple(
            Steering(text=str(m.get("text", "")), at=str(m.get("at", ""))) for m in rest
        ),
        replies=tuple(facts.replies),
        created=summary.started,
        interrupted=True,
        model=summary.model,
        llm=TurnLLM(stop_reason=stop, end_cause=cause),  # type: ignore[arg-type]
        # What the run's opening recorded (none in rows written before).
        programs=tuple(summary.programs) or None,
        from_agent=summary.agent,
    )
