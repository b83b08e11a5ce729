"""What the loop's setup reads and adds before the first model call: the chat's earlier turns
(:func:`read_past`, as a :class:`Past` that builds the boot window), the autorecall step
(:func:`recall`) and the final reply of a run that cannot start (:func:`say_and_end`). Pure:
each yields effects (see :mod:`jupyter_agent.core.loop.machine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.history.pick import ChunkSummary
from jupyter_agent.core.history.window import Window, boot_window
from jupyter_agent.core.loop.features import Features
from jupyter_agent.core.loop.runstate import RunState
from jupyter_agent.core.loop.steps import (
    config,
    finish,
    post_final,
    read_history,
    take_cancel_detail,
)
from jupyter_agent.core.memory.program import MemoryConfig, Recalled, autorecall, search
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import EffectGen
from jupyter_agent.exceptions import RunCancelled
from jupyter_agent.messages import Message, Text

__all__ = [
    "NEW_CHAT_LEAD",
    "Past",
    "exclusions",
    "read_past",
    "recall",
    "recall_planned",
    "say_and_end",
    "show",
]

#: The user message that opens a request whose recall call nothing precedes (a new chat,
#: or an empty window): providers (Anthropic's Messages API, strict chat templates) want
#: the first message to be the user's, not the synthetic assistant call.
NEW_CHAT_LEAD: Final = (
    "(A new chat. Before my first message the agent searched memory and earlier chats.)"
)


@dataclass(frozen=True, kw_only=True)
class Past:
    """The chat's earlier turns as the loop's setup read them: the window's
    (``Features.window``) or the whole history's (no ``layout``, no older turns, no chunks)."""

    turns: list[TurnRecord]
    older: int = 0
    chunks: tuple[ChunkSummary, ...] = ()
    layout: dict[str, int] | None = None
    anchor_at: int | None = None

    @classmethod
    def of_window(cls, window: HistoryWindow) -> Past:
        """The turns a history window holds (v3's ``config.get history``, v7's start)."""
        return cls(
            turns=list(window.turns),
            older=window.omitted,
            chunks=window.chunks,
            layout=window.layout,
            anchor_at=window.anchor,
        )

    def boot(self, budget: int) -> Window:
        """The boot window the model reads of these turns."""
        return boot_window(
            self.turns,
            budget_tokens=budget,
            older=self.older,
            first_position=self.older + 1,
            chunks=self.chunks,
            chunk_turns=None if self.layout is None else self.layout["chunk_turns"],
            anchor_at=self.anchor_at,
        )


def read_past(features: Features, budget: int) -> EffectGen[Past | None]:
    """The chat's earlier turns (``window``: its window of ``budget`` tokens, None when the
    host could not read it; else the previous turn records, whole)."""
    if not features.window:
        records = (yield from config("history")) or []
        return Past(turns=[TurnRecord.from_json(t) for t in records])
    window = yield from read_history(budget)
    return None if window is None else Past.of_window(window)


def say_and_end(
    run_id: str, chat_id: str, state: RunState, spaces: dict[str, object], text: str, say: str
) -> EffectGen[TurnRecord]:
    """Post ``say`` as the final reply of a run that cannot start, and end it ``error``
    (a hard break while saying so still writes the turn)."""
    try:
        yield from post_final(state, say)
    except RunCancelled as cancel:
        take_cancel_detail(state, cancel)
    return (yield from finish(run_id, chat_id, state, spaces, text, "error", "error"))


def exclusions(
    history: Sequence[TurnRecord], shown: Window
) -> tuple[str | None, list[tuple[int, int]]]:
    """What a recall leaves out because the window ``shown`` of ``history`` holds it: the
    chat's turns from the first one shown whole (its ``created``), and the summaries shown."""
    raw = history[len(history) - shown.turns_included :] if shown.turns_included else []
    return (raw[0].created if raw else None), [(c.level, c.first_turn) for c in shown.summaries]


def recall(
    state: RunState,
    messages: list[Message],
    memory: MemoryConfig,
    text: str,
    chat_id: str,
    history: list[TurnRecord],
    shown: Window,
) -> EffectGen[None]:
    """``autorecall@v1`` for the message ``text`` (``Features.recall``): with hits, the
    synthetic call and result join ``messages`` (after the window) and the turn's record.
    When nothing precedes the call, :data:`NEW_CHAT_LEAD` (a user message) does, so the
    request's first message is the user's on every provider."""
    since, chunks = exclusions(history, shown)
    recalled = yield from autorecall(
        text, memory.recall, chat_id=chat_id, exclude_since=since, exclude_chunks=chunks
    )
    show(state, messages, recalled)


def recall_planned(
    state: RunState, messages: list[Message], data: dict[str, Any]
) -> EffectGen[None]:
    """``toolcaller@v7``'s recall: the search of the planned intent ``data``
    (:func:`~jupyter_agent.core.loop.start.recall_plan`), shown as :func:`recall` shows it."""
    show(state, messages, (yield from search(data)))


def show(state: RunState, messages: list[Message], recalled: Recalled | None) -> None:
    """What a recall found joins the messages and the turn's record (nothing: nothing)."""
    if recalled is not None:
        if not messages:
            messages.append(Message(role="user", parts=(Text(text=NEW_CHAT_LEAD),)))
        messages.extend(recalled.messages())
        state.recall = recalled.record()
